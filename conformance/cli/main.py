"""The `conformance` command.

Exit codes: 0 everything conforms · 1 a check failed · 2 usage, input or infrastructure error
(the message says who must act).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from ..checks.common import CAPTURE_RECORD_FORMAT, ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from ..checks.registry import Actor, Failure, Location, Outcome, all_checks, get_check
from ..encoders import all_encoders, find_encoder
from ..encoders.spi import ConfigurationError
from ..errors import InfrastructureError, UsageError
from ..infra.urls import redact, redact_text
from ..protocols import DEFAULT_PROTOCOL, PROTOCOLS, all_protocols, get_protocol
from ..protocols.base import ProtocolSuite, describe_options, parse_option_args
from ..reporting import Report, Section, write_reports
from ..reporting.model import runs_with_results, who_acts

EXIT_OK, EXIT_FAIL, EXIT_ERROR = 0, 1, 2

console = Console(highlight=False, soft_wrap=False)
if not console.is_terminal and (console.width or 0) < 120:
    # Logs and CI: a width that keeps the summary table readable.
    console = Console(highlight=False, soft_wrap=False, width=120)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="conformance", description="Protocol conformance suite for CDC encoders.")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="generate workloads, encode them, check everything")
    r.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=sorted(PROTOCOLS))
    r.add_argument("--encoder", default="reference", help="encoder name (see `conformance list`)")
    r.add_argument("--examples", type=int, default=100, help="workloads per option combination (default 100)")
    r.add_argument("--seed", default=None, help="generation seed (default: random, printed)")
    r.add_argument("--shard", type=int, default=0, help="first shard to generate (replay one workload)")
    r.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="pin a protocol option; repeat, or K=V1,V2 for several values")
    r.add_argument("--no-matrix", action="store_true",
                   help="run only the defaults for options not pinned (default: every combination)")
    r.add_argument("--registry", default="embedded://", help="schema registry URL (default embedded://)")
    r.add_argument("--kafka", default="embedded://",
                   help="Kafka: embedded:// (default, librdkafka's mock cluster on 127.0.0.1), container://, "
                        "kafka://host:port, or none (in-memory: no broker, no delivery checks)")
    r.add_argument("--no-spark", action="store_true", help="run the same stages in this process, without Spark")
    r.add_argument("--spark-master", default="local[*]", help="Spark master (default local[*])")
    r.add_argument("--partitions", type=int, default=3, help="partitions per topic (default 3)")
    r.add_argument("--faults", default=None, metavar="SCHEDULE",
                   help="broker faults on the embedded cluster, e.g. broker-down@2s:3s,"
                        "produce-errors@5s:NOT_LEADER_FOR_PARTITION×5 (see docs)")
    r.add_argument("--event-interval", type=float, default=None, metavar="SECONDS",
                   help="pause between source events while a fault schedule runs (default 0.01 with --faults)")
    r.add_argument("--report-dir", default="reports/latest", help="where to write reports (default reports/latest)")
    r.add_argument("--dump-records", default=None, metavar="FILE", help="also write every record as records.jsonl")
    r.add_argument("--encoder-timeout", type=float, default=30.0, help="seconds an encoder call may take")
    r.add_argument("--no-shrink", action="store_true", help="do not shrink failing workloads")
    r.add_argument("--strict", action="store_true", help="SHOULD-level failures also fail the run")

    c = sub.add_parser("check", help="check captured records (records.jsonl) against a registry")
    c.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=sorted(PROTOCOLS))
    c.add_argument("--input", default=None, help="records.jsonl (one JSON object per line)")
    c.add_argument("--kafka", default=None, metavar="URL", help="check live topics instead: kafka://host:port …")
    c.add_argument("--topics", default=None, help="with --kafka: comma-separated topics")
    c.add_argument("--group", default=None,
                   help="with --kafka: start at this consumer group's committed offsets and commit the end")
    c.add_argument("--no-spark", action="store_true", help="with --kafka: read and check in this process")
    c.add_argument("--spark-master", default="local[*]")
    c.add_argument("--registry", default=None,
                   help="registry URL or registry dump file (protocols that use one: ticdc-avro)")
    c.add_argument("--option", action="append", default=[], metavar="K=V", help="protocol option the encoder used")
    c.add_argument("--report-json", default=None, metavar="FILE", help="write the JSON report here")
    c.add_argument("--report-dir", default=None, help="write all reports here")
    c.add_argument("--strict", action="store_true", help="SHOULD-level failures also fail the check")

    ls = sub.add_parser("list", help="list checks and encoders")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--protocol", default=None, choices=sorted(PROTOCOLS))

    ex = sub.add_parser("explain", help="show what a check enforces and which mutant it catches")
    ex.add_argument("check")

    rp = sub.add_parser("reproduce", help="replay a stored reproduction against an encoder")
    rp.add_argument("file")
    rp.add_argument("--encoder", default=None, help="encoder to replay against (default: the one recorded)")
    rp.add_argument("--registry", default="embedded://")

    sv = sub.add_parser("serve", help="run embedded infrastructure until interrupted")
    svs = sv.add_subparsers(dest="what", required=True)
    sr = svs.add_parser("registry", help="a Confluent-compatible Schema Registry on 127.0.0.1")
    sr.add_argument("--host", default="127.0.0.1")
    sr.add_argument("--port", type=int, default=8081)
    sr.add_argument("--auth", default=None, metavar="USER:PASS", help="require HTTP basic auth")
    sr.add_argument("--compatibility", default="BACKWARD")
    sk = svs.add_parser("kafka", help="an embedded Kafka cluster (librdkafka's mock) on 127.0.0.1")
    sk.add_argument("--brokers", type=int, default=3)
    sk.add_argument("--partitions", type=int, default=3, help="partitions of auto-created topics")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return int({"run": cmd_run, "check": cmd_check, "list": cmd_list, "explain": cmd_explain,
                    "reproduce": cmd_reproduce, "serve": cmd_serve}[args.command](args))
    except (UsageError, ConfigurationError) as e:
        err.print(f"[bold red]error:[/] {redact_text(str(e))}")
        _error_report(args, f"usage error: {redact_text(str(e))}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.print("interrupted")
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - last line of defence: a clear message, exit 2
        if isinstance(e, (InfrastructureError, OSError)):
            err.print(f"[bold red]infrastructure error:[/] {redact_text(str(e))}")
            _error_report(args, f"infrastructure error: {redact_text(str(e))}")
            return EXIT_ERROR
        err.print(f"[bold red]internal error in cdc-conformance:[/] {type(e).__name__}: {redact_text(str(e))}")
        err.print("This is a bug in the suite, not in your encoder; please report it with --debug output.")
        _error_report(args, f"internal error in cdc-conformance: {type(e).__name__}: {redact_text(str(e))}")
        if args.debug:
            import traceback

            err.print(redact_text(traceback.format_exc()))
        return EXIT_ERROR


def _error_report(args: argparse.Namespace, message: str) -> None:
    """A run or check that stopped with exit 2 still leaves the reports CI collects, saying why
    (verdict "error"), so that a pipeline shows the reason rather than missing artefacts."""
    if args.command not in ("run", "check"):
        return
    report = Report(args.command, command=_command_line(), errors=[message])
    with contextlib.suppress(OSError):
        if getattr(args, "report_dir", None):
            write_reports(report, args.report_dir)
        if getattr(args, "report_json", None):
            Path(args.report_json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.report_json).write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False, default=str)
                                              + "\n", encoding="utf-8")


# -- helpers -----------------------------------------------------------------------------------

def _options(protocol: ProtocolSuite, pairs: list[str], *, matrix: bool) -> list[dict[str, str]]:
    pinned = parse_option_args(pairs)
    return protocol.matrix(pinned, full=matrix)


def _command_line() -> str:
    return redact_text(" ".join(shlex.quote(a) for a in ["conformance", *sys.argv[1:]]))


def _print_summary(report: Report, paths: dict[str, Path] | None) -> None:
    from rich.table import Table

    data = report.to_json()
    t = Table(title=None, show_lines=False, pad_edge=False)
    for col in ("encoder", "options", "workloads", "records", "passed", "failed", "errored", "n/a·skip", "verdict"):
        t.add_column(col, justify="right" if col in ("workloads", "records", "passed", "failed", "errored",
                                                     "n/a·skip") else "left")
    runs = runs_with_results(data)
    for run in runs:
        oc = [r["outcome"] for r in run["results"]]
        colour = {"pass": "green", "fail": "red", "error": "magenta"}[run["verdict"]]
        t.add_row(run["encoder"], run["label"], str(run["workloads"]), str(run["records"]), str(oc.count("passed")),
                  str(oc.count("failed")), str(oc.count("errored")),
                  str(oc.count("not-applicable") + oc.count("skipped")), f"[{colour}]{run['verdict']}[/]")
    console.print(t)
    shown = 0
    for run in runs:
        repro = {x["check"]: x for x in run.get("reproductions", [])}
        for r in run["results"]:
            if r["outcome"] not in ("failed", "errored") or shown >= 25:
                continue
            shown += 1
            colour = "yellow" if r["level"] == "SHOULD" else "red"
            console.print(f"\n[bold {colour}]✗ {r['check']}[/] [{r['level']}] ({run['label']}) — {r['title']}")
            console.print(f"  [dim]{r['clause']}[/]")
            for f in r.get("failures", [])[:2]:
                console.print(f"  {f['message']}  [dim](×{f.get('count', 1)})[/]")
                console.print(f"    expected: {json.dumps(f.get('expected'), ensure_ascii=False)[:300]}")
                console.print(f"    actual:   {json.dumps(f.get('actual'), ensure_ascii=False)[:300]}")
                loc = ", ".join(f"{k} {v}" for k, v in f.get("location", {}).items())
                if loc:
                    console.print(f"    at: {loc}")
                console.print(f"    {who_acts(f)}", markup=False)
                if "seed" in f:
                    console.print(f"    workload: seed {f['seed']}, shard {f['shard']}")
            for tb in r.get("errors", [])[:1]:
                console.print(f"[magenta]{tb}[/]")
            rp = repro.get(r["check"])
            if rp:
                shrunk = rp.get("shrunk", True)
                what = "shrunk workload" if shrunk else f"workload ({rp.get('note', 'not shrunk')})"
                console.print(f"  [bold]{what}[/] (seed {rp['seed']}, shard {rp['shard']}, {rp['events']} events):")
                lines = rp["sql"].rstrip().splitlines()
                limit = len(lines) if shrunk else 30
                for line in lines[:limit]:
                    console.print(f"    {line}", markup=False)
                if len(lines) > limit:
                    console.print(f"    … {len(lines) - limit} more lines"
                                  + (f" (all of them in {rp['file']})" if rp.get("file") else ""), markup=False)
                console.print(Text.assemble("  replay: ", (rp["command"], "cyan")))
    # A note that every combination shares (the same workloads, the same fault schedule) is
    # printed once; the report keeps each section's own.
    labels: dict[str, list[str]] = {}
    for run in runs:
        for note in run.get("notes", []):
            labels.setdefault(note, []).append(run["label"])
    for note, where in labels.items():
        who = where[0] if len(where) == 1 else (
            f"all {len(where)} combinations" if len(where) == len(runs) else ", ".join(where))
        console.print(f"note ({who}): {note}", style="dim", markup=False)
    for e in data["errors"]:
        err.print(f"[bold magenta]error:[/] {e}")
    if paths:
        console.print(f"\nreports: {paths['html']}  {paths['json']}  {paths['junit']}")
    v = data["verdict"]
    colour = {"pass": "green", "fail": "red", "error": "magenta"}[v]
    console.print(f"[bold {colour}]VERDICT: {v.upper()}[/]")


# -- run ----------------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from ..harness.run import RunPlan, run_plan
    from ..infra.registry import open_registry

    if args.examples < 1:
        raise UsageError("--examples must be at least 1")
    protocol = get_protocol(args.protocol)
    try:
        encoder = find_encoder(args.encoder, protocol.name)
    except LookupError as e:
        raise UsageError(str(e)) from None
    combos = _options(protocol, args.option, matrix=not args.no_matrix)
    if not combos:
        raise UsageError("no valid option combination to run")
    seed: int | str = args.seed if args.seed is not None else random.randrange(1 << 31)
    if isinstance(seed, str) and seed.isdigit():
        seed = int(seed)
    report_dir = Path(args.report_dir)
    plan = RunPlan(protocol=protocol, encoder=encoder, combos=combos, examples=args.examples, seed=seed,
                   encoder_timeout=args.encoder_timeout, shrink=not args.no_shrink,
                   dump_records=Path(args.dump_records) if args.dump_records else None,
                   repro_dir=report_dir / "repro", first_shard=args.shard,
                   # a mutant's workload shape, which makes its defect likely to show
                   shape_overrides=dict(encoder.extra.get("shape") or {}))
    report = Report("run", command=_command_line(), strict=args.strict)
    t0 = time.monotonic()
    mode = "in-memory" if args.kafka.strip().lower() == "none" else ("in-process" if args.no_spark else "spark")
    faults = args.faults
    if faults is None and mode != "in-memory" and encoder.extra.get("faults"):
        faults = str(encoder.extra["faults"])
        console.print(f"[dim]using the fault schedule that exposes {encoder.name}: {faults}[/]")
    if faults and mode == "in-memory":
        raise UsageError("--faults needs a broker: use --kafka embedded://")
    _fault_schedule(faults)  # a bad schedule is a usage error before anything starts
    if encoder.extra.get("needs_kafka") and mode == "in-memory":
        raise UsageError(f"{encoder.name} is a delivery mutant: it needs --kafka (not none)")
    where = "no broker" if mode == "in-memory" else f"Kafka {redact(args.kafka)}, {mode}"
    console.print(f"[bold]{protocol.title}[/] · encoder [cyan]{encoder.name}[/] · seed [bold]{seed}[/] · "
                  f"{args.examples} workload(s) × {len(combos)} option combination(s) · "
                  f"registry {redact(args.registry)} · {where}")
    dump_hint = None
    with open_registry(args.registry) as registry:
        if mode == "in-memory":
            with Progress(TextColumn("[progress.description]{task.description}"), BarColumn(),
                          MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn(), console=console,
                          transient=True, disable=not console.is_terminal) as progress:
                task = progress.add_task("workloads", total=args.examples * len(combos))

                def on_section(s: Section) -> None:
                    progress.update(task, description=f"done: {s.label}")

                report.sections = run_plan(plan, registry, progress=lambda n: progress.advance(task, n),
                                           on_section=on_section)
        else:
            report.sections = _run_over_kafka(args, plan, registry, mode, faults)
        server = getattr(registry, "server", None)
        if plan.dump_records is not None and server is not None:
            # The embedded registry disappears with the run: keep what it held, so that the
            # dumped records can be checked again later with `conformance check`.
            reg_path = plan.dump_records.with_name(plan.dump_records.stem + ".registry.json")
            reg_path.write_text(json.dumps(server.dump(), ensure_ascii=False) + "\n", encoding="utf-8")
            dump_hint = (f"records: {plan.dump_records} (check them again: conformance check --protocol "
                         f"{protocol.name} --input {plan.dump_records} --registry {reg_path}"
                         + "".join(f" --option {k}={v}" for k, v in combos[0].items()
                                   if len(combos) == 1 and k != "profile" and any(
                                       o.name == k and o.default != v for o in protocol.options)) + ")")
    report.duration_s = time.monotonic() - t0
    paths = write_reports(report, report_dir)
    _print_summary(report, paths)
    if dump_hint:
        console.print(dump_hint, markup=False)
    return report.exit_code()


def _client_config(cluster: Any, schedule: Any) -> dict[str, str]:
    """The Kafka client settings of a run: the cluster's, plus the fault-run network settings."""
    from ..infra.faults import FAULT_RUN_CLIENT_CONFIG

    return {**cluster.client_config(), **(FAULT_RUN_CLIENT_CONFIG if schedule is not None else {})}


