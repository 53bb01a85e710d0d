"""The TiCDC Avro checks.

Every check here has a stable id, a level and the clause it enforces, and a mutant in
`mutants.py` that it catches (the project's tests assert both). Checks read `RecordEvidence`
(one Kafka record), `EventEvidence` (one source event and its records; only when the
workload is known) or `StreamEvidence` (one topic). Without the workload (a captured topic),
checks judge what the record itself claims (its schema's `tidb_type`, the invariants between
key and value, commit ts and physical time…) and say `not-applicable` where only the source
could decide.
"""

from __future__ import annotations

import json
import math
import re
import struct
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from ...checks import compatibility
from ...checks.delivery import Anomaly
from ...checks.registry import CheckRegistry, Failure, Level, Location, NotApplicable, Scope, Verdict
from ...model import mysql_text
from ...model.events import Ddl, Op, Transaction, Watermark, tso_physical_ms
from ...model.table import Column
from ...model.values import parse_vector
from ..kit import Findings
from . import spec, watermark
from .decoder import DecodedPart, ErrorKind, FieldView, SchemaView
from .evidence import EventEvidence, RecordEvidence, StreamEntry, StreamEvidence
from .spec import Family

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)
# What the registry and the encoder do with a schema change its level refuses (checks/compatibility.py).
compatibility.declare(check)
NOTES = "spec/notes/ticdc.md"


def _decoded_views(ev: RecordEvidence) -> Iterator[tuple[str, DecodedPart]]:
    for part, d in ev.parts():
        if d.view is not None:
            yield part, d


def _part_key(d: DecodedPart | None) -> tuple[int | None, bool] | None:
    return None if d is None else (d.schema_id, d.view is not None)


def schemas_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """Everything a schema-only check depends on: both parts' schema ids (and whether they
    resolved) and the source table version, if known."""
    return (_part_key(ev.key), _part_key(ev.value), ev.source.table if ev.source is not None else None)


def topic_schemas_key(ev: RecordEvidence) -> tuple[Any, ...]:
    return (ev.record.topic, *schemas_key(ev))


def _decoded(d: DecodedPart | None) -> bool | None:
    return None if d is None else d.datum is not None


def shape_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """What decides whether a record check has anything to judge (the gates below): the schemas,
    whether the source is known and its operation, the control-record kind, which parts the record
    has and which of them decoded."""
    src = ev.source
    return (schemas_key(ev), src.op if src is not None else None, ev.control.kind if ev.control is not None else None,
            ev.record.key is None, ev.record.value is None, _decoded(ev.key), _decoded(ev.value))


def _control_gate(ev: RecordEvidence) -> NotApplicable | None:
    if ev.control is None:
        return None
    return NotApplicable(f"a {ev.control.kind} control record (avro-enable-watermark), not Confluent-framed")


def _usable_views(ev: RecordEvidence) -> list[tuple[str, SchemaView]]:
    """(part, schema view) for every part whose registered schema is a well-formed record."""
    return [(part, d.view) for part, d in _decoded_views(ev) if d.view is not None and not d.view.error]


# == framing ============================================================================

@check("framing.magic-byte", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Schema Registry (Confluent wire format); {NOTES} §1.2", gate=(shape_key, _control_gate))
def magic_byte(ev: RecordEvidence) -> Verdict:
    """Key and value start with the Confluent magic byte 0x00 and a 4-byte schema id."""
    na = _control_gate(ev)
    if na is not None:
        return na
    k, v = ev.key, ev.value
    if (k is not None or v is not None) and (k is None or k.error_kind not in _UNFRAMED) and (
            v is None or v.error_kind not in _UNFRAMED):
        return None  # the common case, without a generator
    return _magic_byte_findings(ev)


_UNFRAMED = (ErrorKind.SHORT, ErrorKind.MAGIC)


def _magic_byte_findings(ev: RecordEvidence) -> Findings:
    seen = False
    for part, d in ev.parts():
        seen = True
        if d.error_kind in (ErrorKind.SHORT, ErrorKind.MAGIC):
            hint = None
            if d.raw[:2] == b"\x03\x00" and len(d.raw) >= 18:
                hint = ("0x03 0x00 + 16 bytes is AWS Glue Schema Registry framing (TiCDC with "
                        "glue-schema-registry-config, notes §1.2): the suite resolves Confluent-framed records only, "
                        "so it cannot judge this capture")
            elif part == "value" and ev.record.key is None and watermark.is_control(None, d.raw):
                hint = ("a key-less record starting 0x01/0x02 is a TiCDC DDL/checkpoint record: if the changefeed "
                        "sets avro-enable-watermark, check with --option avro-enable-watermark=true "
                        "--option enable-tidb-extension=true")
            yield Failure(f"{part} is not Confluent-framed: {d.error}", expected="0x00 + 4-byte big-endian id",
                          actual="0x" + d.raw[:8].hex(), location=ev.at(part=part), hint=hint)
    if not seen:
        yield NotApplicable("record has neither key nor value")


@check("framing.schema-id", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.2, §1.7 (consumers look schemas up by id)", cache_key=schemas_key)
def schema_id_known(ev: RecordEvidence) -> Findings:
    """The schema id in the header resolves in the Schema Registry."""
    seen = False
    for part, d in ev.parts():
        if d.schema_id is None:
            continue
        seen = True
        if d.error_kind == ErrorKind.UNKNOWN_ID:
            yield Failure(f"{part} names schema id {d.schema_id}, which the registry does not know",
                          expected="a registered schema id", actual=d.schema_id, location=ev.at(part=part),
                          hint=d.error)
    if not seen:
        yield NotApplicable("no framed part to look up")


def _no_usable_schema(ev: RecordEvidence) -> NotApplicable | None:
    if any(d.view is not None and d.error_kind != ErrorKind.SCHEMA for _p, d in ev.parts()):
        return None
    return _NO_USABLE_SCHEMA


_NO_USABLE_SCHEMA = NotApplicable("no part with a usable schema")


@check("framing.body", level=Level.MUST, scope=Scope.RECORD,
       clause=f"Avro spec §Binary encoding; {NOTES} §1.2 (body = one datum, nothing after it)",
       gate=(shape_key, _no_usable_schema))
def body_decodes(ev: RecordEvidence) -> Verdict:
    """The Avro body decodes with its writer schema and nothing is left over."""
    k, v = ev.key, ev.value
    if (k is None or k.datum is not None and k.error_kind is None) and (
            v is None or v.datum is not None and v.error_kind is None) and (k is not None or v is not None):
        return None  # every part decoded: the common case, without a generator
    return _body_findings(ev)


def _body_findings(ev: RecordEvidence) -> Findings:
    na = _no_usable_schema(ev)
    if na is not None:
        yield na
        return
    for part, d in ev.parts():
        if d.view is not None and d.error_kind in (ErrorKind.BODY, ErrorKind.TRAILING):
            yield Failure(f"{part} body: {d.error}", expected="one Avro datum of the writer schema",
                          actual="0x" + d.raw[5:40].hex() + ("…" if len(d.raw) > 40 else ""),
                          location=ev.at(part=part))


# == registry ===========================================================================

@check("registry.subject", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Topic distribution (TopicNameStrategy); {NOTES} §1.7, §4.1 "
              "(dots in the topic become underscores in the subject)",
       cache_key=topic_schemas_key)
def subject_naming(ev: RecordEvidence) -> Findings:
    """The schema id is registered under `<topic with . replaced by _>-key` / `-value`."""
    seen = False
    for part, d in ev.parts():
        if d.view is None or d.schema_id is None:
            continue
        seen = True
        want = spec.subject(ev.record.topic, part)
        subs = ev.resolver.subjects(d.schema_id, want)
        if isinstance(subs, str):
            yield NotApplicable(subs)
            continue
        if want not in {s for s, _ in subs}:
            yield Failure(f"{part} schema id {d.schema_id} is not registered under subject {want!r}",
                          expected=want, actual=sorted({s for s, _ in subs}), location=ev.at(part=part))
    if not seen:
        yield NotApplicable("no resolved schema")


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
       cache_key=schemas_key)
def valid_avro(ev: RecordEvidence) -> Findings:
    """The registered schema is valid Avro: it parses, names are legal, defaults fit their type."""
    seen = False
    for part, d in _decoded_views(ev):
        seen = True
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
    if not seen:
        yield NotApplicable("no resolved schema")


@check("schema.record-name", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Key data format ({{{{TableName}}}}, {{{{Namespace}}}}); {NOTES} §1.4, §4.2 "
              "(name = sanitised table, namespace = default.<sanitised schema>)",
       cache_key=schemas_key)
def record_name(ev: RecordEvidence) -> Findings:
    """Record name is the sanitised table name; namespace is `default.<sanitised database>`."""
    views = _usable_views(ev)
    if not views:
        yield NotApplicable("no resolved schema")
    for part, v in views:
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
       cache_key=schemas_key)
