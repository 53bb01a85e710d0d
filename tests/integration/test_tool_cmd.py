"""Any CDC tool as an encoder (`--tool-cmd`): a command that reads the upstream and writes to
Kafka itself, started per workload with placeholders, gated like any encoder. The real one here
is Debezium's embedded engine behind a Kafka producer (`examples/tools/debezium_kafka.py`,
needs the `.[debezium]` extra); a tool that exits or never captures is the tool's finding, with
its output's tail and no credentials."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import cli as run
from helpers import report_results as results

from conformance.encoders import tool_cmd
from conformance.protocols.debezium.engine import available

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tools" / "debezium_kafka.py"




@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_real_debezium_behind_a_kafka_producer_passes_through_tool_cmd(
        postgres_upstream: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = postgres_upstream.shareable_url()
    code, out = run(capsys, "run", "--protocol", "debezium", "--tool-cmd", f"{sys.executable} {EXAMPLE}",
                    "--upstream", url, "--no-spark", "--no-matrix", "--option", "provide.transaction.metadata=true",
                    "--examples", "3", "--seed", "tool-cmd-it", "--report-dir", str(tmp_path))
    assert code == 0, out[-4000:]
    res = results(tmp_path)
    for cid in ("debezium.row.values", "debezium.source.postgresql", "debezium.transaction.metadata",
                "debezium.events.per-change", "delivery.no-loss", "source.stored-values"):
        assert res[cid]["outcome"] == "passed", res[cid]
    assert url not in out


def test_a_tool_that_exits_is_its_crash_with_its_output_and_no_password(
        postgres_upstream: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cmd = "sh -c 'echo connecting to {upstream} with {password}; echo giving up >&2; exit 3'"
    code, out = run(capsys, "run", "--protocol", "debezium", "--tool-cmd", cmd,
                    "--upstream", postgres_upstream.shareable_url(), "--no-spark", "--no-matrix",
                    "--examples", "1", "--seed", "tool-exits", "--report-dir", str(tmp_path))
    assert code == 1, out[-3000:]
    crash = results(tmp_path)["encoder.no-crash"]
    assert crash["outcome"] == "failed"
    text = json.dumps(crash)
    assert "exited with status 3" in text and "giving up" in text
    password = postgres_upstream.conninfo.get("password")
    if password:
        assert password not in text and password not in out
    assert "Traceback" not in out


def test_a_tool_that_never_captures_is_unresponsive(postgres_upstream: Any, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_cmd, "START_ALLOWANCE_S", 0.0)
    code, out = run(capsys, "run", "--protocol", "debezium", "--tool-cmd", "sleep 600",
                    "--upstream", postgres_upstream.shareable_url(), "--no-spark", "--no-matrix",
                    "--examples", "1", "--seed", "tool-hangs", "--encoder-timeout", "2", "--report-dir", str(tmp_path))
    assert code == 1, out[-3000:]
    hung = results(tmp_path)["encoder.responsive"]
    assert hung["outcome"] == "failed"
    assert "ready marker" in json.dumps(hung)


def test_a_tool_needs_kafka_and_a_protocol_that_places_its_records(
        postgres_upstream: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run(capsys, "run", "--protocol", "debezium", "--tool-cmd", "true", "--kafka", "none",
                    "--upstream", postgres_upstream.shareable_url(), "--no-spark", "--no-matrix", "--examples", "1",
                    "--report-dir", str(tmp_path / "a"))
    assert code == 2 and "Kafka" in out, out[-2000:]
    code, out = run(capsys, "run", "--protocol", "ticdc-avro", "--tool-cmd", "true",
                    "--upstream", postgres_upstream.shareable_url(), "--no-spark", "--no-matrix", "--examples", "1",
                    "--report-dir", str(tmp_path / "b"))
    assert code == 2 and "tool_record" in out, out[-2000:]


def test_on_mariadb_the_markers_live_in_a_database_of_their_own(mariadb_upstream: Any, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tool_cmd, "START_ALLOWANCE_S", 0.0)
    code, out = run(capsys, "run", "--protocol", "maxscale-kafkacdc", "--tool-cmd", "sh -c 'exec sleep 600' {database}",
                    "--upstream", mariadb_upstream.shareable_url(), "--no-spark", "--no-matrix",
                    "--examples", "1", "--seed", "tool-hangs", "--encoder-timeout", "1", "--report-dir", str(tmp_path))
    assert code == 1, out[-3000:]
    assert results(tmp_path)["encoder.responsive"]["outcome"] == "failed"
    conn = mariadb_upstream.endpoint.connect()
    with conn.cursor() as cur:
        cur.execute("SHOW DATABASES LIKE 'cc\\_marker\\_%'")
        assert cur.fetchall() == ()  # dropped after the workload
    conn.close()


@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_check_kafka_judges_the_topics_debezium_wrote_itself(postgres_upstream: Any, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Debezium's own topics on a Kafka that outlives the run: `check --kafka` reads them as a
    user's deployment would be read, with nothing but the protocol's options."""
    from conformance.infra.kafka import open_kafka

    with open_kafka("embedded://?brokers=1&partitions=3") as k:
        bootstrap = f"kafka://{k.bootstrap.split(',')[0]}"
        code, out = run(capsys, "run", "--protocol", "debezium", "--tool-cmd", f"{sys.executable} {EXAMPLE}",
                        "--upstream", postgres_upstream.shareable_url(), "--kafka", bootstrap, "--no-spark",
                        "--no-matrix", "--examples", "2", "--seed", "tool-check-kafka",
                        "--report-dir", str(tmp_path / "run"))
        assert code == 0, out[-3000:]
        written = sorted(t for t in k.topics() if re.match(r"^t[a-z0-9]*c\d+w\d+-cdc\.", t))
        assert any(".transaction" not in t and "cc_marker" not in t for t in written), written
        code, out = run(capsys, "check", "--protocol", "debezium", "--kafka", bootstrap, "--topics",
                        ",".join(written), "--report-dir", str(tmp_path / "check"))
        assert code == 0, out[-3000:]
        res = results(tmp_path / "check")
        assert res["debezium.envelope.fields"]["outcome"] == "passed"
        assert res["debezium.key.fields"]["outcome"] == "passed"
