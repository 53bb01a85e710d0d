#!/usr/bin/env python
"""How quickly the suite kills its mutants, and how small the reproductions are (issue 17, P5).

    python benchmarks/mutant_kill.py [--protocol P ...] [--budget N] [--seed S] [--no-shrink]
                                     [--shrink-seconds T]

For every mutant of every installed protocol that runs in memory (not the broker-fault ones),
with the options it needs and its own workload shape in its protocol's dialect (exactly as the
project's tests and `conformance run --encoder <mutant>` run it):

* **examples to kill**: generated workloads (shards 0, 1, 2, … of one seed) run through the
  in-memory pipeline until the check the mutant names fails; "not killed" past `--budget`;
* **statements**: the failing workload shrunk with the CLI's own shrinker and predicate ("the
  named check still fails"), counted as DDL statements other than CREATE DATABASE/SCHEMA plus
  row changes (one INSERT/UPDATE/DELETE each): the SQL a reader must follow, without the
  session setup, BEGIN/COMMIT and the namespace. Hang mutants are not shrunk (each step would
  wait out the timeout; the CLI does not shrink them either).

Prints a table per mutant, then the two goals: median examples to kill (goal <= 50) and the share
of reproductions of <= 3 statements (goal >= 90%). Writes `reports/bench/mutant_kill.json`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from _source import REPO, source_state  # benchmarks/ is on sys.path: these run as scripts

from conformance.checks.common import ENCODER_RESPONSIVE
from conformance.encoders import EncoderKind, all_encoders
from conformance.harness.run import failing_checks
from conformance.harness.runners import MemoryRunner
from conformance.harness.shrink import shrink
from conformance.harness.stages import ComboResult, HangLatch, RunSpec, generate, new_tally
from conformance.infra.inprocess import InProcessRegistry
from conformance.model.events import DdlKind, Workload
from conformance.protocols import all_protocols, get_protocol
from conformance.strategies import DEFAULT_SHAPE
from conformance.strategies.history import shape_for


def statements(w: Workload) -> int:
    return sum(len(t.changes) for t in w.transactions()) + sum(
        1 for d in w.ddls() if d.kind is not DdlKind.CREATE_DATABASE)


def mutant_shape(protocol: str, info: Any) -> Any:
    caps = get_protocol(protocol).capabilities
    shape = shape_for(caps.dialect, DEFAULT_SHAPE, kinds=caps.kinds) if caps.dialect != DEFAULT_SHAPE.dialect \
        else DEFAULT_SHAPE
    return replace(shape, **dict(info.shape)) if info.shape else shape


def measure(protocol: str, info: Any, budget: int, seed: str, do_shrink: bool, shrink_seconds: float
            ) -> dict[str, Any]:
    suite = get_protocol(protocol)
    options = suite.resolve_options(dict(info.needs_options))
    hang = info.catches == ENCODER_RESPONSIVE
    timeout = 1.0 if hang else 10.0
    shape = mutant_shape(protocol, info)
    spec = RunSpec(suite.name, info.name, seed, shape, (tuple(options.items()),),
                   partitions=suite.capabilities.memory_partitions, run_id=f"k{abs(hash(info.name)) % 10**6}",
                   encoder_timeout=timeout)
    registry = InProcessRegistry()
    runner = MemoryRunner(registry)
    result = ComboResult(new_tally(suite))
    latch = HangLatch()
    t0 = time.perf_counter()
    killed_at: int | None = None
    for shard in range(budget):
        runner.run_unit(spec, 0, shard, result, latch, info=info)
        if info.catches in result.tally.failed_ids():
            killed_at = shard
            break
        if latch.shard is not None:
            break
    out: dict[str, Any] = {"protocol": protocol, "mutant": info.name.split("/mutant/", 1)[-1], "check": info.catches,
                           "examples": None if killed_at is None else killed_at + 1,
                           "kill_s": round(time.perf_counter() - t0, 2), "statements": None,
                           "generated_statements": None, "shrink_s": None}
    if killed_at is None or hang or not do_shrink:
        return out
    w = generate(seed, killed_at, shape)
    out["generated_statements"] = statements(w)
    t1 = time.perf_counter()
    small = shrink(w, lambda c: info.catches in failing_checks(suite, info, options, registry, c, timeout=timeout),
                   max_seconds=shrink_seconds)
    out["shrink_s"] = round(time.perf_counter() - t1, 2)
    out["statements"] = statements(small)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--protocol", action="append", help="only these protocols (repeat)")
    ap.add_argument("--budget", type=int, default=200, help="workloads per mutant at most (default 200)")
    ap.add_argument("--seed", default="p5", help="workload seed (default p5)")
    ap.add_argument("--no-shrink", action="store_true", help="count examples only")
    ap.add_argument("--shrink-seconds", type=float, default=15.0, help="shrinking time per mutant (default 15)")
    ap.add_argument("--json", default=str(REPO / "reports" / "bench" / "mutant_kill.json"))
    args = ap.parse_args(argv)
    protocols = args.protocol or [p.name for p in all_protocols()]
    rows: list[dict[str, Any]] = []
    hdr = f"{'protocol':<18}{'mutant':<40}{'examples':>9}{'stmts':>7}{'from':>6}{'shrink s':>9}  check"
    print(hdr)
    print("-" * len(hdr))
    for p in protocols:
        for info in all_encoders(p):
            if info.kind is not EncoderKind.MUTANT or info.needs_broker or info.needs_server:
                continue
            r = measure(p, info, args.budget, args.seed, not args.no_shrink, args.shrink_seconds)
            rows.append(r)
            ex = "-" if r["examples"] is None else str(r["examples"])
            st = "-" if r["statements"] is None else str(r["statements"])
            fr = "-" if r["generated_statements"] is None else str(r["generated_statements"])
            sh = "-" if r["shrink_s"] is None else f"{r['shrink_s']:.1f}"
            print(f"{p:<18}{r['mutant'][:39]:<40}{ex:>9}{st:>7}{fr:>6}{sh:>9}  {r['check']}", flush=True)
    killed = [r["examples"] for r in rows if r["examples"] is not None]
    # A mutant not killed within the budget counts as budget + 1 for the median (it is worse).
    all_examples = [r["examples"] if r["examples"] is not None else args.budget + 1 for r in rows]
    shrunk = [r["statements"] for r in rows if r["statements"] is not None]
    median_examples = statistics.median(all_examples) if all_examples else None
    share_small = (sum(1 for s in shrunk if s <= 3) / len(shrunk)) if shrunk else None
    p90 = sorted(shrunk)[max(0, int(round(0.9 * len(shrunk))) - 1)] if shrunk else None
    print(f"\n{len(rows)} mutants; killed within {args.budget}: {len(killed)}; "
          f"median examples to kill {median_examples} (goal <= 50)")
    if shrunk:
        print(f"shrunk reproductions: {len(shrunk)}; <= 3 statements: {share_small:.0%} (goal >= 90%); "
              f"90th percentile {p90} statements; median {statistics.median(shrunk)}")
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "mutant_kill", "source": source_state(),
                               "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                               "seed": args.seed, "budget": args.budget, "protocols": protocols,
                               "median_examples_to_kill": median_examples, "killed": len(killed),
                               "share_reproductions_le_3_statements": share_small, "p90_statements": p90,
                               "rows": rows}, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
