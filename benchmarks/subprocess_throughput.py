#!/usr/bin/env python
"""Events/s through the subprocess encoder protocol, against the same encoder in process.

    python benchmarks/subprocess_throughput.py [--shards N] [--repeat R] [--no-node]

The TiCDC Simple reference encoder (default options: JSON) encodes the same events

  * in-process        called directly, as the harness's encode loop calls it (the baseline);
  * subprocess        through `SubprocessEncoder` and `python -m conformance.encoders.serve
                      --encoder ticdc-simple/reference` (JSON lines both ways, every request and
                      reply validated against its JSON Schema, records base64 both ways);
  * subprocess, no request validation   the same with `validate_requests=False` (replies are
                      always validated): what validating our own requests costs;
  * node example      `examples/node-ticdc-simple` (same bytes as the reference), if Node is
                      installed: another language's speed through the same pipe.

One session per workload shard (a few long-lived tables, ~300 transactions, as the harness
runs a shard): open (process start, handshake, open), every event (`encode` + `tick`), close.
Rounds are interleaved (every implementation once per round) so that the noise of a shared
machine hits them alike. Reported per implementation: encode-phase events/s (steady state)
and the ratio to in-process, and the per-shard cost of starting and closing a process.
Results go to stdout and `reports/bench/subprocess_throughput.json`.

Not part of CI; the numbers depend on the machine: compare ratios, not rates.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import platform
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

from conformance.encoders.spi import Encoder, EncoderContext, ManualClock
from conformance.encoders.subprocess import SubprocessEncoder, SubprocessSpec
from conformance.model.events import Workload
from conformance.protocols import get_protocol
from conformance.protocols.ticdc_simple.encoder import TiCDCSimpleEncoder
from conformance.strategies import DEFAULT_SHAPE, sample_workload

DEFAULT_JSON = REPO / "reports" / "bench" / "subprocess_throughput.json"
PROTOCOL = "ticdc-simple"
NODE_EXAMPLE = REPO / "examples" / "node-ticdc-simple" / "src" / "main.js"


def shape() -> Any:
    # Few long-lived tables, ~300 transactions per shard (what one harness shard looks like when
    # a run is sized for throughput).
    return dataclasses.replace(DEFAULT_SHAPE, tables=(1, 2), transactions=(300, 300), ddl_rate=0.01,
                               max_rows_per_table=400)


@dataclasses.dataclass
class Session:
    open_s: float
    encode_s: float
    close_s: float
    events: int
    records: int


def run_session(make: Callable[[], Encoder], workload: Workload, options: dict[str, str], prefix: str) -> Session:
    """One shard, as the harness's encode loop drives an encoder (clock follows the events, a tick after
    each), without the checks."""
    clock = ManualClock()
    ctx = EncoderContext(options=options, clock=clock, partitions=3, topic_prefix=prefix)
    enc = make()
    t0 = time.perf_counter()
    enc.open(ctx)
    t1 = time.perf_counter()
    records = 0
    for event in workload.events:
        clock.follow(event)
        records += len(enc.encode(event))
        records += len(enc.tick(clock.now))
    t2 = time.perf_counter()
    enc.close()
    t3 = time.perf_counter()
    return Session(t1 - t0, t2 - t1, t3 - t2, len(workload.events), records)


def implementations(args: argparse.Namespace) -> dict[str, Callable[[], Encoder]]:
    serve = [sys.executable, "-m", "conformance.encoders.serve", "--encoder", f"{PROTOCOL}/reference"]
    impls: dict[str, Callable[[], Encoder]] = {
        "in-process": TiCDCSimpleEncoder,
        "subprocess": lambda: SubprocessEncoder(SubprocessSpec.from_command(serve), protocol=PROTOCOL),
        "subprocess, no request validation": lambda: SubprocessEncoder(
            SubprocessSpec.from_command(serve, validate_requests=False), protocol=PROTOCOL),
    }
    if not args.no_node and shutil.which("node"):
        impls["node example"] = lambda: SubprocessEncoder(
            SubprocessSpec.from_command(["node", str(NODE_EXAMPLE)]), protocol=PROTOCOL)
    return impls


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shards", type=int, default=10, help="workload shards per round (one session each)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds; the table shows the best and the median")
    ap.add_argument("--seed", default="bench")
    ap.add_argument("--no-node", action="store_true", help="skip the Node.js example")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON)
    args = ap.parse_args()

    options = dict(get_protocol(PROTOCOL).resolve_options({}))
    workloads = [sample_workload(args.seed, i, shape()) for i in range(args.shards)]
    events = sum(len(w.events) for w in workloads)
    impls = implementations(args)
    print(f"{len(workloads)} shards, {events:,} events per round; implementations: {', '.join(impls)}", flush=True)

    rounds: dict[str, list[list[Session]]] = {name: [] for name in impls}
    records: dict[str, int] = {}
    for r in range(args.repeat):
        for name, make in impls.items():
            sessions = [run_session(make, w, options, f"b{r}s{i}-") for i, w in enumerate(workloads)]
            rounds[name].append(sessions)
            got = sum(s.records for s in sessions)
            if records.setdefault(name, got) != got or got != records["in-process"]:
                print(f"warning: {name} made {got} records, in-process {records['in-process']}", file=sys.stderr)
            print(f"round {r + 1}: {name}: {sum(s.encode_s for s in sessions):.3f} s", flush=True)

    def encode_s(name: str) -> list[float]:
        return [sum(s.encode_s for s in ss) for ss in rounds[name]]

    base = encode_s("in-process")
    rows = []
    for name in impls:
        enc = encode_s(name)
        per_round_ratio = [b / e for b, e in zip(base, enc, strict=True)]
        opens = [s.open_s for ss in rounds[name] for s in ss]
        closes = [s.close_s for ss in rounds[name] for s in ss]
        rows.append({
            "implementation": name,
            "encode_s_best": min(enc), "encode_s_median": statistics.median(enc),
            "events_per_s_best": events / min(enc), "events_per_s_median": events / statistics.median(enc),
            "ratio_best": min(base) / min(enc), "ratio_median_of_rounds": statistics.median(per_round_ratio),
            "open_s_median": statistics.median(opens), "close_s_median": statistics.median(closes),
            "records_per_round": records[name],
        })

    header = (f"{'implementation':36} {'best s':>8} {'events/s':>10} {'ratio':>7} {'ratio med':>9} "
              f"{'open ms':>8} {'close ms':>8}")
    print()
    print(header)
    print("-" * len(header))
    for row in rows:
        print(f"{row['implementation']:36} {row['encode_s_best']:8.3f} {row['events_per_s_best']:10,.0f} "
              f"{row['ratio_best']:7.3f} {row['ratio_median_of_rounds']:9.3f} {row['open_s_median'] * 1000:8.1f} "
              f"{row['close_s_median'] * 1000:8.1f}")
    print("\nratio: in-process encode time / this encode time (1.0 = as fast as in-process); "
          "open/close: per shard (process start, handshake, open / close, exit)")

    out = {
        "benchmark": "subprocess_throughput", "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "protocol": PROTOCOL, "options": options, "seed": args.seed, "shards": args.shards, "repeat": args.repeat,
        "events_per_round": events, "shape": dataclasses.asdict(shape()), "results": rows,
        "python": platform.python_version(), "cpus": __import__("os").cpu_count(), "source": source_state(),
        "node": shutil.which("node") and __import__("subprocess").run(
            ["node", "--version"], capture_output=True, text=True, check=False).stdout.strip(),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"written: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
