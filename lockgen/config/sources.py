"""Sources, mirrors and the logins in URL fields: ``[sources.<name>]`` (with ``labels``, ``local``,
``local-if`` and their placeholders), ``[mirrors]``, the names ``use`` refers to, and credentials split
off every URL (issue 9).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lockgen.config.fields import URL, Checks, KeyPath
from lockgen.config.model import Config, Settings, Source

__all__ = ["SourceChecks"]

_SOURCE_KINDS = ("index", "find-links", "urls")
#: What every cell fills in source URLs (lockgen.plan.sources.placeholders); rule variables too.
_SOURCE_PLACEHOLDERS = ("backend", "flavor", "python_tag", "os", "arch", "python")


def _prefix_key(url: str) -> str:
    """A URL prefix spelled one way for comparing (scheme and host lower-case, no login, no
    trailing slash): the rule of :func:`lockgen.plan.identity.normalized`, which config cannot
    import (it sits below plan)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url.rstrip("/"))
    host = (parts.hostname or "").lower() + (f":{parts.port}" if parts.port else "")
    return f"{parts.scheme.lower()}://{host}{parts.path}"


class SourceChecks(Checks):
    def sources(self, value: Any) -> dict[str, Source]:
        from packaging.utils import canonicalize_name

        if not isinstance(value, dict):
            self.problem(("sources",), "must be a table of named sources")
            return {}
        result = {}
        for name, table in value.items():
            path = ("sources", name)
            if not isinstance(table, dict):
                self.problem(path, "must be a table")
                continue
            self.unknown(table, {*_SOURCE_KINDS, "packages", "local", "local-if", "labels", "exclude-newer"}, path)
            kinds = [k for k in _SOURCE_KINDS if k in table]
            if len(kinds) != 1:
                self.problem(path, "give exactly one of index = URL, find-links = URL, urls = [URL, …]")
                continue
            kind = kinds[0]
            raw = table[kind]
            urls = self.strings(raw, (*path, kind)) if kind == "urls" else (self.string(raw, (*path, kind)),)
            packages = self.strings(table.get("packages", []), (*path, "packages"))
            if not packages:
                self.problem((*path, "packages"), "name the packages this source may serve")
            local = self.string(table["local"], (*path, "local")) if "local" in table else None
            if local is not None and kind != "find-links":
                self.problem((*path, "local"), "only a find-links source can have a local folder")
            if local is not None and (Path(local).is_absolute() or ".." in Path(local).parts or not local.strip()):
                self.problem((*path, "local"), f"{local!r} must be a folder inside the project")
            if "local-if" in table and (local is None or not table["local-if"]):
                self.problem((*path, "local-if"), "needs a non-empty glob and a local folder to look in")
            for url in (u for u in urls if u):
                if kind != "find-links" and not URL.match(url):
                    self.problem(
                        (*path, kind),
                        f"{url!r} is not a URL; write it with its scheme, such as https://{url.split('://')[-1]}",
                    )
            result[name] = Source(
                name=name, kind=kind, urls=tuple(u for u in urls if u), local=local,
                packages=tuple(canonicalize_name(p) for p in packages),
                local_if=self.string(table.get("local-if", "*.whl"), (*path, "local-if")) or "*.whl",
                labels=self.source_labels(table, path, kind, packages),
                exclude_newer=self.timestamp(table["exclude-newer"], (*path, "exclude-newer")) if "exclude-newer" in table else None,
            )  # fmt: skip
        return result

    def mirrors(self, value: Any) -> dict[str, str]:
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            self.problem(("mirrors",), 'must be a table of "canonical URL prefix" = "mirror URL prefix"')
            return {}
        seen: dict[str, str] = {}
        for canonical, mirror in value.items():
            if not (URL.match(canonical) and URL.match(mirror)):
                self.problem(
                    ("mirrors", canonical),
                    f'{canonical!r} = {mirror!r}: both must be URL prefixes, such as "https://pypi.org/simple" = "https://mirror.corp.example/pypi/simple"',
                )
                continue
            first = seen.setdefault(_prefix_key(mirror), canonical)
            if first != canonical:  # a URL read back from the mirror could be either one's (issue 16)
                self.problem(
                    ("mirrors", canonical),
                    f"{first!r} and {canonical!r} both map to {mirror!r}; lockgen could not tell which of them a URL "
                    "read back from that mirror belongs to: give each its own mirror prefix",
                )
        return dict(value)

    def credentials(self, config: Config) -> Config:
        """``config`` with every URL field public (``user:password@`` split off by
        :func:`lockgen.runtime.credentials.split`) and the logins in ``Config.credentials`` (realm ->
        userinfo as written). ``${VAR}`` may appear only in the userinfo, and a URL with a login
        needs a fixed host; two different logins for one realm are a problem."""
        logins: dict[str, str] = {}

        def public(url: str, path: KeyPath) -> str:
            from lockgen.runtime.credentials import env_references, realm, split

            bare, userinfo = split(url)
            if env_references(bare):
                self.problem(
                    path, "${VAR} references are expanded only in the user:password@ part of a URL; move it there"
                )
            if userinfo is None:
                return url
            where = realm(bare)
            if "{" in where:
                self.problem(path, "a URL with a login needs a fixed host (no {placeholder} in it)")
            elif logins.setdefault(where, userinfo) != userinfo:
                self.problem(path, f"another URL gives a different login for {where}; give one login per host")
            return bare

        def settings(value: Settings, path: KeyPath) -> Settings:
            index = public(value.index_url, (*path, "index-url")) if value.index_url else value.index_url
            links = {k: tuple(public(u, (*path, "find-links", k)) for u in v) for k, v in value.find_links.items()}
            return dataclasses.replace(value, index_url=index, find_links=links)

        defaults = settings(config.defaults, ())
        rules = tuple(
            dataclasses.replace(r, settings=settings(r.settings, ("rules", i))) for i, r in enumerate(config.rules)
        )
        sources = {
            name: dataclasses.replace(s, urls=tuple(public(u, ("sources", name, s.kind)) for u in s.urls))
            for name, s in config.sources.items()
        }
        mirrors = {public(k, ("mirrors", k)): public(v, ("mirrors", k)) for k, v in config.mirrors.items()}
        return dataclasses.replace(
            config, defaults=defaults, rules=rules, sources=sources, mirrors=mirrors, credentials=logins
        )  # fmt: skip

    def source_labels(self, table: dict[str, Any], path: KeyPath, kind: str, packages: Sequence[str]) -> dict[str, str]:
        """``labels`` of an index source: package -> the local version label its versions carry
        on that index (``"{flavor}"``, ``""`` for none, ``"*"`` for whatever the index serves;
        issue 9, C25). Keys must be packages the source names."""
        from packaging.utils import canonicalize_name

        if "labels" not in table:
            return {}
        value, key = table["labels"], (*path, "labels")
        if kind != "index":
            self.problem(key, "only an index source has labels")
            return {}
        if not isinstance(value, dict):
            self.problem(key, 'must be a table of package = "{flavor}" (the label), "" (none) or "*" (as served)')
            return {}
        named = {canonicalize_name(p) for p in packages}
        labels: dict[str, str] = {}
        for name, label in value.items():
            if canonicalize_name(name) not in named:
                self.problem((*key, name), "not one of the source's packages; add it to packages")
            elif not isinstance(label, str) or (label != "*" and not re.fullmatch(r"[A-Za-z0-9._{}]*", label)):
                self.problem(
                    (*key, name), 'must be a label such as "{flavor}" or "cu128", "" (none) or "*" (as served)'
                )
            else:
                labels[canonicalize_name(name)] = label
        return labels

    def source_placeholders(self, config: Config) -> None:
        """Source URLs, ``local-if`` and ``labels`` may use ``{backend}``, ``{flavor}``,
        ``{python_tag}``, ``{os}``, ``{arch}``, ``{python}`` and any rule or include variable
        (``{wheel_set}``, issue 9): a name no ``vars`` table defines is a problem here; one a
        cell lacks is an error when that cell is planned (:func:`lockgen.plan.sources.cell_sources`)."""
        import string

        names = {*_SOURCE_PLACEHOLDERS, *config.extra_axes, *config.defaults.vars}
        names.update(v for rule in config.rules for v in rule.settings.vars)
        names.update(v for include in config.include for v in include.vars)
        listed = ", ".join(f"{{{n}}}" for n in (*_SOURCE_PLACEHOLDERS, *config.extra_axes))
        for name, source in config.sources.items():
            texts = [(source.kind, u) for u in source.urls] + [("local-if", source.local_if)]
            texts += [(f"labels.{package}", label) for package, label in source.labels.items() if label != "*"]
            for key, text in texts:
                try:
                    fields = [f for _, f, _, _ in string.Formatter().parse(text) if f is not None]
                except ValueError as exc:
                    self.problem(
                        ("sources", name, key),
                        f"bad placeholder in {text!r} ({exc}); write {{name}}, and {{{{ for a brace",
                    )
                    continue
                for field in fields:
                    if field not in names:
                        self.problem(
                            ("sources", name, key),
                            f"bad placeholder '{field}' in {text!r}; use {listed} or a variable of vars",
                        )

    def references(self, config: Config) -> None:
        """Names used in settings must exist: sources (``use``, ``extend-use``), and a version in
        some ``pins`` table (the top level's or a rule's) for each ``pinned``/``extend-pinned`` name. Whether every cell that pins a name
        also gets its version is known only per cell (:mod:`lockgen.plan.matrix`)."""
        from packaging.utils import canonicalize_name

        tables = [((), config.defaults)] + [(("rules", i), r.settings) for i, r in enumerate(config.rules)]
        versioned = {canonicalize_name(name) for _, settings in tables for name in settings.pins}
        for path, settings in tables:
            for key, names in (("use", settings.sources or ()), ("extend-use", settings.extend.get("sources", ()))):
                for name in names:
                    if name not in config.sources:
                        known = ", ".join(sorted(config.sources)) or "none defined"
                        self.problem((*path, key), f"unknown source {name!r} (sources: {known})")
            pinned = [("pinned", settings.pinned or ()), ("extend-pinned", settings.extend.get("pinned", ()))]
            for key, i, name in ((key, i, name) for key, names in pinned for i, name in enumerate(names)):
                if canonicalize_name(name) not in versioned:
                    self.problem(
                        (*path, key, i),
                        f"{name!r} has no version in any pins table; add it to {self.key('pins')} "
                        f'({name} = "VERSION"), or to the pins of the rules whose cells pin it',
                    )
