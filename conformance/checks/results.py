"""Tallies of check outcomes: what reaches the driver and the reports.

Every evaluation of a check ends in exactly one of passed / failed / errored /
not-applicable; `skipped` is decided for a whole check (e.g. it needs options the run does not
have). Failures are de-duplicated by signature (message, expected, actual, part, column) so a
broken schema does not produce a million identical lines: each distinct failure keeps its
first location, the workload it came from and an occurrence count.
"""

from __future__ import annotations

import traceback
from collections import Counter, OrderedDict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from .registry import Actor, CheckSpec, Failure, Level, Location, NotApplicable, Outcome

MAX_DISTINCT_FAILURES = 20
MAX_ERRORS = 5


def _short(v: Any, limit: int = 400) -> Any:
    """Keep reports readable: long renderings are cut, with the cut said."""
    if isinstance(v, bytes):
        v = "0x" + v.hex()
    if isinstance(v, str) and len(v) > limit:
        return v[:limit] + f"… ({len(v) - limit} more characters)"
    if isinstance(v, (list, tuple)) and len(v) > 50:
        return [*v[:50], f"… ({len(v) - 50} more items)"]
    return v


@dataclass(slots=True)
class FailureRecord:
    message: str
    expected: Any
    actual: Any
    location: Location
    hint: str | None
    actor: Actor
    count: int = 1
    workload: tuple[Any, Any] | None = None  # (seed, shard) of the generated workload, if any

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"message": self.message, "expected": self.expected, "actual": self.actual,
                             "location": self.location.to_json(), "actor": self.actor.value,
                             "count": self.count}
        if self.hint:
            d["hint"] = self.hint
        if self.workload is not None:
            d["seed"], d["shard"] = self.workload
        return d


@dataclass(slots=True)
class CheckTally:
    id: str
    level: Level
    clause: str
    protocol: str
    scope: str
    title: str
    passed: int = 0
    failed: int = 0
    errored: int = 0
    not_applicable: int = 0
    skipped: str | None = None
    failures: dict[tuple[Any, ...], FailureRecord] = field(default_factory=dict)
    more_failures: int = 0  # distinct failures beyond MAX_DISTINCT_FAILURES
    errors: list[str] = field(default_factory=list)
    na_reasons: Counter[str] = field(default_factory=Counter)

    @classmethod
    def for_spec(cls, spec: CheckSpec) -> CheckTally:
        return cls(spec.id, spec.level, spec.clause, spec.protocol, spec.scope.value, spec.title)

    @property
    def outcome(self) -> Outcome:
        if self.failed:
            return Outcome.FAILED
        if self.errored:
            return Outcome.ERRORED
        if self.passed:
            return Outcome.PASSED
        if self.skipped is not None:
            return Outcome.SKIPPED
        return Outcome.NOT_APPLICABLE

    def count_not_applicable(self, reason: str, n: int = 1) -> None:
        self.not_applicable += n
        if len(self.na_reasons) < 20 or reason in self.na_reasons:
            self.na_reasons[reason] += n

    def add_failure(self, f: Failure, workload: tuple[Any, Any] | None) -> None:
        exp, act = _short(f.expected), _short(f.actual)
        sig = (f.message, repr(exp), repr(act), f.location.part, f.location.column, f.location.table)
        rec = self.failures.get(sig)
        if rec is not None:
            rec.count += 1
        elif len(self.failures) < MAX_DISTINCT_FAILURES:
            self.failures[sig] = FailureRecord(f.message, exp, act, f.location, f.hint, f.actor,
                                               workload=workload)
        else:
            self.more_failures += 1

    def merge(self, other: CheckTally) -> None:
        self.passed += other.passed
        self.failed += other.failed
        self.errored += other.errored
        self.not_applicable += other.not_applicable
        if self.skipped is None:
            self.skipped = other.skipped
        for sig, rec in other.failures.items():
            mine = self.failures.get(sig)
            if mine is not None:
                mine.count += rec.count
            elif len(self.failures) < MAX_DISTINCT_FAILURES:
                self.failures[sig] = rec
            else:
                self.more_failures += rec.count
        self.more_failures += other.more_failures
        self.errors.extend(other.errors[: max(0, MAX_ERRORS - len(self.errors))])
        self.na_reasons.update(other.na_reasons)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "check": self.id, "outcome": self.outcome.value, "level": self.level.value,
            "clause": self.clause, "scope": self.scope, "title": self.title,
            "counts": {"passed": self.passed, "failed": self.failed, "errored": self.errored,
                       "not_applicable": self.not_applicable},
            "failures": [r.to_json() for r in self.failures.values()],
        }
        if self.more_failures:
            d["more_failures"] = self.more_failures
        if self.errors:
            d["errors"] = self.errors
        if self.skipped is not None:
            d["skipped"] = self.skipped
        if self.na_reasons:
            d["not_applicable_reasons"] = dict(self.na_reasons.most_common(5))
        return d


MEMO_SIZE = 20_000


def _relocated(items: list[Failure | NotApplicable], evidence: Any) -> list[Failure | NotApplicable]:
    """Cached findings moved to this record's coordinates (part, table and column stay)."""
    here = getattr(evidence, "loc", None)
    if here is None:
        return items
    out: list[Failure | NotApplicable] = []
    for i in items:
        if isinstance(i, Failure):
            loc = replace(i.location, topic=here.topic, partition=here.partition, offset=here.offset, line=here.line)
            out.append(Failure(i.message, expected=i.expected, actual=i.actual, location=loc, hint=i.hint,
                               actor=i.actor))
        else:
            out.append(i)
    return out


