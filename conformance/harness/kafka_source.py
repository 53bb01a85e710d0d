"""Kafka as a Spark 4 Python data source: ``spark.read.format("conformance-kafka")``.

No JVM Kafka connector can be installed at run time, so records are read with confluent_kafka
(librdkafka) inside Python workers and handed to Spark as Arrow record batches.

Options (names are case-insensitive, as for every Spark data source):

``bootstrap``
    Required. ``host:port[,host:port...]``.
``topics``
    Required. Comma-separated topic names.
``kafka.<property>``
    Passed to librdkafka as ``<property>`` (SASL/SSL settings, ``isolation.level``, ...).
``timeout``
    Seconds, default 60. Bounds metadata and watermark look-ups while planning, and how long a
    partition read may go without receiving a record before it fails naming the topic, the
    partition, the offset it expected and the offset it got to.
``packOffsets``
    Optional, default 0. Topic-partitions with fewer offsets than this are packed together,
    in order, into Spark partitions of about this many offsets (one consumer reads a pack's
    partitions at once); 0 keeps one Spark partition per topic-partition. :func:`read_kafka`
    chooses it from the size of the read and Spark's parallelism: a deployment with hundreds
    of small topics would otherwise cost a Spark task, a consumer and its start-up per
    topic-partition.
``startingOffsets`` / ``endingOffsets``
    Optional JSON ``{"topic": {"0": 123, "1": -2}}``; ``-2`` means earliest, ``-1`` latest.
    Partitions left out start at the earliest offset and end at the latest offset *observed
    while planning*, so a read is bounded: records produced after planning are not read.
    Spark 4.3 plans a Python data source once per DataFrame, at its first action (not at
    ``load()``), and every later action on it, or on DataFrames derived from it, reuses those
    partitions; a new ``load()`` plans anew. :func:`read_kafka` plans on the driver and pins
    explicit offsets, so what it reads does not depend on when the first action runs.

Schema (fixed)::

    topic string, partition int, offset long, timestamp long (ms since the epoch; null when the
    record has none), key binary, value binary, headers array<struct<key:string,value:binary>>

``key``/``value`` are null for null keys/values (tombstones); ``headers`` is never null (a
record without headers has an empty list); a header value may be null.

Partitioning: one Spark partition per Kafka topic-partition, holding that partition's records in
offset order, or (``packOffsets``) one per pack of small topic-partitions, each of them whole,
in offset order and contiguous (never interleaved with another). So per-partition stream checks
need no shuffle: run them with ``df.mapInArrow(fn, schema)`` and split each task's batches with
:func:`topic_partition_runs`. ``groupBy("topic", "partition")
.applyInArrow`` also works but shuffles every record and loses the order (sort inside).

Retention: a partition's earliest records may have been deleted by retention (the embedded test
broker keeps only the newest 5 MiB per partition). The read then starts at the low watermark;
it does not fail. **A jump in the ``offset`` column, or a first offset above the requested
start, means retention (or compaction, or transaction markers), never loss:** records are
fetched by offset, and a record that exists in ``[low, high)`` is always returned.
:func:`plan_ranges` reports the readable range of every partition without Spark, so callers can
tell a retention gap (``low > 0``) from a missing record.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pyarrow as pa
from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec  # not re-exported in admin's stubs
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from ..errors import InfrastructureError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "BATCH_ROWS",
    "DEFAULT_TIMEOUT_S",
    "KAFKA_SCHEMA",
    "SOURCE_NAME",
    "KafkaDataSource",
    "KafkaPartition",
    "KafkaReader",
    "KafkaSourceError",
    "LogReader",
    "PartitionRange",
    "arrow_schema",
    "plan_ranges",
    "read_kafka",
    "default_pack",
    "pack_ranges",
    "read_packed",
    "read_range",
    "topic_partition_runs",
]

log = logging.getLogger(__name__)
# librdkafka's own log lines (e.g. "Connect to ipv4#127.0.0.1:1 failed", repeated every 50 ms
# while a broker is down) go to this logger rather than stderr, and stop here: failures reach
# the caller as exceptions that quote the client's last errors. Add a handler to this logger
# to see them when debugging a connection.
_client_log = logging.getLogger(f"{__name__}.librdkafka")
_client_log.addHandler(logging.NullHandler())
_client_log.propagate = False

#: The name to pass to ``spark.read.format``.
SOURCE_NAME = "conformance-kafka"
#: Rows per Arrow batch handed to Spark.
BATCH_ROWS = 4096
DEFAULT_TIMEOUT_S = 60.0
#: The largest pack target :func:`read_kafka` chooses (a pack closes once it holds that many
#: offsets, so it holds fewer than twice as many): a pack's records are held until each of its
#: topic-partitions is complete (they are fetched together, interleaved).
PACK_MAX_OFFSETS = 20_000
#: Spark partitions per core :func:`read_kafka` aims at when it packs (some slack for skew).
PACKS_PER_CORE = 4
_Item = TypeVar("_Item")

#: Offsets JSON sentinels, as in Spark's own Kafka source.
EARLIEST = -2
LATEST = -1

KAFKA_SCHEMA = StructType(
    [
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", LongType()),
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField(
            "headers",
            ArrayType(StructType([StructField("key", StringType()), StructField("value", BinaryType())])),
        ),
    ]
)

_KNOWN_OPTIONS = ("bootstrap", "topics", "timeout", "startingoffsets", "endingoffsets", "packoffsets")
# Consumer settings the reader relies on; a kafka.<prop> option cannot override them.
_FORCED_CONSUMER = {
    # Read by assignment and never commit: the read leaves no trace in any consumer group.
    "enable.auto.commit": False,
    "enable.auto.offset.store": False,
    # Reaching the high watermark must be visible, so that the end of a partition whose last
    # offsets hold no data records (transaction markers, compaction) is noticed without waiting.
    "enable.partition.eof": True,
}
# Pause between metadata attempts while a partition has no leader yet (e.g. just created).
_RETRY_PAUSE_S = 0.2
# Upper bound on one consume() call, so the idle deadline is checked at least this often.
_POLL_S = 0.2


class KafkaSourceError(InfrastructureError):
    """A Kafka read cannot be planned or completed (bad options, unreachable cluster, timeout)."""


@functools.cache
def arrow_schema() -> pa.Schema:
    """The Arrow schema of every batch: exactly what Spark validates batches from ``read`` against.

    Derived with Spark's own conversion, because Spark rejects a batch whose schema differs in
    any detail (e.g. the list item field is named ``element``, not pyarrow's default ``item``)."""
    return to_arrow_schema(KAFKA_SCHEMA, timezone="UTC")


@dataclass(frozen=True)
class PartitionRange:
    """The offsets ``[low, high)`` of one topic-partition that a read returns.

    Without explicit starting offsets ``low`` is the partition's low watermark: ``low > 0``
    means retention deleted ``low`` earlier records. With an explicit start, ``low`` above it
    means the same (the start was clamped up to the low watermark)."""

    topic: str
    partition: int
    low: int
    high: int

    @property
    def count(self) -> int:
        """Offsets in the range (an upper bound on records: markers and compaction leave holes)."""
        return max(0, self.high - self.low)

    @property
    def empty(self) -> bool:
        return self.high <= self.low


OffsetsSpec = Mapping[str, Mapping[int, int]]


@dataclass(frozen=True)
class SourceOptions:
    """The data source's options, validated (no network)."""

    bootstrap: str
    topics: tuple[str, ...]
    config: dict[str, str]
    timeout: float
    starting: dict[str, dict[int, int]]
    ending: dict[str, dict[int, int]]
    pack: int = 0

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        opts = {k.lower(): v for k, v in options.items()}
        config = {k[len("kafka.") :]: v for k, v in opts.items() if k.startswith("kafka.")}
        unknown = sorted(k for k in opts if k not in _KNOWN_OPTIONS and not k.startswith("kafka."))
        if unknown:
            raise KafkaSourceError(
                f"{SOURCE_NAME}: unknown option(s) {', '.join(unknown)}; known: bootstrap, topics, timeout, "
                f"startingOffsets, endingOffsets, packOffsets, kafka.<librdkafka property>"
            )
        bootstrap = opts.get("bootstrap", "").strip()
        if not bootstrap:
            raise KafkaSourceError(f"{SOURCE_NAME}: option 'bootstrap' is required (host:port[,host:port...])")
        topics = _split_topics(opts.get("topics", ""))
        if not topics:
            raise KafkaSourceError(f"{SOURCE_NAME}: option 'topics' is required (comma-separated topic names)")
        raw_timeout = opts.get("timeout", str(DEFAULT_TIMEOUT_S))
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = -1.0
        if not (timeout > 0 and math.isfinite(timeout)):  # every wait must be bounded
            raise KafkaSourceError(f"{SOURCE_NAME}: option 'timeout' must be a positive number of seconds, "
                                   f"got {raw_timeout!r}")
        raw_pack = opts.get("packoffsets", "0").strip()
        pack = int(raw_pack) if raw_pack.isascii() and raw_pack.isdigit() else -1
        if pack < 0:
            raise KafkaSourceError(f"{SOURCE_NAME}: option 'packOffsets' must be a whole number of offsets >= 0, "
                                   f"got {raw_pack!r}")
        starting = _parse_offsets("startingOffsets", opts.get("startingoffsets"), topics)
        ending = _parse_offsets("endingOffsets", opts.get("endingoffsets"), topics)
        for topic, parts in ending.items():
            for partition, offset in parts.items():
                if offset == EARLIEST:
                    raise KafkaSourceError(f"{SOURCE_NAME}: endingOffsets for {topic}[{partition}] cannot be -2 "
                                           f"(earliest)")
        return cls(bootstrap, topics, config, timeout, starting, ending, pack)


def _split_topics(topics: str | Iterable[str]) -> tuple[str, ...]:
    names = topics.split(",") if isinstance(topics, str) else list(topics)
    # Order kept (it orders the partitions), duplicates dropped.
    return tuple(dict.fromkeys(n.strip() for n in names if n.strip()))


def _parse_offsets(name: str, text: str | None, topics: Sequence[str]) -> dict[str, dict[int, int]]:
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise KafkaSourceError(f"{SOURCE_NAME}: option {name} is not JSON ({e}); "
                               f'expected {{"topic": {{"0": 123}}}}') from e
    if not isinstance(data, dict):
        raise KafkaSourceError(f'{SOURCE_NAME}: option {name} must be a JSON object {{"topic": {{"0": 123}}}}')
    out: dict[str, dict[int, int]] = {}
    for topic, parts in data.items():
        if topic not in topics:
            raise KafkaSourceError(f"{SOURCE_NAME}: option {name} names topic {topic!r}, which is not in 'topics'")
        if not isinstance(parts, dict):
            raise KafkaSourceError(f"{SOURCE_NAME}: option {name}[{topic!r}] must map partition numbers to offsets")
        out[topic] = {}
        for part, offset in parts.items():
            try:
                partition = int(part)
            except ValueError:
                partition = -1
            if partition < 0 or isinstance(offset, bool) or not isinstance(offset, int) or offset < EARLIEST:
                raise KafkaSourceError(f"{SOURCE_NAME}: option {name}[{topic!r}][{part!r}] = {offset!r}: expected a "
                                       f"partition number mapped to an offset >= 0, -2 (earliest) or -1 (latest)")
            out[topic][partition] = offset
    return out


def _offsets_json(ranges: Iterable[PartitionRange], bound: Callable[[PartitionRange], int]) -> str:
    data: dict[str, dict[str, int]] = {}
    for r in ranges:
        data.setdefault(r.topic, {})[str(r.partition)] = bound(r)
    return json.dumps(data, sort_keys=True)


# --------------------------------------------------------------------------------------------
# Planning (driver side, no Spark needed)


def plan_ranges(
    bootstrap: str,
    topics: str | Sequence[str],
    config: Mapping[str, str] | None = None,
    *,
    starting: OffsetsSpec | None = None,
    ending: OffsetsSpec | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    admin: AdminClient | None = None,
) -> list[PartitionRange]:
    """The range every partition of ``topics`` would be read over, as observed now.

    One :class:`PartitionRange` per topic-partition, in the order of ``topics`` then partition
    number. ``starting``/``ending`` map topic -> partition -> offset (``-2`` earliest, ``-1``
    latest); partitions left out read from the earliest to the latest offset. A start below the
    low watermark is clamped up to it (retention: ``low`` then exceeds the requested start);
    a start or end above the high watermark, or an end below the start, is an error.
    ``config`` holds librdkafka properties (security settings, ``isolation.level``). Every
    network wait is bounded by ``timeout`` seconds in total; an unreachable cluster or a missing
    topic raises :class:`KafkaSourceError`.
    """
    names = _split_topics(topics)
    if not names:
        raise KafkaSourceError(f"{SOURCE_NAME}: no topics given")
    client_config = dict(config or {})
    deadline = time.monotonic() + timeout
    # The admin client answers for all partitions in one ListOffsets round trip per broker,
    # where a consumer would need one watermark query per partition.
    errors: list[str] = []
    # dict[str, Any]: the stubs allow only scalar values, but librdkafka's Python binding takes
    # a logger and callbacks in the same dict. Consumer-only properties (isolation.level...)
    # only make the admin client log a warning, which goes to the quiet logger.
    admin_config: dict[str, Any] = {
        "client.id": "conformance-kafka-plan",
        **client_config,
        "bootstrap.servers": bootstrap,
        "logger": _client_log,
        "error_cb": lambda err: _remember(errors, err),
    }
    if admin is None:
        admin = AdminClient(admin_config)
    isolation = (
        IsolationLevel.READ_COMMITTED
        if client_config.get("isolation.level", "read_uncommitted") == "read_committed"
        else IsolationLevel.READ_UNCOMMITTED
    )
    last_error = "no answer"
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            detail = f"; last client errors: {'; '.join(errors)}" if errors else ""
            raise KafkaSourceError(
                f"{SOURCE_NAME}: could not plan a read of {', '.join(names)} from Kafka at {bootstrap} within "
                f"{timeout:g} s (timeout option): {last_error}{detail}"
            )
        try:
            watermarks = _watermarks(admin, names, isolation, remaining)
        except _Retry as e:
            last_error = str(e)
            time.sleep(min(_RETRY_PAUSE_S, max(0.0, deadline - time.monotonic())))
            continue
        break
    ranges = []
    for topic in names:
        for partition, (low, high) in sorted(watermarks[topic].items()):
            ranges.append(_resolve(topic, partition, low, high, starting or {}, ending or {}))
    for spec_name, spec in (("startingOffsets", starting or {}), ("endingOffsets", ending or {})):
        for topic, parts in spec.items():
            for partition in parts:
                if partition not in watermarks.get(topic, {}):
                    raise KafkaSourceError(
                        f"{SOURCE_NAME}: {spec_name} names {topic}[{partition}], but {topic} has partitions "
                        f"0..{len(watermarks.get(topic, {})) - 1}"
                    )
    return ranges


_EARLIEST_SPEC: OffsetSpec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]  # unannotated classmethod
_LATEST_SPEC: OffsetSpec = OffsetSpec.latest()  # type: ignore[no-untyped-call]  # unannotated classmethod


