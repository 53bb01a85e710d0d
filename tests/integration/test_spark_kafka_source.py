"""The ``conformance-kafka`` Spark data source and the Spark session helpers, end to end.

Kafka is the embedded mock cluster (``open_kafka("embedded://?brokers=3")``, real Kafka
protocol on 127.0.0.1); Spark is the session-scoped ``local[2]`` session from conftest.

Functions that run on executors (``mapInArrow``/``applyInArrow``) are defined inside the tests:
cloudpickle then ships them by value. Module-level functions of a test module would be shipped
by reference, and Spark's Python workers cannot import test modules.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

pytest.importorskip("pyspark", reason="pyspark is not installed")
pa = pytest.importorskip("pyarrow", reason="pyarrow is not installed")

from confluent_kafka import Producer  # noqa: E402

from conformance.harness.kafka_source import (  # noqa: E402
    KAFKA_SCHEMA,
    SOURCE_NAME,
    KafkaSourceError,
    PartitionRange,
    arrow_schema,
    pack_ranges,
    plan_ranges,
    read_kafka,
    topic_partition_runs,
)
from conformance.harness.spark import (  # noqa: E402
    JAVA_HINT,
    SparkUnavailable,
    check_java,
    package_zip,
    spark_session,
)
from conformance.infra.kafka import KafkaCluster, open_kafka  # noqa: E402
from conformance.infra.mockcluster import ApiKey  # noqa: E402

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

pytestmark = pytest.mark.timeout(180)

TOPICS = ("cdc-a", "cdc-b", "cdc-c")
PARTITIONS = 3
PER_TOPIC = 3000

# (topic, partition, offset, key, value, headers)
Row = tuple[str, int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    with open_kafka("embedded://?brokers=3") as cluster:
        yield cluster


def produce(cluster: KafkaCluster, topic: str, messages: Sequence[tuple[int, Any, Any, Any]]) -> list[Row]:
    """Produce (partition, key, value, headers) messages; return what the broker acknowledged."""
    delivered: list[Row] = []
    failures: list[str] = []

    def on_delivery(headers: Any, err: Any, msg: Any) -> None:
        if err is not None:
            failures.append(str(err))
            return
        # Delivery reports do not carry the headers back: take them from what was sent.
        delivered.append((msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), tuple(headers or ())))

    producer = Producer({**cluster.client_config(), "linger.ms": 5, "log_level": 0})
    for i, (partition, key, value, headers) in enumerate(messages):
        producer.produce(topic, key=key, value=value, partition=partition, headers=headers,
                         on_delivery=functools.partial(on_delivery, headers))
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0, "messages left undelivered after 30 s"
    assert not failures, failures[:3]
    return delivered


def varied_messages(n: int, partitions: int = PARTITIONS) -> list[tuple[int, Any, Any, Any]]:
    """Null and empty keys and values, NUL bytes, headers with null values and repeated names."""
    out = []
    for i in range(n):
        key = None if i % 5 == 0 else b"" if i % 11 == 0 else b"k\x00%d" % i
        value = None if i % 7 == 0 else b"" if i % 13 == 0 else bytes([i % 256, 0, 255]) + b"\x00v%d\x00" % i
        headers = (
            [("h", b"x\x00y"), ("null", None), ("h", b"repeat")] if i % 4 == 0
            else [("only", b"")] if i % 4 == 1
            else None
        )
        out.append((i % partitions, key, value, headers))
    return out


@pytest.fixture(scope="module")
def produced(kafka: KafkaCluster) -> dict[str, list[Row]]:
    out = {}
    for topic in TOPICS:
        kafka.create_topic(topic, PARTITIONS)
        out[topic] = produce(kafka, topic, varied_messages(PER_TOPIC))
    return out


def rows_of(df: DataFrame) -> list[Row]:
    """The DataFrame's rows in the order Spark returns them (partition by partition)."""
    table = df.toArrow()
    return [
        (r["topic"], r["partition"], r["offset"], r["key"], r["value"], tuple((h["key"], h["value"]) for h in r["headers"]))
        for r in table.to_pylist()
    ]


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --------------------------------------------------------------------------------------------
# Reading


