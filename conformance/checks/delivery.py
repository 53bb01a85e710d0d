"""Delivery: what reached the log, judged against what the workload says should have.

The anomaly taxonomy is data (like Elle's): each anomaly says what it is, whether at-least-once
delivery allows it, what it implies, who must act, and which checks report it. The analysis
(`analyse`) is a pure function over three accounts of the same messages:

* **expected** — per entity (a table row, by key), its versions in commit order, from the
  generated workload (the source truth);
* **sent** — what the sink handed to the producer and what the broker answered (the offset
  it acknowledged, or the error);
* **log** — what a consumer finds in each partition, in offset order, and which offsets the
  broker no longer holds (the embedded broker keeps only the newest ~5 MiB per partition).

A version missing from the log is `lost` only when nobody else can explain it: if the broker
acknowledged a copy that is not in the log, that is a *broker* anomaly and the version is
`unknown`; if retention removed the offsets it may have had, it is `unknown` too. A checker
never guesses a pass: what it cannot decide it says it cannot decide (`delivery.no-loss` is
not-applicable for a topic with unknown rows and none lost, and says how many and why).

Without the workload (a captured or live topic) `analyse_log` judges what the log alone can
tell, from each message's (entity, match, commit ts): per partition (or, with
`ts_scope="entity"`, per entity in it: `TsScope`), first-seen messages never go back in commit
ts; an entity's first-seen messages never go back in commit ts; an entity's
messages sit in one partition. A message with a commit ts whose (entity, match) was seen before
in its partition is a duplicate (at-least-once allows it), never a reorder; one without a commit
ts is neither (its content may repeat as a new version). Loss and strays need the workload.

The watermark anomalies are judged by the protocols' own stream checks, which see the
watermark messages themselves: `ticdc-simple.order.watermark` (WATERMARK) and
`ticdc-avro.watermark.order` (checkpoint records, with `avro-enable-watermark=true`). A
transaction only partly delivered at a watermark shows there as its remaining rows arriving
after the watermark (a late event), or, if they never arrive, as `delivery.no-loss`.
"""

from __future__ import annotations

import enum
import operator
from collections import Counter, defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from .registry import COMMON, Actor, CheckSpec, Failure, Level, Location, NotApplicable, Scope, Verdict, check


class Anomaly(enum.StrEnum):
    LOST = "lost"
    DUPLICATED = "duplicated"
    REORDERED_WITHIN_KEY = "reordered-within-key"
    KEY_IN_SEVERAL_PARTITIONS = "key-in-several-partitions"
    COMMIT_TS_REGRESSION = "commit-ts-regression"
    PARTIAL_TRANSACTION_AT_WATERMARK = "partial-transaction-at-watermark"
    LATE_EVENT_AFTER_WATERMARK = "late-event-after-watermark"
    UNEXPECTED = "unexpected"
    BROKER_LOST_ACK = "broker-lost-ack"
    RETENTION = "retention"


@dataclass(frozen=True, slots=True)
class AnomalyKind:
    name: Anomaly
    description: str
    allowed_at_least_once: bool
    actor: Actor
    implies: tuple[Anomaly, ...] = ()


