"""Deliberately broken Debezium encoders: the reference with exactly one defect each, naming the
check that must catch it. Some are what real deployments get wrong: a converter configured
without schemas on one side, a consumer-visible op code from another tool, a missing tombstone."""

from __future__ import annotations

import json
import time
from typing import Any

import fastavro

from ...encoders.spi import EncoderError, Record
from ...model.table import Column, Table
from ...model.types import Kind
from ...model.values import Date, Hstore, Row, TimeTz, Value
from ..mutants import MutantRegistry
from . import decoder, spec
from .checks import CHECKS
from .encoder import DebeziumEncoder, dumps

mutant = MUTANTS = MutantRegistry(CHECKS)

DML = {"transactions": (6, 12), "ddl_rate": 0.1}


@mutant("value-not-json", "json.valid")
class ValueNotJson(DebeziumEncoder):
    """Cuts the last byte off every value."""

    def change_record(self, *a: Any, **k: Any) -> Record:
        r = super().change_record(*a, **k)
        return Record(r.topic, r.key, (r.value or b"")[:-1], r.partition)


@mutant("schemaless-value", "converter.schemas")
class SchemalessValue(DebeziumEncoder):
    """Writes values without the {schema, payload} envelope although schemas are enabled."""

    def change_record(self, t: Table, op: str, before: Row | None, after: Row | None, ts_ms: int, lsn: int,
                      begin_lsn: int, block: dict[str, Any] | None, unavailable: frozenset[str] = frozenset()
                      ) -> Record:
        payload = self.envelope(t, op, before, after, ts_ms, lsn, begin_lsn, block, unavailable)
        return Record(self.topic(t), self.key_bytes(t, after if after is not None else before), dumps(payload), None)


@mutant("op-insert-word", "envelope.fields")
class OpInsertWord(DebeziumEncoder):
    """Writes op as "insert"/"update"/"delete" instead of c/u/d."""

    def envelope(self, *a: Any, **k: Any) -> dict[str, Any]:
        e = super().envelope(*a, **k)
        e["op"] = {"c": "insert", "u": "update", "d": "delete"}[e["op"]]
        return e


class _EditsValueSchema(DebeziumEncoder):
    """Changes the value schema of every change event (JSON converter with schemas) by `edit_schema`."""

    def change_record(self, t: Table, op: str, before: Row | None, after: Row | None, ts_ms: int, lsn: int,
                      begin_lsn: int, block: dict[str, Any] | None, unavailable: frozenset[str] = frozenset()
                      ) -> Record:
        r = super().change_record(t, op, before, after, ts_ms, lsn, begin_lsn, block, unavailable)
        doc = json.loads(r.value or b"{}")
        if "schema" in doc:
            self.edit_schema(t, doc["schema"])
        return Record(r.topic, r.key, dumps(doc), r.partition)

    def edit_schema(self, t: Table, schema: dict[str, Any]) -> None:
        raise NotImplementedError


@mutant("envelope-misnamed", "envelope.schema")
class EnvelopeMisnamed(_EditsValueSchema):
    """Names the envelope schema after the table instead of `<topic>.Envelope`."""

    def edit_schema(self, t: Table, schema: dict[str, Any]) -> None:
        schema["name"] = t.name


@mutant("ts-us-as-ms", "envelope.timestamps")
class TsUsAsMs(DebeziumEncoder):
    """Writes ts_us with the milliseconds' value."""

    def envelope(self, *a: Any, **k: Any) -> dict[str, Any]:
        e = super().envelope(*a, **k)
        e["ts_us"] = e["ts_ms"]
        return e


@mutant("source-connector-mysql", "source.postgresql")
class SourceConnectorMysql(DebeziumEncoder):
    """Says connector "mysql" in the source block of a PostgreSQL change."""

    def source(self, *a: Any, **k: Any) -> dict[str, Any]:
        s = super().source(*a, **k)
        s["connector"] = "mysql"
        return s


@mutant("topic-without-schema", "topic.name")
class TopicWithoutSchema(DebeziumEncoder):
    """Names topics <topic.prefix>.<table>, leaving the schema out."""

    def topic(self, t: Table) -> str:
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        return prefix + spec._INVALID_TOPIC_CHAR.sub("_", f"{self.o.prefix}.{t.name}")


@mutant("topic-per-code-point", "topic.name", shape={"odd_name_rate": 0.9})
class TopicPerCodePoint(DebeziumEncoder):
    """Sanitises topic names per code point, not per UTF-16 unit: `t😀` -> `t_` (Java gives `t__`)."""

    def topic(self, t: Table) -> str:
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        return prefix + spec._INVALID_TOPIC_CHAR.sub("_", f"{self.o.prefix}.{t.database}.{t.name}")


