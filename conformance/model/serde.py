"""Workloads and events to and from JSON (reproduction fixtures, `--dump-workload`, Spark
shards, and the events sent to a subprocess encoder).

The format is versioned: `{"format": "cdc-conformance/workload", "format_version": 1, ...}`.
Tables are stored once per version and referenced by `"<table_id>@<version>:<name>"`; row
images are lists in column order; values use JSON-native forms chosen by the column type
(`docs/subprocess-encoders.md` lists them). A workload file is `tables` + `events`; a stream
of events (`EventWriter` / `EventReader`) carries the same entries one event at a time, each
with the table versions it is the first to reference, so both share one serialisation and
one version number.
"""

from __future__ import annotations

import base64
import decimal
import ipaddress
import math
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from . import events as ev
from . import values as val
from .table import Column, Default, DefaultKind, Generated, Index, ReplicaIdentity, Table
from .types import Kind, SqlType

FORMAT = "cdc-conformance/workload"
FORMAT_VERSION = 1


class WorkloadFormatError(ValueError):
    pass


def _ref(t: Table) -> str:
    # A RENAME keeps table id and version: the name is part of a table version's identity.
    return f"{t.table_id}@{t.version}:{t.name}"


def type_to_json(t: SqlType) -> dict[str, Any]:
    d: dict[str, Any] = {"kind": t.kind.value}
    if t.unsigned:
        d["unsigned"] = True
    if t.length is not None:
        d["length"] = t.length
    if t.kind is Kind.DECIMAL:
        d["precision"], d["scale"] = t.precision, t.scale
    if t.fsp:
        d["fsp"] = t.fsp
    if t.elements:
        d["elements"] = list(t.elements)
    if t.charset is not None and not t.is_binary:
        d["charset"], d["collation"] = t.charset, t.collation
    if t.spelling is not None:
        d["spelling"] = t.spelling
    if t.element is not None:
        d["element"] = type_to_json(t.element)
    return d


def type_from_json(d: dict[str, Any]) -> SqlType:
    return SqlType(
        kind=Kind(d["kind"]), unsigned=d.get("unsigned", False), length=d.get("length"),
        precision=d.get("precision"), scale=d.get("scale"), fsp=d.get("fsp", 0),
        elements=tuple(d.get("elements", ())), charset=d.get("charset"), collation=d.get("collation"),
        spelling=d.get("spelling"), element=type_from_json(d["element"]) if "element" in d else None,
    )


def value_to_json(t: SqlType, v: val.Value) -> Any:
    if v is None:
        return None
    if isinstance(v, decimal.Decimal):
        # Plain notation (never `1E-10`): other languages read it without a decimal library's
        # quirks. A value keeps its exponent (-scale), so it reads back identical.
        return format(v, "f")
    if isinstance(v, bytes):
        return base64.b64encode(v).decode("ascii")
    if isinstance(v, val.Date):
        return v.text()
    if isinstance(v, val.DateTime):
        return v.text(6)
    if isinstance(v, val.Time):
        return v.text(6)
    if isinstance(v, val.Json):
        return {"json": v.data}
    if isinstance(v, val.Vector):
        return list(v.elements)
    if isinstance(v, tuple):
        return list(v)
    if isinstance(v, (uuid.UUID, ipaddress.IPv4Address, ipaddress.IPv6Address)):
        return str(v)
    if isinstance(v, val.Interval):
        return [v.months, v.days, v.microseconds]
    if isinstance(v, val.Array):
        assert t.element is not None
        return [value_to_json(t.element, x) for x in v.items]
    if isinstance(v, val.Infinity):
        return v.text()
    if isinstance(v, val.TimeTz):
        return v.text()
    if isinstance(v, val.Hstore):
        return {"hstore": [list(p) for p in v.pairs]}
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


_DT = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{6})$")
_TM = re.compile(r"^(-?)(\d{2,3}):(\d{2}):(\d{2})\.(\d{6})$")


def value_from_json(t: SqlType, j: Any) -> val.Value:
    if j is None:
        return None
    k = t.kind
    if k in (Kind.DECIMAL, Kind.NUMERIC, Kind.MONEY):
        return decimal.Decimal(j)
    if t.is_binary or k is Kind.BYTEA:
        return base64.b64decode(j)
    if k in val.FROM_TEXT:
        return val.FROM_TEXT[k](j)
    if k is Kind.INTERVAL:
        return val.Interval(*j)
    if k is Kind.ARRAY:
        assert t.element is not None
        return val.Array(tuple(value_from_json(t.element, x) for x in j))
    if k is Kind.BOOLEAN:
        return bool(j)
    if k in (Kind.DATE, Kind.DATETIME, Kind.TIMESTAMPTZ) and j in ("infinity", "-infinity"):
        return val.Infinity(j == "infinity")
    if k is Kind.DATE:
        y, m, d = (int(x) for x in j.split("-"))
        return val.Date(y, m, d)
    if k in (Kind.DATETIME, Kind.TIMESTAMP, Kind.TIMESTAMPTZ):
        mt = _DT.match(j)
        if not mt:
            raise WorkloadFormatError(f"bad datetime {j!r}")
        return val.DateTime(*(int(x) for x in mt.groups()))
    if k is Kind.HSTORE:
        return val.Hstore.of({str(p[0]): p[1] for p in j["hstore"]})
    if k is Kind.TIMETZ:
        try:
            return val.parse_timetz(j)
        except ValueError as e:
            raise WorkloadFormatError(str(e)) from None
    if k is Kind.TIME:
        mt = _TM.match(j)
        if not mt:
            raise WorkloadFormatError(f"bad time {j!r}")
        neg, h, mi, s, us = mt.groups()
        return val.Time(neg == "-", int(h), int(mi), int(s), int(us))
    if k in (Kind.JSON, Kind.JSONB):
        return val.Json(j["json"])
    if k is Kind.SET:
        return tuple(j)
    if k is Kind.VECTOR:
        return val.Vector(tuple(float(x) for x in j))
    if k in (Kind.FLOAT, Kind.DOUBLE):
        return float(j)
    return j  # type: ignore[no-any-return]


