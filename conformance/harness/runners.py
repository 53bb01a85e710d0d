"""The runners that run the stages in this process: `MemoryRunner` (the in-memory log, no broker)
and `KafkaRunner` (a Kafka cluster, with broker faults on the embedded one). The Spark runner
(`spark_runner.SparkRunner`) runs the same stages on executors. All three return the report
sections built by `stages.sections`, so the same seeds give the same verdicts, labels and notes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import IO, Any, Protocol

from ..encoders.sink import KafkaTransport
from ..encoders.spi import EncoderInfo, Record
from ..errors import InfrastructureError
from ..protocols import get_protocol
from ..reporting.model import Section
from .encode import LogRecord, MemoryLog
from .stages import ComboResult, HangLatch, RunSpec, UnitResult, encode_unit, generate, judge_unit, new_tally, sections

Progress = Callable[[int], None]


class Runner(Protocol):
    """Runs every (combination, shard) unit of a spec through the stages."""

    def run(self, spec: RunSpec, shards: Sequence[int], *, progress: Progress | None = None) -> list[Section]: ...


class MemoryRunner:
    """Every unit in this process, into an in-memory log (a broker that never fails), one unit
    after another; `dump` (if given) receives every record as a records.jsonl line. `encoder`
    (if given) is the encoder to run instead of looking `spec.encoder` up by name: an object built
    in this process (a command with its own working directory, a conftest's encoder)."""

    def __init__(self, registry: Any, *, dump: IO[str] | None = None, encoder: EncoderInfo | None = None) -> None:
        self.registry = registry
        self.dump = dump
        self.encoder = encoder

    def run(self, spec: RunSpec, shards: Sequence[int], *, progress: Progress | None = None) -> list[Section]:
        t0 = time.monotonic()
        suite = get_protocol(spec.protocol)
        results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(suite)))
        latch = HangLatch()
        try:
            for combo in range(len(spec.combos)):
                for shard in shards:
                    self.run_unit(spec, combo, shard, results[combo], latch, info=self.encoder)
                    if progress:
                        progress(1)
        except InfrastructureError as e:  # the run cannot go on (a database server died…)
            results[combo].errors.append(str(e))
        return sections(spec, results, duration_s=time.monotonic() - t0, encoder=self.encoder)

    def run_unit(self, spec: RunSpec, combo: int, shard: int, into: ComboResult, latch: HangLatch, *,
                 workload: Any = None, info: Any = None) -> UnitResult:
        log = MemoryLog()
        unit = encode_unit(spec, combo, shard, log, self.registry, latch, workload=workload, info=info)
        into.add_unit(unit)
        if unit.skipped:
            return unit
        t0 = time.perf_counter()
        for topic in judge_unit(spec, unit, {t: log.of(t) for t in log.topics()}, {}, self.registry,
                                workload=workload):
            into.add_topic(topic)
        into.seconds["judge"] += time.perf_counter() - t0
        if self.dump is not None:
            for r in log.records():
                self.dump.write(record_line(r.record()) + "\n")
        return unit


class KafkaRunner:
    """Every unit in this process through a Kafka cluster (broker faults on the embedded one):
    each unit is produced, then its own topics are read back and judged. `encoder`: as for
    `MemoryRunner`."""

    def __init__(self, cluster: Any, registry: Any, *, faults: str | None = None,
                 log: Callable[[str], None] | None = None, encoder: EncoderInfo | None = None) -> None:
        self.cluster = cluster
        self.registry = registry
        self.faults = faults
        self.log = log
        self.encoder = encoder

    def run(self, spec: RunSpec, shards: Sequence[int], *, progress: Progress | None = None) -> list[Section]:
        suite = get_protocol(spec.protocol)
        units = [(c, s) for c in range(len(spec.combos)) for s in shards]
        t = time.perf_counter()
        topics = unit_topics(spec, units)
        prepare_topics(self.cluster, topics, spec.partitions)
        driver = {"topics (driver)": time.perf_counter() - t}
        t0 = time.monotonic()
        if spec.pace_s:  # one process: the units share the schedule's time, the first ones meet it
            spec = dataclasses.replace(spec, pace_until=time.time() + spec.pace_s, pace_s=0.0)
        results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(suite)))
        worker = KafkaWorker(spec, self.registry, encoder=self.encoder)
        try:
            with injecting(self.cluster, self.faults, topics, self.log) as notes:
                worker.run_units(units, results, progress=progress)
        finally:
            worker.close()
        return sections(spec, results, notes=notes, duration_s=time.monotonic() - t0, encoder=self.encoder,
                        driver_seconds=driver)


