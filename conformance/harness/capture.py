"""Reading captured records (`records.jsonl`, format v1) without trusting them, and judging a
captured topic's delivery from the log alone.

One JSON object per line: `topic` (string), `partition` and `offset` (integers), `key` and
`value` (standard base64 strings, or null), optional `timestamp` (integer ms) and `headers`
(`[[name, base64-or-null], …]`). Every line that breaks the format becomes a finding of
`capture.record-format` saying which line and what is wrong; the other lines are checked.

A captured topic (a dump file, or a live topic read by `check --kafka`) comes without the
workload it was made from: `DeliveryLogs` identifies each message with the protocol's
identifier and judges the delivery invariants that need no source (commit-ts order per
partition, per-key order, one partition per key; `checks.delivery.analyse_log`). Loss and
strays need the workload: those checks are skipped, saying why, never guessed.
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..checks.delivery import (
    DeliveryEvidence,
    DeliveryReport,
    LogEntry,
    LogRow,
    analyse_log,
    delivery_checks,
)
from ..checks.registry import CheckSpec
from ..checks.results import Tally
from ..encoders.sink import fingerprint
from ..encoders.spi import Record, new_record
from ..protocols import get_protocol
from ..protocols.base import Identified


@dataclass(frozen=True, slots=True)
class BadLine:
    line: int
    problem: str
    excerpt: str


def _b64(v: Any, what: str) -> bytes | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError(f"{what} must be a base64 string or null, not {type(v).__name__}")
    try:
        # What `base64.b64decode(v, validate=True)` does, without its regular expression.
        return binascii.a2b_base64(v, strict_mode=True)
    except (binascii.Error, ValueError) as e:
        raise ValueError(f"{what} is not valid base64 ({e})") from None


def _json_line(text: str) -> Any:
    """A line as the standard library reads it, orjson first (reading a capture was a third of a
    fast-path `check`'s time with the stdlib's parser). orjson refuses some of what the stdlib
    reads (NaN, lone surrogates), and reads an integer beyond 64 bits as a float where the stdlib
    keeps it exact: a line orjson refuses, or in which it found a float (no field of a capture
    line is one), goes to the stdlib, which decides; so the answer is always the stdlib's."""
    try:
        obj = orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)
    return json.loads(text) if _has_float(obj) else obj


def _has_float(obj: Any) -> bool:
    cls = obj.__class__
    if cls is float:
        return True
    if cls is dict or cls is list:
        for v in (obj.values() if cls is dict else obj):
            c = v.__class__
            if c is float or ((c is dict or c is list) and _has_float(v)):
                return True
    return False


def parse_line(text: str) -> Record:
    """One line as a record; ValueError saying what is wrong with it. The answer is always the
    standard library's reading of the line, explained by `_explained`; `_quick` only takes the
    lines it can prove need no explaining."""
    rec = _quick_line(text)
    return rec if rec is not None else _explained(text)


def _quick_line(line: str | bytes) -> Record | None:
    """`_quick` of the line, when orjson reads it as an object; else None."""
    try:
        obj = _loads(line)
    except _JSONDecodeError:
        return None
    return _quick(obj) if obj.__class__ is dict else None


def _explained(text: str) -> Record:
    try:
        obj = _json_line(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"a line must be a JSON object, not {type(obj).__name__}")
    topic = obj.get("topic")
    if not isinstance(topic, str) or not topic:
        raise ValueError("`topic` is missing or not a non-empty string")
    for k in ("partition", "offset"):
        if not isinstance(obj.get(k), int) or isinstance(obj.get(k), bool) or obj[k] < 0:
            raise ValueError(f"`{k}` is missing or not a non-negative integer")
    for k in ("key", "value"):
        if k not in obj:
            raise ValueError(f"`{k}` is missing (use null for a null {k})")
    key = _b64(obj["key"], "`key`")
    value = _b64(obj["value"], "`value`")
    ts = obj.get("timestamp")
    if ts is not None and (not isinstance(ts, int) or isinstance(ts, bool)):
        raise ValueError("`timestamp` must be an integer (ms) or absent")
    headers: list[tuple[str, bytes | None]] = []
    raw_headers = obj.get("headers") or []
    if not isinstance(raw_headers, list):
        raise ValueError("`headers` must be a list of [name, base64] pairs")
    for h in raw_headers:
        if not (isinstance(h, list) and len(h) == 2 and isinstance(h[0], str)):
            raise ValueError("each header must be [name, base64-or-null]")
        headers.append((h[0], _b64(h[1], f"header {h[0]!r}")))
    return Record(topic=topic, key=key, value=value, partition=obj["partition"], headers=tuple(headers),
                  timestamp=ts, offset=obj["offset"])


