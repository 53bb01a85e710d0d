"""Generators: SQL types, values, tables and DML/DDL histories.

One description of each domain (`domains.py`, `history.py`) is driven two ways:

* hypothesis strategies (`sql_types()`, `values_for(t)`, `tables()`, `workloads()`, and the
  `WorkloadMachine` state machine) for shrinking in tests;
* `sample_workload(seed, shard)`, a seeded `random.Random` expansion of the same shapes for
  bulk generation: deterministic from (seed, shard) and about fifty times faster.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..model.events import Workload
from ..model.table import Table
from ..model.types import Kind, SqlType
from ..model.values import Value
from .domains import ALL_KINDS, KEY_KINDS, edge_values, sample_type, sample_value, simplest_value
from .history import DEFAULT_SHAPE, HistoryBuilder, Shape, build_workload
from .source import HypothesisSource, RandomSource, Source

if TYPE_CHECKING:  # hypothesis is imported where a strategy is built: `sample_workload` needs none of it
    from hypothesis import strategies as st

__all__ = [
    "ALL_KINDS", "DEFAULT_SHAPE", "HistoryBuilder", "HypothesisSource", "KEY_KINDS", "RandomSource",
    "Shape", "Source", "build_workload", "edge_values", "sample_type", "sample_value",
    "sample_workload", "shard_seed", "simplest_value", "sql_types", "tables", "values_for", "workloads",
]


def shard_seed(seed: int | str, shard: int) -> str:
    """The `random.Random` seed of one shard. Strings seed deterministically across
    processes and Python builds (unlike `hash()`-based seeding)."""
    return f"cdc-conformance:{seed}:{shard}"


def sample_workload(seed: int | str, shard: int = 0, shape: Shape = DEFAULT_SHAPE) -> Workload:
    """The workload of one (seed, shard): the same on every machine, every time."""
    w = build_workload(RandomSource(shard_seed(seed, shard)), shape, seed=seed, shard=shard)
    return w


def sql_types(kinds: Sequence[Kind] = ALL_KINDS, *, key: bool = False) -> st.SearchStrategy[SqlType]:
    """Strategy for `SqlType`s of the given kinds, parameters included."""
    from hypothesis import strategies as st
    from hypothesis.errors import InvalidArgument

    kinds = tuple(kinds)
    if not kinds:
        raise InvalidArgument("sql_types() needs at least one kind")
    @st.composite
    def draw_type(draw: st.DrawFn) -> SqlType:
        return sample_type(HypothesisSource(draw), kinds, key=key)

    return draw_type()


def values_for(t: SqlType, *, edge_rate: float = 0.2, key: bool = False) -> st.SearchStrategy[Value]:
    """Strategy for values valid in a column of type `t` (NULL excluded)."""
    from hypothesis import strategies as st
    from hypothesis.errors import InvalidArgument

    if not isinstance(t, SqlType):
        raise InvalidArgument(f"values_for() needs a SqlType, got {t!r}")
    @st.composite
    def draw_value(draw: st.DrawFn) -> Value:
        return sample_value(HypothesisSource(draw), t, edge_rate=edge_rate, key=key)

    return draw_value()


def tables(shape: Shape = DEFAULT_SHAPE) -> st.SearchStrategy[Table]:
    """Strategy for tables with a primary key or a NOT NULL unique key."""
    from hypothesis import strategies as st

    @st.composite
    def draw_table(draw: st.DrawFn) -> Table:
        b = HistoryBuilder(HypothesisSource(draw), shape)
        b.create_database()
        return b.create_table()

    return draw_table()


def workloads(shape: Shape = DEFAULT_SHAPE) -> st.SearchStrategy[Workload]:
    """Strategy for whole workloads: databases, tables, transactions, DDL, watermarks."""
    from hypothesis import strategies as st

    @st.composite
    def draw_workload(draw: st.DrawFn) -> Workload:
        return build_workload(HypothesisSource(draw), shape, seed="hypothesis")

    return draw_workload()
