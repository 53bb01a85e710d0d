"""`conformance check … --workload FILE`: a captured topic judged against the workload it was made
from, as strictly as the run that would have made it.

The workload file is an export (`conformance workload`, `harness/export.py`): per workload its
SQL and the suite's model of it. The capture is either a deployment's (the export applied to the
user's own server and CDC tool: its databases are the export's `w<shard>_<name>`) or a run's dump
(`run --dump`: its topics carry the run's unit prefix `<run>c<combo>w<shard>-`, its databases the
model's names). Each workload's records are replayed, event by event, through the run's own
pipeline (`stages`: record and event checks against the workload, the log re-read and judged for
delivery), so that what a run checks, this checks.

The join. A deployment numbers its transactions itself (MariaDB GTIDs and binlog times, TiDB
commit ts, PostgreSQL xids and LSNs): nothing in the capture names the model's. A capture's
transaction is joined to the workload's by its tables and the order of their changes: for every
table, the k-th transaction of the capture that changed it is the k-th transaction of the workload
that did (DDL apart, likewise); each capture transaction goes to the workload transaction most of
its tables say. For a deployment's capture (and for a truth another server logged, `--upstream`)
the workload's events then take the ids the capture gives them (`ProtocolSuite.field_ids`), so
that checks which compare ids compare the deployment's with themselves, and everything else (the
values, the columns, the order, loss and strays) with the workload; a run's dump keeps the
model's. Records the join cannot place stay with the workload's last records: judged as
unexpected, never dropped.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import SimpleNamespace
from typing import Any

from ..encoders.spi import EncoderContext, EncoderError, EncoderInfo, EncoderKind, Record
from ..encoders.tool import (
    CAPTURE_START,
    ReplayEncoder,
    ToolRecord,
    ToolRun,
    fill_transactions,
    neighbours,
    place_loose,
    sortable_order,
)
from ..infra.inprocess import InProcessRegistry
from ..infra.registry.errors import RegistryError
from ..model.events import (
    TSO_LOGICAL_MASK,
    CaptureStart,
    Ddl,
    Event,
    Gtid,
    Transaction,
    Workload,
    capture_start,
    tso,
)
from ..model.table import Table
from ..protocols.base import ProtocolSuite
from .export import Export, Exported
from .stages import UNIT_PREFIX, ComboResult, unit_prefix


@dataclass
class Unit:
    """One workload of the export and the capture's records of it."""

    exported: Exported
    records: list[Record] = field(default_factory=list)
    from_run: bool = False  # a run's dump (unit prefix stripped), else a deployment's capture
    label: str = ""
    placed: list[ToolRecord] | None = None  # where `split` placed a deployment's records (one per record)


class SeveralCombinations(ValueError):
    """A run's dump of several option combinations, and no combination chosen."""


