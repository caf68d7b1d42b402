"""Stage 1: the configuration: data (:mod:`.model`), discovery and reading (:mod:`.load`),
validation into frozen dataclasses with key-path errors (:mod:`.validate` and its mixins
:mod:`.fields`, :mod:`.settings`, :mod:`.sources`, :mod:`.backends`, :mod:`.metadata`)."""

from lockgen.config.load import find_config, load_config, parse_toml
from lockgen.config.model import (
    ARCHES,
    AXES,
    DEFAULT_INDEX_URL,
    OSES,
    RESERVED_NAMES,
    WORK,
    Config,
    Include,
    Rule,
    Settings,
    Source,
    selector_matches,
)

__all__ = [
    "ARCHES", "AXES", "DEFAULT_INDEX_URL", "OSES", "RESERVED_NAMES", "WORK", "Config", "Include", "Rule",
    "Settings", "Source", "find_config", "load_config", "parse_toml", "selector_matches",
]  # fmt: skip
