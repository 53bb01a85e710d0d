"""The encoder SPI (version 1): how the suite talks to an implementation under test.

An encoder turns source events (the canonical model) into Kafka records, exactly as the CDC
tool would produce them: topic, partition, key bytes, value bytes, headers. It registers its
own schemas with the registry it is given (the context), as TiCDC does.

    open(ctx)            once, before any event
    encode(event)        for each transaction / DDL / watermark, in commit order
    tick(now)            periodically (bootstraps, watermarks driven by time); `now` comes from
                         the context's clock, which tests drive, so nothing ever sleeps
    close()              once

In-process encoders are found through the `conformance.encoders` entry-point group; an
encoder in any other language runs as a subprocess speaking JSON lines (`subprocess.py`,
`docs/subprocess-encoders.md`).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..model.events import CaptureStart, Ddl, Event, Transaction, Watermark, tso_physical_ms

SPI_VERSION = 1


@dataclass(frozen=True, slots=True)
class Record:
    topic: str
    key: bytes | None
    value: bytes | None
    partition: int | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    offset: int | None = None  # known once the record sits in a log (Kafka, a capture file)


_new = object.__new__
_set_topic, _set_key, _set_value, _set_partition, _set_headers, _set_timestamp, _set_offset = (
    Record.__dict__[n].__set__ for n in ("topic", "key", "value", "partition", "headers", "timestamp", "offset"))


def new_record(topic: str, key: bytes | None, value: bytes | None, partition: int | None,
               headers: tuple[tuple[str, bytes | None], ...], timestamp: int | None, offset: int | None) -> Record:
    """`Record(topic, key, value, partition, headers, timestamp, offset)` for a reader's hot loop:
    the same record, its slots set one by one rather than through the frozen dataclass's
    `__init__` (which costs about a microsecond more, a third of reading a capture line)."""
    rec = _new(Record)
    _set_topic(rec, topic)
    _set_key(rec, key)
    _set_value(rec, value)
    _set_partition(rec, partition)
    _set_headers(rec, headers)
    _set_timestamp(rec, timestamp)
    _set_offset(rec, offset)
    return rec


class SchemaRegistry(Protocol):
    """What an encoder may ask of a Confluent-compatible registry."""

    def register(self, subject: str, schema: str) -> int: ...

    def schema_by_id(self, schema_id: int) -> str: ...


class ManualClock:
    """A clock that moves only when told: tests and the in-process runner drive time."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now

    def follow(self, event: Event) -> float:
        """Move to the physical time of `event`'s commit ts (never backwards): a simulated CDC
        server sees events when they commit. Returns the new time."""
        ts = event_ts(event)
        if ts:
            self.now = max(self.now, tso_physical_ms(ts) / 1000.0)
        return self.now


def event_ts(event: Event) -> int:
    """The commit ts of a transaction or DDL, the ts of a watermark."""
    if isinstance(event, (Transaction, Ddl, CaptureStart)):
        return event.commit_ts
    if isinstance(event, Watermark):
        return event.ts
    return 0


@dataclass(slots=True)
class EncoderContext:
    options: Mapping[str, str]
    registry: SchemaRegistry | None = None
    clock: Callable[[], float] = field(default_factory=ManualClock)
    partitions: int = 1
    # A static prefix the harness puts in front of every topic so that separate workloads
    # never share topics or registry subjects (like a per-run changefeed prefix).
    topic_prefix: str = ""
    # Server time zone (TiCDC's --tz): TIMESTAMP values are rendered in it.
    time_zone: str = "UTC"
    # The registry's URL, credentials included, for encoders that talk to it themselves (a
    # subprocess registers its own schemas, as TiCDC does). Never print it; None when the
    # registry is in-process only (unit tests) or there is none.
    registry_url: str | None = None
    # The run's bound on one call (--encoder-timeout), for adapters that talk to an encoder
    # elsewhere and bound their own requests with it (`EncoderInfo.bounds_own_calls`).
    call_timeout: float | None = None
    # What survives a restart of the encoder within one work unit: after a failed delivery the
    # harness opens a fresh encoder with this same context and replays events from its
    # checkpoint. A real CDC tool keeps such state on disk (MaxScale's table versions in
    # /var/lib/maxscale/<service>); an encoder that keeps none ignores it.
    durable: dict[str, Any] = field(default_factory=dict)
    # `last_key(topic, partition)`: the key of the last message of that partition the broker
    # acknowledged so far in this unit (None: none yet). For encoders that recover their
    # position from their own output, as MaxScale's `read_gtid_from_kafka` reads the last key of
    # partition 0. Set by the harness before every (re)open; None where it cannot tell.
    last_key: Callable[[str, int], bytes | None] | None = None