TAXONOMY: Mapping[Anomaly, AnomalyKind] = {k.name: k for k in (
    AnomalyKind(Anomaly.LOST, "a row change the workload made never reached the log", False, Actor.ENCODER),
    AnomalyKind(Anomaly.DUPLICATED, "a row change reached the log more than once (replay after a restart)",
                True, Actor.ENCODER),
    AnomalyKind(Anomaly.REORDERED_WITHIN_KEY, "a key's versions first appear out of commit order in its partition",
                False, Actor.ENCODER, implies=(Anomaly.COMMIT_TS_REGRESSION,)),
    AnomalyKind(Anomaly.KEY_IN_SEVERAL_PARTITIONS, "one key's changes were sent to more than one partition, so "
                "no consumer can rely on their order", False, Actor.ENCODER),
    AnomalyKind(Anomaly.COMMIT_TS_REGRESSION, "in a partition, a first-seen message has a smaller commit ts than "
                "one before it (of the same table, where tables share the partition)", False, Actor.ENCODER),
    AnomalyKind(Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK, "a watermark was sent while only part of a transaction "
                "below it had reached the partition", False, Actor.ENCODER),
    AnomalyKind(Anomaly.LATE_EVENT_AFTER_WATERMARK, "a row change with commit ts <= a watermark arrived after that "
                "watermark in the same partition", False, Actor.ENCODER),
    AnomalyKind(Anomaly.UNEXPECTED, "a message matches no row change of the workload", False, Actor.ENCODER),
    AnomalyKind(Anomaly.BROKER_LOST_ACK, "the broker acknowledged a message (with an offset) that the log does not "
                "hold: a broker gap, not the encoder's loss", True, Actor.INFRASTRUCTURE),
    AnomalyKind(Anomaly.RETENTION, "the broker no longer holds the oldest offsets of a partition; what they held "
                "cannot be judged", True, Actor.INFRASTRUCTURE),
)}


# -- inputs -------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Version:
    """One expected message of an entity: `seq` orders an entity's versions (commit order);
    `ts` is the commit ts when the protocol carries it; `match` is what identifies the version
    in a decoded message (e.g. the commit ts and op, or the row image)."""

    entity: Hashable
    seq: int
    match: Hashable
    ts: int | None = None
    topic: str | None = None  # where the version should appear
    # Other matches a message of this version may carry, where the protocol's output depends on
    # what the analysis cannot know (e.g. a schema the tool built from a catalog that had moved on).
    alternates: tuple[Hashable, ...] = ()

    @property
    def matches(self) -> tuple[Hashable, ...]:
        return (self.match, *self.alternates)


class LogEntry(NamedTuple):
    """A decoded message as it sits in the log (a tuple: a check keeps one for every row message
    until its topic is judged, and makes one per message in its loop)."""

    topic: str
    partition: int
    offset: int
    entity: Hashable | None  # None: could not be attributed (undecodable, unknown table…)
    match: Hashable | None
    ts: int | None = None
    fingerprint: Hashable | None = None  # e.g. hash of key + value bytes


#: A `LogEntry`'s seven fields in a plain tuple, which is what a long log keeps: the collector
#: stops tracking a plain tuple of atomic values the first time it meets one, while a tuple
#: subclass (a NamedTuple) stays tracked, and every later collection walks it again (a capture's
#: hundreds of thousands of entries, held until their topic is judged). `analyse_log` reads
#: either by position.
LogRow = tuple[str, int, int, Hashable | None, Hashable | None, int | None, Hashable | None]


#: What commit-ts order a partition promises: "partition", all its row messages (a protocol
#: whose topic holds one table: TiCDC Avro, whose subjects are per topic); "entity", each
#: entity's messages (TiCDC Simple, whose entity is a table: TiCDC orders each table's events,
#: while tables that share a partition interleave, as tiflow's consumer expects, keeping one
#: high watermark per table and partition).
TsScope = Literal["partition", "entity"]
_SCOPE_WORDS: Mapping[str, str] = {"partition": "", "entity": " of the same table"}


@dataclass(frozen=True, slots=True)
class Sent:
    """A message the sink produced and what the broker answered."""

    entity: Hashable | None
    match: Hashable | None
    topic: str
    partition: int | None
    offset: int | None  # acknowledged offset, if the broker gave one
    error: str | None = None
    fingerprint: Hashable | None = None
    acked: bool | None = None  # None: acked iff an offset was given


@dataclass(slots=True)
class Finding:
    anomaly: Anomaly
    entity: Hashable | None
    detail: str
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    hint: str | None = None

    @property
    def kind(self) -> AnomalyKind:
        return TAXONOMY[self.anomaly]


