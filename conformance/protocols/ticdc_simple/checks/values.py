"""The TiCDC Simple value rules: each type family's value format (JSON and Avro), one check per
family."""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson

from ....checks.registry import Failure, Level, NotApplicable, Scope
from ....model import mysql_text
from ....model.values import (
    Json,
    go_format_float,
    parse_vector,
    quick_float32_text,
    quick_float_text,
    quick_vector,
    to_float32,
)
from ...kit import Findings
from .. import spec
from ..checker import RecordEvidence, SourceRow
from ..decoder import TIMESTAMP, UNSIGNED_BIGINT, render
from ..spec import Family
from .common import NOTES, SEED, _columns_by_name, _dml, _row_maps, _show, _strings, _type_ok, check

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
        if not re.fullmatch(r"-?[0-9]+", v):
            return "not a decimal integer"
        bits = _INT_RANGES.get(str(mt), 64)
        lo, hi = (0, (1 << bits) - 1) if unsigned else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)
        n = _decimal_int(v)
        if n is None or not lo <= n <= hi:
            return f"outside {mt}{' unsigned' if unsigned else ''} [{lo}, {hi}]"
    elif fam in (Family.FLOAT, Family.DOUBLE):
        if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v):
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
        if not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", v):
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
        if not re.fullmatch(r"[0-9]+", v):
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


#: TiDB's JSON text of plain JSON data whose objects' keys are in order already: Python's C encoder
#: quotes a string as `json_quote` does (", \\, \\n \\r \\t \\b \\f, other controls \\u00xx, nothing
#: else escaped) and prints integers, booleans and null alike, with MySQL's separators.
_TIDB_JSON = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": "), check_circular=False).encode
_NOT_PLAIN = object()


def _tidb_ordered(x: Any, room: int) -> Any:
    """`x` (as orjson reads JSON) with every object's keys in TiDB's order (code point order is
    UTF-8 byte order: orjson refuses lone surrogates); `_NOT_PLAIN` where it holds a float or
    nests more than `room` containers deep."""
    c = x.__class__
    if c is dict:
        if not room:
            return _NOT_PLAIN
        out = {}
        for k in sorted(x):
            y = out[k] = _tidb_ordered(x[k], room - 1)
            if y is _NOT_PLAIN:
                return y
        return out
    if c is list:
        if not room:
            return _NOT_PLAIN
        items = []
        for y in x:
            y = _tidb_ordered(y, room - 1)
            if y is _NOT_PLAIN:
                return y
            items.append(y)
        return items
    return _NOT_PLAIN if c is float else x


def quick_json(v: str) -> bool:
    """A JSON column's text the rule (`format_problem`) surely accepts: TiDB's own text of a
    document without floats that nests at most TIDB_MAX_JSON_DEPTH containers deep (so within
    both of the rule's depth tests); being that text, it is JSON that the standard library reads
    as orjson does (no float, no lone surrogate, keys once). False: the rule decides."""
    try:
        doc = orjson.loads(v)
    except orjson.JSONDecodeError:
        return False
    ordered = _tidb_ordered(doc, TIDB_MAX_JSON_DEPTH)
    return ordered is not _NOT_PLAIN and _TIDB_JSON(ordered) == v


# The fast path's test of one JSON value (fastpath.py): a decimal integer this short (`-?[0-9]+`,
# fewer characters than this: at most 20 digits, which `_decimal_int` reads) needs no more than the
# range test the rule makes.
_QUICK_INT_LEN = 21
_MEMO_MAX = 4096

# Temporal texts the rules surely accept (each a subset of what its rule accepts, held to it by
# tests/unit/test_fast_paths_simple.py), by the column's fsp (0..6): a four-digit year, month and
# day within 00..12 and 00..31 (any sql_mode's DATE), a clock within 23:59:59, TIME under 838
# hours (positive), exactly fsp fraction digits (TiCDC prints exactly fsp; a DATE none),
# TIMESTAMP's calendar dates of 1971..2037 (inside TiDB's range in any time zone), YEAR 1901..2155;
# a negative TIME of nonzero hours under 838.
_DAY = r"[0-9]{4}-(?:0[0-9]|1[0-2])-(?:[0-2][0-9]|3[01])"
_CLOCK = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
_TS_DAY = (r"(?:197[1-9]|19[89][0-9]|20[0-2][0-9]|203[0-7])-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])"
           r"|(?:0[13-9]|1[0-2])-(?:29|30)|(?:0[13578]|1[02])-31)")
