"""SQL dialects: the same workload rendered for TiDB / MySQL, MariaDB and PostgreSQL.

A `Dialect` renders types, literals, DDL and DML of the model, and `workload_sql` a whole
workload as a script (one loop, driven by the dialect). TiDB's literals are `sql.py`'s
(unchanged: the default generation's SQL); MariaDB and PostgreSQL render every DDL from its
structure (`Ddl.kind`, `table`, `pre_table`), so the statements a server executes never depend
on another dialect's text.

Database names go through `Dialect.with_databases(mapper)`: a server shared by many workloads
gives each its own databases (`w42_3__shop`) while the model keeps its names.

How the model's kinds are spelled:

| kind | MariaDB | PostgreSQL |
|---|---|---|
| BOOL / BOOLEAN | `BOOL`/`BOOLEAN` = TINYINT(1) | `boolean` (kind BOOLEAN: true/false) |
| SMALLINT, INT, BIGINT | as TiDB, with spellings (`INTEGER`...) | `smallint`, `integer`, `bigint` (signed) |
| FLOAT, DOUBLE | `FLOAT`, `DOUBLE` (`REAL`, `DOUBLE PRECISION`...) | `real`, `double precision` |
| DECIMAL(M,D) / NUMERIC | `DECIMAL` (`DEC`, `NUMERIC`, `FIXED`) | `numeric(M,D)` / `numeric` (any scale) |
| CHAR, VARCHAR, TEXT | as TiDB | `char(n)` (blank-padded), `varchar(n)`, `text` (unbounded) |
| binary kinds / BYTEA | as TiDB | `bytea` |
| DATE, TIME | as TiDB | `date`, `time(p)` (00:00:00..24:00:00, never negative) |
| DATETIME / TIMESTAMP / TIMESTAMPTZ | as TiDB | `timestamp(p)` / - / `timestamptz(p)` |
| JSON / JSONB | `JSON` (a LONGTEXT: the text is kept) | `json` (text kept) / `jsonb` |
| ENUM | inline | a named type `CREATE TYPE ... AS ENUM` in the table's schema |
| INET4, INET6, UUID | MariaDB's own types | - / - / `uuid` |
| BIT(n) | as TiDB | `bit(n)` |
| ARRAY | - | `element[]`, one dimension |
| MONEY, INET, CIDR, MACADDR, MACADDR8 | - | PostgreSQL's own types |
| TIMETZ, VARBIT | - | `timetz(p)`, `varbit(n)` |
| HSTORE | - | `hstore` (the extension, created where a table first needs it) |

Each dialect also names the *conversions* its server applies to a stored value (`Conversion`):
the source checks accept a stored value that differs from the model's only by one of them.
"""

from __future__ import annotations

import decimal
import enum
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import sql as tidb_sql
from .events import CaptureStart, Ddl, DdlKind, LogicalMessage, Op, RowChange, Transaction, Watermark, Workload
from .table import Column, DefaultKind, Index, ReplicaIdentity, Table
from .types import ADDRESS_KINDS, TIDB_KINDS, Kind, SqlType, one_of, quote_sql_string
from .values import Array, Date, DateTime, Hstore, Infinity, Interval, Json, Row, Time, TimeTz, Value, decimal_text


class Conversion(enum.StrEnum):
    """A difference between the model's value and the stored one that the server is known to
    make, named so that a report can say which one it saw."""

    SIGNED_ZERO = "signed-zero"  # MariaDB stores -0.0 as 0.0 in FLOAT and DOUBLE
    PADDING = "padding"  # PostgreSQL char(n) keeps and returns its blank padding
    TIME_ZONE = "time-zone"  # an instant read back in another zone than UTC


def apply_conversion(c: Conversion, t: SqlType, v: Value) -> Value:
    if c is Conversion.SIGNED_ZERO:
        return 0.0 if isinstance(v, float) and v == 0.0 else v
    if c is Conversion.PADDING:
        return v.ljust(t.length or 0) if isinstance(v, str) else v
    return v


