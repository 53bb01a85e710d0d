"""The embedded Kafka cluster over real sockets (127.0.0.1 only): clients, processes, faults, retention."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer
from helpers import consume_all, log_ranges

from conformance.harness.kafka_source import KafkaSourceError
from conformance.infra.faults import FaultInjector
from conformance.infra.kafka import (
    EmbeddedKafka,
    KafkaCluster,
    KafkaUnavailable,
    open_kafka,
)
from conformance.infra.mockcluster import ApiKey, MockCluster

pytestmark = pytest.mark.timeout(60)

REPO = Path(__file__).resolve().parents[2]



@pytest.fixture(scope="module")
def kafka() -> Iterator[KafkaCluster]:
    with open_kafka("embedded://?brokers=3&partitions=3") as cluster:
        yield cluster


def produce(cluster: KafkaCluster, topic: str, values: list[bytes], **config: object) -> list[KafkaError | None]:
    """Produce ``values`` keyed by index and return each delivery result (in produce order)."""
    results: list[KafkaError | None] = [None] * len(values)
    seen = [False] * len(values)

    def report(index: int) -> Callable[[KafkaError | None, Message], None]:
        def cb(err: KafkaError | None, msg: Message) -> None:
            results[index], seen[index] = err, True

        return cb

    producer = Producer({**cluster.client_config(), "linger.ms": 5, "log_level": 0, **config})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=str(i).encode(), headers=[("i", str(i).encode())], on_delivery=report(i))
        producer.poll(0)
    assert producer.flush(30) == 0
    assert all(seen)
    return results


# -- the cluster as a Kafka endpoint --------------------------------------------------------


def test_produce_and_consume_all_in_order(kafka: KafkaCluster) -> None:
    assert kafka.kind == "embedded" and kafka.supports_faults and isinstance(kafka.mock, MockCluster)
    assert kafka.url == "embedded://?brokers=3&partitions=3"
    assert len(kafka.bootstrap.split(",")) == 3 and all(b.startswith("127.0.0.1:") for b in kafka.bootstrap.split(","))
    kafka.create_topic("roundtrip")
    kafka.create_topic("roundtrip")  # idempotent
    assert kafka.partitions("roundtrip") == 3
    assert sorted(kafka.leaders("roundtrip")) == [0, 1, 2]
    values = [f"value-{i}".encode() for i in range(1000)]
    started = time.monotonic()
    assert produce(kafka, "roundtrip", values) == [None] * 1000
    records = list(consume_all(kafka, ["roundtrip"], timeout=20))
    elapsed = time.monotonic() - started
    assert sorted(r.value for r in records if r.value is not None) == sorted(values)
    by_partition: dict[int, list[int]] = {}
    for r in records:
        by_partition.setdefault(r.partition, []).append(r.offset)
        assert r.key is not None and r.value == f"value-{int(r.key)}".encode()
        assert r.headers == (("i", r.key),)
        assert r.timestamp is not None and r.timestamp > 0
    assert set(by_partition) == {0, 1, 2}
    for offsets in by_partition.values():
        assert offsets == list(range(len(offsets)))  # in order, no gaps, from offset 0
    ranges = log_ranges(kafka, ["roundtrip"])
    assert ranges == {("roundtrip", p): (0, len(o)) for p, o in by_partition.items()}
    assert kafka.watermarks("roundtrip", 0) == ranges[("roundtrip", 0)]
    assert elapsed < 10


def test_another_process_reads_the_cluster(kafka: KafkaCluster) -> None:
    kafka.create_topic("shared", partitions=1)
    produce(kafka, "shared", [f"m{i}".encode() for i in range(50)])
    # A plain confluent_kafka consumer in a separate interpreter, given only the bootstrap
    # string: the mock cluster is a real broker endpoint, not an in-process fake.
    script = """
import json, sys
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "other-process", "enable.auto.commit": False,
              "log_level": 0})
c.assign([TopicPartition("shared", 0, 0)])
values = []
while len(values) < 50:
    m = c.poll(10)
    if m is None:
        break
    if not m.error():
        values.append(m.value().decode())
