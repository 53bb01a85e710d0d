"""The MariaDB binlog read back: a workload's own groups after the suite applied it (`read_binlog`),
and, for `check --workload FILE --upstream mariadb://… --since POSITION`, what the very server a
deployment read logged of a file someone else applied (`logged_since`).

The user applied the workload file to that server (one session, in order) and their CDC tool
(MaxScale) read its binlog. Nothing is applied here: the binlog from POSITION (`FILE:POS`, as
`SHOW MASTER STATUS` gives it, or a GTID state as `@@gtid_binlog_pos` gives it, read as "after
these") is read once, and each GTID group is given

* to its workload by the databases it names (a transaction's row events by their schema, a DDL
  by the quoted database names in its text: the file's `w<shard>_<name>` are its own);
* within the workload, to the file's events in order: a DDL gives as many groups as its
  statements (each commits on its own), the last one its GTID; a transaction gives one group, the
  next transaction of the file whose tables hold the group's (one the server logged nothing for,
  none).

The truth is then what the server logged, with the server's ids: the GTIDs and the row events'
binlog times are the deployment's, so the capture's are checked rather than adopted. Groups of
other databases (other traffic on the server) are left alone.
"""

from __future__ import annotations

import contextlib
import importlib
import random
import re
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..infra.urls import redact_text
from ..model.dialects import MARIADB
from ..model.events import Ddl, Event, Op, RowChange, Transaction, Workload
from ..model.table import Table
from ..model.truth import AppliedEvent, LoggedEvent
from ..model.values import Row, Value
from .base import Captured, UpstreamLost, UpstreamUnavailable, logged_by_others
from .binlog import BinlogDecodeError, Reader, decode_value

if TYPE_CHECKING:
    from .mariadb import Endpoint

PIP_HINT = "pip install 'cdc-conformance[upstream]' (PyMySQL and mysql-replication)"


# -- the binlog --------------------------------------------------------------------------------

def binlog_stream(endpoint: Endpoint, start_file: str, start_pos: int) -> Any:
    """A non-blocking reader of the binlog from (file, position): GTID, query, table map, row and
    XID events, up to the log's end as it stands.

    By file and position (COM_BINLOG_DUMP, `is_mariadb=False` in mysql-replication's terms; it
    still decodes MariaDB's GTID events): its MariaDB mode can only dump from a GTID state, and
    that dump was reset by MariaDB 10.11 after ~1,100 events of a long workload here."""
    try:
        from pymysqlreplication import BinLogStreamReader
        from pymysqlreplication.event import GtidEvent, MariadbGtidEvent, QueryEvent, XidEvent
        from pymysqlreplication.row_event import DeleteRowsEvent, TableMapEvent, UpdateRowsEvent, WriteRowsEvent
    except ImportError:
        raise UpstreamUnavailable(f"reading the MariaDB binlog needs mysql-replication: {PIP_HINT}") from None
    # mysql-replication reconnects for ever when the server drops the dump connection; the suite
    # reads a bounded range and must report a server that went away (UpstreamLost) instead.
    setattr(importlib.import_module("pymysqlreplication.binlogstream"), "MYSQL_EXPECTED_ERROR_CODES", [])  # noqa: B010
    # mysql-replication 1.0.17 connects with PyMySQL's old `db=` keyword, which warns on every
    # capture; the warning is about that library's code, not ours or the user's.
    warnings.filterwarnings("ignore", message="'db' is deprecated", category=DeprecationWarning)
    return BinLogStreamReader(
        connection_settings={"host": endpoint.host, "port": endpoint.port, "user": endpoint.user,
                             "password": endpoint.password, "ssl_disabled": endpoint.loopback or None},
        server_id=random.randint(10_000, 2**31 - 1), blocking=False, resume_stream=True, log_file=start_file,
        log_pos=start_pos, is_mariadb=False, freeze_schema=True,
        only_events=[MariadbGtidEvent, GtidEvent, QueryEvent, TableMapEvent, WriteRowsEvent, UpdateRowsEvent,
                     DeleteRowsEvent, XidEvent])


