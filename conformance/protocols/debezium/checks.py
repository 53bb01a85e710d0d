"""The Debezium checks (PostgreSQL connector, JSON converter).

Each check has a stable id, a level, the clause it enforces and a mutant in `mutants.py` that it
catches. Clauses cite Debezium's PostgreSQL connector documentation ("Data change events",
"Data type mappings", "Transaction metadata", connector properties), Kafka Connect's
JsonConverter, and what the real connector (3.6.3) emits from the same SQL
(`tests/fixtures/debezium/`). Where the documentation and the connector disagree the check
follows the connector and says so in `docs_vs_code`.
"""

from __future__ import annotations

import re
from typing import Any

from ...checks import compatibility
from ...checks.registry import CheckRegistry, Failure, Level, Location, NotApplicable, Scope
from ..kit import Findings, brief, given
from . import spec, value_rules
from .checker import EventEvidence, Expected, RecordEvidence, StreamEvidence

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)
# What the registry and the encoder do with a schema change its level refuses (checks/compatibility.py).
compatibility.declare(check)
D = spec.DOCS
NOT_CHANGE = NotApplicable("not a change event")
NO_SOURCE = NotApplicable("no change of the workload is paired with this event")


def _expected(ev: RecordEvidence) -> Expected | NotApplicable:
    return NO_SOURCE if ev.expected is None else ev.expected


# == framing ==========================================================================================

@check("json.valid", level=Level.MUST, scope=Scope.RECORD,
       clause="Kafka Connect JsonConverter: keys and values are JSON documents in UTF-8 (RFC 8259: no member "
              "twice); a tombstone is a null value")
def json_valid(ev: RecordEvidence) -> Findings:
    """Key and value are JSON in UTF-8 (or null: a tombstone's value, a keyless table's key)."""
    if ev.o.key_avro and ev.o.value_avro:
        yield NotApplicable("keys and values are Avro")
        return
    for part, p in (("key", ev.msg.key), ("value", ev.msg.value)):
        if p.avro is None and not p.ok:
            yield Failure(f"the {part} is not a JSON document: {p.error}", expected="JSON",
                          actual=(p.raw or b"")[:120].decode("utf-8", "replace"), location=ev.at(part=part))


@check("converter.schemas", level=Level.MUST, scope=Scope.RECORD,
       clause="Kafka Connect JsonConverter, `schemas.enable` (key.converter.*, value.converter.*; default true): "
              "with schemas a document {\"schema\": ..., \"payload\": ...}, without them the payload alone")
def converter_schemas(ev: RecordEvidence) -> Findings:
    """With `*.converter.schemas.enable=true` every key and value is {schema, payload}; with false, the payload."""
    for part, p, on in (("key", ev.msg.key, ev.o.key_schemas), ("value", ev.msg.value, ev.o.value_schemas)):
        if p.raw is None or not p.ok:
            continue
        if on and not p.enveloped:
            yield Failure(f"the {part} has no {{schema, payload}} envelope", expected="{schema, payload}",
                          actual=brief(p.doc, 100), location=ev.at(part=part),
                          hint=f"check with --option {part}.converter.schemas.enable=false if the converter has it off")
        elif not on and p.enveloped:
            yield Failure(f"the {part} carries a schema although {part}.converter.schemas.enable=false",
                          expected="the payload alone", actual=brief(p.doc, 100), location=ev.at(part=part))


# == Confluent's Avro converter =======================================================================

AVRO = ("Confluent Schema Registry, Wire format: a magic byte 0, the schema id (4 bytes, big-endian), then the "
        "data in Avro's binary encoding")
NOT_AVRO = NotApplicable("neither key nor value is Avro (key.converter / value.converter)")


def _avro_parts(ev: RecordEvidence) -> list[tuple[str, Any]]:
    return [(part, p) for part, p, on in (("key", ev.msg.key, ev.o.key_avro), ("value", ev.msg.value, ev.o.value_avro))
            if on and p.raw is not None and p.avro is not None]


def avro_parts_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """All that the Avro schema checks read of a record: each Avro part's schema id, whether it
    resolved and whether the body decoded (a schema id's view, its Connect schema and its
    subjects are the checker's, one per id). A record plan's key: the checks run once per key."""
    return tuple((part, p.avro.schema_id, p.avro.schema is not None, p.ok) for part, p in _avro_parts(ev))


def topic_avro_parts_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """`avro_parts_key` and the topic (the subjects a part's schema must be under)."""
    return (ev.record.topic, avro_parts_key(ev))


