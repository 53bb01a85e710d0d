"""The TiCDC Avro checks of control messages (avro-enable-watermark), of a topic's stream, and
of one source event's records (with the workload)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from ....checks.delivery import Anomaly
from ....checks.registry import Failure, Level, Location, NotApplicable, Scope, Verdict
from ....model.events import Ddl, Op, Transaction, Watermark
from ...kit import Findings
from .. import spec, watermark
from ..evidence import EventEvidence, RecordEvidence, StreamEntry, StreamEvidence
from .common import NOTES, check, shape_key
from .types import _show

# == control messages (avro-enable-watermark) ==========================================

WATERMARK = {"avro-enable-watermark": "true", "enable-tidb-extension": "true"}
WATERMARK_CLAUSE = (f"{NOTES} §1.9 (avro-enable-watermark: testing only, honoured with enable-tidb-extension; "
                    "avro.go EncodeDDLEvent / EncodeCheckpointEvent), §1.10 (TiCDC's decoder: no key, first value "
                    "byte 0x01 DDL, 0x02 checkpoint)")


def _only_control(kind: str, na: NotApplicable) -> Callable[[RecordEvidence], NotApplicable | None]:
    """The gate of a check about one kind of control record."""

    def gate(ev: RecordEvidence) -> NotApplicable | None:
        return None if ev.control is not None and ev.control.kind == kind else na

    return gate


_only_ddl = _only_control("ddl", NotApplicable("not a DDL control record"))
_only_checkpoint = _only_control("checkpoint", NotApplicable("not a checkpoint control record"))


def _short(raw: bytes, limit: int = 120) -> str:
    return "0x" + raw[:limit].hex() + ("…" if len(raw) > limit else "")


@check("watermark.ddl-message", level=Level.MUST, scope=Scope.RECORD,
       clause=WATERMARK_CLAUSE + "; struct ddlEvent {query, type (TiDB ActionType), schema, table, commitTs}",
       needs_options=WATERMARK, gate=(shape_key, _only_ddl))
def watermark_ddl_message(ev: RecordEvidence) -> Findings:
    """A DDL control record is a null key and 0x01 followed by Go's compact JSON of {query, type,
    schema, table, commitTs} in that order; with the workload: the DDL's SQL, TiDB action type,
    table (after the DDL) and commit ts."""
    c = ev.control
    assert c is not None
    if c.problem:
        yield Failure(f"malformed DDL control record: {c.problem}",
                      expected='0x01 {"query":…,"type":…,"schema":…,"table":…,"commitTs":…}',
                      actual=c.raw[:200].decode("utf-8", "replace"), location=ev.at(part="value"))
        return
    src = ev.control_source
    if isinstance(src, Watermark):
        yield Failure("a watermark produced a DDL control record", expected="0x02 checkpoint",
                      actual=c.fields, location=ev.at(part="value"))
    elif isinstance(src, Ddl):
        want = watermark.ddl_fields(src)
        if c.fields != want:
            diff = sorted(k for k in want if c.fields is None or c.fields.get(k) != want[k])
            yield Failure(f"the DDL control record does not describe its DDL ({', '.join(diff)} differ)",
                          expected=want, actual=c.fields, location=ev.at(part="value"))


@check("watermark.checkpoint-message", level=Level.MUST, scope=Scope.RECORD,
       clause=WATERMARK_CLAUSE + " (binary.Write big-endian of checkpointByte and the uint64 ts)",
       needs_options=WATERMARK,
       gate=(shape_key, _only_checkpoint))
def watermark_checkpoint_message(ev: RecordEvidence) -> Findings:
    """A checkpoint control record is a null key and 0x02 followed by the resolved ts as a
    big-endian unsigned 64-bit integer (9 bytes); with the workload: the watermark's ts."""
    c = ev.control
    assert c is not None
    if c.problem:
        yield Failure(f"malformed checkpoint control record: {c.problem}", expected="0x02 + 8 bytes",
                      actual=_short(c.raw), location=ev.at(part="value"))
        return
    src = ev.control_source
    if isinstance(src, Ddl):
        yield Failure("a DDL produced a checkpoint control record", expected="0x01 + JSON", actual=_short(c.raw),
                      location=ev.at(part="value"))
    elif isinstance(src, Watermark) and c.ts != src.ts:
        yield Failure("wrong checkpoint ts", expected=src.ts, actual=c.ts, location=ev.at(part="value"),
                      hint=f"bytes after 0x02: {c.raw[1:].hex()}; the ts is big-endian "
                           f"({src.ts.to_bytes(8, 'big').hex()})")


