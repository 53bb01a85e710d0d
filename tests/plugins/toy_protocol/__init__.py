"""toy-json: a protocol that exists only to prove the plug-in contract.

Each row change becomes one message on `<prefix><database>.<table>` (characters a topic name
cannot hold become `_`): the key is the JSON object
of the row's handle-key values (the whole row where the table has no handle key), the value a
JSON object `{"op": "c"|"u"|"d", "ts": <commit ts>, "row": {column: text or null}}` (`ts` only
with `include-ts=true`, the default). A key always goes to the same partition (crc32 of the key).
DDLs and watermarks produce nothing.

Everything below uses only the suite's public contract: `ProtocolSuite`, `CheckerBase`,
`Capabilities`, `MutantRegistry`, `@check`, the encoder SPI and the model.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from conformance.checks.delivery import Version
from conformance.checks.registry import CheckRegistry, Failure, Level, Location, NotApplicable, Scope
from conformance.checks.results import Tally
from conformance.encoders.spi import EncoderContext, EncoderInfo, EncoderKind, Record
from conformance.model.events import Ddl, Event, Op, RowChange, Transaction, Workload
from conformance.model.values import Row, mysql_text
from conformance.protocols.base import (
    Capabilities,
    CheckerBase,
    CheckerMode,
    Identified,
    Identify,
    OptionSpec,
    ProtocolSuite,
)
from conformance.protocols.kit import VersionNumbers, digest
from conformance.protocols.mutants import MutantRegistry, MutantSpec

P = "toy-json"
check = CHECKS = CheckRegistry(P)
CLAUSE = "tests/plugins/toy_protocol (the toy-json message format)"
OPS = {Op.INSERT: "c", Op.UPDATE: "u", Op.DELETE: "d"}
OPTIONS = (OptionSpec("include-ts", "true", ("true", "false"), "put the commit ts in every message", matrix=True,
                      short="ts"),)


# -- the format -------------------------------------------------------------------------------------

def topic_name(prefix: str, ch: RowChange) -> str:
    """`<prefix><database>.<table>`, every character Kafka does not allow in a topic name as `_`."""
    name = f"{ch.table.database}.{ch.table.name}"
    return prefix + "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in name)


def key_of(ch: RowChange, image: Row) -> dict[str, str | None]:
    cols = ch.table.handle_key_columns() or ch.table.columns
    return {c.name: _text(c, image[c.name]) for c in cols}


def _text(col: Any, v: Any) -> str | None:
    return None if v is None else mysql_text(col.type, v)


def row_of(ch: RowChange) -> dict[str, str | None]:
    image = ch.image()
    return {c.name: _text(c, image[c.name]) for c in ch.table.columns}


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class ToyEncoder:
    """The reference encoder."""

    def open(self, ctx: EncoderContext) -> None:
        self.ctx = ctx
        self.with_ts = ctx.options.get("include-ts", "true") == "true"

    def topic(self, ch: RowChange) -> str:
        return topic_name(self.ctx.topic_prefix, ch)

    def message(self, ch: RowChange, ts: int) -> dict[str, Any]:
        out: dict[str, Any] = {"op": OPS[ch.op], "row": row_of(ch)}
        if self.with_ts:
            out["ts"] = ts
        return out

    def record(self, ch: RowChange, ts: int) -> Record:
        key = dumps(key_of(ch, ch.image()))
        return Record(self.topic(ch), key, dumps(self.message(ch, ts)),
                      zlib.crc32(key) % max(1, self.ctx.partitions))

    def encode(self, event: Event) -> list[Record]:
        if not isinstance(event, Transaction):
            return []
        return [self.record(ch, event.commit_ts) for ch in event.changes]

    def tick(self, now: float) -> list[Record]:
        return []

    def close(self) -> None:
        pass


# -- evidence and checker -----------------------------------------------------------------------------

@dataclass(slots=True)
class RecordEvidence:
    record: Record
    loc: Location
    doc: dict[str, Any] | None
    problem: str | None = None


def decode(record: Record, loc: Location) -> RecordEvidence:
    try:
        doc = json.loads(record.value or b"")
    except ValueError as e:
        return RecordEvidence(record, loc, None, f"not JSON: {e}")
    if not isinstance(doc, dict):
        return RecordEvidence(record, loc, None, f"a {type(doc).__name__}, not an object")
    return RecordEvidence(record, loc, doc)


@dataclass(slots=True)
class EventEvidence:
    event: Event
    records: list[RecordEvidence]


@dataclass(slots=True)
class StreamEvidence:
    topic: str
    # partition -> [(offset, ts, first time this message is seen there)]
    logs: dict[int, list[tuple[int, int, bool]]] = field(default_factory=dict)


class ToyChecker(CheckerBase):
    def __init__(self, options: Mapping[str, str], tally: Tally, mode: CheckerMode, *, partitions: int | None) -> None:
        super().__init__(CHECKS, options, tally, mode, partitions=partitions)
        self.streams: dict[str, StreamEvidence] = {}
        self.seen: set[bytes] = set()

    def _observe(self, ev: RecordEvidence) -> None:
        r = ev.record
        st = self.streams.setdefault(r.topic, StreamEvidence(r.topic))
        ts = ev.doc.get("ts") if ev.doc is not None else None
        if isinstance(ts, int) and not isinstance(ts, bool):
            h = digest((r.partition, r.key, r.value))
            part = st.logs.setdefault(r.partition or 0, [])
            part.append((r.offset if r.offset is not None else len(part), ts, h not in self.seen))
            self.seen.add(h)

    def evidence(self, record: Record, loc: Location) -> RecordEvidence:
        ev = decode(record, loc)
        self._observe(ev)
        return ev

    def check_event(self, event: Event, records: Sequence[Record]) -> None:
        evs = self.evidences(records)
        for ev in evs:
            self.run_record_checks(ev)
        self.run_event_checks(EventEvidence(event, evs))

    def finish(self) -> None:
        for st in self.streams.values():
            self.run_stream_checks(st)
        self.streams.clear()


# -- checks -------------------------------------------------------------------------------------------

@check("message.shape", level=Level.MUST, scope=Scope.RECORD, clause=CLAUSE)
def message_shape(ev: RecordEvidence) -> Failure | None:
    """The value is a JSON object with `op` (c, u or d) and `row` (an object)."""
    if ev.doc is None:
        return Failure(f"the value is {ev.problem}", expected="a JSON object", actual=ev.record.value, location=ev.loc)
    if ev.doc.get("op") not in ("c", "u", "d") or not isinstance(ev.doc.get("row"), dict):
        return Failure("op or row is missing or malformed", expected={"op": "c|u|d", "row": "{…}"},
                       actual=ev.doc, location=ev.loc)
    return None


@check("message.ts", level=Level.MUST, scope=Scope.RECORD, clause=CLAUSE,
       needs_options={"include-ts": "true"})
def message_ts(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """With include-ts=true, `ts` is the commit ts: a positive integer."""
    if ev.doc is None:
        return NotApplicable("the value does not decode")
    ts = ev.doc.get("ts")
    if not isinstance(ts, int) or isinstance(ts, bool) or ts <= 0:
        return Failure("ts is not a positive integer", expected="a commit ts", actual=ts, location=ev.loc)
    return None


@check("event.messages", level=Level.MUST, scope=Scope.EVENT, clause=CLAUSE)
def event_messages(ev: EventEvidence) -> Failure | NotApplicable | None:
    """A transaction gives one message per row change, in order, with its op; a DDL none."""
    if isinstance(ev.event, Ddl) or not isinstance(ev.event, Transaction):
        return None if not ev.records else Failure("a message for a DDL or watermark", expected=0,
                                                   actual=len(ev.records))
    want = [OPS[ch.op] for ch in ev.event.changes]
    got = [r.doc.get("op") if r.doc is not None else None for r in ev.records]
    if want != got:
        return Failure("the messages do not follow the row changes", expected=want, actual=got)
    return None


@check("row.values", level=Level.MUST, scope=Scope.EVENT, clause=CLAUSE)
def row_values(ev: EventEvidence) -> Iterator[Failure | NotApplicable]:
    """Every column's value is its MySQL text form (null for NULL)."""
    if not isinstance(ev.event, Transaction) or len(ev.records) != len(ev.event.changes):
        yield NotApplicable("no row message to compare")
        return
    for ch, r in zip(ev.event.changes, ev.records, strict=True):
        got = r.doc.get("row") if r.doc is not None else None
        want = row_of(ch)
        if got != want:
            yield Failure("row values differ from the source", expected=want, actual=got, location=r.loc)


