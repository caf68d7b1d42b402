"""``lockgen init --commands``: the torch install commands of an installer script. Pure; nothing runs.

Installers keep their backend choice in code, not in requirement files: ``pip install
torch==2.13.0+cu132 torchvision==0.28.0+cu132 --index-url https://download.pytorch.org/whl/cu132``
per GPU (sdnext's ``TORCH_COMMAND``, forge's ``launch_utils.py``, text-generation-webui's
``one_click.py``). :func:`read_commands` finds them in a script's text and reads each into a
:class:`Command`: its requirements (``packaging``), its index, ``--pre``, and the backend the
index (or a local label, a package, a wheel URL's path) says.

* Where a command is: in a Python file, every string expression whose value init can work out
  without running anything (``ast``: literals, f-strings, ``+``, names bound once to such a value
  in the same function or the module, and ``.replace``/``.lower``/``.upper``/``.strip`` with
  literal arguments); in any other file, the text after ``pip install`` on a line, up to the end
  of the quoted string it sits in. A file where no line says ``pip install`` is read as one
  command's arguments per line (as installers keep ``TORCH_COMMAND`` values).
* How it reads: split with :mod:`shlex` (``;``, ``&&``, ``||`` and ``|`` separate commands; the
  commands of one string are one install, their packages together), options as pip reads them.
  A value left unknown (``{torch_index_url}``, ``$TORCH_INDEX``) makes the command unreadable: it
  is skipped, and the note says which value.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from lockgen.scaffold.inference import backend_label, label_word, local_label
from lockgen.scaffold.reading import IndexLine, Line, requirement_line

__all__ = ["Command", "read_commands"]

#: ``pip install``, ``pip3 install``, ``python -m pip install``, ``uv pip install``.
_PIP = re.compile(r"\b(?:uv\s+)?pip3?(?:\.exe)?\s+install\b")
#: pip install options that take a value (the rest are flags).
_VALUED = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-r", "--requirement", "-c",
           "--constraint", "-e", "--editable", "--trusted-host", "--timeout", "-t", "--target", "--prefix", "--root",
           "--cache-dir", "--src", "--platform", "--python-version", "--implementation", "--abi", "--progress-bar",
           "--retries", "--log", "--proxy", "-C", "--config-settings", "--global-option", "--no-binary",
           "--only-binary", "--upgrade-strategy", "--exists-action", "--index-strategy", "--torch-backend"}  # fmt: skip
_PYPI = ("https://pypi.org/simple", "https://pypi.python.org/simple")
_UNKNOWN = re.compile(r"\{[^{}]*\}|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%")
#: Torch-family packages whose name says the build they are for.
_HINTS = {"torch-directml": "directml", "intel-extension-for-pytorch": "xpu"}
_TORCHISH = re.compile(r"^(torch.*|triton.*|pytorch-triton.*|xformers|intel-extension-for-pytorch)$")


@dataclass(frozen=True, kw_only=True)
class Command:
    """One install a script runs: ``origin`` (``one_click.py:117``), its requirement ``lines``
    (``origin`` as their origin), the backend ``index`` (the ``--index-url``, else the first
    ``--extra-index-url`` with a backend label), its ``find_links``, ``--pre``, the ``backend``
    it installs (None: PyPI's builds) with the index's ``flavor`` (``cu132`` for
    ``cu132_nightly``) and the ``reason`` for it; ``notes`` for what it drops."""

    origin: str
    lines: tuple[Line, ...]
    index: IndexLine | None
    find_links: tuple[IndexLine, ...]
    prerelease: bool
    backend: str | None
    flavor: str | None
    reason: str
    notes: tuple[str, ...]
    #: the CPU arch of the script branch it sits in (``if [[ … "Intel" … ]]``: ``x86_64``, its
    #: ``else``: ``aarch64``), None when no branch says one
    arch: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(str(ln.name) for ln in self.lines if ln.name)

    @property
    def labelled(self) -> bool:
        """Whether it pins a build by its local label (``+cpu``, ``+cu128``): no macOS wheel has one."""
        return any(local_label(ln) for ln in self.lines)


def read_commands(path: str, text: str, pythons: Sequence[str]) -> tuple[list[Command], list[str]]:
    """The torch install commands in the script ``path`` (project-relative) whose text is
    ``text``, for target Pythons ``pythons`` (a command whose wheels fit none is skipped), and the
    notes (one line each: what was skipped and why). Two commands that install the same packages
    from the same index are one (the first is kept)."""
    if path.endswith((".py", ".pyw")):
        try:
            strings = _python_strings(text)
        except SyntaxError as exc:
            return [], [f"{path}:{exc.lineno}: not Python init can read ({exc.msg}); nothing read from it"]
    else:
        strings = _text_strings(text)
    arches = _branch_arches(text) if not path.endswith((".py", ".pyw")) else {}
    commands: list[Command] = []
    notes: list[str] = []
    seen: dict[tuple[frozenset[str], str, str, str], Command] = {}
    for number, string in strings:
        where = f"{path}:{number}"
        command = _command(where, string, pythons, notes)
        if command is None:
            continue
        if arches.get(number):
            command = dataclasses.replace(command, arch=arches[number])
        key = (frozenset(command.names), command.index.url if command.index else "", command.backend or "",
               command.arch or "")  # fmt: skip
        first = seen.get(key)
        if first is not None:
            if {ln.key for ln in first.lines} != {ln.key for ln in command.lines}:
                notes.append(f"{where}: {' '.join(ln.text for ln in command.lines)}: the packages of {first.origin} "
                             f"({' '.join(ln.text for ln in first.lines)}) at other versions, from the same index; "
                             f"init cannot tell which machines run which, so it reads {first.origin}")  # fmt: skip
            continue
        seen[key] = command
        commands.append(command)
    return commands, notes


_X86 = re.compile(r"intel|x86_64|x86-64|amd64|i[3-6]86", re.IGNORECASE)
_ARM = re.compile(r"arm64|aarch64|apple\s*silicon|\bM[1-9]\b", re.IGNORECASE)
_IF = re.compile(r"^\s*(if|elif)\b(.*)$")


def _branch_arches(text: str) -> dict[int, str]:
    """Line number -> the CPU arch of the shell ``if``/``elif``/``else`` branch it sits in,
    where the condition names one (``if [[ "$(sysctl -n machdep.cpu.brand_string)" =~ Intel ]]``:
    ``x86_64``; ``uname -m`` = ``arm64``: ``aarch64``); an ``else`` after a condition naming one
    arch is the other (forge's webui-macos-env.sh: Intel, else Apple silicon). Nested branches:
    the innermost that names one."""
    found: dict[int, str] = {}
    stack: list[list[str | None]] = []  # per open if: [arch of the current branch, arch its conditions named]
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        cond = _IF.match(stripped)
        if cond:
            said = "x86_64" if _X86.search(cond[2]) else "aarch64" if _ARM.search(cond[2]) else None
            if cond[1] == "if":
                stack.append([said, said])
            elif stack:
                stack[-1] = [said, stack[-1][1] or said]
        elif re.match(r"^else\b", stripped) and stack:
            named = stack[-1][1]
            stack[-1][0] = {"x86_64": "aarch64", "aarch64": "x86_64"}.get(named or "")
        elif re.match(r"^fi\b", stripped) and stack:
            stack.pop()
            continue
        arch = next((b[0] for b in reversed(stack) if b[0]), None)
        if arch:
            found[number] = arch
    return found


def _text_strings(text: str) -> list[tuple[int, str]]:
    """(line number, command text) of a shell script, batch file or any text: the text after
    each ``pip install`` to the end of its quoted string or line; every line when none says it."""
    raw = text.splitlines()
    lines: list[tuple[int, str]] = []
    start: int | None = None
    joined = ""
    for number, line in enumerate(raw, 1):
        if start is None:
            start, joined = number, ""
        if line.endswith("\\") and not line.endswith("\\\\"):
            joined += line[:-1] + " "
            continue
        lines.append((start, joined + line))
        start = None
    if not any(_PIP.search(line) for _, line in lines):
        return [(n, line) for n, line in lines if line.strip() and not line.lstrip().startswith(("#", "::", "REM "))]
    found = []
    for number, line in lines:
        if line.lstrip().startswith(("#", "::", "REM ")):
            continue
        match = _PIP.search(line)
        if not match:
            continue
        before = line[: match.start()]
        end = len(line)
        for quote in ('"', "'"):
            if before.count(quote) % 2:  # the command sits in a string: it ends where the string does
                close = line.find(quote, match.start())
                end = close if close >= 0 else end
                break
        found.append((number, line[match.start() : end]))
    return found


def _command(where: str, string: str, pythons: Sequence[str], notes: list[str]) -> Command | None:
    """The :class:`Command` of one string (one or more ``pip install``s), or None (with a note
    when it looked like one but cannot be read). A login in a URL is hidden first
    (:func:`~lockgen.scaffold.reading.hide_login`): never shown, never written."""
    from lockgen.scaffold.reading import hide_login

    string = " ".join(hide_login(word)[0] for word in string.split(" "))
    try:
        lexer = shlex.shlex(string, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError as exc:
        notes.append(f"{where}: cannot split {string.strip()!r} as a shell would ({exc}); skipped")
        return None
    pieces: list[list[str]] = [[]]
    for token in tokens:
        if token and set(token) <= set(";&|"):
            pieces.append([])
        else:
            pieces[-1].append(token)
    bare = not _PIP.search(string)
    args: list[list[str]] = []
    for piece in pieces:
        text = " ".join(piece)
        match = _PIP.search(text)
        if match:
            args.append(piece[_after_install(piece) :])
        elif bare and piece:
            args.append(piece)
    lines: list[Line] = []
    indexes: list[IndexLine] = []
    find_links: list[IndexLine] = []
    prerelease = False
    dropped: list[str] = []
    for arg in args:
        i = 0
        while i < len(arg):
            token = arg[i]
            if token.startswith("-"):
                name, _, attached = token.partition("=")
                value = attached if attached or name not in _VALUED else (arg[i + 1] if i + 1 < len(arg) else "")
                i += 1 if attached or name not in _VALUED else 2
                if _UNKNOWN.search(value) and name in ("-i", "--index-url", "--extra-index-url", "-f", "--find-links"):
                    notes.append(f"{where}: {name} {value}: a value init cannot know without running the script; "
                                 "write the command out in a file for --commands, or add it by hand")  # fmt: skip
                    return None
                if name in ("-i", "--index-url", "--extra-index-url"):
                    kind = "index" if name != "--extra-index-url" else "extra-index"
                    indexes.append(IndexLine(kind=kind, url=value, origin=where))
                elif name in ("-f", "--find-links"):
                    find_links.append(IndexLine(kind="find-links", url=value, origin=where))
                elif name == "--pre":
                    prerelease = True
                elif name in ("-r", "--requirement", "-c", "--constraint", "-e", "--editable"):
                    dropped.append(f"{name} {value}")
                elif name not in ("-U", "--upgrade", "--no-cache-dir", "--force-reinstall", "-q", "--quiet", "-v"):
                    dropped.append(name)
                continue
            i += 1
            if _UNKNOWN.search(token):
                notes.append(f"{where}: {token}: a value init cannot know without running the script; "
                             "write the command out in a file for --commands, or add it by hand")  # fmt: skip
                return None
            line = _requirement(token, where)
            if line is None:
                notes.append(f"{where}: {token}: neither a requirement nor a wheel URL; skipped")
                return None
            lines.append(line)
    if not lines:
        return None
    if not indexes and not any(_TORCHISH.match(str(ln.name)) for ln in lines if ln.name):
        if bare:
            notes.append(
                f"{where}: {string.strip()}: names no index and no torch package, so no torch install; skipped"
            )
        return None
    fits = [ln for ln in lines if not _fits(ln.text, pythons)]
    if fits:
        notes.append(f"{where}: {fits[0].text}: a wheel for none of the target Pythons ({', '.join(pythons)}); skipped")
        return None
    notes += [f"{where}: {d}: dropped (lockgen resolves, it does not install)" for d in dropped]
    primary = next((ix for ix in indexes if ix.kind == "index" and ix.url.rstrip("/") not in _PYPI), None)
    if primary is None:
        primary = next((ix for ix in indexes if backend_label(ix.url)), None)
    for ix in indexes:
        if ix is not primary and ix.url.rstrip("/") not in _PYPI:
            notes.append(f"{where}: {ix.url}: a second index; lockgen takes each package from one source, "
                         f"{primary.url if primary else 'PyPI'} here")  # fmt: skip
    backend, flavor, reason = _backend(primary, lines)
    return Command(origin=where, lines=tuple(lines), index=primary, find_links=tuple(find_links), prerelease=prerelease,
                   backend=backend, flavor=flavor, reason=reason, notes=())  # fmt: skip


def _after_install(piece: list[str]) -> int:
    """The index of the first argument after ``install`` in a split ``pip install …``."""
    for i, token in enumerate(piece):
        if token == "install" and i and re.fullmatch(r"pip3?(\.exe)?", PurePosixPath(piece[i - 1]).name):
            return i + 1
    return len(piece)


def _requirement(token: str, where: str) -> Line | None:
    """A command's argument as a template line: a PEP 508 requirement as written, a wheel URL as
    ``name @ URL`` (its name from the file name, ``packaging``), else None."""
    try:
        Requirement(token)
    except InvalidRequirement:
        pass
    else:
        return requirement_line(token, where)
    filename = unquote(PurePosixPath(urlsplit(token).path).name)
    try:
        name = parse_wheel_filename(filename)[0]
    except InvalidWheelFilename:
        return None
    return requirement_line(f"{name} @ {token}", where)


def _fits(text: str, pythons: Sequence[str]) -> bool:
    """Whether a requirement (a wheel URL) installs on one of ``pythons`` at least."""
    url = text.partition(" @ ")[2]
    if not url:
        return True
    _, _, _, tags = parse_wheel_filename(unquote(PurePosixPath(urlsplit(url).path).name))
    for py in pythons:
        nodot = py.replace(".", "")
        for tag in tags:
            interpreter = tag.interpreter
            if interpreter in (f"cp{nodot}", f"py{nodot}", f"py{nodot[0]}", "py3"):
                return True
            if tag.abi == "abi3" and interpreter.startswith("cp3") and int(interpreter[3:]) <= int(nodot[1:]):
                return True
    return False


def _backend(index: IndexLine | None, lines: Sequence[Line]) -> tuple[str | None, str | None, str]:
    """(backend, flavor, reason): the index's label (``…/whl/nightly/cu132`` -> ``cu132_nightly``
    with flavor ``cu132``), else a torch-family line's local label, a package that says its build
    (``torch-directml``), the label in a wheel URL's path (``…/rocm-rel-6.4.4/…`` ->
    ``rocm6.4.4``); None: PyPI's builds."""
    if index is not None and (label := backend_label(index.url)):
        if "/nightly/" in urlsplit(index.url).path:
            return f"{label}_nightly", label, f"the nightly index {index.url}"
        return label, label, f"the index {index.url}"
    for line in lines:
        if line.name and _TORCHISH.match(str(line.name)) and (label := local_label(line)):
            return label, label, f"the local label of {line.text.partition(' @ ')[0]}=={line.version}"
    for line in lines:
        if line.name and (hint := _HINTS.get(canonicalize_name(str(line.name)))):
            return hint, hint, f"it installs {line.name}"
    for line in lines:
        url = line.text.partition(" @ ")[2]
        for part in urlsplit(url).path.lower().split("/")[:-1] if url else ():
            rocm = re.fullmatch(r"rocm[-_a-z]*?(\d+(?:\.\d+)*)", part)
            if rocm or label_word(part):
                label = f"rocm{rocm[1]}" if rocm else part
                return label, label, f"the path of {url}"
    return None, None, "no index and no build label: PyPI's builds"


