"""The MaxScale KafkaCDC checks.

Every check has a stable id, a level, the clause it enforces and a mutant in `mutants.py` that it
catches (the project's tests assert both). Checks read `RecordEvidence` (one Kafka record, the
latest schema event of its table in the partition, and with the workload what MaxScale would
have sent), `EventEvidence` (one source event and its records: needs the workload) or
`StreamEvidence` (one topic: every partition's log).

Where seed 004 and MaxScale's code disagree (notes §9), the check follows the code for the
message format and says so in `docs_vs_code`; where MaxScale 24.02 loses or garbles the table's
data (notes §4), the check holds encoders to the data and a profile switch accepts what 24.02
really emits (`--option profile=maxscale-24.02` turns them all on).
"""

from __future__ import annotations

import decimal
import re
from collections.abc import Iterator
from typing import Any

from ...checks.registry import CheckRegistry, Failure, Level, NotApplicable, Scope
from ...model import mysql_text
from ...model.types import INTEGER_KINDS, Kind
from ...model.values import to_float32
from ..kit import Findings, brief
from . import spec
from .checker import Entry, EventEvidence, PartitionLog, RecordEvidence, StreamEvidence
from .decoder import Column, is_int
from .spec import NOTES, SEED
from .tracker import RowImage, SchemaEvent, row_values

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)

def _schema(ev: RecordEvidence) -> dict[str, Any] | None:
    return ev.msg.obj if ev.msg.ok and ev.msg.kind == "schema" else None


def _dml(ev: RecordEvidence) -> dict[str, Any] | None:
    return ev.msg.obj if ev.msg.ok and ev.msg.kind == "dml" else None


def _row(ev: RecordEvidence) -> RowImage | None:
    return ev.source if isinstance(ev.source, RowImage) and _dml(ev) is not None else None


NOT_SCHEMA = NotApplicable("not a schema event")
NOT_DML = NotApplicable("not a DML event")
NO_SOURCE_ROW = "no row of the workload is paired with this message (its key matches none)"


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


@check("message.compact", level=Level.SHOULD, scope=Scope.RECORD,
       clause=f"{NOTES} §1 (json_dumps(obj, JSON_COMPACT): no whitespace, no trailing newline)",
       docs_vs_code="docs: the examples are indented for reading; code: JSON_COMPACT, one line without spaces")