@check("order.ts", level=Level.MUST, scope=Scope.STREAM, clause=CLAUSE,
       needs_options={"include-ts": "true"})
def order_ts(st: StreamEvidence) -> Iterator[Failure | NotApplicable]:
    """In each partition, first-seen messages never go back in ts."""
    if not st.logs:
        yield NotApplicable("no message with a ts")
        return
    for part, entries in st.logs.items():
        top = -1
        for offset, ts, first in entries:
            if first and ts < top:
                yield Failure(f"ts {ts} after {top}", expected=f">= {top}", actual=ts,
                              location=Location(topic=st.topic, partition=part, offset=offset))
                break
            top = max(top, ts) if first else top


# -- mutants ------------------------------------------------------------------------------------------

mutant = MUTANTS = MutantRegistry(CHECKS)


@mutant("op-uppercase", "message.shape")
class OpUppercase(ToyEncoder):
    """Writes the op in upper case."""

    def message(self, ch: RowChange, ts: int) -> dict[str, Any]:
        return {**super().message(ch, ts), "op": OPS[ch.op].upper()}


@mutant("ts-as-text", "message.ts")
class TsAsText(ToyEncoder):
    """Writes the commit ts as a string."""

    def message(self, ch: RowChange, ts: int) -> dict[str, Any]:
        out = super().message(ch, ts)
        return {**out, "ts": str(ts)} if "ts" in out else out