def test_read_returns_exactly_what_was_produced_one_partition_per_topic_partition(
    spark: SparkSession, kafka: KafkaCluster, produced: dict[str, list[Row]]
) -> None:
    started_ms = int(time.time() * 1000)
    df = spark.read.format(SOURCE_NAME).option("bootstrap", kafka.bootstrap).option("topics", ",".join(TOPICS)).load()
    assert df.schema == KAFKA_SCHEMA
    assert df.rdd.getNumPartitions() == len(TOPICS) * PARTITIONS
    # Producer-set CreateTime: recent, never null.
    oldest, newest = df.selectExpr("min(timestamp)", "max(timestamp)").first()  # type: ignore[misc]
    assert started_ms - 600_000 < oldest <= newest <= started_ms

    got = rows_of(df)
    expected = [row for rows in produced.values() for row in rows]
    assert len(got) == len(expected) == len(TOPICS) * PER_TOPIC
    # Multisets: equal, and no record twice.
    assert Counter(got) == Counter(expected)
    # The edge cases made it through as themselves.
    assert any(r[3] is None for r in got) and any(r[3] == b"" for r in got)
    assert any(r[4] is None for r in got) and any(r[4] == b"" for r in got)
    assert any(("null", None) in r[5] for r in got) and any(r[5] == () for r in got)

    # Spark returns partition after partition; each is one topic-partition in offset order.
    runs: list[tuple[str, int]] = []
    last: dict[tuple[str, int], int] = {}
    for topic, partition, offset, *_ in got:
        if not runs or runs[-1] != (topic, partition):
            runs.append((topic, partition))
        assert offset > last.get((topic, partition), -1)
        last[(topic, partition)] = offset
    assert len(runs) == len(set(runs)) == len(TOPICS) * PARTITIONS


@pytest.mark.parametrize("pack", [2000, 10**9], ids=["packs", "one-pack"])
def test_small_topic_partitions_are_packed_each_whole_and_in_offset_order(
    spark: SparkSession, kafka: KafkaCluster, produced: dict[str, list[Row]], pack: int
) -> None:
    """A pack is read by one consumer with its partitions fetched together, interleaved; each
    topic-partition still reaches the task whole, in offset order and in one contiguous run."""
    ranges = plan_ranges(kafka.bootstrap, TOPICS)
    packs = pack_ranges(ranges, pack)
    assert 1 <= len(packs) < len(ranges) and max(len(p) for p in packs) > 1
    df = read_kafka(spark, kafka.bootstrap, TOPICS, pack=pack)
    assert df.rdd.getNumPartitions() == len(packs)

    def runs_per_task(batches: Iterator[Any]) -> Iterator[Any]:
        runs = [(t, p, r.column("offset").to_pylist()) for t, p, r in topic_partition_runs(batches)]
        yield pa.RecordBatch.from_pylist([{"runs": json.dumps(runs)}], schema=pa.schema([("runs", pa.string())]))

    tasks = [json.loads(r.runs) for r in df.mapInArrow(runs_per_task, "runs string").collect()]
    seen: list[tuple[str, int]] = []
    for runs in tasks:
        merged: list[tuple[str, int]] = []
        for t, p, offsets in runs:  # a partition longer than a batch comes as adjacent runs
            if not merged or merged[-1] != (t, p):
                merged.append((t, p))
                last = -1
            assert offsets[0] > last and offsets == sorted(offsets)
            last = offsets[-1]
        seen += merged
    assert sorted(seen) == sorted((r.topic, r.partition) for r in ranges)  # each partition in one task, once
    assert Counter(rows_of(df)) == Counter(row for rows in produced.values() for row in rows)


