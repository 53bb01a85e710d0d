"""Runs the Debezium checks: decode, pair with the workload, evaluate, tally.

With the workload (`conformance run`), the reference's own planning (`DebeziumEncoder.events_of`
and `old_image`: the documented rules, no wire details) says which change events each row change
makes; an encoder's change events are paired with them in order, topic by topic, so that values,
`before` images and key changes are judged exactly. Without it (a capture), every record is
judged on its own and every topic as a stream (tombstones after deletes).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...checks import compiled
from ...checks.compiled import new_kind
from ...checks.registry import CheckRegistry, Location
from ...checks.results import Tally
from ...encoders.spi import Record
from ...model.events import CaptureStart, Event, LogicalMessage, Transaction
from ...model.table import Table
from ...model.values import Row
from ..base import CheckerBase, CheckerMode, Identified
from ..kit import Located
from . import spec, value_rules
from .decoder import Message, Part, SchemaResolver, decode
from .encoder import DebeziumEncoder
from .spec import DbzOptions


@dataclass(frozen=True, slots=True)
class Expected:
    """One change event the workload calls for."""

    table: Table
    op: str
    before: Row | None
    after: Row | None
    topic: str
    # Columns of `after` the connector has no value for (unchanged TOASTed values): the placeholder.
    unavailable: frozenset[str] = frozenset()
    # Where the truth is a server's log: the change's (xid, LSN, commit time in ms) there.
    server: tuple[int, int, int] | None = None

    def key_payload(self, o: DbzOptions) -> dict[str, Any] | None:
        cols = spec.key_columns(self.table)
        image = self.after if self.after is not None else self.before
        if not cols or image is None:
            return None
        return {spec.field_name(c, o): spec.json_value(c, image[c.name], o) for c in cols}


@dataclass(slots=True)
class RecordEvidence(Located):
    record: Record
    loc: Location
    msg: Message
    o: DbzOptions
    prefix: str
    expected: Expected | None = None
    resolver: SchemaResolver | None = None
    # The logical decoding message of the workload this message event stands for (paired in order).
    expected_message: LogicalMessage | None = None

    @property
    def logical_topic(self) -> str:
        return spec.logical_topic(self.record.topic, self.o, self.prefix)

    @property
    def transaction_topic(self) -> bool:
        return self.logical_topic == self.o.transaction_topic

    @property
    def message(self) -> bool:
        """A logical decoding message event (on `<topic.prefix>.message`)."""
        return self.logical_topic == spec.message_topic(self.o)

    @property
    def change(self) -> bool:
        """A change event of a table (not a tombstone, a transaction boundary or a message)."""
        return not self.transaction_topic and not self.msg.tombstone and not self.message

    @property
    def table_name(self) -> str | None:
        src = self.msg.source
        if src is not None and isinstance(src.get("schema"), str) and isinstance(src.get("table"), str):
            return f"{src['schema']}.{src['table']}"
        return None


@dataclass(slots=True)
class EventEvidence:
    event: Transaction | CaptureStart
    expected: list[Expected]
    records: list[RecordEvidence]
    o: DbzOptions
    prefix: str
    # The transaction's logical decoding messages the connector writes, in the order they are
    # decoded: the non-transactional ones at once (before the commit), then the transactional ones.
    messages: list[LogicalMessage] = field(default_factory=list)

    @property
    def snapshot(self) -> bool:
        """The connector's start (CaptureStart): what it read of the rows it found."""
        return isinstance(self.event, CaptureStart)


def snapshot_events(start: CaptureStart, o: DbzOptions, prefix: str) -> list[Expected]:
    """The read events (op r) a snapshotting `snapshot.mode` makes when the connector starts: every
    row of every table it finds, in snapshot order (none for no_data)."""
    if not o.snapshots:
        return []
    return [Expected(t, "r", None, row, spec.topic_name(o, t.database, t.name, prefix))
            for t, rows in spec.snapshot_order(start.tables) for row in rows]


def _key_matches(x: Expected, ev: RecordEvidence) -> bool:
    want = x.key_payload(ev.o)
    got = ev.msg.key.payload
    if want is None or not isinstance(got, dict) or set(got) != set(want):
        return False
    cols = {spec.field_name(c, ev.o): c for c in spec.key_columns(x.table)}
    return all(value_rules.same_value(cols[n], want[n], got[n], ev.o) for n in want)


def emitted_messages(txn: Transaction) -> list[LogicalMessage]:
    return [m for m in txn.messages if not m.transactional] + [m for m in txn.messages if m.transactional]


@dataclass(slots=True)
class Entry:
    offset: int
    kind: str  # an op (c/u/d/...), "tombstone", or "other"
    key: str | None


@dataclass(slots=True)
class StreamEvidence:
    topic: str
    logs: dict[int, list[Entry]] = field(default_factory=dict)
    o: DbzOptions = field(default_factory=DbzOptions)
    complete: bool = False


