"""TiCDC Avro control messages (`avro-enable-watermark`): DDL and checkpoint records.

A testing option of pingcap/tiflow, honoured only together with `enable-tidb-extension=true`
(`avro.go` EncodeDDLEvent / EncodeCheckpointEvent, `spec/notes/ticdc.md` §1.9). TiCDC's own
Kafka consumer forces it on for Avro (`cmd/kafka-consumer/option.go`), so captures from
TiCDC's integration setups carry these records; a Confluent deserializer cannot read them.

* DDL: key null; value `0x01` ‖ Go `json.Marshal` of the struct
  `{query string; type ActionType; schema string; table string; commitTs uint64}`
  (declaration order, compact, HTML-escaped). `schema`/`table` name the table *after* the DDL
  (the dropped table for DROP TABLE, `""` for schema-level DDL).
* Checkpoint: key null; value `0x02` ‖ the resolved ts as big-endian uint64 (9 bytes).
* Both are broadcast to every partition (the DDL dispatch rule of every protocol but Canal is
  `PartitionAll`): a DDL to its table's topic (the name *before* the DDL, e.g. the old name of
  a renamed table; the default topic for schema-level DDL), a checkpoint to the topic of every
  table of the changefeed plus the default topic (`EventRouter.GetActiveTopics`).
* Consumers tell records apart as TiCDC's decoder does: a key means a row; without a key the
  first value byte says 0x00 row, 0x01 DDL, 0x02 checkpoint (`avro/decoder.go`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...model import gojson
from ...model.events import Ddl, DdlKind, Event, Transaction
from . import spec

DDL_BYTE = 0x01
CHECKPOINT_BYTE = 0x02
CHECKPOINT_LEN = 9

# TiDB's `model.ActionType` (a byte) for the DDL kinds the suite generates.
ACTION_TYPES: dict[DdlKind, int] = {
    DdlKind.CREATE_DATABASE: 1, DdlKind.CREATE_TABLE: 3, DdlKind.DROP_TABLE: 4, DdlKind.ADD_COLUMN: 5,
    DdlKind.DROP_COLUMN: 6, DdlKind.ADD_INDEX: 7, DdlKind.DROP_INDEX: 8, DdlKind.TRUNCATE_TABLE: 11,
    DdlKind.MODIFY_COLUMN: 12, DdlKind.RENAME_TABLE: 14,
}
DDL_FIELDS = ("query", "type", "schema", "table", "commitTs")
_U64 = (1 << 64) - 1


# -- building (the reference encoder) ---------------------------------------------------------

def ddl_fields(d: Ddl) -> dict[str, Any]:
    """The DDL message's fields, in the Go struct's declaration order."""
    t = d.table if d.table is not None else d.pre_table
    return {"query": d.sql, "type": ACTION_TYPES[d.kind],
            "schema": t.database if t is not None else d.database,
            "table": t.name if t is not None else "", "commitTs": d.commit_ts}


def ddl_value(d: Ddl) -> bytes:
    return bytes([DDL_BYTE]) + gojson.dumps(ddl_fields(d)).encode("utf-8")


def checkpoint_value(ts: int) -> bytes:
    return bytes([CHECKPOINT_BYTE]) + ts.to_bytes(8, "big")


def ddl_topic(d: Ddl, o: spec.AvroOptions, prefix: str = "") -> str:
    """`EventRouter.GetTopicForDDL`: the table's name before the DDL if there was one, else after;
    the default topic when neither names a table."""
    t = d.pre_table if d.pre_table is not None else d.table
    if t is None or not t.name:
        return prefix + o.default_topic
    return prefix + spec.substitute_topic(o.topic, t.database, t.name)


class ActiveTables:
    """The tables a changefeed replicates, followed through the workload's events, and the
    topics a checkpoint goes to (`GetActiveTopics`: each table's topic once, in order, then the
    default topic)."""

    def __init__(self, o: spec.AvroOptions, prefix: str = "") -> None:
        self.o = o
        self.prefix = prefix
        self._tables: dict[tuple[str, str], None] = {}

    def follow(self, event: Event) -> None:
        if isinstance(event, Ddl):
            if event.pre_table is not None:
                self._tables.pop((event.pre_table.database, event.pre_table.name), None)
            if event.table is not None:
                self._tables[(event.table.database, event.table.name)] = None
        elif isinstance(event, Transaction):
            for ch in event.changes:
                self._tables.setdefault((ch.table.database, ch.table.name), None)

    def topics(self) -> list[str]:
        out: dict[str, None] = {}
        for db, name in self._tables:
            out[self.prefix + spec.substitute_topic(self.o.topic, db, name)] = None
        out.setdefault(self.prefix + self.o.default_topic, None)
        return list(out)


def all_topics(events: Iterable[Event], o: spec.AvroOptions, prefix: str) -> set[str]:
    """Every topic a workload's control messages go to (for creating topics up front)."""
    tables = ActiveTables(o, prefix)
    out: set[str] = {prefix + o.default_topic}
    for e in events:
        if isinstance(e, Ddl):
            out.add(ddl_topic(e, o, prefix))
        tables.follow(e)
        out.update(tables.topics())
    return out


