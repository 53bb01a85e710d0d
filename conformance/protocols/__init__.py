"""Protocols, discovered through the `conformance.protocols` entry-point group, and the
catalogue of every check (the protocol-independent ones and each protocol's own).

Each entry point names a `ProtocolSuite` instance (or a callable returning one); the suite's
own package holds everything protocol-specific, its checks included (`ProtocolSuite.checks`).
A protocol may live in another distribution: installing it (or putting a `*.dist-info` with the
entry point on `sys.path`) is all it takes. This is the only module that finds protocols.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from importlib import metadata

from ..checks.registry import COMMON, CheckSpec
from .base import Capabilities, Checker, CheckerMode, OptionSpec, Profile, ProtocolSuite

__all__ = ["ENTRY_POINT_GROUP", "Capabilities", "Checker", "CheckerMode", "OptionSpec", "Profile", "ProtocolNames",
           "ProtocolSuite",
           "UnknownProtocol", "all_checks", "all_protocols", "anomaly_checks", "default_protocol", "get_check",
           "get_protocol", "protocol_names"]

ENTRY_POINT_GROUP = "conformance.protocols"

_lock = threading.Lock()
_suites: dict[str, ProtocolSuite] | None = None


class UnknownProtocol(LookupError):
    pass


def _load(ep: metadata.EntryPoint) -> ProtocolSuite:
    obj = ep.load()
    suite = obj() if callable(obj) and not isinstance(obj, ProtocolSuite) else obj
    if not isinstance(suite, ProtocolSuite):
        raise TypeError(f"entry point {ep.name} = {ep.value} in {ENTRY_POINT_GROUP} is not a ProtocolSuite")
    return suite


#: Suites loaded one at a time (`get_protocol` before anything asked for all of them), by the
#: name of their entry point: `conformance check --protocol P` imports P's package, not every
#: protocol's (a third of the command's start-up). `_discover` takes them from here, so that a
#: name always gives the same suite object.
_loaded: dict[str, ProtocolSuite] = {}


def _discover() -> dict[str, ProtocolSuite]:
    global _suites
    with _lock:
        if _suites is None:
            found: dict[str, ProtocolSuite] = {}
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
                suite = _loaded.get(ep.name) or _load(ep)
                if suite.name in found and found[suite.name] is not suite:
                    raise ValueError(f"two protocols are registered as {suite.name!r} ({ENTRY_POINT_GROUP})")
                found[suite.name] = suite
            _suites = found
        return _suites


def _one(name: str) -> ProtocolSuite | None:
    """The suite of the one entry point named `name`, loaded alone where its suite has that name
    too; None where it takes discovering every protocol to be sure (no such entry point, or
    several)."""
    with _lock:
        suite = _loaded.get(name)
        if suite is None:
            eps = [ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP) if ep.name == name]
            if len(eps) != 1:
                return None
            suite = _loaded[name] = _load(eps[0])
        return suite if suite.name == name else None


class ProtocolNames:
    """The installed protocols' names, for argparse's `choices`: `in` loads only the protocol
    asked about (`get_protocol`); listing them (argparse does as each option is added, for its
    usage line) reads the entry points' names, loading none (a protocol's entry point bears its
    name; once every protocol is loaded, their own names)."""

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            get_protocol(name)
        except UnknownProtocol:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @staticmethod
    def _names() -> list[str]:
        if _suites is not None:
            return sorted(_suites)
        return sorted({ep.name for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)})


def protocol_names() -> list[str]:
    return sorted(_discover())


def get_protocol(name: str) -> ProtocolSuite:
    if _suites is None:
        suite = _one(name)
        if suite is not None:
            return suite
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
    if protocol is None:
        suites = all_protocols()
    else:
        try:
            suites = [get_protocol(protocol)]  # that protocol's package alone
        except UnknownProtocol:
            suites = []
    for suite in suites:
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