def key_text(raw: bytes | None) -> str | None:
    """The key's payload as canonical JSON (schema or not), or the raw text when it is no JSON."""
    if raw is None:
        return None
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
    if isinstance(doc, dict) and set(doc) == {"schema", "payload"}:
        doc = doc["payload"]
    return json.dumps(doc, sort_keys=True)


def key_text_of(part: Part) -> str | None:
    """`key_text` of a key the decoder parsed (strictly, so `json.loads` reads the same document)."""
    if part.raw is None:
        return None
    doc = part.doc
    if doc.__class__ is dict and len(doc) == 2 and "schema" in doc and "payload" in doc:
        doc = doc["payload"]
    return json.dumps(doc, sort_keys=True)


def _avro_key_text(msg: Message) -> str | None:
    """An Avro key as comparable text: its payload, or its raw bytes where it does not decode."""
    k = msg.key
    if k.raw is None:
        return None
    return json.dumps(k.payload, sort_keys=True) if k.ok else k.raw.hex()


def log_key_text(o: DbzOptions, msg: Message, raw_key: bytes | None) -> str | None:
    """A message's key as its topic's log keeps it (`Entry.key`): an Avro key as
    `_avro_key_text` gives it; a JSON key the decoder parsed is not parsed again (`key_text_of`),
    one it refused is shown as `key_text` shows it."""
    if o.key_avro:
        return _avro_key_text(msg)
    return key_text_of(msg.key) if msg.key.ok else key_text(raw_key)


