"""The supply-chain dossier of a set of locks: what each cell ships, read from the committed locks.

* :mod:`.inventory`: every locked package of every cell (main and layers), with its artifacts;
* :mod:`.osv`: OSV advisories (the API's ``querybatch``, or an export on disk) and their ranges;
* :mod:`.audit` and :mod:`.auditformat`: known vulnerabilities grouped by advisory across cells,
  as text, markdown, JSON and SARIF; :mod:`.fix`: ``audit --fix``; :mod:`.diffnote`: the
  advisories a lock change fixes or introduces, for ``lockgen diff --format markdown``;
* :mod:`.metadata` and :mod:`.licenses`: each package's license from its core metadata (the
  index's PEP 658 file), and the license policy;
* :mod:`.sbom`: CycloneDX 1.6 SBOMs, per cell and merged.

Everything here reads locks through the lock model (:mod:`lockgen.locks.lockset`); nothing runs
uv except ``audit --fix``, which re-locks through :mod:`lockgen.run.lock`.
"""