def split(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, records: Sequence[Record],
          export: Export, *, combo: int | None = None) -> tuple[list[Unit], list[Record]]:
    """The capture's records per workload of the export (by the run's unit prefix, else by the
    export's database names), and the records that belong to none. A run's dump of several option
    combinations is judged one combination at a time (`combo`: the one made with `options`)."""
    combos = sorted({int(m["combo"]) for r in records if (m := UNIT_PREFIX.match(r.topic)) is not None})
    if combo is None and len(combos) > 1:
        raise SeveralCombinations(f"the dump holds {len(combos)} option combinations ({', '.join(map(str, combos))}): "
                                  "name the one to judge with --combo N and give its options (--option)")
    by_shard = {x.shard: x for x in export.workloads}
    owner_db = {suite.record_table(mapped, "")[0]: x.shard for x in export.workloads for mapped in x.databases.values()}
    units: dict[tuple[str, int], Unit] = {}
    loose: list[Record] = []
    field_records: list[Record] = []
    for r in records:
        m = UNIT_PREFIX.match(r.topic)
        if m is None:
            field_records.append(r)
            continue
        if combo is not None and int(m["combo"]) != combo:
            continue  # made with other options
        shard = int(m["shard"])
        x = by_shard.get(shard)
        if x is None:
            loose.append(r)
            continue
        u = units.setdefault((m.group(0), shard), Unit(x, from_run=True, label=m.group(0).rstrip("-")))
        u.records.append(replace(r, topic=r.topic[m.end():]))
    # A deployment's records: the shard of the database each record's table is in; a record that
    # names no table (a tombstone, a transaction boundary) takes its neighbour's in its partition.
    placed = [ToolRecord(table=suite.field_table(r, options, registry)) if suite.field_joins_rows
              else suite.tool_record(r, options, registry) or ToolRecord() for r in field_records]
    # (A table of no name is none: a logical decoding message's source names no table.)
    named = [p.table is not None and bool(p.table[0]) for p in placed]
    shard_of: list[int | None] = [owner_db.get(p.table[0]) if p.table is not None and n else None
                                  for p, n in zip(placed, named, strict=True)]
    known = [s is not None for s in shard_of]
    for i, j in enumerate(neighbours(field_records, placed, known, lambda i: not known[i] and not named[i])):
        if j is not None:
            shard_of[i] = shard_of[j]
    # A record of a transaction whose other records say their workload (BEGIN/END on a topic of
    # their own); else the workload of the record nearest it in the source's order (a message
    # outside any transaction, by its LSN).
    tx_shard = {p.tx: sh for p, sh in zip(placed, shard_of, strict=True) if p.tx is not None and sh is not None}
    ordered = sorted((p.order, sh) for p, sh in zip(placed, shard_of, strict=True) if sh is not None and p.order)
    order_keys = [k for k, _ in ordered]
    for i, p in enumerate(placed):
        if shard_of[i] is None and not named[i]:
            if p.tx is not None and p.tx in tx_shard:
                shard_of[i] = tx_shard[p.tx]
            elif p.order and ordered:
                at = max(0, bisect.bisect_right(order_keys, p.order) - 1)
                shard_of[i] = ordered[at][1]
    for r, p, s in zip(field_records, placed, shard_of, strict=True):
        if s is None:
            loose.append(r)
        else:
            u = units.setdefault(("", s), Unit(by_shard[s], label=f"workload shard {s}", placed=[]))
            assert u.placed is not None  # a deployment's unit
            u.records.append(r)
            u.placed.append(p)
    # A workload the capture holds nothing of is judged too: what it should have put in the log
    # is missing (or, under these options, nothing was due).
    from_run = bool(combos) and not field_records
    have = {u.exported.shard for u in units.values()}
    for x in export.workloads:
        if x.shard not in have:
            units[("", x.shard)] = Unit(x, from_run=from_run, label=f"workload shard {x.shard}")
    return sorted(units.values(), key=lambda u: (u.exported.shard, u.label)), loose


def with_databases(w: Workload, names: Mapping[str, str]) -> Workload:
    """The workload with its databases renamed (`names`: model name → name on the server)."""
    tables: dict[int, Table] = {}

    def t(table: Table) -> Table:
        if table.database not in names:
            return table
        got = tables.get(id(table))
        if got is None:
            got = tables[id(table)] = replace(table, database=names[table.database])
        return got

    def ev(e: Event) -> Event:
        e = _with_tables(e, t)
        return replace(e, database=names.get(e.database, e.database)) if isinstance(e, Ddl) else e

    return replace(w, events=tuple(ev(e) for e in w.events))


@dataclass
class Joined:
    workload: Workload  # the truth (a deployment's: with the deployment's ids)
    batches: list[list[Record]]  # the capture's records per event of `workload`
    unjoined: int = 0  # records of transactions the join could not place (judged as unexpected)
    own_schedule: int = 0  # a deployment's records made on its own schedule (judged with the capture alone)


