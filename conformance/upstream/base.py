"""The provider interface, what a workload run returns, and the one apply-and-capture loop.

Every provider (`none`, embedded, existing server, container) is an `Upstream`. A server-backed
provider opens a `Session` per workload: its own database(s) on the shared server, one
connection. `run_session` is the only loop that applies a workload (each generated transaction
as one database transaction, each DDL as its statements), records the source truth and asks the
session to read the change log back. Providers differ only in their sessions.
"""

from __future__ import annotations

import abc
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Protocol, Self

from ..errors import InfrastructureError
from ..model.dialects import Dialect
from ..model.events import (
    TSO_LOGICAL_MASK,
    CaptureStart,
    Ddl,
    Event,
    LogicalMessage,
    Op,
    RowChange,
    Transaction,
    Watermark,
    Workload,
    tso,
)
from ..model.table import Table
from ..model.truth import AppliedEvent, LoggedEvent, SourceTruth, StatementResult, StoredRow
from ..model.values import Row


class UpstreamUnavailable(InfrastructureError):
    """The upstream cannot be started or reached (missing binaries or packages, refused)."""


class UpstreamLost(InfrastructureError):
    """The server went away in the middle of a workload: not the encoder's fault, not a finding."""


class StatementRefused(Exception):
    """The server refused one statement (a finding against the generator, not an infra error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class Captured:
    """One workload run through a real server.

    * `source`: the generated workload, as it was applied;
    * `workload`: what the server's change log says happened, as canonical events (DDL, the
      transactions decoded from the log, the source's watermarks after the transactions they
      followed) - an encoder consumes it exactly like a generated workload;
    * `truth`: the source truth the `source.*` checks judge (None for `--upstream none`).
    """

    source: Workload
    workload: Workload
    truth: SourceTruth | None

    @property
    def events(self) -> tuple[Event, ...]:
        return self.workload.events


@dataclass(frozen=True, slots=True)
class SourceMutant:
    """A deliberately broken generator rendering or capture, for the source checks' own tests.

    `dialect` wraps the dialect the statements are rendered with; `capture` rewrites what the
    change log returned. `catches` names the check that must report it."""

    name: str
    catches: str
    description: str
    dialect: Callable[[Dialect], Dialect] | None = field(default=None, compare=False)
    capture: Callable[[list[LoggedEvent]], list[LoggedEvent]] | None = field(default=None, compare=False)


class Session(Protocol):
    """One workload's connection to a server, in its own database(s)."""

    dialect: Dialect  # with the workload's database names mapped to this session's
    server: str  # "MariaDB 10.11.19 (embedded-mariadb)"

    def begin_capture(self) -> None:
        """Mark where the change log starts for this workload (before any statement)."""

    def execute(self, sql: str) -> int:
        """Run one statement; the number of rows it matched. StatementRefused if the server
        refuses it; UpstreamLost if the server is gone."""

    def begin(self) -> None:
        """Start the transaction of one generated transaction (or of one DDL's statements)."""

    def commit(self) -> tuple[str | None, int | None]:
        """Commit; the position of the commit when the session can tell it now, and the
        server's transaction id when its log names transactions by it."""

    def rollback(self) -> None: ...

    def transactional_ddl(self) -> bool:
        """A DDL's statements run inside begin()/commit() (PostgreSQL), or each commits on its
        own (MariaDB: commit() then only reads the position)."""

    def read_rows(self, table: Table, keys: list[tuple[tuple[object, ...], Row]]) -> tuple[str, dict[
            tuple[object, ...], Row]]:
        """Read back the rows with these handle keys (with an image that has the key values);
        the SELECT and the rows found, by key."""

    def capture(self, applied: list[AppliedEvent], source: Workload) -> list[LoggedEvent]:
        """The workload's events from the change log, in log order."""

    def close(self) -> None: ...


