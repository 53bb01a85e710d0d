"""The pipeline on Spark: the same two stages as `kafka_run`, distributed.

Stage A (produce): a DataFrame of work units (combo, shard) -> `mapInArrow`: each executor
regenerates its shard from the seed, encodes, checks and produces it, and returns its tally
(one small row) and the sink's ledger (one row per message sent). The result is persisted once,
so that nothing is produced twice.

Stage B (judge): the log, read with the `conformance-kafka` data source (one input partition
per non-empty topic-partition), is cogrouped by topic with the ledger and judged per topic on
the executors. Only tallies come back to the driver, so its memory does not grow with the
number of records.
"""

from __future__ import annotations

import pickle
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
from .capture import DeliverySummary, TaskResult
from .kafka_run import injecting, prepare_topics, unit_topics
from .stages import LogRecord, RunSpec, judge_topic, new_tally, produce_unit, sent_rows

UNIT_SCHEMA = "combo int, shard int"


def _trace(msg: str) -> None:
    import os

    if os.environ.get("CONFORMANCE_TRACE"):
        print(f"[pipeline] {msg}", flush=True)
STAGE_A_SCHEMA = ("kind string, combo int, shard int, blob binary, topic string, partition int, offset long, "
                  "acked boolean, error string, fingerprint binary, entity binary, match binary")
STAGE_B_SCHEMA = "combo int, blob binary"


def _arrow_schema_a() -> Any:
    import pyarrow as pa

    return pa.schema([("kind", pa.string()), ("combo", pa.int32()), ("shard", pa.int32()), ("blob", pa.binary()),
                      ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
                      ("acked", pa.bool_()), ("error", pa.string()), ("fingerprint", pa.binary()),
                      ("entity", pa.binary()), ("match", pa.binary())])


def unit_rows(spec: RunSpec, combo: int, shard: int, cluster_create: Callable[[Sequence[str], int], Any] | None
              ) -> list[dict[str, Any]]:
    """Stage A for one unit, as rows: its tally, one row per expected topic (so that every topic is
    judged, even one nothing reached), and one row per message the sink sent."""
    res = produce_unit(spec, combo, shard, create_topics=cluster_create)
    stats = {"records": res.records, "restarts": res.restarts, "gave_up": res.gave_up}
    rows: list[dict[str, Any]] = [{"kind": "tally", "combo": combo, "shard": shard,
                                   "blob": pickle.dumps((res.tally, stats))}]
    rows += [{"kind": "topic", "combo": combo, "shard": shard, "topic": t} for t in res.topics]
    rows += [{"kind": "sent", "combo": combo, "shard": shard, "topic": s.topic, "partition": s.partition,
              "offset": s.offset, "acked": bool(s.acked), "error": s.error, "fingerprint": s.fingerprint,
              "entity": s.entity, "match": s.match} for s in sent_rows(spec, res)]
    return rows


def _unit_topics(spec: RunSpec) -> Callable[[tuple[int, int]], list[str]]:
    def topics(unit: tuple[int, int]) -> list[str]:
        return unit_topics(spec, [unit])

    return topics


