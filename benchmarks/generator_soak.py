#!/usr/bin/env python
"""The long generator soak (issue 26): ≥ 100,000 workloads over every shape a run can ask for.

    python benchmarks/generator_soak.py [--workloads 100000] [--processes 2] [--seed S] [--json PATH]

Every shape `conformance run` can build (`conformance.harness.soak.soak_shapes`: each protocol in
its own dialect and each `--upstream` dialect, the reference encoder and every mutant's declared
shape, evolving workloads included) is generated over many seeds and rendered the ways the model
renders it (the SQL script, the workload file read back equal, every value through the conversion
helpers). No encoder, no broker. The reference encoders' shapes get six times a mutant's share.

Prints workloads/s, crashes found (distinct ones with where they were raised and the unit that
replays them: `conformance.harness.soak.replay(shape_of(label), seed, shard)`), and the ratio of
the soak's rate to plain generation of the same units measured in the same run (rendering's cost).
Exits 1 when anything crashed. Not part of CI (about ten minutes on two cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import multiprocessing
import os
import platform
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from conformance.harness.soak import SoakShape, soak_shapes, soak_units, units
from conformance.strategies import sample_workload

DEFAULT_JSON = REPO / "reports" / "bench" / "generator_soak.json"
CHUNK = 250


def _weight(s: SoakShape) -> float:
    return 6.0 if any(a.endswith("/reference") for a in s.asked_by) else 1.0


_SHAPES: list[SoakShape] = []


def _init() -> None:
    _SHAPES[:] = soak_shapes()


def _chunk(job: tuple[str, list[tuple[int, int]]]) -> dict[str, Any]:
    seed, pairs = job
    r = soak_units(((_SHAPES[i], shard) for i, shard in pairs), seed=seed)
    return {"workloads": r.workloads, "events": r.events, "values": r.values, "seconds": r.seconds,
            "crashes": [dataclasses.asdict(c) for c in r.crashes]}


def _generation_only(shapes: list[SoakShape], pairs: list[tuple[int, int]], seed: str) -> float:
    """Workloads/s of plain generation of the same units (the baseline, in this process); a unit
    that crashes counts (the soak itself reports it)."""
    t0 = time.perf_counter()
    for i, shard in pairs:
        try:
            sample_workload(seed, shard, shapes[i].shape)
        except Exception:  # noqa: BLE001, S112 - the soak reports crashes; the baseline only times
            continue
    return len(pairs) / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workloads", type=int, default=100_000, help="workloads in all (default 100,000)")
    ap.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="worker processes (default: cores)")
    ap.add_argument("--seed", default="long-soak", help="generation seed (default long-soak)")
    ap.add_argument("--baseline", type=int, default=2000, help="units timed for the generation-only baseline")
    ap.add_argument("--json", type=Path, default=DEFAULT_JSON, help=f"result file (default {DEFAULT_JSON})")
    args = ap.parse_args()
    src = source_state()
    print(f"measuring {src.get('package_dir')} (sources sha1 {src.get('sources_sha1', '')[:12]}"
          + (f", commit {src['commit'][:12]}" if src.get("commit") else "") + ")", flush=True)
    _init()
    shapes = _SHAPES
    index = {id(s): i for i, s in enumerate(shapes)}
    pairs = [(index[id(s)], shard) for s, shard in units(shapes, args.workloads, weights=_weight)]
    jobs = [(args.seed, pairs[k:k + CHUNK]) for k in range(0, len(pairs), CHUNK)]
    print(f"{len(shapes)} shapes, {len(pairs):,} workloads in {len(jobs)} chunks on {args.processes} process(es)",
          flush=True)

    totals: Counter[str] = Counter()
    crashes: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    columns = (TextColumn("soak"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    with multiprocessing.get_context("fork").Pool(args.processes, initializer=_init) as pool, \
            Progress(*columns, transient=not sys.stdout.isatty()) as bar:
        task = bar.add_task("soak", total=len(pairs))
        for r in pool.imap_unordered(_chunk, jobs):
            for k in ("workloads", "events", "values"):
                totals[k] += r[k]
            totals["cpu_seconds"] += r["seconds"]
            crashes.extend(r["crashes"])
            bar.advance(task, r["workloads"])
    wall = time.perf_counter() - t0
    rate = totals["workloads"] / wall
    per_process = totals["workloads"] / totals["cpu_seconds"] if totals["cpu_seconds"] else 0.0

    base_pairs = pairs[:: max(1, len(pairs) // args.baseline)][: args.baseline]
    base_rate = _generation_only(shapes, base_pairs, args.seed)
    soak_one = soak_units(((shapes[i], shard) for i, shard in base_pairs), seed=args.seed)
    ratio = soak_one.rate / base_rate if base_rate else 0.0

    distinct: dict[tuple[str, str, str], dict[str, Any]] = {}
    for c in crashes:
        distinct.setdefault((c["stage"], c["error"].split(":", 1)[0], c["where"].splitlines()[-1:][0]
                             if c["where"] else ""), c)
    print(f"\n{totals['workloads']:,} workloads ({totals['events']:,} events, {totals['values']:,} values) "
          f"in {wall:.1f} s: {rate:,.0f} workloads/s on {args.processes} process(es), "
          f"{per_process:,.0f}/s per process")
    print(f"baseline (same run, one process, {len(base_pairs):,} of the units): generation only "
          f"{base_rate:,.0f} workloads/s, generation + rendering {soak_one.rate:,.0f}/s = x{ratio:.3f}")
    print(f"crashes: {len(crashes)} ({len(distinct)} distinct)")
    for c in distinct.values():
        print(f"  {c['stage']} on {c['label']}, seed {c['seed']!r} shard {c['shard']}: {c['error']}\n{c['where']}")
    out = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "source": src, "seed": args.seed,
           "shapes": len(shapes), "workloads": totals["workloads"], "events": totals["events"],
           "values": totals["values"], "wall_s": wall, "workloads_per_s": rate, "per_process_per_s": per_process,
           "processes": args.processes, "baseline_generation_per_s": base_rate,
           "baseline_soak_per_s": soak_one.rate, "ratio_to_generation": ratio, "crashes": len(crashes),
           "distinct_crashes": list(distinct.values()), "cpus": os.cpu_count(), "python": platform.python_version()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    print(f"wrote {args.json}")
    raise SystemExit(1 if crashes else 0)


if __name__ == "__main__":
    main()
