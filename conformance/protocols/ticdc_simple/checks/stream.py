"""The TiCDC Simple checks of one source event's messages and of a topic's stream: a
consumer's schema knowledge, bootstraps, ordering."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from ....checks.delivery import Anomaly
from ....checks.registry import Failure, Level, Location, NotApplicable, Scope
from ....model.events import Ddl, Op, Transaction, Watermark
from ...kit import Findings
from .. import spec
from ..checker import (
    BUILD_TS,
    COMMIT_TS,
    KIND,
    OFFSET,
    RESOLVABLE,
    SEQ,
    TABLE,
    TABLE_ID,
    TYPE,
    VERSION,
    EntryTuple,
    EventEvidence,
    PartitionLog,
    StreamEvidence,
)
from .common import BOOTSTRAP_CHECK_PERIOD_MS, BOOTSTRAP_SLACK_MS, NOTES, SEED, check

# == one source event ===================================================================

@check("event.messages", level=Level.MUST, scope=Scope.EVENT, needs_source=True,
       clause=f"{NOTES} §2.1 (DML to the table's partition; DDL and WATERMARK to every partition), §3.4 (an UPDATE "
              "that changes a primary or unique key becomes DELETE + INSERT)")
def event_messages(ev: EventEvidence) -> Findings:
    """Each transaction gives one DML per row change (key-changing updates split into DELETE +
    INSERT), each table's rows in one partition; each DDL and WATERMARK one message per partition."""
    msgs = [r for r in ev.records if r.msg.ok]
    dml = [r for r in msgs if r.msg.kind == "DML"]
    others = [r for r in msgs if r.msg.kind not in ("DML", "BOOTSTRAP")]
    e = ev.event
    if isinstance(e, Transaction):
        want = [(s.table.qualified_name, {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}[s.op])
                for s in ev.expected_rows]
        got = [(f"{r.msg.get('database')}.{r.msg.get('table')}", str(r.msg.type)) for r in dml]
        if sorted(got) != sorted(want):
            yield Failure(f"the transaction's {len(want)} row changes gave {len(got)} DML messages that differ",
                          expected=want, actual=got, location=dml[0].at() if dml else None)
        parts: dict[str, set[int | None]] = {}
        for r in dml:
            parts.setdefault(f"{r.msg.get('database')}.{r.msg.get('table')}", set()).add(r.record.partition)
        for table, ps in parts.items():
            if len(ps) > 1:
                yield Failure(f"rows of {table} went to several partitions", expected="one partition per table",
                              actual=sorted(p or 0 for p in ps))
        if others:
            yield Failure("a transaction produced non-DML messages", expected="DML (and BOOTSTRAP)",
                          actual=[r.msg.kind for r in others])
    elif isinstance(e, (Ddl, Watermark)):
        kind = "DDL" if isinstance(e, Ddl) else "WATERMARK"
        got_parts = sorted(r.record.partition or 0 for r in others if r.msg.kind == kind)
        want_parts = list(range(ev.partitions))
        if got_parts != want_parts:
            yield Failure(f"the {kind} went to partitions {got_parts}", expected=want_parts, actual=got_parts)
        if dml:
            yield Failure(f"a {kind} produced DML messages", expected=kind, actual=[r.msg.type for r in dml])


# == the stream: consumers, bootstraps, order ===========================================

def _from_start(lg: PartitionLog) -> bool:
    return not lg.entries or lg.entries[0][OFFSET] == 0


def _bound_ms(o: spec.SimpleOptions) -> int:
    return int(max(0.0, o.bootstrap_interval_s) * 1000) + BOOTSTRAP_CHECK_PERIOD_MS + BOOTSTRAP_SLACK_MS


def _where(st: StreamEvidence, part: int, e: EntryTuple, what: str = "") -> Any:
    table = f"{e[TABLE][0]}.{e[TABLE][1]}" if e[TABLE] else None
    return Location(st.topic, part, e[OFFSET], table=table, column=what or None)


@check("consumer.schema-known", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Consumer (a DML is decoded with the schema of a DDL or BOOTSTRAP seen before it); {NOTES} "
              "§2.4 (resolved by exact (database, table, schemaVersion)), §2.6")