@mutant("key-all-columns", "key.fields")
class KeyAllColumns(DebeziumEncoder):
    """Keys every event with all the row's columns instead of the key columns."""

    def key_bytes(self, t: Table, image: Row | None) -> bytes | None:
        if image is None:
            return None
        payload = {spec.field_name(c, self.o): spec.json_value(c, image[c.name], self.o) for c in t.columns}
        return dumps({"schema": spec.key_schema(t, self.logical_topic(t), self.o), "payload": payload}) \
            if self.o.key_schemas else dumps(payload)


class _RewritesValues(DebeziumEncoder):
    """The reference, with `rewrite` applied to each non-null value of the row images it writes
    (`KEEP`: the reference's own)."""

    KEEP: Any = object()

    def rewrite(self, c: Column, v: Value) -> Any:
        return self.KEEP

    def row(self, t: Table, image: Row | None, unavailable: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        out = super().row(t, image, unavailable)
        if out is None or image is None:
            return out
        for c in t.columns:
            v = image[c.name]
            new = self.KEEP if v is None else self.rewrite(c, v)
            if new is not self.KEEP:
                out[c.name] = new
        return out


@mutant("date-as-text", "row.values", shape={"kinds": (Kind.INT, Kind.DATE, Kind.VARCHAR), "edge_rate": 0.3})
class DateAsText(_RewritesValues):
    """Writes DATE values as ISO text, not days since the epoch."""

    def rewrite(self, c: Column, v: Value) -> Any:
        return f"{v.year:04d}-{v.month:02d}-{v.day:02d}" if isinstance(v, Date) else self.KEEP


@mutant("timetz-local-clock", "row.values", shape={"kinds": (Kind.INT, Kind.TIMETZ, Kind.TEXT), "edge_rate": 0.3})
class TimeTzLocalClock(_RewritesValues):
    """Writes a time with time zone's own clock with `Z`, not the time in UTC (the offset dropped)."""

    def rewrite(self, c: Column, v: Value) -> Any:
        if not isinstance(v, TimeTz):
            return self.KEEP
        return spec.json_value(c, TimeTz(v.micros % 86_400_000_000, 0), self.o)


@mutant("hstore-as-text", "row.values", shape={"kinds": (Kind.INT, Kind.HSTORE), "edge_rate": 0.3})
class HstoreAsText(_RewritesValues):
    """Writes an hstore as PostgreSQL's own text (`"k"=>"v"`), not as a JSON object."""

    def rewrite(self, c: Column, v: Value) -> Any:
        return v.text() if isinstance(v, Hstore) and self.o.hstore_mode == "json" else self.KEEP


@mutant("varbit-big-endian", "row.values", shape={"kinds": (Kind.INT, Kind.VARBIT), "edge_rate": 0.3})
class VarbitBigEndian(_RewritesValues):
    """Writes a bit varying's bytes big-endian (the bit string's own order), not little-endian."""

    def rewrite(self, c: Column, v: Value) -> Any:
        if c.type.kind is not Kind.VARBIT or not isinstance(v, str) or (c.type.length or 0) <= 1:
            return self.KEEP
        n = int(v, 2) if v else 0
        return spec.b64(n.to_bytes((n.bit_length() + 7) // 8, "big"))


@mutant("timestamp-micro-as-milli-type", "column.types",
        shape={"kinds": (Kind.INT, Kind.DATETIME, Kind.TEXT)})
class TimestampTypeAlwaysMilli(_EditsValueSchema):
    """Declares every timestamp column io.debezium.time.Timestamp whatever its precision."""

    def edit_schema(self, t: Table, schema: dict[str, Any]) -> None:
        for f in schema["fields"]:
            for col in f.get("fields", []) if f.get("field") in ("before", "after") else []:
                if col.get("name") == "io.debezium.time.MicroTimestamp":
                    col["name"] = "io.debezium.time.Timestamp"


@mutant("update-before-always", "before.replica-identity", shape=DML)
class UpdateBeforeAlways(DebeziumEncoder):
    """Writes the whole old row in every update, whatever the table's REPLICA IDENTITY."""

    def events_of(self, ch: Any) -> list[tuple[str, Row | None, Row | None]]:
        out = super().events_of(ch)
        return [("u", ch.before, a) if op == "u" else (op, b, a) for op, b, a in out]


@mutant("key-change-as-update", "events.per-change", shape=DML)
class KeyChangeAsUpdate(DebeziumEncoder):
    """Writes an update that changes the key as one update event (no delete of the old key)."""

    def events_of(self, ch: Any) -> list[tuple[str, Row | None, Row | None]]:
        out = super().events_of(ch)
        if [op for op, _b, _a in out] == ["d", "c"]:
            return [("u", None, ch.after)]
        return out


@mutant("end-miscounts", "transaction.end-counts", needs={"provide.transaction.metadata": "true"})
class EndMiscounts(DebeziumEncoder):
    """Counts one event too many in every END's event_count (not in its data collections)."""

    def transaction_record(self, status: str, tx_id: str, ts_ms: int,
                           end: tuple[int, dict[str, int]] | None) -> Record:
        if end is not None:
            end = (end[0] + 1, end[1])
        return super().transaction_record(status, tx_id, ts_ms, end)


@mutant("end-counts-one-more-row", "transaction.metadata", needs={"provide.transaction.metadata": "true"})
class EndCountsOneMoreRow(DebeziumEncoder):
    """Counts one event too many in every END that has a data collection, in its event_count and its
    first collection's count alike: consistent in itself, only the source shows it."""

    def transaction_record(self, status: str, tx_id: str, ts_ms: int,
                           end: tuple[int, dict[str, int]] | None) -> Record:
        if end is not None and end[1]:
            first = next(iter(end[1]))
            end = (end[0] + 1, {**end[1], first: end[1][first] + 1})
        return super().transaction_record(status, tx_id, ts_ms, end)


@mutant("transaction-id-of-begin", "transaction.id", needs={"provide.transaction.metadata": "true"})
class TransactionIdOfBegin(DebeziumEncoder):
    """Gives every event of a transaction the id of its BEGIN (one id per transaction, as the docs show it)."""

    def change_record(self, t: Table, op: str, before: Row | None, after: Row | None, ts_ms: int, lsn: int,
                      begin_lsn: int, block: dict[str, Any] | None, unavailable: frozenset[str] = frozenset()
                      ) -> Record:
        if block is not None:
            block = {**block, "id": f"{self.txid}:{begin_lsn}"}
        return super().change_record(t, op, before, after, ts_ms, lsn, begin_lsn, block, unavailable)


@mutant("no-tombstone", "delete.tombstone", shape=DML)
class NoTombstone(DebeziumEncoder):
    """Never writes the tombstone after a delete."""

    def after_delete(self, t: Table, before: Row | None) -> list[Record]:
        return []


@mutant("crash-on-delete", "encoder.no-crash", shape=DML)
class CrashOnDelete(DebeziumEncoder):
    """Raises on the first delete."""

    def after_delete(self, t: Table, before: Row | None) -> list[Record]:
        raise KeyError("no such row")


@mutant("hang-on-update", "encoder.responsive", shape=DML)
class HangOnUpdate(DebeziumEncoder):
    """Never returns from an update."""

    def events_of(self, ch: Any) -> list[tuple[str, Row | None, Row | None]]:
        out = super().events_of(ch)
        if any(op == "u" for op, _b, _a in out):
            time.sleep(3600)
        return out


# Logical decoding messages and unchanged TOASTed values, often.
MESSAGES = {"message_rate": 0.8, "transactions": (4, 10)}
TOAST = {**DML, "large_value_rate": 0.5, "kinds": (Kind.INT, Kind.TEXT, Kind.BYTEA, Kind.JSONB, Kind.SMALLINT)}


# The connector starts on a database with rows in every workload.
SNAPSHOT = {"capture_start_rate": 1.0, "transactions": (4, 10)}


class _SnapshotMarked(DebeziumEncoder):
    """Marks every read event of a snapshot source.snapshot=`MARK`, whatever its place in the snapshot."""

    MARK: str

    def snapshot_record(self, t: Table, row: Row, mark: str, ts_ms: int, lsn: int) -> Record:
        return super().snapshot_record(t, row, self.MARK, ts_ms, lsn)


@mutant("snapshot-all-true", "snapshot.records", shape=SNAPSHOT)
class SnapshotAllTrue(_SnapshotMarked):
    """Marks every read event of a snapshot source.snapshot=true (no first, last or per-table markers)."""

    MARK = "true"


@mutant("snapshot-skipped", "events.per-change", shape=SNAPSHOT)
class SnapshotSkipped(DebeziumEncoder):
    """Starts streaming without reading the rows it finds, whatever snapshot.mode says (as no_data does)."""

    def snapshot(self, start: Any) -> list[Record]:
        super().snapshot(start)
        return []


@mutant("initial-only-streams", "events.per-change", needs={"snapshot.mode": "initial_only"}, shape=DML)
class InitialOnlyStreams(DebeziumEncoder):
    """Streams changes after its snapshot although snapshot.mode=initial_only stops there."""

    @property
    def streaming(self) -> bool:
        return True


@mutant("snapshot-marked-false", "source.postgresql", shape=SNAPSHOT)
class SnapshotMarkedFalse(_SnapshotMarked):
    """Writes the rows a snapshot reads as read events marked source.snapshot=false."""

    MARK = "false"


@mutant("message-content-as-text", "message.content", shape=MESSAGES)
class MessageContentAsText(DebeziumEncoder):
    """Writes a logical decoding message's content as text (its bytes decoded), not per binary.handling.mode."""

    def message_record(self, m: Any, *a: Any, **k: Any) -> Record:
        r = super().message_record(m, *a, **k)
        doc = json.loads(r.value or b"{}")
        payload = doc.get("payload", doc)
        payload["message"]["content"] = m.content.decode("utf-8", "replace")
        return Record(r.topic, r.key, dumps(doc), r.partition)


@mutant("message-always-transactional", "message.content", shape=MESSAGES)
class MessageAlwaysTransactional(DebeziumEncoder):
    """Gives a non-transactional logical decoding message the transaction id of the transaction it came in."""

    def message_record(self, m: Any, ts_ms: int, lsn: int, txid: int | None, block: dict[str, Any] | None) -> Record:
        return super().message_record(m, ts_ms, lsn, self.txid + 1 if txid is None else txid, block)


@mutant("lsn-of-begin", "source.server-ids", shape={"changes_per_transaction": (3, 6)}, needs_server=True)
class LsnOfBegin(DebeziumEncoder):
    """Writes every change's source.lsn as its transaction's first LSN, not the change's own."""

    def source(self, t: Table, ts_ms: int, lsn: int, begin_lsn: int) -> dict[str, Any]:
        return super().source(t, ts_ms, begin_lsn, begin_lsn)


@mutant("message-skipped", "events.per-change", shape=MESSAGES)
class MessageSkipped(DebeziumEncoder):
    """Writes no event for a logical decoding message."""

    def encode(self, event: Any) -> list[Record]:
        return [r for r in super().encode(event) if not r.topic.endswith("." + spec.MESSAGE_TOPIC_SUFFIX)]


@mutant("toasted-value-written", "row.values", shape=TOAST)
class ToastedValueWritten(DebeziumEncoder):
    """Writes an unchanged TOASTed value itself, which the change log does not carry, instead of the placeholder."""

    def row(self, t: Table, image: Row | None, unavailable: frozenset[str] = frozenset()) -> dict[str, Any] | None:
        return super().row(t, image)


AVRO = {"value.converter": spec.AVRO_CONVERTER, "key.converter": spec.AVRO_CONVERTER,
        "schema.name.adjustment.mode": "avro_unicode", "field.name.adjustment.mode": "avro_unicode"}


@mutant("avro-trailing-byte", "avro.framing", needs=AVRO)
class AvroTrailingByte(DebeziumEncoder):
    """Writes one byte too many after every Avro value."""

    def avro(self, topic: str, side: str, schema: dict[str, Any], payload: Any) -> bytes:
        out = super().avro(topic, side, schema, payload)
        return out + b"\x00" if side == "value" else out


@mutant("avro-record-name-subject", "avro.subject", needs=AVRO)
class AvroRecordNameSubject(DebeziumEncoder):
    """Registers value schemas under the record's name (RecordNameStrategy) instead of <topic>-value."""

    def subject(self, topic: str, side: str) -> str:
        return f"{topic}.{side}-record" if side == "value" else super().subject(topic, side)


@mutant("avro-optional-null-last", "avro.schema", needs=AVRO)
class AvroOptionalNullLast(DebeziumEncoder):
    """Writes optional fields as [T, "null"] unions even without a default (the converter puts null first)."""

    def avro_form(self, schema: dict[str, Any]) -> Any:
        return _null_last(super().avro_form(schema))


def _null_last(a: Any) -> Any:
    if isinstance(a, list):
        return [_null_last(x) for x in a[1:]] + ["null"] if a and a[0] == "null" else [_null_last(x) for x in a]
    if isinstance(a, dict):
        out = {k: _null_last(v) for k, v in a.items()}
        if isinstance(out.get("fields"), list):
            out["fields"] = [{k: v for k, v in f.items() if not (k == "default" and v is None)}
                             for f in out["fields"]]
        return out
    return a


@mutant("stale-id-after-rejection", "registry.rejection",
        needs={"profile": "avro", "registry-compatibility": "FORWARD_TRANSITIVE"},
        shape={"ddl_rate": 0.4, "transactions": (6, 14), "evolutions": ("widen",)})
class StaleIdAfterRejection(DebeziumEncoder):
    """When the registry refuses a table's new schema, goes on writing with the schema id it had before."""

    def __init__(self) -> None:
        super().__init__()
        self._last_ids: dict[str, int] = {}

    def avro_schema(self, subject: str, schema: dict[str, Any]) -> tuple[int, Any]:
        try:
            schema_id, parsed = super().avro_schema(subject, schema)
        except EncoderError:
            if subject not in self._last_ids:
                raise
            avro = self.avro_form(schema)
            schema_id = self._last_ids[subject]
            parsed = fastavro.parse_schema(decoder._without_logical(avro), _ignore_default_error=True)
        self._last_ids[subject] = schema_id
        return schema_id, parsed