@dataclass(slots=True)
class DeliveryReport:
    findings: list[Finding] = field(default_factory=list)
    expected: int = 0  # 0 without the workload: nothing is expected then, only observed
    delivered: int = 0  # versions (without the workload: distinct row messages) in the log
    unknown: int = 0  # versions whose fate the log cannot tell (retention, broker gaps)
    unknown_reasons: Counter[str] = field(default_factory=Counter)  # why, with how many each
    duplicates: int = 0  # copies beyond the first (at-least-once replays)
    with_ts: int = 0  # distinct messages that carry a commit ts (without the workload)
    unattributed: int = 0  # messages no entity could be read from (without the workload)

    def of(self, anomaly: Anomaly) -> list[Finding]:
        return [f for f in self.findings if f.anomaly is anomaly]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for f in self.findings:
            out[f.anomaly.value] += 1
        return dict(out)


# -- analysis -----------------------------------------------------------------------------------

def analyse(expected: Iterable[Version], log: Iterable[LogEntry], sent: Iterable[Sent] = (),
            low_watermarks: Mapping[tuple[str, int], int] | None = None, *,
            ts_scope: TsScope = "partition") -> DeliveryReport:
    """Judge the log against the workload (see the module docstring); `ts_scope` says what
    commit-ts order a partition promises (`TsScope`)."""
    lows = dict(low_watermarks or {})
    rep = DeliveryReport()
    by_entity: dict[Hashable, list[Version]] = defaultdict(list)
    for v in expected:
        by_entity[v.entity].append(v)
    seen: dict[Version, list[LogEntry]] = {}
    # (entity, match) -> versions with that content, in commit order: several versions may look
    # alike (a key deleted twice; no commit ts in the message) and are told apart by order.
    index: dict[tuple[Hashable, Hashable], list[Version]] = defaultdict(list)
    for ent, vs in by_entity.items():
        vs.sort(key=lambda v: v.seq)
        for v in vs:
            for m in v.matches:
                index[(ent, m)].append(v)

    # (entity, topic, partition) -> seq of the version the entity's last message there was
    last_seen: dict[tuple[Hashable, str, int], int] = {}

    def attribute(e: LogEntry, next_anchor: int | None) -> Version | None:
        """Which version a message is. Look-alikes (the same match: a key's tombstones, or two
        changes of a row in one transaction) are told apart by where they sit in the partition:
        between the entity's last version there (n) and its next message that is no look-alike
        (version m), a look-alike is the first one not seen yet in (n, m) — the versions between
        that never arrived are missing, not late — or else a copy of one already seen in [n, m)
        (a retried or replayed copy). Outside that window: the first not seen yet, else the
        latest (a duplicate). When the partition keeps the entity's order this is exact; when it
        does not, the order checks fail anyway."""
        cands = index.get((e.entity, e.match)) if e.entity is not None else None
        if not cands:
            return None
        if len(cands) == 1:
            return cands[0]
        lo = last_seen.get((e.entity, e.topic, e.partition), -1)
        hi = next_anchor if next_anchor is not None and next_anchor > lo else None
        window = [v for v in cands if v.seq >= lo and (hi is None or v.seq < hi)]
        fresh = next((v for v in window if v.seq > lo and v not in seen), None)
        if fresh is not None:
            return fresh
        if window:
            return window[-1]  # all seen: a copy
        unseen = [v for v in cands if v not in seen]
        return unseen[0] if unseen else cands[-1]

    rep.expected = sum(len(vs) for vs in by_entity.values())

    # Where every version was seen (in log order per partition, partitions one after another).
    logs: dict[tuple[str, int], list[LogEntry]] = defaultdict(list)
    for e in log:
        logs[(e.topic, e.partition)].append(e)
    log_fingerprints: dict[tuple[str, int, int], Hashable | None] = {}
    first_entries: set[int] = set()  # ids of entries that are their version's first occurrence
    for entries in logs.values():
        entries.sort(key=lambda e: e.offset)
        # For each message, the version of its entity's next message that is no look-alike.
        anchors: dict[int, int | None] = {}
        upcoming: dict[Hashable, int] = {}
        for e in reversed(entries):
            anchors[id(e)] = upcoming.get(e.entity)
            cands = index.get((e.entity, e.match)) if e.entity is not None else None
            if cands and len(cands) == 1:
                upcoming[e.entity] = cands[0].seq
        for e in entries:
            log_fingerprints[(e.topic, e.partition, e.offset)] = e.fingerprint
            matched = attribute(e, anchors[id(e)])
            if matched is None:
                rep.findings.append(Finding(Anomaly.UNEXPECTED, e.entity, "matches no row change of the workload",
                                            e.topic, e.partition, e.offset))
            else:
                occ = seen.setdefault(matched, [])
                if not occ:
                    first_entries.add(id(e))
                occ.append(e)
                last_seen[(e.entity, e.topic, e.partition)] = matched.seq

    # Broker: acknowledged offsets the log does not hold (or holds something else at).
    broker_gap: set[tuple[Hashable, Hashable]] = set()
    acked_no_offset: set[tuple[Hashable, Hashable]] = set()
    for s in sent:
        acked = s.offset is not None if s.acked is None else s.acked
        if not acked:
            continue
        if s.offset is None or s.partition is None:
            # Acknowledged without an offset (seen with idempotent producers while leadership
            # moves): whether it is in the log cannot be told by offset; judged below by content.
            acked_no_offset.add((s.entity, s.match))
            continue
        low = lows.get((s.topic, s.partition), 0)
        if s.offset < low:
            continue  # retention removed it: not a broker gap
        key3 = (s.topic, s.partition, s.offset)
        if key3 not in log_fingerprints or (s.fingerprint is not None and log_fingerprints[key3] is not None
                                            and log_fingerprints[key3] != s.fingerprint):
            rep.findings.append(Finding(Anomaly.BROKER_LOST_ACK, s.entity,
                                        f"acknowledged at offset {s.offset}, not in the log", s.topic, s.partition,
                                        s.offset))
            broker_gap.add((s.entity, s.match))
    retained = {tp for tp, low in lows.items() if low > 0}
    for tp in sorted(retained):
        rep.findings.append(Finding(Anomaly.RETENTION, None, f"offsets below {lows[tp]} are gone", tp[0], tp[1]))
    removed: dict[str, str] = {}  # topic -> which offsets retention removed, in words
    for t, p in sorted(retained):
        span = f"offsets 0-{lows[(t, p)] - 1} of partition {p}"
        removed[t] = f"{removed[t]}, {span}" if t in removed else span

    for ent, vs in by_entity.items():
        partitions = sorted({(e.topic, e.partition) for v in vs for e in seen.get(v, ())})
        if len(partitions) > 1:
            rep.findings.append(Finding(Anomaly.KEY_IN_SEVERAL_PARTITIONS, ent,
                                        f"seen in {', '.join(f'{t}[{p}]' for t, p in partitions)}"))
        for v in vs:
            occ = seen.get(v, [])
            if occ:
                rep.delivered += 1
                if len(occ) > 1:
                    rep.duplicates += len(occ) - 1
                    rep.findings.append(Finding(Anomaly.DUPLICATED, ent, f"version {v.seq} seen {len(occ)} times",
                                                occ[1].topic, occ[1].partition, occ[1].offset))
                continue
            gap = any((ent, m) in broker_gap for m in v.matches)
            if gap or any((ent, m) in acked_no_offset for m in v.matches):
                if not gap:
                    rep.findings.append(Finding(Anomaly.BROKER_LOST_ACK, ent,
                                                f"version {v.seq} acknowledged without an offset, not in the log"))
                rep.unknown += 1
                rep.unknown_reasons["the broker acknowledged it but the log does not hold it (a broker gap)"] += 1
                continue
            if v.topic in removed:
                rep.unknown += 1  # it may have sat in the offsets retention removed
                rep.unknown_reasons[f"retention removed {removed[v.topic]}"] += 1
                continue
            rep.findings.append(Finding(Anomaly.LOST, ent, f"version {v.seq} (commit ts {v.ts}) never reached the log"))

        # Order of first occurrences, per partition.
        for tp in partitions:
            firsts = []
            for v in vs:
                first = next((e for e in seen.get(v, []) if (e.topic, e.partition) == tp), None)
                if first is not None:
                    firsts.append((first.offset, v))
            firsts.sort(key=lambda x: x[0])
            best = -1
            for off, v in firsts:
                if v.seq < best:
                    rep.findings.append(Finding(Anomaly.REORDERED_WITHIN_KEY, ent,
                                                f"version {v.seq} first appears after version {best}",
                                                tp[0], tp[1], off))
                best = max(best, v.seq)

    # Commit ts per partition (or per entity in it), first occurrences only (replays after
    # restarts are duplicates).
    for (topic, part), entries in logs.items():
        max_ts: dict[Hashable, int] = {}
        for e in entries:
            if e.ts is None or id(e) not in first_entries:
                continue
            scope = _scope_of(e, ts_scope)
            top = max_ts.get(scope)
            if top is not None and e.ts < top:
                rep.findings.append(Finding(Anomaly.COMMIT_TS_REGRESSION, e.entity,
                                            f"commit ts {e.ts} after {top}{_SCOPE_WORDS[ts_scope]}", topic, part,
                                            e.offset))
            max_ts[scope] = e.ts if top is None else max(top, e.ts)
    return rep