def join(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, truth: Workload,
         records: Sequence[Record], *, deployed: bool = True, foreign_truth: bool = False,
         placed: Sequence[ToolRecord] | None = None, mark: bool | None = None, ids_known: bool = False) -> Joined:
    """The capture's records per event of the workload, and (`deployed`: a deployment's capture;
    `foreign_truth`: a truth another server numbered, `--upstream`)
    the workload with the capture's ids (see the module docstring). A run's dump keeps the
    model's ids: it was made with them, and taking its own would hide a wrong one; so does a truth
    read from the very server the deployment read (`ids_known`, `--since`). `mark`: whether
    a deployment's tool started where the file marks the lab's start (None: the capture says)."""
    if deployed:
        # Events a deployment makes on its own schedule (TiCDC's watermarks) are not the model's.
        truth = replace(truth, events=tuple(e for e in truth.events if suite.field_reproducible(e)))
    if placed is None:  # (else: as `split` placed them)
        placed = [suite.tool_record(r, options, registry) or ToolRecord() for r in records]
    if deployed and not any(p.tx == CAPTURE_START for p in placed) and not _started_at_mark(truth, placed, mark):
        # The file marks where the lab starts its tool (a comment); a deployment whose tool ran all
        # along (no snapshot in the capture) streamed everything.
        truth = replace(truth, events=tuple(e for e in truth.events if not isinstance(e, CaptureStart)))
    own = [deployed and p.own_schedule for p in placed]
    keep = [n for n in range(len(records)) if not own[n]]
    records = [records[n] for n in keep]
    placed = [placed[n] for n in keep]
    tx, order = fill_transactions(records, placed)
    events = truth.events
    first = capture_start(events)
    # Per table, the workload's transactions (and, apart, its DDL) that changed it, in commit
    # order, and the capture's, in the order they first appear (each record that names its own).
    wanted: dict[tuple[bool, tuple[str, str] | None], list[int]] = defaultdict(list)
    key: tuple[bool, tuple[str, str] | None]
    for i, e in enumerate(events):
        if i < first:
            continue
        if isinstance(e, Transaction):
            for c in e.changes:
                key = (False, suite.record_table(c.table.database, c.table.name))
                if not wanted[key] or wanted[key][-1] != i:
                    wanted[key].append(i)
        elif isinstance(e, Ddl) and suite.field_joins_ddl:
            wanted[(True, _ddl_table(suite, e))].append(i)
    seen: dict[tuple[bool, tuple[str, str] | None], list[Any]] = defaultdict(list)
    for p in placed:
        if p.tx is not None and p.tx != CAPTURE_START and (p.table is not None or p.ddl):
            got = seen[(p.ddl, p.table)]
            if p.tx not in got:
                got.append(p.tx)
    # In commit order, not the order the records were read in: a topic read back from Kafka comes
    # partition by partition. The source numbers one session's transactions in commit order
    # (PostgreSQL xids, MariaDB GTIDs, TiDB commit ts); ids it cannot order keep their place.
    for txs in seen.values():
        txs.sort(key=_tx_order)
    votes: dict[Any, Counter[int]] = defaultdict(Counter)
    for key, txs in seen.items():
        for k, x in enumerate(txs):
            if k < len(wanted.get(key, ())):
                votes[x][wanted[key][k]] += 1
    # Each capture transaction to the event most of its tables say; an event claimed twice goes
    # to the transaction with more votes (the other's records are judged as unexpected).
    event_of: dict[Any, int] = {}
    claimed: dict[int, tuple[int, Any]] = {}
    for x, tally in votes.items():
        i, n = min(tally.items(), key=lambda kv: (-kv[1], kv[0]))
        if i in claimed and claimed[i][0] >= n:
            continue
        if i in claimed:
            event_of.pop(claimed[i][1], None)
        claimed[i] = (n, x)
        event_of[x] = i
    _place_tableless(suite, events, records, tx, event_of)
    adopted = list(events)
    by_event: dict[int, list[Record]] = defaultdict(list)
    for n in range(len(records)):
        if tx[n] in event_of:
            by_event[event_of[tx[n]]].append(records[n])
    adopt = (deployed or foreign_truth) and not ids_known
    if adopt:
        # The ids a server gave the truth's transactions (a replay's) are not the deployment's.
        adopted = [replace(e, server=None) if isinstance(e, Transaction) and e.server is not None else e
                   for e in adopted]
        _adopt(suite, options, registry, events, adopted, by_event)
    # Records that name the position of the event that made them (a schema event) go with it. A
    # schema event's GTID that no event has (the server numbered other writes in between) is the
    # one of the latest DDL of that table before the transaction it came with.
    at_position: dict[str, int] = {}
    for i, e in enumerate(adopted):
        pos = suite.event_position(e)
        if pos is not None:
            at_position[pos] = i

    def names_it(i: int | None, table: tuple[str, str] | None) -> bool:
        """Whether event `i` is one a record about `table` can name: any event for a record about no
        table (a watermark), else a DDL of that table (a schema event)."""
        e = adopted[i] if i is not None else None
        return table is None or (isinstance(e, Ddl) and _ddl_table(suite, e) == table)

    for n, p in enumerate(placed):
        if not adopt or p.tx is not None or p.position is None or p.table is None \
                or (p.position in at_position and names_it(at_position[p.position], p.table)):
            continue
        before = event_of.get(tx[n], len(adopted))
        j = next((j for j in range(before - 1, -1, -1) if isinstance(adopted[j], Ddl)
                  and _ddl_table(suite, adopted[j]) == p.table), None)  # type: ignore[arg-type]
        d = adopted[j] if j is not None else None
        if j is not None and isinstance(d, Ddl):
            adopted[j] = replace(d, position=p.position)
            at_position = {k: v for k, v in at_position.items() if v != j}
            at_position[p.position] = j
    # A run's records made on a schedule of their own (watermarks) go, in each partition, to the
    # workload's events of that kind in turn: the run made one for each.
    scheduled = [i for i, e in enumerate(adopted) if not suite.field_reproducible(e)]
    turn: Counter[tuple[str, int | None]] = Counter()
    where: list[int | None] = []
    for n, r in enumerate(records):
        named = placed[n].position
        if placed[n].loose:
            where.append(None)  # placed below, with the events that emitted one
        elif placed[n].own_schedule:
            k = turn[(r.topic, r.partition)]
            turn[(r.topic, r.partition)] += 1
            where.append(scheduled[k] if k < len(scheduled) else None)
        elif placed[n].tx is None and named is not None and named in at_position \
                and names_it(at_position[named], placed[n].table):
            where.append(at_position[named])
        elif tx[n] == CAPTURE_START and first < len(events):
            where.append(first)
        else:
            where.append(event_of.get(tx[n]))
    _with_its_message(events, placed, where)
    _with_what_follows(records, placed, where)
    _with_its_copies(records, placed, where)
    out, strays = _batches(records, where, len(events), skip=[p.loose for p in placed], order=order)
    # Records of no transaction (PostgreSQL's non-transactional messages), in their order, to the
    # events that emitted one (as a whole tool's are placed).
    loose = {n for n in range(len(records)) if placed[n].loose}
    if loose and out:
        out = place_loose(SimpleNamespace(workload=replace(truth, events=tuple(adopted))), out, loose, records,
                          order)
    return Joined(replace(truth, events=tuple(adopted)), out, len(strays), sum(own))


