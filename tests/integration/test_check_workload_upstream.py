"""`check --workload FILE --upstream SERVER` (issue 29, part 2): the truth is what a real server of
the source's family logged when it applied the file, not the suite's model: the capture still
passes where it conforms and fails where it does not."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.checks.registry import Outcome
from conformance.encoders import find_encoder
from conformance.harness.field import check_units, split
from conformance.harness.run import run_in_memory
from conformance.harness.stages import ComboResult, new_tally
from conformance.protocols import get_protocol

sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
from test_field_workload import export_of, records_of  # noqa: E402


def _judged(protocol: str, encoder: str, upstream: Any, *, seed: int, examples: int) -> tuple[set[str], set[str]]:
    """(what the run of `encoder` fails on the model, what its deployment's capture fails against the
    server's truth)."""
    suite = get_protocol(protocol)
    info = find_encoder(encoder, protocol)
    options = suite.resolve_options(dict(info.needs_options))
    export = export_of(encoder, examples=examples, seed=seed, protocol=protocol)
    run = ComboResult(new_tally(suite))
    for x in export.workloads:
        run_in_memory(suite, info, options, None, x.workload, shard=x.shard, run_id="r", into=run)
    units, loose = split(suite, options, None, records_of(encoder, export, deployed=True, protocol=protocol), export)
    assert not loose
    result = ComboResult(new_tally(suite))
    check_units(suite, options, None, units, result, upstream=upstream)
    return ({t.id for t in run.tally if t.outcome is Outcome.FAILED},
            {t.id for t in result.tally if t.outcome is Outcome.FAILED})


@pytest.mark.parametrize(("protocol", "fixture"), [("maxscale-kafkacdc", "mariadb_upstream"),
                                                   ("debezium", "postgres_upstream")])
def test_conforming_capture_passes_against_the_servers_truth(protocol: str, fixture: str, request: Any) -> None:
    _, field = _judged(protocol, "reference", request.getfixturevalue(fixture), seed=29,
                       examples=1 if protocol == "debezium" else 3)
    assert field == set()


@pytest.mark.parametrize(("protocol", "mutant", "fixture"), [
    ("maxscale-kafkacdc", "bit-zero", "mariadb_upstream"),
    ("maxscale-kafkacdc", "decimal-as-double", "mariadb_upstream"),
    ("debezium", "hstore-as-text", "postgres_upstream"),
])
def test_a_value_defect_fails_against_the_servers_truth(protocol: str, mutant: str, fixture: str, request: Any
                                                        ) -> None:
    catches = find_encoder(f"mutant/{mutant}", protocol).catches
    for seed in range(29, 39):
        lab, field = _judged(protocol, f"mutant/{mutant}", request.getfixturevalue(fixture), seed=seed,
                             examples=1 if protocol == "debezium" else 3)
        if catches in lab:
            assert catches in field
            return
    pytest.fail(f"no run of {mutant} showed its defect")


def test_statements_the_server_refuses_are_named_and_their_workloads_judged_by_the_model(mariadb_upstream: Any
                                                                                          ) -> None:
    """A TiDB file replayed on MariaDB: a workload with a statement MariaDB refuses (VECTOR) is not
    guessed at — the note names the statement and the server's error, and that workload is judged
    against the file's own model; the others against what MariaDB logged."""
    protocol = "ticdc-simple"
    suite = get_protocol(protocol)
    options = suite.resolve_options({})
    export = export_of(examples=6, seed=11, protocol=protocol)
    assert any("VECTOR" in x.sql for x in export.workloads)
    units, loose = split(suite, options, None, records_of("reference", export, deployed=False, protocol=protocol),
                         export)
    result = ComboResult(new_tally(suite))
    notes = check_units(suite, options, None, units, result, upstream=mariadb_upstream)
    assert {t.id for t in result.tally if t.outcome is Outcome.FAILED} == set()
    refused = [n for n in notes if "could not replay it" in n]
    assert refused and all("Unknown data type: 'VECTOR'" in n and "CREATE TABLE" in n for n in refused)
    assert len(refused) == sum("VECTOR" in x.sql for x in export.workloads)
