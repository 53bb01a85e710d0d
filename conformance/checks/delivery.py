"""Delivery: what reached the log, judged against what the workload says should have.

The anomaly taxonomy is data (like Elle's): each anomaly says what it is, whether at-least-once
delivery allows it, what it implies, and who must act. The analysis is a pure function over
three accounts of the same messages:

* **expected** — per entity (a table row, by key), its versions in commit order, from the
  generated workload (the source truth);
* **sent** — what the sink handed to the producer and what the broker answered (the offset
  it acknowledged, or the error);
* **log** — what a consumer finds in each partition, in offset order, and which offsets the
  broker no longer holds (the embedded broker keeps only the newest ~5 MiB per partition).

A version missing from the log is `lost` only when nobody else can explain it: if the broker
acknowledged a copy that is not in the log, that is a *broker* anomaly and the version is
`unknown`; if retention removed the offsets it may have had, it is `unknown` too. A checker
never guesses a pass: what it cannot decide it says it cannot decide.
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .registry import Actor, Failure, Level, Location, NotApplicable, Scope, Verdict, check


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
                "one before it", False, Actor.ENCODER),
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


@dataclass(frozen=True, slots=True)
class LogEntry:
    """A decoded message as it sits in the log."""

    topic: str
    partition: int
    offset: int
    entity: Hashable | None  # None: could not be attributed (undecodable, unknown table…)
    match: Hashable | None
    ts: int | None = None
    fingerprint: Hashable | None = None  # e.g. hash of key + value bytes


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

    @property
    def kind(self) -> AnomalyKind:
        return TAXONOMY[self.anomaly]


@dataclass(slots=True)
class DeliveryReport:
    findings: list[Finding] = field(default_factory=list)
    expected: int = 0
    delivered: int = 0
    unknown: int = 0  # versions whose fate the log cannot tell (retention, broker gaps)

    def of(self, anomaly: Anomaly) -> list[Finding]:
        return [f for f in self.findings if f.anomaly is anomaly]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for f in self.findings:
            out[f.anomaly.value] += 1
        return dict(out)


# -- analysis -----------------------------------------------------------------------------------

def analyse(expected: Iterable[Version], log: Iterable[LogEntry], sent: Iterable[Sent] = (),
            low_watermarks: Mapping[tuple[str, int], int] | None = None) -> DeliveryReport:
    """Judge the log against the workload (see the module docstring)."""
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
            index[(ent, v.match)].append(v)

    def attribute(e: LogEntry) -> Version | None:
        """The first look-alike version not seen yet; if all were seen, the latest (a duplicate)."""
        cands = index.get((e.entity, e.match)) if e.entity is not None else None
        if not cands:
            return None
        for v in cands:
            if v not in seen:
                return v
        return cands[-1]

    rep.expected = sum(len(vs) for vs in by_entity.values())

    # Where every version was seen (in log order per partition, partitions one after another).
    logs: dict[tuple[str, int], list[LogEntry]] = defaultdict(list)
    for e in log:
        logs[(e.topic, e.partition)].append(e)
    log_fingerprints: dict[tuple[str, int, int], Hashable | None] = {}
    first_entries: set[int] = set()  # ids of entries that are their version's first occurrence
    for entries in logs.values():
        entries.sort(key=lambda e: e.offset)
        for e in entries:
            log_fingerprints[(e.topic, e.partition, e.offset)] = e.fingerprint
            matched = attribute(e)
            if matched is None:
                rep.findings.append(Finding(Anomaly.UNEXPECTED, e.entity, "matches no row change of the workload",
                                            e.topic, e.partition, e.offset))
            else:
                occ = seen.setdefault(matched, [])
                if not occ:
                    first_entries.add(id(e))
                occ.append(e)

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
                    rep.findings.append(Finding(Anomaly.DUPLICATED, ent, f"version {v.seq} seen {len(occ)} times",
                                                occ[1].topic, occ[1].partition, occ[1].offset))
                continue
            if (ent, v.match) in broker_gap or (ent, v.match) in acked_no_offset:
                if (ent, v.match) in acked_no_offset and (ent, v.match) not in broker_gap:
                    rep.findings.append(Finding(Anomaly.BROKER_LOST_ACK, ent,
                                                f"version {v.seq} acknowledged without an offset, not in the log"))
                rep.unknown += 1
                continue
            if any(t == v.topic for t, _ in retained):
                rep.unknown += 1  # it may have sat in the offsets retention removed
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

    # Commit ts per partition, first occurrences only (replays after restarts are duplicates).
    for (topic, part), entries in logs.items():
        max_ts: int | None = None
        for e in entries:
            if e.ts is None or id(e) not in first_entries:
                continue
            if max_ts is not None and e.ts < max_ts:
                rep.findings.append(Finding(Anomaly.COMMIT_TS_REGRESSION, e.entity,
                                            f"commit ts {e.ts} after {max_ts}", topic, part, e.offset))
            max_ts = e.ts if max_ts is None else max(max_ts, e.ts)
    return rep


def watermark_findings(partition_log: Sequence[tuple[int, str, int, frozenset[int] | None]],
                       txn_sizes: Mapping[int, int], topic: str, part: int) -> list[Finding]:
    """Watermark rules in one partition, given (offset, kind, ts, txn) entries where kind is
    "row" (ts = commit ts) or "watermark" (ts = watermark ts); `txn_sizes` says how many row
    messages each commit ts has in this partition. A row with commit ts <= a watermark after
    that watermark is late; a watermark with a transaction below it only partly delivered is
    partial."""
    out: list[Finding] = []
    delivered: dict[int, int] = defaultdict(int)
    wm = -1
    for off, kind, ts, _ in partition_log:
        if kind == "row":
            if ts <= wm:
                out.append(Finding(Anomaly.LATE_EVENT_AFTER_WATERMARK, None,
                                   f"commit ts {ts} after watermark {wm}", topic, part, off))
            delivered[ts] += 1
        else:
            wm = max(wm, ts)
            for cts, n in txn_sizes.items():
                if cts <= ts and 0 < delivered[cts] < n:
                    out.append(Finding(Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK, None,
                                       f"watermark {ts} with {delivered[cts]} of {n} messages of commit ts {cts}",
                                       topic, part, off))
    return out


# -- the checks -----------------------------------------------------------------------------------

@dataclass(slots=True)
class DeliveryEvidence:
    """One topic's delivery report (the log of all its partitions against the workload)."""

    topic: str
    report: DeliveryReport
    has_commit_ts: bool = True
    has_watermarks: bool = False


