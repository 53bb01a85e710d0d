"""The Spark runner: the same stages as `runners.KafkaRunner`, distributed.

Encode stage: a DataFrame of work units (combo, shard) -> `mapInArrow`: each executor
regenerates its shard from the seed, encodes, checks and produces it (`stages.encode_unit`), and
returns its unit result (one small row), one row per topic the unit writes (so that every topic
is judged, even one nothing reached) and one row per message the sink sent (the ledger). The
result is persisted once, so that nothing is produced twice.

Judge stage: the log, read with the `conformance-kafka` data source (one input partition per
non-empty topic-partition), is cogrouped by topic with the ledger and judged per topic on the
executors (`stages.judge_topic`). Only merged results come back to the driver, so its memory
does not grow with the number of records.
"""

from __future__ import annotations

import os
import pickle
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..checks.delivery import Sent
from ..protocols import get_protocol
from ..reporting.model import Section
from .encode import LogRecord
from .runners import Progress, injecting, prepare_topics, unit_topics
from .stages import ComboResult, HangLatch, RunSpec, encode_unit, judge_topic, new_tally, sections

UNIT_SCHEMA = "combo int, shard int"
ENCODE_SCHEMA = ("kind string, combo int, shard int, blob binary, topic string, partition int, offset long, "
                 "acked boolean, error string, fingerprint binary, entity binary, match binary, encoded int")
JUDGE_SCHEMA = "combo int, blob binary"


def _trace(msg: str) -> None:
    if os.environ.get("CONFORMANCE_TRACE"):
        print(f"[spark] {msg}", flush=True)


def _arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("kind", pa.string()), ("combo", pa.int32()), ("shard", pa.int32()), ("blob", pa.binary()),
                      ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                      ("acked", pa.bool_()), ("error", pa.string()), ("fingerprint", pa.binary()),
                      ("entity", pa.binary()), ("match", pa.binary()), ("encoded", pa.int32())])


_REGISTRIES: dict[str, Any] = {}


def worker_registry(url: str) -> Any:
    """One registry client per registry per worker process (its id cache is shared by every unit);
    None for a protocol without a registry."""
    import atexit

    from ..infra.registry import RegistryClient

    if not url:
        return None
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


def _encode(spec: RunSpec) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        from ..encoders.sink import KafkaTransport

        schema = _arrow_schema()
        transport = KafkaTransport(dict(spec.kafka_config))
        latch = HangLatch()  # per task: a hung encoder stops this task's units
        registry = worker_registry(spec.registry_url)
        for batch in batches:
            for combo, shard in zip(batch.column("combo").to_pylist(), batch.column("shard").to_pylist(),
                                    strict=True):
                u = encode_unit(spec, combo, shard, transport, registry, latch)
                rows: list[dict[str, Any]] = [{"kind": "unit", "combo": combo, "shard": shard,
                                               "blob": pickle.dumps(u)}]
                rows += [{"kind": "topic", "combo": combo, "shard": shard, "topic": t, "encoded": u.encoded}
                         for t in u.topics]
                rows += [{"kind": "sent", "combo": combo, "shard": shard, "topic": s.topic, "partition": s.partition,
                          "offset": s.offset, "acked": bool(s.acked), "error": s.error, "fingerprint": s.fingerprint,
                          "entity": s.entity, "match": s.match} for s in u.sent]
                yield pa.RecordBatch.from_pylist(rows, schema=schema)

    return run


def _unit_topics(spec: RunSpec) -> Callable[[tuple[int, int]], list[str]]:
    def topics(unit: tuple[int, int]) -> list[str]:
        return unit_topics(spec, [unit])

    return topics


