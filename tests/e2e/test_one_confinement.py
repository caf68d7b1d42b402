"""One confinement: what lockgen reads from a bundle or a shard, and where ``bundle -o`` writes,
stays inside that folder. One table over ``install --from`` (a bundle's index pages checked like
its locks: links confined to ``files/``, hashes the lock holds and the file has, no ``<base>``, no
symlink), ``bundle -o`` (no write or delete through a symlink) and ``merge`` (a shard's files and
folders no symlink out). Each hostile case exits 2 naming the file, and nothing outside the folder
is read or touched; installs are ``--dry-run`` (the refusal comes before any installer runs)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import run_cli, run_ok, write_project

CELL = "linux-x86_64-cpu-py3.12"


@pytest.fixture(scope="module")
def made(shared_fake_host, tmp_path_factory) -> tuple[Path, Path, Path]:
    """A project locked over a fake index, its bundle, and the locks folder of its one shard."""
    index = shared_fake_host("index")
    for name, version in (("alpha", "1.0"), ("beta", "1.0")):
        index.add(name, version)
    index.publish()
    base = tmp_path_factory.mktemp("confined")
    config = f"""
        index-url = "{index.index_url()}"
        [tool.lockgen.matrix]
        os = ["linux"]
        arch = ["x86_64"]
        backend = ["cpu"]
        python = ["3.12"]
    """
    root = write_project(base / "proj", config, {"requirements.in.j2": "alpha\nbeta\n"})
    run_ok("all", "-C", str(root))
    run_ok("bundle", CELL, "-o", str(base / "bundle"), "-C", str(root))
    shard = base / "shard"
    shutil.copytree(root, shard)
    run_ok("all", "--shard", "1/1", "--force", "-C", str(shard))
    return root, base / "bundle", shard / "locks"


def _page(bundle: Path, name: str = "alpha") -> Path:
    return bundle / "index" / name / "index.html"


def _relink(bundle: Path, href: str) -> None:
    page = _page(bundle)
    text = page.read_text()
    start = text.index('href="') + len('href="')
    page.write_text(text[:start] + href + text[text.index('"', start) :])


def _wheel(bundle: Path) -> Path:
    return next((bundle / "files").glob("*/alpha-*.whl"))


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Each case: (what it does to the copy of the bundle or shard; it may put a file in ``outside``) ->
# the phrase the refusal says.
def install_network(bundle: Path, outside: Path) -> str:
    _relink(bundle, f"https://files.example.org/{_wheel(bundle).name}#sha256={_digest(_wheel(bundle))}")
    return "is not a file under files/ of the bundle"


def install_out_of_bundle(bundle: Path, outside: Path) -> str:
    copy = outside / _wheel(bundle).name
    shutil.copyfile(_wheel(bundle), copy)
    _relink(bundle, f"../../../outside/{copy.name}#sha256={_digest(copy)}")
    return "is not a file under files/ of the bundle"


def install_absolute_file_url(bundle: Path, outside: Path) -> str:
    copy = outside / _wheel(bundle).name
    shutil.copyfile(_wheel(bundle), copy)
    _relink(bundle, f"{copy.as_uri()}#sha256={_digest(copy)}")
    return "is not a file under files/ of the bundle"


def install_base_tag(bundle: Path, outside: Path) -> str:
    page = _page(bundle)
    page.write_text(page.read_text().replace("<body>", '<body><base href="https://files.example.org/">'))
    return "sets a <base>"


def install_page_symlinked_out(bundle: Path, outside: Path) -> str:
    (outside / "index.html").write_text(_page(bundle).read_text())
    _page(bundle).unlink()
    _page(bundle).symlink_to(outside / "index.html")
    return "a symbolic link"


def install_wheel_symlinked_out(bundle: Path, outside: Path) -> str:
    wheel = _wheel(bundle)
    shutil.copyfile(wheel, outside / wheel.name)
    wheel.unlink()
    wheel.symlink_to(outside / wheel.name)
    return "is a symbolic link"


def install_foreign_hash(bundle: Path, outside: Path) -> str:
    page = _page(bundle)
    text = page.read_text()
    digest = text.split("#sha256=")[1][:64]
    page.write_text(text.replace(f"#sha256={digest}", "#sha256=" + "0" * 64, 1))
    return "has no sha256 the locks hold"


def install_changed_file(bundle: Path, outside: Path) -> str:
    wheel = _wheel(bundle)
    wheel.write_bytes(wheel.read_bytes() + b"\0")
    return "does not have the sha256 its link states"


def bundle_files_symlinked(bundle: Path, outside: Path) -> str:
    (outside / "precious.txt").write_text("mine\n")
    shutil.rmtree(bundle / "files")
    (bundle / "files").symlink_to(outside)
    return "is a symbolic link"


def bundle_locks_symlinked(bundle: Path, outside: Path) -> str:
    (outside / "precious.txt").write_text("mine\n")
    shutil.rmtree(bundle / "locks")
    (bundle / "locks").symlink_to(outside)
    return "is a symbolic link"


def merge_lock_symlinked(shard: Path, outside: Path) -> str:
    lock = shard / f"{CELL}.txt"
    shutil.copyfile(lock, outside / lock.name)
    lock.unlink()
    lock.symlink_to(outside / lock.name)
    return "a symlink"


def merge_cell_folder_symlinked(shard: Path, outside: Path) -> str:
    folder = shard / CELL
    shutil.move(folder, outside / CELL)
    folder.symlink_to(outside / CELL)
    return "a symlink"


Case = Callable[[Path, Path], str]
CASES: dict[str, tuple[str, Case]] = {
    "install-from: a link to the network": ("install", install_network),
    "install-from: a link out of the bundle": ("install", install_out_of_bundle),
    "install-from: an absolute file URL": ("install", install_absolute_file_url),
    "install-from: a <base> tag": ("install", install_base_tag),
    "install-from: an index page symlinked out": ("install", install_page_symlinked_out),
    "install-from: a wheel symlinked out": ("install", install_wheel_symlinked_out),
    "install-from: a hash the lock does not hold": ("install", install_foreign_hash),
    "install-from: a file whose bytes changed": ("install", install_changed_file),
    "bundle -o: files/ symlinked out": ("bundle", bundle_files_symlinked),
    "bundle -o: locks/ symlinked out": ("bundle", bundle_locks_symlinked),
    "merge: a shard lock symlinked out": ("merge", merge_lock_symlinked),
    "merge: a shard's cell folder symlinked out": ("merge", merge_cell_folder_symlinked),
}


def _tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_every_reader_and_writer_stays_inside_its_folder(case, made, tmp_path):
    root, bundle, shard = made
    command, mutate = CASES[case]
    outside = tmp_path / "outside"
    outside.mkdir()
    project = tmp_path / "proj"
    shutil.copytree(root, project, symlinks=True)
    folder = tmp_path / ("bundle" if command != "merge" else "shard")
    shutil.copytree(bundle if command != "merge" else shard, folder, symlinks=True)
    said = mutate(folder, outside)
    kept, locks = _tree(outside), _tree(project / "locks")
    if command == "install":
        run = run_cli("install", "--from", str(folder), CELL, "--dry-run", "--venv", str(tmp_path / "venv"))
    elif command == "bundle":
        run = run_cli("bundle", CELL, "-o", str(folder), "-C", str(project))
    else:
        run = run_cli("merge", str(folder), "-C", str(project))
    assert run.code == 2, run.err
    assert said in run.err and "Traceback" not in run.err
    assert _tree(outside) == kept  # nothing outside was written or deleted
    assert _tree(project / "locks") == locks
    assert not (tmp_path / "venv").exists()


def test_an_untouched_bundle_passes_the_checks(made, tmp_path):
    _, bundle, _ = made
    from lockgen.install.choose import load_layers, read_manifest
    from lockgen.rot.bundle import check_index

    manifest = read_manifest(bundle, "locks")
    entry = manifest.cells[CELL]
    check_index(bundle, [layer.lock for layer in load_layers(bundle, "locks", entry, bundle=True)])