def _col_to_json(c: Column) -> dict[str, Any]:
    d: dict[str, Any] = {"name": c.name, "type": type_to_json(c.type), "nullable": c.nullable,
                         "column_id": c.column_id}
    if c.default.kind is not DefaultKind.NONE:
        d["default"] = {"kind": c.default.kind.value, "value": value_to_json(c.type, c.default.value)}
    if c.generated is not None:
        d["generated"] = {"expression": c.generated.expression, "stored": c.generated.stored,
                          "depends_on": list(c.generated.depends_on)}
    return d


def _col_from_json(d: dict[str, Any]) -> Column:
    t = type_from_json(d["type"])
    dd = d.get("default")
    default = Default() if dd is None else Default(DefaultKind(dd["kind"]), value_from_json(t, dd.get("value")))
    g = d.get("generated")
    generated = None if g is None else Generated(g["expression"], bool(g.get("stored", False)),
                                                 tuple(g.get("depends_on", ())))
    return Column(d["name"], t, d["nullable"], default, d["column_id"], generated)


def table_to_json(t: Table) -> dict[str, Any]:
    d: dict[str, Any] = {
        "ref": _ref(t), "database": t.database, "name": t.name, "table_id": t.table_id,
        "version": t.version, "columns": [_col_to_json(c) for c in t.columns],
        "indexes": [{"name": ix.name, "columns": list(ix.columns), "primary": ix.primary,
                     "unique": ix.unique, "index_id": ix.index_id} for ix in t.indexes],
    }
    if t.replica_identity is not None:
        d["replica_identity"] = t.replica_identity.value
    return d


def table_from_json(d: dict[str, Any]) -> Table:
    return Table(
        database=d["database"], name=d["name"], table_id=d["table_id"], version=d["version"],
        columns=tuple(_col_from_json(c) for c in d["columns"]),
        indexes=tuple(Index(ix["name"], tuple(ix["columns"]), ix["primary"], ix["unique"], ix["index_id"])
                      for ix in d["indexes"]),
        replica_identity=ReplicaIdentity(d["replica_identity"]) if "replica_identity" in d else None,
    )


def _row_to_json(t: Table, row: val.Row | None) -> list[Any] | None:
    if row is None:
        return None
    return [value_to_json(c.type, row[c.name]) for c in t.columns]


def _row_from_json(t: Table, j: list[Any] | None) -> val.Row | None:
    if j is None:
        return None
    if len(j) != len(t.columns):
        raise WorkloadFormatError(f"row has {len(j)} values, table {t.name!r} has {len(t.columns)} columns")
    return {c.name: value_from_json(c.type, v) for c, v in zip(t.columns, j, strict=True)}


Ref = Callable[[Table | None], str | None]
Tab = Callable[[str | None], Table | None]


def event_to_json(e: ev.Event, ref: Ref) -> dict[str, Any]:
    """One event; `ref` names a table version (and notes that it must be sent)."""
    if isinstance(e, ev.Transaction):
        txn: dict[str, Any] = {"commit_ts": e.commit_ts, "start_ts": e.start_ts, "changes": [
            _change_to_json(c, ref) for c in e.changes]}
        if e.position is not None:  # where a real server committed it (GTID / LSN)
            txn["position"] = e.position
        if e.messages:  # PostgreSQL logical decoding messages
            txn["messages"] = [{"prefix": m.prefix, "content": base64.b64encode(m.content).decode("ascii"),
                                "transactional": m.transactional, "index": m.index} for m in e.messages]
        return {"txn": txn}
    if isinstance(e, ev.Ddl):
        ddl: dict[str, Any] = {"kind": e.kind.value, "commit_ts": e.commit_ts, "sql": e.sql, "table": ref(e.table),
                               "pre_table": ref(e.pre_table), "database": e.database}
        if e.position is not None:
            ddl["position"] = e.position
        return {"ddl": ddl}
    if isinstance(e, ev.CaptureStart):
        return {"capture_start": {"commit_ts": e.commit_ts, "tables": [
            {"table": ref(t), "rows": [_row_to_json(t, r) for r in rows]} for t, rows in e.tables]}}
    return {"watermark": e.ts}


