"""Regression hunting: `conformance bisect` over encoder versions, and `reproduce --bisect-exit`
for `git bisect run` (0 good, 1 bad, 125 cannot start)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.errors import UsageError
from conformance.harness.bisect import BAD, GOOD, SKIP, Probe, bisect

GOOD_, BAD_ = "ticdc-simple/reference", "ticdc-simple/mutant/version-2"


def test_the_first_bad_version_in_log2_runs_stepping_around_what_cannot_start() -> None:
    truth = [GOOD] * 11 + [SKIP] + [BAD] * 20  # 32 versions; version 11 cannot start
    ran: list[int] = []

    def run(i: int) -> Probe:
        ran.append(i)
        return Probe(i, f"v{i}", truth[i])

    found = bisect([f"v{i}" for i in range(32)], run)
    assert (found.last_good, found.first_bad, found.untestable) == (10, 12, [11])
    assert len(ran) <= 2 + 5 + 1  # both ends, ⌈log2 32⌉ halvings, one step around the skip


def test_the_ends_must_be_good_then_bad() -> None:
    with pytest.raises(UsageError, match="first version must pass and the last fail"):
        bisect(["a", "b"], lambda i: Probe(i, "ab"[i], BAD))


def test_bisect_over_an_encoders_file_names_the_first_bad_and_what_it_changed(tmp_path: Path,
                                                                               capsys: pytest.CaptureFixture[str]
                                                                               ) -> None:
    versions = tmp_path / "versions.txt"
    versions.write_text(f"# oldest first\n{GOOD_}\n{GOOD_}\nticdc-simple/mutant/not-built\n{BAD_}\n{BAD_}\n")
    out = tmp_path / "bisect.json"
    assert main(["bisect", "--encoders-file", str(versions), "--protocol", "ticdc-simple", "--seed", "7",
                 "--examples", "2", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert (result["last_good"], result["first_bad"]) == (GOOD_, BAD_)
    assert result["untestable_between"] == ["ticdc-simple/mutant/not-built"]
    assert [(d["kind"], d["path"]) for d in result["differences"]] == [("value", "version")]
    assert "first bad: ticdc-simple/mutant/version-2" in capsys.readouterr().out
    assert main(["bisect", "--encoders-file", str(versions)]) == 2  # no example named


def test_reproduce_bisect_exit_codes(tmp_path: Path) -> None:
    assert main(["run", "--protocol", "ticdc-simple", "--encoder", BAD_, "--examples", "2", "--seed", "7",
                 "--no-matrix", "--no-spark", "--kafka", "none", "--report-dir", str(tmp_path / "r")]) == 1
    repro = str(next((tmp_path / "r" / "repro").glob("*message.version*.json")))
    assert main(["reproduce", repro, "--bisect-exit", "--encoder", GOOD_]) == 0
    assert main(["reproduce", repro, "--bisect-exit"]) == 1  # the recorded encoder: still bad
    assert main(["reproduce", repro, "--bisect-exit", "--encoder-cmd", "/nonexistent/encoder"]) == 125
