"""The TiCDC Simple checks.

Every check has a stable id, a level, the clause it enforces, and a mutant in `mutants.py`
that it catches (the project's tests assert both). Checks read `RecordEvidence` (one Kafka
record and the schema a consumer would resolve for it), `EventEvidence` (one source event
and its records; only when the workload is known) or `StreamEvidence` (one topic: every
partition's log). Without the workload (a capture), checks judge a record against the
schema the stream itself announced (a DDL or BOOTSTRAP seen earlier) and say
`not-applicable` where nothing can decide.

Where seed 002 (the published protocol) and pingcap/tiflow disagree (notes §5), the check
follows the code, says so in `docs_vs_code`, and a profile switch selects the docs where
both readings are plausible.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...checks.delivery import Anomaly
from ...checks.registry import CheckRegistry, Failure, Level, NotApplicable, Scope
from ...model import mysql_text
from ...model.events import Ddl, Op, Transaction, Watermark, tso_physical_ms
from ...model.values import Json, go_format_float, parse_vector, to_float32
from ..kit import Findings, brief
from . import spec
from .checker import Entry, EventEvidence, PartitionLog, RecordEvidence, SourceRow, StreamEvidence
from .decoder import DML_TYPES, TIMESTAMP, UNSIGNED_BIGINT, Message, decode, render, table_schema_of
from .spec import Family

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)
NOTES = "spec/notes/ticdc.md"
SEED = "seed 002 (TiCDC Simple protocol)"

# TiCDC's bootstrap worker looks at its tables every 5 s (bootstraper.go); a second of slack
# on top for the time between encoding and the Kafka write.
BOOTSTRAP_CHECK_PERIOD_MS = 5000
BOOTSTRAP_SLACK_MS = 1000

# buildTs is `time.Now().UnixMilli()`: between 2015 and 2100 whatever the machine.
BUILD_TS_RANGE = (1_420_070_400_000, 4_102_444_800_000)
# TSO physical time and the TiCDC server's clock may differ a little.
CLOCK_SKEW_MS = 300_000


def _hex(b: bytes | None, n: int = 24) -> str:
    if b is None:
        return "null"
    return "0x" + b[:n].hex() + ("…" if len(b) > n else "")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _dicts(v: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list (columns, indexes): anything else in the list, or a field that
    is not a list at all, is left out here; the table-schema check reports it."""
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _strings(v: Any) -> list[str] | None:
    """A JSON list of strings (index columns, enum elements), or None if it is not one."""
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return v
    return None


def _ok(ev: RecordEvidence) -> Message | None:
    return ev.msg if ev.msg.ok else None


def _dml(ev: RecordEvidence) -> Message | None:
    return ev.msg if ev.msg.ok and ev.msg.kind == "DML" else None


def kind_key(ev: RecordEvidence) -> tuple[bool, str | None, bool]:
    """What decides the checks of one kind of message (their gate is worked out once per key)."""
    return ev.msg.ok, ev.msg.kind, ev.msg.avro


def _kind_gate(reason: str, applies: Callable[[Message], bool]) -> tuple[Any, Any]:
    """`gate=` for a check that has nothing to judge unless `applies` to the message: the
    NotApplicable it answers is the check's own."""
    na = NotApplicable(reason)
    return kind_key, lambda ev: None if applies(ev.msg) else na


def _is_kind(kind: str) -> Callable[[Message], bool]:
    return lambda m: m.ok and m.kind == kind


# == transport and framing ==============================================================

