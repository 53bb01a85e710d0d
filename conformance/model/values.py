"""Canonical values: what a column holds, independent of any wire format.

| kind                         | Python value                                    |
|------------------------------|-------------------------------------------------|
| integer kinds, YEAR, BIT     | `int`                                           |
| FLOAT                        | `float` holding an exactly representable float32 |
| DOUBLE                       | `float`                                         |
| DECIMAL(M, D)                | `decimal.Decimal` with exactly D fraction digits |
| CHAR/VARCHAR/TEXT family     | `str` (CHAR without trailing spaces: MySQL strips them on read) |
| BINARY/VARBINARY/BLOB family | `bytes` (BINARY(n) zero-padded to n)            |
| DATE                         | `Date`                                          |
| DATETIME, TIMESTAMP          | `DateTime` (TIMESTAMP in UTC)                   |
| TIME                         | `Time`                                          |
| JSON                         | `Json`                                          |
| ENUM                         | `str` (element name)                            |
| SET                          | `tuple[str, ...]` members in definition order   |
| VECTOR                       | `Vector` (float32 elements)                      |
| INET4 / INET6 (MariaDB)      | `ipaddress.IPv4Address` / `IPv6Address`         |
| UUID (MariaDB, PostgreSQL)   | `uuid.UUID`                                     |
| BOOLEAN (PostgreSQL)         | `bool`                                          |
| NUMERIC (PostgreSQL)         | `decimal.Decimal`, its exponent is the scale the server keeps |
| BYTEA (PostgreSQL)           | `bytes`                                         |
| TIMESTAMPTZ (PostgreSQL)     | `DateTime` in UTC                               |
| INTERVAL (PostgreSQL)        | `Interval` (months, days, microseconds: PostgreSQL's own three fields) |
| ±infinity (PostgreSQL)       | `Infinity(positive)` in a DATE, DATETIME or TIMESTAMPTZ column  |
| JSONB (PostgreSQL)           | `Json`                                          |
| ARRAY (PostgreSQL)           | `Array` of element values (`None` for a NULL element) |
| MONEY (PostgreSQL)           | `decimal.Decimal` with two fraction digits      |
| INET, CIDR, MACADDR[8] (PG)  | `str`, as PostgreSQL prints it                  |
| TIMETZ (PostgreSQL)          | `TimeTz` (clock time and UTC offset)            |
| VARBIT (PostgreSQL)          | `str` of '0'/'1', as long as the value is       |
| HSTORE (PostgreSQL)          | `Hstore` (pairs sorted by key)                  |
| NULL                         | `None`                                          |

`Date`, `DateTime` and `Time` exist because MySQL allows values Python's `datetime` cannot hold
(the zero date, TIME beyond 24 hours, negative TIME).
"""

from __future__ import annotations

import datetime as _dt
import decimal
import ipaddress
import math
import re
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeAlias

from .types import VECTOR_MAX_DIMENSION, Kind, SqlType, quoted


@dataclass(frozen=True, slots=True, order=True)
class Date:
    year: int
    month: int
    day: int

    @property
    def is_zero(self) -> bool:
        return self.year == 0 and self.month == 0 and self.day == 0

    def text(self) -> str:
        return f"{self.year:04d}-{self.month:02d}-{self.day:02d}"


@dataclass(frozen=True, slots=True, order=True)
class DateTime:
    year: int
    month: int
    day: int
    hour: int = 0
    minute: int = 0
    second: int = 0
    microsecond: int = 0

    @property
    def is_zero(self) -> bool:
        return self.year == 0 and self.month == 0 and self.day == 0

    def text(self, fsp: int) -> str:
        """MySQL/TiDB text: `YYYY-MM-DD HH:MM:SS[.f]` with exactly `fsp` fraction digits."""
        s = (f"{self.year:04d}-{self.month:02d}-{self.day:02d} "
             f"{self.hour:02d}:{self.minute:02d}:{self.second:02d}")
        if fsp:
            s += "." + f"{self.microsecond:06d}"[:fsp]
        return s

    def to_python(self) -> _dt.datetime:
        return _dt.datetime(self.year, self.month, self.day, self.hour, self.minute, self.second,
                            self.microsecond, tzinfo=_dt.UTC)

    @classmethod
    def from_python(cls, d: _dt.datetime) -> DateTime:
        return cls(d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond)

    def in_zone(self, tz: _dt.tzinfo) -> DateTime:
        """This UTC instant seen in `tz` (the zero value stays zero)."""
        if self.is_zero:
            return self
        return DateTime.from_python(self.to_python().astimezone(tz))

    def epoch_micros(self) -> int:
        d = self.to_python() - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