def test_packed_records_without_arrow_are_the_arrow_readings_records(
    kafka: KafkaCluster, produced: dict[str, list[Row]]
) -> None:
    """`read_packed_records` (a check task's reader) gives each topic-partition whole, in offset
    order, with exactly the records `records_of` makes of `read_packed`'s Arrow batches (null and
    empty keys and values, headers with null values and repeated names)."""
    from conformance.harness.kafka_records import read_packed_records
    from conformance.harness.kafka_source import read_packed
    from conformance.harness.runners import records_of

    ranges = plan_ranges(kafka.bootstrap, TOPICS)
    direct = list(read_packed_records(kafka.bootstrap, ranges))
    assert sorted(tp for tp, _ in direct) == sorted((r.topic, r.partition) for r in ranges)  # each once
    via_arrow: dict[tuple[str, int], list[Any]] = {}
    for t, p, rb in topic_partition_runs(read_packed(kafka.bootstrap, ranges)):
        via_arrow.setdefault((t, p), []).extend(records_of(iter([rb])))
    assert dict(direct) == via_arrow
    got = Counter((r.topic, r.partition, r.offset, r.key, r.value, r.headers) for _, rs in direct for r in rs)
    assert got == Counter(row for rows in produced.values() for row in rows)


def test_pack_ranges_keeps_order_and_never_splits_a_range() -> None:
    rs = [PartitionRange("a", 0, 0, 5), PartitionRange("a", 1, 0, 50), PartitionRange("b", 0, 0, 3),
          PartitionRange("b", 1, 7, 7), PartitionRange("c", 0, 0, 4)]
    assert pack_ranges(rs, 0) == [(r,) for r in rs]
    assert pack_ranges(rs, 8) == [(rs[1],), (rs[0], rs[2]), (rs[3], rs[4])]
    assert pack_ranges(rs, 1000) == [tuple(rs)]


def test_stream_checks_run_per_topic_partition_in_offset_order_without_a_shuffle(
    spark: SparkSession, kafka: KafkaCluster, produced: dict[str, list[Row]]
) -> None:
    """The recommended pattern: mapInArrow over the source, split with topic_partition_runs.

    Each task sees one topic-partition's records in offset order, keeps per-partition state
    across batches, and returns one small summary row per topic-partition; no shuffle, and
    only the summaries reach the driver. groupBy().applyInArrow gives the same answer but
    shuffles every record and must sort each group itself."""
    summary_schema = "topic string, partition int, records long, first long, last long, gaps long, null_values long"
    out_schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("records", pa.int64()),
                            ("first", pa.int64()), ("last", pa.int64()), ("gaps", pa.int64()),
                            ("null_values", pa.int64())])

    def check_streams(batches: Iterator[Any]) -> Iterator[Any]:
        state: dict[tuple[str, int], list[int]] = {}
        for topic, partition, run in topic_partition_runs(batches):
            offsets = run.column("offset").to_pylist()
            s = state.setdefault((topic, partition), [0, offsets[0], offsets[0] - 1, 0, 0])
            for offset in offsets:  # a stream check walks records in order, carrying state
                s[3] += offset != s[2] + 1
                s[2] = offset
            s[0] += len(offsets)
            s[4] += run.column("value").null_count
        rows = [{"topic": t, "partition": p, "records": s[0], "first": s[1], "last": s[2], "gaps": s[3],
                 "null_values": s[4]} for (t, p), s in state.items()]
        if rows:
            yield pa.RecordBatch.from_pylist(rows, schema=out_schema)

    def check_group(table: Any) -> Any:
        table = table.sort_by("offset")  # a shuffle does not keep the offset order
        offsets = table.column("offset").to_pylist()
        gaps = sum(b != a + 1 for a, b in zip(offsets, offsets[1:], strict=False))
        return pa.Table.from_pylist([{"topic": table.column("topic")[0].as_py(),
                                      "partition": table.column("partition")[0].as_py(),
                                      "records": len(offsets), "first": offsets[0], "last": offsets[-1],
                                      "gaps": gaps, "null_values": table.column("value").null_count}],
                                    schema=out_schema)

    df = read_kafka(spark, kafka.bootstrap, TOPICS)
    by_map = df.mapInArrow(check_streams, summary_schema)
    assert "Exchange" not in by_map._jdf.queryExecution().executedPlan().toString()  # no shuffle
    mapped = sorted(tuple(r) for r in by_map.collect())
    grouped = sorted(tuple(r) for r in df.groupBy("topic", "partition").applyInArrow(check_group, summary_schema)
                     .collect())

    expected = []
    for topic, rows in produced.items():
        for p in range(PARTITIONS):
            mine = [r for r in rows if r[1] == p]
            expected.append((topic, p, len(mine), 0, len(mine) - 1, 0, sum(r[4] is None for r in mine)))
    assert mapped == sorted(expected)
    assert grouped == mapped


