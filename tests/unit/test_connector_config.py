"""`--connector-config FILE`: a connector's own configuration as the run's options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.encoders.spi import ConfigurationError
from conformance.protocols import get_protocol
from conformance.protocols.connector_config import read_connector_config

DBZ = get_protocol("debezium")


def test_kafka_connect_json_flat_json_and_properties_are_read(tmp_path: Path) -> None:
    rest = tmp_path / "c.json"
    rest.write_text(json.dumps({"name": "x", "config": {"topic.prefix": "shop", "provide.transaction.metadata": True}}))
    assert read_connector_config(rest) == {"topic.prefix": "shop", "provide.transaction.metadata": "true"}
    flat = tmp_path / "f.json"
    flat.write_text(json.dumps({"decimal.handling.mode": "double"}))
    assert read_connector_config(flat) == {"decimal.handling.mode": "double"}
    props = tmp_path / "c.properties"
    props.write_text("# a comment\n! another\ntopic.prefix = shop\ntime.precision.mode: connect\n"
                     "table.include.list=public.a,\\\n    public.b\n")
    assert read_connector_config(props) == {"topic.prefix": "shop", "time.precision.mode": "connect",
                                            "table.include.list": "public.a,public.b"}
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        read_connector_config(bad)


def test_options_are_taken_connection_properties_left_out_and_the_rest_reported() -> None:
    got = DBZ.connector_options({"topic.prefix": "shop", "database.hostname": "db", "slot.name": "s",
                                 "connector.class": "io.debezium.connector.postgresql.PostgresConnector",
                                 "column.exclude.list": "public.t.c", "value.converter.decimal.format": "NUMERIC"})
    assert got.options == {"topic.prefix": "shop"}
    assert sorted(got.not_modelled) == ["column.exclude.list", "value.converter.decimal.format"]


def test_a_converter_the_protocol_does_not_model_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="ProtobufConverter is not modelled"):
        DBZ.connector_options({"value.converter": "io.confluent.connect.protobuf.ProtobufConverter"})
    got = DBZ.connector_options({"value.converter": "io.confluent.connect.avro.AvroConverter",
                                 "value.converter.schema.registry.url": "http://registry:8081"})
    assert got.options == {"value.converter": "io.confluent.connect.avro.AvroConverter"} and not got.not_modelled


def test_run_takes_the_options_from_the_file_and_option_wins(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                             ) -> None:
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps({"name": "inventory", "config": {
        "database.password": "s3cret", "topic.prefix": "shop", "decimal.handling.mode": "string",
        "provide.transaction.metadata": True, "column.exclude.list": "public.t.c"}}))
    code = main(["run", "--protocol", "debezium", "--connector-config", str(cfg), "--option", "topic.prefix=other",
                 "--kafka", "none", "--examples", "1", "--report-dir", str(tmp_path / "r")])
    out = capsys.readouterr()
    assert code == 0, out.out[-2000:]
    runs = json.loads((tmp_path / "r" / "report.json").read_text())["runs"]
    assert [r["options"]["topic.prefix"] for r in runs] == ["other"] * len(runs)
    assert {r["options"]["decimal.handling.mode"] for r in runs} == {"string"}
    assert {r["options"]["provide.transaction.metadata"] for r in runs} == {"true"}
    assert "column.exclude.list" in out.out and "s3cret" not in out.out + out.err


def test_a_bad_value_in_the_file_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = tmp_path / "c.properties"
    cfg.write_text("decimal.handling.mode=nonsense\n")
    code = main(["check", "--protocol", "debezium", "--input", str(tmp_path / "none.jsonl"),
                 "--connector-config", str(cfg), "--report-dir", str(tmp_path / "r")])
    out = capsys.readouterr()
    assert code == 2 and "decimal.handling.mode" in out.out + out.err


def test_avro_without_name_adjustment_is_refused_for_generated_workloads(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Generated names include ones Avro refuses: asked for explicitly, the run says what to set."""
    code = main(["run", "--protocol", "debezium", "--option", "value.converter=io.confluent.connect.avro.AvroConverter",
                 "--kafka", "none", "--examples", "1", "--report-dir", str(tmp_path)])
    out = capsys.readouterr()
    assert code == 2 and "profile=avro" in out.out + out.err
