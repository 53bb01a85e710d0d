"""A protocol that lives outside the suite (tests/plugins/toy_protocol, registered through its own
dist-info's entry point) runs through every runner and through `conformance check` without a
line of the suite naming it; and the same seeds give the same verdicts, labels, notes and exit
codes in every mode."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.protocols import ENTRY_POINT_GROUP, get_protocol, protocol_names

REPO = Path(__file__).resolve().parents[2]
SUITE_PACKAGE = REPO / "conformance"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


def report(path: Path) -> dict[str, Any]:
    return json.loads((path / "report.json").read_text(encoding="utf-8"))


def summary(path: Path) -> dict[str, Any]:
    """What must not depend on the runner: per run its encoder, label, verdict and notes, and
    every check's outcome."""
    data = report(path)
    runs = [{"encoder": r["encoder"], "label": r["label"], "verdict": r["verdict"], "notes": r["notes"]}
            for r in data["runs"]]
    outcomes = {(r["run"], r["check"]): r["outcome"] for r in data["results"]}
    return {"verdict": data["verdict"], "runs": runs, "outcomes": outcomes}


def test_the_plugin_is_discovered_and_named_nowhere_in_the_suite() -> None:
    assert "toy-json" in protocol_names()
    suite = get_protocol("toy-json")
    assert suite.capabilities.memory_partitions == 2
    named = subprocess.run(["grep", "-rl", "toy-json", str(SUITE_PACKAGE)], capture_output=True, text=True,
                           check=False)
    assert named.stdout == "", f"the suite names the plug-in: {named.stdout}"
    assert ENTRY_POINT_GROUP in (REPO / "tests" / "plugins" / "cdc_conformance_toy-0.1.dist-info" /
                                 "entry_points.txt").read_text()


def test_every_runner_and_check_agree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["run", "--protocol", "toy-json", "--examples", "6", "--seed", "11", "--partitions", "2"]
    modes = {"memory": ["--kafka", "none"], "kafka": ["--no-spark"], "spark": []}
    results = {}
    for mode, extra in modes.items():
        dump = ["--dump-records", str(tmp_path / f"{mode}.jsonl")]
        code, out = run_cli(capsys, *common, *extra, *dump, "--report-dir", str(tmp_path / mode))
        assert code == 0, (mode, out)
        results[mode] = summary(tmp_path / mode)
    assert results["memory"] == results["kafka"] == results["spark"]
    first = results["memory"]
    assert [r["label"] for r in first["runs"]] == ["defaults", "ts=false"]  # the option's matrix axis
    assert first["outcomes"][(0, "delivery.no-loss")] == "passed"
    assert first["outcomes"][(0, "toy-json.order.ts")] == "passed"
    assert first["outcomes"][(1, "toy-json.order.ts")] == "skipped"  # needs include-ts=true
    # `check` of a dump (the first combination's topics): no registry (the plug-in needs none),
    # the log-only delivery checks judged.
    for mode in modes:
        lines = (tmp_path / f"{mode}.jsonl").read_text(encoding="utf-8").splitlines()
        first_combo = [ln for ln in lines if re.match(r"[a-z0-9]*c0w", json.loads(ln)["topic"])]
        assert first_combo and len(first_combo) < len(lines)
        (tmp_path / f"{mode}-c0.jsonl").write_text("\n".join(first_combo) + "\n", encoding="utf-8")
        code, out = run_cli(capsys, "check", "--protocol", "toy-json", "--input", str(tmp_path / f"{mode}-c0.jsonl"),
                            "--option", "include-ts=true", "--report-dir", str(tmp_path / f"check-{mode}"))
        assert code == 0, (mode, out)
        checked = summary(tmp_path / f"check-{mode}")["outcomes"]
        assert checked[(0, "toy-json.message.shape")] == "passed"
        assert checked[(0, "delivery.per-key-order")] == "passed"
        assert checked[(0, "toy-json.event.messages")] == "skipped"  # needs the workload


@pytest.mark.parametrize("mode", ["memory", "kafka", "spark"])
def test_a_plugin_mutant_fails_alike_in_every_mode(mode: str, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    extra = {"memory": ["--kafka", "none"], "kafka": ["--no-spark"], "spark": []}[mode]
    code, out = run_cli(capsys, "run", "--protocol", "toy-json", "--encoder", "mutant/transactions-swapped",
                        "--examples", "4", "--seed", "3", "--no-matrix", "--partitions", "2", *extra,
                        "--report-dir", str(tmp_path))
    assert code == 1, out
    data = report(tmp_path)
    (run,) = data["runs"]
    assert run["encoder"] == "toy-json/mutant/transactions-swapped"
    failed = {r["check"] for r in data["results"] if r["outcome"] == "failed"}
    assert "toy-json.order.ts" in failed
    # The reproduction is shrunk in memory, whatever the runner.
    (rp,) = [r for r in run["reproductions"] if r["check"] == "toy-json.order.ts"]
    assert rp.get("shrunk", True) and rp["command"].startswith("conformance reproduce ")


def test_the_cli_finds_the_plugin_in_another_process(tmp_path: Path) -> None:
    """As an installed plug-in would be found: a separate interpreter with the plug-in's
    directory on its path (PYTHONPATH, set by the tests' conftest)."""
    done = subprocess.run([sys.executable, "-m", "conformance.cli.main", "list", "--json", "--protocol", "toy-json"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert {c["id"] for c in listed["checks"]} >= {"toy-json.message.shape", "toy-json.order.ts"}
    assert {e["name"] for e in listed["encoders"]} >= {"toy-json/reference", "toy-json/mutant/sink-key-scatter"}
