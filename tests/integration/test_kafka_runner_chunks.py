"""A Kafka worker reads its units' logs back a chunk at a time: however many units a chunk holds,
the same verdicts, failures and delivery counts; the cluster's topics listed once per chunk."""

from __future__ import annotations

from typing import Any

import pytest

from conformance.harness import runners
from conformance.harness.runners import KafkaRunner
from conformance.harness.stages import RunSpec
from conformance.infra.kafka import open_kafka
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.protocols import get_protocol
from conformance.strategies import DEFAULT_SHAPE

OPTIONS = tuple(sorted(get_protocol("ticdc-avro").resolve_options({}).items()))


def _run(encoder: str, chunk: int, run_id: str) -> tuple[Any, list[int]]:
    from conformance.harness.kafka_source import LogReader

    listings: list[int] = []
    topics = LogReader.topics

    def counted(self: LogReader) -> list[str]:
        listings.append(1)
        return topics(self)

    with pytest.MonkeyPatch.context() as mp, EmbeddedSchemaRegistry() as reg, open_kafka("embedded://?brokers=1&partitions=3") as k, \
            RegistryClient(reg.url) as registry:
        mp.setattr(runners.KafkaWorker, "CHUNK", chunk)
        mp.setattr(LogReader, "topics", counted)
        spec = RunSpec("ticdc-avro", encoder, "chunks", DEFAULT_SHAPE, (OPTIONS,), partitions=3, run_id=run_id,
                       kafka_config=tuple(k.client_config().items()), registry_url=reg.url)
        (section,) = KafkaRunner(k, registry).run(spec, range(5))
    return section, listings


def _view(section: Any) -> Any:
    return ({t.id: (t.outcome, sorted(f.message for f in t.failures.values())) for t in section.tally},
            section.records, section.notes)


@pytest.mark.parametrize("encoder", ["ticdc-avro/reference", "ticdc-avro/mutant/update-dropped"])
def test_chunks_of_any_size_judge_alike(encoder: str) -> None:
    one, listed_one = _run(encoder, 1, "k1")
    all_, listed_all = _run(encoder, 100, "k1")
    assert _view(one) == _view(all_)
    assert len(listed_one) == 5 and len(listed_all) == 1  # one listing of the cluster's topics per chunk
