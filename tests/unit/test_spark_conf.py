"""The Spark session's laptop profile (local masters) against a cluster's, without starting Spark."""

from __future__ import annotations

from conformance.harness.spark import LOCAL_JVM_OPTIONS, _default_conf


def test_a_local_jvm_compiles_with_the_first_tier_only_and_collects_serially() -> None:
    local = _default_conf("local[2]")["spark.driver.extraJavaOptions"].split()
    assert local[0].startswith("-Dlog4j2.configurationFile=")
    assert local[1:] == list(LOCAL_JVM_OPTIONS) == ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"]


def test_a_cluster_driver_keeps_the_jvms_defaults() -> None:
    options = _default_conf("spark://host:7077")["spark.driver.extraJavaOptions"].split()
    assert len(options) == 1 and options[0].startswith("-Dlog4j2.configurationFile=")