def test_topic_partition_runs_rejects_records_out_of_offset_order() -> None:
    schema = arrow_schema()

    def batch(*rows: tuple[str, int, int]) -> Any:
        return pa.RecordBatch.from_pylist(
            [{"topic": t, "partition": p, "offset": o, "timestamp": None, "key": None, "value": None,
              "headers": []} for t, p, o in rows], schema=schema)

    runs = list(topic_partition_runs([batch(("a", 0, 0), ("a", 0, 1), ("b", 0, 5)), batch(("a", 0, 2))]))
    assert [(t, p, r.num_rows) for t, p, r in runs] == [("a", 0, 2), ("b", 0, 1), ("a", 0, 1)]
    with pytest.raises(KafkaSourceError, match=r"a\[0\] are not in offset order"):
        list(topic_partition_runs([batch(("a", 0, 3)), batch(("a", 0, 2))]))


# --------------------------------------------------------------------------------------------
# Bounded reads and explicit offsets


def test_a_read_is_bounded_by_the_offsets_seen_when_it_was_planned(spark: SparkSession, kafka: KafkaCluster) -> None:
    topic = "bounded"
    kafka.create_topic(topic, 2)
    produce(kafka, topic, [(i % 2, None, b"first", None) for i in range(100)])

    df = spark.read.format(SOURCE_NAME).option("bootstrap", kafka.bootstrap).option("topics", topic).load()
    assert df.count() == 100  # the first action plans the DataFrame's partitions
    produce(kafka, topic, [(i % 2, None, b"later", None) for i in range(50)])
    # Later actions, and DataFrames derived from it, reuse that plan: still bounded.
    assert df.count() == 100
    assert df.filter("partition = 0").count() == 50

    ranges = plan_ranges(kafka.bootstrap, topic)
    assert [(r.partition, r.low, r.high) for r in ranges] == [(0, 0, 75), (1, 0, 75)]
    produce(kafka, topic, [(i % 2, None, b"latest", None) for i in range(20)])
    pinned = read_kafka(spark, kafka.bootstrap, topic, ranges=ranges)
    assert pinned.count() == 150
    assert pinned.filter("value = 'latest'").count() == 0
    assert read_kafka(spark, kafka.bootstrap, topic).count() == 170


def test_explicit_starting_and_ending_offsets(spark: SparkSession, kafka: KafkaCluster) -> None:
    topic = "offsets"
    kafka.create_topic(topic, 2)
    produce(kafka, topic, [(i % 2, b"%d" % i, None, None) for i in range(40)])

    df = (spark.read.format(SOURCE_NAME).option("bootstrap", kafka.bootstrap).option("topics", topic)
          .option("startingOffsets", json.dumps({topic: {"0": 5, "1": -1}}))
          .option("endingOffsets", json.dumps({topic: {"0": 8}}))
          .load())
    assert [(r[1], r[2], r[3]) for r in rows_of(df)] == [(0, 5, b"10"), (0, 6, b"12"), (0, 7, b"14")]

    with pytest.raises(KafkaSourceError, match=r"endingOffsets for offsets\[0\] is 21, beyond the partition's end"):
        plan_ranges(kafka.bootstrap, topic, ending={topic: {0: 21}})
    with pytest.raises(KafkaSourceError, match=r"names offsets\[7\], but offsets has partitions 0..1"):
        plan_ranges(kafka.bootstrap, topic, starting={topic: {7: 0}})
    with pytest.raises(KafkaSourceError, match="topic 'missing' does not exist"):
        plan_ranges(kafka.bootstrap, "missing", timeout=5)


