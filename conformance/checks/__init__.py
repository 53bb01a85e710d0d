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

_CHECK_MODULES = (
    "conformance.checks.common",
    "conformance.checks.delivery",
    "conformance.checks.source",
    "conformance.protocols.ticdc_avro.checks",
    "conformance.protocols.ticdc_simple.checks",
)
_loaded = False


def load_all() -> None:
    """Import every module that registers checks (idempotent)."""
    global _loaded
    if not _loaded:
        for m in _CHECK_MODULES:
            importlib.import_module(m)
        _loaded = True
