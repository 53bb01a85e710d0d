"""The value domain of every SQL type, described once.

`sample_type` draws a type with its parameters, `sample_value` a value valid by construction
for a type (edges included: integer bounds, BIGINT UNSIGNED above 2^63-1, negative decimals,
0 and -0.0, max fsp, the zero date, dates with zero parts or day 31 in a short month (what a
relaxed sql_mode stores), empty strings, 4-byte UTF-8, NUL bytes, ENUM/SET members with commas
and quotes, VECTORs of extreme float32s), `simplest_value` the value the reducer shrinks towards.

Where the expected encoding of a value is uncertain in the upstream implementations (see
`spec/notes/ticdc.md` §8), the domain stays on the side that is known: e.g. a CHAR value never
ends in spaces (MySQL strips them on read), CURRENT_TIMESTAMP defaults only at fsp 0.
"""

from __future__ import annotations

import calendar
from collections.abc import Sequence

from ..model.types import (
    BINARY_KINDS,
    INTEGER_KINDS,
    NO_LITERAL_DEFAULT_KINDS,
    TEXT_KINDS,
    TIDB_KINDS,
    Kind,
    SqlType,
)
from ..model.values import (
    FLOAT32_MAX,
    FLOAT32_MIN_SUBNORMAL,
    Date,
    DateTime,
    Json,
    JsonData,
    Time,
    Value,
    Vector,
    decimal_from_unscaled,
    to_float32,
)
from .source import Source

# TiDB's kinds only: kinds other dialects add live in `dialect_domains.py` and never reach the
# default generation (same seed, same workload, whatever the model learns).
ALL_KINDS: tuple[Kind, ...] = TIDB_KINDS
# Types a primary key or NOT NULL unique key may use (no FLOAT/DOUBLE: equality is not
# dependable; no BLOB/TEXT/JSON: they need prefix lengths or cannot be indexed).
KEY_KINDS: tuple[Kind, ...] = (
    Kind.INT, Kind.BIGINT, Kind.TINYINT, Kind.SMALLINT, Kind.MEDIUMINT, Kind.VARCHAR, Kind.CHAR,
    Kind.DECIMAL, Kind.BINARY, Kind.VARBINARY, Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME,
    Kind.YEAR, Kind.ENUM, Kind.BIT,
)

# ENUM members: commas, quotes, backslashes, non-ASCII. No empty member: '' is also how MySQL
# shows the invalid ENUM value (index 0), which TiCDC refuses to encode. `two''quotes` and
# `back\'quote` are members TiCDC Avro's `allowed` parameter rewrites (EscapeEnumAndSetOptions
# turns `''` and `\'` into `'`: spec/notes/ticdc.md §1.5); "null" is the literal TiCDC v8.5.2-8.5.7
# mistook for NULL in a default (§1.4).
_ENUM_MEMBERS = ("a", "b", "c", "a,", "it's", 'say "hi"', "x\\y", "a,b", "中", "😀", "Ünï", "0", "1",
                 "long member name", "semi;colon", "tab\there", "two''quotes", "back\\'quote", "null")
# SET members cannot contain commas.
_SET_MEMBERS = ("a", "b", "c", "d", "it's", 'q"', "x\\y", "中", "😀", "Ünï", "0", "spaced out", "e", "f",
                "two''quotes", "null")

DECIMAL_EDGE_PARAMS = ((10, 0), (65, 30), (65, 0), (1, 0), (1, 1), (30, 30), (38, 10), (18, 4))

# Dates a server stores only under a relaxed sql_mode (model/sql.py SESSION_PREAMBLE): zero
# month, zero day, both, and day 31 in a 30-day month or Feb 30/31 (ALLOW_INVALID_DATES). TiDB
# prints them as they are (Time.String); TIMESTAMP takes none of them but the zero value.
ZERO_PART_DATES = (Date(2020, 0, 15), Date(2020, 5, 0), Date(2020, 0, 0), Date(2021, 2, 31), Date(2023, 4, 31),
                   Date(2024, 2, 30))