@dataclass(frozen=True, slots=True, order=True)
class Time:
    negative: bool
    hours: int
    minutes: int
    seconds: int
    microsecond: int = 0

    def text(self, fsp: int) -> str:
        """`[-]HH:MM:SS[.f]`; hours have at least two digits and may exceed 24."""
        s = ("-" if self.negative else "") + f"{self.hours:02d}:{self.minutes:02d}:{self.seconds:02d}"
        if fsp:
            s += "." + f"{self.microsecond:06d}"[:fsp]
        return s

    def total_micros(self) -> int:
        m = ((self.hours * 60 + self.minutes) * 60 + self.seconds) * 1_000_000 + self.microsecond
        return -m if self.negative else m


@dataclass(frozen=True, slots=True)
class Vector:
    """A TiDB VECTOR value: float32 elements (finite; TiDB refuses NaN and infinities).

    Equality is SQL's (element-wise numeric: -0.0 equals 0.0, so an UPDATE to it changes
    nothing); `text()` tells the two apart, as TiDB prints them."""

    elements: tuple[float, ...]

    def text(self) -> str:
        """TiDB's `VectorFloat32.String()` (pkg/types/vector.go): `[` + each element as
        `strconv.AppendFloat(v, 'f', -1, 32)` joined by `,` + `]`, e.g. `[1,-2.5,0.1]`."""
        return "[" + ",".join(go_format_float(x, 32, "f") for x in self.elements) + "]"

    def __len__(self) -> int:
        return len(self.elements)


_VECTOR_ELEMENT = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")


# A decimal text Go's shortest 'f' formatting prints as it is written, without running Go's
# algorithm: canonical (no exponent, no leading zero, no trailing fraction zero) of at most
# FLT_DIG (6) significant digits for a float32, DBL_DIG (15) for a float64 (such decimals map to
# distinct floats and back, so the text is the one shortest form), of a magnitude the type holds
# as a normal number (or exactly 0).
_CANONICAL_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]*[1-9])?")
_QUICK_FLOAT = {32: (6, 1e-30, 1e30), 64: (15, 1e-300, 1e300)}


def quick_float_text(p: str, bits: int = 32) -> bool:
    """`go_format_float(x, bits, "f") == p` for the float `p` parses to, surely (see above)."""
    if _CANONICAL_DECIMAL.fullmatch(p) is None or p == "-0":
        return False
    most, lo, hi = _QUICK_FLOAT[bits]
    digits = p.lstrip("-").replace(".", "").lstrip("0").rstrip("0")
    return len(digits) <= most and (not digits or lo < abs(float(p)) < hi)


# Vector elements of 7 to 9 significant digits, or of a subnormal or huge float32 (a float32's
# shortest text mostly has 7 to 9, so
# `quick_float_text`, which stops at 6, sent most generated vectors to the rule, whose shortest-
# digits search tries up to nine roundings per element). The rule's test of an element `p`, with
# x = to_float32(float(p)), is `go_format_float(x, 32, "f") == p`: `float32_shortest(x)` takes
# the first q in 1..9 whose closest q-digit decimal `f"{x:.{q}g}"` reads back as x, and that
# must be p. For a canonical p of k digits (k <= 9; those of k <= 6 in 1e-30..1e30 are
# `quick_float_text`'s) this holds when
#   (1) p is the closest k-digit decimal to x (`f"{x:.{k-1}e}"` has p's digits and exponent), and
#   (2) no decimal of fewer digits reads back as x: every such decimal is at most p cut to k-1
#       digits (`lower`) or at least that plus one unit in its last place (`upper`), `float` is
#       monotonic, and float(lower) < lo, float(upper) > hi, where lo and hi are the midpoints
#       between x and its float32 neighbours (exact in a double): below lo or above hi, a double
#       rounds to another float32.
# Both sides of a tie or a bound go to the rule (strict comparisons, exact digit match).
_F32 = struct.Struct("<f")
_frexp, _ldexp = math.frexp, math.ldexp
_U32 = struct.Struct("<I")
_ELEMENT = re.compile(r"-?(0|[1-9][0-9]*)(?:\.([0-9]*[1-9]))?")


