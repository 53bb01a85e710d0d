"""The TiCDC Avro checks of a record's schemas: valid Avro, names, fields, order, nullability,
defaults, Connect parameters."""

from __future__ import annotations

import json
from typing import Any

from ....checks.registry import Failure, Level, NotApplicable, Scope, Verdict
from ....model.table import Column
from ...kit import Findings
from .. import spec
from ..decoder import DecodedPart, FieldView
from ..evidence import RecordEvidence
from .common import NOTES, _decoded_views, _usable_views, check, no_decoded_view, no_usable_view, schemas_key

# == schema shape =======================================================================

_AVRO_INT_RANGE = {"int": (-(1 << 31), (1 << 31) - 1), "long": (-(1 << 63), (1 << 63) - 1)}


def _v85_null_default(f: FieldView, o: spec.AvroOptions) -> bool:
    """A null-first union with the string default "null": what TiCDC v8.5.2-8.5.7 writes for a
    'null' text default (notes §1.4), accepted under the v8.5 profile (null-string-default=null)."""
    return o.null_string_default and f.nullable and f.null_first is True and f.default == "null"


_V85_HINT = ("TiCDC v8.5.2-v8.5.7 (and v7.5.6+, v6.5.12) write a nullable column whose DDL default is the text "
             "'null' this way (notes §1.4, #11995): if the capture comes from one of them, check it with "
             "--option profile=v8.5 (or null-string-default=null)")


def _default_problem(f: FieldView, o: spec.AvroOptions) -> str | None:
    """Avro: a field default must be valid for the type, or for a union's first branch."""
    if not f.has_default or _v85_null_default(f, o):
        return None
    first = f.type[0] if isinstance(f.type, list) and f.type else f.type
    prim = first if isinstance(first, str) else (first.get("type") if isinstance(first, dict) else None)
    v = f.default
    ok = {
        "null": v is None,
        "boolean": isinstance(v, bool),
        "int": isinstance(v, int) and not isinstance(v, bool) and _in_range(v, "int"),
        "long": isinstance(v, int) and not isinstance(v, bool) and _in_range(v, "long"),
        "float": isinstance(v, (int, float)) and not isinstance(v, bool),
        "double": isinstance(v, (int, float)) and not isinstance(v, bool),
        "string": isinstance(v, str),
        "bytes": isinstance(v, str),
    }.get(prim if isinstance(prim, str) else "", True)
    if ok:
        return None
    where = "first union branch" if isinstance(f.type, list) else "type"
    return f"field {f.name!r}: default {json.dumps(v)[:60]} does not match the {where} {prim!r}"


def _in_range(v: int, prim: str) -> bool:
    lo, hi = _AVRO_INT_RANGE[prim]
    return lo <= v <= hi


@check("schema.valid-avro", level=Level.MUST, scope=Scope.RECORD,
       clause="Avro spec §Schema Declaration (names, unions, field defaults match the first branch); "
              f"{NOTES} §1.4",
       cache_key=schemas_key, first=no_decoded_view)
def valid_avro(ev: RecordEvidence) -> Findings:
    """The registered schema is valid Avro: it parses, names are legal, defaults fit their type."""
    for part, d in _decoded_views(ev):
        v = d.view
        assert v is not None
        if v.error or v.parse_error:
            yield Failure(f"{part} schema {d.schema_id} is not usable: {v.error or v.parse_error}",
                          location=ev.at(part=part), expected="a valid Avro record schema", actual=v.text[:200])
            continue
        problem = v.apache_avro_problem()
        if problem:
            yield Failure(f"{part} schema {d.schema_id} is rejected by Apache Avro", expected="accepted",
                          actual=problem, location=ev.at(part=part))
        for f in v.fields:
            dp = _default_problem(f, ev.o)
            if dp:
                yield Failure(f"{part} schema {d.schema_id}: {dp}", expected="a default of the first branch",
                              actual=f.default, location=ev.at(f.name, part),
                              hint=_V85_HINT if f.null_first and f.default == "null" else None)


@check("schema.record-name", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Key data format ({{{{TableName}}}}, {{{{Namespace}}}}); {NOTES} §1.4, §4.2 "
              "(name = sanitised table, namespace = default.<sanitised schema>)",
       cache_key=schemas_key, first=no_usable_view)
def record_name(ev: RecordEvidence) -> Findings:
    """Record name is the sanitised table name; namespace is `default.<sanitised database>`."""
    for part, v in _usable_views(ev):
        if ev.source is not None:
            t = ev.source.table
            want = (spec.namespace(t.database), spec.sanitize_name(t.name))
            got = (v.namespace, v.name)
            if got != want:
                yield Failure(f"{part} record is {got[0]}.{got[1]}, not {want[0]}.{want[1]}",
                              expected={"namespace": want[0], "name": want[1]},
                              actual={"namespace": got[0], "name": got[1]}, location=ev.at(part=part))
        else:
            if not v.name or not spec.is_avro_name(v.name):
                yield Failure(f"{part} record name {v.name!r} is not a sanitised Avro name",
                              expected="[A-Za-z_][A-Za-z0-9_]*", actual=v.name, location=ev.at(part=part))
            ns = (v.namespace or "").split(".")
            if len(ns) < 2 or not all(spec.is_avro_name(x) for x in ns):
                yield Failure(f"{part} namespace {v.namespace!r} is not <changefeed namespace>.<database>",
                              expected="default.<database>", actual=v.namespace, location=ev.at(part=part),
                              hint="TiCDC's own consumer splits the namespace on '.' to find the database")