def field_names(ev: RecordEvidence) -> Findings:
    """Field names are the column names sanitised by TiCDC's rule, one field per column."""
    views = _usable_views(ev)
    if not views:
        yield NotApplicable("no resolved schema")
    for part, v in views:
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
       cache_key=schemas_key)
def field_order(ev: RecordEvidence) -> Findings:
    """Fields follow the table's column order (column-ID order with checksums), extension fields last."""
    views = _usable_views(ev)
    if not views:
        yield NotApplicable("no resolved schema")
    for part, v in views:
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


@check("schema.nullability", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Column data format (nullable columns are unions with null); {NOTES} §1.4",
       cache_key=schemas_key)
def nullability(ev: RecordEvidence) -> Findings:
    """A nullable column is a two-branch union with "null"; a NOT NULL column is not a union."""
    seen = False
    for part, _d, col, f in _column_fields(ev):
        seen = True
        if f.problem:
            yield Failure(f"{part} field {f.name!r}: {f.problem}", expected='["null", T] or [T, "null"]',
                          actual=f.type, location=ev.at(f.name, part))
        elif col is not None and f.nullable != col.nullable:
            yield Failure(f"{part} field {f.name!r} is {'nullable' if f.nullable else 'not nullable'} but the "
                          f"column is {'NULL' if col.nullable else 'NOT NULL'}",
                          expected="union with null" if col.nullable else "plain type",
                          actual=f.type, location=ev.at(col.name, part))
    if not seen:
        yield NotApplicable("no column fields")


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
       cache_key=schemas_key)
def connect_parameters(ev: RecordEvidence) -> Findings:
    """Every column's type carries `connect.parameters.tidb_type` with a value from the type table."""
    seen = False
    for part, _d, col, f in _column_fields(ev):
        seen = True
        tt = f.tidb_type
        if tt not in spec.TIDB_TYPE_FAMILY:
            yield Failure(f"{part} field {f.name!r} has no known connect.parameters.tidb_type",
                          expected=sorted(spec.TIDB_TYPE_FAMILY), actual=f.inner,
                          location=ev.at(col.name if col else f.name, part))
    if not seen:
        yield NotApplicable("no column fields")


# == type table =========================================================================

_DECIMAL_STR_RE = re.compile(r"^-?\d+(\.\d+)?$")


def expected_primitives(fam: str, o: spec.AvroOptions) -> tuple[str, ...]:
    if fam == Family.INT_UNSIGNED:
        return ("int", "long")
    if fam == Family.BIGINT_UNSIGNED:
        return ("string",) if o.bigint_unsigned_string else ("long",)
    if fam == Family.FLOAT:
        return ("double",) if o.float_as_double else ("float",)
    if fam == Family.DECIMAL:
        return ("string",) if o.decimal_string else ("bytes",)
    return ({Family.INT: "int", Family.BIGINT: "long", Family.DOUBLE: "double", Family.BIT: "bytes",
             Family.TEXT: "string", Family.BLOB: "bytes", Family.YEAR: "int"}.get(fam, "string"),)