def delivery_checks(protocol: str) -> list[CheckSpec]:
    """The checks a topic's `DeliveryEvidence` feeds: the protocol-independent stream checks
    (these, and those that other modules register the same way), the same for every `protocol`."""
    return [s for s in COMMON.specs() if s.scope is Scope.STREAM]


def _scope_of(e: LogEntry, ts_scope: TsScope) -> Hashable:
    return e.entity if ts_scope == "entity" else None


_OFFSET = operator.itemgetter(2)  # a LogEntry's offset
_NO_TOP: tuple[None, int] = (None, 0)  # `analyse_log`: no commit ts seen yet in a scope


def analyse_log(log: Iterable[LogRow], starts: Mapping[tuple[str, int], int] | None = None, *,
                ts_scope: TsScope = "partition") -> DeliveryReport:
    """What the log alone can tell, without the workload (see the module docstring).

    `starts` gives, per (topic, partition), the first offset the log was read from (default: the
    smallest offset given): below it, a replayed copy's original cannot be seen, so a finding
    there says that it may be a replay rather than a reorder."""
    rep = DeliveryReport()
    logs: dict[tuple[str, int], list[LogRow]] = {}
    run: list[LogRow] = []
    run_topic: str | None = None
    run_part: int | None = None
    for e in log:  # a partition's messages mostly come in a run: its list is looked up once a run
        if e[1] != run_part or e[0] != run_topic:
            run_topic, run_part = e[0], e[1]
            run = logs.setdefault((run_topic, run_part), [])
        run.append(e)
    # (topic, entity) -> partition -> offset of its first message there
    where: dict[tuple[str, Hashable], dict[int, int]] = defaultdict(dict)
    per_entity = ts_scope == "entity"
    for (topic, part), entries in sorted(logs.items(), key=lambda kv: (kv[0][0], kv[0][1])):
        entries.sort(key=_OFFSET)
        start = (starts or {}).get((topic, part), entries[0][2])
        hint = (f"offsets below {start} of this partition were not read: if this message repeats one of them (a "
                "replay after a restart), it is a duplicate, not a reorder") if start > 0 else None
        copies: dict[tuple[Hashable, ...], int] = {}
        # entity -> (largest first-seen commit ts, its offset), where each entity is a scope (`ts_scope` "entity")
        scope_max: dict[Hashable, tuple[int, int]] = {}
        key_max: dict[Hashable, list[int]] = {}  # entity -> [largest first-seen commit ts, its offset]
        first_at: dict[Hashable, int] = {}  # entity -> offset of its first message in this partition
        # The partition's scope (`ts_scope` "partition"): its largest first-seen commit ts and that
        # message's offset, in two locals (`scope_max` keeps the entities' where the scope is each).
        part_ts: int | None = None
        part_offset = 0
        unattributed = delivered = duplicates = 0  # delivered: without a commit ts
        for _t, _p, offset, entity, match, ts, fingerprint in entries:
            if entity is None:
                unattributed += 1
                continue
            if entity not in first_at:
                first_at[entity] = offset
            if ts is None:
                # Without a commit ts the same content may well be a new version (a key deleted
                # again: the same tombstone): neither de-duplicated nor ordered.
                delivered += 1
                continue
            # A message whose version cannot be read (match None) is told apart by its bytes.
            ident: tuple[Hashable, ...] = ((entity, match) if match is not None
                                           else (entity, None, fingerprint or offset))
            if ident in copies:
                copies[ident] += 1
                duplicates += 1  # a replayed copy: allowed, and never judged as a reorder
                continue
            copies[ident] = 1  # a first copy with a commit ts: delivered (counted below, by `copies`)
            # The scope's largest first-seen commit ts so far, and its message's offset.
            if per_entity:
                top_ts, top_offset = scope_max.get(entity, _NO_TOP)
                if top_ts is None or ts >= top_ts:
                    scope_max[entity] = (ts, offset)
            else:
                top_ts, top_offset = part_ts, part_offset
                if top_ts is None or ts >= top_ts:
                    part_ts, part_offset = ts, offset
            if top_ts is not None and ts < top_ts:
                rep.findings.append(Finding(Anomaly.COMMIT_TS_REGRESSION, entity,
                                            f"commit ts {ts} after {top_ts}{_SCOPE_WORDS[ts_scope]} (offset "
                                            f"{top_offset})", topic, part, offset, hint))
            prev = key_max.get(entity)
            if prev is None:
                key_max[entity] = [ts, offset]
            elif ts >= prev[0]:
                prev[0], prev[1] = ts, offset  # in place: no pair made per message
            else:
                rep.findings.append(Finding(Anomaly.REORDERED_WITHIN_KEY, entity,
                                            f"commit ts {ts} first appears after commit ts {prev[0]} of the same key "
                                            f"(offset {prev[1]})", topic, part, offset, hint))
        rep.unattributed += unattributed
        rep.delivered += delivered + len(copies)
        rep.duplicates += duplicates
        rep.with_ts += len(copies)
        for ident, n in copies.items():
            if n > 1:
                rep.findings.append(Finding(Anomaly.DUPLICATED, ident[0], f"seen {n} times", topic, part))
        for entity, offset in first_at.items():
            where[(topic, entity)][part] = offset
    for (topic, ent), parts in where.items():
        if len(parts) > 1:
            rep.findings.append(Finding(Anomaly.KEY_IN_SEVERAL_PARTITIONS, ent, "seen in " + ", ".join(
                f"{topic}[{p}] (first at offset {off})" for p, off in sorted(parts.items())), topic))
    return rep


