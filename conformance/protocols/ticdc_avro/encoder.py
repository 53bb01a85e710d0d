"""The TiCDC Avro reference encoder: byte-exact with pingcap/tiflow as `spec/notes/ticdc.md` §1
describes it.

* One Kafka record per row change. INSERT/UPDATE: key = handle-key columns, value = every
  column (+ extension fields). DELETE: key from the old image, value null (a tombstone).
  An UPDATE that changes a primary/unique key column becomes DELETE + INSERT unless
  `output-raw-change-event=true`. DDL and watermarks produce nothing.
* With `avro-enable-watermark=true` (and the extension on), DDLs and watermarks become
  key-less control records on every partition (`watermark.py`).
* Confluent framing: 0x00, big-endian int32 schema id, Avro binary body.
* Schemas registered lazily per table version under `<topic with . -> _>-key|-value`, as the
  compact JSON Go's `json.Marshal` writes (the exact text TiCDC POSTs).

Every step is a small method so that a mutant can break exactly one of them.
"""

from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import fastavro

from ...encoders.spi import ConfigurationError, EncoderContext, EncoderError, Record
from ...model import gojson
from ...model.events import Ddl, Event, Op, RowChange, Transaction, Watermark
from ...model.table import Column, Table
from ...model.values import Row
from ..kit import update_halves
from . import spec, watermark
from .spec import AvroOptions

MAGIC = b"\x00"


def strip_logical_types(node: Any) -> Any:
    """A copy of a schema without `logicalType` (decimals travel as raw bytes here, so that
    their exact two's-complement bytes are written and read back unchanged)."""
    if isinstance(node, dict):
        return {k: strip_logical_types(v) for k, v in node.items() if k != "logicalType"}
    if isinstance(node, list):
        return [strip_logical_types(v) for v in node]
    return node


@dataclass(slots=True)
class _Plan:
    schema_id: int
    parsed: Any  # fastavro parsed schema
    columns: tuple[Column, ...]
    field_names: tuple[str, ...]