class Dialect:
    """Rendering of the model in one SQL dialect (TiDB / MySQL here; subclasses override)."""

    name = "tidb"
    #: Kinds the dialect's server has.
    kinds: tuple[Kind, ...] = TIDB_KINDS
    #: ADD COLUMN ... FIRST / AFTER exists.
    column_positions = True
    #: Index names live in the schema (PostgreSQL), not in the table: they must be unique there.
    schema_scoped_index_names = False
    #: The server has logical decoding messages (`pg_logical_emit_message`).
    logical_messages = False
    #: Identifiers may hold characters outside the Basic Multilingual Plane.
    supplementary_identifiers = True
    #: Generated table and schema names include some beyond the Basic Multilingual Plane (not
    #: for TiDB: its seeded workloads stay as they always were).
    supplementary_table_names = False
    # The most bytes a generated identifier may have (None: the dialect's own limit of 64
    # characters is the only one).
    max_identifier_bytes: int | None = None
    max_identifier_bytes = 64 * 4

    def __init__(self, databases: Callable[[str], str] | None = None) -> None:
        self._db = databases or (lambda name: name)

    def with_databases(self, mapper: Callable[[str], str]) -> Dialect:
        """The same dialect with every model database name passed through `mapper`."""
        return type(self)(mapper)

    def database(self, name: str) -> str:
        return self._db(name)

    # -- names -----------------------------------------------------------------------------

    def quote_ident(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    def qualified(self, t: Table) -> str:
        return f"{self.quote_ident(self.database(t.database))}.{self.quote_ident(t.name)}"

    # -- types and values -------------------------------------------------------------------

    def type_sql(self, t: SqlType) -> str:
        return t.sql()

    def literal(self, t: SqlType, v: Value) -> str:
        return tidb_sql.literal(t, v)

    def conversions(self, t: SqlType) -> tuple[Conversion, ...]:
        """Conversions the server may apply to a value of type `t` on its way into storage."""
        return ()

    # -- DDL -------------------------------------------------------------------------------

    def column_definition(self, c: Column) -> str:
        return self._column(c, self.type_sql(c.type))

    def _column(self, c: Column, type_sql: str) -> str:
        parts = [self.quote_ident(c.name), type_sql, "NULL" if c.nullable else "NOT NULL"]
        d = c.default
        if d.kind is DefaultKind.NULL:
            parts.append("DEFAULT NULL")
        elif d.kind is DefaultKind.VALUE:
            parts.append("DEFAULT " + self.literal(c.type, d.value))
        elif d.kind is DefaultKind.CURRENT_TIMESTAMP:
            parts.append("DEFAULT " + self.current_timestamp(c.type))
        return " ".join(parts)

    def current_timestamp(self, t: SqlType) -> str:
        return "CURRENT_TIMESTAMP" + (f"({t.fsp})" if t.fsp else "")

    def create_database(self, name: str) -> list[str]:
        return [f"CREATE DATABASE {self.quote_ident(self.database(name))};"]

    def index_definition(self, t: Table, ix: Index) -> str:
        cols = ", ".join(self.quote_ident(c) for c in ix.columns)
        if ix.primary:
            return f"PRIMARY KEY ({cols})"
        if ix.unique:
            return f"UNIQUE KEY {self.quote_ident(ix.name)} ({cols})"
        return f"KEY {self.quote_ident(ix.name)} ({cols})"

    def create_table(self, t: Table) -> list[str]:
        lines = [self.column_definition(c) for c in t.columns]
        lines += [self.index_definition(t, ix) for ix in t.indexes]
        body = ",\n  ".join(lines)
        return [f"CREATE TABLE {self.qualified(t)} (\n  {body}\n);"]

    def add_column(self, t: Table, c: Column, position: str) -> list[str]:
        return [f"ALTER TABLE {self.qualified(t)} ADD COLUMN {self.column_definition(c)}{position};"]

    def drop_column(self, t: Table, name: str) -> list[str]:
        return [f"ALTER TABLE {self.qualified(t)} DROP COLUMN {self.quote_ident(name)};"]

    def modify_column(self, t: Table, c: Column) -> list[str]:
        return [f"ALTER TABLE {self.qualified(t)} MODIFY COLUMN {self.column_definition(c)};"]

    def truncate_table(self, t: Table) -> list[str]:
        return [f"TRUNCATE TABLE {self.qualified(t)};"]

    def rename_table(self, old: Table, new: Table) -> list[str]:
        return [f"RENAME TABLE {self.qualified(old)} TO {self.qualified(new)};"]

    def add_index(self, t: Table, ix: Index) -> list[str]:
        return [f"ALTER TABLE {self.qualified(t)} ADD {self.index_definition(t, ix)};"]

    def drop_index(self, t: Table, ix: Index) -> list[str]:
        what = "PRIMARY KEY" if ix.primary else f"INDEX {self.quote_ident(ix.name)}"
        return [f"ALTER TABLE {self.qualified(t)} DROP {what};"]

    def drop_table(self, t: Table) -> list[str]:
        return [f"DROP TABLE {self.qualified(t)};"]

    def ddl_statements(self, ddl: Ddl) -> list[str]:
        """The statements that perform `ddl`, rendered from its structure."""
        k, t, pre = ddl.kind, ddl.table, ddl.pre_table
        if k is DdlKind.CREATE_DATABASE:
            return self.create_database(ddl.database)
        if k is DdlKind.CREATE_TABLE:
            assert t is not None
            return self.create_table(t)
        if k is DdlKind.DROP_TABLE:
            assert pre is not None
            return self.drop_table(pre)
        assert t is not None and pre is not None, ddl
        if k is DdlKind.TRUNCATE_TABLE:
            return self.truncate_table(pre)
        if k is DdlKind.RENAME_TABLE:
            return self.rename_table(pre, t)
        if k is DdlKind.ADD_COLUMN:
            (c,) = [c for c in t.columns if not pre.has_column(c.name)]
            return self.add_column(pre, c, self.position_clause(t, c))
        if k is DdlKind.DROP_COLUMN:
            (c,) = [c for c in pre.columns if not t.has_column(c.name)]
            return self.drop_column(pre, c.name)
        if k is DdlKind.MODIFY_COLUMN:
            changed = [c for c in t.columns if not pre.has_column(c.name) or pre.column(c.name) != c]
            return [s for c in changed for s in self.modify_column(pre, c)]
        if k is DdlKind.ADD_INDEX:
            old = {ix.name for ix in pre.indexes}
            return [s for ix in t.indexes if ix.name not in old for s in self.add_index(pre, ix)]
        if k is DdlKind.DROP_INDEX:
            new = {ix.name for ix in t.indexes}
            return [s for ix in pre.indexes if ix.name not in new for s in self.drop_index(pre, ix)]
        raise ValueError(f"no rendering for DDL {k}")

    def position_clause(self, t: Table, c: Column) -> str:
        """` FIRST`, ` AFTER x` or nothing: where `c` sits in `t` (the table after ADD COLUMN)."""
        i = t.columns.index(c)
        if i == len(t.columns) - 1:
            return ""
        if i == 0:
            return " FIRST"
        return f" AFTER {self.quote_ident(t.columns[i - 1].name)}"

    # -- DML -------------------------------------------------------------------------------

    def where(self, t: Table, image: dict[str, Value]) -> str:
        cols = t.handle_key_columns() or t.columns
        return " AND ".join(
            f"{self.quote_ident(c.name)} IS NULL" if image[c.name] is None
            else f"{self.quote_ident(c.name)} = {self.literal(c.type, image[c.name])}"
            for c in cols
        )

    def dml(self, change: RowChange) -> str:
        t = change.table
        q = self.quote_ident
        # A generated column takes no value of its own: the server computes it.
        settable = [c for c in t.columns if c.generated is None]
        if change.op is Op.INSERT:
            assert change.after is not None
            cols = ", ".join(q(c.name) for c in settable)
            vals = ", ".join(self.literal(c.type, change.after[c.name]) for c in settable)
            return f"INSERT INTO {self.qualified(t)} ({cols}) VALUES ({vals});"
        if change.op is Op.UPDATE:
            assert change.before is not None and change.after is not None
            sets = ", ".join(f"{q(c.name)} = {self.literal(c.type, change.after[c.name])}"
                             for c in settable if change.before[c.name] != change.after[c.name])
            return f"UPDATE {self.qualified(t)} SET {sets} WHERE {self.where(t, change.before)};"
        assert change.before is not None
        return f"DELETE FROM {self.qualified(t)} WHERE {self.where(t, change.before)};"

    def unlogged(self, t: Table, old: Row, new: Row) -> frozenset[str]:
        """Columns whose value an UPDATE from `old` to `new` leaves out of the change log although
        the row holds it (PostgreSQL's unchanged TOASTed values); none elsewhere."""
        return frozenset()

    def stored_out_of_line(self, v: Value) -> bool:
        """Whether the server keeps the value out of line (PostgreSQL's TOAST); never elsewhere."""
        return False

    def message(self, m: LogicalMessage) -> str:
        """The statement that emits a logical decoding message (PostgreSQL only)."""
        raise ValueError(f"{self.name} has no logical decoding messages")

    def statements(self, txn: Transaction) -> list[str]:
        """A transaction's statements in the order its session made them (DML and messages)."""
        return [self.dml(x) if isinstance(x, RowChange) else self.message(x) for x in txn.items()]

    def session_setup(self) -> list[str]:
        """Statements each applying session runs first (the literals above assume them)."""
        return ["SET sql_mode = ''", "SET time_zone = '+00:00'"]

    def script_header(self) -> list[str]:
        """The lines a workload's SQL script starts with: the session setup its literals assume."""
        return [f"-- {self.name}: the literals below assume this session setup",
                *(s + ";" for s in self.session_setup())]


class TiDBDialect(Dialect):
    """TiDB / MySQL: the DDL text the generator wrote (`Ddl.sql`) is what runs."""

    def ddl_statements(self, ddl: Ddl) -> list[str]:
        if self.database(ddl.database) == ddl.database:
            return [ddl.sql]
        return super().ddl_statements(ddl)

    def script_header(self) -> list[str]:
        return [tidb_sql.SESSION_PREAMBLE]


# -- MariaDB -------------------------------------------------------------------------------

#: MariaDB's other names for a kind, as a user may write them in DDL (MariaDB 10.11, "Data
#: Types"). The server stores the same type; DDL readers (MaxScale) see the spelling.
MARIADB_SPELLINGS: dict[Kind, tuple[str, ...]] = {
    Kind.BOOL: ("BOOLEAN", "bool", "boolean"),
    Kind.TINYINT: ("INT1", "tinyint"),
    Kind.SMALLINT: ("INT2", "smallint"),
    Kind.MEDIUMINT: ("INT3", "MIDDLEINT", "mediumint"),
    Kind.INT: ("INTEGER", "INT4", "int", "integer"),
    Kind.BIGINT: ("INT8", "bigint"),
    Kind.FLOAT: ("FLOAT4", "float"),
    Kind.DOUBLE: ("DOUBLE PRECISION", "REAL", "FLOAT8", "double"),
    Kind.DECIMAL: ("DEC", "NUMERIC", "FIXED", "decimal"),
    Kind.CHAR: ("CHARACTER", "char"),
    Kind.VARCHAR: ("CHARACTER VARYING", "varchar"),
    Kind.MEDIUMTEXT: ("LONG", "LONG VARCHAR", "mediumtext"),
    Kind.MEDIUMBLOB: ("LONG VARBINARY", "mediumblob"),
    Kind.TEXT: ("text",),
    Kind.BLOB: ("blob",),
    Kind.DATETIME: ("datetime",),
    Kind.TIMESTAMP: ("timestamp",),
    Kind.JSON: ("json",),
    Kind.UUID: ("uuid",),
    Kind.INET6: ("inet6",),
}

#: TiDB's kinds but VECTOR (MariaDB's VECTOR, from 11.7, is another type), and MariaDB's own.
MARIADB_KINDS: tuple[Kind, ...] = (*(k for k in TIDB_KINDS if k is not Kind.VECTOR), Kind.INET4, Kind.INET6, Kind.UUID)


class MariaDBDialect(Dialect):
    name = "mariadb"
    kinds = MARIADB_KINDS
    # MariaDB identifiers are utf8mb3: no emoji (ER_INVALID_CHARACTER_STRING).
    supplementary_identifiers = False
    # MariaDB stores a 64-character CJK name (192 bytes), but mysql-replication 1.0.17 misreads
    # the binlog's TABLE_MAP when a column name is that long and the capture ends ("Result length
    # not requested length"): a limit of the capture library, not of MariaDB (found on this
    # machine; names of 64 ASCII characters pass).
    max_identifier_bytes: int | None = 64

    def literal(self, t: SqlType, v: Value) -> str:
        if v is None:
            return "NULL"
        k = t.kind
        if k in (Kind.FLOAT, Kind.DOUBLE):
            assert isinstance(v, float)
            # The exact double: MariaDB parses a literal as a double and refuses FLOAT's maximum
            # written as float32's shortest digits (3.4028235e38 is above it: "Out of range").
            return "-0e0" if v == 0 and math.copysign(1.0, v) < 0 else repr(v)
        if k in ADDRESS_KINDS:
            return quote_sql_string(str(v))
        return tidb_sql.literal(t, v)

    def conversions(self, t: SqlType) -> tuple[Conversion, ...]:
        if t.kind in (Kind.FLOAT, Kind.DOUBLE):
            return (Conversion.SIGNED_ZERO,)
        return ()

    def create_database(self, name: str) -> list[str]:
        # The model's text columns compare bytewise (TiDB's utf8mb4_bin): make it the default
        # here too, or MariaDB's utf8mb4_general_ci would merge keys the model keeps apart.
        return [f"CREATE DATABASE {self.quote_ident(self.database(name))} "
                "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;"]

    def session_setup(self) -> list[str]:
        # Strict, so that a value the server would clamp is an error (a finding), not a
        # warning; without NO_ZERO_DATE and NO_ZERO_IN_DATE and with ALLOW_INVALID_DATES, so that
        # the zero date, zero months/days and day 31 of any month the model has are stored.
        return ["SET sql_mode = 'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION,ALLOW_INVALID_DATES'",
                "SET time_zone = '+00:00'", "SET NAMES utf8mb4 COLLATE utf8mb4_bin"]


# -- PostgreSQL ----------------------------------------------------------------------------

POSTGRES_KINDS: tuple[Kind, ...] = (
    Kind.BOOLEAN, Kind.SMALLINT, Kind.INT, Kind.BIGINT, Kind.FLOAT, Kind.DOUBLE, Kind.DECIMAL, Kind.NUMERIC,
    Kind.CHAR, Kind.VARCHAR, Kind.TEXT, Kind.BYTEA, Kind.DATE, Kind.TIME, Kind.DATETIME, Kind.TIMESTAMPTZ,
    Kind.INTERVAL, Kind.JSON, Kind.JSONB, Kind.UUID, Kind.ENUM, Kind.BIT, Kind.ARRAY, Kind.MONEY, Kind.INET,
    Kind.CIDR, Kind.MACADDR, Kind.MACADDR8, Kind.TIMETZ, Kind.VARBIT, Kind.HSTORE,
)

_PG_NAMES = {
    Kind.BOOLEAN: "boolean", Kind.SMALLINT: "smallint", Kind.INT: "integer", Kind.BIGINT: "bigint",
    Kind.FLOAT: "real", Kind.DOUBLE: "double precision", Kind.NUMERIC: "numeric", Kind.TEXT: "text",
    Kind.BYTEA: "bytea", Kind.DATE: "date", Kind.INTERVAL: "interval", Kind.JSON: "json", Kind.JSONB: "jsonb",
    Kind.UUID: "uuid", Kind.MONEY: "money", Kind.INET: "inet", Kind.CIDR: "cidr", Kind.MACADDR: "macaddr",
    Kind.MACADDR8: "macaddr8", Kind.HSTORE: "hstore",
}


def pg_enum_type_name(t: SqlType) -> str:
    """The name of the enum type that holds `t`'s labels: one per distinct label list."""
    digest = hashlib.sha1("\x1f".join(t.elements).encode("utf-8")).hexdigest()[:12]
    return f"enum_{digest}"


def _pg_string(s: str) -> str:
    # standard_conforming_strings is on: only the quote is special.
    return "'" + s.replace("'", "''") + "'"


#: Types with a length or a precision: (the name, the SqlType field it takes).
_PG_SIZED = {
    Kind.CHAR: ("char", "length"), Kind.VARCHAR: ("varchar", "length"), Kind.BIT: ("bit", "length"),
    Kind.VARBIT: ("varbit", "length"), Kind.TIME: ("time", "fsp"), Kind.TIMETZ: ("timetz", "fsp"),
    Kind.DATETIME: ("timestamp", "fsp"), Kind.TIMESTAMPTZ: ("timestamptz", "fsp"),
}

#: Kinds whose literal is their value's text in one form: (the value's class, the literal).
_PG_TYPED_LITERALS: dict[Kind, tuple[type, Callable[[Any], str]]] = {
    Kind.BYTEA: (bytes, lambda v: f"'\\x{v.hex()}'::bytea"),
    Kind.DATE: (Date, lambda v: f"DATE '{v.text()}'"),
    Kind.TIME: (Time, lambda v: f"TIME '{v.text(6)}'"),
    Kind.TIMETZ: (TimeTz, lambda v: f"'{v.text()}'::timetz"),
    Kind.HSTORE: (Hstore, lambda v: f"{_pg_string(v.text())}::hstore"),
    Kind.DATETIME: (DateTime, lambda v: f"TIMESTAMP '{v.text(6)}'"),
    Kind.TIMESTAMPTZ: (DateTime, lambda v: f"TIMESTAMPTZ '{v.text(6)}+00'"),
    Kind.INTERVAL: (Interval, lambda v: f"INTERVAL '{v.text()}'"),
    Kind.JSON: (Json, lambda v: f"{_pg_string(v.text())}::json"),
    Kind.JSONB: (Json, lambda v: f"{_pg_string(v.text())}::jsonb"),
    Kind.MONEY: (decimal.Decimal, lambda v: f"'{decimal_text(v, 2)}'::money"),
}


#: A value at least this large (its text or bytes) is stored out of line by PostgreSQL when it
#: does not compress below ~2 KB (TOAST_TUPLE_TARGET): the generated large values are random, so
#: they never do. Generated ordinary values stay far below it.
TOAST_OUT_OF_LINE_BYTES = 4096


def stored_out_of_line(v: Value) -> bool:
    """Whether PostgreSQL keeps `v` out of line (TOAST), judged by its size (see above)."""
    return _stored_size(v) >= TOAST_OUT_OF_LINE_BYTES


def _stored_size(v: Value) -> int:
    if isinstance(v, bytes):
        return len(v)
    if isinstance(v, str):
        return len(v.encode("utf-8"))
    if isinstance(v, Json):
        return len(v.text().encode("utf-8"))
    if isinstance(v, Array):
        return sum(_stored_size(x) if isinstance(x, (bytes, str, Json, Array)) else 8 for x in v.items)
    return 0


class PostgresDialect(Dialect):
    name = "postgresql"
    kinds = POSTGRES_KINDS
    column_positions = False
    schema_scoped_index_names = True
    logical_messages = True
    max_identifier_bytes = 63  # NAMEDATALEN - 1: longer names are cut silently
    supplementary_table_names = True

    def quote_ident(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def schema(self, database: str) -> str:
        return self.quote_ident(self.database(database))

    def type_sql(self, t: SqlType, *, schema: str | None = None) -> str:
        k = t.kind
        if k in _PG_NAMES:
            return _PG_NAMES[k]
        if k is Kind.DECIMAL:
            return f"numeric({t.precision},{t.scale})"
        if k in _PG_SIZED:
            name, size = _PG_SIZED[k]
            return f"{name}({getattr(t, size)})"
        if k is Kind.ENUM:
            name = self.quote_ident(pg_enum_type_name(t))
            return f"{schema}.{name}" if schema else name
        if k is Kind.ARRAY:
            assert t.element is not None
            return self.type_sql(t.element, schema=schema) + "[]"
        raise ValueError(f"PostgreSQL has no {t}")

    def literal(self, t: SqlType, v: Value) -> str:
        if v is None:
            return "NULL"
        k = t.kind
        if isinstance(v, Infinity):
            return f"'{v.text()}'::{self.type_sql(t)}"
        if k is Kind.BOOLEAN:
            return "TRUE" if v else "FALSE"
        if k in (Kind.SMALLINT, Kind.INT, Kind.BIGINT):
            return str(v)
        if k in (Kind.FLOAT, Kind.DOUBLE):
            assert isinstance(v, float)
            text = "Infinity" if v == math.inf else "-Infinity" if v == -math.inf else repr(v)
            if v == 0 and math.copysign(1.0, v) < 0:
                text = "-0"
            return f"'{text}'::{'real' if k is Kind.FLOAT else 'double precision'}"
        if k is Kind.DECIMAL:
            assert isinstance(v, decimal.Decimal) and t.scale is not None
            return decimal_text(v, t.scale) if v.is_finite() else f"'{v}'::numeric"
        if k is Kind.NUMERIC:
            assert isinstance(v, decimal.Decimal)
            return f"'{format(v, 'f')}'::numeric"
        if k is Kind.BIT:
            assert isinstance(v, int) and t.length is not None
            return f"B'{v:0{t.length}b}'"
        if k is Kind.VARBIT:
            assert isinstance(v, str) and set(v) <= {"0", "1"}
            return f"B'{v}'::varbit"
        typed = _PG_TYPED_LITERALS.get(k)
        if typed is not None:
            assert isinstance(v, typed[0]), (t, v)
            return typed[1](v)
        if k is Kind.UUID:
            return f"'{v!s}'::uuid"
        if k in (Kind.INET, Kind.CIDR, Kind.MACADDR, Kind.MACADDR8):
            return f"{_pg_string(str(v))}::{_PG_NAMES[k]}"
        if k is Kind.ARRAY:
            assert isinstance(v, Array) and t.element is not None
            items = ", ".join(self.literal(t.element, x) for x in v.items)
            return f"ARRAY[{items}]::{self.type_sql(t)}"
        if isinstance(v, str):
            return _pg_string(v)
        raise TypeError(f"no PostgreSQL literal for {v!r} ({t})")

    def conversions(self, t: SqlType) -> tuple[Conversion, ...]:
        if t.kind is Kind.CHAR:
            return (Conversion.PADDING,)
        return ()

    def unlogged(self, t: Table, old: Row, new: Row) -> frozenset[str]:
        """An UPDATE's new tuple keeps a pointer to an out-of-line (TOASTed) value it does not
        change, and pgoutput sends such a column as 'u' (unchanged): the value is in neither image
        unless REPLICA IDENTITY FULL logs the whole old row."""
        if t.replica_identity is ReplicaIdentity.FULL:
            return frozenset()
        return frozenset(c.name for c in t.columns
                         if old.get(c.name) is not None and old.get(c.name) == new.get(c.name)
                         and stored_out_of_line(old[c.name]))

    def stored_out_of_line(self, v: Value) -> bool:
        return stored_out_of_line(v)

    def message(self, m: LogicalMessage) -> str:
        return (f"SELECT pg_logical_emit_message({'true' if m.transactional else 'false'}, {_pg_string(m.prefix)}, "
                f"'\\x{m.content.hex()}'::bytea);")

    def column_definition(self, c: Column, *, schema: str | None = None) -> str:
        return self._column(c, self.type_sql(c.type, schema=schema))

    def current_timestamp(self, t: SqlType) -> str:
        return "CURRENT_TIMESTAMP"

    def create_database(self, name: str) -> list[str]:
        # A model database is a PostgreSQL schema: a workload's databases share one PostgreSQL
        # database, so that one logical replication slot sees them all.
        return [f"CREATE SCHEMA {self.schema(name)};"]

    def _enum_types(self, t: Table, columns: tuple[Column, ...]) -> list[str]:
        """What the columns' types need first: each enum type, and the hstore extension (a trusted
        extension: a database owner may create it)."""
        out: list[str] = []
        if any(c.type.kind is Kind.HSTORE for c in columns):
            out.append("CREATE EXTENSION IF NOT EXISTS hstore;")
        seen: set[str] = set()
        for c in columns:
            if c.type.kind is not Kind.ENUM:
                continue
            name = pg_enum_type_name(c.type)
            if name in seen:
                continue
            seen.add(name)
            labels = ", ".join(_pg_string(e) for e in c.type.elements)
            # One type per label list and schema, created by whichever table needs it first.
            out.append(f"DO $$ BEGIN CREATE TYPE {self.schema(t.database)}.{self.quote_ident(name)} AS ENUM "
                       f"({labels}); EXCEPTION WHEN duplicate_object THEN NULL; END $$;")
        return out

    def index_definition(self, t: Table, ix: Index) -> str:
        cols = ", ".join(self.quote_ident(c) for c in ix.columns)
        kind = "PRIMARY KEY" if ix.primary else "UNIQUE"
        return f"CONSTRAINT {self.quote_ident(ix.name)} {kind} ({cols})"

    def _replica_identity(self, t: Table) -> list[str]:
        ri = t.replica_identity
        if ri is None or ri is ReplicaIdentity.DEFAULT:
            return []
        if ri is ReplicaIdentity.FULL:
            return [f"ALTER TABLE {self.qualified(t)} REPLICA IDENTITY FULL;"]
        ix = t.handle_index()
        assert ix is not None
        return [f"ALTER TABLE {self.qualified(t)} REPLICA IDENTITY USING INDEX {self.quote_ident(ix.name)};"]

    def create_table(self, t: Table) -> list[str]:
        schema = self.schema(t.database)
        lines = [self.column_definition(c, schema=schema) for c in t.columns]
        lines += [self.index_definition(t, ix) for ix in t.indexes if ix.is_unique]
        body = ",\n  ".join(lines)
        out = self._enum_types(t, t.columns)
        out.append(f"CREATE TABLE {self.qualified(t)} (\n  {body}\n);")
        out += [f"CREATE INDEX {self.quote_ident(ix.name)} ON {self.qualified(t)} "
                f"({', '.join(self.quote_ident(c) for c in ix.columns)});"
                for ix in t.indexes if not ix.is_unique]
        return out + self._replica_identity(t)

    def add_column(self, t: Table, c: Column, position: str) -> list[str]:
        if position:
            raise ValueError("PostgreSQL adds columns last only")
        return [*self._enum_types(t, (c,)),
                f"ALTER TABLE {self.qualified(t)} ADD COLUMN "
                f"{self.column_definition(c, schema=self.schema(t.database))};"]

    def modify_column(self, t: Table, c: Column) -> list[str]:
        return [f"ALTER TABLE {self.qualified(t)} ALTER COLUMN {self.quote_ident(c.name)} TYPE "
                f"{self.type_sql(c.type, schema=self.schema(t.database))};"]

    def rename_table(self, old: Table, new: Table) -> list[str]:
        return [f"ALTER TABLE {self.qualified(old)} RENAME TO {self.quote_ident(new.name)};"]

    def add_index(self, t: Table, ix: Index) -> list[str]:
        if ix.is_unique:
            return [f"ALTER TABLE {self.qualified(t)} ADD {self.index_definition(t, ix)};"]
        cols = ", ".join(self.quote_ident(c) for c in ix.columns)
        return [f"CREATE INDEX {self.quote_ident(ix.name)} ON {self.qualified(t)} ({cols});"]

    def drop_index(self, t: Table, ix: Index) -> list[str]:
        if ix.is_unique:
            return [f"ALTER TABLE {self.qualified(t)} DROP CONSTRAINT {self.quote_ident(ix.name)};"]
        return [f"DROP INDEX {self.schema(t.database)}.{self.quote_ident(ix.name)};"]

    def position_clause(self, t: Table, c: Column) -> str:
        return ""

    def session_setup(self) -> list[str]:
        return ["SET TIME ZONE 'UTC'", "SET intervalstyle = 'postgres'", "SET datestyle = 'ISO, YMD'",
                "SET extra_float_digits = 3"]


TIDB = TiDBDialect()
MARIADB = MariaDBDialect()
POSTGRES = PostgresDialect()
DIALECTS: dict[str, Dialect] = {d.name: d for d in (TIDB, MARIADB, POSTGRES)}


def dialect(name: str) -> Dialect:
    return one_of(DIALECTS, name, "SQL dialect")


_dialect = dialect  # for `workload_sql`, whose keyword `dialect` hides the function

CAPTURE_START_COMMENT = ("-- the CDC tool starts here: what is above is in the database it finds (a snapshot reads "
                         "it), what follows it streams")


def workload_sql(w: Workload, *, watermarks: bool = False, dialect: str | Dialect | None = None) -> str:
    """The workload as a SQL script, in the dialect it was generated for (`meta["dialect"]`,
    TiDB when absent) or in `dialect` (a name, or a dialect with its databases mapped)."""
    d = dialect if isinstance(dialect, Dialect) else _dialect(dialect or str(w.meta.get("dialect", "tidb")))
    out = d.script_header()
    for e in w.events:
        if isinstance(e, Ddl):
            out.append(f"-- commit_ts {e.commit_ts}\n" + "\n".join(d.ddl_statements(e)))
        elif isinstance(e, Transaction):
            body = "\n".join(d.statements(e))
            out.append(f"-- commit_ts {e.commit_ts}\nBEGIN;\n{body}\nCOMMIT;")
        elif isinstance(e, Watermark) and watermarks:
            out.append(f"-- watermark {e.ts}")
        elif isinstance(e, CaptureStart):
            out.append(CAPTURE_START_COMMENT)
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class StoredComparison:
    """How a stored value compares with the model's: equal, equal after a named conversion,
    or different (`conversion` None and `equal` False)."""

    equal: bool
    conversion: Conversion | None = None


def compare_stored(d: Dialect, t: SqlType, model: Value, stored: Value) -> StoredComparison:
    """Whether `stored` is what the server should keep for the model's `model`."""
    if stored_equal(t, model, stored):
        return StoredComparison(True)
    for c in d.conversions(t):
        if stored_equal(t, apply_conversion(c, t, model), stored):
            return StoredComparison(True, c)
    return StoredComparison(False)


def stored_equal(t: SqlType, a: Value, b: Value) -> bool:
    """Exact equality of canonical values: float bit patterns (-0.0 is not 0.0), NUMERIC's
    scale, bool vs int, NULL elements of arrays."""
    if a is None or b is None:
        return a is b
    if isinstance(a, float) and isinstance(b, float):
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b) or (a != a and b != b)
    if isinstance(a, decimal.Decimal) and isinstance(b, decimal.Decimal):
        if a.is_nan() or b.is_nan():
            return a.is_nan() and b.is_nan()
        return a == b and (t.kind is not Kind.NUMERIC or a.as_tuple().exponent == b.as_tuple().exponent)
    if isinstance(a, Array) and isinstance(b, Array):
        el = t.element or t
        return len(a.items) == len(b.items) and all(stored_equal(el, x, y) for x, y in zip(a.items, b.items,
                                                                                             strict=True))
    if type(a) is not type(b):
        return False
    return a == b