def _fault_schedule(faults: str | None) -> Any:
    """The parsed --faults schedule (None without one); a bad one is a usage error, found before
    any infrastructure starts."""
    if not faults:
        return None
    from ..infra.faults import FaultSchedule

    try:
        return FaultSchedule.parse(faults)
    except ValueError as e:
        raise UsageError(str(e)) from None


def _registry_url_for_workers(args: argparse.Namespace, registry: Any) -> str:
    """Executors talk to the registry themselves: they need its full URL (credentials included,
    never printed); an embedded registry is reached at the address it listens on."""
    server = getattr(registry, "server", None)
    if server is not None:
        return str(server.url)
    return str(args.registry)


def _run_over_kafka(args: argparse.Namespace, plan: Any, registry: Any, mode: str, faults: str | None
                    ) -> list[Section]:
    from ..harness.run import broker_reproduction, reproduction, shape_for
    from ..harness.stages import RunSpec
    from ..infra.kafka import KafkaUnavailable, consume_all, open_kafka

    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    # Under faults, a steady stream: one event every 10 ms keeps several requests in flight
    # against a slowed broker while the schedule runs.
    interval = args.event_interval if args.event_interval is not None else (0.01 if faults else 0.0)
    schedule = _fault_schedule(faults)
    try:
        cluster = open_kafka(args.kafka)
    except (KafkaUnavailable, ValueError) as e:
        raise UsageError(str(e)) from None
    with cluster:
        if faults and not cluster.supports_faults:
            raise UsageError(f"--faults needs the embedded cluster; {cluster.url} cannot inject faults")
        if schedule is not None and cluster.mock is not None:
            from ..infra.faults import plan as fault_plan

            try:  # broker ids against this cluster, before anything is produced
                fault_plan(schedule, {"topic": 1}, cluster.mock.brokers)
            except ValueError as e:
                raise UsageError(f"--faults: {e}") from None
        run_id = "r" + format(random.randrange(36 ** 5), "x")
        spec = RunSpec(plan.protocol.name, plan.encoder.name, str(plan.encoder.extra.get("sink", "reference")),
                       plan.seed, shape_for(plan), tuple(tuple(sorted(c.items())) for c in plan.combos),
                       tuple(_client_config(cluster, schedule).items()), _registry_url_for_workers(args, registry),
                       partitions=args.partitions, run_id=run_id, encoder_timeout=plan.encoder_timeout,
                       event_interval_s=interval,
                       # production overlaps the whole schedule (and a little after its last fault)
                       pace_s=schedule.duration + 0.5 if schedule is not None else 0.0)
        shards = range(plan.first_shard, plan.first_shard + plan.examples)
        with console.status(f"producing and judging {len(shards) * len(plan.combos)} work unit(s) "
                            f"({'Spark ' + args.spark_master if mode == 'spark' else 'in this process'})…"):
            if mode == "spark":
                from ..harness.pipeline import run_spark
                from ..harness.spark import SparkUnavailable

                try:
                    sections = run_spark(spec, cluster, shards, master=args.spark_master, faults=faults,
                                         log=lambda m: console.print(f"[dim]{m}[/]"))
                except SparkUnavailable as e:
                    raise UsageError(f"{e} (or run with --no-spark)") from None
            else:
                from ..harness.kafka_run import run_units

                sections = run_units(spec, cluster, shards, faults=faults,
                                     log=lambda m: console.print(f"[dim]{m}[/]"))
        if plan.dump_records is not None:
            from ..harness.run import record_line

            topics = sorted(t for t in cluster.topics() if spec.unit_of(t) is not None)
            plan.dump_records.parent.mkdir(parents=True, exist_ok=True)
            with plan.dump_records.open("w", encoding="utf-8") as fh:
                for r in consume_all(cluster, topics):  # streamed: the driver holds one record at a time
                    fh.write(record_line(r) + "\n")
    # Replaying one shard over Kafka: the same broker kind, faults and partitions, in this process.
    run_args = " ".join(["--kafka", shlex.quote(redact(args.kafka)), "--partitions", str(args.partitions),
                         "--no-spark", *(["--faults", shlex.quote(faults)] if faults else [])])
    for ci, sec in enumerate(sections):
        for t in sec.tally:
            if t.outcome is not Outcome.FAILED or not t.failures:
                continue
            shard = next(iter(t.failures.values())).workload
            if shard is None:
                continue
            if t.id.startswith("delivery."):
                sec.reproductions.append(broker_reproduction(plan, ci, sec.options, t.id, shard[1], shape_for(plan),
                                                             run_args=run_args))
            elif not t.id.startswith("infra.") and plan.encoder.extra.get("needs_kafka") is None:
                sec.reproductions.append(reproduction(plan, ci, sec.options, registry, t.id, shard[1], shape_for(plan)))
    return sections