def join_rows(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, truth: Workload,
              records: Sequence[Record], *, deployed: bool = True, foreign_truth: bool = False) -> Joined:
    """The capture's records per event of the workload, row by row (`field_joins_rows`): the
    reference shows which rows each event writes (their delivery identities: topic and key), and
    each event takes the captured records of those identities, the k-th of an identity for its k-th
    write. Nothing of the deployment's own numbering is used; with the records placed, the
    workload takes the ids they carry (`field_ids`: a commit ts) as `join` does. A record that sits
    after a later event's record in its partition goes with that later event (the replay keeps
    each partition's order); a record of no identity the reference wrote is judged as unexpected."""
    if deployed:
        truth = replace(truth, events=tuple(e for e in truth.events if suite.field_reproducible(e)))
    # Where the reference registers while it shows what each event writes: never the capture's
    # registry, and no level to refuse a schema (the capture says where its tool stopped).
    scratch = InProcessRegistry(compatibility="NONE")
    reference = suite.reference().factory()
    reference.open(EncoderContext(options=options, registry=scratch, topic_prefix=""))
    ref_id, cap_id = suite.identifier(options, scratch), suite.identifier(options, registry)
    wanted: dict[Any, list[tuple[int, int]]] = defaultdict(list)  # row -> (event, n-th reference record)
    n_ref = 0
    try:
        for i, e in enumerate(truth.events):
            for r in reference.encode(e):
                wanted[_row_of(r, ref_id)].append((i, n_ref))
                n_ref += 1
    finally:
        reference.close()
    taken: Counter[Any] = Counter()
    used: set[int] = set()
    where: list[int | None] = []
    for r in records:
        key = _row_of(r, cap_id)
        writes = wanted.get(key, [])
        k = taken[key]
        taken[key] += 1
        if k < len(writes):
            used.add(writes[k][1])
        where.append(writes[k][0] if k < len(writes) else None)
    # A record whose row the reference never wrote (its key rendered otherwise, its topic another)
    # takes, in turn, the place of a write no record took (of its topic first): judged against
    # that event, its key, topic and values are found wrong by their own checks rather than only as
    # loss and a stray. (A capture that conforms has no such record.)
    open_writes: dict[str | None, list[tuple[int, int]]] = defaultdict(list)
    for (topic, _), writes in wanted.items():
        open_writes[topic].extend(w for w in writes if w[1] not in used)
    for writes in open_writes.values():
        writes.sort(key=lambda w: w[1], reverse=True)
    for n, r in enumerate(records):
        if where[n] is None and open_writes.get(r.topic):
            used.add(open_writes[r.topic][-1][1])
            where[n] = open_writes[r.topic].pop()[0]
    anywhere = sorted((w for ws in wanted.values() for w in ws if w[1] not in used), key=lambda w: w[1], reverse=True)
    for n in range(len(records)):
        if where[n] is None and anywhere:
            where[n] = anywhere.pop()[0]
    events = truth.events
    out, strays = _batches(records, where, len(events))
    adopted = list(events)
    if deployed or foreign_truth:
        _adopt(suite, options, registry, events, adopted, {i: b for i, b in enumerate(out) if b})
    return Joined(replace(truth, events=tuple(adopted)), out, len(strays))


