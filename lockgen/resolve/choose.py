"""Choosing among a release page's builds of one package by their labels (issue 16, item 3). Pure.

A release page (a ``urls`` source, an optional entry's URLs, a find-links page or folder, an
index source's project page: :mod:`lockgen.resolve.builds` reads those) often lists one build per torch
and CUDA version of the same release (``flash_attn-2.8.3+cu130torch2.12-…``, ``…+cu130torch2.13-…``,
``…+cu128torch2.13-…``), the label often only in the file name. Of the URLs whose wheel tags fit
the target (:func:`lockgen.resolve.fetch.fitting`), :func:`by_label` keeps those whose label (read
by :mod:`lockgen.resolve.labels`) names the torch the cell locks (or pins) and a backend the cell
takes (:func:`lockgen.resolve.invariants.fits_cell`), unless the cell's ``allow-mix`` names the
package, and says for each other one why it was passed over. A label that names no build, or
cannot be read, keeps its URL (the checks after the resolution still apply), after those whose
label fits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from lockgen.index.files import Kind, artifact, filename_of
from lockgen.plan.plan import Plan
from lockgen.resolve import fetch, labels
from lockgen.resolve.invariants import fits_cell, label_build, mix_allowed

__all__ = ["Choice", "by_label"]


@dataclass(frozen=True)
class Choice:
    """What :func:`by_label` made of a list of builds: those whose label fits (``fitting``),
    those whose label says nothing the checks can use (``unknown``), those passed over
    (``passed``) and a note for each one passed over (its file and why)."""

    fitting: tuple[str, ...]
    unknown: tuple[str, ...]
    notes: tuple[str, ...]
    passed: tuple[str, ...] = ()

    @property
    def kept(self) -> list[str]:
        return [*self.fitting, *self.unknown]

    def best(self, specifiers: Iterable[SpecifierSet] = ()) -> str | None:
        """The build to lock: the newest fitting one the specifiers allow, else the newest one whose
        label says nothing that they allow (a requirement may name a build by its label:
        ``llama-cpp-binaries==0.124.0+vulkan``), else the newest of all (uv then names the
        conflict)."""
        specs = list(specifiers)

        def allowed(urls: Sequence[str]) -> list[str]:
            return [u for u in urls if all(s.contains(fetch.version_of(u), prereleases=True) for s in specs)]

        for urls in (allowed(self.fitting), allowed(self.unknown)):
            if urls:
                return fetch.best(urls)
        return fetch.best(list(self.fitting)) or fetch.best(list(self.unknown))  # uv then names the conflict


def by_label(urls: Sequence[str], plan: Plan, torch: Version | None) -> Choice:
    """Sort wheel ``urls`` (fitting the target already) by whether their label fits the cell of
    ``plan`` with ``torch`` locked (None: not known yet, the backend alone decides)."""
    fitting, unknown, notes, passed = [], [], [], []
    for url in urls:
        filename = filename_of(url)
        parsed = artifact(filename)
        if parsed is None or parsed.kind is not Kind.WHEEL:
            continue
        project, version = parsed.name, parsed.version
        label = labels.read(version.local or "")
        if not isinstance(label, labels.Label):
            unknown.append(url)
            continue
        why = _passed_over(project, label, plan, torch)
        if why:
            notes.append(f"{filename}: {why}")
            passed.append(url)
        else:
            fitting.append(url)
    return Choice(tuple(fitting), tuple(unknown), tuple(notes), tuple(passed))


def _passed_over(project: str, label: labels.Label, plan: Plan, torch: Version | None) -> str:
    """Why a build with ``label`` does not go into the cell ("" when it does, or when the cell's
    ``allow-mix`` declares that package's mix intended)."""
    if mix_allowed(project, plan.cell.settings.allow_mix):
        return ""
    if label.torch is not None and torch is not None and not label.torch.matches(torch):
        return f"built for torch {label.torch}, the cell locks torch {torch}"
    if label.backend is not None:
        shown = label_build(label.backend, plan.backends)
        if not fits_cell(project, shown, plan.flavor, plan.backends):
            return f"built for {shown}, the cell's backend is {plan.flavor}"
    if label.python is not None and label.python != plan.target.python:
        return f"built for Python {label.python}, the cell is Python {plan.target.python}"
    return ""