def read_binlog(endpoint: Endpoint, start_file: str, start_pos: int, end_file: str, end_pos: int,
                applied: list[AppliedEvent], names: dict[str, str], *, server: str, alive: Any) -> list[LoggedEvent]:
    """Read the binlog from (file, position) `start` to `end`; keep the GTID groups this
    workload committed (other workloads share the log)."""
    from pymysqlreplication.event import MariadbGtidEvent, QueryEvent, XidEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    stream = binlog_stream(endpoint, start_file, start_pos)
    by_gtid = {a.position: a for a in applied if a.committed and a.position}
    reverse = {v: k for k, v in names.items()}
    tables = TableVersions(applied)
    out: list[LoggedEvent] = []
    group: BinlogGroup | None = None
    with _reading(stream, server, alive):
        for ev in stream:
            pos = (stream.log_file, ev.packet.log_pos)
            if isinstance(ev, MariadbGtidEvent):
                if group is not None:
                    out += group.finish()
                gtid = str(ev.gtid)
                a = by_gtid.get(gtid)
                group = BinlogGroup(gtid, a, tables, reverse) if a is not None else None
            elif group is None:
                pass
            elif isinstance(ev, QueryEvent):
                q = ev.query.decode("utf-8", "replace") if isinstance(ev.query, bytes) else str(ev.query)
                if q.strip().upper() not in ("BEGIN", "COMMIT"):
                    group.ddl = True
            elif isinstance(ev, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
                group.rows(ev)
            elif isinstance(ev, XidEvent):
                out += group.finish()
                group = None
            if _at_or_after(pos, (end_file, end_pos)):
                break
        if group is not None:
            out += group.finish()
    return out


@contextlib.contextmanager
def _reading(stream: Any, server: str, alive: Any) -> Iterator[None]:
    """Reading `stream`: a server that went away mid-read is infrastructure (UpstreamLost), not a
    finding; a row the decoder cannot read is one; the stream is closed either way."""
    try:
        yield
    except BinlogDecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - a dead server mid-read is infrastructure, not a finding
        why = alive() or f"{type(e).__name__}: {redact_text(str(e))[:200]}"
        raise UpstreamLost(f"{server}: reading the binlog failed: {why}") from None
    finally:
        with contextlib.suppress(Exception):
            stream.close()


def _at_or_after(pos: tuple[str, int], end: tuple[str, int]) -> bool:
    return (pos[0], pos[1]) >= end if pos[0] == end[0] else pos[0] > end[0]


class TableVersions:
    """The model's table versions, in the order the applied DDL made them, so that each row
    event is read with the columns its table had at that point of the log."""

    def __init__(self, applied: list[AppliedEvent]) -> None:
        self.current: dict[tuple[str, str], Table] = {}
        self._ddl = {a.index: a.event for a in applied if isinstance(a.event, Ddl)}

    def apply(self, ddl: Ddl) -> None:
        if ddl.pre_table is not None:
            self.current.pop((ddl.pre_table.database, ddl.pre_table.name), None)
        if ddl.table is not None:
            self.current[(ddl.table.database, ddl.table.name)] = ddl.table

    def get(self, database: str, name: str) -> Table | None:
        return self.current.get((database, name))


class BinlogGroup:
    """One GTID group of the log: a DDL or a transaction's row events."""

    def __init__(self, gtid: str, applied: AppliedEvent, tables: TableVersions, reverse: dict[str, str]) -> None:
        self.gtid = gtid
        self.applied = applied
        self.tables = tables
        self.reverse = reverse
        self.ddl = False
        self.changes: list[RowChange] = []
        self.columns: dict[str, tuple[str, ...]] = {}
        self.notes: list[str] = []

    def rows(self, ev: Any) -> None:
        from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

        db = self.reverse.get(str(ev.schema))
        table = self.tables.get(db, str(ev.table)) if db is not None else None
        if table is None:
            self.notes.append(f"row event for {ev.schema}.{ev.table}, a table the model does not have here")
            return
        tm = ev.table_map[ev.table_id]
        names = tuple(str(c.name) for c in tm.columns)
        self.columns[table.qualified_name] = names
        r = Reader(ev.packet.read)
        n = int(ev.number_of_columns)
        op = Op.INSERT if isinstance(ev, WriteRowsEvent) else \
            Op.DELETE if isinstance(ev, DeleteRowsEvent) else Op.UPDATE
        while ev.packet.read_bytes < ev.event_size:
            first = _read_row(r, tm.columns, n, ev.columns_present_bitmap, table)
            if op is Op.UPDATE:
                assert isinstance(ev, UpdateRowsEvent)
                second = _read_row(r, tm.columns, n, ev.columns_present_bitmap2, table)
                self.changes.append(RowChange(Op.UPDATE, table, first, second))
            elif op is Op.INSERT:
                self.changes.append(RowChange(Op.INSERT, table, None, first))
            else:
                self.changes.append(RowChange(Op.DELETE, table, first, None))

    def finish(self) -> list[LoggedEvent]:
        event = self.applied.event
        if isinstance(event, Ddl):
            self.tables.apply(event)
            return [LoggedEvent(self.gtid, self.applied.index, is_ddl=True)]
        return [LoggedEvent(self.gtid, self.applied.index, tuple(self.changes), columns=tuple(self.columns.items()),
                            note="; ".join(self.notes))]


def _read_row(r: Reader, cols: list[Any], n: int, present: bytes, table: Table) -> Row:
    """One row image. Columns of the log beyond the model's table are read and dropped; the
    image is keyed by the model's column names, in the log's column order."""
    count = sum(1 for i in range(n) if present[i // 8] >> (i % 8) & 1)
    nulls = r.read((count + 7) // 8)
    row: Row = {}
    j = 0
    model = table.columns
    for i in range(n):
        if not present[i // 8] >> (i % 8) & 1:
            continue
        is_null = nulls[j // 8] >> (j % 8) & 1
        j += 1
        if i >= len(model):
            if not is_null:
                raise BinlogDecodeError(f"{table.qualified_name}: the log has more columns ({n}) than the model "
                                        f"({len(model)})")
            continue
        c = model[i]
        v: Value = None if is_null else decode_value(r, cols[i], c.type)
        row[c.name] = v
    return row


# -- since a position ------------------------------------------------------------------------

_FILE_POS = re.compile(r"^(?P<file>[^:\s]+):(?P<pos>\d+)$")
_GTID = re.compile(r"^\d+-\d+-\d+$")


class SinceError(ValueError):
    """`--since` is not a position this server can start from (who must act: the user)."""


def parse_since(text: str) -> tuple[str, int] | dict[int, int]:
    """`FILE:POS` (a binlog file and offset) or a GTID state (`D-S-N[,D-S-N…]`: the groups after it)."""
    text = text.strip()
    m = _FILE_POS.match(text)
    if m is not None:
        return m["file"], int(m["pos"])
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if parts and all(_GTID.match(p) for p in parts):
        state: dict[int, int] = {}
        for p in parts:
            d, _s, n = (int(x) for x in p.split("-"))
            state[d] = max(state.get(d, 0), n)
        return state
    raise SinceError(f"--since {text!r} is neither FILE:POS (SHOW MASTER STATUS before the file was applied) nor a "
                     "GTID state such as 0-1-100 (SELECT @@gtid_binlog_pos before the file was applied)")


def _after(gtid: str, state: dict[int, int]) -> bool:
    d, _s, n = (int(x) for x in gtid.split("-"))
    return n > state.get(d, 0)


def _start(cur: Any, since: tuple[str, int] | dict[int, int]) -> tuple[str, int]:
    """Where to read from: the file and position given, or the latest binlog file whose GTID
    state at its start is not past the state given (`BINLOG_GTID_POS`)."""
    cur.execute("SHOW BINARY LOGS")
    files = [str(r[0]) for r in cur.fetchall()]
    if isinstance(since, tuple):
        if since[0] not in files:
            raise SinceError(f"--since {since[0]}:{since[1]}: the server has no binary log {since[0]} (it has "
                             f"{', '.join(files[:3])}{'…' if len(files) > 3 else ''}; purged?)")
        return since
    chosen = files[0] if files else ""
    for f in files:
        cur.execute("SELECT BINLOG_GTID_POS(%s, 4)", (f,))
        at = str(cur.fetchone()[0] or "")
        if any(_after(g, since) for g in at.split(",") if _GTID.match(g.strip())):
            break
        chosen = f
    return chosen, 4


@dataclass
class _Unit:
    """One workload's cursor over its events while the log is read."""

    workload: Workload
    databases: dict[str, str]  # the names in the log -> the truth's (the same: the file's own)
    tables: TableVersions = field(default_factory=lambda: TableVersions([]))
    cursor: int = 0
    ddl_seen: int = 0  # statements of the DDL at the cursor the log has given so far
    applied: list[AppliedEvent] = field(default_factory=list)
    logged: list[LoggedEvent] = field(default_factory=list)
    times: dict[str, int] = field(default_factory=dict)  # GTID -> binlog seconds

    def _skip_to(self, want: type, tables: set[str] | None = None) -> int | None:
        """The index of the next event of kind `want` (a transaction: one whose tables hold
        `tables`); the transactions passed over logged nothing."""
        events = self.workload.events
        i = self.cursor
        while i < len(events):
            e = events[i]
            if want is Ddl and isinstance(e, Ddl):
                return i
            if want is Transaction and isinstance(e, Transaction) and (
                    tables is None or tables <= {c.table.qualified_name for c in e.changes}):
                return i
            if want is Transaction and isinstance(e, Ddl):
                return None  # a transaction's rows never come before an earlier DDL's statements
            i += 1
        return None

    def ddl(self, gtid: str) -> bool:
        i = self._skip_to(Ddl)
        if i is None:
            return False
        e = self.workload.events[i]
        assert isinstance(e, Ddl)
        self.cursor = i
        self.ddl_seen += 1
        if self.ddl_seen >= len(MARIADB.ddl_statements(e)):
            self.applied.append(AppliedEvent(i, e, (), True, gtid))
            self.tables.apply(e)
            self.logged.append(LoggedEvent(gtid, i, is_ddl=True))
            self.cursor, self.ddl_seen = i + 1, 0
        return True

    def transaction(self, gtid: str, tables: set[str]) -> BinlogGroup | None:
        i = self._skip_to(Transaction, tables)
        if i is None:
            return None
        e = self.workload.events[i]
        assert isinstance(e, Transaction)
        a = AppliedEvent(i, e, (), True, gtid)
        self.applied.append(a)
        self.cursor = i + 1
        return BinlogGroup(gtid, a, self.tables, self.databases)


def logged_since(endpoint: Endpoint, server: str, since_text: str, workloads: Sequence[tuple[Workload, Sequence[str]]],
                 *, alive: Any) -> tuple[list[Captured], list[str]]:
    """What the binlog since `since_text` holds of each workload (its events with the file's
    database names, and those names): the server's truth per workload, with its ids; and notes."""
    from pymysqlreplication.event import MariadbGtidEvent, QueryEvent, XidEvent
    from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

    since = parse_since(since_text)
    units = [_Unit(w, {n: n for n in names}) for w, names in workloads]
    owner: dict[str, _Unit] = {db: u for u, (_w, names) in zip(units, workloads, strict=True) for db in names}
    quoted = re.compile("|".join(re.escape(MARIADB.quote_ident(db)) for db in sorted(owner, key=len, reverse=True))
                        ) if owner else None
    try:
        conn = endpoint.connect()
    except Exception as e:  # noqa: BLE001
        raise UpstreamLost(f"{server}: {type(e).__name__}: {redact_text(str(e))[:200]}") from None
    try:
        cur = conn.cursor()
        start = _start(cur, since)
        cur.execute("SHOW MASTER STATUS")
        row = cur.fetchone()
        end = (str(row[0]), int(row[1]))
    finally:
        with contextlib.suppress(Exception):
            conn.close()
    notes: list[str] = []
    stream = binlog_stream(endpoint, *start)
    gtid: str | None = None
    unit: _Unit | None = None
    group: BinlogGroup | None = None
    first_rows = True
    strays = 0
    with _reading(stream, server, alive):
        for ev in stream:
            pos = (stream.log_file, ev.packet.log_pos)
            if isinstance(ev, MariadbGtidEvent):
                if group is not None and unit is not None:
                    unit.logged += group.finish()
                gtid = str(ev.gtid)
                if isinstance(since, dict) and not _after(gtid, since):
                    gtid = None
                unit, group, first_rows = None, None, True
            elif gtid is None:
                pass
            elif isinstance(ev, QueryEvent):
                q = ev.query.decode("utf-8", "replace") if isinstance(ev.query, bytes) else str(ev.query)
                if q.strip().upper() in ("BEGIN", "COMMIT") or quoted is None:
                    pass
                elif (m := quoted.search(q)) is not None:
                    named = owner[m.group(0)[1:-1].replace("``", "`")]
                    if not named.ddl(gtid):
                        strays += 1
                    named.times[gtid] = int(ev.timestamp)
                    gtid = None
            elif isinstance(ev, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
                if first_rows:  # (a table map is not given again for a table it already mapped)
                    first_rows = False
                    unit = owner.get(str(ev.schema))
                if unit is not None and group is None:
                    group = unit.transaction(gtid, {f"{ev.schema}.{ev.table}"})
                    if group is None:
                        strays += 1
                        unit = None
                    else:
                        unit.times[gtid] = int(ev.timestamp)
                if group is not None:
                    group.rows(ev)
            elif isinstance(ev, XidEvent):
                if group is not None and unit is not None:
                    unit.logged += group.finish()
                gtid, unit, group = None, None, None
            if _at_or_after(pos, end):
                break
        if group is not None and unit is not None:
            unit.logged += group.finish()
    if strays:
        notes.append(f"{strays} group(s) of the binlog since {since_text} name a workload's databases but follow none "
                     "of its events in order (applied twice, or not from this file?): not part of the truth")
    out = []
    for u, (w, names) in zip(units, workloads, strict=True):
        out.append(_captured(u, w, server, tuple((n, n) for n in names)))
        events = sum(isinstance(e, (Ddl, Transaction)) for e in w.events)
        if len(u.applied) < events:
            notes.append(f"workload {', '.join(names) or '-'}: the binlog since {since_text} holds {len(u.applied)} "
                         f"of its {events} DDL and transactions (the rest: logged nothing, or not applied yet)")
    return out, notes


def _captured(u: _Unit, w: Workload, server: str, databases: tuple[tuple[str, str], ...]) -> Captured:
    def time_ms(e: Event) -> int | None:
        seconds = u.times.get(e.position) if isinstance(e, (Transaction, Ddl)) and e.position else None
        return None if seconds is None else seconds * 1000

    return logged_by_others(w, u.applied, u.logged, server, MARIADB.name, databases, time_ms)
