"""A real Confluent Schema Registry in Docker, through testcontainers (`container://`).

The Schema Registry keeps its schemas in a Kafka topic, so `container://` starts a Kafka
(KRaft) container and the registry beside it on one Docker network. Where no Docker engine
answers, testcontainers fails within ~0.1 s; that becomes `RegistryUnavailable` with a message
saying what to use instead.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from ..containers import KAFKA_IMAGE, kafka_container_class
from ..urls import redact_text
from .errors import RegistryUnavailable

REGISTRY_IMAGE = "confluentinc/cp-schema-registry:7.6.1"


@contextlib.contextmanager
def schema_registry_container(image: str = REGISTRY_IMAGE, *, startup: float = 180.0) -> Iterator[str]:
    """Yield the URL of a Confluent Schema Registry running in Docker (stopped afterwards)."""
    try:
        docker_exception: type[Exception] = importlib.import_module("docker.errors").DockerException
        from testcontainers.core.container import DockerContainer
        from testcontainers.core.network import Network
        from testcontainers.core.waiting_utils import wait_for_logs
        KafkaContainer = kafka_container_class()  # noqa: N806 - a class
    except ImportError as e:
        raise RegistryUnavailable(f"container:// needs the testcontainers and docker packages ({e}); "
                                  "use embedded:// or an http(s):// registry") from None
    stack = contextlib.ExitStack()
    try:
        try:
            net: Any = stack.enter_context(Network())
        except docker_exception as e:
            raise RegistryUnavailable(
                f"container:// needs a Docker engine; none answers here ({type(e).__name__}: "
                f"{redact_text(str(e))[:200]}). Start Docker (or set DOCKER_HOST), or use embedded://.") from None
        kafka = (KafkaContainer(KAFKA_IMAGE).with_kraft().with_network(net).with_network_aliases("kafka"))
        stack.enter_context(kafka)
        registry = (DockerContainer(image).with_network(net)
                    .with_env("SCHEMA_REGISTRY_HOST_NAME", "schema-registry")
                    .with_env("SCHEMA_REGISTRY_LISTENERS", "http://0.0.0.0:8081")
                    .with_env("SCHEMA_REGISTRY_KAFKASTORE_BOOTSTRAP_SERVERS", "PLAINTEXT://kafka:9092")
                    .with_exposed_ports(8081))
        stack.enter_context(registry)
        wait_for_logs(registry, "Server started", timeout=startup)
        yield f"http://{registry.get_container_host_ip()}:{registry.get_exposed_port(8081)}"
    except RegistryUnavailable:
        raise
    except docker_exception as e:
        raise RegistryUnavailable(f"container:// could not start the registry ({type(e).__name__}: "
                                  f"{redact_text(str(e))[:300]})") from None
    finally:
        stack.close()
