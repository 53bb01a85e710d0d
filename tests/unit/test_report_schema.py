"""docs/report.schema.json documents the report format: it validates every report the suite writes
(`run`, `check`, a run stopped by an error or interrupted, the pytest plugin) and every committed
report (format 1 and 2); a report records what a reader needs to trust it, also outside a git
checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import conformance.cli.main as cli
from conformance.reporting import trust

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs" / "report.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
COMMITTED = sorted([*ROOT.glob("reports/**/report*.json"), *ROOT.glob("tests/fixtures/site/*.json")])


def valid(report: dict[str, Any]) -> dict[str, Any]:
    errors = sorted(VALIDATOR.iter_errors(report), key=lambda e: list(e.absolute_path))
    assert not errors, [f"{list(e.absolute_path)}: {e.message[:200]}" for e in errors[:5]]
    return report


def test_the_schema_is_a_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_committed_report_validates(path: Path) -> None:
    valid(json.loads(path.read_text()))


def test_committed_reports_of_both_formats_are_there() -> None:
    versions = {json.loads(p.read_text())["format_version"] for p in COMMITTED}
    assert versions == {1, 2} and len(COMMITTED) >= 25


def _run(tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code = cli.main(["run", "--protocol", "ticdc-simple", "--kafka", "none", "--no-matrix", "--examples", "2",
                     "--seed", "3", "--no-examples-db", "--report-dir", str(tmp_path / "run"), *extra])
    return code, json.loads((tmp_path / "run" / "report.json").read_text())


def test_a_run_report_validates_and_says_who_ran_what_where(tmp_path: Path) -> None:
    code, report = _run(tmp_path, "--dump-records", str(tmp_path / "records.jsonl"))
    assert code == 0
    valid(report)
    assert report["format_version"] == 2 and report["complete"] is True and report["incomplete"] is None
    assert report["encoder"] == {"name": "ticdc-simple/reference", "protocol": "ticdc-simple", "kind": "reference",
                                 "implementation": "cdc-conformance", "version": trust.suite_version()}
    assert report["seed"] == 3 and report["runs"][0]["seed"] == 3
    c = report["configuration"]
    assert c["protocol"] == "ticdc-simple" and c["examples"] == 2 and c["kafka"] == "none" and c["no_matrix"] is True
    env = report["environment"]
    assert env["python"] and env["spark"] and "java" in env and env["os"]
    commit, _ = trust.suite_commit()
    assert report["tool"]["commit"] == commit
    if (ROOT / ".git").exists():
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        assert commit == head.stdout.strip()

    # The same records, checked as a capture: the check's report validates too; its writer is unknown.
    code = cli.main(["check", "--protocol", "ticdc-simple", "--input", str(tmp_path / "records.jsonl"), "--complete",
                     "--report-json", str(tmp_path / "check.json")])
    checked = valid(json.loads((tmp_path / "check.json").read_text()))
    assert code == 0 and checked["mode"] == "check" and checked["encoder"] is None and checked["complete"] is True
    assert checked["configuration"]["input"] == str(tmp_path / "records.jsonl")


def test_a_run_stopped_by_an_error_is_marked_incomplete(tmp_path: Path) -> None:
    code, report = _run(tmp_path, "--encoder", "no-such-encoder")
    assert code == 2
    valid(report)
    assert report["complete"] is False and report["incomplete"].startswith("stopped by an error: usage error")


def test_an_interrupted_run_is_marked_incomplete(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(args: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_run", interrupted)
    code, report = _run(tmp_path)
    assert code == 2
    valid(report)
    assert report["complete"] is False and report["incomplete"] == "interrupted before the end"


def test_the_pytest_plugins_report_validates(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nconformance_protocol = "ticdc-simple"\nconformance_encoder = '
        '"ticdc-simple/reference"\nconformance_examples = "2"\nconformance_seed = "5"\nconformance_matrix = false\n'
        'conformance_report_dir = "reports"\nconformance_examples_db = "off"\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "HYPOTHESIS_STORAGE_DIRECTORY": str(tmp_path / ".hypothesis")}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "value"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = valid(json.loads((tmp_path / "reports" / "report.json").read_text()))
    assert report["complete"] is True and report["encoder"]["name"] == "ticdc-simple/reference"
    assert report["configuration"]["protocol"] == "ticdc-simple" and report["configuration"]["examples"] == 2
    assert report["seed"] == 5


def test_outside_a_git_checkout_the_commit_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trust.shutil, "which", lambda name: None)
    assert trust.suite_commit.__wrapped__() == (None, None)
    monkeypatch.undo()
    # A suite installed into a virtual environment inside another project's checkout: that
    # project's commit is not the suite's.
    monkeypatch.setattr(trust, "_git", lambda root, *args: "/somewhere/else" if "--show-toplevel" in args else "f" * 40)
    assert trust.suite_commit.__wrapped__() == (None, None)
    monkeypatch.setattr(trust, "_git", lambda root, *args: None)
    assert trust.suite_commit.__wrapped__() == (None, None)
