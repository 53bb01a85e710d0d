"""The action's run step (.github/action/run.sh) as GitHub runs it: the suite against an encoder,
the Markdown summary appended to the step summary, the outputs written, the JUnit file where the
output says, and the step's exit code the run's (a failing verdict fails the job)."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_SH = ROOT / ".github" / "action" / "run.sh"
CONFORMANCE = Path(sys.executable).with_name("conformance")


def run_step(tmp_path: Path, **inputs: str) -> tuple[subprocess.CompletedProcess[str], dict[str, str], str]:
    summary, output = tmp_path / "step_summary.md", tmp_path / "github_output"
    summary.write_text("# earlier steps wrote this\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("INPUT_")}
    env.update({f"INPUT_{k.upper()}": v for k, v in inputs.items()}, CONFORMANCE_BIN=str(CONFORMANCE),
               GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(output))
    done = subprocess.run(["bash", str(RUN_SH)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=240)
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines())
    return done, outputs, summary.read_text()


def test_a_failing_encoder_fails_the_step_with_its_summary_and_junit(tmp_path: Path) -> None:
    done, out, summary = run_step(tmp_path, protocol="ticdc-simple", encoder="mutant/version-2", examples="2",
                                  seed="7", matrix="false", kafka="none", args="--no-shrink")
    assert done.returncode == 1, done.stdout + done.stderr
    assert out["verdict"] == "fail" and out["exit-code"] == "1"
    assert summary.startswith("# earlier steps wrote this\n")
    assert "## cdc-conformance: **FAIL**" in summary and "`ticdc-simple.message.version`" in summary
    assert "::error title=cdc-conformance ticdc-simple.message.version::[MUST]" in done.stderr
    junit = Path(out["junit"])
    assert junit.is_absolute() and junit.parent == Path(out["report-dir"]) == tmp_path / "cdc-conformance-reports"
    root = ET.parse(junit).getroot()
    failed = [tc.get("name") for tc in root.iter("testcase") if tc.find("failure") is not None]
    assert failed == ["ticdc-simple.message.version"]
    assert Path(out["report-json"]).is_file() and Path(out["summary"]).read_text() in summary


def test_a_baseline_turns_known_failures_into_a_passing_gate(tmp_path: Path) -> None:
    (tmp_path / "known.json").write_text('{"format": "cdc-conformance/baseline", "format_version": 1, "entries": '
                                         '[{"check": "ticdc-simple.message.version", "reason": "v2 for now"}]}')
    done, out, summary = run_step(tmp_path, protocol="ticdc-simple", encoder="mutant/version-2", examples="2",
                                  seed="7", matrix="false", kafka="none", args="--no-shrink", baseline="known.json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert out["verdict"] == "pass" and "known failure (baseline): v2 for now" in summary
    done, out, _ = run_step(tmp_path, protocol="ticdc-simple", encoder="reference", examples="2", seed="7",
                            matrix="false", kafka="none", baseline="known.json", baseline_strict="true")
    assert done.returncode == 1 and out["verdict"] == "fail", done.stdout + done.stderr


def test_a_conforming_command_passes_with_options_and_extra_arguments(tmp_path: Path) -> None:
    serve = f"{sys.executable} -m conformance.encoders.serve --encoder ticdc-simple/reference"
    done, out, summary = run_step(tmp_path, protocol="ticdc-simple", encoder_cmd=serve, examples="2", seed="7",
                                  matrix="false", kafka="none", report_dir="out/reports",
                                  options="  send-bootstrap-in-msg-count=10000,5\n\n",
                                  args="--encoder-timeout 20 --partitions '2'")
    assert done.returncode == 0, done.stdout + done.stderr
    assert out["verdict"] == "pass" and out["exit-code"] == "0"
    assert out["report-dir"] == str(tmp_path / "out" / "reports")
    assert "## cdc-conformance: **PASS**" in summary
    # The two values of the pinned option: two combinations, each a JUnit test suite.
    suites = ET.parse(out["junit"]).getroot().findall("testsuite")
    assert len(suites) == 2 and all(s.get("failures") == "0" for s in suites)


def test_a_run_that_cannot_start_still_writes_a_summary(tmp_path: Path) -> None:
    done, out, summary = run_step(tmp_path, protocol="ticdc-simple", encoder="no/such/encoder", examples="1")
    assert done.returncode == 2
    assert out["verdict"] == "error" and out["exit-code"] == "2"
    assert "cdc-conformance: **ERROR**" in summary and "no encoder named" in summary


def test_the_example_database_of_one_step_is_replayed_by_the_next(tmp_path: Path) -> None:
    done, out, _ = run_step(tmp_path, protocol="ticdc-simple", encoder="mutant/version-2", examples="2", seed="7",
                            matrix="false", kafka="none", args="--no-shrink", examples_db=".conformance")
    assert done.returncode == 1, done.stdout + done.stderr
    assert list((tmp_path / ".conformance" / "examples").rglob("*.json"))
    done, out, summary = run_step(tmp_path, protocol="ticdc-simple", encoder="mutant/version-2", examples="1",
                                  seed="8", matrix="false", kafka="none", examples_db=".conformance")
    assert "1 kept example(s) replayed first, 1 still failing" in summary, summary
    # Turned off, the step leaves no directory behind.
    (tmp_path / "r").mkdir()
    done, out, _ = run_step(tmp_path / "r", protocol="ticdc-simple", encoder="reference", examples="1",
                            matrix="false", kafka="none", examples_db="off")
    assert done.returncode == 0 and not (tmp_path / "r" / "off").exists(), done.stdout + done.stderr
