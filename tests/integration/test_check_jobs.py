"""`conformance check --input FILE --jobs N`: a capture checked by N forked processes, whole
topics each, reports exactly what one process reports (every count, outcome, finding and note),
for every protocol, on a reference capture and on one broken every way a capture can be (a
partition sent backwards, a replayed line, a flipped byte, lines that are no records). The CLI
runs as a subprocess: a fresh process with no other thread, as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.harness import check_jobs
from conformance.harness.check_jobs import _topic_partition, deal

SHAPE_ARGS = ["--examples", "6", "--no-matrix", "--no-spark", "--kafka", "none"]
OPTIONS = {"ticdc-avro": ["--option", "enable-tidb-extension=true"]}


def _capture(tmp_path_factory: pytest.TempPathFactory, protocol: str) -> Path:
    d = tmp_path_factory.mktemp(f"jobs-{protocol}")
    rec = d / "records.jsonl"
    code = main(["run", "--protocol", protocol, "--seed", "7", *SHAPE_ARGS, *OPTIONS.get(protocol, []),
                 "--report-dir", str(d / "rep"), "--dump-records", str(rec)])
    assert code == 0
    return rec


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A reference capture per protocol, made once per module (per test process)."""
    made: dict[str, Path] = {}

    def get(protocol: str) -> Path:
        if protocol not in made:
            made[protocol] = _capture(tmp_path_factory, protocol)
        return made[protocol]

    return get


