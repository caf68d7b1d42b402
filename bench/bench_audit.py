"""``lockgen audit`` of the repo's default matrix (12 cells) against a local OSV export of PyPI's size.

The export is synthetic (no network here): ``--records`` OSV records (default 20,000, about the
size of OSV's PyPI ecosystem with its malicious-package reports), each ~2-4 KB with a ``versions``
list and references, in a zip as OSV publishes ``PyPI/all.zip``; ``--hits`` of them name packages
the committed locks hold (one in three affecting the locked version). Each round runs the console
script (``lockgen audit --osv EXPORT --format json``: interpreter start, reading 12 locks, the
export, matching, rendering) and, interleaved, a folder export of the same records, each *cold*
(no derived index in ``.lockgen/osv/``: every record is read) and *warm* (the index of the
previous run: only the records naming a locked package). Prints every sample and the medians. Run from the repo root::

    .venv/bin/python bench/bench_audit.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def records(total: int, hits: int, locked: list[tuple[str, str]], seed: int = 22) -> list[dict[str, object]]:
    rng = random.Random(seed)
    out: list[dict[str, object]] = []
    for i in range(total):
        if i < hits:
            name, version = locked[i % len(locked)]
            versions = [version] if i % 3 == 0 else ["0.0.1", "0.0.2"]
        else:
            name = (
                "".join(rng.choice("abcdefghijklmnopqrstuvwxyz-") for _ in range(rng.randint(5, 16))).strip("-") or "x"
            )
            versions = [f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{j}" for j in range(rng.randint(3, 60))]
        ident = f"GHSA-{i:04x}-{rng.randint(0, 0xFFFF):04x}-bench"
        out.append({
            "schema_version": "1.6.0", "id": ident, "modified": "2026-10-01T00:00:00Z",
            "published": "2026-09-01T00:00:00Z", "aliases": [f"CVE-2026-{i:05d}"],
            "summary": f"synthetic advisory {i} for {name}", "details": "x" * rng.randint(200, 1500),
            "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:N/A:N"}],
            "affected": [{
                "package": {"ecosystem": "PyPI", "name": name, "purl": f"pkg:pypi/{name}"},
                "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "9999"}] if versions[0] == locked[i % len(locked)][1] and i < hits else [{"introduced": "0"}, {"fixed": "0.0.3"}]}],
                "versions": versions,
            }],
            "references": [{"type": "ADVISORY", "url": f"https://github.com/advisories/{ident}"},
                           {"type": "WEB", "url": f"https://example.org/{name}/{i}"}],
            "database_specific": {"severity": "MODERATE", "cwe_ids": ["CWE-79"], "github_reviewed": True},
        })  # fmt: skip
    return out


def locked_versions() -> list[tuple[str, str]]:
    sys.path.insert(0, str(ROOT))
    from lockgen.dossier.inventory import read

    keys = read(ROOT, "locks", artifacts=False).keys()  # Inventory.keys(): (name, public version) pairs
    return sorted({(str(n), str(v)) for n, v in keys})


def once(export: Path, cold: bool) -> float:
    import shutil

    if cold:
        shutil.rmtree(ROOT / ".lockgen" / "osv", ignore_errors=True)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "lockgen", "audit", "--osv", str(export), "--format", "json", "-C", str(ROOT)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(done.stderr)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--hits", type=int, default=300)
    args = parser.parse_args()
    locked = locked_versions()
    data = records(args.records, args.hits, locked)
    with tempfile.TemporaryDirectory(prefix="lockgen-bench-audit-") as tmp:
        archive = Path(tmp, "PyPI", "all.zip")
        archive.parent.mkdir()
        folder = Path(tmp, "osv")
        folder.mkdir()
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for item in data:
                text = json.dumps(item, indent=2)
                zf.writestr(f"{item['id']}.json", text)
                (folder / f"{item['id']}.json").write_text(text)
        size = sum(len(json.dumps(item, indent=2)) for item in data)
        print(f"{len(locked)} locked package versions in 12 cells; export: {len(data)} records, "
              f"{size / 1e6:.0f} MB of JSON, zip {archive.stat().st_size / 1e6:.1f} MB")  # fmt: skip
        samples: dict[str, list[float]] = {"zip cold": [], "zip warm": [], "folder cold": [], "folder warm": []}
        for i in range(args.repeat):
            order = ["zip", "folder"] if i % 2 == 0 else ["folder", "zip"]
            for kind in order:
                export = archive if kind == "zip" else folder
                samples[f"{kind} cold"].append(once(export, cold=True))
                samples[f"{kind} warm"].append(once(export, cold=False))
        for kind, values in samples.items():
            shown = ", ".join(f"{v:.2f}" for v in values)
            print(f"audit --osv {kind}: median {statistics.median(values):.2f} s  ({shown})")


if __name__ == "__main__":
    main()
