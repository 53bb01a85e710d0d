"""Runs the TiCDC Avro checks: decode, join records with the workload, evaluate, tally."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ...checks import compiled
from ...checks.registry import CheckRegistry, Location
from ...checks.results import RecordPlan, Tally
from ...encoders.spi import Record
from ...model.events import Ddl, Event, Op, Transaction, Watermark
from ..base import CheckerBase, CheckerMode, Identified
from ..kit import digest, key_change_split
from . import fastpath, spec, watermark
from .decoder import DecodedPart, SchemaResolver, decode_framed
from .evidence import EventEvidence, RecordEvidence, SourceRow, StreamEntry, StreamEvidence, freeze
from .spec import AvroOptions

_BytesIO = fastpath._BytesIO
_read_data = fastpath.read_direct
_reader = fastpath._reader
_OPTIONS = fastpath._OPTIONS


class AvroChecker(CheckerBase):
    def __init__(self, checks: CheckRegistry, options: Mapping[str, str], registry: Any, tally: Tally,
                 mode: CheckerMode, *, topic_prefix: str = "", partitions: int | None = None) -> None:
        super().__init__(checks, options, tally, mode, partitions=partitions)
        self.o = AvroOptions.from_options(options)
        self.resolver = SchemaResolver(registry)
        self.prefix = topic_prefix
        self.active = watermark.ActiveTables(self.o, topic_prefix)
        self.streams: dict[str, StreamEvidence] = {}
        # The compiled fast path (fastpath.py), for records judged alone (no workload to join).
        self.fast = compiled.enabled() and mode.records and not mode.source
        self.kinds: dict[fastpath.Kind, fastpath.FastKind] = {}
        self._identity: tuple[Record, Identified] | None = None

    # -- evidence -------------------------------------------------------------------------

    def _decode(self, raw: bytes | None) -> DecodedPart | None:
        return None if raw is None else decode_framed(raw, self.resolver)

    def evidence(self, record: Record, loc: Location) -> RecordEvidence:
        if self.o.control_messages and watermark.is_control(record.key, record.value):
            assert record.value is not None
            ev = RecordEvidence(record, loc, None, None, self.o, self.resolver,
                                control=watermark.decode_control(record.value))
        else:
            ev = RecordEvidence(record, loc, self._decode(record.key), self._decode(record.value), self.o,
                                self.resolver)
        st = self.streams.get(record.topic)
        if st is None:
            st = self.streams[record.topic] = StreamEvidence(record.topic, partition_count=self.partitions,
                                                             with_source=self.mode.complete,
                                                             hard_coded_topic=spec.is_hard_coded_topic(self.o.topic))
        st.records += 1
        for _part, d in ev.parts():
            if d.view is not None and not d.view.error:
                st.record_names.setdefault((d.view.namespace, d.view.name), loc)
        if self.o.control_messages:
            self._log(st, ev)
        return ev

    @classmethod
    def _log(cls, st: StreamEvidence, ev: RecordEvidence) -> None:
        """Keep what the control-message stream checks need: kind, ts and whether this is the
        first copy of the message in its partition."""
        if ev.control is not None:
            kind, ts, identity = ev.control.kind, ev.control.ts, ev.control.identity
        else:
            datum = ev.value.datum if ev.value is not None else None
            ts = datum.get("_tidb_commit_ts") if datum is not None else None
            kind, identity = "row", None
        cls._log_entry(st, ev.record, kind, ts, identity)

    @staticmethod
    def _log_entry(st: StreamEvidence, r: Record, kind: str, ts: Any, identity: Any) -> None:
        if kind == "row" and not isinstance(ts, int):
            return  # a tombstone or an undecodable row carries no commit ts
        part = r.partition or 0
        seen = st.seen.setdefault(part, set())
        h = digest((r.key or b"", r.value or b""))
        first = h not in seen
        seen.add(h)
        st.logs.setdefault(part, []).append(StreamEntry(r.offset, kind, ts, first, identity))

    # -- the fast path (fastpath.py) --------------------------------------------------------

    def check_record(self, record: Record, loc: Location) -> None:
        ev = self.evidence(record, loc)
        plan = self.run_record_checks(ev)
        if self.fast and plan is not None:
            self._learn(ev, plan)

    def _learn(self, ev: RecordEvidence, plan: RecordPlan) -> None:
        r = ev.record
        k = fastpath.kind_of(r.topic, r.key, r.value)
        if k is None or not fastpath.learnable(ev):
            return
        kind = self.kinds.get(k)
        if kind is None:
            if len(self.kinds) >= fastpath.MAX_KINDS:
                self.kinds.clear()
            kind = self.kinds[k] = fastpath.FastKind()
        kind.seen += 1
        if kind.seen >= fastpath.LEARN_AFTER and kind.accept is None and not kind.hopeless:
            fastpath.compile_kind(kind, ev, plan, self.streams[r.topic])

    def check_fast(self, record: Record) -> bool:
        # `fastpath.kind_of` and `fastpath.decode` written out (a call less for each part): this
        # runs once per record.
        if not self.fast:
            return False
        key, value = record.key, record.value
        if key is None or len(key) < 5:
            return False
        kind = self.kinds.get((record.topic, key[:5], value[:5] if value is not None else None))
        if kind is None or kind.accept is None:
            return False
        got = kind.keys.get(key)
        if got is None:
            buf = _BytesIO(key)
            buf.seek(5)
            try:
                named = kind.key_named
                kd: Any = (_read_data(buf, kind.key_schema, named, None, _OPTIONS) if named is not None
                      else _reader(buf, kind.key_schema, None))
            except Exception:  # noqa: BLE001 - the checks judge it
                return False
            if buf.tell() != len(key) or kd.__class__ is not dict:
                return False
            entity = None
        else:
            kd, entity = got
        vd: Any = None
        if value is not None:
            buf = _BytesIO(value)
            buf.seek(5)
            try:
                named = kind.value_named
                vd = (_read_data(buf, kind.value_schema, named, None, _OPTIONS) if named is not None
                      else _reader(buf, kind.value_schema, None))
            except Exception:  # noqa: BLE001 - the checks judge it
                return False
            if buf.tell() != len(value) or vd.__class__ is not dict:
                return False
        try:
            version = kind.accept(kd, vd)
            if version is None:
                return False
            variant = 0
            if kind.answers is not None:
                version, variant = version
            if entity is None:
                entity = kind.entity(kind.prefix, kd)
                keys = kind.keys
                if len(keys) >= fastpath.MAX_KEYS:
                    keys.clear()
                keys[key] = (kd, entity)
        except Exception:  # noqa: BLE001 - the checks judge it (and report their own errors)
            return False
        plan, stream = kind.plan, kind.stream
        assert plan is not None and stream is not None  # set with `accept`
        self.tally.count(plan)
        if variant:
            out = kind.outcomes.get(variant) or kind.outcome(variant)
            self.tally.count(out)
        else:
            plan.fast += 1
        stream.records += 1
        if self.o.control_messages:
            self._log_entry(stream, record, "row", vd.get("_tidb_commit_ts") if vd is not None else None, None)
        self._identity = (record, (entity, version[0], version[1]))
        return True

    def identity(self, record: Record) -> tuple[Identified] | None:
        got = self._identity
        return (got[1],) if got is not None and got[0] is record else None

    # -- run mode -------------------------------------------------------------------------

    def topic_of(self, database: str, table: str) -> str:
        return self.prefix + spec.substitute_topic(self.o.topic, database, table)

    def expected_rows(self, event: Event) -> list[SourceRow]:
        if not isinstance(event, Transaction):
            return []
        rows = []
        for ch in event.changes:
            t = ch.table
            topic = self.topic_of(t.database, t.name)
            ts = event.commit_ts
            split = key_change_split(ch, split=not self.o.raw_change_event)
            rows += [SourceRow(t, op, image, ts, topic, ch, split=len(split) == 2) for op, image in split]
        return rows

    def _expected_key(self, s: SourceRow) -> tuple[Any, ...] | None:
        return freeze({spec.sanitize_name(c.name): spec.native_value(c, s.image[c.name], self.o)
                       for c in spec.key_columns(s.table)})

    def join(self, expected: list[SourceRow], evs: list[RecordEvidence]
             ) -> tuple[list[SourceRow], list[RecordEvidence]]:
        """Attach each record to the row change it came from: by (topic, key, tombstone or
        not), then, for what is left, by topic in order. Returns (missing rows, unexpected records)."""
        index: dict[tuple[Any, ...], list[SourceRow]] = {}
        for s in expected:
            index.setdefault((s.topic, self._expected_key(s), s.op is Op.DELETE), []).append(s)
        taken: set[int] = set()
        loose: list[RecordEvidence] = []
        for ev in evs:
            kd = ev.key.datum if ev.key is not None and ev.key.datum is not None else None
            bucket = index.get((ev.record.topic, freeze(kd), ev.record.value is None)) if kd is not None else None
            while bucket and id(bucket[0]) in taken:
                bucket.pop(0)
            if bucket:
                ev.source = bucket.pop(0)
                taken.add(id(ev.source))
            else:
                loose.append(ev)
        # Records the exact match left over: same topic in order, then (a record in the wrong
        # topic) the same key anywhere, then anything left in order, so that the checks can
        # still say what is wrong with them rather than only that they are unexpected.
        keys = {id(s): self._expected_key(s) for s in expected}
        passes = (
            lambda ev, s: s.topic == ev.record.topic,
            lambda ev, s: ev.key is not None and ev.key.datum is not None and keys[id(s)] == freeze(ev.key.datum),
            lambda ev, s: True,
        )
        for match in passes:
            still: list[RecordEvidence] = []
            for ev in loose:
                found = next((s for s in expected if id(s) not in taken and match(ev, s)), None)
                if found is None:
                    still.append(ev)
                else:
                    ev.source = found
                    taken.add(id(found))
            loose = still
        missing = [s for s in expected if id(s) not in taken]
        return missing, loose

    def expected_controls(self, event: Event) -> Counter[tuple[str, int, str]]:
        """(topic, partition, kind) of every control record `event` must produce."""
        out: Counter[tuple[str, int, str]] = Counter()
        if not self.o.control_messages or not isinstance(event, (Ddl, Watermark)):
            return out
        if isinstance(event, Ddl):
            topics, kind = [watermark.ddl_topic(event, self.o, self.prefix)], "ddl"
        else:
            topics, kind = self.active.topics(), "checkpoint"
        for t in topics:
            for p in range(max(1, self.partitions or 1)):
                out[(t, p, kind)] += 1
        return out

    def check_event(self, event: Event, records: Sequence[Record]) -> None:
        evs = self.evidences(records)
        rows = [ev for ev in evs if ev.control is None]
        controls = [ev for ev in evs if ev.control is not None]
        for ev in controls:
            if isinstance(event, (Ddl, Watermark)):
                ev.control_source = event
        expected = self.expected_rows(event)
        missing, unexpected = self.join(expected, rows)
        for ev in evs:
            self.run_record_checks(ev)
        eev = EventEvidence(event, expected, evs, missing, unexpected, self.o,
                            expected_controls=self.expected_controls(event), controls=controls)
        self.active.follow(event)
        self.run_event_checks(eev)

    def finish(self) -> None:
        for st in self.streams.values():
            self.run_stream_checks(st)
        self.streams.clear()
        self.kinds.clear()  # they hold the streams just judged
        self._identity = None
