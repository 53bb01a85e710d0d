"""The pytest plugin in an encoder's repository: `examples/encoder-repo` gates the Node.js encoder
with a few lines of pyproject.toml; a broken copy fails with the evidence, the shrunk SQL and the
commands that replay it (which do); a conftest's in-process encoder, filters by level, check and
combination, Kafka, configuration errors. Each test runs `pytest` in a subprocess, in a copy."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.checks.registry import Level
from conformance.protocols import all_checks

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
SIMPLE_CHECKS = all_checks("ticdc-simple")


def pytest_in(repo: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HYPOTHESIS_STORAGE_DIRECTORY": str(repo / ".hypothesis")}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args], cwd=repo,
                          capture_output=True, text=True, env=env, timeout=timeout)


def junit_cases(path: Path) -> dict[str, str]:
    """classname.name → outcome, from pytest's own JUnit file."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        kind = next((c.tag for c in tc if c.tag in ("failure", "error", "skipped")), "passed")
        out[f"{tc.get('classname')}::{tc.get('name')}"] = kind
    return out


@pytest.fixture
def encoder_repo(tmp_path: Path) -> Path:
    """A copy of the sample encoder repository and the encoder it gates (next door)."""
    for name in ("encoder-repo", "node-ticdc-simple"):
        shutil.copytree(EXAMPLES / name, tmp_path / "examples" / name,
                        ignore=shutil.ignore_patterns("reports", ".pytest_cache", "node_modules"))
    return tmp_path / "examples" / "encoder-repo"


@needs_node
def test_the_sample_encoder_repository_gates_itself(encoder_repo: Path) -> None:
    done = pytest_in(encoder_repo, "--junitxml=pytest.xml")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    cases = junit_cases(encoder_repo / "pytest.xml")
    conformance = {k: v for k, v in cases.items() if k.startswith("pyproject.toml")}
    # One test per check × combination: the matrix (json only: the encoder's handshake leaves avro
    # out) × the two values of the pinned option; plus the repository's own test.
    assert len(conformance) == 2 * len(SIMPLE_CHECKS) and len(cases) == len(conformance) + 1
    assert cases["tests.test_encoder::test_the_encoder_says_who_it_is"] == "passed"
    assert conformance["pyproject.toml.defaults::ticdc-simple.value.set"] == "passed"
    assert conformance["pyproject.toml.bootstrap-every-rows=5::ticdc-simple.bootstrap.interval"] == "passed"
    assert "left out (the encoder does not support them): encoding-format=avro" in done.stdout
    report = json.loads((encoder_repo / "reports" / "conformance" / "report.json").read_text())
    assert report["verdict"] == "pass" and [r["label"] for r in report["runs"]] == ["defaults", "bootstrap-every-rows=5"]
    assert all(r["workloads"] == 6 and r["seed"] == 20261123 for r in report["runs"])
    assert (encoder_repo / "reports" / "conformance" / "summary.md").read_text().startswith(
        "## cdc-conformance: **PASS**")


@needs_node
def test_a_broken_encoder_fails_with_evidence_shrunk_sql_and_a_replay(encoder_repo: Path) -> None:
    simple = encoder_repo.parent / "node-ticdc-simple" / "src" / "simple.js"
    text = simple.read_text()
    marker = "  if (v === null) return null;\n  const k = t.kind;\n"
    assert text.count(marker) == 1
    simple.write_text(text.replace(marker, marker + "  if (k === 'SET') return v.join(','); // member names\n"))

    # -k selects checks and combinations; the other combination is never run.
    done = pytest_in(encoder_repo, "-k", "defaults")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    assert "FAILED pyproject.toml::defaults::ticdc-simple.value.set" in done.stdout
    assert done.stdout.count("FAILED ") == 1, done.stdout[-3000:]
    message = done.stdout[done.stdout.index("_ ticdc-simple.value.set [defaults] _"):]
    for evidence in ("ticdc-simple.value.set [MUST] failed", "expected: \"", "actual:   \"", ", column ",
                     "who must act: the encoder under test", "workload: seed 20261123, shard"):
        assert evidence in message, evidence
    sql = message[message.index("shrunk workload"):message.index("replay (from")]
    assert "CREATE TABLE" in sql and "SET(" in sql and "INSERT INTO" in sql
    assert len(sql.splitlines()) < 30, "the workload was shrunk"
    lines = {line.split(": ", 1)[0].strip(): line.split(": ", 1)[1] for line in message.splitlines()
             if line.startswith(("replay (from", "   or:", "rerun this test:"))}
    reproduce = lines[f"replay (from {encoder_repo})"]
    assert reproduce.startswith("conformance reproduce ") and lines["or"].startswith(
        "conformance run --protocol ticdc-simple --encoder 'cmd:node ../node-ticdc-simple/src/main.js' --seed 20261123")
    report = json.loads((encoder_repo / "reports" / "conformance" / "report.json").read_text())
    assert [r["label"] for r in report["runs"]] == ["defaults"] and report["verdict"] == "fail"

    # Both replays, as printed, still fail the check.
    argv = shlex.split(reproduce)
    replay = subprocess.run([str(Path(sys.executable).with_name("conformance")), *argv[1:]], cwd=encoder_repo,
                            capture_output=True, text=True, timeout=120)
    assert "target check ticdc-simple.value.set: still fails" in replay.stdout, replay.stdout + replay.stderr
    argv = shlex.split(lines["rerun this test"])
    assert argv[0] == "pytest" and "conformance_examples=1" in argv
    rerun = pytest_in(encoder_repo, *argv[1:], "-o", "conformance_shrink=false")
    assert rerun.returncode == 1 and "1 failed" in rerun.stdout, rerun.stdout[-3000:]