# -- check --------------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..harness.capture import (
        BadLine,
        DeliveryLogs,
        DeliverySummary,
        count_lines,
        finish_log_only,
        prepare_log_only,
        read_records,
    )
    from ..harness.local import make_tally
    from ..infra.registry import DumpFormatError, open_registry

    protocol = get_protocol(args.protocol)
    pinned = {k: v[0] for k, v in parse_option_args(args.option).items()}
    options = protocol.resolve_options(pinned)
    if (args.input is None) == (args.kafka is None):
        raise UsageError("check needs exactly one of --input FILE (a capture) or --kafka URL --topics T1,T2")
    if args.kafka is not None:
        return _check_kafka(args, protocol, options)
    path = Path(args.input)
    if path.is_dir():
        raise UsageError(f"--input {path} is a directory; pass a records.jsonl capture file")
    if not path.is_file():
        raise UsageError(f"input file {path} does not exist (pass a records.jsonl capture with --input)")
    registry_spec = _registry_arg(args, protocol)
    if registry_spec is not None and not registry_spec.startswith(("http://", "https://", "embedded://",
                                                                   "container://")) \
            and not Path(registry_spec).is_file():
        raise UsageError(f"--registry {redact(registry_spec)} is neither an http(s):// URL nor an existing "
                         "registry dump file")
    tally = make_tally(protocol)
    for cid in (ENCODER_NO_CRASH, ENCODER_RESPONSIVE):
        tally.skip(cid, "captured records: there is no encoder to call")
    prepare_log_only(tally, protocol.name)  # delivery from the log alone: what needs no workload
    delivery = DeliverySummary()
    t0 = time.monotonic()
    total = count_lines(path)
    report = Report("check", command=_command_line(), strict=args.strict)
    section = Section(protocol.name, f"capture:{path.name}", "capture", options,
                      describe_options(options, protocol), tally)
    report.sections.append(section)
    try:
        with (open_registry(registry_spec) if registry_spec is not None else contextlib.nullcontext()) as registry:
            checker = protocol.checker(options, registry, tally, with_source=False)  # type: ignore[attr-defined]
            logs = DeliveryLogs(protocol.name, options, registry)
            with Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                          console=console, transient=True, disable=not console.is_terminal) as progress:
                task = progress.add_task("records", total=total)
                for n, item in read_records(path):
                    if isinstance(item, BadLine):
                        tally.fail(CAPTURE_RECORD_FORMAT, Failure(
                            f"line {item.line}: {item.problem}", expected="records.jsonl format v1",
                            actual=item.excerpt, location=Location(line=item.line), actor=Actor.CAPTURE,
                            hint="fix the tool that wrote the capture; this line was not checked"))
                    else:
                        tally.passed(CAPTURE_RECORD_FORMAT)
                        section.records += 1
                        checker.check_record(item, Location(topic=item.topic, partition=item.partition,
                                                            offset=item.offset, line=n))
                        logs.add_record(item)
                    if n % 2048 == 0:
                        progress.update(task, completed=n)
            checker.finish()
            delivery = logs.judge(tally)
    except (DumpFormatError, ValueError) as e:
        # A malformed dump, or a registry URL that does not parse (a port that is not a number…).
        raise UsageError(str(e)) from None
    except InfrastructureError as e:
        report.errors.append(f"infrastructure error: {redact_text(str(e))}")
    if section.records == 0 and not report.errors:
        # A gate that passes on nothing hides a broken capture: say so, and do not pass.
        bad = tally.checks[CAPTURE_RECORD_FORMAT].failed if CAPTURE_RECORD_FORMAT in tally.checks else 0
        if not bad:
            report.errors.append(f"{path} holds no records: nothing was checked (who must act: whoever wrote the "
                                 "capture)")
    finish_log_only(tally, protocol.name)
    section.notes.extend(delivery.notes())
    section.workloads = 0
    section.duration_s = report.duration_s = time.monotonic() - t0
    paths = None
    if args.report_dir:
        paths = write_reports(report, args.report_dir)
    if args.report_json:
        Path(args.report_json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report_json).write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False, default=str)
                                          + "\n", encoding="utf-8")
    console.print(f"checked {section.records} records from {path} in {section.duration_s:.1f} s")
    _print_summary(report, paths)
    return report.exit_code()


