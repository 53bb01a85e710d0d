"""The protocol contract: what every protocol package provides to the harness and the CLI.

A protocol is one package with a `ProtocolSuite` subclass (its options, reference encoder,
mutants, checker, delivery identities and capabilities), registered under the
`conformance.protocols` entry-point group. The harness never names a protocol and never looks a
capability up by string: it calls these methods and reads `Capabilities`.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

from ..checks.delivery import TsScope, Version
from ..checks.registry import NEEDS_SOURCE, CheckRegistry, Failure, Location, NotApplicable, Scope, applicable_checks
from ..checks.results import RecordPlan, Tally
from ..encoders.spi import ConfigurationError, EncoderInfo, Record
from ..infra.registry.compat import COMPATIBILITY_LEVELS
from ..model.events import Event, Workload
from ..model.types import Kind

if TYPE_CHECKING:
    from ..encoders.tool import FieldIds, ToolRecord
    from .connector_config import ConnectorOptions
    from .mutants import MutantSpec


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One protocol option (a sink-URI parameter, a codec setting or a profile switch)."""

    name: str
    default: str
    choices: tuple[str, ...] | None = None  # None: free-form
    doc: str = ""
    # Part of the default matrix: `conformance run` tries every choice unless pinned.
    matrix: bool = False
    # Where the option comes from, for the docs (e.g. "sink-uri", "profile switch").
    kind: str = "sink-uri"
    # Short name used in report labels (e.g. "ext" for enable-tidb-extension).
    short: str | None = None
    # The values the default matrix tries (all `choices` when None); `--option NAME=all` asks for
    # every choice.
    matrix_choices: tuple[str, ...] | None = None
    # A matrix axis spread over the other axes' combinations instead of multiplying them: each
    # combination takes one value in turn (every value meets every value of each other axis
    # when there are enough combinations), so the axis costs no extra combination.
    cycle: bool = False

    def validate(self, value: str) -> str:
        v = value.strip()
        if self.choices is not None:
            lowered = {c.lower(): c for c in self.choices}
            if v.lower() not in lowered:
                raise ConfigurationError(
                    f"option {self.name}={value!r} is not one of: {', '.join(self.choices)}")
            return lowered[v.lower()]
        return v


#: The Schema Registry compatibility level of every subject a run's encoder registers (set per
#: subject before the encoder runs, on whatever registry the run uses). The default matrix spreads
#: NONE and BACKWARD over its combinations; `--option registry-compatibility=all` runs all seven.
REGISTRY_COMPATIBILITY = OptionSpec(
    "registry-compatibility", "BACKWARD", COMPATIBILITY_LEVELS,
    doc="Schema Registry compatibility level of the run's subjects (PUT /config/{subject}); a schema change "
        "the level refuses must stop the encoder (TiCDC's changefeed enters an error state), all before it "
        "delivered, nothing of that table after it",
    matrix=True, kind="registry config", short="compat", matrix_choices=("NONE", "BACKWARD"), cycle=True)


@dataclass(frozen=True, slots=True)
class Profile:
    """A named bundle of option values describing one upstream version's behaviour."""

    name: str
    values: Mapping[str, str]
    doc: str = ""