# Vector elements at the edges of float32 (TiDB prints each with strconv 'f', -1, 32).
_VECTOR_EDGES = (0.0, -0.0, 1.0, -2.5, to_float32(0.1), FLOAT32_MAX, -FLOAT32_MAX, FLOAT32_MIN_SUBNORMAL,
                 to_float32(1e20), to_float32(1e-7))
VECTOR_DIMENSION_EDGES = (1, 3, 16)

TIMESTAMP_MIN = DateTime(1970, 1, 1, 0, 0, 1)
TIMESTAMP_MAX = DateTime(2038, 1, 19, 3, 14, 7, 999999)
ZERO_DATE = Date(0, 0, 0)
ZERO_DATETIME = DateTime(0, 0, 0)


# -- types -------------------------------------------------------------------------------

def sample_type(src: Source, kinds: Sequence[Kind] = ALL_KINDS, *, key: bool = False) -> SqlType:
    kind = src.choice(kinds)
    if kind in INTEGER_KINDS:
        return SqlType(kind, unsigned=kind is not Kind.BOOL and src.boolean())
    if kind in (Kind.FLOAT, Kind.DOUBLE):
        return SqlType(kind, unsigned=src.rare(0.1))
    if kind is Kind.DECIMAL:
        if src.rare(0.4):
            p, s = src.choice(DECIMAL_EDGE_PARAMS)
        else:
            p = src.integer(1, 65)
            s = src.integer(0, min(30, p))
        return SqlType(kind, precision=p, scale=s, unsigned=src.rare(0.1))
    if kind is Kind.BIT:
        return SqlType(kind, length=src.choice((1, 64, 8)) if src.rare(0.4) else src.integer(1, 64))
    if kind in (Kind.CHAR, Kind.BINARY):
        n = src.choice((1, 255, 16)) if src.rare(0.2) else src.integer(1 if key else 0, 32)
        return SqlType(kind, length=n, **_charset(src, kind))  # type: ignore[arg-type]
    if kind in (Kind.VARCHAR, Kind.VARBINARY):
        n = src.choice((16383 if kind is Kind.VARCHAR else 65000, 1, 255)) if src.rare(0.1) \
            else src.integer(1, 64)
        if key:
            n = min(n, 191)
        return SqlType(kind, length=n, **_charset(src, kind))  # type: ignore[arg-type]
    if kind in TEXT_KINDS or kind in BINARY_KINDS:
        return SqlType(kind, **_charset(src, kind))  # type: ignore[arg-type]
    if kind in (Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME):
        return SqlType(kind, fsp=src.choice((0, 6, 3)) if src.rare(0.5) else src.integer(0, 6))
    if kind is Kind.ENUM:
        return SqlType(kind, elements=_members(src, _ENUM_MEMBERS, 6))
    if kind is Kind.SET:
        return SqlType(kind, elements=_members(src, _SET_MEMBERS, 8))
    if kind is Kind.VECTOR:
        # Mostly a few dimensions; now and then a VECTOR of any dimension (TiDB's flen -1).
        if src.rare(0.2):
            return SqlType(kind)
        return SqlType(kind, length=src.choice(VECTOR_DIMENSION_EDGES) if src.rare(0.3) else src.integer(1, 8))
    return SqlType(kind)


def _charset(src: Source, kind: Kind) -> dict[str, str]:
    if kind in BINARY_KINDS:
        return {}
    if src.rare(0.15):
        return {"charset": src.choice(("utf8", "ascii", "latin1"))}
    return {}


def _members(src: Source, pool: Sequence[str], most: int) -> tuple[str, ...]:
    n = src.integer(1, most)
    chosen: list[str] = []
    folded: set[str] = set()
    for _ in range(n * 3):
        if len(chosen) == n:
            break
        m = src.choice(pool)
        if m.casefold() not in folded:
            chosen.append(m)
            folded.add(m.casefold())
    return tuple(chosen)


def max_codepoint(t: SqlType) -> int:
    return {"utf8": 0xFFFF, "ascii": 0x7F, "latin1": 0x7F}.get(t.charset or "", 0x10FFFF)


def keyable(t: SqlType) -> bool:
    return t.kind in KEY_KINDS


# -- values ------------------------------------------------------------------------------

