"""Runs the MaxScale KafkaCDC checks: decode, pair with the workload, evaluate, tally.

KafkaCDC is stateful for a consumer: a DML event is read with the latest schema event of its
table seen earlier in the topic. The checker keeps, per partition, the latest schema of every
table and a compact log of every message (what the stream checks need: kind, table, GTID,
event number and type, version, whether it repeats an earlier message). With the workload
(`conformance run`), a `Tracker` plans what MaxScale would send for each source event; records
are paired with what was planned (by key), so that values are judged exactly.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from ...checks import compiled
from ...checks.compiled import FastRules, new_kind
from ...checks.registry import CheckRegistry, Location
from ...checks.results import Tally
from ...encoders.spi import Record
from ...model.events import Event, Gtid
from ..base import CheckerBase, CheckerMode, Identified
from ..kit import Located, PartitionLogs, digest
from . import fastpath, spec
from .decoder import Column, Message, decode
from .jsontext import parse_compact, plain_spacing
from .spec import CdcOptions
from .tracker import Planned, RowImage, SchemaEvent, Tracker


@dataclass(slots=True)
class KnownSchema:
    """The latest schema event of a table in a partition, as a consumer would keep it."""

    version: int | None
    columns: list[Column]
    offset: int

    def column(self, name: str) -> Column | None:
        found = None
        for c in self.columns:
            if c.name == name:
                found = c  # the last one: a later column of the same sanitized name wins
        return found


#: One message of a partition's log (what the stream checks need, nothing more): a plain tuple of
#: plain values (ints, strings, bytes, None and tuples of them), which the garbage collector stops
#: walking after its first passes over it, before it reaches the oldest generation (it never does
#: for a NamedTuple, or for a tuple holding a `Gtid`: a log holds one entry per message, and every
#: full collection would walk them all). Its fields, by these indexes: the offset; the kind
#: ("schema", "dml" or None); the table ((database, table) or None); the GTID (`gtid_key`:
#: (domain, server_id, sequence) or None); the DML's event number and type; the schema event's
#: version; a schema event's fields as bytes (to tell a repeat from a new version); whether it
#: repeats an earlier message of the partition (a replay); and, for a DML, whether a schema event
#: of its table came before it.
Entry: TypeAlias = tuple[Any, ...]
OFFSET, KIND, TABLE, GTID, EVENT_NUMBER, EVENT_TYPE, VERSION, CONTENT, DUPLICATE, SCHEMA_SEEN = range(10)


def entry(offset: int, kind: str | None, table: tuple[str, str] | None = None, gtid: Gtid | None = None,
          event_number: int | None = None, event_type: str | None = None, version: int | None = None,
          content: bytes | None = None, duplicate: bool = False, schema_seen: bool | None = None) -> Entry:
    """An entry from its fields (the checks' path; the fast path builds its DML entries inline)."""
    return (offset, kind, table, gtid_key(gtid), event_number, event_type, version, content, duplicate, schema_seen)


def gtid_key(g: Gtid | None) -> tuple[int, int, int] | None:
    """A GTID as a log entry holds it: equal where the GTIDs are equal (a `Gtid` compares its
    three parts), and no object the collector walks."""
    return None if g is None else (g.domain, g.server_id, g.sequence)


def gtid_text(k: tuple[int, int, int] | None) -> str:
    """A log entry's GTID as `str(Gtid)` writes it (`d-s-q`), or "None"."""
    return "None" if k is None else f"{k[0]}-{k[1]}-{k[2]}"


@dataclass(slots=True)
class PartitionLog:
    topic: str
    partition: int
    first_offset: int | None = None
    entries: list[Entry] = field(default_factory=list)
    schemas: dict[tuple[str, str], KnownSchema] = field(default_factory=dict)
    seen: set[Hashable] = field(default_factory=set)  # schema events' and DML events' (`dml_ident`) identities
    # The fast path's kinds of DML event in this partition (fastpath.py), by (table_schema,
    # table_name, the value's keys).
    kinds: dict[tuple[Any, Any, tuple[str, ...]], fastpath.FastKind] = field(default_factory=dict)
    # The stream checks' first-seen DML events (`checks.stream._dmls`), with the log's length then.
    dmls: tuple[int, list[Entry]] | None = None


@dataclass(slots=True)
class RecordEvidence(Located):
    record: Record
    loc: Location
    msg: Message
    o: CdcOptions
    schema: KnownSchema | None = None  # DML: the latest schema event of its table in the partition
    source: Planned | None = None  # with the workload: what the tracker planned for this record
    complete: bool = False  # the partition's log is known from its first message
    want: dict[str, object] | None = None  # with the workload: the row's values as due (computed once)
    columns: list[tuple[str, Any, Any]] | None = None  # a DML's (name, declared column, value), computed once

    @property
    def table_name(self) -> str | None:
        t = self.msg.table
        return f"{t[0]}.{t[1]}" if t is not None else None


@dataclass(slots=True)
class EventEvidence:
    event: Event
    planned: list[Planned]  # everything the tracker planned, sent or not
    records: list[RecordEvidence]
    topic: str
    o: CdcOptions

    @property
    def sent(self) -> list[Planned]:
        return [p for p in self.planned if p.sent]


@dataclass(slots=True)
class StreamEvidence:
    topic: str
    logs: dict[int, PartitionLog]
    o: CdcOptions
    complete: bool  # every partition's log holds the whole stream (a run's own topic)
    with_source: bool

    def from_start(self, log: PartitionLog) -> bool:
        return self.complete or log.first_offset == 0

    @property
    def used(self) -> list[PartitionLog]:
        return [lg for _, lg in sorted(self.logs.items()) if lg.entries]


def schema_content(msg: Message) -> bytes:
    return digest((msg.table, msg.get("fields")))


def dml_ident(gtid: Gtid | None, event_number: int | None, key: bytes | None, key_text: str | None) -> Hashable:
    """What tells a DML message from the others of its partition (the same again is a replay):
    its GTID, event number and key text; where the key is the very `GTID:event_number` of its
    value (every conforming message), the key's bytes alone say all three (bytes never equal the
    tuple of another message)."""
    if key is not None and gtid is not None and event_number is not None \
            and key_text == spec.dml_key(gtid, event_number):
        return key
    return ("d", str(gtid), event_number, key_text)


class CdcChecker(CheckerBase):
    def __init__(self, checks: CheckRegistry, options: Mapping[str, str], tally: Tally, mode: CheckerMode, *,
                 topic_prefix: str = "", partitions: int | None = None, rules: FastRules | None = None) -> None:
        super().__init__(checks, options, tally, mode, partitions=partitions)
        self.o = CdcOptions.from_options(options)
        self.prefix = topic_prefix
        self.logs = PartitionLogs(PartitionLog)
        self.tracker = Tracker(self.o)
        # The compiled fast path (fastpath.py), for records judged alone (no workload to pair),
        # with the checks' fast rules (`checks.common.FAST`: the suite hands them over, since
        # the checks import this module).
        self.fast = rules is not None and compiled.enabled() and mode.records and not mode.source
        self.rules = rules
        self._identity: tuple[Record, tuple[Identified]] | None = None  # the fast path's last record's
        # The last GTID the fast path made (as `gtid_key` makes it: a transaction's rows share it).
        self._gtid: tuple[int, int, int] | None = None
        self._last: tuple[str, int, PartitionLog] | None = None  # the fast path's last partition and its log

    # -- evidence ------------------------------------------------------------------------------

    def evidence(self, record: Record, loc: Location) -> RecordEvidence:
        msg = decode(record.key, record.value)
        lg = self.logs.of(record.topic, record.partition)
        offset = record.offset if record.offset is not None else len(lg.entries)
        if lg.first_offset is None:
            lg.first_offset = offset
        if record.offset is None:
            loc = Location(record.topic, record.partition or 0, offset, line=loc.line)
        ev = RecordEvidence(record, loc, msg, self.o, complete=self.mode.complete or lg.first_offset == 0)
        table = msg.table
        gtid = msg.gtid
        if msg.kind == "schema":
            content = schema_content(msg)
            ident: Hashable = ("s", content, msg.version, str(gtid))
            duplicate = ident in lg.seen
            lg.seen.add(ident)
            if table is not None:
                lg.schemas[table] = KnownSchema(msg.version, msg.columns(), offset)
            made = entry(offset, msg.kind if msg.ok else None, table, gtid, version=msg.version, content=content,
                         duplicate=duplicate)
        elif msg.kind == "dml":
            ident = dml_ident(gtid, msg.event_number, record.key, msg.key_text)
            duplicate = ident in lg.seen
            lg.seen.add(ident)
            schema_seen = None
            if table is not None:
                ev.schema = lg.schemas.get(table)
                schema_seen = ev.schema is not None
            made = entry(offset, msg.kind if msg.ok else None, table, gtid, msg.event_number, msg.event_type,
                         duplicate=duplicate, schema_seen=schema_seen)
        else:
            made = entry(offset, msg.kind if msg.ok else None, table, gtid)
        lg.entries.append(made)
        return ev

    # -- the fast path (fastpath.py) --------------------------------------------------------------

    def check_record(self, record: Record, loc: Location) -> None:
        ev = self.evidence(record, loc)
        if self.fast and self._learn(ev):
            return
        self.run_record_checks(ev)

    def _learn(self, ev: RecordEvidence) -> bool:
        """Compile the kind of a DML event that has none yet (its rules read only what the kind
        decides: the record is an example of it); True where the new function accepts the record
        itself, which is then counted under its variant's outcomes, as `check_fast` counts the
        kind's further records (the checks need not run on it: the function accepts only records
        whose every check answers as the variant says)."""
        m = ev.msg
        if m.kind != "dml" or m.obj is None or m.text is None or m.table is None:
            return False
        lg = self.logs.of(ev.record.topic, ev.record.partition)
        kind = new_kind(lg.kinds, (*m.table, tuple(m.obj)), ev.schema, fastpath.MAX_KINDS, fastpath.FastKind)
        if kind is None:
            return False
        assert self.rules is not None
        fastpath.compile_kind(kind, ev, self.record_specs, self.rules, ev.record.topic)
        if kind.accept is None or not plain_spacing(m.text):  # the function reads no other text
            return False
        try:
            variant = kind.accept(m.obj, m.text, ev.record.key)
        except Exception:  # noqa: BLE001 - the checks judge it (and report their own errors)
            return False
        if variant is None:
            return False
        self.tally.count(kind.outcome(variant))
        return True

    def check_fast(self, record: Record) -> bool:
        self._identity = None
        value = record.value
        if not self.fast or value is None:
            return False
        topic, partition = record.topic, record.partition or 0
        last = self._last
        if last is not None and last[1] == partition and last[0] == topic:
            lg = last[2]
        else:
            got = self.logs.logs.get((topic, partition))
            if got is None:
                return False
            lg = got
            self._last = (topic, partition, lg)
        if not lg.kinds:
            return False
        try:
            text = value.decode("utf-8")
            # As jsontext.read parses a value (duplicate keys and NaN refused, exact decimals); a
            # text with a tab, CR or LF (whitespace: not compact) is left to the checks.
            obj = parse_compact(text)
            if obj.__class__ is not dict:
                return False
            kind = lg.kinds.get((obj.get("table_schema"), obj.get("table_name"), tuple(obj)))
            if kind is None or kind.accept is None or lg.schemas.get(kind.table) is not kind.schema:
                return False
            variant = kind.accept(obj, text, record.key)
        except Exception:  # noqa: BLE001 - the checks judge it (and report their own errors)
            return False
        if variant is None:
            return False
        # The partition's log, as `evidence` keeps it for a DML event. The function compared the
        # key with the value's `GTID:event_number`, so the key's bytes are the message's identity
        # in the log (`dml_ident`) and its delivery match (`delivery.match`).
        key: bytes = record.key  # type: ignore[assignment]  # the function compared it: not None
        d, s, q, n = obj["domain"], obj["server_id"], obj["sequence"], obj["event_number"]
        g = self._gtid
        if g is None or g[2] != q or g[0] != d or g[1] != s:
            g = self._gtid = (d, s, q)  # `gtid_key` of the value's GTID
        offset = record.offset if record.offset is not None else len(lg.entries)
        if lg.first_offset is None:
            lg.first_offset = offset
        seen = lg.seen
        duplicate = key in seen
        seen.add(key)
        lg.entries.append((offset, "dml", kind.table, g, n, obj["event_type"], None, None, duplicate,
                           kind.schema is not None))
        self.tally.count(kind.outcomes.get(variant) or kind.outcome(variant))
        self._identity = (record, ((kind.entity, key, q),))
        return True

    def identity(self, record: Record) -> tuple[Identified] | None:
        got = self._identity
        return got[1] if got is not None and got[0] is record else None

    # -- run mode ----------------------------------------------------------------------------------

    def check_event(self, event: Event, records: Sequence[Record]) -> None:
        planned = self.tracker.plan(event)
        evs = self.evidences(records)
        by_key: dict[str, list[Planned]] = {}
        for p in planned:
            if p.sent:
                k = str(p.gtid) if isinstance(p, SchemaEvent) else spec.dml_key(p.gtid, p.event_number)
                by_key.setdefault(k, []).append(p)
        for ev in evs:
            cands = by_key.get(ev.msg.key_text or "", [])
            match: Planned | None
            if ev.msg.kind == "schema":
                match = next((p for p in cands if isinstance(p, SchemaEvent)
                              and (p.database, p.table) == ev.msg.table), None)
            else:
                match = next((p for p in cands if isinstance(p, RowImage)), None)
            if match is not None:
                cands.remove(match)
                ev.source = match
        for ev in evs:
            self.run_record_checks(ev)
        self.run_event_checks(EventEvidence(event, planned, evs, self.prefix + self.o.topic, self.o))

    def finish(self) -> None:
        for topic, parts in self.logs.by_topic().items():
            self.run_stream_checks(StreamEvidence(topic, parts, self.o, self.mode.complete, self.mode.source))
        self.logs.clear()
        self._identity = None
        self._last = None