class RecordPlan:
    """The record checks of one kind of record (one plan key: its schemas, its shape), decided once.

    `fixed` holds the checks whose answer the key decides (a check with a `cache_key` that passed or
    had nothing to judge, a gate that said not applicable): they are counted, not run, for every
    further record of the kind, and the counts reach the tally when it is next read
    (`Tally.settle`). `live` are the checks that still run on every record.

    `fast` counts the records of the kind that a protocol's compiled fast path accepted (see
    `checks.compiled`): it proved that every live check passes on them, so each live check is
    counted passed for them, as `fixed` ones are, without being run."""

    __slots__ = ("fixed", "live", "count", "settled", "fast", "fast_settled")

    def __init__(self) -> None:
        self.fixed: list[tuple[str, str | None]] = []  # (check id, not-applicable reason or None: passed)
        self.live: list[CheckSpec] = []
        self.count = 0
        self.settled = 0
        self.fast = 0  # of `count`: records the fast path accepted (every live check passed)
        self.fast_settled = 0


class Tally:
    """Outcomes of every check of one run (one encoder, one option combination)."""

    def __init__(self, specs: Iterable[CheckSpec]) -> None:
        self._checks: dict[str, CheckTally] = {s.id: CheckTally.for_spec(s) for s in specs}
        # Plans with records counted since the tally was last read (see RecordPlan).
        self.unsettled: set[RecordPlan] = set()
        self.workload: tuple[Any, Any] | None = None  # set by the runner while it works on one
        # cache key -> (findings, whether any is a Failure)
        self._memo: OrderedDict[tuple[str, Hashable], tuple[list[Failure | NotApplicable], bool]] = OrderedDict()

    @property
    def checks(self) -> dict[str, CheckTally]:
        """Every check's tally, with the counts of record plans settled."""
        if self.unsettled:
            self.settle()
        return self._checks

    def count(self, plan: RecordPlan) -> None:
        """One more record of `plan`'s kind: its checks are counted when the tally is next read."""
        plan.count += 1
        self.unsettled.add(plan)

    def settle(self) -> None:
        """Add what record plans counted since the last call to the checks' tallies."""
        while self.unsettled:
            plan = self.unsettled.pop()
            n = plan.count - plan.settled
            plan.settled = plan.count
            for cid, reason in plan.fixed:
                t = self._checks[cid]
                if reason is None:
                    t.passed += n
                else:
                    t.count_not_applicable(reason, n)
            nf = plan.fast - plan.fast_settled
            if nf:
                plan.fast_settled = plan.fast
                for s in plan.live:
                    self._checks[s.id].passed += nf

    def __getstate__(self) -> dict[str, Any]:
        # The memo and the plans are per-process speed-ups: never shipped between Spark workers
        # and driver.
        return {"checks": self.checks, "workload": self.workload}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._checks = state["checks"]
        self.workload = state["workload"]
        self._memo = OrderedDict()
        self.unsettled = set()

    def _findings(self, spec: CheckSpec, evidence: Any) -> list[Failure | NotApplicable]:
        key = (spec.id, spec.cache_key(evidence))  # type: ignore[misc]
        cached = self._memo.get(key)
        if cached is not None:
            self._memo.move_to_end(key)
            return _relocated(cached[0], evidence) if cached[1] else cached[0]
        items = spec.run(evidence)
        self._memo[key] = (items, any(isinstance(i, Failure) for i in items))
        if len(self._memo) > MEMO_SIZE:
            self._memo.popitem(last=False)
        return items

    def evaluate(self, spec: CheckSpec, evidence: Any) -> bool:
        """Run one check on one piece of evidence; True when it passed."""
        t = self._checks[spec.id]
        failed = False
        na: str | None = None
        try:
            if spec.cache_key is None:
                # Fast paths for the two commonest answers: pass, and "nothing to judge here".
                res = spec.fn(evidence)
                if res is None:
                    t.passed += 1
                    return True
                if res.__class__ is NotApplicable:
                    t.count_not_applicable(res.reason)
                    return True
                items = spec.normalise(res)
            else:
                items = self._findings(spec, evidence)
            for item in items:
                if isinstance(item, Failure):
                    failed = True
                    t.add_failure(item, self.workload)
                elif na is None:
                    na = item.reason
        except Failure as f:
            failed = True
            t.add_failure(f, self.workload)
        except Exception:  # noqa: BLE001 - a check's own bug must not stop the run
            t.errored += 1
            if len(t.errors) < MAX_ERRORS:
                t.errors.append(traceback.format_exc(limit=8))
            return False
        if failed:
            t.failed += 1
        elif na is not None:
            t.count_not_applicable(na)
        else:
            t.passed += 1
        return not failed

    def fail(self, check_id: str, failure: Failure) -> None:
        """Record a failure found outside a check function (e.g. by the runner itself)."""
        t = self._checks[check_id]
        t.failed += 1
        t.add_failure(failure, self.workload)

    def passed(self, check_id: str) -> None:
        self._checks[check_id].passed += 1

    def skip(self, check_id: str, reason: str) -> None:
        self.checks[check_id].skipped = reason

    def merge(self, other: Tally) -> None:
        mine = self.checks
        for cid, t in other.checks.items():
            if cid in mine:
                mine[cid].merge(t)
            else:
                mine[cid] = t

    def failed_ids(self) -> set[str]:
        return {cid for cid, t in self.checks.items() if t.outcome is Outcome.FAILED}

    def __iter__(self) -> Any:
        return iter(sorted(self.checks.values(), key=lambda t: t.id))


def findings(items: Iterable[Failure | NotApplicable]) -> list[Failure]:
    return [i for i in items if isinstance(i, Failure)]
