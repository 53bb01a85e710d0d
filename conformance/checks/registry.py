"""The `@check` registry: stable ids, obligation levels, spec clauses, scopes.

A check is one function. It receives evidence and

* returns `None` (or yields nothing): passed;
* returns or yields `NotApplicable(reason)`: the evidence has nothing for it to judge;
* raises or yields `Failure(...)`: the encoder broke the rule — with expected / actual /
  location, so the report can say who must act.

An exception of any other kind is the check's own bug: the runner reports it as `errored`
with its traceback, and the run goes on.
"""

from __future__ import annotations

import enum
import functools
import inspect
import re
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import GeneratorType
from typing import Any


class Level(enum.StrEnum):
    MUST = "MUST"
    SHOULD = "SHOULD"
    # Reported, never fails a run: findings about the infrastructure (a test broker's known
    # gaps), not about the implementation under test.
    INFO = "INFO"


class Scope(enum.StrEnum):
    """What one evaluation of the check looks at."""

    INPUT = "input"  # one line of a captured input (format of the capture itself)
    RECORD = "record"  # one Kafka record (key, value, headers) with its decoded parts
    EVENT = "event"  # one source event and every record the encoder made for it (needs a workload)
    STREAM = "stream"  # one topic (all partitions, offset order)
    RUN = "run"  # the encoder's behaviour over the whole run (crashes, hangs)
    SOURCE = "source"  # what a real server did with the generated SQL (the generator and model, not the encoder)


class Outcome(enum.StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    ERRORED = "errored"
    SKIPPED = "skipped"
    NOT_APPLICABLE = "not-applicable"


class Actor(enum.StrEnum):
    """Who must act on a finding."""

    ENCODER = "encoder"  # the implementation under test
    CAPTURE = "capture"  # whoever produced the captured input file
    SUITE = "suite"  # a bug in cdc-conformance
    INFRASTRUCTURE = "infrastructure"  # broker / registry / environment


@dataclass(frozen=True, slots=True)
class Location:
    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    table: str | None = None
    column: str | None = None
    subject: str | None = None
    line: int | None = None  # line of a captured input file
    part: str | None = None  # "key" | "value" | "header:<name>"

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__slots__ if getattr(self, k) is not None}

    def within(self, table: str | None, column: str | None = None, part: str | None = None) -> Location:
        """The same record (topic, partition, offset, line), narrowed to a table, column and part."""
        return Location(self.topic, self.partition, self.offset, table=table, column=column, line=self.line,
                        part=part)

    def __str__(self) -> str:
        # Record coordinates first, then what within the record; `part` needs no label.
        bits = [str(v) if name == "part" else f"{name} {v}"
                for name in ("topic", "partition", "offset", "line", "part", "subject", "table", "column")
                if (v := getattr(self, name)) is not None]
        return ", ".join(bits) or "(no location)"


class Failure(Exception):
    """A violated rule. `expected` and `actual` are short renderings (strings or JSON data)."""

    def __init__(self, message: str, *, expected: Any = None, actual: Any = None,
                 location: Location | None = None, hint: str | None = None,
                 actor: Actor = Actor.ENCODER) -> None:
        super().__init__(message)
        self.message = message
        self.expected = expected
        self.actual = actual
        self.location = location or Location()
        self.hint = hint
        self.actor = actor

    def at(self, location: Location) -> Failure:
        """This failure with `location` filled in where it had nothing."""
        if self.location == Location():
            self.location = location
        return self

    def __repr__(self) -> str:
        return f"Failure({self.message!r}, expected={self.expected!r}, actual={self.actual!r})"


@dataclass(frozen=True, slots=True)
class NotApplicable:
    reason: str


# What a check function may return (generators yield the same items).
Verdict = Failure | NotApplicable | Iterable[Failure | NotApplicable] | None


