"""`conformance run --upstream`: real servers at the top of the pipeline, through the CLI.

The reference encoders pass over CONFORMANCE_REFERENCE_WORKLOADS (default 200) workloads applied
to a real MariaDB, with DDL between DML, fed the events read back from its binlog; the source.*
checks judge the server's account of every workload; a server lost in the middle of a run is an
infrastructure error naming the server, never an encoder finding; credentials never appear.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import cli as run
from helpers import report_results as results

from conformance.encoders import all_encoders
from conformance.harness import stages
from conformance.protocols import all_protocols
from conformance.upstream import UpstreamLost

WORKLOADS = int(os.environ.get("CONFORMANCE_REFERENCE_WORKLOADS", "200"))




@pytest.mark.parametrize("protocol", ["ticdc-avro", "ticdc-simple"])
def test_the_references_pass_fed_from_a_real_mariadb_binlog(protocol: str, mariadb_upstream: Any, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    url = mariadb_upstream.shareable_url()
    code, out = run(capsys, "run", "--protocol", protocol, "--upstream", url, "--kafka", "none", "--no-matrix",
                    "--examples", str(WORKLOADS), "--seed", "upstream-runs", "--report-dir", str(tmp_path))
    assert code == 0, out[-3000:]
    res = results(tmp_path)
    for cid in ("source.statement-executes", "source.stored-values", "source.log-images", "source.commit-order"):
        assert res[cid]["outcome"] == "passed", res[cid]
    assert res["source.commit-order"]["counts"]["passed"] == WORKLOADS  # one per workload
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["runs"][0]["workloads"] == WORKLOADS
    # The URL the workers open carries the server's credentials: never printed or reported.
    assert url not in out and url not in (tmp_path / "report.json").read_text()


def test_without_an_upstream_the_source_checks_say_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "run", "--kafka", "none", "--no-matrix", "--examples", "2", "--report-dir", str(tmp_path))
    assert code == 0, out
    assert "upstream" in results(tmp_path)["source.stored-values"]["skipped"]


def test_a_server_lost_mid_run_is_an_infrastructure_error(mariadb_upstream: Any, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The third workload finds the server gone (what UpstreamLost reports when a server dies:
    the provider's own test kills a real one): exit 2, the reports say so, and no check blames
    the encoder."""
    real = stages.worker_upstream

    class Dying:
        def __init__(self, up: Any) -> None:
            self.up, self.n = up, 0

        def run_workload(self, workload: Any) -> Any:
            self.n += 1
            if self.n == 3:
                raise UpstreamLost("MariaDB (embedded-mariadb): the server went away after 41 statements of "
                                   "workload 2 were applied")
            return self.up.run_workload(workload)

    dying: dict[str, Dying] = {}
    monkeypatch.setattr(stages, "worker_upstream", lambda url: dying.setdefault(url, Dying(real(url))))
    code, out = run(capsys, "run", "--upstream", mariadb_upstream.shareable_url(), "--kafka", "none", "--no-matrix",
                    "--examples", "5", "--report-dir", str(tmp_path))
    assert code == 2, out
    assert "infrastructure error" in out and "the server went away" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["verdict"] == "error" and any("embedded-mariadb" in e for e in report["errors"])
    assert not [r for r in report["results"] if r["outcome"] == "failed"]  # nothing charged to the encoder


def test_a_statement_the_server_refuses_is_reproduced_as_generated(mariadb_upstream: Any, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A source.* finding blames the suite; its reproduction is the generated SQL, refused
    statement included (the server's log stops before it, so replaying the log would show
    nothing). Provoked with the generator as it was before the index fix: seed up1, shard 277
    indexed a CHAR(0), which InnoDB refuses (error 1167)."""
    from conformance.strategies import history

    monkeypatch.setattr(history, "_indexable", lambda t, key_kinds: t.kind in key_kinds)
    code, out = run(capsys, "run", "--upstream", mariadb_upstream.shareable_url(), "--kafka", "none", "--no-matrix",
                    "--examples", "1", "--seed", "up1", "--shard", "277", "--report-dir", str(tmp_path))
    assert code == 1, out[-3000:]
    res = results(tmp_path)
    assert res["source.statement-executes"]["outcome"] == "failed"
    report = json.loads((tmp_path / "report.json").read_text())
    repro = next(r for s in report["runs"] for r in s["reproductions"] if r["check"] == "source.statement-executes")
    assert "generated SQL" in repro["note"] and repro["shrunk"] is False
    assert "char(0)" in repro["sql"] and "UNIQUE KEY" in repro["sql"]


SERVER_MUTANTS = [e for p in all_protocols() for e in all_encoders(p.name) if e.needs_server]


def test_there_is_a_server_mutant() -> None:
    assert SERVER_MUTANTS, "the checks that need a server's ids have a mutant each"


@pytest.mark.parametrize("info", SERVER_MUTANTS, ids=[e.name for e in SERVER_MUTANTS])
def test_a_mutant_that_needs_a_server_is_caught_against_one(info: Any, request: Any, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The mutants kept out of memory runs (`needs_server`: their defect is in ids only a server's
    log gives) are caught by the check they name, against a real server; the reference passes it."""
    from conformance.protocols import get_protocol

    dialect = get_protocol(info.protocol).capabilities.dialect
    up = request.getfixturevalue("postgres_upstream" if dialect == "postgresql" else "mariadb_upstream")
    common = ("run", "--protocol", info.protocol, "--upstream", up.shareable_url(), "--kafka", "none", "--no-matrix",
              "--no-shrink", "--examples", "6", "--seed", f"server-{info.name}")
    code, out = run(capsys, *common, "--encoder", info.name, "--report-dir", str(tmp_path / "mutant"))
    assert code == 1, out[-3000:]
    assert results(tmp_path / "mutant")[info.catches]["outcome"] == "failed"
    code, out = run(capsys, *common, "--report-dir", str(tmp_path / "reference"))
    assert code == 0, out[-3000:]
    assert results(tmp_path / "reference")[info.catches]["outcome"] == "passed"
