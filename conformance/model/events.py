"""Row changes, transactions, DDL events, watermarks and whole workloads.

Timestamps are TiDB TSOs: `physical_ms << 18 | logical`. Events of a workload are in commit
order; every DML refers to the table version current at its commit.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

from .table import Table
from .values import Row

TSO_LOGICAL_BITS = 18
TSO_LOGICAL_MASK = (1 << TSO_LOGICAL_BITS) - 1


def tso(physical_ms: int, logical: int = 0) -> int:
    return (physical_ms << TSO_LOGICAL_BITS) | logical


def tso_physical_ms(ts: int) -> int:
    """`oracle.ExtractPhysical`: milliseconds since the Unix epoch."""
    return ts >> TSO_LOGICAL_BITS


class Op(enum.StrEnum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True, slots=True)
class RowChange:
    """One row changed by a DML statement. `before` is the old image (UPDATE/DELETE),
    `after` the new one (INSERT/UPDATE); images hold every column of `table`."""

    op: Op
    table: Table
    before: Row | None = None
    after: Row | None = None
    # Columns of `after` whose new value the source's change log does not carry although the
    # row holds it: PostgreSQL's unchanged TOASTed values (an UPDATE that leaves a value stored
    # out of line untouched logs no new copy of it; pgoutput sends 'u'). `after` still holds the
    # stored value; a connector writes its placeholder there (Debezium's
    # `unavailable.value.placeholder`).
    unavailable: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        need_before = self.op in (Op.UPDATE, Op.DELETE)
        need_after = self.op in (Op.INSERT, Op.UPDATE)
        if (self.before is not None) != need_before or (self.after is not None) != need_after:
            raise ValueError(f"{self.op} needs before={need_before} after={need_after}")

    def image(self) -> Row:
        """The image that identifies the row's content: after for insert/update, else before."""
        img = self.after if self.after is not None else self.before
        assert img is not None
        return img

    def handle_key(self, image: Row | None = None) -> tuple[object, ...]:
        img = self.image() if image is None else image
        return tuple(img[c.name] for c in self.table.handle_key_columns())

    def changes_unique_key(self) -> bool:
        """True when an UPDATE changes a primary-key or unique-index column."""
        if self.op is not Op.UPDATE:
            return False
        assert self.before is not None and self.after is not None
        return any(self.before[c] != self.after[c] for c in self.table.unique_key_column_names())


@dataclass(frozen=True, slots=True, order=True)
class Gtid:
    """A MariaDB global transaction id, `domain-server_id-sequence` (decimal, no padding): every
    transaction and every DDL statement the server logs gets the next sequence of its domain."""

    domain: int
    server_id: int
    sequence: int

    def __str__(self) -> str:
        return f"{self.domain}-{self.server_id}-{self.sequence}"

    @classmethod
    def parse(cls, text: str) -> Gtid | None:
        """`d-s-q` with three unsigned decimal parts (32, 32 and 64 bits), else None."""
        parts = text.split("-")
        if len(parts) != 3 or not all(p.isascii() and p.isdigit() for p in parts):
            return None
        d, s, q = (int(p) for p in parts)
        if d >= 1 << 32 or s >= 1 << 32 or q >= 1 << 64:
            return None
        return cls(d, s, q)

    def next(self) -> Gtid:
        return Gtid(self.domain, self.server_id, self.sequence + 1)


@dataclass(frozen=True, slots=True)
class LogicalMessage:
    """A PostgreSQL logical decoding message (`pg_logical_emit_message(transactional, prefix,
    content)`): a transactional one is decoded with its transaction, after the transaction's
    first `index` changes; a non-transactional one is decoded at once, outside any transaction
    (the model gives it a transaction of its own with no changes)."""

    prefix: str
    content: bytes
    transactional: bool = True
    index: int = 0


@dataclass(frozen=True, slots=True)
class ServerIds:
    """A transaction's ids in a PostgreSQL server's logical decoding stream, where the truth is
    that log (`--upstream`, `check --since`): the 32-bit xid, the commit time in microseconds since
    the Unix epoch, the LSN of each of its row changes (in `changes` order) and the commit's end
    LSN. A CDC tool that reads the same log writes the same ids (Debezium: source.txId, lsn, ts_ms)."""

    xid: int
    commit_us: int
    lsns: tuple[int, ...]
    end_lsn: int