@dataclass(frozen=True, slots=True)
class CheckSpec:
    id: str
    level: Level
    clause: str
    scope: Scope
    protocol: str
    fn: Callable[..., Any] = field(compare=False, repr=False)
    title: str = ""
    # Options the check needs to be meaningful, e.g. {"enable-tidb-extension": "true"}.
    needs_options: tuple[tuple[str, str], ...] = ()
    # True when the check can only be decided against the generated workload (source truth).
    needs_source: bool = False
    # For checks that judge only what is shared by many records (a schema, a topic): the key
    # of that shared part. The verdict is computed once per key and replayed, relocated, for
    # every other record with the same key.
    cache_key: Callable[[Any], Hashable] | None = field(default=None, compare=False, repr=False)
    # For checks most records give nothing to judge (a type check where the record has no column of
    # the type): `gate(evidence)` returns the NotApplicable the check answers, or None, and its
    # answer depends only on `gate_key(evidence)`. A checker asks it once per key instead of running
    # the check on every record (`protocols.base.CheckerBase`); the registered check answers the gate
    # first by itself, so the two cannot differ and the check's body does not restate it.
    gate: Callable[[Any], NotApplicable | None] | None = field(default=None, compare=False, repr=False)
    gate_key: Callable[[Any], Hashable] | None = field(default=None, compare=False, repr=False)
    # Where the published docs and the implementation disagree on what this check enforces:
    # what each says (the check follows the code unless a profile switch says otherwise).
    docs_vs_code: str | None = None
    # The delivery anomalies (`checks.delivery.Anomaly` values) whose occurrences this check
    # reports: the taxonomy learns which checks feed on each anomaly from here.
    anomalies: tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return inspect.cleandoc(self.fn.__doc__ or self.title)

    def run(self, evidence: Any) -> list[Failure | NotApplicable]:
        """Evaluate; every way a check can answer becomes a list of findings. A Failure raised
        (rather than returned or yielded) ends the check with the findings so far."""
        try:
            return self.normalise(self.fn(evidence))
        except Failure as f:
            return [f]

    def normalise(self, res: Any) -> list[Failure | NotApplicable]:
        """A check's answer as a list (iterating a generator may raise Failure: callers catch)."""
        if res is None:
            return []
        if isinstance(res, (Failure, NotApplicable)):
            return [res]
        # A generator or a list (what checks return) before the ABC's slower instance test.
        if res.__class__ is not GeneratorType and res.__class__ is not list and not isinstance(res, Iterable):
            raise TypeError(f"check {self.id} returned {res!r}")
        out: list[Failure | NotApplicable] = []
        try:
            for item in res:
                if not isinstance(item, (Failure, NotApplicable)):
                    raise TypeError(f"check {self.id} yielded {item!r}, not a Failure/NotApplicable")
                out.append(item)
        except Failure as f:
            out.append(f)
        return out


#: A check id: dot-separated lowercase words (`message.json`, `type.decimal`), at least two.
_ID = re.compile(r"[a-z0-9]+(?:[-_][a-z0-9]+)*(?:\.[a-z0-9]+(?:[-_][a-z0-9]+)*)+")