def _batches(records: Sequence[Record], where: list[int | None], n_events: int, *, skip: Sequence[bool] = (),
             order: Sequence[tuple[Any, ...]] | None = None) -> tuple[list[list[Record]], list[Record]]:
    """The records per event (`where`: each record's event; None: a stray, judged with the last
    event that has records, as unexpected; `skip`: records placed later, not strays). The replay
    keeps each partition's order: a record that sits after a later event's record in its
    partition goes with that later event (a schema event sent late is late in the replay too).
    With `order` (each record's order key in its transaction), an event's records from several
    partitions are merged by it, each partition's own order kept: a capture read back from Kafka
    comes partition by partition."""
    latest: dict[tuple[str, int | None], int] = {}
    for n, r in enumerate(records):
        at = where[n]
        if at is None:
            continue
        part = (r.topic, r.partition)
        if at < latest.get(part, -1):
            where[n] = latest[part]
        else:
            latest[part] = at
    out: list[list[Record]] = [[] for _ in range(n_events)]
    members: list[dict[tuple[str, int | None], list[int]]] = [{} for _ in range(n_events)]
    strays: list[Record] = []
    for n, r in enumerate(records):
        at = where[n]
        if at is not None:
            members[at].setdefault((r.topic, r.partition), []).append(n)
        elif not (skip and skip[n]):
            strays.append(r)
    for at, parts in enumerate(members):
        if order is None or len(parts) < 2:
            out[at] = [records[n] for n in sorted(n for ns in parts.values() for n in ns)]
        else:
            merged = heapq.merge(*parts.values(), key=lambda n: (sortable_order(order[n]), n))
            out[at] = [records[n] for n in merged]
    if strays and out:
        last = max((i for i, b in enumerate(out) if b), default=len(out) - 1)
        out[last] = out[last] + strays
    return out, strays


def _with_what_follows(records: Sequence[Record], placed: Sequence[ToolRecord], where: list[int | None]) -> None:
    """A record that goes with what follows it in its partition (`with_next`: a BOOTSTRAP; not one
    that names its event's position, as a MaxScale schema event does) goes with the event of the
    next record there that has one, a watermark made on its own schedule included (the nearest
    transaction alone would skip that watermark, and the partition's order would then push the
    watermark to a later event)."""
    following: dict[tuple[str, int | None], int] = {}
    for n in reversed(range(len(records))):
        part = (records[n].topic, records[n].partition)
        if placed[n].with_next and placed[n].tx is None and placed[n].position is None:
            if part in following:
                where[n] = following[part]
        elif (at := where[n]) is not None:
            following[part] = at


def _with_its_message(events: Sequence[Event], placed: Sequence[ToolRecord], where: list[int | None]) -> None:
    """A logical decoding message that names a transaction goes with it where that transaction
    emitted a message of its prefix; else with the first event, in order, that emitted one and has
    it still to take. (A non-transactional message given a transaction's id tells only so: the
    transaction's id is all it names, and a conforming capture never moves.)"""
    left = {i: Counter(m.prefix for m in e.messages) for i, e in enumerate(events)
            if isinstance(e, Transaction) and e.messages}
    if not left:
        return
    for n, p in enumerate(placed):
        if p.message is None or p.loose:
            continue
        i = where[n]
        if i is not None and left.get(i, Counter())[p.message] > 0:
            left[i][p.message] -= 1
            continue
        j = next((j for j in sorted(left) if left[j][p.message] > 0), None)
        if j is not None:
            where[n] = j
            left[j][p.message] -= 1


def _with_its_copies(records: Sequence[Record], placed: Sequence[ToolRecord], where: list[int | None]) -> None:
    """A record sent to every partition at once (a TiCDC BOOTSTRAP: `with_next`, placed by what
    follows it in its partition) goes, with all its copies, to the earliest event any copy follows:
    in a partition the table's rows never reach, what follows is a later event's. The k-th
    occurrence of the same message in each partition of a topic are the copies of one sending."""
    seen: Counter[tuple[str, int | None, bytes | None]] = Counter()
    groups: dict[tuple[str, bytes | None, int], list[int]] = defaultdict(list)
    for n, r in enumerate(records):
        if not placed[n].with_next or placed[n].tx is not None or placed[n].position is not None:
            continue
        k = seen[(r.topic, r.partition, r.value)]
        seen[(r.topic, r.partition, r.value)] += 1
        groups[(r.topic, r.value, k)].append(n)
    for members in groups.values():
        at = [e for e in (where[n] for n in members) if e is not None]
        if len(members) > 1 and at:
            for n in members:
                where[n] = min(at)


