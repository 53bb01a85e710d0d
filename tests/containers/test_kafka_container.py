"""container:// against a real Kafka broker in Docker (skipped where no Docker engine answers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError, Producer
from helpers import consume_all, log_ranges

from conformance.infra.faults import FaultInjector, FaultsUnsupported
from conformance.infra.kafka import KafkaCluster, open_kafka

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    with open_kafka("container://?partitions=2") as cluster:
        yield cluster


def test_container_cluster_identity(kafka: KafkaCluster) -> None:
    assert kafka.kind == "container"
    assert kafka.mock is None and not kafka.supports_faults
    assert kafka.url.startswith("container://?image=confluentinc/cp-kafka")
    assert kafka.client_config() == {"bootstrap.servers": kafka.bootstrap}


def test_produce_consume_round_trip(kafka: KafkaCluster) -> None:
    kafka.create_topic("container-roundtrip")
    kafka.create_topic("container-roundtrip")  # idempotent on a real broker too
    assert kafka.partitions("container-roundtrip") == 2
    delivered: list[KafkaError | None] = []
    producer = Producer({**kafka.client_config(), "enable.idempotence": True})
    values = [f"v{i}".encode() for i in range(500)]
    for i, value in enumerate(values):
        producer.produce("container-roundtrip", value=value, key=str(i).encode(),
                         on_delivery=lambda err, msg: delivered.append(err))
    assert producer.flush(60) == 0
    assert delivered == [None] * len(values)
    ranges = log_ranges(kafka, ["container-roundtrip"])
    assert sum(high - low for low, high in ranges.values()) == len(values)
    records = list(consume_all(kafka, ["container-roundtrip"], timeout=60))
    assert sorted(r.value for r in records if r.value is not None) == sorted(values)
    for partition in (0, 1):
        offsets = [r.offset for r in records if r.partition == partition]
        assert offsets == sorted(offsets)


def test_faults_are_refused_on_a_real_broker(kafka: KafkaCluster) -> None:
    with pytest.raises(FaultsUnsupported, match="embedded"):
        FaultInjector(kafka, "broker-down@1s:1s", ["container-roundtrip"])


def test_topics_are_created_in_batches_on_a_real_broker(kafka: KafkaCluster) -> None:
    """A run's hundreds of small topics: CreateTopics requests of CREATE_BATCH topics, one wait
    for their metadata; existing topics (and repeated names) are fine."""
    from conformance.infra import kafka as kafka_mod

    names = [f"batch-{i:03d}" for i in range(kafka_mod.CREATE_BATCH + 7)]
    kafka.create_topic(names[3], 3)  # one exists already
    kafka.create_topics([*names, names[0]], 3)
    present = set(kafka.topics())
    assert set(names) <= present
    assert {kafka.partitions(n) for n in (names[0], names[-1], names[3])} == {3}
    with pytest.raises(ValueError, match="Invalid topic name"):
        kafka.create_topics(["fine", "not fine"], 1)
