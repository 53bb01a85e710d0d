#!/usr/bin/env python
"""What a Spark Python worker keeps from one task to the next (issue 32: a worker's peak RSS grew
223 → 390 MiB over 86 minutes of `run` at 10M records).

    python benchmarks/worker_memory.py [--tasks 8] [--units 25] [--top 12] [--json PATH]

A Spark worker process is reused: task after task runs `KafkaWorker.run_units` (encode, produce,
read back, judge) with the worker's own registry client (`spark_runner.worker_registry`) and
whatever the modules keep. This runs the same tasks one after another in this process, against
an embedded Kafka and registry, with `tracemalloc` on (it traces Python's allocations: not the
records the mock cluster keeps in C, which the RSS figure includes), and after each task (and a full collection)
prints the Python memory traced and which source lines hold what grew since the first task.
Memory that grows with the tasks, not with what one task holds, is what a long run accumulates.
"""

from __future__ import annotations

import argparse
import gc
import json
import linecache
import os
import sys
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.pipeline_scaling import make_spec  # noqa: E402


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--tasks", type=int, default=8, help="tasks run one after another (default 8)")
    ap.add_argument("--units", type=int, default=25, help="units per task (default 25, ~790 records each)")
    ap.add_argument("--top", type=int, default=12, help="source lines shown per task (default 12)")
    ap.add_argument("--seed", default="bench")
    ap.add_argument("--registry-cache", type=int, default=None,
                    help="ids the worker's registry client keeps (default: RegistryClient.CACHED_IDS)")
    ap.add_argument("--no-trace", dest="trace", action="store_false",
                    help="RSS only (tracemalloc slows the tasks ~2x)")
    ap.add_argument("--json", default=None, help="write the per-task figures here")
    args = ap.parse_args()

    from conformance.harness.runners import KafkaWorker
    from conformance.harness.spark_runner import _REGISTRIES, new_tally, worker_registry
    from conformance.harness.stages import ComboResult
    from conformance.infra.kafka import open_kafka
    from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
    from conformance.protocols import get_protocol

    if args.registry_cache is not None:
        RegistryClient.CACHED_IDS = args.registry_cache
    out: dict[str, Any] = {"tasks": [], "argv": sys.argv[1:]}
    with open_kafka("embedded://?brokers=1&partitions=1") as kafka, EmbeddedSchemaRegistry() as reg:
        spec = make_spec(kafka.client_config(), reg.url, "wm", args.seed)
        suite = get_protocol(spec.protocol)
        if args.trace:
            tracemalloc.start(1)
        first: tracemalloc.Snapshot | None = None
        for t in range(args.tasks):
            t0 = time.perf_counter()
            results: dict[int, ComboResult] = defaultdict(lambda: ComboResult(new_tally(suite)))
            worker = KafkaWorker(spec, worker_registry(spec.registry_url))
            try:
                worker.run_units(((0, s) for s in range(t * args.units, (t + 1) * args.units)), results)
            finally:
                worker.close()
            failed = sorted({c for r in results.values() for c in r.tally.failed_ids()})
            del results, worker
            gc.collect()
            client = next(iter(_REGISTRIES.values()))
            row: dict[str, Any] = {"task": t, "seconds": round(time.perf_counter() - t0, 1), "rss_kib": rss_kib(),
                                   "failed_checks": failed,
                                   "registry_cached_ids": len(getattr(client, "_schemas", {}))}
            if args.trace:
                snap = tracemalloc.take_snapshot().filter_traces(
                    (tracemalloc.Filter(False, tracemalloc.__file__), tracemalloc.Filter(False, "<frozen *>")))
                row["traced_kib"] = sum(s.size for s in snap.statistics("filename")) // 1024
                if first is None:
                    first = snap
                else:
                    grown = [s for s in snap.compare_to(first, "lineno") if s.size_diff > 0][: args.top]
                    row["grown_since_first"] = [
                        {"where": f"{s.traceback[0].filename.split('/conformance/')[-1]}:{s.traceback[0].lineno}",
                         "kib": s.size_diff // 1024, "blocks": s.count_diff,
                         "line": linecache.getline(s.traceback[0].filename, s.traceback[0].lineno).strip()[:90]}
                        for s in grown]
            out["tasks"].append(row)
            print(f"task {t}: {row['seconds']} s, RSS {row['rss_kib'] // 1024} MiB"
                  + (f", traced {row['traced_kib'] // 1024} MiB" if "traced_kib" in row else "")
                  + f", registry ids cached {row['registry_cached_ids']}"
                  + f", failed checks {row['failed_checks'] or 'none'}", flush=True)
            for g in row.get("grown_since_first", []):
                print(f"    {g['kib']:>7} KiB {g['blocks']:>7} blocks  {g['where']}  {g['line']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("CONFORMANCE_TRACE", "")
    raise SystemExit(main())
