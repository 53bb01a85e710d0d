"""The pipeline's stages, in-process: generate a workload, feed it to an encoder, check.

These are the same stage functions the Spark harness runs on executors; `--no-spark`, the
pytest plugin, shrinking and `reproduce` call them directly. Nothing here imports pyspark.

The encoder runs on a worker thread so that a crash becomes an `encoder.no-crash` finding
and a hang an `encoder.responsive` finding (bounded by `encoder_timeout`), never a crash or a
hang of the suite.
"""

from __future__ import annotations

import queue
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..checks.common import ENCODER_NO_CRASH, ENCODER_RESPONSIVE
from ..checks.registry import Actor, Failure, Location, Scope, all_checks
from ..checks.results import Tally
from ..encoders.spi import ConfigurationError, EncoderContext, EncoderHung, EncoderInfo, ManualClock, Record
from ..model.events import Ddl, Event, Transaction, Workload
from ..protocols.base import ProtocolSuite


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


KAFKA_ONLY = "needs a run through Kafka (the in-memory pipeline has no log to judge delivery on)"


def make_tally(protocol: ProtocolSuite, *, kafka: bool = False) -> Tally:
    """A tally for every check of the protocol; without Kafka, the delivery checks are skipped."""
    specs = all_checks(protocol.name)
    tally = Tally(specs)
    if not kafka:
        for s in specs:
            if s.protocol == "*" and s.scope is Scope.STREAM:
                tally.skip(s.id, KAFKA_ONLY)
    return tally


@dataclass(slots=True)
class WorkloadResult:
    records: int = 0
    crashed: bool = False
    hung: bool = False
    dumped: list[Record] = field(default_factory=list)


def run_workload(protocol: ProtocolSuite, encoder: EncoderInfo, options: Mapping[str, str], registry: Any,
                 workload: Workload, tally: Tally, *, topic_prefix: str, guard: Guard,
                 keep_records: bool = False, time_zone: str = "UTC") -> WorkloadResult:
    """Encode one workload and check everything it produced; findings go to `tally`."""
    res = WorkloadResult()
    tally.workload = (workload.seed, workload.shard)
    clock = ManualClock()
    partitions = memory_partitions(protocol)
    ctx = EncoderContext(options=dict(options), registry=registry, clock=clock, partitions=partitions,
                         topic_prefix=topic_prefix, time_zone=time_zone)
    checker = protocol.checker(options, registry, tally, topic_prefix=topic_prefix,  # type: ignore[attr-defined]
                               with_source=True, partitions=partitions)
    where = Location(table=None)

    def crash(stage: str, exc: BaseException) -> None:
        res.crashed = True
        encoder_crashed(tally, stage, exc, where)

    def hang(stage: str, exc: BaseException) -> None:
        res.hung = True
        encoder_hung(tally, stage, exc, guard.timeout, where)

    try:
        enc = encoder.factory()
        guard.call(enc.open, ctx)
    except EncoderHung as e:
        hang("open()", e)
        return res
    except ConfigurationError:
        raise
    except Exception as e:  # noqa: BLE001 - an encoder that cannot open is a finding
        crash("open()", e)
        return res
    for i, event in enumerate(workload.events):
        clock.follow(event)
        where = Location(table=_event_table(event), part=f"event {i} ({type(event).__name__})")
        try:
            records = guard.call(enc.encode, event)
            records = list(records) + list(guard.call(enc.tick, clock.now) or [])
        except EncoderHung as e:
            hang("encode()", e)
            break
        except Exception as e:  # noqa: BLE001
            crash(f"encode() of event {i} ({type(event).__name__})", e)
            break
        bad = [r for r in records if not isinstance(r, Record)]
        if bad:
            crash(f"encode() of event {i}", TypeError(f"returned {type(bad[0]).__name__}, not Record"))
            break
        res.records += len(records)
        if keep_records:
            res.dumped.extend(records)
        checker.check_event(event, records)
    if not res.hung:
        try:
            guard.call(enc.close)
        except EncoderHung as e:
            hang("close()", e)
        except Exception as e:  # noqa: BLE001
            if not res.crashed:
                crash("close()", e)
    checker.finish()
    if not res.crashed:
        tally.passed(ENCODER_NO_CRASH)
    if not res.hung:
        tally.passed(ENCODER_RESPONSIVE)
    return res


def memory_partitions(protocol: ProtocolSuite) -> int:
    """Partitions of every topic in an in-memory run: one, unless the protocol's rules are
    about partitions (Simple broadcasts DDLs, watermarks and bootstraps to all of them)."""
    return int(protocol.extra.get("memory_partitions", 1))


def encoder_crashed(tally: Tally, stage: str, exc: BaseException, where: Location | None = None) -> None:
    tally.fail(ENCODER_NO_CRASH, Failure(f"the encoder raised in {stage}: {type(exc).__name__}: {exc}",
                                         expected="records", actual=encoder_frames(exc), location=where,
                                         actor=Actor.ENCODER))


def encoder_hung(tally: Tally, stage: str, exc: BaseException, timeout: float, where: Location | None = None) -> None:
    tally.fail(ENCODER_RESPONSIVE, Failure(f"the encoder hung in {stage}: {exc}",
                                           expected=f"an answer within {timeout:g} s", actual="no answer",
                                           location=where))


def encoder_frames(exc: BaseException, limit: int = 4) -> str:
    """The innermost frames of an encoder's exception, without the harness' own frames."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not f.filename.endswith("harness/local.py")]
    lines = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}: {f.line}" for f in frames[-limit:]]
    return "\n".join(lines + [f"{type(exc).__name__}: {exc}"])


def _event_table(event: Event) -> str | None:
    if isinstance(event, Transaction) and event.changes:
        return event.changes[0].table.qualified_name
    if isinstance(event, Ddl) and event.table is not None:
        return event.table.qualified_name
    return None


def failing_checks(protocol: ProtocolSuite, encoder: EncoderInfo, options: Mapping[str, str], registry: Any,
                   workload: Workload, *, topic_prefix: str, timeout: float = 10.0) -> set[str]:
    """Which checks fail on this workload (used by shrinking and `reproduce`)."""
    tally = make_tally(protocol)
    guard = Guard(timeout)
    try:
        run_workload(protocol, encoder, options, registry, workload, tally, topic_prefix=topic_prefix, guard=guard)
    finally:
        guard.close()
    return tally.failed_ids()


def assign_offsets(records: Iterable[Record]) -> list[Record]:
    """Give records the offsets a log would: per (topic, partition), in order."""
    from dataclasses import replace

    nxt: dict[tuple[str, int], int] = {}
    out = []
    for r in records:
        p = r.partition if r.partition is not None else 0
        o = nxt.get((r.topic, p), 0)
        nxt[(r.topic, p)] = o + 1
        out.append(replace(r, partition=p, offset=o))
    return out