def _change_to_json(c: ev.RowChange, ref: Ref) -> dict[str, Any]:
    out = {"op": c.op.value, "table": ref(c.table), "before": _row_to_json(c.table, c.before),
           "after": _row_to_json(c.table, c.after)}
    if c.unavailable:  # unchanged TOASTed values the change log does not carry
        out["unavailable"] = sorted(c.unavailable)
    return out


def _message_from_json(m: Any) -> ev.LogicalMessage:
    if not isinstance(m, dict) or not isinstance(m.get("prefix"), str) or not isinstance(m.get("content"), str):
        raise WorkloadFormatError(f"a logical message needs a prefix and a base64 content: {str(m)[:80]}")
    return ev.LogicalMessage(m["prefix"], base64.b64decode(m["content"]), bool(m.get("transactional", True)),
                          int(m.get("index", 0)))


def event_from_json(e: dict[str, Any], tab: Tab) -> ev.Event:
    """One event; `tab` resolves a table reference (raising WorkloadFormatError if unknown)."""
    if "txn" in e:
        x = e["txn"]
        changes = []
        for c in x["changes"]:
            t = tab(c["table"])
            if t is None:
                raise WorkloadFormatError("a row change names no table")
            changes.append(ev.RowChange(ev.Op(c["op"]), t, _row_from_json(t, c["before"]),
                                        _row_from_json(t, c["after"]), frozenset(c.get("unavailable") or ())))
        return ev.Transaction(x["commit_ts"], tuple(changes), x.get("start_ts", 0), x.get("position"),
                           tuple(_message_from_json(m) for m in x.get("messages") or ()))
    if "ddl" in e:
        x = e["ddl"]
        return ev.Ddl(ev.DdlKind(x["kind"]), x["commit_ts"], x["sql"], tab(x["table"]), tab(x["pre_table"]),
                   x.get("database", ""), x.get("position"))
    if "watermark" in e:
        return ev.Watermark(e["watermark"])
    if "capture_start" in e:
        x = e["capture_start"]
        tables = []
        for item in x.get("tables") or ():
            t = tab(item.get("table"))
            if t is None:
                raise WorkloadFormatError("a capture start names no table")
            rows = (_row_from_json(t, j) for j in item.get("rows") or ())
            tables.append((t, tuple(r for r in rows if r is not None)))
        return ev.CaptureStart(int(x.get("commit_ts", 0)), tuple(tables))
    raise WorkloadFormatError(f"unknown event {sorted(e)}")


class EventWriter:
    """Events one at a time (the subprocess encoder protocol): `write(e)` returns the event's
    JSON and the table versions it is the first to reference since this writer was made."""

    def __init__(self) -> None:
        self._sent: set[str] = set()
        self._new: list[dict[str, Any]] = []

    def _ref(self, t: Table | None) -> str | None:
        if t is None:
            return None
        r = _ref(t)
        if r not in self._sent:
            self._sent.add(r)
            self._new.append(table_to_json(t))
        return r

    def write(self, e: ev.Event) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        self._new = []
        return event_to_json(e, self._ref), self._new


class EventReader:
    """The other end of an `EventWriter`: remembers every table version it was sent."""

    def __init__(self) -> None:
        self._tables: dict[str, Table] = {}

    def _tab(self, r: str | None) -> Table | None:
        if r is None:
            return None
        try:
            return self._tables[r]
        except KeyError:
            raise WorkloadFormatError(f"unknown table reference {r!r} (sent with no earlier event)") from None

    def read(self, event: dict[str, Any], tables: Sequence[dict[str, Any]] = ()) -> ev.Event:
        for t in tables:
            self._tables[t["ref"]] = table_from_json(t)
        return event_from_json(event, self._tab)


def workload_to_json(w: ev.Workload) -> dict[str, Any]:
    tables: dict[str, dict[str, Any]] = {}

    def ref(t: Table | None) -> str | None:
        if t is None:
            return None
        r = _ref(t)
        tables.setdefault(r, table_to_json(t))
        return r

    events = [event_to_json(e, ref) for e in w.events]
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "seed": w.seed, "shard": w.shard,
            "meta": w.meta, "tables": list(tables.values()), "events": events}


def workload_from_json(d: dict[str, Any]) -> ev.Workload:
    if d.get("format") != FORMAT:
        raise WorkloadFormatError(f"not a workload file (format={d.get('format')!r})")
    if d.get("format_version") != FORMAT_VERSION:
        raise WorkloadFormatError(
            f"workload format_version {d.get('format_version')!r} is not supported (this suite reads "
            f"{FORMAT_VERSION}); upgrade cdc-conformance")
    tables = {t["ref"]: table_from_json(t) for t in d["tables"]}

    def tab(r: str | None) -> Table | None:
        if r is None:
            return None
        try:
            return tables[r]
        except KeyError:
            raise WorkloadFormatError(f"unknown table reference {r!r}") from None

    events = [event_from_json(e, tab) for e in d["events"]]
    return ev.Workload(tuple(events), d.get("seed"), d.get("shard"), dict(d.get("meta") or {}))