def _covered(st: StreamEvidence) -> tuple[int, int]:
    """The ts range every partition's log covers (exclusive bounds): a capture may start and stop
    anywhere, so a broadcast near its edges may be cut."""
    lo, hi = -1, 1 << 64
    for p in st.partitions:
        ts = [e.ts for e in st.logs.get(p, ()) if e.ts is not None]
        if not ts:
            return 0, 0
        lo, hi = max(lo, min(ts)), min(hi, max(ts))
    return lo, hi


@check("watermark.broadcast", level=Level.MUST, scope=Scope.STREAM,
       clause=WATERMARK_CLAUSE + "; mq_ddl_sink.go (DDL dispatch rule PartitionAll for every protocol but Canal: "
              "a DDL to every partition of its topic, a checkpoint to every partition of every active topic)",
       needs_options=WATERMARK)
def watermark_broadcast(st: StreamEvidence) -> Findings:
    """Every DDL and checkpoint control record reaches every partition of its topic."""
    where: dict[Any, set[int]] = {}
    what: dict[Any, tuple[str, int | None]] = {}
    for part, entries in st.logs.items():
        for e in entries:
            if e.kind != "row":
                where.setdefault(e.identity, set()).add(part)
                what[e.identity] = (e.kind, e.ts)
    if not where:
        yield NotApplicable("no control record in the topic")
        return
    want = set(st.partitions)
    if len(want) < 2:
        yield NotApplicable("the topic has one partition" if st.partition_count is not None
                            else "one partition seen: a broadcast cannot be judged (check the topic's partitions "
                                 "together)")
        return
    lo, hi = (-1, 1 << 65) if st.with_source else _covered(st)
    failures = 0
    for ident, parts in where.items():
        kind, ts = what[ident]
        if parts != want and ts is not None and lo < ts < hi:
            missing = sorted(want - parts)
            yield Failure(f"a {kind} control record (ts {ts}) is missing from partition(s) {missing}",
                          expected=sorted(want), actual=sorted(parts),
                          location=Location(topic=st.topic, partition=missing[0] if missing else None))
            failures += 1
            if failures >= 10:
                return


@check("watermark.order", level=Level.MUST, scope=Scope.STREAM,
       anomalies=(Anomaly.LATE_EVENT_AFTER_WATERMARK, Anomaly.PARTIAL_TRANSACTION_AT_WATERMARK),
       clause=WATERMARK_CLAUSE + "; checkpoint = every change with commitTs <= ts has been flushed; a DDL is "
              "written after the rows of earlier transactions (the DDL barrier); notes §3.5 (replays after a "
              "restart are duplicates)",
       needs_options=WATERMARK)
def watermark_order(st: StreamEvidence) -> Findings:
    """In each partition, checkpoints never go back, and no row first appears after a checkpoint
    at or above its commit ts, or after a DDL with a larger commit ts."""
    seen = False
    for part, entries in sorted(st.logs.items()):
        cp: StreamEntry | None = None
        ddl: StreamEntry | None = None
        for e in entries:
            if not e.first or e.ts is None:
                continue  # a replayed copy (at-least-once) is judged by the delivery checks
            loc = Location(topic=st.topic, partition=part, offset=e.offset)
            if e.kind == "checkpoint":
                seen = True
                if cp is not None and cp.ts is not None and e.ts < cp.ts:
                    yield Failure(f"partition {part}: checkpoint {e.ts} after checkpoint {cp.ts}",
                                  expected=f">= {cp.ts}", actual=e.ts, location=loc)
                    break
                cp = e
            elif e.kind == "ddl":
                seen = True
                if ddl is None or (ddl.ts is not None and e.ts > ddl.ts):
                    ddl = e
            elif cp is not None and cp.ts is not None and e.ts <= cp.ts:
                yield Failure(f"partition {part}: a row of commit ts {e.ts} first appears after checkpoint {cp.ts} "
                              "(late-event-after-watermark)", expected=f"commit ts > {cp.ts}", actual=e.ts,
                              location=loc, hint=f"the checkpoint is at offset {cp.offset}")
                break
            elif ddl is not None and ddl.ts is not None and e.ts < ddl.ts:
                yield Failure(f"partition {part}: a row of commit ts {e.ts} first appears after the DDL of "
                              f"commit ts {ddl.ts}", expected=f"commit ts >= {ddl.ts}", actual=e.ts, location=loc,
                              hint=f"the DDL is at offset {ddl.offset}")
                break
    if not seen:
        yield NotApplicable("no control record in the topic")


