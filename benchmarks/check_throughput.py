#!/usr/bin/env python
"""Throughput of `conformance check` on TiCDC Avro reference records, against plain fastavro
(or, with `--protocol`, on a JSON protocol's reference records, against the strict standard-library
parse the checker itself needs: `json.loads` refusing duplicate keys, floats as `Decimal`; orjson
and, where installed, msgspec with `Decimal` floats are measured beside it as context).

    python benchmarks/check_throughput.py [--records N] [--repeat R] [--profile] [--protocol P]

1. Generates >= N records (default 100,000) with the TiCDC Avro reference encoder
   (`enable-tidb-extension=true`, one encoder per `sample_workload` shard, one in-process
   registry), writes them as `records.jsonl` plus the registry dump to a temporary directory.
2. Reads the capture back (base64 decoded, outside any timing) and measures, in this same
   process and interleaved round by round so that machine noise hits every measurement alike:

   * baseline         plain fastavro: strip the 5-byte Confluent header of every key and
                      value, `schemaless_reader` with `parse_schema(json.loads(text))` (logical
                      types on; `_ignore_default_error=True`, without which fastavro refuses
                      TiCDC's integer-written double defaults), parsed lazily and cached per
                      schema id (a fresh cache each round: `check` pays for parsing too);
   * baseline-stripped the same with the schemas exactly as the checker's decoder parses them
                      (logical types stripped, `_ignore_default_error=True`): the pure decode
                      floor of the check;
   * check in-process  `AvroChecker.check_record` on every record + `finish()`, as
                      `conformance check` does, on the same in-memory records (the registry
                      dump is loaded once, outside the timing), each round in a forked child
                      with a fresh process's caches (`--warm`: round after round in this
                      process, the later rounds finding the earlier rounds' compiled kinds);
   * check CLI         `conformance check ... --report-json` as a subprocess: wall time,
                      interpreter start, JSONL parsing and reports included; as a user runs it
                      (`--jobs` left to its default: one process per core for a capture of
                      4 MiB or more, whole topics each), and in one process (`--jobs 1`).

3. Prints a table (best and median of R rounds, records/s, ratios to the baseline) and writes
   `reports/bench/check_throughput.json`. With `--profile`, profiles one in-process check
   with cProfile and prints the top functions by cumulative and by own time.

Not part of CI; the numbers depend on the machine, compare ratios, not absolute rates.
"""

from __future__ import annotations

import argparse
import base64
import cProfile
import datetime as dt
import decimal
import gc
import io
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import fastavro
from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

from conformance.checks.results import Tally
from conformance.encoders.spi import EncoderContext, Record
from conformance.harness.capture import BadLine, DeliveryLogs, read_records
from conformance.harness.check import capture_tally, check_log, unnumbered
from conformance.harness.encode import MemoryLog
from conformance.harness.run import workload_shape
from conformance.infra.inprocess import InProcessRegistry
from conformance.infra.registry import DumpRegistry
from conformance.protocols import get_protocol
from conformance.protocols.kit import loads_strict
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder, strip_logical_types
from conformance.strategies import DEFAULT_SHAPE, Shape, sample_workload

DEFAULT_JSON = REPO / "reports" / "bench" / "check_throughput.json"
PROTOCOL = "ticdc-avro"
OPTIONS = {"enable-tidb-extension": "true"}
# The JSON protocols, checked on their reference encoder's defaults; their baseline is orjson
# (the stdlib's json where orjson is not installed: the output says which).
# The parts of a record each one writes as JSON (MaxScale's key is the row's key text).
JSON_PROTOCOLS = {"ticdc-simple": ("key", "value"), "maxscale-kafkacdc": ("value",), "debezium": ("key", "value")}


# -- input ------------------------------------------------------------------------------------


def _b64(v: bytes | None) -> str | None:
    return None if v is None else base64.b64encode(v).decode("ascii")