# The same two tests, without formatting or parsing a decimal, where float arithmetic with a
# margin settles them (`quick_float32_text`; `_quick_float32_exact` decides the rest): for p of k
# >= 2 digits, p = S * 10^t (S its k significant digits), y = float(p) (|p - y| <= y * 2^-53) and
# x = float32(y), a normal float32 (1e-37 < y < 1e37) with exact neighbours (its spacing: `_frexp`), so
# that d = |y - x| is exact (Sterbenz: x and y are within a factor 2):
#   (1) if d + y * 1e-15 < 0.4999999 * 10^t, then |p - x| < 10^t / 2: p is the one k-digit decimal
#       closest to x (p >= 10^exp + 10^t, so the k-digit decimals of the decade below, and of the
#       decade above from 10^(exp+1) on, are further than 10^t / 2 from x), which is what `.{k-1}e`
#       prints;
#   (2) `float(lower) < lo` holds if the exact lower is below the double before lo, which it is
#       where lower * 10^(t+1) computed in doubles (two roundings of 2^-53, 10^n read correctly
#       rounded: `_P10`) times (1 + 1e-14) is below lo * (1 - 1e-14); the same for upper, above hi.
# Where a margin is not met the exact test decides: this one accepts exactly what it accepts.
_P10 = [float(f"1e{n}") for n in range(-64, 65)]  # 10^n correctly rounded, at n + 64


def _element_digits(p: str) -> tuple[str, int, float] | bool:
    """The element `p`'s significant digits, the decimal exponent of the first and its magnitude
    (a float), for the two tests below; or `quick_float32_text`'s answer where the text alone
    gives it (not an element, zero, more than 9 digits, or `quick_float_text`'s)."""
    m = _ELEMENT.fullmatch(p)
    if m is None:
        return False
    whole, frac = m.groups("")
    if whole != "0":
        exp = len(whole) - 1
        sig = (whole + frac).rstrip("0")
    elif frac:
        sig = frac.lstrip("0")
        exp = len(sig) - len(frac) - 1
    else:
        return p == "0"  # "-0" goes to the rule
    k = len(sig)
    if k > 9:
        return False
    y = float(p)
    if y < 0:
        y = -y
    if k <= 6 and 1e-30 < y < 1e30:
        return True  # `quick_float_text`: a normal float32's digits, at most FLT_DIG of them
    return sig, exp, y


def quick_float32_text(p: str) -> bool:
    """`parse_vector` surely accepts the element `p` (Go's shortest float32 'f' text): what
    `model.values.quick_float_text` takes (up to 6 digits of a normal float32), and the texts of
    up to 9 digits that pass the two tests above (any finite float32 but zero). The tests by
    float arithmetic where its margin holds, else by `_quick_float32_exact` (the same answer)."""
    got = _element_digits(p)
    if isinstance(got, bool):
        return got
    sig, exp, y = got
    k = len(sig)
    if k >= 2 and 1e-37 < y < 1e37:
        x: float = _F32.unpack(_F32.pack(y))[0]
        d = y - x
        if d < 0:
            d = -d
        t = exp - k + 65  # 10^t at _P10[t]
        if d + y * 1e-15 < 0.4999999 * _P10[t]:  # (1)
            # The midpoints to x's float32 neighbours, from its spacing: x = m * 2^e (0.5 <= m < 1)
            # has 24 significant bits, so its neighbours are 2^(e-24) away, the one below half that
            # where x is a power of two (m = 0.5); exact in doubles.
            m, e = _frexp(x)
            half = _ldexp(1.0, e - 25)
            lo = x - (half / 2 if m == 0.5 else half)
            hi = x + half
            w = _P10[t + 1]
            lower = int(sig[:-1])
            if lower * w * (1 + 1e-14) < lo * (1 - 1e-14) and (lower + 1) * w * (1 - 1e-14) > hi * (1 + 1e-14):
                return True  # (2)
    return _quick_float32_exact(p)