# -- reading (the checks) ---------------------------------------------------------------------

def is_control(key: bytes | None, value: bytes | None) -> bool:
    """TiCDC's decoder rule: no key, and a value whose first byte is 0x01 or 0x02."""
    return key is None and bool(value) and value[0] in (DDL_BYTE, CHECKPOINT_BYTE)  # type: ignore[index]


@dataclass(slots=True)
class ControlMessage:
    kind: str  # "ddl" | "checkpoint"
    raw: bytes
    ts: int | None = None  # commitTs of a DDL, the resolved ts of a checkpoint
    fields: dict[str, Any] | None = None  # a DDL's JSON object, in its order
    problem: str | None = None  # why the message is malformed (None: well-formed)

    @property
    def identity(self) -> tuple[Any, ...]:
        """What makes two copies of one broadcast the same message."""
        return (self.kind, self.raw)


def decode_control(value: bytes) -> ControlMessage:
    if value[0] == CHECKPOINT_BYTE:
        m = ControlMessage("checkpoint", value)
        if len(value) != CHECKPOINT_LEN:
            m.problem = f"{len(value)} bytes: a checkpoint is 0x02 and an 8-byte big-endian ts (9 bytes)"
            if len(value) < CHECKPOINT_LEN:
                return m
        m.ts = int.from_bytes(value[1:CHECKPOINT_LEN], "big")
        return m
    m = ControlMessage("ddl", value)
    try:
        pairs = json.loads(value[1:].decode("utf-8"), object_pairs_hook=list)
    except (UnicodeDecodeError, ValueError) as e:
        m.problem = f"the DDL message after 0x01 is not UTF-8 JSON: {e}"
        return m
    if not isinstance(pairs, list) or not all(isinstance(p, tuple) for p in pairs):
        m.problem = "the DDL message after 0x01 is not a JSON object"
        return m
    names = [k for k, _ in pairs]
    fields = dict(pairs)
    m.fields = fields
    if isinstance(fields.get("commitTs"), int) and not isinstance(fields.get("commitTs"), bool):
        m.ts = fields["commitTs"]
    if names != list(DDL_FIELDS):
        m.problem = f"keys {names}, not {list(DDL_FIELDS)} in that order (Go struct order)"
        return m
    wrong = [n for n, ok in (("query", isinstance(fields["query"], str)),
                             ("type", _is_int(fields["type"], 0xFF)),
                             ("schema", isinstance(fields["schema"], str)),
                             ("table", isinstance(fields["table"], str)),
                             ("commitTs", _is_int(fields["commitTs"], _U64))) if not ok]
    if wrong:
        m.problem = (f"wrong JSON types for {wrong}: query, schema, table are strings, type a byte (TiDB "
                     "ActionType), commitTs an unsigned 64-bit integer")
        return m
    canonical = gojson.dumps(fields).encode("utf-8")
    if canonical != value[1:]:
        m.problem = "the JSON is not what Go's json.Marshal writes (compact, <>& escaped as \\u003c…)"
    return m


def _is_int(v: Any, hi: int) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= hi
