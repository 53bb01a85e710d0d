"""Whole CDC tools as encoders (black-box mode).

A tool reads the database's change log and hands over Kafka records on its own; the suite does
not call it per event. Its adapter (`ToolAdapter`) is started once per run and worker (a JVM, a
process), then, per workload, drives the upstream itself: it prepares what the tool needs before
the first statement (a replication slot, a position), applies the workload through the upstream,
waits until the tool has caught up (a bound: a tool that never catches up is `encoder.responsive`
failed, with its log tail) and returns what the tool handed over, grouped by source event.

The harness then runs those records through the same pipeline as any encoder's (`ReplayEncoder`):
the sink and Kafka, the record, event and stream checks, delivery against the source truth.
Topics get the run's own prefix, as a topic-routing transform would, so that runs never collide.
"""

from __future__ import annotations

import atexit
import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..model.events import Event, Workload
from ..model.table import Table
from .spi import EncoderContext, EncoderError, EncoderHung, Record


class _ToolError(EncoderError):
    """A tool's problem; `evidence` is the tail of its log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail

    @property
    def evidence(self) -> str | None:
        return self.log_tail or None


class ToolFailed(_ToolError):
    """The tool stopped or refused the workload; `evidence` is the tail of its log."""


class ToolHung(_ToolError, EncoderHung):
    """The tool did not catch up within its bound; `evidence` is the tail of its log."""


@dataclass(slots=True)
class ToolRun:
    """One workload through the tool: what the upstream captured (the source truth), the tool's
    records per event of the captured workload (same length as its events), and the problem
    that stopped the tool part way, if any (records before it stay)."""

    captured: Any  # upstream.base.Captured
    batches: list[list[Record]]
    problem: EncoderError | None = None
    seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToolEnv:
    """Where a tool that produces on its own writes: the run's Kafka (the suite's client
    configuration, credentials included: never print it) and Schema Registry, and how the run's
    protocol places the tool's records."""

    kafka: Mapping[str, str] = field(default_factory=dict)
    registry_url: str | None = None
    registry: Any = None  # the run's registry client (what records framed with ids are read with)
    topic_prefix: str = ""  # the run's prefix of this unit's topics (a converter names subjects after them)
    # The protocol's `ProtocolSuite.tool_record` (record, options, registry): where a record goes.
    place: Callable[[Record, Mapping[str, str], Any], ToolRecord | None] | None = None


#: `ToolRecord.tx` of the records a tool writes when it starts, before it streams (a snapshot's):
#: they go with the workload's CaptureStart.
CAPTURE_START = "capture-start"


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """What a protocol reads off one of a tool's records to place it (`ProtocolSuite.tool_record`):
    the table it is about, the source transaction in the upstream's terms (PostgreSQL: the 32-bit
    xid; MariaDB: the GTID text), its place within the transaction, and, for a record that names
    no transaction (a tombstone, a schema record), whether it goes with the record before it in
    its partition or with the one after."""

    table: tuple[str, str] | None = None
    tx: int | str | None = None
    order: tuple[Any, ...] = ()
    with_next: bool = False
    # A record of no transaction that belongs to the workload's event that emitted it (a
    # non-transactional logical decoding message): placed in order (`order`) with those events.
    loose: bool = False
    # A record of no transaction that names the source position of the event that made it (a
    # MaxScale schema event's key: the GTID of the DDL that made that table version; a TiCDC
    # watermark's ts), as `ProtocolSuite.event_position` names that event.
    position: str | None = None
    # A record of a DDL (its `tx`: the DDL's own; `table`: the table it made, if any).
    ddl: bool = False
    # A record a deployment makes on its own schedule, not for an event of the workload (TiCDC's
    # watermarks): `check --workload` judges a deployment's with the capture alone.
    own_schedule: bool = False
    # A logical decoding message's prefix (`check --workload` places it with an event that emitted
    # one with that prefix).
    message: str | None = None


@dataclass(frozen=True, slots=True)
class FieldIds:
    """What a deployment's records of one source transaction say of the ids only that deployment
    knows (`ProtocolSuite.field_ids`, for `check --workload`): the transaction's position (a
    MariaDB GTID), its commit time as the records carry it (ms) or its exact commit ts (a TSO)."""

    position: str | None = None
    time_ms: int | None = None
    commit_ts: int | None = None
    sql: str | None = None  # a DDL's statement as the deployment recorded it
    # Each table version the records name, with the identity the deployment gave it (TiDB's
    # table id and schema version: `Table` fields).
    tables: tuple[tuple[Table, Mapping[str, Any]], ...] = ()