def _registry_arg(args: argparse.Namespace, protocol: ProtocolSuite) -> str | None:
    """--registry, required by the protocols that use a registry and ignored by the others."""
    needs = protocol.needs_registry()  # type: ignore[attr-defined]
    if needs and args.registry is None:
        raise UsageError(f"{protocol.name} needs --registry (the registry's URL, or a registry dump file)")
    return args.registry if needs else None


def _check_kafka(args: argparse.Namespace, protocol: ProtocolSuite, options: dict[str, str]) -> int:
    from ..harness.capture import DeliverySummary, finish_log_only
    from ..harness.check_kafka import CheckSpec, check_local, check_spark, commit, starting_offsets
    from ..harness.kafka_source import plan_ranges
    from ..infra.kafka import KafkaUnavailable, open_kafka
    from ..infra.registry import RegistryClient

    if not args.topics:
        raise UsageError("--kafka needs --topics T1[,T2…]")
    registry_url = _registry_arg(args, protocol)
    if registry_url is not None and not registry_url.startswith(("http://", "https://")):
        raise UsageError("with --kafka, --registry must be the live registry's http(s):// URL")
    topics = [t.strip() for t in args.topics.split(",") if t.strip()]
    t0 = time.monotonic()
    try:
        cluster = open_kafka(args.kafka)
    except (KafkaUnavailable, ValueError) as e:
        raise UsageError(str(e)) from None
    if registry_url is not None:
        RegistryClient(registry_url).check_root()
    report = Report("check", command=_command_line(), strict=args.strict)
    with cluster:
        config = cluster.client_config()
        rest = {k: v for k, v in config.items() if k != "bootstrap.servers"}
        known = set(cluster.topics())
        missing = [t for t in topics if t not in known]
        if missing:
            raise UsageError(f"no such topic(s) on {cluster.url}: {', '.join(missing)}")
        starts = starting_offsets(config, topics, args.group)
        ranges = plan_ranges(config["bootstrap.servers"], topics, rest,
                             starting={t: {p: o for (tt, p), o in starts.items() if tt == t} for t in topics}
                             if starts else None)
        spec = CheckSpec(protocol.name, tuple(sorted(options.items())), registry_url or "")
        with console.status(f"checking {sum(r.count for r in ranges)} record(s) in {len(ranges)} partition(s)…"):
            delivery = DeliverySummary()
            if args.no_spark:
                tally, n = check_local(spec, config, ranges, delivery=delivery)
            else:
                tally, n = check_spark(spec, config, ranges, args.spark_master, delivery=delivery)
            finish_log_only(tally, protocol.name)
        if args.group:
            commit(config, args.group, {(r.topic, r.partition): r.high for r in ranges})
    section = Section(protocol.name, f"kafka:{','.join(topics)}", "capture", options,
                      describe_options(options, protocol), tally, records=n)
    section.notes.extend(delivery.notes())
    section.duration_s = report.duration_s = time.monotonic() - t0
    report.sections.append(section)
    paths = write_reports(report, args.report_dir) if args.report_dir else None
    if args.report_json:
        Path(args.report_json).write_text(json.dumps(report.to_json(), indent=1, ensure_ascii=False, default=str)
                                          + "\n", encoding="utf-8")
    if n == 0 and args.group:
        section.notes.append(f"no new records since group {args.group}'s committed offsets")
    elif n == 0:
        report.errors.append(f"the topics {', '.join(topics)} hold no records: nothing was checked")
    console.print(f"checked {n} records of {', '.join(topics)} in {section.duration_s:.1f} s")
    _print_summary(report, paths)
    return report.exit_code()