def edge_values(t: SqlType) -> list[Value]:
    """Boundary values of the domain, simplest first."""
    k = t.kind
    if k in INTEGER_KINDS:
        lo, hi = t.int_range()
        if k is Kind.BOOL:
            return [0, 1, -128, 127]
        edges: list[Value] = [0, 1, hi, lo]
        if not t.unsigned:
            edges.append(-1)
        if k is Kind.BIGINT and t.unsigned:
            edges += [(1 << 63) - 1, 1 << 63, (1 << 63) + 1]
        return edges
    if k is Kind.FLOAT:
        vals = [0.0, 1.0, FLOAT32_MAX, FLOAT32_MIN_SUBNORMAL, to_float32(3.14), to_float32(1e20),
                to_float32(1e-7)]
        if not t.unsigned:
            vals += [-0.0, -1.0, -FLOAT32_MAX, to_float32(-2.5)]
        return vals
    if k is Kind.DOUBLE:
        vals = [0.0, 1.0, 1.7976931348623157e308, 5e-324, 3.14, 1e21, 1e-7, 123456789.125]
        if not t.unsigned:
            vals += [-0.0, -1.0, -1.7976931348623157e308, -2.5]
        return vals
    if k is Kind.DECIMAL:
        assert t.precision is not None and t.scale is not None
        vals2: list[Value] = [decimal_from_unscaled(0, t.scale),
                              decimal_from_unscaled(10 ** t.precision - 1, t.scale),
                              decimal_from_unscaled(1, t.scale)]
        if not t.unsigned:
            vals2 += [decimal_from_unscaled(-(10 ** t.precision - 1), t.scale),
                      decimal_from_unscaled(-1, t.scale)]
        return vals2
    if k is Kind.BIT:
        assert t.length is not None
        return [0, 1, (1 << t.length) - 1]
    if k in TEXT_KINDS:
        # "null": the text TiCDC v8.5.2-8.5.7 Avro mistook for NULL as a default (notes §1.4).
        vals3: list[Value] = ["", "a", "null"]
        if max_codepoint(t) >= 0x10FFFF:
            vals3.append("😀")
        if max_codepoint(t) >= 0xFFFF:
            vals3.append("中文")
        vals3.append("a\0b")
        vals3.append("'\"\\,%_")
        if k is Kind.CHAR:
            vals3 = [v for v in vals3 if isinstance(v, str) and len(v) <= t.max_chars()]
        elif k is Kind.VARCHAR:
            vals3 = [v for v in vals3 if isinstance(v, str) and len(v) <= t.max_chars()]
        return vals3
    if k in BINARY_KINDS:
        vals4: list[bytes] = [b"", b"\x00", b"\x00\xff", b"\xff" * 3, b"\x00" * 4]
        n = t.max_chars() if k in (Kind.BINARY, Kind.VARBINARY) else 255
        vals4 = [v for v in vals4 if len(v) <= n]
        if k is Kind.BINARY:
            return [v.ljust(n, b"\x00") for v in vals4]
        return list(vals4)
    if k is Kind.DATE:
        return [Date(2000, 1, 1), ZERO_DATE, Date(1000, 1, 1), Date(9999, 12, 31), Date(1970, 1, 1),
                Date(1, 1, 1), *ZERO_PART_DATES]
    if k is Kind.DATETIME:
        return [DateTime(2000, 1, 1), ZERO_DATETIME, DateTime(1000, 1, 1),
                _truncate(DateTime(9999, 12, 31, 23, 59, 59, 999999), t.fsp),
                _truncate(DateTime(0, 0, 0, 12, 34, 56, 789012), t.fsp),
                *(_truncate(DateTime(d.year, d.month, d.day, 23, 59, 59, 999999), t.fsp) for d in ZERO_PART_DATES)]
    if k is Kind.TIMESTAMP:
        return [DateTime(2000, 1, 1), ZERO_DATETIME, TIMESTAMP_MIN, _truncate(TIMESTAMP_MAX, t.fsp)]
    if k is Kind.TIME:
        return [Time(False, 0, 0, 0), Time(False, 838, 59, 59), Time(True, 838, 59, 59),
                Time(True, 0, 0, 1), _truncate_time(Time(False, 23, 59, 59, 999999), t.fsp),
                Time(False, 24, 0, 0)]
    if k is Kind.YEAR:
        return [2000, 1901, 2155, 0]
    if k is Kind.JSON:
        return [Json({}), Json([]), Json(None), Json(""), Json({"a": [1, 2, {"b": None}]}),
                Json({"key": "va\"l\\ue\n", "中": "😀"}), Json(9223372036854775807), Json(-0.5)]
    if k is Kind.ENUM:
        return [t.elements[0], t.elements[-1]]
    if k is Kind.SET:
        return [(), tuple(t.elements), (t.elements[0],)]
    if k is Kind.VECTOR:
        dims = (t.length,) if t.length is not None else (1, 2, 5)
        out: list[Value] = []
        for i, x in enumerate(_VECTOR_EDGES):
            d = dims[i % len(dims)]
            out.append(Vector(tuple(x if j == 0 else _VECTOR_EDGES[(i + j) % len(_VECTOR_EDGES)] for j in range(d))))
        return [Vector((0.0,) * (t.length or 1)), *out]
    raise AssertionError(k)