# -- the checks -----------------------------------------------------------------------------------

@dataclass(slots=True)
class DeliveryEvidence:
    """One topic's delivery report (the log of all its partitions against the workload, or,
    with `with_source` off, the log alone: see `analyse_log`)."""

    topic: str
    report: DeliveryReport
    has_commit_ts: bool = True
    has_watermarks: bool = False
    with_source: bool = True


CLAUSE = "seed 000 / notes §3.5 (at-least-once: duplicates after restarts, never loss); DESIGN delivery taxonomy"
NO_COMMIT_TS = "the messages carry no commit ts (without the workload, order is judged by commit ts)"


def _failures(ev: DeliveryEvidence, anomaly: Anomaly, limit: int = 50) -> list[Failure]:
    kind = TAXONOMY[anomaly]
    out = []
    for f in ev.report.of(anomaly)[:limit]:
        out.append(Failure(f"{anomaly.value}: {f.detail}", expected=kind.description, actual=f.detail,
                           location=Location(topic=f.topic or ev.topic, partition=f.partition, offset=f.offset),
                           hint=f.hint, actor=kind.actor))
    return out


def _unknown(ev: DeliveryEvidence) -> str:
    rep = ev.report
    why = "; ".join(f"{n} because {reason}" for reason, n in rep.unknown_reasons.most_common())
    return (f"{ev.topic}: {rep.unknown} of {rep.expected} row change(s) unknown ({why or 'the log cannot tell'}); "
            f"not judged, so no-loss is not claimed for this topic ({rep.delivered} delivered)")