def _stage_a(spec: RunSpec) -> Callable[[Iterator[Any]], Iterator[Any]]:
    def run(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        schema = _arrow_schema_a()
        for batch in batches:
            for combo, shard in zip(batch.column("combo").to_pylist(), batch.column("shard").to_pylist(),
                                    strict=True):
                yield pa.RecordBatch.from_pylist(unit_rows(spec, combo, shard, None), schema=schema)

    return run


def _stage_b(spec: RunSpec, lows: dict[tuple[str, int], int]) -> Callable[[Any, Any], Any]:
    def judge(log: Any, ledger: Any) -> Any:
        import pyarrow as pa

        led = ledger.to_pylist()
        topic = led[0]["topic"] if led else (log.column("topic")[0].as_py() if log.num_rows else None)
        if topic is None:
            return pa.table({"combo": pa.array([], pa.int32()), "blob": pa.array([], pa.binary())})
        records = [LogRecord(r["topic"], r["partition"], r["offset"], r["key"], r["value"]) for r in log.to_pylist()]
        sent = [Sent(r["entity"], r["match"], r["topic"], r["partition"], r["offset"], r["error"], r["fingerprint"],
                     acked=r["acked"]) for r in led if r["kind"] == "sent"]
        delivery = DeliverySummary()
        tally = judge_topic(spec, topic, records, sent, lows, summary=delivery)
        unit = spec.unit_of(topic)
        return pa.table({"combo": pa.array([unit[0] if unit else -1], pa.int32()),
                         "blob": pa.array([pickle.dumps(TaskResult(tally, delivery))], pa.binary())})

    return judge


def run_spark(spec: RunSpec, cluster: Any, shards: Sequence[int], *, master: str = "local[*]",
              faults: str | None = None, log: Callable[[str], None] | None = None,
              progress: Callable[[int], None] | None = None) -> list[Section]:
    from pyspark import StorageLevel

    from .kafka_source import plan_ranges, read_kafka
    from .spark import reduce_tallies, spark_session

    spark = spark_session(master)
    units = [(c, s) for c in range(len(spec.combos)) for s in shards]
    slices = max(1, min(len(units), spark.sparkContext.defaultParallelism * 4))
    t0 = time.monotonic()
    # Learning the topics means generating every workload: a job, not a loop on the driver (it
    # took the driver 250 s for 1,266 units before the first job started).
    topics = sorted(set(spark.sparkContext.parallelize(units, slices).flatMap(_unit_topics(spec)).collect()))
    prepare_topics(spec, cluster, topics)
    _trace(f"topics ({len(topics)}) {time.monotonic() - t0:.1f} s")
    with injecting(cluster, faults, topics, log, on_first_record=True) as fault_log:
        stage_a = (spark.createDataFrame(units, UNIT_SCHEMA).repartition(slices)
                   .mapInArrow(_stage_a(spec), STAGE_A_SCHEMA)
                   .persist(StorageLevel.DISK_ONLY))
        stage_a.count()  # produce, once
        _trace(f"stage A (produce) {time.monotonic() - t0:.1f} s")
    if progress:
        progress(len(units))
    tallies: dict[int, Tally] = defaultdict(lambda: new_tally(spec.protocol))
    stats: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for row in stage_a.filter("kind = 'tally'").select("combo", "blob").toLocalIterator():
        t, st = pickle.loads(row["blob"])
        tallies[row["combo"]].merge(t)
        stats[row["combo"]]["workloads"] += 1
        stats[row["combo"]]["records"] += st["records"]
        stats[row["combo"]]["restarts"] += st["restarts"]
    config = dict(spec.kafka_config)
    bootstrap = config.pop("bootstrap.servers")
    ranges = plan_ranges(bootstrap, topics, config)
    lows = {(r.topic, r.partition): r.low for r in ranges if r.low > 0}
    readable = [r for r in ranges if not r.empty]
    ledger = stage_a.filter("kind in ('sent', 'topic')").drop("blob", "shard")
    if readable:
        log_df = read_kafka(spark, bootstrap, sorted({r.topic for r in readable}), config, ranges=readable)
    else:
        log_df = spark.createDataFrame([], "topic string, partition int, offset long, timestamp long, "
                                           "key binary, value binary, headers array<struct<key:string,value:binary>>")
    judged = (log_df.select("topic", "partition", "offset", "key", "value").groupBy("topic")
              .cogroup(ledger.groupBy("topic")).applyInArrow(_stage_b(spec, lows), STAGE_B_SCHEMA))
    t1 = time.monotonic()
    deliveries: dict[int, DeliverySummary] = defaultdict(DeliverySummary)
    for combo, (part, _) in reduce_tallies(judged.filter("combo >= 0"), key="combo").items():
        tallies[combo].merge(part.tally)
        deliveries[combo].merge(part.delivery)
    _trace(f"stage B (judge) {time.monotonic() - t1:.1f} s over {len(readable)} readable partitions")
    stage_a.unpersist()
    info = find_encoder(spec.encoder, spec.protocol)
    protocol = get_protocol(spec.protocol)
    sections = []
    elapsed = time.monotonic() - t0
    for c in range(len(spec.combos)):
        opts = spec.options(c)
        sec = Section(spec.protocol, info.name, info.kind.value, opts, describe_options(opts, protocol), tallies[c],
                      workloads=stats[c]["workloads"], records=stats[c]["records"], seed=spec.seed,
                      duration_s=elapsed / max(1, len(spec.combos)))
        if stats[c]["restarts"]:
            sec.notes.append(f"the sink restarted from its checkpoint {stats[c]['restarts']} time(s)")
        sec.notes.extend(deliveries[c].notes())
        sec.notes.extend(fault_log)
        sections.append(sec)
    return sections
