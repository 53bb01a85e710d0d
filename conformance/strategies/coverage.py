"""A deterministic workload that holds every type of a dialect's domain and every edge value.

`type_coverage_workload(dialect)` makes, per kind of the domain, a few types (drawn from the
domain with a fixed seed, plus every spelling MariaDB has for the kind) and one table per type:
`id` (primary key) and `v` of that type. It inserts each edge value and a few ordinary ones, and
NULL; updates values; moves one row's key; deletes a row; adds a column of the type with a
default and drops it again. Run through a server, it shows that each value survives
generation -> SQL -> server -> change log -> canonical value (the round-trip tests), and it
gives the `source.*` mutants something to break.
"""

from __future__ import annotations

from dataclasses import replace

from ..model.dialects import MARIADB_SPELLINGS, dialect
from ..model.events import Ddl, DdlKind, Event, Op, RowChange, Transaction, Watermark, Workload, tso
from ..model.table import DEFAULT_NULL, Column, Default, DefaultKind, Index, ReplicaIdentity, Table
from ..model.types import FSP_KINDS, Kind, SqlType
from ..model.values import Row, Value
from .dialect_domains import domain_for
from .history import EPOCH_MS
from .source import RandomSource


def _types(dialect_name: str, kind: Kind, src: RandomSource, per_kind: int) -> list[SqlType]:
    dom = domain_for(dialect_name)
    out: list[SqlType] = []
    seen: set[SqlType] = set()
    for _ in range(per_kind * 4):
        t = dom.sample_type(src, (kind,))
        if dialect_name == "mariadb" and t.spelling is not None:
            continue  # spellings come below, one each
        if t not in seen:
            seen.add(t)
            out.append(t)
        if len(out) == per_kind:
            break
    if kind in FSP_KINDS and not any(t.fsp == 6 for t in out):
        out.append(SqlType(kind, fsp=6))
    if dialect_name == "mariadb":
        for sp in MARIADB_SPELLINGS.get(kind, ()):
            out.append(replace(out[0], spelling=sp))
    return out


def _same(a: Value, b: Value) -> bool:
    """Whether an assignment would leave the column as it is (then the model has no change)."""
    if a is None or b is None:
        return a is b
    if isinstance(a, str) and isinstance(b, str):
        return a.rstrip(" ") == b.rstrip(" ")
    return bool(a == b)


def type_coverage_workload(dialect_name: str, *, per_kind: int = 3, samples: int = 3, seed: int | str = 0,
                           kinds: tuple[Kind, ...] | None = None) -> Workload:
    d = dialect(dialect_name)
    dom = domain_for(dialect_name)
    src = RandomSource(f"coverage:{dialect_name}:{seed}")
    ms = EPOCH_MS
    events: list[Event] = []

    def ts() -> int:
        nonlocal ms
        ms += 1
        return tso(ms)

    def ddl(kind: DdlKind, table: Table | None, pre: Table | None, database: str) -> None:
        e = Ddl(kind, ts(), "", table, pre, database)
        events.append(replace(e, sql="\n".join(d.ddl_statements(e))))

    db = "cov"
    ddl(DdlKind.CREATE_DATABASE, None, None, db)
    n = 0
    for kind in kinds or dom.kinds:
        for t in _types(dialect_name, kind, src, per_kind):
            n += 1
            pk = Index(f"pk_t{n}" if d.schema_scoped_index_names else "PRIMARY", ("id",), primary=True, index_id=1)
            table = Table(db, f"t{n}_{kind.value.lower()}", (Column("id", SqlType(Kind.INT), False, column_id=1),
                                                             Column("v", t, True, DEFAULT_NULL, 2)),
                          (pk,), table_id=1000 + n,
                          replica_identity=(ReplicaIdentity.FULL if n % 2 else ReplicaIdentity.DEFAULT)
                          if d.schema_scoped_index_names else None)
            table = table.evolve(version=ts())
            ddl(DdlKind.CREATE_TABLE, table, None, db)
            values: list[Value] = [*dom.edge_values(t),
                                   *(dom.sample_value(src, t, edge_rate=0) for _ in range(samples)),
                                   None]
            rows: list[Row] = [{"id": i + 1, "v": v} for i, v in enumerate(values)]
            # Images are copies: `rows` goes on changing (ADD COLUMN fills it).
            events.append(Transaction(ts(), tuple(RowChange(Op.INSERT, table, None, dict(r)) for r in rows)))
            changes: list[RowChange] = []
            for i, r in enumerate(rows[:-1]):
                new = {"id": r["id"], "v": values[(i + 1) % len(values)]}
                if not _same(new["v"], r["v"]):
                    changes.append(RowChange(Op.UPDATE, table, dict(r), dict(new)))
                    rows[i] = new
            if changes:
                events.append(Transaction(ts(), tuple(changes)))
            first_id = rows[0]["id"]
            assert isinstance(first_id, int)
            moved: Row = {"id": first_id + 1000, "v": rows[0]["v"]}
            gone = rows[-1]
            events.append(Transaction(ts(), (RowChange(Op.UPDATE, table, dict(rows[0]), dict(moved)),
                                             RowChange(Op.DELETE, table, dict(gone), None))))
            rows[0] = moved
            rows.pop()
            if dom.default_allowed(t):
                dv = dom.edge_values(t)[-1]
                col = Column("w", t, False, Default(DefaultKind.VALUE, dv), 3)
                pre = table
                table = table.with_columns([*table.columns, col], version=ts())
                ddl(DdlKind.ADD_COLUMN, table, pre, db)
                for r in rows:
                    r["w"] = dv
                r0 = rows[0]
                v0 = next((v for v in values if v is not None and not _same(v, r0["v"])), None)
                if v0 is not None:
                    events.append(Transaction(ts(), (RowChange(Op.UPDATE, table, dict(r0), {**r0, "v": v0}),)))
                    rows[0] = {**r0, "v": v0}
                pre = table
                table = table.with_columns(table.columns[:2], version=ts())
                ddl(DdlKind.DROP_COLUMN, table, pre, db)
            events.append(Watermark(events[-1].commit_ts if isinstance(events[-1], (Ddl, Transaction)) else 0))
    return Workload(tuple(events), seed=f"coverage:{dialect_name}", shard=0,
                    meta={"dialect": dialect_name} if dialect_name != "tidb" else {})