def _refused_statement(truth: Any) -> str | None:
    """The statement a server refused while replaying a workload, with its error (None: it took
    every one)."""
    if truth is None or truth.complete:
        return None
    bad = next((r for a in truth.applied for r in a.statements if r.error is not None), None)
    if bad is None:
        return truth.stopped or "a statement was refused"
    sql = bad.sql if len(bad.sql) <= 160 else bad.sql[:159] + "…"
    return f"{sql!r}: {bad.error}"


def _tx_order(tx: Any) -> tuple[int, ...]:
    """A sort key of a source transaction id (`ToolRecord.tx`) in its source's commit order."""
    if isinstance(tx, int) and not isinstance(tx, bool):
        return (0, tx)
    if isinstance(tx, str):
        g = Gtid.parse(tx)
        if g is not None:
            return (1, g.domain, g.sequence)
        tail = tx.rpartition(":")[2]
        if tail.isdigit():
            return (2, int(tail))
    return (3,)


def _row_of(r: Record, identify: Callable[[str, bytes | None, bytes | None], Any]) -> tuple[str, Any]:
    """A record's row for `join_rows`: its topic and entity (a row of a table with no key, or a
    record the identity cannot read, is one of its topic's rows taken in turn)."""
    ident = identify(r.topic, r.key, r.value)
    return (r.topic, ident[0] if ident is not None else None)


def _started_at_mark(truth: Workload, placed: Sequence[ToolRecord], mark: bool | None) -> bool:
    """Whether a deployment's tool that took no snapshot started where the file marks the lab's
    start (a connector with snapshot.mode=no_data started there) rather than running all along:
    its capture holds no more transactions than the file applied after the mark."""
    if mark is not None:
        return mark
    at = next((i for i, e in enumerate(truth.events) if isinstance(e, CaptureStart)), None)
    if at is None:
        return False
    after = sum(1 for e in truth.events[at:] if isinstance(e, Transaction) and e.changes)
    captured = {p.tx for p in placed if p.tx is not None and p.table is not None}
    return after < sum(1 for e in truth.events if isinstance(e, Transaction) and e.changes) and len(captured) <= after


def _place_tableless(suite: ProtocolSuite, events: Sequence[Event], records: Sequence[Record],
                     tx: Sequence[Any], event_of: dict[Any, int]) -> None:
    """A capture transaction no table names (a TRUNCATE's empty BEGIN/END) goes to the first event
    that makes such a transaction (`field_tableless`) between the events of the transactions
    around it in its partitions."""
    unnamed = [x for x in dict.fromkeys(tx) if x is not None and x != CAPTURE_START and x not in event_of]
    if not unnamed:
        return
    parts: dict[tuple[str, int | None], list[int]] = defaultdict(list)
    for n, r in enumerate(records):
        parts[(r.topic, r.partition)].append(n)
    taken = set(event_of.values())
    for x in unnamed:
        lo, hi = -1, len(events)
        for n in (n for n in range(len(records)) if tx[n] == x):
            row = parts[(records[n].topic, records[n].partition)]
            at = bisect.bisect_left(row, n)
            before = next((event_of[tx[m]] for m in reversed(row[:at]) if tx[m] in event_of), lo)
            lo = max(lo, before)
            hi = min(hi, next((event_of[tx[m]] for m in row[at + 1:] if tx[m] in event_of), hi))
        i = next((i for i in range(lo + 1, hi) if i not in taken and suite.field_tableless(events[i])), None)
        if i is not None:
            event_of[x] = i
            taken.add(i)


