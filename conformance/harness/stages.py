"""The pipeline's stages over Kafka, as plain functions (Spark calls them on executors,
`--no-spark` calls them in-process; neither imports the other).

Stage A, one work unit = (combo, shard): regenerate the workload from (seed, shard), encode it,
check the encoder's records against their source events (record and event checks), and
produce them through the encoder's sink; returns the tally and the sink's ledger.

Stage B, one topic: decode the log (all partitions, offset order), run the stream checks, and
judge delivery against the workload the topic came from (regenerated again from its seed)
and the ledger of what was sent.

Only seeds and small results travel: a unit is a few numbers, a result is a tally.
"""

from __future__ import annotations

import atexit
import functools
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..checks.common import ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from ..checks.delivery import DeliveryEvidence, LogEntry, Sent, analyse, commit_ts_scope, delivery_checks
from ..checks.registry import all_checks
from ..checks.results import Tally
from ..encoders import find_encoder
from ..encoders.sink import SINKS, SentMessage, fingerprint, run_sink
from ..encoders.spi import EncoderContext, EncoderHung, ManualClock, Record
from ..model.events import Workload
from ..protocols import get_protocol
from ..strategies import Shape, sample_workload
from .capture import DeliverySummary
from .local import Guard, encoder_crashed, encoder_hung

_PREFIX = re.compile(r"^(?P<run>[a-z0-9]+)c(?P<combo>\d+)w(?P<shard>\d+)-")


@dataclass(frozen=True, slots=True)
class RunSpec:
    """Everything a worker needs, shipped once (Spark broadcasts it)."""

    protocol: str
    encoder: str
    sink: str
    seed: int | str
    shape: Shape
    combos: tuple[tuple[tuple[str, str], ...], ...]  # options of each combination
    kafka_config: tuple[tuple[str, str], ...]
    registry_url: str
    partitions: int = 3
    run_id: str = "r0"
    encoder_timeout: float = 30.0
    flush_timeout: float = 30.0
    # Seconds between source events in stage A: CDC events arrive over time, and a fault
    # schedule needs production to overlap it (0: as fast as possible).
    event_interval_s: float = 0.0
    # With a fault schedule, events are `event_interval_s` apart only while it runs: for `pace_s`
    # seconds from each unit's start, or, when all units run in one process one after another,
    # until the wall-clock time `pace_until`; then at full speed.
    pace_s: float = 0.0
    pace_until: float = 0.0

    def options(self, combo: int) -> dict[str, str]:
        return dict(self.combos[combo])

    def prefix(self, combo: int, shard: int) -> str:
        return f"{self.run_id}c{combo}w{shard}-"

    def unit_of(self, topic: str) -> tuple[int, int] | None:
        m = _PREFIX.match(topic)
        if m is None or m.group("run") != self.run_id:
            return None
        return int(m.group("combo")), int(m.group("shard"))


@dataclass(slots=True)
class UnitResult:
    combo: int
    shard: int
    tally: Tally
    ledger: list[SentMessage] = field(default_factory=list)
    records: int = 0
    restarts: int = 0
    gave_up: str | None = None
    topics: list[str] = field(default_factory=list)


def kafka_checks(protocol: str) -> list[Any]:
    return all_checks(protocol)


def new_tally(protocol: str) -> Tally:
    return Tally(kafka_checks(protocol))


_REGISTRIES: dict[str, Any] = {}


def _registry(url: str) -> Any:
    """One client per registry per worker process (its id cache is shared by every unit)."""
    from ..infra.registry import RegistryClient

    if not url:
        return None  # a protocol without a registry
    client = _REGISTRIES.get(url)
    if client is None:
        if not _REGISTRIES:
            atexit.register(_close_registries)
        client = _REGISTRIES[url] = RegistryClient(url)
    return client


def _close_registries() -> None:
    for c in _REGISTRIES.values():
        c.close()
    _REGISTRIES.clear()


@functools.lru_cache(maxsize=64)
def _workload(seed: int | str, shard: int, shape: Shape) -> Workload:
    """Stage A and stage B both regenerate a unit's workload; a worker keeps the last few."""
    return sample_workload(seed, shard, shape)


def expected_topics(spec: RunSpec, combo: int, shard: int) -> list[str]:
    protocol = get_protocol(spec.protocol)
    w = _workload(spec.seed, shard, spec.shape)
    prefix = spec.prefix(combo, shard)
    if hasattr(protocol, "topics"):  # a protocol whose topics do not follow from its rows
        return sorted(protocol.topics(w, spec.options(combo), prefix))
    return sorted({v.topic for v in protocol.expected_versions(w, spec.options(combo), prefix)  # type: ignore[attr-defined]
                   if v.topic is not None})


