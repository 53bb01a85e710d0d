"""The embedded registry against the real Confluent Schema Registry image: same answers."""

from __future__ import annotations

import pytest

from conformance.infra.registry import EmbeddedSchemaRegistry, IncompatibleSchema, RegistryClient

V1 = '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"a","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}]}'
V2_OK = '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"a","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}},{"default":null,"name":"b","type":["null","string"]}]}'
V2_BAD = '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"a","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}},{"name":"c","type":"string"}]}'


@pytest.fixture(scope="module")
def confluent_registry_url():  # type: ignore[no-untyped-def]
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network
    from testcontainers.core.waiting_utils import wait_for_logs
    from testcontainers.kafka import KafkaContainer

    with Network() as net:
        with KafkaContainer("confluentinc/cp-kafka:7.6.1").with_network(net).with_network_aliases("kafka") as kafka:
            sr = (DockerContainer("confluentinc/cp-schema-registry:7.6.1").with_network(net)
                  .with_env("SCHEMA_REGISTRY_HOST_NAME", "schema-registry")
                  .with_env("SCHEMA_REGISTRY_LISTENERS", "http://0.0.0.0:8081")
                  .with_env("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS", "PLAINTEXT://kafka:9092")
                  .with_exposed_ports(8081))
            with sr:
                wait_for_logs(sr, "Server started", timeout=120)
                yield f"http://{sr.get_container_host_ip()}:{sr.get_exposed_port(8081)}"
            del kafka


def _behaviour(url: str) -> list[object]:
    c = RegistryClient(url)
    out: list[object] = []
    i1 = c.register("s-value", V1)
    out.append(c.register("s-value", V1) == i1)
    c.register("s-value", V2_OK)
    out.append(c.versions("s-value"))
    try:
        c.register("s-value", V2_BAD)
        out.append("accepted")
    except IncompatibleSchema:
        out.append("409")
    out.append(c.register("other-value", V1) == i1)
    return out


def test_embedded_registry_answers_like_confluent(confluent_registry_url: str) -> None:
    with EmbeddedSchemaRegistry() as emb:
        assert _behaviour(emb.url) == _behaviour(confluent_registry_url)
