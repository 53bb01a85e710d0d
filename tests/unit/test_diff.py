"""`conformance diff`: what two outputs (two dumps, or two encoders on the same workloads) wrote differently, grouped by kind."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.encoders.spi import Record
from conformance.harness.diff import diff

RUN = ["run", "--protocol", "debezium", "--examples", "3", "--seed", "diff", "--no-matrix", "--no-spark",
       "--kafka", "none", "--no-shrink"]


def _dump(tmp_path: Path, name: str, *extra: str) -> Path:
    out = tmp_path / f"{name}.jsonl"
    assert main([*RUN, *extra, "--dump-records", str(out), "--report-dir", str(tmp_path / name)]) in (0, 1)
    return out


def test_an_encoder_against_itself_is_the_same_and_a_changed_rendering_is_one_group(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ref, again = _dump(tmp_path, "ref"), _dump(tmp_path, "again")
    changed = _dump(tmp_path, "changed", "--encoder", "debezium/mutant/op-insert-word")
    capsys.readouterr()
    assert main(["diff", "--input", str(ref), "--input", str(again)]) == 0
    assert "the same" in capsys.readouterr().out
    assert main(["diff", "--input", str(ref), "--input", str(changed), "--json", str(tmp_path / "d.json")]) == 1
    groups = json.loads((tmp_path / "d.json").read_text())["groups"]
    assert [(g["kind"], g["path"]) for g in groups] == [("value", "payload.op")]
    assert groups[0]["examples"][0]["A"] == "c" and groups[0]["examples"][0]["B"] == "insert"
    assert len(groups[0]["topics"]) > 1  # one group however many topics it touches


def rec(topic: str, offset: int, value: object, key: bytes | None = b"k") -> Record:
    return Record(topic, key, None if value is None else json.dumps(value).encode(), 0, offset=offset)


def test_kinds_of_difference() -> None:
    a = {("t", 0): [rec("t", 0, {"v": 1, "gone": 1, "ts_ms": 5}), rec("t", 1, {"v": 2})], ("only-a", 0): []}
    b = {("t", 0): [rec("t", 0, {"v": "1", "new": 1, "ts_ms": 6}), rec("t", 1, {"v": 3}, key=b"other")]}
    kinds = {(g.kind, g.path): g.count for g in diff(a, b)}
    assert kinds == {("topic", ""): 1, ("key", ""): 1, ("field added", "new"): 1, ("field dropped", "gone"): 1,
                     ("type", "v"): 1, ("value", "v"): 1}  # ts_ms: wall clock, left out
    swapped = {("t", 0): list(reversed(a[("t", 0)]))}
    assert [g.kind for g in diff(a | {("only-a", 0): []}, swapped | {("only-a", 0): []})] == ["order"]


def test_unusable_input_is_a_usage_error(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"topic": "t", "partition": 0, "offset": 0, "key": None,
                                "value": base64.b64encode(b"{}").decode()}) + "\n")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n")
    assert main(["diff", "--input", str(good)]) == 2
    assert main(["diff", "--input", str(good), "--input", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["diff", "--input", str(good), "--input", str(bad)]) == 2


def test_two_encoders_on_the_same_workloads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`diff --encoder A --encoder B`, and `--encoder-cmd` with {version} and two versions (here the
    suite's own encoders served through the subprocess protocol): the workloads are generated once."""
    gen = ["--protocol", "ticdc-simple", "--seed", "7", "--examples", "3"]
    assert main(["diff", *gen, "--encoder", "reference", "--encoder", "reference"]) == 0
    assert main(["diff", *gen, "--encoder", "reference", "--encoder", "mutant/dml-type-lowercase",
                 "--json", str(tmp_path / "d.json")]) == 1
    groups = json.loads((tmp_path / "d.json").read_text())["groups"]
    assert [(g["kind"], g["path"]) for g in groups] == [("value", "type")]
    serve = f"{sys.executable} -m conformance.encoders.serve --encoder ticdc-simple/{{version}}"
    assert main(["diff", *gen, "--encoder-cmd", serve, "--versions", "reference,mutant/dml-type-lowercase"]) == 1
    assert "value type" in capsys.readouterr().out
    assert main(["diff", *gen, "--encoder", "reference"]) == 2  # one encoder
    assert main(["diff", *gen, "--encoder", "reference", "--encoder", "no-such-encoder"]) == 2