def _quick_float32_exact(p: str) -> bool:
    """`quick_float32_text`'s answer, by the two tests as written above (formatting x to k
    digits, reading the shorter decimals back)."""
    got = _element_digits(p)
    if isinstance(got, bool):
        return got
    sig, exp, y = got
    k = len(sig)
    try:
        x: float = _F32.unpack(_F32.pack(y))[0]
    except OverflowError:  # beyond float32: the rule says so
        return False
    if x == 0.0:
        return False  # a nonzero text that reads back as zero: the rule says so
    mant, _, e = f"{x:.{k - 1}e}".partition("e")
    if mant.replace(".", "") != sig or int(e) != exp:
        return False
    if k == 1:
        return True  # no shorter decimal but zero, which reads back as zero
    bits = _U32.unpack(_F32.pack(x))[0]
    unit = exp - k + 2
    lower = int(sig[:-1])
    # Midpoints to the float32 neighbours, exact in a double (the largest float32 has an infinite
    # upper one: the comparison fails, and the rule decides).
    down: float = _F32.unpack(_U32.pack(bits - 1))[0]
    up: float = _F32.unpack(_U32.pack(bits + 1))[0]
    return float(f"{lower}e{unit}") < (x + down) / 2 and float(f"{lower + 1}e{unit}") > (x + up) / 2


def quick_vector(text: str, element: Callable[[str], bool] = quick_float_text) -> bool:
    """A vector text `parse_vector` surely accepts (each element one `element` surely accepts:
    by default a `quick_float_text`)."""
    if text.__class__ is not str or text[:1] != "[" or text[-1:] != "]":
        return False
    body = text[1:-1]
    if not body:
        return True
    parts = body.split(",")
    return len(parts) <= VECTOR_MAX_DIMENSION and all(map(element, parts))


def parse_vector(text: str) -> Vector:
    """A vector as TiDB prints it (`Vector.text()`), back to a `Vector`; ValueError says why
    the text is not one: not `[e1,e2,...]`, an element not in Go's shortest float32 'f' form
    (no exponent, no spaces), beyond float32, or more than VECTOR_MAX_DIMENSION elements."""
    if not (text.startswith("[") and text.endswith("]")):
        raise ValueError("not [e1,e2,...]")
    body = text[1:-1]
    parts = body.split(",") if body else []
    if len(parts) > VECTOR_MAX_DIMENSION:
        raise ValueError(f"{len(parts)} elements: a VECTOR has at most {VECTOR_MAX_DIMENSION}")
    out = []
    for p in parts:
        if not _VECTOR_ELEMENT.fullmatch(p):
            raise ValueError(f"element {p[:40]!r} is not a decimal number without exponent")
        x = to_float32(float(p))
        if math.isinf(x):
            raise ValueError(f"element {p[:40]!r} is beyond float32")
        if go_format_float(x, 32, "f") != p:
            raise ValueError(f"element {p[:40]!r} is not the shortest float32 text "
                             f"({go_format_float(x, 32, 'f')[:40]})")
        out.append(x)
    return Vector(tuple(out))


JsonData: TypeAlias = Any  # None | bool | int | float | str | list[JsonData] | dict[str, JsonData]


