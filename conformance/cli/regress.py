"""The regression commands: `compare` two reports, `baseline` from a report, `bisect` encoder
versions on an example, `diff` two outputs (two dumps, or two encoders run on the same workloads)."""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..protocols.base import ProtocolSuite, parse_option_args
from .common import _encoder, _protocol, _reproduction, console, err


def _emit(target: str | None, text: Callable[[], str]) -> None:
    """A rendering to `target`: a file, standard output for `-`, nowhere for None."""
    if target == "-":
        sys.stdout.write(text())
    elif target:
        Path(target).write_text(text(), encoding="utf-8")


def _versioned(command: str, versions: str) -> list[str]:
    """`--encoder-cmd 'CMD {version}' --versions V1,V2,…`: the encoders, as --encoder takes them."""
    if "{version}" not in command:
        raise UsageError("--encoder-cmd needs {version} where the version goes")
    return [f"cmd:{command.replace('{version}', v.strip())}" for v in versions.split(",") if v.strip()]


def _generated(args: argparse.Namespace) -> tuple[ProtocolSuite, dict[str, str], list[Any]]:
    """--protocol, --option, --seed, --shard, --examples: the protocol, the options and the workloads
    `run` generates with them (the reference's shape)."""
    from ..harness.run import RunPlan
    from ..harness.stages import generate

    protocol = _protocol(args.protocol)
    pinned = parse_option_args(args.option)
    options = protocol.resolve_options({k: v[0] for k, v in pinned.items()})
    seed: int | str = random.randrange(1 << 31) if args.seed is None else (
        int(args.seed) if args.seed.isdigit() else args.seed)
    plan = RunPlan(protocol=protocol, encoder=_encoder("reference", protocol), combos=[options],
                   examples=args.examples, seed=seed, first_shard=args.shard)
    return protocol, options, [generate(seed, s, plan.run_shape()) for s in plan.shards]


def cmd_baseline(args: argparse.Namespace) -> int:
    from ..reporting.baseline import load, update
    from ..reporting.compare import load as load_report

    baseline = load(args.baseline, missing_ok=True)
    added, pruned = update(baseline, load_report(args.report), reason=args.reason, ticket=args.ticket,
                           expires=args.expires)
    baseline.save(args.baseline)
    console.print(f"{args.baseline}: {len(added)} entr{'y' if len(added) == 1 else 'ies'} added, "
                  f"{len(pruned)} stale pruned, {len(baseline.entries)} in all", markup=False)
    for e in added:
        console.print(f"  + {e.describe()}", markup=False)
    for e in pruned:
        console.print(f"  - {e.describe()}", markup=False)
    return 0


