"""Runs the TiCDC Simple checks: decode, join with the workload, evaluate, tally.

Simple is stateful: a DML can only be read with a schema seen earlier (a DDL or a BOOTSTRAP),
so the checker keeps, per partition, the schemas seen so far and a compact log of every
message (kind, commit ts, table, version, build ts). Record checks run as records arrive;
stream checks (the consumer's rule, bootstrap timing, ordering) run on the logs at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson

from ...checks import compiled
from ...checks.compiled import new_kind
from ...checks.registry import CheckRegistry, Location
from ...checks.results import Tally
from ...encoders.spi import Record
from ...model.events import Ddl, Event, Op, Transaction, Watermark
from ...model.table import Table
from ...model.values import Row
from ..base import CheckerBase, CheckerMode
from ..kit import Located, PartitionLogs, key_change_split, tables_of
from .decoder import Message, decode, integer, schema_key, table_schema_of
from .spec import SimpleOptions


@dataclass(slots=True)
class SourceRow:
    table: Table
    op: Op
    image: Row  # after for insert/update, before for delete
    before: Row | None
    commit_ts: int


class Entry(NamedTuple):
    """One message in a partition's log (what the stream checks need, nothing more): the fields
    of the plain tuple the log keeps (`EntryTuple`, made for every record: a plain tuple is made
    fastest, and the collector stops tracking one that holds no container; the stream checks
    read it by the indexes below)."""

    seq: int
    offset: int
    kind: str | None
    type: str | None
    commit_ts: int | None
    build_ts: int | None
    # Only well-typed values get here (strings, integers), so that stream checks can key and
    # sort by them; a message whose identifying fields are malformed is left out of them.
    table: tuple[str, str] | None  # (database, table)
    version: int | None  # DML schemaVersion, or the version of the schema a DDL/BOOTSTRAP carries
    # The tableID of the schema a DDL/BOOTSTRAP carries; for a DML, that of the schema it resolves
    # to (else its own): a partitioned table's DML carries the partition's physical id, its
    # tableSchema the logical one (notes §2.2, §4.16).
    table_id: int | None = None
    resolvable: bool | None = None  # DML: could a consumer of this partition read it here?


#: A log entry as a partition's log keeps it: Entry's fields in its order, a plain tuple.
EntryTuple = tuple[Any, ...]
SEQ, OFFSET, KIND, TYPE, COMMIT_TS, BUILD_TS, TABLE, VERSION, TABLE_ID, RESOLVABLE = range(10)


@dataclass(slots=True)
class PartitionLog:
    topic: str
    partition: int
    entries: list[EntryTuple] = field(default_factory=list)
    schemas: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    # Digests of the DMLs already in the log: a replay after a restart repeats one, and is a
    # duplicate (at-least-once), judged by the delivery checks, not an ordering violation.
    seen_dml: set[int] = field(default_factory=set)
    seen_watermarks: set[int | None] = field(default_factory=set)
    # The fast path's kinds of DML message in this partition (fastpath.Kind → fastpath.FastKind).
    kinds: dict[Any, Any] = field(default_factory=dict)
    # The kind compiled or found last for each (database, table, schemaVersion, type): always one of
    # `kinds` (each kind made goes here, and replaces a kind of its key: `_first_of_kind`), so that
    # `check_fast` hashes a short key and compares the rest of the kind's.
    fast: dict[tuple[str, str, int, str], Any] = field(default_factory=dict)


@dataclass(slots=True)
class RecordEvidence(Located):
    record: Record
    loc: Location
    msg: Message
    o: SimpleOptions
    source: SourceRow | Ddl | Watermark | None = None
    schema: dict[str, Any] | None = None  # the tableSchema a DML resolves to, if one was seen
    bootstrap_table: Table | None = None  # run mode: the source table version a BOOTSTRAP announces
    value_columns: Any = None  # the DML's columns by type family (checks.value_columns), worked out once

    @property
    def table_name(self) -> str | None:
        if isinstance(self.source, SourceRow):
            return self.source.table.qualified_name
        if self.msg.kind == "DML":
            return f"{self.msg.get('database')}.{self.msg.get('table')}"
        return None


@dataclass(slots=True)
class EventEvidence:
    event: Event
    expected_rows: list[SourceRow]
    records: list[RecordEvidence]
    partitions: int
    o: SimpleOptions


@dataclass(slots=True)
class StreamEvidence:
    topic: str
    logs: dict[int, PartitionLog]
    o: SimpleOptions
    with_source: bool
    partition_count: int | None  # the topic's partitions, when the harness knows them
    # checks.stream._merged's answer for each partition, worked out once for the checks that need it.
    merged: dict[int, Any] = field(default_factory=dict)

    @property
    def partitions(self) -> list[int]:
        """Every partition of the topic: known, or else the ones with messages."""
        if self.partition_count is not None:
            return list(range(self.partition_count))
        return sorted(self.logs)


class SimpleChecker(CheckerBase):
    def __init__(self, checks: CheckRegistry, options: Mapping[str, str], registry: Any, tally: Tally,
                 mode: CheckerMode, *, topic_prefix: str = "", partitions: int | None = None,
                 fastpath: Any = None) -> None:
        super().__init__(checks, options, tally, mode, partitions=partitions)
        self.o = SimpleOptions.from_options(options)
        self.prefix = topic_prefix
        self.logs = PartitionLogs(PartitionLog)
        self._seq = 0
        # Run mode: every table version of the workload so far, for the BOOTSTRAPs (which no
        # source event makes) to be judged against their table.
        self.known_tables: dict[tuple[int, int, str, str], Table] = {}  # (id, version, database, name)
        # The compiled fast path (the module fastpath.py, which the suite hands over: it imports
        # the checks, which import this module): JSON DMLs judged alone (no workload to join).
        self.fastpath = fastpath
        self.fast = fastpath is not None and compiled.enabled() and mode.records and not mode.source and not self.o.avro
        self._uncompressed = self.o.compression == "none"
        # The fast path's delivery identities (`identity`): every schema announced so far, topic-wide
        # and keyed as `delivery.identifier` keys them (topic, database, table, version); the record
        # `check_fast` accepted last, with its kind and message.
        self.announced: dict[tuple[str, str, str, int], dict[str, Any]] = {}
        # How many schemas were recorded so far (in a partition's log and in `announced`, always
        # together): a fast kind that checked its schema, or its match, at this count need not
        # look again (`check_fast`, `fastpath.rematch`).
        self._schemas_written = 0
        self._accepted: tuple[Record, Any, dict[str, Any] | None, tuple[Any]] | None = None
        self._last_log: tuple[str, int, PartitionLog] | None = None  # (topic, partition, log): `check_fast`

    # -- evidence -------------------------------------------------------------------------------------

    def evidence(self, record: Record, loc: Location) -> RecordEvidence:
        msg = decode(record.value, self.o.compression, self.o.avro)
        ev = RecordEvidence(record, loc, msg, self.o)
        lg = self.logs.of(record.topic, record.partition)
        self._seq += 1
        # In memory a record has no offset yet: it gets the one a log would give it.
        offset = record.offset if record.offset is not None else len(lg.entries)
        if record.offset is None:
            ev.loc = Location(record.topic, record.partition or 0, offset, line=loc.line)
        kind = msg.kind if msg.ok else None
        commit_ts = _int(msg.get("commitTs"))
        table = version = table_id = resolvable = None
        if msg.ok and kind in ("DDL", "BOOTSTRAP"):
            ts = table_schema_of(msg)
            # A schema whose (schema, table, version) is malformed cannot be looked up by any
            # consumer: it is not recorded (schema.table-schema reports it).
            key = schema_key(ts) if ts is not None else None
            if ts is not None and key is not None:
                lg.schemas[key] = ts
                self.announced[(record.topic, *key)] = ts
                self._schemas_written += 1
                table_id = integer(ts.get("tableID"))
                table, version = (key[0], key[1]), key[2]
                if kind == "BOOTSTRAP" and table_id is not None:
                    ev.bootstrap_table = self.known_tables.get((table_id, key[2], key[0], key[1]))
        elif msg.ok and kind == "WATERMARK":
            if commit_ts in lg.seen_watermarks:
                kind = None  # re-sent after a restart: a duplicate, not a regression
            lg.seen_watermarks.add(commit_ts)
        elif msg.ok and kind == "DML":
            digest = replay_digest(msg.get("commitTs"), msg.type, msg.get("database"), msg.get("table"),
                                   msg.get("data"), msg.get("old"))
            key = msg.dml_key
            own_id = integer(msg.get("tableID"))
            if digest in lg.seen_dml or key is None or own_id is None:
                # A replay is kept for offsets and judged as a duplicate; a DML without a
                # well-typed identity (message.fields reports it) is kept out of the stream
                # checks, which could only guess which table it belongs to.
                kind = None
            else:
                lg.seen_dml.add(digest)
                table, version = (key[0], key[1]), key[2]
                ev.schema = self._resolve(lg, key)
                announced = integer(ev.schema.get("tableID")) if ev.schema is not None else None
                table_id = announced if announced is not None else own_id
                resolvable = ev.schema is not None
        lg.entries.append((self._seq, offset, kind, msg.type, commit_ts, _int(msg.get("buildTs")), table, version,
                           table_id, resolvable))
        return ev

    def _resolve(self, lg: PartitionLog, key: tuple[str, str, int]) -> dict[str, Any] | None:
        got = lg.schemas.get(key)
        if got is None and not self.o.bootstrap_all_partitions:
            # Bootstraps go to partition 0 only: a consumer reads schemas from there.
            p0 = self.logs.get(lg.topic, 0)
            got = p0.schemas.get(key) if p0 is not None else None
        return got

    # -- the fast path (fastpath.py) ------------------------------------------------------------

    def check_record(self, record: Record, loc: Location) -> None:
        ev = self.evidence(record, loc)
        if not (self.fast and self._first_of_kind(ev)):
            self.run_record_checks(ev)

    def _first_of_kind(self, ev: RecordEvidence) -> bool:
        """Where `ev` is the first record of a new fast-path kind, compile the kind from it; when
        every check passed (or was not applicable) on it, the kind has a function, and the record
        is counted with the kind's answers, as its other records will be: True. False: the
        checks run on it (and explain)."""
        m = ev.msg
        if not m.ok or m.kind not in ("DML", "WATERMARK") or m.avro:
            return False
        fastpath = self.fastpath
        k = fastpath.kind_of(m.fields)
        if k is None:
            return False
        lg = self.logs.of(ev.record.topic, ev.record.partition)
        kind = new_kind(lg.kinds, k, ev.schema, fastpath.MAX_KINDS, fastpath.FastKind)
        if kind is None:
            return False
        # (Decoded by orjson, as `decoder.decode` reads every message it can: the key's strings, the
        # keys above all, are those the parser hands out again for the kind's next records, which
        # `check_fast` compares to them.)
        kind.key = k
        if len(lg.kinds) == 1:  # the first kind, or `new_kind` emptied the table: `fast` starts again too
            lg.fast.clear()
        if len(k) != 2:  # a DML's kind (a WATERMARK's is 2 long: `kind_of`)
            lg.fast[k[:4]] = kind
        fastpath.compile_kind(kind, ev, self.record_specs, k)
        if kind.accept is None:
            return False
        self.tally.count(kind.plan)
        # Its identity, as `check_fast` works it out for the kind's next records (a DML changes
        # nothing the identifier remembers: it need not read this one).
        self._accepted = (ev.record, None, None, (None,)) if len(k) == 2 else \
            (ev.record, kind, m.fields, (self._dml_identity(kind, m.fields),))
        return True

    def check_fast(self, record: Record) -> bool | tuple[Any]:
        self._accepted = None
        value = record.value
        if not self.fast or value is None:
            return False
        # `PartitionLogs.get`, inline: the last log found, while the records are its partition's.
        topic, part = record.topic, record.partition or 0
        last = self._last_log
        if last is not None and last[1] == part and last[0] == topic:
            lg = last[2]
        else:
            found = self.logs.logs.get((topic, part))
            if found is None:
                return False
            lg = found
            self._last_log = (topic, part, lg)
        if not lg.kinds:
            return False
        if self._uncompressed:  # `fastpath.parse`, inline where there is nothing to decompress
            try:
                obj = _loads(value)
            except _JSONDecodeError:
                return False
            if obj.__class__ is not dict:
                return False
        else:
            obj = self.fastpath.parse(value, self.o.compression)
            if obj is None:
                return False
        try:
            # (A field every message of a fast kind has is read by subscript: where one is missing,
            # the KeyError says False below, as the kinds' own tests would.)
            typ = obj["type"]
            # `fastpath.kind_of`, inline (check_fast must find the kinds `_first_of_kind` keyed by it:
            # tests/unit/test_fast_paths_simple.py holds the two to each other).
            if typ == "WATERMARK":
                kind = lg.kinds.get(("WATERMARK", tuple(obj)))
            else:
                d, o, h = obj.get("data"), obj.get("old"), obj.get("handleKeyOnly")
                if h is not None and h is not True:
                    return False
                db, table, version = obj["database"], obj["table"], obj["schemaVersion"]
                if db.__class__ is not str or table.__class__ is not str or version.__class__ is not int \
                        or typ.__class__ is not str:
                    return False
                dk = tuple(d) if d.__class__ is dict else None
                ok = tuple(o) if o.__class__ is dict else None
                k = (db, table, version, typ)
                kind = lg.fast.get(k)
                if kind is None:
                    return False  # no kind of this (database, table, schemaVersion, type) at all
                top = tuple(obj)
                hko = h is True
                kk = kind.key
                if kk[4] != top or kk[5] != dk or kk[6] != ok or kk[7] is not hko:
                    # Another kind of the same table version and type: by its whole key (`kind_of`'s).
                    kind = lg.kinds.get((db, table, version, typ, top, dk, ok, hko))
                    if kind is None:
                        return False
                    lg.fast[k] = kind
            if kind is None or kind.accept is None or not kind.accept(obj, record.key, value):
                return False
        except Exception:  # noqa: BLE001 - the checks judge it (and report their own errors)
            return False
        if typ == "WATERMARK":  # the partition's log, as `evidence` keeps it
            self._seq += 1
            ts = obj["commitTs"]
            # A WATERMARK re-sent after a restart: a duplicate, not a regression (kind None).
            entry = (self._seq, record.offset if record.offset is not None else len(lg.entries),
                     None if ts in lg.seen_watermarks else "WATERMARK", "WATERMARK", ts, obj["buildTs"],
                     None, None, None, None)
            lg.seen_watermarks.add(ts)
            # A control message: no row to account for (its identity is None).
            return self._accept(lg, entry, kind.plan, (record, None, None, (None,)))
        # `_resolve(lg, k[:3])` is the kind's schema: inline, with the kind's own key tuple; looked
        # up again only after a schema was recorded (until then it finds what it found).
        if kind.resolved != self._schemas_written:
            key = kind.schema_key
            got = lg.schemas.get(key)
            if got is None and not self.o.bootstrap_all_partitions:
                p0 = self.logs.logs.get((lg.topic, 0))
                got = p0.schemas.get(key) if p0 is not None else None
            if got is not kind.schema:
                return False
            kind.resolved = self._schemas_written
        # `replay_digest`, whose `frozen` leaves an int (commitTs), strings and null as they are, and
        # takes an object whose values are strings or null as its keys (the kind key's) and values.
        cts = obj["commitTs"]
        if kind.plain:
            digest = hash((cts, typ, db, table,
                           (dk, tuple(d.values())) if dk is not None else None if d is None else frozen(d),
                           (ok, tuple(o.values())) if ok is not None else None if o is None else frozen(o)))
        else:  # `frozen` of an object, with the kind key's tuple of its keys (`frozen_object`)
            digest = hash((cts, typ, db, table,
                           frozen_object(d, dk) if dk is not None else None if d is None else frozen(d),
                           frozen_object(o, ok) if ok is not None else None if o is None else frozen(o)))
        seen = lg.seen_dml
        if digest in seen:
            return False  # a replay: its evidence has no schema (the checks judge it)
        # The partition's log, as `evidence` keeps it for a DML; `_accept`, inline.
        self._seq += 1
        offset = record.offset if record.offset is not None else len(lg.entries)
        lg.entries.append((self._seq, offset, "DML", typ, cts, obj["buildTs"], kind.table, version,
                           kind.table_id if kind.table_id is not None else obj["tableID"], kind.schema is not None))
        seen.add(digest)
        plan = kind.plan  # `self.tally.count(plan)`, inline
        plan.count += 1
        self.tally.unsettled.add(plan)
        taken = (self._dml_identity(kind, obj),)
        self._accepted = (record, kind, obj, taken)
        return taken

    def _dml_identity(self, kind: Any, obj: dict[str, Any]) -> tuple[Any, Any, Any]:
        """The delivery identity of a DML of a fast `kind` (its message `obj`), as
        `delivery.identifier` works it out: the kind's entity, the match of its row's handle key
        (found by the schema announced topic-wide for the kind's key, as the identifier finds it,
        or fixed by handleKeyOnly), the commit ts (an integer, by the kind's rules)."""
        cts = obj["commitTs"]
        if kind.row_keys is None:  # the row is not an object
            return (kind.entity, None, cts)
        if not kind.key_only and kind.generation != self._schemas_written:
            self.fastpath.rematch(kind, self.announced, self._schemas_written)
        match = kind.match
        return (kind.entity, None if match is None else match(obj[kind.row], cts), cts)

    def _accept(self, lg: Any, entry: EntryTuple, plan: Any,
                accepted: tuple[Record, Any, dict[str, Any] | None, tuple[Any]]) -> tuple[Any]:
        """A record the fast path took: its entry in the partition's log, counted under its
        kind's plan, and kept for `identity`; its identity, as `check_fast` returns it."""
        lg.entries.append(entry)
        self.tally.count(plan)
        self._accepted = accepted
        return accepted[3]

    def identity(self, record: Record) -> tuple[Any] | None:
        """What `delivery.identifier` says of the record `check_fast` accepted last, worked out
        there (None: it did not accept this one)."""
        got = self._accepted
        return got[3] if got is not None and got[0] is record else None

    # -- run mode -------------------------------------------------------------------------------------

    def expected_rows(self, event: Event) -> list[SourceRow]:
        if not isinstance(event, Transaction):
            return []
        # The INSERT half of a split update has no before image.
        return [SourceRow(ch.table, op, image, ch.before if op is ch.op or op is Op.DELETE else None, event.commit_ts)
                for ch in event.changes for op, image in key_change_split(ch)]

    def _learn(self, event: Event) -> None:
        for t in tables_of(event):
            self.known_tables[(t.table_id, t.version, t.database, t.name)] = t

    def check_event(self, event: Event, records: Sequence[Record]) -> None:
        self._learn(event)
        evs = self.evidences(records)
        expected = self.expected_rows(event)
        if isinstance(event, Transaction):
            # Rows in the order they were made (TiCDC keeps a transaction's order per partition).
            pending = list(expected)
            for ev in evs:
                if ev.msg.ok and ev.msg.kind == "DML" and pending:
                    match = next((s for s in pending if (s.table.database, s.table.name) == ev.msg.table_key
                                  and spec_type(s.op) == ev.msg.type), None)
                    ev.source = match if match is not None else pending[0]
                    pending.remove(ev.source)
        elif isinstance(event, (Ddl, Watermark)):
            kind = "DDL" if isinstance(event, Ddl) else "WATERMARK"
            for ev in evs:
                if ev.msg.kind == kind:  # not the periodic BOOTSTRAPs that came out with it
                    ev.source = event
        for ev in evs:
            self.run_record_checks(ev)
        parts = self.partitions or max(1, len({r.partition for r in records}))
        eev = EventEvidence(event, expected, evs, parts, self.o)
        self.run_event_checks(eev)

    def finish(self) -> None:
        self._accepted = self._last_log = None
        for topic, parts in self.logs.by_topic().items():
            self.run_stream_checks(StreamEvidence(topic, parts, self.o, self.mode.complete, self.partitions))
        self.logs.clear()


_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError


def replay_digest(commit_ts: Any, typ: Any, database: Any, table: Any, data: Any, old: Any) -> int:
    """What tells a replayed DML (the same message again) from another: the hash of its identifying
    fields, `frozen`, equal for two messages exactly where `repr` of the fields is equal (any JSON,
    or an Avro decoding's values, may stand in them); an integer commit ts as it is (the fast path
    hashes it so)."""
    return hash((commit_ts if commit_ts.__class__ is int else frozen(commit_ts), frozen(typ), frozen(database),
                 frozen(table), frozen(data), frozen(old)))


_PLAIN = frozenset({str, type(None)})


def frozen(v: Any) -> Any:
    """A hashable stand-in for `v`, equal to another's exactly where their `repr` is equal: a
    string or None as it is (equal only to itself, and its `repr` says the same), an object (string
    keys) as the pair (its keys, their frozen values), in order (a pair of tuples: no other
    stand-in is one), anything else as ("r", its repr) (an int, NaN, -0.0, True, a list: told
    apart, as their text tells them). An int is not itself: 0 would hash as "" does, and -1 as -2
    (the digest is a hash: those two pairs would always collide)."""
    c = v.__class__
    if c is str or v is None:
        return v
    if c is dict:
        if _PLAIN.issuperset(map(type, v.values())):
            return (tuple(v), tuple(v.values()))
        return (tuple(v), tuple(map(frozen, v.values())))
    return ("r", repr(v))


def frozen_object(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """`frozen(obj)` of an object whose keys, in order, are `keys`: its values frozen, a string
    or null taken as it is without a call (`frozen` only for another value, e.g. a TIMESTAMP's
    object)."""
    return (keys, tuple([v if v is None or v.__class__ is str else frozen(v) for v in obj.values()]))


def spec_type(op: Op) -> str:
    return {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}[op]


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None