class Upstream(abc.ABC):
    """A source of truth and change log for workloads: started once, shared by every workload."""

    #: "none", "embedded", "external" or "container"
    kind: str = "none"
    #: The dialect its workloads are generated in (None: any; events go straight through).
    dialect: str | None = None

    def __init__(self, url: str) -> None:
        self.url = url  # always redacted by the opener

    def start(self) -> None:  # noqa: B027 - providers without a server have nothing to start
        """Start (or reach) the server. Idempotent."""

    def close(self) -> None:  # noqa: B027 - nor anything to stop
        """Stop what `start` started. Idempotent."""

    def describe(self) -> str:
        return self.url

    def shareable_url(self) -> str:
        """A URL another process (a Spark executor on this machine) can open to use the same
        server: `open_upstream(up.shareable_url())`. It may carry credentials: never print it."""
        return self.url

    @abc.abstractmethod
    def run_workload(self, workload: Workload, *, mutant: SourceMutant | None = None,
                     on_capture_start: Callable[[], None] | None = None) -> Captured:
        """Apply `workload` in its own database(s), read the change log back, return both;
        `on_capture_start` runs where the workload's CDC tool starts (`run_session`)."""

    def since_error(self, since: str) -> str | None:
        """Why `--since since` is not a position this server's log can be read from (None: it is)."""
        return f"{self.describe()} cannot read its change log from a position"

    def logged_since(self, since: str, workloads: Sequence[tuple[Workload, Sequence[str]]]
                     ) -> tuple[list[Captured], list[str]]:
        """`--since POSITION`: what this server's change log holds since POSITION of each workload
        (its events with the names it has on the server, and those database names), applied by
        someone else: the truth with the server's own ids; and notes for the report."""
        raise UpstreamUnavailable(f"{self.describe()} cannot read its change log from a position")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


class NoUpstream(Upstream):
    """`--upstream none`: generated events go straight to the encoder (today's path)."""

    kind = "none"

    def __init__(self) -> None:
        super().__init__("none")

    def run_workload(self, workload: Workload, *, mutant: SourceMutant | None = None,
                     on_capture_start: Callable[[], None] | None = None) -> Captured:
        return Captured(workload, workload, None)


# -- the one loop ----------------------------------------------------------------------------

def final_images(txn: Transaction) -> dict[tuple[int, tuple[object, ...]], tuple[Table, Row | None, Row]]:
    """Per (table id, handle key): the table, the model's image after the transaction (None when
    the row is gone) and an image that carries the key values (for the WHERE clause)."""
    out: dict[tuple[int, tuple[object, ...]], tuple[Table, Row | None, Row]] = {}
    for ch in txn.changes:
        t = ch.table
        if ch.before is not None:
            out[(t.table_id, ch.handle_key(ch.before))] = (t, None, ch.before)
        if ch.after is not None:
            out[(t.table_id, ch.handle_key(ch.after))] = (t, ch.after, ch.after)
    return out


def run_session(session: Session, workload: Workload, *, mutant: SourceMutant | None = None,
                databases: tuple[tuple[str, str], ...] = (),
                on_capture_start: Callable[[], None] | None = None) -> Captured:
    """Apply every event of `workload` through `session`, record the truth, capture the log.
    `on_capture_start` runs where the workload's CDC tool starts (its CaptureStart event): a tool
    adapter starts the tool there, on the database the events before it left."""
    dialect = session.dialect if mutant is None or mutant.dialect is None else mutant.dialect(session.dialect)
    applied: list[AppliedEvent] = []
    stopped: str | None = None
    session.begin_capture()
    for index, event in enumerate(workload.events):
        if isinstance(event, Watermark):
            continue
        if isinstance(event, CaptureStart):
            if on_capture_start is not None:
                on_capture_start()
            continue
        if isinstance(event, Ddl):
            results: list[StatementResult] = []
            if session.transactional_ddl():
                session.begin()
            for sql in dialect.ddl_statements(event):
                try:
                    session.execute(sql)
                    results.append(StatementResult(sql))
                except StatementRefused as e:
                    results.append(StatementResult(sql, error=e.message))
                    stopped = f"event {index} ({event.kind.value}) was refused: {e.message}"
                    break
            if stopped is None:
                position, txid = session.commit()
                applied.append(AppliedEvent(index, event, tuple(results), True, position, txid=txid))
            else:
                if session.transactional_ddl():
                    session.rollback()
                applied.append(AppliedEvent(index, event, tuple(results), False))
        else:
            assert isinstance(event, Transaction)
            applied.append(_apply_transaction(session, dialect, index, event))
            if not applied[-1].committed:
                bad = next(r for r in applied[-1].statements if r.error is not None)
                stopped = f"event {index} (transaction) was refused: {bad.error}"
        if stopped is not None:
            break
    logged = session.capture(applied, workload)
    if mutant is not None and mutant.capture is not None:
        logged = mutant.capture(logged)
    truth = SourceTruth(session.server, session.dialect.name, databases, tuple(applied), tuple(logged),
                        complete=stopped is None, stopped=stopped)
    return Captured(workload, canonical_workload(workload, applied, logged), truth)


