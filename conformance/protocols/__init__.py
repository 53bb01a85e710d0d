"""Protocols, discovered through the `conformance.protocols` entry-point group.

Each entry point names a `ProtocolSuite` instance (or a callable returning one); the suite's
own package holds everything protocol-specific. A protocol may live in another distribution:
installing it (or putting a `*.dist-info` with the entry point on `sys.path`) is all it takes.
"""

from __future__ import annotations

import threading
from importlib import metadata

from .base import Capabilities, Checker, CheckerMode, OptionSpec, Profile, ProtocolSuite

__all__ = ["ENTRY_POINT_GROUP", "Capabilities", "Checker", "CheckerMode", "OptionSpec", "Profile", "ProtocolSuite",
           "UnknownProtocol", "all_protocols", "default_protocol", "get_protocol", "protocol_names"]

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
