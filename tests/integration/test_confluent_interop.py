"""Records from the reference encoder decode with confluent_kafka's own AvroDeserializer."""

from __future__ import annotations

import decimal
import json
import struct

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from fastavro._schema_common import SchemaParseException

from conformance.encoders.spi import EncoderContext
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.model import Kind
from conformance.protocols.ticdc_avro import spec
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder
from conformance.strategies import sample_workload


def _whole_float_default(schema_text: str) -> bool:
    """A FLOAT/DOUBLE field whose default Go wrote as an integer (3.0 -> 3; notes §1.4)."""
    for f in json.loads(schema_text)["fields"]:
        t = f["type"][0] if isinstance(f["type"], list) else f["type"]
        prim = t.get("type") if isinstance(t, dict) else t
        if prim in ("float", "double") and isinstance(f.get("default"), int):
            return True
    return False


def test_reference_records_decode_with_the_confluent_deserializer() -> None:
    """Every record decodes, except that confluent_kafka's Python deserializer (fastavro) refuses
    a schema whose FLOAT/DOUBLE default is a JSON integer, which TiCDC writes for a whole-number
    default (Go prints float64(3) as 3): a fact about TiCDC and Python consumers, asserted here
    so that it stays known (Apache Avro and Java accept such a default)."""
    with EmbeddedSchemaRegistry() as server:
        ours = RegistryClient(server.url)
        client = SchemaRegistryClient({"url": server.url})
        deser = AvroDeserializer(client)
        o = spec.AvroOptions(extension=True)
        checked = 0
        decimals = 0
        refused = 0
        for shard in range(25):
            enc = TiCDCAvroEncoder()
            enc.open(EncoderContext({"enable-tidb-extension": "true"}, ours, topic_prefix=f"cf{shard}-"))
            for ev in sample_workload("confluent", shard).events:
                for rec in enc.encode(ev):
                    changes = [c for t in [ev] for c in getattr(t, "changes", ())]
                    key = deser(rec.key, SerializationContext(rec.topic, MessageField.KEY))
                    assert isinstance(key, dict)
                    if rec.value is None:
                        continue
                    whole = _whole_float_default(ours.schema_by_id(struct.unpack(">i", rec.value[1:5])[0]))
                    try:
                        value = deser(rec.value, SerializationContext(rec.topic, MessageField.VALUE))
                    except SchemaParseException:
                        assert whole, "fastavro refused a schema without a whole-number float default"
                        refused += 1
                        continue
                    assert not whole
                    assert value["_tidb_op"] in ("c", "u")
                    assert value["_tidb_commit_physical_time"] == value["_tidb_commit_ts"] >> 18
                    # key fields equal the value's
                    assert all(value[k] == v for k, v in key.items())
                    # decimals come back as Decimal with the column's scale
                    table = next(c.table for c in changes if rec.topic == f"cf{shard}-" + spec.substitute_topic(o.topic, c.table.database, c.table.name))
                    for col in table.stored_columns:  # a virtual column is in no row
                        if col.type.kind is Kind.DECIMAL and value[spec.sanitize_name(col.name)] is not None:
                            got = value[spec.sanitize_name(col.name)]
                            assert isinstance(got, decimal.Decimal)
                            assert -got.as_tuple().exponent == col.type.scale
                            decimals += 1
                    checked += 1
        assert checked > 200 and decimals > 10 and refused > 0