@check("avro.framing", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{AVRO}; the id is one the registry knows, and the body is exactly one datum of that schema")
def avro_framing(ev: RecordEvidence) -> Findings:
    """Avro keys and values are framed: magic byte 0, a known schema id, one datum and nothing after it."""
    parts = _avro_parts(ev)
    if not parts and not (ev.o.key_avro or ev.o.value_avro):
        yield NOT_AVRO
        return
    for part, p in parts:
        if not p.ok:
            yield Failure(f"the {part} is not a framed Avro datum ({p.avro.kind}): {p.error}",
                          expected="0x00, schema id, Avro body", actual=(p.raw or b"")[:16].hex(),
                          location=ev.at(part=part))


def _no_avro_part(ev: RecordEvidence) -> NotApplicable:
    return NOT_AVRO if not (ev.o.key_avro or ev.o.value_avro) else _NO_DECODABLE_AVRO


_NO_DECODABLE_AVRO = NotApplicable("no decodable Avro part")


@check("avro.subject", level=Level.MUST, scope=Scope.RECORD,
       clause="Confluent AvroConverter with the default key.subject.name.strategy / value.subject.name.strategy "
              "(TopicNameStrategy): a key's schema is registered under <topic>-key, a value's under <topic>-value",
       cache_key=topic_avro_parts_key)
def avro_subject(ev: RecordEvidence) -> Findings:
    """Each Avro key's and value's schema id is registered under <topic>-key / <topic>-value."""
    parts = [(part, p) for part, p in _avro_parts(ev) if p.avro.schema_id is not None and p.avro.schema is not None]
    if not parts:
        yield _no_avro_part(ev)
        return
    assert ev.resolver is not None
    for part, p in parts:
        want = f"{ev.record.topic}-{part}"
        subjects = ev.resolver.subjects(p.avro.schema_id, want)
        if subjects is None:
            yield NotApplicable("the registry cannot list the subjects of a schema id")
            return
        if want not in subjects:
            yield Failure(f"the {part}'s schema id {p.avro.schema_id} is not registered under {want!r}",
                          expected=want, actual=subjects, location=ev.at(part=part))


@check("avro.schema", level=Level.MUST, scope=Scope.RECORD,
       clause="Confluent AvroConverter (AvroData, connect.meta.data=true): a Connect struct is a record named after "
              "it, int8/int16 carry connect.type, connect.name/version/parameters/default/doc carry the Connect "
              "schema, Decimal is bytes with logicalType decimal, an optional schema is a union with null (null "
              "first unless the schema has a default) and its field defaults to null",
       cache_key=avro_parts_key)
def avro_schema(ev: RecordEvidence) -> Findings:
    """The registered Avro schema is exactly what the Avro converter makes of the Connect schema it stands for."""
    from . import connect_avro

    parts = [(part, p) for part, p in _avro_parts(ev) if p.ok and p.avro.schema is not None]
    if not parts:
        yield _no_avro_part(ev)
        return
    for part, p in parts:
        try:
            want = connect_avro.to_avro_schema(p.schema)
        except (connect_avro.AvroNameError, ValueError) as e:
            yield Failure(f"the {part}'s schema stands for a Connect schema the converter cannot write: {e}",
                          expected="a valid Avro schema", actual=brief(p.avro.schema, 100), location=ev.at(part=part))
            continue
        diff = connect_avro.first_difference(connect_avro.normal(want), connect_avro.normal(p.avro.schema))
        if diff is not None:
            where, w, g = diff
            yield Failure(f"the {part}'s Avro schema is not the converter's rendering of its Connect schema "
                          f"(at {where})", expected=brief(w, 160), actual=brief(g, 160), location=ev.at(part=part))


# == the envelope =====================================================================================

@check("envelope.fields", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Data change events: the value's payload holds before, after, source, op, ts_ms; op is c "
              "(create), u (update), d (delete), r (read), t (truncate) or m (message); c has no before, d no after")
def envelope_fields(ev: RecordEvidence) -> Findings:
    """A change event's payload has before/after/source/op/ts_ms, a known op, and before/after as the op says;
    a logical decoding message's has op m, ts_ms, source, transaction and message."""
    message = ev.message and not ev.msg.tombstone
    if not ev.change and not message:
        yield NOT_CHANGE
        return
    e = ev.msg.envelope
    if e is None:
        if ev.msg.value.ok:
            yield Failure("the payload is no object",
                          expected="a logical decoding message event" if message else "the change event envelope",
                          actual=brief(ev.msg.value.payload, 100), location=ev.at(part="value"))
        return
    if message:
        yield from _message_fields(ev, e)
        return
    missing = [f for f in ("before", "after", "source", "op", "ts_ms") if f not in e]
    if missing:
        yield Failure(f"the envelope lacks {missing}", expected=list(spec.ENVELOPE_FIELDS), actual=sorted(e),
                      location=ev.at(part="value"))
    extra = [f for f in e if f not in spec.ENVELOPE_FIELDS]
    if extra:
        yield Failure(f"the envelope has unknown fields {extra}", expected=list(spec.ENVELOPE_FIELDS),
                      actual=sorted(e), location=ev.at(part="value"))
    op = e.get("op")
    if op not in spec.OPS:
        yield Failure(f"op {op!r} is not one of {', '.join(spec.OPS)}", expected=list(spec.OPS), actual=op,
                      location=ev.at("op", "value"))
        return
    before, after = e.get("before"), e.get("after")
    if op in ("c", "r") and (before is not None or not isinstance(after, dict)):
        yield Failure(f"a {op!r} event needs before null and after a row", expected="before null, after {..}",
                      actual={"before": brief(before, 40), "after": brief(after, 40)}, location=ev.at(part="value"))
    if op == "u" and not isinstance(after, dict):
        yield Failure("an update needs after", expected="after {..}", actual=brief(after, 40),
                      location=ev.at("after", "value"))
    if op == "d" and (after is not None or not isinstance(before, dict)):
        yield Failure("a delete needs after null and before the old row (or its key)",
                      expected="before {..}, after null",
                      actual={"before": brief(before, 40), "after": brief(after, 40)}, location=ev.at(part="value"))


def _message_fields(ev: RecordEvidence, e: dict[str, Any]) -> Findings:
    if sorted(e) != sorted(spec.MESSAGE_FIELDS):
        yield Failure("a message event's fields are not op, ts_ms, source, transaction, message",
                      expected=list(spec.MESSAGE_FIELDS), actual=sorted(e), location=ev.at(part="value"))
    if e.get("op") != "m":
        yield Failure("an event on the message topic is not op m", expected="m", actual=e.get("op"),
                      location=ev.at("op", "value"))
    block = e.get("message")
    if not isinstance(block, dict) or sorted(block) != ["content", "prefix"]:
        yield Failure("the message block is not {prefix, content}", expected=["content", "prefix"],
                      actual=sorted(block) if isinstance(block, dict) else brief(block, 100),
                      location=ev.at("message", "value"))


@check("envelope.schema", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Data change events (value schema: `<topic>.Envelope` with before/after structs named "
              "`<topic>.Value`, source `io.debezium.connector.postgresql.Source`, op a string); JsonConverter writes "
              "every field of the schema and nothing else")
def envelope_schema(ev: RecordEvidence) -> Findings:
    """The value schema names the envelope after the topic and matches the payload field for field (a
    message's: io.debezium.connector.postgresql.MessageValue, as the connector declares it)."""
    if ev.message and not ev.msg.tombstone:
        yield from _message_schema(ev)
        return
    if not ev.change:
        yield NOT_CHANGE
        return
    s, e = ev.msg.value.schema, ev.msg.envelope
    if not ev.msg.value.enveloped or e is None:
        yield NotApplicable("no value schema")
        return
    if not isinstance(s, dict) or s.get("type") != "struct" or not isinstance(s.get("fields"), list):
        yield Failure("the value schema is no struct", expected="struct", actual=brief(s, 100),
                      location=ev.at(part="value"))
        return
    name = s.get("name")
    if not isinstance(name, str) or not name.endswith(".Envelope"):
        yield Failure("the envelope schema is not named <topic>.Envelope", expected="….Envelope", actual=name,
                      location=ev.at(part="value"))
    fields = {f.get("field"): f for f in s["fields"] if isinstance(f, dict)}
    if set(fields) != set(e):
        yield Failure("the payload's fields differ from the schema's", expected=sorted(map(str, fields)),
                      actual=sorted(e), location=ev.at(part="value"))
    src = fields.get("source")
    if isinstance(src, dict) and src.get("name") != "io.debezium.connector.postgresql.Source":
        yield Failure("the source schema is not io.debezium.connector.postgresql.Source",
                      expected="io.debezium.connector.postgresql.Source", actual=src.get("name"),
                      location=ev.at("source", "value"))
    for part in ("before", "after"):
        f = fields.get(part)
        row = e.get(part)
        if not isinstance(f, dict):
            continue
        if not (isinstance(f.get("name"), str) and f["name"].endswith(".Value")) or not f.get("optional"):
            yield Failure(f"{part} is not an optional struct named <topic>.Value", expected="optional ….Value",
                          actual={"name": f.get("name"), "optional": f.get("optional")}, location=ev.at(part, "value"))
        cols = [c.get("field") for c in f.get("fields") or [] if isinstance(c, dict)]
        if isinstance(row, dict) and list(row) != cols:
            yield Failure(f"{part}'s columns differ from its schema's", expected=cols, actual=list(row),
                          location=ev.at(part, "value"))


def _message_schema(ev: RecordEvidence) -> Findings:
    s = ev.msg.value.schema
    if not ev.msg.value.enveloped or ev.msg.envelope is None:
        yield NotApplicable("no value schema")
        return
    want = spec.message_value_schema(ev.o)
    if s != want:
        yield Failure("the message event's schema is not the connector's MessageValue schema",
                      expected=brief(want, 160), actual=brief(s, 160), location=ev.at(part="value"))


def _no_envelope(ev: RecordEvidence) -> NotApplicable | None:
    """`first=` for checks of any event with an envelope: a change or a logical decoding message."""
    return NOT_CHANGE if not (ev.change or ev.message) or ev.msg.envelope is None else None


@check("envelope.timestamps", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Data change events: ts_ms, ts_us, ts_ns are the same instant (processing time) at three "
              "precisions; source.ts_ms/ts_us/ts_ns the commit time likewise", first=_no_envelope)
def envelope_timestamps(ev: RecordEvidence) -> Findings:
    """ts_ms/ts_us/ts_ns agree with one another, in the envelope and in source."""
    for where, obj in (("envelope", ev.msg.envelope or {}), ("source", ev.msg.source or {})):
        ms, us, ns = obj.get("ts_ms"), obj.get("ts_us"), obj.get("ts_ns")
        if ms is not None and not _is_int(ms):
            yield Failure(f"{where} ts_ms is no integer", expected="int64", actual=ms, location=ev.at("ts_ms", "value"))
            continue
        if isinstance(us, int) and isinstance(ms, int) and us // 1000 != ms:
            yield Failure(f"{where} ts_us is not ts_ms at microseconds", expected=ms, actual=us,
                          location=ev.at("ts_us", "value"))
        if isinstance(ns, int) and isinstance(us, int) and ns // 1000 != us:
            yield Failure(f"{where} ts_ns is not ts_us at nanoseconds", expected=us, actual=ns,
                          location=ev.at("ts_ns", "value"))


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# == source ===========================================================================================

_JSON_TYPES = {"string": str, "int64": int}


@check("source.postgresql", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Data change events, source metadata: version, connector (postgresql), name (topic.prefix), "
              "ts_ms, snapshot, db, schema, table, txId, lsn, xmin, sequence", first=_no_envelope)
def source_block(ev: RecordEvidence) -> Findings:
    """source holds the PostgreSQL fields with their types; connector is postgresql, name the topic prefix."""
    src = ev.msg.source
    if src is None:
        yield Failure("no source block", expected="an object", actual=brief((ev.msg.envelope or {}).get("source"), 100),
                      location=ev.at("source", "value"))
        return
    for name, typ, optional in spec.SOURCE_FIELDS:
        v = src.get(name)
        if v is None:
            if not optional:
                yield Failure(f"source.{name} is missing", expected=typ, actual=None, location=ev.at(name, "value"))
            continue
        if not isinstance(v, _JSON_TYPES[typ]) or isinstance(v, bool):
            yield Failure(f"source.{name} is no {typ}", expected=typ, actual=v, location=ev.at(name, "value"))
    if src.get("connector") != spec.CONNECTOR:
        yield Failure("source.connector is not postgresql", expected=spec.CONNECTOR, actual=src.get("connector"),
                      location=ev.at("connector", "value"))
    if src.get("name") != ev.o.prefix:
        yield Failure("source.name is not the topic prefix", expected=ev.o.prefix, actual=src.get("name"),
                      location=ev.at("name", "value"), hint="pass the connector's topic.prefix with --option")
    snap = src.get("snapshot")
    if ev.msg.op in ("c", "u", "d") and snap not in (None, "false"):
        yield Failure("a streamed change says it comes from a snapshot", expected="false", actual=snap,
                      location=ev.at("snapshot", "value"))
    if ev.msg.op == "r" and snap not in (*spec.SNAPSHOT_RECORD_VALUES, "incremental"):
        yield Failure("a read event (op r) does not say where it stands in the snapshot",
                      expected=list(spec.SNAPSHOT_RECORD_VALUES), actual=snap, location=ev.at("snapshot", "value"))


@check("topic.name", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Topic names: <topic.prefix>.<schemaName>.<tableName>; characters a topic name may not hold "
              "are replaced by _ (the connector's topic naming strategy, per UTF-16 unit), logical decoding "
              "messages on <topic.prefix>.message (LogicalDecodingMessageMonitor)")
def topic_name(ev: RecordEvidence) -> Findings:
    """A change event's topic is <topic.prefix>.<source.schema>.<source.table>; a message event's
    <topic.prefix>.message."""
    if ev.msg.op == "m" and not ev.transaction_topic:
        if ev.logical_topic != spec.message_topic(ev.o):
            yield Failure("a logical decoding message is not on <topic.prefix>.message",
                          expected=spec.message_topic(ev.o), actual=ev.logical_topic, location=ev.at(part="topic"))
        return
    if not ev.change or ev.msg.source is None:
        yield NOT_CHANGE
        return
    src = ev.msg.source
    if not isinstance(src.get("schema"), str) or not isinstance(src.get("table"), str):
        yield NotApplicable("source names no table")
        return
    want = spec.topic_name(ev.o, src["schema"], src["table"])
    if ev.logical_topic != want:
        yield Failure("the topic is not <topic.prefix>.<schema>.<table>", expected=want, actual=ev.logical_topic,
                      location=ev.at(part="topic"))


# == key ==============================================================================================

@check("key.fields", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Change event keys: the key holds the table's primary key columns (a struct named "
              "<topic>.Key), with the row's values; a table without a key has a null key")
def key_fields(ev: RecordEvidence) -> Findings:
    """The key's fields carry the row's values (and with the workload, exactly the key columns); a
    message's key is its prefix (io.debezium.connector.postgresql.MessageKey)."""
    if ev.transaction_topic:
        yield NotApplicable("a transaction boundary")
        return
    kp = ev.msg.key
    if not kp.ok:
        yield NotApplicable("the key is no JSON")
        return
    if ev.message:
        yield from _message_key(ev)
        return
    if ev.expected is not None:
        want = ev.expected.key_payload(ev.o)
        if spec.key_is_known(ev.expected.table) and not _same_key(ev, want, kp.payload):
            yield Failure("the key is not the table's key columns", expected=want, actual=kp.payload,
                          location=ev.at(part="key"))
    if kp.enveloped and isinstance(kp.schema, dict):
        name = kp.schema.get("name")
        want_name = spec.schema_name(ev.logical_topic, "Key", ev.o)
        if not (isinstance(name, str) and name == want_name):
            yield Failure("the key schema is not named <topic>.Key (as schema.name.adjustment.mode adjusts it)",
                          expected=want_name, actual=name, location=ev.at(part="key"))
    e = ev.msg.envelope
    row = None
    if e is not None:
        row = e.get("after") if isinstance(e.get("after"), dict) else e.get("before")
    if isinstance(kp.payload, dict) and isinstance(row, dict):
        for k, v in kp.payload.items():
            if k in row and row[k] != v:
                yield Failure(f"key field {k!r} differs from the row's", expected=row[k], actual=v,
                              location=ev.at(k, "key"))


def _message_key(ev: RecordEvidence) -> Findings:
    kp = ev.msg.key
    if kp.enveloped and kp.schema != spec.message_key_schema(ev.o):
        yield Failure("a message's key schema is not the connector's MessageKey",
                      expected=spec.message_key_schema(ev.o), actual=brief(kp.schema, 100), location=ev.at(part="key"))
    block = (ev.msg.envelope or {}).get("message")
    want = {"prefix": block.get("prefix")} if isinstance(block, dict) else None
    if want is not None and kp.payload != want:
        yield Failure("a message's key is not its prefix", expected=want, actual=brief(kp.payload, 100),
                      location=ev.at(part="key"))


def _same_key(ev: RecordEvidence, want: dict[str, Any] | None, got: Any) -> bool:
    if want is None or not isinstance(got, dict):
        return bool(want == got)
    assert ev.expected is not None
    cols = {spec.field_name(c, ev.o): c for c in spec.key_columns(ev.expected.table)}
    return set(got) == set(want) and all(value_rules.same_value(cols[n], want[n], got[n], ev.o) for n in want)


# == with the workload ================================================================================

@check("row.values", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{D}, Data type mappings (per decimal.handling.mode, time.precision.mode, binary.handling.mode); "
              "Kafka Connect JsonConverter (bytes and Decimal as base64); unavailable.value.placeholder for an "
              "unchanged TOASTed value (REPLICA IDENTITY DEFAULT / USING INDEX)")
@given(_expected)
def row_values(ev: RecordEvidence, x: Expected) -> Findings:
    """Every column of after (and of a FULL before) is the stored value as the type mapping renders it."""
    e = ev.msg.envelope
    if e is None:
        return
    for part, image in (("after", x.after), ("before", x.before if spec.full_before(x.table) else None)):
        row = e.get(part)
        if image is None or not isinstance(row, dict):
            continue
        for c in x.table.columns:
            f = spec.field_name(c, ev.o)
            if part == "after" and c.name in x.unavailable:
                # The change log carries no value (an unchanged TOASTed one): the placeholder.
                want = spec.unavailable_value(c, ev.o)
                if f in row and row[f] != want:
                    yield Failure(f"after.{f} has no value in the change log (unchanged TOASTed value): it must be "
                                  "the unavailable.value.placeholder as the type writes it", expected=brief(want, 100),
                                  actual=brief(row[f], 100), location=ev.at(f, part))
                continue
            want = spec.json_value(c, image[c.name], ev.o)
            if f not in row:
                yield Failure(f"{part} lacks column {f!r}", expected=brief(want, 100), actual=None,
                              location=ev.at(f, part))
                continue
            if not value_rules.same_value(c, want, row[f], ev.o) and not (
                    image[c.name] is None and c.default.is_non_null and row[f] is None):
                # (A null where the column has a default: whether the connector carries that
                # default in the schema, and so whether the converter substitutes it, is known
                # per kind only from what it was seen to do: a plain null is accepted.)
                yield Failure(f"{part}.{f} ({c.type.kind}) is not the stored value as mapped",
                              expected=brief(want, 100), actual=brief(row[f], 100), location=ev.at(f, part))


@check("source.server-ids", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{D}, Data change events, source metadata: txId, the transaction's id; lsn, the change's position "
              "in the log; ts_ms, the time the change was committed (pgoutput's BEGIN: xid and commit time; each "
              "change's WAL position) — checked where the truth is the server's own log (--upstream, check --since)")
@given(_expected)
def source_server_ids(ev: RecordEvidence, x: Expected) -> Findings:
    """A change event's source.txId, lsn and ts_ms are those the server's log gives its change."""
    if x.server is None:
        yield NotApplicable("the truth is not a server's log: its ids are judged within the capture")
        return
    src = ev.msg.source
    if src is None:
        return
    xid, lsn, ts_ms = x.server
    for name, want in (("txId", xid), ("lsn", lsn), ("ts_ms", ts_ms)):
        got = src.get(name)
        if got != want:
            yield Failure(f"source.{name} is not the one the server's log gives this change", expected=want,
                          actual=got, location=ev.at(name, "value"))


@check("column.types", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{D}, Data type mappings: the Connect type and semantic type (name, parameters) of each column per "
              "option; a nullable column is optional",
       docs_vs_code="the connector declares NOT NULL columns added by ALTER TABLE optional (3.6.3, pgoutput): "
                    "optional is required only of nullable columns")
@given(_expected)
def column_types(ev: RecordEvidence, x: Expected) -> Findings:
    """Each column's Connect schema (type, name, parameters, optional) is the documented mapping."""
    s = ev.msg.value.schema
    if not ev.msg.value.enveloped or not isinstance(s, dict):
        yield NotApplicable("no value schema")
        return
    after = next((f for f in s.get("fields") or [] if isinstance(f, dict) and f.get("field") == "after"), None)
    if after is None:
        return
    got = {f.get("field"): f for f in after.get("fields") or [] if isinstance(f, dict)}
    for c in x.table.columns:
        want = spec.field_schema(c, ev.o)
        f = spec.field_name(c, ev.o)
        g = got.get(f)
        if g is None:
            continue  # row.values reports a missing column
        for attr in ("type", "name", "parameters"):
            if g.get(attr) != want.get(attr):
                yield Failure(f"column {f!r} ({c.type.kind}): wrong {attr}", expected=want.get(attr),
                              actual=g.get(attr), location=ev.at(f, "value"))
        # A nullable column must be optional; a NOT NULL one may be declared optional too: the
        # real connector does so for columns added by ALTER TABLE (pgoutput's relation message
        # carries no nullability).
        if c.nullable and g.get("optional") is not True:
            yield Failure(f"nullable column {f!r} is not optional", expected=True, actual=g.get("optional"),
                          location=ev.at(f, "value"))


@check("before.replica-identity", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{D}, Data change events (update/delete) and REPLICA IDENTITY: FULL gives the whole old row; "
              "DEFAULT/USING INDEX give no before for an update and only the key's columns for a delete")
@given(_expected)
def before_image(ev: RecordEvidence, x: Expected) -> Findings:
    """before is what the table's REPLICA IDENTITY puts in the WAL."""
    e = ev.msg.envelope
    if e is None or x.op not in ("u", "d"):
        yield NotApplicable("not an update or delete")
        return
    got = e.get("before")
    if x.op == "u" and not spec.full_before(x.table):
        if got is not None:
            yield Failure("an update of a table without REPLICA IDENTITY FULL carries a before image",
                          expected=None, actual=brief(got, 100), location=ev.at("before", "value"))
        return
    if x.before is None:
        return
    if not isinstance(got, dict):
        yield Failure("before is missing", expected="the old row", actual=got, location=ev.at("before", "value"))
        return
    cols = x.table.columns if spec.full_before(x.table) else spec.key_columns(x.table)
    for c in cols:
        want = spec.json_value(c, x.before[c.name], ev.o)
        f = spec.field_name(c, ev.o)
        if not value_rules.same_value(c, want, got.get(f), ev.o):
            yield Failure(f"before.{f} is not the old value", expected=brief(want, 100),
                          actual=brief(got.get(f), 100), location=ev.at(f, "before"))


@check("events.per-change", level=Level.MUST, scope=Scope.EVENT, needs_source=True,
       clause=f"{D}, Data change events: one event per changed row (c/u/d) on the table's topic, in commit order; "
              "Primary key updates: a delete event for the old key (with its tombstone) then a create event for the "
              "new key; one message event (m) per logical decoding message")
def events_per_change(ev: EventEvidence) -> Findings:
    """The transaction's change events are the ops its row changes call for, in order, topic by topic."""
    want: dict[str, list[str]] = {}
    for x in ev.expected:
        want.setdefault(x.topic, []).append(x.op)
    if ev.messages:
        want[ev.prefix + spec.message_topic(ev.o)] = ["m"] * len(ev.messages)
    got: dict[str, list[str | None]] = {}
    for r in ev.records:
        if r.change or (r.message and not r.msg.tombstone):
            got.setdefault(r.record.topic, []).append(r.msg.op)
    for topic in sorted(set(want) | set(got)):
        if want.get(topic, []) != got.get(topic, []):
            yield Failure("the change events differ from the row changes", expected=want.get(topic, []),
                          actual=got.get(topic, []), location=ev.records[0].at() if ev.records else None)


@check("transaction.metadata", level=Level.MUST, scope=Scope.EVENT, needs_source=True,
       clause=f"{D}, Transaction metadata (provide.transaction.metadata): a BEGIN and an END event per "
              "transaction on <topic.prefix>.transaction, END with event_count and per data_collection counts; "
              "each event's transaction block has the transaction's id, total_order 1..n and data_collection_order "
              "1..n per table; a transactional logical decoding message counts as an event of a data collection of "
              "its own (LogicalDecodingMessageMonitor: a new LogicalDecodingMessageId per message)",
       docs_vs_code="docs: one id for BEGIN, END and every event; the connector (3.5, 3.6) writes <txId>:<lsn> "
                    "with the LSN it last saw (BEGIN: the first change's, END: the commit's), so the ids share only "
                    "the txId: the check ties them by it and holds each LSN to its record")
def transaction_metadata(ev: EventEvidence) -> Findings:
    """BEGIN/END and the events' transaction blocks count and order the transaction's events."""
    items = [r for r in ev.records if r.change or (r.message and not r.msg.tombstone and _transactional(r))]
    blocks = [r.msg.envelope.get("transaction") if r.msg.envelope is not None else None for r in items]
    bounds = [r for r in ev.records if r.transaction_topic]
    if not ev.o.transactions:
        if bounds:
            yield Failure("transaction boundaries without provide.transaction.metadata", expected=[],
                          actual=len(bounds), location=bounds[0].at())
        if any(b is not None for b in blocks):
            yield Failure("a transaction block without provide.transaction.metadata", expected=None,
                          actual=brief(next(b for b in blocks if b is not None), 100), location=items[0].at())
        return
    if ev.snapshot:
        yield NotApplicable("a snapshot (debezium.snapshot.records judges it)")
        return
    if not ev.expected and not any(m.transactional for m in ev.messages):
        yield NotApplicable("no change")
        return
    statuses = [r.msg.value.payload.get("status") if isinstance(r.msg.value.payload, dict) else None for r in bounds]
    if statuses != ["BEGIN", "END"]:
        yield Failure("not one BEGIN and one END", expected=["BEGIN", "END"], actual=statuses,
                      location=bounds[0].at() if bounds else (items[0].at() if items else None))
        return
    txids = {_txid(b.msg.value.payload.get("id")) for b in bounds}
    txids |= {_txid(b.get("id")) if isinstance(b, dict) else None for b in blocks}
    if len(txids) != 1 or None in txids:
        yield Failure("the ids of BEGIN, END and the events name different transactions", expected="one txId",
                      actual=sorted(map(str, txids)), location=bounds[0].at())
    first_lsn = (items[0].msg.source or {}).get("lsn") if items else None
    last_lsn = (items[-1].msg.source or {}).get("lsn") if items else None
    begin_lsn, end_lsn = (_lsn(b.msg.value.payload.get("id")) for b in bounds)
    if isinstance(first_lsn, int) and begin_lsn is not None and begin_lsn != first_lsn:
        yield Failure("BEGIN's id does not carry the LSN of the transaction's first change", expected=first_lsn,
                      actual=begin_lsn, location=bounds[0].at("id", "value"))
    if isinstance(last_lsn, int) and end_lsn is not None and end_lsn <= last_lsn:
        yield Failure("END's id does not carry an LSN past the transaction's last change (its commit)",
                      expected=f"> {last_lsn}", actual=end_lsn, location=bounds[1].at("id", "value"))
    per: dict[str, int] = {}
    messages = 0
    for i, (r, b) in enumerate(zip(items, blocks, strict=True), start=1):
        if r.message:
            # Each message is a data collection of its own (LogicalDecodingMessageId, one per message).
            messages += 1
            order = 1
        else:
            src = r.msg.source or {}
            coll = f"{src.get('schema')}.{src.get('table')}"
            per[coll] = per.get(coll, 0) + 1
            order = per[coll]
        if not isinstance(b, dict) or b.get("total_order") != i or b.get("data_collection_order") != order:
            yield Failure("wrong transaction block", expected={"total_order": i, "data_collection_order": order},
                          actual=brief(b, 100), location=r.at("transaction", "value"))
    end = bounds[1].msg.value.payload
    want_colls = sorted(per.items())
    got_colls = sorted((d.get("data_collection"), d.get("event_count")) for d in end.get("data_collections") or []
                       if isinstance(d, dict) and not _message_collection(d.get("data_collection")))
    got_messages = [d.get("event_count") for d in end.get("data_collections") or []
                    if isinstance(d, dict) and _message_collection(d.get("data_collection"))]
    if end.get("event_count") != len(items) or got_colls != want_colls or got_messages != [1] * messages:
        yield Failure("END does not count the transaction's events",
                      expected={"event_count": len(items), "data_collections": want_colls,
                                "message collections (one of 1 per message)": messages},
                      actual={"event_count": end.get("event_count"), "data_collections": got_colls,
                              "message collections": got_messages},
                      location=bounds[1].at())


@check("transaction.id", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Transaction metadata: an event's transaction block names its transaction; the connector "
              "(PostgresTransactionMonitor.adjustTxId, 3.x) writes ids as <txId>:<lsn>, the LSN being the one it "
              "last saw when it made the record: an event's own source.lsn, BEGIN's first change, END's commit",
       docs_vs_code="docs: one id for BEGIN, END and every event of a transaction; the connector (3.5, 3.6) writes "
                    "<txId>:<lsn> with each record's own LSN")
def transaction_id(ev: RecordEvidence) -> Findings:
    """An event's transaction.id is <source.txId>:<source.lsn>; BEGIN's and END's ids are <txId>:<lsn>."""
    if ev.transaction_topic:
        p = ev.msg.value.payload
        if not isinstance(p, dict) or p.get("status") not in ("BEGIN", "END"):
            yield NotApplicable("not a transaction boundary")
            return
        tid = p.get("id")
        if not (isinstance(tid, str) and _TX_ID.fullmatch(tid)):
            yield Failure(f"the {p.get('status')} id is not <txId>:<lsn>", expected="<digits>:<digits>",
                          actual=brief(tid, 100), location=ev.at("id", "value"))
        return
    e = ev.msg.envelope
    block = e.get("transaction") if e is not None else None
    if not isinstance(block, dict):
        yield NotApplicable("no transaction block")
        return
    src = ev.msg.source or {}
    want = f"{src.get('txId')}:{src.get('lsn')}"
    if block.get("id") != want:
        yield Failure("the event's transaction id is not <source.txId>:<source.lsn>", expected=want,
                      actual=brief(block.get("id"), 100), location=ev.at("transaction.id", "value"))


_TX_ID = re.compile(r"[0-9]+:[0-9]+")


def _lsn(tid: Any) -> int | None:
    return int(tid.split(":", 1)[1]) if isinstance(tid, str) and _TX_ID.fullmatch(tid) else None


def _transactional(r: RecordEvidence) -> bool:
    """A message event that belongs to its transaction: the workload says so where it is known,
    else the event does (a transaction id in source)."""
    if r.expected_message is not None:
        return r.expected_message.transactional
    return (r.msg.source or {}).get("txId") is not None


def _message_collection(v: Any) -> bool:
    return isinstance(v, str) and spec.MESSAGE_COLLECTION.fullmatch(v) is not None


def _txid(v: Any) -> str | None:
    return v.split(":", 1)[0] if isinstance(v, str) and v else None


# == snapshots ========================================================================================

@check("snapshot.records", level=Level.MUST, scope=Scope.EVENT, needs_source=True,
       clause=f"{D}, Snapshots (snapshot.mode initial, initial_only, always, when_needed): the connector first reads "
              "every row it finds as a read event (op r), table after table, marked in source.snapshot first / "
              "first_in_data_collection / true / last_in_data_collection / last "
              "(RelationalSnapshotChangeEventSource); the snapshot is one transaction of its own (one txId, one LSN) "
              "with no BEGIN/END and no transaction block; no_data reads nothing")
def snapshot_records(ev: EventEvidence) -> Findings:
    """Where the connector starts, it reads the rows it finds (or, with no_data, nothing), as one snapshot whose
    markers order it."""
    if not ev.snapshot:
        yield NotApplicable("not where the connector starts")
        return
    reads = [r for r in ev.records if r.change]
    bounds = [r for r in ev.records if r.transaction_topic]
    if not ev.o.snapshots:
        if reads:
            yield Failure(f"snapshot.mode={ev.o.snapshot_mode} reads no rows, yet the connector's start wrote change "
                          "events", expected=[], actual=[r.msg.op for r in reads][:20], location=reads[0].at())
        return
    if not ev.expected:
        yield NotApplicable("no rows to read")
        return
    if bounds:
        yield Failure("a snapshot has no BEGIN or END", expected=[], actual=len(bounds), location=bounds[0].at())
    if not reads:
        return  # debezium.events.per-change counts the reads that are missing
    for r in reads:
        if (r.msg.envelope or {}).get("transaction") is not None:
            yield Failure("a read event carries a transaction block", expected=None,
                          actual=brief(r.msg.envelope.get("transaction") if r.msg.envelope else None, 100),
                          location=r.at("transaction", "value"))
            break
    ids = {((r.msg.source or {}).get("txId"), (r.msg.source or {}).get("lsn")) for r in reads}
    if len(ids) > 1:
        yield Failure("the read events are not one snapshot (one txId and one LSN)", expected="one (txId, lsn)",
                      actual=sorted(map(str, ids))[:4], location=reads[0].at("txId", "value"))
    # Markers are judged per table and by count: a topic's partitions (and a tool's topics read back
    # from Kafka) keep no order between them, so the order of reads across them is not evidence.
    per_topic: dict[str, list[tuple[RecordEvidence, Any]]] = {}
    for r in reads:
        per_topic.setdefault(r.record.topic, []).append((r, (r.msg.source or {}).get("snapshot")))
    for topic_marks in per_topic.values():
        yield from _table_marks(topic_marks)
    order = list(dict.fromkeys(x.topic for x in ev.expected))  # the tables with rows, in snapshot order
    lasts = [(r, t) for t, ms in per_topic.items() for r, m in ms if m == "last"]
    firsts = [(r, t) for t, ms in per_topic.items() for r, m in ms if m == "first"]
    if len(lasts) != 1 or (order and lasts[0][1] != order[-1]):
        yield Failure("the snapshot's end is not one read event of its last table, marked last",
                      expected={"last": 1, "table": order[-1] if order else None},
                      actual={"last": len(lasts), "tables": sorted({t for _r, t in lasts})},
                      location=(lasts[0][0] if lasts else reads[-1]).at("snapshot", "value"))
    if len(firsts) > 1 or (firsts and order and firsts[0][1] != order[0]):
        yield Failure("first marks more than the first read event of the first table",
                      expected={"first": "at most 1", "table": order[0] if order else None},
                      actual={"first": len(firsts), "tables": sorted({t for _r, t in firsts})},
                      location=firsts[0][0].at("snapshot", "value"))


def _table_marks(marks: list[tuple[RecordEvidence, Any]]) -> Findings:
    """One table's markers, as a count: one first or first_in_data_collection, one
    last_in_data_collection or last, true for the others (a single row: one of first,
    last_in_data_collection, last)."""
    n = len(marks)
    got = [m for _r, m in marks]
    heads = sum(1 for m in got if m in ("first", "first_in_data_collection"))
    tails = sum(1 for m in got if m in ("last_in_data_collection", "last"))
    if n == 1:
        ok = got[0] in ("first", "last_in_data_collection", "last")
    else:
        ok = heads == 1 and tails == 1 and got.count("true") == n - 2
    if not ok:
        yield Failure(f"the {n} read events of a table are not marked as one snapshot of it",
                      expected="one first/first_in_data_collection, one last_in_data_collection/last, true for the "
                               "rest", actual=got[:12], location=marks[0][0].at("snapshot", "value"))


# == logical decoding messages =========================================================================

@check("message.content", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{D}, Logical decoding messages (pg_logical_emit_message): a message event carries the message's "
              "prefix and its content as binary.handling.mode writes bytes (LogicalDecodingMessageMonitor); a "
              "transactional message is decoded with its transaction (source.txId), a non-transactional one at "
              "once, with no transaction id and no transaction block")
def message_content(ev: RecordEvidence) -> Findings:
    """A message event's prefix and content are the message's, encoded per binary.handling.mode; its transaction
    id and block say whether it was transactional."""
    if not ev.message or ev.msg.tombstone or ev.msg.envelope is None:
        yield NotApplicable("not a logical decoding message")
        return
    e = ev.msg.envelope
    block = e.get("message")
    if not isinstance(block, dict):
        return  # envelope.fields says so
    content = spec.binary_content(block.get("content"), ev.o)
    if content is None:
        yield Failure(f"the content is not bytes as binary.handling.mode={ev.o.binary_mode} writes them",
                      expected=f"{ev.o.binary_mode}-encoded bytes", actual=brief(block.get("content"), 100),
                      location=ev.at("message.content", "value"))
    txid = (ev.msg.source or {}).get("txId")
    if e.get("transaction") is not None and txid is None:
        yield Failure("a message event with a transaction block names no transaction (source.txId)",
                      expected="a txId", actual=None, location=ev.at("txId", "value"))
    m = ev.expected_message
    if m is None:
        return
    if block.get("prefix") != m.prefix:
        yield Failure("the prefix is not the message's", expected=m.prefix, actual=brief(block.get("prefix"), 100),
                      location=ev.at("message.prefix", "value"))
    if content is not None and content != m.content:
        yield Failure("the content is not the message's", expected=spec.binary_text(m.content, ev.o),
                      actual=brief(block.get("content"), 100), location=ev.at("message.content", "value"))
    if not m.transactional and (txid is not None or e.get("transaction") is not None):
        yield Failure("a non-transactional message is given a transaction", expected="txId null, transaction null",
                      actual={"txId": txid, "transaction": brief(e.get("transaction"), 60)},
                      location=ev.at("transaction", "value"))
    if m.transactional and txid is None:
        yield Failure("a transactional message names no transaction (source.txId)", expected="its transaction's txId",
                      actual=None, location=ev.at("txId", "value"))


# == streams ==========================================================================================

@check("delete.tombstone", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{D}, Tombstone events and tombstones.on.delete (default true): a delete event is followed by a "
              "tombstone with the same key and a null value; with false, no tombstones")
def delete_tombstone(ev: StreamEvidence) -> Findings:
    """The next message of a deleted key, in its partition, is its tombstone (none with tombstones.on.delete=false)."""
    judged = False
    for part, log in sorted(ev.logs.items()):
        after = _next_of_deletes(log) if ev.o.tombstones else {}
        for i, e in enumerate(log):
            if e.kind == "tombstone" and not ev.o.tombstones:
                yield Failure("a tombstone although tombstones.on.delete=false", expected="no tombstone",
                              actual=e.key, location=Location(ev.topic, part, e.offset))
            if e.kind != "d" or not ev.o.tombstones or e.key is None:
                continue
            nxt = after.get(i)
            if nxt is None and not ev.complete:
                continue  # the capture ends before the tombstone could come
            judged = True
            if nxt is None or nxt.kind != "tombstone":
                yield Failure("a delete event not followed by its tombstone", expected="a tombstone of key " + e.key,
                              actual=None if nxt is None else f"{nxt.kind} at offset {nxt.offset}",
                              location=Location(ev.topic, part, e.offset))
    if not judged and ev.o.tombstones:
        yield NotApplicable("no delete")


def _next_of_deletes(log: list[Any]) -> dict[int, Any]:
    """For each delete event of a partition's log (by index), the next message of its key, where
    one follows: one pass from the end, so that a long log with many deletes (whose keys may never
    come again) is read once rather than once per delete."""
    out: dict[int, Any] = {}
    later: dict[str, Any] = {}  # key -> the nearest message of it after the one at hand
    for i in range(len(log) - 1, -1, -1):
        e = log[i]
        if e.key is None:
            continue
        if e.kind == "d":
            got = later.get(e.key)
            if got is not None:
                out[i] = got
        later[e.key] = e
    return out