def produce_unit(spec: RunSpec, combo: int, shard: int, *, create_topics: Any = None) -> UnitResult:
    """Stage A for one (combo, shard)."""
    protocol = get_protocol(spec.protocol)
    info = find_encoder(spec.encoder, spec.protocol)
    options = spec.options(combo)
    prefix = spec.prefix(combo, shard)
    workload = _workload(spec.seed, shard, spec.shape)
    registry = _registry(spec.registry_url)
    tally = new_tally(spec.protocol)
    tally.workload = (spec.seed, shard)
    res = UnitResult(combo, shard, tally)
    res.topics = expected_topics(spec, combo, shard)
    if create_topics is not None:
        create_topics(res.topics, spec.partitions)
    checker = protocol.checker(options, registry, tally, topic_prefix=prefix, with_source=True,  # type: ignore[attr-defined]
                               partitions=spec.partitions)
    ctx = EncoderContext(options=options, registry=registry, clock=ManualClock(), partitions=spec.partitions,
                         topic_prefix=prefix)
    events = list(workload.events)
    guard = Guard(spec.encoder_timeout)
    pace_end = spec.pace_until or (time.time() + spec.pace_s if spec.pace_s else 0.0)

    def on_records(i: int, records: list[Any]) -> None:
        res.records += len(records)
        checker.check_event(events[i], records)
        # A steady stream while the fault schedule runs (several requests in flight, as in a
        # busy CDC stream, when a fault strikes), at full speed once it is over.
        if spec.event_interval_s and (not pace_end or time.time() < pace_end):
            time.sleep(spec.event_interval_s)

    try:
        sink = SINKS[spec.sink]()
        out = run_sink(sink, info.factory, ctx, events, dict(spec.kafka_config), call=guard.call,
                       on_records=on_records, flush_timeout=spec.flush_timeout)
        res.ledger, res.restarts, res.gave_up = out.ledger, out.restarts, out.gave_up
        tally.passed(ENCODER_NO_CRASH)
        tally.passed(ENCODER_RESPONSIVE)
    except EncoderHung as e:
        encoder_hung(tally, "encode()", e, spec.encoder_timeout)
    except Exception as e:  # noqa: BLE001 - the encoder's (or its sink's) failure is a finding
        encoder_crashed(tally, "encode() or its sink", e)
    finally:
        guard.close()
    checker.finish()
    return res


@dataclass(frozen=True, slots=True)
class LogRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


def judge_topic(spec: RunSpec, topic: str, log: Iterable[LogRecord], ledger: Iterable[Sent],
                low_watermarks: dict[tuple[str, int], int], *, summary: DeliverySummary | None = None) -> Tally:
    """Stage B for one topic: stream checks over the log and delivery against the workload.
    `summary`, if given, receives the delivery counts (duplicates, unknown rows) for the notes."""
    protocol = get_protocol(spec.protocol)
    tally = new_tally(spec.protocol)
    unit = spec.unit_of(topic)
    if unit is None:
        return tally
    combo, shard = unit
    tally.workload = (spec.seed, shard)
    options = spec.options(combo)
    registry = _registry(spec.registry_url)
    identify = protocol.identifier(options, registry)  # type: ignore[attr-defined]
    checker = protocol.checker(options, registry, tally, topic_prefix=spec.prefix(combo, shard),  # type: ignore[attr-defined]
                               with_source=False, partitions=spec.partitions)
    entries = []
    for r in sorted(log, key=lambda r: (r.partition, r.offset)):
        ident = identify(r.topic, r.key, r.value)
        if ident is not None:  # None: a control message (DDL, watermark…), not a row to account for
            ent, match, ts = ident
            entries.append(LogEntry(r.topic, r.partition, r.offset, ent, match, ts,
                                    fingerprint=fingerprint(r.topic, r.key, r.value)))
        checker.observe(Record(r.topic, r.key, r.value, r.partition, offset=r.offset))
    checker.finish()
    workload = _workload(spec.seed, shard, spec.shape)
    expected = [v for v in protocol.expected_versions(workload, options, spec.prefix(combo, shard))  # type: ignore[attr-defined]
                if v.topic == topic]
    report = analyse(expected, entries, list(ledger), low_watermarks, ts_scope=commit_ts_scope(protocol))
    ev = DeliveryEvidence(topic, report, has_commit_ts=protocol.carries_commit_ts(options))  # type: ignore[attr-defined]
    for s in delivery_checks(spec.protocol):
        tally.evaluate(s, ev)
    if summary is not None:
        summary.add(report, with_source=True)
    return tally


def sent_rows(spec: RunSpec, res: UnitResult) -> list[Sent]:
    """The ledger as the delivery analysis wants it, with each message identified."""
    protocol = get_protocol(spec.protocol)
    identify = protocol.identifier(spec.options(res.combo), _registry(spec.registry_url))  # type: ignore[attr-defined]
    out = []
    for m in res.ledger:
        ident = identify(m.topic, m.key, m.value)
        if ident is None:
            continue
        ent, match, _ = ident
        out.append(Sent(ent, match, m.topic, m.partition, m.offset, m.error, m.fingerprint, acked=m.acked))
    return out