MINIMAL = """\
[tool.pytest.ini_options]
testpaths = ["tests"]
conformance_protocol = "ticdc-simple"
conformance_examples = "2"
conformance_seed = "5"
conformance_matrix = false
conformance_shrink_seconds = "3"
{extra}
"""

CONFTEST = """\
from dataclasses import replace

from conformance.encoders import find_encoder


def pytest_conformance_encoder(config, protocol):
    # An in-process encoder object (not an installed plug-in): the mutant that writes version 2.
    return replace(find_encoder("mutant/version-2", protocol), name="acme/in-process")
"""


def small_repo(tmp_path: Path, extra: str = "", conftest: str | None = None) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_own.py").write_text("def test_own():\n    assert True\n")
    (tmp_path / "pyproject.toml").write_text(MINIMAL.format(extra=extra))
    if conftest is not None:
        (tmp_path / "conftest.py").write_text(conftest)
    return tmp_path


def test_a_conftest_encoder_object_with_filters_by_level(tmp_path: Path) -> None:
    repo = small_repo(tmp_path, conftest=CONFTEST)
    done = pytest_in(repo, "-m", "conformance_must", "--junitxml=pytest.xml")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    cases = junit_cases(repo / "pytest.xml")
    must = [c for c in SIMPLE_CHECKS if c.level is Level.MUST]
    assert len(cases) == len(must) and not any(k.startswith("tests.") for k in cases)
    failed = [k for k, v in cases.items() if v == "failure"]
    assert failed == ["pyproject.toml.defaults::ticdc-simple.message.version"]
    assert "encoder acme/in-process" in done.stdout and "actual:   2" in done.stdout
    # Not a name `conformance run` can find: only the pytest rerun is offered.
    assert "rerun this test: pytest pyproject.toml::defaults::ticdc-simple.message.version" in done.stdout
    assert "replay (from" not in done.stdout


def test_selection_runs_only_what_it_selects(tmp_path: Path) -> None:
    repo = small_repo(tmp_path, extra='conformance_encoder = "reference"\n'
                                       'conformance_options = ["send-bootstrap-in-msg-count=10000,5"]')
    reports = repo / "reports" / "conformance"
    listed = pytest_in(repo, "--collect-only", "-q")
    assert listed.returncode == 0 and f"{2 * len(SIMPLE_CHECKS) + 1} tests collected" in listed.stdout
    assert not reports.exists(), "collecting runs nothing"
    own = pytest_in(repo, "tests")  # named paths: the repository's tests only
    assert own.returncode == 0 and "collected 1 item" in own.stdout and "1 passed" in own.stdout
    assert not reports.exists()
    one = pytest_in(repo, "-k", "keys-sorted and bootstrap", "-m", "conformance_should", "-v")
    assert one.returncode == 0 and "1 passed" in one.stdout, one.stdout[-2000:]
    assert "pyproject.toml::bootstrap-every-rows=5::ticdc-simple.dml.keys-sorted PASSED" in one.stdout
    report = json.loads((reports / "report.json").read_text())
    assert [r["label"] for r in report["runs"]] == ["bootstrap-every-rows=5"]
    named = pytest_in(repo, "pyproject.toml::defaults::ticdc-simple.value.set")
    assert named.returncode == 0 and "1 passed" in named.stdout


