"""Issue 15: Schema Registry compatibility as a checked dimension.

The documented example (a NOT NULL column added under BACKWARD: the registration fails and the
changefeed enters an error state), the upgrade of tiflow#8490 (FLOAT written as double, then as
float), the level axis of the matrix, and prediction and embedded registry agreeing on generated
evolutions at every level.
"""

from __future__ import annotations

import pytest
from helpers import problems, run_encoder, run_workloads, shape_with

from conformance.checks import Outcome
from conformance.encoders.spi import EncoderContext, EncoderError, ManualClock
from conformance.harness.compatibility import predict
from conformance.infra.inprocess import InProcessRegistry
from conformance.infra.registry import COMPATIBILITY_LEVELS, IncompatibleSchema, check_compatibility
from conformance.model.events import Transaction, Workload
from conformance.model.types import Kind
from conformance.protocols import get_protocol
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder
from conformance.strategies.history import DEFAULT_SHAPE, EVOLUTIONS, HistoryBuilder
from conformance.strategies.source import RandomSource

REJECTION = "ticdc-avro.registry.rejection"
VERDICT = "ticdc-avro.registry.verdict"


def _not_null_workload():  # type: ignore[no-untyped-def]
    """Two tables with rows; then a NOT NULL column without a default added to the first, and rows
    for both tables after it."""
    from dataclasses import replace

    b = HistoryBuilder(RandomSource("not-null"), replace(DEFAULT_SHAPE, kinds=(Kind.INT, Kind.VARCHAR), generated_rate=0))
    b.create_database()
    first, second = b.create_table(), b.create_table()
    states = [b.tables[first.table_id], b.tables[second.table_id]]
    for _ in range(3):
        for s in states:
            b.insert(s)
        b.commit()
    assert b.add_column(states[0], required=True)
    refused_at = len(b.events)
    for _ in range(2):
        for s in states:
            b.insert(s)
        b.commit()
    return Workload(tuple(b.events), "not-null", 0, {}), refused_at, first


def test_not_null_column_under_backward_stops_the_encoder() -> None:
    """Spec 000/003: adding a NOT NULL column under BACKWARD fails the registration and the changefeed
    enters an error state — nothing before it lost, no record of that table after it."""
    workload, refused_at, _ = _not_null_workload()
    suite = get_protocol("ticdc-avro")
    options = suite.resolve_options({"registry-compatibility": "BACKWARD"})
    p = predict(suite, workload, options, "p-", "BACKWARD", partitions=3)
    assert p.refusal is not None
    assert p.refusal.event == refused_at
    assert p.refusal.change == "column added (NOT NULL, no default)"
    assert p.refusal.subject.endswith("-value")
    assert p.refusal.table in suite.topics(workload, options, "p-")

    tally = run_workloads("reference", [workload], {"registry-compatibility": "BACKWARD"})
    assert problems(tally) == {}
    assert tally.checks[REJECTION].outcome is Outcome.PASSED  # stopped there, nothing after
    assert tally.checks["encoder.no-crash"].outcome is Outcome.PASSED  # the error state is no crash
    assert tally.checks["delivery.no-loss"].outcome is Outcome.PASSED  # nothing before it lost

    # An encoder that goes on with the schema id it had is caught, and the registry is not blamed.
    tally = run_workloads("ticdc-avro/mutant/stale-id-after-rejection", [workload], {"registry-compatibility": "BACKWARD"})
    rec = tally.checks[REJECTION]
    assert rec.outcome is Outcome.FAILED
    assert "after the registry refused" in next(iter(rec.failures.values())).message
    assert tally.checks[VERDICT].outcome is Outcome.PASSED

    # At NONE the change is accepted and every row is delivered.
    tally = run_workloads("reference", [workload], {"registry-compatibility": "NONE"})
    assert problems(tally) == {}
    assert tally.checks[REJECTION].outcome is Outcome.NOT_APPLICABLE


def test_a_registry_that_accepts_what_its_level_forbids_is_blamed() -> None:
    workload, _, _ = _not_null_workload()
    tally = run_workloads("ticdc-avro/mutant/registry-accepts-incompatible", [workload],
                          {"registry-compatibility": "BACKWARD"})
    rec = tally.checks[VERDICT]
    assert rec.outcome is Outcome.FAILED
    assert {f.actor for f in rec.failures.values()} == {"infrastructure"}
    # The encoder went on because the registry accepted: not the encoder's fault.
    assert tally.checks[REJECTION].outcome is Outcome.NOT_APPLICABLE