CLAUSE = "seed 000 / notes §3.5 (at-least-once: duplicates after restarts, never loss); DESIGN delivery taxonomy"


def _failures(ev: DeliveryEvidence, anomaly: Anomaly, limit: int = 50) -> list[Failure]:
    kind = TAXONOMY[anomaly]
    out = []
    for f in ev.report.of(anomaly)[:limit]:
        out.append(Failure(f"{anomaly.value}: {f.detail}", expected=kind.description, actual=f.detail,
                           location=Location(topic=f.topic or ev.topic, partition=f.partition, offset=f.offset),
                           actor=kind.actor))
    return out


@check("delivery.no-loss", level=Level.MUST, scope=Scope.STREAM, protocol="*", clause=CLAUSE, needs_source=True)
def no_loss(ev: DeliveryEvidence) -> Verdict:
    """Every row change of the workload reaches the log (retention and broker gaps: unknown, not lost)."""
    if ev.report.expected == 0:
        return NotApplicable("no row change expected in this topic")
    return _failures(ev, Anomaly.LOST) or None


@check("delivery.no-strays", level=Level.MUST, scope=Scope.STREAM, protocol="*", clause=CLAUSE, needs_source=True)
def no_strays(ev: DeliveryEvidence) -> Verdict:
    """Every message in the log is a row change of the workload (no phantom rows)."""
    return _failures(ev, Anomaly.UNEXPECTED) or None


@check("delivery.per-key-order", level=Level.MUST, scope=Scope.STREAM, protocol="*", clause=CLAUSE,
       needs_source=True)
def per_key_order(ev: DeliveryEvidence) -> Verdict:
    """A key's versions first appear in commit order (replays of older versions are duplicates)."""
    if ev.report.delivered == 0:
        return NotApplicable("nothing delivered")
    return _failures(ev, Anomaly.REORDERED_WITHIN_KEY) or None


@check("delivery.one-partition-per-key", level=Level.MUST, scope=Scope.STREAM, protocol="*", clause=CLAUSE,
       needs_source=True)
def one_partition_per_key(ev: DeliveryEvidence) -> Verdict:
    """All changes of one key go to one partition (otherwise no consumer can keep their order)."""
    if ev.report.delivered == 0:
        return NotApplicable("nothing delivered")
    return _failures(ev, Anomaly.KEY_IN_SEVERAL_PARTITIONS) or None


@check("delivery.commit-ts-order", level=Level.MUST, scope=Scope.STREAM, protocol="*", clause=CLAUSE,
       needs_source=True)
def commit_ts_order(ev: DeliveryEvidence) -> Verdict:
    """In each partition, first-seen messages never go back in commit ts."""
    if not ev.has_commit_ts:
        return NotApplicable("the messages carry no commit ts")
    if ev.report.delivered == 0:
        return NotApplicable("nothing delivered")
    return _failures(ev, Anomaly.COMMIT_TS_REGRESSION) or None


@check("infra.broker-acks", level=Level.INFO, scope=Scope.STREAM, protocol="*", clause="DESIGN measured facts "
       "(the embedded broker can acknowledge messages it does not keep; retention keeps ~5 MiB per partition)",
       needs_source=True)
def broker_acks(ev: DeliveryEvidence) -> Verdict:
    """What the broker acknowledged is in the log; offsets the broker dropped are reported, never
    charged to the encoder (the rows they held are unknown)."""
    return (_failures(ev, Anomaly.BROKER_LOST_ACK) + _failures(ev, Anomaly.RETENTION)) or None
