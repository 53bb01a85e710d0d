"""Values as servers print them, back to canonical values.

MariaDB's text protocol (what `SELECT` returns: the suite reads it raw, with no driver
conversion) and PostgreSQL's text output (what `col::text` returns and what `pgoutput` sends)
are parsed here, exactly, by the model's column type. Anything that does not parse is a
`ValueError` naming the text: the source checks report it, nothing guesses.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from collections.abc import Callable

from ..model.types import Kind, SqlType
from ..model.values import (
    FROM_TEXT,
    Array,
    Date,
    DateTime,
    Infinity,
    Interval,
    Json,
    Time,
    Value,
    parse_hstore,
    parse_timetz,
    to_float32,
)

_DATETIME = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?"
                       r"([+-]\d{2}(?::?\d{2}){0,2})?$")
_DATE = re.compile(r"^(\d{4,})-(\d{2})-(\d{2})$")
_TIME = re.compile(r"^(-)?(\d{2,}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$")


def _micro(frac: str | None) -> int:
    return int((frac or "").ljust(6, "0")) if frac else 0


def parse_date(s: str) -> Date:
    m = _DATE.match(s)
    if m is None:
        raise ValueError(f"not a date: {s!r}")
    return Date(int(m[1]), int(m[2]), int(m[3]))


def parse_datetime(s: str) -> DateTime:
    """`YYYY-MM-DD HH:MM:SS[.f][±zone]`; a zone other than UTC is converted to UTC."""
    m = _DATETIME.match(s)
    if m is None:
        raise ValueError(f"not a datetime: {s!r}")
    d = DateTime(int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[5]), int(m[6]), _micro(m[7]))
    zone = m[8]
    if zone and zone not in ("+00", "+00:00", "-00"):
        import datetime as dt

        sign = -1 if zone[0] == "-" else 1
        parts = [int(x) for x in re.findall(r"\d{2}", zone)]
        offset = dt.timedelta(hours=parts[0], minutes=parts[1] if len(parts) > 1 else 0,
                              seconds=parts[2] if len(parts) > 2 else 0) * sign
        local = dt.datetime(d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond)
        d = DateTime.from_python(local - offset)
    return d


def parse_time(s: str) -> Time:
    m = _TIME.match(s)
    if m is None:
        raise ValueError(f"not a time: {s!r}")
    return Time(bool(m[1]), int(m[2]), int(m[3]), int(m[4]), _micro(m[5]))


def parse_mariadb_text(t: SqlType, v: str | bytes) -> Value:
    """A value of MariaDB's text protocol (str; bytes for binary-charset results)."""
    k = t.kind
    if isinstance(v, bytes) and k is not Kind.BIT and not t.is_binary:
        v = v.decode("utf-8")
    if t.is_binary:
        b = v if isinstance(v, bytes) else v.encode("utf-8")
        return b
    if k is Kind.BIT:
        return int.from_bytes(v if isinstance(v, bytes) else v.encode("latin-1"), "big")
    assert isinstance(v, str)
    if t.is_integer or k is Kind.YEAR:
        return int(v)
    if k in (Kind.FLOAT, Kind.DOUBLE):
        x = float(v)
        return to_float32(x) if k is Kind.FLOAT else x
    if k is Kind.SET:
        members = set(v.split(",")) if v else set()
        return tuple(e for e in t.elements if e in members)
    parse = _MARIADB_TEXT.get(k)
    return v if parse is None else parse(v)


# -- PostgreSQL ----------------------------------------------------------------------------

_INTERVAL_UNIT = re.compile(r"([+-]?\d+) (year|mon|day)s?")
_INTERVAL_TIME = re.compile(r"([+-])?(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?")


def parse_interval(s: str) -> Interval:
    """IntervalStyle `postgres`: `1 year 2 mons -3 days +04:05:06.000007`."""
    months = days = micros = 0
    rest = s
    for m in _INTERVAL_UNIT.finditer(s):
        n = int(m[1])
        if m[2] == "year":
            months += 12 * n
        elif m[2] == "mon":
            months += n
        else:
            days += n
    rest = _INTERVAL_UNIT.sub("", s).strip()
    if rest:
        m2 = _INTERVAL_TIME.fullmatch(rest)
        if m2 is None:
            raise ValueError(f"not an interval: {s!r}")
        micros = ((int(m2[2]) * 60 + int(m2[3])) * 60 + int(m2[4])) * 1_000_000 + _micro(m2[5])
        if m2[1] == "-":
            micros = -micros
    return Interval(months, days, micros)


