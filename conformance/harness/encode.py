"""The one encode loop: an encoder, a workload's events, a sink policy and a transport.

Every runner encodes through `encode_events`: the encoder is opened, fed each event (then
`tick`), its records are checked against the event (the checker's record and event checks) and
handed to the sink policy, which sends them through a transport — the in-memory log, or a Kafka
producer. When a delivery fails and the policy restarts (the reference does, as TiCDC and
MaxScale do), a fresh encoder resumes from the last checkpoint: duplicates, never loss.

Encoder calls run under a `Guard` (one daemon worker thread, each call bounded by a timeout), so
that a crash becomes an `encoder.no-crash` finding and a hang an `encoder.responsive` finding —
never a crash or a hang of the suite.
"""

from __future__ import annotations

import queue
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..checks.common import ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from ..checks.registry import Actor, Failure, Location
from ..checks.results import Tally
from ..encoders.sink import SentMessage, SinkPolicy, SinkResult, fingerprint
from ..encoders.spi import ConfigurationError, Encoder, EncoderContext, EncoderError, EncoderHung, ManualClock, Record
from ..model.events import Ddl, Event, Transaction, capture_start
from ..protocols.base import Checker

# -- guarded calls ------------------------------------------------------------------------------


class Guard:
    """Runs encoder calls on one daemon worker thread, each bounded by a timeout.

    A plain daemon thread, not a ThreadPoolExecutor: the interpreter joins executor workers
    at exit, so a hung encoder would hang the suite on its way out."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.hung = False
        self._jobs: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], queue.SimpleQueue[Any]] | None] = (
            queue.SimpleQueue())
        self._thread = threading.Thread(target=self._work, name="encoder", daemon=True)
        self._thread.start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args, out = job
            try:
                out.put((True, fn(*args)))
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                out.put((False, e))

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        if self.hung:
            raise EncoderHung("the encoder did not return from an earlier call")
        out: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._jobs.put((fn, args, out))
        try:
            ok, value = out.get(timeout=self.timeout)
        except queue.Empty:
            # The worker cannot be killed; it is abandoned (a daemon: it does not keep the
            # process alive) and no further call is made into this encoder.
            self.hung = True
            raise EncoderHung(f"no answer within {self.timeout:g} s") from None
        if ok:
            return value
        raise value

    def close(self) -> None:
        if not self.hung:
            self._jobs.put(None)
            self._thread.join(timeout=self.timeout)


def _evidence(exc: BaseException, default: str) -> str:
    return (exc.evidence if isinstance(exc, EncoderError) else None) or default


def encoder_crashed(tally: Tally, stage: str, exc: BaseException, where: Location | None = None) -> None:
    tally.fail(ENCODER_NO_CRASH, Failure(f"the encoder raised in {stage}: {type(exc).__name__}: {exc}",
                                         expected="records", actual=_evidence(exc, encoder_frames(exc)),
                                         location=where, actor=Actor.ENCODER))


def encoder_hung(tally: Tally, stage: str, exc: BaseException, timeout: float, where: Location | None = None) -> None:
    tally.fail(ENCODER_RESPONSIVE, Failure(f"the encoder hung in {stage}: {exc}",
                                           expected=f"an answer within {timeout:g} s",
                                           actual=_evidence(exc, "no answer"), location=where))


def encoder_frames(exc: BaseException, limit: int = 4) -> str:
    """The innermost frames of an encoder's exception, without the harness' own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "/harness/" not in f.filename.replace("\\", "/")]
    lines = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}: {f.line}" for f in frames[-limit:]]
    return "\n".join(lines + [f"{type(exc).__name__}: {exc}"])


# -- transports -----------------------------------------------------------------------------------


class Pass(Protocol):
    """One pass of a transport over events (a restart begins a new one)."""

    failed_events: set[int]
    fatal: str | None

    def send(self, event: int, record: Record, partition: int | None) -> None: ...

    def finish(self, timeout: float) -> int:
        """Wait (bounded) for outstanding deliveries; returns how many are still unanswered."""
        ...


