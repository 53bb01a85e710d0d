"""What the TiCDC Avro checks look at."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ...checks.registry import Location
from ...encoders.spi import Record
from ...model.events import Event, Op, RowChange
from ...model.table import Table
from ...model.values import Row
from .decoder import DecodedPart, SchemaResolver
from .spec import AvroOptions


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
class RecordEvidence:
    record: Record
    loc: Location
    key: DecodedPart | None
    value: DecodedPart | None
    o: AvroOptions
    resolver: SchemaResolver
    source: SourceRow | None = None
    # (part, decoded part, source column or None, field), computed once for all checks
    bindings: list[tuple[str, DecodedPart, Any, Any]] | None = None
    by_family: dict[str, list[tuple[str, DecodedPart, Any, Any]]] | None = None

    def parts(self) -> Iterator[tuple[str, DecodedPart]]:
        if self.key is not None:
            yield "key", self.key
        if self.value is not None:
            yield "value", self.value

    def at(self, part: str | None = None, column: str | None = None) -> Location:
        table = self.source.table.qualified_name if self.source is not None else None
        return Location(self.loc.topic, self.loc.partition, self.loc.offset, table=table, column=column,
                        line=self.loc.line, part=part)


@dataclass(slots=True)
class EventEvidence:
    event: Event
    expected: list[SourceRow]
    records: list[RecordEvidence]
    missing: list[SourceRow] = field(default_factory=list)
    unexpected: list[RecordEvidence] = field(default_factory=list)
    o: AvroOptions = field(default_factory=AvroOptions)


@dataclass(slots=True)
class StreamEvidence:
    topic: str
    # (namespace, name) of every record schema seen in the topic -> where first seen
    record_names: dict[tuple[str | None, str | None], Location] = field(default_factory=dict)
    records: int = 0


def freeze(datum: dict[str, Any] | None) -> tuple[Any, ...] | None:
    if datum is None:
        return None
    return tuple(sorted(datum.items()))