class KafkaWorker:
    """What one worker (this process, or a Spark task) keeps while it runs units over Kafka: the
    transport, one reader (one consumer and one admin client for every unit's log), the hang
    latch."""

    def __init__(self, spec: RunSpec, registry: Any, *, encoder: EncoderInfo | None = None) -> None:
        from .kafka_source import LogReader

        self.spec = spec
        self.registry = registry
        self.encoder = encoder
        config = dict(spec.kafka_config)
        self.transport = KafkaTransport(config)
        self.reader = LogReader(config.pop("bootstrap.servers"), config, timeout=max(60.0, spec.flush_timeout))
        self.latch = HangLatch()

    def run_units(self, units: Iterable[tuple[int, int]], results: Mapping[int, ComboResult], *,
                  progress: Progress | None = None) -> None:
        """Encode and produce each unit; every `CHUNK` units, read their topics back together and
        judge them (a unit's log is final once its producer has flushed)."""
        pending: list[UnitResult] = []
        for combo, shard in units:
            try:
                unit = encode_unit(self.spec, combo, shard, self.transport, self.registry, self.latch,
                                   info=self.encoder)
            except InfrastructureError as e:  # the worker cannot go on (a database server died…)
                results[combo].errors.append(str(e))
                break
            results[combo].add_unit(unit)
            if not unit.skipped:
                pending.append(unit)
            if len(pending) >= self.CHUNK:
                self._judge(pending, results)
                pending = []
            if progress:
                progress(1)
        self._judge(pending, results)

    #: Units whose logs are read together (one assignment of all their partitions). A read has a
    #: fixed cost (metadata, watermarks, the fetcher starting on every partition: ~0.3 s on the
    #: embedded cluster), so the default run's tasks (~100 units each) read once.
    CHUNK = 100

    def _judge(self, units: Sequence[UnitResult], results: Mapping[int, ComboResult]) -> None:
        if not units:
            return
        present = self.reader.topics()
        names = {}
        for unit in units:
            prefix = self.spec.prefix(unit.combo, unit.shard)
            names[id(unit)] = sorted(set(unit.topics) | {t for t in present if t.startswith(prefix)})
        t0 = time.perf_counter()
        logs, lows = read_logs(self.reader, sorted({t for n in names.values() for t in n}), present=present)
        t1 = time.perf_counter()
        for unit in units:
            mine = {t: logs[t] for t in names[id(unit)] if t in logs}
            t2 = time.perf_counter()
            for topic in judge_unit(self.spec, unit, mine, lows, self.registry):
                results[unit.combo].add_topic(topic)
            results[unit.combo].seconds["judge"] += time.perf_counter() - t2
            # The read is shared by the chunk's units: each combination gets its units' share.
            results[unit.combo].seconds["read back"] += (t1 - t0) / len(units)

    def close(self) -> None:
        self.reader.close()


# -- Kafka helpers shared by the Kafka and Spark runners --------------------------------------------


def unit_topics(spec: RunSpec, units: Sequence[tuple[int, int]]) -> list[str]:
    """Every topic the units will write (each shard's workload is generated once to learn them,
    whatever the option combinations that run it)."""
    suite = get_protocol(spec.protocol)
    combos: dict[int, list[int]] = defaultdict(list)
    for c, s in units:
        combos[s].append(c)
    topics: set[str] = set()
    for s, cs in combos.items():
        workload = generate(spec.seed, s, spec.shape)
        for c in cs:
            topics.update(suite.topics(workload, spec.options(c), spec.prefix(c, s)))
    return sorted(topics)


def prepare_topics(cluster: Any, topics: Sequence[str], partitions: int) -> None:
    """Create the topics up front, with the run's partition count (the embedded cluster through
    its own API, a real one through the admin API, in batches)."""
    cluster.create_topics(topics, partitions)


def read_logs(reader: Any, topics: Sequence[str], *, present: Iterable[str] | None = None
              ) -> tuple[dict[str, list[LogRecord]], dict[tuple[str, int], int]]:
    """Every record of `topics` up to their high watermarks now, as LogRecords by topic, and the
    low watermark of every partition that retention has trimmed (`reader`: a
    `kafka_source.LogReader`, the one Kafka reader). `present`: the cluster's topics, if the
    caller has just listed them (a listing is all the cluster's topics: thousands in a run)."""
    listed = set(reader.topics() if present is None else present)
    names = [t for t in topics if t in listed]
    out: dict[str, list[LogRecord]] = defaultdict(list)
    if not names:
        return out, {}
    ranges = reader.plan(names)
    for topic, partition, offset, key, value, headers, ts in reader.read_many(ranges):
        out[topic].append(LogRecord(topic, partition, offset, key, value, tuple(headers), ts))
    return out, {(r.topic, r.partition): r.low for r in ranges if r.low > 0}


def read_topics(cluster: Any, topics: Sequence[str], config: Mapping[str, str], *, timeout: float = 60.0
                ) -> tuple[dict[str, list[LogRecord]], dict[tuple[str, int], int]]:
    """`read_logs` with a reader of its own."""
    from .kafka_source import LogReader

    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    reader = LogReader(config["bootstrap.servers"], rest, timeout=timeout)
    try:
        return read_logs(reader, topics)
    finally:
        reader.close()


def records_of(batches: Iterator[Any]) -> Iterator[Record]:
    """Records from the Kafka source's Arrow batches."""
    for b in batches:
        cols = b.to_pydict()
        for i in range(b.num_rows):
            hdrs = tuple((h["key"], h["value"]) for h in (cols["headers"][i] or ()))
            yield Record(cols["topic"][i], cols["key"][i], cols["value"][i], cols["partition"][i], hdrs,
                         cols["timestamp"][i], cols["offset"][i])


def record_line(r: Record) -> str:
    """One records.jsonl line (format v1) for a record that has its partition and offset."""
    import base64
    import json

    def b64(v: bytes | None) -> str | None:
        return None if v is None else base64.b64encode(v).decode("ascii")

    return json.dumps({"topic": r.topic, "partition": r.partition, "offset": r.offset, "key": b64(r.key),
                       "value": b64(r.value), "timestamp": r.timestamp,
                       "headers": [[k, b64(v)] for k, v in r.headers]}, ensure_ascii=False)


def dump_topics(cluster: Any, topics: Sequence[str], config: Mapping[str, str], out: IO[str]) -> int:
    """Write every record of `topics` as records.jsonl lines; returns how many."""
    n = 0
    for topic in topics:  # one topic at a time: the driver holds one topic's records
        logs, _ = read_topics(cluster, [topic], config)
        for r in logs.get(topic, []):
            out.write(record_line(r.record()) + "\n")
            n += 1
    return n


# -- broker faults ----------------------------------------------------------------------------------


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