@dataclass(frozen=True, slots=True)
class Json:
    """A JSON document. `data` holds plain Python JSON data; compare through `text()`."""

    data: JsonData

    def text(self) -> str:
        """TiDB's `BinaryJSON.String()`: MySQL spacing (`{"k": 1, "a": [1, 2]}`), keys sorted
        by their UTF-8 bytes (TiDB orders object keys bytewise in its binary JSON)."""
        return _json_text(self.data)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Json) and self.text() == other.text()

    def __hash__(self) -> int:
        return hash(self.text())


def _json_text(v: JsonData) -> str:
    return render_json(v, quote=json_quote, item_sep=", ", kv_sep=": ",
                       key_order=lambda d: sorted(d, key=lambda k: k.encode("utf-8")))


def render_json(v: Any, *, quote: Callable[[str], str], item_sep: str, kv_sep: str,
                key_order: Callable[[dict[str, Any]], Iterable[str]] = list,
                other: Callable[[Any], str] | None = None) -> str:
    """JSON text with the printer's own choices: string quoting, separators, key order, and
    `other` for values JSON has no form for (Go's []byte). Floats print as Go prints them."""

    def emit(x: Any) -> str:
        if x is None:
            return "null"
        if x is True:
            return "true"
        if x is False:
            return "false"
        if isinstance(x, int):
            return str(x)
        if isinstance(x, float):
            return go_format_float(x, 64)
        if isinstance(x, str):
            return quote(x)
        if isinstance(x, (list, tuple)):
            return "[" + item_sep.join(emit(y) for y in x) + "]"
        if isinstance(x, dict):
            return "{" + item_sep.join(quote(str(k)) + kv_sep + emit(x[k]) for k in key_order(x)) + "}"
        if other is not None:
            return other(x)
        raise TypeError(f"not JSON data: {x!r}")

    return emit(v)


_JSON_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def json_quote(s: str) -> str:
    """Quote a string the way TiDB's JSON printer does (no HTML escaping)."""
    return quoted(s, '"', _JSON_ESCAPES, "\\u{:04x}")


@dataclass(frozen=True, slots=True, order=True)
class Interval:
    """PostgreSQL's interval: three independent fields, each with its own sign (`1 mon -2 days`
    is not `28 days`: the server keeps them apart and so does the model)."""

    months: int = 0
    days: int = 0
    microseconds: int = 0

    def text(self) -> str:
        """PostgreSQL input that stores exactly these three fields."""
        return f"{self.months} mons {self.days} days {self.microseconds} microseconds"


@dataclass(frozen=True, slots=True, order=True)
class Infinity:
    """PostgreSQL's `infinity` / `-infinity` of a date, timestamp or timestamptz column (later or
    earlier than every other value of the type)."""

    positive: bool = True

    def text(self) -> str:
        return "infinity" if self.positive else "-infinity"


@dataclass(frozen=True, slots=True, order=True)
class TimeTz:
    """PostgreSQL's time with time zone: a clock time (00:00:00 up to and including 24:00:00) and
    its UTC offset in seconds east. Two values are equal only with the same clock and the same
    offset (PostgreSQL's timetz_eq: `12:00+01` is not `11:00+00`)."""

    micros: int  # since midnight, 0 .. 86_400_000_000
    offset: int  # seconds east of UTC

    def text(self) -> str:
        """PostgreSQL's output: `HH:MM:SS`, the fraction without trailing zeros, the offset as
        `+HH`, `+HH:MM` or `+HH:MM:SS` (`09:59:59.999999+14`, `12:00:00.5-09:30`)."""
        secs, frac = divmod(self.micros, 1_000_000)
        s = f"{secs // 3600:02d}:{secs // 60 % 60:02d}:{secs % 60:02d}"
        if frac:
            s += "." + f"{frac:06d}".rstrip("0")
        a = abs(self.offset)
        s += ("-" if self.offset < 0 else "+") + f"{a // 3600:02d}"
        if a % 3600:
            s += f":{a // 60 % 60:02d}"
            if a % 60:
                s += f":{a % 60:02d}"
        return s

    def utc_micros(self) -> int:
        """The clock time in UTC, within one day (`23:59:59.999999+14` is 09:59:59.999999)."""
        return (self.micros - self.offset * 1_000_000) % 86_400_000_000