def schema_known(st: StreamEvidence) -> Findings:
    """Every DML resolves, by (database, table, schemaVersion), to a schema a DDL or BOOTSTRAP
    announced earlier in its partition (or partition 0, when bootstraps go only there). A log
    read from mid-stream may start with DMLs of tables it has not seen yet: those are allowed
    for one bootstrap interval."""
    judged = False
    for part, lg in sorted(st.logs.items()):
        first_bt = next((e[BUILD_TS] for e in lg.entries if e[BUILD_TS] is not None), None)
        joined = not _from_start(lg)
        bad: list[EntryTuple] = []
        for e in lg.entries:
            if e[KIND] != "DML" or e[RESOLVABLE] is None:
                continue
            judged = True
            if e[RESOLVABLE]:
                continue
            if joined:
                if not st.o.bootstraps_enabled:
                    continue  # no bootstraps: a consumer that joins late is not promised anything
                if first_bt is not None and e[BUILD_TS] is not None and e[BUILD_TS] - first_bt <= _bound_ms(st.o):
                    continue
            bad.append(e)
        if bad:
            e = bad[0]
            db, table = e[TABLE] or (None, None)
            yield Failure(f"partition {part}: a DML of {db}.{table} (schemaVersion {e[VERSION]}) before "
                          f"any schema for it" + (f"; {len(bad) - 1} more" if len(bad) > 1 else ""),
                          expected="a DDL or BOOTSTRAP with this (database, table, version) earlier in the partition",
                          actual=f"first undecodable DML at offset {e[OFFSET]}", location=_where(st, part, e))
    if not judged:
        yield NotApplicable("no DML")


def _schema_positions(lg: PartitionLog) -> dict[tuple[Any, Any, Any], list[EntryTuple]]:
    out: dict[tuple[Any, Any, Any], list[EntryTuple]] = {}
    for e in lg.entries:
        if e[KIND] in ("DDL", "BOOTSTRAP") and e[TABLE] is not None:
            out.setdefault((e[TABLE][0], e[TABLE][1], e[VERSION]), []).append(e)
    return out


def _latest_before(entries: list[EntryTuple], seq: int) -> EntryTuple | None:
    best = None
    for e in entries:
        if e[SEQ] < seq:
            best = e
        else:
            break
    return best


def _bootstrap_sources(st: StreamEvidence, part: int) -> list[PartitionLog]:
    lg = st.logs[part]
    if st.o.bootstrap_all_partitions or part == 0 or 0 not in st.logs:
        return [lg]
    return [lg, st.logs[0]]


_SEQ = itemgetter(SEQ)
#: The keys `_bootstrap_gaps` groups a log's messages by (C getters: called once per DML of the stream).
_TABLE_VERSION = itemgetter(TABLE, VERSION)  # (e[TABLE], e[VERSION])
_TABLE_ID = itemgetter(TABLE_ID)  # e[TABLE_ID]


def _merged(st: StreamEvidence, part: int) -> tuple[list[EntryTuple], set[int] | None]:
    """The messages a consumer of `part` reads schemas from (its own, and partition 0's when
    bootstraps go only there), in the order they were made; and the ids of the partition's own
    among them, or None where they are all its own. Worked out once for the stream checks that
    need it (`StreamEvidence.merged`)."""
    got = st.merged.get(part)
    if got is None:
        logs = _bootstrap_sources(st, part)
        if len(logs) == 1:  # each entry is in one log once: nothing to drop
            got = (sorted(logs[0].entries, key=_SEQ), None)
        else:
            got = (sorted({id(e): e for lg in logs for e in lg.entries}.values(), key=_SEQ),
                   {id(e) for e in st.logs[part].entries})
        st.merged[part] = got
    return got


def _overdue(st: StreamEvidence, e: EntryTuple, since: EntryTuple | None, rows_since: int, reached: int | None,
             start_bt: int | None) -> str | None:
    """Why DML `e` came too long after `since` (the last schema message it could use): more than
    one interval (+ the 5 s check period), or count rows (`rows_since` of them came since, `e`
    the last; `reached`: the build ts of the count-th) and then more than a check period."""
    o = st.o
    ref = since[BUILD_TS] if since is not None else start_bt
    if ref is None or e[BUILD_TS] is None:
        return None
    if e[BUILD_TS] - ref > _bound_ms(o):
        return f"{(e[BUILD_TS] - ref) / 1000:.1f} s after it (interval {o.bootstrap_interval_s:g} s + 5 s check period)"
    count = max(1, o.bootstrap_count)  # <= 0 under the docs' rule: due at every check
    if rows_since > count:
        if reached is not None and e[BUILD_TS] - reached > BOOTSTRAP_CHECK_PERIOD_MS + BOOTSTRAP_SLACK_MS:
            return (f"{rows_since} rows after it (send-bootstrap-in-msg-count {o.bootstrap_count}), "
                    f"{(e[BUILD_TS] - reached) / 1000:.1f} s after the count was reached")
    return None


