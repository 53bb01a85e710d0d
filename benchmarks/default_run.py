#!/usr/bin/env python
"""The README's main job, timed (issue 17, P3: the default `conformance run` in <= 60 s).

    python benchmarks/default_run.py [--repeat R] [--goal 60] [--json PATH] [-- EXTRA ARGS]

Runs `conformance run` exactly as the README's first command does (the executable next to the
running python, default options: TiCDC Avro reference, every option combination, Spark
`local[*]`, embedded Kafka and registry), R times, each into its own temporary report directory.
For every round it prints the wall time (interpreter start and Spark session included), the
records, and the breakdown the run reports (driver phases once; the stages summed over every
option combination, i.e. over the workers); then the best and median wall time and their ratio
to the goal (<= 1.000 meets it). A run whose verdict is not `pass` stops the benchmark.

Not part of CI; the numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

DEFAULT_JSON = REPO / "reports" / "bench" / "default_run.json"


def one_round(cli: str, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-default-run-") as d:
        cmd = [cli, "run", "--report-dir", d, *extra]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
        wall = time.perf_counter() - t0
        report_path = Path(d) / "report.json"
        if not report_path.exists():
            raise SystemExit(f"`{' '.join(cmd)}` wrote no report (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
        report = json.loads(report_path.read_text(encoding="utf-8"))
    if report.get("verdict") != "pass":
        raise SystemExit(f"the default run did not pass (verdict {report.get('verdict')}, exit {proc.returncode})")
    driver: dict[str, float] = {}
    stages: dict[str, float] = defaultdict(float)
    for run in report.get("runs", []):
        for name, seconds in (run.get("timings") or {}).items():
            if "(driver" in name:
                driver[name] = max(driver.get(name, 0.0), float(seconds))
            else:
                stages[name] += float(seconds)
    return {"wall_s": wall, "reported_s": report.get("duration_s"), "exit": proc.returncode,
            "records": sum(int(r.get("records") or 0) for r in report.get("runs", [])),
            "combinations": len(report.get("runs", [])), "driver": driver, "stages": dict(stages)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1, help="rounds (default 1)")
    ap.add_argument("--goal", type=float, default=60.0, help="the goal in seconds (default 60)")
    ap.add_argument("--cli", default=str(Path(sys.executable).with_name("conformance")),
                    help="the conformance executable (default: next to this python)")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"result file (default {DEFAULT_JSON})")
    ap.add_argument("extra", nargs="*", help="more `conformance run` arguments, after --")
    args = ap.parse_args()
    src = source_state()
    print(f"measuring {src.get('package_dir')} (sources sha1 {src.get('sources_sha1', '')[:12]}"
          + (f", commit {src['commit'][:12]}" if src.get("commit") else "") + ")", flush=True)
    rounds = []
    for i in range(args.repeat):
        r = one_round(args.cli, args.extra)
        rounds.append(r)
        parts = ", ".join(f"{k} {v:.1f} s" for k, v in {**r["driver"], **r["stages"]}.items())
        print(f"round {i + 1}/{args.repeat}: {r['wall_s']:.1f} s wall ({r['reported_s']} s reported), "
              f"{r['records']:,} records in {r['combinations']} combinations; {parts}", flush=True)
    walls = [r["wall_s"] for r in rounds]
    best, median = min(walls), statistics.median(walls)
    print(f"\ndefault `conformance run`: best {best:.1f} s, median {median:.1f} s; "
          f"ratio to the {args.goal:.0f} s goal: best {best / args.goal:.3f}, median {median / args.goal:.3f} "
          f"({'met' if median <= args.goal else 'not met'})")
    out = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "source": src, "goal_s": args.goal,
           "rounds": rounds, "best_s": best, "median_s": median, "ratio_median": median / args.goal,
           "cpus": os.cpu_count(), "python": platform.python_version()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
