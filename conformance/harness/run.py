"""`conformance run`: every option combination × N workloads through a runner, then one
reproduction policy for whatever failed.

Work units are (option combination, shard): each shard regenerates its workload from the seed,
so a unit is replayable alone and results do not depend on the order units run in. The runner
(`runners.MemoryRunner`, `runners.KafkaRunner`, `spark_runner.SparkRunner`) decides where the
stages run; the policy for reproductions is the same for all of them:

* a finding the in-memory pipeline reproduces from the workload alone is shrunk to a small
  workload (hypothesis-style, `shrink.shrink`) and stored with a `conformance reproduce` command;
* one it does not (a delivery finding that needs the broker and its faults) keeps the workload as
  generated, with the command that replays its shard over the same kind of broker;
* a hang is not shrunk (every step would wait out the timeout), nor anything with `--no-shrink`.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, Any

from ..checks.common import ENCODER_RESPONSIVE
from ..checks.registry import Level, Outcome, Scope
from ..encoders.spi import EncoderError, EncoderInfo
from ..errors import UsageError
from ..model.dialects import workload_sql
from ..model.events import Workload
from ..model.serde import workload_to_json
from ..model.types import Kind
from ..protocols import get_check
from ..protocols.base import ProtocolSuite
from ..reporting.model import Section
from ..strategies import DEFAULT_SHAPE, Shape
from ..strategies.dialect_domains import domain_for
from ..strategies.history import evolving, shape_for
from .evolution import evolution
from .examples_db import Example, ExamplesDb
from .runners import MemoryRunner, Runner
from .shrink import shrink
from .stages import ComboResult, HangLatch, RunSpec, generate, new_tally

Progress = Callable[[int], None]
_UNSAFE = re.compile(r"[^\w.-]+")


@dataclass
class RunPlan:
    """What the user asked for (the CLI builds it; tests too)."""

    protocol: ProtocolSuite
    encoder: EncoderInfo
    combos: list[dict[str, str]]
    examples: int
    seed: int | str
    shape: Shape = DEFAULT_SHAPE
    encoder_timeout: float = 30.0
    shrink: bool = True
    shrink_seconds: float = 20.0
    repro_dir: Path | None = None
    command_prefix: str = "conformance"
    time_zone: str = "UTC"
    first_shard: int = 0
    # How the run reached its broker (`--kafka … --partitions … --faults …`), for the replay
    # command of a finding that needs the broker; empty for the in-memory log.
    broker_args: str = ""
    # The database server upstream (`--upstream`), started by the caller: reproductions apply
    # the failing workload to it again and shrink what its change log gave the encoder.
    upstream: Any = None
    upstream_args: str = ""  # `--upstream …` for replay commands (credentials redacted)
    # Fields of every spec this plan makes (`spec()`), set by whoever starts the infrastructure.
    spec_fields: dict[str, Any] = field(default_factory=dict)
    shape_overrides: dict[str, Any] = field(default_factory=dict)
    # Failing examples kept between runs (`examples_db.ExamplesDb`, opened for this protocol and
    # encoder): replayed before the generated workloads, new failures kept.
    examples_db: ExamplesDb | None = None

    @property
    def shards(self) -> range:
        return range(self.first_shard, self.first_shard + self.examples)

    def run_shape(self) -> Shape:
        """The workload shape (`workload_shape`): the dialect of the upstream (or the protocol's
        own), with the encoder's own overrides (a mutant's defect-revealing shape)."""
        dialect = self.upstream.dialect if self.upstream is not None else None
        return workload_shape(self.protocol, self.shape, dialect=dialect,
                              overrides={**dict(self.encoder.shape), **self.shape_overrides}, encoder=self.encoder.name)

    def spec(self, **fields: Any) -> RunSpec:
        """The spec every worker gets; `fields` set the runner's own (partitions, Kafka, registry…)."""
        base = RunSpec(self.protocol.name, self.encoder.name, self.seed, self.run_shape(),
                       tuple(tuple(sorted(c.items())) for c in self.combos),
                       partitions=self.protocol.capabilities.memory_partitions, encoder_timeout=self.encoder_timeout,
                       time_zone=self.time_zone)
        return replace(base, **{**self.spec_fields, **fields})