# -- Python: string values init can work out without running anything ------------------------------


def _python_strings(source: str) -> list[tuple[int, str]]:
    """(line number, value) of every outermost string expression in ``source`` whose value
    contains ``pip install``, parts init cannot work out kept as ``{expression}``."""
    tree = ast.parse(source)
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, scope: dict[str, ast.expr]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                parameters = {a.arg for a in (*child.args.posonlyargs, *child.args.args, *child.args.kwonlyargs)}
                inner = {k: v for k, v in scope.items() if k not in parameters}
                visit(child, {**inner, **_bindings(child.body)})
            elif isinstance(child, ast.expr) and _stringish(child, scope):
                value = _fold(child, scope, 0)
                if _PIP.search(value):
                    found.append((child.lineno, value))
            else:
                visit(child, scope)

    visit(tree, _bindings(tree.body))
    return found


def _bindings(body: list[ast.stmt]) -> dict[str, ast.expr]:
    """Names assigned exactly once in ``body`` (a module's or a function's, nested blocks
    included, nested functions and classes not), to the expression they are assigned; a name
    bound any other way (a loop, ``+=``, a ``def``) counts as assigned twice."""
    assigned: dict[str, list[ast.expr | None]] = {}

    def bind(target: ast.AST | None, value: ast.expr | None) -> None:
        for name in ast.walk(target) if target is not None else ():
            if isinstance(name, ast.Name):
                assigned.setdefault(name.id, []).append(value if target is name else None)

    def walk(nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                assigned.setdefault(node.name, []).extend([None, None])
                continue
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    bind(target, node.value)
            elif isinstance(node, ast.AnnAssign):
                bind(node.target, node.value)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor)):
                bind(node.target, None)
                bind(node.target, None)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    bind(item.optional_vars, None)
                    bind(item.optional_vars, None)
            for inner in (getattr(node, f, None) for f in ("body", "orelse", "finalbody")):
                if isinstance(inner, list):
                    walk([n for n in inner if isinstance(n, ast.stmt)])
            if isinstance(node, ast.Try):
                for handler in node.handlers:
                    walk(handler.body)

    walk(body)
    return {name: value for name, (value, *more) in assigned.items() if not more and value is not None}


