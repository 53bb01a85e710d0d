"""The README's "Hunt a regression", on real runs: eight versions of the Node example as a real git
history (`examples/node-ticdc-simple/history/make_history.py`), v5 writing BIGINT UNSIGNED
through a JavaScript Number (53 bits), and every regression command finding it — `run` and
`compare`, a baseline (known, expired, stale), `bisect` over the versions, `git bisect run` with
`reproduce --bisect-exit` in the repository, and `diff` between the last good and the first bad.
The example as shipped is the version after v8: the fix."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from helpers import cli

import conformance
from conformance.cli.main import main

pytestmark = pytest.mark.skipif(shutil.which("node") is None or shutil.which("git") is None,
                                reason="needs Node.js and git")

ROOT = Path(conformance.__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "node-ticdc-simple"
VERSIONS = [f"v{i}" for i in range(1, 9)]
CHECK = "ticdc-simple.value.bigint-unsigned"
# Two generated workloads of seed 8: the second has a BIGINT UNSIGNED column holding values above
# 2^53 (the shrunk example: 9223372036854775809, which a Number makes 9223372036854775808).
EXAMPLES = ["--protocol", "ticdc-simple", "--seed", "8", "--examples", "2"]
RUN = ["run", *EXAMPLES, "--no-matrix", "--no-spark", "--kafka", "none"]


@dataclass(frozen=True)
class Hunt:
    root: Path  # the working directory of every command (runs keep failing examples in .conformance/)
    repo: Path
    versions: Path
    commits: dict[str, str]  # tag -> commit
    v1: Path  # report directories
    v8: Path

    def cmd(self, version: str) -> str:
        return f"node {self.versions / version / 'src' / 'main.js'}"


@pytest.fixture(scope="module")
def hunt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hunt]:
    root = tmp_path_factory.mktemp("hunt")
    made = subprocess.run([sys.executable, str(EXAMPLE / "history" / "make_history.py"), str(root / "encoder"),
                           "--versions-dir", str(root / "versions")], capture_output=True, text=True, timeout=60,
                          check=False)
    assert made.returncode == 0, made.stderr
    commits = dict(line.split() for line in made.stdout.splitlines())
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        h = Hunt(root, root / "encoder", root / "versions", commits, root / "v1", root / "v8")
        # The release that passed, and the branch as it is now.
        assert main([*RUN, "--encoder-cmd", h.cmd("v1"), "--no-shrink", "--report-dir", str(h.v1)]) == 0
        assert main([*RUN, "--encoder-cmd", h.cmd("v8"), "--report-dir", str(h.v8)]) == 1
        yield h


@pytest.fixture(autouse=True)
def _in_hunt(hunt: Hunt, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(hunt.root)


def _report(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((path / "report.json").read_text())
    return data


def _failed(path: Path) -> set[str]:
    return {r["check"] for r in _report(path)["results"] if r["outcome"] == "failed"}


def test_the_history_is_eight_commits_and_only_v5_changes_what_the_encoder_writes(hunt: Hunt) -> None:
    log = subprocess.run(["git", "log", "--format=%H %s", "--reverse"], cwd=hunt.repo, capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert [line.split()[0] for line in log] == [hunt.commits[v] for v in VERSIONS]
    v5 = subprocess.run(["git", "show", "--format=", "v5"], cwd=hunt.repo, capture_output=True, text=True,
                        check=True).stdout
    assert "const n = Number(v);" in v5 and "src/simple.js" in v5
    # Built again, the same commits: the history is a fixture, not a random one.
    again = subprocess.run([sys.executable, str(EXAMPLE / "history" / "make_history.py"), str(hunt.root / "again")],
                           capture_output=True, text=True, check=True).stdout
    assert dict(line.split() for line in again.splitlines()) == hunt.commits
    # What the version that broke it fails, and nothing else.
    assert _failed(hunt.v1) == set() and _failed(hunt.v8) == {CHECK}


def test_compare_names_the_new_failure_and_the_way_back_shows_it_fixed(
        hunt: Hunt, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = cli(capsys, "compare", str(hunt.v1 / "report.json"), str(hunt.v8 / "report.json"), "--json", "-")
    assert code == 1
    result = json.loads(out)
    assert result["regressed"] and [(c["kind"], c["check"]) for c in result["changes"]] == [("new-failure", CHECK)]
    code, out = cli(capsys, "compare", str(hunt.v1 / "report.json"), str(hunt.v8 / "report.json"))
    assert code == 1 and "new-failure" in out and CHECK in out and "REGRESSED" in out
    code, out = cli(capsys, "compare", str(hunt.v8 / "report.json"), str(hunt.v1 / "report.json"), "--json", "-")
    assert code == 0
    assert [(c["kind"], c["check"]) for c in json.loads(out)["changes"]] == [("fixed", CHECK)]


def test_a_baseline_passes_the_known_failure_until_it_expires_and_the_fix_makes_it_stale(
        hunt: Hunt, capsys: pytest.CaptureFixture[str]) -> None:
    baseline, old = hunt.root / "baseline.json", hunt.root / "expired-baseline.json"
    code, out = cli(capsys, "baseline", "update", "--report", str(hunt.v8 / "report.json"), "--baseline",
                    str(baseline), "--reason", "BIGINT UNSIGNED through a Number since v5", "--ticket",
                    "https://tracker.example/ENC-7", "--expires", "2999-12-31")
    assert code == 0 and "1 entry added" in out
    (entry,) = json.loads(baseline.read_text())["entries"]
    assert entry["check"] == CHECK and "encoder" not in entry  # one encoder in the report: any version's run

    known = hunt.root / "known"
    code, out = cli(capsys, *RUN, "--encoder-cmd", hunt.cmd("v8"), "--no-shrink", "--report-dir", str(known),
                    "--baseline", str(baseline))
    assert code == 0, out[-3000:]
    block = _report(known)["baseline"]
    assert [k["check"] for k in block["known"]] == [CHECK] and block["expired"] == block["stale"] == []

    # The same entry, expired: the failure fails the run again.
    cli(capsys, "baseline", "update", "--report", str(hunt.v8 / "report.json"), "--baseline", str(old),
        "--reason", "until the 2.0 release", "--expires", "2020-01-01")
    expired = hunt.root / "expired"
    code, out = cli(capsys, *RUN, "--encoder-cmd", hunt.cmd("v8"), "--no-shrink", "--report-dir", str(expired),
                    "--baseline", str(old))
    assert code == 1, out[-3000:]
    block = _report(expired)["baseline"]
    assert [k["check"] for k in block["expired"]] == [CHECK] and block["known"] == []

    # The fix (the example as shipped): the entry is stale; --baseline-strict fails on it.
    fixed = f"node {EXAMPLE / 'src' / 'main.js'}"
    for strict, want in ((False, 0), (True, 1)):
        report = hunt.root / f"fixed-{strict}"
        code, out = cli(capsys, *RUN, "--encoder-cmd", fixed, "--no-shrink", "--report-dir", str(report),
                        "--baseline", str(baseline), *(["--baseline-strict"] if strict else []))
        assert code == want, out[-3000:]
        block = _report(report)["baseline"]
        assert [e["check"] for e in block["stale"]] == [CHECK] and block["known"] == []
        assert "stale" in out
    assert _failed(hunt.root / "fixed-False") == set()


def test_bisect_finds_v5_in_at_most_five_runs_on_a_generated_or_a_recorded_example(
        hunt: Hunt, capsys: pytest.CaptureFixture[str]) -> None:
    found = hunt.root / "bisect.json"
    code, out = cli(capsys, "bisect", "--encoder-cmd", f"node {hunt.versions}/{{version}}/src/main.js",
                    "--versions", ",".join(VERSIONS), *EXAMPLES, "--check", CHECK, "--json", str(found))
    assert code == 0, out[-3000:]
    result = json.loads(found.read_text())
    assert (result["last_good"], result["first_bad"]) == (f"cmd:{hunt.cmd('v4')}", f"cmd:{hunt.cmd('v5')}")
    assert result["runs"] == len(result["probes"]) <= 3 + 2  # ⌈log2 8⌉ + the two ends
    assert {d["path"] for d in result["differences"]} <= {"data.flag", "old.flag"}
    assert f"first bad: cmd:{hunt.cmd('v5')}" in out

    # The example the failing run recorded, over the versions as a file (one encoder a line).
    (repro,) = (hunt.v8 / "repro").glob(f"*{CHECK}.json")
    listed = hunt.root / "versions.txt"
    listed.write_text("# oldest first\n" + "".join(f"cmd:{hunt.cmd(v)}\n" for v in VERSIONS))
    code, out = cli(capsys, "bisect", "--encoders-file", str(listed), "--repro", str(repro), "--json", str(found))
    assert code == 0, out[-3000:]
    result = json.loads(found.read_text())
    assert result["first_bad"] == f"cmd:{hunt.cmd('v5')}" and result["runs"] <= 5


def test_git_bisect_run_with_reproduce_ends_on_the_commit_that_brought_it_in(hunt: Hunt) -> None:
    (repro,) = (hunt.v8 / "repro").glob(f"*{CHECK}.json")
    # The exit codes `git bisect run` reads: 0 good, 1 bad, 125 cannot start.
    assert main(["reproduce", str(repro), "--bisect-exit", "--encoder-cmd", hunt.cmd("v4")]) == 0
    assert main(["reproduce", str(repro), "--bisect-exit", "--encoder-cmd", hunt.cmd("v5")]) == 1
    assert main(["reproduce", str(repro), "--bisect-exit", "--encoder-cmd", "node /nonexistent/main.js"]) == 125

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    git = ["git", "-c", "advice.detachedHead=false"]
    subprocess.run([*git, "bisect", "start", "v8", "v1"], cwd=hunt.repo, check=True, capture_output=True)
    try:
        done = subprocess.run([*git, "bisect", "run", sys.executable, "-m", "conformance.cli.main", "reproduce",
                               str(repro), "--bisect-exit", "--encoder-cmd", "node src/main.js"],
                              cwd=hunt.repo, env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"{hunt.commits['v5']} is the first bad commit" in done.stdout
        bad = subprocess.run(["git", "rev-parse", "refs/bisect/bad"], cwd=hunt.repo, capture_output=True, text=True,
                             check=True).stdout.strip()
        assert bad == hunt.commits["v5"]
        assert done.stdout.count("--bisect-exit") <= 3  # ⌈log2 7⌉ commits between the ends
    finally:
        subprocess.run([*git, "bisect", "reset"], cwd=hunt.repo, check=True, capture_output=True)


def test_diff_between_the_last_good_and_the_first_bad_names_exactly_the_change(
        hunt: Hunt, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["diff", *EXAMPLES, "--encoder-cmd", f"node {hunt.versions}/{{version}}/src/main.js", "--versions",
                 "v4,v5", "--json", "-"])
    assert code == 1
    groups = json.loads(capsys.readouterr().out)["groups"]  # standard output: the JSON alone
    assert {(g["kind"], g["path"]) for g in groups} == {("value", "data.flag"), ("value", "old.flag")}
    for g in groups:
        for ex in g["examples"]:
            # v5's value is v4's through a double: exact digits turned into the nearest 53-bit value.
            good, bad = int(ex["A"]), int(ex["B"])
            assert good != bad == int(float(good))
    # Versions that write the same: nothing to show.
    code, out = cli(capsys, "diff", *EXAMPLES, "--encoder-cmd", f"node {hunt.versions}/{{version}}/src/main.js",
                    "--versions", "v1,v4")
    assert code == 0 and "the same" in out


def test_the_readme_walk_through_runs_as_written(tmp_path: Path) -> None:
    """The README's "Hunt a regression" commands, pasted into a shell at the root of a clone (with
    `conformance` and `python3` on the PATH); only /tmp/hunt moved into the test's directory, and
    the baseline's expiry date kept a year ahead (the README's is a real date, which will pass)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Hunt a regression\n"):]
    section = section[:section.index("\n### ", 1)]
    script = "".join(block for block in re.findall(r"```sh\n(.*?)```", section, re.S))
    assert re.search(r"^cd /tmp/hunt\b", script, re.M)  # before anything runs
    expires = re.findall(r"--expires (\d{4}-\d\d-\d\d)", script)
    assert len(expires) == 1
    script = script.replace(expires[0], (dt.date.today() + dt.timedelta(days=365)).isoformat())
    kept_before = (ROOT / ".conformance").exists()
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name, argv in (("conformance", f'"{sys.executable}" -m conformance.cli.main'), ("python3", sys.executable)):
        (bin_ / name).write_text(f'#!/bin/sh\nexec {argv} "$@"\n')
        (bin_ / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    done = subprocess.run(["bash", "-c", script.replace("/tmp/hunt", str(tmp_path / "hunt"))], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=180, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]  # the last command: baseline update
    assert out.count("VERDICT: PASS") == 2 and out.count("VERDICT: FAIL") == 2, out[-4000:]
    assert "REGRESSED: new failures" in out and "NO NEW FAILURES" in out
    assert out.count("first bad: cmd:node versions/v5/src/main.js") == 2
    assert "1 known failure(s)" in out and "1 stale entry" in out and "1 stale pruned" in out
    commits = dict(line.split() for line in out.splitlines() if re.fullmatch(r"v\d [0-9a-f]{40}", line))
    assert f"{commits['v5']} is the first bad commit" in out
    assert "value data.flag: 4 in 1 topic(s)" in out and "2 kind(s) of difference" in out
    assert (ROOT / ".conformance").exists() == kept_before, "the walk-through keeps its examples in /tmp/hunt"