class ToolAdapter(Protocol):
    def start(self, upstream: Any, options: Mapping[str, str]) -> None:
        """Start what lives for the whole run (e.g. a JVM). Idempotent."""

    def run(self, upstream: Any, workload: Workload, options: Mapping[str, str], timeout: float,
            env: ToolEnv) -> ToolRun:
        """Apply `workload` through `upstream` while the tool captures it; wait for the tool."""

    def stop(self) -> None:
        """Stop what `start` started. Idempotent."""


class ReplayEncoder:
    """Hands the harness, event by event, what the tool handed over for that event; raises the
    tool's problem at the first event it left without records."""

    def __init__(self, run: ToolRun, protocol: str) -> None:
        self.protocol = protocol
        self.run = run
        self.ctx: EncoderContext | None = None
        self.index = 0
        self.last_with_records = max((i for i, b in enumerate(run.batches) if b), default=-1)
        # Where each event sits in the captured workload: after a restart the harness resumes at
        # its checkpoint, not at the first event.
        events = getattr(getattr(run.captured, "workload", None), "events", ())
        self.positions = {id(e): i for i, e in enumerate(events)}

    def open(self, ctx: EncoderContext) -> None:
        self.ctx = ctx
        self.index = 0

    def encode(self, event: Event) -> list[Record]:
        i = self.positions.get(id(event), self.index)
        self.index = i + 1
        if self.run.problem is not None and i > self.last_with_records:
            raise self.run.problem
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        batch = self.run.batches[i] if i < len(self.run.batches) else []
        return [Record(prefix + r.topic, r.key, r.value, r.partition, headers=r.headers) for r in batch]

    def tick(self, now: float) -> list[Record]:
        return []

    def close(self) -> None:
        pass


_ADAPTERS: dict[tuple[str, str], Any] = {}


def worker_tool(name: str, factory: Callable[[], ToolAdapter], upstream: Any, options: Mapping[str, str]
                ) -> ToolAdapter:
    """One adapter per tool and upstream per worker process, started once, stopped at exit."""
    key = (name, getattr(upstream, "url", ""))
    adapter = _ADAPTERS.get(key)
    if adapter is None:
        adapter = _ADAPTERS[key] = factory()
        atexit.register(_stop, adapter)
    adapter.start(upstream, options)
    return adapter


def _stop(adapter: ToolAdapter) -> None:
    with contextlib.suppress(Exception):
        adapter.stop()


def stop_all() -> None:
    for a in list(_ADAPTERS.values()):
        _stop(a)
    _ADAPTERS.clear()


def group_in_order(events: Sequence[Event], groups: Sequence[list[Record]],
                   wants: Callable[[Event], bool]) -> list[list[Record]]:
    """The k-th group of records for the k-th event that `wants` one; [] for the others."""
    out: list[list[Record]] = []
    it = iter(groups)
    for e in events:
        out.append(list(next(it, [])) if wants(e) else [])
    return out


def neighbours(records: Sequence[Record], placed: Sequence[ToolRecord], known: Sequence[bool],
               wants: Callable[[int], bool]) -> list[int | None]:
    """For each record `wants` names, the index of the nearest record of its partition that is
    `known`: on the side `ToolRecord.with_next` says, else on the other; None for the rest (and
    where the partition has no known record)."""
    out: list[int | None] = [None] * len(records)
    by_part: dict[tuple[str, int | None], list[int]] = {}
    for i, r in enumerate(records):
        by_part.setdefault((r.topic, r.partition), []).append(i)
    for idx in by_part.values():
        for pos, i in enumerate(idx):
            if not wants(i):
                continue
            first = 1 if placed[i].with_next else -1
            for step in (first, -first):
                j = pos + step
                while 0 <= j < len(idx) and not known[idx[j]]:
                    j += step
                if 0 <= j < len(idx):
                    out[i] = idx[j]
                    break
    return out


def fill_transactions(records: Sequence[Record], placed: Sequence[ToolRecord]
                      ) -> tuple[list[int | str | None], list[tuple[Any, ...]]]:
    """Each record's transaction and order key: its own, or, for a record that names none (a
    tombstone, a schema record), its neighbour's in the same partition (`neighbours`)."""
    own = [p.tx is not None for p in placed]
    near = neighbours(records, placed, own, lambda i: not own[i] and not placed[i].loose)
    tx: list[int | str | None] = [p.tx if j is None else placed[j].tx for p, j in zip(placed, near, strict=True)]
    order = [p.order if j is None else placed[j].order for p, j in zip(placed, near, strict=True)]
    return tx, order


