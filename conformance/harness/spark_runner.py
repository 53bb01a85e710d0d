"""The Spark runner: the same stages as `runners.KafkaRunner`, distributed.

One job: the work units (combo, shard) dealt to tasks by position (an RDD of ids): each task
regenerates its units' workloads from the seed, encodes, checks and produces each one
(`stages.encode_unit`), then reads the unit's own topics back and judges them
(`stages.judge_unit`) with one Kafka reader per task (`kafka_source.LogReader`: one consumer, one
admin client), and returns one merged result per option combination. The driver receives one
small result per task and combination, however many records the run makes (merged on the
executors first when the tasks are many: `task_results`).

(A unit's log is complete once its producer has flushed: no one else writes to its topics. So
it is read where it was written, and the run needs no second pass over the cluster.)
"""

from __future__ import annotations

import functools
import os
import pickle
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..protocols import get_protocol
from ..reporting.model import Section
from .runners import KafkaWorker, Progress, injecting, prepare_topics, unit_topics
from .stages import ComboResult, RunSpec, new_tally, sections

#: Learning a run's topics means generating each shard's workload: the driver does it unless a
#: Spark job would finish that many seconds sooner (the job's own cost: 800 small units took 1.8 s
#: on the driver and 14 s as a job). The driver times the first shards to decide.
SPARK_TOPICS_SAVING_S = 10.0
TOPICS_SAMPLE_SHARDS = 8


def _trace(msg: str) -> None:
    if os.environ.get("CONFORMANCE_TRACE"):
        print(f"[spark] {msg}", flush=True)


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


def dealt(units: Sequence[tuple[int, int]], slices: int) -> list[tuple[int, int]]:
    """`units` in the order that gives each of `slices` tasks a mix of them: `parallelize(range)`
    hands each task a block of consecutive ids, and here a block holds units k, k + slices, k + 2 ×
    slices… (the round-robin a `repartition` deals, without its shuffle), not one combination's."""
    return [u for k in range(slices) for u in units[k::slices]]


def _run_units(spec: RunSpec, units: Sequence[tuple[int, int]]
               ) -> Callable[[Iterable[int]], Iterator[tuple[int, bytes]]]:
    """The task of a run: the units whose positions in `units` are its ids (a block of
    `parallelize(range(…))`); yields (combination, pickled `ComboResult`) pairs."""
    def run(ids: Iterable[int]) -> Iterator[tuple[int, bytes]]:
        results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(get_protocol(spec.protocol))))
        worker = KafkaWorker(spec, worker_registry(spec.registry_url))  # per task: a hang stops this task's units
        try:
            worker.run_units((units[i] for i in ids), results)
        finally:
            worker.close()
        for combo, result in results.items():
            yield combo, pickle.dumps(result)

    return run


def _merge_results(a: bytes, b: bytes) -> bytes:
    left = pickle.loads(a)
    left.merge(pickle.loads(b))
    return pickle.dumps(left)


#: At most this many task results (one per task and option combination) are merged on the
#: driver; more are merged on the executors first. The default run has 8 tasks × 8 combinations
#: on two cores: a merge on the executors is a shuffle stage more.
DRIVER_MERGE_ROWS = 512


def task_results(tasks: Any, *, rows: int) -> Iterator[tuple[int, ComboResult]]:
    """The results of a run's tasks (`tasks`: an RDD of (combination, pickled `ComboResult`), at
    most `rows` of them), collected as they are if there are at most `DRIVER_MERGE_ROWS`, else
    merged per combination on the executors first (the driver's memory does not grow with the
    tasks of a cluster)."""
    if rows > DRIVER_MERGE_ROWS:
        tasks = tasks.reduceByKey(_merge_results, numPartitions=1)
    for combo, blob in tasks.collect():
        yield int(combo), pickle.loads(blob)


def topics_on_spark(driver_s: float, cores: int) -> bool:
    """Whether a Spark job on `cores` learns the topics enough sooner than the driver would
    (`driver_s`: the driver's projected time)."""
    return driver_s * (1 - 1 / max(1, cores)) > SPARK_TOPICS_SAVING_S


def driver_topics(spec: RunSpec, units: Sequence[tuple[int, int]], cores: int
                  ) -> tuple[set[str], list[list[tuple[int, int]]]]:
    """The topics of the run's units the driver learns: the first shards', timed, and the others'
    too unless a Spark job on `cores` would learn them enough sooner; returns them and the units
    left to that job (grouped by shard)."""
    by_shard: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for unit in units:
        by_shard[unit[1]].append(unit)
    shards = list(by_shard.values())
    sample, rest = shards[:TOPICS_SAMPLE_SHARDS], shards[TOPICS_SAMPLE_SHARDS:]
    t = time.perf_counter()
    topics = set(unit_topics(spec, [u for group in sample for u in group]))
    per_shard = (time.perf_counter() - t) / max(1, len(sample))
    if topics_on_spark(per_shard * len(rest), cores):
        return topics, rest
    if rest:
        topics.update(unit_topics(spec, [u for group in rest for u in group]))
    return topics, []