class EncoderError(Exception):
    """The encoder could not encode an event (its own failure, reported against it)."""

    @property
    def evidence(self) -> str | None:
        """What a finding shows as `actual` (an adapter's offending line, stderr tail, exit
        status…); None: the harness shows the innermost frames of the exception."""
        return None


class EncoderHung(EncoderError):
    """The encoder did not answer within its time bound. The harness raises it for in-process
    encoders (their calls run under a timeout); an adapter that talks to an encoder elsewhere (a
    subprocess, a whole tool) raises it itself. Reported as `encoder.responsive` failed."""


class ConfigurationError(ValueError):
    """The options given to an encoder are invalid or contradictory (a usage error)."""


@runtime_checkable
class Encoder(Protocol):
    def open(self, ctx: EncoderContext) -> None: ...

    def encode(self, event: Event) -> list[Record]: ...

    def tick(self, now: float) -> list[Record]: ...

    def close(self) -> None: ...


class EncoderKind(enum.StrEnum):
    REFERENCE = "reference"
    MUTANT = "mutant"
    EXTERNAL = "external"


@dataclass(frozen=True, slots=True)
class EncoderInfo:
    """A named encoder the CLI can run: `ticdc-avro/reference`, `ticdc-avro/mutant/<name>`."""

    name: str
    protocol: str
    kind: EncoderKind
    factory: Callable[[], Encoder] = field(compare=False, repr=False)
    description: str = ""
    # Mutants: the check that must catch the defect, and the options under which it shows.
    catches: str | None = None
    needs_options: Mapping[str, str] = field(default_factory=dict)
    # Workload shape overrides (fields of `strategies.Shape`) that make the defect likely to show.
    shape: Mapping[str, Any] = field(default_factory=dict, compare=False)
    # The sink policy the encoder's records are produced through (`encoders/sink.py`): the
    # reference's, or a broken one (a delivery mutant).
    sink: str = "reference"
    # A broker fault schedule that exposes the defect (it then needs a broker that injects faults).
    faults: str | None = None
    # A registry fault (`harness/compatibility.REGISTRY_FAULTS`): the reference against a registry
    # that breaks its own rules, for the check that must blame the registry.
    registry_fault: str | None = None
    # The encoder runs elsewhere (a subprocess, a tool) and its adapter bounds every call itself
    # with the context's `call_timeout`, reporting a hang as EncoderHung: the harness then guards
    # the adapter with a longer timeout (process start included), so that the adapter reports
    # first and kills what it started.
    bounds_own_calls: bool = False
    # Which of a combination's options the encoder does not support ("name=value (why)"); None:
    # it supports every option of its protocol. The CLI leaves such combinations out of a matrix.
    unsupported: Callable[[Mapping[str, str]], Sequence[str]] | None = field(default=None, compare=False, repr=False)
    # A whole CDC tool (black-box mode, `encoders/tool.py`): its adapter's factory. The tool reads
    # the upstream's change log itself; `factory` is then unused (the harness replays what the
    # tool handed over).
    tool: Callable[[], Any] | None = field(default=None, compare=False, repr=False)
    # Records replayed from a capture (`check --workload`): registered where the capture was made,
    # so the run's registry checks (what the registry answered the encoder) do not apply.
    replays_capture: bool = False
    # A mutant whose defect shows only where the truth is a server's change log (its ids, such as
    # PostgreSQL's xids and LSNs): it runs with `--upstream`, never in memory.
    needs_server: bool = False
    # Who the encoder says it is, for the report a reader trusts: (implementation, version), asked
    # once when the report is written (a subprocess's handshake, a tool's installed jars). None:
    # the suite's own encoders (reference, mutants) are the suite's version; others are unknown.
    identify: Callable[[], tuple[str, str] | None] | None = field(default=None, compare=False, repr=False)

    @property
    def needs_broker(self) -> bool:
        """Its defect only shows under broker faults (an in-memory log never fails)."""
        return self.faults is not None
