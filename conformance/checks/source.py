"""Source truth: does the server do with the generated SQL what the model says it does?

When a workload runs through a real server (`--upstream`), the suite records what the server
did (`conformance.model.truth`). These checks compare it with the model's prediction:

* `source.statement-executes`: every generated statement executes;
* `source.rows-affected`: every generated DML matches exactly the one row the model changes;
* `source.stored-values`: every row a transaction touched reads back, before COMMIT, as the
  model's image, or differs only by a conversion the dialect names (MariaDB's signed zero,
  PostgreSQL's char(n) padding...);
* `source.log-images`: the change log holds each transaction's row changes with the model's
  operations, columns and values (conversions as above);
* `source.commit-order`: the log commits the workload's transactions and DDL once each, in the
  order they were applied, at increasing positions (GTID / LSN).

A failure here is a defect of the generator, the model or the capture - never of the encoder
under test - and says so (`Actor.SUITE`), with the SQL that shows it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..model.dialects import Conversion, compare_stored, dialect
from ..model.events import Ddl, RowChange, Transaction
from ..model.truth import AppliedEvent, LoggedEvent, SourceTruth, position_key
from ..model.values import Value
from .registry import COMMON, Actor, Failure, Level, Location, NotApplicable, Scope, check
from .results import Tally

STATEMENT_EXECUTES = "source.statement-executes"
ROWS_AFFECTED = "source.rows-affected"
STORED_VALUES = "source.stored-values"
LOG_IMAGES = "source.log-images"
COMMIT_ORDER = "source.commit-order"
SOURCE_CHECKS = (STATEMENT_EXECUTES, ROWS_AFFECTED, STORED_VALUES, LOG_IMAGES, COMMIT_ORDER)

CLAUSE = ("cdc-conformance source truth (issue 13): the generators' SQL is real - the model predicts what the "
          "server stores and logs")
HINT = "a defect of the generator, the model or the capture (who must act: the suite), not of the encoder"


@dataclass(frozen=True, slots=True)
class AppliedEvidence:
    """One applied event (transaction or DDL) with what the server said."""

    applied: AppliedEvent
    dialect: str
    server: str
    conversions: Counter[Conversion] = field(default_factory=Counter, compare=False)


@dataclass(frozen=True, slots=True)
class LogEvidence(AppliedEvidence):
    """One committed event and what the change log holds for it."""

    logged: tuple[LoggedEvent, ...] = ()
    captured: bool = False


@dataclass(frozen=True, slots=True)
class OrderEvidence:
    truth: SourceTruth


def _where(a: AppliedEvent) -> Location:
    e = a.event
    table = None
    if isinstance(e, Ddl):
        t = e.table or e.pre_table
        table = t.qualified_name if t is not None else e.database
    elif e.changes:
        table = e.changes[0].table.qualified_name
    return Location(table=table, part=f"event {a.index} ({'DDL' if isinstance(e, Ddl) else 'transaction'})")


def _short(v: Value) -> str:
    r = repr(v)
    return r if len(r) <= 200 else r[:200] + "…"


@check(STATEMENT_EXECUTES, level=Level.MUST, scope=Scope.SOURCE, clause=CLAUSE, needs_source=True)
def statement_executes(ev: AppliedEvidence) -> Iterator[Failure]:
    """Every generated statement executes on the server."""
    for r in ev.applied.statements:
        if r.error is not None:
            yield Failure(f"{ev.server} refused a generated statement", expected="the statement executes",
                          actual=r.error, location=_where(ev.applied), hint=f"{HINT}. SQL: {r.sql}",
                          actor=Actor.SUITE)


@check(ROWS_AFFECTED, level=Level.MUST, scope=Scope.SOURCE, clause=CLAUSE, needs_source=True)
def rows_affected(ev: AppliedEvidence) -> Iterator[Failure] | NotApplicable:
    """Every generated INSERT, UPDATE and DELETE matches exactly the one row the model changes."""
    if isinstance(ev.applied.event, Ddl):
        return NotApplicable("a DDL changes no rows")
    return (Failure(f"a generated statement matched {r.rows} rows on {ev.server}", expected=r.expected_rows,
                    actual=r.rows, location=_where(ev.applied), hint=f"{HINT}. SQL: {r.sql}", actor=Actor.SUITE)
            for r in ev.applied.statements if r.error is None and r.rows is not None and r.rows != r.expected_rows)


@check(STORED_VALUES, level=Level.MUST, scope=Scope.SOURCE, clause=CLAUSE, needs_source=True)
def stored_values(ev: AppliedEvidence) -> Iterator[Failure] | NotApplicable:
    """Each row a transaction touched reads back as the model's image, or differs only by a
    conversion the dialect names (time zone, signed zero, padding...)."""
    if isinstance(ev.applied.event, Ddl) or not ev.applied.committed:
        return NotApplicable("nothing was stored")
    return _stored(ev)


def _stored(ev: AppliedEvidence) -> Iterator[Failure]:
    d = dialect(ev.dialect)
    for s in ev.applied.stored:
        loc = Location(table=s.table.qualified_name, part=f"event {ev.applied.index} (transaction), key {s.key!r}")
        if (s.expected is None) != (s.stored is None):
            yield Failure("a row the transaction touched is " + ("missing" if s.stored is None else "still there"),
                          expected="the row" if s.expected is not None else "no row",
                          actual="no row" if s.stored is None else {k: _short(v) for k, v in s.stored.items()},
                          location=loc, hint=f"{HINT}. Read with: {s.sql}", actor=Actor.SUITE)
            continue
        if s.expected is None or s.stored is None:
            continue
        for c in s.table.columns:
            want, got = s.expected.get(c.name), s.stored.get(c.name)
            cmp = compare_stored(d, c.type, want, got)
            if cmp.conversion is not None:
                ev.conversions[cmp.conversion] += 1
            if not cmp.equal:
                yield Failure(f"the server stores a different {c.type} value than the model says",
                              expected=_short(want), actual=_short(got),
                              location=Location(table=s.table.qualified_name, column=c.name, part=loc.part),
                              hint=f"{HINT}. Read with: {s.sql}. Written by: "
                                   + "; ".join(r.sql for r in ev.applied.statements)[:600],
                              actor=Actor.SUITE)


def _compare_change(d_name: str, model: RowChange, logged: RowChange, conversions: Counter[Conversion]
                    ) -> Iterator[tuple[str, object, object, str | None]]:
    d = dialect(d_name)
    if model.op is not logged.op:
        yield ("operation", model.op.value, logged.op.value, None)
        return
    if model.table.qualified_name != logged.table.qualified_name:
        yield ("table", model.table.qualified_name, logged.table.qualified_name, None)
        return
    for label, want_img, got_img in (("before", model.before, logged.before), ("after", model.after, logged.after)):
        if want_img is None or got_img is None:
            if (want_img is None) != (got_img is None):
                yield (f"{label} image", want_img is not None, got_img is not None, None)
            continue
        for c in model.table.columns:
            if c.name not in got_img:
                yield (f"{label} image column", "present", "missing", c.name)
                continue
            cmp = compare_stored(d, c.type, want_img[c.name], got_img[c.name])
            if cmp.conversion is not None:
                conversions[cmp.conversion] += 1
            if not cmp.equal:
                yield (f"{label} value", _short(want_img[c.name]), _short(got_img[c.name]), c.name)
        extra = set(got_img) - set(model.table.column_names)
        for name in sorted(extra):
            yield (f"{label} image column", "absent", "present", name)


@check(LOG_IMAGES, level=Level.MUST, scope=Scope.SOURCE, clause=CLAUSE, needs_source=True)
def log_images(ev: LogEvidence) -> Iterator[Failure] | NotApplicable:
    """The change log holds each transaction's row changes: the model's operations, tables,
    columns and values (up to the dialect's named conversions)."""
    if not ev.captured:
        return NotApplicable("this upstream does not read its change log")
    if isinstance(ev.applied.event, Ddl):
        return NotApplicable("DDL is judged by source.commit-order")
    if len(ev.logged) != 1:
        return NotApplicable("the transaction is not in the log once (source.commit-order reports it)")
    return _log_images(ev)


def _log_images(ev: LogEvidence) -> Iterator[Failure]:
    txn = ev.applied.event
    assert isinstance(txn, Transaction)
    logged = ev.logged[0]
    loc = _where(ev.applied)
    for table, names in logged.columns:
        model_names = next((ch.table.column_names for ch in txn.changes if ch.table.qualified_name == table), None)
        if model_names is not None and tuple(names) != model_names:
            yield Failure("the log describes the table with other columns than the model", expected=list(model_names),
                          actual=list(names), location=Location(table=table, part=loc.part), hint=HINT,
                          actor=Actor.SUITE)
    if len(logged.changes) != len(txn.changes):
        yield Failure(f"the log has {len(logged.changes)} row changes for a transaction of {len(txn.changes)}",
                      expected=len(txn.changes), actual=len(logged.changes), location=loc,
                      hint=f"{HINT}. {logged.note}".rstrip(". "), actor=Actor.SUITE)
        return
    for i, (m, g) in enumerate(zip(txn.changes, logged.changes, strict=True)):
        for what, want, got, column in _compare_change(ev.dialect, m, g, ev.conversions):
            yield Failure(f"row change {i} in the log differs from the model: {what}", expected=want, actual=got,
                          location=Location(table=m.table.qualified_name, column=column,
                                            part=f"{loc.part}, change {i} ({m.op.value}) at {logged.position}"),
                          hint=HINT, actor=Actor.SUITE)


@check(COMMIT_ORDER, level=Level.MUST, scope=Scope.SOURCE, clause=CLAUSE, needs_source=True)
def commit_order(ev: OrderEvidence) -> Iterator[Failure] | NotApplicable:
    """The log holds every committed transaction and DDL of the workload once, in the order the
    suite applied them, at increasing positions (MariaDB GTID, PostgreSQL LSN)."""
    if not ev.truth.captured:
        return NotApplicable("this upstream does not read its change log")
    return _order(ev.truth)


def _order(truth: SourceTruth) -> Iterator[Failure]:
    committed = [a.index for a in truth.applied if a.committed]
    seen = Counter(le.applied_index for le in truth.logged if le.applied_index is not None)
    for idx in committed:
        if seen[idx] != 1:
            yield Failure(f"event {idx} is in the log {seen[idx]} times", expected=1, actual=seen[idx],
                          location=Location(part=f"event {idx}"), hint=HINT, actor=Actor.SUITE)
    for le in truth.logged:
        if le.applied_index is None:
            yield Failure("the log has a transaction of this workload that the suite never applied",
                          expected="nothing", actual=le.position, location=Location(part=f"log {le.position}"),
                          hint=f"{HINT}. {le.note}".rstrip(". "), actor=Actor.SUITE)
    order = [le for le in truth.logged if le.applied_index is not None]
    for prev, cur in zip(order, order[1:], strict=False):
        assert prev.applied_index is not None and cur.applied_index is not None
        if cur.applied_index < prev.applied_index:
            yield Failure("the log commits events in another order than the suite applied them",
                          expected=f"event {prev.applied_index} before event {cur.applied_index}",
                          actual=f"event {cur.applied_index} at {cur.position} after event {prev.applied_index} "
                                 f"at {prev.position}", location=Location(part=f"log {cur.position}"), hint=HINT,
                          actor=Actor.SUITE)
        elif position_key(cur.position) < position_key(prev.position):
            yield Failure("log positions go back", expected=f"after {prev.position}", actual=cur.position,
                          location=Location(part=f"log {cur.position}"), hint=HINT, actor=Actor.SUITE)


# -- running them ----------------------------------------------------------------------------

@dataclass(slots=True)
class SourceSummary:
    """What a workload's judgement saw besides findings: the conversions the dialect named."""

    conversions: Counter[Conversion] = field(default_factory=Counter)
    events: int = 0
    rows: int = 0

    def notes(self) -> list[str]:
        out = [f"{self.events} events and {self.rows} row changes applied to the server and read back"]
        if self.conversions:
            out.append("stored values that differ from the model by a named conversion: "
                       + ", ".join(f"{c.value} ×{n}" for c, n in self.conversions.most_common()))
        return out


def judge_source(truth: SourceTruth, tally: Tally) -> SourceSummary:
    """Run every source.* check on one workload's truth; findings go to `tally`."""
    summary = SourceSummary()
    by_index: dict[int, list[LoggedEvent]] = {}
    for le in truth.logged:
        if le.applied_index is not None:
            by_index.setdefault(le.applied_index, []).append(le)
    specs = {cid: COMMON[cid] for cid in SOURCE_CHECKS}
    for a in truth.applied:
        summary.events += 1
        if isinstance(a.event, Transaction):
            summary.rows += len(a.event.changes)
        ev = AppliedEvidence(a, truth.dialect, truth.server, summary.conversions)
        for cid in (STATEMENT_EXECUTES, ROWS_AFFECTED, STORED_VALUES):
            tally.evaluate(specs[cid], ev)
        if a.committed:
            tally.evaluate(specs[LOG_IMAGES], LogEvidence(ev.applied, ev.dialect, ev.server, ev.conversions,
                                                          tuple(by_index.get(a.index, ())), truth.captured))
    tally.evaluate(specs[COMMIT_ORDER], OrderEvidence(truth))
    return summary