_loads = orjson.loads
_JSONDecodeError = orjson.JSONDecodeError
_a2b = binascii.a2b_base64


def _quick(obj: dict[str, Any]) -> Record | None:
    """The record of a line orjson read as `obj`, when every field is exactly what the format
    asks; None sends the line to `_explained`. Where this answers, `_explained` gives the same
    record: orjson and the standard library read the same strings and the same integers up to
    64 bits (a larger one orjson reads as a float, which no field accepts here), and both keep
    the last of a key given twice; a line orjson refuses (invalid UTF-8, lone surrogates, NaN)
    never gets here. The record is built by `spi.new_record`, without the frozen dataclass's
    `__init__`."""
    topic = obj.get("topic")
    partition = obj.get("partition")
    offset = obj.get("offset")
    if (topic.__class__ is not str or not topic or partition.__class__ is not int or partition < 0
            or offset.__class__ is not int or offset < 0 or "key" not in obj or "value" not in obj):
        return None
    ts = obj.get("timestamp")
    if ts is not None and ts.__class__ is not int:
        return None
    raw_headers = obj.get("headers")
    headers: tuple[tuple[str, bytes | None], ...] = ()
    try:
        key = obj["key"]
        if key is not None:
            if key.__class__ is not str:
                return None
            key = _a2b(key, strict_mode=True)
        value = obj["value"]
        if value is not None:
            if value.__class__ is not str:
                return None
            value = _a2b(value, strict_mode=True)
        if raw_headers:
            if raw_headers.__class__ is not list:
                return None
            hs = []
            for h in raw_headers:
                if h.__class__ is not list or len(h) != 2 or h[0].__class__ is not str:
                    return None
                hv = h[1]
                if hv is not None:
                    if hv.__class__ is not str:
                        return None
                    hv = _a2b(hv, strict_mode=True)
                hs.append((h[0], hv))
            headers = tuple(hs)
        elif raw_headers is not None and raw_headers.__class__ is not list:
            return None
    except (binascii.Error, ValueError):
        return None
    return new_record(topic, key, value, partition, headers, ts, offset)


def read_records(path: Path, *, mine: Callable[[str], bool] | None = None,
                 bad_lines: bool = True) -> Iterator[tuple[int, Record | BadLine]]:
    """(line number, record or what is wrong with the line). Blank lines are skipped. A line
    orjson reads (so valid UTF-8) into a record `_quick` proves well-formed is taken as it is;
    every other line is decoded, parsed and explained as `parse_line` does.

    A share of the lines, for one of several readers of the file (`check_jobs`): with `mine`,
    only the lines of the topics it takes (a line orjson reads as an object with a string
    `topic` is taken or skipped by that topic before anything else is read of it, whatever it
    turns out to be; any other line by the topic of its record), and with `bad_lines` off, no
    line that is not a record and names no topic orjson can read. Readers that split the topics
    between them, exactly one of them with `bad_lines`, see every line once."""
    with path.open("rb") as fh:
        for n, raw in enumerate(fh, start=1):
            owned = mine is None  # the line is this reader's whatever it turns out to be
            if mine is None:
                rec = _quick_line(raw)
            else:
                try:
                    obj = _loads(raw)
                except _JSONDecodeError:
                    obj = None
                rec = None
                if obj.__class__ is dict:
                    topic = obj.get("topic")
                    if topic.__class__ is str:
                        if not mine(topic):
                            continue
                        owned = True
                    rec = _quick(obj)
            if rec is not None:
                yield n, rec
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                if owned or bad_lines:
                    yield n, BadLine(n, f"not UTF-8 ({e.reason} at byte {e.start})", raw[:80].decode("latin-1"))
                continue
            if not text.strip():
                continue
            try:
                got = _explained(text)
            except ValueError as e:
                if owned or bad_lines:
                    yield n, BadLine(n, str(e), text.strip()[:120])
                continue
            if owned or (mine is not None and mine(got.topic)):
                yield n, got


def count_lines(path: Path) -> int:
    with path.open("rb") as fh:
        return sum(1 for _ in fh)


# -- delivery from the log alone (no workload) ------------------------------------------------------

