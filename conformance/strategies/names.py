"""Identifiers: database, table and column names, including ones Avro and Kafka forbid.

Names with `-`, `.`, a leading digit, spaces or non-ASCII letters make encoders sanitise them.
Within one workload names stay distinct under every mangling a protocol applies (MySQL's
case-insensitive comparison, Avro's `[A-Za-z_][A-Za-z0-9_]*` rule, Kafka's topic alphabet with
`.` and `_` colliding): real encoders cannot tell such names apart either, and a workload that
collides would test the collision, not the encoder.
"""

from __future__ import annotations

import re

from .source import Source

# MySQL's and TiDB's identifier limit: 64 characters (not bytes).
MAX_IDENTIFIER = 64


def _long(stem: str) -> str:
    """A name of exactly MAX_IDENTIFIER characters."""
    return (stem * MAX_IDENTIFIER)[:MAX_IDENTIFIER]


_PLAIN_COLUMNS = ("id", "c1", "name", "price", "qty", "flag", "data", "note", "k", "v", "amount",
                  "created_at", "Total", "mixedCase", "UPPER")
# Names at the limits: 64 characters (ASCII, and 64 CJK code points = 192 bytes), reserved words
# that SQL must quote, a backtick (doubled inside SQL's quotes) with a dash (sanitised in Avro),
# HTML characters Go's encoding/json escapes (\u003c \u003e \u0026).
_ODD_COLUMNS = ("my-col", "a.b", "1st", "2nd_col", "名前", "colonne_é", "col with space", "ümlaut",
                "$dollar", "x-1.y", "😀emoji", "9", "-lead", "日本", "dot.", "Ω", _long("long_column_"),
                _long("列"), "select", "order", "we`ird-col", "lt<gt>&amp")
_PLAIN_TABLES = ("t", "orders", "users", "events", "items", "Accounts")
_ODD_TABLES = ("t-1", "my.table", "1t", "表", "tbl_ü", "line items", "9lives", "a-b.c", _long("long_table_"),
               "group", "tbl`tick-1")
# Table and database names beyond the Basic Multilingual Plane (a surrogate pair in Java and
# JavaScript: Debezium's topic names get one `_` per UTF-16 unit). Drawn only for dialects that
# ask for them (`Dialect.supplementary_table_names`), so that other dialects' seeded workloads
# stay what they were.
_SUPPLEMENTARY_TABLES = ("t😀", "𝄞score")
_SUPPLEMENTARY_DATABASES = ("s😀x",)
_PLAIN_DATABASES = ("test", "db1", "shop")
_ODD_DATABASES = ("shop-prod", "2db", "数据库", "ümlaut_db", "my.db", _long("long_database_"), "db`tick")

_AVRO_BAD = re.compile(r"[^A-Za-z0-9_]")
_KAFKA_BAD = re.compile(r"[^A-Za-z0-9._\-]")


def avro_mangle(name: str) -> str:
    """The strictest Avro-name mangling a protocol applies (TiCDC's SanitizeName)."""
    if not name:
        return name
    first = name[0]
    head = first if (first.isascii() and (first.isalpha() or first == "_")) else (
        "_" + first if first.isascii() and first.isdigit() else "_")
    return head + _AVRO_BAD.sub("_", name[1:])


def kafka_mangle(name: str) -> str:
    """Kafka's topic alphabet, with `.` folded onto `_` (Kafka refuses topics that collide so)."""
    return _KAFKA_BAD.sub("_", name).replace(".", "_")


class NamePool:
    """Hands out names that stay distinct under every mangling."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def _keys(self, name: str) -> tuple[str, ...]:
        return ("ci:" + name.casefold(), "avro:" + avro_mangle(name).casefold(),
                "kafka:" + kafka_mangle(name).casefold())

    def taken(self, name: str) -> bool:
        return any(k in self._taken for k in self._keys(name))

    def take(self, name: str) -> None:
        self._taken.update(self._keys(name))

    def release(self, name: str) -> None:
        self._taken.difference_update(self._keys(name))

    def draw(self, src: Source, plain: tuple[str, ...], odd: tuple[str, ...], *, odd_rate: float,
             reserved_prefixes: tuple[str, ...] = (), bmp_only: bool = False, max_bytes: int | None = None) -> str:
        if bmp_only:
            # MariaDB identifiers are utf8mb3: nothing beyond U+FFFF.
            odd = tuple(n for n in odd if all(ord(c) <= 0xFFFF for c in n))
        if max_bytes is not None:
            odd = tuple(n for n in odd if len(n.encode("utf-8")) <= max_bytes - 3)  # room for a suffix
        for attempt in range(64):
            base = src.choice(odd) if src.rare(odd_rate) else src.choice(plain)
            name = base if attempt == 0 and not src.rare(0.2) else f"{base}{src.integer(1, 99)}"
            if attempt > 32:
                name = f"{base}_{attempt}"
            if len(name) <= 64 and (max_bytes is None or len(name.encode("utf-8")) <= max_bytes) \
                    and not self.taken(name) and not name.startswith(reserved_prefixes):
                self.take(name)
                return name
        raise RuntimeError("name pool exhausted")  # unreachable in practice: suffixes are plenty


def column_name(pool: NamePool, src: Source, *, odd_rate: float = 0.25, bmp_only: bool = False,
                max_bytes: int | None = None) -> str:
    # `_tidb_*` names would collide with TiCDC's extension fields.
    return pool.draw(src, _PLAIN_COLUMNS, _ODD_COLUMNS, odd_rate=odd_rate, reserved_prefixes=("_tidb", "_ticdc"),
                     bmp_only=bmp_only, max_bytes=max_bytes)


def table_name(pool: NamePool, src: Source, *, odd_rate: float = 0.3, bmp_only: bool = False,
               max_bytes: int | None = None, supplementary: bool = False) -> str:
    odd = _ODD_TABLES + (_SUPPLEMENTARY_TABLES if supplementary else ())
    return pool.draw(src, _PLAIN_TABLES, odd, odd_rate=odd_rate, bmp_only=bmp_only, max_bytes=max_bytes)


def database_name(pool: NamePool, src: Source, *, odd_rate: float = 0.3, bmp_only: bool = False,
                  max_bytes: int | None = None, supplementary: bool = False) -> str:
    odd = _ODD_DATABASES + (_SUPPLEMENTARY_DATABASES if supplementary else ())
    return pool.draw(src, _PLAIN_DATABASES, odd, odd_rate=odd_rate, bmp_only=bmp_only, max_bytes=max_bytes)