class CheckRegistry:
    """One protocol's checks (or the protocol-independent ones, `COMMON`); `@registry(id, …)`
    declares one. Inside a protocol an id is relative (`message.json`); its full id is
    `<protocol>.message.json` and never changes once published."""

    def __init__(self, protocol: str) -> None:
        self.protocol = protocol
        self._specs: dict[str, CheckSpec] = {}

    def __repr__(self) -> str:
        return f"<checks of {self.protocol}: {len(self._specs)}>"

    def full_id(self, id: str) -> str:
        """The published id of `id` (relative inside a protocol, as written for the common checks)."""
        if not _ID.fullmatch(id):
            raise ValueError(f"check id {id!r} is not dot-separated lowercase words (area.rule)")
        if self.protocol == "*":
            return id
        if id.startswith(self.protocol + "."):
            raise ValueError(f"check id {id!r} names its protocol: ids inside {self.protocol} are relative")
        return f"{self.protocol}.{id}"

    def __call__(self, id: str, *, level: Level, clause: str, scope: Scope,
                 needs_options: dict[str, str] | None = None, needs_source: bool = False,
                 cache_key: Callable[[Any], Hashable] | None = None, docs_vs_code: str | None = None,
                 anomalies: Iterable[str] = (),
                 gate: tuple[Callable[[Any], Hashable], Callable[[Any], NotApplicable | None]] | None = None,
                 first: Callable[[Any], NotApplicable | None] | None = None,
                 ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Register a check. `gate` is `(gate_key, gate)`: see `CheckSpec.gate`. `first` is a gate
        with no key: the check answers its NotApplicable, when it has one, before its body runs."""
        full = self.full_id(id)
        if gate is not None and first is not None:
            raise ValueError(f"check {full!r}: a gate is answered first already; pass gate or first, not both")
        precondition = gate[1] if gate is not None else first

        def deco(body: Callable[..., Any]) -> Callable[..., Any]:
            fn = body if precondition is None else _answering_first(precondition, body)
            if full in self._specs and self._specs[full].fn.__qualname__ != fn.__qualname__:
                raise ValueError(f"duplicate check id {full!r}")
            doc = inspect.cleandoc(fn.__doc__ or "")
            spec = CheckSpec(id=full, level=level, clause=clause, scope=scope, protocol=self.protocol, fn=fn,
                             title=" ".join(doc.split("\n\n")[0].split()) if doc else full,
                             needs_options=tuple(sorted((needs_options or {}).items())),
                             needs_source=needs_source, cache_key=cache_key, docs_vs_code=docs_vs_code,
                             anomalies=tuple(str(a) for a in anomalies),
                             gate_key=gate[0] if gate else None, gate=gate[1] if gate else None)
            self._specs[full] = spec
            fn.check_spec = spec  # type: ignore[attr-defined]
            return fn

        return deco

    def specs(self) -> list[CheckSpec]:
        """Every check declared here, by id."""
        return sorted(self._specs.values(), key=lambda c: c.id)

    def get(self, id: str) -> CheckSpec | None:
        """A check by its full id."""
        return self._specs.get(id)

    def __getitem__(self, id: str) -> CheckSpec:
        return self._specs[id]

    def __contains__(self, id: object) -> bool:
        return id in self._specs

    def resolve(self, id: str) -> CheckSpec | None:
        """A check by its id relative to this protocol or in full (here or among `COMMON`)."""
        if self.protocol != "*" and (s := self._specs.get(f"{self.protocol}.{id}")) is not None:
            return s
        return self._specs.get(id) or (COMMON.get(id) if self is not COMMON else None)


def _answering_first(precondition: Callable[[Any], NotApplicable | None], body: Callable[..., Any]
                     ) -> Callable[..., Any]:
    """`body` behind `precondition`: its NotApplicable when it has one, else what `body` says (a
    generator stays a generator, for callers that iterate a check's answer)."""
    if inspect.isgeneratorfunction(body):
        @functools.wraps(body)
        def findings(evidence: Any) -> Iterator[Any]:
            na = precondition(evidence)
            if na is not None:
                yield na
                return
            yield from body(evidence)

        return findings

    @functools.wraps(body)
    def verdict(evidence: Any) -> Any:
        na = precondition(evidence)
        return na if na is not None else body(evidence)

    return verdict


#: The protocol-independent checks (`checks.common`, `checks.delivery`, `checks.source`).
COMMON = CheckRegistry("*")
#: Declares a protocol-independent check (its id in full).
check = COMMON


def applicable_checks(checks: CheckRegistry, options: Mapping[str, str], *, source: bool
                      ) -> tuple[list[CheckSpec], dict[str, str]]:
    """A protocol's own checks that apply under `options`, and why each other one is skipped:
    it needs options the run does not have, or the generated workload (`source`)."""
    active, skipped = [], {}
    for s in checks.specs():
        missing = [f"{k}={v}" for k, v in s.needs_options if options.get(k, "") != v]
        if missing:
            skipped[s.id] = f"needs {', '.join(missing)}"
        elif (s.needs_source or s.scope is Scope.EVENT) and not source:
            skipped[s.id] = NEEDS_SOURCE
        else:
            active.append(s)
    return active, skipped


NEEDS_SOURCE = "needs the generated workload (decidable in `conformance run`, not on a captured or live topic)"

