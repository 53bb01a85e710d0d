"""TiCDC Simple's bootstrap-gap checks (consumer.join-anywhere, bootstrap.interval) and
bootstrap.before-first-dml, held to a plain reading of their rule: the checks merge each
partition's log once for all three (`checks.stream._merged`) and call `_overdue` only where one of
its two tests holds; here the oracle merges, sorts and asks `_overdue` for every DML, as the rule
reads. Random logs of two partitions, schema messages and DMLs of a few tables and versions,
build times that jump, logs read from the start or not, bootstraps to every partition or to 0."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks.registry import Failure, NotApplicable
from conformance.protocols.ticdc_simple.checker import Entry, PartitionLog, StreamEvidence
from conformance.protocols.ticdc_simple.checks import stream
from conformance.protocols.ticdc_simple.spec import SimpleOptions


def _oracle(st_: StreamEvidence, key: Any, sources: Any) -> list[Any]:
    if not st_.o.bootstraps_enabled:
        return [("na", "bootstraps are disabled")]
    out: list[Any] = []
    judged = False
    for part in sorted(st_.logs):
        logs = stream._bootstrap_sources(st_, part)
        merged = sorted({id(e): e for lg in logs for e in lg.entries}.values(), key=lambda e: e.seq)
        start_bt = None if stream._from_start(st_.logs[part]) else next(
            (e.build_ts for e in st_.logs[part].entries if e.build_ts is not None), None)
        mine = {id(e) for e in st_.logs[part].entries}
        last: dict[Any, Entry] = {}
        rows: dict[Any, list[Entry]] = {}
        for e in merged:
            if e.kind in ("DDL", "BOOTSTRAP") and sources(e) and e.table is not None:
                last[key(e)] = e
                rows[key(e)] = []
                continue
            if e.kind != "DML" or id(e) not in mine:
                continue
            k = key(e)
            since = last.get(k)
            if since is None and start_bt is None:
                continue
            judged = True
            rows.setdefault(k, []).append(e)
            count = max(1, st_.o.bootstrap_count)
            reached = rows[k][count - 1].build_ts if len(rows[k]) >= count else None
            why = stream._overdue(st_, e, since, len(rows[k]), reached, start_bt)
            if why:
                out.append((part, e.offset, why))
                last[k] = e
                rows[k] = []
    if not judged:
        out.append(("na", "no DML after a schema message"))
    return out


def _first_oracle(st_: StreamEvidence) -> list[Any]:
    if not st_.o.bootstraps_enabled:
        return [("na", "bootstraps are disabled")]
    out: list[Any] = []
    for part in sorted(st_.logs):
        if not stream._from_start(st_.logs[part]):
            continue
        logs = stream._bootstrap_sources(st_, part)
        merged = sorted({id(e): e for lg in logs for e in lg.entries}.values(), key=lambda e: e.seq)
        mine = {id(e) for e in st_.logs[part].entries}
        booted: set[Any] = set()
        reported: set[Any] = set()
        for e in merged:
            if e.kind == "BOOTSTRAP":
                booted.add(e.table_id)
            elif e.kind == "DML" and id(e) in mine and e.table_id not in booted and e.table_id not in reported:
                reported.add(e.table_id)
                out.append((part, e.offset))
    return out


def _seen(items: Any) -> list[Any]:
    out: list[Any] = []
    for i in items:
        if isinstance(i, NotApplicable):
            out.append(("na", i.reason))
        else:
            assert isinstance(i, Failure)
            out.append((i.location.partition, i.location.offset))
    return out


_ENTRY = st.tuples(st.sampled_from(["DML"] * 6 + ["DDL", "BOOTSTRAP", None]), st.integers(0, 1),
                   st.sampled_from([("d", "a"), ("d", "b"), None]), st.integers(1, 2),
                   st.sampled_from([0, 10, 1_000, 2_000, 3_000, 3_500, 6_000, 7_000, 30_000]),
                   st.booleans())


@settings(max_examples=600, deadline=None)
@given(st.lists(_ENTRY, max_size=60), st.booleans(), st.integers(-1, 4), st.sampled_from([0.0, 1.0, 6.0, 10.0]),
       st.tuples(st.integers(0, 3), st.integers(0, 3)))
def test_bootstrap_gap_checks_are_their_rule(entries: list[Any], all_partitions: bool, count: int, interval: float,
                                             starts: tuple[int, int]) -> None:
    _assert_rule(entries, all_partitions, count, interval, starts)


def test_bootstrap_gap_checks_at_their_edges() -> None:
    """A DML exactly at the interval bound and one past it; a DML exactly one check period after
    the count was reached and one past it (interval 10 s: bound 16 s, check period 6 s)."""
    bound, period = 16_000, 6_000
    schema = ("BOOTSTRAP", 0, ("d", "a"), 1, 0, False)
    for last in (bound - 1, bound, bound + 1):
        found = _assert_rule([schema, ("DML", 0, ("d", "a"), 1, last, False)], True, 10, 10.0, (0, 0))
        assert found == (last > bound)
    for count in (1, 2, 3):
        for gap in (period - 1, period, period + 1):
            rows = [("DML", 0, ("d", "a"), 1, 1, False)] * count + [("DML", 0, ("d", "a"), 1, gap, False)]
            found = _assert_rule([schema, *rows], True, count, 10.0, (0, 0))
            assert found == (gap > period), (count, gap)


def _assert_rule(entries: list[Any], all_partitions: bool, count: int, interval: float, starts: tuple[int, int]
                 ) -> bool:
    """The three checks against the oracles on one log; whether a gap check found something."""
    o = dataclasses.replace(SimpleOptions(), bootstrap_all_partitions=all_partitions, bootstrap_count=count,
                            bootstrap_interval_s=interval)
    logs = {p: PartitionLog("t", p) for p in (0, 1)}
    bt = 1_700_000_000_000
    for seq, (kind, part, table, version, step, no_bt) in enumerate(entries, 1):
        bt += step
        lg = logs[part]
        e = Entry(seq, starts[part] + len(lg.entries), kind, kind, None, None if no_bt else bt, table, version,
                  table_id=hash(table) % 7 if table else None)
        lg.entries.append(e)
    parts = {p: lg for p, lg in logs.items() if lg.entries} or logs

    def fresh() -> StreamEvidence:
        return StreamEvidence("t", parts, o, False, None)

    join_key, join_src = (lambda e: (e.table, e.version)), (lambda e: True)
    ival_key, ival_src = (lambda e: e.table_id), (lambda e: e.kind == "BOOTSTRAP")
    one = fresh()  # the three checks on one evidence, as the checker runs them (the merge shared)
    join = _seen(stream.join_anywhere(one))
    assert join == [x[:2] for x in _oracle(fresh(), join_key, join_src)]
    ival = _seen(stream.bootstrap_interval(one))
    assert ival == [x[:2] for x in _oracle(fresh(), ival_key, ival_src)]
    got_first = [x for x in _seen(stream.bootstrap_first(one)) if x[0] != "na"]
    assert got_first == [x for x in _first_oracle(fresh()) if x[0] != "na"]
    return any(x[0] != "na" for x in join + ival)