def workload_shape(protocol: ProtocolSuite, base: Shape = DEFAULT_SHAPE, *, dialect: str | None = None,
                   overrides: Mapping[str, Any] | None = None, encoder: str = "") -> Shape:
    """The shape of a run's workloads for `protocol`: `base` in `dialect` (the protocol's own when
    None), keeping to the kinds the protocol's encoders know, evolving where the protocol's
    workloads do, with the features only its encoders know where the dialect is its own
    (`Capabilities.shape`), then `overrides` (an encoder's: a mutant's defect-revealing shape; its
    kinds kept to the dialect's)."""
    caps = protocol.capabilities
    dialect = dialect or caps.dialect
    shape = evolving(base, caps.evolutions)
    if dialect != shape.dialect:
        shape = shape_for(dialect, shape, kinds=caps.kinds)
    if dialect == caps.dialect and caps.shape:
        shape = replace(shape, **dict(caps.shape))
    extra = dict(overrides or {})
    for name in ("kinds", "key_kinds"):
        if name in extra:
            extra[name] = _dialect_kinds(encoder or protocol.name, name, extra[name], dialect)
    return replace(shape, **extra) if extra else shape


def _dialect_kinds(encoder: str, field_name: str, kinds: Sequence[Kind], dialect: str) -> tuple[Kind, ...]:
    """An encoder's own column kinds (a mutant's defect-revealing shape) that the workload's
    dialect has; a UsageError when it has none of them (the defect could never show)."""
    have = domain_for(dialect).kinds
    kept = tuple(k for k in kinds if k in have)
    if not kept:
        names = ", ".join(k.value for k in kinds)
        raise UsageError(f"{encoder} shows its defect on {names} columns, and {dialect} has none of these "
                         f"kinds: run it on its protocol's own workloads (without --upstream) or on an "
                         f"upstream that has them")
    return kept