def _apply_transaction(session: Session, dialect: Dialect, index: int, txn: Transaction) -> AppliedEvent:
    results: list[StatementResult] = []
    session.begin()
    for item in txn.items():
        # A DML statement matches one row; a logical decoding message is a SELECT of one row.
        sql = dialect.dml(item) if isinstance(item, RowChange) else dialect.message(item)
        try:
            rows = session.execute(sql)
        except StatementRefused as e:
            results.append(StatementResult(sql, error=e.message, expected_rows=1))
            session.rollback()
            return AppliedEvent(index, txn, tuple(results), False)
        results.append(StatementResult(sql, rows=rows, expected_rows=1))
    stored: list[StoredRow] = []
    by_table: dict[int, list[tuple[tuple[object, ...], Table, Row | None, Row]]] = {}
    for (tid, key), (table, image, keyed) in final_images(txn).items():
        by_table.setdefault(tid, []).append((key, table, image, keyed))
    for items in by_table.values():
        table = items[-1][1]
        select, found = session.read_rows(table, [(key, keyed) for key, _t, _i, keyed in items])
        for key, t, image, _keyed in items:
            stored.append(StoredRow(t, key, image, found.get(key), select))
    position, txid = session.commit()
    return AppliedEvent(index, txn, tuple(results), True, position, tuple(stored), txid)


def canonical_workload(source: Workload, applied: list[AppliedEvent], logged: list[LoggedEvent]) -> Workload:
    """The log's events as canonical events: the model's DDL at the log's position, each
    transaction with the changes the log holds, the source's watermarks after the events they
    followed. Commit timestamps stay the model's (encoders derive their own from them)."""
    follows: dict[int, list[Watermark | CaptureStart]] = {}
    last = -1
    for i, e in enumerate(source.events):
        if isinstance(e, (Watermark, CaptureStart)):
            follows.setdefault(last, []).append(e)
        else:
            last = i
    out: list[Event] = list(follows.get(-1, ()))
    for le in logged:
        if le.applied_index is None:
            continue
        orig = source.events[le.applied_index]
        if isinstance(orig, Ddl):
            out.append(dataclasses.replace(orig, position=le.position))
        elif isinstance(orig, Transaction):
            out.append(Transaction(orig.commit_ts, le.changes, orig.start_ts, position=le.position,
                                   messages=_messages_at(orig, le.changes), server=le.server))
        out += follows.get(le.applied_index, ())
    meta = dict(source.meta)
    meta["captured"] = True
    return Workload(tuple(out), source.seed, source.shard, meta)


def logged_by_others(source: Workload, applied: list[AppliedEvent], logged: list[LoggedEvent], server: str,
                     dialect: str, databases: tuple[tuple[str, str], ...],
                     time_ms: Callable[[Event], int | None]) -> Captured:
    """A workload someone else applied, as the server logged it (`Upstream.logged_since`): the
    truth, and the log's events with each commit time the log's (`time_ms`; None: the model's)."""
    truth = SourceTruth(server, dialect, databases, tuple(applied), tuple(logged), complete=True)
    canonical = canonical_workload(source, applied, logged)
    events: list[Event] = []
    for i, e in enumerate(canonical.events):
        if isinstance(e, (Transaction, Ddl)) and (ms := time_ms(e)) is not None:
            e = dataclasses.replace(e, commit_ts=tso(ms, i & TSO_LOGICAL_MASK))
        events.append(e)
    return Captured(source, dataclasses.replace(canonical, events=tuple(events)), truth)


def _messages_at(orig: Transaction, logged: tuple[RowChange, ...]) -> tuple[LogicalMessage, ...]:
    """The transaction's logical decoding messages (the log carries each where the session
    emitted it), placed among the changes the log holds: after as many as came before it in the
    model (fewer if the log holds fewer)."""
    return tuple(dataclasses.replace(m, index=min(m.index, len(logged))) for m in orig.messages)


def iter_changes(logged: list[LoggedEvent]) -> Iterator[RowChange]:
    for le in logged:
        yield from le.changes


__all__ = ["Captured", "NoUpstream", "Op", "Session", "SourceMutant", "StatementRefused", "Upstream",
           "UpstreamLost", "UpstreamUnavailable", "canonical_workload", "final_images", "logged_by_others",
           "run_session"]