@dataclass(frozen=True, slots=True)
class Transaction:
    commit_ts: int
    changes: tuple[RowChange, ...]
    start_ts: int = 0
    # Where a real server committed it (MariaDB GTID `0-1-42`, PostgreSQL LSN `0/16B3748`);
    # generated MariaDB workloads carry the GTID a server would have given them
    # (`strategies.Shape.gtid_origin`); None for other generated events.
    position: str | None = None
    # Logical decoding messages emitted in it (PostgreSQL only; in `index` order).
    messages: tuple[LogicalMessage, ...] = ()
    # Its ids in the change log of the server the truth was read from (PostgreSQL; None for a
    # generated transaction, and never exported: a deployment's server gives its own).
    server: ServerIds | None = None

    def items(self) -> Iterator[RowChange | LogicalMessage]:
        """Its changes and messages in the order the session made them."""
        pending = list(self.messages)
        for i, ch in enumerate(self.changes):
            while pending and pending[0].index <= i:
                yield pending.pop(0)
            yield ch
        yield from pending


class DdlKind(enum.StrEnum):
    CREATE_DATABASE = "create_database"
    CREATE_TABLE = "create_table"
    ADD_COLUMN = "add_column"
    DROP_COLUMN = "drop_column"
    MODIFY_COLUMN = "modify_column"
    RENAME_TABLE = "rename_table"
    TRUNCATE_TABLE = "truncate_table"
    ADD_INDEX = "add_index"
    DROP_INDEX = "drop_index"
    DROP_TABLE = "drop_table"


@dataclass(frozen=True, slots=True)
class Ddl:
    kind: DdlKind
    commit_ts: int
    sql: str
    # `table` is the version after the DDL (None for DROP TABLE / CREATE DATABASE);
    # `pre_table` the version before (None for CREATE TABLE / CREATE DATABASE).
    table: Table | None = None
    pre_table: Table | None = None
    database: str = ""
    position: str | None = None  # as for Transaction


@dataclass(frozen=True, slots=True)
class Watermark:
    """Everything with commit_ts <= ts has been emitted (TiCDC's resolved ts)."""

    ts: int


@dataclass(frozen=True, slots=True)
class CaptureStart:
    """The CDC tool starts here. The events before it happened before it ran: what they left is
    the database it finds (`tables`: each table's current version with its rows, in the order
    the model keeps them), which a tool that takes a snapshot reads first (Debezium's
    `snapshot.mode=initial`); the events after it are streamed. An upstream applies every event;
    the harness hands an encoder this event and the ones after it only."""

    commit_ts: int
    tables: tuple[tuple[Table, tuple[Row, ...]], ...] = ()


Event: TypeAlias = Transaction | Ddl | Watermark | CaptureStart


def capture_start(events: Sequence[Event]) -> int:
    """The index of the workload's CaptureStart (0 when it has none: the tool sees everything)."""
    return next((i for i, e in enumerate(events) if isinstance(e, CaptureStart)), 0)


@dataclass(frozen=True, slots=True)
class Workload:
    """A generated history: DDL and transactions in commit order, with watermarks."""

    events: tuple[Event, ...]
    seed: int | str | None = None
    shard: int | None = None
    # Free-form provenance: generator shape, hypothesis example, "shrunk from" etc.
    meta: dict[str, object] = field(default_factory=dict, compare=False, hash=False)

    def transactions(self) -> Iterator[Transaction]:
        return (e for e in self.events if isinstance(e, Transaction))

    def row_changes(self) -> Iterator[RowChange]:
        for t in self.transactions():
            yield from t.changes

    def ddls(self) -> Iterator[Ddl]:
        return (e for e in self.events if isinstance(e, Ddl))

    def tables(self) -> list[Table]:
        """The final version of every table that exists at the end."""
        current: dict[tuple[str, int], Table] = {}
        for d in self.ddls():
            if d.pre_table is not None:
                current.pop((d.pre_table.database, d.pre_table.table_id), None)
            if d.table is not None:
                current[(d.table.database, d.table.table_id)] = d.table
        return list(current.values())

    @property
    def size(self) -> int:
        return sum(len(t.changes) for t in self.transactions()) + sum(1 for _ in self.ddls())