# "realistic": a capture from a deployment has few tables with long histories, so few schema
# ids serve many records; the default shape (fresh tables per shard) has about one schema id
# per four records and so weighs the per-schema costs far more than a real capture would.
SHAPES = {
    "default": DEFAULT_SHAPE,
    "realistic": replace(DEFAULT_SHAPE, tables=(1, 2), transactions=(300, 300), ddl_rate=0.01,
                         max_rows_per_table=400),
}


#: `--option K=V` pairs, over the protocol's own (set once by `main`).
_EXTRA_OPTIONS: dict[str, str] = {}


def protocol_options(protocol: str) -> dict[str, str]:
    return {**(OPTIONS if protocol == PROTOCOL else {}), **_EXTRA_OPTIONS}


def writes_avro(protocol: str) -> bool:
    """Whether the protocol, with its options, writes every key and value as Confluent-framed
    Avro (TiCDC Avro; Debezium with the Avro converter for both): then the baseline is plain
    fastavro, as for TiCDC Avro."""
    if protocol == PROTOCOL:
        return True
    if protocol != "debezium":
        return False
    from conformance.protocols.debezium.spec import DbzOptions

    o = DbzOptions.from_options(get_protocol(protocol).resolve_options(protocol_options(protocol)))
    return o.key_avro and o.value_avro


def protocol_shape(protocol: str, shape: str) -> Shape:
    """The shape in the protocol's own dialect, as `conformance run` generates for it."""
    return workload_shape(get_protocol(protocol), SHAPES[shape])


def generate(n: int, seed: str, workdir: Path, shape: str = "default", protocol: str = PROTOCOL) -> dict[str, Any]:
    """Write >= n reference records (whole shards) to workdir/records.jsonl and the registry
    dump to workdir/dump.json."""
    t0 = time.perf_counter()
    reg = InProcessRegistry()
    if protocol != PROTOCOL:
        # A table's DDL may change its Avro schema in ways BACKWARD refuses (Debezium's Avro
        # converter): the capture is what is measured, not the registry's verdicts.
        reg.set_compatibility("NONE")
    out: list[Record] = []
    shard = 0
    events = 0
    p = get_protocol(protocol)
    options = p.resolve_options(protocol_options(protocol))
    the_shape = SHAPES[shape] if protocol == PROTOCOL else protocol_shape(protocol, shape)
    while len(out) < n:
        workload = sample_workload(seed, shard, the_shape)
        enc = TiCDCAvroEncoder() if protocol == PROTOCOL else p.reference().factory()
        # The JSON protocols' topics carry a run's prefix (`<run>c<combo>w<shard>-`), which a
        # capture check recognises (Debezium's topic names are judged without it).
        prefix = f"b{shard}-" if protocol == PROTOCOL else f"benchc0w{shard}-"
        enc.open(EncoderContext(dict(options), reg, topic_prefix=prefix))
        for ev in workload.events:
            out.extend(enc.encode(ev))
        enc.close()
        events += len(workload.events)
        shard += 1
    log = MemoryLog()  # the offsets a log gives them
    records = [log.append(r, r.partition or 0).record() for r in out]
    with (workdir / "records.jsonl").open("w", encoding="utf-8") as fh:
        for r in records:
            fh.write(json.dumps({"topic": r.topic, "partition": r.partition, "offset": r.offset,
                                 "key": _b64(r.key), "value": _b64(r.value), "timestamp": None,
                                 "headers": [[h, _b64(v)] for h, v in r.headers]},
                                separators=(",", ":")) + "\n")
    assert reg.server is not None
    dump = reg.server.dump()
    with (workdir / "dump.json").open("w", encoding="utf-8") as fh:
        json.dump(dump, fh)
    return {"records": len(records), "shards": shard, "events": events, "schemas": len(dump["schemas"]),
            "seconds": time.perf_counter() - t0}


def load_records(path: Path) -> list[Record]:
    records = []
    for _n, item in read_records(path):
        if isinstance(item, BadLine):
            raise SystemExit(f"{path}:{item.line}: {item.problem}")
        records.append(item)
    return records


