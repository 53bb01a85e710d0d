"""A registry schema nested deeper than the checker's reading can follow (Python's recursion
limit) is the encoder's finding, not the suite's crash (Debezium with the Avro converter, and
TiCDC Avro)."""

from __future__ import annotations

import pytest

from conformance.checks.results import Tally
from conformance.encoders.spi import Record
from conformance.harness.capture import DeliveryLogs
from conformance.harness.check import capture_tally, check_log, unnumbered
from conformance.protocols import get_protocol
from conformance.protocols.debezium import decoder

DEEP = {
    "records": '{"type":"record","name":"r0","fields":[{"name":"f","type":' * 400 + '"int"' + "}]}" * 400,
    "arrays": '{"type":"array","items":' * 900 + '"int"' + "}" * 900,
    "lists": "[" * 5000 + "]" * 5000,
}


class _Registry:
    """Every id is the one deep schema, registered under every subject asked about."""

    def __init__(self, text: str) -> None:
        self.text = text

    def schema_by_id(self, schema_id: int) -> str:
        return self.text

    def subjects_for_id(self, schema_id: int, *, fresh: bool = False) -> list[tuple[str, int]]:
        return []


def _check(protocol: str, options: dict[str, str], topic: str, registry: _Registry) -> Tally:
    """A capture check (and its delivery judgement) of three records whose key and value are
    framed with schema id 7."""
    suite = get_protocol(protocol)
    resolved = suite.resolve_options(options)
    tally = capture_tally(suite, "t")
    framed = b"\x00\x00\x00\x00\x07\x02"
    records = [Record(topic, framed, framed, 0, (), None, i) for i in range(3)]
    logs = DeliveryLogs(suite.name, resolved, registry)
    check_log(suite, resolved, registry, unnumbered(records), tally, delivery=logs)
    logs.judge(tally)
    return tally


@pytest.mark.parametrize("name", sorted(DEEP))
def test_a_schema_too_deep_to_read_is_a_finding(name: str) -> None:
    registry = _Registry(DEEP[name])
    view = decoder.SchemaResolver(registry).view(7)
    assert not isinstance(view, str) and view.error == decoder.TOO_DEEP
    tally = _check("debezium", {"profile": "avro"}, "cdc.public.t", registry)
    framing = tally.checks["debezium.avro.framing"]
    assert framing.failed == 3
    assert any(decoder.TOO_DEEP in f.message for f in framing.failures.values())
    assert not any(t.errored for t in tally)


@pytest.mark.parametrize("name", [*sorted(DEEP), "deep-field"])
def test_ticdc_avro_meets_a_schema_too_deep_to_read_with_findings(name: str) -> None:
    from conformance.protocols.ticdc_avro import decoder as avro_decoder

    text = DEEP.get(name) or ('{"type":"record","name":"r","fields":[{"name":"f","type":'
                              + '{"type":"array","items":' * 900 + '"int"' + "}" * 900 + "}]}")
    tally = _check("ticdc-avro", {"enable-tidb-extension": "true"}, "t", _Registry(text))
    assert "ticdc-avro.schema.valid-avro" in tally.failed_ids()
    assert not any(t.errored for t in tally)
    view = avro_decoder.schema_view(7, text)
    if name in ("records", "lists"):
        assert view.error == avro_decoder.TOO_DEEP
    elif name == "arrays":  # JSON that reads, and no record
        assert view.error == "the registered schema is not an Avro record with a fields list"
