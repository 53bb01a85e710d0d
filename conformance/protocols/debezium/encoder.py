"""The Debezium reference encoder: what the PostgreSQL connector hands to Kafka Connect, through
the JSON converter, for the changes of a workload (spec.py says where each rule comes from).

* One topic per table, `<topic.prefix>.<schema>.<table>`; the key is the primary key (or the
  replica-identity index) as a struct, null for a table with neither; Kafka's partitioner
  places it (Connect hashes the key).
* Per row change one event: `c` (insert), `u` (update), `d` (delete) and, after a delete, a
  tombstone unless `tombstones.on.delete=false`. An update that changes the key is a delete of
  the old key (and its tombstone) followed by a create with the new one ("Primary key updates").
* `before`: the whole old row under REPLICA IDENTITY FULL; otherwise null for an update that
  keeps the key, and the old key's columns (the rest null) for a delete.
* `source`: the PostgreSQL block; `txId` and `lsn` from the server where the workload ran on
  one, else synthetic but increasing. Transaction ids are `<txId>:<lsn>` as the real connector
  writes them; BEGIN/END go to `<topic.prefix>.transaction` with `provide.transaction.metadata`.
* DDL produces nothing (the connector learns schemas from the log); TRUNCATE is skipped by
  default, but with `provide.transaction.metadata` its transaction still has a BEGIN and an END
  (event_count 0), as real Debezium 3.6.3 writes them.
* Logical decoding messages: op m on `<topic.prefix>.message`; unchanged TOASTed values: the
  placeholder.

Every step is a method so that a mutant can break exactly one.
"""

from __future__ import annotations

import io
import json
import struct
from typing import Any

import fastavro

from ...encoders.spi import EncoderContext, EncoderError, Record
from ...model import events
from ...model.table import Table
from ...model.values import Row
from . import connect_avro, decoder, spec, value_rules
from .spec import DbzOptions

