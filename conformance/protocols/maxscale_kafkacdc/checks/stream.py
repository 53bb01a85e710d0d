"""The MaxScale KafkaCDC checks of a topic's stream and of what each source event gives (with
the workload)."""

from __future__ import annotations

from typing import Any

from ....checks.registry import Failure, Level, Location, NotApplicable, Scope
from ...kit import Findings, brief, given
from ..checker import (
    DUPLICATE,
    EVENT_NUMBER,
    EVENT_TYPE,
    GTID,
    KIND,
    OFFSET,
    SCHEMA_SEEN,
    TABLE,
    VERSION,
    Entry,
    EventEvidence,
    PartitionLog,
    StreamEvidence,
    gtid_text,
)
from ..spec import NOTES, SEED
from ..tracker import RowImage, SchemaEvent
from .common import check

# == stream rules ==========================================================================================

def _single_partition(ev: StreamEvidence) -> PartitionLog | NotApplicable:
    used = ev.used
    if not used:
        return NotApplicable("no message in the topic")
    if len(used) > 1:
        return NotApplicable(f"messages in {len(used)} partitions: MaxScale leaves the partition to librdkafka, which "
                             "hashes each message's own key, so a topic of several partitions has no order to judge "
                             f"(use a 1-partition topic, as MaxScale's tests do: {NOTES} §1)")
    return used[0]


def _firsts(lg: PartitionLog) -> list[Entry]:
    return [e for e in lg.entries if not e[DUPLICATE]]


@check("stream.schema-before-dml", level=Level.MUST, scope=Scope.STREAM,
       needs_options={"send_schema": "true"},
       clause=f"{SEED} §Overview (DML events follow the format specified in the DDL event; send_schema default "
              f"true); {NOTES} §5.1 (a table is announced on CREATE, or on discovery before its first row), §8.4 "
              "([test] the schema event precedes the first DML of a new table)")
@given(_single_partition)
def schema_before_dml(ev: StreamEvidence, lg: PartitionLog) -> Findings:
    """Every DML event's table was announced by a schema event earlier in the topic (judged where
    the log is known from its start)."""
    if not ev.from_start(lg):
        yield NotApplicable(f"the log was read from offset {lg.first_offset}: a schema event may sit before it")
        return
    for e in lg.entries:
        if e[KIND] == "dml" and e[TABLE] is not None and e[SCHEMA_SEEN] is False:
            yield Failure("a DML event for a table no schema event announced before it", expected="a schema event "
                          f"of {e[TABLE][0]}.{e[TABLE][1]} first", actual=f"{e[EVENT_TYPE]} at offset {e[OFFSET]}",
                          location=_at(ev, lg, e))
            return


def _at(ev: StreamEvidence, lg: PartitionLog, e: Entry) -> Any:
    return Location(ev.topic, lg.partition, e[OFFSET], table=f"{e[TABLE][0]}.{e[TABLE][1]}" if e[TABLE] else None)


@check("stream.schema-version", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Overview (version: schema version, incremented when the table format changes); {NOTES} §5.1 "
              "(version = ++m_versions[db.table] per schema event: 1 for a new table, +1 on each change)")
def schema_version(ev: StreamEvidence) -> Findings:
    """Each new schema event of a table has the previous version plus one (the first is 1 in a
    log known from its start); a repeat of an announced version is a replay."""
    for lg in ev.used:
        last: dict[tuple[str, str], Entry] = {}
        for e in _firsts(lg):
            if e[KIND] != "schema" or e[TABLE] is None or e[VERSION] is None:
                continue
            prev = last.get(e[TABLE])
            want = (prev[VERSION] or 0) + 1 if prev is not None else (1 if ev.from_start(lg) else None)
            if want is not None and e[VERSION] != want:
                yield Failure(f"version {e[VERSION]} after {prev[VERSION] if prev else 'none'}", expected=want,
                              actual=e[VERSION], location=_at(ev, lg, e))
            last[e[TABLE]] = e


def _same(a: object, b: object) -> bool:
    """`a == b`, at once where they are one object (the fast path's rows of a transaction share
    their GTID)."""
    return a is b or a == b


def _dmls(lg: PartitionLog) -> list[Entry]:
    """The first-seen DML events with a GTID and event number (worked out once per log: two checks
    read them)."""
    if lg.dmls is None or lg.dmls[0] != len(lg.entries):
        lg.dmls = (len(lg.entries), [e for e in lg.entries if not e[DUPLICATE] and e[KIND] == "dml"
                                     and e[GTID] is not None and e[EVENT_NUMBER] is not None])
    return lg.dmls[1]