_HOURS = r"(?:[0-9]{2}|[0-7][0-9]{2}|8[0-2][0-9]|83[0-7])"
# A negative TIME's hours: as _HOURS, but not zero (a negative zero is refused; nonzero hours make
# the magnitude nonzero).
_NONZERO_HOURS = r"(?:0[1-9]|[1-9][0-9]|0(?:0[1-9]|[1-9][0-9])|[1-7][0-9]{2}|8[0-2][0-9]|83[0-7])"
_QUICK_YEAR = re.compile(r"190[1-9]|19[1-9][0-9]|20[0-9][0-9]|21[0-4][0-9]|215[0-5]")


def quick_float64_text(p: str) -> bool:
    """`go_format_float(float(p), 64, "f") == p` surely, the DOUBLE rule's test (`p` a string):
    where `repr` writes a float positionally (1e-4 <= |x| < 1e16), it writes the shortest digits
    that read back as x, as `go_format_float` takes them, and `format(Decimal(digits), "f")`
    writes them back unchanged but for an integer's ".0", which the rule strips (then `p`, equal to
    that text, is also of the rule's form `-?digits[.digits]`). Anything else (exponent form,
    zero, a text float() refuses, one of more digits or another form) goes to the rule:
    `quick_float_text` for up to 15 digits, or `format_problem`."""
    try:
        x = float(p)
    except ValueError:
        return False
    if not 1e-4 <= abs(x) < 1e16:  # zero, a NaN or infinity, or what repr writes with an exponent
        return quick_float_text(p, 64)
    r = repr(x)
    return (r[:-2] if r.endswith(".0") else r) == p


def quick_number(fam: str, dt: dict[str, Any]) -> Callable[[str], bool] | None:
    """For a JSON column of `fam` (DECIMAL, BIT, ENUM, SET) with dataType `dt`: a test of a string
    the rule surely accepts (True), written as the rule's steps without its regular expression
    (an ASCII text's `isdigit` is `[0-9]+`); None for another family. DECIMAL: `-?[0-9]+(.[0-9]+)?`
    with the column's scale of fraction digits and no more significant digits than its precision;
    BIT, ENUM, SET: `[0-9]+` of at most 20 digits (what `_decimal_int` reads) below the family's
    bound (64 bits; BIT's width; an ENUM's index up to its element count; a SET's bitmask)."""
    if fam == Family.DECIMAL:
        precision = _meta(dt, "length", False)
        scale = _meta(dt, "decimal", False)

        def decimal(v: str) -> bool:
            body = v[1:] if v[:1] == "-" else v
            whole, dot, frac = body.partition(".")
            if not (body.isascii() and whole.isdigit() and (not dot or frac.isdigit())):
                return False
            if scale is not None and len(frac) != scale:
                return False
            return not precision or len((whole + frac).lstrip("0") or "0") <= precision

        return decimal
    if fam not in (Family.BIT, Family.ENUM, Family.SET):
        return None
    bound = 1 << 64
    width = _meta(dt, "length", False)
    if fam == Family.BIT and width:
        bound = 1 << min(width, 64)
    elements = _strings(dt.get("elements")) if dt.get("elements") is not None else []
    if fam == Family.ENUM and elements is not None:
        bound = min(bound, len(elements) + 1)
    if fam == Family.SET and elements is not None:
        bound = min(bound, 1 << len(elements))

    def unsigned(v: str) -> bool:
        return len(v) <= 20 and v.isascii() and v.isdigit() and int(v) < bound

    return unsigned


def quick_text(fam: str, dt: dict[str, Any]) -> re.Pattern[str] | None:
    """The pattern of `fam` texts the rule surely accepts for a column of dataType `dt` (JSON), or
    None (no shortcut: a malformed or out-of-range fsp, another family)."""
    if fam == Family.YEAR:
        return _QUICK_YEAR
    if fam not in (Family.DATE, Family.DATETIME, Family.TIME, Family.TIMESTAMP):
        return None
    fsp = _temporal_fsp(dt, False)
    if fsp is None or not 0 <= fsp <= 6:
        return None
    frac = rf"\.[0-9]{{{fsp}}}" if fsp else ""
    if fam == Family.DATE:
        return re.compile(_DAY) if fsp == 0 else None
    if fam == Family.DATETIME:
        return re.compile(_DAY + " " + _CLOCK + frac)
    if fam == Family.TIME:
        return re.compile(f"(?:{_HOURS}|-{_NONZERO_HOURS}):[0-5][0-9]:[0-5][0-9]" + frac)
    return re.compile(_TS_DAY + " " + _CLOCK + frac)