class _Retry(Exception):
    """A transient planning failure (no leader yet, broker unreachable so far): try again."""


# Errors that waiting will not cure: planning fails at once rather than at its deadline.
_PERMANENT = frozenset({
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.SASL_AUTHENTICATION_FAILED,
    KafkaError._AUTHENTICATION,
    KafkaError._SSL,
    KafkaError._INVALID_ARG,
})


def _retry_or_fail(what: str, e: KafkaException) -> Exception:
    err = e.args[0] if e.args else None
    if isinstance(err, KafkaError) and (err.fatal() or err.code() in _PERMANENT):
        return KafkaSourceError(f"{SOURCE_NAME}: {what} failed: {_describe(e)}")
    return _Retry(f"{what} failed: {_describe(e)}")


def _watermarks(
    admin: AdminClient, topics: Sequence[str], isolation: IsolationLevel, timeout: float
) -> dict[str, dict[int, tuple[int, int]]]:
    start = time.monotonic()
    try:
        # All topics rather than list_topics(topic=...): asking for one by name makes brokers
        # with auto.create.topics.enable create it, and a read must never create topics.
        metadata = admin.list_topics(timeout=timeout)
    except KafkaException as e:
        raise _retry_or_fail("metadata request", e) from e
    partitions: list[TopicPartition] = []
    for topic in topics:
        meta = metadata.topics.get(topic)
        if meta is None:
            known = sorted(t for t in metadata.topics if not t.startswith("__"))
            shown = ", ".join(known[:20]) + (" ..." if len(known) > 20 else "")
            raise KafkaSourceError(f"{SOURCE_NAME}: topic {topic!r} does not exist at {metadata.orig_broker_name} "
                                   f"(topics there: {shown or 'none'})")
        if meta.error is not None:
            raise _Retry(f"topic {topic}: {meta.error.str()}")
        for pid, pmeta in meta.partitions.items():
            if pmeta.error is not None or pmeta.leader < 0:
                raise _Retry(f"{topic}[{pid}] has no leader yet")
            partitions.append(TopicPartition(topic, pid))
    remaining = max(0.001, timeout - (time.monotonic() - start))
    lows = _list_offsets(admin, partitions, _EARLIEST_SPEC, isolation, remaining)
    remaining = max(0.001, timeout - (time.monotonic() - start))
    highs = _list_offsets(admin, partitions, _LATEST_SPEC, isolation, remaining)
    out: dict[str, dict[int, tuple[int, int]]] = {t: {} for t in topics}
    for tp in partitions:
        out[tp.topic][tp.partition] = (lows[(tp.topic, tp.partition)], highs[(tp.topic, tp.partition)])
    return out


