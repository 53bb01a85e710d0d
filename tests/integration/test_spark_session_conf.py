"""The running session's JVM has the laptop profile's options (they reach the driver JVM)."""

from __future__ import annotations

from conformance.harness.spark import LOCAL_JVM_OPTIONS


def test_the_local_jvm_runs_with_the_profiles_options(spark) -> None:  # type: ignore[no-untyped-def]
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    for option in LOCAL_JVM_OPTIONS:
        assert option in arguments
