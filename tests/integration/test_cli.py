"""The command line, end to end, over the embedded registry on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli.main import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out + err


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small capture from the reference encoder (records + registry dump)."""
    d = tmp_path_factory.mktemp("capture")
    rec = d / "records.jsonl"
    code = main(["run", "--examples", "12", "--seed", "5", "--no-matrix", "--option", "enable-tidb-extension=true",
                 "--no-spark", "--report-dir", str(d / "rep"), "--dump-records", str(rec)])
    assert code == 0
    return rec, d / "records.registry.json"


def test_run_reference_passes_and_writes_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--examples", "5", "--seed", "3", "--report-dir", str(tmp_path))
    assert code == 0, out
    assert "VERDICT: PASS" in out
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["format_version"] == 2 and report["verdict"] == "pass" and report["complete"] is True
    assert len(report["runs"]) == 8  # the default option matrix
    assert {"check", "outcome", "failures"} <= set(report["results"][0])
    assert all(r["outcome"] != "failed" for r in report["results"])
    junit = (tmp_path / "junit.xml").read_text()
    assert "<testsuites" in junit and "ticdc-avro.framing.magic-byte" in junit
    assert "<table class=matrix>" in (tmp_path / "report.html").read_text()


def test_failing_run_prints_seed_and_shrunk_sql(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--encoder", "mutant/enum-as-index", "--examples", "30", "--seed", "11",
                        "--no-matrix", "--kafka", "none", "--report-dir", str(tmp_path))
    assert code == 1
    assert "ticdc-avro.type.enum" in out and "VERDICT: FAIL" in out
    assert "seed 11" in out and "CREATE TABLE" in out and "INSERT INTO" in out
    report = json.loads((tmp_path / "report.json").read_text())
    rep = report["runs"][0]["reproductions"]
    target = next(r for r in rep if r["check"] == "ticdc-avro.type.enum")
    assert target["seed"] == 11 and "ENUM(" in target["sql"]
    # the stored reproduction replays: against the mutant it still fails, against the reference it passes
    code2, out2 = run_cli(capsys, "reproduce", target["file"])
    assert code2 == 1 and "still fails" in out2
    code3, out3 = run_cli(capsys, "reproduce", target["file"], "--encoder", "reference")
    assert code3 == 0 and "passes now" in out3


def test_replay_one_shard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--encoder", "mutant/float-as-double", "--examples", "1", "--shard", "2",
                        "--seed", "7", "--no-matrix", "--no-shrink", "--kafka", "none", "--report-dir", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["runs"][0]["workloads"] == 1
    assert code == 1  # the mutant is caught on this shard
    # --no-shrink still prints the failing workload (as generated) and a reproduction file
    assert "workload (not shrunk: --no-shrink)" in out and "INSERT INTO" in out and "reproduce " in out


