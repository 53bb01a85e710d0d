"""Protocols, discovered through the `conformance.protocols` entry-point group, and the
catalogue of every check (the protocol-independent ones and each protocol's own).

Each entry point names a `ProtocolSuite` instance (or a callable returning one); the suite's
own package holds everything protocol-specific, its checks included (`ProtocolSuite.checks`).
A protocol may live in another distribution: installing it (or putting a `*.dist-info` with the
entry point on `sys.path`) is all it takes. This is the only module that finds protocols.
"""

from __future__ import annotations

import threading
from importlib import metadata

from ..checks.registry import COMMON, CheckSpec
from .base import Capabilities, Checker, CheckerMode, OptionSpec, Profile, ProtocolSuite

__all__ = ["ENTRY_POINT_GROUP", "Capabilities", "Checker", "CheckerMode", "OptionSpec", "Profile", "ProtocolSuite",
           "UnknownProtocol", "all_checks", "all_protocols", "anomaly_checks", "default_protocol", "get_check",
           "get_protocol", "protocol_names"]

ENTRY_POINT_GROUP = "conformance.protocols"

_lock = threading.Lock()
_suites: dict[str, ProtocolSuite] | None = None


class UnknownProtocol(LookupError):
    pass


def _discover() -> dict[str, ProtocolSuite]:
    global _suites
    with _lock:
        if _suites is None:
            found: dict[str, ProtocolSuite] = {}
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                obj = ep.load()
                suite = obj() if callable(obj) and not isinstance(obj, ProtocolSuite) else obj
                if not isinstance(suite, ProtocolSuite):
                    raise TypeError(f"entry point {ep.name} = {ep.value} in {ENTRY_POINT_GROUP} is not a ProtocolSuite")
                if suite.name in found and found[suite.name] is not suite:
                    raise ValueError(f"two protocols are registered as {suite.name!r} ({ENTRY_POINT_GROUP})")
                found[suite.name] = suite
            _suites = found
        return _suites


def protocol_names() -> list[str]:
    return sorted(_discover())


def get_protocol(name: str) -> ProtocolSuite:
    suites = _discover()
    try:
        return suites[name]
    except KeyError:
        raise UnknownProtocol(f"unknown protocol {name!r}; available: {', '.join(sorted(suites))}") from None


def all_protocols() -> list[ProtocolSuite]:
    suites = _discover()
    return [suites[n] for n in sorted(suites)]


def default_protocol() -> str | None:
    """The protocol that declares itself the default (None when none or several do)."""
    marked = [s.name for s in all_protocols() if s.default]
    return marked[0] if len(marked) == 1 else None


def all_checks(protocol: str | None = None) -> list[CheckSpec]:
    """The checks of one protocol and the protocol-independent ones (of every protocol when
    `protocol` is None), by id."""
    specs = COMMON.specs()
    for suite in all_protocols():
        if protocol is None or suite.name == protocol:
            specs += suite.checks.specs()
    return sorted(specs, key=lambda c: c.id)


def get_check(id: str) -> CheckSpec:
    """A check of any protocol by its full id (KeyError when none has it)."""
    found = COMMON.get(id)
    for suite in all_protocols():
        found = found or suite.checks.get(id)
    if found is None:
        raise KeyError(id)
    return found


def anomaly_checks(anomaly: str) -> tuple[str, ...]:
    """The checks that report a delivery anomaly (declared by each check: `@check(anomalies=…)`);
    none means it is shown as a count only (allowed)."""
    return tuple(c.id for c in all_checks() if anomaly in c.anomalies)