c.close()
print(json.dumps(values))
"""
    done = subprocess.run(
        [sys.executable, "-c", script, kafka.bootstrap], capture_output=True, text=True, timeout=45, check=False
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [f"m{i}" for i in range(50)]


def test_unknown_topics_and_partitions_are_clear_errors(kafka: KafkaCluster) -> None:
    with pytest.raises(ValueError, match="Topic 'no-such-topic' does not exist"):
        kafka.partitions("no-such-topic")
    kafka.create_topic("small", partitions=1)
    with pytest.raises(ValueError, match=r"No partition small \[5\]"):
        kafka.watermarks("small", 5)
    with pytest.raises(ValueError, match="Invalid topic name"):
        kafka.create_topic("bad topic")
    assert list(consume_all(kafka, ["small"], timeout=5)) == []  # empty: returns at once


def test_a_stalled_read_fails_naming_the_partition() -> None:
    with EmbeddedKafka(brokers=1, partitions=1) as cluster:
        cluster.create_topic("stuck")
        produce(cluster, "stuck", [b"a", b"b", b"c"])
        # Hold the next Fetch response for 10 s: watermarks still answer, the records do not.
        cluster.mock.broker_push_request_error_rtts(1, ApiKey.Fetch, [(0, 10_000)])
        started = time.monotonic()
        with pytest.raises(KafkaSourceError) as info:
            consume_all(cluster, ["stuck"], timeout=1.5)
        assert time.monotonic() - started < 6
        message = str(info.value)
        assert "stuck[0] at offset 0 of 3" in message and "without progress" in message


# -- faults ---------------------------------------------------------------------------------


def test_broker_down_fails_deliveries_then_recovers() -> None:
    with EmbeddedKafka(brokers=3, partitions=1) as cluster:
        cluster.create_topic("down")
        leader = cluster.leaders("down")[0]
        sent: list[tuple[float, KafkaError | None]] = []

        def recorder(at: float) -> Callable[[KafkaError | None, Message], None]:
            return lambda err, msg: sent.append((at, err))

        # A short reconnect backoff keeps the recovery prompt (the default grows to 10 s).
        producer = Producer(
            {**cluster.client_config(), "message.timeout.ms": 2000, "linger.ms": 0, "reconnect.backoff.max.ms": 300,
             "log_level": 0}
        )
        injector = FaultInjector(cluster, "broker-down@0.5s:2.5s", ["down"]).start()
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < 5.0:
                producer.produce("down", b"x", on_delivery=recorder(time.monotonic() - t0))
                producer.poll(0.05)
            assert producer.flush(10) == 0
        finally:
            injector.stop()
        assert [text for _, text in injector.log] == [f"broker {leader} down", f"broker {leader} up"]
        failed = [at for at, err in sent if err is not None]
        assert failed, "no delivery failed while the leader was down"
        assert {err.code() for _, err in sent if err is not None} == {KafkaError._MSG_TIMED_OUT}
        assert all(0.4 <= at <= 3.2 for at in failed)  # only messages sent while it was down
        after = [err for at, err in sent if at >= 3.5]
        assert after and all(err is None for err in after)  # recovered


def test_produce_errors_are_retried_by_an_idempotent_producer() -> None:
    with EmbeddedKafka(brokers=3, partitions=3) as cluster:
        cluster.create_topic("retried")
        # The producer's own log proves the injected errors reached it.
        lines: list[str] = []
        handler = logging.Handler()
        handler.emit = lambda record: lines.append(record.getMessage())  # type: ignore[method-assign]
        logger = logging.getLogger("test.kafka.idempotent")
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        values = [f"v{i}".encode() for i in range(1000)]
        with FaultInjector(cluster, "produce-errors@0s:NOT_LEADER_FOR_PARTITION×5", ["retried"]) as injector:
            assert injector.wait(5)
            results = produce(cluster, "retried", values, **{"enable.idempotence": True, "debug": "msg",
                                                             "logger": logger})
        assert results == [None] * len(values)
        assert sum("Not leader for partition" in line for line in lines) == 5
        read = [r.value for r in consume_all(cluster, ["retried"], timeout=10)]
        assert sorted(v for v in read if v is not None) == sorted(values)  # every one, exactly once


def test_retention_drops_the_oldest_beyond_5_mib() -> None:
    with EmbeddedKafka(brokers=1, partitions=1) as cluster:
        cluster.create_topic("retention")
        assert cluster.watermarks("retention", 0) == (0, 0)
        produce(cluster, "retention", [bytes(1024)] * 6000, **{"compression.type": "none"})
        low, high = cluster.watermarks("retention", 0)
        assert high == 6000
        assert low > 0  # about 1 MiB of the oldest batches is gone
        records = list(consume_all(cluster, ["retention"], timeout=20))
        assert len(records) == high - low and records[0].offset == low


# -- serving and opening --------------------------------------------------------------------


def test_serve_kafka_in_a_subprocess() -> None:
    script = (
        "from conformance.infra.kafka import serve_kafka\n"
        "serve_kafka(1, 2, lambda bootstrap: print(bootstrap, flush=True))\n"
        "print('stopped', flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(proc.stdout.readline() if proc.stdout else ""))
        reader.start()
        reader.join(30)
        problem = proc.stderr.read() if proc.stderr is not None and proc.poll() is not None else line
        assert line and line[0].startswith("127.0.0.1:"), problem
        bootstrap = line[0].strip()
        delivered: list[KafkaError | None] = []
        producer = Producer({"bootstrap.servers": bootstrap, "log_level": 0})
        producer.produce("served", b"hello", on_delivery=lambda err, msg: delivered.append(err))
        assert producer.flush(15) == 0
        assert delivered == [None]
        del producer
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=15)
        assert proc.returncode == 0
        assert out.strip() == "stopped"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


def test_container_without_docker_is_unavailable_quickly() -> None:
    started = time.monotonic()
    with pytest.raises(KafkaUnavailable) as info:
        open_kafka("container://")
    assert time.monotonic() - started < 10
    message = str(info.value)
    assert "container:// needs a Docker engine" in message and "embedded://" in message


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("http://broker:9092", "Accepted forms"),
        ("kafka://", "names no broker"),
        ("kafka://broker", "is not host:port"),
        ("kafka://broker:0", "is not host:port"),
        ("embedded://?brokers=0", "brokers must be a whole number from 1 to 64"),
        ("embedded://?colour=red", "unknown parameter(s) colour"),
        ("container://?partitions=x", "partitions must be a whole number"),
        ("kafka://h:1?acks=all&acks=1", "sets 'acks' twice"),
        ("kafka://h:1?bootstrap.servers=h:2", "sets bootstrap.servers"),
    ],
)
def test_bad_urls_are_value_errors(url: str, fragment: str) -> None:
    with pytest.raises(ValueError) as info:
        open_kafka(url)
    assert fragment in str(info.value)


def test_credentials_never_appear_in_errors() -> None:
    started = time.monotonic()
    with pytest.raises(KafkaUnavailable) as info:
        open_kafka("kafka://u:secret@127.0.0.1:1")
    assert time.monotonic() - started < 5
    assert "secret" not in str(info.value) and "127.0.0.1:1" in str(info.value)
    with pytest.raises(ValueError) as bad:
        open_kafka("kafka://127.0.0.1:1?sasl.password=hunter2&no.such.property=1")
    assert "hunter2" not in str(bad.value) and "no.such.property" in str(bad.value)
    with pytest.raises(ValueError) as malformed:
        open_kafka("kafka://user:pa55@broker?sasl.password=hunter2")
    assert "pa55" not in str(malformed.value) and "hunter2" not in str(malformed.value)


def test_external_cluster_that_does_not_speak_kafka_times_out_bounded() -> None:
    # Something accepts connections but never answers: the metadata probe decides, within ?timeout.
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    try:
        started = time.monotonic()
        with pytest.raises(KafkaUnavailable) as info:
            open_kafka(f"kafka://user:topsecret@127.0.0.1:{port}?security.protocol=SASL_PLAINTEXT&timeout=1.5")
        assert time.monotonic() - started < 5
        assert "within 1.5 s" in str(info.value) and "topsecret" not in str(info.value)
    finally:
        listener.close()


def test_external_cluster_against_the_embedded_one(kafka: KafkaCluster) -> None:
    # kafka:// pointed at the embedded brokers behaves like any external cluster.
    with open_kafka(f"kafka://{kafka.bootstrap}?client.id=conformance-test&partitions=2") as external:
        assert external.kind == "external" and external.mock is None and not external.supports_faults
        assert external.client_config() == {"bootstrap.servers": kafka.bootstrap, "client.id": "conformance-test"}
        assert external.url == f"kafka://{kafka.bootstrap}?client.id=conformance-test"
        kafka.create_topic("seen-externally", partitions=2)
        produce(kafka, "seen-externally", [b"1", b"2", b"3"])
        assert external.partitions("seen-externally") == 2
        assert sum(h - lo for lo, h in log_ranges(external, ["seen-externally"]).values()) == 3
        read = [r.value for r in consume_all(external, ["seen-externally"], timeout=10)]
        assert sorted(v for v in read if v is not None) == [b"1", b"2", b"3"]
    with open_kafka("kafka://u:p%40ss@" + kafka.bootstrap + "?security.protocol=PLAINTEXT&sasl.password=x") as k:
        assert "p@ss" not in repr(k) and "p%40ss" not in k.url and "sasl.password=***" in k.url
        assert k.client_config()["sasl.username"] == "u" and k.client_config()["sasl.password"] == "x"


def test_topics_are_created_on_a_cluster_without_controller(kafka: KafkaCluster) -> None:
    """The embedded cluster reached through kafka:// (as `conformance serve kafka` is used from
    another process) names no controller, so CreateTopics cannot work; topics are auto-created
    by a metadata request instead, quickly, and too few partitions is a clear error."""
    with open_kafka(f"kafka://{kafka.bootstrap}") as external:
        t0 = time.monotonic()
        external.create_topic("auto-created", partitions=2)
        assert external.partitions("auto-created") >= 2
        assert time.monotonic() - t0 < 5  # no wait for a controller that never answers
        with pytest.raises(KafkaUnavailable, match="names no controller"):
            external.create_topic("too-many-partitions", partitions=64)
        external.create_topics(["auto-a", "auto-b", "auto-a"], partitions=2)
        assert {"auto-a", "auto-b"} <= set(external.topics())


def test_a_runs_topics_are_created_at_once_and_repeats_are_fine(kafka: KafkaCluster) -> None:
    kafka.create_topics(["many-1", "many-2", "many-1"], partitions=2)
    kafka.create_topics(["many-2", "many-3"], partitions=2)  # one exists already
    assert [kafka.partitions(t) for t in ("many-1", "many-2", "many-3")] == [2, 2, 2]
    with pytest.raises(ValueError, match="Invalid topic name"):
        kafka.create_topics(["fine", "not fine"])


def test_mock_cluster_error_injection_api() -> None:
    with MockCluster(2) as mock:
        mock.create_topic("api", 2)
        mock.broker_push_request_error_rtts(2, ApiKey.Produce, [("NOT_ENOUGH_REPLICAS", 0), (0, 10)])
        assert mock.broker_error_stack_count(2, ApiKey.Produce) == 2
        with pytest.raises(ValueError, match=r"broker ids are 1\.\.2"):
            mock.broker_down(3)
        with pytest.raises(ValueError, match="Unknown Kafka error name"):
            mock.push_request_errors(ApiKey.Produce, ["NOT_AN_ERROR"])
        mock.set_partition_leader("api", 0, 2)
        mock.close()
        mock.close()
        assert mock.closed
        with pytest.raises(RuntimeError, match="closed"):
            mock.broker_up(1)
