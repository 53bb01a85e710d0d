"""TiDB / MySQL literals, column definitions and CREATE TABLE of the model (the generator's DDL
text); whole workloads render through `dialects.workload_sql`."""

from __future__ import annotations

import decimal
import math

from .table import Column, DefaultKind, Table
from .types import Kind, SqlType, quote_ident, quote_sql_string
from .values import Date, DateTime, Json, Time, Value, Vector, decimal_text, float32_shortest

# ALLOW_INVALID_DATES alone: zero dates and zero parts (`2020-00-15`) need NO_ZERO_DATE and
# NO_ZERO_IN_DATE off, day 31 in any month (`2021-02-31`) needs ALLOW_INVALID_DATES on, and
# without STRICT_* nothing is refused (model/mysql_text.py lists what each mode lets a server store).
SESSION_PREAMBLE = (
    "-- zero dates, invalid dates and TIMESTAMP literals below assume this session setup\n"
    "SET sql_mode = 'ALLOW_INVALID_DATES';\nSET time_zone = '+00:00';"
)


def literal(t: SqlType, v: Value) -> str:
    """A SQL literal that stores exactly `v` in a column of type `t`."""
    if v is None:
        return "NULL"
    k = t.kind
    if k is Kind.BIT:
        assert isinstance(v, int)
        return f"b'{v:b}'"
    if k in (Kind.FLOAT, Kind.DOUBLE):
        assert isinstance(v, float)
        s = float32_shortest(v) if k is Kind.FLOAT else repr(v)
        if math.copysign(1.0, v) < 0 and v == 0:
            return "-0.0"
        return s
    if k is Kind.DECIMAL:
        assert isinstance(v, decimal.Decimal) and t.scale is not None
        return decimal_text(v, t.scale)
    if isinstance(v, bytes):
        return "X'" + v.hex().upper() + "'"
    if isinstance(v, Date):
        return quote_sql_string(v.text())
    if isinstance(v, DateTime):
        return quote_sql_string(v.text(t.fsp))
    if isinstance(v, Time):
        return quote_sql_string(v.text(t.fsp))
    if isinstance(v, Json):
        return quote_sql_string(v.text())
    if isinstance(v, Vector):
        return quote_sql_string(v.text())
    if isinstance(v, tuple):
        order = {e: i for i, e in enumerate(t.elements)}
        return quote_sql_string(",".join(sorted(v, key=order.__getitem__)))
    if isinstance(v, str):
        return quote_sql_string(v)
    if isinstance(v, int):
        return str(v)
    raise TypeError(f"no SQL literal for {v!r} ({t})")


def column_definition(c: Column) -> str:
    parts = [quote_ident(c.name), c.type.sql()]
    if c.generated is not None:
        parts.append(f"GENERATED ALWAYS AS ({c.generated.expression}) {'STORED' if c.generated.stored else 'VIRTUAL'}")
    parts.append("NULL" if c.nullable else "NOT NULL")
    d = c.default
    if d.kind is DefaultKind.NULL:
        parts.append("DEFAULT NULL")
    elif d.kind is DefaultKind.VALUE:
        parts.append("DEFAULT " + literal(c.type, d.value))
    elif d.kind is DefaultKind.CURRENT_TIMESTAMP:
        parts.append("DEFAULT CURRENT_TIMESTAMP" + (f"({c.type.fsp})" if c.type.fsp else ""))
    return " ".join(parts)


def qualified(t: Table) -> str:
    return f"{quote_ident(t.database)}.{quote_ident(t.name)}"


def create_table(t: Table) -> str:
    lines = [column_definition(c) for c in t.columns]
    for ix in t.indexes:
        cols = ", ".join(quote_ident(c) for c in ix.columns)
        if ix.primary:
            lines.append(f"PRIMARY KEY ({cols})")
        elif ix.unique:
            lines.append(f"UNIQUE KEY {quote_ident(ix.name)} ({cols})")
        else:
            lines.append(f"KEY {quote_ident(ix.name)} ({cols})")
    body = ",\n  ".join(lines)
    return f"CREATE TABLE {qualified(t)} (\n  {body}\n);"