def _list_offsets(
    admin: AdminClient, partitions: Sequence[TopicPartition], spec: OffsetSpec, isolation: IsolationLevel,
    timeout: float,
) -> dict[tuple[str, int], int]:
    if not partitions:
        return {}
    futures = admin.list_offsets(
        dict.fromkeys(partitions, spec), isolation_level=isolation, request_timeout=timeout
    )
    out: dict[tuple[str, int], int] = {}
    for tp, future in futures.items():
        try:
            # The request itself is bounded by request_timeout; the extra second only guards
            # against a future that is never resolved.
            info = future.result(timeout=timeout + 1.0)
        except KafkaException as e:
            raise _retry_or_fail(f"ListOffsets for {tp.topic}[{tp.partition}]", e) from e
        except TimeoutError as e:
            raise _Retry(f"ListOffsets for {tp.topic}[{tp.partition}] did not answer") from e
        out[(tp.topic, tp.partition)] = int(info.offset)
    return out


def _resolve(
    topic: str, partition: int, low: int, high: int, starting: OffsetsSpec, ending: OffsetsSpec
) -> PartitionRange:
    where = f"{topic}[{partition}]"
    start = starting.get(topic, {}).get(partition, EARLIEST)
    end = ending.get(topic, {}).get(partition, LATEST)
    start = low if start == EARLIEST else high if start == LATEST else start
    end = high if end == LATEST else end
    if start > high:
        raise KafkaSourceError(f"{SOURCE_NAME}: startingOffsets for {where} is {start}, beyond the partition's "
                               f"end ({high})")
    if end > high:
        raise KafkaSourceError(f"{SOURCE_NAME}: endingOffsets for {where} is {end}, beyond the partition's end "
                               f"({high}); a read only returns records that exist when it is planned")
    if end < start:
        raise KafkaSourceError(f"{SOURCE_NAME}: endingOffsets for {where} ({end}) is below its start ({start})")
    # Retention may have removed the start (and even the end): read what is left.
    start = min(max(start, low), end)
    return PartitionRange(topic, partition, start, end)