def simplest_value(t: SqlType) -> Value:
    return edge_values(t)[0]


def sample_value(src: Source, t: SqlType, *, edge_rate: float = 0.2, key: bool = False) -> Value:
    """A value valid for `t` by construction. `key=True`: usable in a primary / unique key
    under a PAD SPACE collation (no trailing spaces)."""
    if src.rare(edge_rate):
        v = src.choice(edge_values(t))
        if not (key and isinstance(v, str) and v != v.rstrip(" ")):
            return v
    k = t.kind
    if k in INTEGER_KINDS:
        lo, hi = t.int_range()
        if k is Kind.BOOL:
            return src.integer(0, 1)
        if src.boolean():
            return src.integer(max(lo, -100), min(hi, 1000))
        return src.integer(lo, hi)
    if k is Kind.FLOAT:
        v = src.float32() if src.boolean() else to_float32(src.integer(-10**6, 10**6) / 64)
        return abs(v) + 0.0 if t.unsigned else v
    if k is Kind.DOUBLE:
        v = src.float64() if src.boolean() else src.integer(-10**9, 10**9) / 1024
        return abs(v) + 0.0 if t.unsigned else v
    if k is Kind.DECIMAL:
        assert t.precision is not None and t.scale is not None
        digits = src.integer(1, t.precision)
        unscaled = src.integer(0, 10 ** digits - 1)
        if not t.unsigned and src.boolean():
            unscaled = -unscaled
        return decimal_from_unscaled(unscaled, t.scale)
    if k is Kind.BIT:
        assert t.length is not None
        return src.integer(0, (1 << t.length) - 1)
    if k in TEXT_KINDS:
        cap = min(t.max_chars(), 24) if k in (Kind.CHAR, Kind.VARCHAR) else 40
        s = src.text(min_size=0, max_size=cap, max_codepoint=max_codepoint(t))
        if k is Kind.TINYTEXT:
            while len(s.encode("utf-8")) > 255:
                s = s[:-1]
        if k is Kind.CHAR or key:
            s = s.rstrip(" ")
        return s
    if k in BINARY_KINDS:
        cap = min(t.max_chars(), 32) if k in (Kind.BINARY, Kind.VARBINARY) else 48
        b = src.binary(min_size=0, max_size=cap)
        if k is Kind.BINARY:
            b = b.ljust(t.max_chars(), b"\x00")
        return b
    if k is Kind.DATE:
        if src.rare(0.05):
            return _relaxed_date(src)
        y = src.integer(1000, 9999)
        m = src.integer(1, 12)
        return Date(y, m, src.integer(1, calendar.monthrange(y, m)[1]))
    if k is Kind.DATETIME:
        if src.rare(0.05):
            day = _relaxed_date(src)
            return _truncate(DateTime(day.year, day.month, day.day, src.integer(0, 23), src.integer(0, 59),
                                      src.integer(0, 59), src.integer(0, 999999)), t.fsp)
        y = src.integer(1000, 9999)
        return _truncate(_datetime(src, y), t.fsp)
    if k is Kind.TIMESTAMP:
        while True:
            d = _truncate(_datetime(src, src.integer(1970, 2038)), t.fsp)
            if TIMESTAMP_MIN <= d <= TIMESTAMP_MAX:
                return d
    if k is Kind.TIME:
        h = src.integer(0, 838) if src.boolean() else src.integer(0, 23)
        v2 = Time(src.rare(0.3), h, src.integer(0, 59), src.integer(0, 59), src.integer(0, 999999))
        v2 = _truncate_time(v2, t.fsp)
        if v2.hours == 838 and v2.microsecond:
            v2 = Time(v2.negative, 838, v2.minutes, v2.seconds, 0)
        if v2.total_micros() == 0:
            v2 = Time(False, 0, 0, 0, 0)
        return v2
    if k is Kind.YEAR:
        return src.integer(1901, 2155)
    if k is Kind.JSON:
        return Json(_json(src, 2))
    if k is Kind.ENUM:
        return src.choice(t.elements)
    if k is Kind.SET:
        return tuple(e for e in t.elements if src.boolean())
    if k is Kind.VECTOR:
        n = t.length if t.length is not None else src.integer(1, 8)
        return Vector(tuple(src.float32() if src.rare(0.2) else to_float32(src.integer(-10**6, 10**6) / 64)
                            for _ in range(n)))
    raise AssertionError(k)


