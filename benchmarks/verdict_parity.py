"""Same seeds, same verdicts: record what a fixed set of `conformance` commands decide, and compare.

A refactor of the pipeline must not change what the suite concludes. This script runs a fixed
list of CLI invocations (in memory, in-process over the embedded Kafka, on Spark, `check
--input` of dumped records; both TiCDC protocols, the reference and a few mutants), keeps from
each report what a user acts on (exit code, verdict, per run: encoder label, option label,
verdict and every check's outcome; the notes), and either writes that as a baseline or compares
it with one.

    python benchmarks/verdict_parity.py --out reports/bench/parity-after.json \
        [--compare benchmarks/parity/baseline-bd53072.json] [--only NAME ...] [--cli PATH]

Timings, counts and record numbers are left out: they may change with the implementation.
A difference that is intended is explained by `intended()`, with its reason; anything else makes
the script exit 1. Notes are recorded (numbers masked) for a reader to compare, not compared.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# name -> arguments after `conformance` ({dir} is the case's scratch directory)
CASES: dict[str, list[str]] = {
    "avro-memory-ref": ["run", "--protocol", "ticdc-avro", "--kafka", "none", "--examples", "20", "--seed", "7"],
    "simple-memory-ref": ["run", "--protocol", "ticdc-simple", "--kafka", "none", "--examples", "20", "--seed", "7"],
    "avro-memory-bit-padded": ["run", "--protocol", "ticdc-avro", "--kafka", "none", "--examples", "20", "--seed",
                               "7", "--encoder", "mutant/bit-padded", "--no-matrix", "--no-shrink"],
    "simple-memory-watermark": ["run", "--protocol", "ticdc-simple", "--kafka", "none", "--examples", "20",
                                "--seed", "7", "--encoder", "mutant/watermark-partition-zero", "--no-matrix",
                                "--no-shrink"],
    "avro-nospark-ref": ["run", "--protocol", "ticdc-avro", "--no-spark", "--examples", "6", "--seed", "7",
                         "--no-matrix", "--option", "enable-tidb-extension=true",
                         "--dump-records", "{dir}/avro.jsonl"],
    "simple-nospark-ref": ["run", "--protocol", "ticdc-simple", "--no-spark", "--examples", "6", "--seed", "7",
                           "--no-matrix", "--dump-records", "{dir}/simple.jsonl"],
    "avro-nospark-key-scatter": ["run", "--protocol", "ticdc-avro", "--no-spark", "--examples", "6", "--seed", "7",
                                 "--no-matrix", "--encoder", "mutant/sink-key-scatter"],
    "simple-nospark-batch-reversed": ["run", "--protocol", "ticdc-simple", "--no-spark", "--examples", "6",
                                      "--seed", "7", "--no-matrix", "--encoder", "mutant/sink-batch-reversed"],
    "avro-spark-ref": ["run", "--protocol", "ticdc-avro", "--examples", "6", "--seed", "7", "--no-matrix",
                       "--option", "enable-tidb-extension=true"],
    "simple-spark-ref": ["run", "--protocol", "ticdc-simple", "--examples", "6", "--seed", "7", "--no-matrix"],
    "avro-spark-key-scatter": ["run", "--protocol", "ticdc-avro", "--examples", "6", "--seed", "7", "--no-matrix",
                               "--encoder", "mutant/sink-key-scatter"],
    "avro-check-input": ["check", "--protocol", "ticdc-avro", "--input", "{dir}/avro.jsonl", "--registry",
                         "{dir}/avro.registry.json", "--option", "enable-tidb-extension=true"],
    "simple-check-input": ["check", "--protocol", "ticdc-simple", "--input", "{dir}/simple.jsonl"],
}

# Differences a change meant to make, each with its reason: (case, what, before, after) -> reason
# or None. `what` is a check id, or "encoder" / "label" / "verdict" / "exit_code" / "errors".


def intended(case: str, what: str, before: object, after: object) -> str | None:
    if "-memory-" in case and (what.startswith("delivery.") or what == "infra.broker-acks") and before == "skipped":
        return ("the in-memory log is a sink like Kafka (one pipeline, several runners): delivery is judged in memory "
                "too, against a broker that never fails")
    if what == "encoder" and isinstance(before, str) and before == f"{after}+{str(after).rsplit('/', 1)[-1]}":
        return "a delivery mutant is labelled with its own name in every mode (--no-spark added '+<sink>')"
    return None

_NUMBERS = re.compile(r"\d+(\.\d+)?")


def summarise(report: dict[str, Any], exit_code: int) -> dict[str, Any]:
    runs: dict[int, dict[str, Any]] = {}
    for i, run in enumerate(report.get("runs", [])):
        runs[run.get("run", i)] = {"encoder": run["encoder"], "label": run["label"], "verdict": run["verdict"],
                                   "notes": sorted({_NUMBERS.sub("#", n) for n in run.get("notes", [])}),
                                   "outcomes": {}}
    for r in report.get("results", []):
        runs[r["run"]]["outcomes"][r["check"]] = r["outcome"]
    return {"exit_code": exit_code, "verdict": report.get("verdict"), "errors": len(report.get("errors", [])),
            "runs": [runs[k] for k in sorted(runs)]}


def run_case(cli: str, name: str, args: list[str], scratch: Path) -> dict[str, Any]:
    out = scratch / name
    argv = [a.replace("{dir}", str(scratch)) for a in args]
    argv += ["--report-dir", str(out)]
    t0 = time.monotonic()
    proc = subprocess.run([cli, *argv], capture_output=True, text=True, cwd=scratch, timeout=1800, check=False)
    took = time.monotonic() - t0
    path = out / "report.json"
    if not path.is_file():
        return {"exit_code": proc.returncode, "verdict": None, "errors": 1, "runs": [],
                "stderr": proc.stderr[-2000:], "seconds": round(took, 1)}
    res = summarise(json.loads(path.read_text(encoding="utf-8")), proc.returncode)
    res["seconds"] = round(took, 1)
    return res


def compare(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    diffs = []
    for name, b in before.items():
        a = after.get(name)
        if a is None:
            continue
        for key in ("exit_code", "verdict", "errors"):
            if a[key] != b[key] and not intended(name, key, b[key], a[key]):
                diffs.append(f"{name}: {key} {b[key]!r} -> {a[key]!r}")
        if len(a["runs"]) != len(b["runs"]):
            diffs.append(f"{name}: {len(b['runs'])} runs -> {len(a['runs'])}")
            continue
        for i, (rb, ra) in enumerate(zip(b["runs"], a["runs"], strict=True)):
            for key in ("encoder", "label", "verdict"):
                if rb[key] != ra[key] and not intended(name, key, rb[key], ra[key]):
                    diffs.append(f"{name} run {i}: {key} {rb[key]!r} -> {ra[key]!r}")
            for cid in sorted(set(rb["outcomes"]) | set(ra["outcomes"])):
                ob, oa = rb["outcomes"].get(cid), ra["outcomes"].get(cid)
                if ob != oa and not intended(name, cid, ob, oa):
                    diffs.append(f"{name} run {i} ({rb['label']}): {cid} {ob} -> {oa}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "reports" / "bench" / "parity.json"))
    ap.add_argument("--compare", default=None, help="a baseline written by this script")
    ap.add_argument("--only", nargs="*", default=None, help="case names (default: all)")
    ap.add_argument("--cli", default=str(Path(sys.executable).with_name("conformance")))
    args = ap.parse_args()
    names = args.only or list(CASES)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
        scratch = Path(tmp)
        for name in names:
            print(f"{name} …", end=" ", flush=True)
            results[name] = run_case(args.cli, name, CASES[name], scratch)
            print(f"exit {results[name]['exit_code']}, {results[name]['verdict']}, {results[name]['seconds']} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"written: {args.out}")
    if args.compare:
        diffs = compare(json.loads(Path(args.compare).read_text(encoding="utf-8")), results)
        for d in diffs:
            print("DIFF", d)
        print(f"{len(diffs)} unintended difference(s) against {args.compare}")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