class Transport(Protocol):
    """Where a sink's messages go: the in-memory log, or a Kafka cluster."""

    def begin(self, policy: SinkPolicy, result: SinkResult, attempt: int) -> Pass: ...


@dataclass(frozen=True, slots=True)
class LogRecord:
    """A message as it sits in a log. `seq` is its place in the order messages were written
    across all partitions, where that is known (the in-memory log), else None."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp: int | None = None
    seq: int | None = None

    def record(self) -> Record:
        return Record(self.topic, self.key, self.value, self.partition, self.headers, self.timestamp, self.offset)


class MemoryLog:
    """The in-memory log: a broker that never fails. Messages get their partition from the sink
    policy (a record that names none goes to partition 0) and the next offset there."""

    def __init__(self) -> None:
        self.partitions: dict[tuple[str, int], list[LogRecord]] = {}
        self._seq = 0

    def begin(self, policy: SinkPolicy, result: SinkResult, attempt: int) -> _MemoryPass:
        return _MemoryPass(self, result, attempt)

    def append(self, record: Record, partition: int) -> LogRecord:
        part = self.partitions.setdefault((record.topic, partition), [])
        entry = LogRecord(record.topic, partition, len(part), record.key, record.value, record.headers,
                          record.timestamp, self._seq)
        self._seq += 1
        part.append(entry)
        return entry

    def topics(self) -> list[str]:
        return sorted({t for t, _ in self.partitions})

    def of(self, topic: str) -> list[LogRecord]:
        """A topic's messages in the order they were written."""
        out = [r for (t, _), rs in self.partitions.items() if t == topic for r in rs]
        out.sort(key=lambda r: r.seq or 0)
        return out

    def records(self) -> list[LogRecord]:
        out = [r for rs in self.partitions.values() for r in rs]
        out.sort(key=lambda r: r.seq or 0)
        return out


class _MemoryPass:
    def __init__(self, log: MemoryLog, result: SinkResult, attempt: int) -> None:
        self.log = log
        self.result = result
        self.attempt = attempt
        self.failed_events: set[int] = set()
        self.fatal: str | None = None

    def send(self, event: int, record: Record, partition: int | None) -> None:
        entry = self.log.append(record, partition if partition is not None else 0)
        self.result.ledger.append(SentMessage(event, record.topic, entry.partition, record.key, record.value,
                                              fingerprint(record.topic, record.key, record.value), acked=True,
                                              offset=entry.offset, attempt=self.attempt))

    def finish(self, timeout: float) -> int:
        return 0


# -- the loop -------------------------------------------------------------------------------------


@dataclass(slots=True)
class Encoded:
    """What encoding a workload did: the sink's account, and how far the encoder got."""

    sink: SinkResult = field(default_factory=SinkResult)
    records: int = 0  # records the encoder made (first pass; replays after restarts not counted)
    encoded: int = 0  # events fully encoded (all of them unless it crashed or hung)
    crashed: bool = False
    hung: bool = False
    # Where the encoder stopped with an error the harness expected (a schema change the registry
    # refuses: the documented error state), and that error.
    stopped: int | None = None
    stop_exc: BaseException | None = field(default=None, repr=False)


def _event_table(event: Event) -> str | None:
    if isinstance(event, Transaction) and event.changes:
        return event.changes[0].table.qualified_name
    if isinstance(event, Ddl) and event.table is not None:
        return event.table.qualified_name
    return None


