"""Source truth: what a real database server did with a workload.

When a workload runs against a real server (`conformance.upstream`), the suite records what the
server says happened, next to what the model predicted:

* per applied event (a transaction or a DDL, by its index in `Workload.events`): each statement
  as executed, the server's error if it refused it, the rows it matched, the position where it
  committed (MariaDB GTID, PostgreSQL LSN) and, for transactions, the rows read back before
  COMMIT (`StoredRow`: the model's image beside the stored one);
* per event found in the change log (`LoggedEvent`): its position, which applied event it is,
  and the row changes decoded from it.

The `source.*` checks (`conformance.checks.source`) compare the two. Nothing here judges.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .events import Ddl, RowChange, ServerIds, Transaction
from .table import Table
from .values import Row


@dataclass(frozen=True, slots=True)
class StatementResult:
    sql: str
    error: str | None = None  # the server's refusal, as it said it
    rows: int | None = None  # rows the statement matched (DML)
    expected_rows: int | None = None  # rows the model says it matches (1 for each generated DML)


@dataclass(frozen=True, slots=True)
class StoredRow:
    """One row a transaction touched, read back inside the transaction before COMMIT."""

    table: Table
    key: tuple[object, ...]
    expected: Row | None  # the model's image after the transaction; None: the row is gone
    stored: Row | None  # what the server returned; None: no such row
    sql: str = ""  # the SELECT that read it


@dataclass(frozen=True, slots=True)
class AppliedEvent:
    index: int  # in Workload.events
    event: Transaction | Ddl
    statements: tuple[StatementResult, ...]
    committed: bool
    position: str | None = None
    stored: tuple[StoredRow, ...] = ()
    txid: int | None = None  # the server's transaction id where the log names transactions by it


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    """One transaction or DDL as the server's change log has it."""

    position: str
    applied_index: int | None  # the AppliedEvent it is (None: the log has it, the suite never applied it)
    changes: tuple[RowChange, ...] = ()
    is_ddl: bool = False
    # Column names per table as the log describes them (binlog table map / pgoutput relation).
    columns: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The same image columns in raw, pre-model form, for reports: "db.t": (name, server type).
    note: str = ""
    server: ServerIds | None = None  # PostgreSQL: the transaction's ids in the log


@dataclass(frozen=True, slots=True)
class SourceTruth:
    server: str  # e.g. "MariaDB 10.11.19 (embedded-mariadb)"
    dialect: str
    databases: tuple[tuple[str, str], ...]  # model database -> server database / schema
    applied: tuple[AppliedEvent, ...]
    logged: tuple[LoggedEvent, ...] = ()
    # Every event of the workload was applied (False: application stopped at `stopped`).
    complete: bool = True
    stopped: str | None = None
    captured: bool = True  # the change log was read (False for providers that cannot)
    extra: dict[str, object] = field(default_factory=dict, compare=False)

    def applied_by_index(self) -> dict[int, AppliedEvent]:
        return {a.index: a for a in self.applied}


def position_key(position: str) -> tuple[int, ...]:
    """A sortable form of a GTID (`domain-server-seq`: by domain, then seq) or an LSN (`X/Y`)."""
    if "/" in position:
        hi, lo = position.split("/", 1)
        return (int(hi, 16) << 32 | int(lo, 16),)
    parts = position.split("-")
    if len(parts) == 3:
        return (int(parts[0]), int(parts[2]))
    return (int(position),)


def lsn_int(text: str) -> int:
    """A PostgreSQL LSN as its text (`16/B374D848`) gives it, as the 64-bit number Debezium writes."""
    hi, _, lo = text.partition("/")
    return int(hi, 16) << 32 | int(lo, 16)