def _adopt(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, events: Sequence[Event],
           adopted: list[Event], by_event: Mapping[int, list[Record]]) -> None:
    """The workload's events take a deployment's ids: each joined event those of its records, the
    events between (DDL a capture cannot place) a GTID as far from the nearest joined
    transaction's as the workload's was (one session, one server: the deployment numbered them in
    the same steps), and every table version the identity the capture gives it."""
    tables: dict[tuple[str, str, int], dict[str, Any]] = {}
    for i, recs in sorted(by_event.items()):
        e = adopted[i]
        if not isinstance(e, (Transaction, Ddl)):
            continue
        ids = suite.field_ids(e, recs, options, registry)
        if ids is None:
            continue
        ts = ids.commit_ts if ids.commit_ts is not None else (
            tso(ids.time_ms, i & TSO_LOGICAL_MASK) if ids.time_ms is not None else e.commit_ts)
        e = replace(e, commit_ts=ts, position=ids.position if ids.position is not None else e.position)
        if isinstance(e, Ddl) and ids.sql is not None:
            e = replace(e, sql=ids.sql)
        adopted[i] = e
        for named, attrs in ids.tables:
            tables.setdefault((named.database, named.name, named.version), dict(attrs))
    _shift_positions(events, adopted, sorted(by_event))
    if tables:
        cache: dict[int, Table] = {}

        def deployed(table: Table) -> Table:
            got = cache.get(id(table))
            if got is None:
                attrs = tables.get((table.database, table.name, table.version))
                got = cache[id(table)] = replace(table, **attrs) if attrs else table
            return got

        for i, e in enumerate(adopted):
            adopted[i] = _with_tables(e, deployed)


def _with_tables(e: Event, t: Callable[[Table], Table]) -> Event:
    """The event with every table version it names through `t`."""
    if isinstance(e, Transaction):
        return replace(e, changes=tuple(replace(c, table=t(c.table)) for c in e.changes))
    if isinstance(e, Ddl):
        return replace(e, table=None if e.table is None else t(e.table),
                       pre_table=None if e.pre_table is None else t(e.pre_table))
    if isinstance(e, CaptureStart):
        return replace(e, tables=tuple((t(tb), rows) for tb, rows in e.tables))
    return e


def _ddl_table(suite: ProtocolSuite, d: Ddl) -> tuple[str, str] | None:
    t = d.table or d.pre_table
    return suite.record_table(t.database, t.name) if t is not None else None


def _shift_positions(events: Sequence[Event], adopted: list[Event], joined: Sequence[int]) -> None:
    """The GTID of every event that was not joined (DDL, transactions the capture lacks): the
    workload's, moved as far as the nearest joined transaction before it moved (after it, for
    events before the first)."""
    if not joined:
        return
    moves: list[tuple[int, Gtid, Gtid]] = []
    for i in joined:
        was, now = _gtid(events[i]), _gtid(adopted[i])
        if was is not None and now is not None:
            moves.append((i, was, now))
    if not moves:
        return
    k = 0
    done = set(joined)
    for i, e in enumerate(events):
        if i in done or not isinstance(e, (Transaction, Ddl)):
            continue
        g = _gtid(e)
        if g is None:
            continue
        while k + 1 < len(moves) and moves[k + 1][0] < i:
            k += 1
        _, was, now = moves[k]
        moved = Gtid(now.domain, now.server_id, g.sequence + now.sequence - was.sequence)
        adopted[i] = replace(e, position=str(moved))


def _gtid(e: Event) -> Gtid | None:
    pos = getattr(e, "position", None)
    return Gtid.parse(pos) if isinstance(pos, str) else None


def replay_encoder(suite: ProtocolSuite, joined: Joined, label: str, stop: EncoderError | None = None
                   ) -> EncoderInfo:
    """An encoder that hands the run, event by event, what the capture holds for that event (and
    `stop`, raised after its last record: the tool's own stop, `refused_end`)."""
    run = ToolRun(SimpleNamespace(workload=joined.workload, truth=None), joined.batches, stop)
    return EncoderInfo(f"{suite.name}/capture", suite.name, EncoderKind.EXTERNAL,
                       lambda: ReplayEncoder(run, suite.name), description=f"the capture's records of {label}",
                       replays_capture=True)


class ReplaySubjects:
    """The capture's registry as the replay sees it, read only: the replay puts its records on
    topics of its own prefix, so a subject registered under the capture's topic (a deployment's,
    or a run's with that run's prefix) is named under the replay's, both ways."""

    def __init__(self, registry: Any, replay_prefix: str, capture_prefix: str) -> None:
        self._registry = registry
        self._replay = replay_prefix
        self._capture = capture_prefix

    def _replayed(self, subject: str) -> str:
        return self._replay + subject[len(self._capture):] if subject.startswith(self._capture) else subject

    def _captured(self, subject: str) -> str:
        return self._capture + subject[len(self._replay):] if subject.startswith(self._replay) else subject

    def subjects_for_id(self, schema_id: int, *, fresh: bool = False) -> list[tuple[str, int]]:
        try:
            pairs = self._registry.subjects_for_id(schema_id, fresh=fresh)
        except TypeError:  # a registry object without the `fresh` switch
            pairs = self._registry.subjects_for_id(schema_id)
        return [(self._replayed(s), v) for s, v in pairs]

    def subjects(self) -> list[str]:
        return [self._replayed(s) for s in self._registry.subjects()]

    def versions(self, subject: str) -> list[int]:
        return list(self._registry.versions(self._captured(subject)))

    def version(self, subject: str, version: int | str = "latest") -> Any:
        return self._registry.version(self._captured(subject), version)

    def register(self, subject: str, schema: str) -> int:
        raise RegistryError(f"a capture's registry is read, not written (the replay registered {subject!r})")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._registry, name)