def _order_undecidable(ev: DeliveryEvidence) -> NotApplicable | None:
    if ev.with_source:
        return NotApplicable("nothing delivered") if ev.report.delivered == 0 else None
    if not ev.has_commit_ts:
        return NotApplicable(NO_COMMIT_TS)
    if ev.report.with_ts == 0:
        return NotApplicable("no row message with a commit ts in the topic")
    return None


@check("delivery.no-loss", level=Level.MUST, scope=Scope.STREAM, clause=CLAUSE, needs_source=True,
       anomalies=(Anomaly.LOST, Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK))
def no_loss(ev: DeliveryEvidence) -> Verdict:
    """Every row change of the workload reaches the log (retention and broker gaps: unknown, not
    lost; a topic with unknown rows and none lost is not-applicable, never passed)."""
    if ev.report.expected == 0:
        return NotApplicable("no row change expected in this topic")
    lost = _failures(ev, Anomaly.LOST)
    if lost:
        return lost
    if ev.report.unknown:
        return NotApplicable(_unknown(ev))
    return None


@check("delivery.no-strays", level=Level.MUST, scope=Scope.STREAM, clause=CLAUSE, needs_source=True,
       anomalies=(Anomaly.UNEXPECTED,))
def no_strays(ev: DeliveryEvidence) -> Verdict:
    """Every message in the log is a row change of the workload (no phantom rows)."""
    return _failures(ev, Anomaly.UNEXPECTED) or None


