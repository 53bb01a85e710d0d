"""Encoders as subprocesses: the suite's own reference through the protocol gives the verdicts it
gives in process; a Node.js encoder passes TiCDC Simple; every way a process can misbehave is a
clear finding against it, the process is always killed and reaped, and the next shard runs."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from dataclasses import replace
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from helpers import counts, encode, problems, run_info, shape_with

from conformance.checks.common import ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from conformance.encoders import EncoderInfo, EncoderKind, all_encoders, find_encoder
from conformance.encoders.spi import ConfigurationError, EncoderContext, ManualClock
from conformance.encoders.subprocess import (
    _LIVE,
    EncoderCommandError,
    ProtocolMismatch,
    SubprocessEncoder,
    SubprocessInfrastructureError,
    SubprocessSpec,
    UnsupportedOptions,
    command_encoder,
    probe,
)
from conformance.model.events import DdlKind
from conformance.strategies import sample_workload

ROOT = Path(__file__).resolve().parents[2]
NODE_EXAMPLE = ROOT / "examples" / "node-ticdc-simple" / "src" / "main.js"
MISBEHAVING = ROOT / "tests" / "encoders" / "misbehaving.py"
SERVE = [sys.executable, "-m", "conformance.encoders.serve", "--encoder"]
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")

SIMPLE = "ticdc-simple"
DDL_SHAPE = shape_with(ddl_rate=0.25, transactions=(4, 14), ddl_kinds=(
    DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN, DdlKind.TRUNCATE_TABLE, DdlKind.RENAME_TABLE))
# Commits seconds apart, so that periodic bootstraps (ticks) happen inside one workload.
SLOW_SHAPE = replace(DDL_SHAPE, ms_per_step=(300, 2500))
WORKLOADS = int(os.environ.get("CONFORMANCE_SUBPROCESS_WORKLOADS", "8"))


def workloads(seed: Any, n: int = WORKLOADS, shape: Any = None) -> list[Any]:
    return [sample_workload(seed, i, shape) if shape is not None else sample_workload(seed, i) for i in range(n)]


def reaped(pid: int) -> bool:
    """The process has exited and been waited for, and nothing is left in its process group
    (its killed children vanish once init has reaped them: a moment's wait)."""
    try:
        os.waitpid(pid, os.WNOHANG)
        return False  # still our child: not reaped
    except ChildProcessError:
        pass
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


class Recording:
    """A factory that keeps the encoders it made (to look at their processes afterwards)."""

    def __init__(self, spec: SubprocessSpec, protocol: str = SIMPLE) -> None:
        self.spec, self.protocol, self.made = spec, protocol, []  # type: ignore[var-annotated]

    def __call__(self) -> SubprocessEncoder:
        enc = SubprocessEncoder(self.spec, protocol=self.protocol)
        self.made.append(enc)
        return enc

    def info(self) -> EncoderInfo:
        return EncoderInfo(f"cmd:{self.spec.command}", self.protocol, EncoderKind.EXTERNAL, self, bounds_own_calls=True)


# -- the reference through the protocol ------------------------------------------------------------------

@pytest.mark.parametrize("shape,options", [(None, {}), (SLOW_SHAPE, {"send-bootstrap-interval-in-sec": "4"}),
                                           (DDL_SHAPE, {"encoding-format": "avro",
                                                        "large-message-handle-compression": "snappy"})],
                         ids=["defaults", "bootstraps", "avro-snappy"])
def test_the_reference_through_the_protocol_gives_the_in_process_verdicts(shape: Any, options: dict[str, str]) -> None:
    ws = workloads(f"parity-{options}", n=max(2, WORKLOADS * 3 // 4), shape=shape)
    in_process = run_info(find_encoder("reference", SIMPLE), ws, options, protocol=SIMPLE)
    through_pipe = run_info(command_encoder(SERVE + ["ticdc-simple/reference"], protocol=SIMPLE), ws, options,
                            protocol=SIMPLE)
    assert problems(in_process) == {}
    assert counts(through_pipe) == counts(in_process)
    assert through_pipe.checks[ENCODER_NO_CRASH].passed == len(ws)


def test_a_mutant_through_the_protocol_is_caught_as_in_process() -> None:
    ws = workloads("parity-mutant", n=4)
    name = "ticdc-simple/mutant/data-keys-ordinal"
    in_process = run_info(find_encoder(name, SIMPLE), ws, protocol=SIMPLE)
    through_pipe = run_info(command_encoder(SERVE + [name], protocol=SIMPLE), ws, protocol=SIMPLE)
    assert "ticdc-simple.dml.keys-sorted" in in_process.failed_ids()
    assert counts(through_pipe) == counts(in_process)


# -- another language ---------------------------------------------------------------------------------------

@needs_node
@pytest.mark.parametrize("shape,options", [
    (None, {}),
    (DDL_SHAPE, {}),
    (SLOW_SHAPE, {"send-bootstrap-interval-in-sec": "5", "send-bootstrap-in-msg-count": "7"}),
    (SLOW_SHAPE, {"send-bootstrap-to-all-partition": "false", "bootstrap-disable-rule": "docs"}),
], ids=["defaults", "ddl", "bootstraps", "bootstraps-partition-0"])
def test_the_node_example_passes_every_ticdc_simple_check(shape: Any, options: dict[str, str]) -> None:
    ws = workloads(f"node-{options}", shape=shape)
    info = command_encoder(["node", str(NODE_EXAMPLE)], protocol=SIMPLE)
    tally = run_info(info, ws, options, protocol=SIMPLE)
    assert problems(tally) == {}
    assert tally.checks[ENCODER_NO_CRASH].passed == len(ws)
    judged = [t for t in tally if t.passed and t.id.startswith("ticdc-simple.")]
    assert len(judged) > 25, "the Simple checks judged the Node encoder's output"


@needs_node
def test_the_node_examples_own_tests_pass() -> None:
    import subprocess

    done = subprocess.run(["node", "--test", "test/"], cwd=NODE_EXAMPLE.parents[1], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "# fail 0" in done.stdout, done.stdout + done.stderr


@needs_node
def test_the_node_example_writes_the_references_bytes() -> None:
    for shard in range(4):
        w = sample_workload("node-bytes", shard, DDL_SHAPE)
        ref = encode("reference", {}, w, protocol=SIMPLE)
        node = encode(f"cmd:node {NODE_EXAMPLE}", {}, w, protocol=SIMPLE)
        def strip(rs: list[Any]) -> list[Any]:  # each run has its own topic prefix
            return [(r.topic.split("-", 1)[1], r.partition, r.key, r.value) for r in rs]

        assert strip(node) == strip(ref) and len(ref) > 10


@needs_node
def test_a_broken_node_encoder_is_caught() -> None:
    """The suite can fail a subprocess encoder: the same Node encoder with keys unsorted."""
    src = NODE_EXAMPLE.parent
    broken = Path(os.environ.get("TMPDIR", "/tmp")) / f"node-broken-{os.getpid()}"
    shutil.copytree(src.parent, broken, dirs_exist_ok=True)
    simple = broken / "src" / "simple.js"
    text = simple.read_text()
    marker = "values.sort((a, b) => utf8Compare(a[0], b[0]));"
    assert marker in text
    simple.write_text(text.replace(marker, "values.reverse();"))
    try:
        tally = run_info(command_encoder(["node", str(broken / "src" / "main.js")], protocol=SIMPLE),
                         workloads("node-broken", n=4), protocol=SIMPLE)
    finally:
        shutil.rmtree(broken)
    assert "ticdc-simple.dml.keys-sorted" in tally.failed_ids()


@needs_node
def test_probe_and_capabilities_of_the_node_example() -> None:
    hs = probe(SubprocessSpec.from_command(["node", str(NODE_EXAMPLE)]))
    assert hs.protocol == SIMPLE and hs.implementation.name == "node-ticdc-simple"
    assert hs.capabilities.needs_ticks and not hs.capabilities.registers_schemas
    assert hs.capabilities.options["encoding-format"] == ("json",)
    with pytest.raises(UnsupportedOptions, match="encoding-format=avro"):
        run_info(command_encoder(["node", str(NODE_EXAMPLE)], protocol=SIMPLE), workloads("x", n=1),
                 {"encoding-format": "avro"}, protocol=SIMPLE)


# -- finding an external encoder -------------------------------------------------------------------------------

@needs_node
def test_a_command_line_and_an_entry_point_name_an_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    info = find_encoder(f"cmd:node {NODE_EXAMPLE}", SIMPLE)
    assert info.kind is EncoderKind.EXTERNAL and info.name == f"cmd:node {NODE_EXAMPLE}"
    assert isinstance(info.factory(), SubprocessEncoder)

    real = metadata.entry_points
    plugin = metadata.EntryPoint("node-simple", "encoders.example_plugin:encoders", "conformance.encoders")

    def entry_points(**kw: Any) -> Any:
        found = real(**kw)
        return [*found, plugin] if kw.get("group") == "conformance.encoders" else found

    monkeypatch.setattr(metadata, "entry_points", entry_points)
    from conformance.encoders import _installed

    _installed.cache_clear()  # the installed encoders are found once per process
    named = find_encoder("ticdc-simple/external/node-example", SIMPLE)
    assert named in all_encoders(SIMPLE) and named.kind is EncoderKind.EXTERNAL
    tally = run_info(named, workloads("plugin", n=2), protocol=SIMPLE)
    assert problems(tally) == {}
    monkeypatch.undo()
    _installed.cache_clear()


def test_a_command_that_cannot_start_is_a_usage_error() -> None:
    with pytest.raises(EncoderCommandError, match="no-such-encoder-binary"):
        run_info(command_encoder("no-such-encoder-binary --stdio", protocol=SIMPLE), workloads("x", n=1),
                 protocol=SIMPLE)
    with pytest.raises(ConfigurationError, match="cannot parse"):
        command_encoder("node 'unterminated", protocol=SIMPLE)


# -- misbehaviour -------------------------------------------------------------------------------------------------

MISBEHAVIOUR = {
    # mode: (the check that fails, what its message says)
    "wrong-version": (ENCODER_NO_CRASH, "names protocol version 2; this suite speaks version 1"),
    "not-json": (ENCODER_NO_CRASH, "not JSON"),
    "non-object": (ENCODER_NO_CRASH, "is a JSON list, not an object"),
    "wrong-id": (ENCODER_NO_CRASH, "a reply for request 5 while request 4 (encode) waited"),
    "oversized": (ENCODER_NO_CRASH, "longer than 1048576 bytes"),
    "noise": (ENCODER_NO_CRASH, "loading model weights"),
    "exit": (ENCODER_NO_CRASH, "exited with status 3 before replying to encode"),
    "exit-at-start": (ENCODER_NO_CRASH, "exited with status 5 before replying to start"),
    "error-reply": (ENCODER_NO_CRASH, "encode failed: unsupported column type GEOMETRY"),
    "bad-base64": (ENCODER_NO_CRASH, "record 0: value is not standard base64"),
    "bad-record": (ENCODER_NO_CRASH, "breaks schemas/v1/encode.reply.json"),
    "hang": (ENCODER_RESPONSIVE, "no reply to encode (request 4) within 1 s"),
    "hang-with-child": (ENCODER_RESPONSIVE, "no reply to encode (request 4) within 1 s"),
    "close-hang": (ENCODER_RESPONSIVE, "no reply to close"),
}


@pytest.mark.parametrize("mode", sorted(MISBEHAVIOUR))
def test_misbehaviour_is_a_finding_against_the_encoder_and_the_next_shard_runs(mode: str, tmp_path: Path) -> None:
    check, says = MISBEHAVIOUR[mode]
    spec = SubprocessSpec.from_command([sys.executable, str(MISBEHAVING), mode, "--once", str(tmp_path / "done")],
                                       request_timeout=1.0, start_timeout=10.0, max_line_bytes=1 << 20)
    factory = Recording(spec)
    started = time.monotonic()
    # Shard 0 misbehaves; shard 1 is a fresh process that runs the reference properly.
    tally = run_info(factory.info(), workloads(f"bad-{mode}", n=2), protocol=SIMPLE)
    assert time.monotonic() - started < 30
    failures = list(tally.checks[check].failures.values())
    assert tally.checks[check].failed == 1 and len(failures) == 1, problems(tally)
    message = failures[0].message
    assert says in message
    assert "misbehaving 0.0.1" in message or mode == "exit-at-start", "the finding names the encoder"
    assert str(MISBEHAVING.name) in message, "the finding names the command"
    report = json.dumps([t.to_json() for t in tally], default=str)
    assert "Traceback (most recent call last)" not in report
    assert tally.checks[check].passed == 1, "the next shard ran, and passed"
    assert len(factory.made) == 2 and factory.made[0].last_pid != factory.made[1].last_pid
    for enc in factory.made:
        assert enc.last_pid is not None and reaped(enc.last_pid), "killed and reaped, with its process group"
    assert not any(p.pid in {e.last_pid for e in factory.made} for p in list(_LIVE))


def test_the_evidence_of_a_crash_carries_the_stderr_tail_and_exit_status(tmp_path: Path) -> None:
    spec = SubprocessSpec.from_command([sys.executable, str(MISBEHAVING), "exit"], request_timeout=5.0)
    enc = SubprocessEncoder(spec, protocol=SIMPLE)
    enc.open(EncoderContext(options={}, clock=ManualClock()))
    w = sample_workload("evidence", 0)
    enc.encode(w.events[0])
    with pytest.raises(Exception) as caught:
        enc.encode(w.events[1])
    e: Any = caught.value
    assert e.exit_status == 3 and "panic: index out of range" in e.stderr_tail
    assert "exit status: 3" in e.evidence and "panic: index out of range" in e.evidence
    assert "panic: index out of range" in str(e)
    frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
    assert frames == ["test_the_evidence_of_a_crash_carries_the_stderr_tail_and_exit_status", "spi_call"], \
        "one frame of the adapter: the SPI method"
    enc.close()  # after a failure: nothing left to close, no error
    assert enc.last_pid is not None and reaped(enc.last_pid)


def test_a_hang_kills_the_whole_process_group(tmp_path: Path) -> None:
    spec = SubprocessSpec.from_command([sys.executable, str(MISBEHAVING), "hang-with-child"], request_timeout=1.0)
    enc = SubprocessEncoder(spec, protocol=SIMPLE)
    enc.open(EncoderContext(options={}, clock=ManualClock()))
    w = sample_workload("hang", 0)
    enc.encode(w.events[0])
    with pytest.raises(Exception, match="within 1 s") as caught:
        enc.encode(w.events[1])
    tail = getattr(caught.value, "stderr_tail", "")
    assert "waiting for a lock" in tail
    child = int(tail.split("child ", 1)[1].split()[0])
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:  # the grandchild is reaped by init once killed
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the encoder's child {child} survived")
    assert enc.last_pid is not None and reaped(enc.last_pid)


def test_options_and_protocol_mistakes_are_usage_errors_and_infrastructure_stops_the_run() -> None:
    def make(mode: str) -> SubprocessEncoder:
        return SubprocessEncoder(SubprocessSpec.from_command([sys.executable, str(MISBEHAVING), mode],
                                                             request_timeout=5.0), protocol=SIMPLE)

    ctx = EncoderContext(options={}, clock=ManualClock())
    enc = make("options-error")
    with pytest.raises(ConfigurationError, match="refused the options: max-message-bytes must be positive"):
        enc.open(ctx)
    enc = make("other-protocol")
    with pytest.raises(ProtocolMismatch, match="speaks 'ticdc-avro', but the run checks 'ticdc-simple'"):
        enc.open(ctx)
    enc = make("infrastructure-error")
    enc.open(ctx)
    w = sample_workload("infra", 0)
    enc.encode(w.events[0])
    with pytest.raises(SubprocessInfrastructureError, match="cannot use a service it needs"):
        enc.encode(w.events[1])
    for e in (enc,):
        assert e.last_pid is not None and reaped(e.last_pid)


def test_every_open_starts_a_fresh_process() -> None:
    enc = SubprocessEncoder(SubprocessSpec.from_command(SERVE + ["ticdc-simple/reference"]), protocol=SIMPLE)
    pids = []
    for _ in range(2):
        enc.open(EncoderContext(options={}, clock=ManualClock(), partitions=3))
        pids.append(enc.last_pid)
        enc.close()
    assert pids[0] != pids[1] and all(p is not None and reaped(p) for p in pids)


def test_ticks_travel_with_events_and_alone_with_the_same_records() -> None:
    """The tick after an event rides on its encode request; a tick at another time is a
    request of its own. Either way the records are those of the in-process encoder."""
    from conformance.protocols.ticdc_simple.encoder import TiCDCSimpleEncoder

    w = sample_workload("ticks", 1, SLOW_SHAPE)
    opts = {"send-bootstrap-interval-in-sec": "3"}

    def drive(enc: Any) -> list[Any]:
        clock = ManualClock()
        enc.open(EncoderContext(options=opts, clock=clock, partitions=3))
        out: list[Any] = []
        for e in w.events:
            clock.follow(e)
            out += [("encode", r) for r in enc.encode(e)]
            out += [("tick", r) for r in enc.tick(clock.now)]
        for later in (5.0, 10.0):
            out += [("later", r) for r in enc.tick(clock.advance(later))]
        enc.close()
        return out

    in_process = drive(TiCDCSimpleEncoder())
    piped = SubprocessEncoder(SubprocessSpec.from_command(SERVE + ["ticdc-simple/reference"]), protocol=SIMPLE)
    through_pipe = drive(piped)
    assert [r for _, r in through_pipe] == [r for _, r in in_process]
    assert [k for k, _ in in_process].count("tick") > 0, "the workload has periodic bootstraps"
    assert [k for k, _ in through_pipe].count("tick") == 0, "they came with the encode replies"
    assert [k for k, _ in through_pipe].count("later") == [k for k, _ in in_process].count("later") > 0


def test_a_process_that_stops_reading_cannot_block_a_large_request() -> None:
    """The pipe fills, the write would block: the request still ends at its deadline."""
    from conformance.encoders.subprocess import _Process, _Timeout

    proc = _Process(SubprocessSpec.from_command([sys.executable, "-c", "import time; time.sleep(60)"]))
    started = time.monotonic()
    with pytest.raises(_Timeout):
        proc.exchange(b"x" * (4 << 20) + b"\n", 1.0)
    assert time.monotonic() - started < 5
    proc.kill()
    assert reaped(proc.pid)


def test_the_runs_timeout_reaches_a_command_encoder() -> None:
    """--encoder-timeout bounds every request of a subprocess encoder (the context's
    call_timeout), and the harness guards it for longer, so that the adapter reports first."""
    info = find_encoder("cmd:node x.js", SIMPLE)
    assert info.bounds_own_calls and not find_encoder("reference", SIMPLE).bounds_own_calls
    enc = info.factory()
    assert isinstance(enc, SubprocessEncoder)
    assert (enc.spec.request_timeout, enc.spec.argv) == (None, ("node", "x.js"))  # None: the run's timeout
