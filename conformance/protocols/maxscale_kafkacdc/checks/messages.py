"""The MaxScale KafkaCDC checks of one message: the JSON document, the Kafka key and partition,
schema events and DML events."""

from __future__ import annotations

import re

from ....checks.compiled import Source
from ....checks.registry import Failure, Level, NotApplicable, Scope
from ...kit import Findings, brief
from .. import spec
from ..checker import EventEvidence, RecordEvidence
from ..decoder import Column, is_int
from ..fastpath import read_group
from ..jsontext import whitespace_outside_strings
from ..spec import NOTES, SEED
from ..tracker import SchemaEvent
from .common import NOT_DML, NOT_SCHEMA, _dml, _row, _schema, check, fast
from .values import _declared_columns

# == the message =========================================================================================

@check("message.json", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (changes are streamed as JSON objects); {NOTES} §1 (one JSON object per message, "
              "json_dumps of a jansson object: UTF-8, no NaN, no duplicate keys)")
def message_json(ev: RecordEvidence) -> Failure | None:
    """The value is one JSON object in UTF-8 (no NaN/Infinity, no key twice)."""
    if ev.msg.ok:
        return None
    raw = ev.record.value
    return Failure(f"the value is no JSON object: {ev.msg.error}", expected="one JSON object",
                   actual=None if raw is None else raw[:120].decode("utf-8", "replace"), location=ev.at(part="value"))


@fast.rule("message.json")
def _message_json_fast(ev: RecordEvidence, src: Source) -> bool:
    """The fast path's values are JSON objects, read as the decoder reads them."""
    return True


@check("message.compact", level=Level.SHOULD, scope=Scope.RECORD,
       clause=f"{NOTES} §1 (json_dumps(obj, JSON_COMPACT): no whitespace, no trailing newline)",
       docs_vs_code="docs: the examples are indented for reading; code: JSON_COMPACT, one line without spaces")
def message_compact(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """The JSON is compact, as jansson's JSON_COMPACT writes it: no whitespace outside strings."""
    if not ev.msg.ok or ev.msg.text is None:
        return NotApplicable("no JSON object")

    i = whitespace_outside_strings(ev.msg.text)
    if i is None:
        return None
    return Failure(f"whitespace at character {i} of the value", expected="compact JSON (JSON_COMPACT)",
                   actual=ev.msg.text[max(0, i - 20):i + 20], location=ev.at(part="value"))


@fast.rule("message.compact")
def _message_compact_fast(ev: RecordEvidence, src: Source) -> bool:
    """No whitespace outside strings, most often shown without a scan of the text. The text holds
    no tab, CR or LF (the function is handed no other), so its whitespace is spaces: none at all
    is compact. Where it has spaces but no `\\u0020` escape, its spaces inside strings are the
    spaces of the parsed strings; so spaces counted in some of its strings (its keys, and the
    top-level string values of its columns but those whose declared type makes them numbers) are
    at most the spaces inside strings, and a text with no more spaces than that has none outside
    them. Otherwise (spaces in a fixed field's or a nested value, escaped spaces) the check's own
    scan decides."""
    obj = ev.msg.obj
    if obj is None:
        return False
    numbers = {name for name, d, _v in _declared_columns(ev)
               if d is not None and d.real_type is not None and spec.json_family(d.real_type) != "string"}
    names = [k for k in obj if k not in spec.DML_FIXED and k not in numbers]
    group = read_group(src, names) if names else None  # at the top: other rules may read the group
    sp = src.fresh("sp")
    src.line("if ' ' in text:")
    src.line(f"{sp} = {src.const(sum(k.count(' ') for k in obj), 'ks')}", 2)
    if group is not None:
        x = src.fresh("x")
        src.line(f"for {x} in {group}:", 2)
        src.line(f"if {x}.__class__ is str: {sp} += {x}.count(' ')", 3)
    ws = src.const(whitespace_outside_strings, "ws")
    src.line(f"if not (({sp} == text.count(' ') and '\\\\u0020' not in text) or {ws}(text) is None): return None", 2)
    return True


@check("message.kind", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (DDL events: the schema object; DML events: event_type insert, update_before, "
              f"update_after, delete); {NOTES} §2 (a message is a schema event iff namespace is "
              "MaxScaleChangeDataSchema.avro: the upstream test's rule), §3")
def message_kind(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """Every message is a schema event (it has a `namespace`) or a DML event whose `event_type` is
    one of insert, update_before, update_after, delete."""
    if not ev.msg.ok:
        return NotApplicable("no JSON object")
    if ev.msg.kind is None:
        return Failure("neither a schema event (no namespace) nor a DML event (no event_type)",
                       expected="a schema or DML event", actual=brief(sorted(ev.msg.obj or {}), 80), location=ev.at())
    if ev.msg.kind == "dml" and ev.msg.get("event_type") not in spec.EVENT_TYPES:
        return Failure(f"unknown event_type {ev.msg.get('event_type')!r}", expected=list(spec.EVENT_TYPES),
                       actual=ev.msg.get("event_type"), location=ev.at("event_type"))
    return None


@fast.rule("message.kind")
def _message_kind_fast(ev: RecordEvidence, src: Source) -> bool:
    """A DML kind (its keys have event_type and no namespace): the event_type is one of the four."""
    if ev.msg.kind != "dml":
        return False
    src.guard(f"_et in {src.const(spec.EVENT_TYPES, 'types')}")
    return True


# == Kafka =================================================================================================

@check("kafka.key", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1 (DML key `domain-server_id-sequence:event_number`, kafkacdc.cc L268; schema key: the "
              "table's GTID without event number, L227-240), §6.2 (read back by gtid_pos_t::parse to resume)",
       docs_vs_code="docs: the key is not documented; code: GTID[:event_number], which MaxScale reads back to resume")
def kafka_key(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """A DML event's key is `d-s-q:n` of its own GTID and event number; a schema event's key is its
    `gtid` (`d-s-q`)."""
    m = ev.msg
    if m.key_error is not None:
        return Failure(m.key_error, expected="domain-server_id-sequence[:event_number]",
                       actual=m.key_text if m.key_text is not None else None, location=ev.at(part="key"))
    if not m.ok or m.kind is None:
        return NotApplicable("no schema or DML event")
    assert m.key is not None
    g, n = m.key
    if m.kind == "schema":
        if n is not None or m.gtid != g:
            return Failure("a schema event's key is not its gtid", expected=m.get("gtid"), actual=m.key_text,
                           location=ev.at(part="key"))
        return None
    if m.gtid is None or m.event_number is None:
        return NotApplicable("the DML event's GTID fields are malformed (dml.fields)")
    want = spec.dml_key(m.gtid, m.event_number)
    if m.key_text != want:
        return Failure("a DML event's key is not its domain-server_id-sequence:event_number", expected=want,
                       actual=m.key_text, location=ev.at(part="key"))
    return None


#: The fixed fields of a DML event as the key check (the GTID parts and event number: unsigned
#: integers of 32, 32 and 64 bits, a non-negative integer; `Message.gtid`, `event_number`),
#: dml.fields (event_number from 1, an integer timestamp) and dml.timestamp (32-bit seconds) want
#: them, in one test their three rules share (each guards more than it needs: one test, not three).
_FIXED_OK = ("_d.__class__ is int and _s.__class__ is int and _q.__class__ is int and _n.__class__ is int "
             "and _t.__class__ is int and 0 <= _d < 4294967296 and 0 <= _s < 4294967296 "
             "and 0 <= _q < 18446744073709551616 and 1 <= _n < 18446744073709551616 and 0 <= _t < 4294967296")


@fast.rule("kafka.key")
def _kafka_key_fast(ev: RecordEvidence, src: Source) -> bool:
    """A DML event whose GTID fields read, and whose key is exactly `d-s-q:n` of them (ASCII digits
    that `spec.parse_key` reads back as the same GTID and number)."""
    if ev.msg.kind != "dml":
        return False
    src.guard(_FIXED_OK)
    # `%d` of an int (the guard above: exactly int) is its decimal text, as str() gives it.
    src.guard("key == b'%d-%d-%d:%d' % (_d, _s, _q, _n)")
    return True


@check("kafka.topic", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §topic (the Kafka topic where the replicated events will be sent); {NOTES} §1 (one topic "
              "for every table, schema and DML alike)")
def kafka_topic(ev: EventEvidence) -> Findings:
    """Every message goes to the one configured topic."""
    for r in ev.records:
        if r.record.topic != ev.topic:
            yield Failure("a message went to another topic", expected=ev.topic, actual=r.record.topic, location=r.at())
            return


# == schema events ===========================================================================================

@check("schema.envelope", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (namespace MaxScaleChangeDataSchema.avro, type record, name ChangeRecord, table, "
              f"database, version, gtid, fields); {NOTES} §2 (Table::to_json: constants, sanitized names, version an "
              "integer, gtid `d-s-q`)")
def schema_envelope(ev: RecordEvidence) -> Findings:
    """A schema event has exactly namespace, type, name, table, database, version, gtid and fields,
    with the constant values, string names, a positive integer version and a `d-s-q` gtid."""
    s = _schema(ev)
    if s is None:
        yield NOT_SCHEMA
        return
    keys = set(s)
    if keys != set(spec.SCHEMA_KEYS):
        yield Failure("a schema event's keys", expected=list(spec.SCHEMA_KEYS), actual=sorted(keys), location=ev.at())
    for k, want in (("namespace", spec.NAMESPACE), ("type", spec.RECORD_TYPE), ("name", spec.RECORD_NAME)):
        if s.get(k) != want:
            yield Failure(f"{k} is {s.get(k)!r}", expected=want, actual=s.get(k), location=ev.at(k))
    for k in ("table", "database"):
        v = s.get(k)
        if not isinstance(v, str) or not v or re.fullmatch(r"[A-Za-z0-9_]+", v) is None:
            yield Failure(f"{k} is not a sanitized name", expected="[A-Za-z0-9_]+ (avro_sanitizer)", actual=v,
                          location=ev.at(k))
    v = s.get("version")
    if not is_int(v) or v < 1:
        yield Failure("version is not a positive integer", expected=">= 1", actual=v, location=ev.at("version"))
    g = s.get("gtid")
    if not isinstance(g, str) or ev.msg.gtid is None:
        yield Failure("gtid is not domain-server_id-sequence", expected="e.g. 0-3000-14", actual=g,
                      location=ev.at("gtid"))
    if not isinstance(s.get("fields"), list):
        yield Failure("fields is not a list", expected="a list of field objects", actual=brief(s.get("fields"), 80),
                      location=ev.at("fields"))


@fast.rule("schema.envelope")
@fast.rule("schema.fixed-fields")
@fast.rule("schema.columns")
@fast.rule("schema.avro-type")
@fast.rule("schema.length")
def _not_schema_fast(ev: RecordEvidence, src: Source) -> NotApplicable | bool:
    """Nothing to judge in a DML event."""
    return NOT_SCHEMA if ev.msg.kind == "dml" else False


@check("schema.fixed-fields", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (domain, server_id, sequence, event_number, timestamp, event_type with the "
              f"EVENT_TYPES enum); {NOTES} §2 (the six fixed fields always first, type plain \"int\")")
def schema_fixed_fields(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`fields` starts with the six fixed fields, exactly as documented (the enum's symbols in order)."""
    s = _schema(ev)
    fields = ev.msg.fields
    if s is None or fields is None:
        return NOT_SCHEMA
    head = fields[:len(spec.FIXED_FIELDS)]
    if head != list(spec.FIXED_FIELDS):
        return Failure("the first six fields are not the fixed ones", expected=[f["name"] for f in spec.FIXED_FIELDS],
                       actual=brief(head, 300), location=ev.at("fields"))
    return None


@check("schema.columns", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (a column: name, type [\"null\", X], real_type, length, unsigned); {NOTES} §2 "
              "(json_pack \"{s:s, s:[s, s], s:s, s:i, s:b}\": the union always has null first)")
def schema_columns(ev: RecordEvidence) -> Findings:
    """Each column field has exactly name (a sanitized name), type `["null", X]` with X an Avro
    primitive, real_type (a string), length (an integer) and unsigned (a boolean)."""
    fields = ev.msg.fields if _schema(ev) is not None else None
    if fields is None:
        yield NOT_SCHEMA
        return
    cols = fields[len(spec.FIXED_FIELDS):]
    if not cols:
        yield Failure("a schema event without columns", expected="one field per column", actual=[],
                      location=ev.at("fields"))
    for f in cols:
        name = f.get("name") if isinstance(f, dict) else None
        where = ev.at(name if isinstance(name, str) else None)
        if not isinstance(f, dict) or set(f) != set(spec.COLUMN_KEYS):
            yield Failure("a column's keys", expected=list(spec.COLUMN_KEYS),
                          actual=sorted(f) if isinstance(f, dict) else brief(f, 80), location=where)
            continue
        t = f["type"]
        if not (isinstance(t, list) and len(t) == 2 and t[0] == "null" and t[1] in spec.AVRO_TYPES):
            yield Failure("a column's type is not [\"null\", <avro primitive>]", expected='["null", X]', actual=t,
                          location=where)
        if not isinstance(name, str) or re.fullmatch(r"[A-Za-z0-9_]+", name) is None:
            yield Failure("a column's name is not sanitized", expected="[A-Za-z0-9_]+", actual=name, location=where)
        if not isinstance(f["real_type"], str) or not f["real_type"]:
            yield Failure("real_type is not a type name", expected="e.g. INT", actual=f["real_type"], location=where)
        if not is_int(f["length"]):
            yield Failure("length is not an integer", expected="-1", actual=f["length"], location=where)
        if not isinstance(f["unsigned"], bool):
            yield Failure("unsigned is not a boolean", expected="true or false", actual=f["unsigned"], location=where)


@check("schema.avro-type", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §2.1 (column_type_to_avro_type: X from the lower-cased real_type: tinyint/boolean/smallint/"
              "mediumint/int/integer -> int; bigint/serial -> long; double/decimal/numeric/fixed/dec/real -> double; "
              "the blob and text types and binary -> bytes; float -> float; anything else -> string); §9",
       docs_vs_code="docs: `id INT` is [\"null\", \"long\"] (MaxScale 2.4's mapping by binlog type; "
                    "--option schema-types=docs); code (2.5+): [\"null\", \"int\"], chosen from the DDL's type text")
def schema_avro_type(ev: RecordEvidence) -> Findings:
    """Each column's Avro type is the one MaxScale chooses from its real_type."""
    if _schema(ev) is None:
        yield NOT_SCHEMA
        return
    for c in ev.msg.columns():
        if c.real_type is None or c.avro is None:
            continue
        want = spec.avro_type(c.real_type, docs=ev.o.docs_types)
        if c.avro != want:
            yield Failure(f"real_type {c.real_type} is [\"null\", {c.avro!r}]", expected=want, actual=c.avro,
                          location=ev.at(c.name))


@check("schema.length", level=Level.SHOULD, scope=Scope.RECORD,
       clause=f"{NOTES} §2.2 (length is always -1 for schemas of 2.5+: column_def never sets it)",
       docs_vs_code="docs: \"Field length, if found\"; code: -1 (the Column default), whatever the DDL says")
def schema_length(ev: RecordEvidence) -> Findings:
    """Every column's `length` is -1."""
    fields = ev.msg.fields if _schema(ev) is not None else None
    if fields is None:
        yield NOT_SCHEMA
    for f in (fields or [])[len(spec.FIXED_FIELDS):]:
        if isinstance(f, dict) and is_int(f.get("length")) and f["length"] != -1:
            yield Failure(f"length is {f['length']}", expected=-1, actual=f["length"],
                          location=ev.at(f.get("name") if isinstance(f.get("name"), str) else None))


@check("schema.real-type", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{NOTES} §2.2 (real_type: the DDL's type token as written, case kept, through the sanitizer: TIMESTAMP "
              "-> TIMESTAMP_; lower case for tables found through SHOW CREATE TABLE; unsigned iff the definition has "
              "UNSIGNED), §4.2 (column names sanitized)",
       docs_vs_code="docs: real_type \"int\" for `id INT` (--option schema-types=docs); code: as written, \"INT\"")
def schema_real_type(ev: RecordEvidence) -> Findings:
    """The columns are the table's, in order: sanitized names, real_type as the DDL wrote the type,
    unsigned as the DDL says."""
    if _schema(ev) is None:
        yield NOT_SCHEMA
        return
    if not isinstance(ev.source, SchemaEvent):
        yield NotApplicable("no schema announcement of the workload is paired with this message")
        return
    got = [(c.name, c.real_type, c.unsigned) for c in ev.msg.columns()]
    want = [(c.name, c.real_type, c.unsigned) for c in ev.source.columns]
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
        yield Failure(f"column {i} is not the table's (name, real_type, unsigned)",
                      expected=want[i] if i < len(want) else None, actual=got[i] if i < len(got) else None,
                      location=ev.at(want[i][0] if i < len(want) else None))


@check("schema.disabled", level=Level.MUST, scope=Scope.RECORD,
       needs_options={"send_schema": "false"},
       clause=f"{SEED} §send_schema (\"they can be disabled with this parameter\"); {NOTES} §2 (sent only if "
              "send_schema=true, kafkacdc.cc L231)")
def schema_disabled(ev: RecordEvidence) -> Failure | None:
    """With send_schema=false no schema event is sent."""
    if _schema(ev) is not None:
        return Failure("a schema event although send_schema=false", expected="DML events only",
                       actual=f"schema of {ev.msg.table}", location=ev.at())
    return None


@fast.rule("schema.disabled")
def _schema_disabled_fast(ev: RecordEvidence, src: Source) -> bool:
    """A DML event passes."""
    return ev.msg.kind == "dml"


# == DML events ============================================================================================

_FIXED_TYPES = {"domain": 32, "server_id": 32, "sequence": 64, "event_number": 64}


@check("dml.fields", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (domain, server_id, sequence, event_number, timestamp, event_type; table_name and "
              f"table_schema since 2.5.3); {NOTES} §3 (prepare_row: unsigned GTID parts, event_number >= 1, the "
              "sanitized names of the table)")
def dml_fields(ev: RecordEvidence) -> Findings:
    """A DML event has its fixed fields: the GTID parts and event_number as non-negative integers
    (event_number from 1), an integer timestamp, the event_type, and table_schema / table_name
    naming its table."""
    d = _dml(ev)
    if d is None:
        yield NOT_DML
        return
    missing = [k for k in spec.DML_FIXED if k not in d]
    if missing:
        yield Failure(f"missing {', '.join(missing)}", expected=list(spec.DML_FIXED), actual=sorted(d),
                      location=ev.at())
    for k, bits in _FIXED_TYPES.items():
        if k in d and not (is_int(d[k]) and 0 <= d[k] < 1 << bits):
            yield Failure(f"{k} is not an unsigned {bits}-bit integer", expected=f"0..2^{bits}-1", actual=d[k],
                          location=ev.at(k))
    if is_int(d.get("event_number")) and d["event_number"] < 1:
        yield Failure("event_number is below 1", expected=">= 1 (pre-incremented per row image)",
                      actual=d["event_number"], location=ev.at("event_number"))
    if "timestamp" in d and not is_int(d["timestamp"]):
        yield Failure("timestamp is not an integer", expected="seconds", actual=d["timestamp"],
                      location=ev.at("timestamp"))
    for k in ("table_schema", "table_name"):
        if k in d and not isinstance(d[k], str):
            yield Failure(f"{k} is not a string", expected="the table's sanitized name", actual=d[k], location=ev.at(k))
    row = _row(ev)
    if row is not None and ev.msg.table is not None and ev.msg.table != (row.schema.database, row.schema.table):
        yield Failure("table_schema/table_name do not name the row's table",
                      expected=[row.schema.database, row.schema.table], actual=list(ev.msg.table), location=ev.at())


@fast.rule("dml.fields")
def _dml_fields_fast(ev: RecordEvidence, src: Source) -> bool:
    """Without the source: the kind has every fixed field and string table names (its keys and
    table say so); the GTID parts and event number are unsigned integers, event_number from 1,
    the timestamp an integer."""
    if ev.msg.kind != "dml" or ev.source is not None or ev.msg.table is None:
        return False
    if any(k not in (ev.msg.obj or {}) for k in spec.DML_FIXED):
        return False
    src.guard(_FIXED_OK)
    return True


@check("dml.timestamp", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (timestamp: the UNIX timestamp when the event occurred, type int); {NOTES} §3 "
              "(hdr.timestamp: the binlog row event header's uint32 seconds, not the commit or Kafka time)",
       docs_vs_code="docs: \"UNIX timestamp when the event was created\" (type int); code: the row event's binlog "
                    "header time, uint32 seconds")
def dml_timestamp(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`timestamp` is the row event's binlog time in seconds, a 32-bit unsigned number."""
    d = _dml(ev)
    if d is None or not is_int(d.get("timestamp")):
        return NotApplicable("no DML event with an integer timestamp")
    t = d["timestamp"]
    if not 0 <= t < spec.UINT32:
        return Failure("timestamp is not 32-bit seconds", expected="0..2^32-1 (uint32 seconds)", actual=t,
                       location=ev.at("timestamp"))
    row = _row(ev)
    if row is not None and t != row.timestamp:
        return Failure("timestamp is not the row event's time", expected=row.timestamp, actual=t,
                       location=ev.at("timestamp"))
    return None


@fast.rule("dml.timestamp")
def _dml_timestamp_fast(ev: RecordEvidence, src: Source) -> bool:
    if ev.msg.kind != "dml" or ev.source is not None:
        return False
    src.guard(_FIXED_OK)
    return True


def _schema_names(columns: list[Column]) -> list[str]:
    return list(dict.fromkeys(c.name for c in columns))


@check("dml.columns", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (DML events follow the format specified in the DDL event: all remaining fields "
              f"contain data from the table); {NOTES} §3 (every column present, full row image; NULL as null), §4.2",
       docs_vs_code="docs: a schema event whenever the table's format changes; 24.02 code: an ALTER before any row "
                    "of the table sends none, so rows may carry columns the latest schema event lacks "
                    "(--option schema-on-alter=after-rows)")
def dml_columns(ev: RecordEvidence) -> Findings:
    """Every column of the table is present (NULL as null) and nothing else: the columns of the latest
    schema event of its table (with the workload: of the table itself)."""
    d = _dml(ev)
    if d is None:
        yield NOT_DML
        return
    got = ev.msg.column_names()
    row = _row(ev)
    if row is not None:
        want = list(dict.fromkeys(c.name for c in row.schema.columns))
        source = "the table's columns"
    elif ev.schema is not None:
        want, source = _schema_names(ev.schema.columns), "the latest schema event's columns"
    else:
        yield _NO_SCHEMA_SEEN
        return
    # A column named like a fixed field (table_name, table_schema: not reserved) replaces its value
    # (jansson's set, notes §3): it is there, under the fixed field's key.
    want = [n for n in want if n not in spec.DML_FIXED]
    if sorted(got) != sorted(want):
        if row is None and ev.o.alter_after_rows:
            yield _AFTER_ROWS
            return
        yield Failure(f"the row's columns are not {source}", expected=sorted(want), actual=sorted(got),
                      location=ev.at())


_NO_SCHEMA_SEEN = NotApplicable("no schema event of this table seen before it, and no workload")
_AFTER_ROWS = NotApplicable("schema-on-alter=after-rows: MaxScale 24.02 announces no ALTER made before a row of the "
                            "table was seen")


@fast.rule("dml.columns")
def _dml_columns_fast(ev: RecordEvidence, src: Source) -> NotApplicable | bool:
    """Without the source, decided by the kind: its keys and the schema event it is read with."""
    if ev.msg.kind != "dml" or ev.source is not None:
        return False
    if ev.schema is None:
        return _NO_SCHEMA_SEEN
    want = [n for n in _schema_names(ev.schema.columns) if n not in spec.DML_FIXED]
    if sorted(ev.msg.column_names()) == sorted(want):
        return True
    return _AFTER_ROWS if ev.o.alter_after_rows else False
