"""The suite can pass and can fail, for every protocol installed, read from the declarations.

The kill list is not kept here: each mutant names the check that must catch it where it is
declared (`@mutant(name, check)`), so adding a check and its mutant is two edits. These tests
assert, for every protocol discovered through the `conformance.protocols` entry points (the
test-only protocol under tests/plugins included):

* every check that judges an encoder has at least one mutant;
* every mutant is caught by the check it names (broker-fault mutants: tests/integration/
  test_delivery_kafka.py, over the embedded Kafka);
* the reference passes every check.
"""

from __future__ import annotations

import pytest
from helpers import problems, run_encoder, shape_with

from conformance.checks import Level, Outcome, Scope
from conformance.checks.common import ENCODER_RESPONSIVE
from conformance.encoders import EncoderKind, all_encoders
from conformance.protocols import all_checks, all_protocols

PROTOCOLS = [p.name for p in all_protocols()]
MEMORY_MUTANTS = [e for p in PROTOCOLS for e in all_encoders(p) if e.kind is EncoderKind.MUTANT and not e.needs_broker
                  and not e.needs_server]


def judged_checks(protocol: str) -> list[str]:
    """The checks that judge an encoder: not the format of a capture file (INPUT), not the
    broker (INFO), not what a real server did with the generated SQL (SOURCE: their mutants are
    generator renderings and captures, below)."""
    from conformance.protocols import get_protocol
    from conformance.protocols.mutants import COMMIT_TS_ORDER

    suite = get_protocol(protocol)
    # A protocol whose messages never carry a commit ts cannot fail the commit-ts order check.
    never = set() if suite.carries_commit_ts(suite.capabilities.delivery_options) else {COMMIT_TS_ORDER}
    return [c.id for c in all_checks(protocol)
            if c.scope not in (Scope.INPUT, Scope.SOURCE) and c.level is not Level.INFO and c.id not in never]


def test_every_source_check_has_an_upstream_mutant() -> None:
    """The source.* checks can fail too: each has a broken rendering or capture naming it
    (caught against real servers in tests/integration/test_upstream.py)."""
    from conformance.upstream.mutants import MUTANTS as SOURCE_MUTANTS

    source = {c.id for c in all_checks() if c.scope is Scope.SOURCE}
    assert source and source <= {m.catches for m in SOURCE_MUTANTS}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_check_has_a_mutant(protocol: str) -> None:
    caught = {e.catches for e in all_encoders(protocol) if e.kind is EncoderKind.MUTANT}
    assert [c for c in judged_checks(protocol) if c not in caught] == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_mutant_names_a_check_of_its_protocol(protocol: str) -> None:
    ids = {c.id for c in all_checks(protocol)}
    for e in all_encoders(protocol):
        if e.kind is EncoderKind.MUTANT:
            assert e.catches in ids, e.name
            assert e.description, e.name


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reference_passes(protocol: str) -> None:
    tally = run_encoder("reference", workloads=30, seed=f"contract-{protocol}", protocol=protocol)
    assert problems(tally) == {}
    assert sum(1 for t in tally if t.outcome is Outcome.PASSED) >= 8


def profiles() -> list[tuple[str, str]]:
    from conformance.protocols import get_protocol

    return [(p, prof.name) for p in PROTOCOLS for prof in get_protocol(p).profiles if prof.values]


@pytest.mark.parametrize(("protocol", "profile"), profiles(), ids=[f"{p}-{n}" for p, n in profiles()])
def test_reference_passes_under_every_profile(protocol: str, profile: str) -> None:
    """A profile switches several options at once (Debezium's Avro converter, a TiCDC version):
    the reference passes under each."""
    tally = run_encoder("reference", {"profile": profile}, workloads=20, seed=f"contract-{protocol}-{profile}",
                        protocol=protocol)
    assert problems(tally) == {}
    assert sum(1 for t in tally if t.outcome is Outcome.PASSED) >= 8


@pytest.mark.parametrize("info", MEMORY_MUTANTS, ids=[e.name for e in MEMORY_MUTANTS])
def test_mutant_is_caught_by_its_check(info) -> None:  # type: ignore[no-untyped-def]
    assert info.catches is not None
    hang = info.catches == ENCODER_RESPONSIVE
    tally = run_encoder(info.name, dict(info.needs_options), workloads=60, seed=f"mutant-{info.name}",
                        shape=shape_with(**dict(info.shape)), stop_when_failing=info.catches,
                        timeout=1.0 if hang else 10.0, protocol=info.protocol)
    t = tally.checks[info.catches]
    assert t.outcome is Outcome.FAILED, (
        f"{info.name} was not caught by {info.catches}; failing: {sorted(tally.failed_ids())}")
    # Every finding carries what was expected, what was seen and where it came from.
    rec = next(iter(t.failures.values()))
    assert rec.message and rec.workload is not None
