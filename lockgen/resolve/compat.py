"""Which backend builds go together: the compatibility policy, as data with its sources. Pure.

A cell has a backend build (``cu128`` is CUDA 12.8); every locked package may show one (by a
local label, :mod:`lockgen.resolve.labels`; by its name, ``nvidia-cublas-cu12``). Whether the two
go together depends on what the package is:

=============================  ===============================================================
package                        must match the cell's build
=============================  ===============================================================
the torch family               exactly, at the precision both give (``torch``, ``torchvision``,
(:data:`TORCH_FAMILY`)         ``torchaudio``: PyTorch builds and publishes the three together
                               for each CUDA or ROCm version, and torchvision's and
                               torchaudio's compiled operators load torch's libraries; their
                               versions pair as PyTorch's release compatibility matrix says,
                               https://github.com/pytorch/pytorch/blob/main/RELEASE.md)
an extension (anything else)   the same family and major version; within the major, the minor
                               as the family's ``minor`` policy says (the built-in cuda family:
                               ``any``; every other family: ``exact``)
=============================  ===============================================================

Minor policies (``[tool.lockgen.backends.<family>] minor = "…"``; a config tightens them):

* ``any``: any minor of the major. The default for CUDA: NVIDIA's *minor version compatibility*
  lets an application built with any toolkit of a major run on a driver of that major
  (https://docs.nvidia.com/deploy/cuda-compatibility/, "Minor Version Compatibility"), and the
  CUDA runtime keeps its soname per major (``libcudart.so.12``), so an extension built for
  CUDA 12.4 loads beside torch's 12.8 runtime. Features that need a newer driver (PTX JIT of
  newer code) are the known exceptions, which is why ``older`` and ``exact`` exist.
* ``older``: the extension's minor is at most the cell's (built with an older toolkit than the
  runtime it meets: the direction NVIDIA's backward compatibility covers fully).
* ``exact``: the same minor. The default for ROCm: AMD documents compatibility per ROCm release
  (https://rocm.docs.amd.com/en/latest/compatibility/compatibility-matrix.html) and makes no
  minor-version promise like NVIDIA's, so lockgen assumes none.

A major mix is refused whatever the policy (a CUDA 13 extension in a CUDA 12 cell: its
``libcudart.so.13`` is not there). A package that names the family without a version (the
``+cu12`` of flash-attn's own wheels, ``rocm_git…``) agrees at the precision it gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from lockgen.config.model import MINOR_POLICIES

__all__ = ["MINOR_POLICIES", "TORCH_FAMILY", "Build", "fits"]

#: Packages PyTorch builds together per backend: each must show exactly the cell's build.
TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})


@dataclass(frozen=True)
class Build:
    """A backend build: ``family`` with a ``version`` at the precision known (``()`` unknown,
    ``(12,)`` major only, ``(12, 6)``)."""

    family: str
    version: tuple[int, ...] = ()

    def __str__(self) -> str:
        return " ".join([self.family, ".".join(map(str, self.version))]).strip()

    def agrees(self, other: Build) -> bool:
        """Same family, and the same version at the precision both give."""
        n = min(len(self.version), len(other.version))
        return self.family == other.family and self.version[:n] == other.version[:n]


def fits(shown: Build, cell: Build, *, family_member: bool, minor: str) -> bool:
    """Whether a package that shows ``shown`` goes into a cell of build ``cell`` (same family
    assumed by the caller's check): exactly for a torch-family package (``family_member``),
    else the same major and the ``minor`` policy."""
    if family_member or minor == "exact":
        return shown.agrees(cell)
    if shown.family != cell.family:
        return False
    if not shown.version or not cell.version:
        return True
    if shown.version[0] != cell.version[0]:
        return False
    if minor == "older" and len(shown.version) > 1 and len(cell.version) > 1:
        return shown.version[1:] <= cell.version[1:]
    return True
