"""`container://mariadb` and `container://postgres`: the same apply-and-capture path against
the servers' Docker images (skipped where no Docker engine answers)."""

from __future__ import annotations

import pytest

from conformance.checks import Tally
from conformance.checks.source import SOURCE_CHECKS, judge_source
from conformance.protocols import all_checks
from conformance.strategies.coverage import type_coverage_workload
from conformance.upstream import open_upstream


@pytest.mark.parametrize("url, dialect", [("container://mariadb", "mariadb"), ("container://postgres", "postgresql")])
def test_container_upstream_round_trips_every_type(url: str, dialect: str) -> None:
    with open_upstream(url) as up:
        c = up.run_workload(type_coverage_workload(dialect, per_kind=1, samples=1))
    assert c.truth is not None
    tally = Tally([s for s in all_checks() if s.id in SOURCE_CHECKS])
    judge_source(c.truth, tally)
    assert tally.failed_ids() == set()
    assert tally.checks["source.log-images"].passed > 50
