"""Runs the Kafka stages in-process (`conformance run --no-spark`), one unit after another.

The same stage functions as the Spark pipeline, so both give the same verdicts on the same
seed; faults are injected on the embedded cluster while stage A produces.
"""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def injecting(cluster: Any, faults: str | None, topics: Sequence[str],
              log: Callable[[str], None] | None) -> Iterator[None]:
    """Run the fault schedule (if any) on the cluster while the body produces."""
    if not faults:
        yield
        return
    from ..infra.faults import FaultInjector

    injector = FaultInjector(cluster, faults, list(topics))
    injector.start()
    try:
        yield
    finally:
        injector.stop()
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
    with injecting(cluster, faults, topics, log):
        for c, s in units:
            results.append(produce_unit(spec, c, s))
            if progress:
                progress(1)
    sections = judge_units(spec, cluster, results)
    for sec in sections:
        sec.duration_s = (time.monotonic() - t0) / max(1, len(sections))
    return sections


def judge_units(spec: RunSpec, cluster: Any, results: Sequence[UnitResult]) -> list[Section]:
    """Stage B for every topic the units produced, then one report section per combination."""
    from ..infra.kafka import consume_all, log_ranges

    tallies: dict[int, Tally] = defaultdict(lambda: new_tally(spec.protocol))
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
            tallies[r.combo].merge(judge_topic(spec, topic, by_topic.get(topic, []), ledger.get(topic, []), lows))
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
        sections.append(sec)
    return sections
