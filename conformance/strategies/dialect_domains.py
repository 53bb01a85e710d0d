"""Value domains per SQL dialect: TiDB's (`domains.py`, the default), MariaDB's and PostgreSQL's.

A `Domain` is the one description of what a dialect's columns may hold: which kinds, which
parameters (`sample_type`), which edge values and which ordinary values. Like `domains.py` it
is written against `Source`, so hypothesis (shrinking) and the seeded sampler (bulk runs) drive
the same description.

* **TiDB** is `domains.py` unchanged: the TiCDC protocols' generation never sees another
  dialect's kinds, and the same seed gives the same workload it always gave.
* **MariaDB** is TiDB's domain plus what MariaDB has and TiDB does not: `INET4`, `INET6` and
  `UUID` columns, and the other spellings of types (`INTEGER`, `DEC`, `FIXED`, `REAL`,
  `DOUBLE PRECISION`, `BOOLEAN`, `LONG VARCHAR`... in mixed case, as DDL readers meet them). Its
  VARCHAR/VARBINARY lengths stay under the 64 KiB row-size limit that TiDB does not have.
  Left out on purpose: spatial types, `VECTOR` (11.7+), system-versioned tables and sequences
  (none has a reference encoder or a protocol rule here yet).
* **PostgreSQL** is its own: boolean, the signed integers, real / double precision with
  ±Infinity and -0, numeric(p,s) and numeric without scale (the scale as written is kept),
  char(n) (blank-padded) / varchar(n) / text (no NUL character), bytea, date (no zero date),
  time (up to 24:00:00), timestamp / timestamptz, interval (months, days and microseconds with
  their own signs), json (text kept) / jsonb (no \\u0000), uuid, enum types, bit(n), and
  one-dimensional arrays with NULL elements. Tables choose a REPLICA IDENTITY.
"""

from __future__ import annotations

import calendar
import decimal
import ipaddress
import math
import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..model.dialects import MARIADB_KINDS, MARIADB_SPELLINGS, POSTGRES_KINDS
from ..model.types import ADDRESS_KINDS, TIDB_KINDS, Kind, SqlType, one_of
from ..model.values import (
    FLOAT32_MAX,
    FLOAT32_MIN_SUBNORMAL,
    Array,
    Date,
    DateTime,
    Hstore,
    Infinity,
    Interval,
    Json,
    Time,
    TimeTz,
    Value,
    decimal_from_unscaled,
    to_float32,
)
from . import domains as tidb
from .source import Source


@dataclass(frozen=True, slots=True)
class Domain:
    """What one dialect's columns may hold. The functions take the same arguments as the
    TiDB functions in `domains.py` (`sample_type(src, kinds, key=)`, `sample_value(src, t,
    edge_rate=, key=)`)."""

    dialect: str
    kinds: tuple[Kind, ...]
    key_kinds: tuple[Kind, ...]
    sample_type: Callable[..., SqlType] = field(repr=False)
    edge_values: Callable[[SqlType], list[Value]] = field(repr=False)
    sample_value: Callable[..., Value] = field(repr=False)
    default_allowed: Callable[[SqlType], bool] = field(repr=False)
    # A large, incompressible value of the type (stored out of line: TOAST), or None where the
    # type holds none; None for a dialect whose workloads have none.
    large_value: Callable[[Source, SqlType], Value | None] | None = field(default=None, repr=False)

    def simplest_value(self, t: SqlType) -> Value:
        return self.edge_values(t)[0]


TIDB_DOMAIN = Domain("tidb", tidb.ALL_KINDS, tidb.KEY_KINDS, tidb.sample_type, tidb.edge_values,
                     tidb.sample_value, tidb.default_allowed)


# -- MariaDB -------------------------------------------------------------------------------

MARIADB_KEY_KINDS: tuple[Kind, ...] = (*tidb.KEY_KINDS, Kind.INET4, Kind.INET6, Kind.UUID)
# A row holds at most 65,535 bytes of non-BLOB columns in MariaDB (TiDB has no such limit):
# 1,024 characters of utf8mb4 times eight columns stays below it.
MARIADB_MAX_VAR_LENGTH = 1024


