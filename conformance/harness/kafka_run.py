"""Runs the Kafka stages in-process (`conformance run --no-spark`), one unit after another.

The same stage functions as the Spark pipeline, so both give the same verdicts on the same
seed; faults are injected on the embedded cluster while stage A produces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..checks.delivery import Sent
from ..checks.results import Tally
from ..encoders import find_encoder
from ..protocols import get_protocol
from ..protocols.base import describe_options
from ..reporting.model import Section
from .capture import DeliverySummary
from .stages import LogRecord, RunSpec, UnitResult, expected_topics, judge_topic, new_tally, produce_unit, sent_rows

Progress = Callable[[int], None]


def unit_topics(spec: RunSpec, units: Sequence[tuple[int, int]]) -> list[str]:
    """Every topic the units will write (each unit's workload is generated to learn them)."""
    return sorted({t for c, s in units for t in expected_topics(spec, c, s)})


def prepare_topics(spec: RunSpec, cluster: Any, topics: Sequence[str]) -> None:
    """Create the topics up front, with the run's partition count (the embedded cluster through
    its own API, a real one through the admin API)."""
    for t in topics:
        cluster.create_topic(t, spec.partitions)


class FirstRecordProbe:
    """Tells when the first record reaches any of the run's topics: the fault schedule's clock
    starts there, not when the driver starts the injector (Spark's executors begin producing
    seconds later, and a schedule timed from the driver missed the production entirely)."""

    def __init__(self, cluster: Any, topics: Sequence[str]) -> None:
        import uuid

        from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

        self._consumer: Any = Consumer({**cluster.client_config(), "group.id": f"conformance-arm-{uuid.uuid4().hex}",
                                        "enable.auto.commit": False, "fetch.wait.max.ms": 10,
                                        "fetch.queue.backoff.ms": 0, "log_level": 0})
        wanted = set(topics)
        md = self._consumer.list_topics(timeout=10)
        self._consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, tmd in md.topics.items()
                               if t in wanted for p in tmd.partitions])

    def fired(self) -> bool:
        if self._consumer is None:
            return True
        m = self._consumer.poll(0)
        if m is None or m.error() is not None:
            return False
        self.close()  # no more fetching (and prefetching) once the schedule has started
        return True

    def close(self) -> None:
        if self._consumer is not None:
            consumer, self._consumer = self._consumer, None
            consumer.close()


def fault_notes(injector: Any, on_first_record: bool) -> list[str]:
    """What a fault schedule did, for the report: faults that never fired (the production ended
    first) would otherwise pass silently as "survived the faults"."""
    plan, pending = injector.plan, injector.pending()
    when = (f"timed from the first produced record ({injector.armed_after:g} s after the start)"
            if on_first_record and injector.armed_after is not None else "timed from the start of production")
    notes = [f"fault schedule {injector.schedule}: {len(plan) - len(pending)} of {len(plan)} action(s) applied, "
             + when]
    times: dict[str, list[str]] = {}  # one note per kind of action, with all its times
    for a in pending:
        times.setdefault(a.description, []).append(f"{a.at_ms / 1000:g} s")
    notes += [f"not applied (production ended first): {what} at {_times(at)}" for what, at in times.items()]
    notes += [f"fault injection error: {e}" for e in injector.errors]
    return notes


def _times(at: list[str], limit: int = 4) -> str:
    if len(at) <= limit:
        return ", ".join(at)
    return f"{', '.join(at[:limit - 1])}, … {at[-1]} ({len(at)} times)"


@contextlib.contextmanager
def injecting(cluster: Any, faults: str | None, topics: Sequence[str], log: Callable[[str], None] | None,
              *, on_first_record: bool = False) -> Iterator[list[str]]:
    """Run the fault schedule (if any) on the cluster while the body produces; the yielded
    list receives the report notes once the body is done. The schedule's clock starts now, or
    with `on_first_record` when the first record reaches a topic (production elsewhere)."""
    notes: list[str] = []
    if not faults:
        yield notes
        return
    from ..infra.faults import FaultInjector

    probe = FirstRecordProbe(cluster, topics) if on_first_record else None
    injector = FaultInjector(cluster, faults, list(topics), arm=probe.fired if probe is not None else None)
    injector.start()
    try:
        yield notes
    finally:
        injector.stop()
        if probe is not None:
            probe.close()
        notes.extend(fault_notes(injector, on_first_record))
        if log:
            for at, what in injector.log:
                log(f"fault at {at:.2f} s: {what}")


def run_units(spec: RunSpec, cluster: Any, shards: Sequence[int], *, faults: str | None = None,
              progress: Progress | None = None, log: Callable[[str], None] | None = None) -> list[Section]:
    units = [(c, s) for c in range(len(spec.combos)) for s in shards]
    topics = unit_topics(spec, units)
    prepare_topics(spec, cluster, topics)
    t0 = time.monotonic()
    results: list[UnitResult] = []
    if spec.pace_s:  # one process: the units share the schedule's time, the first ones meet it
        spec = dataclasses.replace(spec, pace_until=time.time() + spec.pace_s, pace_s=0.0)
    with injecting(cluster, faults, topics, log) as notes:
        for c, s in units:
            results.append(produce_unit(spec, c, s))
            if progress:
                progress(1)
    sections = judge_units(spec, cluster, results)
    for sec in sections:
        sec.duration_s = (time.monotonic() - t0) / max(1, len(sections))
        sec.notes.extend(notes)
    return sections


def judge_units(spec: RunSpec, cluster: Any, results: Sequence[UnitResult]) -> list[Section]:
    """Stage B for every topic the units produced, then one report section per combination."""
    from ..infra.kafka import consume_all, log_ranges

    tallies: dict[int, Tally] = defaultdict(lambda: new_tally(spec.protocol))
    deliveries: dict[int, DeliverySummary] = defaultdict(DeliverySummary)
    stats: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in results:
        tallies[r.combo].merge(r.tally)
        stats[r.combo]["workloads"] += 1
        stats[r.combo]["records"] += r.records
        stats[r.combo]["restarts"] += r.restarts
        topics = r.topics
        ranges = log_ranges(cluster, topics) if topics else {}
        by_topic: dict[str, list[LogRecord]] = defaultdict(list)
        for m in consume_all(cluster, topics, timeout=spec.flush_timeout) if topics else ():
            by_topic[m.topic].append(LogRecord(m.topic, m.partition, m.offset, m.key, m.value))
        ledger: dict[str, list[Sent]] = defaultdict(list)
        for row in sent_rows(spec, r):
            ledger[row.topic].append(row)
        lows = {tp: lo for tp, (lo, _hi) in ranges.items()}
        for topic in topics:
            tallies[r.combo].merge(judge_topic(spec, topic, by_topic.get(topic, []), ledger.get(topic, []), lows,
                                               summary=deliveries[r.combo]))
    info = find_encoder(spec.encoder, spec.protocol)
    protocol = get_protocol(spec.protocol)
    sections = []
    for c in sorted(tallies):
        opts = spec.options(c)
        sec = Section(spec.protocol, info.name if spec.sink == "reference" else f"{info.name}+{spec.sink}",
                      info.kind.value, opts, describe_options(opts, protocol), tallies[c],
                      workloads=stats[c]["workloads"], records=stats[c]["records"], seed=spec.seed)
        if stats[c]["restarts"]:
            sec.notes.append(f"the sink restarted from its checkpoint {stats[c]['restarts']} time(s)")
        sec.notes.extend(deliveries[c].notes())
        sections.append(sec)
    return sections