@mutant("last-row-dropped", "event.messages")
class LastRowDropped(ToyEncoder):
    """Forgets the last row change of every transaction with more than one."""

    def encode(self, event: Event) -> list[Record]:
        out = super().encode(event)
        return out[:-1] if len(out) > 1 else out


@mutant("values-uppercased", "row.values")
class ValuesUppercased(ToyEncoder):
    """Upper-cases text values."""

    def message(self, ch: RowChange, ts: int) -> dict[str, Any]:
        out = super().message(ch, ts)
        return {**out, "row": {k: v.upper() if isinstance(v, str) else v for k, v in out["row"].items()}}


@mutant("transactions-swapped", "order.ts", shape={"tables": (1, 1), "max_rows_per_table": 3})
class TransactionsSwapped(ToyEncoder):
    """Holds a transaction's messages back and sends them after the next transaction's."""

    def open(self, ctx: EncoderContext) -> None:
        super().open(ctx)
        self.held: list[Record] = []

    def encode(self, event: Event) -> list[Record]:
        out = super().encode(event)
        if not out:
            return []
        if self.held:
            out, self.held = out + self.held, []
        else:
            self.held = out
            return []
        return out


@mutant("crash-on-delete", "encoder.no-crash")
class CrashOnDelete(ToyEncoder):
    """Raises on the first DELETE."""

    def record(self, ch: RowChange, ts: int) -> Record:
        if ch.op is Op.DELETE:
            raise RuntimeError("toy: cannot encode a delete")
        return super().record(ch, ts)


@mutant("hang-on-ddl", "encoder.responsive", shape={"ddl_rate": 0.8})
class HangOnDdl(ToyEncoder):
    """Never returns from a DDL."""

    def encode(self, event: Event) -> list[Record]:
        if isinstance(event, Ddl):
            time.sleep(3600)
        return super().encode(event)


# -- the suite ----------------------------------------------------------------------------------------

class ToySuite(ProtocolSuite):
    def reference(self) -> EncoderInfo:
        return EncoderInfo(f"{P}/reference", P, EncoderKind.REFERENCE, ToyEncoder, "The toy-json reference encoder.")

    def mutants(self) -> Sequence[MutantSpec]:
        return MUTANTS.specs()

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> ToyChecker:
        return ToyChecker(options, tally, mode, partitions=partitions)

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> set[str]:
        return {topic_name(topic_prefix, ch) for ch in workload.row_changes()}

    def expected_versions(self, workload: Workload, options: Mapping[str, str], topic_prefix: str
                          ) -> Iterator[Version]:
        with_ts = self.carries_commit_ts(options)
        numbers = VersionNumbers()
        for tx in workload.transactions():
            for ch in tx.changes:
                topic = topic_name(topic_prefix, ch)
                entity = digest((topic, dumps(key_of(ch, ch.image()))))
                ts = tx.commit_ts if with_ts else None
                yield numbers.version(entity, digest((OPS[ch.op], ts, dumps(row_of(ch)))), ts, topic)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        def identify(topic: str, key: bytes | None, value: bytes | None) -> Identified:
            entity = digest((topic, key)) if key is not None else None
            try:
                doc = json.loads(value or b"")
            except ValueError:
                return entity, None, None
            if not isinstance(doc, dict):
                return entity, None, None
            ts = doc.get("ts") if isinstance(doc.get("ts"), int) else None
            return entity, digest((doc.get("op"), ts, dumps(doc.get("row")))), ts

        return identify

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return options.get("include-ts", "true") == "true"


SUITE = ToySuite(name=P, title="toy-json (a test-only plug-in protocol)", options=OPTIONS,
                 spec_sources=("tests/plugins/toy_protocol",),
                 capabilities=Capabilities(memory_partitions=2, delivery_options={"include-ts": "true"}),
                 checks=CHECKS)