def refused_end(suite: ProtocolSuite, options: Mapping[str, str], joined: Joined, prefix: str, partitions: int
                ) -> EncoderError | None:
    """Where the capture of a refused table ends as the tool's stop (a TiCDC changefeed's error
    state): the level the options name refuses a table's new schema at some event (the
    reference's registrations predicted, as the run's gate predicts them) and the capture holds no
    record of that table from there on. None where nothing is refused or the tool went on (the
    registry checks then judge what it did)."""
    from .compatibility import predict

    level = suite.registry_level(options)
    if level is None:
        return None
    r = predict(suite, joined.workload, options, prefix, level, partitions=max(1, partitions)).refusal
    if r is None:
        return None
    if any(r.subject in suite.topic_subjects(prefix + x.topic) for b in joined.batches[r.event:] for x in b):
        return None
    return EncoderError(f"the capture holds no record of {r.table} from event {r.event} on, where the registry at "
                        f"{level} refuses its new schema ({r.change}): the tool stopped there")


def check_units(suite: ProtocolSuite, options: dict[str, str], registry: Any, units: Sequence[Unit],
                into: ComboResult, *, upstream: Any = None, since: str | None = None,
                progress: Callable[[int], None] | None = None) -> list[str]:
    """Judge every unit as a run judges one workload (into `into`); notes for the report. With
    `since`, `upstream` is the server the deployment read, the file already applied to it: the
    truth is its log from that position, ids and all (`Upstream.logged_since`)."""
    from .run import run_in_memory

    notes: list[str] = []
    truths = [u.exported.workload if u.from_run else with_databases(u.exported.workload, u.exported.databases)
              for u in units]
    logged: list[Any] = []
    if since is not None:
        logged, said = upstream.logged_since(since, [(t, list(u.exported.databases.values()))
                                                     for t, u in zip(truths, units, strict=True)])
        notes += said
    for n, u in enumerate(units, 1):
        truth = truths[n - 1]
        foreign = False  # the truth is a server's (its ids), not the file's model
        if logged:
            truth = logged[n - 1].workload
        elif upstream is not None:
            captured = upstream.run_workload(truth)
            refused = _refused_statement(captured.truth)
            if refused is None:
                truth, foreign = captured.workload, True  # what the server's log says it did
            else:
                notes.append(f"{u.label}: {upstream.describe()} could not replay it ({refused}): judged against "
                             "the file's own model instead (a statement of another dialect: export with "
                             "--upstream of this family to replay every workload)")
        if suite.field_joins_rows:
            joined = join_rows(suite, options, registry, truth, u.records, deployed=not u.from_run,
                               foreign_truth=foreign)
        else:
            joined = join(suite, options, registry, truth, u.records, deployed=not u.from_run,
                          foreign_truth=foreign, placed=u.placed, ids_known=bool(logged))
        if joined.unjoined:
            notes.append(f"{u.label}: {joined.unjoined} record(s) belong to no transaction of the workload "
                         "(judged as unexpected)")
        if joined.own_schedule:
            notes.append(f"{u.label}: {joined.own_schedule} record(s) the deployment made on its own schedule "
                         "(watermarks) are judged with the capture alone")
        parts = max((r.partition or 0 for r in u.records), default=-1) + 1
        seen, stop = registry, None
        if registry is not None:
            prefix = unit_prefix("f", 0, u.exported.shard)
            seen = ReplaySubjects(registry, prefix, u.label + "-" if u.from_run and UNIT_PREFIX.match(u.label + "-")
                                  else "")
            stop = refused_end(suite, options, joined, prefix, parts)
        run_in_memory(suite, replay_encoder(suite, joined, u.label, stop), options, seen, joined.workload,
                      seed=u.exported.seed, shard=u.exported.shard, run_id="f", into=into,
                      partitions=parts if parts > 0 else None)
        if progress is not None:
            progress(n)
    return notes
