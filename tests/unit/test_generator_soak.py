"""The generators never crash (issue 26): every workload shape a run can ask for, over thousands of
seeds, through generation and the model's own rendering (no encoder); and the crashes the soaks
found, each kept as a regression test."""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import replace
from types import SimpleNamespace

import pytest

from conformance.encoders import all_encoders, find_encoder
from conformance.errors import UsageError
from conformance.harness.run import RunPlan
from conformance.harness.soak import SoakShape, replay, soak, soak_shapes, units
from conformance.model import Kind, SqlType
from conformance.model.serde import value_from_json, value_to_json
from conformance.model.table import Column
from conformance.model.values import FLOAT32_MAX, is_float32, mysql_text, to_float32
from conformance.protocols import all_protocols, get_protocol
from conformance.strategies import DEFAULT_SHAPE, sample_workload
from conformance.strategies.history import HistoryBuilder, _TableState
from conformance.strategies.source import RandomSource

#: Workloads of the soak in the default test run (about 20 s here; the long soak, ≥ 100,000 of
#: them, is benchmarks/generator_soak.py).
SOAK_WORKLOADS = 3000


def _weight(s: SoakShape) -> float:
    """The shapes every user's run takes (a reference encoder's) get six times a mutant's share."""
    return 6.0 if any(a.endswith("/reference") for a in s.asked_by) else 1.0


@pytest.fixture(scope="module")
def shapes() -> list[SoakShape]:
    return soak_shapes()


def test_every_shape_a_run_can_ask_for_generates_and_renders(shapes: list[SoakShape]) -> None:
    start = time.monotonic()
    result = soak(shapes, SOAK_WORKLOADS, seed="unit-soak", weights=_weight)
    crashes = "\n".join(c.describe() for c in result.distinct_crashes())
    assert not result.crashes, f"{len(result.crashes)} workload(s) crashed; distinct:\n{crashes}"
    assert result.workloads >= SOAK_WORKLOADS
    assert set(result.per_shape) == {s.label for s in shapes}  # every shape met, at least once
    assert result.values > 50 * result.workloads  # values were rendered, not just workloads built
    assert time.monotonic() - start < 60, "the soak in the default run must stay within a minute"


def test_the_shapes_cover_every_protocol_dialect_and_mutant(shapes: list[SoakShape]) -> None:
    refused: list[str] = []
    soak_shapes(refused=refused)
    asked = {a for s in shapes for a in s.asked_by} | {r.split(": ", 1)[0] for r in refused}
    for p in all_protocols():
        dialects = {p.capabilities.dialect, "mariadb", "postgresql"}
        for e in all_encoders(p.name):
            if e.name.endswith("/reference") or e.catches is not None:
                for d in dialects:
                    assert f"{p.name} · {d} · {e.name}" in asked
    # Every protocol's own dialect takes every one of its mutants' shapes (none refused there).
    for r in refused:
        protocol, dialect = r.split(" · ")[:2]
        assert dialect != get_protocol(protocol).capabilities.dialect, r
    # Evolving, dialect-specific and mutant-specific shapes are all there.
    assert any(s.shape.evolutions for s in shapes)
    assert {s.shape.dialect for s in shapes} == {"tidb", "mariadb", "postgresql"}
    assert len(shapes) > 100


def test_the_soak_reports_a_crash_with_where_and_how_to_replay_it() -> None:
    """A shape no run makes (PostgreSQL has no BLOB): the soak records the crash, never raises."""
    base = get_protocol("debezium")
    shape = replace(RunPlan(base, find_encoder("reference", "debezium"), [], 0, 0).run_shape(), kinds=(Kind.BLOB,))
    bad = SoakShape("bad · postgresql · blob", shape, ("bad · postgresql · blob",))
    result = soak([bad], 3, seed="s")
    assert result.workloads == 3 and len(result.crashes) == 3
    c = result.crashes[0]
    assert (c.label, c.seed, c.shard, c.stage) == ("bad · postgresql · blob", "s", 0, "generate")
    assert c.error.startswith(("AssertionError", "ValueError", "InvalidType")) and "\n" not in c.error
    assert "dialect_domains.py" in c.where or "dialects.py" in c.where
    assert len(result.distinct_crashes()) <= 2
    with pytest.raises(Exception):  # noqa: B017,PT011 - replay raises exactly what the soak saw
        replay(shape, "s", 0)


def test_units_spread_by_weight_and_interleave() -> None:
    a, b = (SoakShape(n, DEFAULT_SHAPE) for n in ("a", "b"))
    got = list(units([a, b], 8, weights=lambda s: 3.0 if s.label == "a" else 1.0))
    assert Counter(s.label for s, _ in got) == {"a": 6, "b": 2}
    assert [s.label for s, _ in got[:2]] == ["a", "b"]  # both met before either is done
    assert [i for s, i in got if s.label == "b"] == [0, 1]


# -- what the soaks found -------------------------------------------------------------------------

