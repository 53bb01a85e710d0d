"""Kafka reads for a reader in Python (a check task, the in-process check): records straight from
the consumer, with no Arrow batch in between (`kafka_source` reads into Arrow for Spark's data
source and for tasks whose output is a DataFrame)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from ..encoders.spi import Record, new_record
from .kafka_source import DEFAULT_TIMEOUT_S, SOURCE_NAME, KafkaSourceError, LogReader, PartitionRange


def read_packed_records(bootstrap: str, ranges: Sequence[PartitionRange], config: Mapping[str, str] | None = None,
                        *, timeout: float = DEFAULT_TIMEOUT_S) -> Iterator[tuple[tuple[str, int], list[Record]]]:
    """`read_packed` for a reader in Python (a check task, the in-process check): each
    topic-partition's records as `Record`s, whole and in offset order, once it is complete, with
    no Arrow batch in between (building one and reading it back cost more than the record checks
    of many protocols). Raises KafkaSourceError if a partition's offsets do not increase, as
    `topic_partition_runs` does."""
    reader = LogReader(bootstrap, config, timeout=timeout)
    held: dict[tuple[str, int], list[Record]] = {}
    ends = {(r.topic, r.partition): r.high for r in ranges if not r.empty}
    try:
        for topic, partition, offset, key, value, headers, ts in reader.read_many(ranges):
            tp = (topic, partition)
            records = held.get(tp)
            if records is None:
                records = held[tp] = []
            elif offset <= records[-1].offset:  # type: ignore[operator]  # offsets are set here
                raise KafkaSourceError(f"{SOURCE_NAME}: offsets of {topic}[{partition}] out of order "
                                       f"({offset} after {records[-1].offset}): records were reordered upstream")
            records.append(new_record(topic, key, value, partition, tuple(headers), ts, offset))
            if offset + 1 >= ends[tp]:
                yield tp, held.pop(tp)
        for tp in sorted(held):  # complete without reaching their last offset (markers, compaction)
            yield tp, held.pop(tp)
    finally:
        reader.close()