LOG_ONLY_SKIPPED = ("needs the generated workload (source truth) and the sink's ledger: decidable in "
                    "`conformance run`, not on a captured or live topic")
NOTHING_TO_JUDGE = "no row message could be read from the log (only control messages, or none decodable)"


def log_only_checks(protocol: str) -> list[CheckSpec]:
    """The delivery checks the log alone decides (protocol-independent stream checks that need
    no source)."""
    return [s for s in delivery_checks(protocol) if not s.needs_source]


def prepare_log_only(tally: Tally, protocol: str) -> None:
    """Set a tally's delivery checks up for a log without its workload: those that need the
    source are skipped, saying why; the others are judged per topic (`DeliveryLogs.judge`)."""
    for s in delivery_checks(protocol):
        if s.id in tally.checks:
            tally.checks[s.id].skipped = LOG_ONLY_SKIPPED if s.needs_source else None


def finish_log_only(tally: Tally, protocol: str) -> None:
    """A log-only check that judged no topic at all says why (rather than a bare not-applicable)."""
    for s in log_only_checks(protocol):
        t = tally.checks.get(s.id)
        if t is not None and not (t.passed or t.failed or t.errored or t.not_applicable):
            t.skipped = NOTHING_TO_JUDGE


@dataclass(slots=True)
class DeliverySummary:
    """Delivery counts for the report's notes: what the checks' verdicts do not show (duplicates
    are allowed, so they fail nothing). Mergeable: each Spark task returns one."""

    topics: int = 0
    messages: int = 0  # distinct row messages (with the workload: row changes delivered)
    duplicates: int = 0  # copies beyond the first
    without_ts: int = 0  # row messages without a commit ts (without the workload: not de-duplicated)
    unknown: int = 0  # row changes whose fate the log cannot tell (with the workload)
    unattributed: int = 0  # messages no row could be read from
    partial: list[str] = field(default_factory=list)  # partitions read from above offset 0
    with_source: bool = False

    PARTIAL_LIMIT = 20

    def add(self, report: DeliveryReport, *, with_source: bool) -> None:
        self.topics += 1
        self.messages += report.delivered
        self.duplicates += report.duplicates
        self.unknown += report.unknown
        self.unattributed += report.unattributed
        if not with_source:
            self.without_ts += report.delivered - report.with_ts
        self.with_source = self.with_source or with_source

    def merge(self, other: DeliverySummary) -> None:
        self.topics += other.topics
        self.messages += other.messages
        self.duplicates += other.duplicates
        self.without_ts += other.without_ts
        self.unknown += other.unknown
        self.unattributed += other.unattributed
        self.partial.extend(other.partial[: max(0, self.PARTIAL_LIMIT - len(self.partial))])
        self.with_source = self.with_source or other.with_source

    def notes(self) -> list[str]:
        if not self.topics:
            return []
        copies = f"{self.duplicates} duplicate cop{'y' if self.duplicates == 1 else 'ies'} (at-least-once replays: " \
                 "allowed, never judged as reorders)"
        if self.with_source:
            out = [f"delivery: {self.messages} row change(s) delivered in {self.topics} topic(s); {copies}"
                   + (f"; {self.unknown} row change(s) unknown (retention or broker gaps: not judged)"
                      if self.unknown else "")]
        else:
            out = [f"delivery from the log alone (no workload): {self.messages} distinct row message(s) in "
                   f"{self.topics} topic(s) judged for commit-ts order, per-key order and one partition per key; "
                   f"{copies}; loss and strays need the workload (skipped)"]
            if self.without_ts:
                out.append(f"{self.without_ts} row message(s) carry no commit ts (tombstones, or every message when "
                           "the protocol's options carry none): judged only for one partition per key, never counted "
                           "as duplicates (the same content can be a new version)")
        if self.unattributed:
            out.append(f"{self.unattributed} message(s) name no row (undecodable, or their schema is unknown): "
                       "left out of the delivery checks")
        if self.partial:
            out.append("read from above offset 0 (retention, a group's committed offset, or a partial capture): "
                       + ", ".join(self.partial) + "; there a replay of an earlier message cannot be told from a "
                       "reorder")
        return out