@check("stream.update-pairs", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Overview (update_before: the row before an update; update_after: after it); {NOTES} §5 (per "
              "UPDATE row: update_before (n) immediately followed by update_after (n+1)), §6.3 (consumers de-duplicate "
              "on the key: a replay never splits the pair)")
@given(_single_partition)
def update_pairs(ev: StreamEvidence, lg: PartitionLog) -> Findings:
    """In the de-duplicated stream, every update_before is immediately followed by its update_after
    (same GTID and table, event_number + 1), and every update_after immediately preceded by it."""
    rows = _dmls(lg)
    last = len(rows) - 1
    for i, e in enumerate(rows):
        t = e[EVENT_TYPE]
        if t == "update_before":
            nxt = rows[i + 1] if i < last else None
            if nxt is None:
                if ev.complete:
                    yield Failure("an update_before without its update_after", expected="update_after next",
                                  actual="the end of the log", location=_at(ev, lg, e))
                continue
            if not (nxt[EVENT_TYPE] == "update_after" and _same(nxt[GTID], e[GTID]) and nxt[TABLE] == e[TABLE]
                    and nxt[EVENT_NUMBER] == (e[EVENT_NUMBER] or 0) + 1):
                yield Failure("an update_before not followed by its update_after",
                              expected=f"update_after {gtid_text(e[GTID])}:{(e[EVENT_NUMBER] or 0) + 1}",
                              actual=f"{nxt[EVENT_TYPE]} {gtid_text(nxt[GTID])}:{nxt[EVENT_NUMBER]}",
                              location=_at(ev, lg, e))
                return
        elif t == "update_after":
            prev = rows[i - 1] if i else None
            if prev is None:
                if ev.from_start(lg):
                    yield Failure("an update_after without its update_before", expected="update_before first",
                                  actual="the start of the log", location=_at(ev, lg, e))
                continue
            if not (prev[EVENT_TYPE] == "update_before" and _same(prev[GTID], e[GTID]) and prev[TABLE] == e[TABLE]
                    and prev[EVENT_NUMBER] == (e[EVENT_NUMBER] or 0) - 1):
                yield Failure("an update_after not preceded by its update_before",
                              expected=f"update_before {gtid_text(e[GTID])}:{(e[EVENT_NUMBER] or 0) - 1}",
                              actual=f"{prev[EVENT_TYPE]} {gtid_text(prev[GTID])}:{prev[EVENT_NUMBER]}",
                              location=_at(ev, lg, e))
                return


@check("stream.event-numbers", level=Level.MUST, scope=Scope.STREAM,
       clause=f"{SEED} §Overview (event_number: the sequence number of events inside the transaction starting from "
              f"1); {NOTES} §5 (reset at each GTID, pre-incremented per row image across the transaction's tables; "
              "rows of tables match/exclude leave out still count, leaving gaps)")
@given(_single_partition)
def event_numbers(ev: StreamEvidence, lg: PartitionLog) -> Findings:
    """Within a GTID the DML events' event_numbers start at 1 and go up by one (with match/exclude:
    go up, gaps allowed)."""
    filtered = ev.o.filtered
    prev: Entry | None = None
    for e in _dmls(lg):
        n = e[EVENT_NUMBER] or 0
        if prev is None or not (prev[GTID] is e[GTID] or prev[GTID] == e[GTID]):  # `_same`, inline
            if n != 1 and not filtered and (prev is not None or ev.from_start(lg)):
                yield Failure("a transaction's first event_number is not 1", expected=1, actual=n,
                              location=_at(ev, lg, e))
                return
        else:
            p = prev[EVENT_NUMBER] or 0
            if (n != p + 1) if not filtered else (n <= p):
                yield Failure(f"event_number {n} after {p} in {gtid_text(e[GTID])}",
                              expected=p + 1 if not filtered else f"> {p}", actual=n, location=_at(ev, lg, e))
                return
        prev = e


# == what each source event gives (needs the workload) ====================================================

@check("event.schema-events", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §Overview (DDL events CREATE TABLE, ALTER TABLE are streamed as schema objects); {NOTES} §5.1 "
              "(CREATE, ALTER ADD/DROP/MODIFY/CHANGE, RENAME and discovery announce a version with its GTID; "
              "TRUNCATE, DROP and index changes announce nothing), §2 (none with send_schema=false or for tables "
              "match/exclude leave out)")
def event_schema_events(ev: EventEvidence) -> Findings:
    """A source event gives exactly the schema events MaxScale sends for it: table, version, GTID and
    columns."""
    got = [r for r in ev.records if r.msg.kind == "schema"]
    want = [p for p in ev.sent if isinstance(p, SchemaEvent)]
    g = [(r.msg.table, r.msg.version, str(r.msg.gtid), [(c.name, c.avro) for c in r.msg.columns()]) for r in got]
    w = [((p.database, p.table), p.version, str(p.gtid), [(c.name, c.avro) for c in p.columns]) for p in want]
    if g != w:
        yield Failure(f"{len(got)} schema event(s) where {len(want)} were due", expected=brief(w, 300),
                      actual=brief(g, 300), location=got[0].at() if got else None)


@check("event.rows", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §Overview (DML events INSERT, UPDATE, DELETE: one per row, update_before and update_after for "
              f"an UPDATE); {NOTES} §3 (produced per row, in binlog order), §5 (the transaction's GTID on every row)")
def event_rows(ev: EventEvidence) -> Findings:
    """A transaction gives one DML event per row image, in order: its GTID, event_type and table
    (two for an UPDATE: before, then after)."""
    got = [(r.msg.gtid and str(r.msg.gtid), r.msg.table, r.msg.event_type) for r in ev.records if r.msg.kind == "dml"]
    want = [(str(p.gtid), (p.schema.database, p.schema.table), p.event_type) for p in ev.sent
            if isinstance(p, RowImage)]
    if got != want:
        i = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
        yield Failure(f"{len(got)} DML event(s) where {len(want)} were due; the first difference at row {i}",
                      expected=brief(want[i] if i < len(want) else None, 200),
                      actual=brief(got[i] if i < len(got) else None, 200))


@check("event.numbering", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §Overview (event_number: sequence number of events inside the transaction starting from 1); "
              f"{NOTES} §5 (the numbering counts the rows of tables match/exclude leave out: the Rpl object is made "
              "without match/exclude, kafkacdc.cc L263)")
def event_numbering(ev: EventEvidence) -> Findings:
    """The DML events' event_numbers are MaxScale's: counted over every row image of the
    transaction, those of filtered tables included."""
    got = [r.msg.event_number for r in ev.records if r.msg.kind == "dml"]
    want = [p.event_number for p in ev.sent if isinstance(p, RowImage)]
    if not want and not got:
        yield NotApplicable("no DML event")
        return
    if len(got) != len(want):
        yield NotApplicable("the rows differ (event.rows)")
        return
    if got != want:
        yield Failure("event numbers", expected=want, actual=got)


@check("event.filter", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{SEED} §match, §exclude (the pattern is matched against the database and table name separated by a "
              f"period); {NOTES} §7 (PCRE2, unanchored search, case-sensitive, on the sanitized `db.table`; "
              "[test] match=cat exclude=bob passes cat, not bob or bobcat)")
def event_filter(ev: EventEvidence) -> Findings:
    """Exactly the tables that match/exclude let through have messages: `match` found somewhere in
    `db.table` (unanchored, case-sensitive) and `exclude` found nowhere."""
    sent_tables = {r.msg.table for r in ev.records if r.msg.table is not None}
    passing = {(p.database, p.table) if isinstance(p, SchemaEvent) else (p.schema.database, p.schema.table)
               for p in ev.planned if p.sent}
    filtered = {(p.database, p.table) if isinstance(p, SchemaEvent) else (p.schema.database, p.schema.table)
                for p in ev.planned if not p.sent and (isinstance(p, RowImage) or ev.o.send_schema)} - passing
    leaked = sorted(t for t in sent_tables if t in filtered)
    if leaked:
        yield Failure("messages for a table match/exclude leave out", expected="none",
                      actual=[f"{a}.{b}" for a, b in leaked], location=None)
    rows = {(p.schema.database, p.schema.table) for p in ev.planned if isinstance(p, RowImage) and p.sent}
    missing = sorted(t for t in rows if t not in sent_tables)
    if missing:
        yield Failure("no message for a table match/exclude let through", expected=[f"{a}.{b}" for a, b in missing],
                      actual=[f"{a}.{b}" for a, b in sorted(sent_tables)])
