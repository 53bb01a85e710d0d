"""Records from the reference encoder decode with confluent_kafka's own AvroDeserializer."""

from __future__ import annotations

import decimal

from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from conformance.encoders.spi import EncoderContext
from conformance.infra.registry import EmbeddedSchemaRegistry, RegistryClient
from conformance.model import Kind
from conformance.protocols.ticdc_avro import spec
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder
from conformance.strategies import sample_workload


def test_reference_records_decode_with_the_confluent_deserializer() -> None:
    with EmbeddedSchemaRegistry() as server:
        ours = RegistryClient(server.url)
        client = SchemaRegistryClient({"url": server.url})
        deser = AvroDeserializer(client)
        o = spec.AvroOptions(extension=True)
        checked = 0
        decimals = 0
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
                    value = deser(rec.value, SerializationContext(rec.topic, MessageField.VALUE))
                    assert value["_tidb_op"] in ("c", "u")
                    assert value["_tidb_commit_physical_time"] == value["_tidb_commit_ts"] >> 18
                    # key fields equal the value's
                    assert all(value[k] == v for k, v in key.items())
                    # decimals come back as Decimal with the column's scale
                    table = next(c.table for c in changes if spec.substitute_topic(o.topic, c.table.database, c.table.name) in rec.topic)
                    for col in table.columns:
                        if col.type.kind is Kind.DECIMAL and value[spec.sanitize_name(col.name)] is not None:
                            got = value[spec.sanitize_name(col.name)]
                            assert isinstance(got, decimal.Decimal)
                            assert -got.as_tuple().exponent == col.type.scale
                            decimals += 1
                    checked += 1
        assert checked > 200 and decimals > 10