_TIMETZ = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?([+-])(\d{2})(?::(\d{2}))?(?::(\d{2}))?$")


def parse_timetz(text: str) -> TimeTz:
    """PostgreSQL's output of a time with time zone (`TimeTz.text`)."""
    m = _TIMETZ.match(text.strip())
    if m is None:
        raise ValueError(f"not a time with time zone: {text!r}")
    h, mi, s, frac, sign, oh, om, os_ = m.groups()
    micros = ((int(h) * 60 + int(mi)) * 60 + int(s)) * 1_000_000 + int((frac or "").ljust(6, "0"))
    offset = int(oh) * 3600 + int(om or 0) * 60 + int(os_ or 0)
    return TimeTz(micros, -offset if sign == "-" else offset)


@dataclass(frozen=True, slots=True)
class Hstore:
    """PostgreSQL's hstore: distinct text keys, each with a text value or NULL; `pairs` sorted by
    key (the server keeps no order of its own that a consumer may rely on)."""

    pairs: tuple[tuple[str, str | None], ...] = ()

    @classmethod
    def of(cls, mapping: dict[str, str | None]) -> Hstore:
        return cls(tuple(sorted(mapping.items())))

    def as_dict(self) -> dict[str, str | None]:
        return dict(self.pairs)

    def text(self) -> str:
        """hstore's own text: `"k"=>"v", "n"=>NULL`, `\\` and `"` escaped with a backslash."""
        def q(s: str) -> str:
            return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return ", ".join(f"{q(k)}=>{'NULL' if v is None else q(v)}" for k, v in self.pairs)


def parse_hstore(text: str) -> Hstore:
    """hstore's output (`Hstore.text`; keys and values always quoted, NULL bare)."""
    out: dict[str, str | None] = {}
    i, n = 0, len(text)

    def quoted(i: int) -> tuple[str, int]:
        if i >= n or text[i] != '"':
            raise ValueError(f"not an hstore: {text[:40]!r}")
        buf: list[str] = []
        i += 1
        while i < n and text[i] != '"':
            if text[i] == "\\":
                i += 1
            if i >= n:
                break
            buf.append(text[i])
            i += 1
        if i >= n:
            raise ValueError(f"not an hstore (unterminated): {text[:40]!r}")
        return "".join(buf), i + 1

    while i < n:
        key, i = quoted(i)
        if not text.startswith("=>", i):
            raise ValueError(f"not an hstore: {text[:40]!r}")
        i += 2
        value: str | None
        if text.startswith("NULL", i):
            value, i = None, i + 4
        else:
            value, i = quoted(i)
        out[key] = value
        if text.startswith(", ", i):
            i += 2
        elif i != n:
            raise ValueError(f"not an hstore: {text[:40]!r}")
    return Hstore.of(out)


@dataclass(frozen=True, slots=True)
class Array:
    """A one-dimensional PostgreSQL array; `None` items are NULL elements."""

    items: tuple[Value, ...]


Value: TypeAlias = (
    None | int | float | decimal.Decimal | str | bytes | Date | DateTime | Time | Json | tuple[str, ...] | Vector
    | uuid.UUID | ipaddress.IPv4Address | ipaddress.IPv6Address | Interval | Array | Infinity | TimeTz | Hstore
)
Row: TypeAlias = dict[str, Value]

#: Kinds whose value one constructor makes from its text, the same in every format.
FROM_TEXT: dict[Kind, Callable[[str], Value]] = {
    Kind.INET4: ipaddress.IPv4Address, Kind.INET6: ipaddress.IPv6Address, Kind.UUID: uuid.UUID,
}


# -- float32 -----------------------------------------------------------------------------

FLOAT32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]
FLOAT32_MIN_SUBNORMAL = struct.unpack("<f", b"\x01\x00\x00\x00")[0]