def with_needed_options(encoder: EncoderInfo, pinned: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """The pinned options with those the encoder needs (a mutant's `needs_options`: its defect
    shows only under them), applied as its workload shape is. A pin of another value is a usage
    error: the run could not show the defect."""
    out = {k: list(v) for k, v in pinned.items()}
    for name, value in encoder.needs_options.items():
        given = out.get(name)
        if given is not None and any(v.strip().lower() != value.lower() for v in given):
            raise UsageError(f"{encoder.name} needs --option {name}={value} (its defect shows only with it), "
                             f"but --option {name}={','.join(given)} was given: drop that --option or give "
                             f"{name}={value}")
        out[name] = [value]
    return out


def supported_combos(encoder: EncoderInfo, combos: Sequence[dict[str, str]], pinned: Mapping[str, Sequence[str]]
                     ) -> tuple[list[dict[str, str]], list[str]]:
    """The combinations `encoder` supports (as its own capabilities say: a subprocess's handshake),
    and what was left out ("name=value (why)"). Asking for an unsupported value explicitly
    (`pinned`) is a usage error."""
    if encoder.unsupported is None:
        return list(combos), []
    keep, left_out = [], []
    for combo in combos:
        try:
            bad = list(encoder.unsupported(combo))
        except EncoderError:
            return list(combos), []  # it cannot even say: the run will report what it does
        if not bad:
            keep.append(combo)
            continue
        if all(b.split("=", 1)[0] in pinned for b in bad):
            raise UsageError(f"{encoder.name} does not support {'; '.join(bad)}")
        left_out.append(", ".join(bad))
    return keep, sorted(set(left_out))


def execute(plan: RunPlan, runner: Runner, spec: RunSpec, registry: Any, *,
            progress: Progress | None = None) -> list[Section]:
    """Replay the example database's kept examples (if any), run every unit with `runner`, then
    add the reproductions of what failed."""
    db = plan.examples_db
    replays = replay_kept(plan, spec, registry, db) if db is not None else {}
    sections = runner.run(spec, plan.shards, progress=progress)
    # The embedded registry of this process is read without sockets (the same requests and
    # answers): thousands of subjects after a default run, one loopback round trip each.
    reader = registry.in_process() if hasattr(registry, "in_process") else registry
    for combo, section in enumerate(sections):
        # The registry's verdict on the schema changes this combination registered.
        note = evolution(reader, f"{spec.run_id}c{combo}w").note()
        if note:
            section.notes.append(note)
        add_reproductions(plan, spec, combo, section, registry)
        if db is not None and combo in replays:
            _add_replays(plan, db, spec.options(combo), section, replays[combo])
    if db is not None:
        db.finish()
    return sections


def replay_kept(plan: RunPlan, spec: RunSpec, registry: Any, db: ExamplesDb) -> dict[int, ComboResult]:
    """Every kept example whose options are one of the run's combinations, through the in-memory
    pipeline (as `conformance reproduce` replays it), per combination."""
    out: dict[int, ComboResult] = {}
    attempt = itertools.count()

    def run(combo: int, ex: Example) -> set[str]:
        # Its findings name the kept file as their workload's seed: not one of this run's.
        one = run_in_memory(plan.protocol, plan.encoder, spec.options(combo), registry, ex.workload,
                            timeout=plan.encoder_timeout, seed=f"kept:{ex.path.name}", shard=ex.origin[1],
                            run_id=f"{spec.run_id}e{next(attempt)}", time_zone=spec.time_zone)
        into = out.setdefault(combo, ComboResult(new_tally(plan.protocol)))
        into.tally.merge(one.tally)
        into.workloads += 1
        into.records += one.records
        return one.tally.failed_ids()

    db.replay([spec.options(c) for c in range(len(spec.combos))], run)
    return out


def _add_replays(plan: RunPlan, db: ExamplesDb, options: dict[str, str], section: Section, replayed: ComboResult
                 ) -> None:
    """A combination's replayed examples join its results; one that still fails is the
    reproduction of its check where the generated workloads gave none."""
    replayed.tally.merge(section.tally)  # the replayed examples' findings first, as they ran
    section.tally = replayed.tally
    section.notes.append(f"{replayed.workloads} kept example(s) of the example database replayed before the "
                         f"generated workloads ({replayed.records} records, not in --dump)")
    have = {r["check"] for r in section.reproductions}
    for ex in db.still_failing(options):
        if ex.check in have:
            continue
        seed, shard = ex.origin
        command = f"{plan.command_prefix} reproduce {shlex.quote(str(ex.path))}"
        section.reproductions.append({"check": ex.check, "seed": seed, "shard": shard, "sql": workload_sql(ex.workload),
                                      "events": len(ex.workload.events), "file": str(ex.path), "command": command,
                                      "replay": command, "note": "a kept example of the example database, still "
                                      "failing"})


# -- the in-memory pipeline on one given workload (shrinking, reproduce) ------------------------------

_attempts = itertools.count(1)


def run_in_memory(suite: ProtocolSuite, encoder: EncoderInfo, options: dict[str, str], registry: Any,
                  workload: Workload, *, timeout: float = 10.0, seed: int | str = 0, shard: int = 0,
                  run_id: str | None = None, time_zone: str = "UTC", dump: IO[str] | None = None,
                  into: ComboResult | None = None, partitions: int | None = None) -> ComboResult:
    """One workload through the in-memory pipeline (encode, log, judge), with topics of their own
    (`partitions` each: the protocol's in-memory count by default); its records also go to `dump`
    (records.jsonl lines), its results into `into` if given."""
    spec = RunSpec(suite.name, encoder.name, seed, DEFAULT_SHAPE, (tuple(sorted(options.items())),),
                   partitions=partitions or suite.capabilities.memory_partitions,
                   run_id=run_id if run_id is not None else f"x{next(_attempts)}", encoder_timeout=timeout,
                   time_zone=time_zone)
    result = into if into is not None else ComboResult(new_tally(suite))
    MemoryRunner(registry, dump=dump).run_unit(spec, 0, shard, result, HangLatch(), workload=workload, info=encoder)
    return result


def failing_checks(suite: ProtocolSuite, encoder: EncoderInfo, options: dict[str, str], registry: Any,
                   workload: Workload, *, timeout: float = 10.0) -> set[str]:
    """Which checks fail on this workload in memory (shrinking asks this of every candidate)."""
    return run_in_memory(suite, encoder, options, registry, workload, timeout=timeout).tally.failed_ids()


# -- reproductions ------------------------------------------------------------------------------------


def add_reproductions(plan: RunPlan, spec: RunSpec, combo: int, section: Section, registry: Any) -> None:
    """One reproduction per failed check of a section (from the smallest shard it failed in)."""
    for t in section.tally:
        if t.outcome is not Outcome.FAILED or t.level is Level.INFO:
            continue
        shards = [r.workload[1] for r in t.failures.values() if r.workload is not None]
        if shards:
            section.reproductions.append(reproduction(plan, spec, combo, registry, t.id, min(shards)))


def replay_command(plan: RunPlan, options: dict[str, str], shard: int, run_args: str = "") -> str:
    """`conformance run` of exactly one shard under exactly these options."""
    head = (f"{plan.command_prefix} run --protocol {plan.protocol.name} --encoder {shlex.quote(plan.encoder.name)} "
            f"--seed {shlex.quote(str(plan.seed))} --shard {shard} --examples 1 --no-matrix")
    pins = " ".join(f"--option {k}={v}" for k, v in plan.protocol.non_default(options).items())
    return " ".join(x for x in (head, pins, plan.upstream_args, run_args) if x)


def reproduction(plan: RunPlan, spec: RunSpec, combo: int, registry: Any, check_id: str, shard: int
                 ) -> dict[str, Any]:
    options = spec.options(combo)
    w = generate(plan.seed, shard, spec.shape)
    if get_check(check_id).scope is Scope.SOURCE:
        # What a server did with the generated SQL: the suite's own defect, no encoder in it. The
        # reproduction is the generated workload itself (the server's log stops before the
        # statement it refused), replayed against the same kind of server.
        return _unshrunk(plan, combo, options, check_id, shard, w, replay_command(plan, options, shard),
                         "not shrunk: a finding against the suite's generated SQL (the workload as generated, "
                         "before the server)")
    if plan.encoder.tool is not None:
        # A whole tool reads the server itself: every shrinking step would be a run of the tool
        # against the server; the replay command runs the same workload through it again.
        return _unshrunk(plan, combo, options, check_id, shard, w, replay_command(plan, options, shard),
                         "not shrunk: a whole CDC tool (the replay runs it against the server again)")
    if plan.upstream is not None:
        w = plan.upstream.run_workload(w).workload  # what the encoder got: the server's log
    timeout = min(plan.encoder_timeout, 5.0)
    hang = check_id == ENCODER_RESPONSIVE  # replaying a hang waits out the timeout: it is the encoder's anyway
    why_not = "not shrunk: the encoder hung" if hang else "not shrunk: --no-shrink" if not plan.shrink else None
    if not hang and check_id not in failing_checks(plan.protocol, plan.encoder, options, registry, w, timeout=timeout):
        # Not reproduced without the broker: it depends on the broker and the timing of its
        # faults, so every shrinking step would be a Kafka run whose outcome is not deterministic.
        replay = replay_command(plan, options, shard, plan.broker_args)
        return _unshrunk(plan, combo, options, check_id, shard, w, replay,
                         "not shrunk: the finding depends on the broker and the timing of its faults")
    if why_not is None:
        small = shrink(w, lambda c: check_id in failing_checks(plan.protocol, plan.encoder, options, registry, c,
                                                               timeout=timeout),
                       max_seconds=plan.shrink_seconds)
        small = replace(small, meta={**small.meta, "shrunk_from": {"seed": plan.seed, "shard": shard}})
    else:
        small = w
    replay = replay_command(plan, options, shard)
    out = {"check": check_id, "seed": plan.seed, "shard": shard, "sql": workload_sql(small),
           "events": len(small.events), "replay": replay, "command": replay}
    if why_not:
        out.update(shrunk=False, note=why_not)
    path = write_reproduction(plan, combo, options, check_id, small)
    if path is not None:
        out["file"] = str(path)
        out["command"] = f"{plan.command_prefix} reproduce {shlex.quote(str(path))}"
    if plan.examples_db is not None and not hang:
        plan.examples_db.keep(plan.protocol, options, check_id, small, seed=plan.seed, shard=shard)
    return out


def _unshrunk(plan: RunPlan, combo: int, options: dict[str, str], check_id: str, shard: int, w: Workload,
              replay: str, note: str) -> dict[str, Any]:
    """A reproduction of the whole workload, with the reason it was not shrunk."""
    out: dict[str, Any] = {"check": check_id, "seed": plan.seed, "shard": shard, "sql": workload_sql(w),
                           "events": len(w.events), "replay": replay, "command": replay, "shrunk": False, "note": note}
    path = write_reproduction(plan, combo, options, check_id, w, replay=replay)
    if path is not None:
        out["file"] = str(path)
    return out


def write_reproduction(plan: RunPlan, combo: int, options: dict[str, str], check_id: str, workload: Workload,
                       **extra: Any) -> Path | None:
    """Store a reproduction (format v1) in the run's repro directory, if it has one."""
    if plan.repro_dir is None:
        return None
    plan.repro_dir.mkdir(parents=True, exist_ok=True)
    # A file name without spaces or shell characters (a cmd: encoder's name is a command line).
    path = plan.repro_dir / f"{_UNSAFE.sub('_', plan.encoder.name).strip('_')}__c{combo}__{check_id}.json"
    path.write_text(json.dumps({
        "format": "cdc-conformance/reproduction", "format_version": 1, "protocol": plan.protocol.name,
        "encoder": plan.encoder.name, "options": options, "check": check_id, **extra,
        "workload": workload_to_json(workload)}, ensure_ascii=False, indent=1, default=str) + "\n", encoding="utf-8")
    return path