def _float_workload():  # type: ignore[no-untyped-def]
    from dataclasses import replace

    b = HistoryBuilder(RandomSource("float"), replace(DEFAULT_SHAPE, kinds=(Kind.FLOAT,), key_kinds=(Kind.INT,),
                                                      columns=(2, 3), generated_rate=0))
    b.create_database()
    t = b.create_table()
    for _ in range(4):
        b.insert(b.tables[t.table_id])
        b.commit()
    assert any(c.type.kind is Kind.FLOAT for c in t.columns)
    return list(b.events)


@pytest.mark.parametrize("level", ["BACKWARD", "NONE"])
def test_tiflow_8490_float_upgrade(level: str) -> None:
    """tiflow#8490: TiCDC before v6.5.2/v7.0.0 wrote FLOAT as double; after the upgrade it registers
    float for the same table, which BACKWARD refuses (a double cannot be read as float) and NONE
    accepts. The upgrade docs say: set the level to NONE first."""
    suite = get_protocol("ticdc-avro")
    events = _float_workload()
    registry = InProcessRegistry()
    half = len(events) - 2

    def encoder(options: dict[str, str]) -> TiCDCAvroEncoder:
        enc = TiCDCAvroEncoder()
        enc.open(EncoderContext(options=suite.resolve_options(options), registry=registry, clock=ManualClock(),
                                partitions=1, topic_prefix="u-"))
        return enc

    old = encoder({"profile": "v6.5.0"})
    for e in events[:half]:
        old.encode(e)
    subjects = registry.subjects()
    value = next(s for s in subjects if s.endswith("-value"))
    for s in subjects:
        registry.set_compatibility(level, s)
    before = registry.version(value).schema
    assert '"double"' in before
    new = encoder({})
    last = next(e for e in events[half:] if isinstance(e, Transaction))
    if level == "BACKWARD":
        with pytest.raises(EncoderError) as info:
            new.encode(last)
        assert isinstance(info.value.__cause__, IncompatibleSchema)
    else:
        records = new.encode(last)
        assert records and registry.versions(value) == [1, 2]
        after = registry.version(value).schema
        assert '"float"' in after
        rules = check_compatibility(after, [before], "BACKWARD")
        assert not rules.compatible  # what BACKWARD would have refused


@pytest.mark.parametrize("level", COMPATIBILITY_LEVELS)
def test_reference_passes_and_registry_agrees_at_every_level(level: str) -> None:
    """Evolving workloads at each of the seven levels: the reference stops exactly where the rules
    refuse, and the embedded registry agrees with every prediction (registry.verdict)."""
    tally = run_encoder("reference", {"registry-compatibility": level}, workloads=30, seed=f"levels-{level}",
                        shape=shape_with(ddl_rate=0.4, evolutions=EVOLUTIONS))
    assert problems(tally) == {}
    assert tally.checks[VERDICT].passed == 30
    if level != "NONE":
        assert tally.checks[REJECTION].passed > 0  # some change was refused, and the encoder stopped there


def test_matrix_spreads_none_and_backward_and_all_means_seven() -> None:
    suite = get_protocol("ticdc-avro")
    combos = suite.matrix({})
    assert len(combos) == 8
    assert {c["registry-compatibility"] for c in combos} == {"NONE", "BACKWARD"}
    for axis in ("enable-tidb-extension", "avro-decimal-handling-mode", "avro-bigint-unsigned-handling-mode"):
        pairs = {(c[axis], c["registry-compatibility"]) for c in combos}
        assert len(pairs) == 4, axis  # every value of every axis meets both levels
    assert {c["registry-compatibility"] for c in suite.matrix({"registry-compatibility": ["all"]})} == set(
        COMPATIBILITY_LEVELS)
    # Where nothing is registered (Debezium's JSON converter) the level changes nothing and stays default.
    assert {c["registry-compatibility"] for c in get_protocol("debezium").matrix({})} == {"BACKWARD"}


def test_the_report_has_the_compatibility_table(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Schema change × level in summary.md and the HTML report: refused and stopped at BACKWARD,
    accepted at NONE (a user sees which changes their deployment survives)."""
    from helpers import cli

    code, out = cli(capsys, "run", "--kafka", "none", "--no-spark", "--no-matrix", "--examples", "40", "--seed",
                        "table", "--option", "registry-compatibility=NONE,BACKWARD", "--report-dir", str(tmp_path))
    assert code == 0, out
    summary = (tmp_path / "summary.md").read_text()
    assert "### Schema changes × registry compatibility level" in summary
    row = next(line for line in summary.splitlines() if line.startswith("| column added (NOT NULL, no default)"))
    none, backward = row.split("|")[2:4]
    assert "accepted" in none and "refused, stopped" in backward
    html = (tmp_path / "report.html").read_text()
    assert "<table class=compat>" in html and "refused, stopped" in html
