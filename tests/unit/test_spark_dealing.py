"""How a Spark run deals its units to tasks (`spark_runner.dealt`), without Spark."""

from __future__ import annotations

from conformance.harness.spark_runner import dealt


def _blocks(n: int, slices: int) -> list[range]:
    """The ids each partition of `sparkContext.parallelize(range(n), slices)` holds."""
    return [range(i * n // slices, (i + 1) * n // slices) for i in range(slices)]


def test_every_unit_once_and_every_task_a_mix_of_combinations() -> None:
    for combos, shards, slices in [(8, 100, 8), (3, 7, 8), (1, 5, 2), (2, 1, 8), (5, 13, 4)]:
        units = [(c, s) for c in range(combos) for s in range(shards)]
        order = dealt(units, slices)
        assert sorted(order) == sorted(units)
        for block in _blocks(len(order), slices):
            got = {order[i][0] for i in block}
            # as many combinations as the block has room for (a block of one combination would be
            # a task whose cost is that combination's alone)
            assert len(got) >= min(combos, len(block), 2) or len(block) < 2
