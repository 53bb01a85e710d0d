"""MariaDB binlog row images to canonical values.

PyPI `mysql-replication` speaks the replication protocol for us (registering as a replica, the
binlog dump, event framing, checksums, GTID events, and table-map events with the full
metadata of `binlog_row_metadata=FULL`). Its own value decoding is lossy for what the suite
must see exactly: it decodes every BLOB as UTF-8 and raises on other bytes, turns the zero
date into None (indistinguishable from NULL), reads YEAR 0 as 1900, drops an empty SET, and
cannot know INET6 / UUID (fixed BINARY in the log). So rows are decoded here, from the row
event's raw bytes, with the storage formats of MariaDB 10.11 (`sql/field.cc`, `mysys/my_time.c`
`my_*_packed_from_binary`), driven by the model's column types and checked against the log's
own column metadata.
"""

from __future__ import annotations

import decimal
import ipaddress
import json
import struct
import uuid
from typing import Any

from ..model.types import Kind, SqlType
from ..model.values import Date, DateTime, Json, Time, Value

# MySQL field types (include/mysql_com.h).
T_DECIMAL, T_TINY, T_SHORT, T_LONG, T_FLOAT, T_DOUBLE, T_NULL, T_TIMESTAMP, T_LONGLONG, T_INT24 = range(10)
T_DATE, T_TIME, T_DATETIME, T_YEAR, T_NEWDATE, T_VARCHAR, T_BIT, T_TIMESTAMP2, T_DATETIME2, T_TIME2 = range(10, 20)
T_JSON, T_NEWDECIMAL, T_ENUM, T_SET = 245, 246, 247, 248
T_TINY_BLOB, T_MEDIUM_BLOB, T_LONG_BLOB, T_BLOB, T_VAR_STRING, T_STRING, T_GEOMETRY = range(249, 256)

#: The binlog type a column of each kind must have (MariaDB 10.11, mysql56_temporal_format on).
EXPECTED_TYPES: dict[Kind, frozenset[int]] = {
    Kind.BOOL: frozenset({T_TINY}), Kind.TINYINT: frozenset({T_TINY}), Kind.SMALLINT: frozenset({T_SHORT}),
    Kind.MEDIUMINT: frozenset({T_INT24}), Kind.INT: frozenset({T_LONG}), Kind.BIGINT: frozenset({T_LONGLONG}),
    Kind.FLOAT: frozenset({T_FLOAT}), Kind.DOUBLE: frozenset({T_DOUBLE}), Kind.DECIMAL: frozenset({T_NEWDECIMAL}),
    Kind.BIT: frozenset({T_BIT}), Kind.CHAR: frozenset({T_STRING}), Kind.VARCHAR: frozenset({T_VARCHAR}),
    Kind.BINARY: frozenset({T_STRING}), Kind.VARBINARY: frozenset({T_VARCHAR}),
    Kind.DATE: frozenset({T_DATE}), Kind.DATETIME: frozenset({T_DATETIME2}),
    Kind.TIMESTAMP: frozenset({T_TIMESTAMP2}), Kind.TIME: frozenset({T_TIME2}), Kind.YEAR: frozenset({T_YEAR}),
    Kind.ENUM: frozenset({T_ENUM}), Kind.SET: frozenset({T_SET}), Kind.INET4: frozenset({T_STRING}),
    Kind.INET6: frozenset({T_STRING}), Kind.UUID: frozenset({T_STRING}),
    **{k: frozenset({T_BLOB}) for k in (Kind.TINYTEXT, Kind.TEXT, Kind.MEDIUMTEXT, Kind.LONGTEXT, Kind.TINYBLOB,
                                        Kind.BLOB, Kind.MEDIUMBLOB, Kind.LONGBLOB, Kind.JSON)},
}

_DIG2BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)


class BinlogDecodeError(ValueError):
    """The log's bytes do not fit the column they belong to."""


