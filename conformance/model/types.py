"""SQL types as TiDB / MySQL see them, with every parameter an encoder depends on.

One `SqlType` describes a column type fully: its kind, signedness, length, precision and
scale, fractional-seconds precision, ENUM/SET elements and character set. Encoders read
these parameters; generators produce them; the SQL renderer prints them back as DDL.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeVar


class Kind(enum.StrEnum):
    """The MySQL type families the suite generates."""

    BOOL = "BOOL"
    TINYINT = "TINYINT"
    SMALLINT = "SMALLINT"
    MEDIUMINT = "MEDIUMINT"
    INT = "INT"
    BIGINT = "BIGINT"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DECIMAL = "DECIMAL"
    BIT = "BIT"
    CHAR = "CHAR"
    VARCHAR = "VARCHAR"
    TINYTEXT = "TINYTEXT"
    TEXT = "TEXT"
    MEDIUMTEXT = "MEDIUMTEXT"
    LONGTEXT = "LONGTEXT"
    BINARY = "BINARY"
    VARBINARY = "VARBINARY"
    TINYBLOB = "TINYBLOB"
    BLOB = "BLOB"
    MEDIUMBLOB = "MEDIUMBLOB"
    LONGBLOB = "LONGBLOB"
    DATE = "DATE"
    DATETIME = "DATETIME"
    TIMESTAMP = "TIMESTAMP"
    TIME = "TIME"
    YEAR = "YEAR"
    JSON = "JSON"
    ENUM = "ENUM"
    SET = "SET"
    # TiDB's VECTOR(D) of float32 (v8.4+; TiCDC encodes it from v8.5: spec/notes/ticdc.md §1.5, §2.2).
    VECTOR = "VECTOR"
    # MariaDB has these and TiDB does not (they appear only in the MariaDB domain).
    INET4 = "INET4"
    INET6 = "INET6"
    UUID = "UUID"  # MariaDB >= 10.7 and PostgreSQL
    # PostgreSQL only. Where PostgreSQL's type means what a MySQL kind means, the kind is
    # shared (smallint = SMALLINT, real = FLOAT, timestamp = DATETIME, bytea is not BLOB: see
    # `conformance.model.dialects` for the full table).
    BOOLEAN = "BOOLEAN"  # a true boolean (TiDB's BOOL is TINYINT(1))
    NUMERIC = "NUMERIC"  # numeric without precision and scale: any digits, the scale as written
    BYTEA = "BYTEA"
    TIMESTAMPTZ = "TIMESTAMPTZ"
    INTERVAL = "INTERVAL"
    JSONB = "JSONB"
    ARRAY = "ARRAY"  # one-dimensional array of `element`
    MONEY = "MONEY"  # a Decimal with two fraction digits (lc_monetary C), ±92233720368547758.07
    INET = "INET"  # an address with its netmask, as PostgreSQL prints it (`192.168.1.5/24`, `::1`)
    CIDR = "CIDR"  # a network (host bits zero), as PostgreSQL prints it (`10.0.0.0/8`)
    MACADDR = "MACADDR"  # six bytes, `08:00:2b:01:02:03`
    MACADDR8 = "MACADDR8"  # eight bytes, `08:00:2b:ff:fe:01:02:03`
    TIMETZ = "TIMETZ"  # PostgreSQL's time with time zone: a clock time and its UTC offset (`TimeTz`)
    VARBIT = "VARBIT"  # PostgreSQL's bit varying(n): a str of up to `length` '0'/'1' characters
    HSTORE = "HSTORE"  # PostgreSQL's hstore (extension): text keys to text or NULL values (`Hstore`)


#: The kinds TiDB has, in the order the default generation draws them. Generation for TiDB
#: (and so for the TiCDC protocols) must never see a kind added for another dialect.
TIDB_KINDS: tuple[Kind, ...] = (
    Kind.BOOL, Kind.TINYINT, Kind.SMALLINT, Kind.MEDIUMINT, Kind.INT, Kind.BIGINT, Kind.FLOAT, Kind.DOUBLE,
    Kind.DECIMAL, Kind.BIT, Kind.CHAR, Kind.VARCHAR, Kind.TINYTEXT, Kind.TEXT, Kind.MEDIUMTEXT, Kind.LONGTEXT,
    Kind.BINARY, Kind.VARBINARY, Kind.TINYBLOB, Kind.BLOB, Kind.MEDIUMBLOB, Kind.LONGBLOB, Kind.DATE,
    Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME, Kind.YEAR, Kind.JSON, Kind.ENUM, Kind.SET, Kind.VECTOR,
)
#: Kinds whose values are fixed-size binary addresses / identifiers (MariaDB stores them as BINARY(n)).
ADDRESS_KINDS = frozenset({Kind.INET4, Kind.INET6, Kind.UUID})
#: Element kinds a PostgreSQL ARRAY may have in the model.
ARRAY_ELEMENT_KINDS = frozenset({Kind.SMALLINT, Kind.INT, Kind.BIGINT, Kind.BOOLEAN, Kind.DOUBLE, Kind.DECIMAL,
                                 Kind.NUMERIC, Kind.TEXT, Kind.VARCHAR, Kind.DATE, Kind.UUID, Kind.DATETIME,
                                 Kind.TIMESTAMPTZ})


INTEGER_KINDS = frozenset({Kind.BOOL, Kind.TINYINT, Kind.SMALLINT, Kind.MEDIUMINT, Kind.INT, Kind.BIGINT})
TEXT_KINDS = frozenset({Kind.CHAR, Kind.VARCHAR, Kind.TINYTEXT, Kind.TEXT, Kind.MEDIUMTEXT, Kind.LONGTEXT})
BINARY_KINDS = frozenset(
    {Kind.BINARY, Kind.VARBINARY, Kind.TINYBLOB, Kind.BLOB, Kind.MEDIUMBLOB, Kind.LONGBLOB}
)
FSP_KINDS = frozenset({Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME, Kind.TIMESTAMPTZ, Kind.TIMETZ})
TEMPORAL_KINDS = frozenset({Kind.DATE, Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME, Kind.YEAR})
# Kinds whose length parameter is mandatory in DDL (CHAR/BINARY default to 1; we always print it).
LENGTH_KINDS = frozenset({Kind.CHAR, Kind.VARCHAR, Kind.BINARY, Kind.VARBINARY, Kind.BIT})
# MySQL refuses a literal DEFAULT on these (TiDB: "BLOB/TEXT/JSON column can't have a default value").
NO_LITERAL_DEFAULT_KINDS = frozenset(
    {Kind.TINYTEXT, Kind.TEXT, Kind.MEDIUMTEXT, Kind.LONGTEXT, Kind.TINYBLOB, Kind.BLOB, Kind.MEDIUMBLOB,
     Kind.LONGBLOB, Kind.JSON, Kind.JSONB, Kind.BYTEA, Kind.ARRAY, Kind.VECTOR}
)
# TiDB's CheckVectorDimValid (pkg/types/vector.go): a VECTOR(D) has 1..16383 dimensions; a
# VECTOR without D (flen UnspecifiedLength) takes vectors of any dimension.
VECTOR_MAX_DIMENSION = 16383

# Integer ranges: (signed lo, signed hi, unsigned hi). BOOL is TINYINT(1).
_INT_BITS = {Kind.BOOL: 8, Kind.TINYINT: 8, Kind.SMALLINT: 16, Kind.MEDIUMINT: 24, Kind.INT: 32, Kind.BIGINT: 64}

# Byte limits of the TEXT/BLOB families (L + length prefix).
BLOB_MAX_BYTES = {
    Kind.TINYTEXT: 255, Kind.TINYBLOB: 255,
    Kind.TEXT: 65535, Kind.BLOB: 65535,
    Kind.MEDIUMTEXT: 16777215, Kind.MEDIUMBLOB: 16777215,
    Kind.LONGTEXT: 4294967295, Kind.LONGBLOB: 4294967295,
}

BINARY_CHARSET = "binary"
DEFAULT_CHARSET = "utf8mb4"
# Collations used when a charset is named without one (TiDB's defaults with new collations on).
DEFAULT_COLLATIONS = {"utf8mb4": "utf8mb4_bin", "utf8": "utf8_bin", "ascii": "ascii_bin",
                      "latin1": "latin1_bin", "binary": "binary"}


class InvalidType(ValueError):
    """A type whose parameters MySQL would reject."""


@dataclass(frozen=True, slots=True)
class SqlType:
    """A column type with all its parameters.

    * `length`: characters for CHAR/VARCHAR, bytes for BINARY/VARBINARY, bits (M) for BIT,
      dimensions (D) for VECTOR (None: a VECTOR of any dimension).
    * `precision` / `scale`: DECIMAL(M, D); MySQL's `DECIMAL` alone means (10, 0).
    * `fsp`: fractional seconds precision of DATETIME / TIMESTAMP / TIME (0..6).
    * `elements`: ENUM / SET members in definition order.
    * `charset` / `collation`: for text kinds; binary kinds are always charset `binary`.
    * `spelling`: the keyword written in DDL when it is not the kind's own name (MariaDB's
      `INTEGER`, `DEC`, `FIXED`, `DOUBLE PRECISION`, `BOOLEAN`...). The same type to the server,
      but tools that read DDL text (MaxScale takes its `real_type` from it) see the spelling.
    * `element`: the element type of an ARRAY.
    """

    kind: Kind
    unsigned: bool = False
    length: int | None = None
    precision: int | None = None
    scale: int | None = None
    fsp: int = 0
    elements: tuple[str, ...] = field(default=())
    charset: str | None = None
    collation: str | None = None
    spelling: str | None = None
    element: SqlType | None = None
    # Types are dictionary keys on hot paths; hash once.
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __post_init__(self) -> None:
        self._validate()
        object.__setattr__(self, "_hash", hash((self.kind, self.unsigned, self.length, self.precision, self.scale,
                                                self.fsp, self.elements, self.charset, self.collation,
                                                self.spelling, self.element)))

    def _validate(self) -> None:
        k = self.kind
        if self.unsigned and not (k in INTEGER_KINDS or k in (Kind.FLOAT, Kind.DOUBLE, Kind.DECIMAL)):
            raise InvalidType(f"{k} cannot be UNSIGNED")
        if k is Kind.ARRAY:
            if self.element is None or self.element.kind not in ARRAY_ELEMENT_KINDS:
                raise InvalidType(f"ARRAY needs an element of {sorted(ARRAY_ELEMENT_KINDS)}, got {self.element}")
        elif self.element is not None:
            raise InvalidType(f"{k} takes no element type")
        if k is Kind.BOOL and self.unsigned:
            raise InvalidType("BOOL cannot be UNSIGNED")
        if k is Kind.DECIMAL:
            p = 10 if self.precision is None else self.precision
            s = 0 if self.scale is None else self.scale
            if not (1 <= p <= 65 and 0 <= s <= 30 and s <= p):
                raise InvalidType(f"DECIMAL({p},{s}) is out of range: need 1<=M<=65, 0<=D<=30, D<=M")
            object.__setattr__(self, "precision", p)
            object.__setattr__(self, "scale", s)
        elif self.precision is not None or self.scale is not None:
            raise InvalidType(f"{k} takes no precision/scale")
        if k is Kind.BIT:
            m = 1 if self.length is None else self.length
            if not 1 <= m <= 64:
                raise InvalidType(f"BIT({m}) is out of range 1..64")
            object.__setattr__(self, "length", m)
        elif k is Kind.VARBIT:
            if self.length is None or not 1 <= self.length <= 83_886_080:
                raise InvalidType(f"VARBIT needs a length 1..83886080, got {self.length}")
        elif k in (Kind.CHAR, Kind.BINARY):
            n = 1 if self.length is None else self.length
            if not 0 <= n <= 255:
                raise InvalidType(f"{k}({n}) is out of range 0..255")
            object.__setattr__(self, "length", n)
        elif k in (Kind.VARCHAR, Kind.VARBINARY):
            if self.length is None or not 0 <= self.length <= 65535:
                raise InvalidType(f"{k} needs a length 0..65535, got {self.length}")
        elif k is Kind.VECTOR:
            if self.length is not None and not 1 <= self.length <= VECTOR_MAX_DIMENSION:
                raise InvalidType(f"VECTOR({self.length}): dimensions must be 1..{VECTOR_MAX_DIMENSION}")
        elif self.length is not None:
            raise InvalidType(f"{k} takes no length")
        if k in FSP_KINDS:
            if not 0 <= self.fsp <= 6:
                raise InvalidType(f"{k}({self.fsp}): fsp must be 0..6")
        elif self.fsp:
            raise InvalidType(f"{k} takes no fsp")
        if k in (Kind.ENUM, Kind.SET):
            if not self.elements:
                raise InvalidType(f"{k} needs at least one element")
            folded = [e.rstrip(" ").casefold() for e in self.elements]
            if len(set(folded)) != len(folded):
                raise InvalidType(f"{k} has duplicate elements {self.elements!r}")
            if k is Kind.SET:
                # MySQL also refuses commas in SET members; the generators never produce
                # them, but the model keeps them (TiCDC's own tests build such types).
                if len(self.elements) > 64:
                    raise InvalidType("SET has at most 64 members")
        elif self.elements:
            raise InvalidType(f"{k} takes no elements")
        if k in BINARY_KINDS:
            object.__setattr__(self, "charset", BINARY_CHARSET)
            object.__setattr__(self, "collation", BINARY_CHARSET)
        elif k in TEXT_KINDS or k in (Kind.ENUM, Kind.SET):
            cs = self.charset or DEFAULT_CHARSET
            if cs == BINARY_CHARSET:
                raise InvalidType(f"use the binary kinds instead of {k} CHARACTER SET binary")
            object.__setattr__(self, "charset", cs)
            object.__setattr__(self, "collation", self.collation or DEFAULT_COLLATIONS.get(cs, cs + "_bin"))
        elif self.charset is not None:
            raise InvalidType(f"{k} takes no charset")

    # -- classification -------------------------------------------------------------------

    @property
    def is_integer(self) -> bool:
        return self.kind in INTEGER_KINDS

    @property
    def is_text(self) -> bool:
        return self.kind in TEXT_KINDS

    @property
    def is_binary(self) -> bool:
        """Charset `binary`: TiDB's BinaryFlag (BINARY/VARBINARY/BLOB family)."""
        return self.kind in BINARY_KINDS

    @property
    def is_string_like(self) -> bool:
        return self.kind in TEXT_KINDS or self.kind in BINARY_KINDS

    def int_range(self) -> tuple[int, int]:
        bits = _INT_BITS[self.kind]
        if self.unsigned:
            return 0, (1 << bits) - 1
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def max_chars(self) -> int:
        """Upper bound on characters (text) or bytes (binary) a value may hold."""
        if self.kind in (Kind.CHAR, Kind.VARCHAR, Kind.BINARY, Kind.VARBINARY):
            assert self.length is not None
            return self.length
        return BLOB_MAX_BYTES[self.kind]

    @property
    def max_bytes_per_char(self) -> int:
        return {"utf8mb4": 4, "utf8": 3, "ascii": 1, "latin1": 1, "binary": 1}.get(self.charset or "", 4)

    # -- DDL ------------------------------------------------------------------------------

    def sql(self) -> str:
        """The type as it appears in a MySQL-family CREATE TABLE (TiDB, MariaDB)."""
        k = self.kind
        name = self.spelling or k.value
        if k is Kind.DECIMAL:
            s = f"{name}({self.precision},{self.scale})"
        elif k in LENGTH_KINDS:
            s = f"{name}({self.length})"
        elif k in FSP_KINDS:
            s = f"{name}({self.fsp})" if self.fsp else name
        elif k is Kind.VECTOR:
            s = f"VECTOR({self.length})" if self.length is not None else "VECTOR"
        elif k in (Kind.ENUM, Kind.SET):
            s = f"{name}(" + ",".join(quote_sql_string(e) for e in self.elements) + ")"
        else:
            s = name
        if self.unsigned:
            s += " UNSIGNED"
        if k in TEXT_KINDS or k in (Kind.ENUM, Kind.SET):
            if self.charset != DEFAULT_CHARSET or self.collation != DEFAULT_COLLATIONS[DEFAULT_CHARSET]:
                s += f" CHARACTER SET {self.charset} COLLATE {self.collation}"
        return s

    def __str__(self) -> str:
        return self.sql()


T = TypeVar("T")


def one_of(table: Mapping[str, T], name: str, what: str) -> T:
    """`table[name]`, or a ValueError naming `what` and the choices."""
    try:
        return table[name]
    except KeyError:
        raise ValueError(f"unknown {what} {name!r}: choose one of {sorted(table)}") from None


def quoted(s: str, quote: str, escapes: Mapping[str, str], control: str | None = None) -> str:
    """`s` between two `quote`s, each character of `escapes` replaced by its escape, other control
    characters (below U+0020) formatted by `control` (e.g. `\\u{:04x}`) where it is given."""
    out = [quote]
    for ch in s:
        e = escapes.get(ch)
        if e is not None:
            out.append(e)
        elif control is not None and ch < " ":
            out.append(control.format(ord(ch)))
        else:
            out.append(ch)
    out.append(quote)
    return "".join(out)


_MYSQL_ESCAPES = {"'": "''", "\\": "\\\\", "\0": "\\0", "\n": "\\n", "\r": "\\r", "\x1a": "\\Z"}


def quote_sql_string(s: str) -> str:
    """A MySQL single-quoted string literal (backslash escapes, as in default sql_mode)."""
    return quoted(s, "'", _MYSQL_ESCAPES)


def quote_ident(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
