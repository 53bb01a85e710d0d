"""Shrink a failing workload to a small one that still fails the same check.

Hypothesis shrinks what hypothesis generated; a failure found by the fast seeded sampler
(or in a user's stored reproduction) needs a reducer of its own. This one works on the
workload's structure and keeps it consistent at every step, so the printed SQL still
replays on a real database:

1. drop whole tables (every event that touches them);
2. drop whole row histories (insert … updates … delete of one row);
3. drop the tail of a row history (its delete, its last update);
4. drop columns that are in no index (with the DDL that added or dropped them);
5. make a column's values the simplest of its type;
6. drop watermarks and empty transactions.

Each candidate is kept only if the predicate (the check still fails) holds. Greedy, repeated
until a full round changes nothing or the budget runs out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace

from ..model.events import Ddl, DdlKind, Event, Op, RowChange, Transaction, Watermark, Workload
from ..model.sql import create_table
from ..model.table import Table
from ..model.values import Row
from ..strategies.history import sql_equal

Predicate = Callable[[Workload], bool]
TKey = tuple[int, int, str]  # (table_id, version, name): RENAME keeps id and version


def _tkey(t: Table) -> TKey:
    return (t.table_id, t.version, t.name)


def _lineages(w: Workload) -> dict[TKey, int]:
    """Table version -> table lineage (all versions of one table, across TRUNCATE/RENAME)."""
    lin: dict[TKey, int] = {}
    n = 0
    for e in w.events:
        if isinstance(e, Ddl) and e.table is not None:
            if e.pre_table is not None and _tkey(e.pre_table) in lin:
                lin[_tkey(e.table)] = lin[_tkey(e.pre_table)]
            else:
                lin[_tkey(e.table)] = n
                n += 1
    for c in w.row_changes():
        if _tkey(c.table) not in lin:
            lin[_tkey(c.table)] = n
            n += 1
    return lin


def _row_histories(w: Workload) -> list[list[tuple[int, int]]]:
    """Each row's changes as (event index, change index) pairs, following key changes."""
    lin = _lineages(w)
    current: dict[tuple[int, tuple[object, ...]], int] = {}
    hist: list[list[tuple[int, int]]] = []
    for ei, e in enumerate(w.events):
        if isinstance(e, Ddl) and e.kind is DdlKind.TRUNCATE_TABLE and e.pre_table is not None:
            lid = lin.get(_tkey(e.pre_table))
            for k in [k for k in current if k[0] == lid]:
                del current[k]
        if not isinstance(e, Transaction):
            continue
        for ci, c in enumerate(e.changes):
            lid = lin[_tkey(c.table)]
            if c.op is Op.INSERT:
                h = len(hist)
                hist.append([(ei, ci)])
            else:
                h = current.pop((lid, c.handle_key(c.before)), -1)
                if h < 0:
                    h = len(hist)
                    hist.append([])
                hist[h].append((ei, ci))
            if c.op is not Op.DELETE:
                current[(lid, c.handle_key(c.after))] = h
    return hist


def _without_changes(w: Workload, drop: set[tuple[int, int]]) -> Workload:
    events: list[Event] = []
    for ei, e in enumerate(w.events):
        if isinstance(e, Transaction):
            kept = tuple(c for ci, c in enumerate(e.changes) if (ei, ci) not in drop)
            if kept:
                events.append(replace(e, changes=kept))
        else:
            events.append(e)
    return replace(w, events=tuple(events))


def _without_tables(w: Workload, lineage: int) -> Workload:
    lin = _lineages(w)
    events: list[Event] = []
    for e in w.events:
        if isinstance(e, Ddl) and e.table is not None and lin.get(_tkey(e.table)) == lineage:
            continue
        if isinstance(e, Transaction):
            kept = tuple(c for c in e.changes if lin.get(_tkey(c.table)) != lineage)
            if kept:
                events.append(replace(e, changes=kept))
            continue
        events.append(e)
    return replace(w, events=tuple(events))


