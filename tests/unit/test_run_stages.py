"""The run's stages: what a stage works out once for a unit gives what each topic's judge would."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.encoders import find_encoder
from conformance.harness.encode import MemoryLog
from conformance.harness.run import workload_shape
from conformance.harness.stages import HangLatch, RunSpec, encode_unit, judge_topic, judge_unit
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.protocols import get_protocol

CASES = [
    ("ticdc-avro", "ticdc-avro/reference"),
    ("ticdc-avro", "ticdc-avro/mutant/topic-unsanitized"),
    ("ticdc-avro", "ticdc-avro/mutant/single-topic"),
    ("ticdc-avro", "ticdc-avro/mutant/update-dropped"),
    ("ticdc-simple", "ticdc-simple/reference"),
    ("maxscale-kafkacdc", "maxscale-kafkacdc/reference"),
    ("debezium", "debezium/reference"),
]


def _judged(spec: RunSpec, protocol: str, encoder: str, registry: Any, shard: int) -> tuple[list[Any], list[Any]]:
    info = find_encoder(encoder, protocol)
    log = MemoryLog()
    unit = encode_unit(spec, 0, shard, log, registry, HangLatch(), info=info)
    logs = {t: log.of(t) for t in log.topics()}
    once = judge_unit(spec, unit, logs, {}, registry)
    each = [judge_topic(spec, topic, logs.get(topic, ()), [s for s in unit.sent if s.topic == topic], {}, registry,
                        encoded=unit.encoded, workload=unit.workload)
            for topic in sorted(set(unit.topics) | set(logs))]
    return once, each


def _view(results: list[Any]) -> list[Any]:
    return [({c: t.to_json() for c, t in r.tally.checks.items()}, r.delivery) for r in results]


@pytest.mark.parametrize(("protocol", "encoder"), CASES)
def test_judge_unit_gives_what_each_topic_judged_alone_gives(protocol: str, encoder: str) -> None:
    """judge_unit works out the versions owed once per unit and splits them by topic: its verdicts,
    failures and delivery counts are judge_topic's, each topic selecting its own from the whole."""
    suite = get_protocol(protocol)
    options = suite.resolve_options({})
    with EmbeddedSchemaRegistry() as server, RegistryClient(server.url) as registry:
        spec = RunSpec(protocol, encoder, 11, workload_shape(suite), (tuple(sorted(options.items())),),
                       partitions=suite.capabilities.memory_partitions, run_id="t", registry_url=server.url)
        for shard in range(4):
            once, each = _judged(spec, protocol, encoder, registry, shard)
            assert len(once) == len(each) > 0
            assert _view(once) == _view(each)