def _bootstrap_gaps(st: StreamEvidence, key: Callable[[EntryTuple], Any], sources: Callable[[EntryTuple], bool]
                    ) -> Findings:
    """Shared by join-anywhere and bootstrap.interval: every DML must come within one bootstrap
    interval of the last message (selected by `sources`) with the same `key` that a consumer of
    its partition can read."""
    if not st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are disabled")
        return
    o = st.o
    bound = _bound_ms(o)
    count = max(1, o.bootstrap_count)
    period = BOOTSTRAP_CHECK_PERIOD_MS + BOOTSTRAP_SLACK_MS
    judged = False
    for part in sorted(st.logs):
        merged, mine = _merged(st, part)
        start_bt = None if _from_start(st.logs[part]) else next(
            (e[BUILD_TS] for e in st.logs[part].entries if e[BUILD_TS] is not None), None)
        # Per key: [the last usable schema message (None: the log's start), how many of the
        # partition's DMLs came since, the build ts of the count-th of them, the build ts the
        # interval counts from (the message's, or the log's first)].
        state: dict[Any, list[Any]] = {}
        for e in merged:
            kind = e[KIND]
            if kind == "DML":
                if mine is not None and id(e) not in mine:
                    continue
            elif kind == "DDL" or kind == "BOOTSTRAP":
                if sources(e) and e[TABLE] is not None:
                    state[key(e)] = [e, 0, None, e[BUILD_TS]]
                continue
            else:
                continue
            k = key(e)
            got = state.get(k)
            if got is None:
                if start_bt is None:
                    continue  # never announced at all: consumer.schema-known's finding
                got = state[k] = [None, 0, None, start_bt]
            judged = True
            n = got[1] = got[1] + 1
            bt = e[BUILD_TS]
            if n == count:
                got[2] = bt
            # `_overdue`'s two tests, to call it (for its text) only where one holds.
            ref = got[3]
            if ref is None or bt is None:
                continue
            if bt - ref <= bound and (n <= count or (reached := got[2]) is None or bt - reached <= period):
                continue
            since = got[0]
            why = _overdue(st, e, since, n, got[2], start_bt)
            if why:
                yield Failure(f"partition {part}: a DML of {e[TABLE][0] if e[TABLE] else '?'}."
                              f"{e[TABLE][1] if e[TABLE] else '?'} {why}",
                              expected="a schema message at least once per bootstrap interval",
                              actual=f"last usable one at offset {since[OFFSET] if since else 'none (log start)'}",
                              location=_where(st, part, e))
                state[k] = [e, 0, None, bt]  # one finding per gap
    if not judged:
        yield NotApplicable("no DML after a schema message")


