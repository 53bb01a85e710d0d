"""Sinks: how an encoder's records are produced to Kafka, and what happens when that fails.

A CDC tool is judged together with its sink: producer settings and the reaction to a failed
delivery decide whether a broker outage costs duplicates or rows. The reference sink does
what TiCDC and MaxScale do: it stops at the first failed delivery and resumes from its last
checkpoint (the last event all of whose messages were acknowledged), re-encoding from there:
duplicates, never loss. It produces idempotently with librdkafka's gapless guarantee, so a
failed message can never be overtaken by a later one of the same partition.

A sink policy (this module) decides partitions, what is sent when, and what happens after a
failed delivery; a transport carries the messages: `KafkaTransport` (a producer per pass) or the
in-memory log (`harness.encode.MemoryLog`, a broker that never fails). The loop that drives
both is `harness.encode.encode_events`.

Delivery mutants change one policy each (the `SINKS` with a `catches`).

Every sent message is recorded in a ledger: topic, partition, the offset the broker
acknowledged (or the error), and a fingerprint of its bytes, so that the harness can tell an
encoder's loss (never acknowledged, never resent) from the broker's (acknowledged, yet missing
from the log).
"""

from __future__ import annotations

import hashlib
import logging
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from .spi import Record

FINGERPRINT_BYTES = 8
# librdkafka logs connection churn during faults at INFO; the ledger is the record, not the log.
_QUIET = logging.getLogger("conformance.kafka.producer")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def fingerprint(topic: str, key: bytes | None, value: bytes | None) -> bytes:
    """A stable digest of a message (the same in every process, unlike `hash()`)."""
    h = hashlib.blake2b(digest_size=FINGERPRINT_BYTES)
    h.update(topic.encode("utf-8"))
    for part in (key, value):
        h.update(b"\x00" if part is None else b"\x01" + len(part).to_bytes(4, "big") + part)
    return h.digest()


@dataclass(slots=True)
class SentMessage:
    event: int  # index of the source event in the workload
    topic: str
    partition: int | None
    key: bytes | None
    value: bytes | None
    fingerprint: bytes
    acked: bool = False  # the broker reported success (possibly without an offset)
    offset: int | None = None  # the offset it reported, if any
    error: str | None = None
    attempt: int = 0  # 0 = first pass, n = after the n-th restart


@dataclass(slots=True)
class SinkResult:
    ledger: list[SentMessage] = field(default_factory=list)
    restarts: int = 0
    gave_up: str | None = None  # why the sink stopped before the end (too many restarts…)
    delivery_errors: int = 0


class ReferenceSink:
    """Idempotent, gapless producing; restart from the checkpoint on any failed delivery."""

    name = "reference"
    # Mutants: the delivery check that must catch the defect, and the broker fault schedule
    # (on the embedded cluster) that exposes it; `rows` keeps tables small so keys repeat.
    catches: str | None = None
    faults: str | None = None
    shape: ClassVar[Mapping[str, Any]] = {}  # workload shape overrides that make the defect likely to show
    restart_on_failure = True
    max_restarts = 20
    restart_backoff_s = 0.5

    def producer_config(self) -> dict[str, Any]:
        return {
            "enable.idempotence": True,
            "enable.gapless.guarantee": True,  # a failed message fails the producer: nothing overtakes it
            "acks": "all",
            # One request in flight, as TiCDC's producer (sarama MaxOpenRequests = 1). It also keeps
            # the embedded broker honest: it does not check idempotent sequence numbers, so with
            # several requests in flight it can accept a batch while an earlier one is failing.
            "max.in.flight.requests.per.connection": 1,
            # No message timeout: the gapless guarantee does not cover timed-out messages, and a
            # later message could overtake one that timed out. Retriable errors stall the sink (as a
            # CDC sink should stall through an outage); a non-retriable one is fatal (gapless).
            "message.timeout.ms": 0,
            # librdkafka's reconnect backoff grows to 10 s by default; a CDC sink should resume
            # promptly once a broker is back.
            "reconnect.backoff.max.ms": 1_000,
            "linger.ms": 5,
            "logger": _QUIET,
        }

    def partition(self, record: Record, partitions: int) -> int | None:
        """The encoder's dispatcher decides (None lets the producer's partitioner choose)."""
        return record.partition

    def on_failure(self, msg: SentMessage) -> None:
        """Called for every failed delivery (the reference just records it)."""

    def outgoing(self, event: int, records: list[Record]) -> list[tuple[int, Record]]:
        """What to send now for an event's records (the reference: exactly those, in order)."""
        return [(event, r) for r in records]

    def drain(self) -> list[tuple[int, Record]]:
        """Anything held back, sent at the end of a pass."""
        return []