def _render_ddl(w: Workload, e: Ddl) -> str:
    """A rewritten DDL's SQL in the workload's own dialect (a PostgreSQL NUMERIC default has no
    TiDB literal)."""
    name = str(w.meta.get("dialect", "tidb"))
    if name == "tidb":
        assert e.table is not None
        return create_table(e.table)
    from ..model.dialects import dialect

    return "\n".join(dialect(name).ddl_statements(e))


def _rewrite(w: Workload, lineage: int, table_fn: Callable[[Table], Table],
             row_fn: Callable[[Table, Row], Row], drop_ddl: Callable[[Ddl], bool]) -> Workload:
    """Rewrite every version of one table and every row image of it; drop no-op updates."""
    lin = _lineages(w)
    memo: dict[TKey, Table] = {}
    # A dropped DDL's table version is replaced by the version before it (identical once the
    # rewrite removed what the DDL changed), so that later rows and DDLs stay linked to the
    # CREATE TABLE of their table.
    alias: dict[TKey, Table | None] = {}

    def tab(t: Table | None) -> Table | None:
        if t is None or lin.get(_tkey(t)) != lineage:
            return t
        k = _tkey(t)
        if k in alias:
            return alias[k]
        if k not in memo:
            memo[k] = table_fn(t)
        return memo[k]

    events: list[Event] = []
    for e in w.events:
        if isinstance(e, Ddl):
            if e.table is not None and lin.get(_tkey(e.table)) == lineage and drop_ddl(e):
                alias[_tkey(e.table)] = tab(e.pre_table)
                continue
            nt, npre = tab(e.table), tab(e.pre_table)
            rewritten = e.kind is DdlKind.CREATE_TABLE and nt is not None and nt is not e.table
            ne = replace(e, table=nt, pre_table=npre)
            if rewritten:
                ne = replace(ne, sql=_render_ddl(w, ne))
            events.append(ne)
        elif isinstance(e, Transaction):
            changes = []
            for c in e.changes:
                if lin.get(_tkey(c.table)) != lineage:
                    changes.append(c)
                    continue
                nt = tab(c.table)
                assert nt is not None
                before = row_fn(nt, c.before) if c.before is not None else None
                after = row_fn(nt, c.after) if c.after is not None else None
                if c.op is Op.UPDATE and before is not None and after is not None and all(
                        sql_equal(col.type, before[col.name], after[col.name]) and
                        before[col.name] == after[col.name] for col in nt.columns):
                    continue  # the update changed only what was removed
                changes.append(RowChange(c.op, nt, before, after))
            if changes:
                events.append(replace(e, changes=tuple(changes)))
        else:
            events.append(e)
    return replace(w, events=tuple(events))


def _drop_column(w: Workload, lineage: int, name: str) -> Workload:
    def table_fn(t: Table) -> Table:
        if not t.has_column(name):
            return t
        return t.with_columns([c for c in t.columns if c.name != name], version=t.version)

    def row_fn(t: Table, row: Row) -> Row:
        return {k: v for k, v in row.items() if t.has_column(k)}

    def drop_ddl(d: Ddl) -> bool:
        return d.kind in (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN) and (
            (d.table is not None and d.pre_table is not None)
            and (d.table.has_column(name) != d.pre_table.has_column(name)))

    return _rewrite(w, lineage, table_fn, row_fn, drop_ddl)


def _simplify_column(w: Workload, lineage: int, name: str) -> Workload:
    # The simplest value of the workload's own dialect (a PostgreSQL jsonb has no TiDB edge).
    from ..strategies.dialect_domains import domain_for

    edges = domain_for(str(w.meta.get("dialect", "tidb"))).edge_values

    def row_fn(t: Table, row: Row) -> Row:
        if name not in row or not t.has_column(name):
            return row
        col = t.column(name)
        out = dict(row)
        out[name] = None if (col.nullable and row[name] is None) else edges(col.type)[0]
        return out

    return _rewrite(w, lineage, lambda t: t, row_fn, lambda d: False)


