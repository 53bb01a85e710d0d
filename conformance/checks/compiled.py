"""Compiled fast paths: one generated function per kind of record that decides, in one pass and
with no evidence built, that a record passes every record check its plan still runs.

`conformance check` meets production topics, where nearly every record passes. The checks
explain a failure (expected, actual, where); proving a pass needs none of that. So a protocol may
generate, once per kind of record (its schemas and shape: one `RecordPlan`), the Python source of
a function that returns a verdict only when it can prove every *live* check of the plan passes,
and compile it (as fastjsonschema and fastavro's compiled readers do). A record it accepts is
counted passed for those checks (`RecordPlan.fast`, settled like the plan's fixed checks); a
record it does not accept goes through the checks, which explain it exactly as before. The
fast path never fails a record: rejecting only hands it over.

Each check that may run on the fast path has a *rule* next to it (`FastRules.rule`): it emits the
lines that prove, for one kind of record, that the check passes (`return None` wherever it cannot
be sure), or says it cannot (the plan then has no fast path). Where a check's answer on a kind
is not always "passed" (`FastRules.outcomes`, for protocols whose records have no plan that fixes
it), a rule may also say that the check answers one `NotApplicable` on every record of the kind,
or that it passes where the generated code found something to judge and answers a given
`NotApplicable` elsewhere (`Seen`): the generated function then returns which of these variants
the record is, and the checker counts the record under that variant's outcomes. The rules only read what the kind
decides (schemas, options); record values are only read by the generated code. Parity of the two
paths is a test over every mutant's records and a property over generated records (tests/unit/
test_fast_paths.py): the same tallies with the fast path on and off.

`CONFORMANCE_FAST_PATH=0` (or `off`, `false`, `no`) turns every fast path off; `forced(False)`
does it in a test.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import CodeType, FunctionType
from typing import Any

from .registry import CheckRegistry, CheckSpec, NotApplicable
from .results import RecordPlan

ENV = "CONFORMANCE_FAST_PATH"
_OFF = frozenset({"0", "off", "false", "no"})
_forced: bool | None = None


def enabled() -> bool:
    """Whether checkers use their compiled fast paths (read when a checker is made)."""
    if _forced is not None:
        return _forced
    return os.environ.get(ENV, "1").strip().lower() not in _OFF


@contextlib.contextmanager
def forced(on: bool) -> Iterator[None]:
    """Fast paths on or off for the checkers made inside the block (tests compare both)."""
    global _forced
    before, _forced = _forced, on
    try:
        yield
    finally:
        _forced = before


class Source:
    """The source of one generated function: its lines, and the constants it names (schema-level
    objects the rules bind, e.g. a field's value rule), which `build` binds as parameter defaults."""

    def __init__(self, name: str, args: tuple[str, ...]) -> None:
        self.name = name
        self.args = args
        self.lines: list[str] = [f"def {name}({', '.join(args)}):"]
        self.consts: dict[str, Any] = {}
        self._ids: dict[int, str] = {}
        self._n = 0
        self._values: dict[str, str] = {}
        self._strs: dict[str, str] = {}
        self._guards: set[str] = set()

    def const(self, obj: Any, hint: str = "c") -> str:
        """A global name for `obj` (the same name for the same object, or the same string)."""
        if obj.__class__ is str:
            got = self._strs.get(obj)
            if got is None:
                got = self._strs[obj] = self.fresh(hint)
                self.consts[got] = obj
            return got
        got = self._ids.get(id(obj))
        if got is not None and self.consts[got] is obj:
            return got
        name = self.fresh(hint)
        self.consts[name] = obj
        self._ids[id(obj)] = name
        return name

    def fresh(self, hint: str = "x") -> str:
        """A local or global name not used yet."""
        self._n += 1
        return f"_{hint}{self._n}"

    def line(self, text: str, indent: int = 1) -> None:
        self.lines.append("    " * indent + text)

    def value(self, expr: str, hint: str = "v", *, name: str | None = None) -> str:
        """A local holding `expr` (named `name`, or a fresh name), assigned at the function's top
        level the first time a rule asks (rules that read the same value share it)."""
        got = self._values.get(expr)
        if got is None:
            got = self._values[expr] = name or self.fresh(hint)
            self.line(f"{got} = {expr}")
        return got

    def guard(self, condition: str) -> None:
        """`if not (condition): return None` at the top level, once (rules that need the same
        fact share the test)."""
        if condition not in self._guards:
            self._guards.add(condition)
            self.line(f"if not ({condition}): return None")

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def build(self) -> Callable[..., Any]:
        """The function, its constants bound. Its text is compiled once per distinct text and set
        of constant names (kinds alike share the code), the constants as parameters after the
        function's own, with the kind's constants as their defaults: a kind's function costs one
        function object (its constants in one tuple, not a cell each: less for the collector to
        walk), and reads them as locals."""
        return self.factory().bind(self.consts)

    def factory(self) -> Factory:
        """The compiled text for these constant names (`build`), to bind other constants of the
        same names to the same code without writing the text again."""
        text = self.text
        names = tuple(sorted(self.consts))
        got = _MAKERS.get((text, names))
        if got is None:
            if len(_MAKERS) >= _MAKERS_MAX:
                _MAKERS.clear()
            source = f"def {self.name}({', '.join(self.args + names)}):\n" + "".join(
                line + "\n" for line in self.lines[1:])
            namespace: dict[str, Any] = {}
            # Our own generated source, from schema-level data only.
            exec(compile(source, f"<fast path {self.name}>", "exec"), namespace)  # noqa: S102
            got = _MAKERS[(text, names)] = Factory(namespace[self.name].__code__, namespace, names, text)
        return got


@dataclass(frozen=True, slots=True)
class Factory:
    """A compiled text (`Source.factory`): its code, whose parameters after the function's own are
    the constants `names` in order, and the globals it runs in."""

    code: CodeType
    globals: dict[str, Any]
    names: tuple[str, ...]
    text: str

    def bind(self, consts: Mapping[str, Any]) -> Callable[..., Any]:
        """The function with these constants (every name of `names`) as its defaults."""
        fn = FunctionType(self.code, self.globals, self.code.co_name, tuple([consts[n] for n in self.names]))
        fn.__source__ = self.text  # type: ignore[attr-defined]  # for a reader who wants to see it
        return fn


#: The factory of each (text, constant names) built (`Source.build`).
_MAKERS: dict[tuple[str, tuple[str, ...]], Factory] = {}
_MAKERS_MAX = 4096

@dataclass(frozen=True, slots=True)
class Seen:
    """A rule's answer: the check passes on a record where the emitted lines set the local `flag`
    true (it found something to judge, and judged it good), and answers `NotApplicable(reason)`
    where they left it false; `flag` starts false."""

    flag: str
    reason: str


#: A rule: emit into the source the lines proving a check passes on records of one kind (their
#: evidence given as an example of the kind), or return False when it cannot; with
#: `FastRules.outcomes`, also a `NotApplicable` (its answer on every record of the kind, no lines
#: emitted) or a `Seen`.
Rule = Callable[[Any, Source], bool | NotApplicable | Seen]
#: What a check answers on a record the fast path accepts: None (passed), a `NotApplicable` for
#: every record of the kind, or a `Seen` (which of the two, the record says).
Answer = NotApplicable | Seen | None


class FastRules:
    """The fast-path rules of one protocol's checks, by full check id."""

    def __init__(self, checks: CheckRegistry) -> None:
        self.checks = checks
        self._rules: dict[str, Rule] = {}

    def rule(self, id: str) -> Callable[[Rule], Rule]:
        """Declare the fast rule of check `id` (relative to the protocol, as `@check` takes it)."""
        full = self.checks.full_id(id)

        def deco(fn: Rule) -> Rule:
            if full in self._rules:
                raise ValueError(f"duplicate fast rule for {full!r}")
            self._rules[full] = fn
            return fn

        return deco

    def same(self, id: str) -> Callable[[Rule], Rule]:
        """`rule` for a check id given in full (a family of checks declared in a loop)."""
        def deco(fn: Rule) -> Rule:
            self._rules[id] = fn
            return fn

        return deco

    def __contains__(self, id: object) -> bool:
        return id in self._rules

    def outcomes(self, specs: list[CheckSpec], evidence: Any, src: Source) -> list[Answer] | None:
        """Every check's rule into `src`, and what each check answers on a record the generated
        code accepts (see `Answer`); None as soon as one check has no rule or its rule cannot."""
        out: list[Answer] = []
        for s in specs:
            rule = self._rules.get(s.id)
            got = rule(evidence, src) if rule is not None else False
            if got is False:
                return None
            out.append(None if got is True else got)
        return out


def new_kind(kinds: dict[Any, Any], key: Any, schema: Any, max_kinds: int, make: Callable[[Any], Any]) -> Any:
    """The kind to compile for `key` under `schema` (made by `make(schema)`, the cache emptied when
    it reaches `max_kinds`); None where the key already has a kind of that schema: compiled, and
    this record one it did not accept, or one found hopeless."""
    kind = kinds.get(key)
    if kind is not None and kind.schema is schema:
        return None
    if len(kinds) >= max_kinds:
        kinds.clear()
    kind = kinds[key] = make(schema)
    return kind


def variant_expression(answers: list[Answer]) -> str:
    """The expression the generated function returns: the bits of the `Seen` answers whose flag
    stayed false (0: every such check passed)."""
    bits = [f"(0 if {a.flag} else {1 << i})" for i, a in enumerate(s for s in answers if isinstance(s, Seen))]
    return " | ".join(bits) if bits else "0"


def variant_outcomes(specs: list[CheckSpec], answers: list[Answer], variant: int) -> list[tuple[str, str | None]]:
    """What each check answers on a record of `variant` (`variant_expression`): (check id, the
    not-applicable reason, or None: passed), as `RecordPlan.fixed` holds them."""
    out: list[tuple[str, str | None]] = []
    bit = 0
    for s, a in zip(specs, answers, strict=True):
        if a is None:
            out.append((s.id, None))
        elif isinstance(a, NotApplicable):
            out.append((s.id, a.reason))
        else:
            out.append((s.id, a.reason if variant >> bit & 1 else None))
            bit += 1
    return out


def variant_plan(outcomes: dict[int, RecordPlan], specs: list[CheckSpec], answers: list[Answer],
                 variant: int) -> RecordPlan:
    """The outcomes of the records of one variant of a kind, as a plan whose checks are all fixed
    (the tally counts them when it is read, as it counts a plan's): made once per variant met,
    kept in the kind's `outcomes`."""
    plan = outcomes.get(variant)
    if plan is None:
        plan = outcomes[variant] = RecordPlan()
        plan.fixed = variant_outcomes(specs, answers, variant)
    return plan


def kind_answers(specs: list[CheckSpec], ev: Any, known: Callable[[str], bool]) -> list[tuple[str, str | None]] | None:
    """Every record check's answer on a kind's first record `ev`, as `RecordPlan.fixed` holds
    them: None where a check the protocol's fast path does not `know` is among them, or one
    failed, errored or cannot be carried to other records of the kind (anything but passed or
    one `NotApplicable`)."""
    out: list[tuple[str, str | None]] = []
    for s in specs:
        sid = s.id
        if not known(sid):
            return None
        # `s.run(ev)` (or the gate's answer) with its two commonest answers taken as they come:
        # None (passed) and one NotApplicable; a Failure raised ends it as a failed check would.
        try:
            res = s.gate(ev) if s.gate is not None else None
            if res is None:
                res = s.fn(ev)
                if res is None:
                    out.append((sid, None))
                    continue
            if res.__class__ is NotApplicable:
                out.append((sid, res.reason))
                continue
            items = s.normalise(res)
        except Exception:  # noqa: BLE001 - a Failure raised, or the checks report it, on every record of the kind
            return None
        nas = [i for i in items if isinstance(i, NotApplicable)]
        if len(nas) < len(items):
            return None
        out.append((sid, nas[0].reason if nas else None))
    return out