def mariadb_sample_type(src: Source, kinds: Sequence[Kind] = MARIADB_KINDS, *, key: bool = False) -> SqlType:
    kind = src.choice(kinds)
    if kind in ADDRESS_KINDS:
        t = SqlType(kind)
    else:
        t = tidb.sample_type(src, (kind,), key=key)
        if t.kind in (Kind.VARCHAR, Kind.VARBINARY) and t.length is not None and t.length > MARIADB_MAX_VAR_LENGTH:
            t = SqlType(t.kind, length=MARIADB_MAX_VAR_LENGTH, charset=None if t.is_binary else t.charset,
                        collation=None if t.is_binary else t.collation)
    spellings = MARIADB_SPELLINGS.get(kind)
    if spellings and src.rare(0.3):
        t = _respell(t, src.choice(spellings))
    return t


def _respell(t: SqlType, spelling: str) -> SqlType:
    return SqlType(t.kind, unsigned=t.unsigned, length=t.length, precision=t.precision, scale=t.scale, fsp=t.fsp,
                   elements=t.elements, charset=None if t.is_binary else t.charset,
                   collation=None if t.is_binary else t.collation, spelling=spelling)


_INET6_EDGES = ("::", "::1", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::ffff:192.0.2.1", "2001:db8::8a2e:370:7334",
                "fe80::1")
_UUID_EDGES = ("00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff",
               "123e4567-e89b-12d3-a456-426614174000", "550e8400-e29b-41d4-a716-446655440000",
               "01890a5d-ac96-774b-bcce-b302099a8057")


def address_edges(t: SqlType) -> list[Value]:
    if t.kind is Kind.INET4:
        return [ipaddress.IPv4Address(a) for a in ("0.0.0.0", "127.0.0.1", "255.255.255.255", "192.0.2.1")]
    if t.kind is Kind.INET6:
        return [ipaddress.IPv6Address(a) for a in _INET6_EDGES]
    return [uuid.UUID(u) for u in _UUID_EDGES]


def sample_address(src: Source, t: SqlType, *, mariadb: bool = False) -> Value:
    if t.kind is Kind.INET4:
        return ipaddress.IPv4Address(src.integer(0, (1 << 32) - 1))
    if t.kind is Kind.INET6:
        return ipaddress.IPv6Address(src.integer(0, (1 << 128) - 1))
    if src.boolean():
        # A well-formed RFC 4122 version-4 UUID (what applications mostly store) ...
        return uuid.UUID(int=src.integer(0, (1 << 128) - 1), version=4)
    bits = src.integer(0, (1 << 128) - 1)  # ... or any 128 bits
    b8 = bits >> 56 & 0xFF
    if mariadb and bits >> 79 & 1 and 1 <= b8 <= 0x80:
        # MariaDB refuses a version nibble of 8..f with byte 8 in 0x01..0x80 ("Incorrect uuid
        # value": `m_buffer[6] & -m_buffer[8] & 0x80` in plugin/type_uuid; found by the source
        # checks). Move byte 8 into what it accepts.
        bits = bits & ~(0xFF << 56) | (0x81 if b8 == 0x80 else b8 | 0x80) << 56
    return uuid.UUID(int=bits)


def mariadb_edge_values(t: SqlType) -> list[Value]:
    if t.kind in ADDRESS_KINDS:
        return address_edges(t)
    return tidb.edge_values(t)


def mariadb_sample_value(src: Source, t: SqlType, *, edge_rate: float = 0.2, key: bool = False) -> Value:
    if t.kind in ADDRESS_KINDS:
        if src.rare(edge_rate):
            return src.choice(address_edges(t))
        return sample_address(src, t, mariadb=True)
    return tidb.sample_value(src, t, edge_rate=edge_rate, key=key)


MARIADB_DOMAIN = Domain("mariadb", MARIADB_KINDS, MARIADB_KEY_KINDS, mariadb_sample_type, mariadb_edge_values,
                        mariadb_sample_value, tidb.default_allowed)


# -- PostgreSQL ----------------------------------------------------------------------------

POSTGRES_KEY_KINDS: tuple[Kind, ...] = (
    Kind.INT, Kind.BIGINT, Kind.SMALLINT, Kind.VARCHAR, Kind.TEXT, Kind.DECIMAL, Kind.DATE, Kind.DATETIME,
    Kind.TIMESTAMPTZ, Kind.UUID, Kind.BYTEA, Kind.ENUM, Kind.TIME, Kind.CHAR,
)
_PG_ARRAY_ELEMENTS = (Kind.INT, Kind.TEXT, Kind.BIGINT, Kind.BOOLEAN, Kind.DOUBLE, Kind.DECIMAL, Kind.NUMERIC,
                      Kind.VARCHAR, Kind.DATE, Kind.UUID, Kind.DATETIME, Kind.TIMESTAMPTZ, Kind.SMALLINT)