def _broken(records: Path) -> Path:
    """The capture with one partition backwards, a line replayed at its end, a byte flipped in a
    value, and four lines that are no records (not JSON, not UTF-8, a record without a topic, one
    with a topic and a negative partition)."""
    lines = [json.loads(line) for line in records.read_text().splitlines() if line.strip()]
    by_tp: dict[tuple[str, int], list[int]] = {}
    for i, r in enumerate(lines):
        by_tp.setdefault((r["topic"], r["partition"]), []).append(i)
    at = max(by_tp.values(), key=len)
    out = list(lines)
    for i, j in zip(at, reversed(at), strict=True):
        out[i] = {**lines[j], "offset": lines[i]["offset"]}
    out.append({**lines[at[0]], "offset": max(r["offset"] for r in lines if r["partition"] == lines[at[0]]["partition"]
                                               and r["topic"] == lines[at[0]]["topic"]) + 1})
    victim = next(i for i, r in enumerate(out) if r["value"] and i not in at)
    import base64

    raw = bytearray(base64.b64decode(out[victim]["value"]))
    raw[len(raw) // 2] ^= 0x5A
    out[victim] = {**out[victim], "value": base64.b64encode(bytes(raw)).decode()}
    path = records.with_name("broken.jsonl")
    body = "".join(json.dumps(r) + "\n" for r in out).encode()
    path.write_bytes(body + b"{not json\n" + b"\xff\xfe\n" + b'{"partition": 0, "offset": 9, "key": null, "value": null}\n'
                     + b'{"topic": "zz-left-out", "partition": -1}\n')
    return path


def _check(records: Path, protocol: str, jobs: int, tmp_path: Path, *extra: str) -> tuple[dict[str, Any], str]:
    report = tmp_path / f"r{jobs}.json"
    registry = ["--registry", str(records.with_name("records.registry.json"))] if protocol == "ticdc-avro" else []
    proc = subprocess.run([sys.executable, "-m", "conformance", "check", "--protocol", protocol, "--input", str(records),
                           *registry, *OPTIONS.get(protocol, []), *extra, "--jobs", str(jobs), "--report-json", str(report)],
                          capture_output=True, text=True, check=False, env={**os.environ, "COLUMNS": "200"})
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    data = json.loads(report.read_text())
    for k in ("duration_s", "started", "command", "environment", "tool", "configuration"):
        data.pop(k)
    for run in data["runs"]:
        run.pop("duration_s", None)
    return data, proc.stdout


@pytest.mark.parametrize("protocol", ["ticdc-avro", "ticdc-simple", "maxscale-kafkacdc", "debezium"])
def test_n_processes_report_what_one_reports(captures: Callable[[str], Path], tmp_path: Path, protocol: str) -> None:
    clean = captures(protocol)
    # A run's dump is complete (what must follow a message is judged at its end too); the broken
    # copy is read as any window of the stream.
    for records, verdict, extra in ((clean, "pass", ["--complete"]), (_broken(clean), "fail", [])):
        one, _ = _check(records, protocol, 1, tmp_path, *extra)
        assert one["verdict"] == verdict
        for jobs in (2, 3):
            many, out = _check(records, protocol, jobs, tmp_path, *extra)
            assert f"by {jobs} processes" in out, out  # the topics were shared out: the test is not vacuous
            assert many == one


def test_topics_are_dealt_largest_first_to_the_least_loaded() -> None:
    assert deal({"a": 5, "b": 4, "c": 3, "d": 3, "e": 1}, 2) == {"a": 0, "b": 1, "c": 1, "d": 0, "e": 1}
    assert deal({"x": 1, "y": 1}, 3) == {"x": 0, "y": 1}
    assert deal({}, 2) == {}


def test_partial_notes_sort_as_one_process_writes_them() -> None:
    notes = ["t[10] from offset 3", "t[2] from offset 5", "a-b[0] from offset 1", "a[1] from offset 2"]
    assert sorted(notes, key=_topic_partition) == ["a[1] from offset 2", "a-b[0] from offset 1",
                                                   "t[2] from offset 5", "t[10] from offset 3"]


_UNREACHABLE = """
import sys
from pathlib import Path
from conformance.harness.check import capture_tally
from conformance.harness.check_jobs import check_file_jobs
from conformance.infra.registry.errors import RegistryUnavailable
from conformance.protocols import get_protocol

class Gone:
    def schema_by_id(self, schema_id, *a, **k):
        raise RegistryUnavailable("registry at http://127.0.0.1:1 refused the connection")
    def subjects_for_id(self, schema_id, *a, **k):
        raise RegistryUnavailable("registry at http://127.0.0.1:1 refused the connection")

suite = get_protocol("ticdc-avro")
options = suite.resolve_options({"enable-tidb-extension": "true"})
for jobs in (1, 2):
    try:
        check_file_jobs(suite, options, Gone(), Path(sys.argv[1]), capture_tally(suite, "x"), jobs)
        print(jobs, "no error")
    except BaseException as e:
        print(jobs, type(e).__name__, "worker" in "".join(getattr(e, "__notes__", [])))
"""


def test_a_workers_error_is_raised_as_one_process_raises_it(captures: Callable[[str], Path]) -> None:
    """A registry that stops answering is an infrastructure error whichever process met it (the
    CLI reports it as one, saying who must act), with the worker's traceback in a note."""
    records = captures("ticdc-avro")
    proc = subprocess.run([sys.executable, "-c", _UNREACHABLE, str(records)], capture_output=True, text=True,
                          check=False)
    assert proc.stdout.split("\n")[:2] == ["1 RegistryDown False", "2 RegistryDown True"], proc.stdout + proc.stderr


_FEW_SIZES = """
import json, sys
from pathlib import Path
from conformance.harness import check_jobs
from conformance.harness.check import capture_tally
from conformance.protocols import get_protocol

check_jobs.SIZES_FROM_LINES = 5  # most topics are first met beyond the first reading: dealt by hash
check_jobs.PROGRESS_EVERY = 10
suite = get_protocol(sys.argv[2])
options = suite.resolve_options({})
out = []
for jobs in (1, 3):
    tally = capture_tally(suite, "x")
    seen = []
    n, summary, workers = check_jobs.check_file_jobs(suite, options, None, Path(sys.argv[1]), tally, jobs,
                                                     progress=seen.append)
    out.append({"n": n, "workers": workers, "notes": summary.notes(), "checks": [t.to_json() for t in tally],
                "progress": seen})
# `--combo`'s filter: topics left out are left out of the records only (a line that is no record
# is reported whatever its topic), as in one process.
for jobs in (1, 3):
    tally = capture_tally(suite, "x")
    n, summary, workers = check_jobs.check_file_jobs(suite, options, None, Path(sys.argv[1]), tally, jobs,
                                                     keep=lambda t: not t.startswith(("zz", sys.argv[3])))
    out.append({"n": n, "workers": workers, "notes": summary.notes(), "checks": [t.to_json() for t in tally]})
print(json.dumps(out))
"""


def test_topics_beyond_the_first_reading_are_dealt_by_their_names(captures: Callable[[str], Path]) -> None:
    """Topics the first reading did not meet go where a hash of their name says, the same in every
    worker: still every line once, the same report."""
    records = _broken(captures("ticdc-simple"))
    first_topic = json.loads(records.read_bytes().splitlines()[0])["topic"]
    proc = subprocess.run([sys.executable, "-c", _FEW_SIZES, str(records), "ticdc-simple", first_topic],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    one, many, kept_one, kept_many = json.loads(proc.stdout)
    assert kept_many["workers"] == 3 and kept_one["n"] < one["n"]
    assert {**kept_many, "workers": 1} == kept_one
    assert many["workers"] == 3 and one["workers"] == 1
    # The bar: the lines every worker still reading has passed, never going back, within the file.
    lines = len(records.read_bytes().splitlines())
    assert many["progress"] and many["progress"] == sorted(many["progress"]) and many["progress"][-1] <= lines
    assert {**many, "workers": 1, "progress": None} == {**one, "progress": None}


def test_a_topics_worker_is_the_one_it_was_dealt_or_its_names_hash() -> None:
    owner = check_jobs.owner_of({"a": 1, "b": 0}, 3)
    assert (owner("a"), owner("b")) == (1, 0)
    assert owner("never met") == zlib.crc32(b"never met") % 3 == check_jobs.owner_of({}, 3)("never met")


def test_a_cgroup_quota_bounds_the_cores(tmp_path: Path) -> None:
    """A container allowed 2.5 CPUs of a big host runs 3 workers at most, not one per host core."""
    v2 = tmp_path / "v2"
    v2.mkdir()
    (v2 / "cpu.max").write_text("250000 100000\n")
    assert check_jobs._cgroup_cpus(v2) == 3
    (v2 / "cpu.max").write_text("max 100000\n")
    assert check_jobs._cgroup_cpus(v2) is None
    v1 = tmp_path / "v1"
    (v1 / "cpu").mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("200000\n")
    (v1 / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert check_jobs._cgroup_cpus(v1) == 2
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert check_jobs._cgroup_cpus(v1) is None
    assert check_jobs._cgroup_cpus(tmp_path / "none") is None
