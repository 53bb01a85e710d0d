"""A Spark run's task results reach the driver one per task and combination (merged there) when
they are few, merged on the executors first when they are many: the same sections either way,
and the same as merging them in one process."""

from __future__ import annotations

import pickle
from collections import defaultdict
from typing import Any

import pytest

from conformance.harness import spark_runner
from conformance.harness.runners import MemoryRunner
from conformance.harness.stages import ComboResult, HangLatch, RunSpec, new_tally, sections
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.protocols import get_protocol
from conformance.strategies import DEFAULT_SHAPE


def _rows(encoder: str) -> tuple[RunSpec, list[tuple[int, bytes]]]:
    """One row per (task, combination) as the run's tasks yield them: two combinations, six
    shards, three tasks of four units each."""
    p = get_protocol("ticdc-avro")
    combos = tuple(tuple(sorted(p.resolve_options({"enable-tidb-extension": v}).items())) for v in ("true", "false"))
    spec = RunSpec(p.name, encoder, "results", DEFAULT_SHAPE, combos, partitions=1, run_id="sr")
    units = [(c, s) for c in range(2) for s in range(6)]
    rows = []
    with EmbeddedSchemaRegistry() as reg, RegistryClient(reg.url) as registry:
        runner = MemoryRunner(registry)
        for task in range(3):
            results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(p)))
            for combo, shard in units[task::3]:
                runner.run_unit(spec, combo, shard, results[combo], HangLatch())
            rows += [(combo, pickle.dumps(r)) for combo, r in results.items()]
    return spec, rows


def _view(spec: RunSpec, merged: dict[int, ComboResult]) -> Any:
    return [({t.id: (t.outcome, sorted(f.message for f in t.failures.values())) for t in s.tally},
             s.workloads, s.records, s.notes) for s in sections(spec, merged)]


def _merged(pairs: Any, spec: RunSpec) -> dict[int, ComboResult]:
    out: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(get_protocol(spec.protocol))))
    for combo, part in pairs:
        out[combo].merge(part)
    return dict(out)


@pytest.mark.parametrize("encoder", ["ticdc-avro/reference", "ticdc-avro/mutant/update-dropped"])
def test_results_merged_on_the_driver_or_the_executors_alike(spark, monkeypatch, encoder: str) -> None:  # type: ignore[no-untyped-def]
    spec, rows = _rows(encoder)
    assert len(rows) == 6  # each task ran units of both combinations
    in_process = _view(spec, _merged(((c, pickle.loads(b)) for c, b in rows), spec))
    tasks = spark.sparkContext.parallelize(rows, 3)

    on_driver = list(spark_runner.task_results(tasks, rows=len(rows)))
    assert len(on_driver) == len(rows)  # one per task and combination: nothing merged before the driver
    assert _view(spec, _merged(on_driver, spec)) == in_process

    monkeypatch.setattr(spark_runner, "DRIVER_MERGE_ROWS", len(rows) - 1)
    on_executors = list(spark_runner.task_results(tasks, rows=len(rows)))
    assert len(on_executors) == 2  # one per combination
    assert _view(spec, _merged(on_executors, spec)) == in_process
    if encoder.endswith("update-dropped"):
        assert any(outcome.name == "FAILED" for outcome, _ in in_process[0][0].values())
