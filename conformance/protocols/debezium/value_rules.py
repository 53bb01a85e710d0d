"""The rules Debezium's values are held to beyond their form: when a written value is the
same as the expected one (as a consumer reads it: a float's precision, a JSON document's
spacing, a zoned time's offset…), and what the connector writes for a NOT NULL column it has
no value of."""

from __future__ import annotations

import decimal
import json
import math
from typing import Any

from ...model.table import Column
from ...model.types import Kind
from ...model.values import (
    Date,
    DateTime,
    Time,
    Value,
    to_float32,
)
from .spec import DbzOptions, _float, _json_value, decimal_of, parse_zoned, schema_default


def required_value(c: Column, o: DbzOptions) -> Any:
    """What the connector writes for a NOT NULL column it has no value of (a delete's old row
    under REPLICA IDENTITY DEFAULT holds only the key): the schema's default where it carries one,
    else its converter's fallback (JdbcValueConverters.convertValue: 0, false, "", no bytes, the
    epoch; zero at the column's scale for a decimal)."""
    carried, default = schema_default(c, o)
    if carried:
        return default
    k = c.type.kind
    zero: Value
    if k is Kind.BOOLEAN:
        zero = False
    elif k in (Kind.SMALLINT, Kind.INT, Kind.BIGINT):
        zero = 0
    elif k in (Kind.FLOAT, Kind.DOUBLE):
        zero = 0.0
    elif k in (Kind.DECIMAL, Kind.NUMERIC, Kind.MONEY):
        zero = decimal.Decimal(0).scaleb(-(2 if k is Kind.MONEY else c.type.scale or 0)) \
            if k is not Kind.NUMERIC else decimal.Decimal(0)
    elif k in (Kind.INET, Kind.CIDR, Kind.MACADDR, Kind.MACADDR8):
        return ""
    elif k in (Kind.CHAR, Kind.VARCHAR, Kind.TEXT, Kind.JSON, Kind.JSONB, Kind.UUID, Kind.ENUM):
        return ""
    elif k is Kind.BYTEA:
        zero = b""
    elif k is Kind.DATE:
        zero = Date(1970, 1, 1)
    elif k is Kind.TIME:
        zero = Time(False, 0, 0, 0)
    elif k is Kind.DATETIME:
        zero = DateTime(1970, 1, 1)
    elif k is Kind.TIMESTAMPTZ:
        return "1970-01-01T00:00:00Z"
    elif k is Kind.TIMETZ:
        return "00:00:00Z"
    elif k is Kind.HSTORE:
        return {} if o.hstore_mode == "map" else "{}"
    elif k in (Kind.BIT, Kind.VARBIT):
        return False if c.type.length == 1 else ""
    elif k is Kind.INTERVAL:
        return "P0Y0M0DT0H0M0S" if o.interval_mode == "string" else 0
    elif k is Kind.ARRAY:
        return []  # convertArray's fallback: an empty list
    else:
        return None
    return _json_value(c, zero, o)


def same_value(c: Column, want: Any, got: Any, o: DbzOptions) -> bool:
    """Whether `got` is the JSON converter's rendering of the value `want` was made from: exact,
    except where the text may vary without changing the value (a zoned timestamp's fraction
    digits, JSON documents' spacing and key order, NaN/Infinity as tokens or strings)."""
    k = c.type.kind
    if want is None or got is None:
        return want is None and got is None
    if k is Kind.ARRAY and c.type.element is not None:
        # Element by element, each as its own type compares (a numeric's scale may vary).
        el = Column(c.name, c.type.element, True)
        return isinstance(want, list) and isinstance(got, list) and len(want) == len(got) and all(
            same_value(el, w, g, o) for w, g in zip(want, got, strict=True))
    if k is Kind.TIMESTAMPTZ:
        if not isinstance(got, str) or parse_zoned(want) is None:
            return bool(got == want)  # `infinity`, `-infinity`
        return parse_zoned(got) == parse_zoned(want)
    if k is Kind.NUMERIC and isinstance(want, dict):
        # The same number: the connector may write 0.0000 at scale 0.
        w, g = decimal_of(want), decimal_of(got)
        return w is not None and g is not None and w == g
    if k in (Kind.JSON, Kind.JSONB) or (k is Kind.HSTORE and isinstance(want, str)):
        if not isinstance(got, str):
            return False
        try:
            return _json_eq(json.loads(got), json.loads(want))
        except ValueError:
            return False
    if k is Kind.FLOAT and isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        # The same float32, however many digits its text has.
        return to_float32(float(got)) == to_float32(want) and math.copysign(1, got) == math.copysign(1, want)
    if k in (Kind.FLOAT, Kind.DOUBLE) or (k in (Kind.DECIMAL, Kind.NUMERIC, Kind.MONEY) and o.decimal_mode == "double"):
        return _float_eq(want, got)
    return type(want) is type(got) and want == got


def _json_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_eq(a[x], b[x]) for x in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_eq(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b and type(a) is type(b))


def _float_eq(want: Any, got: Any) -> bool:
    if isinstance(want, str):
        return got == want or (isinstance(got, float) and str(_float(got)) == want)
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return False
    return float(got) == float(want) and math.copysign(1, float(got)) == math.copysign(1, float(want))