def test_bad_options_fail_when_the_dataframe_is_created(spark: SparkSession, kafka: KafkaCluster) -> None:
    def load(**options: str) -> DataFrame:
        reader = spark.read.format(SOURCE_NAME)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load()

    with pytest.raises(Exception, match="unknown option.*topic; known: bootstrap, topics"):
        load(bootstrap=kafka.bootstrap, topic="a")
    with pytest.raises(Exception, match="option 'bootstrap' is required"):
        load(topics="a")
    with pytest.raises(Exception, match="option startingOffsets is not JSON"):
        load(bootstrap=kafka.bootstrap, topics="a", startingOffsets="{a:1}")
    with pytest.raises(Exception, match="option 'timeout' must be a positive number"):
        load(bootstrap=kafka.bootstrap, topics="a", timeout="soon")
    with pytest.raises(Exception, match="option 'packOffsets' must be a whole number"):
        load(bootstrap=kafka.bootstrap, topics="a", packOffsets="-1")


# --------------------------------------------------------------------------------------------
# Failures are bounded and say what failed


def test_an_unreachable_bootstrap_fails_clearly_within_the_timeout(spark: SparkSession) -> None:
    bootstrap = f"127.0.0.1:{closed_port()}"
    started = time.monotonic()
    with pytest.raises(KafkaSourceError, match=f"could not plan a read of t from Kafka at {bootstrap} within 2 s"):
        plan_ranges(bootstrap, "t", timeout=2)
    assert time.monotonic() - started < 4

    df = spark.read.format(SOURCE_NAME).option("bootstrap", bootstrap).option("topics", "t").option("timeout", "2").load()
    started = time.monotonic()
    with pytest.raises(Exception) as failure:
        df.count()
    # Planning runs in a Python worker beside the driver; Spark adds its own second or two.
    assert time.monotonic() - started < 20
    assert f"could not plan a read of t from Kafka at {bootstrap} within 2 s (timeout option)" in str(failure.value)


def test_planning_retries_transient_errors_and_fails_at_once_on_permanent_ones(kafka: KafkaCluster) -> None:
    topic = "planned"
    kafka.create_topic(topic, 1)
    kafka.mock.push_request_errors(ApiKey.ListOffsets, ["NOT_LEADER_FOR_PARTITION"] * 3)
    assert plan_ranges(kafka.bootstrap, topic, timeout=10) == [PartitionRange(topic, 0, 0, 0)]

    kafka.mock.push_request_errors(ApiKey.ListOffsets, ["TOPIC_AUTHORIZATION_FAILED"])
    started = time.monotonic()
    with pytest.raises(KafkaSourceError, match=r"ListOffsets for planned\[0\] failed: TOPIC_AUTHORIZATION_FAILED"):
        plan_ranges(kafka.bootstrap, topic, timeout=10)
    assert time.monotonic() - started < 5
    kafka.mock.clear_request_errors(ApiKey.ListOffsets)


