"""The TiCDC Simple checks of the table schemas a DDL or BOOTSTRAP carries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....checks.registry import Failure, Level, NotApplicable, Scope
from ....model.events import Ddl
from ....model.table import Column
from ...kit import Findings
from .. import spec
from ..checker import RecordEvidence
from ..decoder import table_schema_of
from .common import _JSON_TYPE, NOTES, SEED, _columns_by_name, _dicts, _ok, _show, _strings, _type_ok, check

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
        # (Each field by its exact class first, as a decoder gives them: where all three are right,
        # the rule's own tests would find nothing.)
        if not (c.get("name").__class__ is str and c.get("dataType").__class__ is dict
                and c.get("nullable").__class__ is bool):
            for f, typ in _COLUMN_FIELDS.items():
                if not _type_ok(c.get(f), typ):
                    yield name, f"column field {f} is not {_JSON_TYPE[typ]}", c.get(f)
        if "default" not in c:
            yield name, "column without `default` (null when there is none)", sorted(c)
        if isinstance(c.get("name"), str):
            names.append(c["name"])
        dt: dict[str, Any] = c["dataType"] if isinstance(c.get("dataType"), dict) else {}
        if not (dt.get("mysqlType").__class__ is str and dt.get("charset").__class__ is str
                and dt.get("collate").__class__ is str):
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


def _announced_columns(ev: RecordEvidence) -> Iterator[tuple[str, Column, dict[str, Any]]]:
    """(which, source column, its entry in the announced tableSchema) for every column of a
    schema the workload can judge that the announcement lists."""
    for which, ts, t in _schema_pairs(ev):
        got = _columns_by_name(ts)
        for c in t.columns:
            col = got.get(c.name)
            if col is not None:
                yield which, c, col


_NO_SOURCE_SCHEMA = NotApplicable("no tableSchema with a known source table")


def _no_source_schema(ev: RecordEvidence) -> NotApplicable | None:
    return None if any(True for _ in _schema_pairs(ev)) else _NO_SOURCE_SCHEMA


def _no_announced_column(ev: RecordEvidence) -> NotApplicable | None:
    return None if any(True for _ in _announced_columns(ev)) else _NO_SOURCE_SCHEMA


@check("schema.columns", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{NOTES} §2.2 (columns sorted by column ID, not ordinal position; nullable; message.go:310-312)",
       first=_no_source_schema)
def schema_columns(ev: RecordEvidence) -> Findings:
    """tableSchema columns are the table's, in column-ID order, with their nullability."""
    for which, ts, t in _schema_pairs(ev):
        want = [(c.name, c.nullable) for c in t.columns_by_id()]
        got = [(c.get("name"), c.get("nullable")) for c in _dicts(ts.get("columns"))]
        if got != want:
            yield Failure(f"{which} columns are not the table's in column-ID order",
                          expected=[f"{n}{'' if nl else ' NOT NULL'}" for n, nl in want],
                          actual=[f"{n}{'' if nl else ' NOT NULL'}" for n, nl in got], location=ev.at(which))


@check("schema.data-type", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §mysqlType; {NOTES} §2.2 (TypeToStr: binary charset makes text->blob, char->binary; "
              "decimal = scale or fsp; unsigned/zerofill), §2.3 (Avro: length always, decimal only for DECIMAL)",
       first=_no_announced_column)
def schema_data_type(ev: RecordEvidence) -> Findings:
    """Each column's dataType is TiDB's: mysqlType, charset, collate, length, decimal, elements,
    unsigned, zerofill."""
    for which, c, col in _announced_columns(ev):
        want = spec.data_type_avro(c.type) if ev.msg.avro else spec.data_type_json(c.type)
        if col.get("dataType") != want:
            yield Failure(f"{which} dataType of {c.type.sql()}", expected=want, actual=col.get("dataType"),
                          location=ev.at(c.name))


@check("schema.indexes", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Index; {NOTES} §2.2 (TiDB order; a clustered int primary key is appended last as the "
              "synthetic lower-case `primary`; nullable = any column nullable; message.go:284-306)",
       first=_no_source_schema)
def schema_indexes(ev: RecordEvidence) -> Findings:
    """tableSchema indexes are the table's, including the synthetic `primary` for an int handle."""
    for which, ts, t in _schema_pairs(ev):
        want = spec.indexes(t)
        if ts.get("indexes") != want:
            yield Failure(f"{which} indexes", expected=want, actual=ts.get("indexes"), location=ev.at(which))


@check("schema.default", level=Level.MUST, scope=Scope.RECORD, needs_source=True,
       clause=f"{SEED} §Column (default); {NOTES} §2.2 (TiDB's stored default text; BIT default a JSON number, "
              "message.go:148-151), §2.3 (Avro: the raw default string, goavro writing the Go string's bytes: "
              "a BIT default is its binary literal, not UTF-8; avro.go newTableSchemaMap)",
       docs_vs_code="docs: `default` is a string; code: a string, or a number for BIT columns in JSON",
       first=_no_announced_column)
def schema_default(ev: RecordEvidence) -> Findings:
    """Each column's `default` is TiDB's stored default (null when none; a number for BIT in JSON)."""
    for which, c, col in _announced_columns(ev):
        want = spec.default_value(c, avro=ev.msg.avro)
        have = col.get("default")
        if have != want or type(have) is not type(want):
            yield Failure(f"{which} default of {c.name}", expected=_show(want), actual=_show(have),
                          location=ev.at(c.name))
