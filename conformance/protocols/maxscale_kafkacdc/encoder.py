"""The MaxScale KafkaCDC reference encoder (notes §1-§7; the rendering of values per the options,
`spec.value`).

* Every message goes to the one `topic`, partition 0: the 1-partition topic MaxScale's own tests
  use and that ordering needs (MaxScale leaves the partition to librdkafka's partitioner, which
  hashes its per-message keys over the partitions: notes §1).
* A schema event (key: the table's GTID) whenever the tracker announces a table, unless
  `send_schema=false` or match/exclude leave the table out; one DML event per row image (key:
  `d-s-q:n`), in the order of the binlog.
* Restarts (the harness reopens a fresh encoder after a failed delivery and replays from its
  checkpoint): the table state comes back from the context's durable store, as MaxScale's comes
  from its state directory; with `read_gtid_from_kafka` the encoder skips what the topic already
  holds, up to the last key of partition 0, *including its event number*. (MaxScale itself
  resumes at the GTID after that key, losing the rest of a partly delivered transaction, notes
  §6.3: the mutant `resume-at-next-gtid`.)

Every step is a method, so that a mutant can break exactly one.
"""

from __future__ import annotations

import bisect
from typing import Any

from ...encoders.spi import ConfigurationError, EncoderContext, Record
from ...model.events import Ddl, Event, Gtid, Transaction
from . import jsontext, spec
from .spec import CdcOptions
from .tracker import Planned, RowImage, SchemaEvent, Tracker, row_values

_HISTORY = "maxscale-kafkacdc.tracker-history"


class MaxScaleKafkaCDCEncoder:
    protocol = spec.PROTOCOL

    def __init__(self) -> None:
        self.ctx: EncoderContext | None = None
        self.o = CdcOptions()
        self.tracker = Tracker(self.o)
        self.resume: tuple[Gtid, int] | None = None
        self._fresh = True
        self._history: list[tuple[Gtid, Tracker]] = []  # (GTID, the state after that event changed it)

    # -- SPI ---------------------------------------------------------------------------------------

    def open(self, ctx: EncoderContext) -> None:
        problems = spec.combination_problems(ctx.options)
        if problems:
            raise ConfigurationError("; ".join(problems))
        self.ctx = ctx
        self.o = CdcOptions.from_options(ctx.options)
        self.tracker = Tracker(self.o)
        self._history = ctx.durable.setdefault(_HISTORY, [])
        self._fresh = True
        self.resume = self.recover_position(ctx) if self.o.read_gtid_from_kafka else None

    def encode(self, event: Event) -> list[Record]:
        if not isinstance(event, (Transaction, Ddl)):
            return []  # watermarks: MaxScale has none
        g = spec.gtid_of(event)
        if self._fresh:
            self._fresh = False
            self.restore_state(g)
        generation = self.tracker.generation
        planned = self.plan(event)
        if self.tracker.generation != generation:
            self._history.append((g, self.tracker.copy()))
        return [self.record(p) for p in planned if p.sent and not self.delivered(p)]

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        """What MaxScale sends for the event (schema events, then row images)."""
        return self.tracker.plan(event)

    def tick(self, now: float) -> list[Record]:
        return []

    def close(self) -> None:
        pass

    # -- restarts ----------------------------------------------------------------------------------

    def recover_position(self, ctx: EncoderContext) -> tuple[Gtid, int] | None:
        """The last key of partition 0 (`load_latest_gtid`), with its event number (0 for a
        schema event's key, which has none)."""
        if ctx.last_key is None:
            return None
        raw = ctx.last_key(self.topic(), 0)
        if raw is None:
            return None
        try:
            parsed = spec.parse_key(raw.decode("ascii"))
        except UnicodeDecodeError:
            return None
        if parsed is None:
            return None
        g, n = parsed
        return (g, n or 0)

    def restore_state(self, g: Gtid) -> None:
        """The table state as it was before event `g`, from an earlier pass over the same unit
        (the replay starts at the checkpoint): the state after the last change before `g`; the
        changes made from `g` on are forgotten. (The history holds a copy per change.)"""
        h = self._history
        i = bisect.bisect_left([x[0] for x in h], g)
        self.tracker = h[i - 1][1].copy() if i else Tracker(self.o)
        del h[i:]

    def delivered(self, p: Planned) -> bool:
        """Already in the topic: at or before the recovered position."""
        return self.resume is not None and p.position <= self.resume

    # -- messages ----------------------------------------------------------------------------------

    def topic(self) -> str:
        prefix = self.ctx.topic_prefix if self.ctx is not None else ""
        return prefix + self.o.topic

    def partition(self, p: Planned) -> int | None:
        return 0

    def record(self, p: Planned) -> Record:
        if isinstance(p, SchemaEvent):
            key, obj = self.schema_key(p), self.schema_json(p)
        else:
            key, obj = self.dml_key(p), self.dml_json(p)
        return Record(self.topic(), key.encode("ascii"), self.serialize(obj), self.partition(p))

    def serialize(self, obj: dict[str, Any]) -> bytes:
        return jsontext.encode(obj)

    def schema_key(self, s: SchemaEvent) -> str:
        return str(s.gtid)

    def dml_key(self, r: RowImage) -> str:
        return spec.dml_key(r.gtid, r.event_number)

    def schema_json(self, s: SchemaEvent) -> dict[str, Any]:
        return {"namespace": spec.NAMESPACE, "type": spec.RECORD_TYPE, "name": spec.RECORD_NAME, "table": s.table,
                "database": s.database, "version": s.version, "gtid": str(s.gtid),
                "fields": [*spec.FIXED_FIELDS, *(self.column_json(c) for c in s.columns)]}

    def column_json(self, c: spec.SchemaColumn) -> dict[str, Any]:
        return {"name": c.name, "type": ["null", c.avro], "real_type": c.real_type, "length": c.length,
                "unsigned": c.unsigned}

    def dml_json(self, r: RowImage) -> dict[str, Any]:
        obj: dict[str, Any] = {"domain": r.gtid.domain, "server_id": r.gtid.server_id, "sequence": r.gtid.sequence,
                               "event_number": r.event_number, "timestamp": self.timestamp(r),
                               "event_type": r.event_type, "table_schema": r.schema.database,
                               "table_name": r.schema.table}
        obj.update(self.values(r))
        return obj

    def timestamp(self, r: RowImage) -> int:
        return r.timestamp

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, self.o)