@check("kafka.key-null", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §2.1, §4.13 (simple/encoder.go:53-61: every message has a null key)")
def key_null(ev: RecordEvidence) -> Failure | None:
    """Every Simple message has a null Kafka key (DML included: dispatch is by table)."""
    if ev.record.key is not None:
        return Failure("the Kafka key is set", expected=None, actual=_hex(ev.record.key), location=ev.at())
    return None


@check("message.decodes", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Message format; {NOTES} §2.1 (compression applies to every message), §2.2 (JSON), "
              "§2.3 (Avro: the top-level union of message.json, leading 0x16)",
       docs_vs_code="docs: the Java example (schema.avsc, SimpleAvroConsumerExample) reads `type`/`commitTs` at the "
                    "top level with a schema lacking Timestamp, UnsignedBigint and MessageType; code: every payload "
                    "is Message{type, payload} as branch 11 of message.json's union (first byte 0x16)")
def message_decodes(ev: RecordEvidence) -> Failure | None:
    """The value decompresses per `large-message-handle-compression` and decodes: a JSON object,
    or one Avro datum of message.json's top-level union (first byte 0x16), nothing left over."""
    if ev.msg.ok:
        return None
    o = ev.o
    form = "Avro (message.json)" if o.avro else "JSON"
    return Failure(f"the value does not decode: {ev.msg.error}",
                   expected=f"{form}" + (f", {o.compression}-compressed" if o.compression != "none" else ""),
                   actual=_hex(ev.record.value), location=ev.at(),
                   hint="check encoding-format and large-message-handle-compression against the changefeed's")


@check("message.version", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Message format (version); {NOTES} §2.2 (`version` is always 1)")
def message_version(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`version` is 1 in every message."""
    m = _ok(ev)
    if m is None:
        return NotApplicable("undecodable")
    v = m.get("version")
    if not (_is_int(v) and v == spec.VERSION):
        return Failure(f"version is {v!r}", expected=spec.VERSION, actual=v, location=ev.at("version"))
    return None


KNOWN_TYPES = frozenset({"WATERMARK", "BOOTSTRAP", *spec.DDL_TYPES, *DML_TYPES})


@check("message.type", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Message types (DDL: CREATE, RENAME, CINDEX, DINDEX, ERASE, TRUNCATE, ALTER, QUERY; DML: "
              f"INSERT, UPDATE, DELETE; WATERMARK; BOOTSTRAP); {NOTES} §2.2, §2.3 (Avro: Message.type names "
              "the payload's branch)")
def message_type(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`type` is one the protocol defines, and (Avro) Message.type matches the payload's record."""
    m = _ok(ev)
    if m is None:
        return NotApplicable("undecodable")
    t = m.get("type") if not m.avro else m.type
    if not isinstance(t, str) or t not in KNOWN_TYPES:
        return Failure(f"unknown message type {t!r}", expected=sorted(KNOWN_TYPES), actual=t, location=ev.at("type"))
    if m.avro and m.branch is not None and m.branch != m.kind:
        return Failure(f"Message.type is {m.kind} but the payload is a {m.branch} record",
                       expected=m.branch, actual=m.kind, location=ev.at("type"))
    return None


@check("message.build-ts", level=Level.SHOULD, scope=Scope.RECORD,
       clause=f"{SEED} §Message format (buildTs: when the message was built, ms); {NOTES} §2.2 "
              "(time.Now().UnixMilli())")
def build_ts(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`buildTs` is the wall-clock time in milliseconds, not before the commit it carries."""
    m = _ok(ev)
    if m is None:
        return NotApplicable("undecodable")
    b = m.get("buildTs")
    lo, hi = BUILD_TS_RANGE
    if not _is_int(b) or not lo <= b <= hi:
        return Failure(f"buildTs {b!r} is not a Unix time in milliseconds", expected="ms since 1970 (2015..2100)",
                       actual=b, location=ev.at("buildTs"))
    ts = m.get("commitTs")
    if _is_int(ts) and ts > 0 and b < tso_physical_ms(ts) - CLOCK_SKEW_MS:
        return Failure("buildTs is before the commit the message carries",
                       expected=f">= {tso_physical_ms(ts)} (commitTs physical time, ms)", actual=b,
                       location=ev.at("buildTs"))
    return None


# Fields of each kind in the JSON form: (required, allowed). Avro's schema fixes them.
_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "WATERMARK": (frozenset({"version", "type", "commitTs", "buildTs"}), frozenset()),
    "BOOTSTRAP": (frozenset({"version", "type", "commitTs", "buildTs", "tableSchema"}), frozenset()),
    "DDL": (frozenset({"version", "type", "sql", "commitTs", "buildTs"}), frozenset({"tableSchema", "preTableSchema"})),
    "DML": (frozenset({"version", "database", "table", "tableID", "type", "commitTs", "buildTs", "schemaVersion"}),
            frozenset({"claimCheckLocation", "handleKeyOnly", "checksum", "data", "old"})),
}
# The Go type of each integer field (message.go `message`): int / int64 / uint64. Negative
# values are refused for all of them (ids and timestamps are never negative).
_INT_FIELDS = {"version": 63, "tableID": 63, "commitTs": 64, "buildTs": 63, "schemaVersion": 64}


@check("message.fields", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Message format; {NOTES} §2.2 (Go struct with omitempty: which fields each message has)")
def message_fields(ev: RecordEvidence) -> Findings:
    """Each kind of message has exactly its fields (JSON; Avro's schema fixes them), of the
    right JSON types: integers for ids and timestamps, strings for names."""
    m = _ok(ev)
    if m is None or m.kind not in _FIELDS:
        yield NotApplicable("undecodable or unknown type")
        return
    if not m.avro:
        required, optional = _FIELDS[m.kind]
        missing = sorted(required - m.present)
        extra = sorted(m.present - required - optional)
        if missing:
            yield Failure(f"{m.kind} message without {', '.join(missing)}", expected=sorted(required),
                          actual=sorted(m.present), location=ev.at(missing[0]))
        if extra:
            yield Failure(f"{m.kind} message with fields it must not have: {', '.join(extra)}",
                          expected=sorted(required | optional), actual=sorted(m.present), location=ev.at(extra[0]))
    for f, bits in _INT_FIELDS.items():
        v = m.get(f)
        if f in m.present and not (_is_int(v) and 0 <= v < 1 << bits):
            yield Failure(f"{f} is {brief(v, 60)}, not a non-negative integer of {bits} bits", expected="integer",
                          actual=v, location=ev.at(f))
    for f in ("database", "table", "sql"):
        if f in m.present and not isinstance(m.get(f), str):
            yield Failure(f"{f} is not a string", expected="string", actual=m.get(f), location=ev.at(f))


# == BOOTSTRAP, DDL, WATERMARK ==========================================================

@check("bootstrap.fields", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a BOOTSTRAP", _is_kind("BOOTSTRAP")),
       clause=f"{SEED} §BOOTSTRAP (commitTs 0, tableSchema, no sql); {NOTES} §2.2 (message.go:513-522)")
def bootstrap_fields(ev: RecordEvidence) -> Findings:
    """A BOOTSTRAP carries the table's schema, commitTs 0 and no SQL."""
    m = _ok(ev)
    if m is None or m.kind != "BOOTSTRAP":
        yield NotApplicable("not a BOOTSTRAP")
        return
    if not m.avro and m.get("commitTs") != 0:
        yield Failure("BOOTSTRAP commitTs is not 0", expected=0, actual=m.get("commitTs"), location=ev.at("commitTs"))
    if "sql" in m.present:
        yield Failure("BOOTSTRAP has sql", expected="no sql", actual=m.get("sql"), location=ev.at("sql"))
    if table_schema_of(m) is None:
        yield Failure("BOOTSTRAP without tableSchema", expected="tableSchema", actual=None,
                      location=ev.at("tableSchema"))


# DDL types on one existing table: TiCDC's event has both TableInfo and PreTableInfo. ERASE
# too: the DROP TABLE job's binlog holds the dropped table (spec.ddl_schema_tables).
_TABLE_CHANGING = frozenset({"ALTER", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "ERASE"})


@check("ddl.fields", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a DDL", _is_kind("DDL")),
       clause=f"{SEED} §DDL (sql, tableSchema; preTableSchema for every type but CREATE); {NOTES} §2.2 "
              "(message.go:524-547 newDDLMessage: tableSchema when the event's TableInfo has table info, "
              "preTableSchema when its PreTableInfo has; cdc/entry/schema_storage.go buildDDLEvents: an ERASE "
              "(DROP TABLE) has the dropped table in both)")
def ddl_fields(ev: RecordEvidence) -> Findings:
    """A DDL carries its SQL and type, the table's schema after it, and the schema before it
    (not for CREATE; ERASE carries the dropped table in both); with the workload, all of them
    equal the source DDL's."""
    m = _ok(ev)
    if m is None or m.kind != "DDL":
        yield NotApplicable("not a DDL")
        return
    sql = m.get("sql")
    if not isinstance(sql, str) or not sql.strip():
        yield Failure("DDL without SQL", expected="the DDL statement", actual=sql, location=ev.at("sql"))
    has_ts = table_schema_of(m) is not None
    has_pre = table_schema_of(m, "preTableSchema") is not None
    if m.type == "CREATE" and has_pre:
        yield Failure("CREATE with a preTableSchema", expected="no preTableSchema", actual="present",
                      location=ev.at("preTableSchema"))
    d = ev.source
    if isinstance(d, Ddl):
        want_type = spec.ddl_type(d.kind)
        if m.type != want_type:
            yield Failure(f"DDL type {m.type!r} for {d.kind.value}", expected=want_type, actual=m.type,
                          location=ev.at("type"))
        if isinstance(sql, str) and sql != d.sql:
            yield Failure("sql is not the DDL's statement", expected=d.sql, actual=sql, location=ev.at("sql"))
        table, pre = spec.ddl_schema_tables(d)
        if has_ts != (table is not None):
            yield Failure("tableSchema " + ("missing" if table is not None else "present without a table"),
                          expected=table is not None, actual=has_ts, location=ev.at("tableSchema"))
        want_pre = pre is not None
        if has_pre != want_pre:
            yield Failure("preTableSchema " + ("missing" if want_pre else "present"), expected=want_pre,
                          actual=has_pre, location=ev.at("preTableSchema"))
    elif m.type in _TABLE_CHANGING and not (has_ts and has_pre):
        yield Failure(f"{m.type} without " + ("tableSchema" if not has_ts else "preTableSchema"),
                      expected="tableSchema and preTableSchema", actual="missing",
                      location=ev.at("preTableSchema" if has_ts else "tableSchema"))


@check("watermark.fields", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a WATERMARK", _is_kind("WATERMARK")),
       clause=f"{SEED} §WATERMARK; {NOTES} §2.2 (message.go:504-511: commitTs = the checkpoint ts)")
def watermark_fields(ev: RecordEvidence) -> Findings:
    """A WATERMARK carries the checkpoint ts as commitTs (with the workload: the source's)."""
    m = _ok(ev)
    if m is None or m.kind != "WATERMARK":
        yield NotApplicable("not a WATERMARK")
        return
    ts = m.get("commitTs")
    if not (_is_int(ts) and ts > 0):
        yield Failure("WATERMARK without a commitTs", expected="the checkpoint ts", actual=ts,
                      location=ev.at("commitTs"))
    if isinstance(ev.source, Watermark) and ts != ev.source.ts:
        yield Failure("WATERMARK commitTs is not the checkpoint ts", expected=ev.source.ts, actual=ts,
                      location=ev.at("commitTs"))


# == DML ================================================================================

def _row_maps(m: Message) -> list[tuple[str, dict[str, Any]]]:
    return [(k, m.get(k)) for k in ("data", "old") if isinstance(m.get(k), dict)]


@check("dml.fields", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a DML", _is_kind("DML")),
       clause=f"{SEED} §DML (INSERT: data; UPDATE: data and old; DELETE: old); {NOTES} §2.2 (database, table, "
              "tableID, schemaVersion = the table's UpdateTS)")
def dml_fields(ev: RecordEvidence) -> Findings:
    """INSERT has only `data`, UPDATE `data` and `old`, DELETE only `old`; with the workload,
    database, table, tableID, schemaVersion and type are the source row's."""
    m = _dml(ev)
    if m is None:
        yield NotApplicable("not a DML")
        return
    want = {"INSERT": ("data",), "UPDATE": ("data", "old"), "DELETE": ("old",)}.get(str(m.type))
    if want is None:
        yield NotApplicable("unknown DML type")
        return
    have = tuple(k for k, _ in _row_maps(m))
    if have != want:
        yield Failure(f"{m.type} with {' and '.join(have) or 'no row'}", expected=list(want), actual=list(have),
                      location=ev.at(next((k for k in ("data", "old") if (k in want) != (k in have)), "data")))
    s = ev.source
    if isinstance(s, SourceRow):
        t = s.table
        for name, exp in (("database", t.database), ("table", t.name), ("tableID", t.table_id),
                          ("schemaVersion", t.version), ("type", {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE",
                                                                   Op.DELETE: "DELETE"}[s.op]),
                          ("commitTs", s.commit_ts)):
            if m.get(name) != exp:
                yield Failure(f"{name} is not the source row's", expected=exp, actual=m.get(name), location=ev.at(name))


def handle_key_candidates(schema: dict[str, Any]) -> list[list[str]]:
    """The indexes of a tableSchema that can be TiCDC's handle key, in the order it prefers them
    (tiflow cdc/model/schema_storage.go findHandleIndex): the primary index alone if there is one,
    else every unique index of NOT NULL columns, fewest columns first, then TiDB's order.

    A tableSchema cannot say which columns are virtual generated ones (the columns carry no such
    flag, notes §2.2), and TiCDC skips an index over one (IsIndexUnique): the handle key is the
    first candidate whose columns a row event carries (`handle_key_names` with `present`)."""
    # Indexes whose columns are not a list of names cannot name a key (table-schema reports them).
    indexes: list[tuple[dict[str, Any], list[str]]] = []
    for ix in _dicts(schema.get("indexes")):
        cols = _strings(ix.get("columns"))
        if cols is not None:
            indexes.append((ix, cols))
    for ix, cols in indexes:
        if ix.get("primary") is True:
            return [list(cols)]
    candidates = [list(cols) for ix, cols in indexes if ix.get("unique") is True and ix.get("nullable") is False]
    by_name = _columns_by_name(schema)
    out: list[list[str]] = []
    for cols in sorted(candidates, key=len):  # stable: TiDB's order among equals
        out.append(cols)
        if all(isinstance(by_name.get(c), dict) and by_name[c].get("default") is not None for c in cols):
            break  # a column with a default is not generated: TiCDC takes this index if no earlier one
    return out


def handle_key_names(schema: dict[str, Any], present: Any = None) -> list[str] | None:
    """A tableSchema's handle key (TiCDC's HandleKeyFlag, as `Table.handle_index`): the first
    candidate (`handle_key_candidates`) all of whose columns are in `present` (the columns a row
    event carries; None: any)."""
    for cols in handle_key_candidates(schema):
        if present is None or all(c in present for c in cols):
            return cols
    return None


def _primary_columns(schema: dict[str, Any]) -> set[str]:
    return {c for ix in _dicts(schema.get("indexes")) if ix.get("primary") is True
            for c in _strings(ix.get("columns")) or ()}


def _announced_columns_findings(ev: RecordEvidence, m: Message, key_only: bool) -> Findings:
    """dml.columns against the schema the stream announced (a capture). Which columns are
    virtual generated ones a tableSchema does not say (notes §2.2), and TiCDC leaves those out of
    every row (§3.2): a row may lack an announced column, but only one that can be virtual: not
    in the primary key (TiDB refuses a virtual primary-key column) and without a DDL default (a
    generated column has none). UPDATE's data and old hold the same columns."""
    assert ev.schema is not None
    by_name = _columns_by_name(ev.schema)
    maps = _row_maps(m)
    for part, row in maps:
        got = set(row)
        unknown = sorted(got - set(by_name))
        if unknown:
            yield Failure(f"{part} has columns the announced schema does not have", expected=sorted(by_name),
                          actual=sorted(got), location=ev.at(unknown[0]))
            continue
        if key_only:
            candidates = handle_key_candidates(ev.schema)
            if candidates and not any(got == set(c) for c in candidates):
                yield Failure(f"{part} columns are not a handle key of the announced schema (handleKeyOnly)",
                              expected=candidates, actual=sorted(got), location=ev.at(part))
            continue
        missing = set(by_name) - got
        primary = _primary_columns(ev.schema) if missing else set()
        not_virtual = sorted(n for n in missing if n in primary or by_name[n].get("default") is not None)
        if not_virtual:
            yield Failure(f"{part} lacks announced columns that cannot be virtual generated ones (a primary-key "
                          "column, or one with a default)", expected=sorted(by_name), actual=sorted(got),
                          location=ev.at(not_virtual[0]),
                          hint="TiCDC leaves out only virtual generated columns, which have no default and "
                               "are never in a primary key")
    if len(maps) == 2 and set(maps[0][1]) != set(maps[1][1]):
        diff = sorted(set(maps[0][1]) ^ set(maps[1][1]))
        yield Failure("UPDATE data and old hold different columns", expected=sorted(maps[0][1]),
                      actual=sorted(maps[1][1]), location=ev.at(diff[0]))


@check("dml.columns", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a DML", _is_kind("DML")),
       clause=f"{SEED} §DML (data and old hold the whole row); {NOTES} §2.2 (UPDATE old is the full old row), §2.5 "
              "(handleKeyOnly: only the handle-key columns), §3.2 (virtual generated columns are in no row; "
              "tableSchema lists them)")
def dml_columns(ev: RecordEvidence) -> Findings:
    """`data` and `old` hold every stored column of the row, virtual generated ones never (the
    handle key only, with handleKeyOnly), against the source table or else the schema the stream
    announced (where a missing column must be one that can be virtual)."""
    m = _dml(ev)
    if m is None:
        yield NotApplicable("not a DML")
        return
    key_only = m.get("handleKeyOnly") is True
    s = ev.source
    if isinstance(s, SourceRow):
        cols = {c.name for c in (s.table.handle_key_columns() if key_only else s.table.stored_columns)}
        what = "the source table's " + ("handle key" if key_only else "stored columns (virtual ones never)")
        for part, row in _row_maps(m):
            got = set(row)
            if got != cols:
                yield Failure(f"{part} columns are not {what}", expected=sorted(cols), actual=sorted(got),
                              location=ev.at(sorted(got ^ cols)[0]))
        return
    if ev.schema is None:
        yield NotApplicable("no schema known for this DML")
        return
    yield from _announced_columns_findings(ev, m, key_only)


@check("dml.keys-sorted", level=Level.SHOULD, scope=Scope.RECORD,
       gate=_kind_gate("not a JSON DML", lambda m: m.ok and m.kind == "DML" and not m.avro),
       needs_options={"encoding-format": "json"},
       clause=f"{NOTES} §2.2 (data/old are Go maps: encoding/json writes their keys sorted bytewise)")
def dml_keys_sorted(ev: RecordEvidence) -> Findings:
    """JSON `data` and `old` keys are sorted bytewise, as Go's encoding/json writes maps."""
    m = _dml(ev)
    if m is None or m.avro:
        yield NotApplicable("not a JSON DML")
        return
    for part, row in _row_maps(m):
        keys = list(row)
        want = sorted(keys, key=lambda k: k.encode("utf-8"))
        if keys != want:
            yield Failure(f"{part} keys are not sorted", expected=want, actual=keys, location=ev.at(part))


# == table schemas ======================================================================

def _schemas(ev: RecordEvidence) -> list[tuple[str, dict[str, Any]]]:
    m = _ok(ev)
    if m is None or m.kind not in ("DDL", "BOOTSTRAP"):
        return []
    out = []
    for name in ("tableSchema", "preTableSchema"):
        ts = table_schema_of(m, name)
        if ts is not None:
            out.append((name, ts))
    return out


def _source_table_of(ev: RecordEvidence, which: str) -> Any:
    s = ev.source
    if isinstance(s, Ddl):
        table, pre = spec.ddl_schema_tables(s)
        return table if which == "tableSchema" else pre
    return None


_TS_FIELDS = {"schema": str, "table": str, "tableID": int, "version": int, "columns": list, "indexes": list}
_COLUMN_FIELDS = {"name": str, "dataType": dict, "nullable": bool}
_INDEX_FIELDS = {"name": str, "unique": bool, "primary": bool, "nullable": bool, "columns": list}
_DT_FIELDS = {"mysqlType": str, "charset": str, "collate": str}
# dataType fields Go omits when empty (`omitempty` in simple/message.go's dataType): in JSON
# they are absent or of this type and non-empty. Avro's DataType record always has `length`
# and sets the others by type (avro.go newTableSchemaMap), its schema fixing their types.
_DT_OPTIONAL: dict[str, tuple[type, Any]] = {"length": (int, 0), "decimal": (int, 0), "elements": (list, []),
                                             "unsigned": (bool, False), "zerofill": (bool, False)}


_JSON_TYPE = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "an object"}


def _type_ok(v: Any, typ: type) -> bool:
    return isinstance(v, typ) and (typ is bool or not isinstance(v, bool))


def _shape_problems(ts: dict[str, Any], avro: bool, raw_keys: set[str]) -> Iterator[tuple[str, str, Any]]:
    """(field, problem, actual) for every structural problem of one tableSchema. Any JSON may
    stand where an object or a string belongs: nothing here assumes a type it has not checked."""
    want_key, other_key = ("database", "schema") if avro else ("schema", "database")
    if want_key not in raw_keys:
        yield want_key, f"the database is under {other_key!r}, not {want_key!r}" if other_key in raw_keys \
            else f"no {want_key!r}", sorted(raw_keys)
    for f, typ in _TS_FIELDS.items():
        if not _type_ok(ts.get(f), typ) and (f != "schema" or want_key in raw_keys):
            yield f, f"{f} is not {_JSON_TYPE[typ]}", ts.get(f)
    names: list[str] = []
    columns: list[Any] = ts["columns"] if isinstance(ts.get("columns"), list) else []
    for c in columns:
        if not isinstance(c, dict):
            yield "columns", "a column is not an object", c
            continue
        name = str(c.get("name"))
        for f, typ in _COLUMN_FIELDS.items():
            if not _type_ok(c.get(f), typ):
                yield name, f"column field {f} is not {_JSON_TYPE[typ]}", c.get(f)
        if "default" not in c:
            yield name, "column without `default` (null when there is none)", sorted(c)
        if isinstance(c.get("name"), str):
            names.append(c["name"])
        dt: dict[str, Any] = c["dataType"] if isinstance(c.get("dataType"), dict) else {}
        for f, typ in _DT_FIELDS.items():
            if not isinstance(dt.get(f), typ):
                yield name, f"dataType.{f} is not {_JSON_TYPE[typ]}", dt.get(f)
        if isinstance(dt.get("mysqlType"), str) and dt["mysqlType"] not in spec.MYSQL_TYPES:
            yield name, "unknown mysqlType", dt.get("mysqlType")
        if avro:
            continue
        for f, (typ, empty) in _DT_OPTIONAL.items():
            if f not in dt:
                continue
            v = dt[f]
            if not _type_ok(v, typ) or (f == "elements" and _strings(v) is None):
                yield name, f"dataType.{f} is not {'a list of strings' if f == 'elements' else _JSON_TYPE[typ]}", v
            elif v == empty:
                yield name, f"dataType.{f} is present though empty (Go omitempty)", v
            elif typ is int and v < 0 and not (f == "length" and v == -1 and dt.get("mysqlType") == "vector"):
                # A VECTOR of any dimension has TiDB's flen UnspecifiedLength, -1 (spec.length).
                yield name, f"dataType.{f} is negative", v
    if len(set(names)) != len(names):
        yield "columns", "duplicate column names", names
    indexes: list[Any] = ts["indexes"] if isinstance(ts.get("indexes"), list) else []
    for ix in indexes:
        if not isinstance(ix, dict):
            yield "indexes", "an index is not an object", ix
            continue
        for f, typ in _INDEX_FIELDS.items():
            if not _type_ok(ix.get(f), typ):
                yield str(ix.get("name")), f"index field {f} is not {_JSON_TYPE[typ]}", ix.get(f)
        cols = _strings(ix.get("columns"))
        if isinstance(ix.get("columns"), list) and cols is None:
            yield str(ix.get("name")), "index columns are not all names", ix.get("columns")
        unknown = [c for c in cols or () if c not in names]
        if unknown:
            yield str(ix.get("name")), "index on columns the table does not have", unknown


@check("schema.table-schema", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §TableSchema, §Column, §Index; {NOTES} §2.2 (JSON key `schema`), §2.3 (Avro key `database`), "
              "§4.14")
def table_schema_shape(ev: RecordEvidence) -> Findings:
    """Every tableSchema / preTableSchema has its fields with the right types (database under
    `schema` in JSON, `database` in Avro), columns, and indexes over existing columns; with the
    workload, schema, table, tableID and version are the table's."""
    found = _schemas(ev)
    if not found:
        yield NotApplicable("no tableSchema")
        return
    m = ev.msg
    for which, ts in found:
        raw = m.get(which)
        raw = raw[1] if isinstance(raw, tuple) else raw
        for field_, problem, actual in _shape_problems(ts, m.avro, set(raw) if isinstance(raw, dict) else set()):
            yield Failure(f"{which}: {problem}", expected="the TableSchema of the protocol", actual=actual,
                          location=ev.at(f"{which}.{field_}"))
        t = _source_table_of(ev, which)
        if t is not None:
            for f, exp in (("schema", t.database), ("table", t.name), ("tableID", t.table_id),
                           ("version", t.version)):
                if ts.get(f) != exp:
                    yield Failure(f"{which}.{f} is not the table's", expected=exp, actual=ts.get(f),
                                  location=ev.at(f"{which}.{f}"))


def _schema_pairs(ev: RecordEvidence) -> Iterator[tuple[str, dict[str, Any], Any]]:
    """(which, announced tableSchema, source table) for every schema the workload can judge.
    BOOTSTRAP messages come with no source event: they are judged by the DDL-time checks of
    the same table version (same rendering), here by the version the checker recorded."""
    for which, ts in _schemas(ev):
        t = _source_table_of(ev, which)
        if t is None and ev.msg.kind == "BOOTSTRAP":
            t = ev.bootstrap_table
        if t is not None:
            yield which, ts, t


@check("schema.columns", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{NOTES} §2.2 (columns sorted by column ID, not ordinal position; nullable; message.go:310-312)")
def schema_columns(ev: RecordEvidence) -> Findings:
    """tableSchema columns are the table's, in column-ID order, with their nullability."""
    seen = False
    for which, ts, t in _schema_pairs(ev):
        seen = True
        want = [(c.name, c.nullable) for c in t.columns_by_id()]
        got = [(c.get("name"), c.get("nullable")) for c in _dicts(ts.get("columns"))]
        if got != want:
            yield Failure(f"{which} columns are not the table's in column-ID order",
                          expected=[f"{n}{'' if nl else ' NOT NULL'}" for n, nl in want],
                          actual=[f"{n}{'' if nl else ' NOT NULL'}" for n, nl in got], location=ev.at(which))
    if not seen:
        yield NotApplicable("no tableSchema with a known source table")


def _columns_by_name(ts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in _dicts(ts.get("columns")) if isinstance(c.get("name"), str)}


@check("schema.data-type", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §mysqlType; {NOTES} §2.2 (TypeToStr: binary charset makes text->blob, char->binary; "
              "decimal = scale or fsp; unsigned/zerofill), §2.3 (Avro: length always, decimal only for DECIMAL)")
def schema_data_type(ev: RecordEvidence) -> Findings:
    """Each column's dataType is TiDB's: mysqlType, charset, collate, length, decimal, elements,
    unsigned, zerofill."""
    seen = False
    for which, ts, t in _schema_pairs(ev):
        got = _columns_by_name(ts)
        for c in t.columns:
            col = got.get(c.name)
            if col is None:
                continue
            seen = True
            want = spec.data_type_avro(c.type) if ev.msg.avro else spec.data_type_json(c.type)
            if col.get("dataType") != want:
                yield Failure(f"{which} dataType of {c.type.sql()}", expected=want, actual=col.get("dataType"),
                              location=ev.at(c.name))
    if not seen:
        yield NotApplicable("no tableSchema with a known source table")


@check("schema.indexes", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Index; {NOTES} §2.2 (TiDB order; a clustered int primary key is appended last as the "
              "synthetic lower-case `primary`; nullable = any column nullable; message.go:284-306)")
def schema_indexes(ev: RecordEvidence) -> Findings:
    """tableSchema indexes are the table's, including the synthetic `primary` for an int handle."""
    seen = False
    for which, ts, t in _schema_pairs(ev):
        seen = True
        want = spec.indexes(t)
        if ts.get("indexes") != want:
            yield Failure(f"{which} indexes", expected=want, actual=ts.get("indexes"), location=ev.at(which))
    if not seen:
        yield NotApplicable("no tableSchema with a known source table")


@check("schema.default", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Column (default); {NOTES} §2.2 (TiDB's stored default text; BIT default a JSON number, "
              "message.go:148-151), §2.3 (Avro: the raw default string, goavro writing the Go string's bytes: "
              "a BIT default is its binary literal, not UTF-8; avro.go newTableSchemaMap)",
       docs_vs_code="docs: `default` is a string; code: a string, or a number for BIT columns in JSON")
def schema_default(ev: RecordEvidence) -> Findings:
    """Each column's `default` is TiDB's stored default (null when none; a number for BIT in JSON)."""
    seen = False
    for which, ts, t in _schema_pairs(ev):
        got = _columns_by_name(ts)
        for c in t.columns:
            col = got.get(c.name)
            if col is None:
                continue
            seen = True
            want = spec.default_value(c, avro=ev.msg.avro)
            have = col.get("default")
            if have != want or type(have) is not type(want):
                yield Failure(f"{which} default of {c.name}", expected=_show(want), actual=_show(have),
                              location=ev.at(c.name))
    if not seen:
        yield NotApplicable("no tableSchema with a known source table")


# == values =============================================================================

_INT_RANGES = {"tinyint": 8, "smallint": 16, "mediumint": 24, "int": 32, "bigint": 64}
# Zone names whose text is UTC itself: there a TIMESTAMP's range is exact, elsewhere widened
# (mysql_text.check_timestamp).
_UTC_NAMES = frozenset({"UTC", "Etc/UTC"})
_AVRO_BRANCH = {
    Family.INT: "long", Family.YEAR: "long", Family.ENUM: "long", Family.SET: "long", Family.BIT: "long",
    Family.BIGINT_UNSIGNED: UNSIGNED_BIGINT, Family.FLOAT: "float", Family.DOUBLE: "double", Family.BINARY: "bytes",
    Family.TIMESTAMP: TIMESTAMP,
}


def schema_family(dt: dict[str, Any]) -> str | None:
    mt = dt.get("mysqlType")
    fam = spec.MYSQL_TYPE_FAMILY.get(mt) if isinstance(mt, str) else None
    if fam == Family.INT and mt == "bigint" and dt.get("unsigned"):
        return Family.BIGINT_UNSIGNED
    return fam


def _fraction_ok(text: str, fsp: int | None) -> bool:
    frac = text.rsplit(".", 1)[1] if "." in text else ""
    return fsp is None or len(frac) == fsp


def _temporal_fsp(dt: dict[str, Any], avro: bool) -> int | None:
    """A temporal column's fsp; unknown in Avro, whose DataType sets `decimal` only for DECIMAL."""
    return None if avro else _meta(dt, "decimal", avro)


def _meta(dt: dict[str, Any], name: str, avro: bool) -> int | None:
    """An integer dataType field (length, decimal) as TiCDC meant it. JSON omits a zero
    (`omitempty` in simple/message.go's dataType), so there an absent field is 0; Avro's record
    sets `decimal` only for DECIMAL, so there an absent one is unknown. None also when the field
    is malformed: the value checks then do not use it (table-schema reports it)."""
    if dt.get(name) is None:
        return None if avro else 0
    v = dt[name]
    return v if _type_ok(v, int) and v >= 0 else None


# TiDB refuses JSON documents nested deeper than this (pkg/types/json_binary.go maxJSONDepth,
# ErrJSONDocumentTooDeep); deeper text cannot be a JSON column's value.
TIDB_MAX_JSON_DEPTH = 100


def _bracket_depth(text_: str) -> int:
    """How deep [ and { nest in JSON text, outside strings (no parsing, no recursion)."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text_:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest


def _tidb_json_depth(doc: Any) -> int:
    """BinaryJSON.GetElemDepth() - 1: a scalar or an empty container is 0, a container one more
    than its deepest element (computed without recursion)."""
    depth: dict[int, int] = {}
    order: list[Any] = []
    stack = [doc]
    while stack:
        v = stack.pop()
        if isinstance(v, (list, dict)):
            order.append(v)
            stack.extend(v.values() if isinstance(v, dict) else v)
    for v in reversed(order):  # children come after their parent in `order`
        children = list(v.values()) if isinstance(v, dict) else v
        depth[id(v)] = 1 + max(depth[id(x)] if isinstance(x, (list, dict)) else 0 for x in children) \
            if children else 0
    return depth[id(doc)] if isinstance(doc, (list, dict)) else 0


def _decimal_int(v: str, max_digits: int = 20) -> int | None:
    """int(v) for a decimal string that is short enough to be an integer column's value; None
    when it has more digits (Python refuses to convert very long ones)."""
    return int(v) if len(v.lstrip("-")) <= max_digits else None


def format_problem(fam: str, dt: dict[str, Any], v: Any, o: spec.SimpleOptions, avro: bool) -> str | None:
    """Why a JSON-rendered value cannot be a `fam` value of a column with dataType `dt` (capture
    mode). `dt` comes from the stream: its fields are used only when well-typed."""
    if fam == Family.TIMESTAMP:
        if not (isinstance(v, dict) and set(v) == {"location", "value"}):
            return "TIMESTAMP is not an object {location, value}"
        if not isinstance(v["location"], str) or not v["location"]:
            return "TIMESTAMP location is not a time zone name"
        if v["location"] != o.time_zone and o.time_zone != "UTC":
            return f"TIMESTAMP location is not the server time zone {o.time_zone}"
        if not isinstance(v["value"], str):
            return "TIMESTAMP value is not YYYY-MM-DD HH:MM:SS[.f]"
        ts = mysql_text.parse_timestamp(v["value"], server=mysql_text.TIDB, fsp=_temporal_fsp(dt, avro),
                                        utc=v["location"] in _UTC_NAMES)
        return f"TIMESTAMP value: {ts.reason}" if isinstance(ts, mysql_text.Invalid) else None
    if not isinstance(v, str):
        return f"not a JSON string but {type(v).__name__}"
    mt = dt.get("mysqlType")
    unsigned = dt.get("unsigned") is True
    fsp = _temporal_fsp(dt, avro)
    if fam in (Family.INT, Family.BIGINT_UNSIGNED):
        if not re.fullmatch(r"-?\d+", v):
            return "not a decimal integer"
        bits = _INT_RANGES.get(str(mt), 64)
        lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        n = _decimal_int(v)
        if n is None or not lo <= n <= hi:
            return f"outside {mt}{' unsigned' if unsigned else ''} [{lo}, {hi}]"
    elif fam in (Family.FLOAT, Family.DOUBLE):
        if not re.fullmatch(r"-?\d+(\.\d+)?", v):
            return "not 'f'-formatted (no exponent)"
        x = float(v)
        if fam == Family.FLOAT:
            x32 = to_float32(x)  # ±inf when it rounds beyond float32's largest
            if not math.isfinite(x32):
                return "beyond float32's range"
            if go_format_float(x32, 32, "f") != v:
                return "not the shortest rendering of a float32"
        else:
            if not math.isfinite(x):
                return "beyond float64's range"
            if go_format_float(x, 64, "f") != v:
                return "not the shortest rendering of a float64"
    elif fam == Family.DECIMAL:
        if not re.fullmatch(r"-?\d+(\.\d+)?", v):
            return "not a decimal number"
        digits = len(v.lstrip("-").replace(".", "").lstrip("0") or "0")
        precision = _meta(dt, "length", avro)
        if precision and digits > precision:
            return f"more than the column's {precision} digits of precision"
        # The scale is in both encodings: JSON's dataType.decimal, and Avro's DataType sets
        # `decimal` for DECIMAL (avro.go newTableSchemaMap).
        scale = _meta(dt, "decimal", avro)
        if scale is not None and (len(v.split(".")[1]) if "." in v else 0) != scale:
            return f"not {scale} fractional digits (the column's scale)"
    elif fam in (Family.BIT, Family.ENUM, Family.SET, Family.YEAR):
        if not re.fullmatch(r"\d+", v):
            return "not an unsigned decimal integer"
        n = _decimal_int(v)
        if n is None or n >= 1 << 64:
            return "beyond 64 bits"
        width = _meta(dt, "length", avro)
        if fam == Family.BIT and width and n >= 1 << min(width, 64):
            return f"more than {width} bits"
        # JSON omits empty elements; Avro's record sets them for ENUM and SET.
        elements = _strings(dt.get("elements")) if dt.get("elements") is not None else (None if avro else [])
        if fam == Family.ENUM and elements is not None and not 0 <= n <= len(elements):
            return f"not an index into the {len(elements)} elements"
        if fam == Family.SET and elements is not None and n >= 1 << len(elements):
            return f"not a bitmask of the {len(elements)} elements"
        bad_year = mysql_text.check_year(n) if fam == Family.YEAR else None
        if bad_year is not None:
            return bad_year.reason
    elif fam == Family.BINARY:
        try:
            raw = base64.b64decode(v, validate=True)
        except (binascii.Error, ValueError):
            return "not standard base64 with padding"
        width = _meta(dt, "length", avro)
        if mt == "binary" and width is not None and len(raw) != width:
            return f"BINARY({width}) value of {len(raw)} bytes"
    elif fam in (Family.DATE, Family.DATETIME, Family.TIME):
        # What a server can store is one rule for every MySQL-family protocol (any sql_mode: zero
        # dates, zero parts, day 31 pass); printing exactly fsp fraction digits is TiCDC's own.
        parsed = (mysql_text.parse_date(v) if fam == Family.DATE
                  else mysql_text.parse_datetime(v, fsp=fsp) if fam == Family.DATETIME
                  else mysql_text.parse_time(v, server=mysql_text.TIDB, fsp=fsp))
        if isinstance(parsed, mysql_text.Invalid):
            return parsed.reason
        if not _fraction_ok(v, fsp):
            return f"not {fsp} fractional digits (the column's fsp)"
    elif fam == Family.VECTOR:
        try:
            vec = parse_vector(v)
        except ValueError as e:
            return f"not TiDB's vector text ([e1,e2,...], shortest float32 'f' elements): {e}"
        dims = _meta(dt, "length", avro)
        if dims and len(vec) != dims:
            return f"{len(vec)} elements in a VECTOR({dims})"
    elif fam == Family.JSON:
        # Depth first: the text may nest deeper than Python parses (TiDB stops at 100).
        if v.count("[") + v.count("{") > TIDB_MAX_JSON_DEPTH + 1 and _bracket_depth(v) > TIDB_MAX_JSON_DEPTH + 1:
            return f"nested deeper than TiDB's {TIDB_MAX_JSON_DEPTH} levels"
        try:
            doc = json.loads(v)
        except ValueError:
            return "not JSON text"
        if _tidb_json_depth(doc) > TIDB_MAX_JSON_DEPTH:
            return f"nested deeper than TiDB's {TIDB_MAX_JSON_DEPTH} levels"
        if not _has_float(doc) and Json(doc).text() != v:
            # TiDB prints JSON one way: MySQL spacing, object keys sorted (floats aside, whose
            # printing the model does not pin down).
            return "not TiDB's JSON text (MySQL spacing, keys sorted)"
    return None


def _has_float(doc: Any) -> bool:
    if isinstance(doc, float):
        return True
    if isinstance(doc, list):
        return any(_has_float(x) for x in doc)
    if isinstance(doc, dict):
        return any(_has_float(x) for x in doc.values())
    return False


def _branch_problem(fam: str, branch: str, o: spec.SimpleOptions) -> str | None:
    want = "string" if fam == Family.BIT and o.avro_bit_as_string else _AVRO_BRANCH.get(fam, "string")
    return None if branch == want else f"Avro branch {branch}, not {want}"


def _expected_value(fam: str, t: Any, v: Any, o: spec.SimpleOptions, avro: bool) -> Any:
    if not avro:
        return spec.json_value(t, v, o)
    exp = spec.avro_value(t, v, o)
    if exp is not None and exp[0] == "float":
        return ("float", to_float32(exp[1]))
    return exp


def _actual_avro(v: Any) -> Any:
    if isinstance(v, tuple) and v[0] == "null":
        return None
    return v


class _ValueColumns:
    """A DML's columns by type family, worked out once per record for the 19 value checks (and
    their gate): `not_applicable` when no value can be judged; else the source table's columns
    of each family (run mode), or each family's column names with their `dataType` (capture
    mode, from the schema the DML resolves to)."""

    __slots__ = ("not_applicable", "source", "by_family", "data_types", "key")

    def __init__(self, ev: RecordEvidence) -> None:
        self.not_applicable: str | None = None
        self.source: SourceRow | None = None
        self.by_family: dict[str, Any] = {}
        self.data_types: dict[str, Any] = {}
        m = _dml(ev)
        if m is None:
            self.not_applicable = "not a DML"
        elif isinstance(ev.source, SourceRow):
            self.source = ev.source
            for c in ev.source.table.columns:
                self.by_family.setdefault(spec.family(c.type), []).append(c)
        elif ev.schema is not None:
            self.data_types = {name: c.get("dataType") for name, c in _columns_by_name(ev.schema).items()}
            for name, dt in self.data_types.items():
                fam = schema_family(dt) if isinstance(dt, dict) else None
                if fam is not None:
                    self.by_family.setdefault(fam, set()).add(name)
        else:
            self.not_applicable = "no schema known for this DML"
        self.key = (self.not_applicable, self.source is not None, frozenset(self.by_family))


def value_columns(ev: RecordEvidence) -> _ValueColumns:
    got = ev.value_columns
    if got is None:
        got = ev.value_columns = _ValueColumns(ev)
    return got  # type: ignore[no-any-return]


def value_gate_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """What decides whether a value check has anything to judge in a record: the same for
    every record of a table version (the checks' gate is worked out once per key)."""
    return value_columns(ev).key


_NO_COLUMN = {fam: NotApplicable(f"no {fam} column") for fam in Family.ALL}


def _value_gate(fam: str) -> Callable[[RecordEvidence], NotApplicable | None]:
    def gate(ev: RecordEvidence) -> NotApplicable | None:
        vc = value_columns(ev)
        if vc.not_applicable is not None:
            return NotApplicable(vc.not_applicable)
        return None if fam in vc.by_family else _NO_COLUMN[fam]

    return gate


def value_findings(ev: RecordEvidence, fam: str) -> Findings:
    vc = value_columns(ev)
    if vc.not_applicable is not None:
        yield NotApplicable(vc.not_applicable)
        return
    m = _dml(ev)
    assert m is not None
    maps = _row_maps(m)
    s = vc.source
    seen = False
    if s is not None:
        cols = vc.by_family.get(fam, ())
        for part, row in maps:
            src = s.image if part == "data" else s.before
            if src is None:
                continue
            for c in cols:
                if c.name not in row:
                    continue
                seen = True
                got = _actual_avro(row[c.name]) if m.avro else row[c.name]
                want = _expected_value(fam, c.type, src[c.name], ev.o, m.avro)
                if got != want or type(got) is not type(want):
                    yield Failure(f"{part}.{c.name} ({c.type.sql()})", expected=_show(want), actual=_show(got),
                                  location=ev.at(c.name))
    else:
        names = vc.by_family.get(fam, ())
        for part, row in maps:
            for name, value in row.items():
                if name not in names:
                    continue
                dt = vc.data_types[name]
                seen = True
                if m.avro:
                    if value is None or value[0] == "null":
                        continue
                    bp = _branch_problem(fam, value[0], ev.o)
                    if bp:
                        yield Failure(f"{part}.{name} ({dt.get('mysqlType')}): {bp}",
                                      expected=_AVRO_BRANCH.get(fam, "string"), actual=value[0], location=ev.at(name))
                        continue
                    if value[0] == "long" and isinstance(value[1], int) and value[1] < 0 \
                            and fam in (Family.BIT, Family.SET):
                        value = ("long", value[1] + (1 << 64))  # the uint64 written as int64
                    rendered = render(value, str(dt.get("mysqlType")))
                else:
                    rendered = value
                if rendered is None:
                    continue
                problem = format_problem(fam, dt, rendered, ev.o, m.avro)
                if problem:
                    yield Failure(f"{part}.{name} ({dt.get('mysqlType')}): {problem}", expected=fam,
                                  actual=_show(value), location=ev.at(name))
    if not seen:
        yield _NO_COLUMN[fam]


def _show(v: Any) -> Any:
    if isinstance(v, bytes):
        return "0x" + v.hex()
    if isinstance(v, tuple):
        return [v[0], _show(v[1])]
    return v


_VALUE_RULES: dict[str, tuple[str, str | None]] = {
    Family.INT: ("integer types as decimal strings (JSON), long (Avro)", None),
    Family.BIGINT_UNSIGNED: ("BIGINT UNSIGNED as its decimal string, also above 2^63-1 (JSON); the UnsignedBigint "
                             "record with the value wrapped to int64 (Avro)",
                             "docs (mysqlType table): Avro long up to 2^63-1 and string above; code: always the "
                             "UnsignedBigint record {value: long}, wrapping (the v7.6.0 draft behaved like the docs)"),
    Family.FLOAT: ("FLOAT as the shortest float32 text, 'f' format (JSON), float (Avro)", None),
    Family.DOUBLE: ("DOUBLE as the shortest float64 text, 'f' format (JSON), double (Avro)", None),
    Family.DECIMAL: ("DECIMAL as TiDB's text with the column's scale", None),
    Family.BIT: ("BIT as the decimal string of its uint64 (JSON), long (Avro)",
                 "docs: BIT is a long in Avro; tiflow: long; new-architecture TiCDC: a decimal string "
                 "(profile ticdc-next, option avro-bit-as-string)"),
    Family.ENUM: ("ENUM as its 1-based index", None),
    Family.SET: ("SET as its bitmask", None),
    Family.TEXT: ("character strings as the text", None),
    Family.BINARY: ("binary strings as standard base64 with padding (JSON), bytes (Avro)", None),
    Family.DATE: ("DATE as YYYY-MM-DD", None),
    Family.DATETIME: ("DATETIME as YYYY-MM-DD HH:MM:SS[.fsp digits]", None),
    Family.TIMESTAMP: ("TIMESTAMP as the object {location, value} in the server time zone (JSON), the Timestamp "
                       "record (Avro)",
                       "docs (mysqlType table): a string in both encodings; code: an object {location, value} / "
                       "the Timestamp record"),
    Family.TIME: ("TIME as [-]HH:MM:SS[.fsp digits]", None),
    Family.YEAR: ("YEAR as its decimal string", None),
    Family.JSON: ("JSON as TiDB's JSON text", None),
    Family.VECTOR: ("VECTOR as TiDB's vector text [1,2.5] (VectorFloat32.String: shortest float32 'f' elements), "
                    "a string in both encodings", None),
}


def _register_value_check(fam: str) -> None:
    rule, dvc = _VALUE_RULES[fam]

    def fn(ev: RecordEvidence) -> Findings:
        return value_findings(ev, fam)

    fn.__doc__ = f"Values of {fam} columns: {rule}."
    fn.__qualname__ = f"value_{fam.replace('-', '_')}"
    check(f"value.{fam}", level=Level.MUST, scope=Scope.RECORD, docs_vs_code=dvc,
          gate=(value_gate_key, _value_gate(fam)),
          clause=f"{SEED} §mysqlType table; {NOTES} §2.2 (encodeValue, message.go:650-726), §2.3 (Avro values, "
                 "message.go:605-648)")(fn)


for _fam in Family.ALL:
    _register_value_check(_fam)


# == large messages =====================================================================

@check("large-message.size", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a row message", lambda m: not m.ok or m.kind == "DML"),
       clause=f"{NOTES} §2.5 (a message above max-message-bytes is handled per large-message-handle-option; "
              "simple/encoder.go:39-110 compares common.Message.Length() = len(key) + len(value) + "
              "MaxRecordOverhead (36, sarama's record overhead; common/message.go) with max-message-bytes)")
def large_message_size(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """No row message is larger than `max-message-bytes` as TiCDC counts it: key + value + 36
    bytes of Kafka record overhead (DDL, BOOTSTRAP and WATERMARK messages are not subject to
    large-message handling)."""
    if ev.msg.ok and ev.msg.kind != "DML":
        return NotApplicable("not a row message")
    size = spec.message_length(ev.record.key, ev.record.value)
    if size > ev.o.max_message_bytes:
        return Failure(f"a message of {size} bytes as TiCDC counts it (key + value + {spec.MAX_RECORD_OVERHEAD} "
                       "bytes of record overhead)", expected=f"<= max-message-bytes ({ev.o.max_message_bytes})",
                       actual=size, location=ev.at(),
                       hint="large-message-handle-option must shrink it (handle-key-only / claim-check)")
    return None


@check("large-message.handle-key-only", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §2.5 (handle-key-only: data/old re-encoded with the handle-key columns only and "
              "handleKeyOnly true)")
def handle_key_only(ev: RecordEvidence) -> Findings:
    """A DML with handleKeyOnly carries exactly the handle-key columns, and only appears when
    large-message handling is on."""
    m = _dml(ev)
    if m is None or m.get("handleKeyOnly") is None:
        yield NotApplicable("not a handle-key-only DML")
        return
    if m.get("handleKeyOnly") is not True:
        yield Failure("handleKeyOnly is present but not true", expected=True, actual=m.get("handleKeyOnly"),
                      location=ev.at("handleKeyOnly"))
        return
    if ev.o.large_message == "none":
        yield Failure("handleKeyOnly without large-message handling", expected="large-message-handle-option "
                      "handle-key-only or claim-check", actual="none", location=ev.at("handleKeyOnly"))
    s = ev.source
    if isinstance(s, SourceRow):
        candidates = [[c.name for c in s.table.handle_key_columns()]]
        what = "the source table's handle key"
    elif ev.schema is not None:
        # Which candidate TiCDC took depends on which columns are virtual, which the schema does
        # not say (handle_key_candidates): any of them is accepted.
        candidates = handle_key_candidates(ev.schema)
        what = "a handle key of the announced schema"
    else:
        yield NotApplicable("no schema known for this DML")
        return
    for part, row in _row_maps(m):
        if candidates and not any(set(row) == set(c) for c in candidates):
            yield Failure(f"{part} columns are not {what}", expected=candidates if len(candidates) > 1
                          else sorted(candidates[0]), actual=sorted(row), location=ev.at(part))


# claimcheck.NewFileName: uuid.NewString() + ".json", a random (version 4, RFC 4122 variant)
# UUID in Go's lower-case form. Any such name is accepted: the bits are random.
_UUID_JSON = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.json")


@check("large-message.claim-check", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §2.5, §4.17 (claimCheckLocation = storage URI + '/' + <uuid4>.json, also handleKeyOnly; "
              "the file holds {{\"key\": null, \"value\": base64 of the compressed full message}}; "
              "claim_check.go:85-123, NewFileName: uuid.NewString() + \".json\")")
def claim_check(ev: RecordEvidence) -> Findings:
    """A claim-check DML points at `<storage>/<uuid4>.json`, sets handleKeyOnly, and the file
    holds the full message: same table, type and commitTs, every column."""
    m = _dml(ev)
    if m is None or m.get("claimCheckLocation") is None:
        yield NotApplicable("no claimCheckLocation")
        return
    loc = m.get("claimCheckLocation")
    where = ev.at("claimCheckLocation")
    if ev.o.large_message != "claim-check":
        yield Failure("claimCheckLocation without claim-check", expected="large-message-handle-option=claim-check",
                      actual=ev.o.large_message, location=where)
        return
    if m.get("handleKeyOnly") is not True:
        yield Failure("a claim-check message without handleKeyOnly", expected=True, actual=m.get("handleKeyOnly"),
                      location=ev.at("handleKeyOnly"))
    name = loc.rsplit("/", 1)[-1] if isinstance(loc, str) else ""
    if not isinstance(loc, str) or loc != f"{ev.o.claim_check_uri}/{name}" or not _UUID_JSON.fullmatch(name):
        yield Failure("claimCheckLocation is not <claim-check-storage-uri>/<uuid4>.json",
                      expected=f"{ev.o.claim_check_uri}/<uuid4>.json", actual=loc, location=where)
        return
    path = Path(urlsplit(ev.o.claim_check_uri).path) / name
    if ev.o.claim_check_raw:
        # claim-check-raw-value: the file is the compressed message itself (WriteMessage skips the JSON).
        try:
            full_bytes = path.read_bytes()
        except OSError as e:
            yield Failure("the claim-check file cannot be read", expected=str(path),
                          actual=f"{type(e).__name__}: {e}", location=where,
                          hint="claim-check files must be readable where the check runs")
            return
        yield from _claim_check_full(ev, m, full_bytes, where)
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        yield Failure("the claim-check file cannot be read", expected=str(path), actual=f"{type(e).__name__}: {e}",
                      location=where, hint="claim-check files must be readable where the check runs")
        return
    except (ValueError, RecursionError):
        yield Failure("the claim-check file is not JSON", expected='{"key": null, "value": "<base64>"}',
                      actual=path.read_bytes()[:60].decode("latin-1"), location=where)
        return
    if not (isinstance(stored, dict) and set(stored) == {"key", "value"} and stored["key"] is None
            and isinstance(stored["value"], str)):
        yield Failure("the claim-check file is not {key: null, value: base64}", expected=["key", "value"],
                      actual=stored if not isinstance(stored, dict) else sorted(stored), location=where)
        return
    try:
        full_bytes = base64.b64decode(stored["value"], validate=True)
    except (binascii.Error, ValueError):
        yield Failure("the claim-check value is not base64", expected="base64", actual=stored["value"][:40],
                      location=where)
        return
    yield from _claim_check_full(ev, m, full_bytes, where)


def _claim_check_full(ev: RecordEvidence, m: Message, full_bytes: bytes, where: Any) -> Findings:
    """The full message a claim-check file holds: the same DML, not itself a pointer."""
    full = decode(full_bytes, ev.o.compression, ev.o.avro)
    if not full.ok or full.kind != "DML":
        yield Failure("the claim-check value is not a DML message", expected="the full DML",
                      actual=full.error or full.kind, location=where)
        return
    for f in ("database", "table", "type", "commitTs"):
        if full.get(f) != m.get(f):
            yield Failure(f"the stored message's {f} differs", expected=m.get(f), actual=full.get(f), location=where)
    if full.get("handleKeyOnly") is not None or full.get("claimCheckLocation") is not None:
        yield Failure("the stored message is itself a large-message pointer", expected="the full message",
                      actual="handleKeyOnly/claimCheckLocation set", location=where)


# == one source event ===================================================================

@check("event.messages", level=Level.MUST, scope=Scope.EVENT, needs_source=True,
       clause=f"{NOTES} §2.1 (DML to the table's partition; DDL and WATERMARK to every partition), §3.4 (an UPDATE "
              "that changes a primary or unique key becomes DELETE + INSERT)")
def event_messages(ev: EventEvidence) -> Findings:
    """Each transaction gives one DML per row change (key-changing updates split into DELETE +
    INSERT), each table's rows in one partition; each DDL and WATERMARK one message per partition."""
    msgs = [r for r in ev.records if r.msg.ok]
    dml = [r for r in msgs if r.msg.kind == "DML"]
    others = [r for r in msgs if r.msg.kind not in ("DML", "BOOTSTRAP")]
    e = ev.event
    if isinstance(e, Transaction):
        want = [(s.table.qualified_name, {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}[s.op])
                for s in ev.expected_rows]
        got = [(f"{r.msg.get('database')}.{r.msg.get('table')}", str(r.msg.type)) for r in dml]
        if sorted(got) != sorted(want):
            yield Failure(f"the transaction's {len(want)} row changes gave {len(got)} DML messages that differ",
                          expected=want, actual=got, location=dml[0].at() if dml else None)
        parts: dict[str, set[int | None]] = {}
        for r in dml:
            parts.setdefault(f"{r.msg.get('database')}.{r.msg.get('table')}", set()).add(r.record.partition)
        for table, ps in parts.items():
            if len(ps) > 1:
                yield Failure(f"rows of {table} went to several partitions", expected="one partition per table",
                              actual=sorted(p or 0 for p in ps))
        if others:
            yield Failure("a transaction produced non-DML messages", expected="DML (and BOOTSTRAP)",
                          actual=[r.msg.kind for r in others])
    elif isinstance(e, (Ddl, Watermark)):
        kind = "DDL" if isinstance(e, Ddl) else "WATERMARK"
        got_parts = sorted(r.record.partition or 0 for r in others if r.msg.kind == kind)
        want_parts = list(range(ev.partitions))
        if got_parts != want_parts:
            yield Failure(f"the {kind} went to partitions {got_parts}", expected=want_parts, actual=got_parts)
        if dml:
            yield Failure(f"a {kind} produced DML messages", expected=kind, actual=[r.msg.type for r in dml])


# == the stream: consumers, bootstraps, order ===========================================

def _from_start(lg: PartitionLog) -> bool:
    return not lg.entries or lg.entries[0].offset == 0


def _bound_ms(o: spec.SimpleOptions) -> int:
    return int(max(0.0, o.bootstrap_interval_s) * 1000) + BOOTSTRAP_CHECK_PERIOD_MS + BOOTSTRAP_SLACK_MS


def _where(st: StreamEvidence, part: int, e: Entry, what: str = "") -> Any:
    from ...checks.registry import Location

    table = f"{e.table[0]}.{e.table[1]}" if e.table else None
    return Location(st.topic, part, e.offset, table=table, column=what or None)


@check("consumer.schema-known", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Consumer (a DML is decoded with the schema of a DDL or BOOTSTRAP seen before it); {NOTES} "
              "§2.4 (resolved by exact (database, table, schemaVersion)), §2.6")
def schema_known(st: StreamEvidence) -> Findings:
    """Every DML resolves, by (database, table, schemaVersion), to a schema a DDL or BOOTSTRAP
    announced earlier in its partition (or partition 0, when bootstraps go only there). A log
    read from mid-stream may start with DMLs of tables it has not seen yet: those are allowed
    for one bootstrap interval."""
    judged = False
    for part, lg in sorted(st.logs.items()):
        first_bt = next((e.build_ts for e in lg.entries if e.build_ts is not None), None)
        joined = not _from_start(lg)
        bad: list[Entry] = []
        for e in lg.entries:
            if e.kind != "DML" or e.resolvable is None:
                continue
            judged = True
            if e.resolvable:
                continue
            if joined:
                if not st.o.bootstraps_enabled:
                    continue  # no bootstraps: a consumer that joins late is not promised anything
                if first_bt is not None and e.build_ts is not None and e.build_ts - first_bt <= _bound_ms(st.o):
                    continue
            bad.append(e)
        if bad:
            e = bad[0]
            db, table = e.table or (None, None)
            yield Failure(f"partition {part}: a DML of {db}.{table} (schemaVersion {e.version}) before "
                          f"any schema for it" + (f"; {len(bad) - 1} more" if len(bad) > 1 else ""),
                          expected="a DDL or BOOTSTRAP with this (database, table, version) earlier in the partition",
                          actual=f"first undecodable DML at offset {e.offset}", location=_where(st, part, e))
    if not judged:
        yield NotApplicable("no DML")


def _schema_positions(lg: PartitionLog) -> dict[tuple[Any, Any, Any], list[Entry]]:
    out: dict[tuple[Any, Any, Any], list[Entry]] = {}
    for e in lg.entries:
        if e.kind in ("DDL", "BOOTSTRAP") and e.table is not None:
            out.setdefault((e.table[0], e.table[1], e.version), []).append(e)
    return out


def _latest_before(entries: list[Entry], seq: int) -> Entry | None:
    best = None
    for e in entries:
        if e.seq < seq:
            best = e
        else:
            break
    return best


def _bootstrap_sources(st: StreamEvidence, part: int) -> list[PartitionLog]:
    lg = st.logs[part]
    if st.o.bootstrap_all_partitions or part == 0 or 0 not in st.logs:
        return [lg]
    return [lg, st.logs[0]]


def _overdue(st: StreamEvidence, e: Entry, since: Entry | None, rows_since: list[Entry], start_bt: int | None
             ) -> str | None:
    """Why DML `e` came too long after `since` (the last schema message it could use): more than
    one interval (+ the 5 s check period), or count rows and then more than a check period."""
    o = st.o
    ref = since.build_ts if since is not None else start_bt
    if ref is None or e.build_ts is None:
        return None
    if e.build_ts - ref > _bound_ms(o):
        return f"{(e.build_ts - ref) / 1000:.1f} s after it (interval {o.bootstrap_interval_s:g} s + 5 s check period)"
    count = max(1, o.bootstrap_count)  # <= 0 under the docs' rule: due at every check
    if len(rows_since) > count:
        reached = rows_since[count - 1].build_ts
        if reached is not None and e.build_ts - reached > BOOTSTRAP_CHECK_PERIOD_MS + BOOTSTRAP_SLACK_MS:
            return (f"{len(rows_since)} rows after it (send-bootstrap-in-msg-count {o.bootstrap_count}), "
                    f"{(e.build_ts - reached) / 1000:.1f} s after the count was reached")
    return None


def _bootstrap_gaps(st: StreamEvidence, key: Callable[[Entry], Any], sources: Callable[[Entry], bool]
                    ) -> Findings:
    """Shared by join-anywhere and bootstrap.interval: every DML must come within one bootstrap
    interval of the last message (selected by `sources`) with the same `key` that a consumer of
    its partition can read."""
    if not st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are disabled")
        return
    judged = False
    for part in sorted(st.logs):
        logs = _bootstrap_sources(st, part)
        merged = sorted({id(e): e for lg in logs for e in lg.entries}.values(), key=lambda e: e.seq)
        start_bt = None if _from_start(st.logs[part]) else next(
            (e.build_ts for e in st.logs[part].entries if e.build_ts is not None), None)
        mine = {id(e) for e in st.logs[part].entries}
        last: dict[Any, Entry] = {}
        rows: dict[Any, list[Entry]] = {}
        for e in merged:
            if e.kind in ("DDL", "BOOTSTRAP") and sources(e) and e.table is not None:
                last[key(e)] = e
                rows[key(e)] = []
                continue
            if e.kind != "DML" or id(e) not in mine:
                continue
            k = key(e)
            since = last.get(k)
            if since is None and start_bt is None:
                continue  # never announced at all: consumer.schema-known's finding
            judged = True
            rows.setdefault(k, []).append(e)
            why = _overdue(st, e, since, rows[k], start_bt)
            if why:
                yield Failure(f"partition {part}: a DML of {e.table[0] if e.table else '?'}."
                              f"{e.table[1] if e.table else '?'} {why}",
                              expected="a schema message at least once per bootstrap interval",
                              actual=f"last usable one at offset {since.offset if since else 'none (log start)'}",
                              location=_where(st, part, e))
                last[k] = e  # one finding per gap
                rows[k] = []
    if not judged:
        yield NotApplicable("no DML after a schema message")


@check("consumer.join-anywhere", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (a consumer joining at any point learns every table's schema within one bootstrap "
              f"interval); {NOTES} §2.4 (before a table's first DML, then every interval / message count, checked "
              "every 5 s)")
def join_anywhere(st: StreamEvidence) -> Findings:
    """A consumer that starts reading at any offset can decode every DML after at most one
    bootstrap interval: no DML comes more than send-bootstrap-interval-in-sec (+ the 5 s check
    period), or send-bootstrap-in-msg-count rows, after the last message announcing its exact
    (database, table, schemaVersion)."""
    yield from _bootstrap_gaps(st, key=lambda e: (e.table, e.version), sources=lambda e: True)


@check("bootstrap.interval", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (send-bootstrap-interval-in-sec, send-bootstrap-in-msg-count); {NOTES} §2.4 "
              "(OR-condition on time and count, checked every 5 s)")
def bootstrap_interval(st: StreamEvidence) -> Findings:
    """While a table has rows, its BOOTSTRAP is repeated at least every
    send-bootstrap-interval-in-sec seconds and every send-bootstrap-in-msg-count rows (each
    with TiCDC's 5 s check period)."""
    yield from _bootstrap_gaps(st, key=lambda e: e.table_id, sources=lambda e: e.kind == "BOOTSTRAP")


@check("bootstrap.before-first-dml", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP; {NOTES} §2.4, §4.18 (a BOOTSTRAP before the first DML of each table)")
def bootstrap_first(st: StreamEvidence) -> Findings:
    """In a log read from its start, each table's first DML comes after a BOOTSTRAP of that table
    (by tableID) in its partition, or in partition 0 when bootstraps go only there."""
    if not st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are disabled")
        return
    judged = False
    for part in sorted(st.logs):
        if not _from_start(st.logs[part]):
            continue
        logs = _bootstrap_sources(st, part)
        merged = sorted({id(e): e for lg in logs for e in lg.entries}.values(), key=lambda e: e.seq)
        booted: set[Any] = set()
        reported: set[Any] = set()
        mine = {id(e) for e in st.logs[part].entries}
        for e in merged:
            if e.kind == "BOOTSTRAP":
                booted.add(e.table_id)
            elif e.kind == "DML" and id(e) in mine:
                judged = True
                if e.table_id not in booted and e.table_id not in reported:
                    reported.add(e.table_id)
                    yield Failure(f"partition {part}: the first DML of tableID {e.table_id} has no BOOTSTRAP before "
                                  "it", expected="BOOTSTRAP, then DML", actual=f"DML at offset {e.offset}",
                                  location=_where(st, part, e))
    if not judged:
        yield NotApplicable("no DML in a log read from its start")


def _covered(st: StreamEvidence, ts_of: Callable[[Entry], int | None]) -> tuple[int, int]:
    """The range of a ts that every partition's log covers for sure: captures may start and stop
    anywhere, and several messages share a ts at the cut (so the cut's own ts is left out)."""
    lo, hi = 0, 1 << 64
    for p in st.partitions:
        lg = st.logs.get(p)
        vals = [v for v in (ts_of(e) for e in lg.entries) if v is not None] if lg else []
        if not vals:
            return 1, 0
        if not _from_start(lg):  # type: ignore[arg-type]
            lo = max(lo, vals[0] + 1)
        hi = min(hi, vals[-1] - 1)
    if st.with_source:
        hi = 1 << 64  # the whole workload was encoded: nothing is cut at the end
    return lo, hi


@check("bootstrap.partitions", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (send-bootstrap-to-all-partition); {NOTES} §2.4 (every partition of the topic, or "
              "partition 0)")
def bootstrap_partitions(st: StreamEvidence) -> Findings:
    """Each BOOTSTRAP reaches every partition of the topic (send-bootstrap-to-all-partition=true)
    or only partition 0 (false)."""
    if not st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are disabled")
        return
    where: dict[tuple[Any, Any, Any], set[int]] = {}
    for part, lg in st.logs.items():
        for e in lg.entries:
            if e.kind == "BOOTSTRAP":
                where.setdefault((e.table_id, e.version, e.build_ts), set()).add(part)
    if not where:
        yield NotApplicable("no BOOTSTRAP")
        return
    if not st.o.bootstrap_all_partitions:
        for (tid, _, _), parts in sorted(where.items(), key=lambda kv: kv[0][2] or 0):
            if parts - {0}:
                yield Failure(f"a BOOTSTRAP of tableID {tid} outside partition 0", expected=[0], actual=sorted(parts))
                return
        return
    if len(st.partitions) < 2:
        yield NotApplicable("only one partition seen")
        return
    lo, hi = _covered(st, lambda e: e.build_ts)
    want = set(st.partitions)
    for (tid, _, bt), parts in sorted(where.items(), key=lambda kv: kv[0][2] or 0):
        if parts != want and bt is not None and lo <= bt <= hi:
            yield Failure(f"a BOOTSTRAP of tableID {tid} (buildTs {bt}) reached partitions {sorted(parts)}",
                          expected=sorted(want), actual=sorted(parts))
            return


@check("bootstrap.disabled", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (\"set both to 0\" disables); {NOTES} §2.4, §5 (the code: either <= 0 disables, "
              "pkg/config/sink.go:224-233)",
       docs_vs_code="docs: bootstraps stop only when both settings are 0; code: when either is <= 0 (profile switch "
                    "bootstrap-disable-rule=docs|code)")
def bootstrap_disabled(st: StreamEvidence) -> Findings:
    """With bootstraps disabled (per bootstrap-disable-rule), no BOOTSTRAP is sent."""
    if st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are enabled")
        return
    for part, lg in sorted(st.logs.items()):
        for e in lg.entries:
            if e.kind == "BOOTSTRAP":
                yield Failure(f"a BOOTSTRAP although send-bootstrap-interval-in-sec={st.o.bootstrap_interval_s:g} "
                              f"and send-bootstrap-in-msg-count={st.o.bootstrap_count} disable them "
                              f"({st.o.disable_rule} rule)", expected="no BOOTSTRAP", actual="BOOTSTRAP",
                              location=_where(st, part, e))
                return


@check("order.dml-commit-ts", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Ordering; {NOTES} §2.1 (a table's rows in commit order in its partition)")
def order_dml(st: StreamEvidence) -> Findings:
    """In each partition, DML commitTs never decreases (duplicates after a restart aside)."""
    seen = False
    for part, lg in sorted(st.logs.items()):
        high: Entry | None = None
        for e in lg.entries:
            if e.kind != "DML" or e.commit_ts is None:
                continue
            seen = True
            if high is not None and e.commit_ts < high.commit_ts:  # type: ignore[operator]
                yield Failure(f"partition {part}: commitTs {e.commit_ts} after {high.commit_ts}",
                              expected=f">= {high.commit_ts}", actual=e.commit_ts, location=_where(st, part, e))
                break
            high = e
    if not seen:
        yield NotApplicable("no DML")


def _broadcast_findings(st: StreamEvidence, kind: str, ident: Callable[[Entry], Any]) -> Findings:
    where: dict[Any, set[int]] = {}
    for part, lg in st.logs.items():
        for e in lg.entries:
            if e.kind == kind and e.commit_ts is not None:  # a malformed commitTs is message.fields' finding
                where.setdefault(ident(e), set()).add(part)
    if not where:
        yield NotApplicable(f"no {kind}")
        return
    if len(st.partitions) < 2:
        return
    lo, hi = _covered(st, lambda e: e.commit_ts if e.kind in ("DML", "DDL", "WATERMARK") else None)
    want = set(st.partitions)
    for k, parts in sorted(where.items(), key=lambda kv: str(kv[0])):
        ts = k[0] if isinstance(k, tuple) else k
        if parts != want and lo <= ts <= hi:
            yield Failure(f"a {kind} (commitTs {ts}) reached partitions {sorted(parts)}", expected=sorted(want),
                          actual=sorted(parts))
            return


@check("order.ddl-barrier", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §DDL (sent to all partitions); {NOTES} §2.1 (mq_ddl_sink.go: broadcast after the earlier rows "
              "are flushed)")
def order_ddl(st: StreamEvidence) -> Findings:
    """Each DDL reaches every partition, and after it no DML of an earlier transaction follows
    in that partition."""
    yield from _broadcast_findings(st, "DDL", lambda e: (e.commit_ts, e.type))
    for part, lg in sorted(st.logs.items()):
        barrier: Entry | None = None
        for e in lg.entries:
            if e.kind == "DDL" and e.commit_ts is not None:
                barrier = e if barrier is None or e.commit_ts > barrier.commit_ts else barrier  # type: ignore[operator]
            elif e.kind == "DML" and barrier is not None and e.commit_ts is not None \
                    and e.commit_ts < barrier.commit_ts:  # type: ignore[operator]
                yield Failure(f"partition {part}: a DML of commitTs {e.commit_ts} after the DDL of commitTs "
                              f"{barrier.commit_ts}", expected="every earlier DML before the DDL",
                              actual=f"DML at offset {e.offset}, DDL at offset {barrier.offset}",
                              location=_where(st, part, e))
                break


@check("order.watermark", level=Level.MUST, scope=Scope.STREAM,
       anomalies=(Anomaly.LATE_EVENT_AFTER_WATERMARK, Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK),
       clause=f"{SEED} §WATERMARK (sent to all partitions; everything below it has been sent); {NOTES} §2.1")
def order_watermark(st: StreamEvidence) -> Findings:
    """Each WATERMARK reaches every partition; per partition they never decrease, and no DML
    with a smaller commitTs follows one."""
    yield from _broadcast_findings(st, "WATERMARK", lambda e: e.commit_ts)
    for part, lg in sorted(st.logs.items()):
        wm: Entry | None = None
        for e in lg.entries:
            if e.kind == "WATERMARK" and e.commit_ts is not None:
                if wm is not None and e.commit_ts < wm.commit_ts:  # type: ignore[operator]
                    yield Failure(f"partition {part}: WATERMARK {e.commit_ts} after {wm.commit_ts}",
                                  expected=f">= {wm.commit_ts}", actual=e.commit_ts, location=_where(st, part, e))
                    break
                wm = e
            elif e.kind == "DML" and wm is not None and e.commit_ts is not None \
                    and e.commit_ts < wm.commit_ts:  # type: ignore[operator]
                yield Failure(f"partition {part}: a DML of commitTs {e.commit_ts} after WATERMARK {wm.commit_ts}",
                              expected=f"DML commitTs >= {wm.commit_ts}", actual=e.commit_ts,
                              location=_where(st, part, e))
                break

