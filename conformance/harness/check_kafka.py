"""`conformance check --kafka URL --topics …`: check live topics of a real deployment.

The read is bounded: each partition from its start (the group's committed offset with
`--group`, else the earliest offset the broker holds) to the high watermark seen when the check
began. Record checks run on every record and stream checks per topic-partition, on Spark
executors (one task per topic-partition) or in this process; only tallies reach the driver.
A protocol whose stream rules span partitions (TiCDC Simple: DDLs and bootstraps reach every
partition) is checked per topic instead: one task reads all of a topic's partitions.
With `--group`, the end offsets are committed afterwards, so the next check continues there
(a CI gate over a topic that keeps growing).
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
    for s in tally.checks.values():
        if s.id.startswith(("delivery.", "infra.")):
            s.skipped = "needs the generated workload (source truth); decidable in `conformance run`"
    return tally


def per_topic(spec: CheckSpec) -> bool:
    """Whether the protocol's stream checks need a topic's partitions together."""
    return get_protocol(spec.protocol).extra.get("stream_scope") == "topic"


def check_records(spec: CheckSpec, records: Iterator[Record], tally: Tally, partitions: int | None = None) -> int:
    """Record and stream checks over records of one topic-partition (or, per topic, of its
    partitions one after another), each in offset order."""
    from .stages import _registry

    protocol = get_protocol(spec.protocol)
    checker = protocol.checker(dict(spec.options), _registry(spec.registry_url), tally,  # type: ignore[attr-defined]
                               with_source=False, partitions=partitions)
    n = 0
    for r in records:
        n += 1
        tally.passed(CAPTURE_RECORD_FORMAT)
        checker.check_record(r, Location(topic=r.topic, partition=r.partition, offset=r.offset))
    checker.finish()
    return n


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


def check_local(spec: CheckSpec, config: Mapping[str, str], ranges: Sequence[Any]) -> tuple[Tally, int]:
    from .kafka_source import read_range

    tally = new_tally(spec)
    bootstrap = config["bootstrap.servers"]
    rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
    total = 0
    if per_topic(spec):
        by_topic: dict[str, list[Any]] = {}
        for rng in ranges:
            by_topic.setdefault(rng.topic, []).append(rng)
        for rngs in by_topic.values():
            rngs.sort(key=lambda r: r.partition)
            records = (rec for r in rngs if not r.empty for rec in _records_of(read_range(bootstrap, r, rest)))
            total += check_records(spec, records, tally, partitions=len(rngs))
        return tally, total
    for rng in ranges:
        if rng.empty:
            continue
        total += check_records(spec, _records_of(read_range(bootstrap, rng, rest)), tally)
    return tally, total


def _records_of(batches: Iterator[Any]) -> Iterator[Record]:
    for b in batches:
        cols = b.to_pydict()
        for i in range(b.num_rows):
            hdrs = tuple((h["key"], h["value"]) for h in (cols["headers"][i] or ()))
            yield Record(cols["topic"][i], cols["key"][i], cols["value"][i], cols["partition"][i], hdrs,
                         cols["timestamp"][i], cols["offset"][i])


def check_spark(spec: CheckSpec, config: Mapping[str, str], ranges: Sequence[Any], master: str
                ) -> tuple[Tally, int]:
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
    if per_topic(spec):
        outcomes = _check_spark_per_topic(spec, df, Counter(r.topic for r in ranges))
    else:
        outcomes = df.mapInArrow(_check_partitions(spec), "n long, blob binary")
    total = 0
    for part, n in reduce_tallies(outcomes, count="n").values():
        tally.merge(part)
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
        yield pa.RecordBatch.from_pydict({"n": pa.array([n], pa.int64()), "blob": pa.array([pickle.dumps(t)])})

    return run


def _check_spark_per_topic(spec: CheckSpec, df: Any, partitions: Mapping[str, int]) -> Any:
    """One task per topic: its records, partition by partition in offset order."""

    def run(table: Any) -> Any:
        import pyarrow as pa

        rows = sorted(table.to_pylist(), key=lambda r: (r["partition"], r["offset"]))
        t = new_tally(spec)
        n = 0
        if rows:
            records = (Record(r["topic"], r["key"], r["value"], r["partition"],
                              tuple((h["key"], h["value"]) for h in (r["headers"] or ())), r["timestamp"], r["offset"])
                       for r in rows)
            n = check_records(spec, records, t, partitions=partitions.get(rows[0]["topic"]))
        return pa.table({"n": pa.array([n], pa.int64()), "blob": pa.array([pickle.dumps(t)], pa.binary())})

    return df.groupBy("topic").applyInArrow(run, "n long, blob binary")