def _relaxed_date(src: Source) -> Date:
    """A date only a relaxed sql_mode stores: a zero month or day (NO_ZERO_IN_DATE off), or a
    day past the month's end (ALLOW_INVALID_DATES), never a zero year with other parts."""
    y = src.integer(1, 9999)
    shape = src.integer(0, 3)
    if shape == 0:
        return Date(y, 0, src.integer(0, 31))
    if shape == 1:
        return Date(y, src.integer(1, 12), 0)
    m = src.choice((2, 4, 6, 9, 11))
    return Date(y, m, src.integer(calendar.monthrange(y, m)[1] + 1, 31))


def _datetime(src: Source, year: int) -> DateTime:
    m = src.integer(1, 12)
    d = src.integer(1, calendar.monthrange(year, m)[1])
    return DateTime(year, m, d, src.integer(0, 23), src.integer(0, 59), src.integer(0, 59),
                    src.integer(0, 999999))


def _truncate(d: DateTime, fsp: int) -> DateTime:
    step = 10 ** (6 - fsp)
    return DateTime(d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond // step * step)


def _truncate_time(t: Time, fsp: int) -> Time:
    step = 10 ** (6 - fsp)
    return Time(t.negative, t.hours, t.minutes, t.seconds, t.microsecond // step * step)


_JSON_UNSAFE = frozenset("<>&\u2028\u2029\x7f")
_JSON_KEYS = ("a", "b", "key", "Key", "中文", "😀", "", "with space", 'q"uote', "back\\slash", "aa", "ab")


def _json(src: Source, depth: int) -> JsonData:
    shape = src.integer(0, 7 if depth > 0 else 5)
    if shape == 0:
        return src.integer(-1000, 1000)
    if shape == 1:
        # JSON string escaping differs between printers for control characters, HTML
        # characters and U+2028/2029; keep to characters every printer writes the same way.
        return "".join(c for c in src.text(min_size=0, max_size=8, allow_nul=False)
                       if c not in _JSON_UNSAFE and (c >= " " or c in "\n\t"))
    if shape == 2:
        return src.choice((None, True, False))
    if shape == 3:
        return src.integer(-(1 << 63), (1 << 63) - 1)
    if shape == 4:
        # Halves and quarters have exact, short decimal forms in every JSON printer.
        return (2 * src.integer(-2000, 2000) + 1) / 4
    if shape == 5:
        return src.choice(_JSON_KEYS)
    if shape == 6:
        return [_json(src, depth - 1) for _ in range(src.integer(0, 3))]
    return {src.choice(_JSON_KEYS): _json(src, depth - 1) for _ in range(src.integer(0, 3))}


def default_allowed(t: SqlType) -> bool:
    """Whether MySQL accepts a literal DEFAULT for the type."""
    return t.kind not in NO_LITERAL_DEFAULT_KINDS