def cmd_bisect(args: argparse.Namespace) -> int:
    from ..harness.bisect import bisect, probe
    from ..harness.diff import by_partition, diff, render_text
    from ..infra.registry import open_registry

    if args.encoders_file:
        lines = Path(args.encoders_file).read_text(encoding="utf-8").splitlines()
        specs = [x.strip() for x in lines if x.strip() and not x.lstrip().startswith("#")]
    elif args.encoder_cmd and args.versions:
        specs = _versioned(args.encoder_cmd, args.versions)
    else:
        raise UsageError("name the versions: --encoder-cmd 'CMD {version}' --versions V1,V2,… or --encoders-file FILE")
    if args.repro:
        data, workload = _reproduction(Path(args.repro))
        protocol = _protocol(data["protocol"])
        options = protocol.resolve_options({k: v for k, v in data["options"].items() if k != "profile"})
        workloads, check = [workload], args.check or data["check"]
    else:
        if args.seed is None:
            raise UsageError("name the example: --repro FILE, or --protocol, --seed (and --shard, --examples)")
        protocol, options, workloads = _generated(args)
        check = args.check
    console.print(f"bisecting {len(specs)} version(s) on {len(workloads)} workload(s) of {protocol.name}"
                  f"{', check ' + check if check else ''}", markup=False)
    with open_registry(args.registry) as registry:
        def run(i: int) -> Any:
            p = probe(protocol, specs[i], options, workloads, check, registry, index=i)
            console.print(f"  {specs[i]}: {p.outcome} ({p.detail})", markup=False)
            return p

        found = bisect(specs, run)
    console.print(f"first bad: {specs[found.first_bad]}\nlast good: {specs[found.last_good]}"
                  + (f"\nuntestable between them: {', '.join(specs[i] for i in found.untestable)}"
                     if found.untestable else ""), markup=False)
    outputs = {p.index: p.records for p in found.probes}
    groups = diff(by_partition(outputs[found.last_good]), by_partition(outputs[found.first_bad]))
    console.print("what their outputs differ in on the example:" if groups else "their outputs are the same "
                  "(the difference is in what the check judges against the source)", markup=False)
    for line in render_text(groups):
        console.print(f"  {line}", markup=False)
    if args.json:
        result = {**found.to_json(specs), "differences": [g.to_json() for g in groups]}
        Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    from ..harness.bisect import SKIP, probe
    from ..harness.diff import DEFAULT_IGNORES, AvroReader, by_partition, diff, load, render_text
    from ..infra.registry import DumpFormatError, open_registry

    specs = list(args.encoder) if args.encoder else (
        _versioned(args.encoder_cmd, args.versions or "") if args.encoder_cmd else [])
    if args.input and specs:
        raise UsageError("diff two dumps (--input A --input B) or two encoders (--encoder A --encoder B), not both")
    if specs:
        if len(specs) != 2:
            raise UsageError("give two encoders: --encoder A --encoder B, or --encoder-cmd 'CMD {version}' "
                             "--versions A,B")
        protocol, options, workloads = _generated(args)
        seed = workloads[0].seed if workloads else None
        # With --json - standard output is the JSON alone.
        (err if args.json == "-" else console).print(
            f"running {specs[0]} and {specs[1]} on {len(workloads)} workload(s) of {protocol.name} (seed {seed})",
            markup=False)
        if len(args.registry) > 1:
            raise UsageError("with encoders, one --registry: the one both write to")
        with open_registry(args.registry[0] if args.registry else "embedded://") as registry:
            probes = [probe(protocol, spec, options, workloads, None, registry, index=i)
                      for i, spec in enumerate(specs)]
            for p in probes:
                if p.outcome == SKIP:
                    raise UsageError(f"{p.encoder} {p.detail}")
            names = specs
            a, b = (by_partition(p.records) for p in probes)
            reader = AvroReader(registry)
            groups = diff(a, b, ignore=(*DEFAULT_IGNORES, *args.ignore), avro=(reader, reader))
    elif len(args.input) == 2:
        names = list(args.input)
        a, b = load(args.input[0]), load(args.input[1])
        if len(args.registry) > 2:
            raise UsageError("with dumps, one --registry for both or one per dump")
        with contextlib.ExitStack() as stack:
            try:
                regs = [stack.enter_context(open_registry(r)) for r in args.registry]
            except (DumpFormatError, ValueError, OSError) as e:
                raise UsageError(f"--registry: {e}") from None
            readers = [AvroReader(r) for r in regs]
            avro = (readers[0], readers[-1]) if readers else None
            groups = diff(a, b, ignore=(*DEFAULT_IGNORES, *args.ignore), avro=avro)
        framed = any(r.value is not None and r.value[:1] == b"\x00" and len(r.value) >= 5
                     for side in (a, b) for rs in side.values() for r in rs)
        if framed and not regs:
            console.print("note: the values look like framed Avro, compared here as bytes (the same schema id may "
                          "name two schemas in two registries): give each dump's registry (--registry A.json "
                          "--registry B.json) to compare schemas and values", markup=False)
    else:
        raise UsageError("give two dumps (--input A --input B) or two encoders (--encoder A --encoder B)")
    _emit(args.json, lambda: json.dumps({"format": "cdc-conformance/diff", "format_version": 1, "A": names[0],
                                         "B": names[1], "same": not groups,
                                         "groups": [g.to_json() for g in groups]}, indent=2, ensure_ascii=False) + "\n")
    if args.json != "-":
        for line in render_text(groups):
            console.print(line, markup=False)
        console.print(f"{len(groups)} kind(s) of difference" if groups else "the same", markup=False)
    return 1 if groups else 0


def cmd_compare(args: argparse.Namespace) -> int:
    from ..reporting import compare as cmpmod

    result = cmpmod.compare(cmpmod.load(args.old), cmpmod.load(args.new), old_name=args.old, new_name=args.new,
                            strict=args.strict)
    _emit(args.markdown, lambda: cmpmod.markdown(result))
    _emit(args.json, lambda: json.dumps(result.to_json(), indent=2) + "\n")
    if "-" not in (args.markdown, args.json):
        cmpmod.print_terminal(result, console)
    return result.exit_code()
