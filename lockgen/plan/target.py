"""Stage 3: map a cell to the target uv resolves for.

A target is what ``uv pip compile`` needs to resolve for a machine other than this one:
``--python-platform`` (a target triple, with the manylinux level on Linux), ``--python-version``
and, for macOS, ``MACOSX_DEPLOYMENT_TARGET`` (uv reads the minimum macOS version from it and
defaults to 13.0; torch 2.13 ships only ``macosx_14_0`` wheels, so lockgen's default is 14.0).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from lockgen.plan.matrix import Cell

if TYPE_CHECKING:
    from packaging.tags import Tag

__all__ = ["Target", "target_for"]

_TRIPLES = {
    ("windows", "x86_64"): "x86_64-pc-windows-msvc",
    ("windows", "aarch64"): "aarch64-pc-windows-msvc",
    ("macos", "x86_64"): "x86_64-apple-darwin",
    ("macos", "aarch64"): "aarch64-apple-darwin",
}


@dataclass(frozen=True, kw_only=True)
class Target:
    """What a cell resolves for. ``platform`` is a uv ``--python-platform`` value."""

    platform: str
    python: str  # "3.12"
    macos: str | None = None  # minimum macOS, "14.0"; None off macOS

    @property
    def python_tag(self) -> str:
        """The CPython wheel tag of the target interpreter: ``"3.12"`` -> ``"cp312"``."""
        return "cp" + self.python.replace(".", "")

    def env(self) -> dict[str, str]:
        """Environment variables uv needs for this target (``MACOSX_DEPLOYMENT_TARGET``)."""
        return {"MACOSX_DEPLOYMENT_TARGET": self.macos} if self.macos else {}

    def platform_tags(self) -> list[str]:
        """Wheel platform tags an installer on this target accepts, best first.

        Linux: ``manylinux_2_<n>_<arch>`` from the target's level down (PEP 600; with the legacy
        ``manylinux2014``/``2010``/``1`` aliases) and ``linux_<arch>``; Windows: ``win_amd64`` or
        ``win_arm64``; macOS: :func:`packaging.tags.mac_platforms` from the minimum version down.
        """
        os_, _, rest = self.platform.partition("-")
        arch = os_  # the triple starts with the arch
        if "manylinux" in rest:
            level = int(rest.rsplit("_", 1)[1])
            floor = 17 if arch == "aarch64" else 5
            tags = [f"manylinux_2_{n}_{arch}" for n in range(level, floor - 1, -1)]
            legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
            tags += [f"{alias}_{arch}" for n, alias in legacy.items() if n <= level and n >= floor]
            return [*tags, f"linux_{arch}"]
        if rest.endswith("windows-msvc"):
            return ["win_amd64" if arch == "x86_64" else "win_arm64"]
        from packaging.tags import mac_platforms
        from packaging.version import Version

        major, minor = Version(self.macos or "14.0").release[:2]
        return list(mac_platforms((major, minor), "arm64" if arch == "aarch64" else "x86_64"))

    def supported_tags(self) -> frozenset[Tag]:
        """Every :class:`packaging.tags.Tag` a CPython ``python`` on this target installs
        (computed once per target and process: verify, the target-only file lists and the
        newer-levels check all ask)."""
        return _supported_tags(self)

    def to_dict(self) -> dict[str, str]:
        data = {"platform": self.platform, "python": self.python}
        if self.macos:
            data["macos"] = self.macos
        return data


@functools.cache
def _supported_tags(target: Target) -> frozenset[Tag]:
    from packaging import tags
    from packaging.version import Version

    version = Version(target.python).release[:2]
    platforms = target.platform_tags()
    return frozenset(tags.cpython_tags(version, platforms=platforms)) | frozenset(
        tags.compatible_tags(version, platforms=platforms)
    )


def target_for(cell: Cell) -> Target:
    """The target of ``cell``: Linux cells use ``<arch>-manylinux_<level>`` (default 2_28)."""
    if cell.os == "linux":
        platform = f"{cell.arch}-manylinux_{cell.settings.manylinux}"
    else:
        platform = _TRIPLES[(cell.os, cell.arch)]
    macos = cell.settings.macos if cell.os == "macos" else None
    return Target(platform=platform, python=cell.python, macos=macos)
