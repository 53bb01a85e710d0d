#!/usr/bin/env python
"""The check loop's garbage-collector setting (`harness.check._quiet_gc`) against the interpreter's
default, interleaved in one process, on a capture check_throughput.py left in a workdir.

    python benchmarks/gc_ab.py --workdir DIR --protocol P [--rounds 2] [--memory]

Variants: default (no change), freeze (gc.freeze only), thresholds (only QUIET_GC_THRESHOLD),
quiet (both: what _quiet_gc does). Times (CPU seconds of this process: the machine is shared)
check_log + the delivery judgement, as fast_path_ab.py.
--memory: peak traced memory (tracemalloc) of one check with default and quiet, and the tracked
objects left after.
"""
from __future__ import annotations

import argparse
import contextlib
import gc
import os
import time
import tracemalloc
from pathlib import Path
from typing import Any

from conformance.harness import check as hc
from conformance.harness.capture import DeliveryLogs, read_records
from conformance.harness.check import capture_tally, check_log, unnumbered
from conformance.infra.registry import DumpRegistry
from conformance.protocols import get_protocol

QUIET = hc._quiet_gc


@contextlib.contextmanager
def freeze_only():
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextlib.contextmanager
def thresholds_only():
    before = gc.get_threshold()
    gc.set_threshold(*hc.QUIET_GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*before)


VARIANTS = {"default": contextlib.nullcontext, "freeze": freeze_only, "thresholds": thresholds_only, "quiet": QUIET}


GC: dict[str, Any] = {"t": 0.0, "n": [0, 0, 0], "tg": [0.0, 0.0, 0.0], "start": 0.0}


def _cb(phase: str, info: dict[str, int]) -> None:
    if phase == "start":
        GC["start"] = time.process_time()
    else:
        GC["t"] += time.process_time() - GC["start"]
        GC["tg"][info["generation"]] += time.process_time() - GC["start"]
        GC["n"][info["generation"]] += 1


def main() -> None:
    gc.callbacks.append(_cb)
    ap = argparse.ArgumentParser()
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--protocol", required=True)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default="default,freeze,thresholds,quiet")
    ap.add_argument("--memory", action="store_true")
    ap.add_argument("--limit", type=int, default=0, help="only the first N records")
    args = ap.parse_args()
    work = Path(args.workdir)
    records = [r for _n, r in read_records(work / "records.jsonl")]
    if args.limit:
        records = records[:args.limit]
    dump = work / "dump.json"
    registry: Any = DumpRegistry.from_file(dump) if dump.exists() and dump.stat().st_size > 20 else None
    suite = get_protocol(args.protocol)
    options = suite.resolve_options({"enable-tidb-extension": "true"} if args.protocol == "ticdc-avro" else {})

    def check(variant: str) -> tuple[float, list[Any]]:
        if variant.startswith("q:"):  # q:T0:T1:T2, frozen and these thresholds
            th = tuple(int(x) for x in variant[2:].split(":"))

            @contextlib.contextmanager
            def custom():
                before = gc.get_threshold()
                gc.freeze()
                gc.set_threshold(*th)
                try:
                    yield
                finally:
                    gc.set_threshold(*before)
                    gc.unfreeze()
            hc._quiet_gc = custom
        else:
            hc._quiet_gc = VARIANTS[variant]
        try:
            tally = capture_tally(suite, "a capture")
            logs = DeliveryLogs(suite.name, options, registry)
            GC["t"], GC["n"], GC["tg"] = 0.0, [0, 0, 0], [0.0, 0.0, 0.0]
            t = time.process_time()
            check_log(suite, options, registry, unnumbered(records), tally, delivery=logs)
            logs.judge(tally)
            return time.process_time() - t, [c.to_json() for c in tally]
        finally:
            hc._quiet_gc = QUIET

    names = args.variants.split(",")
    if args.memory:
        for v in ("default", "quiet"):
            gc.collect()
            tracemalloc.start()
            s, _ = check(v)
            cur, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
            print(f"memory {v}: peak traced {peak / 2**20:.1f} MiB, {s:.2f} s under tracemalloc", flush=True)
        return
    best: dict[str, float] = {}
    for rnd in range(args.rounds):
        out = []
        ref = None
        for v in names:
            gc.collect()
            s, t = check(v)
            if ref is None:
                ref = t
            best[v] = min(best.get(v, 1e9), s)
            out.append(f"{v} {s:.2f}s (gc {GC['t']:.2f}s {GC['n']} {'/'.join(f'{x:.2f}' for x in GC['tg'])})"
                       f"{'' if t == ref else ' (TALLY DIFFERS)'}")
        print(f"{args.protocol} {len(records):,} records, round {rnd + 1}, load {os.getloadavg()[0]:.1f}: "
              + "  ".join(out), flush=True)
    print("best: " + "  ".join(f"{v} {best[v]:.2f}s (x{best['default'] / best[v]:.2f})" for v in names))


if __name__ == "__main__":
    main()