def message_compact(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """The JSON is compact, as jansson's JSON_COMPACT writes it: no whitespace outside strings."""
    if not ev.msg.ok or ev.msg.text is None:
        return NotApplicable("no JSON object")
    from .jsontext import whitespace_outside_strings

    i = whitespace_outside_strings(ev.msg.text)
    if i is None:
        return None
    return Failure(f"whitespace at character {i} of the value", expected="compact JSON (JSON_COMPACT)",
                   actual=ev.msg.text[max(0, i - 20):i + 20], location=ev.at(part="value"))


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
        yield NotApplicable("no schema event of this table seen before it, and no workload")
        return
    # A column named like a fixed field (table_name, table_schema: not reserved) replaces its value
    # (jansson's set, notes §3): it is there, under the fixed field's key.
    want = [n for n in want if n not in spec.DML_FIXED]
    if sorted(got) != sorted(want):
        if row is None and ev.o.alter_after_rows:
            yield NotApplicable("schema-on-alter=after-rows: MaxScale 24.02 announces no ALTER made before a row "
                                "of the table was seen")
            return
        yield Failure(f"the row's columns are not {source}", expected=sorted(want), actual=sorted(got),
                      location=ev.at())


# == values ==============================================================================================

def _columns(ev: RecordEvidence) -> list[tuple[str, Column | None, Any]]:
    """(name, declared column, value) of every column of a DML event (worked out once per
    record: every value check reads them)."""
    if ev.columns is None:
        ev.columns = _declared_columns(ev)
    return ev.columns


def _declared_columns(ev: RecordEvidence) -> list[tuple[str, Column | None, Any]]:
    d = _dml(ev)
    if d is None:
        return []
    out = []
    row = _row(ev)
    planned = {c.name: c for c in row.schema.columns} if row is not None else {}
    for name in ev.msg.column_names():
        declared = ev.schema.column(name) if ev.schema is not None else None
        if declared is None and name in planned:
            p = planned[name]
            declared = Column(p.name, p.avro, p.real_type, p.unsigned)
        out.append((name, declared, d[name]))
    return out


def _json_kind(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, decimal.Decimal):
        return "number"
    if isinstance(v, str):
        return "string"
    return type(v).__name__


@check("value.json-type", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (DML events follow the format specified in the DDL event; type [\"null\", X]); "
              f"{NOTES} §4 (the JSON follows the binlog decoder's path for the column's real_type: integers for the "
              "integer types and BIT, numbers for FLOAT/DOUBLE/DECIMAL, strings for the rest; null for NULL)")
def value_json_type(ev: RecordEvidence) -> Findings:
    """Each column's JSON is null or of the kind its declared real_type decodes to (integer, number
    or string)."""
    if _dml(ev) is None:
        yield NOT_DML
        return
    judged = False
    for name, declared, v in _columns(ev):
        if declared is None or declared.real_type is None:
            continue
        judged = True
        if v is None:
            continue
        family = spec.json_family(declared.real_type)
        kind = _json_kind(v)
        ok = kind == family or (family == "number" and kind == "integer")
        if not ok:
            yield Failure(f"a {declared.real_type} column holds a JSON {kind}", expected=f"null or a JSON {family}",
                          actual=brief(v, 80), location=ev.at(name))
    if not judged:
        yield NotApplicable("no column whose declared type is known (no schema event of the table seen, no workload)")


def _expected(ev: RecordEvidence, kinds: frozenset[Kind] | set[Kind]) -> Iterator[tuple[str, Kind, Any, Any, Any]]:
    """(column, kind, model value, expected JSON, actual JSON) for the row's columns of `kinds`."""
    row = _row(ev)
    d = _dml(ev)
    if row is None or d is None:
        return
    if ev.want is None:
        ev.want = row_values(row, ev.o)
    want = ev.want
    for c in row.schema.columns:
        src = c.source
        if src is None or src.type.kind not in kinds or c.name not in d or c.name not in want:
            continue
        last = [x for x in row.schema.columns if x.name == c.name][-1]
        if last is not c:
            continue  # a later column of the same sanitized name holds the key
        yield c.name, src.type.kind, row.image.get(src.name), want[c.name], d[c.name]


def _null_mismatch(name: str, expected: Any, actual: Any, ev: RecordEvidence) -> Failure | None:
    if (expected is None) != (actual is None):
        return Failure("NULL is not null" if expected is None else "a value came out as null",
                       expected=brief(expected, 80), actual=brief(actual, 80), location=ev.at(name))
    return None


def _value_check(ev: RecordEvidence, kinds: frozenset[Kind] | set[Kind], what: str,
                 same: Any) -> Findings:
    row = _row(ev)
    if row is None:
        yield NotApplicable(NO_SOURCE_ROW if _dml(ev) is not None else "no DML event")
        return
    seen = False
    for name, kind, model, want, got in _expected(ev, kinds):
        seen = True
        bad = _null_mismatch(name, want, got, ev)
        if bad is not None:
            yield bad
        elif want is not None and not same(kind, model, want, got):
            yield Failure(f"a {kind.value} column's {what}", expected=brief(getattr(want, "text", want), 80),
                          actual=brief(got, 80), location=ev.at(name))
    if not seen:
        yield NotApplicable(f"no {what} in this row")


def _int_same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
    return is_int(got) and got == want


@check("value.integer", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (integers as JSON integers, "
              "signed or unsigned per the schema's unsigned flag; BIGINT UNSIGNED: column_long(get_byte8))",
       docs_vs_code="docs: the column's data; 24.02 code: BIGINT UNSIGNED values >= 2^63 wrap negative "
                    "(18446744073709551615 -> -1; --option bigint-unsigned=wrap)")
def value_integer(ev: RecordEvidence) -> Findings:
    """Integer columns (BOOL to BIGINT, signed and unsigned) hold the stored value."""
    yield from _value_check(ev, INTEGER_KINDS, "integer", _int_same)


@check("value.bit", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (BIT: rpl.cc L1803-1817 "
              "column_int(0) with the warning 'BIT is not currently supported, values are stored as 0')",
       docs_vs_code="docs: the column's data; 24.02 code: always 0 (--option bit=zero)")
def value_bit(ev: RecordEvidence) -> Findings:
    """BIT columns hold the bits as an unsigned integer."""
    yield from _value_check(ev, {Kind.BIT}, "bits", _int_same)


def _float_same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
    if not (is_int(got) or isinstance(got, decimal.Decimal)):
        return False
    x = float(got)
    return bool(x == model or (kind is Kind.FLOAT and to_float32(x) == model))


@check("value.float", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{NOTES} §4 (FLOAT: json_real((double)float); DOUBLE: json_real; jansson prints %.17g, which reads "
              "back as the same double)")
def value_float(ev: RecordEvidence) -> Findings:
    """FLOAT and DOUBLE columns hold numbers that read back as the stored value (FLOAT: as the
    double of the float, or digits that round to it)."""
    yield from _value_check(ev, {Kind.FLOAT, Kind.DOUBLE}, "number", _float_same)


def _decimal_same(double: bool) -> Any:
    def same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
        if not (is_int(got) or isinstance(got, decimal.Decimal)):
            return False
        if double:  # decimal=double: the nearest double of the stored value
            return float(got) == float(model)
        return bool(decimal.Decimal(got) == model)

    return same


@check("value.decimal", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (DECIMAL: unpack_decimal_field "
              "into a double, printed %.17g: 1.15 -> 1.1499999999999999)",
       docs_vs_code="docs: the column's data; 24.02 code: DECIMAL as a JSON float, digits lost "
                    "(--option decimal=double)")
def value_decimal(ev: RecordEvidence) -> Findings:
    """DECIMAL columns hold a JSON number equal to the stored decimal, every digit kept."""
    yield from _value_check(ev, {Kind.DECIMAL}, "decimal", _decimal_same(ev.o.decimal_double))


_STRING_KINDS = frozenset({Kind.CHAR, Kind.VARCHAR, Kind.TINYTEXT, Kind.TEXT, Kind.MEDIUMTEXT, Kind.LONGTEXT,
                           Kind.BINARY, Kind.VARBINARY, Kind.TINYBLOB, Kind.BLOB, Kind.MEDIUMBLOB, Kind.LONGBLOB,
                           Kind.JSON})


def _string_same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
    if not isinstance(got, str):
        return False
    if got == want:
        return True
    # BINARY(n): the row image drops the zero padding, but a tool that keeps it is not wrong.
    return kind is Kind.BINARY and isinstance(model, bytes) and got == spec.bytes_text(model)


def _is_empty_blob(ev: RecordEvidence, name: str) -> bool:
    """The row's column `name` is a TEXT/BLOB holding nothing (a JSON document is never empty)."""
    row = _row(ev)
    if row is None:
        return False
    src = next((c.source for c in reversed(row.schema.columns) if c.name == name), None)
    return src is not None and src.type.kind in spec.BLOB_PATH and row.image.get(src.name) in ("", b"")


@check("value.string", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{NOTES} §4 (CHAR/VARCHAR/TEXT/BLOB/BINARY/JSON: the stored bytes, no transcoding; BINARY without the "
              "zero padding the row image drops; JSON as its text), §4.1 (bytes that are not UTF-8 as lowercase hex, "
              "24.08+ / MXS-5246; the avrorouter's [test] cdc_datatypes oracle)",
       docs_vs_code="24.02 drops a string column whose bytes are not UTF-8, or writes malformed JSON for such bytes; "
                    "24.08+/develop write lowercase hex, which the suite follows")
def value_string(ev: RecordEvidence) -> Findings:
    """String and binary columns hold their bytes: UTF-8 as text, anything else as lowercase hex."""
    row = _row(ev)
    if row is None:
        yield NotApplicable(NO_SOURCE_ROW if _dml(ev) is not None else "no DML event")
        return
    for f in _value_check(ev, _STRING_KINDS, "string", _string_same):
        if isinstance(f, Failure) and f.location.column is not None and _is_empty_blob(ev, f.location.column):
            continue  # value.empty-blob judges those
        yield f


@check("value.empty-blob", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (empty BLOB/TEXT: rpl.cc "
              "L1862-1866 column_bytes(&nullvalue, 1))",
       docs_vs_code="docs: the column's data, an empty string; 24.02 code: \"\\u0000\", one NUL character "
                    "(--option empty-blob=nul)")
def value_empty_blob(ev: RecordEvidence) -> Findings:
    """An empty TEXT, BLOB or JSON value is the empty string."""
    row = _row(ev)
    if row is None:
        yield NotApplicable(NO_SOURCE_ROW if _dml(ev) is not None else "no DML event")
        return
    d = _dml(ev) or {}
    want_text = "\x00" if ev.o.empty_blob_nul else ""
    seen = False
    for c in row.schema.columns:
        if c.name in d and _is_empty_blob(ev, c.name) and c is [x for x in row.schema.columns if x.name == c.name][-1]:
            seen = True
            if d[c.name] != want_text:
                yield Failure("an empty TEXT/BLOB value", expected=want_text, actual=brief(d[c.name], 80),
                              location=ev.at(c.name))
    if not seen:
        yield NotApplicable("no empty TEXT/BLOB in this row")


def _enum_same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
    return isinstance(got, str) and got == want


@check("value.enum-set", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (ENUM/SET: unpack_enum + "
              "mxs::bin2hex, UPPERCASE hex of the little-endian index or bitmask: 'b' of ENUM('a','b','c') -> \"02\")",
       docs_vs_code="docs: the column's data (the member, the members joined by commas); 24.02 code: hex of the "
                    "stored index / bitmask (--option enum-set=hex)")
def value_enum_set(ev: RecordEvidence) -> Findings:
    """ENUM columns hold their member, SET columns their members in definition order, comma-separated."""
    yield from _value_check(ev, {Kind.ENUM, Kind.SET}, "member(s)", _enum_same)


def _address_same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
    return isinstance(got, str) and got == want


@check("value.address", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (INET4, INET6, UUID: MariaDB's "
              "own types, fixed binary in the row image, not decoded by 24.02)",
       docs_vs_code="docs: the column's data; 24.02 code: INET6/UUID go through column_string as raw bytes (garbled "
                    "or left out); the suite holds encoders to the server's text form")
def value_address(ev: RecordEvidence) -> Findings:
    """INET4, INET6 and UUID columns hold the server's text form (`192.0.2.1`, `::1`, the UUID's 36 characters)."""
    yield from _value_check(ev, {Kind.INET4, Kind.INET6, Kind.UUID}, "text form", _address_same)


# -- temporal --------------------------------------------------------------------------------------------

def _split(text: str) -> tuple[str, str]:
    """(the text before the fraction, the fraction's digits)."""
    head, dot, frac = text.partition(".")
    return head, frac if dot else ""


def _temporal(ev: RecordEvidence, tokens: frozenset[str]) -> Iterator[tuple[str, Column, Any]]:
    for name, declared, v in _columns(ev):
        if declared is not None and declared.real_type is not None and declared.real_type.lower() in tokens \
                and v is not None:
            yield name, declared, v


_PADDED_YEAR = re.compile(r"(-?)(\d{1,4})(-.*)")


def _pad_year(text: str) -> str:
    m = _PADDED_YEAR.fullmatch(text)
    return f"{m.group(1)}{int(m.group(2)):04d}{m.group(3)}" if m is not None else text


def _seven(frac: str, o: spec.CdcOptions) -> str:
    """A fraction as the validator reads it: six digits (odd-seven: 24.02's micro*10 forms too)."""
    if o.odd_seven and len(frac) == 7:
        return frac[:6]
    return frac


def _fraction_ok(frac: str, o: spec.CdcOptions) -> bool:
    return frac == "" or (len(frac) == 6 or (o.odd_seven and len(frac) == 7)) and frac.isdigit()


def _temporal_source(ev: RecordEvidence, kinds: set[Kind], what: str, part: int) -> Findings:
    """With the workload: the text before (part 0) or the digits after (part 1) the fraction's
    point, as expected."""
    seen = False
    for name, kind, _model, want, got in _expected(ev, kinds):
        seen = True
        bad = _null_mismatch(name, want, got, ev) if part == 0 else None
        if bad is not None:
            yield bad
        elif want is not None and isinstance(got, str) and _split(got)[part] != _split(want)[part]:
            yield Failure(f"a {kind.value} value{what}", expected=want, actual=brief(got, 80), location=ev.at(name))
        elif want is not None and not isinstance(got, str) and part == 0:
            yield Failure(f"a {kind.value} value is no string", expected=want, actual=brief(got, 80),
                          location=ev.at(name))
    if not seen:
        yield NotApplicable(f"no {', '.join(sorted(k.value for k in kinds))} value in this row")


@check("value.temporal", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §4 (DATE \"%Y-%m-%d\", DATETIME \"%Y-%m-%d %H:%M:%S\", TIME \"%H:%M:%S\", YEAR \"%Y\": "
              "strings, values a MariaDB server stores: conformance/model/mysql_text.py with server=MARIADB)",
       docs_vs_code="docs: not documented; 24.02 code: strftime's %Y, unpadded (the zero date is 0-00-00, year 5 is "
                    "5-01-01) and YEAR 0 as 1900 (--option temporal-text=strftime)")
def value_temporal(ev: RecordEvidence) -> Findings:
    """DATE, DATETIME, TIME and YEAR values are MariaDB's text forms of storable values (with the
    workload: of the stored value)."""
    if _row(ev) is not None:
        yield from _temporal_source(ev, {Kind.DATE, Kind.DATETIME, Kind.TIME, Kind.YEAR}, "", 0)
        return
    seen = False
    for name, declared, v in _temporal(ev, frozenset({"date", "datetime", "time", "year"})):
        rt = (declared.real_type or "").lower()
        if not isinstance(v, str):
            continue  # value.json-type reports it
        seen = True
        head, frac = _split(v)
        text = head + ("." + _seven(frac, ev.o)[:6] if frac else "")
        if ev.o.strftime_text and rt in ("date", "datetime"):
            text = _pad_year(text)
        if rt == "date":
            res: Any = mysql_text.parse_date(text)
        elif rt == "datetime":
            res = mysql_text.parse_datetime(text)
        elif rt == "time":
            res = mysql_text.parse_time(text, server=mysql_text.MARIADB)
        else:
            res = mysql_text.parse_year(text) if not (ev.o.strftime_text and text == "1900") else 1900
        if isinstance(res, mysql_text.Invalid):
            yield Failure(f"a {declared.real_type} value MariaDB cannot store: {res.reason}", expected=f"a {rt} text",
                          actual=v, location=ev.at(name))
    if not seen:
        yield NotApplicable("no DATE, DATETIME, TIME or YEAR value (with a known type) in this message")


@check("value.timestamp", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §4 (TIMESTAMP: localtime_r() in MaxScale's process time zone, \"%Y-%m-%d %H:%M:%S\"; the zero "
              "value as 0-00-00 00:00:00), real_type TIMESTAMP_ (§2.2); mysql_text.check_timestamp with server=MARIADB",
       docs_vs_code="docs: not documented; code: rendered in MaxScale's own time zone, not the server's session zone "
                    "(--option time-zone=<MaxScale's TZ>)")
def value_timestamp(ev: RecordEvidence) -> Findings:
    """TIMESTAMP values are the stored instant rendered in MaxScale's time zone (`time-zone`);
    without the workload, an instant MariaDB can store, in some zone."""
    if _row(ev) is not None:
        yield from _temporal_source(ev, {Kind.TIMESTAMP}, f" rendered in {ev.o.time_zone}", 0)
        return
    seen = False
    for name, _declared, v in _temporal(ev, frozenset({"timestamp_"})):
        if not isinstance(v, str):
            continue
        seen = True
        head, frac = _split(v)
        if head in ("0-00-00 00:00:00", "0000-00-00 00:00:00"):
            continue
        text = head + ("." + _seven(frac, ev.o)[:6] if frac else "")
        res = mysql_text.parse_timestamp(text, server=mysql_text.MARIADB)
        if isinstance(res, mysql_text.Invalid):
            yield Failure(f"a TIMESTAMP value MariaDB cannot store: {res.reason}", expected="an instant's text",
                          actual=v, location=ev.at(name))
    if not seen:
        yield NotApplicable("no TIMESTAMP value (with a known type) in this message")


@check("value.fraction", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §4 (DATETIME(n), TIMESTAMP(n), TIME(n) with n > 0: \".%06d\", always six digits, even when "
              "the fraction is 0; none for n = 0)",
       docs_vs_code="docs: not documented; 24.02 code: odd precisions n = 1, 3, 5 print the fraction times ten, "
                    "seven digits (DATETIME(3) .123 -> .1230000; --option fraction-digits=odd-seven)")
def value_fraction(ev: RecordEvidence) -> Findings:
    """Fractional seconds are six digits whenever the column has a fraction (with the workload:
    exactly the stored fraction, none when the column has none)."""
    if _row(ev) is not None:
        yield from _temporal_source(ev, {Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME}, "'s fraction", 1)
        return
    seen = False
    for name, _declared, v in _temporal(ev, frozenset({"datetime", "timestamp_", "time"})):
        if not isinstance(v, str):
            continue
        seen = True
        if not _fraction_ok(_split(v)[1], ev.o):
            yield Failure("a fraction that is not six digits", expected=".ffffff", actual=v, location=ev.at(name))
    if not seen:
        yield NotApplicable("no DATETIME, TIMESTAMP or TIME value (with a known type) in this message")


# == stream rules ==========================================================================================

def _single_partition(ev: StreamEvidence) -> PartitionLog | NotApplicable:
    used = ev.used
    if not used:
        return NotApplicable("no message in the topic")
    if len(used) > 1:
        return NotApplicable(f"messages in {len(used)} partitions: MaxScale leaves the partition to librdkafka, which "
                             "hashes each message's own key, so a topic of several partitions has no order to judge "
                             f"(use a 1-partition topic, as MaxScale's tests do: {NOTES} §1)")
    return used[0]


def _firsts(lg: PartitionLog) -> list[Entry]:
    return [e for e in lg.entries if not e.duplicate]


@check("stream.schema-before-dml", level=Level.MUST, scope=Scope.STREAM,
       needs_options={"send_schema": "true"},
       clause=f"{SEED} §Overview (DML events follow the format specified in the DDL event; send_schema default "
              f"true); {NOTES} §5.1 (a table is announced on CREATE, or on discovery before its first row), §8.4 "
              "([test] the schema event precedes the first DML of a new table)")
def schema_before_dml(ev: StreamEvidence) -> Findings:
    """Every DML event's table was announced by a schema event earlier in the topic (judged where
    the log is known from its start)."""
    lg = _single_partition(ev)
    if isinstance(lg, NotApplicable):
        yield lg
        return
    if not ev.from_start(lg):
        yield NotApplicable(f"the log was read from offset {lg.first_offset}: a schema event may sit before it")
        return
    for e in lg.entries:
        if e.kind == "dml" and e.table is not None and e.schema_seen is False:
            yield Failure("a DML event for a table no schema event announced before it", expected="a schema event "
                          f"of {e.table[0]}.{e.table[1]} first", actual=f"{e.event_type} at offset {e.offset}",
                          location=_at(ev, lg, e))
            return


def _at(ev: StreamEvidence, lg: PartitionLog, e: Entry) -> Any:
    from ...checks.registry import Location

    return Location(ev.topic, lg.partition, e.offset, table=f"{e.table[0]}.{e.table[1]}" if e.table else None)


@check("stream.schema-version", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Overview (version: schema version, incremented when the table format changes); {NOTES} §5.1 "
              "(version = ++m_versions[db.table] per schema event: 1 for a new table, +1 on each change)")
def schema_version(ev: StreamEvidence) -> Findings:
    """Each new schema event of a table has the previous version plus one (the first is 1 in a
    log known from its start); a repeat of an announced version is a replay."""
    for lg in ev.used:
        last: dict[tuple[str, str], Entry] = {}
        for e in _firsts(lg):
            if e.kind != "schema" or e.table is None or e.version is None:
                continue
            prev = last.get(e.table)
            want = (prev.version or 0) + 1 if prev is not None else (1 if ev.from_start(lg) else None)
            if want is not None and e.version != want:
                yield Failure(f"version {e.version} after {prev.version if prev else 'none'}", expected=want,
                              actual=e.version, location=_at(ev, lg, e))
            last[e.table] = e


def _dmls(lg: PartitionLog) -> list[Entry]:
    return [e for e in _firsts(lg) if e.kind == "dml" and e.gtid is not None and e.event_number is not None]


@check("stream.update-pairs", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Overview (update_before: the row before an update; update_after: after it); {NOTES} §5 (per "
              "UPDATE row: update_before (n) immediately followed by update_after (n+1)), §6.3 (consumers de-duplicate "
              "on the key: a replay never splits the pair)")
def update_pairs(ev: StreamEvidence) -> Findings:
    """In the de-duplicated stream, every update_before is immediately followed by its update_after
    (same GTID and table, event_number + 1), and every update_after immediately preceded by it."""
    lg = _single_partition(ev)
    if isinstance(lg, NotApplicable):
        yield lg
        return
    rows = _dmls(lg)
    for i, e in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        prev = rows[i - 1] if i else None
        if e.event_type == "update_before":
            if nxt is None:
                if ev.complete:
                    yield Failure("an update_before without its update_after", expected="update_after next",
                                  actual="the end of the log", location=_at(ev, lg, e))
                continue
            if not (nxt.event_type == "update_after" and nxt.gtid == e.gtid and nxt.table == e.table
                    and nxt.event_number == (e.event_number or 0) + 1):
                yield Failure("an update_before not followed by its update_after",
                              expected=f"update_after {e.gtid}:{(e.event_number or 0) + 1}",
                              actual=f"{nxt.event_type} {nxt.gtid}:{nxt.event_number}", location=_at(ev, lg, e))
                return
        elif e.event_type == "update_after":
            if prev is None:
                if ev.from_start(lg):
                    yield Failure("an update_after without its update_before", expected="update_before first",
                                  actual="the start of the log", location=_at(ev, lg, e))
                continue
            if not (prev.event_type == "update_before" and prev.gtid == e.gtid and prev.table == e.table
                    and prev.event_number == (e.event_number or 0) - 1):
                yield Failure("an update_after not preceded by its update_before",
                              expected=f"update_before {e.gtid}:{(e.event_number or 0) - 1}",
                              actual=f"{prev.event_type} {prev.gtid}:{prev.event_number}", location=_at(ev, lg, e))
                return


@check("stream.event-numbers", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Overview (event_number: the sequence number of events inside the transaction starting from "
              f"1); {NOTES} §5 (reset at each GTID, pre-incremented per row image across the transaction's tables; "
              "rows of tables match/exclude leave out still count, leaving gaps)")
def event_numbers(ev: StreamEvidence) -> Findings:
    """Within a GTID the DML events' event_numbers start at 1 and go up by one (with match/exclude:
    go up, gaps allowed)."""
    lg = _single_partition(ev)
    if isinstance(lg, NotApplicable):
        yield lg
        return
    rows = _dmls(lg)
    for i, e in enumerate(rows):
        prev = rows[i - 1] if i else None
        n = e.event_number or 0
        if prev is None or prev.gtid != e.gtid:
            if n != 1 and not ev.o.filtered and (prev is not None or ev.from_start(lg)):
                yield Failure("a transaction's first event_number is not 1", expected=1, actual=n,
                              location=_at(ev, lg, e))
                return
            continue
        p = prev.event_number or 0
        if (n != p + 1) if not ev.o.filtered else (n <= p):
            yield Failure(f"event_number {n} after {p} in {e.gtid}",
                          expected=p + 1 if not ev.o.filtered else f"> {p}", actual=n, location=_at(ev, lg, e))
            return


# == what each source event gives (needs the workload) ====================================================

@check("event.schema-events", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §Overview (DDL events CREATE TABLE, ALTER TABLE are streamed as schema objects); {NOTES} §5.1 "
              "(CREATE, ALTER ADD/DROP/MODIFY/CHANGE, RENAME and discovery announce a version with its GTID; "
              "TRUNCATE, DROP and index changes announce nothing), §2 (none with send_schema=false or for tables "
              "match/exclude leave out)")
def event_schema_events(ev: EventEvidence) -> Findings:
    """A source event gives exactly the schema events MaxScale sends for it: table, version, GTID and
    columns."""
    got = [r for r in ev.records if r.msg.kind == "schema"]
    want = [p for p in ev.sent if isinstance(p, SchemaEvent)]
    g = [(r.msg.table, r.msg.version, str(r.msg.gtid), [(c.name, c.avro) for c in r.msg.columns()]) for r in got]
    w = [((p.database, p.table), p.version, str(p.gtid), [(c.name, c.avro) for c in p.columns]) for p in want]
    if g != w:
        yield Failure(f"{len(got)} schema event(s) where {len(want)} were due", expected=brief(w, 300),
                      actual=brief(g, 300), location=got[0].at() if got else None)


@check("event.rows", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §Overview (DML events INSERT, UPDATE, DELETE: one per row, update_before and update_after for "
              f"an UPDATE); {NOTES} §3 (produced per row, in binlog order), §5 (the transaction's GTID on every row)")
def event_rows(ev: EventEvidence) -> Findings:
    """A transaction gives one DML event per row image, in order: its GTID, event_type and table
    (two for an UPDATE: before, then after)."""
    got = [(r.msg.gtid and str(r.msg.gtid), r.msg.table, r.msg.event_type) for r in ev.records if r.msg.kind == "dml"]
    want = [(str(p.gtid), (p.schema.database, p.schema.table), p.event_type) for p in ev.sent
            if isinstance(p, RowImage)]
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
        yield Failure(f"{len(got)} DML event(s) where {len(want)} were due; the first difference at row {i}",
                      expected=brief(want[i] if i < len(want) else None, 200),
                      actual=brief(got[i] if i < len(got) else None, 200))


@check("event.numbering", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §Overview (event_number: sequence number of events inside the transaction starting from 1); "
              f"{NOTES} §5 (the numbering counts the rows of tables match/exclude leave out: the Rpl object is made "
              "without match/exclude, kafkacdc.cc L263)")
def event_numbering(ev: EventEvidence) -> Findings:
    """The DML events' event_numbers are MaxScale's: counted over every row image of the
    transaction, those of filtered tables included."""
    got = [r.msg.event_number for r in ev.records if r.msg.kind == "dml"]
    want = [p.event_number for p in ev.sent if isinstance(p, RowImage)]
    if not want and not got:
        yield NotApplicable("no DML event")
        return
    if len(got) != len(want):
        yield NotApplicable("the rows differ (event.rows)")
        return
    if got != want:
        yield Failure("event numbers", expected=want, actual=got)


@check("event.filter", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §match, §exclude (the pattern is matched against the database and table name separated by a "
              f"period); {NOTES} §7 (PCRE2, unanchored search, case-sensitive, on the sanitized `db.table`; "
              "[test] match=cat exclude=bob passes cat, not bob or bobcat)")
def event_filter(ev: EventEvidence) -> Findings:
    """Exactly the tables that match/exclude let through have messages: `match` found somewhere in
    `db.table` (unanchored, case-sensitive) and `exclude` found nowhere."""
    sent_tables = {r.msg.table for r in ev.records if r.msg.table is not None}
    passing = {(p.database, p.table) if isinstance(p, SchemaEvent) else (p.schema.database, p.schema.table)
               for p in ev.planned if p.sent}
    filtered = {(p.database, p.table) if isinstance(p, SchemaEvent) else (p.schema.database, p.schema.table)
                for p in ev.planned if not p.sent and (isinstance(p, RowImage) or ev.o.send_schema)} - passing
    leaked = sorted(t for t in sent_tables if t in filtered)
    if leaked:
        yield Failure("messages for a table match/exclude leave out", expected="none",
                      actual=[f"{a}.{b}" for a, b in leaked], location=None)
    rows = {(p.schema.database, p.schema.table) for p in ev.planned if isinstance(p, RowImage) and p.sent}
    missing = sorted(t for t in rows if t not in sent_tables)
    if missing:
        yield Failure("no message for a table match/exclude let through", expected=[f"{a}.{b}" for a, b in missing],
                      actual=[f"{a}.{b}" for a, b in sorted(sent_tables)])
