"""A subprocess encoder registers its own schemas, as TiCDC does: it gets the registry URL in
`open` and talks to the registry over HTTP (the embedded one, on 127.0.0.1). The TiCDC Avro
reference wrapped as a subprocess gives the verdicts it gives in process, over the same seeds."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import counts, problems, run_info

from conformance.encoders import find_encoder
from conformance.encoders.subprocess import command_encoder
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.strategies import sample_workload

AVRO = "ticdc-avro"
SERVE = [sys.executable, "-m", "conformance.encoders.serve", "--encoder"]


@pytest.fixture()
def registries() -> Iterator[tuple[Any, Any]]:
    """Two fresh registries, so that both runs see the same schema ids."""
    with EmbeddedSchemaRegistry() as a, EmbeddedSchemaRegistry() as b:
        yield a, b


@pytest.mark.parametrize("options", [{}, {"enable-tidb-extension": "true", "avro-enable-watermark": "true"}],
                         ids=["defaults", "extension-watermark"])
def test_the_avro_reference_through_the_protocol_gives_the_in_process_verdicts(
        registries: tuple[Any, Any], options: dict[str, str]) -> None:
    in_reg, sub_reg = registries
    ws = [sample_workload("avro-parity", i) for i in range(6)]
    in_process = run_info(find_encoder("reference", AVRO), ws, options, protocol=AVRO,
                          registry=RegistryClient(in_reg.url))
    # The runner does not put the registry URL in the context yet: the EncoderInfo carries it.
    info = command_encoder(SERVE + ["ticdc-avro/reference"], protocol=AVRO, registry_url=sub_reg.url)
    through_pipe = run_info(info, ws, options, protocol=AVRO, registry=RegistryClient(sub_reg.url))
    assert problems(in_process) == {}
    assert counts(through_pipe) == counts(in_process)
    # The subprocess itself registered every schema the checks read.
    def registered(reg: Any) -> list[tuple[str, str]]:  # each run has its own topic prefix
        return [(subject.split("-", 1)[1], schema) for subject, schema in reg.registrations]

    assert registered(sub_reg) and registered(sub_reg) == registered(in_reg)


def test_a_registry_that_is_down_is_reported_by_the_subprocess(registries: tuple[Any, Any]) -> None:
    """The encoder cannot register: as in process, a finding against the run, named clearly."""
    reg, _ = registries
    url = reg.url
    reg.stop()
    ws = [sample_workload("avro-down", 0)]
    info = command_encoder(SERVE + ["ticdc-avro/reference"], protocol=AVRO, registry_url=url)
    tally = run_info(info, ws, protocol=AVRO, registry=RegistryClient(url))
    in_process = run_info(find_encoder("reference", AVRO), ws, protocol=AVRO, registry=RegistryClient(url))
    assert set(problems(tally)) == set(problems(in_process)) != set()
