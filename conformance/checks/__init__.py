"""The check registry, outcome tallies, and protocol-independent checks.

Each protocol declares its own checks with a `CheckRegistry`; every check of every protocol
installed is listed by `conformance.protocols.all_checks` (where the protocols are found).
"""

from __future__ import annotations

from . import common, delivery, source  # noqa: F401 - their import registers the protocol-independent checks
from .registry import (
    COMMON,
    Actor,
    CheckRegistry,
    CheckSpec,
    Failure,
    Level,
    Location,
    NotApplicable,
    Outcome,
    Scope,
    check,
)
from .results import CheckTally, Tally

__all__ = [
    "COMMON", "Actor", "CheckRegistry", "CheckSpec", "CheckTally", "Failure", "Level", "Location", "NotApplicable",
    "Outcome", "Scope", "Tally", "check",
]