def _judge(spec: RunSpec, lows: dict[tuple[str, int], int]) -> Callable[[Any, Any], Any]:
    def judge(log: Any, ledger: Any) -> Any:
        import pyarrow as pa

        led = ledger.to_pylist()
        topic = led[0]["topic"] if led else (log.column("topic")[0].as_py() if log.num_rows else None)
        unit = spec.unit_of(topic) if topic is not None else None
        if topic is None or unit is None:
            return pa.table({"combo": pa.array([], pa.int32()), "blob": pa.array([], pa.binary())})
        records = [LogRecord(r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in log.to_pylist()]
        sent = [Sent(r["entity"], r["match"], r["topic"], r["partition"], r["offset"], r["error"], r["fingerprint"],
                     acked=r["acked"]) for r in led if r["kind"] == "sent"]
        encoded = next((r["encoded"] for r in led if r["kind"] == "topic"), None)
        result = judge_topic(spec, topic, records, sent, lows, worker_registry(spec.registry_url), encoded=encoded)
        return pa.table({"combo": pa.array([unit[0]], pa.int32()),
                         "blob": pa.array([pickle.dumps(result)], pa.binary())})

    return judge


class SparkRunner:
    """The stages on Spark (`master`: local[*] by default, or a cluster's URL)."""

    def __init__(self, cluster: Any, *, master: str = "local[*]", faults: str | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.cluster = cluster
        self.master = master
        self.faults = faults
        self.log = log

    def run(self, spec: RunSpec, shards: Sequence[int], *, progress: Progress | None = None) -> list[Section]:
        from pyspark import StorageLevel

        from .kafka_source import KAFKA_SCHEMA, plan_ranges, read_kafka
        from .spark import reduce_tallies, spark_session

        suite = get_protocol(spec.protocol)
        spark = spark_session(self.master)
        units = [(c, s) for c in range(len(spec.combos)) for s in shards]
        slices = max(1, min(len(units), spark.sparkContext.defaultParallelism * 4))
        t0 = time.monotonic()
        # Learning the topics means generating every workload: a job, not a loop on the driver (it
        # took the driver 250 s for 1,266 units before the first job started).
        topics = sorted(set(spark.sparkContext.parallelize(units, slices).flatMap(_unit_topics(spec)).collect()))
        prepare_topics(self.cluster, topics, spec.partitions)
        _trace(f"topics ({len(topics)}) {time.monotonic() - t0:.1f} s")
        with injecting(self.cluster, self.faults, topics, self.log, on_first_record=True) as fault_notes:
            encoded = (spark.createDataFrame(units, UNIT_SCHEMA).repartition(slices)
                       .mapInArrow(_encode(spec), ENCODE_SCHEMA)
                       .persist(StorageLevel.DISK_ONLY))
            encoded.count()  # produce, once
            _trace(f"encode stage {time.monotonic() - t0:.1f} s")
        if progress:
            progress(len(units))
        results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(suite)))
        for row in encoded.filter("kind = 'unit'").select("combo", "blob").toLocalIterator():
            results[row["combo"]].add_unit(pickle.loads(row["blob"]))
        config = dict(spec.kafka_config)
        bootstrap = config.pop("bootstrap.servers")
        present = set(self.cluster.topics())
        judged = sorted({t for t in present if spec.unit_of(t) is not None} | set(topics))
        ranges = plan_ranges(bootstrap, [t for t in judged if t in present], config)
        lows = {(r.topic, r.partition): r.low for r in ranges if r.low > 0}
        readable = [r for r in ranges if not r.empty]
        ledger = encoded.filter("kind in ('sent', 'topic')").drop("blob", "shard")
        if readable:
            log_df = read_kafka(spark, bootstrap, sorted({r.topic for r in readable}), config, ranges=readable)
        else:
            log_df = spark.createDataFrame([], KAFKA_SCHEMA)
        judged_df = (log_df.select("topic", "partition", "offset", "key", "value").groupBy("topic")
                     .cogroup(ledger.groupBy("topic")).applyInArrow(_judge(spec, lows), JUDGE_SCHEMA))
        t1 = time.monotonic()
        for combo, (part, _) in reduce_tallies(judged_df, key="combo").items():
            results[combo].add_topic(part)
        _trace(f"judge stage {time.monotonic() - t1:.1f} s over {len(readable)} readable partitions")
        encoded.unpersist()
        return sections(spec, results, notes=fault_notes, duration_s=time.monotonic() - t0)