def value_ok(fam: str, dt: dict[str, Any], o: spec.SimpleOptions) -> Callable[[Any], bool]:
    """`format_problem(fam, dt, v, o, False) is None`, for the non-null JSON values of one column:
    what the rule says of a string is remembered (a pure function of the value; values of a
    column repeat), text needs only to be a string, a short decimal integer only its range, and a
    float or vector whose text is surely Go's shortest (`quick_float32_text` for a FLOAT or a
    vector element, `quick_float64_text` for a DOUBLE: after the memo) only that, a temporal
    text or YEAR `quick_text` recognises, a DECIMAL, BIT, ENUM or SET text `quick_number`
    accepts, or a JSON text that is TiDB's own (`quick_json`), nothing more; a binary string is
    decoded as the rule decodes it."""
    if fam == Family.TEXT:
        return string_test()  # the rule asks nothing more of text

    memo: dict[str, bool] = {}

    def remembered(quick: Callable[[str], bool] | None = None) -> Callable[[Any], bool]:
        """The memo's answer, else `quick`'s where it is sure, else the rule's (remembered)."""

        def ok(v: Any) -> bool:
            if v.__class__ is not str:  # a TIMESTAMP's object, or a wrong type: the rule, each time
                return format_problem(fam, dt, v, o, False) is None
            got = memo.get(v)
            if got is None:
                if len(memo) >= _MEMO_MAX:
                    memo.clear()
                got = memo[v] = (quick is not None and quick(v)) or format_problem(fam, dt, v, o, False) is None
            return got

        return _known(ok, memo)

    ok = remembered()
    quick_ = quick_text(fam, dt)
    if fam == Family.TIMESTAMP:
        zone = o.time_zone  # the location the rule surely accepts (any, where the option is UTC)
        match_ = quick_.fullmatch if quick_ is not None else None
        # What the rule said of each {location, value} object of two strings met before (the rule
        # reads nothing else of such an object): keyed by the two strings.
        pairs: dict[tuple[str, str], bool] = {}

        def ok_timestamp(v: Any) -> bool:
            if v.__class__ is dict and len(v) == 2:
                loc, t = v.get("location"), v.get("value")
                if loc.__class__ is str and t.__class__ is str:
                    if match_ is not None and loc == zone and zone != "" and match_(t) is not None:
                        return True
                    got = pairs.get((loc, t))
                    if got is None:
                        if len(pairs) >= _MEMO_MAX:
                            pairs.clear()
                        got = pairs[(loc, t)] = format_problem(fam, dt, v, o, False) is None
                    return got
            return ok(v)

        return _known(ok_timestamp, {})
    # Every test below asks the memo first (inline, on the fast path: a value met before costs
    # no call); a value of a column mostly comes again (an UPDATE's and a DELETE's row repeat the
    # INSERT's, a key column's value every change of its row; in the realistic benchmark 60-99% of
    # each family's values but the floats, vectors and JSON).
    if quick_ is not None:
        match = quick_.fullmatch
        return remembered(lambda v: match(v) is not None)
    number = quick_number(fam, dt)
    if number is not None:
        return remembered(number)
    if fam == Family.JSON:
        return remembered(quick_json)
    if fam == Family.FLOAT:
        return remembered(quick_float32_text)
    if fam == Family.DOUBLE:
        return remembered(quick_float64_text)
    if fam == Family.VECTOR:
        dims = _meta(dt, "length", False)
        return remembered(lambda v: quick_vector(v, quick_float32_text)
                          and (not dims or (v.count(",") + 1 if v != "[]" else 0) == dims))
    if fam == Family.BINARY:
        # The rule's own test, without its way there.
        width = _meta(dt, "length", False)
        fixed = dt.get("mysqlType") == "binary" and width is not None
        a2b_base64 = binascii.a2b_base64

        def binary(v: str) -> bool:
            try:
                # What `base64.b64decode(v, validate=True)` runs (Python >= 3.11), without its way there.
                raw = a2b_base64(v, strict_mode=True)
            except (binascii.Error, ValueError):
                return False
            return not fixed or len(raw) == width

        return remembered(binary)
    if fam not in (Family.INT, Family.BIGINT_UNSIGNED):
        return ok
    bits = _INT_RANGES.get(str(dt.get("mysqlType")), 64)
    lo, hi = (0, (1 << bits) - 1) if dt.get("unsigned") is True else (-(1 << (bits - 1)), (1 << (bits - 1)) - 1)

    def integer(v: str) -> bool:
        # `-?[0-9]+` (an ASCII text's `isdigit` is [0-9]+), which `int` reads as the rule does.
        return len(v) < _QUICK_INT_LEN and v.isascii() and (v.isdigit() or (v[:1] == "-" and v[1:].isdigit())) \
            and lo <= int(v) <= hi

    return remembered(integer)


