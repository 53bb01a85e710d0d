"""The TiCDC Simple checks of one message: framing, the fields of each message type, a DML's
columns and handle key."""

from __future__ import annotations

from typing import Any

from ....checks.registry import Failure, Level, NotApplicable, Scope
from ....model.events import Ddl, Op, Watermark, tso_physical_ms
from ...kit import Findings, brief
from .. import spec
from ..checker import RecordEvidence, SourceRow
from ..decoder import DML_TYPES, Message, table_schema_of
from .common import (
    BUILD_TS_RANGE,
    CLOCK_SKEW_MS,
    NOTES,
    SEED,
    _columns_by_name,
    _dicts,
    _hex,
    _is_int,
    _is_kind,
    _kind_gate,
    _ok,
    _row_maps,
    _strings,
    check,
)


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


def _undecodable(ev: RecordEvidence) -> NotApplicable | None:
    return None if ev.msg.ok else _UNDECODABLE


_UNDECODABLE = NotApplicable("undecodable")


@check("message.version", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Message format (version); {NOTES} §2.2 (`version` is always 1)", first=_undecodable)
def message_version(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`version` is 1 in every message."""
    v = ev.msg.get("version")
    if not (_is_int(v) and v == spec.VERSION):
        return Failure(f"version is {v!r}", expected=spec.VERSION, actual=v, location=ev.at("version"))
    return None


KNOWN_TYPES = frozenset({"WATERMARK", "BOOTSTRAP", *spec.DDL_TYPES, *DML_TYPES})


@check("message.type", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Message types (DDL: CREATE, RENAME, CINDEX, DINDEX, ERASE, TRUNCATE, ALTER, QUERY; DML: "
              f"INSERT, UPDATE, DELETE; WATERMARK; BOOTSTRAP); {NOTES} §2.2, §2.3 (Avro: Message.type names "
              "the payload's branch)", first=_undecodable)
def message_type(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`type` is one the protocol defines, and (Avro) Message.type matches the payload's record."""
    m = ev.msg
    t = m.get("type") if not m.avro else m.type
    if not isinstance(t, str) or t not in KNOWN_TYPES:
        return Failure(f"unknown message type {t!r}", expected=sorted(KNOWN_TYPES), actual=t, location=ev.at("type"))
    if m.avro and m.branch is not None and m.branch != m.kind:
        return Failure(f"Message.type is {m.kind} but the payload is a {m.branch} record",
                       expected=m.branch, actual=m.kind, location=ev.at("type"))
    return None


@check("message.build-ts", level=Level.SHOULD, scope=Scope.RECORD,
       clause=f"{SEED} §Message format (buildTs: when the message was built, ms); {NOTES} §2.2 "
              "(time.Now().UnixMilli())", first=_undecodable)
def build_ts(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """`buildTs` is the wall-clock time in milliseconds, not before the commit it carries."""
    m = ev.msg
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
    m = ev.msg
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
    m = ev.msg
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
    m = ev.msg
    ts = m.get("commitTs")
    if not (_is_int(ts) and ts > 0):
        yield Failure("WATERMARK without a commitTs", expected="the checkpoint ts", actual=ts,
                      location=ev.at("commitTs"))
    if isinstance(ev.source, Watermark) and ts != ev.source.ts:
        yield Failure("WATERMARK commitTs is not the checkpoint ts", expected=ev.source.ts, actual=ts,
                      location=ev.at("commitTs"))


# == DML ================================================================================


@check("dml.fields", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a DML", _is_kind("DML")),
       clause=f"{SEED} §DML (INSERT: data; UPDATE: data and old; DELETE: old); {NOTES} §2.2 (database, table, "
              "tableID, schemaVersion = the table's UpdateTS)")
def dml_fields(ev: RecordEvidence) -> Findings:
    """INSERT has only `data`, UPDATE `data` and `old`, DELETE only `old`; with the workload,
    database, table, tableID, schemaVersion and type are the source row's."""
    m = ev.msg
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
    m = ev.msg
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
    m = ev.msg
    for part, row in _row_maps(m):
        keys = list(row)
        want = sorted(keys, key=lambda k: k.encode("utf-8"))
        if keys != want:
            yield Failure(f"{part} keys are not sorted", expected=want, actual=keys, location=ev.at(part))