def load_schema_texts(dump_path: Path) -> dict[int, str]:
    with dump_path.open(encoding="utf-8") as fh:
        return {int(e["id"]): e["schema"] for e in json.load(fh)["schemas"]}


# -- measurements -----------------------------------------------------------------------------


def plain_parse(text: str) -> Any:
    # `_ignore_default_error`: TiCDC writes a double's default as Go prints it (`-1`, `0`), which
    # fastavro refuses without this switch (the checker's decoder sets it too).
    return fastavro.parse_schema(json.loads(text), _ignore_default_error=True)


def decoder_parse(text: str) -> Any:
    # What conformance.protocols.ticdc_avro.decoder.schema_view hands to fastavro.
    return fastavro.parse_schema(strip_logical_types(json.loads(text)), _ignore_default_error=True)


def baseline(records: list[Record], texts: dict[int, str], parse: Callable[[str], Any]) -> int:
    """Decode every key and value with fastavro; returns how many parts were decoded."""
    reader = fastavro.schemaless_reader
    cache: dict[int, Any] = {}
    parts = 0
    for r in records:
        for raw in (r.key, r.value):
            if raw is None:
                continue
            sid = int.from_bytes(raw[1:5], "big", signed=True)
            schema = cache.get(sid)
            if schema is None:
                schema = cache[sid] = parse(texts[sid])
            reader(io.BytesIO(raw[5:]), schema)
            parts += 1
    return parts


def json_loads() -> tuple[str, Callable[[bytes], Any]]:
    try:
        import orjson
    except ImportError:
        return f"json (stdlib; orjson is not installed) {platform.python_version()}", json.loads
    return f"orjson {orjson.__version__}", orjson.loads


def strict_loads(raw: bytes) -> Any:
    """The checker's own floor: the standard library's parser with the strictness hooks the JSON
    checkers need (a key twice in an object is a finding: `object_pairs_hook`; numbers kept exact:
    `parse_float=Decimal`), on the text decoded from UTF-8 as they decode it."""
    return loads_strict(raw.decode("utf-8"), parse_float=decimal.Decimal)


def msgspec_loads() -> tuple[str, Callable[[bytes], Any]] | None:
    """msgspec's JSON decoder with exact decimals (`float_hook=Decimal`), untyped; None where
    msgspec is not installed. It keeps the last of duplicate keys silently, so a checker built
    on it would still need its own pass (or the stdlib's) for that rule."""
    try:
        import msgspec
    except ImportError:
        return None
    return f"msgspec {msgspec.__version__}", msgspec.json.Decoder(float_hook=decimal.Decimal).decode


def json_baseline(records: list[Record], loads: Callable[[bytes], Any], which: tuple[str, ...]) -> int:
    """Parse every key and value the protocol writes as JSON; returns how many were parsed."""
    parts = 0
    key, value = "key" in which, "value" in which
    for r in records:
        for raw in (r.key if key else None, r.value if value else None):
            if raw is not None:
                loads(raw)
                parts += 1
    return parts


def check_inprocess(records: list[Record], registry: DumpRegistry, protocol: str = PROTOCOL) -> Tally:
    p = get_protocol(protocol)
    opts = p.resolve_options(protocol_options(protocol))
    tally = capture_tally(p, "a capture")
    logs = DeliveryLogs(p.name, opts, registry)
    check_log(p, opts, registry, unnumbered(records), tally, delivery=logs)
    logs.judge(tally)
    return tally