def test_the_kafka_runner_behind_an_option(tmp_path: Path) -> None:
    repo = small_repo(tmp_path, extra='conformance_encoder = "reference"\nconformance_kafka = "embedded://"\n'
                                       'conformance_partitions = "2"')
    done = pytest_in(repo, "-k", "delivery or message.version", "-v")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "Kafka embedded://" in done.stdout
    assert "pyproject.toml::defaults::delivery.no-loss PASSED" in done.stdout
    assert "pyproject.toml::defaults::ticdc-simple.message.version PASSED" in done.stdout


def test_a_baseline_xfails_known_failures_and_strict_fails_stale_entries(tmp_path: Path) -> None:
    (tmp_path / "baseline.json").write_text(json.dumps({"format": "cdc-conformance/baseline", "format_version": 1,
        "entries": [{"check": "ticdc-simple.message.version", "reason": "v2 until the next release",
                     "ticket": "https://example.com/T-7"}]}))
    repo = small_repo(tmp_path, extra='conformance_baseline = "baseline.json"', conftest=CONFTEST)
    done = pytest_in(repo, "-k", "message.version", "-rx")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "known failure (baseline): ticdc-simple.message.version — v2 until the next release" in done.stdout
    report = json.loads((repo / "reports" / "conformance" / "report.json").read_text())
    assert report["verdict"] == "pass" and len(report["baseline"]["known"]) == 1

    (repo / "conftest.py").unlink()  # the fixed encoder: the entry is stale
    (repo / "pyproject.toml").write_text(MINIMAL.format(extra='conformance_encoder = "reference"\n'
                                                              'conformance_baseline = "baseline.json"\n'
                                                              "conformance_baseline_strict = true"))
    done = pytest_in(repo, "-k", "message.version")
    assert done.returncode == 1 and "stale baseline entry: ticdc-simple.message.version" in done.stdout, \
        done.stdout[-3000:]


@pytest.mark.parametrize("extra,message", [
    ("", "no encoder: set conformance_encoder_cmd"),
    ('conformance_encoder = "no-such-encoder"', "no encoder named 'no-such-encoder'"),
    ('conformance_encoder = "reference"\nconformance_encoder_timeout = "soon"',
     "conformance_encoder_timeout = 'soon': not a number"),
    ('conformance_encoder = "reference"\nconformance_kafka = "nonsense://"', "usage error"),
    ('conformance_encoder = "reference"\nconformance_baseline = "missing.json"', "conformance_baseline: --baseline"),
], ids=["no-encoder", "unknown-encoder", "bad-number", "bad-kafka", "bad-baseline"])
def test_configuration_errors_say_what_to_fix(tmp_path: Path, extra: str, message: str) -> None:
    done = pytest_in(small_repo(tmp_path, extra=extra))
    text = done.stdout + done.stderr
    # A bad value stops pytest at once (usage error, exit 4); what the suite cannot find stops the
    # collection of the configuration file (exit 2); a broker it cannot reach errors its tests.
    assert done.returncode in (1, 2, 4), text[-2000:]
    assert message in text, text[-2000:]
    assert "Traceback" not in text and "pytest_plugin.py" not in text, text[-2000:]


def test_the_example_database_keeps_a_failure_and_replays_it_in_the_next_session(tmp_path: Path) -> None:
    repo = small_repo(tmp_path, extra='conformance_examples_db = ".conformance"', conftest=CONFTEST)
    done = pytest_in(repo, "-k", "message.version")
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr
    kept = sorted((repo / ".conformance" / "examples" / "ticdc-simple").glob("*/*message.version*.json"))
    assert len(kept) == 1 and "1 newly kept" in done.stdout

    # The encoder fixed under the same name: the kept example is replayed first and passes.
    (repo / "conftest.py").write_text(CONFTEST.replace('find_encoder("mutant/version-2", protocol)',
                                                       'find_encoder("reference", protocol)'))
    done = pytest_in(repo, "-k", "message.version")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    db = json.loads((repo / "reports" / "conformance" / "report.json").read_text())["examples_db"]
    assert (db["replayed"], db["still_failing"], db["passed"][0]["passes_in_a_row"]) == (1, [], 1)
