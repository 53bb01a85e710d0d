"""One package per protocol; nothing shared between them but the model (and `base`)."""

from __future__ import annotations

import importlib

from .base import OptionSpec, Profile, ProtocolSuite

__all__ = ["OptionSpec", "Profile", "ProtocolSuite", "all_protocols", "get_protocol", "PROTOCOLS"]

# name -> module providing `SUITE`
PROTOCOLS: dict[str, str] = {
    "ticdc-avro": "conformance.protocols.ticdc_avro.suite",
    "ticdc-simple": "conformance.protocols.ticdc_simple.suite",
}

DEFAULT_PROTOCOL = "ticdc-avro"


class UnknownProtocol(LookupError):
    pass


def get_protocol(name: str) -> ProtocolSuite:
    try:
        mod = PROTOCOLS[name]
    except KeyError:
        raise UnknownProtocol(
            f"unknown protocol {name!r}; available: {', '.join(sorted(PROTOCOLS))}") from None
    suite: ProtocolSuite = importlib.import_module(mod).SUITE
    return suite


def all_protocols() -> list[ProtocolSuite]:
    return [get_protocol(n) for n in sorted(PROTOCOLS)]
