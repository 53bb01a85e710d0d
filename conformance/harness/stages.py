"""The pipeline's stages, as plain functions every runner calls (in this process, or on Spark
executors): generate → encode → log → read → judge → report.

* **encode** (`encode_unit`), one work unit = (option combination, shard): regenerate the
  workload from (seed, shard), encode it (`encode.encode_events`) through the encoder's sink
  policy into a transport (the in-memory log or Kafka), run the record and event checks against
  the source events, and identify what the sink sent (the ledger).
* **judge** (`judge_topic`), one topic: the stream checks over its log (all partitions, offset
  order) and delivery against the workload (regenerated from its seed) and the ledger.
* **report** (`sections`): one report section per option combination, from the merged results.

Only seeds and small results travel between stages: a unit is a few numbers, a result a tally.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..checks.common import ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from ..checks.compatibility import check_ids
from ..checks.delivery import Anomaly, DeliveryEvidence, LogEntry, Sent, analyse, delivery_checks
from ..checks.registry import Location
from ..checks.results import Tally
from ..checks.source import SOURCE_CHECKS, judge_source
from ..encoders import find_encoder
from ..encoders.sink import SINKS, fingerprint
from ..encoders.spi import EncoderContext, EncoderInfo, ManualClock
from ..errors import InfrastructureError
from ..model.events import Workload
from ..protocols import all_checks, get_check, get_protocol
from ..protocols.base import ENCODE, LOG, ProtocolSuite, describe_options
from ..reporting.model import Section
from ..strategies import Shape, sample_workload
from .capture import DeliverySummary
from .encode import Guard, LogRecord, Transport, encode_events, encoder_crashed

#: A unit's topic prefix (`RunSpec.prefix`): the run id, the combination and the shard.
UNIT_PREFIX = re.compile(r"^(?P<run>[a-z0-9]*)c(?P<combo>\d+)w(?P<shard>\d+)-")


def unit_prefix(run_id: str, combo: int, shard: int) -> str:
    """The prefix of a unit's topics (and so of its registry subjects): `UNIT_PREFIX` matches it."""
    return f"{run_id}c{combo}w{shard}-"


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything a worker needs to run its units, shipped once (Spark broadcasts it)."""

    protocol: str
    encoder: str
    seed: int | str
    shape: Shape
    combos: tuple[tuple[tuple[str, str], ...], ...]  # options of each combination
    partitions: int = 3
    # Prefix of every topic (and so of every registry subject) of the run: runs sharing a
    # cluster or a registry never meet. Empty for the in-memory log.
    run_id: str = ""
    kafka_config: tuple[tuple[str, str], ...] = ()
    registry_url: str = ""
    encoder_timeout: float = 30.0
    flush_timeout: float = 30.0
    time_zone: str = "UTC"
    # Seconds between source events in the encode stage: CDC events arrive over time, and a
    # fault schedule needs production to overlap it (0: as fast as possible).
    event_interval_s: float = 0.0
    # With a fault schedule, events are `event_interval_s` apart only while it runs: for `pace_s`
    # seconds from each unit's start, or, when all units run in one process one after another,
    # until the wall-clock time `pace_until`; then at full speed.
    pace_s: float = 0.0
    pace_until: float = 0.0
    # A real database server upstream (`--upstream`): each unit's workload is applied to it and
    # the encoder gets the events read back from its change log. A URL workers can open (it may
    # carry credentials: never print it); empty: events go straight to the encoder.
    upstream: str = ""

    def options(self, combo: int) -> dict[str, str]:
        return dict(self.combos[combo])

    def prefix(self, combo: int, shard: int) -> str:
        return unit_prefix(self.run_id, combo, shard)

    def unit_of(self, topic: str) -> tuple[int, int] | None:
        m = UNIT_PREFIX.match(topic)
        if m is None or m.group("run") != self.run_id:
            return None
        return int(m.group("combo")), int(m.group("shard"))


def new_tally(suite: ProtocolSuite) -> Tally:
    """A tally for every check of the protocol (its own and the protocol-independent ones)."""
    return Tally(all_checks(suite.name))


@functools.lru_cache(maxsize=64)
def generate(seed: int | str, shard: int, shape: Shape) -> Workload:
    """The encode and judge stages both regenerate a unit's workload; a worker keeps the last few."""
    return sample_workload(seed, shard, shape)


# -- encode -----------------------------------------------------------------------------------------

NO_UPSTREAM = "needs a real database server upstream (conformance run --upstream …)"
_UPSTREAMS: dict[str, Any] = {}