def parse_pg_float(s: str) -> float:
    if s == "Infinity":
        return math.inf
    if s == "-Infinity":
        return -math.inf
    return float(s)


def parse_pg_text(t: SqlType, s: str) -> Value:
    """PostgreSQL's text output of a value of type `t` (DateStyle ISO, IntervalStyle postgres,
    TimeZone UTC, bytea_output hex)."""
    k = t.kind
    if k is Kind.BOOLEAN:
        if s not in ("t", "f", "true", "false"):
            raise ValueError(f"not a boolean: {s!r}")
        return s in ("t", "true")  # pgoutput sends t/f, boolean::text says true/false
    if k in (Kind.SMALLINT, Kind.INT, Kind.BIGINT):
        return int(s)
    if k is Kind.FLOAT:
        return to_float32(parse_pg_float(s))
    if k is Kind.DOUBLE:
        return parse_pg_float(s)
    if k in (Kind.DECIMAL, Kind.NUMERIC):
        return decimal.Decimal(s)
    if k is Kind.MONEY:
        return parse_pg_money(s)
    if k is Kind.INET:
        # inet's output function leaves a single host's netmask out; `inet::text` keeps it.
        addr, _, mask = s.partition("/")
        return addr if mask == ("128" if ":" in addr else "32") else s
    if k is Kind.BYTEA:
        if not s.startswith("\\x"):
            raise ValueError(f"not hex bytea: {s[:20]!r}")
        return bytes.fromhex(s[2:])
    if k is Kind.BIT:
        return int(s, 2) if s else 0
    if k in (Kind.DATE, Kind.DATETIME, Kind.TIMESTAMPTZ) and s in ("infinity", "-infinity"):
        return Infinity(s == "infinity")
    if k in _PG_TEXT:
        return _PG_TEXT[k](s)
    if k is Kind.ARRAY:
        assert t.element is not None
        el = t.element
        return Array(tuple(None if x is None else parse_pg_text(el, x) for x in parse_pg_array(s)))
    return s


_MONEY = re.compile(r"^(-)?\$?([0-9,]+)\.([0-9]{2})$")


def parse_pg_money(s: str) -> decimal.Decimal:
    """money as PostgreSQL prints it under lc_monetary C: `$1,234.56`, `-$0.01` (the `$` and the
    thousands separator are PostgreSQL's defaults when the locale has none)."""
    m = _MONEY.match(s.strip())
    if m is None:
        raise ValueError(f"not money: {s!r}")
    return decimal.Decimal(f"{m[1] or ''}{m[2].replace(',', '')}.{m[3]}")


def parse_pg_array(s: str) -> list[str | None]:
    """A one-dimensional array literal `{a,"b c",NULL,"NULL"}` into its element texts."""
    if not (s.startswith("{") and s.endswith("}")):
        raise ValueError(f"not an array: {s[:40]!r}")
    body = s[1:-1]
    out: list[str | None] = []
    if not body:
        return out
    i, n = 0, len(body)
    while i <= n:
        if i < n and body[i] == '"':
            i += 1
            buf = []
            while body[i] != '"':
                if body[i] == "\\":
                    i += 1
                buf.append(body[i])
                i += 1
            i += 1
            out.append("".join(buf))
        else:
            j = body.find(",", i)
            j = n if j == -1 else j
            tok = body[i:j]
            out.append(None if tok == "NULL" else tok)
            i = j
        if i < n and body[i] != ",":
            raise ValueError(f"bad array literal {s[:60]!r}")
        i += 1
    return out


def _json(s: str) -> Value:
    return Json(json.loads(s))


# The kinds whose value one parser makes from the server's text, per server (what is not here
# takes a rule of its own above, or is the text itself).
_MARIADB_TEXT: dict[Kind, Callable[[str], Value]] = {
    Kind.DECIMAL: decimal.Decimal, Kind.DATE: parse_date, Kind.DATETIME: parse_datetime,
    Kind.TIMESTAMP: parse_datetime, Kind.TIME: parse_time, Kind.JSON: _json, **FROM_TEXT,
}
_PG_TEXT: dict[Kind, Callable[[str], Value]] = {
    Kind.DATE: parse_date, Kind.TIME: parse_time, Kind.TIMETZ: parse_timetz, Kind.HSTORE: parse_hstore,
    Kind.DATETIME: parse_datetime, Kind.TIMESTAMPTZ: parse_datetime, Kind.INTERVAL: parse_interval,
    Kind.JSON: _json, Kind.JSONB: _json, Kind.UUID: FROM_TEXT[Kind.UUID],
}