def test_check_clean_capture(capture: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rec, reg = capture
    out_json = tmp_path / "r.json"
    code, out = run_cli(capsys, "check", "--input", str(rec), "--registry", str(reg), "--option",
                        "enable-tidb-extension=true", "--report-json", str(out_json))
    assert code == 0, out
    data = json.loads(out_json.read_text())
    assert data["verdict"] == "pass"
    skipped = {r["check"] for r in data["results"] if r["outcome"] == "skipped"}
    assert "ticdc-avro.event.records" in skipped  # needs the workload: said, not guessed


def _mutate(capture: tuple[Path, Path], tmp_path: Path, fn) -> Path:  # type: ignore[no-untyped-def]
    lines = capture[0].read_text().splitlines()
    out = tmp_path / "bad.jsonl"
    out.write_text("\n".join(fn(lines)) + "\n")
    return out


def _with_value(line: str, value: bytes | None) -> str:
    obj = json.loads(line)
    obj["value"] = None if value is None else base64.b64encode(value).decode()
    return json.dumps(obj)


def _value(line: str) -> bytes:
    return base64.b64decode(json.loads(line)["value"])


def _first_with_value(lines: list[str]) -> int:
    return next(i for i, line in enumerate(lines) if json.loads(line)["value"])


BAD_CASES = {
    "truncated-avro": (lambda v: v[:-3], "ticdc-avro.framing.body"),
    "wrong-magic-byte": (lambda v: b"\x07" + v[1:], "ticdc-avro.framing.magic-byte"),
    "unknown-schema-id": (lambda v: b"\x00\x00\x0f\x42\x3f" + v[5:], "ticdc-avro.framing.schema-id"),
    "garbage": (lambda v: b"\x00\x00\x00\x00\x01\xff\xfe\xfd\xfc\xfb\xfa", "ticdc-avro.framing.body"),
    "short": (lambda v: b"\x00\x01", "ticdc-avro.framing.magic-byte"),
    "trailing-bytes": (lambda v: v + b"\x00\x00", "ticdc-avro.framing.body"),
}


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_check_bad_values_become_findings(case: str, capture: tuple[Path, Path], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    fn, check = BAD_CASES[case]

    def mutate(lines: list[str]) -> list[str]:
        i = _first_with_value(lines)
        lines[i] = _with_value(lines[i], fn(_value(lines[i])))
        return lines

    bad = _mutate(capture, tmp_path, mutate)
    out_json = tmp_path / "r.json"
    code, out = run_cli(capsys, "check", "--input", str(bad), "--registry", str(capture[1]), "--option",
                        "enable-tidb-extension=true", "--report-json", str(out_json))
    assert code == 1, out
    assert "Traceback" not in out
    res = {r["check"]: r for r in json.loads(out_json.read_text())["results"]}
    assert res[check]["outcome"] == "failed"
    assert res[check]["failures"][0]["location"]["offset"] is not None


@pytest.mark.parametrize("line", ["{not json", '"a string"', '{"topic": "t", "partition": 0, "offset": 1, "key": "***", "value": null}',
                                  '{"topic": "t", "partition": -1, "offset": 0, "key": null, "value": null}',
                                  '{"partition": 0, "offset": 0, "key": null, "value": null}'])
def test_check_malformed_lines_are_findings(line: str, capture: tuple[Path, Path], tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = _mutate(capture, tmp_path, lambda lines: lines[:3] + [line] + lines[3:])
    out_json = tmp_path / "r.json"
    code, out = run_cli(capsys, "check", "--input", str(bad), "--registry", str(capture[1]), "--report-json",
                        str(out_json), "--option", "enable-tidb-extension=true")
    assert code == 1 and "Traceback" not in out
    res = {r["check"]: r for r in json.loads(out_json.read_text())["results"]}
    f = res["capture.record-format"]["failures"][0]
    assert f["location"]["line"] == 4 and f["actor"] == "capture"
    assert res["capture.record-format"]["counts"]["passed"] > 10  # the other lines were still checked


WATERMARK = ["--option", "enable-tidb-extension=true", "--option", "avro-enable-watermark=true"]


def test_watermark_capture_checks_with_the_option_and_says_so_without(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """TiCDC's own consumer setup (avro-enable-watermark): DDL and checkpoint records in the
    capture are judged as such with the option, and named as such without it."""
    rec = tmp_path / "wm.jsonl"
    code, out = run_cli(capsys, "run", "--examples", "6", "--seed", "8", "--no-matrix", "--no-spark", "--kafka", "none",
                        *WATERMARK, "--report-dir", str(tmp_path / "rep"), "--dump-records", str(rec))
    assert code == 0, out
    values = [_value(line) for line in rec.read_text().splitlines() if json.loads(line)["key"] is None
              and json.loads(line)["value"]]
    assert {v[0] for v in values} == {1, 2}  # DDL and checkpoint records were written
    reg = tmp_path / "wm.registry.json"
    out_json = tmp_path / "r.json"
    code, out = run_cli(capsys, "check", "--input", str(rec), "--registry", str(reg), *WATERMARK,
                        "--report-json", str(out_json))
    assert code == 0, out
    res = {r["check"]: r for r in json.loads(out_json.read_text())["results"]}
    for cid in ("ddl-message", "checkpoint-message", "broadcast", "order"):
        assert res[f"ticdc-avro.watermark.{cid}"]["outcome"] == "passed", cid
    code, out = run_cli(capsys, "check", "--input", str(rec), "--registry", str(reg),
                        "--option", "enable-tidb-extension=true", "--report-json", str(out_json))
    assert code == 1
    f = {r["check"]: r for r in json.loads(out_json.read_text())["results"]}["ticdc-avro.framing.magic-byte"]
    assert "avro-enable-watermark=true" in f["failures"][0]["hint"]
    assert "who must act: the encoder under test" in out


def test_check_with_registry_down_is_a_clear_error(capture: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "check", "--input", str(capture[0]), "--registry", "http://alice:s3cret@127.0.0.1:1")
    assert code == 2
    assert "unreachable" in out and "Traceback" not in out
    assert "s3cret" not in out and "alice" not in out


def test_check_usage_errors(capture: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "check", "--input", str(tmp_path / "missing.jsonl"), "--registry", str(capture[1]))
    assert code == 2 and "does not exist" in out
    bad_dump = tmp_path / "dump.json"
    bad_dump.write_text("{nope")
    code, out = run_cli(capsys, "check", "--input", str(capture[0]), "--registry", str(bad_dump))
    assert code == 2 and "Traceback" not in out
    code, out = run_cli(capsys, "check", "--input", str(capture[0]), "--registry", str(capture[1]),
                        "--option", "avro-decimal-handling-mode=bytes")
    assert code == 2 and "precise" in out


def test_empty_capture_is_an_error_not_a_pass(capture: tuple[Path, Path], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    for text in ("", "\n\n"):
        empty = tmp_path / "empty.jsonl"
        empty.write_text(text)
        code, out = run_cli(capsys, "check", "--input", str(empty), "--registry", str(capture[1]),
                            "--report-json", str(tmp_path / "r.json"))
        assert code == 2 and "holds no records" in out
        assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "error"
    code, out = run_cli(capsys, "check", "--input", str(tmp_path), "--registry", str(capture[1]))
    assert code == 2 and "is a directory" in out


def test_malformed_registry_url_is_a_usage_error(capture: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "check", "--input", str(capture[0]), "--registry",
                        "http://user:s3cret@127.0.0.1:notaport")
    assert code == 2 and "bug in the suite" not in out and "Traceback" not in out
    assert "s3cret" not in out


def test_exit_2_still_writes_the_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CI collects report.json / junit.xml: a run that stops with a usage or infrastructure
    error leaves them too, with verdict "error" and the reason."""
    code, _ = run_cli(capsys, "run", "--option", "integrity-check-level=correctness", "--no-matrix",
                      "--report-dir", str(tmp_path / "rep"))
    assert code == 2
    data = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert data["verdict"] == "error" and "needs enable-tidb-extension=true" in data["errors"][0]
    assert 'errors="1"' in (tmp_path / "rep" / "junit.xml").read_text()


def test_run_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out = run_cli(capsys, "run", "--encoder", "nope", "--report-dir", str(tmp_path))
    assert code == 2 and "conformance list" in out
    code, out = run_cli(capsys, "run", "--option", "integrity-check-level=correctness", "--no-matrix",
                        "--report-dir", str(tmp_path))
    assert code == 2 and "needs enable-tidb-extension=true" in out


def test_list_json_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "list", "--json")
    assert code == 0
    data = json.loads(out)
    assert {"id", "level", "clause", "protocol", "scope"} <= set(data["checks"][0])
    names = {e["name"] for e in data["encoders"]}
    assert "ticdc-avro/reference" in names and "ticdc-avro/mutant/float-as-double" in names
    # External: real tools under test (Debezium's embedded engine), listed even where their extra
    # is not installed (running one then says what to install).
    assert {e["kind"] for e in data["encoders"]} == {"reference", "mutant", "external"}
    assert "debezium/engine-postgres" in names


def test_explain(capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "explain", "ticdc-avro.type.float")
    assert code == 0 and "float-as-double" in out and "#8567" in out


def test_console_script_runs_as_a_process(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "conformance", "run", "--examples", "3", "--seed", "1", "--no-matrix",
                           "--no-spark", "--report-dir", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "report.json").exists()


def test_serve_registry_process_answers_confluent_clients(tmp_path: Path) -> None:
    import re
    import time
    import urllib.request

    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    proc = subprocess.Popen([sys.executable, "-m", "conformance", "serve", "registry", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 30
        while "listening" not in line and time.monotonic() < deadline:
            line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert url, line
        assert urllib.request.urlopen(url.group(0) + "/", timeout=5).read() == b"{}"
        client = SchemaRegistryClient({"url": url.group(0)})
        sid = client.register_schema("t-value", Schema('{"type":"record","name":"t","fields":[]}', "AVRO"))
        assert client.get_schema(sid).schema_str.startswith('{"type":"record"')
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _outcomes(path: Path) -> dict[tuple[str, str], tuple[str, int, int]]:
    data = json.loads((path / "report.json").read_text())
    return {(r["label"], r["check"]): (r["outcome"], r["counts"]["passed"], r["counts"]["failed"])
            for r in data["results"]}


def test_spark_and_no_spark_give_the_same_verdicts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["run", "--examples", "4", "--seed", "21", "--option", "enable-tidb-extension=true,false"]
    code1, out1 = run_cli(capsys, *common, "--report-dir", str(tmp_path / "spark"))
    code2, out2 = run_cli(capsys, *common, "--no-spark", "--report-dir", str(tmp_path / "local"))
    assert code1 == code2 == 0, out1 + out2
    a, b = _outcomes(tmp_path / "spark"), _outcomes(tmp_path / "local")
    assert a == b
    ext_true = {label for label, _ in a if label.startswith("ext=true")}  # each with its registry level
    assert ext_true and all(a[(label, "delivery.no-loss")][0] == "passed" for label in ext_true)
    # The delivery counts agree too, and a note both combinations share is printed once.
    notes = [[line for line in out.splitlines() if "row change(s) delivered" in line] for out in (out1, out2)]
    assert len(notes[0]) == 1 and notes[0] == notes[1], notes
    assert re.match(r"note \(all \d+ combinations\): delivery: \d+ row change", notes[0][0]), notes


# In-flight retries reorder whatever is in flight when a request fails: with 5 workloads a Spark
# run's retried requests held no second version of any key in ~1 run of 6 (commit-ts order still
# failed); with 10, 10 runs of 10 reordered a key's versions.
@pytest.mark.parametrize("mutant,check,examples", [("sink-skip-failures", "delivery.no-loss", 5),
                                                    ("sink-inflight-retries", "delivery.per-key-order", 10)])
def test_spark_catches_fault_exposed_mutants_like_no_spark(mutant: str, check: str, examples: int, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    """Spark's executors start producing seconds after the driver: the fault schedule is timed
    from the first produced record, and production is a steady stream while it runs, so both
    modes meet the faults (a schedule timed from the driver once missed Spark's production)."""
    for mode in ([], ["--no-spark"]):
        code, out = run_cli(capsys, "run", "--encoder", f"mutant/{mutant}", "--examples", str(examples), "--seed", "7",
                            "--no-matrix", *mode, "--report-dir", str(tmp_path / (mode[0] if mode else "spark")))
        assert code == 1, (mode, out)
        assert check in out and "fault schedule" in out


def test_delivery_mutant_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A delivery finding the in-memory pipeline reproduces (a sink that scatters keys) is shrunk
    like any other; one that needs the broker's faults keeps its workload as generated, with the
    command that replays its shard over Kafka."""
    code, out = run_cli(capsys, "run", "--encoder", "mutant/sink-key-scatter", "--examples", "2", "--seed", "4",
                        "--no-matrix", "--no-spark", "--report-dir", str(tmp_path))
    assert code == 1 and "delivery.one-partition-per-key" in out
    rp = json.loads((tmp_path / "report.json").read_text())["runs"][0]["reproductions"]
    mine = [r for r in rp if r["check"] == "delivery.one-partition-per-key"]
    assert mine and mine[0].get("shrunk", True) and "CREATE TABLE" in mine[0]["sql"]
    assert mine[0]["command"].startswith("conformance reproduce ") and "--shard" in mine[0]["replay"]
    # the same mutant runs without a broker: the in-memory log has partitions too
    code, out = run_cli(capsys, "run", "--encoder", "mutant/sink-key-scatter", "--kafka", "none", "--examples", "2",
                        "--seed", "4", "--no-matrix", "--report-dir", str(tmp_path / "memory"))
    assert code == 1 and "delivery.one-partition-per-key" in out
    # a mutant whose defect needs broker faults: not shrunk, replayed over Kafka
    code, out = run_cli(capsys, "run", "--encoder", "mutant/sink-skip-failures", "--examples", "2", "--seed", "7",
                        "--no-matrix", "--no-spark", "--no-shrink", "--report-dir", str(tmp_path / "faults"))
    assert code == 1, out
    rp = json.loads((tmp_path / "faults" / "report.json").read_text())["runs"][0]["reproductions"]
    mine = [r for r in rp if r["check"] == "delivery.no-loss"]
    assert mine and mine[0]["shrunk"] is False and "CREATE TABLE" in mine[0]["sql"]
    assert "--shard" in mine[0]["command"] and "--kafka" in mine[0]["command"] and "--faults" in mine[0]["command"]
    assert "replay: conformance run" in out
    code, out = run_cli(capsys, "run", "--encoder", "mutant/sink-skip-failures", "--kafka", "none",
                        "--report-dir", str(tmp_path / "x"))
    assert code == 2 and "needs --kafka" in out


def test_a_mutant_runs_under_the_options_it_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A mutant's `needs_options` are applied as its shape is: END's event count is only written
    with transaction metadata, which is off by default (the run once passed)."""
    code, out = run_cli(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/mutant/end-miscounts",
                        "--no-matrix", "--kafka", "none", "--examples", "10", "--seed", "1", "--no-shrink",
                        "--report-dir", str(tmp_path))
    assert code == 1, out
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["options"]["provide.transaction.metadata"] for r in report["runs"]] == ["true"]
    failed = {r["check"] for r in report["results"] if r["outcome"] == "failed"}
    assert "debezium.transaction.metadata" in failed
    # The same value given explicitly is no conflict.
    code, out = run_cli(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/mutant/end-miscounts",
                        "--option", "provide.transaction.metadata=true", "--kafka", "none", "--examples", "10",
                        "--seed", "1", "--no-shrink", "--report-dir", str(tmp_path / "same"))
    assert code == 1, out


def test_a_mutant_refuses_options_that_hide_its_defect(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--protocol", "debezium", "--encoder", "debezium/mutant/end-miscounts",
                        "--option", "provide.transaction.metadata=false", "--no-matrix", "--kafka", "none",
                        "--report-dir", str(tmp_path))
    assert code == 2, out
    assert "needs --option provide.transaction.metadata=true" in out and "Traceback" not in out


def test_kafka_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--kafka", "container://", "--no-matrix", "--report-dir", str(tmp_path))
    assert code == 2 and "Docker" in out and "Traceback" not in out
    code, out = run_cli(capsys, "run", "--kafka", "none", "--faults", "broker-down@1s:1s", "--report-dir",
                        str(tmp_path))
    assert code == 2 and "needs a broker" in out
    code, out = run_cli(capsys, "run", "--faults", "broker-sideways@1s", "--no-spark", "--no-matrix",
                        "--report-dir", str(tmp_path))
    assert code == 2 and "broker-down@" in out  # the grammar is shown


def test_simple_runs_through_spark_and_kafka(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The second protocol on the default pipeline: Spark, the embedded Kafka, both encodings."""
    code, out = run_cli(capsys, "run", "--protocol", "ticdc-simple", "--examples", "4", "--seed", "3",
                        "--report-dir", str(tmp_path))
    assert code == 0, out
    report = json.loads((tmp_path / "report.json").read_text())
    assert [r["options"]["encoding-format"] for r in report["runs"]] == ["json", "avro"]
    passed = {(r["run"], r["check"]) for r in report["results"] if r["outcome"] == "passed"}
    for run in (0, 1):
        assert {(run, "delivery.no-loss"), (run, "ticdc-simple.consumer.schema-known"),
                (run, "ticdc-simple.order.watermark")} <= passed


def test_simple_failure_shrinks_and_replays(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = run_cli(capsys, "run", "--protocol", "ticdc-simple", "--encoder", "mutant/enum-as-name",
                        "--examples", "30", "--seed", "11", "--no-matrix", "--kafka", "none",
                        "--report-dir", str(tmp_path))
    assert code == 1 and "ticdc-simple.value.enum" in out
    report = json.loads((tmp_path / "report.json").read_text())
    target = next(r for r in report["runs"][0]["reproductions"] if r["check"] == "ticdc-simple.value.enum")
    assert "ENUM(" in target["sql"]
    code2, out2 = run_cli(capsys, "reproduce", target["file"])
    assert code2 == 1 and "still fails" in out2
    code3, out3 = run_cli(capsys, "reproduce", target["file"], "--encoder", "reference")
    assert code3 == 0 and "passes now" in out3
