"""The check registry, outcome tallies, and protocol-independent checks."""

from __future__ import annotations

import importlib

from .registry import (
    Actor,
    CheckSpec,
    Failure,
    Level,
    Location,
    NotApplicable,
    Outcome,
    Scope,
    all_checks,
    check,
    get_check,
)
from .results import CheckTally, Tally

__all__ = [
    "Actor", "CheckSpec", "CheckTally", "Failure", "Level", "Location", "NotApplicable", "Outcome",
    "Scope", "Tally", "all_checks", "check", "get_check", "load_all",
]

# The protocol-independent checks; each protocol names its own modules (`check_modules`).
_COMMON_MODULES = (
    "conformance.checks.common",
    "conformance.checks.delivery",
    "conformance.checks.source",
)
_loaded = False


def load_all() -> None:
    """Import every module that registers checks: the common ones and those of every protocol
    discovered (idempotent)."""
    global _loaded
    if not _loaded:
        _loaded = True
        from ..protocols import all_protocols

        for m in _COMMON_MODULES:
            importlib.import_module(m)
        for suite in all_protocols():
            for m in suite.check_modules:
                importlib.import_module(m)