def to_float32(x: float) -> float:
    """Round a double to the nearest float32 (as a Python float), as IEEE 754 does and as C's
    `(float)x` and Go's `float32(x)` do: a finite double beyond float32's range becomes ±inf
    (struct raises there instead), NaN stays NaN, -0.0 stays -0.0, tiny values go subnormal or
    to a signed zero. Total: answers for every float."""
    try:
        return float(struct.unpack("<f", struct.pack("<f", x))[0])
    except OverflowError:  # |x| rounds past FLOAT32_MAX: IEEE gives the infinity of x's sign
        return math.copysign(math.inf, x)


def is_float32(x: float) -> bool:
    return math.isfinite(x) and to_float32(x) == x


def float32_shortest(x: float) -> str:
    """Shortest decimal digits that round-trip through float32 (Go's FormatFloat(x,'g',-1,32))."""
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    for p in range(1, 10):
        s = f"{x:.{p}g}"
        if to_float32(float(s)) == x:
            return s
    return repr(x)


def go_format_float(x: float, bits: int = 64, fmt: str = "json") -> str:
    """Go's rendering of a float.

    fmt="json": encoding/json (positional for 1e-6 <= |x| < 1e21, else exponent with the
    `e-07` -> `e-7` clean-up). fmt="f": strconv.FormatFloat(x, 'f', -1, bits) (never exponent).
    `bits=32` uses the shortest float32 digits. Not finite: fmt="f" gives strconv's `+Inf`,
    `-Inf`, `NaN`; encoding/json refuses them (ValueError).
    """
    if not math.isfinite(x):
        if fmt == "f":
            return "NaN" if math.isnan(x) else ("+Inf" if x > 0 else "-Inf")
        raise ValueError(f"{x!r} has no JSON form")
    digits = float32_shortest(x) if bits == 32 else repr(x)
    if x == 0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    d = decimal.Decimal(digits)
    a = abs(x)
    if fmt == "f" or (1e-6 <= a < 1e21):
        s = format(d, "f")
        if "." in s:
            s = s.rstrip("0").rstrip(".")
        return s
    # Exponent form: mantissa with the shortest digits, exponent at least two digits in Go's
    # strconv, then encoding/json strips a leading zero from negative two-digit exponents.
    sign, dig, exp = d.as_tuple()
    assert isinstance(exp, int)
    ds = "".join(map(str, dig)).rstrip("0") or "0"
    e = exp + len(dig) - 1
    mant = ds[0] + ("." + ds[1:] if len(ds) > 1 else "")
    es = f"e{'-' if e < 0 else '+'}{abs(e):02d}"
    if es.startswith("e-0"):
        es = "e-" + es[3:]
    return ("-" if sign else "") + mant + es


# -- DECIMAL -----------------------------------------------------------------------------

# DECIMAL(65, 30) needs 65 significant digits; the default context keeps 28.
DECIMAL_CONTEXT = decimal.Context(prec=200, Emax=999, Emin=-999)


def decimal_from_unscaled(unscaled: int, scale: int) -> decimal.Decimal:
    """unscaled * 10^-scale, exactly, with exponent -scale (no context rounding)."""
    digits = tuple(int(c) for c in str(abs(unscaled)))
    return decimal.Decimal((1 if unscaled < 0 else 0, digits, -scale))


def decimal_text(v: decimal.Decimal, scale: int) -> str:
    """TiDB's MyDecimal.String() for a DECIMAL(M, scale) value: exactly `scale` fraction
    digits, a leading `0` before the point, never `-0`."""
    q = v if v.as_tuple().exponent == -scale else DECIMAL_CONTEXT.quantize(v, decimal.Decimal((0, (1,), -scale)))
    if q.is_zero():
        q = q.copy_abs()
    return format(q, "f")


def decimal_unscaled(v: decimal.Decimal, scale: int) -> int:
    """floor(v * 10^scale) as goavro computes it from a big.Rat."""
    n = DECIMAL_CONTEXT.scaleb(v, scale)
    return int(n.to_integral_value(rounding=decimal.ROUND_FLOOR, context=DECIMAL_CONTEXT))