def _columns_of(w: Workload) -> list[tuple[int, str]]:
    lin = _lineages(w)
    seen: dict[tuple[int, str], None] = {}
    for e in w.events:
        tables: Iterable[Table] = ()
        if isinstance(e, Ddl) and e.table is not None:
            tables = (e.table,)
        for t in tables:
            indexed = {c for ix in t.indexes for c in ix.columns}
            # A generated column and the columns it reads stay as they are: dropping or simplifying
            # either would leave a value the server does not compute, or DDL it refuses.
            indexed |= {n for c in t.columns if c.generated is not None for n in (c.name, *c.generated.depends_on)}
            for c in t.columns:
                if c.name not in indexed:
                    seen.setdefault((lin[_tkey(t)], c.name), None)
    return list(seen)


def undeclared_tables(w: Workload) -> list[Table]:
    """Table versions that a row change uses before (or without) a DDL that produced them: SQL
    of such a workload does not replay on a real database."""
    declared: set[TKey] = set()
    out: dict[TKey, Table] = {}
    for e in w.events:
        if isinstance(e, Ddl) and e.table is not None:
            declared.add(_tkey(e.table))
        elif isinstance(e, Transaction):
            for c in e.changes:
                if _tkey(c.table) not in declared:
                    out.setdefault(_tkey(c.table), c.table)
    return list(out.values())


def shrink(w: Workload, still_fails: Predicate, *, max_attempts: int = 400, max_seconds: float = 30.0) -> Workload:
    """The smallest workload found that `still_fails`."""
    deadline = time.monotonic() + max_seconds
    attempts = 0
    # A workload whose tables are all declared (every generated one) must stay so: a candidate
    # that loses a CREATE TABLE some row needs is never kept.
    must_declare = not undeclared_tables(w)

    def try_(candidate: Workload) -> bool:
        nonlocal attempts
        if attempts >= max_attempts or time.monotonic() > deadline or candidate.events == w.events:
            return False
        if must_declare and undeclared_tables(candidate):
            return False
        attempts += 1
        try:
            return still_fails(candidate)
        except Exception:  # noqa: BLE001 - a candidate the encoder cannot even take is not kept
            return False

    changed = True
    while changed and attempts < max_attempts and time.monotonic() < deadline:
        changed = False
        for lineage in sorted(set(_lineages(w).values()), reverse=True):
            c = _without_tables(w, lineage)
            if any(isinstance(e, Transaction) for e in c.events) and try_(c):
                w, changed = c, True
        hist = _row_histories(w)
        # Halves first (ddmin-like), then single histories.
        chunk = max(1, len(hist) // 2)
        while chunk >= 1:
            i = 0
            while i < len(hist):
                drop = {p for h in hist[i:i + chunk] for p in h}
                c = _without_changes(w, drop)
                if c.size and try_(c):
                    w, changed = c, True
                    hist = _row_histories(w)
                else:
                    i += chunk
            chunk //= 2
        for h in _row_histories(w):
            while len(h) > 1:
                c = _without_changes(w, {h[-1]})
                if try_(c):
                    w, changed = c, True
                    h = h[:-1]
                else:
                    break
        for lineage, name in _columns_of(w):
            c = _drop_column(w, lineage, name)
            if try_(c):
                w, changed = c, True
        for lineage, name in _columns_of(w):
            c = _simplify_column(w, lineage, name)
            if c.events != w.events and try_(c):
                w, changed = c, True
        c = replace(w, events=tuple(e for e in w.events if not isinstance(e, Watermark)))
        if len(c.events) != len(w.events) and try_(c):
            w, changed = c, True
    meta = dict(w.meta)
    meta["shrink_attempts"] = attempts
    return replace(w, meta=meta)