# == events (need the workload) =========================================================

@check("event.records", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{NOTES} §1.1 (one message per row change; DDL and resolved events are not sent)",
       needs_source=True)
def event_records(ev: EventEvidence) -> Verdict:
    """Each row change yields its records (nothing missing, nothing extra); DDL and watermarks
    yield none, or with avro-enable-watermark one control record per partition of their topics."""
    if isinstance(ev.event, (Ddl, Watermark)):
        got = Counter((r.record.topic, r.record.partition or 0, r.control.kind if r.control else "row")
                      for r in ev.records)
        if got != ev.expected_controls:
            name = type(ev.event).__name__
            if not ev.expected_controls:
                return Failure(f"a {name} produced records; the Avro protocol sends none (without "
                               "avro-enable-watermark)", expected=0, actual=len(ev.records),
                               location=ev.records[0].at())
            return Failure(f"a {name} did not produce one control record per partition of its topics",
                           expected=_controls_text(ev.expected_controls), actual=_controls_text(got),
                           hint=f"missing {_controls_text(ev.expected_controls - got)}, "
                                f"unexpected {_controls_text(got - ev.expected_controls)}")
        return None
    out = []
    for r in ev.controls:
        out.append(Failure("a transaction produced a DDL/checkpoint control record", expected="row records only",
                           actual=r.control.kind if r.control else None, location=r.at()))
    for s in ev.missing:
        out.append(Failure(f"no record for {s.op.value} of {s.table.qualified_name}",
                           expected={"topic": s.topic, "op": s.op.value, "row": _row_text(s)},
                           actual=None, location=_src_loc(s)))
    for r in ev.unexpected:
        out.append(Failure("record matches no row change of the transaction", expected=None,
                           actual=_record_text(r), location=r.at()))
    return out or None


@check("update.split-key-change", level=Level.MUST, scope=Scope.EVENT,
       clause=f"{NOTES} §3.4 (an UPDATE changing a primary/unique key is sent as DELETE + INSERT unless "
              "output-raw-change-event=true)", needs_source=True)
def update_split(ev: EventEvidence) -> Verdict:
    """An UPDATE that changes a key column is sent as a tombstone for the old key, then an insert."""
    if not isinstance(ev.event, Transaction):
        return NotApplicable("not a transaction")
    splits = [s for s in ev.expected if s.split]
    if not splits:
        return NotApplicable("no key-changing update" if not ev.o.raw_change_event else "raw change events")
    out = []
    for s in splits:
        if s in ev.missing:
            what = "tombstone for the old key" if s.op is Op.DELETE else "insert of the new row"
            out.append(Failure(f"key-changing UPDATE of {s.table.qualified_name} is missing its {what}",
                               expected="DELETE(old key) then INSERT(new row)", actual="not found",
                               location=_src_loc(s)))
    return out or None


def _controls_text(c: Counter[tuple[str, int, str]]) -> list[str]:
    return [f"{kind} in {topic}[{part}]" + (f" ×{n}" if n > 1 else "") for (topic, part, kind), n in sorted(c.items())]


def _src_loc(s: Any) -> Any:
    return Location(topic=s.topic, table=s.table.qualified_name)


def _row_text(s: Any) -> dict[str, Any]:
    return {c.name: _show(spec.native_value(c, s.image[c.name], spec.AvroOptions()))
            for c in s.table.handle_key_columns()}


def _record_text(r: RecordEvidence) -> dict[str, Any]:
    return {"topic": r.record.topic, "key": _show(r.key.datum) if r.key and r.key.datum else None,
            "value": "null" if r.record.value is None else f"{len(r.record.value)} bytes"}