def check_cold(records: list[Record], registry: DumpRegistry, protocol: str = PROTOCOL) -> tuple[float, Tally | None]:
    """`check_inprocess` in a forked child: a fresh process's caches (compiled kinds, schema
    memos), as every `conformance check` has, with the records already in memory. The parent has
    run no check before it forks; it has loaded the protocol (`get_protocol`: its modules
    imported, once per process), as the CLI has before its clock starts; the child owns the
    records' memory before its clock starts (`_own`). Returns the child's own
    time for the check, and None for the tally after asserting, in the child, that the records
    conform (a tally does not cross the fork cheaply)."""
    get_protocol(protocol)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: time the check, say whether it passed, and leave without cleanup
        os.close(rfd)
        code = 0
        try:
            gc.collect()
            _own(records)
            t0 = time.perf_counter()
            tally = check_inprocess(records, registry, protocol)
            spent = time.perf_counter() - t0
            failed = sorted(tally.failed_ids() | {t.id for t in tally if t.errored})
            os.write(wfd, json.dumps({"s": spent, "failed": failed}).encode())
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            os.write(wfd, json.dumps({"error": f"{type(e).__name__}: {e}"}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(wfd)
    with os.fdopen(rfd, "rb") as fh:
        answer = json.loads(fh.read() or b'{"error": "the child wrote nothing"}')
    os.waitpid(pid, 0)
    if "error" in answer:
        raise SystemExit(f"the in-process check failed in its child: {answer['error']}")
    if answer["failed"]:
        raise SystemExit(f"the reference records do not pass: {answer['failed']}")
    return float(answer["s"]), None


def _own(records: list[Record]) -> int:
    """Touch every record and its key and value in a forked child, before its clock starts: the
    pages it shares with its parent are copied now (copy on write), not one by one while the check
    reads them; a check's records are its own memory (measured: 5-10% of the check's time went to
    those page copies). Returns the bytes touched."""
    n = 0
    for r in records:
        n += len(r.topic) + len(r.key or b"") + len(r.value or b"") + len(r.headers)
    return n


def assert_conforms(tally: Tally) -> None:
    failed = tally.failed_ids()
    errored = {t.id for t in tally if t.errored}
    if failed or errored:
        detail = {cid: [f.message for f in tally.checks[cid].failures.values()][:3] for cid in failed}
        raise SystemExit(f"the reference records do not pass: failed {sorted(failed)} {detail}, "
                         f"errored {sorted(errored)}")


def cli_command(cli: list[str], workdir: Path, protocol: str = PROTOCOL) -> list[str]:
    return [*cli, "check", "--protocol", protocol, "--input", str(workdir / "records.jsonl"),
            "--registry", str(workdir / "dump.json"),
            *[a for k, v in protocol_options(protocol).items() for a in ("--option", f"{k}={v}")],
            "--report-json", str(workdir / "out.json")]


def check_cli(cmd: list[str], workdir: Path) -> float:
    """Runs the CLI; returns the duration the CLI itself reports (its check loop)."""
    (workdir / "out.json").unlink(missing_ok=True)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` exited {proc.returncode}\n{proc.stdout[-3000:]}\n"
                         f"{proc.stderr[-3000:]}")
    report = json.loads((workdir / "out.json").read_text(encoding="utf-8"))
    if report["verdict"] != "pass":
        raise SystemExit(f"the CLI's verdict is {report['verdict']!r}, not 'pass'")
    return float(report["duration_s"])


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    gc.collect()
    t0 = time.perf_counter()
    result = fn()
    return time.perf_counter() - t0, result


# -- reporting --------------------------------------------------------------------------------


def summary(seconds: list[float], records: int) -> dict[str, Any]:
    best, med = min(seconds), statistics.median(seconds)
    return {"seconds": [round(s, 4) for s in seconds], "best_s": round(best, 4), "median_s": round(med, 4),
            "best_records_per_s": round(records / best, 1), "median_records_per_s": round(records / med, 1)}


def ratios(check: list[float], base: list[float]) -> dict[str, float]:
    """check throughput / baseline throughput (1.0 = as fast as plain fastavro)."""
    paired = [b / c for b, c in zip(base, check, strict=True)]  # same round, same noise
    return {"best": round(min(base) / min(check), 4), "median": round(statistics.median(base) /
                                                                      statistics.median(check), 4),
            "median_of_paired_rounds": round(statistics.median(paired), 4)}


def profile_check(records: list[Record], registry: DumpRegistry, top: int, prof_path: Path,
                  protocol: str = PROTOCOL) -> list[dict[str, Any]]:
    prof = cProfile.Profile()
    gc.collect()
    prof.enable()
    check_inprocess(records, registry, protocol)
    prof.disable()
    prof.dump_stats(str(prof_path))
    for key in ("cumulative", "tottime"):
        print(f"\ncProfile of one in-process check, top {top} by {key} (profiler overhead included; "
              f"stats saved to {prof_path}):")
        pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats(key).print_stats(top)
    st = pstats.Stats(prof)
    rows = []
    for (file, line, name), (cc, nc, tt, ct, _callers) in st.stats.items():  # type: ignore[attr-defined]
        rows.append({"function": f"{_short_path(file)}:{line}({name})", "ncalls": nc, "primitive_calls": cc,
                     "tottime_s": round(tt, 4), "cumtime_s": round(ct, 4)})
    rows.sort(key=lambda r: -r["cumtime_s"])
    return rows[:top]


def per_check(records: list[Record], registry: DumpRegistry, top: int, protocol: str = PROTOCOL) -> dict[str, Any]:
    """Where a check's time goes, check by check: every `Tally.evaluate` call timed (the timer's
    own cost is included, so the shares matter more than the absolute figures)."""
    from conformance.checks import results as results_mod

    spent: dict[str, float] = {}
    calls: dict[str, int] = {}
    original = results_mod.Tally.evaluate

    def timed_evaluate(self: Tally, spec: Any, evidence: Any) -> bool:
        t0 = time.perf_counter()
        try:
            return original(self, spec, evidence)
        finally:
            spent[spec.id] = spent.get(spec.id, 0.0) + time.perf_counter() - t0
            calls[spec.id] = calls.get(spec.id, 0) + 1

    results_mod.Tally.evaluate = timed_evaluate  # type: ignore[method-assign]
    try:
        total, _ = timed(lambda: check_inprocess(records, registry, protocol))
    finally:
        results_mod.Tally.evaluate = original  # type: ignore[method-assign]
    in_checks = sum(spent.values())
    n = len(records)
    print(f"\nper check (one instrumented in-process check, {n} records, {total:.3f} s = {total / n * 1e6:.1f} us "
          f"per record; {in_checks / n * 1e6:.1f} us in {len(spent)} checks, {(total - in_checks) / n * 1e6:.1f} us "
          "outside them: framing, decoding, evidence, delivery identification):")
    rows = sorted(({"check": cid, "seconds": round(s, 4), "calls": calls[cid],
                    "us_per_call": round(s / calls[cid] * 1e6, 2)} for cid, s in spent.items()),
                  key=lambda r: -r["seconds"])
    for r in rows[:top]:
        print(f"  {r['seconds']:8.3f} s {r['calls']:>9,} calls {r['us_per_call']:>7.2f} us  {r['check']}")
    return {"total_s": round(total, 4), "in_checks_s": round(in_checks, 4), "checks": len(spent),
            "us_per_record": round(total / n * 1e6, 2), "us_per_record_in_checks": round(in_checks / n * 1e6, 2),
            "rows": rows}


def _short_path(file: str) -> str:
    for marker in ("/conformance/", "/site-packages/", "/lib/python"):
        i = file.rfind(marker)
        if i >= 0:
            return file[i + 1:]
    return file


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--records", type=int, default=100_000, help="at least this many records (default 100000)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds of each measurement (default 3)")
    ap.add_argument("--profile", action="store_true", help="cProfile one in-process check, print the top")
    ap.add_argument("--per-check", action="store_true", help="time every check separately, print the top")
    ap.add_argument("--top", type=int, default=15, help="profile rows to print (default 15)")
    ap.add_argument("--seed", default="bench", help="workload seed (default 'bench')")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="default",
                    help="workload shape: default (many small tables) or realistic (few long-lived tables)")
    ap.add_argument("--protocol", choices=(PROTOCOL, *JSON_PROTOCOLS), default=PROTOCOL,
                    help=f"protocol (default {PROTOCOL}, against fastavro); the JSON ones against the strict "
                         "stdlib parse (orjson and msgspec beside it)")
    ap.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a protocol option (repeatable), as `conformance check --option` takes it; e.g. "
                         "`--protocol debezium --option profile=avro` (Debezium with the Avro converter: against "
                         "plain fastavro)")
    ap.add_argument("--no-cli", action="store_true", help="skip the CLI subprocess measurement")
    ap.add_argument("--cli", default=None, help="the conformance executable (default: next to this python)")
    ap.add_argument("--workdir", default=None, help="keep records.jsonl/dump.json here (default: a temp dir)")
    ap.add_argument("--warm", action="store_true",
                    help="time the in-process check in this process, round after round (each round after the first "
                         "finds the compiled kinds and schema memos of the earlier ones; default: each round in a "
                         "fresh forked child, as every `conformance check` starts)")
    ap.add_argument("--reuse", action="store_true",
                    help="with --workdir: reuse the records an earlier run generated there with the same --records, "
                         "--seed, --shape and --protocol (generating is not timed, but takes minutes)")
    ap.add_argument("--json", default=str(DEFAULT_JSON), help=f"result file (default {DEFAULT_JSON})")
    args = ap.parse_args(argv)
    if args.records < 1 or args.repeat < 1:
        ap.error("--records and --repeat must be positive")
    for kv in args.option:
        k, sep, v = kv.partition("=")
        if not sep or not k:
            ap.error(f"--option {kv!r}: expected KEY=VALUE")
        _EXTRA_OPTIONS[k] = v

    cli: list[str] = []
    if not args.no_cli:
        exe = args.cli or str(Path(sys.executable).parent / "conformance")
        cli = [exe] if Path(exe).is_file() else [shutil.which("conformance") or ""]
        if not cli[0]:
            cli = [sys.executable, "-m", "conformance"]

    tmp = None
    if args.workdir:
        workdir = Path(args.workdir)
        workdir.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="bench-check-")
        workdir = Path(tmp.name)
    try:
        return _run(args, workdir, cli)
    finally:
        if tmp is not None:
            tmp.cleanup()


def _run(args: argparse.Namespace, workdir: Path, cli: list[str]) -> int:
    src_start = source_state()
    print(f"measuring {src_start['package_dir']} (sources sha1 {src_start['sources_sha1'][:12]}"
          + (f", commit {src_start['commit'][:12]}" if src_start.get("commit") else "")
          + (f", uncommitted changes to {', '.join(src_start['modified'])}" if src_start.get("modified") else "")
          + ")")
    protocol = args.protocol
    avro = writes_avro(protocol)
    wanted = {"records_asked": args.records, "seed": args.seed, "shape": args.shape, "protocol": protocol,
              **({"options": dict(_EXTRA_OPTIONS)} if _EXTRA_OPTIONS else {})}
    made = workdir / "generated.json"
    earlier = json.loads(made.read_text()) if args.reuse and made.exists() else None
    if earlier is not None and (workdir / "records.jsonl").exists() \
            and {k: v for k, v in earlier.items() if k in wanted} == wanted \
            and earlier.get("options", {}) == _EXTRA_OPTIONS:
        gen = earlier
        print(f"reusing the {protocol} records in {workdir} (generated earlier: same size, seed and shape)", flush=True)
    else:
        print(f"generating >= {args.records} {protocol} reference records in {workdir} …", flush=True)
        gen = generate(args.records, args.seed, workdir, args.shape, protocol)
        made.write_text(json.dumps({**gen, **wanted}, default=str))
    print(f"  {gen['records']} records from {gen['shards']} shards ({gen['events']} events), "
          f"{gen['schemas']} registered schemas, {gen['seconds']:.1f} s", flush=True)

    records = load_records(workdir / "records.jsonl")
    texts = load_schema_texts(workdir / "dump.json")
    t0 = time.perf_counter()
    registry = DumpRegistry.from_file(workdir / "dump.json")
    registry_load_s = time.perf_counter() - t0
    n = len(records)
    parsed = ("key", "value") if avro else JSON_PROTOCOLS[protocol]
    keys = sum(r.key is not None for r in records) if "key" in parsed else 0
    values = sum(r.value is not None for r in records) if "value" in parsed else 0
    in_bytes = sum(len(r.key or b"") + len(r.value or b"") for r in records)
    cmd = cli_command(cli, workdir, protocol) if cli else []
    json_parser, loads = json_loads()

    which = JSON_PROTOCOLS.get(protocol, ())
    baselines: dict[str, Callable[[], int]] = (
        {"baseline": lambda: baseline(records, texts, plain_parse),
         "baseline_stripped": lambda: baseline(records, texts, decoder_parse)} if avro
        else {"baseline": lambda: json_baseline(records, strict_loads, which),
              "baseline_fast_json": lambda: json_baseline(records, loads, which)})
    msgspec = None if avro else msgspec_loads()
    if msgspec is not None:
        baselines["baseline_msgspec"] = lambda: json_baseline(records, msgspec[1], which)
    times: dict[str, list[float]] = {**{k: [] for k in baselines}, "check_inprocess": [], "check_cli": [],
                                     "check_cli_1": []}
    cli_reported: list[float] = []
    cli1_reported: list[float] = []
    for rnd in range(1, args.repeat + 1):
        line = f"round {rnd}/{args.repeat}:"
        for k, fn in baselines.items():
            s, parts = timed(fn)
            assert parts == keys + values, (parts, keys, values)
            times[k].append(s)
            line += f" {k.replace('_', '-')} {s:.2f} s,"
        if args.warm:
            s, tally = timed(lambda: check_inprocess(records, registry, protocol))
            assert_conforms(tally)
        else:
            s, _ = check_cold(records, registry, protocol)
        times["check_inprocess"].append(s)
        line += f" check in-process {s:.2f} s"
        if cmd:
            s, reported = timed(lambda: check_cli(cmd, workdir))
            times["check_cli"].append(s)
            cli_reported.append(reported)
            line += f", check CLI {s:.2f} s (its own check loop {reported:.2f} s)"
            s, reported = timed(lambda: check_cli([*cmd, "--jobs", "1"], workdir))
            times["check_cli_1"].append(s)
            cli1_reported.append(reported)
            line += f", check CLI --jobs 1 {s:.2f} s (its own check loop {reported:.2f} s)"
        print(line, flush=True)
    if not cmd:
        del times["check_cli"], times["check_cli_1"]

    results = {k: summary(v, n) for k, v in times.items()}
    if cli_reported:
        results["check_cli"]["cli_reported_duration_s"] = cli_reported
        results["check_cli_1"]["cli_reported_duration_s"] = cli1_reported
    rat = {f"check_inprocess/{k}": ratios(times["check_inprocess"], times[k]) for k in baselines}
    if cmd:
        rat["check_cli/baseline"] = ratios(times["check_cli"], times["baseline"])
        rat["check_cli/check_inprocess"] = ratios(times["check_cli"], times["check_inprocess"])
        rat["check_cli_1/baseline"] = ratios(times["check_cli_1"], times["baseline"])

    base_label = "baseline (fastavro)" if avro else "baseline (strict stdlib json)"
    labels = {"baseline": base_label, "baseline_stripped": "baseline, decoder's schemas",
              "baseline_fast_json": f"context: {json_parser.split()[0]}",
              "baseline_msgspec": f"context: {msgspec[0] if msgspec else 'msgspec'}, Decimal",
              "check_inprocess": "check in-process", "check_cli": "check CLI (subprocess)",
              "check_cli_1": "check CLI --jobs 1"}
    parts_what = "Avro parts" if avro else "JSON documents"
    print(f"\n{protocol}: {n} records ({keys} keys + {values} values = {keys + values} {parts_what}, "
          f"{in_bytes / 1e6:.1f} MB, {gen['schemas']} schema ids); best and median of {args.repeat} rounds")
    print(f"ratio = throughput / baseline throughput (1.000 = as fast as plain "
          f"{'fastavro decoding' if avro else 'strict stdlib json parsing: duplicate keys refused, Decimal floats'})\n")
    hdr = f"{'measurement':<30}{'best s':>9}{'median s':>10}{'best rec/s':>13}{'median rec/s':>14}" \
          f"{'ratio best':>12}{'ratio med':>11}"
    print(hdr)
    print("-" * len(hdr))
    base = times["baseline"]
    for k, v in times.items():
        r = ratios(v, base)
        res = results[k]
        print(f"{labels[k]:<30}{res['best_s']:>9.3f}{res['median_s']:>10.3f}{res['best_records_per_s']:>13,.0f}"
              f"{res['median_records_per_s']:>14,.0f}{r['best']:>12.3f}{r['median']:>11.3f}")
    print()
    for k, r in rat.items():
        print(f"{k:<36} best {r['best']:.3f}  median {r['median']:.3f}  paired-rounds median "
              f"{r['median_of_paired_rounds']:.3f}  (slowdown x{1 / r['best']:.1f} best)")
    print(f"registry dump load (outside the timings): {registry_load_s:.3f} s")

    out_json = Path(args.json)
    out_json.parent.mkdir(parents=True, exist_ok=True)
    profile = None
    if args.profile:
        profile = profile_check(records, registry, args.top, out_json.with_suffix(".prof"), protocol)
    checks = per_check(records, registry, args.top, protocol) if args.per_check else None

    src_end = source_state()
    changed = src_end["sources_sha1"] != src_start["sources_sha1"]
    if changed:
        print(f"WARNING: the sources in {src_start['package_dir']} changed during the run; the CLI rounds "
              "import the code afresh, the in-process rounds do not: measure again (or measure an export, "
              "see benchmarks/README.md)", file=sys.stderr)
    doc = {
        "benchmark": "check_throughput",
        "source": {"at_start": src_start, "at_end": src_end, "changed_during_run": changed},
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "protocol": protocol, "options": protocol_options(protocol), "seed": args.seed, "shape": args.shape,
        "records": n, "keys_decoded": keys, "values_decoded": values, "parts_decoded": keys + values,
        "baseline_parser": "fastavro" if avro else "json (stdlib) + object_pairs_hook (duplicate keys) + "
                           "parse_float=Decimal",
        "context_parsers": None if avro else [json_parser,
                                              *([msgspec[0] + " (float_hook=Decimal)"] if msgspec else [])],
        "input_bytes": in_bytes,
        "schema_ids": gen["schemas"], "shards": gen["shards"], "events": gen["events"],
        "generation_s": round(gen["seconds"], 3), "registry_dump_load_s": round(registry_load_s, 4),
        "repeat": args.repeat,
        "python": platform.python_version(), "python_implementation": platform.python_implementation(),
        "fastavro": fastavro.__version__, "fastavro_c_extension": _fastavro_is_c(),
        "cpu_count": os.cpu_count(), "platform": platform.platform(),
        "cli_command": cmd,
        "measurements": results,
        "ratios": rat,
        "ratio_meaning": "check throughput / baseline throughput (best: best/best; median: median/median; "
                         "median_of_paired_rounds: median over rounds of the same round's ratio)",
        "profile_top_cumulative": profile,
        "per_check": checks,
    }
    out_json.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {out_json}")
    return 0


def _fastavro_is_c() -> bool:
    try:
        from fastavro import _read  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
