"""What the TiCDC Avro checks look at."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...checks.registry import Location
from ...encoders.spi import Record
from ...model.events import Ddl, Event, Op, RowChange, Watermark
from ...model.table import Table
from ...model.values import Row
from ..kit import Located
from .decoder import DecodedPart, SchemaResolver
from .spec import AvroOptions
from .watermark import ControlMessage


@dataclass(slots=True)
class SourceRow:
    """The row a record must carry, from the generated workload (after the update split)."""

    table: Table
    op: Op  # INSERT / UPDATE / DELETE as TiCDC sends it
    image: Row
    commit_ts: int
    topic: str
    change: RowChange
    split: bool = False  # part of an UPDATE split into DELETE + INSERT


@dataclass(slots=True)
class RecordEvidence(Located):
    record: Record
    loc: Location
    key: DecodedPart | None
    value: DecodedPart | None
    o: AvroOptions
    resolver: SchemaResolver
    source: SourceRow | None = None
    # A DDL or checkpoint record (avro-enable-watermark): not Confluent-framed, judged apart.
    control: ControlMessage | None = None
    control_source: Ddl | Watermark | None = None  # run mode: the event it came from
    # (part, decoded part, source column or None, field), computed once for all checks
    bindings: list[tuple[str, DecodedPart, Any, Any]] | None = None

    def parts(self) -> Iterator[tuple[str, DecodedPart]]:
        if self.key is not None:
            yield "key", self.key
        if self.value is not None:
            yield "value", self.value

    @property
    def table_name(self) -> str | None:
        return self.source.table.qualified_name if self.source is not None else None


@dataclass(slots=True)
class EventEvidence:
    event: Event
    expected: list[SourceRow]
    records: list[RecordEvidence]
    missing: list[SourceRow] = field(default_factory=list)
    unexpected: list[RecordEvidence] = field(default_factory=list)
    o: AvroOptions = field(default_factory=AvroOptions)
    # avro-enable-watermark: (topic, partition, kind) the event must produce, and what it did
    expected_controls: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    controls: list[RecordEvidence] = field(default_factory=list)


@dataclass(slots=True)
class StreamEntry:
    """One message of a partition's log, as the control-message checks see it."""

    offset: int | None
    kind: str  # "row" | "ddl" | "checkpoint"
    ts: int | None  # a row's _tidb_commit_ts, a DDL's commitTs, a checkpoint's ts
    first: bool  # first copy in this partition (a later copy is an at-least-once replay)
    identity: Any = None  # control messages: what makes the copies of one broadcast alike


@dataclass(slots=True)
class StreamEvidence:
    topic: str
    # (namespace, name) of every record schema seen in the topic -> where first seen
    record_names: dict[tuple[str | None, str | None], Location] = field(default_factory=dict)
    records: int = 0
    # Only with avro-enable-watermark: every partition's messages in log order.
    logs: dict[int, list[StreamEntry]] = field(default_factory=dict)
    seen: dict[int, set[bytes]] = field(default_factory=dict)
    partition_count: int | None = None  # known in `run`; a capture only shows partitions with messages
    with_source: bool = False
    hard_coded_topic: bool = False  # the topic rule names no {schema}/{table}: TiCDC lets tables share it

    @property
    def partitions(self) -> list[int]:
        if self.partition_count is not None:
            return list(range(self.partition_count))
        return sorted(self.logs)


def freeze(datum: dict[str, Any] | None) -> tuple[Any, ...] | None:
    if datum is None:
        return None
    return tuple(sorted(datum.items()))