class Reader:
    """Reads a row event body; `read(n)` returns exactly n bytes."""

    __slots__ = ("read",)

    def __init__(self, read: Any) -> None:
        self.read = read

    def uint(self, n: int) -> int:
        return int.from_bytes(self.read(n), "little")

    def be(self, n: int) -> int:
        return int.from_bytes(self.read(n), "big")


def _charset(col: Any) -> str:
    name = (getattr(col, "collation_name", None) or getattr(col, "character_set_name", None) or "utf8mb4").lower()
    if name.startswith(("utf8", "utf8mb4", "utf8mb3")):
        return "utf-8"
    if name.startswith("latin1") or name == "cp1252":
        return "cp1252"
    if name.startswith("ascii"):
        return "ascii"
    if name == "binary":
        return "binary"
    return "utf-8"


def _text(raw: bytes, col: Any) -> str:
    enc = _charset(col)
    try:
        return raw.decode("utf-8" if enc == "binary" else enc)
    except UnicodeDecodeError as e:
        raise BinlogDecodeError(f"column {col.name!r}: bytes {raw[:40]!r} are not {enc}: {e}") from None


def decode_decimal(r: Reader, precision: int, scale: int) -> decimal.Decimal:
    """MySQL's packed DECIMAL (strings/decimal.c `bin2decimal`): base-10^9 groups, big-endian,
    sign in the top bit, negative numbers stored inverted."""
    intg = precision - scale
    intg0, intg0x = divmod(intg, 9)
    frac0, frac0x = divmod(scale, 9)
    size = intg0 * 4 + _DIG2BYTES[intg0x] + frac0 * 4 + _DIG2BYTES[frac0x]
    raw = bytearray(r.read(size))
    negative = not (raw[0] & 0x80)
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    pos = 0
    digits = ""

    def take(n: int) -> int:
        nonlocal pos
        v = int.from_bytes(raw[pos:pos + n], "big")
        pos += n
        return v

    if intg0x:
        digits += str(take(_DIG2BYTES[intg0x]))
    for _ in range(intg0):
        digits += f"{take(4):09d}"
    frac = ""
    for _ in range(frac0):
        frac += f"{take(4):09d}"
    if frac0x:
        frac += f"{take(_DIG2BYTES[frac0x]):0{frac0x}d}"
    text = ("-" if negative else "") + (digits.lstrip("0") or "0") + ("." + frac if scale else "")
    return decimal.Decimal(text)


def _frac(r: Reader, fsp: int) -> int:
    """Fractional seconds of TIME2 / DATETIME2 / TIMESTAMP2 in microseconds (unsigned part)."""
    if fsp <= 0:
        return 0
    if fsp <= 2:
        return r.be(1) * 10000
    if fsp <= 4:
        return r.be(2) * 100
    return r.be(3)