def worker_upstream(url: str) -> Any:
    """One upstream per URL per worker process (a connection to the server the run started)."""
    up = _UPSTREAMS.get(url)
    if up is None:
        from ..upstream import open_upstream

        up = _UPSTREAMS[url] = open_upstream(url)
        up.start()
    return up


class HangLatch:
    """Once an encoder hung, no further call is made into it, nor into another encoder of the
    same kind in the same worker: its thread may still hold a lock, spin or sleep. The units a
    worker has left are then not run (and said so). One latch per run and worker."""

    def __init__(self) -> None:
        self.shard: int | None = None


@dataclass(slots=True)
class UnitResult:
    combo: int
    shard: int
    tally: Tally
    sent: list[Sent] = field(default_factory=list)  # the ledger, each message identified
    topics: list[str] = field(default_factory=list)  # every topic the unit's output goes to
    records: int = 0
    restarts: int = 0
    gave_up: str | None = None
    encoded: int = 0  # events fully encoded
    hung: bool = False
    skipped: bool = False  # not run: an encoder hung earlier in this worker
    seconds: dict[str, float] = field(default_factory=dict)  # per stage (generate, upstream, encode)
    # (schema change, outcome) counts at the unit's registry level (`harness/compatibility.py`).
    compat: Counter[tuple[str, str]] = field(default_factory=Counter)
    # The workload the encoder got (captured from a real server's log, with `--upstream`); kept
    # for the judge stage in the same worker, never shipped.
    workload: Workload | None = field(default=None, repr=False, compare=False)

    def __getstate__(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if k != "workload"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            setattr(self, k, v)
        self.workload = None


def _gate(suite: ProtocolSuite, registry: Any, options: Mapping[str, str], prefix: str, info: EncoderInfo,
          tally: Tally) -> Any:
    """The unit's compatibility gate (None where no level applies: nothing registered, or a
    protocol without the `registry.*` checks; those checks are then skipped, saying why)."""
    ids = [cid for cid in check_ids(suite.name) if cid in tally.checks]
    level = suite.registry_level(options) if registry is not None else None
    if level is None or len(ids) < 2:
        for cid in ids:
            tally.skip(cid, "nothing is registered under these options" if registry is not None
                       else "the run has no Schema Registry")
        return None
    from .compatibility import Gate

    if info.replays_capture:
        # A capture's schemas were registered where it was made: how the registry answered is not
        # in it; whether the tool stopped where the level refuses a schema is.
        for cid in ids:
            if cid.endswith(".registry.verdict"):
                tally.skip(cid, "a capture does not hold what the registry answered its tool")
        return Gate(suite, registry, options, prefix, level, info, read_only=True)
    return Gate(suite, registry, options, prefix, level, info)


#: How much longer than --encoder-timeout the harness waits for an adapter that bounds its own
#: calls (`EncoderInfo.bounds_own_calls`): a process start and handshake are included in `open`.
ADAPTER_GRACE_S = 45.0


def encode_unit(spec: RunSpec, combo: int, shard: int, transport: Transport, registry: Any, latch: HangLatch, *,
                workload: Workload | None = None, prepare: Callable[[Sequence[str]], None] | None = None,
                info: EncoderInfo | None = None) -> UnitResult:
    """The encode stage for one unit. `prepare(topics)` (if given) runs before anything is sent
    (e.g. creates the topics); `info` is the encoder when it cannot be found by `spec.encoder`
    (an encoder object a test builds)."""
    suite = get_protocol(spec.protocol)
    if info is None:
        info = find_encoder(spec.encoder, spec.protocol)
    options = spec.options(combo)
    prefix = spec.prefix(combo, shard)
    t0 = time.perf_counter()
    if workload is None:
        workload = generate(spec.seed, shard, spec.shape)
    t1 = time.perf_counter()
    tally = new_tally(suite)
    tally.workload = (spec.seed, shard)
    if latch.shard is not None:
        return UnitResult(combo, shard, tally, skipped=True)
    factory = info.factory
    tool_seconds: dict[str, float] = {}
    gate = _gate(suite, registry, options, prefix, info, tally)
    if gate is not None:
        unusable = gate.set_levels(workload)
        if unusable is not None:
            for cid in check_ids(suite.name):
                tally.skip(cid, unusable)
            gate = None
    if info.tool is not None:
        if not spec.upstream:
            raise InfrastructureError(f"{info.name} is a whole CDC tool that reads a database's change log: "
                                      "run it with --upstream (e.g. --upstream embedded-postgres)")
        # The tool applies the workload through the upstream while it captures it; what it
        # handed over is replayed through the same pipeline as any encoder's records.
        from ..encoders.tool import ReplayEncoder, ToolEnv, worker_tool

        up = worker_upstream(spec.upstream)
        env = ToolEnv(kafka=dict(spec.kafka_config), registry_url=spec.registry_url or None, registry=registry,
                      topic_prefix=prefix, place=suite.tool_record)
        tool_run = worker_tool(info.name, info.tool, up, options).run(up, workload, options,
                                                                       spec.encoder_timeout, env)
        captured = tool_run.captured
        tool_seconds = tool_run.seconds
        workload = captured.workload
        if captured.truth is not None:
            judge_source(captured.truth, tally)
        factory = lambda: ReplayEncoder(tool_run, spec.protocol)  # noqa: E731
    elif spec.upstream:
        # Applied to the server, read back from its change log: the encoder gets the captured
        # events, and the source checks judge what the server did with the generated SQL.
        captured = worker_upstream(spec.upstream).run_workload(workload)
        workload = captured.workload
        if captured.truth is not None:
            judge_source(captured.truth, tally)
    else:
        for cid in SOURCE_CHECKS:
            tally.skip(cid, NO_UPSTREAM)
    t2 = time.perf_counter()
    res = UnitResult(combo, shard, tally, topics=sorted(suite.topics(workload, options, prefix)), workload=workload)
    res.seconds["generate"] = t1 - t0
    if spec.upstream:
        res.seconds["upstream"] = t2 - t1
    res.seconds.update(tool_seconds)
    if prepare is not None:
        prepare(res.topics)
    checker = suite.checker(options, registry, tally, ENCODE, topic_prefix=prefix, partitions=spec.partitions)
    encoder_registry = registry
    if gate is not None:
        gate.predict(workload, partitions=spec.partitions, time_zone=spec.time_zone)
        encoder_registry = gate.encoder_registry()
    ctx = EncoderContext(options=options, registry=encoder_registry, clock=ManualClock(), partitions=spec.partitions,
                         topic_prefix=prefix, time_zone=spec.time_zone, registry_url=spec.registry_url or None,
                         call_timeout=spec.encoder_timeout)
    pace_end = spec.pace_until or (time.time() + spec.pace_s if spec.pace_s else 0.0)

    def pace() -> None:
        # A steady stream while the fault schedule runs (several requests in flight, as in a
        # busy CDC stream, when a fault strikes), at full speed once it is over.
        if not pace_end or time.time() < pace_end:
            time.sleep(spec.event_interval_s)

    guard = Guard(spec.encoder_timeout + (ADAPTER_GRACE_S if info.bounds_own_calls else 0.0))
    t3 = time.perf_counter()
    try:
        out = encode_events(factory, ctx, workload.events, SINKS[info.sink](), transport, checker, tally, guard,
                            flush_timeout=spec.flush_timeout, pace=pace if spec.event_interval_s else None,
                            excuse=gate.excuse if gate is not None else None,
                            unchecked_from=gate.refused_event() if gate is not None else None)
    finally:
        guard.close()
    checker.finish()
    res.seconds["encode, check, produce"] = time.perf_counter() - t3
    res.records, res.encoded, res.hung = out.records, out.encoded, out.hung
    if gate is not None:
        t4 = time.perf_counter()
        ev = gate.evidence(workload, out)
        for cid in check_ids(suite.name):
            tally.evaluate(get_check(cid), ev)
        if ev.unexplained_stop is not None and out.stop_exc is not None:
            # No refusal explains the error: a crash after all.
            out.crashed = True
            event = workload.events[out.stopped] if out.stopped is not None else None
            encoder_crashed(tally, f"encode() of event {out.stopped} ({type(event).__name__})", out.stop_exc,
                            Location(part=f"event {out.stopped} ({type(event).__name__})"))
        judged = gate.judged_workload(workload, ev, out)
        if judged is not None:
            # Delivery is owed for what came before the refused change, and for the other
            # tables' rows up to where the encoder stopped.
            res.workload, res.encoded = judged, len(judged.events)
        res.compat = gate.outcomes(ev)
        res.seconds["registry verdicts"] = time.perf_counter() - t4
    if not out.crashed:
        tally.passed(ENCODER_NO_CRASH)
    if out.hung:
        latch.shard = shard
    else:
        tally.passed(ENCODER_RESPONSIVE)
    res.restarts, res.gave_up = out.sink.restarts, out.sink.gave_up
    identify = suite.identifier(options, registry)
    for m in out.sink.ledger:
        ident = identify(m.topic, m.key, m.value)
        if ident is not None:
            ent, match, _ = ident
            res.sent.append(Sent(ent, match, m.topic, m.partition, m.offset, m.error, m.fingerprint, acked=m.acked))
    return res


# -- judge ------------------------------------------------------------------------------------------


@dataclass(slots=True)
class TopicResult:
    """What judging one topic gives: its tally and its delivery counts (mergeable)."""

    tally: Tally
    delivery: DeliverySummary = field(default_factory=DeliverySummary)

    def merge(self, other: TopicResult) -> None:
        self.tally.merge(other.tally)
        self.delivery.merge(other.delivery)


_BROKER_GAPS = (Anomaly.BROKER_LOST_ACK, Anomaly.RETENTION)


def judge_topic(spec: RunSpec, topic: str, log: Iterable[LogRecord], sent: Iterable[Sent],
                low_watermarks: Mapping[tuple[str, int], int], registry: Any, *, encoded: int | None = None,
                workload: Workload | None = None, expected: Sequence[Any] | None = None) -> TopicResult:
    """The judge stage for one topic of a unit: delivery against the workload's first `encoded`
    events (all by default; an encoder that crashed or hung is not also charged with the rows
    it never got to), then the stream checks over the log — complete unless the broker lost
    messages or retention removed some. `expected`: the versions of those events owed to this
    topic, when the caller has worked them out (`judge_unit`, once for all of a unit's topics)."""
    suite = get_protocol(spec.protocol)
    tally = new_tally(suite)
    unit = spec.unit_of(topic)
    if unit is None:
        return TopicResult(tally)
    combo, shard = unit
    tally.workload = (spec.seed, shard)
    options = spec.options(combo)
    prefix = spec.prefix(combo, shard)
    if workload is None:
        workload = generate(spec.seed, shard, spec.shape)
    if encoded is not None and encoded < len(workload.events):
        workload = dataclasses.replace(workload, events=workload.events[:encoded])
    # Offset order per partition; where the order messages were written is known (the
    # in-memory log), that order, so that a checker sees partitions interleave as they grew.
    records = sorted(log, key=lambda r: (0, r.seq, 0) if r.seq is not None else (1, r.partition, r.offset))
    identify = suite.identifier(options, registry)
    entries = []
    for r in records:
        ident = identify(r.topic, r.key, r.value)
        if ident is not None:  # None: a control message (DDL, watermark…), not a row to account for
            ent, match, ts = ident
            entries.append(LogEntry(r.topic, r.partition, r.offset, ent, match, ts,
                                    fingerprint=fingerprint(r.topic, r.key, r.value)))
    if expected is None:
        expected = [v for v in suite.expected_versions(workload, options, prefix) if v.topic == topic]
    report = analyse(list(expected), entries, list(sent), low_watermarks, ts_scope=suite.capabilities.commit_ts_scope)
    complete = not any(report.of(a) for a in _BROKER_GAPS)
    mode = LOG if complete else dataclasses.replace(LOG, complete=False)
    checker = suite.checker(options, registry, tally, mode, topic_prefix=prefix, partitions=spec.partitions)
    for r in records:
        checker.check_record(r.record(), Location(topic=r.topic, partition=r.partition, offset=r.offset))
    checker.finish()
    ev = DeliveryEvidence(topic, report, has_commit_ts=suite.carries_commit_ts(options))
    for s in delivery_checks(spec.protocol):
        tally.evaluate(s, ev)
    result = TopicResult(tally)
    result.delivery.add(report, with_source=True)
    return result


def judge_unit(spec: RunSpec, unit: UnitResult, logs: Mapping[str, Sequence[LogRecord]],
               low_watermarks: Mapping[tuple[str, int], int], registry: Any, *,
               workload: Workload | None = None) -> list[TopicResult]:
    """The judge stage for every topic of a unit: those its output should go to (judged even if
    nothing reached them) and those its log holds; against the workload the encoder got."""
    workload = workload if workload is not None else unit.workload
    sent: dict[str, list[Sent]] = {}
    for s in unit.sent:
        sent.setdefault(s.topic, []).append(s)
    topics = sorted(set(unit.topics) | set(logs))
    # The versions the unit's own topics are owed, worked out once and split by topic (each
    # topic's in the workload's order, as judge_topic would select them from the whole list); a
    # topic of another unit's name (an encoder writing where it should not) is left to judge_topic.
    mine = (unit.combo, unit.shard)
    expected: defaultdict[str | None, list[Any]] = defaultdict(list)
    if any(spec.unit_of(t) == mine for t in topics):
        owed = workload if workload is not None else generate(spec.seed, unit.shard, spec.shape)
        if unit.encoded is not None and unit.encoded < len(owed.events):
            owed = dataclasses.replace(owed, events=owed.events[:unit.encoded])
        suite = get_protocol(spec.protocol)
        for v in suite.expected_versions(owed, spec.options(unit.combo), spec.prefix(*mine)):
            expected[v.topic].append(v)
    return [judge_topic(spec, topic, logs.get(topic, ()), sent.get(topic, []), low_watermarks, registry,
                        encoded=unit.encoded, workload=workload,
                        expected=expected.get(topic, []) if spec.unit_of(topic) == mine else None)
            for topic in topics]


# -- report -------------------------------------------------------------------------------------------


@dataclass(slots=True)
class ComboResult:
    """Everything a combination's units and topics gave, merged (in any order)."""

    tally: Tally
    delivery: DeliverySummary = field(default_factory=DeliverySummary)
    workloads: int = 0
    records: int = 0
    restarts: int = 0
    gave_up: list[str] = field(default_factory=list)
    hung: list[int] = field(default_factory=list)  # shards whose encoder hung
    not_run: int = 0  # units not run after a hang
    errors: list[str] = field(default_factory=list)  # infrastructure errors that stopped a worker
    seconds: defaultdict[str, float] = field(default_factory=lambda: defaultdict(float))  # per stage, summed
    compat: Counter[tuple[str, str]] = field(default_factory=Counter)  # (schema change, outcome)

    def add_unit(self, u: UnitResult) -> None:
        self.tally.merge(u.tally)
        if u.skipped:
            self.not_run += 1
            return
        self.compat.update(u.compat)
        for k, v in u.seconds.items():
            self.seconds[k] += v
        self.workloads += 1
        self.records += u.records
        self.restarts += u.restarts
        if u.gave_up:
            self.gave_up.append(f"shard {u.shard}: {u.gave_up}")
        if u.hung:
            self.hung.append(u.shard)

    def add_topic(self, t: TopicResult) -> None:
        self.tally.merge(t.tally)
        self.delivery.merge(t.delivery)

    def merge(self, other: ComboResult) -> None:
        self.tally.merge(other.tally)
        self.delivery.merge(other.delivery)
        self.workloads += other.workloads
        self.records += other.records
        self.restarts += other.restarts
        self.gave_up.extend(other.gave_up)
        self.hung.extend(other.hung)
        self.not_run += other.not_run
        self.errors.extend(e for e in other.errors if e not in self.errors)
        self.compat.update(other.compat)
        for k, v in other.seconds.items():
            self.seconds[k] += v


def sections(spec: RunSpec, results: Mapping[int, ComboResult], *, notes: Sequence[str] = (),
             duration_s: float = 0.0, driver_seconds: Mapping[str, float] | None = None,
             encoder: EncoderInfo | None = None) -> list[Section]:
    """One report section per option combination (every runner builds its report here);
    `encoder` is the encoder when it cannot be found by `spec.encoder` (see `encode_unit`). An
    infrastructure error that stopped a worker (a database server that died…) stops the run."""
    errors = [e for r in results.values() for e in r.errors]
    if errors:
        raise InfrastructureError("; ".join(dict.fromkeys(errors)))
    suite = get_protocol(spec.protocol)
    info: EncoderInfo = encoder if encoder is not None else find_encoder(spec.encoder, spec.protocol)
    out = []
    for c in range(len(spec.combos)):
        r = results.get(c) or ComboResult(new_tally(suite))
        opts = spec.options(c)
        sec = Section(spec.protocol, info.name, info.kind.value, opts, describe_options(opts, suite), r.tally,
                      workloads=r.workloads, records=r.records, seed=spec.seed,
                      duration_s=duration_s / max(1, len(spec.combos)))
        if r.restarts:
            sec.notes.append(f"the sink restarted from its checkpoint {r.restarts} time(s)")
        sec.notes.extend(f"the sink {g}" for g in r.gave_up)
        if r.hung:
            sec.notes.append(f"the encoder hung (shard {min(r.hung)}): no further call was made into it"
                             + (f"; {r.not_run} later work unit(s) of the same worker were not run" if r.not_run
                                else ""))
        elif r.not_run:
            sec.notes.append(f"{r.not_run} work unit(s) not run: the encoder hung earlier in the same worker, and no "
                             "further call is made into a hung encoder")
        sec.notes.extend(r.delivery.notes())
        sec.notes.extend(notes)
        sec.timings = {**dict(driver_seconds or {}), **dict(r.seconds)}
        for (change, outcome), n in sorted(r.compat.items()):
            sec.compatibility.setdefault(change, {})[outcome] = n
        out.append(sec)
    return out

