"""The TiCDC Avro type table: each type family's Avro type and value rules, one check per
family, and the decimal encoding."""

from __future__ import annotations

import json
import math
import re
import struct
from typing import Any

from ....checks.compiled import Seen, Source
from ....checks.registry import Failure, Level, NotApplicable, Scope, Verdict
from ....model import mysql_text, values
from ....model.values import parse_vector
from ...kit import Findings
from .. import spec
from ..decoder import FieldView
from ..evidence import RecordEvidence
from ..spec import Family
from .common import FAST, NOTES, check, schemas_key
from .schema import Binding, _bindings, _column_fields, _part

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
    FAST.same(CHECKS_PREFIX + f"type.{fam}")(_type_fast(fam))


CHECKS_PREFIX = spec.PROTOCOL + "."


# -- the fast path of the type checks (checks.compiled) ---------------------------------------------

#: Types whose `same_datum` is plain `==` between values of the one type (no float: bit for bit).
SAME_BY_EQUALITY = frozenset({int, str, bytes, bool, type(None)})


def emit_same_datum(src: Source, a: str, b: str) -> None:
    """Lines rejecting a record unless `same_datum(a, b)`: values of one of `SAME_BY_EQUALITY`'s
    types compared inline, anything else by `same_datum` itself."""
    same = src.const(same_datum, "same")
    exact = src.const(SAME_BY_EQUALITY, "exact")
    x, y = src.fresh("a"), src.fresh("b")
    src.line(f"{x} = {a}")
    src.line(f"{y} = {b}")
    src.line(f"if not ({x}.__class__ is {y}.__class__ and {x}.__class__ in {exact} and {x} == {y}) "
             f"and not {same}({x}, {y}): return None")


#: Values a family's value rule surely passes, recognised without running the rule (each a subset
#: of what the rule accepts: `tests/unit/test_fast_paths.py` holds them to the rules). An
#: expression over the value `{v}`; a value it does not recognise goes to the rule itself.
_DAY = r"(?:0[0-9]|1[0-2])-(?:[0-2][0-9]|3[01])"
_CLOCK = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"
# TIMESTAMP: a calendar date of 1971..2037 (inside TiDB's range in any time zone), any clock.
_TS_DAY = (r"(?:197[1-9]|19[89][0-9]|20[0-2][0-9]|203[0-7])-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
           r"|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")
QUICK_TEXT: dict[str, re.Pattern[str]] = {
    Family.DATE: re.compile(r"[0-9]{4}-" + _DAY),
    Family.DATETIME: re.compile(r"[0-9]{4}-" + _DAY + " " + _CLOCK),
    Family.TIMESTAMP: re.compile(_TS_DAY + " " + _CLOCK),
    # Under 838 hours: inside TiDB's TIME range whatever the fraction; negative, but not a
    # negative zero (which the rule refuses: a server prints it as 00:00:00).
    Family.TIME: re.compile(r"(?:-(?!0+:00:00(?:\.0+)?\Z))?"
                            r"(?:[0-9]{2}|[0-7][0-9]{2}|8[0-2][0-9]|83[0-7]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,6})?"),
}
_QUICK_EXPR: dict[str, str] = {
    Family.INT_UNSIGNED: "{v}.__class__ is int and {v} >= 0",
    Family.FLOAT: "{v}.__class__ is float and {isfinite}({v})",
    Family.DOUBLE: "{v}.__class__ is float and {isfinite}({v})",
}

def quick_vector(text: str) -> bool:
    """A vector text `parse_vector` surely accepts (each element a `quick_float32_text`)."""
    return values.quick_vector(text, values.quick_float32_text)


#: Families whose quick test is a function call worth remembering (its values repeat): run by the
#: memoised rule before the rule itself (`memoised_rule`'s `quick`).
_QUICK_FN: dict[str, Any] = {Family.VECTOR: quick_vector}
_MEMO_TYPES = frozenset({str, bytes, int})
_MEMO_MAX = 4096


def _no_value_problem(fam: str, o: spec.AvroOptions) -> bool:
    """The family's value rule passes every value under these options (it judges nothing): no
    line for it. BIGINT UNSIGNED in long mode (`_bigint_unsigned_value` reads only the string
    mode)."""
    return fam == Family.BIGINT_UNSIGNED and not o.bigint_unsigned_string