# Enum labels: up to 63 bytes, case-sensitive, anything but NUL.
_PG_ENUM_LABELS = ("a", "b", "c", "A", "it's", 'say "hi"', "x\\y", "a,b", "中", "😀", "Ünï", "0", "with space",
                   "semi;colon", "{brace}", "NULL")
_PG_TEXT_EDGES = ("", "a", "😀", "中文", "'\"\\,%_", "NULL", "{a,b}", " lead", "tab\there")
PG_DATE_MIN = Date(1, 1, 1)
PG_DATE_MAX = Date(9999, 12, 31)


def pg_sample_type(src: Source, kinds: Sequence[Kind] = POSTGRES_KINDS, *, key: bool = False) -> SqlType:
    kind = src.choice(kinds)
    if kind is Kind.DECIMAL:
        if src.rare(0.4):
            p, s = src.choice(tidb.DECIMAL_EDGE_PARAMS)
        else:
            p = src.integer(1, 65)
            s = src.integer(0, min(30, p))
        return SqlType(kind, precision=p, scale=s)
    if kind is Kind.CHAR:
        return SqlType(kind, length=src.integer(1, 32) if not src.rare(0.1) else src.choice((1, 255)))
    if kind is Kind.VARCHAR:
        return SqlType(kind, length=src.integer(1, 64) if not src.rare(0.1) else src.choice((1, 255, 65535)))
    if kind is Kind.BIT:
        return SqlType(kind, length=src.choice((1, 64, 8)) if src.rare(0.4) else src.integer(1, 64))
    if kind is Kind.VARBIT:
        return SqlType(kind, length=src.choice((1, 64, 8, 200)) if src.rare(0.4) else src.integer(1, 64))
    if kind in (Kind.TIME, Kind.DATETIME, Kind.TIMESTAMPTZ, Kind.TIMETZ):
        return SqlType(kind, fsp=src.choice((0, 6, 3)) if src.rare(0.5) else src.integer(0, 6))
    if kind is Kind.ENUM:
        return SqlType(kind, elements=tidb._members(src, _PG_ENUM_LABELS, 6))
    if kind is Kind.ARRAY:
        return SqlType(kind, element=pg_sample_type(src, _PG_ARRAY_ELEMENTS))
    return SqlType(kind)


