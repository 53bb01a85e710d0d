"""The example database (issue 30, part 3): a run keeps what failed, the next run of the same
protocol and encoder replays it before the generated workloads, an example that passes three runs
in a row goes; every step on real runs through the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.harness.examples_db import ENV, location

BAD, GOOD = "ticdc-simple/mutant/version-2", "ticdc-simple/reference"
CHECK = "ticdc-simple.message.version"


def run(tmp_path: Path, name: str, encoder: str, *extra: str, seed: str = "7", examples: str = "2") -> dict[str, Any]:
    code = main(["run", "--protocol", "ticdc-simple", "--encoder", encoder, "--seed", seed, "--examples", examples,
                 "--no-matrix", "--kafka", "none", "--examples-db", str(tmp_path / "db"),
                 "--report-dir", str(tmp_path / name), *extra])
    report = json.loads((tmp_path / name / "report.json").read_text())
    assert code == {"pass": 0, "fail": 1}[report["verdict"]]
    return report


def kept(tmp_path: Path, encoder: str) -> list[Path]:
    return sorted((tmp_path / "db" / "examples" / "ticdc-simple").glob(f"{encoder.replace('/', '_')}/*.json"))


def test_a_failure_is_kept_replayed_first_and_retired_after_three_passing_runs(tmp_path: Path) -> None:
    first = run(tmp_path, "r1", BAD)
    assert first["verdict"] == "fail"
    (path,) = kept(tmp_path, BAD)
    assert first["examples_db"]["saved"] == [str(path)] and first["examples_db"]["replayed"] == 0
    data = json.loads(path.read_text())
    assert (data["check"], data["encoder"], data["example"]["seed"]) == (CHECK, BAD, 7)
    assert main(["reproduce", str(path), "--bisect-exit"]) == 1  # a reproduction file as any other

    # Another seed, one workload: the kept example is replayed first and still fails; the
    # combination's result holds its findings, named by the kept file.
    second = run(tmp_path, "r2", BAD, seed="8", examples="1")
    db = second["examples_db"]
    assert (db["replayed"], [x["check"] for x in db["still_failing"]], db["saved"]) == (1, [CHECK], [])
    seeds = {f.get("seed") for r in second["results"] if r["check"] == CHECK for f in r.get("failures", [])}
    assert f"kept:{path.name}" in seeds
    assert any("kept example(s) of the example database replayed" in n for n in second["runs"][0]["notes"])

    # The encoder fixed under the same name (the reference stands in for it): the example passes,
    # and after three runs in a row it is gone.
    shutil.move(path.parent, path.parent.with_name(GOOD.replace("/", "_")))
    for n in (1, 2):
        report = run(tmp_path, f"g{n}", GOOD, examples="1")
        assert report["verdict"] == "pass"
        assert report["examples_db"]["passed"][0]["passes_in_a_row"] == n and not report["examples_db"]["retired"]
    last = run(tmp_path, "g3", GOOD, examples="1")
    assert last["examples_db"]["retired"] and kept(tmp_path, GOOD) == []


def test_a_kept_example_finds_what_the_generated_workloads_miss_and_is_its_reproduction(tmp_path: Path) -> None:
    year = "ticdc-simple/mutant/year-two-digits"  # shows only where a YEAR value has four digits to lose
    assert run(tmp_path, "r1", year, seed="1", examples="1")["verdict"] == "fail"
    (path,) = kept(tmp_path, year)
    # Seed 5's one workload does not show the defect (without the database this run passes)...
    assert run(tmp_path, "alone", year, "--no-examples-db", seed="5", examples="1")["verdict"] == "pass"
    # ...the kept example does: the run fails, and the kept file is the check's reproduction.
    report = run(tmp_path, "r2", year, seed="5", examples="1")
    assert report["verdict"] == "fail" and report["examples_db"]["replayed"] == 1
    (repro,) = [r for r in report["runs"][0]["reproductions"] if r["check"] == "ticdc-simple.value.year"]
    assert repro["file"] == str(path) and repro["command"] == f"conformance reproduce {path}"


def test_examples_of_other_options_wait_and_bad_files_are_left_alone(tmp_path: Path) -> None:
    run(tmp_path, "r1", BAD)
    (path,) = kept(tmp_path, BAD)
    (path.parent / "garbage.json").write_text("{not json")
    (path.parent / "odd.json").write_text(json.dumps({**json.loads(path.read_text()), "options": ["a"]}))
    report = run(tmp_path, "r2", BAD, "--option", "encoding-format=avro", examples="1")
    db = report["examples_db"]
    assert db["not_in_this_run"] == 1 and db["replayed"] == 0
    assert sorted(Path(u.split(":")[0]).name for u in db["unreadable"]) == ["garbage.json", "odd.json"]
    assert (path.parent / "garbage.json").exists() and path.exists()


def test_turned_off_it_neither_replays_nor_keeps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = run(tmp_path, "r1", BAD, "--no-examples-db")
    assert "examples_db" not in report and not (tmp_path / "db").exists()
    monkeypatch.setenv(ENV, "off")
    assert location() is None and location(str(tmp_path)) == tmp_path
    monkeypatch.setenv(ENV, str(tmp_path / "elsewhere"))
    assert location() == tmp_path / "elsewhere" and location(disabled=True) is None
    monkeypatch.delenv(ENV)
    assert location() == Path(".conformance")
