"""`conformance check`: captured records (a records.jsonl file) and live topics of a deployment.

One function judges a log without its workload, whatever it comes from: `check_log` runs the
protocol's checker in capture mode over the records (in offset order per partition), records
every unreadable line as a `capture.record-format` finding, and hands each record to the
log-only delivery analysis (`capture.DeliveryLogs`). The file check, the live check in this
process and the live check on Spark executors all call it.

Live topics: the read is bounded, each partition from its start (the group's committed offset
with `--group`, else the earliest offset the broker holds) to the high watermark seen when the
check began. Small topic-partitions are read in packs (one consumer, every partition of the pack
assigned at once), big ones alone. Stream checks run per topic-partition (a log each), or per
topic where the protocol's stream rules span partitions (`Capabilities.stream_scope`). Delivery is
judged per topic from the log alone. On Spark, a protocol checked per topic-partition is read in
packs of topic-partitions, a topic's partitions possibly in several tasks: the task that checks a
partition also identifies each of its messages, and only those small identities are grouped by
topic (one read of every record); a protocol checked per topic is read in packs of whole topics,
each task judging its topics' delivery itself (no shuffle), and so is any protocol's capture
whose every topic fits in a pack (`whole_topics_fit`: many small topics, as a deployment with a
topic per table has). Loss and strays need the workload: skipped, saying so.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import pickle
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby, repeat
from pathlib import Path
from typing import Any

from ..checks.common import CAPTURE_RECORD_FORMAT, ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from ..checks.delivery import LogRow
from ..checks.registry import Actor, Failure, Location
from ..checks.results import RecordPlan, Tally
from ..checks.source import SOURCE_CHECKS
from ..encoders.spi import Record
from ..protocols import get_protocol
from ..protocols.base import CAPTURE, CAPTURE_COMPLETE, Identified, ProtocolSuite
from .capture import (
    BadLine,
    DeliveryLogs,
    DeliverySummary,
    judge_log,
    log_entry,
    log_only_checks,
    prepare_log_only,
    read_records,
)
from .runners import records_of
from .stages import new_tally

#: The collector's thresholds inside a check loop (`_quiet_gc`): young collections every 10,000
#: net allocations instead of 700, the middle generation every 10 of them, and a full collection
#: considered after each of those (the interpreter's default: after 10) and run by the
#: interpreter's own rule (when the old generation has grown by a quarter since the last). So
#: cycles are freed as before, a little later: a long check's dropped state (a partition's log,
#: once its stream checks ran) is held at most about twice as long as at the default thresholds.
QUIET_GC_THRESHOLD = (10_000, 10, 1)
_gc_lock = threading.Lock()
_gc_depth = 0


@contextlib.contextmanager
def _quiet_gc() -> Iterator[None]:
    """The garbage collector out of a check loop's way, and back as it was after.

    A check keeps a little of every record until its stream checks run (a log entry, a delivery
    entry, a seen key: hundreds of thousands of tracked objects), while the collector, at its
    default thresholds, walks every young object about every 700 allocations and the whole heap
    each time it grows by a quarter (the interpreter's modules, a caller's records in memory,
    the Spark worker's state, none of them garbage this loop made). So the heap that exists
    when the loop starts is frozen (`gc.freeze`: never walked until `gc.unfreeze` puts it back
    in the oldest generation at the end) and the young generations are collected less often
    (`QUIET_GC_THRESHOLD`). Collection is never turned off: cycles the loop drops are freed as
    before, only later, and full collections still run by the interpreter's rule over what the
    loop made. Nested or concurrent loops (a thread each) share the outermost one's setting."""
    global _gc_depth
    with _gc_lock:
        _gc_depth += 1
        outer = _gc_depth == 1
        if outer:
            before = gc.get_threshold()
            # Where someone froze a heap already (a forking server does), it stays as they left it:
            # `gc.unfreeze` would thaw theirs too.
            freeze = gc.get_freeze_count() == 0
            if freeze:
                gc.freeze()
            gc.set_threshold(*QUIET_GC_THRESHOLD)
    try:
        yield
    finally:
        with _gc_lock:
            _gc_depth -= 1
            if outer:
                gc.set_threshold(*before)
                if freeze:
                    gc.unfreeze()


def capture_tally(suite: ProtocolSuite, why_no_encoder: str) -> Tally:
    """A tally for checking a log without its encoder or workload: the encoder's checks are
    skipped (there is none to call), the delivery checks set up for the log alone."""
    tally = new_tally(suite)
    for cid in (ENCODER_NO_CRASH, ENCODER_RESPONSIVE):
        tally.skip(cid, why_no_encoder)
    for cid in SOURCE_CHECKS:
        tally.skip(cid, "a log without its workload: no database server's account to judge")
    prepare_log_only(tally, suite.name)
    return tally


def bad_line(tally: Tally, item: BadLine) -> None:
    tally.fail(CAPTURE_RECORD_FORMAT, Failure(
        f"line {item.line}: {item.problem}", expected="records.jsonl format v1", actual=item.excerpt,
        location=Location(line=item.line), actor=Actor.CAPTURE,
        hint="fix the tool that wrote the capture; this line was not checked"))


def check_log(suite: ProtocolSuite, options: Mapping[str, str], registry: Any,
              items: Iterable[tuple[int | None, Record | BadLine]], tally: Tally, *, partitions: int | None = None,
              delivery: DeliveryLogs | None = None, progress: Callable[[int], None] | None = None,
              complete: bool = False) -> int:
    """Record and stream checks over one log without its workload (captured lines, or records
    read from Kafka: `(line number or None, record or what is wrong with the line)`), in offset
    order per partition; `delivery`, if given, also receives every record (judged per topic
    later). Returns how many records were checked."""
    log = LogCheck(suite, options, registry, tally, partitions=partitions, delivery=delivery, complete=complete)
    with _quiet_gc():
        log.add_all(items, progress)
        return log.finish()


class LogCheck:
    """`check_log` one item at a time, for callers that interleave their own work (a Spark task
    yields the identities of the records it checks as it goes)."""

    __slots__ = ("checker", "delivery", "tally", "_read")

    def __init__(self, suite: ProtocolSuite, options: Mapping[str, str], registry: Any, tally: Tally, *,
                 partitions: int | None = None, delivery: DeliveryLogs | None = None, complete: bool = False) -> None:
        self.checker = suite.checker(options, registry, tally, CAPTURE_COMPLETE if complete else CAPTURE,
                                     partitions=partitions)
        self.tally = tally
        self.delivery = delivery
        # Every record read is counted a pass of capture.record-format under one plan (settled
        # when the tally is read, as the checkers' record plans are); its count is `n`.
        self._read = RecordPlan()
        self._read.fixed = [(CAPTURE_RECORD_FORMAT, None)]

    @property
    def n(self) -> int:
        """How many records were checked so far."""
        return self._read.count

    def add(self, line: int | None, item: Record | BadLine) -> None:
        if isinstance(item, BadLine):
            bad_line(self.tally, item)
            return
        self.tally.count(self._read)
        checker = self.checker
        if not checker.check_fast(item):
            checker.check_record(item, Location(topic=item.topic, partition=item.partition, offset=item.offset,
                                                line=line))
        if self.delivery is not None:
            self.delivery.add_record(item, checker.identity(item))

    def add_all(self, items: Iterable[tuple[int | None, Record | BadLine]],
                progress: Callable[[int], None] | None = None) -> None:
        """`add` of every item (`progress` told every 2,048th line number), its steps inline with
        the methods it calls bound once: a check loop runs this for every record."""
        checker, delivery = self.checker, self.delivery
        check_fast, check_record, identity = checker.check_fast, checker.check_record, checker.identity
        add_record = delivery.add_record if delivery is not None else None
        n = 0  # records read: `self.tally.count(self._read)` for each, at the end (nothing reads them before)
        try:
            for line, item in items:
                if item.__class__ is not Record and isinstance(item, BadLine):
                    bad_line(self.tally, item)
                    continue
                n += 1
                taken = check_fast(item)
                if not taken:
                    check_record(item, Location(topic=item.topic, partition=item.partition, offset=item.offset,
                                                line=line))
                if add_record is not None:  # the identity `check_fast` handed over, else the checker's answer
                    add_record(item, taken if taken.__class__ is tuple else identity(item))
                if progress is not None and line is not None and line % 2048 == 0:
                    progress(line)
        finally:
            self._read.count += n
            self.tally.unsettled.add(self._read)

    def finish(self) -> int:
        """Run the stream checks; returns how many records were checked."""
        self.checker.finish()
        return self.n


def unnumbered(records: Iterable[Record]) -> Iterator[tuple[None, Record]]:
    """(None, record) for each record: a line number that is not known (zip's pairs: no Python
    frame per record in a check loop)."""
    return zip(repeat(None), records)


# -- a capture file ---------------------------------------------------------------------------------


def check_file(suite: ProtocolSuite, options: Mapping[str, str], registry: Any, path: Path, tally: Tally, *,
               progress: Callable[[int], None] | None = None, complete: bool = False,
               keep: Callable[[str], bool] | None = None) -> tuple[int, DeliverySummary]:
    """A records.jsonl capture: every line checked (of the topics `keep` keeps); delivery from the
    log alone."""
    logs = DeliveryLogs(suite.name, options, registry)
    lines = read_records(path)
    if keep is not None:
        lines = ((n, r) for n, r in lines if not isinstance(r, Record) or keep(r.topic))
    n = check_log(suite, options, registry, lines, tally, delivery=logs, progress=progress,
                  complete=complete)
    return n, logs.judge(tally)


# -- live topics ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LiveSpec:
    """What a worker checking live topics needs (pickled to Spark executors)."""

    protocol: str
    options: tuple[tuple[str, str], ...]
    registry_url: str
    complete: bool = False  # `check --complete`: each partition read to the end of what the tool wrote

    @property
    def suite(self) -> ProtocolSuite:
        return get_protocol(self.protocol)

    def live_tally(self) -> Tally:
        return capture_tally(self.suite, "live topics: there is no encoder to call")

    def registry(self) -> Any:
        from .spark_runner import worker_registry

        return worker_registry(self.registry_url)

    def per_topic(self) -> bool:
        """Whether the protocol's stream checks need a topic's partitions together."""
        return self.suite.capabilities.stream_scope == "topic"


def read_starts(ranges: Sequence[Any]) -> dict[tuple[str, int], int]:
    """Where each partition's read begins: above 0, earlier offsets were not read (retention,
    or a group's committed offset)."""
    return {(r.topic, r.partition): r.low for r in ranges}


def starting_offsets(config: Mapping[str, str], topics: Sequence[str], group: str | None
                     ) -> dict[tuple[str, int], int]:
    """The group's committed offsets (where it has any)."""
    if not group:
        return {}
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        md = c.list_topics(timeout=10)
        tps = [TopicPartition(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions]
        out = {}
        for tp in c.committed(tps, timeout=10):
            if tp.offset >= 0:
                out[(tp.topic, tp.partition)] = tp.offset
        return out
    finally:
        c.close()


def commit(config: Mapping[str, str], group: str, ends: Mapping[tuple[str, int], int]) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({**config, "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=[TopicPartition(t, p, off) for (t, p), off in ends.items()], asynchronous=False)
    finally:
        c.close()


def check_live_local(spec: LiveSpec, config: Mapping[str, str], ranges: Sequence[Any], *,
                     progress: Callable[[int], None] | None = None) -> tuple[Tally, int, DeliverySummary]:
    """Check live topics in this process: small topics read together in packs (one consumer, every
    partition of the pack assigned at once), a big topic alone, partition by partition; delivery
    judged after each pack (only its identities are held). `progress`: the records checked so far,
    now and then."""
    from .kafka_source import PACK_MAX_OFFSETS

    tally = spec.live_tally()
    bootstrap = config["bootstrap.servers"]
    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    starts = read_starts(ranges)
    total = 0
    delivery = DeliverySummary()
    suite, options, registry = spec.suite, dict(spec.options), spec.registry()
    for pack in topic_packs(ranges, PACK_MAX_OFFSETS):
        logs = DeliveryLogs(spec.protocol, options, registry)
        total += check_topics(spec, suite, options, registry, bootstrap, rest, pack, tally, logs, progress=progress,
                              done=total)
        if progress is not None:
            progress(total)
        delivery.merge(logs.judge(tally, starts))
    return tally, total, delivery


def topic_packs(ranges: Sequence[Any], target: int) -> list[tuple[tuple[Any, ...], ...]]:
    """The ranges of each topic (in partition order), whole topics packed for reading: a topic of
    `target` offsets or more alone, smaller ones together (`pack_ranges`)."""
    from .kafka_source import pack_ranges

    by_topic: dict[str, list[Any]] = {}
    for rng in ranges:
        by_topic.setdefault(rng.topic, []).append(rng)
    topics = [tuple(sorted(rngs, key=lambda r: r.partition)) for rngs in by_topic.values()]
    return pack_ranges(topics, target, size=lambda rngs: sum(r.count for r in rngs))


def whole_topics_fit(ranges: Sequence[Any], target: int) -> bool:
    """Whether every topic's ranges together hold fewer than `target` offsets (a pack of whole
    topics is then no bigger than a pack of topic-partitions: `pack_ranges`)."""
    sizes: dict[str, int] = {}
    for r in ranges:
        sizes[r.topic] = sizes.get(r.topic, 0) + r.count
    return all(n < target for n in sizes.values())


def check_topics(spec: LiveSpec, suite: ProtocolSuite, options: Mapping[str, str], registry: Any, bootstrap: str,
                 config: Mapping[str, str], pack: Sequence[Sequence[Any]], tally: Tally, logs: DeliveryLogs, *,
                 progress: Callable[[int], None] | None = None, done: int = 0) -> int:
    """Record and stream checks of whole topics (`pack`: each topic's ranges in partition order),
    each partition its own log, or each topic one where the protocol's stream rules span partitions;
    every record also goes to `logs`. Several topics are read together (`read_packed`: each
    topic-partition whole and in offset order), a single topic partition by partition as it
    streams in. Returns how many records were checked; `progress` gets the count (plus `done`, what
    the caller checked before) now and then."""
    from itertools import chain

    from .kafka_records import read_packed_records
    from .kafka_source import read_range

    parts: dict[tuple[str, int], Iterable[Record]]
    if len(pack) == 1:
        parts = {(r.topic, r.partition): records_of(read_range(bootstrap, r, config)) for r in pack[0]}
    else:
        readable = [r for rngs in pack for r in rngs if not r.empty]
        held = dict(read_packed_records(bootstrap, readable, config))
        parts = {(r.topic, r.partition): held.get((r.topic, r.partition), ()) for rngs in pack for r in rngs}
    n = 0
    with _quiet_gc():  # one setting for the pack's logs (each check_log's own is then a no-op)
        for rngs in pack:
            logs_of_topic = [parts[(r.topic, r.partition)] for r in rngs]
            if spec.per_topic():
                n += check_log(suite, options, registry,
                               _counted(chain.from_iterable(logs_of_topic), done + n, progress),
                               tally, partitions=len(rngs), delivery=logs, complete=spec.complete)
            else:
                for records in logs_of_topic:
                    n += check_log(suite, options, registry, _counted(records, done + n, progress), tally,
                                   delivery=logs, complete=spec.complete)
    return n


def _counted(records: Iterable[Record], before: int, progress: Callable[[int], None] | None
             ) -> Iterator[tuple[None, Record]]:
    """`unnumbered(records)`, telling `progress` the count (from `before`) every 4,096 records."""
    if progress is None:
        yield from unnumbered(records)
        return
    for i, r in enumerate(records, 1):
        if not i & 4095:
            progress(before + i)
        yield None, r


def check_live_spark(spec: LiveSpec, config: Mapping[str, str], ranges: Sequence[Any], master: str, *,
                     progress: Callable[[int], None] | None = None) -> tuple[Tally, int, DeliverySummary]:
    """Check live topics on Spark. `progress`: the records checked so far (as tasks end)."""
    from .kafka_source import default_pack, pack_ranges
    from .spark import Counted, reduce_tallies, spark_session

    spark = spark_session(master)
    bootstrap = config["bootstrap.servers"]
    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    readable = [r for r in ranges if not r.empty]
    tally = spec.live_tally()
    delivery = DeliverySummary()
    if not readable:
        return tally, 0, delivery
    starts = read_starts(ranges)
    with Counted(spark, progress) as checked:
        target = default_pack(readable, spark.sparkContext.defaultParallelism)
        if spec.per_topic() or whole_topics_fit(readable, target):
            # Whole topics per task, delivery judged there: where the stream rules span a topic's
            # partitions, or where every topic fits in a pack anyway (packing whole topics then
            # costs no parallelism, and no record's identity crosses the JVM to a second stage).
            topics = topic_packs(ranges, target)
            outcomes = _per_topic(spec, spark.range(0, len(topics), 1, len(topics)), topics, bootstrap, rest,
                                  starts, checked)
        else:
            packs = pack_ranges(readable, target)
            spans = [[(r.topic, r.partition, r.low, r.high) for r in pack] for pack in packs]
            # One pack per task, by its index: no shuffle places them (a round-robin repartition
            # costs a stage, and can put two packs in one task and none in another).
            df = spark.range(0, len(spans), 1, len(spans))
            outcomes = _per_partition(spec, df, spans, bootstrap, rest, starts, checked)
        total = 0
        for part, n in reduce_tallies(outcomes, count="n").values():
            tally.merge(part.tally)
            delivery.merge(part.delivery)
            total += n
    return tally, total, delivery


@dataclass(slots=True)
class TaskResult:
    """What a Spark task of a live check sends back (merged on the executors)."""

    tally: Tally
    delivery: DeliverySummary

    def merge(self, other: TaskResult) -> None:
        self.tally.merge(other.tally)
        self.delivery.merge(other.delivery)


#: A task's tally and delivery judgement (`TaskResult`, pickled) and the records it checked.
RESULT_SCHEMA = "n long, blob binary"


def _result_table(n: int, result: TaskResult) -> Any:
    import pyarrow as pa

    return pa.table({"n": pa.array([n], pa.int64()), "blob": pa.array([pickle.dumps(result)], pa.binary())})


def _per_partition(spec: LiveSpec, ids: Any, packs: Sequence[Sequence[tuple[str, int, int, int]]], bootstrap: str,
                   config: Mapping[str, str], starts: Mapping[tuple[str, int], int], checked: Any) -> Any:
    """`packs`: the topic-partitions to read, as (topic, partition, low, high) spans, a big
    topic-partition alone, small ones packed; `ids`: a DataFrame of the packs' indexes (`id`),
    one per task. Each task reads its packs with
    its own consumer, in the Python worker that checks them (no hand-over of every record through
    the JVM), and judges each topic-partition as its own log in offset order, as
    `check_live_local` does. It identifies every message as it goes (a protocol checked per
    topic-partition has an identifier that is stateless but for caches, so the decode the checks
    just did is reused): only the identities, a few dozen bytes each, and one tally per task are
    shuffled, the identities grouped by topic for the delivery judgement, the tallies passed
    through under the null topic."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        from .kafka_source import KafkaSourceError, PartitionRange, read_packed, read_range, topic_partition_runs

        t = spec.live_tally()
        options, registry = dict(spec.options), spec.registry()
        rows = _IdentityRows(spec.suite.identifier(options, registry))
        n = 0
        done: set[tuple[str, int]] = set()
        with _quiet_gc():
            for b in batches:
                for i in b.column("id").to_pylist():
                    ranges = [PartitionRange(*span) for span in packs[i]]
                    read = (read_range(bootstrap, ranges[0], config) if len(ranges) == 1
                            else read_packed(bootstrap, ranges, config))
                    # Each topic-partition comes whole and in offset order (topic_partition_runs
                    # verifies the order; a partition coming back after another would be split in
                    # two logs).
                    for tp, runs in groupby(topic_partition_runs(read), key=lambda run: run[:2]):
                        if tp in done:
                            raise KafkaSourceError(f"records of {tp[0]}[{tp[1]}] reached a check task in pieces")
                        done.add(tp)
                        log = LogCheck(spec.suite, options, registry, t, complete=spec.complete)
                        for record in records_of(rb for _t, _p, rb in runs):
                            log.add(None, record)
                            if rows.add(record, log.checker.identity(record)):
                                yield rows.batch()
                        k = log.finish()
                        checked.add(k)
                        n += k
        yield rows.batch()
        yield _outcome_batch(n, TaskResult(t, DeliverySummary()))

    def judge(table: Any) -> Any:
        if table.column("blob").null_count < table.num_rows:  # the null topic: the tasks' tallies
            return table.select(["n", "blob"])
        t = Tally(log_only_checks(spec.protocol))
        # Plain tuples in `LogEntry`'s field order (`LogRow`: what a kept log holds, see there).
        entries: list[LogRow] = list(zip(*(table.column(k).to_pylist() for k in _IdentityRows.NAMES), strict=True))
        summary = judge_log(spec.protocol, dict(spec.options), entries[0][0], entries, t, starts)
        return _result_table(0, TaskResult(t, summary))

    from pyspark.sql.pandas.types import from_arrow_schema

    return ids.mapInArrow(run, from_arrow_schema(outcome_schema())).groupBy("topic").applyInArrow(judge,
                                                                                                  RESULT_SCHEMA)


def _per_topic(spec: LiveSpec, ids: Any, packs: Sequence[Sequence[Sequence[Any]]], bootstrap: str,
               config: Mapping[str, str], starts: Mapping[tuple[str, int], int], checked: Any) -> Any:
    """`packs`: whole topics (each its ranges in partition order), a big topic alone, small ones
    packed; `ids`: a DataFrame of the packs' indexes, one per task. Each task reads its topics
    (`check_topics`, as `check_live_local` does) and judges their delivery: no record is shuffled."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        suite, options, registry = spec.suite, dict(spec.options), spec.registry()
        for b in batches:
            for i in b.column("id").to_pylist():
                t = spec.live_tally()
                logs = DeliveryLogs(spec.protocol, options, registry)
                n = check_topics(spec, suite, options, registry, bootstrap, config, packs[i], t, logs)
                checked.add(n)
                yield _result_table(n, TaskResult(t, logs.judge(t, starts))).to_batches()[0]

    return ids.mapInArrow(run, RESULT_SCHEMA)


INT64 = range(-(2 ** 63), 2 ** 63)


def _blob(v: Any) -> bytes | None:
    """An identity part as bytes (the protocols give short digests; anything else, its repr)."""
    return v if v is None or isinstance(v, bytes) else repr(v).encode("utf-8")


class _IdentityRows:
    """The delivery identities of the records a task checks, in Arrow batches of `outcome_schema()`."""

    NAMES = ("topic", "partition", "offset", "entity", "match", "ts", "fp")
    BATCH = 4096

    def __init__(self, identify: Any) -> None:
        self.identify = identify
        self.cols: dict[str, list[Any]] = {k: [] for k in self.NAMES}

    def add(self, r: Record, known: tuple[Identified] | None = None) -> bool:
        """Identify `r` (a control message has no row to account for; `known`: its identity, as
        the checker's fast path worked it out); True when a batch is full."""
        e = log_entry(self.identify, r.topic, r.partition or 0, r.offset or 0, r.key, r.value, known)
        if e is not None:
            for k, v in zip(self.NAMES, (e.topic, e.partition, e.offset, _blob(e.entity), _blob(e.match),
                                         e.ts if isinstance(e.ts, int) and e.ts in INT64 else None, e.fingerprint),
                            strict=True):
                self.cols[k].append(v)
        return len(self.cols["topic"]) >= self.BATCH

    def batch(self) -> Any:
        import pyarrow as pa

        n = len(self.cols["topic"])
        out = pa.RecordBatch.from_pydict({"n": [None] * n, "blob": [None] * n, **self.cols}, schema=outcome_schema())
        for column in self.cols.values():
            column.clear()
        return out


def _outcome_batch(n: int, result: TaskResult) -> Any:
    import pyarrow as pa

    schema = outcome_schema()
    return pa.RecordBatch.from_pydict({"n": [n], "blob": [pickle.dumps(result)],
                                       **{k: [None] for k in _IdentityRows.NAMES}}, schema=schema)


@functools.cache
def outcome_schema() -> Any:
    """What a `_per_partition` task emits: identity rows (blob null) and one tally row (topic null)."""
    import pyarrow as pa

    return pa.schema([("n", pa.int64()), ("blob", pa.binary()), ("topic", pa.string()), ("partition", pa.int32()),
                      ("offset", pa.int64()), ("entity", pa.binary()), ("match", pa.binary()), ("ts", pa.int64()),
                      ("fp", pa.binary())])
