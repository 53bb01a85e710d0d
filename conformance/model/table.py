"""Columns, indexes and versioned tables."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from .types import Kind, SqlType
from .values import Value


class DefaultKind(enum.StrEnum):
    NONE = "none"  # no DEFAULT clause
    NULL = "null"  # DEFAULT NULL
    VALUE = "value"  # DEFAULT <literal>
    CURRENT_TIMESTAMP = "current_timestamp"  # DATETIME/TIMESTAMP DEFAULT CURRENT_TIMESTAMP


@dataclass(frozen=True, slots=True)
class Default:
    kind: DefaultKind = DefaultKind.NONE
    value: Value = None

    @property
    def is_non_null(self) -> bool:
        """A default that is neither absent nor NULL."""
        return self.kind in (DefaultKind.VALUE, DefaultKind.CURRENT_TIMESTAMP)


@dataclass(frozen=True, slots=True)
class Generated:
    """`GENERATED ALWAYS AS (expression) VIRTUAL | STORED`.

    A virtual column is computed when read and never stored: TiDB leaves it out of the row
    TiCDC decodes, so no row event carries it (spec/notes/ticdc.md §3.2), while a table schema
    (TiCDC Simple's tableSchema) lists it (§2.2). A stored column is stored like any other.
    `depends_on` names the columns the expression reads (a server refuses to drop them)."""

    expression: str
    stored: bool = False
    depends_on: tuple[str, ...] = ()


NO_DEFAULT = Default()
DEFAULT_NULL = Default(DefaultKind.NULL)
DEFAULT_CURRENT_TIMESTAMP = Default(DefaultKind.CURRENT_TIMESTAMP)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: SqlType
    nullable: bool = True
    default: Default = NO_DEFAULT
    # TiDB column IDs are allocated in creation order and never reused; some encodings
    # (TiCDC Avro with checksums, TiCDC Simple's tableSchema) order columns by ID.
    column_id: int = 0
    generated: Generated | None = None
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __hash__(self) -> int:
        return self._hash

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.name, self.type, self.nullable, self.default, self.column_id,
                                                self.generated)))
        if self.default.kind is DefaultKind.NULL and not self.nullable:
            raise ValueError(f"column {self.name!r} is NOT NULL but DEFAULT NULL")
        if self.generated is not None and self.default.kind is not DefaultKind.NONE:
            raise ValueError(f"generated column {self.name!r} cannot have a DEFAULT")
        if self.default.kind is DefaultKind.CURRENT_TIMESTAMP and self.type.kind not in (
                Kind.DATETIME, Kind.TIMESTAMP):
            raise ValueError("CURRENT_TIMESTAMP default needs DATETIME or TIMESTAMP")

    @property
    def is_virtual(self) -> bool:
        """A virtual generated column: in no row event (TiCDC's IsColCDCVisible is false)."""
        return self.generated is not None and not self.generated.stored


@dataclass(frozen=True, slots=True)
class Index:
    name: str
    columns: tuple[str, ...]
    primary: bool = False
    unique: bool = False
    index_id: int = 0

    @property
    def is_unique(self) -> bool:
        return self.primary or self.unique


class ReplicaIdentity(enum.StrEnum):
    """PostgreSQL's REPLICA IDENTITY: which old values an UPDATE/DELETE writes to the WAL."""

    DEFAULT = "default"  # the primary key's columns
    FULL = "full"  # every column
    INDEX = "index"  # the columns of the table's handle index (USING INDEX)


@dataclass(frozen=True, slots=True)
class Table:
    """One version of a table. A DDL produces a new `Table` with a higher `version`."""

    database: str
    name: str
    columns: tuple[Column, ...]
    indexes: tuple[Index, ...] = ()
    table_id: int = 0
    # TiDB's TableInfo.UpdateTS: the TSO of the DDL that produced this version.
    version: int = 0
    # PostgreSQL only (None elsewhere): what the WAL keeps of old rows.
    replica_identity: ReplicaIdentity | None = None
    _by_name: dict[str, Column] = field(default_factory=dict, compare=False, repr=False, hash=False)

    def __post_init__(self) -> None:
        by_name = {c.name: c for c in self.columns}
        if len(by_name) != len(self.columns):
            raise ValueError(f"table {self.name!r} has duplicate column names")
        object.__setattr__(self, "_by_name", by_name)
        for ix in self.indexes:
            for c in ix.columns:
                if c not in by_name:
                    raise ValueError(f"index {ix.name!r} names unknown column {c!r}")
        if sum(ix.primary for ix in self.indexes) > 1:
            raise ValueError("at most one PRIMARY KEY")

    def __hash__(self) -> int:
        return hash((self.database, self.name, self.table_id, self.version))

    @property
    def qualified_name(self) -> str:
        return f"{self.database}.{self.name}"

    def column(self, name: str) -> Column:
        return self._by_name[name]

    def has_column(self, name: str) -> bool:
        return name in self._by_name

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    @property
    def primary_key(self) -> Index | None:
        return next((ix for ix in self.indexes if ix.primary), None)

    def handle_index(self) -> Index | None:
        """TiDB's handle key: the PRIMARY KEY, else the unique index whose columns are all
        NOT NULL and none virtual, preferring the fewest columns, then the lowest index ID
        (tiflow cdc/model/schema_storage.go findHandleIndex, IsIndexUnique)."""
        pk = self.primary_key
        if pk is not None:
            return pk
        candidates = [ix for ix in self.indexes
                      if ix.unique and all(not self.column(c).nullable and not self.column(c).is_virtual
                                           for c in ix.columns)]
        if not candidates:
            return None
        return min(candidates, key=lambda ix: (len(ix.columns), ix.index_id))

    def handle_key_columns(self) -> tuple[Column, ...]:
        """Handle-key columns in table (ordinal) order, not index-definition order."""
        ix = self.handle_index()
        if ix is None:
            return ()
        names = set(ix.columns)
        return tuple(c for c in self.columns if c.name in names)

    def unique_indexes(self) -> tuple[Index, ...]:
        return tuple(ix for ix in self.indexes if ix.is_unique)

    def unique_key_column_names(self) -> frozenset[str]:
        """Columns that belong to the primary key or to any unique index (TiCDC's
        HandleKeyFlag/UniqueKeyFlag): changing one of them splits an update. Virtual columns
        are in no row event, so TiCDC never sees them change (ShouldSplitUpdateEvent)."""
        return frozenset(c for ix in self.unique_indexes() for c in ix.columns if not self.column(c).is_virtual)

    def columns_by_id(self) -> tuple[Column, ...]:
        return tuple(sorted(self.columns, key=lambda c: c.column_id))

    @property
    def stored_columns(self) -> tuple[Column, ...]:
        """The columns a row event carries, in table order: all but the virtual generated ones
        (tiflow cdc/entry/mounter.go; spec/notes/ticdc.md §3.2)."""
        return tuple(c for c in self.columns if not c.is_virtual)

    @property
    def has_virtual_columns(self) -> bool:
        return any(c.is_virtual for c in self.columns)

    def next_column_id(self) -> int:
        return max((c.column_id for c in self.columns), default=0) + 1

    def evolve(self, **changes: object) -> Table:
        return replace(self, **changes)  # type: ignore[arg-type]

    def with_columns(self, columns: Iterable[Column], *, version: int) -> Table:
        cols = tuple(columns)
        names = {c.name for c in cols}
        indexes = tuple(ix for ix in self.indexes if all(c in names for c in ix.columns))
        return replace(self, columns=cols, indexes=indexes, version=version)