def group_by_transaction(captured: Any, records: Sequence[Record], place: Callable[[Record], ToolRecord],
                         marker: Callable[[tuple[str, str]], bool], *, marker_txs: Collection[int | str] = ()
                         ) -> list[list[Record]]:
    """A tool's records (each partition's in log order) as batches per event of the captured
    workload: grouped by source transaction, each group given to the workload's transaction with
    that id (the upstream knows each one's xid or GTID), ordered within it by the protocol's
    order key. The marker's transactions (`marker(table)`) are left out. Records no transaction
    of the workload claims still go to the last batch: judged as unexpected, never dropped."""
    placed = [place(r) for r in records]
    tx, order = fill_transactions(records, placed)
    # The markers' transactions (`marker_txs`: ones seen earlier, e.g. a transaction END that
    # arrives after its marker row was taken).
    # A marker row a tool read at its start (a snapshot) leaves only itself out: the snapshot's
    # other rows are the workload's.
    # (Never the snapshot itself, even where a marker row's transaction was remembered as it: a
    # marker row committed before the snapshot began is read by it, op r, in the snapshot's
    # transaction.)
    marked = {i for i, p in enumerate(placed) if p.table is not None and marker(p.table)}
    skip = {tx[i] for i in marked if tx[i] != CAPTURE_START} | (set(marker_txs) - {CAPTURE_START})
    groups: dict[int | str | None, list[tuple[tuple[Any, ...], int]]] = {}
    for i in range(len(records)):
        if i in marked or (tx[i] in skip and tx[i] is not None):
            continue
        groups.setdefault(tx[i], []).append((order[i], i))
    out: list[list[Record]] = []
    for key in event_transactions(captured):
        members = groups.pop(key, []) if key is not None else []
        members.sort(key=lambda m: (sortable_order(m[0]), m[1]))
        out.append([records[i] for _, i in members])
    strays = [records[i] for members in groups.values() for _, i in members]
    if strays and out:
        last = max((i for i, b in enumerate(out) if b), default=len(out) - 1)
        out[last] = out[last] + strays
    return place_loose(captured, out, {i for i, p in enumerate(placed) if p.loose}, records, order)


def place_loose(captured: Any, batches: list[list[Record]], loose_at: set[int], records: Sequence[Record],
                 order: list[tuple[Any, ...]]) -> list[list[Record]]:
    """Records of no transaction (`ToolRecord.loose`: non-transactional logical decoding
    messages) go, in their order, with the events that emitted one, from the tool's start on
    (out of whatever batch their neighbours put them in, if any); any left over stays with the
    last batch."""
    from ..model.events import Transaction, capture_start

    if not loose_at:
        return batches
    loose_ids = {id(records[i]) for i in loose_at}
    loose = [records[i] for i in sorted(loose_at, key=lambda i: (sortable_order(order[i]), i))]
    batches = [[r for r in b if id(r) not in loose_ids] for b in batches]
    events = captured.workload.events
    first = capture_start(events)  # what happened before the tool started it never saw
    for i, e in enumerate(events):
        n = sum(1 for m in e.messages if not m.transactional) if isinstance(e, Transaction) and i >= first else 0
        if n and i < len(batches):
            batches[i][:0], loose = loose[:n], loose[n:]
    if loose and batches:
        batches[-1].extend(loose)
    return batches


def sortable_order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    # Order keys mix ints and strings across protocols; within one protocol they compare.
    return tuple((0, k) if isinstance(k, int) else (1, str(k)) for k in key)


def event_transactions(captured: Any) -> list[int | str | None]:
    """The source transaction of each event of the captured workload, in its order, as a tool
    names it: the 32-bit xid where the server has one (PostgreSQL), else the log position (a
    MariaDB GTID); None for watermarks and where the upstream cannot tell."""
    from ..model.events import CaptureStart, Watermark

    truth = captured.truth
    events = captured.workload.events
    if truth is None:
        return [None] * len(events)
    by_index = truth.applied_by_index()
    logged = iter([le for le in truth.logged if le.applied_index is not None])
    out: list[int | str | None] = []
    for e in events:
        if isinstance(e, Watermark):
            out.append(None)
            continue
        if isinstance(e, CaptureStart):
            out.append(CAPTURE_START)  # a tool's snapshot records (`ToolRecord.tx`)
            continue
        le = next(logged, None)
        a = by_index.get(le.applied_index) if le is not None and le.applied_index is not None else None
        if a is not None and a.txid is not None:
            out.append(a.txid & 0xFFFFFFFF)
        else:
            out.append(le.position if le is not None else None)
    return out
