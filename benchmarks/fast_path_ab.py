#!/usr/bin/env python
"""The compiled fast path on and off, in one process, against the strict parse (issue 32).

    python benchmarks/check_throughput.py --protocol P --shape realistic --workdir DIR --no-cli
    python benchmarks/fast_path_ab.py --workdir DIR --protocol P [--rounds 2]

Reads the capture `check_throughput.py` left in DIR (records.jsonl; a registry dump where the
protocol has one) and measures, interleaved round by round so that machine noise hits each alike:
the strict standard-library parse of every JSON part the protocol writes (the JSON protocols'
baseline, as `check_throughput.py` measures it), and `check_log` + the delivery analysis (as
`conformance check` does) with the fast path on and off (`checks.compiled.forced`). Prints each
round's seconds, the ratio parse / check of each, and whether the two tallies are the same.
"""

from __future__ import annotations

import argparse
import decimal
import gc
import time
from pathlib import Path
from typing import Any

from conformance.checks import compiled
from conformance.harness.capture import DeliveryLogs, read_records
from conformance.harness.check import capture_tally, check_log, unnumbered
from conformance.infra.registry import DumpRegistry
from conformance.protocols import get_protocol
from conformance.protocols.kit import loads_strict

JSON_PARTS = {"ticdc-simple": ("key", "value"), "maxscale-kafkacdc": ("value",), "debezium": ("key", "value")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workdir", required=True, help="the directory check_throughput.py --workdir wrote")
    ap.add_argument("--protocol", choices=sorted(JSON_PARTS), required=True)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    work = Path(args.workdir)
    records = [r for _n, r in read_records(work / "records.jsonl")]
    dump = work / "dump.json"
    registry: Any = DumpRegistry.from_file(dump) if dump.exists() else None
    suite = get_protocol(args.protocol)
    options = suite.resolve_options({})
    parts = JSON_PARTS[args.protocol]

    def parse() -> float:
        t = time.perf_counter()
        for r in records:
            for raw in (r.key if "key" in parts else None, r.value if "value" in parts else None):
                if raw is not None:
                    loads_strict(raw.decode("utf-8"), parse_float=decimal.Decimal)
        return time.perf_counter() - t

    def check(fast: bool) -> tuple[float, list[Any]]:
        with compiled.forced(fast):
            tally = capture_tally(suite, "a capture")
            logs = DeliveryLogs(suite.name, options, registry)
            t = time.perf_counter()
            check_log(suite, options, registry, unnumbered(records), tally, delivery=logs)
            logs.judge(tally)
            return time.perf_counter() - t, [c.to_json() for c in tally]

    for _ in range(args.rounds):
        gc.collect()
        p = parse()
        gc.collect()
        on, a = check(True)
        gc.collect()
        off, b = check(False)
        print(f"{len(records):,} records  strict parse {p:.3f} s  fast path {on:.3f} s ({p / on:.3f})  "
              f"checks only {off:.3f} s ({p / off:.3f})  same tally: {a == b}", flush=True)


if __name__ == "__main__":
    main()