VERSION = "cdc-conformance-reference"


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class DebeziumEncoder:
    protocol = spec.PROTOCOL

    def __init__(self) -> None:
        self.ctx: EncoderContext | None = None
        self.o = DbzOptions()
        self.txid = 700
        self.lsn = 24_000_000
        self.last_commit_lsn: int | None = None
        self._avro: dict[tuple[str, str], tuple[int, Any]] = {}

    def open(self, ctx: EncoderContext) -> None:
        self.ctx = ctx
        self.o = DbzOptions.from_options(ctx.options)

    def tick(self, now: float) -> list[Record]:
        return []

    def close(self) -> None:
        pass

    # -- events -------------------------------------------------------------------------------

    def encode(self, event: events.Event) -> list[Record]:
        if isinstance(event, events.CaptureStart):
            return self.snapshot(event)
        if not self.streaming:
            return []
        if isinstance(event, events.Ddl) and event.kind is events.DdlKind.TRUNCATE_TABLE and self.o.transactions:
            # pgoutput publishes a TRUNCATE; the connector skips it (skipped.operations=t) but its
            # transaction still gets a BEGIN and an END counting no events.
            self.txid += 1
            begin_lsn, commit_lsn = self.next_lsn(), self.next_lsn()
            ts_ms = events.tso_physical_ms(event.commit_ts)
            return [self.transaction_record("BEGIN", f"{self.txid}:{begin_lsn}", ts_ms, None),
                    self.transaction_record("END", f"{self.txid}:{commit_lsn}", ts_ms, (0, {}))]
        if not isinstance(event, events.Transaction):
            return []
        ts_ms = events.tso_physical_ms(event.commit_ts)
        out: list[Record] = []
        # A non-transactional logical decoding message is decoded at once: before its
        # transaction's commit, outside any transaction.
        for m in event.messages:
            if not m.transactional:
                lsn = self.next_lsn()
                out.append(self.message_record(m, ts_ms, lsn, None, None))
        if not event.changes and not any(m.transactional for m in event.messages):
            return out
        srv = event.server
        if srv is not None:
            # Read from a server's log: its ids, as the connector takes them from pgoutput (BEGIN's
            # xid and commit time, each change's LSN, the commit's end LSN).
            self.txid, ts_ms = srv.xid, srv.commit_us // 1000
        else:
            self.txid += 1
        lsns = iter(srv.lsns) if srv is not None else None
        begin_lsn = srv.lsns[0] if srv is not None and srv.lsns else self.next_lsn()
        total = 0
        per_collection: dict[str, int] = {}
        if self.o.transactions:
            out.append(self.transaction_record("BEGIN", f"{self.txid}:{begin_lsn}", ts_ms, None))
        first = True
        last = begin_lsn
        for item in event.items():
            if isinstance(item, events.LogicalMessage):
                if not item.transactional:
                    continue
                # (The log read holds no messages: one just past the change before it, in a server's.)
                lsn = begin_lsn if first and srv is None else last + 1 if srv is not None else self.next_lsn()
                last = lsn
                first = False
                total += 1
                # Each message is a data collection of its own (a new id object per message).
                coll = f"io.debezium.connector.postgresql.LogicalDecodingMessageMonitor$LogicalDecodingMessageId@" \
                       f"{lsn:x}"
                per_collection[coll] = 1
                block = {"id": f"{self.txid}:{lsn}", "total_order": total,
                         "data_collection_order": 1} if self.o.transactions else None
                out.append(self.message_record(item, ts_ms, lsn, self.txid, block))
                continue
            ch = item
            at = next(lsns, None) if lsns is not None else None
            for op, before, after in self.events_of(ch):
                lsn = at if at is not None else begin_lsn if first else self.next_lsn()
                last = lsn
                first = False
                total += 1
                coll = spec.data_collection(ch.table)
                per_collection[coll] = per_collection.get(coll, 0) + 1
                block = {"id": f"{self.txid}:{lsn}", "total_order": total,
                         "data_collection_order": per_collection[coll]} if self.o.transactions else None
                out.append(self.change_record(ch.table, op, before, after, ts_ms, lsn, begin_lsn, block,
                                              self.unavailable_of(ch, op)))
                if op == "d":
                    out.extend(self.after_delete(ch.table, before))
        commit_lsn = srv.end_lsn if srv is not None else self.next_lsn()
        if self.o.transactions:
            out.append(self.transaction_record("END", f"{self.txid}:{commit_lsn}", ts_ms, (total, per_collection)))
        self.last_commit_lsn = begin_lsn
        return out

    @property
    def streaming(self) -> bool:
        """Whether the connector streams what comes after its start (not with initial_only, which
        stops after its snapshot: from the first event when the workload has no CaptureStart)."""
        return self.o.streams

    def snapshot(self, start: events.CaptureStart) -> list[Record]:
        """The connector starts on a database that holds rows: with a snapshotting
        `snapshot.mode` it reads every table's rows first (op r, in table order, `source.snapshot`
        markers, one snapshot transaction and LSN, no transaction block); initial_only then stops."""
        if not self.o.snapshots:
            return []
        self.txid += 1
        lsn = self.next_lsn()
        ts_ms = events.tso_physical_ms(start.commit_ts)
        tables = spec.snapshot_order(start.tables)
        out: list[Record] = []
        for (t, rows), marks in zip(tables, spec.snapshot_markers([len(r) for _t, r in tables]), strict=True):
            for row, mark in zip(rows, marks, strict=True):
                out.append(self.snapshot_record(t, row, mark, ts_ms, lsn))
        return out

    def snapshot_record(self, t: Table, row: Row, mark: str, ts_ms: int, lsn: int) -> Record:
        payload = self.envelope(t, "r", None, row, ts_ms, lsn, lsn, None)
        payload["source"].update(snapshot=mark, sequence=_sequence(None, lsn))
        topic = self.topic(t)
        value = self.part(topic, "value", spec.envelope_schema(t, self.logical_topic(t), self.o), payload)
        return Record(topic, self.key_bytes(t, row), value, None)

    def next_lsn(self) -> int:
        self.lsn += 152
        return self.lsn

    def events_of(self, ch: events.RowChange) -> list[tuple[str, Row | None, Row | None]]:
        """(op, before, after) per event the change makes (a key change makes two)."""
        t = ch.table
        if ch.op is events.Op.INSERT:
            return [("c", None, ch.after)]
        if ch.op is events.Op.DELETE:
            return [("d", self.old_image(t, ch.before), None)]
        assert ch.before is not None and ch.after is not None
        keys = spec.key_columns(t)
        # The connector compares the old and new keys as it converted them (Connect Structs:
        # RelationalChangeRecordEmitter.emitUpdateRecord), not as stored: with isostring times,
        # 24:00:00 and 00:00:00 are one key, "00:00:00Z" (real 3.6.3: one update event).
        if keys and any(spec.json_value(c, ch.before[c.name], self.o, replace_null=False)
                        != spec.json_value(c, ch.after[c.name], self.o, replace_null=False) for c in keys):
            return [("d", self.old_image(t, ch.before), None), ("c", None, ch.after)]
        return [("u", ch.before if spec.full_before(t) else None, ch.after)]

    def unavailable_of(self, ch: events.RowChange, op: str) -> frozenset[str]:
        """Columns of an event's `after` the connector has no value for: the change log's
        unchanged TOASTed values (an update's, or the create a key-changing update makes), unless
        REPLICA IDENTITY FULL logged the whole old row."""
        if op not in ("u", "c") or ch.op is not events.Op.UPDATE or spec.full_before(ch.table):
            return frozenset()
        return ch.unavailable

    def old_image(self, t: Table, before: Row | None) -> Row | None:
        """What the WAL keeps of the old row: all of it (FULL), else the key's columns."""
        assert before is not None
        if spec.full_before(t):
            return before
        keys = {c.name for c in spec.key_columns(t)}
        return {c.name: before[c.name] if c.name in keys else None for c in t.columns}

    # -- records ------------------------------------------------------------------------------

    def topic(self, t: Table) -> str:
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        return prefix + self.logical_topic(t)

    def logical_topic(self, t: Table) -> str:
        """The topic without the run's own prefix: what schema names are made of."""
        return spec.topic_name(self.o, t.database, t.name)

    def key_bytes(self, t: Table, image: Row | None) -> bytes | None:
        cols = spec.key_columns(t)
        if not cols or image is None:
            return None
        payload = {spec.field_name(c, self.o): spec.json_value(c, image[c.name], self.o) for c in cols}
        return self.part(self.topic(t), "key", spec.key_schema(t, self.logical_topic(t), self.o), payload)

    def part(self, topic: str, side: str, schema: dict[str, Any], payload: Any) -> bytes:
        """A key or value through its converter: JSON (with or without the schema) or Avro."""
        if self.o.key_avro if side == "key" else self.o.value_avro:
            return self.avro(topic, side, schema, payload)
        if self.o.key_schemas if side == "key" else self.o.value_schemas:
            return dumps({"schema": schema, "payload": payload})
        return dumps(payload)

    # -- Confluent's Avro converter --------------------------------------------------------------

    def avro(self, topic: str, side: str, schema: dict[str, Any], payload: Any) -> bytes:
        """Register the Avro form of `schema` under `<topic>-<side>` (TopicNameStrategy), then the
        Confluent header and the datum in Avro's binary encoding."""
        schema_id, parsed = self.avro_schema(self.subject(topic, side), schema)
        buf = io.BytesIO()
        buf.write(b"\x00" + struct.pack(">i", schema_id))
        fastavro.schemaless_writer(buf, parsed, connect_avro.to_avro_datum(schema, payload))
        return buf.getvalue()

    def subject(self, topic: str, side: str) -> str:
        return f"{topic}-{side}"

    def avro_form(self, schema: dict[str, Any]) -> Any:
        """The Avro schema the converter makes of a Connect schema (AvroData)."""
        return connect_avro.to_avro_schema(schema)

    def avro_schema(self, subject: str, schema: dict[str, Any]) -> tuple[int, Any]:
        text = json.dumps(schema, sort_keys=True)
        got = self._avro.get((subject, text))
        if got is None:
            try:
                avro = self.avro_form(schema)
            except connect_avro.AvroNameError as e:
                # What the converter throws (a SchemaParseException): the task stops.
                raise EncoderError(f"the Avro converter cannot write {schema.get('name')}: {e} (set "
                                   "field.name.adjustment.mode / schema.name.adjustment.mode)") from None
            assert self.ctx is not None and self.ctx.registry is not None, "the Avro converter needs a registry"
            try:
                schema_id = self.ctx.registry.register(subject, json.dumps(avro))
            except Exception as e:  # noqa: BLE001 - the registry's refusal stops the task, as Connect's does
                raise EncoderError(f"registering the schema under {subject!r} failed: {e}") from e
            got = self._avro[(subject, text)] = (schema_id, fastavro.parse_schema(
                decoder._without_logical(avro), _ignore_default_error=True))
        return got

    def row(self, t: Table, image: Row | None, unavailable: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        """A row image; a NOT NULL column the image lacks (a key-only old row) gets what the
        connector writes for it (its default, or its converter's fallback); a value the change
        log does not carry (`unavailable`), the placeholder."""
        if image is None:
            return None
        return {spec.field_name(c, self.o): spec.unavailable_value(c, self.o) if c.name in unavailable
                else spec.json_value(c, image[c.name], self.o)
                if image[c.name] is not None or c.nullable else value_rules.required_value(c, self.o)
                for c in t.columns}

    def source(self, t: Table, ts_ms: int, lsn: int, begin_lsn: int) -> dict[str, Any]:
        last = None if self.last_commit_lsn is None else str(self.last_commit_lsn)
        return {"version": VERSION, "connector": spec.CONNECTOR, "name": self.o.prefix, "ts_ms": ts_ms,
                "snapshot": "false", "db": "postgres", "sequence": _sequence(last, lsn),
                "ts_us": ts_ms * 1000, "ts_ns": ts_ms * 1_000_000, "schema": t.database, "table": t.name,
                "txId": self.txid, "lsn": lsn, "xmin": None, "origin": None, "origin_lsn": None}

    def envelope(self, t: Table, op: str, before: Row | None, after: Row | None, ts_ms: int, lsn: int,
                 begin_lsn: int, block: dict[str, Any] | None, unavailable: frozenset[str] = frozenset()
                 ) -> dict[str, Any]:
        now_ms = ts_ms + 1
        return {"before": self.row(t, before), "after": self.row(t, after, unavailable),
                "source": self.source(t, ts_ms, lsn, begin_lsn), "transaction": block, "op": op,
                "ts_ms": now_ms, "ts_us": now_ms * 1000, "ts_ns": now_ms * 1_000_000}

    def change_record(self, t: Table, op: str, before: Row | None, after: Row | None, ts_ms: int, lsn: int,
                      begin_lsn: int, block: dict[str, Any] | None, unavailable: frozenset[str] = frozenset()
                      ) -> Record:
        payload = self.envelope(t, op, before, after, ts_ms, lsn, begin_lsn, block, unavailable)
        topic = self.topic(t)
        value = self.part(topic, "value", spec.envelope_schema(t, self.logical_topic(t), self.o), payload)
        return Record(topic, self.key_bytes(t, after if after is not None else before), value, None)

    def message_record(self, m: events.LogicalMessage, ts_ms: int, lsn: int, txid: int | None,
                       block: dict[str, Any] | None) -> Record:
        """A logical decoding message on `<topic.prefix>.message`: op m, the prefix as the key,
        the content as `binary.handling.mode` writes bytes; no table (source.schema and table
        empty), no transaction id for a non-transactional one."""
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        topic = prefix + spec.message_topic(self.o)
        last = None if self.last_commit_lsn is None else str(self.last_commit_lsn)
        source = {"version": VERSION, "connector": spec.CONNECTOR, "name": self.o.prefix, "ts_ms": ts_ms,
                  "snapshot": "false", "db": "postgres", "sequence": _sequence(last, lsn),
                  "ts_us": ts_ms * 1000, "ts_ns": ts_ms * 1_000_000, "schema": "", "table": "",
                  "txId": txid, "lsn": lsn, "xmin": None, "origin": None, "origin_lsn": None}
        payload = {"op": "m", "ts_ms": ts_ms + 1, "source": source, "transaction": block,
                   "message": {"prefix": m.prefix, "content": spec.binary_text(m.content, self.o)}}
        return Record(topic, self.part(topic, "key", spec.message_key_schema(self.o), {"prefix": m.prefix}),
                      self.part(topic, "value", spec.message_value_schema(self.o), payload), None)

    def after_delete(self, t: Table, before: Row | None) -> list[Record]:
        return [self.tombstone(t, before)] if self.o.tombstones else []

    def tombstone(self, t: Table, before: Row | None) -> Record:
        return Record(self.topic(t), self.key_bytes(t, before), None, None)

    def transaction_record(self, status: str, tx_id: str, ts_ms: int,
                           end: tuple[int, dict[str, int]] | None) -> Record:
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        key_payload = {"id": tx_id}
        payload = {"status": status, "id": tx_id, "event_count": end[0] if end else None,
                   "data_collections": [{"data_collection": c, "event_count": n} for c, n in end[1].items()]
                   if end else None, "ts_ms": ts_ms}
        topic = prefix + self.o.transaction_topic
        return Record(topic, self.part(topic, "key", spec.TX_KEY_SCHEMA, key_payload),
                      self.part(topic, "value", spec.TX_VALUE_SCHEMA, payload), None)


def _sequence(last: str | None, lsn: int) -> str:
    """`source.sequence`: the last commit's LSN and this event's, as a compact JSON array of strings."""
    return json.dumps([last, str(lsn)], separators=(",", ":"))