class KafkaTransport:
    """Sends a sink's messages to a Kafka cluster (`config`: the client settings of the run).

    One producer serves pass after pass (a worker's units one after another) while they end
    cleanly; after a failed delivery or a fatal error the next pass gets a new producer, as a
    restarted CDC task's would. (A producer per unit cost a connection to every broker and its
    metadata each time.)"""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)
        self._producer: Any = None
        self._policy: type[ReferenceSink] | None = None
        self._current: Producing | None = None

    def begin(self, policy: ReferenceSink, result: SinkResult, attempt: int) -> Producing:
        from confluent_kafka import Producer

        if self._producer is None or self._policy is not type(policy):
            self._producer = Producer({**self.config, **policy.producer_config(), "error_cb": self._error_cb})
            self._policy = type(policy)
        self._current = Producing(policy, self._producer, result, attempt, on_finish=self._finished)
        return self._current

    def _error_cb(self, err: Any) -> None:
        if err.fatal() and self._current is not None:
            self._current.fatal = str(err)

    def _finished(self, clean: bool) -> None:
        self._current = None
        if not clean:
            self._producer = None  # dropped: the next pass starts afresh


class Producing:
    """One pass of a producer over events; failed deliveries are noted as they are reported."""

    def __init__(self, sink: ReferenceSink, producer: Any, result: SinkResult, attempt: int, *,
                 on_finish: Callable[[bool], None] | None = None) -> None:
        self.sink = sink
        self.result = result
        self.attempt = attempt
        self.failed_events: set[int] = set()
        self.fatal: str | None = None
        self.producer = producer
        self._on_finish = on_finish

    def send(self, event: int, record: Record, part: int | None) -> None:
        """Produce `record` to partition `part` (None: the producer's partitioner chooses)."""
        msg = SentMessage(event, record.topic, None, record.key, record.value,
                          fingerprint(record.topic, record.key, record.value), attempt=self.attempt)
        self.result.ledger.append(msg)

        def on_delivery(err: Any, m: Any) -> None:
            # Never let an exception escape into librdkafka's callback machinery.
            try:
                if err is not None:
                    msg.error = _error_text(err)
                    p = m.partition() if m is not None else -1
                    msg.partition = p if p >= 0 else part
                    self.result.delivery_errors += 1
                    self.failed_events.add(event)
                    self.sink.on_failure(msg)
                else:
                    msg.acked = True
                    msg.partition = m.partition()
                    msg.offset = m.offset() if m.offset() >= 0 else None
            except Exception as e:  # noqa: BLE001
                msg.error = f"delivery report unreadable: {type(e).__name__}"
                self.failed_events.add(event)

        kwargs: dict[str, Any] = {"key": record.key, "value": record.value, "on_delivery": on_delivery}
        if part is not None:
            kwargs["partition"] = part
        if record.headers:
            kwargs["headers"] = list(record.headers)
        for _ in range(200):
            try:
                self.producer.produce(record.topic, **kwargs)
                break
            except BufferError:
                self._poll(0.05)  # local queue full: let deliveries drain
            except Exception as e:  # noqa: BLE001 - a fatal producer refuses everything after
                msg.error = f"produce() refused: {e}"
                self.failed_events.add(event)
                self.result.delivery_errors += 1
                return
        self._poll(0)

    def _poll(self, timeout: float) -> None:
        try:
            self.producer.poll(timeout)
        except Exception as e:  # noqa: BLE001 - a fatal producer raises from poll: the pass is over
            self.fatal = self.fatal or f"{type(e).__name__}: {e}"

    def finish(self, timeout: float) -> int:
        """Wait (bounded) for outstanding deliveries; returns how many are still unanswered.
        After a failure the pass is over: what is still queued or in flight is purged (it counts
        as unacknowledged, so the restart sends it again: duplicates, never loss)."""
        try:
            if self.fatal or (self.failed_events and self.sink.restart_on_failure):
                self.producer.purge(in_queue=True, in_flight=True)
                timeout = min(timeout, 5.0)
            unanswered = int(self.producer.flush(timeout))
        except Exception as e:  # noqa: BLE001 - fatal: whatever has no answer by now never will
            self.fatal = self.fatal or f"{type(e).__name__}: {e}"
            unanswered = sum(1 for m in self.result.ledger
                             if m.attempt == self.attempt and not m.acked and m.error is None)
        if self._on_finish is not None:
            self._on_finish(not (self.fatal or self.failed_events or unanswered))
        return unanswered