class TiCDCAvroEncoder:
    """Reference encoder. Subclasses (mutants) override single steps."""

    protocol = spec.PROTOCOL

    def __init__(self) -> None:
        self.ctx: EncoderContext | None = None
        self.o = AvroOptions()
        self._plans: dict[tuple[str, int, int, str], _Plan] = {}
        self.active = watermark.ActiveTables(self.o)

    # -- SPI ------------------------------------------------------------------------------

    def open(self, ctx: EncoderContext) -> None:
        if ctx.registry is None:
            raise ConfigurationError("TiCDC Avro needs a schema registry (schema-registry is required)")
        self.ctx = ctx
        self.o = AvroOptions.from_options(ctx.options)
        problems = spec.combination_problems(self.o, ctx.options)
        if problems:
            raise ConfigurationError("; ".join(problems))
        self.active = watermark.ActiveTables(self.o, ctx.topic_prefix)

    def encode(self, event: Event) -> list[Record]:
        if isinstance(event, Transaction):
            out: list[Record] = []
            for change in event.changes:
                out.extend(self.encode_change(change, event.commit_ts))
            self.active.follow(event)
            return out
        if isinstance(event, (Ddl, Watermark)):
            out = self.encode_other(event)
            self.active.follow(event)
            return out
        raise EncoderError(f"unknown event {type(event).__name__}")

    def tick(self, now: float) -> list[Record]:
        return []

    def close(self) -> None:
        self._plans.clear()

    # -- steps ----------------------------------------------------------------------------

    def encode_other(self, event: Ddl | Watermark) -> list[Record]:
        """DDL and resolved events are not sent by the Avro protocol, unless the testing option
        avro-enable-watermark (with the extension) turns them into control records."""
        if not self.o.control_messages:
            return []
        if isinstance(event, Ddl):
            return self.broadcast(self.ddl_topic(event), self.ddl_value(event))
        value = self.checkpoint_value(event.ts)
        return [r for topic in self.checkpoint_topics() for r in self.broadcast(topic, value)]

    def ddl_value(self, d: Ddl) -> bytes:
        return watermark.ddl_value(d)

    def checkpoint_value(self, ts: int) -> bytes:
        return watermark.checkpoint_value(ts)

    def ddl_topic(self, d: Ddl) -> str:
        assert self.ctx is not None
        return watermark.ddl_topic(d, self.o, self.ctx.topic_prefix)

    def checkpoint_topics(self) -> list[str]:
        return self.active.topics()

    def broadcast(self, topic: str, value: bytes) -> list[Record]:
        """The DDL dispatch rule of Avro is PartitionAll: one copy to every partition, key null."""
        assert self.ctx is not None
        return [Record(topic=topic, key=None, value=value, partition=p) for p in range(max(1, self.ctx.partitions))]

    def split_update(self, change: RowChange) -> bool:
        return not self.o.raw_change_event and change.changes_unique_key()

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Record]:
        if change.op is Op.UPDATE and self.split_update(change):
            return [r for half in update_halves(change) for r in self.encode_change(half, commit_ts)]
        table = change.table
        topic = self.topic(table)
        if change.op is Op.DELETE:
            assert change.before is not None
            key = self.encode_key(table, topic, change.before)
            value = self.delete_value(table, topic, change.before, commit_ts)
        else:
            assert change.after is not None
            key = self.encode_key(table, topic, change.after)
            value = self.encode_value(table, topic, change.after, self.op_code(change.op), commit_ts)
        return [Record(topic=topic, key=key, value=value, partition=self.partition(table))]

    def delete_value(self, table: Table, topic: str, before: Row, commit_ts: int) -> bytes | None:
        """A delete's value is null: a tombstone, for `delete.on.null` sinks."""
        return None

    def op_code(self, op: Op) -> str:
        return "c" if op is Op.INSERT else "u"

    def topic(self, table: Table) -> str:
        assert self.ctx is not None
        return self.ctx.topic_prefix + spec.substitute_topic(self.o.topic, table.database, table.name)

    def partition(self, table: Table) -> int | None:
        """TiCDC's default dispatcher ("table"): a whole table goes to one partition, chosen by a
        hash of schema and table name, so that a key's changes stay in order."""
        assert self.ctx is not None
        if self.ctx.partitions <= 1:
            return 0
        return zlib.crc32((table.database + table.name).encode("utf-8")) % self.ctx.partitions

    def subject(self, topic: str, part: str) -> str:
        return spec.subject(topic, part)

    def key_columns(self, table: Table) -> tuple[Column, ...]:
        return spec.key_columns(table)

    def value_columns(self, table: Table) -> tuple[Column, ...]:
        return spec.value_columns(table, self.o)

    def record_name(self, table: Table) -> str:
        return spec.sanitize_name(table.name)

    def record_namespace(self, table: Table, part: str) -> str:
        return spec.namespace(table.database)

    def field_name(self, col: Column) -> str:
        return spec.sanitize_name(col.name)

    def column_field(self, col: Column) -> dict[str, Any]:
        return spec.field(col, self.o, self.field_name(col))

    def extension_fields(self, part: str) -> list[dict[str, Any]]:
        if part != "value":
            return []
        return [spec.extension_field(n, self.o) for n in spec.expected_extension_names(self.o)]

    def schema_dict(self, table: Table, part: str) -> dict[str, Any]:
        cols = self.key_columns(table) if part == "key" else self.value_columns(table)
        return {"type": "record", "name": self.record_name(table),
                "namespace": self.record_namespace(table, part),
                "fields": [self.column_field(c) for c in cols] + self.extension_fields(part)}

    def schema_text(self, schema: dict[str, Any]) -> str:
        return gojson.dumps(schema)

    def native_value(self, col: Column, row: Row) -> Any:
        return spec.native_value(col, row[col.name], self.o)

    def extension_values(self, op: str, commit_ts: int, table: Table, row: Row) -> dict[str, Any]:
        checksum = self.checksum(table, row) if self.o.checksum else None
        return spec.extension_values(op, commit_ts, checksum, self.o)

    def checksum(self, table: Table, row: Row) -> int:
        return spec.row_checksum(spec.value_columns(table, self.o), row, self.o)

    def frame(self, schema_id: int, body: bytes) -> bytes:
        return MAGIC + struct.pack(">i", schema_id) + body

    def write_body(self, parsed: Any, datum: dict[str, Any]) -> bytes:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, datum)
        return buf.getvalue()

    # -- plumbing -------------------------------------------------------------------------

    def plan(self, table: Table, topic: str, part: str) -> _Plan:
        k = (topic, table.table_id, table.version, part)
        p = self._plans.get(k)
        if p is None:
            schema = self.schema_dict(table, part)
            text = self.schema_text(schema)
            assert self.ctx is not None and self.ctx.registry is not None
            try:
                schema_id = self.ctx.registry.register(self.subject(topic, part), text)
            except Exception as e:  # noqa: BLE001 - the registry's answer is reported, not hidden
                raise EncoderError(f"registering the {part} schema of {table.qualified_name} under "
                                   f"{self.subject(topic, part)!r} failed: {e}") from e
            try:
                parsed = fastavro.parse_schema(strip_logical_types(schema), _ignore_default_error=True)
            except Exception as e:  # noqa: BLE001
                raise EncoderError(f"the {part} schema of {table.qualified_name} is not valid Avro: {e}") from e
            cols = self.key_columns(table) if part == "key" else self.value_columns(table)
            p = _Plan(schema_id, parsed, cols, tuple(self.field_name(c) for c in cols))
            self._plans[k] = p
        return p

    def encode_key(self, table: Table, topic: str, row: Row) -> bytes | None:
        p = self.plan(table, topic, "key")
        if not p.columns:
            return None  # no handle key (TiCDC refuses such tables for Avro anyway)
        datum = {n: self.native_value(c, row) for c, n in zip(p.columns, p.field_names, strict=True)}
        return self.frame(p.schema_id, self.write_body(p.parsed, datum))

    def encode_value(self, table: Table, topic: str, row: Row, op: str, commit_ts: int) -> bytes:
        p = self.plan(table, topic, "value")
        datum = {n: self.native_value(c, row) for c, n in zip(p.columns, p.field_names, strict=True)}
        datum.update(self.extension_values(op, commit_ts, table, row))
        return self.frame(p.schema_id, self.write_body(p.parsed, datum))
