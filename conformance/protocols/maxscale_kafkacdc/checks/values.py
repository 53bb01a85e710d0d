"""The MaxScale KafkaCDC value rules: each column type's value as MaxScale writes it, judged
against its schema event and, with the workload, the row."""

from __future__ import annotations

import decimal
import re
from collections.abc import Callable, Iterator
from typing import Any

from ....checks.compiled import Seen, Source
from ....checks.registry import Failure, Level, NotApplicable, Scope
from ....model import mysql_text
from ....model.types import INTEGER_KINDS, Kind
from ....model.values import to_float32
from ...kit import Findings, brief
from .. import spec
from ..checker import RecordEvidence
from ..decoder import Column, is_int
from ..fastpath import read_group
from ..spec import NOTES, SEED
from ..tracker import row_values
from .common import NO_SOURCE_ROW, NOT_DML, _dml, _row, check, fast

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

    def judge(name: str, declared: Column, v: Any) -> Failure | None:
        assert declared.real_type is not None
        family = spec.json_family(declared.real_type)
        kind = _json_kind(v)
        if kind == family or (family == "number" and kind == "integer"):
            return None
        return Failure(f"a {declared.real_type} column holds a JSON {kind}", expected=f"null or a JSON {family}",
                       actual=brief(v, 80), location=ev.at(name))

    yield from declared_values(ev, judge, none=_NO_DECLARED)


_NO_DECLARED = "no column whose declared type is known (no schema event of the table seen, no workload)"


def _declared(ev: RecordEvidence) -> list[tuple[str, Column]]:
    """(name, declared column) of a DML event's columns whose declared type is known: decided by
    the kind (its keys and the schema event it is read with), so the fast rules read them."""
    return [(name, d) for name, d, _v in _columns(ev) if d is not None and d.real_type is not None]


#: A JSON value of each family `value.json-type` accepts (None aside), by the parsed value's class.
_FAMILY_TEST = {"integer": "{v}.__class__ is int", "string": "{v}.__class__ is str",
                "number": "{v}.__class__ is int or {v}.__class__ is {dec}"}


@fast.rule("value.json-type")
def _json_type_fast(ev: RecordEvidence, src: Source) -> NotApplicable | bool:
    if _dml(ev) is None or ev.source is not None:
        return False
    declared = _declared(ev)
    if not declared:
        return NotApplicable(_NO_DECLARED)
    dec = src.const(decimal.Decimal, "Decimal")
    families: dict[str, list[str]] = {}
    for name, d in declared:
        family = spec.json_family(d.real_type or "")
        if family not in _FAMILY_TEST:
            return False
        families.setdefault(family, []).append(name)
    for family, test in _FAMILY_TEST.items():  # a loop over each family's columns
        names = families.get(family)
        if names:
            x = src.fresh("x")
            src.line(f"for {x} in {read_group(src, names)}:")
            src.line(f"if not ({x} is None or {test.format(v=x, dec=dec)}): return None", 2)
    return True


def declared_values(ev: RecordEvidence, judge: Callable[[str, Column, Any], Failure | None], *,
                    applies: Callable[[Column], bool] = lambda declared: True, none: str) -> Findings:
    """Each non-null value of a DML event's columns whose declared type is known (and `applies`)
    through `judge`; not applicable (`none` says why) where there is no such column."""
    if _dml(ev) is None:
        yield NOT_DML
        return
    judged = False
    for name, declared, v in _columns(ev):
        if declared is None or declared.real_type is None or not applies(declared):
            continue
        judged = True
        if v is not None:
            found = judge(name, declared, v)
            if found is not None:
                yield found
    if not judged:
        yield NotApplicable(none)


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


def _no_source_row(ev: RecordEvidence) -> NotApplicable | None:
    """`first=` of the checks that compare a DML event with its source row."""
    if _row(ev) is not None:
        return None
    return NotApplicable(NO_SOURCE_ROW if _dml(ev) is not None else "no DML event")


def _value_check(ev: RecordEvidence, kinds: frozenset[Kind] | set[Kind], what: str,
                 same: Any) -> Findings:
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