def _error_text(err: Any) -> str:
    try:
        return str(err.name())
    except Exception:  # noqa: BLE001
        return str(err)


# -- delivery mutants --------------------------------------------------------------------------------

class SkipFailuresSink(ReferenceSink):
    """Logs a failed delivery and carries on: rows are lost once messages time out during an outage."""

    name = "sink-skip-failures"
    catches = "delivery.no-loss"
    faults = "broker-down@0.3s:4s:1,broker-down@0.3s:4s:2,broker-down@0.3s:4s:3"
    # Enough transactions that production (10 ms apart while the schedule runs) is still going
    # when the brokers go down, however few workloads a run has.
    shape: ClassVar[Mapping[str, Any]] = {"transactions": (60, 60)}
    restart_on_failure = False

    def producer_config(self) -> dict[str, Any]:
        return {**super().producer_config(), "enable.gapless.guarantee": False, "message.timeout.ms": 2_000}


class InflightRetriesSink(ReferenceSink):
    """Retries without idempotence with several requests in flight: retried batches land after
    later ones, so a key's versions are reordered."""

    name = "sink-inflight-retries"
    catches = "delivery.per-key-order"
    # Few small tables, so that a key's next version is often among the requests in flight.
    shape: ClassVar[Mapping[str, Any]] = {"tables": (1, 2), "max_rows_per_table": 4}
    # A 40 ms round trip keeps several one-message requests in flight whatever the machine's
    # load; one failed request every 0.1 s is retried behind those in flight, which succeed and
    # overtake it. (Errors alone did not do it: a fast broker answers before the next message is
    # sent, so a loaded machine sometimes had nothing in flight to overtake, and one run in ten
    # passed. Three failures every 0.4 s did not either: a small run, a second of production, met
    # three of them, the requests behind failed too, and it passed.)
    faults = "latency@0.1s:5s:40ms," + ",".join(
        f"produce-errors@{0.15 + 0.1 * i:.2f}s:NOT_LEADER_FOR_PARTITION×1" for i in range(20))

    def producer_config(self) -> dict[str, Any]:
        cfg = {k: v for k, v in super().producer_config().items() if k != "enable.gapless.guarantee"}
        return {**cfg, "enable.idempotence": False, "max.in.flight.requests.per.connection": 5,
                "retries": 1_000_000, "retry.backoff.ms": 1, "acks": "all", "linger.ms": 0,
                "batch.num.messages": 1}


class KeyScatterSink(ReferenceSink):
    """Spreads messages over partitions round-robin, so one key's changes land in several."""

    name = "sink-key-scatter"
    catches = "delivery.one-partition-per-key"

    def __init__(self) -> None:
        self._n = 0

    def partition(self, record: Record, partitions: int) -> int | None:
        self._n += 1
        return (zlib.crc32(record.value or b"") + self._n) % max(1, partitions)


class BatchReversedSink(ReferenceSink):
    """Holds back eight events at a time and sends each batch in reverse order."""

    name = "sink-batch-reversed"
    catches = "delivery.commit-ts-order"
    batch = 8

    def __init__(self) -> None:
        self._held: list[tuple[int, Record]] = []
        self._events = 0

    def outgoing(self, event: int, records: list[Record]) -> list[tuple[int, Record]]:
        self._held.extend((event, r) for r in records)
        self._events += 1
        if self._events % self.batch:
            return []
        return self.drain()

    def drain(self) -> list[tuple[int, Record]]:
        out, self._held = self._held[::-1], []
        return out


class StrayMessagesSink(ReferenceSink):
    """Sends stray messages that are no row: after every tombstone (a value that is no row for
    the same key), and after one in eight other messages (half of its value)."""

    name = "sink-stray-messages"
    catches = "delivery.no-strays"

    def outgoing(self, event: int, records: list[Record]) -> list[tuple[int, Record]]:
        out = []
        for r in records:
            out.append((event, r))
            if r.value is None and r.key is not None:
                out.append((event, Record(r.topic, r.key, r.key[:5] + b"\x02", r.partition)))
            elif r.value and zlib.crc32(r.value) % 8 == 0:
                out.append((event, Record(r.topic, None, r.value[:len(r.value) // 2], r.partition)))
        return out


#: The interface every sink policy has (the reference's; mutants override one part each).
SinkPolicy = ReferenceSink

SINKS: dict[str, type[ReferenceSink]] = {
    s.name: s for s in (ReferenceSink, SkipFailuresSink, InflightRetriesSink, KeyScatterSink, BatchReversedSink,
                        StrayMessagesSink)
}