# -- list / explain -----------------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    checks = all_checks(args.protocol)
    encs = all_encoders(args.protocol)
    if args.json:
        out = {"checks": [{"id": c.id, "level": c.level.value, "clause": c.clause, "protocol": c.protocol,
                           "scope": c.scope.value, "title": c.title,
                           **({"docs_vs_code": c.docs_vs_code} if c.docs_vs_code else {})} for c in checks],
               "encoders": [{"name": e.name, "protocol": e.protocol, "kind": e.kind.value,
                             **({"catches": e.catches} if e.catches else {}),
                             **({"needs_options": dict(e.needs_options)} if e.needs_options else {}),
                             "description": e.description} for e in encs],
               "profile_switches": [{"protocol": p.name, "option": o.name, "default": o.default,
                                     "choices": list(o.choices or ()), "doc": o.doc}
                                    for p in all_protocols() if args.protocol in (None, p.name)
                                    for o in p.options if o.kind == "profile switch"]}
        sys.stdout.write(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
        return EXIT_OK
    from rich.table import Table

    t = Table(title=f"{len(checks)} checks")
    for col in ("id", "level", "scope", "what it enforces"):
        t.add_column(col)
    for c in checks:
        t.add_row(c.id, c.level.value, c.scope.value, c.title)
    console.print(t)
    disagreements = [c for c in checks if c.docs_vs_code]
    switches = [(p.name, o) for p in all_protocols() if args.protocol in (None, p.name)
                for o in p.options if o.kind == "profile switch"]
    if disagreements or switches:
        t3 = Table(title="where the docs and the code disagree")
        for col in ("check or switch", "what each says"):
            t3.add_column(col)
        for c in disagreements:
            t3.add_row(c.id, c.docs_vs_code or "")
        for pname, o in switches:
            t3.add_row(f"{pname} --option {o.name}={'|'.join(o.choices or ())}", o.doc)
        console.print(t3)
    t2 = Table(title=f"{len(encs)} encoders")
    for col in ("name", "kind", "caught by"):
        t2.add_column(col)
    for e in encs:
        t2.add_row(e.name, e.kind.value, e.catches or "")
    console.print(t2)
    return EXIT_OK


def cmd_explain(args: argparse.Namespace) -> int:
    try:
        c = get_check(args.check)
    except KeyError:
        raise UsageError(f"no check {args.check!r}; see `conformance list`") from None
    console.print(f"[bold]{c.id}[/]  [{c.level.value}]  scope: {c.scope.value}  protocol: {c.protocol}")
    console.print(c.doc)
    console.print(f"[dim]clause:[/] {c.clause}")
    if c.needs_options:
        console.print(f"[dim]applies with:[/] {', '.join(f'{k}={v}' for k, v in c.needs_options)}")
    mutants = [e for e in all_encoders() if e.catches == c.id]
    for m in mutants:
        console.print(f"[dim]caught mutant:[/] {m.name} — {m.description}")
    return EXIT_OK


# -- reproduce ----------------------------------------------------------------------------------

def cmd_reproduce(args: argparse.Namespace) -> int:
    from ..harness.local import Guard, make_tally, run_workload
    from ..infra.registry import open_registry
    from ..model.serde import WorkloadFormatError, workload_from_json

    path = Path(args.file)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != "cdc-conformance/reproduction":
            raise UsageError(f"{path} is not a cdc-conformance reproduction file")
        if data.get("format_version") != 1:
            raise UsageError(f"{path} has format_version {data.get('format_version')!r}; this suite reads 1")
        workload = workload_from_json(data["workload"])
    except (OSError, ValueError, KeyError, WorkloadFormatError) as e:
        raise UsageError(f"cannot read reproduction {path}: {e}") from None
    protocol = get_protocol(data["protocol"])
    try:
        encoder = find_encoder(args.encoder or data["encoder"], protocol.name)
    except LookupError as e:
        raise UsageError(str(e)) from None
    options = protocol.resolve_options({k: v for k, v in data["options"].items() if k != "profile"})
    tally = make_tally(protocol)
    guard = Guard(30.0)
    console.print(f"replaying {path.name}: {len(workload.events)} events, target check {data['check']}, "
                  f"encoder {encoder.name}")
    console.print(workload.sql(), markup=False)
    with open_registry(args.registry) as registry:
        try:
            res = run_workload(protocol, encoder, options, registry, workload, tally,
                               topic_prefix=f"repro{int(time.time())}-", guard=guard)
        finally:
            guard.close()
    report = Report("reproduce", [Section(protocol.name, encoder.name, encoder.kind.value, options,
                                          describe_options(options, protocol), tally, workloads=1,
                                          records=res.records)])
    _print_summary(report, None)
    still = tally.checks[data["check"]].outcome is Outcome.FAILED
    console.print(f"target check {data['check']}: {'[red]still fails[/]' if still else '[green]passes now[/]'}")
    return report.exit_code()


# -- serve --------------------------------------------------------------------------------------

def cmd_serve(args: argparse.Namespace) -> int:
    if args.what == "kafka":
        from ..infra.kafka import serve_kafka

        serve_kafka(args.brokers, args.partitions, lambda bootstrap: console.print(
            f"Kafka (embedded, {args.brokers} brokers) listening on {bootstrap} — Ctrl-C to stop; "
            "each partition keeps only its newest ~5 MiB"))
        return EXIT_OK
    from ..infra.registry import serve

    auth = None
    if args.auth:
        if ":" not in args.auth:
            raise UsageError("--auth needs USER:PASS")
        u, p = args.auth.split(":", 1)
        auth = (u, p)

    def ready(url: str) -> None:
        console.print(f"Schema Registry listening on {url}{' (basic auth on)' if auth else ''} — Ctrl-C to stop")

    serve(args.host, args.port, auth, args.compatibility, ready)
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