def test_a_read_that_stops_making_progress_fails_naming_the_partition(spark: SparkSession, kafka: KafkaCluster) -> None:
    topic = "stalls"
    kafka.create_topic(topic, 1)
    produce(kafka, topic, [(0, None, b"x", None) for _ in range(10)])
    df = read_kafka(spark, kafka.bootstrap, topic, timeout=2)
    assert df.count() == 10  # plans, so the executor is what meets the fault below

    # Every fetch is answered with an error the consumer retries: the read makes no progress.
    kafka.mock.push_request_errors(ApiKey.Fetch, ["NOT_LEADER_FOR_PARTITION"] * 500)
    started = time.monotonic()
    try:
        with pytest.raises(Exception) as failure:
            df.count()
    finally:
        kafka.mock.clear_request_errors(ApiKey.Fetch)
    assert time.monotonic() - started < 20
    assert ("reading stalls[0] timed out after 2 s without progress (timeout option): expected offsets 0..9, "
            "got no records") in str(failure.value)
    assert df.count() == 10  # and the source works again once the fault is gone


# --------------------------------------------------------------------------------------------
# Retention


def test_retention_gaps_are_read_from_the_low_watermark(spark: SparkSession, kafka: KafkaCluster) -> None:
    topic = "retained"
    kafka.create_topic(topic, 1)
    # The embedded cluster keeps the newest ~5 MiB per partition; 6000 x 1 KiB exceeds it.
    produce(kafka, topic, [(0, b"%d" % i, bytes(1024), None) for i in range(6000)])

    [planned] = plan_ranges(kafka.bootstrap, topic)
    assert 0 < planned.low < planned.high == 6000  # the gap, visible without Spark
    df = read_kafka(spark, kafka.bootstrap, topic, ranges=[planned])
    table = df.select("offset", "key").toArrow()
    got = list(zip(table.column("offset").to_pylist(), table.column("key").to_pylist(), strict=True))
    assert got == [(o, b"%d" % o) for o in range(planned.low, 6000)]

    # Retention advancing after planning: the read starts at the new low watermark, no error.
    kafka.mock.delete_records(topic, 0, planned.low + 100)
    offsets = df.select("offset").toArrow().column("offset").to_pylist()
    assert offsets == list(range(planned.low + 100, 6000))
    assert plan_ranges(kafka.bootstrap, topic) == [PartitionRange(topic, 0, planned.low + 100, 6000)]


# --------------------------------------------------------------------------------------------
# The session helpers


def test_the_session_is_reused_and_has_the_laptop_settings(spark: SparkSession) -> None:
    cores = os.cpu_count() or 1
    assert spark_session() is spark
    assert spark_session(f"local[{cores}]") is spark  # the same master, spelled differently
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    assert conf.get("spark.pyspark.python") == sys.executable
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    shuffle = str(max(2, 2 * cores))
    assert spark.conf.get("spark.sql.shuffle.partitions") == shuffle
    with pytest.raises(ValueError, match="already running"):
        spark_session(f"local[{cores + 1}]")
    # Runtime SQL settings can change on the running session; static ones cannot.
    assert spark_session(extra_conf={"spark.sql.shuffle.partitions": "3"}) is spark
    assert spark.conf.get("spark.sql.shuffle.partitions") == "3"
    spark.conf.set("spark.sql.shuffle.partitions", shuffle)
    with pytest.raises(ValueError, match="cannot change spark.driver.memory"):
        spark_session(extra_conf={"spark.driver.memory": "9g"})


def test_missing_java_is_a_one_line_error_before_any_jvm(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(SparkUnavailable, match="has no executable bin/java. Spark needs Java 17: install it or "
                                               "pass --no-spark"):
        check_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SparkUnavailable, match="no `java` on PATH"):
        check_java()

    # The same from spark_session() in a fresh process, where no JVM is running yet.
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_PYTHON")} | {"PATH": str(tmp_path)}
    code = ("from conformance.harness.spark import spark_session, SparkUnavailable\n"
            "try:\n    spark_session()\nexcept SparkUnavailable as e:\n    print(e)\n")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.stdout.strip().endswith(JAVA_HINT), proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_package_zip_is_importable_on_its_own(tmp_path: Path) -> None:
    zipped = package_zip(tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import conformance.harness.kafka_source as m; "
            "print(m.__file__)")
    proc = subprocess.run([sys.executable, "-c", code, str(zipped)], capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith(str(zipped))
