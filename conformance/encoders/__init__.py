"""Encoders: the SPI, discovery of installed encoders, and the built-in ones."""

from __future__ import annotations

import functools
from importlib import metadata

from .spi import (
    SPI_VERSION,
    ConfigurationError,
    Encoder,
    EncoderContext,
    EncoderError,
    EncoderHung,
    EncoderInfo,
    EncoderKind,
    ManualClock,
    Record,
    SchemaRegistry,
)

__all__ = [
    "SPI_VERSION", "ConfigurationError", "Encoder", "EncoderContext", "EncoderError", "EncoderHung", "EncoderInfo",
    "EncoderKind", "ManualClock", "Record", "SchemaRegistry", "all_encoders", "find_encoder",
]

ENTRY_POINT_GROUP = "conformance.encoders"


class UnknownEncoder(LookupError):
    pass


def all_encoders(protocol: str | None = None) -> list[EncoderInfo]:
    """Built-in reference and mutant encoders of every protocol, plus installed plug-ins."""
    return [e for e in _installed() if protocol is None or e.protocol == protocol]


@functools.cache
def _installed() -> tuple[EncoderInfo, ...]:
    """Found once per process: every work unit looks its encoder up by name."""
    from ..protocols import all_protocols

    found: list[EncoderInfo] = []
    for p in all_protocols():
        found.extend(p.encoders())
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        obj = ep.load()
        infos = obj() if callable(obj) and not isinstance(obj, EncoderInfo) else obj
        if isinstance(infos, EncoderInfo):
            infos = [infos]
        found.extend(i for i in infos if isinstance(i, EncoderInfo))
    return tuple(found)


def find_encoder(name: str, protocol: str) -> EncoderInfo:
    """Look an encoder up by full name (`ticdc-avro/mutant/x`) or short name (`reference`);
    `cmd:<command line>` runs that command through the subprocess protocol; `tool:<command line>`
    runs it as a whole CDC tool that reads the upstream and writes to Kafka itself."""
    from .subprocess import COMMAND_PREFIX, command_encoder
    from .tool_cmd import TOOL_PREFIX, tool_encoder

    if name.startswith(COMMAND_PREFIX):
        return command_encoder(name[len(COMMAND_PREFIX):], protocol=protocol)
    if name.startswith(TOOL_PREFIX):
        return tool_encoder(name[len(TOOL_PREFIX):], protocol=protocol)
    encs = all_encoders(protocol)
    for e in encs:
        if e.name == name or e.name == f"{protocol}/{name}":
            return e
    known = ", ".join(e.name for e in encs[:8])
    raise UnknownEncoder(f"no encoder named {name!r} for protocol {protocol!r}; known: {known}"
                         f"{' …' if len(encs) > 8 else ''} (see `conformance list`)")