def spark_topics(spark: Any, spec: RunSpec, rest: Sequence[Sequence[tuple[int, int]]]) -> set[str]:
    """The topics of `rest` (units grouped by shard), learnt in a Spark job (a shard's units in
    one task: its workload generated once)."""
    if not rest:
        return set()
    slices = max(1, min(len(rest), spark.sparkContext.defaultParallelism * 4))
    of_shard = functools.partial(unit_topics, spec)
    return set(spark.sparkContext.parallelize(list(rest), slices).flatMap(of_shard).collect())


def learn_topics(spark: Any, spec: RunSpec, units: Sequence[tuple[int, int]]) -> list[str]:
    """Every topic of the run's units: the first shards on the driver, timed; the others there too
    when that is cheap, else in a Spark job (`driver_topics`, `spark_topics`)."""
    topics, rest = driver_topics(spec, units, spark.sparkContext.defaultParallelism)
    return sorted(topics | spark_topics(spark, spec, rest))


class SparkRunner:
    """The stages on Spark (`master`: local[*] by default, or a cluster's URL)."""

    def __init__(self, cluster: Any, *, master: str = "local[*]", faults: str | None = None,
                 log: Callable[[str], None] | None = None) -> None:
        self.cluster = cluster
        self.master = master
        self.faults = faults
        self.log = log

    def _early_topics(self, spec: RunSpec, units: Sequence[tuple[int, int]]
                      ) -> tuple[list[str], list[list[tuple[int, int]]], float]:
        """What the driver does of `learn_topics` and `prepare_topics` before the session is up (a
        local master: its cores are the master's): the topics it learnt, created unless some are
        left to a Spark job; the units left to that job; the seconds it took."""
        from .spark import _local_cores

        t0 = time.monotonic()
        topics, rest = driver_topics(spec, units, _local_cores(self.master))
        ordered = sorted(topics)
        if not rest:
            prepare_topics(self.cluster, ordered, spec.partitions)
        return ordered, rest, time.monotonic() - t0

    def run(self, spec: RunSpec, shards: Sequence[int], *, progress: Progress | None = None) -> list[Section]:
        from .spark import is_local_master, spark_session

        suite = get_protocol(spec.protocol)
        units = [(c, s) for c in range(len(spec.combos)) for s in shards]
        t = time.perf_counter()
        with ThreadPoolExecutor(1, thread_name_prefix="run-topics") as pool:
            # On a local master the driver learns and creates the topics while the JVM starts (the
            # master says its cores): that start is mostly another process's work, and this
            # thread's, pure Python, would otherwise wait for it.
            early = pool.submit(self._early_topics, spec, units) if is_local_master(self.master) else None
            spark = spark_session(self.master, sources=False)  # the tasks read their topics themselves
            driver = {"Spark session (driver)": time.perf_counter() - t}
            t0 = time.monotonic()
            if early is not None:
                topics, rest, driver["topics (driver)"] = early.result()
                if rest:
                    t1 = time.monotonic()
                    topics = sorted(set(topics) | spark_topics(spark, spec, rest))
                    prepare_topics(self.cluster, topics, spec.partitions)
                    driver["topics (driver)"] += time.monotonic() - t1
            else:
                topics = learn_topics(spark, spec, units)
                prepare_topics(self.cluster, topics, spec.partitions)
                driver["topics (driver)"] = time.monotonic() - t0
        # With a local master the topics were (mostly) learnt while the session started: the run
        # waited for them only from here.
        driver["topics (driver, waited)"] = time.monotonic() - t0
        slices = max(1, min(len(units), spark.sparkContext.defaultParallelism * 4))
        _trace(f"topics ({len(topics)}) {driver['topics (driver)']:.1f} s, waited {time.monotonic() - t0:.1f} s")
        t2 = time.monotonic()
        results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(suite)))
        with injecting(self.cluster, self.faults, topics, self.log, on_first_record=True) as fault_notes:
            # The units travel with the task's function; each task takes its block of ids (no
            # data to ship from the driver, no shuffle to deal them out). An RDD job: the tasks
            # read and return nothing row by row, so a DataFrame's query planning, code
            # generation and Arrow set-up were only start-up cost on a cold JVM.
            order = dealt(units, slices)
            tasks = spark.sparkContext.parallelize(range(len(order)), slices).mapPartitions(_run_units(spec, order))
            for combo, part in task_results(tasks, rows=slices * len(spec.combos)):
                results[combo].merge(part)
        driver["units (driver, wall)"] = time.monotonic() - t2
        _trace(f"units (encode, read back, judge) {time.monotonic() - t0:.1f} s")
        if progress:
            progress(len(units))
        return sections(spec, results, notes=fault_notes, duration_s=time.monotonic() - t0, driver_seconds=driver)