@check("schema.key-value-names", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.3 (key schema: same record name and namespace as the value)",
       cache_key=schemas_key)
def key_value_names(ev: RecordEvidence) -> Verdict:
    """Key and value schemas share record name and namespace."""
    k, v = ev.key, ev.value
    if k is None or v is None or k.view is None or v.view is None or k.view.error or v.view.error:
        return NotApplicable("needs both a key and a value schema")
    if (k.view.namespace, k.view.name) != (v.view.namespace, v.view.name):
        return Failure("key and value records are named differently",
                       expected=f"{v.view.namespace}.{v.view.name}",
                       actual=f"{k.view.namespace}.{k.view.name}", location=ev.at(part="key"))
    return None


def _expected_columns(ev: RecordEvidence, part: str) -> tuple[Column, ...]:
    assert ev.source is not None
    t = ev.source.table
    return spec.key_columns(t) if part == "key" else spec.value_columns(t, ev.o)


@check("schema.field-names", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.4 (SanitizeName per code point), §4.3",
       cache_key=schemas_key, first=no_usable_view)
def field_names(ev: RecordEvidence) -> Findings:
    """Field names are the column names sanitised by TiCDC's rule, one field per column."""
    for part, v in _usable_views(ev):
        got = [f.name for f in v.column_fields]
        if ev.source is not None:
            want = [spec.sanitize_name(c.name) for c in _expected_columns(ev, part)]
            if sorted(got) != sorted(want):
                yield Failure(f"{part} fields do not match the columns of the table",
                              expected=sorted(want), actual=sorted(got), location=ev.at(part=part),
                              hint=f"missing {sorted(set(want) - set(got))}, unexpected {sorted(set(got) - set(want))}")
        else:
            bad = [n for n in got if not spec.is_avro_name(n)]
            if bad:
                yield Failure(f"{part} has field names that are not sanitised", expected="[A-Za-z_][A-Za-z0-9_]*",
                              actual=bad, location=ev.at(part=part))


