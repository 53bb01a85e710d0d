"""Container infrastructure through testcontainers: the Kafka image and where its class lives.
The Schema Registry's container is `registry/container.py`, beside the registry."""

from __future__ import annotations

import importlib
from typing import Any


def kafka_container_class() -> Any:
    """testcontainers' KafkaContainer: ``testcontainers.community.kafka`` from 4.15 on (the old
    module warns there), ``testcontainers.kafka`` before. ImportError if neither is installed."""
    try:
        return importlib.import_module("testcontainers.community.kafka").KafkaContainer
    except ImportError:
        return importlib.import_module("testcontainers.kafka").KafkaContainer


KAFKA_IMAGE = "confluentinc/cp-kafka:7.6.1"
