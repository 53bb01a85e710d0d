"""The `conformance` command.

Exit codes: 0 everything conforms · 1 a check failed · 2 usage, input or infrastructure error
(the message says who must act).

This module turns arguments into a plan and picks the infrastructure and the runner; the
stages, the runners and the reproduction policy live in `conformance.harness`, the terminal
summary in `conformance.reporting.terminal`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import shlex
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from ..checks.registry import Outcome
from ..encoders import all_encoders
from ..encoders.spi import ConfigurationError, EncoderInfo
from ..errors import InfrastructureError, UsageError
from ..infra.urls import redact, redact_text
from ..protocols import ProtocolNames, all_checks, all_protocols, default_protocol, get_check
from ..protocols.base import ProtocolSuite, describe_options, parse_option_args
from ..reporting import Report, Section, write_json, write_reports
from ..reporting.terminal import print_summary
from .against import _check_against, _combo_filter, _export_arg
from .common import (
    EXIT_ERROR,
    EXIT_OK,
    _command_line,
    _encoder,
    _progress,
    _protocol,
    _reproduction,
    _upstream,
    console,
    err,
)
from .provenance import stamp
from .regress import cmd_baseline, cmd_bisect, cmd_compare, cmd_diff
from .site import add_site_parser, cmd_site


class _DefaultProtocol:
    """`--protocol`'s default before parsing: which protocol is the default is known only by
    loading every one, so `main` looks it up only where the option was left out."""

    def __repr__(self) -> str:
        return "<the default protocol>"


DEFAULT_PROTOCOL: Any = _DefaultProtocol()
#: `--protocol`'s choices: checking a name loads that protocol alone (see `ProtocolNames`).
PROTOCOLS = ProtocolNames()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="conformance", description="Protocol conformance suite for CDC encoders.")
    p.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="generate workloads, encode them, check everything")
    r.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=PROTOCOLS)
    r.add_argument("--encoder", default="reference", help="encoder name (see `conformance list`)")
    r.add_argument("--encoder-cmd", default=None, metavar="COMMAND",
                   help="run a command as the encoder, in any language, through the subprocess protocol "
                        "(docs/subprocess-encoders.md); the same as --encoder 'cmd:COMMAND'")
    r.add_argument("--tool-cmd", default=None, metavar="COMMAND",
                   help="run a whole CDC tool that reads --upstream and writes to Kafka itself, per workload; "
                        "placeholders {upstream} {host} {port} {user} {password} {database} {kafka} {registry} "
                        "{topic_prefix} {option:NAME} (docs/tools.md); the same as --encoder 'tool:COMMAND'")
    _generation_args(r, 100, "workloads per option combination")
    r.add_argument("--connector-config", default=None, metavar="FILE",
                   help="the tool's own configuration (a Kafka Connect connector's JSON or .properties): its "
                        "properties that are protocol options become them; --option wins")
    r.add_argument("--option", action="append", default=[], metavar="K=V",
                   help="pin a protocol option; repeat, or K=V1,V2 for several values")
    r.add_argument("--no-matrix", action="store_true",
                   help="run only the defaults for options not pinned (default: every combination)")
    r.add_argument("--registry", default="embedded://", help="schema registry URL (default embedded://)")
    r.add_argument("--upstream", default="none", metavar="URL",
                   help="a real database server the workloads are applied to, whose change log feeds the encoder: "
                        "none (default), embedded-mariadb, embedded-postgres, mariadb://user:pass@host:port, "
                        "postgresql://user:pass@host:port/db, container://mariadb|postgres")
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
    r.add_argument("--examples-db", default=None, metavar="DIR",
                   help="where failing examples are kept and replayed first on the next run of the same protocol and "
                        "encoder (default .conformance, or $CONFORMANCE_EXAMPLES_DB; 'off' turns it off)")
    r.add_argument("--no-examples-db", action="store_true", help="neither replay nor keep failing examples")
    r.add_argument("--strict", action="store_true", help="SHOULD-level failures also fail the run")
    _baseline_args(r)

    c = sub.add_parser("check", help="judge a captured or live topic (a dump, --kafka), alone or against --workload")
    c.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=PROTOCOLS)
    c.add_argument("--input", default=None, help="records.jsonl (one JSON object per line)")
    c.add_argument("--kafka", default=None, metavar="URL", help="check live topics instead: kafka://host:port …")
    c.add_argument("--topics", default=None, help="with --kafka: comma-separated topics")
    c.add_argument("--group", default=None,
                   help="with --kafka: start at this consumer group's committed offsets and commit the end")
    c.add_argument("--no-spark", action="store_true", help="with --kafka: read and check in this process")
    c.add_argument("--spark-master", default="local[*]")
    c.add_argument("--registry", default=None,
                   help="registry URL or registry dump file (for protocols that use a registry)")
    c.add_argument("--option", action="append", default=[], metavar="K=V", help="protocol option the encoder used")
    c.add_argument("--connector-config", default=None, metavar="FILE",
                   help="the configuration the tool ran with (a Kafka Connect connector's JSON or .properties): "
                        "its properties that are protocol options become them; --option wins")
    c.add_argument("--report-json", default=None, metavar="FILE", help="write the JSON report here")
    c.add_argument("--report-dir", default=None, help="write all reports here")
    c.add_argument("--strict", action="store_true", help="SHOULD-level failures also fail the check")
    c.add_argument("--complete", action="store_true",
                   help="each partition holds everything the tool wrote to it (a finished run's dump, topics read "
                        "after the tool stopped): what must follow a message (a delete's tombstone) is decided at "
                        "the end of the capture too")
    c.add_argument("--workload", default=None, metavar="FILE",
                   help="the workload the capture was made from (conformance workload --out FILE, applied to your "
                        "deployment; or a run's dump with the same flags): the capture is also judged against it, "
                        "as a run judges its own output")
    c.add_argument("--upstream", default="none", metavar="URL",
                   help="with --workload: the truth from a server of the source's family that applies the file "
                        "(embedded-mariadb, embedded-postgres, or a URL): what its change log says each statement "
                        "did; without it the suite's model of the workload is the truth, as in a run without one")
    c.add_argument("--since", default=None, metavar="POSITION",
                   help="with --workload and --upstream URL: that server is the one your deployment read, the file "
                        "already applied to it; its log from POSITION is the truth, its ids then checked rather than "
                        "adopted. MariaDB: FILE:POS (SHOW MASTER STATUS) or a GTID state (@@gtid_binlog_pos), taken "
                        "before applying the file; PostgreSQL: slot:NAME[:PUBLICATION], a pgoutput slot of its own "
                        "(and a publication) made before applying it")
    c.add_argument("--jobs", type=_jobs_arg, default=None, metavar="N",
                   help="with --input: check the capture in N processes, whole topics each (default on Linux: one per "
                        "core for a capture of 4 MiB or more, else 1; counts and outcomes are those of one process)")
    c.add_argument("--combo", type=int, default=None, metavar="N",
                   help="a run's dump of several option combinations: judge the one made with the options given here "
                        "(the c<N> of its topics' prefix; the run's closing line names each)")
    _baseline_args(c)

    ls = sub.add_parser("list", help="list checks and encoders")
    ls.add_argument("--json", action="store_true")
    ls.add_argument("--protocol", default=None, choices=PROTOCOLS)

    ex = sub.add_parser("explain", help="show what a check enforces and which mutant it catches")
    ex.add_argument("check")

    rp = sub.add_parser("reproduce", help="replay a stored reproduction against an encoder")
    rp.add_argument("file")
    rp.add_argument("--encoder", default=None, help="encoder to replay against (default: the one recorded)")
    rp.add_argument("--encoder-cmd", default=None, metavar="COMMAND",
                    help="replay against a command (the subprocess protocol): the same as --encoder 'cmd:COMMAND'")
    rp.add_argument("--registry", default="embedded://")
    rp.add_argument("--bisect-exit", action="store_true",
                    help="for `git bisect run`: exit 0 when the example passes, 1 when it fails, 125 when the encoder "
                         "cannot be found, built or started")

    bs = sub.add_parser("bisect", help="find the first encoder version that fails an example",
                        description="Given encoder versions oldest first and a failing example, check that the first "
                                    "passes and the last fails, then find the first failing version in about "
                                    "log2(n) runs, stepping around versions that cannot start; print it, the last "
                                    "good one and what differs between their outputs on the example.")
    bs.add_argument("--encoder-cmd", default=None, metavar="COMMAND", help="a command with {version} in it")
    bs.add_argument("--versions", default=None, metavar="V1,V2,…",
                    help="with --encoder-cmd: the versions, oldest first")
    bs.add_argument("--encoders-file", default=None, metavar="FILE",
                    help="one encoder per line, oldest first, as --encoder takes it (cmd:…, a name)")
    bs.add_argument("--repro", default=None, metavar="FILE", help="the example: a reproduction file from a report")
    bs.add_argument("--protocol", default=None, choices=PROTOCOLS, help="the example, generated: its protocol")
    _generation_args(bs, 1, "… how many workloads")
    bs.add_argument("--option", action="append", default=[], metavar="K=V", help="… an option it runs under")
    bs.add_argument("--check", default=None, help="the check that tells bad from good (default: any MUST check)")
    bs.add_argument("--registry", default="embedded://")
    bs.add_argument("--json", default=None, metavar="FILE", help="also write first_bad, last_good and runs as JSON")

    wl = sub.add_parser("workload", help="write the workloads `run` would generate, as SQL to apply to a deployment",
                        description="The very workloads `conformance run` generates with the same flags, as one SQL "
                                    "file in the source's dialect (each workload in databases of its own), for a "
                                    "deployment of your own (TiDB + TiCDC, MariaDB + MaxScale, PostgreSQL + "
                                    "Debezium). Lines starting with --@ carry the suite's model of each workload.")
    wl.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=PROTOCOLS)
    wl.add_argument("--encoder", default="reference", help="the encoder whose workload shape to use (a mutant's, "
                                                            "a tool's; default reference)")
    wl.add_argument("--upstream", default="none", metavar="URL",
                    help="the kind of server the workloads are for (its dialect; nothing is started): "
                         "embedded-mariadb, embedded-postgres, mariadb://…, postgresql://…; default: the "
                         "protocol's own source")
    _generation_args(wl, 10, "workloads")
    wl.add_argument("--option", action="append", default=[], metavar="K=V",
                    help="a protocol option, as for run (checked; workloads do not depend on options)")
    wl.add_argument("--out", default=None, metavar="FILE", help="write here (default: standard output)")

    bl = sub.add_parser("baseline", help="keep a baseline of expected failures (--baseline FILE)")
    bls = bl.add_subparsers(dest="what", required=True)
    bu = bls.add_parser("update", help="add a report's failures to a baseline and prune its stale entries",
                        description="Add every failure of the report that no entry covers (one entry per check, "
                                    "or per combination where the check did not fail in all of them), and remove "
                                    "the entries the report shows stale. Creates the file if it does not exist.")
    bu.add_argument("--report", required=True, metavar="REPORT.json")
    bu.add_argument("--baseline", required=True, metavar="FILE")
    bu.add_argument("--reason", default="", help="why these failures are expected")
    bu.add_argument("--ticket", default=None, metavar="URL", help="where the defect is tracked")
    bu.add_argument("--expires", default=None, metavar="YYYY-MM-DD", help="after this date they fail again")

    df = sub.add_parser("diff", help="what two outputs wrote differently (encoders or dumps), grouped by kind",
                        description="Run two encoders (--encoder A --encoder B, or --encoder-cmd 'CMD {version}' "
                                    "--versions A,B) on the same generated workloads, or take two dumps of records "
                                    "(run --dump-records, or captures of two versions of a tool on the same SQL), and "
                                    "compare what they wrote message by message: topics, counts, order, keys, JSON "
                                    "fields added or dropped, types and values that changed. Exit 0 when they are the "
                                    "same, 1 when they differ, 2 on unusable input.")
    df.add_argument("--input", action="append", default=[], metavar="FILE", help="a dump; give two")
    df.add_argument("--encoder", action="append", default=[], metavar="NAME",
                    help="an encoder as run takes it (a name, cmd:…); give two")
    df.add_argument("--encoder-cmd", default=None, metavar="COMMAND", help="a command with {version} in it")
    df.add_argument("--versions", default=None, metavar="A,B", help="with --encoder-cmd: the two versions")
    df.add_argument("--protocol", default=DEFAULT_PROTOCOL, choices=PROTOCOLS,
                    help="with encoders: the workloads' protocol")
    _generation_args(df, 20, "with encoders: how many workloads")
    df.add_argument("--option", action="append", default=[], metavar="K=V", help="with encoders: an option both run "
                                                                                  "under")
    df.add_argument("--registry", action="append", default=[], metavar="URL|FILE",
                    help="where framed Avro is read: with encoders, the registry both write to (default embedded://); "
                         "with dumps, one registry or dump for both, or one per dump (A's first)")
    df.add_argument("--ignore", action="append", default=[], metavar="PATTERN",
                    help="a JSON path pattern to leave out (wall-clock fields are left out already)")
    df.add_argument("--json", default=None, metavar="FILE", help="also write the groups as JSON; - for stdout")

    cp = sub.add_parser("compare", help="what changed between two reports (new failures, fixed, …)",
                        description="Compare two report.json files per encoder × option combination × check. "
                                    "Exit 1 when a check newly fails (as the newer report's verdict counts it), "
                                    "0 otherwise, 2 on unusable input.")
    cp.add_argument("old", metavar="OLD.json")
    cp.add_argument("new", metavar="NEW.json")
    cp.add_argument("--markdown", metavar="FILE", default=None,
                    help="also write the comparison as Markdown (a PR comment, $GITHUB_STEP_SUMMARY); - for stdout")
    cp.add_argument("--json", metavar="FILE", default=None, help="also write the comparison as JSON; - for stdout")
    cp.add_argument("--strict", action="store_true", help="a SHOULD check that newly fails gates too")

    add_site_parser(sub)
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
    if getattr(args, "protocol", None) is DEFAULT_PROTOCOL:
        args.protocol = default_protocol()
    try:
        return int({"run": cmd_run, "check": cmd_check, "list": cmd_list, "explain": cmd_explain,
                    "reproduce": cmd_reproduce, "serve": cmd_serve, "compare": cmd_compare,
                    "baseline": cmd_baseline, "workload": cmd_workload,
                    "diff": cmd_diff, "bisect": cmd_bisect, "site": cmd_site}[args.command](args))
    except (UsageError, ConfigurationError) as e:
        err.print(f"[bold red]error:[/] {redact_text(str(e))}")
        _error_report(args, f"usage error: {redact_text(str(e))}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        err.print("interrupted")
        _error_report(args, "interrupted", interrupted=True)
        return EXIT_ERROR
    except (InfrastructureError, OSError) as e:
        err.print(f"[bold red]infrastructure error:[/] {redact_text(str(e))}")
        _error_report(args, f"infrastructure error: {redact_text(str(e))}")
        return EXIT_ERROR
    except Exception as e:  # noqa: BLE001 - last line of defence: a clear message, exit 2
        err.print(f"[bold red]internal error in cdc-conformance:[/] {type(e).__name__}: {redact_text(str(e))}")
        err.print("This is a bug in the suite, not in your encoder; please report it with --debug output.")
        _error_report(args, f"internal error in cdc-conformance: {type(e).__name__}: {redact_text(str(e))}")
        if args.debug:
            import traceback

            err.print(redact_text(traceback.format_exc()))
        return EXIT_ERROR


def _error_report(args: argparse.Namespace, message: str, interrupted: bool = False) -> None:
    """A run or check that stopped with exit 2 still leaves the reports CI collects, saying why
    (verdict "error"), so that a pipeline shows the reason rather than missing artefacts."""
    if args.command not in ("run", "check"):
        return
    _write(args, stamp(Report(args.command, command=_command_line(), errors=[message], interrupted=interrupted), args))


def _write(args: argparse.Namespace, report: Report) -> dict[str, Path] | None:
    """Write the reports the arguments ask for (errors writing them are not the run's verdict)."""
    paths = None
    with contextlib.suppress(OSError):
        if getattr(args, "report_dir", None):
            paths = write_reports(report, args.report_dir)
        if getattr(args, "report_json", None):
            write_json(report, args.report_json)
    return paths


# -- helpers -----------------------------------------------------------------------------------

def _fitting(protocol: ProtocolSuite, combos: list[dict[str, str]], pinned: Mapping[str, Any]
             ) -> tuple[list[dict[str, str]], list[str]]:
    """The combinations generated workloads can run under; a refused one that was asked for is
    a usage error, an expanded one is left out (and said)."""
    keep, out = [], []
    for c in combos:
        why = protocol.generation_fits(c)
        if why is None:
            keep.append(c)
        elif all(c.get(k) == protocol.option(k).default for k in c
                 if k not in pinned and k != "profile" and not protocol.option(k).cycle):
            raise UsageError(why)
        else:
            out.append(why)
    return keep, sorted(set(out))


def _pinned(args: argparse.Namespace, protocol: ProtocolSuite) -> dict[str, list[str]]:
    """--option values over those of --connector-config."""
    pinned: dict[str, list[str]] = {}
    if args.connector_config:
        from ..protocols.connector_config import read_connector_config

        taken = protocol.connector_options(read_connector_config(args.connector_config))
        pinned = {k: [v] for k, v in taken.options.items()}
        console.print(f"[dim]--connector-config: {len(taken.options)} option(s) taken"
                      f"{': ' + ', '.join(f'{k}={v}' for k, v in taken.options.items()) if taken.options else ''}[/]")
        if taken.not_modelled:
            console.print(f"[yellow]--connector-config: not modelled by the {protocol.name} checks (they assume the "
                          f"defaults): {', '.join(sorted(taken.not_modelled))}[/]")
    pinned.update(parse_option_args(args.option))
    return pinned


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


def _open_kafka(url: str) -> Any:
    from ..infra.kafka import KafkaUnavailable, open_kafka

    try:
        return open_kafka(url)
    except (KafkaUnavailable, ValueError) as e:
        raise UsageError(str(e)) from None


# -- run ----------------------------------------------------------------------------------------

def cmd_run(args: argparse.Namespace) -> int:
    from ..harness.run import RunPlan, supported_combos, with_needed_options
    from ..infra.registry import open_registry

    if args.examples < 1:
        raise UsageError("--examples must be at least 1")
    if args.partitions < 1:
        raise UsageError("--partitions must be at least 1")
    protocol = _protocol(args.protocol)
    if args.encoder_cmd and args.tool_cmd:
        raise UsageError("--encoder-cmd and --tool-cmd each name the encoder: give one")
    encoder = _encoder(f"cmd:{args.encoder_cmd}" if args.encoder_cmd else
                       f"tool:{args.tool_cmd}" if args.tool_cmd else args.encoder, protocol)
    pinned = with_needed_options(encoder, _pinned(args, protocol))
    combos, left_out = supported_combos(encoder, protocol.matrix(pinned, full=not args.no_matrix), pinned)
    combos, unfit = _fitting(protocol, combos, pinned)
    left_out += unfit
    if not combos:
        raise UsageError("no valid option combination to run")
    seed: int | str = args.seed if args.seed is not None else random.randrange(1 << 31)
    if isinstance(seed, str) and seed.isdigit():
        seed = int(seed)
    report_dir = Path(args.report_dir)
    mode = "memory" if args.kafka.strip().lower() == "none" else ("kafka" if args.no_spark else "spark")
    faults = args.faults
    if faults is None and mode != "memory" and encoder.faults:
        faults = encoder.faults
        console.print(f"[dim]using the fault schedule that exposes {encoder.name}: {faults}[/]")
    if faults and mode == "memory":
        raise UsageError("--faults needs a broker: use --kafka embedded://")
    _fault_schedule(faults)
    if encoder.needs_broker and mode == "memory":
        raise UsageError(f"{encoder.name} is a delivery mutant whose defect shows under broker faults: "
                         "it needs --kafka (not none)")
    if encoder.needs_server and args.upstream.strip().lower() in ("", "none"):
        server = "embedded-postgres" if protocol.capabilities.dialect == "postgresql" else "embedded-mariadb"
        raise UsageError(f"{encoder.name}'s defect shows only against a server's change log (its ids): it needs "
                         f"--upstream ({server})")
    plan = RunPlan(protocol=protocol, encoder=encoder, combos=combos, examples=args.examples, seed=seed,
                   encoder_timeout=args.encoder_timeout, shrink=not args.no_shrink, repro_dir=report_dir / "repro",
                   first_shard=args.shard)
    report = Report("run", command=_command_line(), strict=args.strict, **_baseline(args))
    plan.examples_db = _examples_db(args, protocol, encoder)
    if left_out:
        console.print(f"[dim]{encoder.name} does not support {len(left_out)} combination(s) of the matrix, left out: "
                      f"{'; '.join(left_out[:4])}{' …' if len(left_out) > 4 else ''}[/]")
    t0 = time.monotonic()
    where = "no broker (in-memory log)" if mode == "memory" else f"Kafka {redact(args.kafka)}, " + (
        "in this process" if mode == "kafka" else f"Spark {args.spark_master}")
    console.print(f"[bold]{protocol.title}[/] · encoder [cyan]{encoder.name}[/] · seed [bold]{seed}[/] · "
                  f"{args.examples} workload(s) × {len(combos)} option combination(s) · "
                  f"registry {redact(args.registry)} · {where}")
    dump_path = Path(args.dump_records) if args.dump_records else None
    with open_registry(args.registry) as registry, _dump_file(dump_path) as dump, \
            _upstream(args.upstream, plan) as upstream_url:
        plan.spec_fields["upstream"] = upstream_url
        if mode == "memory":
            report.sections = _run_in_memory(plan, registry, _registry_url_for_workers(args, registry), dump)
        else:
            report.sections = _run_over_kafka(args, plan, registry, mode, faults, dump)
        hint = _dump_registry(plan, protocol, combos, registry, dump_path)
    report.duration_s = time.monotonic() - t0
    report.examples_db = plan.examples_db.to_json() if plan.examples_db is not None else None
    paths = write_reports(stamp(report, args, encoder), report_dir)
    print_summary(report, paths, console, err)
    if hint:
        console.print(hint, markup=False)
    return report.exit_code()


def _examples_db(args: argparse.Namespace, protocol: ProtocolSuite, encoder: EncoderInfo) -> Any:
    """The example database of this protocol and encoder, or None (turned off; a whole tool, whose
    examples replay only against its server)."""
    from ..harness.examples_db import ExamplesDb, location

    root = location(args.examples_db, disabled=args.no_examples_db)
    if root is None or encoder.tool is not None:
        return None
    db = ExamplesDb.open(root, protocol.name, encoder.name)
    if db.examples:
        console.print(f"[dim]example database: {len(db.examples)} kept example(s) in {db.dir}, replayed first[/]")
    return db


@contextlib.contextmanager
def _dump_file(path: Path | None) -> Iterator[IO[str] | None]:
    if path is None:
        yield None
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        yield fh


def _dump_registry(plan: Any, protocol: ProtocolSuite, combos: list[dict[str, str]], registry: Any,
                   dump_path: Path | None) -> str | None:
    """With --dump-records, keep what the embedded registry held (it disappears with the run), so
    that the records can be checked again later; returns the command that does so."""
    server = getattr(registry, "server", None)
    if dump_path is None:
        return None
    cmd = f"conformance check --protocol {protocol.name} --input {dump_path} --complete"
    if server is not None and any(protocol.needs_registry(c) for c in combos):
        reg_path = dump_path.with_name(dump_path.stem + ".registry.json")
        reg_path.write_text(json.dumps(server.dump(), ensure_ascii=False) + "\n", encoding="utf-8")
        cmd += f" --registry {reg_path}"
    if len(combos) == 1:
        cmd += "".join(f" --option {k}={v}" for k, v in protocol.non_default(combos[0]).items())
        return f"records: {dump_path} (check them again: {cmd})"
    each = "; ".join(f"{cmd} --combo {i}" + "".join(f" --option {k}={v}" for k, v in protocol.non_default(c).items())
                     for i, c in enumerate(combos))
    return f"records: {dump_path} (check them again, a combination at a time: {each})"



def _run_in_memory(plan: Any, registry: Any, registry_url: str, dump: IO[str] | None) -> list[Section]:
    from ..harness.run import execute
    from ..harness.runners import MemoryRunner

    with _progress() as progress:
        task = progress.add_task("workloads", total=plan.examples * len(plan.combos))
        return execute(plan, MemoryRunner(registry, dump=dump), plan.spec(registry_url=registry_url), registry,
                       progress=lambda n: progress.advance(task, n))


def _registry_url_for_workers(args: argparse.Namespace, registry: Any) -> str:
    """Executors talk to the registry themselves: they need its full URL (credentials included,
    never printed); an embedded registry is reached at the address it listens on."""
    server = getattr(registry, "server", None)
    if server is not None:
        return str(server.url)
    return str(args.registry)


def _run_over_kafka(args: argparse.Namespace, plan: Any, registry: Any, mode: str, faults: str | None,
                    dump: IO[str] | None) -> list[Section]:
    from ..harness.run import execute
    from ..harness.runners import KafkaRunner, dump_topics
    from ..infra.faults import FAULT_RUN_CLIENT_CONFIG

    # Under faults, a steady stream: one event every 10 ms keeps several requests in flight
    # against a slowed broker while the schedule runs.
    interval = args.event_interval if args.event_interval is not None else (0.01 if faults else 0.0)
    schedule = _fault_schedule(faults)
    cluster = _open_kafka(args.kafka)
    with cluster:
        if faults and not cluster.supports_faults:
            raise UsageError(f"--faults needs the embedded cluster; {cluster.url} cannot inject faults")
        if schedule is not None and cluster.mock is not None:
            from ..infra.faults import plan as fault_plan

            try:  # broker ids against this cluster, before anything is produced
                fault_plan(schedule, {"topic": 1}, cluster.mock.brokers)
            except ValueError as e:
                raise UsageError(f"--faults: {e}") from None
        config = {**cluster.client_config(), **(FAULT_RUN_CLIENT_CONFIG if schedule is not None else {})}
        spec = plan.spec(run_id="r" + format(random.randrange(36 ** 5), "x"), kafka_config=tuple(config.items()),
                         registry_url=_registry_url_for_workers(args, registry), partitions=args.partitions,
                         event_interval_s=interval,
                         # production overlaps the whole schedule (and a little after its last fault)
                         pace_s=schedule.duration + 0.5 if schedule is not None else 0.0)
        # A finding that needs the broker replays one shard over the same kind of broker, with
        # the same faults and partitions, in this process.
        plan.broker_args = " ".join(["--kafka", shlex.quote(redact(args.kafka)), "--partitions", str(args.partitions),
                                     "--no-spark", *(["--faults", shlex.quote(faults)] if faults else [])])
        log = lambda m: console.print(f"[dim]{m}[/]")  # noqa: E731
        if mode == "spark":
            from ..harness.spark_runner import SparkRunner

            runner: Any = SparkRunner(cluster, master=args.spark_master, faults=faults, log=log)
        else:
            runner = KafkaRunner(cluster, registry, faults=faults, log=log)
        with console.status(f"producing and judging {len(plan.shards) * len(plan.combos)} work unit(s) "
                            f"({'Spark ' + args.spark_master if mode == 'spark' else 'in this process'})…"):
            sections = execute(plan, runner, spec, registry)
        if dump is not None:
            dump_topics(cluster, sorted(t for t in cluster.topics() if spec.unit_of(t) is not None), config, dump)
    return sections


# -- check --------------------------------------------------------------------------------------

def cmd_check(args: argparse.Namespace) -> int:
    protocol = _protocol(args.protocol)
    pinned = {k: v[0] for k, v in _pinned(args, protocol).items()}
    options = protocol.resolve_options(pinned)
    if (args.input is None) == (args.kafka is None):
        raise UsageError("check needs exactly one of --input FILE (a capture) or --kafka URL --topics T1,T2")
    report = Report("check", command=_command_line(), strict=args.strict, **_baseline(args))
    t0 = time.monotonic()
    more: list[Section] = []  # with --workload: the capture judged against it
    if args.kafka is not None:
        section, what = _check_kafka(args, protocol, options, report, more)
    else:
        section, what = _check_file(args, protocol, options, report, more)
    section.workloads = 0
    section.duration_s = report.duration_s = time.monotonic() - t0
    report.sections.append(section)
    report.sections.extend(more)
    paths = _write(args, stamp(report, args))
    console.print(f"checked {section.records} records of {what} in {section.duration_s:.1f} s")
    print_summary(report, paths, console, err)
    return report.exit_code()


def _jobs_arg(text: str) -> int | None:
    """--jobs: a positive number, or auto (None)."""
    if text == "auto":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of processes (or auto)")
    return n


def _registry_arg(args: argparse.Namespace, protocol: ProtocolSuite, options: Mapping[str, str]) -> str | None:
    """--registry, required by the protocols (and options) that use a registry, else ignored."""
    needs = protocol.needs_registry(options)
    if needs and args.registry is None:
        raise UsageError(f"{protocol.name} needs --registry (the registry's URL, or a registry dump file)")
    return args.registry if needs else None


def _check_file(args: argparse.Namespace, protocol: ProtocolSuite, options: dict[str, str], report: Report,
                more: list[Section]) -> tuple[Section, str]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..harness.capture import count_lines, finish_log_only
    from ..harness.check import capture_tally
    from ..harness.check_jobs import check_file_jobs, resolve_jobs
    from ..infra.registry import DumpFormatError, open_registry

    path = Path(args.input)
    workers = 1
    if path.is_dir():
        raise UsageError(f"--input {path} is a directory; pass a records.jsonl capture file")
    if not path.is_file():
        raise UsageError(f"input file {path} does not exist (pass a records.jsonl capture with --input)")
    export = _export_arg(args, protocol)
    registry_spec = _registry_arg(args, protocol, options)
    if registry_spec is not None and not registry_spec.startswith(("http://", "https://", "embedded://",
                                                                   "container://")) \
            and not Path(registry_spec).is_file():
        raise UsageError(f"--registry {redact(registry_spec)} is neither an http(s):// URL nor an existing "
                         "registry dump file")
    tally = capture_tally(protocol, "captured records: there is no encoder to call")
    section = Section(protocol.name, f"capture:{path.name}", "capture", options, describe_options(options, protocol),
                      tally)
    try:
        # The bar refreshes as the check reports (no refresh thread: `--jobs` forks this process).
        with (open_registry(registry_spec) if registry_spec is not None else contextlib.nullcontext()) as registry, \
                Progress(TextColumn("checking"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                         console=console, transient=True, disable=not console.is_terminal,
                         auto_refresh=False) as progress:
            # The bar's total costs a read of the whole file: only where the bar is shown.
            task = progress.add_task("lines", total=count_lines(path) if console.is_terminal else None)
            jobs = resolve_jobs(args.jobs, path, registry_spec)
            section.records, delivery, workers = check_file_jobs(
                protocol, options, registry, path, tally, jobs,
                progress=lambda n: progress.update(task, completed=n, refresh=True),
                complete=args.complete, keep=_combo_filter(args.combo))
            section.notes.extend(delivery.notes())
            if export is not None:
                from ..harness.capture import BadLine, read_records

                records = [r for _, r in read_records(path) if not isinstance(r, BadLine)]
                more.append(_check_against(args, protocol, options, registry, records, f"capture:{path.name}", export))
    except (DumpFormatError, ValueError) as e:
        # A malformed dump, or a registry URL that does not parse (a port that is not a number…).
        raise UsageError(str(e)) from None
    except InfrastructureError as e:
        report.errors.append(f"infrastructure error: {redact_text(str(e))}")
    finish_log_only(tally, protocol.name)
    if section.records == 0 and not report.errors and not tally.checks["capture.record-format"].failed:
        # A gate that passes on nothing hides a broken capture: say so, and do not pass.
        report.errors.append(f"{path} holds no records: nothing was checked (who must act: whoever wrote the "
                             "capture)")
    return section, str(path) + (f" by {workers} processes, whole topics each" if workers > 1 else "")


def _check_kafka(args: argparse.Namespace, protocol: ProtocolSuite, options: dict[str, str], report: Report,
                 more: list[Section]) -> tuple[Section, str]:
    from ..harness.capture import finish_log_only
    from ..harness.check import LiveSpec, check_live_local, check_live_spark, commit, starting_offsets
    from ..harness.kafka_source import plan_ranges, read_range
    from ..harness.runners import records_of
    from ..infra.registry import RegistryClient, open_registry

    export = _export_arg(args, protocol)
    if not args.topics:
        raise UsageError("--kafka needs --topics T1[,T2…]")
    registry_url = _registry_arg(args, protocol, options)
    if registry_url is not None and not registry_url.startswith(("http://", "https://")):
        raise UsageError("with --kafka, --registry must be the live registry's http(s):// URL")
    topics = [t.strip() for t in args.topics.split(",") if t.strip()]
    cluster = _open_kafka(args.kafka)
    if registry_url is not None:
        RegistryClient(registry_url).check_root()
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
        spec = LiveSpec(protocol.name, tuple(sorted(options.items())), registry_url or "", complete=args.complete)
        with _progress() as progress:
            task = progress.add_task(f"checking {len(ranges)} partition(s)", total=sum(r.count for r in ranges))

            def checked(n: int) -> None:
                progress.update(task, completed=n)

            if args.no_spark:
                tally, n, delivery = check_live_local(spec, config, ranges, progress=checked)
            else:
                tally, n, delivery = check_live_spark(spec, config, ranges, args.spark_master, progress=checked)
            finish_log_only(tally, protocol.name)
        if export is not None:
            # The same ranges again, held this time: the join needs the whole capture at once.
            held = [rec for r in ranges if not r.empty for rec in records_of(read_range(config["bootstrap.servers"], r,
                                                                                       rest))]
            with (open_registry(registry_url) if registry_url is not None else contextlib.nullcontext()) as registry:
                more.append(_check_against(args, protocol, options, registry, held, f"kafka:{','.join(topics)}",
                                           export))
        if args.group:
            commit(config, args.group, {(r.topic, r.partition): r.high for r in ranges})
    section = Section(protocol.name, f"kafka:{','.join(topics)}", "capture", options,
                      describe_options(options, protocol), tally, records=n)
    section.notes.extend(delivery.notes())
    if n == 0 and args.group:
        section.notes.append(f"no new records since group {args.group}'s committed offsets")
    elif n == 0:
        report.errors.append(f"the topics {', '.join(topics)} hold no records: nothing was checked")
    return section, ", ".join(topics)


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
    from ..harness.run import run_in_memory
    from ..infra.registry import open_registry
    from ..model.dialects import workload_sql

    path = Path(args.file)
    data, workload = _reproduction(path)
    protocol = _protocol(data["protocol"])
    options = protocol.resolve_options({k: v for k, v in data["options"].items() if k != "profile"})
    chosen = f"cmd:{args.encoder_cmd}" if args.encoder_cmd else args.encoder or data["encoder"]
    if args.bisect_exit:
        from ..harness.bisect import EXIT, probe

        with open_registry(args.registry) as registry:
            found = probe(protocol, chosen, options, [workload], data["check"], registry)
        console.print(f"{found.encoder}: {found.outcome} ({found.detail})", markup=False)
        return EXIT[found.outcome]
    encoder = _encoder(chosen, protocol)
    console.print(f"replaying {path.name}: {len(workload.events)} events, target check {data['check']}, "
                  f"encoder {encoder.name}")
    console.print(workload_sql(workload), markup=False)
    with open_registry(args.registry) as registry:
        res = run_in_memory(protocol, encoder, options, registry, workload, timeout=30.0,
                            run_id=f"repro{int(time.time())}")
    report = Report("reproduce", [Section(protocol.name, encoder.name, encoder.kind.value, options,
                                          describe_options(options, protocol), res.tally, workloads=1,
                                          records=res.records)])
    print_summary(report, None, console, err)
    still = res.tally.checks[data["check"]].outcome is Outcome.FAILED
    console.print(f"target check {data['check']}: {'[red]still fails[/]' if still else '[green]passes now[/]'}")
    return report.exit_code()


# -- serve --------------------------------------------------------------------------------------

def cmd_workload(args: argparse.Namespace) -> int:
    from ..harness.export import render
    from ..harness.run import RunPlan
    from ..upstream import open_upstream

    if args.examples < 1:
        raise UsageError("--examples must be at least 1")
    protocol = _protocol(args.protocol)
    encoder = _encoder(args.encoder, protocol)
    protocol.matrix(parse_option_args(args.option), full=False)  # the same option errors as run
    seed: int | str = args.seed if args.seed is not None else random.randrange(1 << 31)
    if isinstance(seed, str) and seed.isdigit():
        seed = int(seed)
    plan = RunPlan(protocol=protocol, encoder=encoder, combos=[{}], examples=args.examples, seed=seed,
                   first_shard=args.shard)
    if args.upstream.strip().lower() not in ("", "none"):
        plan.upstream = open_upstream(args.upstream)  # for its dialect: not started
    command = _command_line()
    if args.out is None:
        with contextlib.suppress(BrokenPipeError):  # `| head`: the reader has what it wanted
            for chunk in render(plan, command=command):
                sys.stdout.write(chunk)
                sys.stdout.flush()
        return 0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with _progress() as progress, out.open("w", encoding="utf-8", newline="") as fh:
        task = progress.add_task("workloads", total=args.examples + 1)
        for chunk in render(plan, command=command):
            fh.write(chunk)
            progress.advance(task)
    err.print(f"{out}: {args.examples} workload(s) of seed {seed} for {protocol.name} ({encoder.name}), in the "
              f"{plan.run_shape().dialect} dialect", markup=False)
    return 0


def _generation_args(p: argparse.ArgumentParser, examples: int, what: str) -> None:
    """The workload selection `run` and `workload` share: how many, the seed, the first shard."""
    p.add_argument("--examples", type=int, default=examples, help=f"{what} (default {examples})")
    p.add_argument("--seed", default=None, help="generation seed (default: random, printed)")
    p.add_argument("--shard", type=int, default=0, help="first shard to generate (replay one workload)")


def _baseline_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--baseline", default=None, metavar="FILE",
                   help="expected failures (JSON): a failure an entry covers is reported as known and does not "
                        "fail the verdict until the entry expires")
    p.add_argument("--baseline-strict", action="store_true",
                   help="a baseline entry whose check ran and passed (stale) fails the run")


def _baseline(args: argparse.Namespace) -> dict[str, Any]:
    """The Report fields for --baseline / --baseline-strict (the file read now: a bad one is a
    usage error before any work)."""
    if args.baseline is None:
        if args.baseline_strict:
            raise UsageError("--baseline-strict needs --baseline FILE")
        return {}
    from ..reporting.baseline import load

    return {"baseline": load(args.baseline), "baseline_strict": args.baseline_strict}


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