def plausibility(fam: str, f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    """What is wrong with a field's schema or value judged from its own `tidb_type` alone."""
    problem = field_plausibility(fam, f, o)
    if problem is not None or v is None:
        return problem
    rule = _VALUE_RULES.get(fam)
    return rule(f, v, o) if rule is not None else None


def field_plausibility(fam: str, f: FieldView, o: spec.AvroOptions) -> str | None:
    """What is wrong with the field's schema for its `tidb_type` (kept on the field: once per
    schema and options; the options object is kept with the answer, so its id is not reused)."""
    mk = (fam, id(o))
    got = f.memo.get(mk)
    if got is None:
        got = f.memo[mk] = (o, _field_problem(fam, f, o))
    problem: str | None = got[1]
    return problem


def _field_problem(fam: str, f: FieldView, o: spec.AvroOptions) -> str | None:
    prims = expected_primitives(fam, o)
    if f.primitive not in prims:
        return f"Avro type {f.primitive!r}, expected {' or '.join(prims)}"
    if fam == Family.DECIMAL and not o.decimal_string:
        p, s = f.precision, f.scale
        if f.logical != "decimal" or not isinstance(p, int) or not isinstance(s, int) or not (
                1 <= p <= 65 and 0 <= s <= min(p, 30)):
            return f"DECIMAL needs logicalType decimal with 1<=precision<=65, 0<=scale<=30: got {f.inner}"
    if fam == Family.BIT:
        ln = f.params.get("length")
        if not (isinstance(ln, str) and ln.isdigit() and 1 <= int(ln) <= 64):
            return f"BIT needs connect.parameters.length = bit width 1..64, got {ln!r}"
    if fam in (Family.ENUM, Family.SET) and not isinstance(f.params.get("allowed"), str):
        return f"{fam.upper()} needs connect.parameters.allowed"
    return None


# What is wrong with a (non-null) value of a family, given a field whose schema is plausible.

def _unsigned_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    return f"negative value {v} for an unsigned column" if isinstance(v, int) and v < 0 else None


def _bigint_unsigned_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if o.bigint_unsigned_string and not (isinstance(v, str) and v.isdigit() and int(v) < 1 << 64):
        return f"{v!r} is not an unsigned 64-bit decimal string"
    return None


def _float_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if isinstance(v, float) and not math.isfinite(v):
        return f"{v} is not finite (TiCDC writes 0 for NaN and infinities)"
    return None


def _bit_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if not isinstance(v, bytes):
        return None
    ln = int(f.params.get("length", "64"))
    if o.bit_padded:
        if len(v) != (ln + 7) // 8:
            return f"BIT bytes 0x{v.hex()} are not padded to ceil({ln}/8) bytes (new-architecture TiCDC)"
    elif not 1 <= len(v) <= 8 or (len(v) > 1 and v[0] == 0):
        return f"BIT bytes 0x{v.hex()} are not minimal big-endian (leading zero bytes trimmed, 0 -> 00)"
    if int.from_bytes(v, "big") >> ln:
        return f"BIT value 0x{v.hex()} does not fit in {ln} bits"
    return None


def _decimal_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if o.decimal_string:
        if not (isinstance(v, str) and _DECIMAL_STR_RE.match(v)):
            return f"{v!r} is not a decimal string"
    elif isinstance(v, bytes):
        if not v:
            return "empty decimal bytes"
        if isinstance(f.precision, int) and abs(int.from_bytes(v, "big", signed=True)) >= 10 ** f.precision:
            return f"unscaled value {int.from_bytes(v, 'big', signed=True)} exceeds precision {f.precision}"
    return None


def _enum_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    # `allowed` lists a member with `''` or `\'` in its name with `'` (EscapeEnumAndSetOptions),
    # while the value is the member's real name: compare them as `allowed` writes names.
    if not isinstance(v, str):
        return None
    allowed = spec.split_allowed(f.params.get("allowed", ""))
    if spec.allowed_name(v) not in allowed:
        return f"{v!r} is not one of the ENUM members {allowed}"
    return None


def _set_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if not isinstance(v, str) or not v:
        return None
    allowed = spec.split_allowed(f.params.get("allowed", ""))
    members = [spec.allowed_name(m) for m in v.split(",")]
    idx = [allowed.index(m) if m in allowed else -1 for m in members]
    if -1 in idx or idx != sorted(set(idx)):
        return f"{v!r} is not a comma-joined subset of {allowed} in definition order"
    return None


def _json_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if isinstance(v, str):
        try:
            json.loads(v)
        except ValueError:
            return f"{v[:60]!r} is not JSON text"
    return None


def _vector_value(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
    if isinstance(v, str):
        try:
            parse_vector(v)
        except ValueError as e:
            return f"{v[:60]!r} is not TiDB's vector text ([e1,e2,...], shortest float32 'f' elements): {e}"
    return None


def _temporal_value(fam: str) -> Any:
    def rule(f: FieldView, v: Any, o: spec.AvroOptions) -> str | None:
        return _temporal_problem(fam, v) if isinstance(v, str | int) else None

    return rule


_TEMPORAL = (Family.DATE, Family.DATETIME, Family.TIMESTAMP, Family.TIME, Family.YEAR)
_VALUE_RULES: dict[str, Any] = {
    Family.INT_UNSIGNED: _unsigned_value, Family.BIGINT_UNSIGNED: _bigint_unsigned_value,
    Family.FLOAT: _float_value, Family.DOUBLE: _float_value, Family.BIT: _bit_value, Family.DECIMAL: _decimal_value,
    Family.ENUM: _enum_value, Family.SET: _set_value, Family.JSON: _json_value, Family.VECTOR: _vector_value,
    **{fam: _temporal_value(fam) for fam in _TEMPORAL},
}


def _temporal_problem(fam: str, v: str | int) -> str | None:
    """What no TiDB can store, judged by the rule every MySQL-family protocol shares
    (`model.mysql_text`: any sql_mode, so zero dates, zero parts and day 31 pass). The schema
    carries no fsp (`tidb_type` is plain `DATETIME`), so fraction digits are not checked here;
    TIMESTAMP is printed in TiCDC's `--tz`, which the record does not name."""
    bad: mysql_text.Invalid | None = None
    if fam == Family.YEAR:
        if isinstance(v, int):
            bad = mysql_text.check_year(v)
    elif isinstance(v, str):
        parsed = (mysql_text.parse_date(v) if fam == Family.DATE
                  else mysql_text.parse_datetime(v) if fam == Family.DATETIME
                  else mysql_text.parse_timestamp(v, server=mysql_text.TIDB) if fam == Family.TIMESTAMP
                  else mysql_text.parse_time(v, server=mysql_text.TIDB))
        bad = parsed if isinstance(parsed, mysql_text.Invalid) else None
    if bad is None:
        return None
    if isinstance(v, int):
        return bad.reason
    return f"{v!r} is not a {fam.upper()} a server stores: {bad.reason}"


def same_datum(a: Any, b: Any) -> bool:
    """Equal values of the same type; floats bit for bit (so -0.0 differs from 0.0)."""
    if isinstance(a, float) and isinstance(b, float):
        return struct.pack("<d", a) == struct.pack("<d", b)
    return type(a) is type(b) and a == b


_NO_COLUMN = {fam: NotApplicable(f"no {fam} column") for fam in Family.ALL}


def type_findings(ev: RecordEvidence, fam: str) -> Verdict:
    """Most records have no column of a given family: say so without starting a generator."""
    bindings = _bindings(ev)[1].get(fam)
    if not bindings:
        return _NO_COLUMN[fam]
    return _type_findings(ev, bindings)


def _family_gate(fam: str) -> Any:
    def gate(ev: RecordEvidence) -> NotApplicable | None:
        return None if _bindings(ev)[1].get(fam) else _NO_COLUMN[fam]

    return gate


def _type_findings(ev: RecordEvidence, bindings: list[Binding]) -> list[Failure] | None:
    out: list[Failure] = []
    for part, col, f in bindings:
        d = _part(ev, part)
        if col is not None:
            want_t = spec.avro_type(col, ev.o)
            if f.inner != want_t:
                out.append(Failure(f"{part} field {f.name!r} ({col.type}): wrong Avro type", expected=want_t,
                                   actual=f.inner, location=ev.at(col.name, part)))
                continue
            if d.datum is None or f.name not in d.datum:
                continue
            assert ev.source is not None
            want_v = spec.native_value(col, ev.source.image[col.name], ev.o)
            got_v = d.datum[f.name]
            if not same_datum(want_v, got_v):
                out.append(Failure(f"{part} field {f.name!r} ({col.type}): wrong value", expected=_show(want_v),
                                   actual=_show(got_v), location=ev.at(col.name, part)))
        else:
            got_v = d.datum.get(f.name) if d.datum is not None else None
            fam = spec.TIDB_TYPE_FAMILY[f.tidb_type or '']
            problem = plausibility(fam, f, got_v, ev.o)
            if problem:
                out.append(Failure(f"{part} field {f.name!r} ({f.tidb_type}): {problem}",
                                   expected=f"{spec.TIDB_TYPE_FAMILY.get(f.tidb_type or '')} per the type table",
                                   actual=_show(got_v) if got_v is not None else f.inner,
                                   location=ev.at(f.name, part), hint=_version_hint(fam, f, ev.o)))
    return out or None


def _version_hint(fam: str, f: FieldView, o: spec.AvroOptions) -> str | None:
    """Which TiCDC version writes what a finding saw, when one does (notes §1.11, §1.12)."""
    if fam == Family.FLOAT and f.primitive == "double" and not o.float_as_double:
        return ("TiCDC <= v6.5.1 and v6.6.0 write FLOAT as double (#8567): check with --option float-as-double=true "
                "(--option profile=v6.5.0 for all of v6.5.0's differences)")
    if fam == Family.BIT and not o.bit_padded and isinstance(f.params.get("length"), str):
        return ("new-architecture TiCDC (pingcap/ticdc) pads BIT values to ceil(M/8) bytes: if the capture comes "
                "from it, check with --option profile=ticdc-next")
    return None


def _show(v: Any) -> Any:
    if isinstance(v, bytes):
        return "0x" + v.hex()
    if isinstance(v, float):
        return repr(v)
    return v


_TYPE_CHECKS: tuple[tuple[str, str, str], ...] = (
    (Family.INT, "TINYINT / SMALLINT / MEDIUMINT / INT (and BOOL) map to int, tidb_type INT.",
     "seed 000 §Column data format, type table rows BOOL..INT"),
    (Family.INT_UNSIGNED, "Unsigned TINYINT..MEDIUMINT map to int, INT UNSIGNED to long; tidb_type INT UNSIGNED.",
     "seed 000 type table (\"When it is unsigned, TIDB_TYPE is INT UNSIGNED\"; INT UNSIGNED is long)"),
    (Family.BIGINT, "BIGINT maps to long, tidb_type BIGINT.", "seed 000 type table row BIGINT"),
    (Family.BIGINT_UNSIGNED, "BIGINT UNSIGNED is a long that wraps above 2^63-1 (mode long) or a decimal "
     "string (mode string).", "seed 000 avro-bigint-unsigned-handling-mode; notes §1.5"),
    (Family.FLOAT, "FLOAT maps to float (double under the float-as-double profile), 4-byte little-endian.",
     "notes §1.5, §5 (docs' type table says double; code float since v6.5.2/v7.0.0, #8567)"),
    (Family.DOUBLE, "DOUBLE maps to double.", "seed 000 type table row DOUBLE"),
    (Family.BIT, "BIT(M) maps to bytes with connect.parameters.length = M; value big-endian, leading zeros "
     "trimmed, 0 as 00.", "seed 000 §BIT(64); notes §1.5, §4.7"),
    (Family.DECIMAL, "DECIMAL(M,D): bytes + logicalType decimal (precision M, scale D), value floor(v*10^D) "
     "in two's complement (mode precise); or the TiDB decimal string (mode string).",
     "seed 000 §DECIMAL(10, 4), avro-decimal-handling-mode; notes §1.5, §4.8"),
    (Family.TEXT, "CHAR / VARCHAR / TEXT family map to string, tidb_type TEXT; text unchanged.",
     "seed 000 type table rows TINYTEXT..VARCHAR"),
    (Family.BLOB, "BINARY / VARBINARY / BLOB family map to bytes, tidb_type BLOB; bytes unchanged "
     "(BINARY(n) keeps its zero padding).", "seed 000 type table rows TINYBLOB..VARBINARY"),
    (Family.ENUM, "ENUM maps to string with connect.parameters.allowed (\\, escapes commas); value is the "
     "member name.", "seed 000 §ENUM/SET(a,b,c); notes §1.5"),
    (Family.SET, "SET maps to string with connect.parameters.allowed; value is the members joined by commas "
     "in definition order.", "seed 000 §ENUM/SET(a,b,c); notes §1.5"),
    (Family.JSON, "JSON maps to string: TiDB's JSON text (MySQL spacing).", "seed 000 type table row JSON; notes §1.5"),
    (Family.DATE, "DATE maps to string YYYY-MM-DD (zero date 0000-00-00).", "seed 000 type table row DATE; notes §1.5"),
    (Family.DATETIME, "DATETIME(fsp) maps to string YYYY-MM-DD HH:MM:SS with exactly fsp fraction digits.",
     "seed 000 type table row DATETIME; notes §1.5"),
    (Family.TIMESTAMP, "TIMESTAMP(fsp) maps to string in the TiCDC server time zone, no offset.",
     "seed 000 type table row TIMESTAMP; notes §1.5, §3.1"),
    (Family.TIME, "TIME(fsp) maps to string [-]HH:MM:SS[.f] (hours up to 838).",
     "seed 000 type table row TIME; notes §1.5"),
    (Family.YEAR, "YEAR maps to int.", "seed 000 type table row YEAR"),
    (Family.VECTOR, "VECTOR maps to string with tidb_type TiDBVECTORFloat32: TiDB's vector text [1,2.5] (each "
     "element Go's shortest float32 'f' form).",
     "notes §1.5 (VECTOR(FLOAT32) -> string \"[1,2,3]\", v8.5+; avro.go columnToAvroSchema / columnToAvroData: "
     "VectorFloat32.String())"),
)


def _register_type_check(fam: str, doc: str, clause: str) -> None:
    def fn(ev: RecordEvidence) -> Verdict:
        return type_findings(ev, fam)

    fn.__doc__ = doc
    fn.__name__ = fn.__qualname__ = f"type_{fam.replace('-', '_')}"
    check(f"type.{fam}", level=Level.MUST, scope=Scope.RECORD, clause=clause,
          gate=(schemas_key, _family_gate(fam)))(fn)


for _fam, _doc, _clause in _TYPE_CHECKS:
    _register_type_check(_fam, _doc, _clause)


def _no_decimal_field(ev: RecordEvidence) -> NotApplicable | None:
    return None if any(f.logical == "decimal" for _p, _c, f in _bindings(ev)[0]) else _NO_DECIMAL


_NO_DECIMAL = NotApplicable("no precise decimal value")


@check("type.decimal-minimal-bytes", level=Level.SHOULD, scope=Scope.RECORD,
       clause=f"{NOTES} §1.5 (goavro writes minimal two's complement: 0 -> 00, -128 -> 80); Avro spec "
              "§Decimal does not require minimality, so readers accept both", gate=(schemas_key, _no_decimal_field))
def decimal_minimal(ev: RecordEvidence) -> Findings:
    """Precise decimals use the minimal two's-complement bytes, as TiCDC (goavro) and Java write them."""
    seen = False
    for part, d, col, f in _column_fields(ev):
        if f.logical != "decimal" or d.datum is None:
            continue
        v = d.datum.get(f.name)
        if not isinstance(v, bytes) or not v:
            continue
        seen = True
        if len(v) > 1 and ((v[0] == 0 and v[1] < 0x80) or (v[0] == 0xFF and v[1] >= 0x80)):
            yield Failure(f"{part} field {f.name!r}: decimal bytes 0x{v.hex()} carry a redundant sign byte",
                          expected="0x" + v[1:].hex(), actual="0x" + v.hex(),
                          location=ev.at(col.name if col else f.name, part))
    if not seen:
        yield _NO_DECIMAL


# == keys, deletes ======================================================================

def _no_key_to_judge(ev: RecordEvidence) -> NotApplicable | None:
    if ev.control is not None:
        return NotApplicable(f"a {ev.control.kind} control record has no key by design")
    k = ev.key
    if ev.record.key is not None and (k is None or k.view is None or k.view.error):
        return _KEY_UNRESOLVED
    return None


_KEY_UNRESOLVED = NotApplicable("key schema unresolved")


@check("key.columns", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Key data format (primary key or unique index columns); {NOTES} §1.3 (handle key, "
              "table column order)", gate=(shape_key, _no_key_to_judge))
def key_columns(ev: RecordEvidence) -> Verdict:
    """The key holds exactly the handle-key columns (PK, else the NOT NULL unique key) with the row's values."""
    na = _no_key_to_judge(ev)
    if na is not None:
        return na
    if ev.record.key is None:
        return Failure("record has no key", expected="the handle-key columns", actual=None, location=ev.at(part="key"))
    k, v = ev.key, ev.value
    assert k is not None and k.view is not None  # a key that is there resolved (the gate)
    out: list[Failure] = []
    if ev.source is not None:
        cols = spec.key_columns(ev.source.table)
        want = [spec.sanitize_name(c.name) for c in cols]
        got = [f.name for f in k.view.fields]
        if got != want:
            out.append(Failure("key fields are not the handle-key columns", expected=want, actual=got,
                               location=ev.at(part="key")))
        elif k.datum is not None:
            for c, name in zip(cols, want, strict=True):
                wv = spec.native_value(c, ev.source.image[c.name], ev.o)
                if not same_datum(wv, k.datum.get(name)):
                    out.append(Failure(f"key value of {name!r} differs from the row", expected=_show(wv),
                                       actual=_show(k.datum.get(name)), location=ev.at(c.name, "key")))
    for f in k.view.fields:
        if f.nullable:
            out.append(Failure(f"key field {f.name!r} is nullable; handle-key columns are NOT NULL",
                               expected="plain type", actual=f.type, location=ev.at(f.name, "key")))
    if v is not None and v.view is not None and not v.view.error:
        for f in k.view.fields:
            vf = v.view.by_name.get(f.name)
            if vf is None:
                out.append(Failure(f"key field {f.name!r} is not a value field", expected="a column of the row",
                                   actual=[x.name for x in v.view.fields], location=ev.at(f.name, "key")))
            elif vf.inner != f.inner:
                out.append(Failure(f"key field {f.name!r} has another type than in the value", expected=vf.inner,
                                   actual=f.inner, location=ev.at(f.name, "key")))
            elif k.datum is not None and v.datum is not None and not same_datum(
                    k.datum.get(f.name), v.datum.get(f.name)):
                out.append(Failure(f"key field {f.name!r} differs from the value's",
                                   expected=_show(v.datum.get(f.name)),
                                   actual=_show(k.datum.get(f.name)), location=ev.at(f.name, "key")))
    return out or None


@check("key.no-extension", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §TiDB extension fields (added to the Value); {NOTES} §1.3 (never in the key)",
       cache_key=schemas_key)
def key_no_extension(ev: RecordEvidence) -> Verdict:
    """The key schema never carries `_tidb_*` extension fields."""
    k = ev.key
    if k is None or k.view is None or k.view.error:
        return NotApplicable("key schema unresolved")
    ext = [f.name for f in k.view.fields if f.is_extension]
    if ext:
        return Failure("key schema has extension fields", expected=[], actual=ext, location=ev.at(part="key"))
    return None


def _not_a_tombstone(ev: RecordEvidence) -> NotApplicable | None:
    return _NOT_TOMBSTONE if ev.source is None and ev.record.value is not None else None


_NOT_TOMBSTONE = NotApplicable("not a tombstone (the source is unknown)")


@check("delete.tombstone", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 (\"For Delete events, Avro only encodes the Key part. The Value part is empty\"); seed 001 "
              f"(no extension fields for delete.on.null sinks); {NOTES} §1.1", gate=(shape_key, _not_a_tombstone))
def tombstone(ev: RecordEvidence) -> Verdict:
    """A DELETE is a key with a null value (a Kafka tombstone); nothing else has a null value."""
    na = _not_a_tombstone(ev)
    if na is not None:
        return na
    is_tomb = ev.record.value is None
    if ev.source is not None:
        if ev.source.op is Op.DELETE and not is_tomb:
            return Failure("a DELETE was sent with a value", expected="null value (tombstone)",
                           actual=f"{len(ev.record.value or b'')} value bytes", location=ev.at(part="value"))
        if ev.source.op is not Op.DELETE and is_tomb:
            return Failure(f"an {ev.source.op.value.upper()} was sent as a tombstone", expected="a value",
                           actual=None, location=ev.at(part="value"))
        return None
    if ev.record.key is None:
        return Failure("tombstone without a key", expected="the deleted row's key", actual=None,
                       location=ev.at(part="key"))
    return None


# == extension fields ===================================================================

@check("extension.fields", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 §TiDB extension fields; seed 003; "
              f"{NOTES} §1.4 (types and defaults; no defaults before v7.1.0), §1.6 (checksum fields), §5",
       cache_key=schemas_key)
def extension_fields(ev: RecordEvidence) -> Verdict:
    """With enable-tidb-extension the value ends with _tidb_op (string), _tidb_commit_ts and
    _tidb_commit_physical_time (long) [+ the three checksum fields]; without it, none of them."""
    v = ev.value
    if v is None or v.view is None or v.view.error:
        return NotApplicable("no value schema (tombstone or unresolved)")
    got = [(f.name, f.type, f.default if f.has_default else "<absent>") for f in v.view.fields if f.is_extension]
    want = [(n, spec._EXT_TYPES[n][0], spec._EXT_TYPES[n][1] if ev.o.extension_defaults else "<absent>")
            for n in spec.expected_extension_names(ev.o)]
    if got != want:
        return Failure("extension fields differ from the option settings",
                       expected=[{"name": n, "type": t, "default": d} for n, t, d in want],
                       actual=[{"name": n, "type": t, "default": d} for n, t, d in got], location=ev.at(part="value"),
                       hint=f"enable-tidb-extension={str(ev.o.extension).lower()}, "
                            f"integrity checksum={'on' if ev.o.checksum else 'off'}"
                            + ("; TiCDC <= v7.0.x writes extension fields without defaults: check with "
                               "--option profile=v7.0" if ev.o.extension_defaults and got and
                               all(d == "<absent>" for _n, _t, d in got) else ""))
    return None


def _ext_datum(ev: RecordEvidence) -> dict[str, Any] | NotApplicable:
    if not ev.o.extension:
        return _EXTENSION_OFF
    v = ev.value
    if v is None or v.datum is None:
        return _NO_VALUE
    return v.datum


_EXTENSION_OFF = NotApplicable("enable-tidb-extension is off")
_NO_VALUE = NotApplicable("no decoded value")
_CHECKSUM_OFF = NotApplicable("integrity checksum is off")


def _no_extension_datum(ev: RecordEvidence) -> NotApplicable | None:
    d = _ext_datum(ev)
    return d if isinstance(d, NotApplicable) else None


def _no_checksum(ev: RecordEvidence) -> NotApplicable | None:
    return _CHECKSUM_OFF if not ev.o.checksum else _no_extension_datum(ev)


@check("extension.op", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 (\"c\" indicates insert and \"u\" indicates updates); " f"{NOTES} §1.6",
       needs_options={"enable-tidb-extension": "true"}, gate=(shape_key, _no_extension_datum))
def extension_op(ev: RecordEvidence) -> Verdict:
    """`_tidb_op` is "c" for an insert (including the insert half of a split update), "u" for an update."""
    d = _ext_datum(ev)
    if isinstance(d, NotApplicable):
        return d
    got = d.get("_tidb_op")
    if ev.source is not None:
        want = "c" if ev.source.op is Op.INSERT else "u"
        if got != want:
            return Failure("wrong _tidb_op", expected=want, actual=got, location=ev.at("_tidb_op", "value"))
    elif got not in ("c", "u"):
        return Failure("_tidb_op is neither \"c\" nor \"u\"", expected=["c", "u"], actual=got,
                       location=ev.at("_tidb_op", "value"))
    return None


@check("extension.commit-ts", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 (_tidb_commit_ts, _tidb_commit_physical_time); "
              f"{NOTES} §1.6 (physical time = commitTs >> 18)",
       needs_options={"enable-tidb-extension": "true"}, gate=(shape_key, _no_extension_datum))
def extension_commit_ts(ev: RecordEvidence) -> Verdict:
    """`_tidb_commit_ts` is the transaction's commit TSO and `_tidb_commit_physical_time` its
    physical part (ts >> 18)."""
    d = _ext_datum(ev)
    if isinstance(d, NotApplicable):
        return d
    ts, phys = d.get("_tidb_commit_ts"), d.get("_tidb_commit_physical_time")
    out = []
    if ev.source is not None and ts != ev.source.commit_ts:
        out.append(Failure("wrong _tidb_commit_ts", expected=ev.source.commit_ts, actual=ts,
                           location=ev.at("_tidb_commit_ts", "value")))
    if isinstance(ts, int) and phys != tso_physical_ms(ts):
        out.append(Failure("_tidb_commit_physical_time is not _tidb_commit_ts >> 18", expected=tso_physical_ms(ts),
                           actual=phys, location=ev.at("_tidb_commit_physical_time", "value")))
    return out or None


@check("extension.checksum", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.6 (CRC32-IEEE over columns in column-ID order); docs ticdc-avro-checksum-verification",
       needs_options={"integrity-check-level": "correctness"}, gate=(shape_key, _no_checksum))
def extension_checksum(ev: RecordEvidence) -> Verdict:
    """`_tidb_row_level_checksum` is the CRC32 of the row's columns as a consumer recomputes it, and
    `_tidb_corrupted` is false."""
    na = _no_checksum(ev)
    if na is not None:
        return na
    v = ev.value
    assert v is not None and v.view is not None and v.datum is not None  # the gate: a decoded value
    d = v.datum
    got = d.get("_tidb_row_level_checksum")
    if d.get("_tidb_corrupted") is not False:
        return Failure("_tidb_corrupted is set", expected=False, actual=d.get("_tidb_corrupted"),
                       location=ev.at("_tidb_corrupted", "value"))
    if got in (None, ""):
        return NotApplicable("the event carried no checksum")
    crc = 0
    for f in v.view.fields:
        if f.is_extension:
            break
        crc = zlib.crc32(spec.checksum_bytes(f.tidb_type or "", d.get(f.name), f.params, ev.o.tz), crc)
    if str(crc) != got:
        return Failure("row checksum does not match the columns", expected=str(crc), actual=got,
                       location=ev.at("_tidb_row_level_checksum", "value"),
                       hint="recomputed like TiCDC's consumer: CRC32-IEEE over the fields in schema order")
    return None


# == topics =============================================================================

@check("topic.dispatch", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 §Topic distribution ({schema}/{table} rule); "
              f"{NOTES} §1.8 (characters outside [A-Za-z0-9._-] become _)", needs_source=True,
       cache_key=lambda ev: (ev.record.topic, ev.source.topic if ev.source is not None else None))
def topic_dispatch(ev: RecordEvidence) -> Verdict:
    """A row goes to the topic its dispatcher rule names, with schema/table substituted and sanitised."""
    if ev.source is None:
        return NotApplicable("needs the source table")
    if ev.record.topic != ev.source.topic:
        return Failure("record is in the wrong topic", expected=ev.source.topic, actual=ev.record.topic,
                       location=ev.at())
    return None


@check("topic.one-table", level=Level.MUST, scope=Scope.STREAM,
       clause="seed 000 §Topic distribution (\"TiCDC Avro prohibits mapping multiple tables to the same "
              f"topic\"); seed 003; {NOTES} §1.8 (a topic rule with {{schema}} and {{table}} is enforced)",
       docs_vs_code="docs: one table per topic, always; code: only a topic expression is validated, a "
                    "hard-coded topic (no placeholders) may carry several tables (#9755)")
def one_table_per_topic(ev: StreamEvidence) -> Verdict:
    """Every record of a topic comes from one table (one record name and namespace), unless the
    topic rule is hard-coded."""
    if ev.hard_coded_topic:
        return NotApplicable("a hard-coded topic: TiCDC lets several tables share it (notes §1.8, #9755)")
    if not ev.record_names:
        return NotApplicable("no decodable record in the topic")
    if len(ev.record_names) > 1:
        names = sorted(f"{ns}.{n}" for ns, n in ev.record_names)
        return Failure(f"topic {ev.topic!r} carries {len(names)} tables", expected="one table",
                       actual=names, location=next(iter(ev.record_names.values())))
    return None


# == control messages (avro-enable-watermark) ==========================================

WATERMARK = {"avro-enable-watermark": "true", "enable-tidb-extension": "true"}
WATERMARK_CLAUSE = (f"{NOTES} §1.9 (avro-enable-watermark: testing only, honoured with enable-tidb-extension; "
                    "avro.go EncodeDDLEvent / EncodeCheckpointEvent), §1.10 (TiCDC's decoder: no key, first value "
                    "byte 0x01 DDL, 0x02 checkpoint)")


def _only_control(kind: str, na: NotApplicable) -> Callable[[RecordEvidence], NotApplicable | None]:
    """The gate of a check about one kind of control record."""

    def gate(ev: RecordEvidence) -> NotApplicable | None:
        return None if ev.control is not None and ev.control.kind == kind else na

    return gate


_only_ddl = _only_control("ddl", NotApplicable("not a DDL control record"))
_only_checkpoint = _only_control("checkpoint", NotApplicable("not a checkpoint control record"))


def _short(raw: bytes, limit: int = 120) -> str:
    return "0x" + raw[:limit].hex() + ("…" if len(raw) > limit else "")


@check("watermark.ddl-message", level=Level.MUST, scope=Scope.RECORD,
       clause=WATERMARK_CLAUSE + "; struct ddlEvent {query, type (TiDB ActionType), schema, table, commitTs}",
       needs_options=WATERMARK, gate=(shape_key, _only_ddl))
def watermark_ddl_message(ev: RecordEvidence) -> Findings:
    """A DDL control record is a null key and 0x01 followed by Go's compact JSON of {query, type,
    schema, table, commitTs} in that order; with the workload: the DDL's SQL, TiDB action type,
    table (after the DDL) and commit ts."""
    na = _only_ddl(ev)
    if na is not None:
        yield na
        return
    c = ev.control
    assert c is not None
    if c.problem:
        yield Failure(f"malformed DDL control record: {c.problem}",
                      expected='0x01 {"query":…,"type":…,"schema":…,"table":…,"commitTs":…}',
                      actual=c.raw[:200].decode("utf-8", "replace"), location=ev.at(part="value"))
        return
    src = ev.control_source
    if isinstance(src, Watermark):
        yield Failure("a watermark produced a DDL control record", expected="0x02 checkpoint",
                      actual=c.fields, location=ev.at(part="value"))
    elif isinstance(src, Ddl):
        want = watermark.ddl_fields(src)
        if c.fields != want:
            diff = sorted(k for k in want if c.fields is None or c.fields.get(k) != want[k])
            yield Failure(f"the DDL control record does not describe its DDL ({', '.join(diff)} differ)",
                          expected=want, actual=c.fields, location=ev.at(part="value"))


@check("watermark.checkpoint-message", level=Level.MUST, scope=Scope.RECORD,
       clause=WATERMARK_CLAUSE + " (binary.Write big-endian of checkpointByte and the uint64 ts)",
       needs_options=WATERMARK,
       gate=(shape_key, _only_checkpoint))
def watermark_checkpoint_message(ev: RecordEvidence) -> Findings:
    """A checkpoint control record is a null key and 0x02 followed by the resolved ts as a
    big-endian unsigned 64-bit integer (9 bytes); with the workload: the watermark's ts."""
    na = _only_checkpoint(ev)
    if na is not None:
        yield na
        return
    c = ev.control
    assert c is not None
    if c.problem:
        yield Failure(f"malformed checkpoint control record: {c.problem}", expected="0x02 + 8 bytes",
                      actual=_short(c.raw), location=ev.at(part="value"))
        return
    src = ev.control_source
    if isinstance(src, Ddl):
        yield Failure("a DDL produced a checkpoint control record", expected="0x01 + JSON", actual=_short(c.raw),
                      location=ev.at(part="value"))
    elif isinstance(src, Watermark) and c.ts != src.ts:
        yield Failure("wrong checkpoint ts", expected=src.ts, actual=c.ts, location=ev.at(part="value"),
                      hint=f"bytes after 0x02: {c.raw[1:].hex()}; the ts is big-endian "
                           f"({src.ts.to_bytes(8, 'big').hex()})")


def _covered(st: StreamEvidence) -> tuple[int, int]:
    """The ts range every partition's log covers (exclusive bounds): a capture may start and stop
    anywhere, so a broadcast near its edges may be cut."""
    lo, hi = -1, 1 << 64
    for p in st.partitions:
        ts = [e.ts for e in st.logs.get(p, ()) if e.ts is not None]
        if not ts:
            return 0, 0
        lo, hi = max(lo, min(ts)), min(hi, max(ts))
    return lo, hi


@check("watermark.broadcast", level=Level.MUST, scope=Scope.STREAM,
       clause=WATERMARK_CLAUSE + "; mq_ddl_sink.go (DDL dispatch rule PartitionAll for every protocol but Canal: "
              "a DDL to every partition of its topic, a checkpoint to every partition of every active topic)",
       needs_options=WATERMARK)
def watermark_broadcast(st: StreamEvidence) -> Findings:
    """Every DDL and checkpoint control record reaches every partition of its topic."""
    where: dict[Any, set[int]] = {}
    what: dict[Any, tuple[str, int | None]] = {}
    for part, entries in st.logs.items():
        for e in entries:
            if e.kind != "row":
                where.setdefault(e.identity, set()).add(part)
                what[e.identity] = (e.kind, e.ts)
    if not where:
        yield NotApplicable("no control record in the topic")
        return
    want = set(st.partitions)
    if len(want) < 2:
        yield NotApplicable("the topic has one partition" if st.partition_count is not None
                            else "one partition seen: a broadcast cannot be judged (check the topic's partitions "
                                 "together)")
        return
    lo, hi = (-1, 1 << 65) if st.with_source else _covered(st)
    failures = 0
    for ident, parts in where.items():
        kind, ts = what[ident]
        if parts != want and ts is not None and lo < ts < hi:
            missing = sorted(want - parts)
            yield Failure(f"a {kind} control record (ts {ts}) is missing from partition(s) {missing}",
                          expected=sorted(want), actual=sorted(parts),
                          location=Location(topic=st.topic, partition=missing[0] if missing else None))
            failures += 1
            if failures >= 10:
                return


@check("watermark.order", level=Level.MUST, scope=Scope.STREAM,
       anomalies=(Anomaly.LATE_EVENT_AFTER_WATERMARK, Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK),
       clause=WATERMARK_CLAUSE + "; checkpoint = every change with commitTs <= ts has been flushed; a DDL is "
              "written after the rows of earlier transactions (the DDL barrier); notes §3.5 (replays after a "
              "restart are duplicates)",
       needs_options=WATERMARK)
def watermark_order(st: StreamEvidence) -> Findings:
    """In each partition, checkpoints never go back, and no row first appears after a checkpoint
    at or above its commit ts, or after a DDL with a larger commit ts."""
    seen = False
    for part, entries in sorted(st.logs.items()):
        cp: StreamEntry | None = None
        ddl: StreamEntry | None = None
        for e in entries:
            if not e.first or e.ts is None:
                continue  # a replayed copy (at-least-once) is judged by the delivery checks
            loc = Location(topic=st.topic, partition=part, offset=e.offset)
            if e.kind == "checkpoint":
                seen = True
                if cp is not None and cp.ts is not None and e.ts < cp.ts:
                    yield Failure(f"partition {part}: checkpoint {e.ts} after checkpoint {cp.ts}",
                                  expected=f">= {cp.ts}", actual=e.ts, location=loc)
                    break
                cp = e
            elif e.kind == "ddl":
                seen = True
                if ddl is None or (ddl.ts is not None and e.ts > ddl.ts):
                    ddl = e
            elif cp is not None and cp.ts is not None and e.ts <= cp.ts:
                yield Failure(f"partition {part}: a row of commit ts {e.ts} first appears after checkpoint {cp.ts} "
                              "(late-event-after-watermark)", expected=f"commit ts > {cp.ts}", actual=e.ts,
                              location=loc, hint=f"the checkpoint is at offset {cp.offset}")
                break
            elif ddl is not None and ddl.ts is not None and e.ts < ddl.ts:
                yield Failure(f"partition {part}: a row of commit ts {e.ts} first appears after the DDL of "
                              f"commit ts {ddl.ts}", expected=f"commit ts >= {ddl.ts}", actual=e.ts, location=loc,
                              hint=f"the DDL is at offset {ddl.offset}")
                break
    if not seen:
        yield NotApplicable("no control record in the topic")


# == events (need the workload) =========================================================

@check("event.records", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{NOTES} §1.1 (one message per row change; DDL and resolved events are not sent)",
       needs_source=True)
def event_records(ev: EventEvidence) -> Verdict:
    """Each row change yields its records (nothing missing, nothing extra); DDL and watermarks
    yield none, or with avro-enable-watermark one control record per partition of their topics."""
    if isinstance(ev.event, (Ddl, Watermark)):
        got = Counter((r.record.topic, r.record.partition or 0, r.control.kind if r.control else "row")
                      for r in ev.records)
        if got != ev.expected_controls:
            name = type(ev.event).__name__
            if not ev.expected_controls:
                return Failure(f"a {name} produced records; the Avro protocol sends none (without "
                               "avro-enable-watermark)", expected=0, actual=len(ev.records),
                               location=ev.records[0].at())
            return Failure(f"a {name} did not produce one control record per partition of its topics",
                           expected=_controls_text(ev.expected_controls), actual=_controls_text(got),
                           hint=f"missing {_controls_text(ev.expected_controls - got)}, "
                                f"unexpected {_controls_text(got - ev.expected_controls)}")
        return None
    out = []
    for r in ev.controls:
        out.append(Failure("a transaction produced a DDL/checkpoint control record", expected="row records only",
                           actual=r.control.kind if r.control else None, location=r.at()))
    for s in ev.missing:
        out.append(Failure(f"no record for {s.op.value} of {s.table.qualified_name}",
                           expected={"topic": s.topic, "op": s.op.value, "row": _row_text(s)},
                           actual=None, location=_src_loc(s)))
    for r in ev.unexpected:
        out.append(Failure("record matches no row change of the transaction", expected=None,
                           actual=_record_text(r), location=r.at()))
    return out or None


@check("update.split-key-change", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{NOTES} §3.4 (an UPDATE changing a primary/unique key is sent as DELETE + INSERT unless "
              "output-raw-change-event=true)", needs_source=True)
def update_split(ev: EventEvidence) -> Verdict:
    """An UPDATE that changes a key column is sent as a tombstone for the old key, then an insert."""
    if not isinstance(ev.event, Transaction):
        return NotApplicable("not a transaction")
    splits = [s for s in ev.expected if s.split]
    if not splits:
        return NotApplicable("no key-changing update" if not ev.o.raw_change_event else "raw change events")
    out = []
    for s in splits:
        if s in ev.missing:
            what = "tombstone for the old key" if s.op is Op.DELETE else "insert of the new row"
            out.append(Failure(f"key-changing UPDATE of {s.table.qualified_name} is missing its {what}",
                               expected="DELETE(old key) then INSERT(new row)", actual="not found",
                               location=_src_loc(s)))
    return out or None


def _controls_text(c: Counter[tuple[str, int, str]]) -> list[str]:
    return [f"{kind} in {topic}[{part}]" + (f" ×{n}" if n > 1 else "") for (topic, part, kind), n in sorted(c.items())]


def _src_loc(s: Any) -> Any:
    from ...checks.registry import Location

    return Location(topic=s.topic, table=s.table.qualified_name)


def _row_text(s: Any) -> dict[str, Any]:
    return {c.name: _show(spec.native_value(c, s.image[c.name], spec.AvroOptions()))
            for c in s.table.handle_key_columns()}


def _record_text(r: RecordEvidence) -> dict[str, Any]:
    return {"topic": r.record.topic, "key": _show(r.key.datum) if r.key and r.key.datum else None,
            "value": "null" if r.record.value is None else f"{len(r.record.value)} bytes"}