@check("value.integer", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (integers as JSON integers, "
              "signed or unsigned per the schema's unsigned flag; BIGINT UNSIGNED: column_long(get_byte8))",
       docs_vs_code="docs: the column's data; 24.02 code: BIGINT UNSIGNED values >= 2^63 wrap negative "
                    "(18446744073709551615 -> -1; --option bigint-unsigned=wrap)")
def value_integer(ev: RecordEvidence) -> Findings:
    """Integer columns (BOOL to BIGINT, signed and unsigned) hold the stored value."""
    yield from _value_check(ev, INTEGER_KINDS, "integer", _int_same)


@check("value.bit", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
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


@check("value.float", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
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


@check("value.decimal", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
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


@check("value.string", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
       clause=f"{NOTES} §4 (CHAR/VARCHAR/TEXT/BLOB/BINARY/JSON: the stored bytes, no transcoding; BINARY without the "
              "zero padding the row image drops; JSON as its text), §4.1 (bytes that are not UTF-8 as lowercase hex, "
              "24.08+ / MXS-5246; the avrorouter's [test] cdc_datatypes oracle)",
       docs_vs_code="24.02 drops a string column whose bytes are not UTF-8, or writes malformed JSON for such bytes; "
                    "24.08+/develop write lowercase hex, which the suite follows")
def value_string(ev: RecordEvidence) -> Findings:
    """String and binary columns hold their bytes: UTF-8 as text, anything else as lowercase hex."""
    for f in _value_check(ev, _STRING_KINDS, "string", _string_same):
        if isinstance(f, Failure) and f.location.column is not None and _is_empty_blob(ev, f.location.column):
            continue  # value.empty-blob judges those
        yield f


@check("value.empty-blob", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (empty BLOB/TEXT: rpl.cc "
              "L1862-1866 column_bytes(&nullvalue, 1))",
       docs_vs_code="docs: the column's data, an empty string; 24.02 code: \"\\u0000\", one NUL character "
                    "(--option empty-blob=nul)")
def value_empty_blob(ev: RecordEvidence) -> Findings:
    """An empty TEXT, BLOB or JSON value is the empty string."""
    row = _row(ev)
    assert row is not None  # first=_no_source_row
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


def _text_same(kind: Kind, model: Any, want: Any, got: Any) -> bool:
    return isinstance(got, str) and got == want


@check("value.enum-set", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (ENUM/SET: unpack_enum + "
              "mxs::bin2hex, UPPERCASE hex of the little-endian index or bitmask: 'b' of ENUM('a','b','c') -> \"02\")",
       docs_vs_code="docs: the column's data (the member, the members joined by commas); 24.02 code: hex of the "
                    "stored index / bitmask (--option enum-set=hex)")
def value_enum_set(ev: RecordEvidence) -> Findings:
    """ENUM columns hold their member, SET columns their members in definition order, comma-separated."""
    yield from _value_check(ev, {Kind.ENUM, Kind.SET}, "member(s)", _text_same)


@check("value.address", level=Level.MUST, scope=Scope.RECORD, needs_source=True, first=_no_source_row,
       clause=f"{SEED} §Overview (the fields contain data from the table); {NOTES} §4 (INET4, INET6, UUID: MariaDB's "
              "own types, fixed binary in the row image, not decoded by 24.02)",
       docs_vs_code="docs: the column's data; 24.02 code: INET6/UUID go through column_string as raw bytes (garbled "
                    "or left out); the suite holds encoders to the server's text form")
def value_address(ev: RecordEvidence) -> Findings:
    """INET4, INET6 and UUID columns hold the server's text form (`192.0.2.1`, `::1`, the UUID's 36 characters)."""
    yield from _value_check(ev, {Kind.INET4, Kind.INET6, Kind.UUID}, "text form", _text_same)


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


def _temporal_check(ev: RecordEvidence, kinds: set[Kind], what: str, part: int, tokens: frozenset[str],
                    absent: str, judge: Callable[[Column, str], tuple[str, str] | None]) -> Findings:
    """With the workload, `_temporal_source`; without, `judge` (declared column, text) -> (title,
    expected) or None for every string value of the real types `tokens`."""
    if _row(ev) is not None:
        yield from _temporal_source(ev, kinds, what, part)
        return
    seen = False
    for name, declared, v in _temporal(ev, tokens):
        if not isinstance(v, str):
            continue  # value.json-type reports it
        seen = True
        bad = judge(declared, v)
        if bad is not None:
            yield Failure(bad[0], expected=bad[1], actual=v, location=ev.at(name))
    if not seen:
        yield NotApplicable(_absent(absent))


@check("value.temporal", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §4 (DATE \"%Y-%m-%d\", DATETIME \"%Y-%m-%d %H:%M:%S\", TIME \"%H:%M:%S\", YEAR \"%Y\": "
              "strings, values a MariaDB server stores: conformance/model/mysql_text.py with server=MARIADB)",
       docs_vs_code="docs: not documented; 24.02 code: strftime's %Y, unpadded (the zero date is 0-00-00, year 5 is "
                    "5-01-01) and YEAR 0 as 1900 (--option temporal-text=strftime)")
def value_temporal(ev: RecordEvidence) -> Findings:
    """DATE, DATETIME, TIME and YEAR values are MariaDB's text forms of storable values (with the
    workload: of the stored value)."""
    yield from _temporal_check(ev, {Kind.DATE, Kind.DATETIME, Kind.TIME, Kind.YEAR}, "", 0, _TEMPORAL_TOKENS,
                               _TEMPORAL_ABSENT, lambda declared, v: temporal_problem(declared, v, ev.o))


_TEMPORAL_TOKENS = frozenset({"date", "datetime", "time", "year"})
_TEMPORAL_ABSENT = "DATE, DATETIME, TIME or YEAR"


def temporal_problem(declared: Column, v: str, o: spec.CdcOptions) -> tuple[str, str] | None:
    """`value.temporal` without the workload: (title, expected) where `v` is no text of a value
    MariaDB stores in a column of `declared`'s type; None where it is."""
    rt = (declared.real_type or "").lower()
    head, frac = _split(v)
    text = head + ("." + _seven(frac, o)[:6] if frac else "")
    if o.strftime_text and rt in ("date", "datetime"):
        text = _pad_year(text)
    if rt == "date":
        res: Any = mysql_text.parse_date(text)
    elif rt == "datetime":
        res = mysql_text.parse_datetime(text)
    elif rt == "time":
        res = mysql_text.parse_time(text, server=mysql_text.MARIADB)
    else:
        res = mysql_text.parse_year(text) if not (o.strftime_text and text == "1900") else 1900
    if isinstance(res, mysql_text.Invalid):
        return f"a {declared.real_type} value MariaDB cannot store: {res.reason}", f"a {rt} text"
    return None


#: Texts of each temporal real type (lower case) that `temporal_problem`, `timestamp_problem` and
#: `fraction_problem` surely accept under every option, recognised without running them (each a
#: subset of what they accept: `tests/unit/test_fast_paths_json.py` holds them to the rules): a
#: four-digit year, month and day within 00..12 and 00..31 (any sql_mode's DATE), a clock within
#: 23:59:59, TIME under 838 hours or its least and greatest values (negative from -00:00:01 on:
#: no negative zero), a fraction of six digits or none (so no option rewrites the text),
#: TIMESTAMP's dates of 1971..2037 (inside MariaDB's range in any time zone), its zero value and
#: the first and last second of its range, YEAR's zero value.
_CLOCK = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{6})?"
_DAY = r"[0-9]{4}-(?:0[0-9]|1[0-2])-(?:[0-2][0-9]|3[01])"
_TS_DAY = (r"(?:197[1-9]|19[89][0-9]|20[0-2][0-9]|203[0-7])-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
           r"|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")
_FRACTION = r"(?:\.[0-9]{6})?"
_TS_EDGES = rf"(?:0000-00-00 00:00:00|1970-01-01 00:00:01|2038-01-19 03:14:07){_FRACTION}"
_MINUTES = r":[0-5][0-9]:[0-5][0-9]"
QUICK_TEXT: dict[str, re.Pattern[str]] = {
    "date": re.compile(_DAY),
    "datetime": re.compile(_DAY + " " + _CLOCK),
    "timestamp_": re.compile(rf"{_TS_DAY} {_CLOCK}|{_TS_EDGES}"),
    "time": re.compile(rf"(?:[0-9]{{2}}|[0-7][0-9]{{2}}|8[0-2][0-9]|83[0-7]){_MINUTES}{_FRACTION}"
                       rf"|-(?:0[1-9]|[1-9][0-9]|[1-7][0-9]{{2}}|8[0-2][0-9]|83[0-7]){_MINUTES}{_FRACTION}"
                       r"|-?838:59:59(?:\.000000)?"),
    "year": re.compile(r"0000|190[1-9]|19[1-9][0-9]|20[0-9][0-9]|21[0-4][0-9]|215[0-5]"),
}
# One bound method each, so that the generated code names it once (rules share its answer).
_QUICK_MATCH = {rt: p.fullmatch for rt, p in QUICK_TEXT.items()}


def _temporal_fast(tokens: frozenset[str], absent: str, judge: Callable[[Column, str, spec.CdcOptions], Any]) -> Any:
    def rule(ev: RecordEvidence, src: Source) -> NotApplicable | Seen | bool:
        """Without the source: each string value of a column of the real types `tokens` passes
        `judge` (or is a text `QUICK_TEXT` recognises); the check has something to judge where
        one of them is a string."""
        if _dml(ev) is None or ev.source is not None:
            return False
        cols = [(name, d) for name, d in _declared(ev) if (d.real_type or "").lower() in tokens]
        reason = _absent(absent)
        if not cols:
            return NotApplicable(reason)
        seen = src.fresh("seen")
        src.line(f"{seen} = False")
        j, o = src.const(judge, "judge"), src.const(ev.o, "o")
        # A loop over the columns, each with its quick recogniser and declared column.
        quicks = src.const(tuple(_QUICK_MATCH[(d.real_type or "").lower()] for _name, d in cols), "quicks")
        declared = src.const(tuple(d for _name, d in cols), "cols")
        x, q, c = src.fresh("x"), src.fresh("q"), src.fresh("c")
        src.line(f"for {x}, {q}, {c} in zip({read_group(src, [name for name, _d in cols])}, {quicks}, {declared}):")
        src.line(f"if {x}.__class__ is str:", 2)
        src.line(f"{seen} = True", 3)
        src.line(f"if {q}({x}) is None and {j}({c}, {x}, {o}) is not None: return None", 3)
        return Seen(seen, reason)

    return rule


def _absent(what: str) -> str:
    return f"no {what} value (with a known type) in this message"


fast.rule("value.temporal")(_temporal_fast(_TEMPORAL_TOKENS, _TEMPORAL_ABSENT, temporal_problem))


@check("value.timestamp", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §4 (TIMESTAMP: localtime_r() in MaxScale's process time zone, \"%Y-%m-%d %H:%M:%S\"; the zero "
              "value as 0-00-00 00:00:00), real_type TIMESTAMP_ (§2.2); mysql_text.check_timestamp with server=MARIADB",
       docs_vs_code="docs: not documented; code: rendered in MaxScale's own time zone, not the server's session zone "
                    "(--option time-zone=<MaxScale's TZ>)")
def value_timestamp(ev: RecordEvidence) -> Findings:
    """TIMESTAMP values are the stored instant rendered in MaxScale's time zone (`time-zone`);
    without the workload, an instant MariaDB can store, in some zone."""
    yield from _temporal_check(ev, {Kind.TIMESTAMP}, f" rendered in {ev.o.time_zone}", 0, _TIMESTAMP_TOKENS,
                               "TIMESTAMP", lambda declared, v: timestamp_problem(declared, v, ev.o))


_TIMESTAMP_TOKENS = frozenset({"timestamp_"})


def timestamp_problem(_declared: Column, v: str, o: spec.CdcOptions) -> tuple[str, str] | None:
    """`value.timestamp` without the workload: (title, expected) where `v` is no text of an
    instant MariaDB stores; None where it is."""
    head, frac = _split(v)
    if head in ("0-00-00 00:00:00", "0000-00-00 00:00:00"):
        return None
    text = head + ("." + _seven(frac, o)[:6] if frac else "")
    res = mysql_text.parse_timestamp(text, server=mysql_text.MARIADB)
    if isinstance(res, mysql_text.Invalid):
        return f"a TIMESTAMP value MariaDB cannot store: {res.reason}", "an instant's text"
    return None


fast.rule("value.timestamp")(_temporal_fast(_TIMESTAMP_TOKENS, "TIMESTAMP", timestamp_problem))


@check("value.fraction", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §4 (DATETIME(n), TIMESTAMP(n), TIME(n) with n > 0: \".%06d\", always six digits, even when "
              "the fraction is 0; none for n = 0)",
       docs_vs_code="docs: not documented; 24.02 code: odd precisions n = 1, 3, 5 print the fraction times ten, "
                    "seven digits (DATETIME(3) .123 -> .1230000; --option fraction-digits=odd-seven)")
def value_fraction(ev: RecordEvidence) -> Findings:
    """Fractional seconds are six digits whenever the column has a fraction (with the workload:
    exactly the stored fraction, none when the column has none)."""
    yield from _temporal_check(ev, {Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME}, "'s fraction", 1, _FRACTION_TOKENS,
                               _FRACTION_ABSENT, lambda declared, v: fraction_problem(declared, v, ev.o))


_FRACTION_TOKENS = frozenset({"datetime", "timestamp_", "time"})
_FRACTION_ABSENT = "DATETIME, TIMESTAMP or TIME"


def fraction_problem(_declared: Column, v: str, o: spec.CdcOptions) -> tuple[str, str] | None:
    """`value.fraction` without the workload."""
    return None if _fraction_ok(_split(v)[1], o) else ("a fraction that is not six digits", ".ffffff")


fast.rule("value.fraction")(_temporal_fast(_FRACTION_TOKENS, _FRACTION_ABSENT, fraction_problem))


# -- what the log alone shows: integers within their declared type's range ---------------------------

#: Bits of each integer type token (real_type, lower case): TINYINT / BOOL 8 … BIGINT / SERIAL 64.
_BITS = {"tinyint": 8, "bool": 8, "boolean": 8, "int1": 8, "smallint": 16, "int2": 16, "mediumint": 24,
         "middleint": 24, "int3": 24, "int": 32, "integer": 32, "int4": 32, "bigint": 64, "int8": 64, "serial": 64}


def integer_range(real_type: str, unsigned: bool, *, bigint_wrap: bool = False) -> tuple[int, int] | None:
    """The values a column of this declared type holds (None: not an integer type with a range)."""
    bits = _BITS.get(real_type.lower())
    if bits is None:
        return None
    if real_type.lower() == "serial":
        unsigned = True  # SERIAL is BIGINT UNSIGNED
    if unsigned and bits == 64 and bigint_wrap:
        return -(1 << 63), (1 << 64) - 1  # 24.02 writes values >= 2^63 negative (--option bigint-unsigned=wrap)
    if unsigned:
        return 0, (1 << bits) - 1
    return -(1 << (bits - 1)), (1 << (bits - 1)) - 1


@check("value.integer-range", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{SEED} §Overview (DML events follow the format specified in the DDL event); {NOTES} §2.2 (the schema "
              "event's real_type and unsigned flag), §4 (integers as the column's signed or unsigned value)",
       docs_vs_code="24.02 code: BIGINT UNSIGNED values >= 2^63 wrap negative (--option bigint-unsigned=wrap "
                    "accepts them)")
def value_integer_range(ev: RecordEvidence) -> Findings:
    """An integer column's value lies in the range of its declared type: unsigned ones never negative."""

    def bounds(declared: Column) -> tuple[int, int] | None:
        assert declared.real_type is not None
        return integer_range(declared.real_type, bool(declared.unsigned), bigint_wrap=ev.o.bigint_wrap)

    def judge(name: str, declared: Column, v: Any) -> Failure | None:
        lo, hi = bounds(declared) or (v, v)
        if not is_int(v) or lo <= v <= hi:
            return None  # a JSON value of another kind is value.json-type's
        kind = f"{declared.real_type}{' UNSIGNED' if declared.unsigned else ''}"
        return Failure(f"a {kind} column holds a value outside its range", expected=f"{lo} .. {hi}",
                       actual=brief(v, 40), location=ev.at(name))

    yield from declared_values(ev, judge, applies=lambda declared: bounds(declared) is not None,
                               none=_NO_INTEGER)


_NO_INTEGER = "no integer column whose declared type is known"


@fast.rule("value.integer-range")
def _integer_range_fast(ev: RecordEvidence, src: Source) -> NotApplicable | bool:
    if _dml(ev) is None or ev.source is not None:
        return False
    names, bounds = [], []
    for name, d in _declared(ev):
        b = integer_range(d.real_type or "", bool(d.unsigned), bigint_wrap=ev.o.bigint_wrap)
        if b is not None:
            names.append(name)
            bounds.append(b)
    if not names:
        return NotApplicable(_NO_INTEGER)
    # A loop over the columns, each with its (least, greatest) value.
    x, lo, hi = src.fresh("x"), src.fresh("lo"), src.fresh("hi")
    src.line(f"for {x}, ({lo}, {hi}) in zip({read_group(src, names)}, {src.const(tuple(bounds), 'bounds')}):")
    src.line(f"if {x}.__class__ is int and not {lo} <= {x} <= {hi}: return None", 2)
    return True