def encode_events(factory: Callable[[], Encoder], ctx: EncoderContext, events: Sequence[Event], policy: SinkPolicy,
                  transport: Transport, checker: Checker, tally: Tally, guard: Guard, *, flush_timeout: float = 30.0,
                  pace: Callable[[], None] | None = None,
                  excuse: Callable[[int, BaseException], bool] | None = None,
                  unchecked_from: int | None = None) -> Encoded:
    """Encode `events` and send their records through `policy` and `transport`, restarting from
    the checkpoint on failed deliveries as the policy says; each event's records are checked once
    (the first pass). A crash or hang of the encoder is recorded in `tally` and ends the
    encoding, unless `excuse(event, error)` says the error was expected there (it then ends the
    encoding as `Encoded.stopped`); events from `unchecked_from` on are not given to the checker
    (past a refused schema change, what an encoder owes is judged by the registry checks). An
    invalid option (ConfigurationError) is the user's and propagates."""
    out = Encoded()
    res = out.sink
    # A tool that starts part-way (the workload's CaptureStart) never sees the events before it.
    start, checked, attempt = capture_start(events), -1, 0
    where = Location()

    def failed(stage: str, exc: BaseException) -> None:
        if isinstance(exc, EncoderHung):
            out.hung = True
            encoder_hung(tally, stage, exc, guard.timeout, where)
        else:
            out.crashed = True
            encoder_crashed(tally, stage, exc, where)

    def last_key(topic: str, partition: int) -> bytes | None:
        # The end of what the partition surely holds: in the latest pass that had one, the last
        # message acknowledged before the first one that was not. (A broker may acknowledge a
        # message after failing an earlier one, gapless guarantee or not: a position beyond such a
        # gap would skip what the log lacks.)
        for attempt in range(attempt_no[0], -1, -1):
            found: bytes | None = None
            for m in res.ledger:
                if m.attempt != attempt or m.topic != topic or m.partition not in (partition, None):
                    continue
                if not m.acked:
                    break
                found = m.key if m.key is not None else found
            if found is not None:
                return found
        return None

    attempt_no = [0]

    ctx.last_key = last_key
    while True:
        try:
            enc = factory()
            guard.call(enc.open, ctx)
        except ConfigurationError:
            raise
        except Exception as e:  # noqa: BLE001 - an encoder that cannot open is a finding
            failed("open()", e)
            break
        run = transport.begin(policy, res, attempt)
        stopped_at: int | None = None
        for i in range(start, len(events)):
            event = events[i]
            now = ctx.clock.follow(event) if isinstance(ctx.clock, ManualClock) else ctx.clock()
            where = Location(table=_event_table(event), part=f"event {i} ({type(event).__name__})")
            try:
                records = list(guard.call(enc.encode, event)) + list(guard.call(enc.tick, now) or [])
            except Exception as e:  # noqa: BLE001 - the encoder's failure is a finding
                if excuse is not None and not isinstance(e, EncoderHung) and excuse(i, e):
                    out.stopped, out.stop_exc = i, e
                else:
                    failed(f"encode() of event {i} ({type(event).__name__})", e)
                break
            bad = [r for r in records if not isinstance(r, Record)]
            if bad:
                failed(f"encode() of event {i}", TypeError(f"returned {type(bad[0]).__name__}, not Record"))
                break
            if i > checked:
                out.records += len(records)
                if unchecked_from is None or i < unchecked_from:
                    checker.check_event(event, records)
                checked = i
                if pace is not None:
                    pace()
            out.encoded = max(out.encoded, i + 1)
            for ei, r in policy.outgoing(i, records):
                run.send(ei, r, policy.partition(r, ctx.partitions))
            if policy.restart_on_failure and (run.failed_events or run.fatal):
                stopped_at = i
                break
        for ei, r in policy.drain():
            run.send(ei, r, policy.partition(r, ctx.partitions))
        unanswered = run.finish(flush_timeout)
        if not out.hung:
            try:
                guard.call(enc.close)
            except Exception as e:  # noqa: BLE001
                if not out.crashed:
                    failed("close()", e)
        if unanswered:
            for m in res.ledger:
                if m.attempt == attempt and not m.acked and m.error is None:
                    m.error = "no delivery report within the flush timeout"
        if out.crashed or out.hung or out.stopped is not None or not policy.restart_on_failure:
            break
        # Checkpoint: every event before the first one with an unacknowledged message.
        pending = [m.event for m in res.ledger if m.attempt == attempt and not m.acked]
        if pending:
            start = min(pending)
        elif stopped_at is not None:
            start = stopped_at + 1  # stopped early, yet everything sent so far was acknowledged
        else:
            break
        attempt += 1
        attempt_no[0] = attempt
        res.restarts += 1
        if res.restarts > policy.max_restarts:
            res.gave_up = f"gave up after {policy.max_restarts} restarts (last checkpoint: event {start})"
            break
        time.sleep(policy.restart_backoff_s)
    return out