def pg_edge_values(t: SqlType) -> list[Value]:
    k = t.kind
    if k is Kind.BOOLEAN:
        return [False, True]
    if k in (Kind.SMALLINT, Kind.INT, Kind.BIGINT):
        lo, hi = t.int_range()
        return [0, 1, hi, lo, -1]
    if k is Kind.FLOAT:
        return [0.0, 1.0, FLOAT32_MAX, FLOAT32_MIN_SUBNORMAL, -0.0, -FLOAT32_MAX, math.inf, -math.inf,
                to_float32(3.14), math.nan]
    if k is Kind.DOUBLE:
        return [0.0, 1.0, 1.7976931348623157e308, 5e-324, -0.0, -2.5, math.inf, -math.inf, 1e21, 0.1, math.nan]
    if k is Kind.DECIMAL:
        # NaN fits any numeric(p,s); the infinities fit only a numeric without a typmod.
        return [*tidb.edge_values(SqlType(Kind.DECIMAL, precision=t.precision, scale=t.scale)),
                decimal.Decimal("NaN")]
    if k is Kind.NUMERIC:
        return [decimal.Decimal("0"), decimal.Decimal("1.50"), decimal.Decimal("-0.000000000000000000001"),
                decimal.Decimal("1" + "0" * 40), decimal.Decimal("-123456789012345678901234567890.123456789"),
                decimal.Decimal("0.0000"), decimal.Decimal("NaN"), decimal.Decimal("Infinity"),
                decimal.Decimal("-Infinity")]
    if k in (Kind.CHAR, Kind.VARCHAR):
        assert t.length is not None
        return [v for v in _PG_TEXT_EDGES if len(v) <= t.length and not (k is Kind.CHAR and v != v.rstrip(" "))]
    if k is Kind.TEXT:
        return list(_PG_TEXT_EDGES)
    if k is Kind.BYTEA:
        return [b"", b"\x00", b"\x00\xff", b"\\x", b"\xff" * 3]
    if k is Kind.BIT:
        assert t.length is not None
        return [0, 1, (1 << t.length) - 1]
    if k is Kind.DATE:
        return [Date(2000, 1, 1), PG_DATE_MIN, PG_DATE_MAX, Date(1970, 1, 1), Date(2000, 2, 29), Infinity(True),
                Infinity(False)]
    if k is Kind.TIME:
        return [Time(False, 0, 0, 0), Time(False, 24, 0, 0),
                tidb._truncate_time(Time(False, 23, 59, 59, 999999), t.fsp)]
    if k in (Kind.DATETIME, Kind.TIMESTAMPTZ):
        return [DateTime(2000, 1, 1), DateTime(1, 1, 1), DateTime(1970, 1, 1),
                tidb._truncate(DateTime(9999, 12, 31, 23, 59, 59, 999999), t.fsp), Infinity(True), Infinity(False)]
    if k is Kind.TIMETZ:
        return [TimeTz(0, 0), TimeTz(_DAY_US, 0), TimeTz(_truncate_us(_DAY_US - 1, t.fsp), 14 * 3600),
                TimeTz(0, -12 * 3600), TimeTz(_truncate_us(45_296_789_012, t.fsp), 5 * 3600 + 1800),
                TimeTz(_DAY_US, PG_TIMETZ_MAX_OFFSET), TimeTz(1_000_000, -PG_TIMETZ_MAX_OFFSET)]
    if k is Kind.HSTORE:
        return [Hstore(), Hstore.of({"a": "1"}), Hstore.of({"b": None}), Hstore.of({"ü k": 'x"y', "": ""}),
                Hstore.of({"\\": "NULL", "NULL": None, "=>": ", "}), Hstore.of({"😀": "中文", "a b": "'"})]
    if k is Kind.VARBIT:
        assert t.length is not None
        n = t.length
        edges = ["0", "", "1", "1" * n, "1" + "0" * (n - 1), "0" * n, "01" * (n // 2)]
        # varbit(1) never holds '': real 3.6.3 cannot read it as a boolean and writes null (FINDINGS.md).
        return list(dict.fromkeys(e for e in edges if len(e) <= n and (e or n > 1)))
    if k is Kind.INTERVAL:
        return [Interval(), Interval(1, -2, 3_000_000), Interval(-14, 0, 0), Interval(0, 0, 86_400_000_000 * 2),
                Interval(0, 0, -1), Interval(1200, 31, 3_599_999_999)]
    if k is Kind.JSON:
        return [Json({}), Json([]), Json(None), Json(""), Json({"a": [1, 2, {"b": None}]}), Json(-0.5),
                Json(9223372036854775807)]
    if k is Kind.JSONB:
        return [Json({}), Json([]), Json(None), Json({"key": "va\"l\\ue\n", "中": "😀"}), Json(-0.5)]
    if k is Kind.UUID:
        return address_edges(t)
    if k is Kind.ENUM:
        return [t.elements[0], t.elements[-1]]
    if k is Kind.ARRAY:
        assert t.element is not None
        e = [x for x in pg_edge_values(t.element) if not _special(x)]
        return [Array(()), Array((e[0],)), Array((None,)), Array((e[0], None, e[-1]))]
    if k is Kind.MONEY:
        return [decimal.Decimal("0.00"), decimal.Decimal("12.34"), decimal.Decimal("-0.01"),
                decimal_from_unscaled(PG_MONEY_MAX, 2), decimal_from_unscaled(-PG_MONEY_MAX - 1, 2)]
    if k is Kind.INET:
        return ["127.0.0.1", "192.168.1.5/24", "::1", "2001:db8::1/64", "0.0.0.0/0", "255.255.255.255"]
    if k is Kind.CIDR:
        return ["10.0.0.0/8", "192.168.0.0/24", "2001:db8::/32", "0.0.0.0/0", "::/0", "10.1.2.3/32"]
    if k is Kind.MACADDR:
        return ["08:00:2b:01:02:03", "ff:ff:ff:ff:ff:ff", "00:00:00:00:00:00"]
    if k is Kind.MACADDR8:
        return ["08:00:2b:01:02:03:04:05", "08:00:2b:ff:fe:01:02:03", "00:00:00:00:00:00:00:00"]
    raise AssertionError(k)


_READ_INFINITIES = (Kind.DATE, Kind.DATETIME)


def _special(v: Value) -> bool:
    """NaN or an infinity: not a key's value (a key identifies its row by equality)."""
    return (isinstance(v, decimal.Decimal) and not v.is_finite()) or (isinstance(v, float) and not math.isfinite(v)) \
        or isinstance(v, Infinity)


#: money is a 64-bit count of cents.
PG_MONEY_MAX = (1 << 63) - 1
_DAY_US = 86_400_000_000
#: The widest UTC offset generated for a time with time zone: whole minutes up to 15:59 (offsets
#: with seconds are left out: real 3.6.3 cannot parse them while streaming and stops, FINDINGS.md).
PG_TIMETZ_MAX_OFFSET = 15 * 3600 + 59 * 60


def _truncate_us(us: int, fsp: int) -> int:
    return us - us % int(10 ** (6 - fsp))


def _pg_inet(src: Source, *, network: bool) -> str:
    """An address as PostgreSQL prints inet (the netmask only when not a single host) or cidr (a
    network: host bits zero, the netmask always). IPv6 addresses keep clear of the IPv4-mapped
    and -compatible forms, which PostgreSQL prints in dotted quads."""
    v6 = src.rare(0.3)
    bits = 128 if v6 else 32
    n = src.integer(0, (1 << bits) - 1)
    if v6:
        n |= 1 << 127  # never ::ffff:a.b.c.d nor ::a.b.c.d
    prefix = bits if src.boolean() else src.integer(0, bits)
    if network:
        n &= ((1 << bits) - 1) ^ ((1 << (bits - prefix)) - 1)
    addr = str(ipaddress.IPv6Address(n) if v6 else ipaddress.IPv4Address(n))
    return f"{addr}/{prefix}" if network or prefix != bits else addr


def pg_sample_value(src: Source, t: SqlType, *, edge_rate: float = 0.2, key: bool = False) -> Value:
    if src.rare(edge_rate):
        v = src.choice(pg_edge_values(t))
        if not (key and ((isinstance(v, str) and v != v.rstrip(" ")) or _special(v))):
            return v
    k = t.kind
    if k is Kind.BOOLEAN:
        return src.boolean()
    if k in (Kind.SMALLINT, Kind.INT, Kind.BIGINT):
        lo, hi = t.int_range()
        return src.integer(max(lo, -100), min(hi, 1000)) if src.boolean() else src.integer(lo, hi)
    if k is Kind.FLOAT:
        return src.float32() if src.boolean() else to_float32(src.integer(-10**6, 10**6) / 64)
    if k is Kind.DOUBLE:
        return src.float64() if src.boolean() else src.integer(-10**9, 10**9) / 1024
    if k is Kind.DECIMAL:
        return tidb.sample_value(src, SqlType(Kind.DECIMAL, precision=t.precision, scale=t.scale), edge_rate=0)
    if k is Kind.NUMERIC:
        digits = src.integer(1, 40)
        unscaled = src.integer(0, 10 ** digits - 1)
        if src.boolean():
            unscaled = -unscaled
        return decimal_from_unscaled(unscaled, src.integer(0, min(digits + 5, 30)))
    if k in (Kind.CHAR, Kind.VARCHAR, Kind.TEXT):
        cap = 40 if k is Kind.TEXT else min(t.length or 0, 24)
        s = src.text(min_size=0, max_size=cap, allow_nul=False)
        return s.rstrip(" ") if k is Kind.CHAR or key else s
    if k is Kind.BYTEA:
        return src.binary(min_size=0, max_size=48)
    if k is Kind.BIT:
        assert t.length is not None
        return src.integer(0, (1 << t.length) - 1)
    if k is Kind.DATE:
        y = src.integer(1, 9999)
        m = src.integer(1, 12)
        return Date(y, m, src.integer(1, calendar.monthrange(y, m)[1]))
    if k is Kind.TIME:
        return tidb._truncate_time(Time(False, src.integer(0, 23), src.integer(0, 59), src.integer(0, 59),
                                        src.integer(0, 999999)), t.fsp)
    if k is Kind.TIMETZ:
        offset = src.choice((0, 3600, -5 * 3600, 5 * 3600 + 1800, 9 * 3600, -(3 * 3600 + 1800))) if src.boolean() \
            else src.integer(-PG_TIMETZ_MAX_OFFSET // 60, PG_TIMETZ_MAX_OFFSET // 60) * 60
        return TimeTz(_truncate_us(src.integer(0, _DAY_US - 1), t.fsp), offset)
    if k is Kind.HSTORE:
        return Hstore.of({src.text(min_size=0, max_size=12, allow_nul=False):
                          None if src.rare(0.15) else src.text(min_size=0, max_size=24, allow_nul=False)
                          for _ in range(src.integer(0, 4))})
    if k is Kind.VARBIT:
        assert t.length is not None
        n = src.integer(1 if t.length == 1 else 0, min(t.length, 80))
        return format(src.integer(0, (1 << n) - 1), f"0{n}b") if n else ""
    if k in (Kind.DATETIME, Kind.TIMESTAMPTZ):
        return tidb._truncate(tidb._datetime(src, src.integer(1, 9999)), t.fsp)
    if k is Kind.INTERVAL:
        return Interval(src.integer(-1200, 1200), src.integer(-400, 400),
                        src.integer(-10**12, 10**12) if src.boolean() else src.integer(0, 86_399) * 1_000_000)
    if k in (Kind.JSON, Kind.JSONB):
        return Json(tidb._json(src, 2))
    if k is Kind.UUID:
        return sample_address(src, t)
    if k is Kind.ENUM:
        return src.choice(t.elements)
    if k is Kind.ARRAY:
        assert t.element is not None
        el = t.element
        items = (None if src.rare(0.1) else pg_sample_value(src, el, edge_rate=edge_rate)
                 for _ in range(src.integer(0, 4)))
        # pgjdbc reads array elements through its own paths: a date's or timestamp's infinity as real
        # 3.6.3 was seen to write it (snapshot-special-*), no NaN and no timestamptz infinity (unseen).
        return Array(tuple(x if not _special(x) or (isinstance(x, Infinity) and el.kind in _READ_INFINITIES)
                           else pg_edge_values(el)[0] for x in items))
    if k is Kind.MONEY:
        cents = src.integer(-PG_MONEY_MAX - 1, PG_MONEY_MAX) if src.rare(0.2) else src.integer(-10**7, 10**7)
        return decimal_from_unscaled(cents, 2)
    if k in (Kind.INET, Kind.CIDR):
        return _pg_inet(src, network=k is Kind.CIDR)
    if k in (Kind.MACADDR, Kind.MACADDR8):
        return ":".join(f"{b:02x}" for b in src.binary(min_size=6 if k is Kind.MACADDR else 8,
                                                       max_size=6 if k is Kind.MACADDR else 8))
    raise AssertionError(k)


def pg_default_allowed(t: SqlType) -> bool:
    return True


_LARGE_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _noise(seed: int, n: int) -> bytes:
    """`n` incompressible bytes from a seed (the same on every machine): a large value stays
    incompressible however its source shrinks (hypothesis shrinks the seed, not the bytes)."""
    return random.Random(seed).randbytes(n)


def pg_large_value(src: Source, t: SqlType) -> Value | None:
    """8–12 KB of incompressible data where the type can hold it: text, bytea, json, jsonb, and
    arrays of text, integers or bigints (the arrays Debezium has an unchanged-TOAST placeholder of
    their own for). PostgreSQL stores it out of line (`model.dialects.stored_out_of_line`)."""
    k = t.kind
    seed = src.integer(0, (1 << 32) - 1)
    n = src.integer(8192, 12288)
    if k is Kind.BYTEA:
        return _noise(seed, n)
    text = "".join(_LARGE_ALPHABET[b & 63] for b in _noise(seed, n))
    if k is Kind.TEXT:
        return text
    if k in (Kind.JSON, Kind.JSONB):
        return Json([text[i:i + 32] for i in range(0, len(text), 32)])
    if k is Kind.ARRAY and t.element is not None:
        el = t.element.kind
        if el is Kind.TEXT or (el is Kind.VARCHAR and (t.element.length or 0) >= 32):
            return Array(tuple(text[i:i + 32] for i in range(0, len(text), 32)))
        if el in (Kind.INT, Kind.BIGINT):
            lo, hi = t.element.int_range()
            rng = random.Random(seed)
            return Array(tuple(rng.randint(lo, hi) for _ in range(n // 4)))
    return None


POSTGRES_DOMAIN = Domain("postgresql", POSTGRES_KINDS, POSTGRES_KEY_KINDS, pg_sample_type, pg_edge_values,
                         pg_sample_value, pg_default_allowed, pg_large_value)

DOMAINS: dict[str, Domain] = {d.dialect: d for d in (TIDB_DOMAIN, MARIADB_DOMAIN, POSTGRES_DOMAIN)}


def domain_for(dialect: str) -> Domain:
    return one_of(DOMAINS, dialect, "value domain (SQL dialect)")


# Every TiDB kind but VECTOR is a MariaDB kind (a TiCDC workload for a MariaDB upstream keeps them all).
assert set(TIDB_KINDS) - {Kind.VECTOR} <= set(MARIADB_KINDS)