@check("consumer.join-anywhere", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (a consumer joining at any point learns every table's schema within one bootstrap "
              f"interval); {NOTES} §2.4 (before a table's first DML, then every interval / message count, checked "
              "every 5 s)")
def join_anywhere(st: StreamEvidence) -> Findings:
    """A consumer that starts reading at any offset can decode every DML after at most one
    bootstrap interval: no DML comes more than send-bootstrap-interval-in-sec (+ the 5 s check
    period), or send-bootstrap-in-msg-count rows, after the last message announcing its exact
    (database, table, schemaVersion)."""
    yield from _bootstrap_gaps(st, key=_TABLE_VERSION, sources=lambda e: True)


@check("bootstrap.interval", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (send-bootstrap-interval-in-sec, send-bootstrap-in-msg-count); {NOTES} §2.4 "
              "(OR-condition on time and count, checked every 5 s)")
def bootstrap_interval(st: StreamEvidence) -> Findings:
    """While a table has rows, its BOOTSTRAP is repeated at least every
    send-bootstrap-interval-in-sec seconds and every send-bootstrap-in-msg-count rows (each
    with TiCDC's 5 s check period)."""
    yield from _bootstrap_gaps(st, key=_TABLE_ID, sources=lambda e: e[KIND] == "BOOTSTRAP")


@check("bootstrap.before-first-dml", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP; {NOTES} §2.4, §4.18 (a BOOTSTRAP before the first DML of each table)")
def bootstrap_first(st: StreamEvidence) -> Findings:
    """In a log read from its start, each table's first DML comes after a BOOTSTRAP of that table
    (by tableID) in its partition, or in partition 0 when bootstraps go only there."""
    if not st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are disabled")
        return
    judged = False
    for part in sorted(st.logs):
        if not _from_start(st.logs[part]):
            continue
        merged, mine = _merged(st, part)
        booted: set[Any] = set()
        reported: set[Any] = set()
        for e in merged:
            if e[KIND] == "BOOTSTRAP":
                booted.add(e[TABLE_ID])
            elif e[KIND] == "DML" and (mine is None or id(e) in mine):
                judged = True
                if e[TABLE_ID] not in booted and e[TABLE_ID] not in reported:
                    reported.add(e[TABLE_ID])
                    yield Failure(f"partition {part}: the first DML of tableID {e[TABLE_ID]} has no BOOTSTRAP before "
                                  "it", expected="BOOTSTRAP, then DML", actual=f"DML at offset {e[OFFSET]}",
                                  location=_where(st, part, e))
    if not judged:
        yield NotApplicable("no DML in a log read from its start")


def _covered(st: StreamEvidence, ts_of: Callable[[EntryTuple], int | None]) -> tuple[int, int]:
    """The range of a ts that every partition's log covers for sure: captures may start and stop
    anywhere, and several messages share a ts at the cut (so the cut's own ts is left out)."""
    lo, hi = 0, 1 << 64
    for p in st.partitions:
        lg = st.logs.get(p)
        vals = [v for v in (ts_of(e) for e in lg.entries) if v is not None] if lg else []
        if not vals:
            return 1, 0
        if not _from_start(lg):  # type: ignore[arg-type]
            lo = max(lo, vals[0] + 1)
        hi = min(hi, vals[-1] - 1)
    if st.with_source:
        hi = 1 << 64  # the whole workload was encoded: nothing is cut at the end
    return lo, hi


@check("bootstrap.partitions", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (send-bootstrap-to-all-partition); {NOTES} §2.4 (every partition of the topic, or "
              "partition 0)")
def bootstrap_partitions(st: StreamEvidence) -> Findings:
    """Each BOOTSTRAP reaches every partition of the topic (send-bootstrap-to-all-partition=true)
    or only partition 0 (false)."""
    if not st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are disabled")
        return
    where: dict[tuple[Any, Any, Any], set[int]] = {}
    for part, lg in st.logs.items():
        for e in lg.entries:
            if e[KIND] == "BOOTSTRAP":
                where.setdefault((e[TABLE_ID], e[VERSION], e[BUILD_TS]), set()).add(part)
    if not where:
        yield NotApplicable("no BOOTSTRAP")
        return
    if not st.o.bootstrap_all_partitions:
        for (tid, _, _), parts in sorted(where.items(), key=lambda kv: kv[0][2] or 0):
            if parts - {0}:
                yield Failure(f"a BOOTSTRAP of tableID {tid} outside partition 0", expected=[0], actual=sorted(parts))
                return
        return
    if len(st.partitions) < 2:
        yield NotApplicable("only one partition seen")
        return
    lo, hi = _covered(st, lambda e: e[BUILD_TS])
    want = set(st.partitions)
    for (tid, _, bt), parts in sorted(where.items(), key=lambda kv: kv[0][2] or 0):
        if parts != want and bt is not None and lo <= bt <= hi:
            yield Failure(f"a BOOTSTRAP of tableID {tid} (buildTs {bt}) reached partitions {sorted(parts)}",
                          expected=sorted(want), actual=sorted(parts))
            return


@check("bootstrap.disabled", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §BOOTSTRAP (\"set both to 0\" disables); {NOTES} §2.4, §5 (the code: either <= 0 disables, "
              "pkg/config/sink.go:224-233)",
       docs_vs_code="docs: bootstraps stop only when both settings are 0; code: when either is <= 0 (profile switch "
                    "bootstrap-disable-rule=docs|code)")
def bootstrap_disabled(st: StreamEvidence) -> Findings:
    """With bootstraps disabled (per bootstrap-disable-rule), no BOOTSTRAP is sent."""
    if st.o.bootstraps_enabled:
        yield NotApplicable("bootstraps are enabled")
        return
    for part, lg in sorted(st.logs.items()):
        for e in lg.entries:
            if e[KIND] == "BOOTSTRAP":
                yield Failure(f"a BOOTSTRAP although send-bootstrap-interval-in-sec={st.o.bootstrap_interval_s:g} "
                              f"and send-bootstrap-in-msg-count={st.o.bootstrap_count} disable them "
                              f"({st.o.disable_rule} rule)", expected="no BOOTSTRAP", actual="BOOTSTRAP",
                              location=_where(st, part, e))
                return


@check("order.dml-commit-ts", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Ordering; {NOTES} §2.1 (a table's rows in commit order in its partition)")
def order_dml(st: StreamEvidence) -> Findings:
    """In each partition, DML commitTs never decreases (duplicates after a restart aside)."""
    seen = False
    for part, lg in sorted(st.logs.items()):
        high: EntryTuple | None = None
        for e in lg.entries:
            if e[KIND] != "DML" or e[COMMIT_TS] is None:
                continue
            seen = True
            if high is not None and e[COMMIT_TS] < high[COMMIT_TS]:
                yield Failure(f"partition {part}: commitTs {e[COMMIT_TS]} after {high[COMMIT_TS]}",
                              expected=f">= {high[COMMIT_TS]}", actual=e[COMMIT_TS], location=_where(st, part, e))
                break
            high = e
    if not seen:
        yield NotApplicable("no DML")


def _broadcast_findings(st: StreamEvidence, kind: str, ident: Callable[[EntryTuple], Any]) -> Findings:
    where: dict[Any, set[int]] = {}
    for part, lg in st.logs.items():
        for e in lg.entries:
            if e[KIND] == kind and e[COMMIT_TS] is not None:  # a malformed commitTs is message.fields' finding
                where.setdefault(ident(e), set()).add(part)
    if not where:
        yield NotApplicable(f"no {kind}")
        return
    if len(st.partitions) < 2:
        return
    lo, hi = _covered(st, lambda e: e[COMMIT_TS] if e[KIND] in ("DML", "DDL", "WATERMARK") else None)
    want = set(st.partitions)
    for k, parts in sorted(where.items(), key=lambda kv: str(kv[0])):
        ts = k[0] if isinstance(k, tuple) else k
        if parts != want and lo <= ts <= hi:
            yield Failure(f"a {kind} (commitTs {ts}) reached partitions {sorted(parts)}", expected=sorted(want),
                          actual=sorted(parts))
            return


@check("order.ddl-barrier", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §DDL (sent to all partitions); {NOTES} §2.1 (mq_ddl_sink.go: broadcast after the earlier rows "
              "are flushed)")
def order_ddl(st: StreamEvidence) -> Findings:
    """Each DDL reaches every partition, and after it no DML of an earlier transaction follows
    in that partition."""
    yield from _broadcast_findings(st, "DDL", lambda e: (e[COMMIT_TS], e[TYPE]))
    for part, lg in sorted(st.logs.items()):
        barrier: EntryTuple | None = None
        for e in lg.entries:
            if e[KIND] == "DDL" and e[COMMIT_TS] is not None:
                barrier = e if barrier is None or e[COMMIT_TS] > barrier[COMMIT_TS] else barrier
            elif e[KIND] == "DML" and barrier is not None and e[COMMIT_TS] is not None \
                    and e[COMMIT_TS] < barrier[COMMIT_TS]:
                yield Failure(f"partition {part}: a DML of commitTs {e[COMMIT_TS]} after the DDL of commitTs "
                              f"{barrier[COMMIT_TS]}", expected="every earlier DML before the DDL",
                              actual=f"DML at offset {e[OFFSET]}, DDL at offset {barrier[OFFSET]}",
                              location=_where(st, part, e))
                break


@check("order.watermark", level=Level.MUST, scope=Scope.STREAM,
       anomalies=(Anomaly.LATE_EVENT_AFTER_WATERMARK, Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK),
       clause=f"{SEED} §WATERMARK (sent to all partitions; everything below it has been sent); {NOTES} §2.1")
def order_watermark(st: StreamEvidence) -> Findings:
    """Each WATERMARK reaches every partition; per partition they never decrease, and no DML
    with a smaller commitTs follows one."""
    yield from _broadcast_findings(st, "WATERMARK", lambda e: e[COMMIT_TS])
    for part, lg in sorted(st.logs.items()):
        wm: EntryTuple | None = None
        for e in lg.entries:
            if e[KIND] == "WATERMARK" and e[COMMIT_TS] is not None:
                if wm is not None and e[COMMIT_TS] < wm[COMMIT_TS]:
                    yield Failure(f"partition {part}: WATERMARK {e[COMMIT_TS]} after {wm[COMMIT_TS]}",
                                  expected=f">= {wm[COMMIT_TS]}", actual=e[COMMIT_TS], location=_where(st, part, e))
                    break
                wm = e
            elif e[KIND] == "DML" and wm is not None and e[COMMIT_TS] is not None \
                    and e[COMMIT_TS] < wm[COMMIT_TS]:
                yield Failure(f"partition {part}: a DML of commitTs {e[COMMIT_TS]} after WATERMARK {wm[COMMIT_TS]}",
                              expected=f"DML commitTs >= {wm[COMMIT_TS]}", actual=e[COMMIT_TS],
                              location=_where(st, part, e))
                break
