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


def test_json_keys_leaf_by_leaf_and_null_values_under_two_registries() -> None:
    """A JSON key is compared at its paths (Debezium's key schema name), and two null values (a
    delete, a tombstone) are the same whatever registries the two sides were read with."""
    a = {("t", 0): [rec("t", 0, {"v": 1}, key=b'{"schema": {"name": "a.Key"}, "payload": {"id": 1}}'),
                    rec("t", 1, None)]}
    b = {("t", 0): [rec("t", 0, {"v": 1}, key=b'{"schema": {"name": "b.Key"}, "payload": {"id": 1}}'),
                    rec("t", 1, None)]}

    def unreadable(raw: bytes | None) -> None:
        return None

    assert [(g.kind, g.path) for g in diff(a, b)] == [("key", "schema.name")]
    assert [(g.kind, g.path) for g in diff(a, b, avro=(unreadable, lambda raw: None))] == [("key", "schema.name")]


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


def test_avro_outputs_are_read_through_the_registry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Framed Avro is decoded with the registry it was written to: a writer schema that changed is a
    `schema` difference at its path, a value rendered otherwise a `value` difference at its field."""
    gen = ["--protocol", "ticdc-avro", "--seed", "3", "--examples", "5", "--option", "enable-tidb-extension=true"]
    assert main(["diff", *gen, "--encoder", "reference", "--encoder", "mutant/key-record-suffix",
                 "--json", str(tmp_path / "k.json")]) == 1
    groups = json.loads((tmp_path / "k.json").read_text())["groups"]
    assert [(g["kind"], g["path"]) for g in groups] == [("schema", "key.name")]
    assert groups[0]["examples"][0]["A"] == ["orders"] and groups[0]["examples"][0]["B"] == ["orders_key"]
    assert main(["diff", *gen, "--encoder", "reference", "--encoder", "mutant/decimal-bytes-little-endian",
                 "--json", str(tmp_path / "v.json")]) == 1
    groups = json.loads((tmp_path / "v.json").read_text())["groups"]
    assert {g["kind"] for g in groups} == {"value"}  # decoded: decimals compared as numbers' text, not bytes
    assert "qty" in {g["path"] for g in groups}
    # Two dumps, each with the registry dump its run wrote: read the same way.
    run = ["run", *gen, "--no-matrix", "--no-spark", "--kafka", "none", "--no-shrink"]
    for enc, name in (("reference", "a"), ("mutant/key-record-suffix", "b")):
        assert main([*run, "--encoder", enc, "--dump-records", str(tmp_path / f"{name}.jsonl"),
                     "--report-dir", str(tmp_path / name)]) in (0, 1)
    capsys.readouterr()
    dumps = ["--input", str(tmp_path / "a.jsonl"), "--input", str(tmp_path / "b.jsonl")]
    assert main(["diff", *dumps, "--registry", str(tmp_path / "a.registry.json"),
                 "--registry", str(tmp_path / "b.registry.json")]) == 1
    assert "schema key.name" in capsys.readouterr().out
    # Without the registries the bytes are all there is (one schema id, two schemas): said so.
    assert main(["diff", *dumps]) == 0
    assert "give each dump's registry" in capsys.readouterr().out
    assert main(["diff", *dumps, "--registry", str(tmp_path / "missing.json")]) == 2
