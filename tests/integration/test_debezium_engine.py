"""Real Debezium (3.6.3, the `.[debezium]` extra) as an encoder under test, end to end: the suite
applies generated SQL to the embedded PostgreSQL, Debezium's embedded engine captures it, the
suite produces what it hands over to Kafka and judges it; `check --kafka` then reads Debezium's
own topics. Skipped, with the reason, where the extra is not installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import cli as run
from helpers import report_results as results

from conformance.protocols.debezium.engine import available

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))




def test_real_debezium_passes_on_generated_workloads(postgres_upstream: Any, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    url = postgres_upstream.shareable_url()
    code, out = run(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/engine-postgres",
                    "--upstream", url, "--no-spark", "--no-matrix", "--option", "provide.transaction.metadata=true",
                    "--examples", "8", "--seed", "engine-it", "--report-dir", str(tmp_path / "run"),
                    "--dump-records", str(tmp_path / "records.jsonl"))
    assert code == 0, out[-4000:]
    res = results(tmp_path / "run")
    for cid in ("debezium.row.values", "debezium.key.fields", "debezium.events.per-change",
                "debezium.transaction.metadata", "delivery.no-loss", "source.stored-values",
                "debezium.source.server-ids"):  # txId, lsn, ts_ms: those of the server's own log
        assert res[cid]["outcome"] == "passed", res[cid]
    assert url not in out  # the server's credentials are never printed
    # The same records through `check`, as a capture of Debezium's own topics: alone, and against
    # the workload file of the same flags (issue 29: real output passes both).
    code, out = run(capsys, "workload", "--protocol", "debezium", "--encoder", "debezium/engine-postgres",
                    "--examples", "8", "--seed", "engine-it", "--out", str(tmp_path / "w.sql"))
    assert code == 0, out[-2000:]
    for extra in ((), ("--workload", str(tmp_path / "w.sql"))):
        code, out = run(capsys, "check", "--protocol", "debezium", "--input", str(tmp_path / "records.jsonl"),
                        "--option", "provide.transaction.metadata=true", "--complete", *extra,
                        "--report-dir", str(tmp_path / "check"))
        assert code == 0, out[-3000:]
        assert results(tmp_path / "check")["debezium.envelope.fields"]["outcome"] == "passed"
    assert results(tmp_path / "check")["debezium.row.values"]["outcome"] == "passed"


def test_a_tool_that_does_not_catch_up_is_unresponsive_with_its_log(postgres_upstream: Any, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/engine-postgres",
                    "--upstream", postgres_upstream.shareable_url(), "--no-spark", "--kafka", "none", "--no-matrix",
                    "--examples", "1", "--seed", "engine-hang", "--encoder-timeout", "0.01",
                    "--report-dir", str(tmp_path))
    assert code == 1, out[-3000:]
    t = results(tmp_path)["encoder.responsive"]
    assert t["outcome"] == "failed"
    assert "marker row" in json.dumps(t["failures"])
    assert "Traceback" not in out


def test_without_an_upstream_the_tool_says_what_it_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/engine-postgres", "--no-spark",
                    "--kafka", "none", "--no-matrix", "--examples", "1", "--report-dir", str(tmp_path))
    assert code == 2
    assert "--upstream" in out


def test_real_debezium_with_the_avro_converter_passes_and_evolves_schemas(
        postgres_upstream: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Connect records through Confluent's own AvroConverter (the extra's jars) against the run's
    registry: framing, subjects and the Avro schemas match the model, and schema changes between
    DML register new versions the registry accepts (the report's note says so)."""
    code, out = run(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/engine-postgres",
                    "--upstream", postgres_upstream.shareable_url(), "--no-spark", "--no-matrix",
                    "--option", "profile=avro", "--examples", "12", "--seed", "engine-avro",
                    "--report-dir", str(tmp_path))
    assert code == 0, out[-4000:]
    res = results(tmp_path)
    for cid in ("debezium.avro.framing", "debezium.avro.subject", "debezium.avro.schema", "debezium.row.values",
                "debezium.column.types", "delivery.no-loss"):
        assert res[cid]["outcome"] == "passed", res[cid]
    notes = [n for r in json.loads((tmp_path / "report.json").read_text())["runs"] for n in r.get("notes", [])]
    assert any(n.startswith("registry (BACKWARD):") and "accepted" in n for n in notes), notes
