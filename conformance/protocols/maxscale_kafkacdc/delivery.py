"""MaxScale KafkaCDC for the delivery analysis.

Every table's rows go to one topic; ordering is promised per partition (a 1-partition topic:
notes §1), so an *entity* is a table (topic, database, table) and its versions are its DML events
in binlog order. A *match* is the row image's place in the binlog, `(GTID, event_number)`: what
the Kafka key says, and what consumers de-duplicate on (notes §6.3). The GTID's sequence stands
for the commit ts: it grows with every transaction the server logs. Schema events are control
messages, judged by the stream checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from ...checks.delivery import Version
from ...model.events import Gtid, Workload
from ..kit import Identified, VersionNumbers, digest
from . import spec
from .decoder import decode
from .spec import CdcOptions
from .tracker import RowImage, Tracker


def match(gtid: Gtid, event_number: int) -> bytes:
    """A row image's match: its place in the binlog as a conforming message's key spells it
    (`GTID:event_number`, ASCII), so that the fast path takes the key it compared as it is."""
    return spec.dml_key(gtid, event_number).encode("ascii")


def topic_of(options: Mapping[str, str], topic_prefix: str) -> str:
    return topic_prefix + CdcOptions.from_options(options).topic


def expected_versions(workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Iterator[Version]:
    o = CdcOptions.from_options(options)
    topic = topic_of(options, topic_prefix)
    tracker = Tracker(o)
    numbers = VersionNumbers()
    for e in workload.events:
        for p in tracker.plan(e):
            if isinstance(p, RowImage) and p.sent:
                entity = digest(("t", topic, p.schema.database, p.schema.table))
                yield numbers.version(entity, match(p.gtid, p.event_number), p.gtid.sequence, topic)


def identifier(options: Mapping[str, str]) -> Callable[[str, bytes | None, bytes | None], Identified]:
    """(entity, match, GTID sequence) of a DML event; None for a schema event; None parts where a
    message cannot be read (it then counts as unexpected)."""

    def identify(topic: str, key: bytes | None, value: bytes | None) -> Identified:
        m = decode(key, value)
        if not m.ok or m.kind is None:
            return None, None, None
        if m.kind == "schema":
            return None
        table, g, n = m.table, m.gtid, m.event_number
        entity = digest(("t", topic, *table)) if table is not None else None
        return entity, match(g, n) if g is not None and n is not None else None, g.sequence if g is not None else None

    return identify