def field_quick(fam: str, f: FieldView, o: spec.AvroOptions, src: Source, v: str) -> str | None:
    """An expression over the value `v` of field `f` (its schema plausible for `fam`) true only
    where the family's value rule passes it, with what the rule reads off the field worked out
    once; None for a family without one. YEAR: an int 0 or YEAR_MIN..YEAR_MAX; DECIMAL (precise):
    non-empty bytes too short to reach 10^precision (L bytes of two's complement hold at most
    2^(8L-1) in magnitude); BIT (minimal bytes): 1..8 bytes, no leading zero byte but for 0x00,
    the value within the field's bit width."""
    if fam == Family.YEAR:
        return f"({v}.__class__ is int and ({v} == 0 or {mysql_text.YEAR_MIN} <= {v} <= {mysql_text.YEAR_MAX}))"
    if fam == Family.DECIMAL and not o.decimal_string and isinstance(f.precision, int):
        n = 0
        while 2 ** (8 * (n + 1) - 1) < 10 ** f.precision:
            n += 1
        return f"({v}.__class__ is bytes and 0 < len({v}) <= {n})" if n else None
    if fam == Family.BIT and not o.bit_padded:
        width = int(f.params["length"])  # a plausible field's: digits, 1..64
        from_bytes = src.const(int.from_bytes, "from_bytes")
        return (f"({v}.__class__ is bytes and 0 < len({v}) <= 8 and ({v}[0] != 0 or len({v}) == 1)"
                f" and not {from_bytes}({v}, 'big') >> {width})")
    return None


def memoised_rule(rule: Any, f: FieldView, o: spec.AvroOptions, quick: Any = None
                  ) -> tuple[Any, dict[Any, type]]:
    """`rule(f, v, o)` for one field, remembered per value (str, bytes or int: values of one
    field repeat, and a rule is a function of the value alone), and the values it passed, each
    with its class: generated code tests `passed.get(v) is v.__class__` inline before calling
    (the class test keeps `1` from answering for `True` or `1.0`). `quick`, if given, is tried
    before the rule on a value not yet seen (a subset of what the rule passes)."""
    memo: dict[Any, str | None] = {}
    passed: dict[Any, type] = {}

    def judge(v: Any) -> str | None:
        if v.__class__ not in _MEMO_TYPES:
            return rule(f, v, o)  # type: ignore[no-any-return]
        try:
            return memo[v]
        except KeyError:
            pass
        problem: str | None = None if quick is not None and quick(v) else rule(f, v, o)
        if len(memo) >= _MEMO_MAX:
            memo.clear()
            passed.clear()
        memo[v] = problem
        if problem is None:
            passed[v] = v.__class__
        return problem

    return judge, passed


def passed_expression(src: Source, passed: dict[Any, type], v: str) -> str:
    """The inline test that `v` is a value `memoised_rule` passed (its `passed`): the same value
    of the same class."""
    return f"{src.const(passed, 'passed')}.get({v}) is {v}.__class__"


def _type_fast(fam: str) -> Any:
    def rule(ev: RecordEvidence, src: Source) -> bool:
        """Without the source: each field of the family has a schema that fits its `tidb_type`
        (decided by the schema), and each non-null value passes the family's value rule."""
        if ev.source is not None:
            return False
        bindings = _bindings(ev)[1].get(fam)
        if not bindings:
            return False
        value_rule = _VALUE_RULES.get(fam)
        for part, _col, f in bindings:
            if field_plausibility(fam, f, ev.o) is not None:
                return False
            if value_rule is None or _no_value_problem(fam, ev.o):
                continue
            v = src.fresh("v")
            src.line(f"{v} = {'kd' if part == 'key' else 'vd'}.get({src.const(f.name, 'n')})")
            judge, passed = memoised_rule(value_rule, f, ev.o, _QUICK_FN.get(fam))
            known = passed_expression(src, passed, v)
            quick = ""
            if fam in QUICK_TEXT:
                m = src.const(QUICK_TEXT[fam].fullmatch, "quick")
                quick = f"({v}.__class__ is str and {m}({v}) is not None) or "
            elif fam in _QUICK_EXPR:
                quick = "(" + _QUICK_EXPR[fam].format(v=v, isfinite=src.const(math.isfinite, "isfinite")) + ") or "
            elif (expr := field_quick(fam, f, ev.o, src, v)) is not None:
                quick = f"{expr} or "
            src.line(f"if {v} is not None and not ({quick}{known} or {src.const(judge, 'rule')}({v}) is None): "
                     "return None")
        return True

    return rule


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


@FAST.rule("type.decimal-minimal-bytes")
def _decimal_minimal_fast(ev: RecordEvidence, src: Source) -> bool | Seen:
    """No precise decimal value has a redundant sign byte; the check passes where some value is
    non-empty bytes and has nothing to judge elsewhere (`Seen`)."""
    if ev.source is not None:
        return False
    seen = src.fresh("seen")
    src.line(f"{seen} = False")
    for part, _col, f in _bindings(ev)[0]:
        if f.logical != "decimal":
            continue
        v = src.fresh("v")
        src.line(f"{v} = {'kd' if part == 'key' else 'vd'}.get({src.const(f.name, 'n')})")
        src.line(f"if isinstance({v}, bytes) and {v}:")
        src.line(f"{seen} = True", 2)
        src.line(f"if len({v}) > 1 and (({v}[0] == 0 and {v}[1] < 0x80) or ({v}[0] == 0xFF and {v}[1] >= 0x80)):"
                 " return None", 2)
    return Seen(seen, _NO_DECIMAL.reason)