#: `value_ok` functions, shared by every column of the same family, dataType and options (the fast
#: path's kinds, and the value checks: table versions come and go; their columns' types, and so
#: their values' memos, stay).
_OK: dict[tuple[str, str, Any], Callable[[Any], bool]] = {}
#: The same, by the dataType object (the kinds of one table version, INSERT, UPDATE and DELETE, read
#: one schema): id(dt) → (dt, family, options, test); holding dt, so that its id is not reused.
_OK_BY_DT: dict[int, tuple[Any, str, Any, Callable[[Any], bool]]] = {}
_SHARED_MAX = 20_000


def shared_value_ok(fam: str, dt: Any, o: Any) -> Callable[[Any], bool]:
    """`value_ok(fam, dt, o)`, one function (and memo) for every column that asks with an equal
    dataType (a JSON object from the stream: its items' `repr`, in key order, says all of it) and
    these options."""
    got = _OK_BY_DT.get(id(dt))
    if got is not None and got[0] is dt and got[1] == fam and got[2] is o:
        return got[3]
    # `repr` tells apart any two values JSON decodes to (1, 1.0, True; NaN, null); an object's keys
    # are taken in order (each once: the values are never compared).
    key = (fam, repr(sorted(dt.items())) if dt.__class__ is dict else repr(dt), o)
    test = _OK.get(key)
    if test is None:
        if len(_OK) >= _SHARED_MAX:
            _OK.clear()
        test = _OK[key] = value_ok(fam, dt, o)
    if len(_OK_BY_DT) >= _SHARED_MAX:
        _OK_BY_DT.clear()
    _OK_BY_DT[id(dt)] = (dt, fam, o, test)
    return test


def _known(fn: Callable[[Any], bool], memo: dict[str, bool], miss: bool | None = None) -> Callable[[Any], bool]:
    """`fn`, with its memo as `fn.known` (what the rule said of the strings met before; an empty
    dict where `fn` keeps none) and `fn.miss`, what the memo answers for a string it does not know
    (True: `fn` accepts every string; None: ask `fn`): the fast path reads them inline before
    calling `fn` (fastpath._column_test)."""
    fn.known = memo  # type: ignore[attr-defined]
    fn.miss = miss  # type: ignore[attr-defined]
    return fn


def string_test() -> Callable[[Any], bool]:
    """A value test that accepts every string and nothing else (TEXT's rule): its memo answers
    True for any string, so the fast path never calls it for one."""
    return _known(lambda v: v.__class__ is str, {}, True)


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
        schema = ev.schema
        if schema is not None and ev.source is None and _dml(ev) is not None:
            # From the schema alone (capture mode): one for every DML that resolves to it (a table
            # version's INSERTs, UPDATEs and DELETEs), which the checks only read.
            cached = _BY_SCHEMA.get(id(schema))
            if cached is None or cached[0] is not schema:
                if len(_BY_SCHEMA) >= _BY_SCHEMA_MAX:
                    _BY_SCHEMA.clear()
                cached = _BY_SCHEMA[id(schema)] = (schema, _ValueColumns(ev))
            got = cached[1]
        else:
            got = _ValueColumns(ev)
        ev.value_columns = got
    return got  # type: ignore[no-any-return]


#: `_ValueColumns` of a DML that resolves to a schema in capture mode, by that schema's id: (schema,
#: columns), holding the schema so that its id is not reused. The kinds of a table version meet
#: their schema close together; a schema announced again (every bootstrap interval) is a new
#: object, so the few latest are kept, not every one a long check met.
_BY_SCHEMA: dict[int, tuple[Any, _ValueColumns]] = {}
_BY_SCHEMA_MAX = 256


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
                elif value is None or shared_value_ok(fam, dt, ev.o)(value):
                    continue  # JSON: the rule's answer by its shared test (`value_ok`), the problem only where it fails
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
