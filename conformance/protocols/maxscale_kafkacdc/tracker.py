"""What MaxScale's replicator does with each binlog event: the table versions it keeps, the
schema events it announces, the row images it numbers (`rpl.cc`, notes §5).

The reference encoder renders what the tracker plans; the checks (with the workload) compare
what an encoder sent with what the tracker planned. Planning is filter-agnostic: rows of tables
that match/exclude leave out are planned too (they consume event numbers, notes §5), marked
`sent=False`.

* CREATE TABLE: the table's version (per sanitized `db.table`, surviving DROP) goes up by one,
  a schema event carries the CREATE's GTID.
* ALTER TABLE ADD/DROP/MODIFY COLUMN: a new version and schema event with the ALTER's GTID
  (`schema-on-alter=always`); MaxScale 24.02 does so only if a row of the table was seen since
  its last schema event, otherwise it changes the columns silently (`after-rows`, notes §5.1).
  Any ALTER moves the table's GTID; RENAME gives the new name a version of its own.
* TRUNCATE, DROP TABLE, CREATE DATABASE and index changes send nothing.
* A row for a table never announced (it predates the stream): discovered as SHOW CREATE TABLE
  gives it (lower-case types), announced with the transaction's GTID.
* `event_number` starts at 0 at each GTID and is pre-incremented for every row image, across
  every table of the transaction; an UPDATE row is `update_before` (n) then `update_after` (n+1).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ...model.events import Ddl, DdlKind, Event, Gtid, Op, Transaction
from ...model.table import Table
from ...model.values import Row
from . import spec
from .spec import CdcOptions, SchemaColumn


@dataclass(frozen=True, slots=True)
class SchemaEvent:
    database: str  # sanitized
    table: str  # sanitized
    version: int
    gtid: Gtid
    columns: tuple[SchemaColumn, ...]
    source: Table
    sent: bool = True

    @property
    def id(self) -> str:
        return f"{self.database}.{self.table}"

    @property
    def position(self) -> tuple[Gtid, int]:
        return (self.gtid, 0)


@dataclass(frozen=True, slots=True)
class RowImage:
    gtid: Gtid
    event_number: int
    event_type: str
    timestamp: int
    schema: SchemaEvent  # the table as MaxScale holds it when the row arrives
    image: Row
    table: Table  # the model's table version of the row
    sent: bool = True

    @property
    def position(self) -> tuple[Gtid, int]:
        return (self.gtid, self.event_number)


Planned = SchemaEvent | RowImage


@dataclass(slots=True)
class _Tracked:
    current: SchemaEvent
    opened: bool = False


@dataclass(slots=True)
class Tracker:
    o: CdcOptions
    tables: dict[tuple[str, str], _Tracked] = field(default_factory=dict)  # by the model's (database, name)
    versions: dict[str, int] = field(default_factory=dict)  # by sanitized db.table
    generation: int = 0  # goes up with every change of the state (what a restart must restore)

    def copy(self) -> Tracker:
        return Tracker(self.o, {k: _Tracked(t.current, t.opened) for k, t in self.tables.items()},
                       dict(self.versions), self.generation)

    # -- schema --------------------------------------------------------------------------------

    def _announce(self, table: Table, g: Gtid, *, discovered: bool = False) -> SchemaEvent:
        self.generation += 1
        db, name = spec.sanitize(table.database), spec.sanitize(table.name)
        key = f"{db}.{name}"
        version = self.versions.get(key, 0) + 1
        self.versions[key] = version
        ev = SchemaEvent(db, name, version, g, spec.schema_columns(table, discovered=discovered,
                                                                  docs=self.o.docs_types), table,
                         sent=self.o.send_schema and self.o.passes(key))
        self.tables[(table.database, table.name)] = _Tracked(ev)
        return ev

    def ddl(self, event: Ddl, g: Gtid) -> list[Planned]:
        self.generation += 1
        k, t, pre = event.kind, event.table, event.pre_table
        if k is DdlKind.CREATE_TABLE and t is not None:
            return [self._announce(t, g)]
        if k is DdlKind.DROP_TABLE and pre is not None:
            self.tables.pop((pre.database, pre.name), None)
            return []
        if t is None or pre is None:
            return []
        tracked = self.tables.pop((pre.database, pre.name), None)
        if k is DdlKind.RENAME_TABLE:
            return [self._announce(t, g)]
        if tracked is None:
            return []  # a table MaxScale never saw: discovered when its rows come
        if k in (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN, DdlKind.MODIFY_COLUMN):
            if not self.o.alter_after_rows or tracked.opened:
                return [self._announce(t, g)]
            cols = spec.schema_columns(t, docs=self.o.docs_types)
            tracked.current = replace(tracked.current, columns=cols, gtid=g, source=t)
        elif k in (DdlKind.ADD_INDEX, DdlKind.DROP_INDEX):
            tracked.current = replace(tracked.current, gtid=g, source=t)  # any ALTER moves the GTID
        else:  # TRUNCATE: nothing is logged for it, the columns stay
            tracked.current = replace(tracked.current, source=t)
        self.tables[(t.database, t.name)] = tracked
        return []

    # -- rows ----------------------------------------------------------------------------------

    def transaction(self, event: Transaction, g: Gtid) -> list[Planned]:
        out: list[Planned] = []
        n = 0
        ts = spec.event_seconds(event)
        for ch in event.changes:
            t = ch.table
            tracked = self.tables.get((t.database, t.name))
            if tracked is None:
                out.append(self._announce(t, g, discovered=True))
                tracked = self.tables[(t.database, t.name)]
            if not tracked.opened:
                tracked.opened = True
                self.generation += 1
            sch = tracked.current
            sent = self.o.passes(sch.id)
            if ch.op is Op.UPDATE:
                assert ch.before is not None and ch.after is not None
                images = [("update_before", ch.before), ("update_after", ch.after)]
            elif ch.op is Op.INSERT:
                assert ch.after is not None
                images = [("insert", ch.after)]
            else:
                assert ch.before is not None
                images = [("delete", ch.before)]
            for typ, img in images:
                n += 1
                out.append(RowImage(g, n, typ, ts, sch, img, t, sent))
        return out

    def plan(self, event: Event) -> list[Planned]:
        if isinstance(event, Ddl):
            return self.ddl(event, spec.gtid_of(event))
        if isinstance(event, Transaction):
            return self.transaction(event, spec.gtid_of(event))
        return []


def row_values(row: RowImage, o: CdcOptions) -> dict[str, object]:
    """A row's column values as a DML event carries them, by sanitized name (a later column whose
    name sanitizes the same replaces the earlier one's value, as jansson's set does)."""
    out: dict[str, object] = {}
    for c in row.schema.columns:
        src = c.source
        if src is None or src.name not in row.image:
            continue
        out[c.name] = spec.value(src.type, row.image[src.name], o)
    return out