class DebeziumChecker(CheckerBase):
    def __init__(self, checks: CheckRegistry, options: Mapping[str, str], tally: Tally, mode: CheckerMode, *,
                 topic_prefix: str = "", partitions: int | None = None, registry: Any = None,
                 fastpath: Any = None) -> None:
        super().__init__(checks, options, tally, mode, partitions=partitions)
        self.o = DbzOptions.from_options(options)
        self.resolver = SchemaResolver(registry)
        self.prefix = topic_prefix
        self.oracle = DebeziumEncoder()
        self.oracle.o = self.o
        self.streams: dict[str, StreamEvidence] = {}
        # The compiled fast path (the module fastpath.py, which the suite hands over: it imports
        # the checks, which import this module): change events and tombstones judged alone (no
        # workload to join), JSON or Avro. The JSON decoder then reads through its schema prefix
        # memo; an Avro part's schema is the resolver's, one object per registry id.
        self.fastpath = fastpath
        self.fast = fastpath is not None and compiled.enabled() and mode.records and not mode.source
        self.kinds: dict[Any, Any] = {}
        self._topics: dict[str, bool] = {}  # topic: whether the fast path may take its records
        self._known: tuple[Record, Identified] | None = None  # the identity of the record it took last

    def evidence(self, record: Record, loc: Location) -> RecordEvidence:
        msg = decode(record.key, record.value, key_schemas=self.o.key_schemas, value_schemas=self.o.value_schemas,
                     key_avro=self.o.key_avro, value_avro=self.o.value_avro, resolver=self.resolver, quick=self.fast)
        ev = RecordEvidence(record, loc, msg, self.o, self.prefix, resolver=self.resolver)
        st = self.streams.get(record.topic)
        if st is None:
            st = self.streams[record.topic] = StreamEvidence(record.topic, o=self.o, complete=self.mode.complete)
        lg = st.logs.setdefault(record.partition or 0, [])
        offset = record.offset if record.offset is not None else len(lg)
        kind = "tombstone" if msg.tombstone else (msg.op or "other")
        lg.append(Entry(offset, kind, log_key_text(self.o, msg, record.key)))
        return ev

    # -- the fast path (fastpath.py) ------------------------------------------------------------

    def check_record(self, record: Record, loc: Location) -> None:
        ev = self.evidence(record, loc)
        if self.fastpath is not None:
            # Its delivery identity from this decode (`identity`), as the identifier would decode it
            # again: its answer is a function of the decoded message (`delivery.message_identity`).
            self._known = (record, self.fastpath.message_identity(self.o, record.topic, record.key, record.value,
                                                                  ev.msg))
        if self.fast and self._fast_topic(record.topic) and self._learn_kind(ev):
            return  # the first record of a kind: counted with the answers the checks just gave on it
        self.run_record_checks(ev)

    def _fast_topic(self, topic: str) -> bool:
        got = self._topics.get(topic)
        if got is None:
            logical = spec.logical_topic(topic, self.o, self.prefix)
            got = self._topics[topic] = logical not in (self.o.transaction_topic, spec.message_topic(self.o))
        return got

    def _learn_kind(self, ev: RecordEvidence) -> bool:
        """Compile the kind of `ev`'s record if it has none: the record checks run on it (as
        `fastpath.answers`), and where every one passed or was not applicable the kind gets its
        function and the record is counted with those answers, in the kind's plan (True); else
        (False) the record goes through the checks as any other, which report it."""
        m = ev.msg
        if not m.key.ok or not m.value.ok:
            return False
        for p in (m.key, m.value):
            if p.schema is not None and not p.shared:
                return False  # a schema the prefix memo does not share: a kind that would not recur
        fastpath = self.fastpath
        k = fastpath.kind_of(ev.record.topic, m)
        if k is None:
            return False
        kind = self.kinds.get(k)
        if kind is not None and kind.key_schema is m.key.schema and kind.value_schema is m.value.schema:
            return False  # compiled, and this record one it did not accept; or one found hopeless
        kind = new_kind(self.kinds, k, None, fastpath.MAX_KINDS,
                        lambda _s: fastpath.FastKind(m.key.schema, m.value.schema))
        assert kind is not None
        if not fastpath.compile_kind(kind, ev, self.record_specs):
            return False
        self.tally.count(kind.plan)
        return True

    def check_fast(self, record: Record) -> bool:
        if not self.fast or not self.kinds or not self._fast_topic(record.topic):
            return False
        o = self.o
        m = decode(record.key, record.value, key_schemas=o.key_schemas, value_schemas=o.value_schemas,
                   key_avro=o.key_avro, value_avro=o.value_avro, resolver=self.resolver, quick=True)
        if not m.key.ok or not m.value.ok:
            return False
        try:
            k = self.fastpath.kind_of(record.topic, m)
            kind = self.kinds.get(k) if k is not None else None
            if kind is None or kind.accept is None or kind.key_schema is not m.key.schema \
                    or kind.value_schema is not m.value.schema or not kind.accept(m.key.payload, m.value.payload):
                return False
            known = None if m.tombstone else self.fastpath.message_identity(
                o, record.topic, record.key, record.value, m, kind.after_fields, kind.key_types)
            text = log_key_text(o, m, record.key)  # as `evidence` writes it
        except Exception:  # noqa: BLE001 - the checks judge it (and report their own errors)
            return False
        # The topic's log, as `evidence` keeps it.
        st = self.streams.get(record.topic)
        if st is None:
            st = self.streams[record.topic] = StreamEvidence(record.topic, o=self.o, complete=self.mode.complete)
        lg = st.logs.setdefault(record.partition or 0, [])
        offset = record.offset if record.offset is not None else len(lg)
        lg.append(Entry(offset, "tombstone" if m.tombstone else k[8], text))
        plan = kind.plan
        self.tally.count(plan)
        self._known = (record, known)
        return True

    def identity(self, record: Record) -> tuple[Identified] | None:
        """The identity of the record `check_fast` accepted or `check_record` judged last."""
        known = self._known
        if known is None or known[0] is not record:
            return None
        self._known = None
        return (known[1],)

    def expected_events(self, event: Event) -> list[Expected]:
        if isinstance(event, CaptureStart):
            return snapshot_events(event, self.o, self.prefix)
        if not isinstance(event, Transaction) or not self.o.streams:
            return []
        out = []
        srv = event.server
        for i, ch in enumerate(event.changes):
            topic = spec.topic_name(self.o, ch.table.database, ch.table.name, self.prefix)
            ids = (srv.xid, srv.lsns[i], srv.commit_us // 1000) if srv is not None and i < len(srv.lsns) else None
            for op, before, after in self.oracle.events_of(ch):
                out.append(Expected(ch.table, op, before, after, topic, self.oracle.unavailable_of(ch, op), ids))
        return out

    def check_event(self, event: Event, records: Sequence[Record]) -> None:
        evs = self.evidences(records)
        if not isinstance(event, (Transaction, CaptureStart)):
            for ev in evs:
                self.run_record_checks(ev)
            return
        expected = self.expected_events(event)
        queues: dict[str, list[Expected]] = {}
        for x in expected:
            queues.setdefault(x.topic, []).append(x)
        messages = emitted_messages(event) if isinstance(event, Transaction) and self.o.streams else []
        expected_messages = list(messages)
        for ev in evs:
            if ev.change:
                q = queues.get(ev.record.topic)
                if q:
                    # A snapshot reads rows in the server's order: pair by key where one matches.
                    i = next((j for j, x in enumerate(q) if _key_matches(x, ev)), 0) \
                        if isinstance(event, CaptureStart) else 0
                    ev.expected = q.pop(i)
            elif ev.message and not ev.msg.tombstone and messages:
                ev.expected_message = messages.pop(0)

        for ev in evs:
            self.run_record_checks(ev)
        self.run_event_checks(EventEvidence(event, expected, evs, self.o, self.prefix, expected_messages))

    def finish(self) -> None:
        for st in self.streams.values():
            self.run_stream_checks(st)
        self.streams.clear()
