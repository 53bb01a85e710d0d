"""`check --workload` against the run that produced the capture (issue 29).

    python benchmarks/check_workload.py [--examples N] [--protocol P] [--seed S] [--workdir DIR]

Three CLI commands, as a user types them, each timed on its own (wall clock, best of one: each
takes minutes at 100,000 records): `conformance workload` (the export), `conformance run
--no-matrix --dump` (the run, on its default pipeline: Spark local mode, the embedded Kafka), and
`conformance check --input DUMP --complete --workload FILE` (the capture judged alone and against
the workload). The figure that matters is the ratio check / run, measured in the same session.
Results go to reports/bench/check_workload.json.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    took = time.perf_counter() - t0
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    verdict = next((line for line in done.stdout.splitlines() if line.startswith("VERDICT")), "")
    print(f"  {took:8.1f} s  {' '.join(cmd[3:6])} … {verdict}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=5200, help="workloads (about 20 records each for MaxScale)")
    ap.add_argument("--protocol", default="maxscale-kafkacdc")
    ap.add_argument("--seed", default="bench")
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json", default="reports/bench/check_workload.json")
    args = ap.parse_args()
    cli = [sys.executable, "-m", "conformance"]
    common = ["--protocol", args.protocol, "--seed", args.seed, "--examples", str(args.examples)]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        export_s = timed([*cli, "workload", *common, "--out", "w.sql"], work)
        run_s = timed([*cli, "run", *common, "--no-matrix", "--no-shrink", "--dump", "dump", "--report-dir", "r"],
                      work)
        records = sum(1 for line in (work / "dump").open(encoding="utf-8") if line.strip())
        check_s = timed([*cli, "check", "--protocol", args.protocol, "--input", "dump", "--complete", "--workload",
                         "w.sql", "--report-dir", "c"], work)
    result = {"protocol": args.protocol, "examples": args.examples, "records": records,
              "export_s": round(export_s, 2), "run_s": round(run_s, 2), "check_workload_s": round(check_s, 2),
              "run_msgs_per_s": round(records / run_s), "check_msgs_per_s": round(records / check_s),
              "check_over_run": round(check_s / run_s, 3)}
    print(json.dumps(result, indent=2))
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
