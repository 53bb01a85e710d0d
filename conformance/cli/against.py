"""`conformance check … --workload FILE`: the capture judged against the workload it was made from
(`--upstream` for the truth a server gives, `--since` for the very server the deployment read)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..infra.urls import redact
from ..protocols import all_protocols
from ..protocols.base import ProtocolSuite, describe_options
from ..reporting import Section
from .common import _progress, _upstream


def _combo_filter(combo: int | None) -> Callable[[str], bool] | None:
    """--combo N: the topics of a run's dump made under that combination (and any other topic)."""
    from ..harness.stages import UNIT_PREFIX

    if combo is None:
        return None

    def keep(topic: str) -> bool:
        m = UNIT_PREFIX.match(topic)
        return m is None or int(m["combo"]) == combo

    return keep


def _export_arg(args: argparse.Namespace, protocol: ProtocolSuite) -> Any:
    """--workload FILE, read and checked (None without it)."""
    if args.workload is None:
        if args.upstream.strip().lower() not in ("", "none"):
            raise UsageError("--upstream goes with --workload FILE: the server applies that file to give the truth")
        if args.since is not None:
            raise UsageError("--since goes with --workload FILE and --upstream URL (the server the deployment read)")
        return None
    if args.since is not None:
        _since_usage(args, protocol)
    if not protocol.joins_captures:
        raise UsageError(f"--workload is not built for {protocol.name} yet (it is for: "
                         f"{', '.join(p.name for p in all_protocols() if p.joins_captures)}); without it, check "
                         "judges everything the capture itself shows")
    from ..harness.export import ExportFormatError, read_file

    try:
        export = read_file(args.workload)
    except FileNotFoundError:
        raise UsageError(f"--workload {args.workload} does not exist (conformance workload --out FILE writes one)"
                         ) from None
    except (ExportFormatError, UnicodeDecodeError) as e:
        raise UsageError(f"--workload: {e}") from None
    if export.header.get("protocol") != protocol.name:
        raise UsageError(f"--workload {args.workload} was exported for {export.header.get('protocol')}, not "
                         f"{protocol.name}")
    return export


def _since_usage(args: argparse.Namespace, protocol: ProtocolSuite) -> None:
    """--since: only with the very server a deployment of this protocol read, and one the suite can read."""
    from ..upstream import open_upstream

    url = args.upstream.strip()
    if url.lower() in ("", "none") or url.lower().startswith(("embedded-", "container")):
        raise UsageError("--since needs --upstream URL of the server your deployment read, with the file applied "
                         "(mariadb://… or postgresql://…): an embedded or container server is new and holds none of it")
    up = open_upstream(url)
    if up.dialect != protocol.capabilities.dialect:
        raise UsageError(f"--since: {protocol.name}'s deployments read a {protocol.capabilities.dialect} server, and "
                         f"{redact(url)} is {up.dialect}: its log is not the one the deployment read (without --since, "
                         "--upstream replays the file on it instead)")
    why = up.since_error(args.since)
    if why is not None:
        raise UsageError(why)


def _check_against(args: argparse.Namespace, protocol: ProtocolSuite, options: dict[str, str], registry: Any,
                   records: Sequence[Any], name: str, export: Any) -> Section:
    """The capture (`records`, of `name`) judged against the workload it was made from, as a run
    judges its own output."""
    from ..harness.field import SeveralCombinations, check_units, split
    from ..harness.stages import ComboResult, new_tally

    t0 = time.monotonic()
    refused = protocol.field_refuses(options)
    if refused is not None:
        raise UsageError(f"--workload cannot judge {protocol.name} under these options: {refused}")
    try:
        units, loose = split(protocol, options, registry, records, export, combo=args.combo)
    except SeveralCombinations as e:
        raise UsageError(str(e)) from None
    if args.since is not None and any(u.from_run for u in units):
        raise UsageError("--since is for a deployment's capture: a run's dump was made on the run's own databases, "
                         "not on the server the file was applied to (check it with --workload alone, or --upstream)")
    result = ComboResult(new_tally(protocol))
    plan = argparse.Namespace(upstream=None, upstream_args="")
    with _upstream(args.upstream, plan), _progress() as progress:
        task = progress.add_task("workloads", total=len(units))
        notes = check_units(protocol, options, registry, units, result, upstream=plan.upstream, since=args.since,
                            progress=lambda n: progress.update(task, completed=n))
    if plan.upstream is not None and args.since is not None:
        notes.append(f"the truth: what {redact(args.upstream)} logged since {args.since} (its GTIDs and times checked)")
    elif plan.upstream is not None:
        notes.append(f"the truth: what {redact(args.upstream)} logged for each workload")
    section = Section(protocol.name, f"{name} + workload:{Path(args.workload).name}", "capture",
                      options, describe_options(options, protocol), result.tally, workloads=len(units),
                      records=sum(len(u.records) for u in units), seed=export.header.get("seed"),
                      duration_s=time.monotonic() - t0)
    section.notes.extend(result.delivery.notes())
    section.notes.extend(notes)
    missing = [u.exported.shard for u in units if not u.records]
    if missing:
        section.notes.append(f"no records of workload shard(s) {', '.join(map(str, missing))} (judged: what they "
                             "should have written is missing, if anything was due)")
    if loose:
        section.notes.append(f"{len(loose)} record(s) belong to no workload of {Path(args.workload).name} (their "
                             "tables are in none of its databases): judged above without a workload only")
    return section