@check("delivery.per-key-order", level=Level.MUST, scope=Scope.STREAM, clause=CLAUSE,
       anomalies=(Anomaly.REORDERED_WITHIN_KEY,))
def per_key_order(ev: DeliveryEvidence) -> Verdict:
    """A key's versions first appear in commit order (replays of older versions are duplicates).
    Without the workload: a key's first-seen messages never go back in commit ts."""
    return _order_undecidable(ev) or _failures(ev, Anomaly.REORDERED_WITHIN_KEY) or None


@check("delivery.one-partition-per-key", level=Level.MUST, scope=Scope.STREAM, clause=CLAUSE,
       anomalies=(Anomaly.KEY_IN_SEVERAL_PARTITIONS,))
def one_partition_per_key(ev: DeliveryEvidence) -> Verdict:
    """All changes of one key go to one partition (otherwise no consumer can keep their order)."""
    if ev.report.delivered == 0:
        return NotApplicable("nothing delivered" if ev.with_source else "no row message could be attributed to a key")
    return _failures(ev, Anomaly.KEY_IN_SEVERAL_PARTITIONS) or None


@check("delivery.commit-ts-order", level=Level.MUST, scope=Scope.STREAM, clause=CLAUSE,
       anomalies=(Anomaly.COMMIT_TS_REGRESSION,))
def commit_ts_order(ev: DeliveryEvidence) -> Verdict:
    """In each partition, first-seen messages never go back in commit ts (per table where the
    protocol puts several tables in one partition: TiCDC orders each table's events, and tables
    sharing a partition interleave)."""
    if not ev.has_commit_ts:
        return NotApplicable("the messages carry no commit ts")
    return _order_undecidable(ev) or _failures(ev, Anomaly.COMMIT_TS_REGRESSION) or None


@check("infra.broker-acks", level=Level.INFO, scope=Scope.STREAM, clause="DESIGN measured facts "
       "(the embedded broker can acknowledge messages it does not keep; retention keeps ~5 MiB per partition)",
       needs_source=True, anomalies=(Anomaly.BROKER_LOST_ACK, Anomaly.RETENTION))
def broker_acks(ev: DeliveryEvidence) -> Verdict:
    """What the broker acknowledged is in the log; offsets the broker dropped are reported, never
    charged to the encoder (the rows they held are unknown)."""
    return (_failures(ev, Anomaly.BROKER_LOST_ACK) + _failures(ev, Anomaly.RETENTION)) or None
