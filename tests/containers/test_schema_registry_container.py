"""The embedded registry against the real Confluent Schema Registry image: same answers."""

from __future__ import annotations

import pytest

from conformance.infra.registry import EmbeddedSchemaRegistry, IncompatibleSchema, RegistryClient

V1 = '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"a","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}}]}'
V2_OK = '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"a","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}},{"default":null,"name":"b","type":["null","string"]}]}'
V2_BAD = '{"type":"record","name":"t","namespace":"default.db","fields":[{"name":"a","type":{"type":"int","connect.parameters":{"tidb_type":"INT"}}},{"name":"c","type":"string"}]}'


@pytest.fixture(scope="module")
def confluent_registry_url():  # type: ignore[no-untyped-def]
    from conformance.infra.registry.container import schema_registry_container

    with schema_registry_container() as url:
        yield url


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


def test_pipeline_over_container_kafka_and_registry(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from conformance.cli.main import main

    code = main(["run", "--kafka", "container://", "--registry", "container://", "--no-spark", "--no-matrix",
                 "--examples", "3", "--seed", "1", "--report-dir", str(tmp_path)])
    assert code == 0


@pytest.mark.parametrize("level", ["BACKWARD", "FULL_TRANSITIVE"])
def test_confluent_registry_agrees_with_the_predicted_verdicts(confluent_registry_url: str, level: str) -> None:
    """Issue 15: the Confluent image refuses and accepts exactly what the rules predict, on
    generated schema evolutions (registry.verdict holds against it, as against the embedded one)."""
    from helpers import problems, run_encoder, shape_with

    tally = run_encoder("reference", {"registry-compatibility": level}, workloads=25, seed=f"confluent-{level}",
                        shape=shape_with(ddl_rate=0.4), registry=RegistryClient(confluent_registry_url))
    assert problems(tally) == {}
    assert tally.checks["ticdc-avro.registry.verdict"].passed == 25
