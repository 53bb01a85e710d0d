"""`conformance check --kafka URL --topics …`: check live topics of a real deployment.

The read is bounded: each partition from its start (the group's committed offset with
`--group`, else the earliest offset the broker holds) to the high watermark seen when the check
began. Record checks run on every record and stream checks per topic-partition, on Spark
executors (one task per topic-partition) or in this process; only tallies reach the driver.
A protocol whose stream rules span partitions (TiCDC Simple: DDLs and bootstraps reach every
partition) is checked per topic instead: one task reads all of a topic's partitions.
With `--group`, the end offsets are committed afterwards, so the next check continues there
(a CI gate over a topic that keeps growing).

Delivery is judged from the log alone (there is no workload): commit-ts order per partition,
per-key order and one partition per key (`capture.DeliveryLogs`). The last needs all of a
topic's partitions together, so it is judged per topic whatever the protocol: in-process the
topic's partitions are read one after another; on Spark, for a protocol checked per
topic-partition, a second job identifies each message where its partition is read and groups
only those small identities by topic. Loss and strays need the workload: skipped, saying so.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..checks.common import CAPTURE_RECORD_FORMAT
from ..checks.registry import Location
from ..checks.results import Tally
from ..encoders.spi import Record
from ..protocols import get_protocol
from .capture import DeliveryLogs, DeliverySummary, TaskResult, judge_log, log_only_checks, prepare_log_only
from .local import make_tally


@dataclass(frozen=True, slots=True)
class CheckSpec:
    protocol: str
    options: tuple[tuple[str, str], ...]
    registry_url: str


def new_tally(spec: CheckSpec) -> Tally:
    protocol = get_protocol(spec.protocol)
    tally = make_tally(protocol)
    for cid in ("encoder.no-crash", "encoder.responsive"):
        tally.skip(cid, "live topics: there is no encoder to call")
    prepare_log_only(tally, spec.protocol)
    return tally


def per_topic(spec: CheckSpec) -> bool:
    """Whether the protocol's stream checks need a topic's partitions together."""
    return get_protocol(spec.protocol).extra.get("stream_scope") == "topic"


def check_records(spec: CheckSpec, records: Iterator[Record], tally: Tally, partitions: int | None = None,
                  delivery: DeliveryLogs | None = None) -> int:
    """Record and stream checks over records of one topic-partition (or, per topic, of its
    partitions one after another), each in offset order; `delivery`, if given, also receives
    every record (judged later, per topic)."""
    from .stages import _registry

    protocol = get_protocol(spec.protocol)
    checker = protocol.checker(dict(spec.options), _registry(spec.registry_url), tally,  # type: ignore[attr-defined]
                               with_source=False, partitions=partitions)
    n = 0
    for r in records:
        n += 1
        tally.passed(CAPTURE_RECORD_FORMAT)
        checker.check_record(r, Location(topic=r.topic, partition=r.partition, offset=r.offset))
        if delivery is not None:
            delivery.add_record(r)
    checker.finish()
    return n


def _delivery_logs(spec: CheckSpec) -> DeliveryLogs:
    from .stages import _registry

    return DeliveryLogs(spec.protocol, dict(spec.options), _registry(spec.registry_url))


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


def check_local(spec: CheckSpec, config: Mapping[str, str], ranges: Sequence[Any], *,
                delivery: DeliverySummary | None = None) -> tuple[Tally, int]:
    """Check in this process, topic by topic; `delivery`, if given, receives the delivery counts."""
    from .kafka_source import read_range

    tally = new_tally(spec)
    bootstrap = config["bootstrap.servers"]
    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    starts = read_starts(ranges)
    total = 0
    by_topic: dict[str, list[Any]] = {}
    for rng in ranges:
        by_topic.setdefault(rng.topic, []).append(rng)
    logs = _delivery_logs(spec)
    for rngs in by_topic.values():
        rngs.sort(key=lambda r: r.partition)
        if per_topic(spec):
            records = (rec for r in rngs if not r.empty for rec in _records_of(read_range(bootstrap, r, rest)))
            total += check_records(spec, records, tally, partitions=len(rngs), delivery=logs)
        else:
            for rng in rngs:
                if not rng.empty:
                    total += check_records(spec, _records_of(read_range(bootstrap, rng, rest)), tally, delivery=logs)
        summary = logs.judge(tally, starts)  # one topic at a time: only its identities are held
        if delivery is not None:
            delivery.merge(summary)
    return tally, total


def _records_of(batches: Iterator[Any]) -> Iterator[Record]:
    for b in batches:
        cols = b.to_pydict()
        for i in range(b.num_rows):
            hdrs = tuple((h["key"], h["value"]) for h in (cols["headers"][i] or ()))
            yield Record(cols["topic"][i], cols["key"][i], cols["value"][i], cols["partition"][i], hdrs,
                         cols["timestamp"][i], cols["offset"][i])


def check_spark(spec: CheckSpec, config: Mapping[str, str], ranges: Sequence[Any], master: str, *,
                delivery: DeliverySummary | None = None) -> tuple[Tally, int]:
    """Check on Spark; `delivery`, if given, receives the delivery counts."""
    from .kafka_source import read_kafka
    from .spark import reduce_tallies, spark_session

    spark = spark_session(master)
    bootstrap = config["bootstrap.servers"]
    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    readable = [r for r in ranges if not r.empty]
    tally = new_tally(spec)
    if not readable:
        return tally, 0
    df = read_kafka(spark, bootstrap, sorted({r.topic for r in readable}), rest, ranges=readable)
    starts = read_starts(ranges)
    if per_topic(spec):
        outcomes = _check_spark_per_topic(spec, df, Counter(r.topic for r in ranges), starts)
    else:
        # The ranges are pinned, so the delivery job reads the very records the checks read.
        outcomes = df.mapInArrow(_check_partitions(spec), "n long, blob binary").unionByName(
            _delivery_per_topic(spec, df, starts))
    total = 0
    for part, n in reduce_tallies(outcomes, count="n").values():
        tally.merge(part.tally)
        if delivery is not None:
            delivery.merge(part.delivery)
        total += n
    return tally, total


def _check_partitions(spec: CheckSpec) -> Any:
    """One task per topic-partition, in offset order."""

    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from .kafka_source import topic_partition_runs

        t = new_tally(spec)
        # One Spark partition is one topic-partition in offset order (topic_partition_runs
        # verifies it): one checker for the whole task keeps its schema cache warm.
        n = check_records(spec, _records_of(b for _t, _p, b in topic_partition_runs(batches)), t)
        yield pa.RecordBatch.from_pydict({"n": pa.array([n], pa.int64()),
                                          "blob": pa.array([pickle.dumps(TaskResult(t))])})

    return run


def _check_spark_per_topic(spec: CheckSpec, df: Any, partitions: Mapping[str, int],
                           starts: Mapping[tuple[str, int], int]) -> Any:
    """One task per topic: its records, partition by partition in offset order, and its delivery."""

    def run(table: Any) -> Any:
        import pyarrow as pa

        rows = sorted(table.to_pylist(), key=lambda r: (r["partition"], r["offset"]))
        t = new_tally(spec)
        n = 0
        logs = _delivery_logs(spec)
        if rows:
            records = (Record(r["topic"], r["key"], r["value"], r["partition"],
                              tuple((h["key"], h["value"]) for h in (r["headers"] or ())), r["timestamp"], r["offset"])
                       for r in rows)
            n = check_records(spec, records, t, partitions=partitions.get(rows[0]["topic"]), delivery=logs)
        res = TaskResult(t, logs.judge(t, starts))
        return pa.table({"n": pa.array([n], pa.int64()), "blob": pa.array([pickle.dumps(res)], pa.binary())})

    return df.groupBy("topic").applyInArrow(run, "n long, blob binary")


IDENTITY_SCHEMA = "topic string, partition int, offset long, entity binary, match binary, ts long, fp binary"
INT64 = range(-(2 ** 63), 2 ** 63)


def _blob(v: Any) -> bytes | None:
    """An identity part as bytes (the protocols give short digests; anything else, its repr)."""
    return v if v is None or isinstance(v, bytes) else repr(v).encode("utf-8")


def _delivery_per_topic(spec: CheckSpec, df: Any, starts: Mapping[tuple[str, int], int]) -> Any:
    """The delivery checks for a protocol checked per topic-partition: each message is
    identified where its partition is read (its identifier is stateless but for caches), and
    only the identities, a few dozen bytes each, are grouped by topic and judged there."""

    def identify(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from ..encoders.sink import fingerprint
        from .stages import _registry

        ident = get_protocol(spec.protocol).identifier(dict(spec.options), _registry(spec.registry_url))  # type: ignore[attr-defined]
        names = ("topic", "partition", "offset", "entity", "match", "ts", "fp")
        for b in batches:
            cols = b.to_pydict()
            out: dict[str, list[Any]] = {k: [] for k in names}
            for topic, part, off, key, value in zip(cols["topic"], cols["partition"], cols["offset"], cols["key"],
                                                    cols["value"], strict=True):
                got = ident(topic, key, value)
                if got is None:  # a control message: no row to account for
                    continue
                ent, match, ts = got
                for k, v in zip(names, (topic, part, off, _blob(ent), _blob(match),
                                        ts if isinstance(ts, int) and ts in INT64 else None,
                                        fingerprint(topic, key, value) if match is None else None), strict=True):
                    out[k].append(v)
            yield pa.RecordBatch.from_pydict(out, schema=_identity_schema())

    def judge(table: Any) -> Any:
        import pyarrow as pa

        from ..checks.delivery import LogEntry

        t = Tally(log_only_checks(spec.protocol))
        rows = table.to_pylist()
        summary = DeliverySummary()
        if rows:
            entries = [LogEntry(r["topic"], r["partition"], r["offset"], r["entity"], r["match"], r["ts"], r["fp"])
                       for r in rows]
            summary = judge_log(spec.protocol, dict(spec.options), rows[0]["topic"], entries, t, starts)
        blob = pickle.dumps(TaskResult(t, summary))
        return pa.table({"n": pa.array([0], pa.int64()), "blob": pa.array([blob], pa.binary())})

    return (df.select("topic", "partition", "offset", "key", "value").mapInArrow(identify, IDENTITY_SCHEMA)
            .groupBy("topic").applyInArrow(judge, "n long, blob binary"))


def _identity_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                      ("entity", pa.binary()), ("match", pa.binary()), ("ts", pa.int64()), ("fp", pa.binary())])