@check("schema.field-order", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.4 (table column order; column-ID order when the integrity checksum is on; "
              "extension fields last), §4.6",
       cache_key=schemas_key, first=no_usable_view)
def field_order(ev: RecordEvidence) -> Findings:
    """Fields follow the table's column order (column-ID order with checksums), extension fields last."""
    for part, v in _usable_views(ev):
        names = [f.name for f in v.fields]
        first_ext = next((i for i, f in enumerate(v.fields) if f.is_extension), None)
        if first_ext is not None and any(not f.is_extension for f in v.fields[first_ext:]):
            yield Failure(f"{part}: a column field follows the extension fields", expected="extension fields last",
                          actual=names, location=ev.at(part=part))
        if ev.source is not None:
            want = [spec.sanitize_name(c.name) for c in _expected_columns(ev, part)]
            got = [f.name for f in v.column_fields]
            if sorted(got) == sorted(want) and got != want:
                order = "column-ID order" if (part == "value" and ev.o.checksum) else "table column order"
                yield Failure(f"{part} fields are not in {order}", expected=want, actual=got, location=ev.at(part=part))


#: (part, source column or None, field) of one column field of a record's schemas.
Binding = tuple[str, Column | None, FieldView]


def _bindings(ev: RecordEvidence) -> tuple[list[Binding], dict[str, list[Binding]]]:
    """Every column field of the record's schemas with its source column (when the workload is
    known), and the same grouped by type family: worked out once per pair of schemas and source
    table (kept by the checker's resolver), not per record."""
    k, v = ev.key, ev.value
    kv = k.view if k is not None and k.view is not None and not k.view.error else None
    vv = v.view if v is not None and v.view is not None and not v.view.error else None
    table = ev.source.table if ev.source is not None else None
    mk = ("bindings", kv.schema_id if kv is not None else None, vv.schema_id if vv is not None else None, table)
    got = ev.resolver.memo.get(mk)
    if got is not None:
        return got  # type: ignore[no-any-return]
    flat: list[Binding] = []
    for part, view in (("key", kv), ("value", vv)):
        if view is None:
            continue
        if ev.source is not None:
            for c in _expected_columns(ev, part):
                f = view.by_name.get(spec.sanitize_name(c.name))
                if f is not None:
                    flat.append((part, c, f))
        else:
            flat.extend((part, None, f) for f in view.column_fields)
    fams: dict[str, list[Binding]] = {}
    for b in flat:
        fam = spec.family(b[1]) if b[1] is not None else spec.TIDB_TYPE_FAMILY.get(b[2].tidb_type or "")
        if fam is not None:
            fams.setdefault(fam, []).append(b)
    got = ev.resolver.memo[mk] = (flat, fams)
    return got


def _column_fields(ev: RecordEvidence) -> list[tuple[str, DecodedPart, Column | None, FieldView]]:
    """(part, decoded part, source column or None, field) for every column field; computed once
    per record and shared by every check."""
    if ev.bindings is None:
        ev.bindings = [(part, _part(ev, part), c, f) for part, c, f in _bindings(ev)[0]]
    return ev.bindings


def _part(ev: RecordEvidence, part: str) -> DecodedPart:
    d = ev.key if part == "key" else ev.value
    assert d is not None
    return d


def _no_column_fields(ev: RecordEvidence) -> NotApplicable | None:
    return None if _column_fields(ev) else _NO_COLUMN_FIELDS


_NO_COLUMN_FIELDS = NotApplicable("no column fields")


@check("schema.nullability", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Column data format (nullable columns are unions with null); {NOTES} §1.4",
       cache_key=schemas_key, first=_no_column_fields)
def nullability(ev: RecordEvidence) -> Findings:
    """A nullable column is a two-branch union with "null"; a NOT NULL column is not a union."""
    for part, _d, col, f in _column_fields(ev):
        if f.problem:
            yield Failure(f"{part} field {f.name!r}: {f.problem}", expected='["null", T] or [T, "null"]',
                          actual=f.type, location=ev.at(f.name, part))
        elif col is not None and f.nullable != col.nullable:
            yield Failure(f"{part} field {f.name!r} is {'nullable' if f.nullable else 'not nullable'} but the "
                          f"column is {'NULL' if col.nullable else 'NOT NULL'}",
                          expected="union with null" if col.nullable else "plain type",
                          actual=f.type, location=ev.at(col.name, part))


@check("schema.default", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.4 (union order and `default` follow the DDL default; precise decimals get "
              "none), §4.4, §4.5",
       cache_key=schemas_key)
def defaults(ev: RecordEvidence) -> Findings:
    """`default` and union order follow the column's DDL default, converted like a value."""
    seen = False
    for part, _d, col, f in _column_fields(ev):
        if f.problem:
            continue
        seen = True
        if col is not None:
            want = spec.field(col, ev.o, f.name)
            want_null_first = None
            if isinstance(want["type"], list):
                want_null_first = want["type"][0] == "null"
            got_default = f.default if f.has_default else "<absent>"
            exp_default = want.get("default", "<absent>")
            if not _same_default(got_default, exp_default) or (f.nullable and f.null_first != want_null_first):
                yield Failure(f"{part} field {f.name!r}: default/union order do not follow the DDL default",
                              expected={"default": exp_default, "type": want["type"] if f.nullable else None},
                              actual={"default": got_default, "type": f.type if f.nullable else None},
                              location=ev.at(col.name, part))
        elif f.nullable:
            # Without the table: TiCDC puts null last only for a non-null default.
            if f.null_first and f.has_default and f.default is not None and not _v85_null_default(f, ev.o):
                yield Failure(f"{part} field {f.name!r}: null-first union with a non-null default",
                              expected="default null", actual=f.default, location=ev.at(f.name, part),
                              hint=_V85_HINT if f.default == "null" else None)
            if f.null_first is False and (not f.has_default or f.default is None):
                yield Failure(f"{part} field {f.name!r}: null-last union without a non-null default",
                              expected="a non-null default", actual=f.default if f.has_default else "<absent>",
                              location=ev.at(f.name, part))
            if f.null_first and not f.has_default:
                yield Failure(f"{part} field {f.name!r}: nullable field without `default: null`",
                              expected=None, actual="<absent>", location=ev.at(f.name, part))
    if not seen:
        yield NotApplicable("no column fields")


def _same_default(got: Any, want: Any) -> bool:
    """JSON defaults compared as JSON compares them: a float default may come back as an
    integer (Go prints 1e20 as 100000000000000000000, and -0 loses its sign)."""
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return float(got) == want
    return type(got) is type(want) and got == want


@check("schema.connect-parameters", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Column data format (connect.parameters.tidb_type); {NOTES} §1.5",
       cache_key=schemas_key, first=_no_column_fields)
def connect_parameters(ev: RecordEvidence) -> Findings:
    """Every column's type carries `connect.parameters.tidb_type` with a value from the type table."""
    for part, _d, col, f in _column_fields(ev):
        tt = f.tidb_type
        if tt not in spec.TIDB_TYPE_FAMILY:
            yield Failure(f"{part} field {f.name!r} has no known connect.parameters.tidb_type",
                          expected=sorted(spec.TIDB_TYPE_FAMILY), actual=f.inner,
                          location=ev.at(col.name if col else f.name, part))
