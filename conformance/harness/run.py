"""`conformance run`: every option combination × N workloads, in-process; shrink what fails.

Work units are (encoder, options, seed, shard): each shard regenerates its workload from the
seed, so a unit is replayable alone and results do not depend on the order units run in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..checks.registry import Outcome
from ..encoders.spi import EncoderInfo, Record
from ..model.events import Workload
from ..model.serde import workload_to_json
from ..protocols.base import ProtocolSuite, describe_options
from ..reporting.model import Section
from ..strategies import DEFAULT_SHAPE, Shape, sample_workload
from .local import Guard, assign_offsets, failing_checks, make_tally, run_workload
from .shrink import shrink

Progress = Callable[[int], None]  # advance by n workloads


@dataclass
class RunPlan:
    protocol: ProtocolSuite
    encoder: EncoderInfo
    combos: list[dict[str, str]]
    examples: int
    seed: int | str
    shape: Shape = DEFAULT_SHAPE
    encoder_timeout: float = 30.0
    shrink: bool = True
    shrink_seconds: float = 20.0
    dump_records: Path | None = None
    repro_dir: Path | None = None
    command_prefix: str = "conformance"
    time_zone: str = "UTC"
    first_shard: int = 0
    shape_overrides: dict[str, Any] = field(default_factory=dict)


def shape_for(plan: RunPlan) -> Shape:
    return replace(plan.shape, **plan.shape_overrides) if plan.shape_overrides else plan.shape


def topic_prefix(combo: int, shard: int, attempt: int | None = None) -> str:
    """A per-unit topic prefix, so workloads never share topics or registry subjects."""
    return f"c{combo}w{shard}-" if attempt is None else f"c{combo}w{shard}r{attempt}-"


def options_args(options: Mapping[str, str], protocol: ProtocolSuite) -> str:
    return " ".join(f"--option {k}={v}" for k, v in options.items()
                    if k != "profile" and any(o.name == k and o.default != v for o in protocol.options))


def run_plan(plan: RunPlan, registry: Any, *, progress: Progress | None = None,
             on_section: Callable[[Section], None] | None = None) -> list[Section]:
    sections = []
    if plan.dump_records:
        plan.dump_records.parent.mkdir(parents=True, exist_ok=True)
    dump = plan.dump_records.open("w", encoding="utf-8") if plan.dump_records else None
    try:
        for ci, options in enumerate(plan.combos):
            sections.append(_run_combo(plan, ci, options, registry, progress, dump))
            if on_section:
                on_section(sections[-1])
    finally:
        if dump:
            dump.close()
    return sections


def _run_combo(plan: RunPlan, ci: int, options: dict[str, str], registry: Any, progress: Progress | None,
               dump: Any) -> Section:
    t0 = time.monotonic()
    tally = make_tally(plan.protocol)
    section = Section(plan.protocol.name, plan.encoder.name, plan.encoder.kind.value, dict(options),
                      describe_options(options, plan.protocol), tally, seed=plan.seed)
    first_failure: dict[str, int] = {}
    shape = shape_for(plan)
    guard = Guard(plan.encoder_timeout)
    try:
        for i in range(plan.examples):
            shard = plan.first_shard + i
            before = {cid: t.failed for cid, t in tally.checks.items()}
            w = sample_workload(plan.seed, shard, shape)
            res = run_workload(plan.protocol, plan.encoder, options, registry, w, tally,
                               topic_prefix=topic_prefix(ci, shard), guard=guard, keep_records=dump is not None,
                               time_zone=plan.time_zone)
            section.workloads += 1
            section.records += res.records
            if dump is not None:
                _dump(dump, res.dumped)
            for cid, t in tally.checks.items():
                if t.failed > before.get(cid, 0):
                    first_failure.setdefault(cid, shard)
            if progress:
                progress(1)
            if res.hung:
                section.notes.append(f"stopped after shard {shard}: the encoder hung, so no further call was made")
                if progress:
                    progress(plan.examples - i - 1)
                break
    finally:
        guard.close()
    for cid, shard in sorted(first_failure.items()):
        if tally.checks[cid].outcome is not Outcome.FAILED:
            continue
        section.reproductions.append(reproduction(plan, ci, options, registry, cid, shard, shape))
    section.duration_s = time.monotonic() - t0
    return section


def record_line(r: Any) -> str:
    """One records.jsonl line (format v1) for a record that has its partition and offset."""
    import base64

    headers = getattr(r, "headers", ()) or ()
    return json.dumps({
        "topic": r.topic, "partition": r.partition, "offset": r.offset,
        "key": None if r.key is None else base64.b64encode(r.key).decode("ascii"),
        "value": None if r.value is None else base64.b64encode(r.value).decode("ascii"),
        "timestamp": getattr(r, "timestamp", None),
        "headers": [[k, None if v is None else base64.b64encode(v).decode("ascii")] for k, v in headers],
    }, ensure_ascii=False)


def _dump(fh: Any, records: list[Record]) -> None:
    for r in assign_offsets(records):
        fh.write(record_line(r) + "\n")


def _replay_command(plan: RunPlan, options: dict[str, str], shard: int, run_args: str = "") -> str:
    """`conformance run` of exactly one shard under exactly these options."""
    head = (f"{plan.command_prefix} run --protocol {plan.protocol.name} --encoder {plan.encoder.name} "
            f"--seed {plan.seed} --shard {shard} --examples 1 --no-matrix")
    return " ".join(x for x in (head, options_args(options, plan.protocol), run_args) if x)


def _write_reproduction(plan: RunPlan, ci: int, options: dict[str, str], check_id: str, workload: Workload,
                        **extra: Any) -> Path | None:
    """Store a reproduction (format v1) in the run's repro directory, if it has one."""
    if plan.repro_dir is None:
        return None
    plan.repro_dir.mkdir(parents=True, exist_ok=True)
    path = plan.repro_dir / f"{plan.encoder.name.replace('/', '_')}__c{ci}__{check_id}.json"
    path.write_text(json.dumps({
        "format": "cdc-conformance/reproduction", "format_version": 1, "protocol": plan.protocol.name,
        "encoder": plan.encoder.name, "options": options, "check": check_id, **extra,
        "workload": workload_to_json(workload)}, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def broker_reproduction(plan: RunPlan, ci: int, options: dict[str, str], check_id: str, shard: int, shape: Shape,
                        *, run_args: str) -> dict[str, Any]:
    """A reproduction of a delivery finding: the workload as generated (not shrunk: the finding
    depends on the broker, its faults and their timing, so every shrinking step would be a
    Kafka run whose outcome is not deterministic) and the command that replays its shard."""
    w = sample_workload(plan.seed, shard, shape)
    replay = _replay_command(plan, options, shard, run_args)
    out: dict[str, Any] = {"check": check_id, "seed": plan.seed, "shard": shard, "sql": w.sql(),
                           "events": len(w.events), "replay": replay, "command": replay, "shrunk": False,
                           "note": "not shrunk: delivery findings depend on the broker and the timing of its faults"}
    path = _write_reproduction(plan, ci, options, check_id, w, replay=replay)
    if path is not None:
        out["file"] = str(path)
    return out


def reproduction(plan: RunPlan, ci: int, options: dict[str, str], registry: Any, check_id: str, shard: int,
                  shape: Shape) -> dict[str, Any]:
    w = sample_workload(plan.seed, shard, shape)
    attempt = [0]

    def still_fails(candidate: Workload) -> bool:
        attempt[0] += 1
        return check_id in failing_checks(plan.protocol, plan.encoder, options, registry, candidate,
                                          topic_prefix=topic_prefix(ci, shard, attempt[0]),
                                          timeout=min(plan.encoder_timeout, 5.0))

    # Not shrunk with --no-shrink, nor for a hang (every shrinking step would wait the timeout).
    why_not = ("not shrunk: --no-shrink" if not plan.shrink else
               "not shrunk: the encoder hung" if check_id == "encoder.responsive" else None)
    small = w if why_not else shrink(w, still_fails, max_seconds=plan.shrink_seconds)
    if not why_not:
        small = replace(small, meta={**small.meta, "shrunk_from": {"seed": plan.seed, "shard": shard}})
    replay = _replay_command(plan, options, shard)
    out: dict[str, Any] = {"check": check_id, "seed": plan.seed, "shard": shard, "sql": small.sql(),
                           "events": len(small.events), "replay": replay, "command": replay}
    if why_not:
        out.update(shrunk=False, note=why_not)
    path = _write_reproduction(plan, ci, options, check_id, small)
    if path is not None:
        out["file"] = str(path)
        out["command"] = f"{plan.command_prefix} reproduce {path}"
    return out