StreamScope = Literal["partition", "topic"]


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What differs between protocols, as data the harness reads (never a string key).

    `memory_partitions`: partitions of every topic in an in-memory run (more than one where the
    protocol's rules are about partitions: broadcasts, a dispatcher).
    `stream_scope`: what one stream-check task must see together: one topic-partition, or a
    whole topic (rules that span partitions: DDLs and bootstraps reach every partition).
    `commit_ts_scope`: what commit-ts order a partition promises: all its row messages
    ("partition"), or each entity's ("entity": tables that share a partition interleave).
    `needs_registry`: records are framed with Schema Registry ids (a capture needs the registry).
    `delivery_options`: options under which every delivery check can be decided (e.g. an option
    that puts the commit ts in the messages); delivery mutants run with them.
    `dialect`: the SQL dialect of the protocol's own upstream ("tidb", "mariadb", "postgresql"):
    its generated workloads use that dialect's types and values when no `--upstream` says
    otherwise.
    `kinds`: the column kinds its encoders know (None: every kind of the dialect); a workload for
    another upstream keeps to these.
    `evolutions`: the schema changes its generated workloads make for their effect on a registered
    schema (`strategies.history.EVOLUTIONS`; those the dialect cannot render are left out).
    `shape`: fields of `strategies.Shape` its workloads set in its own dialect: features of the
    source only its encoders know (PostgreSQL's logical decoding messages, values large enough to
    be stored out of line).
    """

    memory_partitions: int = 1
    stream_scope: StreamScope = "partition"
    commit_ts_scope: TsScope = "partition"
    needs_registry: bool = False
    delivery_options: Mapping[str, str] = field(default_factory=dict)
    dialect: str = "tidb"
    kinds: tuple[Kind, ...] | None = None
    evolutions: tuple[str, ...] = ()
    shape: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CheckerMode:
    """Which of a protocol's checks a checker runs, and what it may assume about the log.

    * `source`: the generated workload is known: event checks and checks that need the source
      run (otherwise they are skipped, saying why);
    * `records`: record checks run on every record;
    * `streams`: stream checks run at `finish()`;
    * `complete`: the log holds the whole output of a workload, from its first message to its
      last (a run's own topics), rather than a window of a longer stream (a capture).
    """

    source: bool
    records: bool
    streams: bool
    complete: bool


#: A run's encode stage: record and event checks against the workload, as records are made.
ENCODE = CheckerMode(source=True, records=True, streams=False, complete=True)
#: A run's judge stage: stream checks over the log the run wrote (complete unless the broker lost
#: messages: `complete=False` then).
LOG = CheckerMode(source=False, records=False, streams=True, complete=True)
#: A captured or live topic: record and stream checks, no workload, any window of the stream.
CAPTURE = CheckerMode(source=False, records=True, streams=True, complete=False)
#: The same where the capture holds each partition to the end of what the tool wrote (`check
#: --complete`: a finished run's dump, topics read after the tool stopped): rules about what must
#: follow a message (a delete's tombstone) are decided at its end too, as in a run.
CAPTURE_COMPLETE = CheckerMode(source=False, records=True, streams=True, complete=True)


class Checker(ABC):
    """Runs one protocol's checks over one stream of records (the records of one work unit, or
    of one captured topic or topic-partition) and records every outcome in a tally."""

    @abstractmethod
    def evidence(self, record: Record, loc: Location) -> Any:
        """What the record checks of one record look at (its decoded parts, joined with what
        the stream showed before it); the stream state the stream checks judge is kept here."""

    @abstractmethod
    def check_event(self, event: Event, records: Sequence[Record]) -> None:
        """The records an encoder made for one source event (modes with `source`)."""

    @abstractmethod
    def check_record(self, record: Record, loc: Location) -> None:
        """One record of a log, in offset order per partition (record checks, and the stream
        state the stream checks judge at `finish()`)."""

    @abstractmethod
    def finish(self) -> None:
        """The end of the stream: run the stream checks (modes with `streams`)."""

    def check_fast(self, record: Record) -> bool | tuple[Identified]:
        """`check_record` on the protocol's compiled fast path (`checks.compiled`), for a record
        of a log: true when it proved the record passes every record check that applies and
        counted it so (the stream state kept as `check_record` keeps it): True, or the record's
        delivery identity where the fast path worked it out with the decode (`(identity,)`, as
        `identity` returns it, a tuple of one: true too); False, having changed nothing, when the
        record must go through `check_record`. None by default."""
        return False

    def identity(self, record: Record) -> tuple[Identified] | None:
        """The delivery identity of `record`, the record `check_fast` just accepted, when the fast
        path worked it out with the decode (`(identity,)`); None: ask the protocol's identifier."""
        return None


#: Record plans one checker keeps (a plan per schema and record shape; a capture has few).
MAX_PLANS = 50_000


class CheckerBase(Checker):
    """What every protocol's checker shares: which of its checks run in its mode, why the others
    are skipped, and their evaluation (the protocol supplies the evidence)."""

    def __init__(self, checks: CheckRegistry, options: Mapping[str, str], tally: Tally, mode: CheckerMode, *,
                 partitions: int | None = None) -> None:
        self.tally = tally
        self.mode = mode
        self.partitions = partitions
        active, skipped = applicable_checks(checks, options, source=mode.source)
        for cid, reason in skipped.items():
            # "Needs the workload" is said where records are judged without it (a capture); a
            # run's judge stage (no source, no record checks) leaves that to its encode stage.
            if cid in tally.checks and (reason != NEEDS_SOURCE or mode.records):
                tally.skip(cid, reason)
        self.record_specs = [s for s in active if s.scope is Scope.RECORD] if mode.records else []
        self.event_specs = [s for s in active if s.scope is Scope.EVENT] if mode.source else []
        self.stream_specs = [s for s in active if s.scope is Scope.STREAM] if mode.streams else []
        # Record plans: the keys that decide a record's cached and gated checks, each computed
        # once per record (checks share key functions); a plan per distinct tuple of keys.
        keys: dict[int, Callable[[Any], Hashable]] = {}
        for s in self.record_specs:
            for f in (s.cache_key, s.gate_key):
                if f is not None:
                    keys.setdefault(id(f), f)
        self._plan_keys = tuple(keys.values())
        self._plans: dict[tuple[Hashable, ...], RecordPlan] = {}

    def check_record(self, record: Record, loc: Location) -> None:
        self.run_record_checks(self.evidence(record, loc))

    def evidences(self, records: Sequence[Record]) -> list[Any]:
        """The evidence of an event's records, each located where the encoder put it."""
        return [self.evidence(r, Location(topic=r.topic, partition=r.partition, offset=r.offset)) for r in records]

    def run_record_checks(self, evidence: Any) -> RecordPlan | None:
        """Every record check on one record's evidence; returns the plan of its kind (None: it
        had none, every check ran)."""
        if self._plan_keys:
            key: tuple[Hashable, ...] | None
            try:
                key = tuple(f(evidence) for f in self._plan_keys)
                plan = self._plans.get(key)
            except Exception:  # noqa: BLE001 - an odd record: every check runs and says what is wrong
                key = plan = None
            if plan is not None:
                self.tally.count(plan)
                for s in plan.live:
                    self.tally.evaluate(s, evidence)
                return plan
            if key is not None:
                return self._plan(key, evidence)
        for s in self.record_specs:
            self.tally.evaluate(s, evidence)
        return None

    def _plan(self, key: tuple[Hashable, ...], evidence: Any) -> RecordPlan:
        """Run every record check on the first record of its kind and keep, as the kind's plan,
        which answers the key decides (see `RecordPlan`)."""
        plan = RecordPlan()
        for s in self.record_specs:
            decided: tuple[str | None] | None = None
            try:
                na = s.gate(evidence) if s.gate is not None else None
                if na is not None:
                    decided = (na.reason,)
                elif s.cache_key is not None:
                    items = s.run(evidence)
                    if not any(isinstance(i, Failure) for i in items):
                        decided = (next((i.reason for i in items if isinstance(i, NotApplicable)), None),)
            except Exception:  # noqa: BLE001 - left to `evaluate`, which reports the check's error
                decided = None
            if decided is None:
                plan.live.append(s)
                self.tally.evaluate(s, evidence)
            else:
                plan.fixed.append((s.id, decided[0]))
        if len(self._plans) >= MAX_PLANS:
            self._plans.clear()
        self._plans[key] = plan
        self.tally.count(plan)
        return plan

    def run_event_checks(self, evidence: Any) -> None:
        for s in self.event_specs:
            self.tally.evaluate(s, evidence)

    def run_stream_checks(self, evidence: Any) -> None:
        for s in self.stream_specs:
            self.tally.evaluate(s, evidence)


#: What a protocol's identifier says of a message, for the delivery analysis: (entity, match,
#: commit ts) of a row message, None parts where it cannot be read, or None for a control
#: message that is no row (a DDL, a watermark, a bootstrap…).
Identified = tuple[Hashable | None, Hashable | None, int | None] | None
#: Identifies the messages of one log, in offset order per partition (it may learn from the
#: stream: call it for every message, control messages included).
Identify = Callable[[str, bytes | None, bytes | None], Identified]


class ProtocolSpec(Protocol):
    """What a protocol package's `spec` module declares about the protocol itself: its name, its
    options and its profiles (read-only, so that a module's constants satisfy it)."""

    @property
    def PROTOCOL(self) -> str: ...

    @property
    def OPTIONS(self) -> tuple[OptionSpec, ...]: ...

    @property
    def PROFILES(self) -> tuple[Profile, ...]: ...


class ProtocolSuite(ABC):
    """A protocol as the harness and the CLI see it: one package implements it and registers it
    under the `conformance.protocols` entry-point group (so it may live in another distribution).

    Everything the harness calls is declared here; what differs between protocols and is not
    behaviour is a field of `capabilities`."""

    def __init__(self, *, name: str, title: str, options: tuple[OptionSpec, ...], profiles: tuple[Profile, ...] = (),
                 checks: CheckRegistry, spec_sources: tuple[str, ...] = (),
                 capabilities: Capabilities = Capabilities(), default: bool = False) -> None:
        self.name = name
        self.title = title
        self.options = options
        self.profiles = profiles
        self.spec_sources = spec_sources
        self.capabilities = capabilities
        # The protocol's own checks (the suite's package declares them all before it is built).
        self.checks = checks
        if checks.protocol != name:
            raise ValueError(f"protocol {name!r} was given the checks of {checks.protocol!r}")
        # The protocol `conformance run` and `check` use when none is named.
        self.default = default

    @classmethod
    def from_spec(cls, spec: ProtocolSpec, *, title: str, checks: CheckRegistry, spec_sources: tuple[str, ...] = (),
                  capabilities: Capabilities = Capabilities(), default: bool = False) -> Self:
        """The suite of the protocol `spec` declares: named `spec.PROTOCOL`, with its options and profiles."""
        return cls(name=spec.PROTOCOL, title=title, options=spec.OPTIONS, profiles=spec.PROFILES, checks=checks,
                   spec_sources=spec_sources, capabilities=capabilities, default=default)

    def __repr__(self) -> str:
        return f"<protocol {self.name}>"

    # -- options ----------------------------------------------------------------------------

    def option(self, name: str) -> OptionSpec:
        for o in self.options:
            if o.name == name:
                return o
        known = ", ".join(o.name for o in self.options)
        raise ConfigurationError(f"unknown option {name!r} for protocol {self.name}; known options: {known}")

    def resolve_options(self, given: Mapping[str, str]) -> dict[str, str]:
        """Defaults, then the profile (if any), then explicit values; all validated."""
        out = {o.name: o.default for o in self.options}
        given = dict(given)
        prof_name = given.pop("profile", None)
        if prof_name is not None:
            prof = next((p for p in self.profiles if p.name == prof_name), None)
            if prof is None:
                raise ConfigurationError(
                    f"unknown profile {prof_name!r}; known: {', '.join(p.name for p in self.profiles)}")
            out.update(prof.values)
            out["profile"] = prof_name
        for k, v in given.items():
            out[k] = self.option(k).validate(v)
        self.check_combination(out)
        return out

    def check_combination(self, options: Mapping[str, str]) -> None:
        """Raise ConfigurationError for contradictory options: all `combination_problems` in one message."""
        problems = self.combination_problems(options)
        if problems:
            raise ConfigurationError("; ".join(problems))

    def combination_problems(self, options: Mapping[str, str]) -> list[str]:
        """What contradicts what among `options`, a sentence each (protocol specific; most accept all)."""
        return []

    def needs_registry(self, options: Mapping[str, str]) -> bool:
        """Whether records under these options are framed with registry ids (a capture then
        needs the registry): the capability, unless the options decide (a converter choice)."""
        return self.capabilities.needs_registry

    def generation_fits(self, options: Mapping[str, str]) -> str | None:
        """None when generated workloads can run under these options; else why not (a run leaves
        the combination out, or refuses it when it was asked for). Most protocols fit all."""
        return None

    def matrix(self, pinned: Mapping[str, Sequence[str]], *, full: bool = True) -> list[dict[str, str]]:
        """Option combinations to run: matrix axes expanded unless pinned (or `full` is off);
        pinned options may list several values (`all`: every choice). A `cycle` axis is spread
        over the other axes' combinations (see `OptionSpec.cycle`)."""
        axes: list[tuple[str, Sequence[str]]] = []
        cycled: list[OptionSpec] = []
        for name, values in pinned.items():
            if name != "profile":
                o = self.option(name)
                if o.choices and any(v.strip().lower() == "all" for v in values):
                    values = o.choices
            axes.append((name, values))
        if full:
            for o in self.options:
                if o.matrix and o.name not in pinned and o.choices:
                    if o.cycle:
                        cycled.append(o)
                    else:
                        axes.append((o.name, o.matrix_choices or o.choices))
        combos = []
        for values in itertools.product(*(v for _, v in axes)):
            given = {name: value for (name, _), value in zip(axes, values, strict=True)}
            try:
                combos.append(self.resolve_options(given))
            except ConfigurationError:
                if full and not all(n in pinned for n in given):
                    continue  # an expanded axis produced an invalid combination: skip it
                raise
        for o in cycled:
            choices = o.matrix_choices or o.choices or ()
            n = len(choices)
            relevant = [c for c in combos if self.option_matters(o.name, c)]
            # k + k // n: consecutive combinations differ in their last axis, and also take
            # different values here across each block of n, so every pair of values meets.
            for k, c in enumerate(relevant):
                c[o.name] = choices[(k + k // n) % n]
            if len(relevant) < n and relevant:
                # Too few combinations to carry every value: add the missing ones to the first.
                for v in choices[len(relevant):]:
                    combos.append({**relevant[0], o.name: v})
        return combos

    def option_matters(self, name: str, options: Mapping[str, str]) -> bool:
        """Whether option `name` changes anything under the other `options` (the registry level
        does not where nothing is registered)."""
        if name == REGISTRY_COMPATIBILITY.name:
            return self.needs_registry(options)
        return True

    def registry_options(self) -> dict[str, str]:
        """Options under which the encoders register schemas (a converter choice), for the
        registry mutants; none where they always do."""
        return {}

    def registry_level(self, options: Mapping[str, str]) -> str | None:
        """The compatibility level the run sets on the subjects of a unit under `options` (None:
        the protocol has no such option, or nothing is registered under these options)."""
        level = options.get(REGISTRY_COMPATIBILITY.name)
        if not level or not self.needs_registry(options):
            return None
        return level.upper()

    def subjects(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> set[str]:
        """The registry subjects the encoder registers a workload's schemas under."""
        return {s for t in self.topics(workload, options, topic_prefix) for s in self.topic_subjects(t)}

    def topic_subjects(self, topic: str) -> set[str]:
        """The subjects of one topic's key and value schemas: Confluent's TopicNameStrategy
        (`<topic>-key`, `<topic>-value`) unless the protocol names them otherwise."""
        return {f"{topic}-key", f"{topic}-value"}

    def non_default(self, options: Mapping[str, str]) -> dict[str, str]:
        """The options that differ from the defaults (what a replay command must pin), in the
        order the protocol declares them (so that labels read the same in every mode)."""
        return {o.name: options[o.name] for o in self.options if o.name in options and options[o.name] != o.default}

    # -- encoders ---------------------------------------------------------------------------

    @abstractmethod
    def reference(self) -> EncoderInfo:
        """The reference encoder (byte-exact where the notes say so)."""

    @abstractmethod
    def mutants(self) -> Sequence[MutantSpec]:
        """The deliberately broken encoders, each naming the check that must catch it."""

    def encoders(self) -> list[EncoderInfo]:
        """The reference, its mutants, and the delivery mutants (the reference behind a broken
        sink)."""
        from .mutants import encoder_infos

        return encoder_infos(self)

    # -- checking ---------------------------------------------------------------------------

    @abstractmethod
    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> Checker:
        """A checker for one stream (see `CheckerMode`); `partitions` is the topics' partition
        count where the harness knows it."""

    @abstractmethod
    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Collection[str]:
        """Every topic the workload's output goes to (also those that only receive control
        messages), so that each is judged even if nothing reached it."""

    @abstractmethod
    def expected_versions(self, workload: Workload, options: Mapping[str, str], topic_prefix: str
                          ) -> Iterable[Version]:
        """Every row message the workload should put in the log, per entity in commit order."""

    @abstractmethod
    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        """Identifies messages of one log for the delivery analysis (stateful: one per log)."""

    @abstractmethod
    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        """Whether row messages carry their commit ts under these options."""

    # -- the tool's own configuration -------------------------------------------------------------

    #: Properties of the tool's configuration that do not change what it writes (names, or
    #: prefixes ending in '.'); `--connector-config` leaves them out without a note.
    config_irrelevant: tuple[str, ...] = ()

    def connector_options(self, config: Mapping[str, str]) -> ConnectorOptions:
        """The run's options from the tool's own configuration (`--connector-config`): its
        properties that are options of this protocol; the others it cannot model are listed."""
        from .connector_config import connector_options

        return connector_options(config, {o.name for o in self.options}, self.config_irrelevant)

    # -- whole tools (black-box mode) -----------------------------------------------------------

    def tool_record(self, record: Record, options: Mapping[str, str], registry: Any = None) -> ToolRecord | None:
        """Where one of a whole tool's records belongs: its table and source transaction (see
        `encoders.tool.ToolRecord`), so that records a tool wrote to Kafka on its own can be
        grouped per event of the workload (`options`: the run's, `registry`: what framed records
        are read with). None: this protocol cannot place them (the default)."""
        return None

    @property
    def places_tool_records(self) -> bool:
        return type(self).tool_record is not ProtocolSuite.tool_record

    def record_table(self, database: str, table: str) -> tuple[str, str]:
        """A table as this protocol's records name it (`ToolRecord.table`): as the source names it,
        unless the protocol rewrites names (MaxScale's Avro sanitizer)."""
        return (database, table)

    def field_ids(self, event: Event, records: Sequence[Record], options: Mapping[str, str], registry: Any = None
                  ) -> FieldIds | None:
        """The ids a deployment gave one source transaction or DDL (`event`, the workload's), from
        its records (see `encoders.tool.FieldIds`): `check --workload` gives them to the workload's
        event that the capture's is joined to. None: this protocol cannot judge a capture against a
        workload (the default)."""
        return None

    def event_position(self, event: Event) -> str | None:
        """What a record that names the event that made it (`ToolRecord.position`) names it by:
        the source position (a MariaDB GTID) by default."""
        return getattr(event, "position", None)

    def field_reproducible(self, event: Event) -> bool:
        """Whether a deployment makes this event of the workload too (not: TiCDC's watermarks,
        which a deployment makes on its own schedule)."""
        return True

    #: Whether a capture's DDL records (`ToolRecord.ddl`) are joined to the workload's DDL events.
    field_joins_ddl: bool = False

    #: Whether `check --workload` joins a capture row by row (`harness/field.join_rows`): each
    #: event takes the captured records of the delivery identities (`identifier`) the reference
    #: writes for it, in order; for a protocol whose records name no source transaction (TiCDC
    #: Avro: a commit ts only with its extension, none on a tombstone).
    field_joins_rows: bool = False

    def field_table(self, record: Record, options: Mapping[str, str], registry: Any = None) -> tuple[str, str] | None:
        """The table a captured record is about, as `record_table` names it (for placing a
        deployment's records in the workloads of an export); by default what `tool_record` says."""
        placed = self.tool_record(record, options, registry)
        return placed.table if placed is not None else None

    def field_tableless(self, event: Event) -> bool:
        """Whether this event of the workload makes a transaction whose records name no table
        (Debezium: a TRUNCATE's empty BEGIN/END), which `check --workload` places between the
        transactions around it."""
        return False

    def field_refuses(self, options: Mapping[str, str]) -> str | None:
        """Why `check --workload` cannot judge captures made under these options (None: it can)."""
        return None

    @property
    def joins_captures(self) -> bool:
        return self.field_joins_rows or (self.places_tool_records
                                         and type(self).field_ids is not ProtocolSuite.field_ids)


def describe_options(options: Mapping[str, str], suite: ProtocolSuite) -> str:
    """Short label of an option combination: only what differs from the defaults."""
    short = {o.name: o.short or o.name for o in suite.options}
    prof = next((p for p in suite.profiles if p.name == options.get("profile")), None)
    # What the profile set is said by its name alone.
    set_by_profile = dict(prof.values) if prof is not None else {}
    diffs = [f"{short[k]}={v}" for k, v in suite.non_default(options).items() if set_by_profile.get(k) != v]
    if "profile" in options:
        diffs.insert(0, f"profile={options['profile']}")
    return " ".join(diffs) or "defaults"


def parse_option_args(args: Iterable[str]) -> dict[str, list[str]]:
    """`--option k=v` (repeatable; `k=v1,v2` or repeating k gives several values)."""
    out: dict[str, list[str]] = {}
    for a in args:
        if "=" not in a:
            raise ConfigurationError(f"--option needs key=value, got {a!r}")
        k, v = a.split("=", 1)
        k = k.strip()
        vals = [x for x in (s.strip() for s in v.split(",")) if x] if k not in ("topic",) else [v]
        out.setdefault(k, [])
        for x in vals or [""]:
            if x not in out[k]:
                out[k].append(x)
    return out