def decode_value(r: Reader, col: Any, t: SqlType) -> Value:
    """One non-NULL column value. `col` is mysql-replication's table-map column (type code and
    metadata), `t` the model's type for the column."""
    code = col.type
    k = t.kind
    if k not in EXPECTED_TYPES or code not in EXPECTED_TYPES[k]:
        raise BinlogDecodeError(f"column {col.name!r}: the log has type {code}, the model says {t}")
    if code in (T_TINY, T_SHORT, T_INT24, T_LONG, T_LONGLONG):
        n = {T_TINY: 1, T_SHORT: 2, T_INT24: 3, T_LONG: 4, T_LONGLONG: 8}[code]
        return int.from_bytes(r.read(n), "little", signed=not t.unsigned)
    if code == T_FLOAT:
        return float(struct.unpack("<f", r.read(4))[0])
    if code == T_DOUBLE:
        return float(struct.unpack("<d", r.read(8))[0])
    if code == T_NEWDECIMAL:
        return decode_decimal(r, col.precision, col.decimals)
    if code == T_BIT:
        return r.be(col.bytes)
    if code == T_YEAR:
        y = r.uint(1)
        return 0 if y == 0 else 1900 + y
    if code == T_DATE:
        v = r.uint(3)
        return Date(v >> 9, (v >> 5) & 0xF, v & 0x1F)
    if code == T_DATETIME2:
        intpart = r.be(5) - 0x8000000000
        micro = _frac(r, col.fsp)
        ymd, hms = intpart >> 17, intpart % (1 << 17)
        ym = ymd >> 5
        return DateTime(ym // 13, ym % 13, ymd % 32, hms >> 12, (hms >> 6) % 64, hms % 64, micro)
    if code == T_TIMESTAMP2:
        secs = r.be(4)
        micro = _frac(r, col.fsp)
        if secs == 0 and micro == 0:
            return DateTime(0, 0, 0)
        y, mo, d, h, mi, se, us = _utc(secs, micro)
        return DateTime(y, mo, d, h, mi, se, us)
    if code == T_TIME2:
        return _time2(r, col.fsp)
    if code == T_ENUM:
        idx = r.uint(col.size)
        if idx == 0:
            return ""  # MariaDB's invalid-ENUM value; the model never writes it
        if idx > len(t.elements):
            raise BinlogDecodeError(f"column {col.name!r}: ENUM index {idx} beyond {len(t.elements)} members")
        return t.elements[idx - 1]
    if code == T_SET:
        mask = r.uint(col.size)
        return tuple(e for i, e in enumerate(t.elements) if mask >> i & 1)
    if code in (T_STRING, T_VARCHAR):
        max_len = getattr(col, "max_length", 0) or 0
        raw = r.read(r.uint(2 if max_len > 255 else 1))
        if k is Kind.INET4:
            return ipaddress.IPv4Address(raw.ljust(4, b"\x00"))
        if k is Kind.INET6:
            return ipaddress.IPv6Address(raw.ljust(16, b"\x00"))
        if k is Kind.UUID:
            # Stored in text order (MariaDB 10.11, checked against the server); the log trims
            # trailing zero bytes of every fixed BINARY, as for INET6.
            return uuid.UUID(bytes=raw.ljust(16, b"\x00"))
        if t.is_binary:
            # BINARY(n) keeps its zero padding in the table; the log may trim it.
            return bytes(raw.ljust(t.length or 0, b"\x00") if k is Kind.BINARY else raw)
        return _text(raw, col)
    if code == T_BLOB:
        raw = r.read(r.uint(col.length_size))
        if t.is_binary:
            return bytes(raw)
        s = _text(raw, col)
        if k is Kind.JSON:
            try:
                return Json(json.loads(s))
            except ValueError as e:
                raise BinlogDecodeError(f"column {col.name!r}: not JSON text: {e}") from None
        return s
    raise BinlogDecodeError(f"column {col.name!r}: binlog type {code} is not decoded")


def _utc(secs: int, micro: int) -> tuple[int, ...]:
    import datetime as dt

    d = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=secs)
    return (d.year, d.month, d.day, d.hour, d.minute, d.second, micro)


def _time2(r: Reader, fsp: int) -> Time:
    """`my_time_packed_from_binary` then `TIME_from_longlong_time_packed`."""
    if fsp >= 5:
        packed = r.be(6) - 0x800000000000
    else:
        intpart = r.be(3) - 0x800000
        if fsp == 0:
            packed = intpart << 24
        elif fsp <= 2:
            frac = r.be(1)
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x100
            packed = (intpart << 24) + frac * 10000
        else:
            frac = r.be(2)
            if intpart < 0 and frac:
                intpart += 1
                frac -= 0x10000
            packed = (intpart << 24) + frac * 100
    negative = packed < 0
    packed = abs(packed)
    hms, micro = packed >> 24, packed % (1 << 24)
    return Time(negative, (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64, micro)


def null_bitmap_positions(bitmap: bytes, count: int) -> list[bool]:
    return [bool(bitmap[i // 8] >> (i % 8) & 1) for i in range(count)]


def present_count(bitmap: bytes, columns: int) -> int:
    return sum(1 for i in range(columns) if bitmap[i // 8] >> (i % 8) & 1)