def twos_complement_min(n: int) -> bytes:
    """Minimal big-endian two's complement (Java BigInteger.toByteArray; 0 -> 00, -128 -> 80)."""
    length = 1
    while not (-(1 << (8 * length - 1)) <= n < (1 << (8 * length - 1))):
        length += 1
    return n.to_bytes(length, "big", signed=True)


def bit_bytes_min(v: int) -> bytes:
    """BIT as TiDB's NewBinaryLiteralFromUint(v, -1): big-endian, leading zeros trimmed, 0 -> 00."""
    if v == 0:
        return b"\x00"
    return v.to_bytes((v.bit_length() + 7) // 8, "big")


def bit_bytes_padded(v: int, width_bits: int) -> bytes:
    """BIT as TiDB stores a column value or default: big-endian, ceil(M/8) bytes."""
    return v.to_bytes((width_bits + 7) // 8, "big")


# -- SET / ENUM --------------------------------------------------------------------------

def set_bitmask(t: SqlType, members: tuple[str, ...]) -> int:
    idx = {e: i for i, e in enumerate(t.elements)}
    mask = 0
    for m in members:
        mask |= 1 << idx[m]
    return mask


def enum_index(t: SqlType, name: str) -> int:
    """1-based index (MySQL's internal ENUM value)."""
    return t.elements.index(name) + 1


def set_text(t: SqlType, members: tuple[str, ...]) -> str:
    order = {e: i for i, e in enumerate(t.elements)}
    return ",".join(sorted(members, key=order.__getitem__))


# -- text forms --------------------------------------------------------------------------

def mysql_text(t: SqlType, v: Value) -> str:
    """The value as MySQL/TiDB prints it (`SELECT` output / TiDB `Datum.String()`).

    Defined for every kind; binary values are decoded as latin-1 so that each byte maps to
    one character (callers that need bytes use the value directly)."""
    k = t.kind
    if v is None:
        raise ValueError("NULL has no text form")
    if isinstance(v, Infinity):
        return v.text()
    if k is Kind.DECIMAL:
        assert isinstance(v, decimal.Decimal) and t.scale is not None
        return decimal_text(v, t.scale)
    if k in (Kind.DATETIME, Kind.TIMESTAMP):
        assert isinstance(v, DateTime)
        return v.text(t.fsp)
    if k is Kind.DATE:
        assert isinstance(v, Date)
        return v.text()
    if k is Kind.TIME:
        assert isinstance(v, Time)
        return v.text(t.fsp)
    if k is Kind.JSON:
        assert isinstance(v, Json)
        return v.text()
    if k is Kind.SET:
        assert isinstance(v, tuple)
        return set_text(t, v)
    if k is Kind.FLOAT:
        assert isinstance(v, float)
        return go_format_float(v, 32, "f")
    if k is Kind.DOUBLE:
        assert isinstance(v, float)
        return go_format_float(v, 64, "f")
    if k is Kind.YEAR:
        assert isinstance(v, int)
        return f"{v:04d}"
    if k is Kind.VECTOR:
        assert isinstance(v, Vector)
        return v.text()
    if k in (Kind.TIMESTAMPTZ,):
        assert isinstance(v, DateTime)
        return v.text(t.fsp)
    if isinstance(v, Interval):
        return v.text()
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, bytes):
        return v.decode("latin-1")
    return str(v)


def values_equal(t: SqlType, a: Value, b: Value) -> bool:
    """Equality that respects -0.0 vs 0.0 for floats (bit patterns), Decimal scale, etc."""
    if a is None or b is None:
        return a is b
    if t.kind in (Kind.FLOAT, Kind.DOUBLE):
        assert isinstance(a, float) and isinstance(b, float)
        return struct.pack("<d", a) == struct.pack("<d", b)
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal) and (a.is_nan() or b.is_nan()):
        return a.is_nan() and b.is_nan()  # PostgreSQL's numeric NaN equals itself
    if isinstance(a, Vector) and isinstance(b, Vector):
        return a.text() == b.text()
    return a == b