def _remember(errors: list[str], err: KafkaError) -> None:
    # Client-level errors (connection refused, authentication failed) arrive through error_cb
    # rather than as exceptions; the last few go into timeout messages.
    errors.append(f"{err.name()}: {err.str()}")
    del errors[:-3]


def _describe(e: KafkaException) -> str:
    err = e.args[0] if e.args else None
    if isinstance(err, KafkaError):
        return f"{err.name()}: {err.str()}"
    return str(e)


# --------------------------------------------------------------------------------------------
# Reading one partition (executor side)


def read_range(
    bootstrap: str,
    rng: PartitionRange,
    config: Mapping[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    batch_rows: int = BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Yield the records of ``rng`` as Arrow batches of :func:`arrow_schema`, in offset order.

    If retention has deleted records at the start of the range since it was planned, reading
    starts at the new low watermark (the gap shows as a jump in ``offset``; logged at INFO).
    Fails with :class:`KafkaSourceError` naming the partition, the expected last offset and the
    offset reached if no record arrives for ``timeout`` seconds, or on a non-retriable error.
    """
    if rng.empty:
        return
    reader = LogReader(bootstrap, config, timeout=timeout)
    try:
        yield from reader.read(rng, batch_rows=batch_rows)
    finally:
        reader.close()


class LogReader:
    """Plans and reads ranges with one admin client and one consumer, reused from one range to the
    next: a worker that reads many small logs (a run's units) pays for its clients once."""

    def __init__(self, bootstrap: str, config: Mapping[str, str] | None = None, *,
                 timeout: float = DEFAULT_TIMEOUT_S) -> None:
        self.bootstrap = bootstrap
        self.config = dict(config or {})
        self.timeout = timeout
        self._errors: list[str] = []
        self._consumer: Consumer | None = None
        self._admin: AdminClient | None = None

    def _consumer_client(self) -> Consumer:
        if self._consumer is None:
            conf: dict[str, Any] = {
                # A throwaway group: the consumer is assigned partitions, never joins the group,
                # never commits; librdkafka merely requires a group.id to build a consumer.
                "group.id": f"conformance-kafka-{uuid.uuid4().hex}",
                "client.id": "conformance-kafka-read",
                # Retention removing the records under the read position mid-read: continue at the
                # new earliest offset (a visible jump in offsets) instead of failing.
                "auto.offset.reset": "earliest",
                # Without this librdkafka backs off 1 s whenever its fetch queue is full.
                "fetch.queue.backoff.ms": 0,
                # A reader reassigned from one small range to the next would otherwise wait for
                # the broker to answer a fetch of the last range's end (up to 500 ms) first.
                "fetch.wait.max.ms": 10,
                # Watermarks were taken with read_uncommitted unless asked otherwise; reading the
                # same way keeps [low, high) fully readable even with open transactions.
                "isolation.level": "read_uncommitted",
                **self.config,
                **_FORCED_CONSUMER,
                "bootstrap.servers": self.bootstrap,
                "logger": _client_log,
                "error_cb": lambda err: _remember(self._errors, err),
            }
            self._consumer = Consumer(conf)
        return self._consumer

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            conf: dict[str, Any] = {"client.id": "conformance-kafka-plan", **self.config,
                                    "bootstrap.servers": self.bootstrap, "logger": _client_log,
                                    "error_cb": lambda err: _remember(self._errors, err)}
            self._admin = AdminClient(conf)
        return self._admin

    def topics(self) -> list[str]:
        """Every topic of the cluster (as its metadata says now)."""
        try:
            return sorted(self._admin_client().list_topics(timeout=self.timeout).topics)
        except KafkaException as e:
            raise KafkaSourceError(f"{SOURCE_NAME}: listing the topics at {self.bootstrap} failed: "
                                   f"{_describe(e)}") from e

    def plan(self, topics: Sequence[str]) -> list[PartitionRange]:
        """`plan_ranges` of `topics`, with this reader's admin client."""
        return plan_ranges(self.bootstrap, topics, self.config, timeout=self.timeout, admin=self._admin_client())

    def read(self, rng: PartitionRange, *, batch_rows: int = BATCH_ROWS, fresh: bool = False
             ) -> Iterator[pa.RecordBatch]:
        """`read_range` with this reader's consumer. `fresh`: the range was planned just now (its
        watermarks are not queried again: a query per partition costs a round trip to its
        leader, ~0.3 s on the embedded cluster; should retention have moved the start since, the
        read continues at the earliest offset, a visible jump)."""
        if rng.empty:
            return
        where = f"{rng.topic}[{rng.partition}]"
        consumer = self._consumer_client()
        start = rng.low if fresh else _start_offset(consumer, rng, where, self.timeout, self._errors)
        if start >= rng.high:
            return
        consumer.assign([TopicPartition(rng.topic, rng.partition, start)])
        try:
            yield from _consume(consumer, rng, start, where, self.timeout, batch_rows, self._errors)
        finally:
            consumer.unassign()

    def read_many(self, ranges: Sequence[PartitionRange], *, batch: int = 1000
                  ) -> Iterator[tuple[str, int, int, bytes | None, bytes | None, Any, int | None]]:
        """The records of many ranges planned just now, read together: every partition assigned at
        once (a reassignment per range costs the fetcher ~0.2 s to start again; a few hundred
        small ranges read together cost about that once). Yields (topic, partition, offset, key,
        value, headers, timestamp), in offset order per partition, partitions interleaved. Fails
        with KafkaSourceError naming the short partitions if no record arrives for `timeout`."""
        pending = {(r.topic, r.partition): r.high for r in ranges if not r.empty}
        if not pending:
            return
        consumer = self._consumer_client()
        nxt = {tp: r.low for r in ranges if (tp := (r.topic, r.partition)) in pending}
        consumer.assign([TopicPartition(t, p, nxt[(t, p)]) for t, p in pending])
        idle_deadline = time.monotonic() + self.timeout
        try:
            while pending:
                remaining = idle_deadline - time.monotonic()
                if remaining <= 0:
                    short = ", ".join(f"{t}[{p}] at offset {nxt[(t, p)]} of {high}" for (t, p), high in
                                      sorted(pending.items())[:10])
                    detail = f"; last client errors: {'; '.join(self._errors)}" if self._errors else ""
                    raise KafkaSourceError(f"{SOURCE_NAME}: reading timed out after {self.timeout:g} s without "
                                           f"progress: {short}{detail}")
                wanted = max(1, min(batch, sum(h - nxt[tp] for tp, h in pending.items())))
                messages = consumer.consume(num_messages=wanted, timeout=min(remaining, 0.05))
                progressed = False
                for m in messages:
                    err = m.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        if err.fatal() or not err.retriable():
                            raise KafkaSourceError(f"{SOURCE_NAME}: reading {m.topic()}[{m.partition()}] failed: "
                                                   f"{err.name()}: {err.str()}")
                        _remember(self._errors, err)
                        continue
                    tp = (str(m.topic()), int(m.partition() or 0))
                    offset = m.offset()
                    high = pending.get(tp)
                    if high is None or offset is None or offset >= high:
                        continue  # beyond the planned end, or a partition already complete
                    ts_type, ts = m.timestamp()
                    yield (tp[0], tp[1], offset, m.key(), m.value(), m.headers() or [],
                           ts if ts_type != 0 else None)  # 0: TIMESTAMP_NOT_AVAILABLE
                    nxt[tp] = offset + 1
                    progressed = True
                    if offset + 1 >= high:
                        del pending[tp]
                if progressed:
                    idle_deadline = time.monotonic() + self.timeout
                elif pending:
                    # Offsets without a data record (transaction markers, compacted away) never
                    # arrive: a position past the end says a partition is complete.
                    for pos in consumer.position([TopicPartition(t, p) for t, p in pending]):
                        if pos.offset >= 0 and pos.offset >= pending.get((pos.topic, pos.partition), 1 << 62):
                            del pending[(pos.topic, pos.partition)]
        finally:
            consumer.unassign()

    def close(self) -> None:
        consumer, self._consumer, self._admin = self._consumer, None, None  # AdminClient has no close()
        if consumer is not None:
            consumer.close()


def _start_offset(consumer: Consumer, rng: PartitionRange, where: str, timeout: float, errors: list[str]) -> int:
    try:
        low, high = consumer.get_watermark_offsets(
            TopicPartition(rng.topic, rng.partition), timeout=timeout, cached=False
        )
    except KafkaException as e:
        detail = "; ".join(errors) or _describe(e)
        raise KafkaSourceError(f"{SOURCE_NAME}: cannot read {where}: watermark query failed within {timeout:g} s "
                               f"(timeout option): {detail}") from e
    if high < rng.high:
        raise KafkaSourceError(
            f"{SOURCE_NAME}: {where} now ends at offset {high}, below the {rng.high} seen when the read was planned "
            f"(topic deleted and recreated, or truncated?)"
        )
    if low > rng.low:
        log.info("%s: retention removed offsets %d..%d since planning; reading from %d", where, rng.low, low - 1, low)
        return low
    return rng.low


def _consume(
    consumer: Consumer, rng: PartitionRange, start: int, where: str, timeout: float, batch_rows: int,
    errors: list[str],
) -> Iterator[pa.RecordBatch]:
    last = rng.high - 1
    offsets: list[int] = []
    timestamps: list[int | None] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    headers: list[list[tuple[str, bytes | None]]] = []
    next_offset = start  # the offset after the last record received (for the error message)
    progress = next_offset
    idle_deadline = time.monotonic() + timeout

    def batch() -> pa.RecordBatch:
        out = _batch(rng.topic, rng.partition, offsets, timestamps, keys, values, headers)
        for column in (offsets, timestamps, keys, values, headers):
            column.clear()
        return out

    done = False
    while not done:
        remaining = idle_deadline - time.monotonic()
        if remaining <= 0:
            detail = f"; last client errors: {'; '.join(errors)}" if errors else ""
            got = "no records" if next_offset == start else f"records up to offset {next_offset - 1}"
            raise KafkaSourceError(
                f"{SOURCE_NAME}: reading {where} timed out after {timeout:g} s without progress (timeout option): "
                f"expected offsets {start}..{last}, got {got}{detail}"
            )
        # Ask for no more than the offsets left: a batch call waits until it has that many
        # messages (or its timeout), so asking for more would wait at the tail of every read.
        wanted = max(1, min(batch_rows - len(offsets), rng.high - next_offset))
        messages = consumer.consume(num_messages=wanted, timeout=min(remaining, _POLL_S))
        at_eof = False
        for message in messages:
            err = message.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    at_eof = True
                    continue
                if err.fatal() or not err.retriable():
                    raise KafkaSourceError(f"{SOURCE_NAME}: reading {where} failed at offset {next_offset}: "
                                           f"{err.name()}: {err.str()}")
                _remember(errors, err)
                continue
            offset = message.offset()
            if offset is None or offset > last:
                done = True
                break
            ts_type, ts = message.timestamp()
            offsets.append(offset)
            timestamps.append(ts if ts_type != 0 else None)  # 0: TIMESTAMP_NOT_AVAILABLE
            keys.append(message.key())
            values.append(message.value())
            # Consumed headers are (name, bytes-or-None) pairs, or None when there are none;
            # Arrow converts the pairs as they are (no per-record copy on this hot path).
            headers.append(message.headers() or [])  # type: ignore[arg-type]  # stub also allows dict/str
            next_offset = offset + 1
            if offset == last:
                done = True
                break
        if next_offset != progress:
            progress = next_offset
            idle_deadline = time.monotonic() + timeout
        if not done and (at_eof or not messages):
            # Offsets without a data record (transaction markers, compacted away) never arrive:
            # the consumer's position passing the end is what says the range is complete.
            position = consumer.position([TopicPartition(rng.topic, rng.partition)])[0].offset
            done = position >= rng.high
        if len(offsets) >= batch_rows or (done and offsets):
            yield batch()


def _batch(topic: str, partition: int, offsets: Sequence[int], timestamps: Sequence[int | None],
           keys: Sequence[bytes | None], values: Sequence[bytes | None], headers: Sequence[Any]) -> pa.RecordBatch:
    """One Arrow batch of :func:`arrow_schema` holding records of one topic-partition."""
    schema = arrow_schema()
    n = len(offsets)
    return pa.RecordBatch.from_arrays(
        [
            pa.array([topic] * n, schema.field("topic").type),
            pa.array([partition] * n, schema.field("partition").type),
            pa.array(offsets, schema.field("offset").type),
            pa.array(timestamps, schema.field("timestamp").type),
            pa.array(keys, schema.field("key").type),
            pa.array(values, schema.field("value").type),
            # Consumed headers are (name, bytes-or-None) pairs; Arrow converts them as they are.
            pa.array(headers, schema.field("headers").type),
        ],
        schema=schema,
    )


def pack_ranges(ranges: Sequence[_Item], target: int, *, size: Callable[[_Item], int] | None = None
                ) -> list[tuple[_Item, ...]]:
    """Ranges grouped for reading: a range of ``target`` offsets or more alone, smaller ones
    packed together, in their order, until a pack holds ``target`` offsets. ``target`` 0 leaves
    every range alone. A range is never split. ``size``: the offsets of an item (by default its
    ``count``: a :class:`PartitionRange`; e.g. a topic's ranges together)."""
    if target <= 0:
        return [(r,) for r in ranges]
    count = size or cast(Callable[[_Item], int], attrgetter("count"))
    packs: list[tuple[_Item, ...]] = []
    pack: list[_Item] = []
    held = 0
    for r in ranges:
        n = count(r)
        if n >= target:
            packs.append((r,))
            continue
        pack.append(r)
        held += n
        if held >= target:
            packs.append(tuple(pack))
            pack, held = [], 0
    if pack:
        packs.append(tuple(pack))
    return packs


def read_packed(bootstrap: str, ranges: Sequence[PartitionRange], config: Mapping[str, str] | None = None, *,
                timeout: float = DEFAULT_TIMEOUT_S, batch_rows: int = BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """The records of several small ranges as Arrow batches, read by one consumer with every
    partition assigned at once. Each topic-partition's records come out whole, in offset order
    and contiguous (held until the partition is complete, then yielded), so
    :func:`topic_partition_runs` sees one run per topic-partition."""
    reader = LogReader(bootstrap, config, timeout=timeout)
    held: dict[tuple[str, int], tuple[list[Any], ...]] = {}
    ends = {(r.topic, r.partition): r.high for r in ranges if not r.empty}

    def flush(tp: tuple[str, int]) -> Iterator[pa.RecordBatch]:
        cols = held.pop(tp)
        for i in range(0, len(cols[0]), batch_rows):
            yield _batch(tp[0], tp[1], *(c[i:i + batch_rows] for c in cols))

    try:
        for topic, partition, offset, key, value, headers, ts in reader.read_many(ranges):
            tp = (topic, partition)
            cols = held.get(tp)
            if cols is None:
                cols = held[tp] = ([], [], [], [], [])
            for column, v in zip(cols, (offset, ts, key, value, headers), strict=True):
                column.append(v)
            if offset + 1 >= ends[tp]:
                yield from flush(tp)
        for tp in sorted(held):  # complete without reaching their last offset (markers, compaction)
            yield from flush(tp)
    finally:
        reader.close()


def topic_partition_runs(batches: Iterable[pa.RecordBatch]) -> Iterator[tuple[str, int, pa.RecordBatch]]:
    """Split a stream of this source's batches into runs of one topic-partition each.

    For ``mapInArrow`` over a :data:`SOURCE_NAME` DataFrame: yields ``(topic, partition,
    slice)`` for each maximal run of rows of one topic-partition (zero-copy slices, in input
    order). Raises :class:`KafkaSourceError` if offsets do not increase within a topic-partition,
    i.e. if something upstream reordered the records, so a stream check never silently judges
    an out-of-order stream."""
    last_offset: dict[tuple[str, int], int] = {}
    for rb in batches:
        if rb.num_rows == 0:
            continue
        topics = rb.column("topic").to_pylist()
        partitions = rb.column("partition").to_pylist()
        offsets = rb.column("offset").to_pylist()
        run_start = 0
        for i in range(1, rb.num_rows + 1):
            if i < rb.num_rows and topics[i] == topics[run_start] and partitions[i] == partitions[run_start]:
                continue
            key = (topics[run_start], partitions[run_start])
            previous = last_offset.get(key, -1)
            run = offsets[run_start:i]
            if run[0] <= previous or any(b <= a for a, b in zip(run, run[1:], strict=False)):
                raise KafkaSourceError(f"{SOURCE_NAME}: records of {key[0]}[{key[1]}] are not in offset order "
                                       f"(a shuffle or sort upstream of the stream check?)")
            last_offset[key] = run[-1]
            yield key[0], key[1], rb.slice(run_start, i - run_start)
            run_start = i


# --------------------------------------------------------------------------------------------
# The Spark data source


class KafkaPartition(InputPartition):
    """The planned ranges of one Spark partition (one topic-partition, or a pack of small ones);
    pickled to the executor that reads it."""

    def __init__(self, ranges: Sequence[PartitionRange]) -> None:
        super().__init__(None)
        self.spans = tuple((r.topic, r.partition, r.low, r.high) for r in ranges)

    @property
    def ranges(self) -> list[PartitionRange]:
        return [PartitionRange(*span) for span in self.spans]


class KafkaReader(DataSourceReader):
    """Plans a :class:`KafkaPartition` per topic-partition or per pack (``packOffsets``); reads
    a lone range with :func:`read_range`, a pack with :func:`read_packed`."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        # Runs once per query plan, in a Python worker beside the driver: the watermarks
        # captured here fix what the query reads.
        o = self.options
        ranges = plan_ranges(o.bootstrap, o.topics, o.config, starting=o.starting, ending=o.ending, timeout=o.timeout)
        return [KafkaPartition(pack) for pack in pack_ranges(ranges, o.pack)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, KafkaPartition):
            raise KafkaSourceError(f"{SOURCE_NAME}: unexpected partition {partition!r}")
        o = self.options
        ranges = partition.ranges
        if len(ranges) == 1:
            yield from read_range(o.bootstrap, ranges[0], o.config, timeout=o.timeout)
        else:
            yield from read_packed(o.bootstrap, ranges, o.config, timeout=o.timeout)


class KafkaDataSource(DataSource):
    """``spark.read.format("conformance-kafka")``: see the module documentation for options."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        # Called when the DataFrame is created (load()), so bad options fail there rather than
        # at the first action.
        SourceOptions.parse(self.options)
        return KAFKA_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        if schema != KAFKA_SCHEMA:
            raise KafkaSourceError(f"{SOURCE_NAME}: the schema is fixed ({KAFKA_SCHEMA.simpleString()}); "
                                   f"got {schema.simpleString()}")
        return KafkaReader(SourceOptions.parse(self.options))


def default_pack(ranges: Sequence[PartitionRange], cores: int) -> int:
    """The ``packOffsets`` :func:`read_kafka` uses: about :data:`PACKS_PER_CORE` Spark partitions
    per core, packs of at most :data:`PACK_MAX_OFFSETS` offsets."""
    total = sum(r.count for r in ranges)
    return max(1, min(PACK_MAX_OFFSETS, math.ceil(total / (PACKS_PER_CORE * max(1, cores)))))


def read_kafka(
    spark: SparkSession,
    bootstrap: str,
    topics: str | Sequence[str],
    config: Mapping[str, str] | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT_S,
    ranges: Sequence[PartitionRange] | None = None,
    pack: int | None = None,
) -> DataFrame:
    """A DataFrame of ``topics`` over fixed offset ranges.

    The ranges are planned here, on the driver, and pinned as explicit offsets, so every action
    on the DataFrame reads the same records (records produced later are never included). Pass
    ``ranges`` from :func:`plan_ranges` to read exactly what was inspected (e.g. for retention
    gaps); partitions they leave out read from earliest to latest. ``pack`` is the
    ``packOffsets`` option; by default small topic-partitions are packed into about
    :data:`PACKS_PER_CORE` Spark partitions per core of the session (at most
    :data:`PACK_MAX_OFFSETS` offsets each). The session must have the source registered
    (:func:`conformance.harness.spark.spark_session` does that)."""
    names = _split_topics(topics)
    if ranges is None:
        ranges = plan_ranges(bootstrap, names, config, timeout=timeout)
    if pack is None:
        pack = default_pack(ranges, spark.sparkContext.defaultParallelism)
    reader = (
        spark.read.format(SOURCE_NAME)
        # The schema is fixed; giving it spares load() a Python worker round trip to ask for it.
        .schema(KAFKA_SCHEMA)
        .option("bootstrap", bootstrap)
        .option("topics", ",".join(names))
        .option("timeout", str(timeout))
        .option("startingOffsets", _offsets_json(ranges, lambda r: r.low))
        .option("endingOffsets", _offsets_json(ranges, lambda r: r.high))
        .option("packOffsets", str(pack))
    )
    for key, value in (config or {}).items():
        reader = reader.option(f"kafka.{key}", value)
    return reader.load()