def _stringish(node: ast.expr, scope: dict[str, ast.expr], depth: int = 0) -> bool:
    if depth > 20:
        return False
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _stringish(node.left, scope, depth + 1) or _stringish(node.right, scope, depth + 1)
    if isinstance(node, ast.Name) and node.id in scope:
        return _stringish(scope[node.id], scope, depth + 1)
    return False


_METHODS = {"replace", "lower", "upper", "strip", "lstrip", "rstrip"}


#: The longest value init works out (a script is untrusted: ``x = x + x`` chains must not fill memory).
_LONGEST = 100_000


def _fold(
    node: ast.expr, scope: dict[str, ast.expr], depth: int, memo: dict[tuple[int, int], str] | None = None
) -> str:
    """The value of a string expression, unknown parts as ``{source}``; a value longer than
    :data:`_LONGEST` is unknown. ``memo``: values already worked out in this scope."""
    memo = {} if memo is None else memo
    key = (id(node), id(scope))
    if key not in memo:
        value = _fold_once(node, scope, depth, memo)
        memo[key] = value if len(value) <= _LONGEST else "{" + ast.unparse(node)[:200] + "}"
    return memo[key]


def _fold_once(node: ast.expr, scope: dict[str, ast.expr], depth: int, memo: dict[tuple[int, int], str]) -> str:
    unknown = "{" + ast.unparse(node)[:200] + "}"
    if depth > 20:
        return unknown
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else str(node.value) if node.value is not None else unknown
    if isinstance(node, ast.JoinedStr):
        out = ""
        for part in node.values:
            if isinstance(part, ast.FormattedValue) and part.conversion == -1 and part.format_spec is None:
                out += _fold(part.value, scope, depth + 1, memo)
            elif isinstance(part, ast.Constant) and isinstance(part.value, str):
                out += part.value
            else:
                out += "{" + ast.unparse(part) + "}"
        return out
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _fold(node.left, scope, depth + 1, memo) + _fold(node.right, scope, depth + 1, memo)
    if isinstance(node, ast.Name) and node.id in scope and _stringish(scope[node.id], scope):
        return _fold(scope[node.id], scope, depth + 1, memo)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _METHODS
        and not node.keywords
        and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args)
    ):
        receiver = _fold(node.func.value, scope, depth + 1, memo)
        args = [str(a.value) for a in node.args if isinstance(a, ast.Constant)]
        grows = len(receiver) * (1 + max(map(len, args), default=0))
        if not _UNKNOWN.search(receiver) and grows <= _LONGEST:
            try:
                return str(getattr(receiver, node.func.attr)(*args))
            except TypeError:
                return unknown
    return unknown
