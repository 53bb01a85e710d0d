"""Connect data as Confluent's AvroConverter writes it (`debezium/connect_avro.py`): checked against
the converter itself where the `.[debezium]` extra brings its jars (AvroData 7.0.16 through
JPype: the real implementation is the oracle), and round trips everywhere."""

from __future__ import annotations

import json
from typing import Any

import pytest

from conformance.model.events import Ddl, Transaction
from conformance.protocols import get_protocol
from conformance.protocols.debezium import connect_avro as ca
from conformance.protocols.debezium import spec
from conformance.strategies import sample_workload
from conformance.strategies.history import shape_for

DBZ = get_protocol("debezium")


def tables(n: int = 30) -> list[Any]:
    """Every table version of `n` generated PostgreSQL workloads."""
    shape = shape_for("postgresql", kinds=DBZ.capabilities.kinds)
    out = {}
    for shard in range(n):
        for e in sample_workload("avro-oracle", shard, shape).events:
            if isinstance(e, Transaction):
                for ch in e.changes:
                    out[(shard, ch.table.qualified_name, ch.table.version)] = ch.table
            elif isinstance(e, Ddl) and e.table is not None:
                out[(shard, e.table.qualified_name, e.table.version)] = e.table
    return list(out.values())


OPTION_SETS = [
    {"field.name.adjustment.mode": "avro_unicode", "schema.name.adjustment.mode": "avro_unicode"},
    {"field.name.adjustment.mode": "avro_unicode", "schema.name.adjustment.mode": "avro_unicode",
     "decimal.handling.mode": "string", "time.precision.mode": "connect", "binary.handling.mode": "hex"},
    {"field.name.adjustment.mode": "avro", "schema.name.adjustment.mode": "avro",
     "decimal.handling.mode": "double", "time.precision.mode": "adaptive_time_microseconds"},
]


def connect_schemas(options: dict[str, str]) -> list[dict[str, Any]]:
    o = spec.DbzOptions.from_options(DBZ.resolve_options(options))
    out = []
    for t in tables():
        topic = spec.topic_name(o, t.database, t.name)
        out.append(spec.envelope_schema(t, topic, o))
        if spec.key_columns(t):
            out.append(spec.key_schema(t, topic, o))
    out += [spec.TX_KEY_SCHEMA, spec.TX_VALUE_SCHEMA]
    return out


def test_round_trip_through_avro_keeps_the_connect_schema_and_the_payload() -> None:
    for options in OPTION_SETS:
        for s in connect_schemas(options):
            assert ca.from_avro_schema(ca.to_avro_schema(s)) == s, s.get("name")


def test_a_named_type_optional_in_one_field_and_required_in_another_reads_back_as_it_was() -> None:
    vsd = {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "version": 1,
           "doc": "Variable scaled decimal", "fields": [{"type": "int32", "optional": False, "field": "scale"},
                                                         {"type": "bytes", "optional": False, "field": "value"}]}
    s = {"type": "struct", "name": "a.Value", "optional": False,
         "fields": [{**vsd, "optional": True, "field": "x"}, {**vsd, "optional": False, "field": "y"}]}
    avro = ca.to_avro_schema(s)
    assert avro["fields"][1]["type"] == "io.debezium.data.VariableScaleDecimal"  # a reference, required
    assert ca.from_avro_schema(avro) == s


def test_names_avro_refuses_fail_as_the_converter_does() -> None:
    s = {"type": "struct", "name": "a.Value", "optional": False,
         "fields": [{"type": "int32", "optional": False, "field": "x-1.y"}]}
    with pytest.raises(ca.AvroNameError, match="x-1.y"):
        ca.to_avro_schema(s)


def test_adjustment_modes_follow_debeziums_name_adjuster() -> None:
    assert ca.adjust("x-1.y", "avro", field=True) == "x_1_y"
    assert ca.adjust("9lives", "avro", field=True) == "_9lives"
    assert ca.adjust("名前84", "avro_unicode", field=True) == "_u540d_u524d84"
    assert ca.adjust("a_b", "avro_unicode", field=True) == "a_u005fb"
    assert ca.adjust("🦀", "avro_unicode", field=True) == "_ud83e_udd80"
    assert ca.adjust("cdc.x-y.t", "avro", field=False) == "cdc.x_y.t"
    assert ca.adjust("cdc.x-y.t", "none", field=False) == "cdc.x-y.t"


# -- the oracle: Confluent's own AvroData, where the extra is installed --------------------------------

@pytest.fixture(scope="module")
def avro_data() -> Any:
    from conformance.protocols.debezium.engine import available

    if available() is not None:
        pytest.skip(str(available()))
    from conformance.protocols.debezium.engine import jvm_avro_data

    return jvm_avro_data()


@pytest.mark.parametrize("options", OPTION_SETS, ids=["unicode", "string-connect-hex", "avro-double"])
def test_every_generated_schema_is_what_confluents_avrodata_makes(avro_data: Any, options: dict[str, str]) -> None:
    schemas = connect_schemas(options)
    assert len(schemas) > 60
    for s in schemas:
        want = json.loads(avro_data(json.dumps(s)))
        assert ca.first_difference(ca.normal(want), ca.normal(ca.to_avro_schema(s))) is None, s.get("name")


NAMES = ["名前84", "x-1", "ñame", "_x", "a🦀", "Ⅷx", "9lives", "a_b", "Ab9", "x y", "é", "٣x", "x٣", "ǅx", "ʰx"]


def test_names_java_accepts_are_the_ones_java_avro_accepts(avro_data: Any) -> None:
    from conformance.model.avro_names import java_valid_name

    for name in NAMES:
        s = {"type": "struct", "name": "a.Value", "optional": False,
             "fields": [{"type": "int32", "optional": False, "field": name}]}
        try:
            avro_data(json.dumps(s))
            java = True
        except Exception:  # noqa: BLE001 - SchemaParseException through JPype
            java = False
        assert java_valid_name(name) is java, name


def test_the_embedded_registry_takes_the_namespaces_java_takes() -> None:
    from conformance.infra.registry.compat import parse_schema
    from conformance.infra.registry.errors import SchemaTextError

    ok = {"type": "record", "name": "Envelope", "namespace": "cdc.db1.9lives-x", "fields": [{"name": "a", "type": "int"}]}
    assert parse_schema(json.dumps(ok)).avro.fullname == "cdc.db1.9lives-x.Envelope"
    with pytest.raises(SchemaTextError, match="9lives"):
        parse_schema(json.dumps({**ok, "name": "9lives"}))