def test_a_double_beyond_float32_is_not_a_float32() -> None:
    """The crash of issue 26: `is_float32(1e300)` packed the double as a C float and raised."""
    for x in (1e300, -1e300, 1.7976931348623157e308, FLOAT32_MAX * 2, 3.5e38):
        assert not is_float32(x)
        assert to_float32(x) == math.copysign(math.inf, x)
    # Just above FLOAT32_MAX but within half an ulp still rounds to it (IEEE round-to-nearest).
    assert to_float32(FLOAT32_MAX * (1 + 2**-26)) == FLOAT32_MAX
    assert is_float32(FLOAT32_MAX) and not is_float32(math.inf) and not is_float32(math.nan)


def test_narrowing_a_double_column_skips_values_beyond_float32() -> None:
    """`_narrowed` asks whether every stored DOUBLE is a float32 before it proposes FLOAT."""
    b = HistoryBuilder(RandomSource("x"))
    db = b.create_database()
    table = b.create_table(db)
    col = Column("d", SqlType(Kind.DOUBLE), True)
    state = _TableState(table, rows={(1,): {"d": 1e300}, (2,): {"d": 0.5}})
    assert b._narrowed(state, col) is None
    state = _TableState(table, rows={(1,): {"d": 0.5}, (2,): {"d": None}})
    narrowed = b._narrowed(state, col)
    assert narrowed is not None and narrowed.type.kind is Kind.FLOAT


def test_narrowing_a_varchar_1_holding_only_empty_strings_keeps_it() -> None:
    """The long soak's crash: VARCHAR(1) whose longest value is '' asked for a length in [1, 0]."""
    b = HistoryBuilder(RandomSource("x"))
    table = b.create_table(b.create_database())
    col = Column("v", SqlType(Kind.VARCHAR, length=1), True)
    assert b._narrowed(_TableState(table, rows={(1,): {"v": ""}, (2,): {"v": None}}), col) is None
    col = Column("v", SqlType(Kind.VARCHAR, length=5), True)
    narrowed = b._narrowed(_TableState(table, rows={(1,): {"v": ""}}), col)
    assert narrowed is not None and narrowed.type.length is not None and 1 <= narrowed.type.length <= 4


@pytest.mark.parametrize(("encoder", "seed", "shard"), [
    # `conformance run --protocol ticdc-avro --encoder ticdc-avro/mutant/stale-id-after-rejection
    # --option registry-compatibility=BACKWARD --examples 30 --seed 7`: shard 11 crashed.
    ("ticdc-avro/mutant/stale-id-after-rejection", 7, 11),
    # `conformance run --protocol ticdc-avro --option enable-tidb-extension=true --examples 7000
    # --seed p1`: shard 447 crashed.
    ("ticdc-avro/reference", "p1", 447),
])
def test_the_workloads_that_crashed_in_issue_26_generate(encoder: str, seed: int | str, shard: int) -> None:
    p = get_protocol("ticdc-avro")
    shape = RunPlan(p, find_encoder(encoder, p.name), [], 0, seed).run_shape()
    w = replay(shape, str(seed) if isinstance(seed, str) else seed, shard)  # type: ignore[arg-type]
    assert w == sample_workload(seed, shard, shape)
    assert w.size > 0


def test_a_mutant_whose_kinds_the_upstream_has_none_of_is_a_usage_error() -> None:
    """`--encoder maxscale-kafkacdc/mutant/binary-as-base64 --upstream embedded-postgres` crashed in
    the generator (PostgreSQL has no BLOB): now a usage error that says what to do."""
    p = get_protocol("maxscale-kafkacdc")
    plan = RunPlan(p, find_encoder("mutant/binary-as-base64", p.name), [], 0, 0,
                   upstream=SimpleNamespace(dialect="postgresql"))
    with pytest.raises(UsageError, match=r"BLOB, VARBINARY, BINARY columns, and postgresql has none"):
        plan.run_shape()
    # Kinds the dialect partly has are kept to those (UUID only, on PostgreSQL).
    plan = RunPlan(p, find_encoder("mutant/uuid-hex", p.name), [], 0, 0, upstream=SimpleNamespace(dialect="postgresql"))
    assert plan.run_shape().kinds == (Kind.UUID,)


def test_infinities_and_nan_have_a_text_and_a_workload_file_form() -> None:
    """PostgreSQL's real and double precision hold ±Infinity: the model's TiDB text is Go's
    strconv ('+Inf'), and NaN reads back from a workload file as NaN (it read back as -Infinity)."""
    real = SqlType(Kind.FLOAT)
    assert [mysql_text(real, x) for x in (math.inf, -math.inf, math.nan)] == ["+Inf", "-Inf", "NaN"]
    for x in (math.inf, -math.inf):
        assert value_from_json(real, value_to_json(real, x)) == x
    nan = value_from_json(SqlType(Kind.DOUBLE), value_to_json(SqlType(Kind.DOUBLE), math.nan))
    assert isinstance(nan, float) and math.isnan(nan)