def judge_log(protocol: str, options: Mapping[str, str], topic: str, entries: Iterable[LogRow], tally: Tally,
              starts: Mapping[tuple[str, int], int] | None = None) -> DeliverySummary:
    """The log-only delivery checks over one topic's identified messages; `tally` needs those
    checks (`log_only_checks`). Returns the counts for the notes."""
    entries = list(entries)
    suite = get_protocol(protocol)
    report = analyse_log(entries, starts, ts_scope=suite.capabilities.commit_ts_scope)
    ev = DeliveryEvidence(topic, report, has_commit_ts=suite.carries_commit_ts(options), with_source=False)
    for s in log_only_checks(protocol):
        tally.evaluate(s, ev)
    summary = DeliverySummary()
    summary.add(report, with_source=False)
    for p in sorted({e[1] for e in entries}):
        start = (starts or {}).get((topic, p), 0)
        if start > 0 and len(summary.partial) < summary.PARTIAL_LIMIT:
            summary.partial.append(f"{topic}[{p}] from offset {start}")
    return summary


def log_entry(identify: Any, topic: str, partition: int, offset: int, key: bytes | None, value: bytes | None,
              known: tuple[Identified] | None = None) -> LogEntry | None:
    """A message as the log-only delivery analysis sees it, from a protocol's identifier (or
    `known`, what it would say); None for a control message (DDL, watermark, bootstrap…): no row
    to account for."""
    ident = identify(topic, key, value) if known is None else known[0]
    if ident is None:
        return None
    ent, match, ts = ident
    # The bytes tell apart messages whose version could not be read (match None).
    return _new_entry(LogEntry, (topic, partition, offset, ent, match, ts,
                                 fingerprint(topic, key, value) if match is None else None))


_new_entry = tuple.__new__  # a LogEntry from its seven fields, without its constructor's keyword handling


#: Above every offset (`DeliveryLogs._run_first` before a partition's first message).
_NO_OFFSET = float("inf")


class DeliveryLogs:
    """The messages of a log as the log-only delivery analysis wants them, one topic apart from
    another: each message is identified as it streams by (a protocol's identifier may learn from
    the stream, e.g. Simple's handle keys from its schemas, so feed each partition in offset
    order) and kept as a small tuple (a `LogRow`) until its topic is judged."""

    def __init__(self, protocol: str, options: Mapping[str, str], registry: Any) -> None:
        self.protocol = protocol
        self.options = dict(options)
        # One identifier for every topic: identifiers key what they learn by topic, and their
        # caches (Avro: parsed schemas) are worth sharing.
        self._identify = get_protocol(protocol).identifier(self.options, registry)
        self.entries: dict[str, list[LogRow]] = {}  # plain tuples: see `LogRow`
        self.first: dict[tuple[str, int], int] = {}  # smallest offset seen, control messages included
        # The topic-partition of the last message (a partition's messages come in runs), its
        # smallest offset seen (`first`'s) and its topic's list in `entries` (None: not made yet).
        self._run: tuple[str, int] | None = None
        self._run_first: float = _NO_OFFSET
        self._run_entries: list[LogRow] | None = None

    def add_record(self, r: Record, known: tuple[Identified] | None = None) -> None:
        """One message; `known`: its identity where the checker worked it out already (its fast
        path, with the decode), in a 1-tuple (None: identify it here). `log_entry`'s steps, inline:
        a check loop calls this for every record."""
        topic, partition, offset = r.topic, r.partition or 0, r.offset or 0
        run = self._run
        if run is None or run[1] != partition or run[0] != topic:
            run = self._run = (topic, partition)
            self._run_first = self.first.get(run, _NO_OFFSET)
            self._run_entries = self.entries.get(topic)
        if offset < self._run_first:
            self._run_first = self.first[run] = offset
        ident = self._identify(topic, r.key, r.value) if known is None else known[0]
        if ident is None:
            return
        ent, match, ts = ident
        entries = self._run_entries
        if entries is None:
            entries = self._run_entries = self.entries.setdefault(topic, [])
        entries.append((topic, partition, offset, ent, match, ts,
                        fingerprint(topic, r.key, r.value) if match is None else None))

    def judge(self, tally: Tally, starts: Mapping[tuple[str, int], int] | None = None) -> DeliverySummary:
        """Judge every topic seen since the last call (and forget its messages); `starts` are
        the offsets each partition was read from, where known (else the smallest offset seen)."""
        summary = DeliverySummary()
        begins = {**self.first, **(starts or {})}
        self._run, self._run_entries = None, None  # the lists judged are dropped
        for topic in sorted(self.entries):
            summary.merge(judge_log(self.protocol, self.options, topic, self.entries.pop(topic), tally, begins))
        return summary
