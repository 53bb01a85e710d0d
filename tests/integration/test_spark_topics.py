"""Learning a Spark run's topics before it creates them: on the driver while that is cheap, as a
Spark job when the job saves more than it costs; either way the same topics, each shard's
workload generated once whatever the option combinations."""

from __future__ import annotations

from conformance.harness import spark_runner
from conformance.harness.runners import unit_topics
from conformance.harness.stages import RunSpec
from conformance.protocols import get_protocol
from conformance.strategies import DEFAULT_SHAPE


def _spec() -> RunSpec:
    p = get_protocol("ticdc-avro")
    combos = tuple(tuple(p.resolve_options({"enable-tidb-extension": v}).items()) for v in ("true", "false"))
    return RunSpec(p.name, "ticdc-avro/reference", "topics", DEFAULT_SHAPE, combos, partitions=1, run_id="tt")


def test_a_spark_job_is_worth_it_only_with_cores_to_spare() -> None:
    assert not spark_runner.topics_on_spark(1000.0, 1)  # one core: the driver is as fast, without the job
    assert not spark_runner.topics_on_spark(5.0, 8)  # cheap: the job would cost more than it saves
    assert spark_runner.topics_on_spark(100.0, 2)


def test_topics_learned_on_spark_are_the_drivers(spark, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    spec = _spec()
    units = [(c, s) for c in range(2) for s in range(12)]
    one_by_one = sorted({t for unit in units for t in unit_topics(spec, [unit])})
    assert len(one_by_one) > 12
    assert unit_topics(spec, units) == one_by_one
    assert spark_runner.learn_topics(spark, spec, units) == one_by_one  # cheap: on the driver

    monkeypatch.setattr(spark_runner, "SPARK_TOPICS_SAVING_S", -1.0)
    sc = spark.sparkContext
    sc.setJobGroup("learn-topics-test", "topics as a Spark job")
    try:
        assert spark_runner.learn_topics(spark, spec, units) == one_by_one
        assert sc.statusTracker().getJobIdsForGroup("learn-topics-test")  # it did run as a job
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)


class _Cluster:
    """Records the topics a runner creates."""

    def __init__(self) -> None:
        self.created: list[tuple[list[str], int]] = []

    def create_topics(self, topics: list[str], partitions: int) -> None:
        self.created.append((list(topics), partitions))


def test_topics_learnt_while_the_session_starts_are_the_drivers(spark, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A local master's run learns (and creates) its topics before the session is up: the same
    topics, created once; those left to a Spark job are learnt once the session is up."""
    spec = _spec()
    units = [(c, s) for c in range(2) for s in range(12)]
    one_by_one = sorted({t for unit in units for t in unit_topics(spec, [unit])})
    cluster = _Cluster()
    runner = spark_runner.SparkRunner(cluster, master="local[2]")
    topics, rest, seconds = runner._early_topics(spec, units)
    assert (topics, rest) == (one_by_one, []) and seconds >= 0
    assert cluster.created == [(one_by_one, spec.partitions)]

    monkeypatch.setattr(spark_runner, "SPARK_TOPICS_SAVING_S", -1.0)
    cluster.created.clear()
    topics, rest, _ = runner._early_topics(spec, units)
    assert rest and not cluster.created  # created by run() once the job has learnt the rest
    assert sorted(set(topics) | spark_runner.spark_topics(spark, spec, rest)) == one_by_one


def test_a_run_does_not_register_the_kafka_source(spark, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """`conformance run` asks for the session without the data sources (its tasks read their
    topics themselves); the next caller that reads through them gets them registered, once."""
    from conformance.harness import spark as spark_mod

    registered: list[object] = []
    monkeypatch.setattr(spark_mod, "_register_sources", registered.append)
    monkeypatch.setattr(spark_mod, "_sources", False)  # as if the session had been started by a run
    assert spark_mod.spark_session(sources=False) is spark
    assert registered == []
    assert spark_mod.spark_session() is spark
    assert spark_mod.spark_session() is spark
    assert registered == [spark]
