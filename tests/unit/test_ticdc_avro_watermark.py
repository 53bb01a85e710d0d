"""TiCDC Avro control records (avro-enable-watermark): exact bytes and strict decoding."""

from __future__ import annotations

import pytest

from conformance.encoders.spi import EncoderContext
from conformance.infra.inprocess import InProcessRegistry
from conformance.model.events import Ddl, DdlKind, Watermark
from conformance.model.table import Column, Index, Table
from conformance.model.types import Kind, SqlType
from conformance.protocols.ticdc_avro import spec, watermark
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder


def _table(name: str = "t1", db: str = "test") -> Table:
    return Table(db, name, (Column("id", SqlType(Kind.INT), nullable=False),), (Index("PRIMARY", ("id",), primary=True),),
                 table_id=100, version=1)


def test_ddl_record_matches_tiflow_test_decode_ddl_event() -> None:
    # tiflow pkg/sink/codec/avro TestDecodeDDLEvent: ADD COLUMN (ActionType 5) on test.t1, commit ts 1030.
    t = _table()
    d = Ddl(DdlKind.ADD_COLUMN, 1030, "ALTER TABLE test.t1 ADD COLUMN a int", t, t)
    assert watermark.ddl_value(d) == (b'\x01{"query":"ALTER TABLE test.t1 ADD COLUMN a int","type":5,'
                                      b'"schema":"test","table":"t1","commitTs":1030}')
    m = watermark.decode_control(watermark.ddl_value(d))
    assert (m.kind, m.ts, m.problem) == ("ddl", 1030, None)


def test_checkpoint_record_matches_tiflow_test_encode_checkpoint() -> None:
    # tiflow TestEncodeCheckpoint: ts 446266400629063682, big-endian after 0x02.
    v = watermark.checkpoint_value(446266400629063682)
    assert v == b"\x02" + (446266400629063682).to_bytes(8, "big") and len(v) == 9
    m = watermark.decode_control(v)
    assert (m.kind, m.ts, m.problem) == ("checkpoint", 446266400629063682, None)


def test_schema_level_ddl_names_no_table_and_goes_to_the_default_topic() -> None:
    d = Ddl(DdlKind.CREATE_DATABASE, 7, "CREATE DATABASE `a<b>`;", database="a<b>")
    assert watermark.ddl_fields(d) == {"query": "CREATE DATABASE `a<b>`;", "type": 1, "schema": "a<b>",
                                       "table": "", "commitTs": 7}
    assert b"\\u003c" in watermark.ddl_value(d)  # Go escapes < > & in JSON strings
    o = spec.AvroOptions(extension=True, watermark=True, default_topic="dflt")
    assert watermark.ddl_topic(d, o, "p-") == "p-dflt"


def test_rename_goes_to_the_old_topic_and_names_the_new_table() -> None:
    old, new = _table("a"), _table("b")
    d = Ddl(DdlKind.RENAME_TABLE, 9, "RENAME TABLE test.a TO test.b;", new, old)
    o = spec.AvroOptions(extension=True, watermark=True)
    assert watermark.ddl_topic(d, o) == "tidb_test_a"
    assert watermark.ddl_fields(d)["table"] == "b"


def test_checkpoints_go_to_every_active_topic_and_the_default_topic() -> None:
    o = spec.AvroOptions(extension=True, watermark=True)
    reg = InProcessRegistry()
    enc = TiCDCAvroEncoder()
    enc.open(EncoderContext({"enable-tidb-extension": "true", "avro-enable-watermark": "true"}, reg, partitions=2))
    a, b = _table("a"), _table("b")
    assert enc.encode(Ddl(DdlKind.CREATE_TABLE, 5, "CREATE TABLE a", a)) != []
    enc.encode(Ddl(DdlKind.CREATE_TABLE, 6, "CREATE TABLE b", b))
    enc.encode(Ddl(DdlKind.DROP_TABLE, 7, "DROP TABLE a", None, a))
    recs = enc.encode(Watermark(8))
    assert {(r.topic, r.partition) for r in recs} == {("tidb_test_b", 0), ("tidb_test_b", 1),
                                                     (o.default_topic, 0), (o.default_topic, 1)}
    assert all(r.key is None and r.value == watermark.checkpoint_value(8) for r in recs)


def test_without_the_extension_nothing_is_sent() -> None:
    enc = TiCDCAvroEncoder()
    enc.open(EncoderContext({"avro-enable-watermark": "true"}, InProcessRegistry(), partitions=2))
    assert enc.encode(Watermark(8)) == []


MALFORMED = {
    "sorted-keys": b'\x01{"commitTs":1,"query":"q","schema":"s","table":"t","type":3}',
    "missing-key": b'\x01{"query":"q","type":3,"schema":"s","table":"t"}',
    "type-as-string": b'\x01{"query":"q","type":"3","schema":"s","table":"t","commitTs":1}',
    "negative-ts": b'\x01{"query":"q","type":3,"schema":"s","table":"t","commitTs":-1}',
    "not-json": b"\x01{not json",
    "not-utf8": b"\x01\xff\xfe",
    "array": b"\x01[1,2]",
    "spaces": b'\x01{"query": "q", "type": 3, "schema": "s", "table": "t", "commitTs": 1}',
    "html-unescaped": b'\x01{"query":"a<b","type":3,"schema":"s","table":"t","commitTs":1}',
    "checkpoint-short": b"\x02\x00\x01",
    "checkpoint-long": b"\x02" + bytes(9),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_control_records_are_problems_not_exceptions(case: str) -> None:
    m = watermark.decode_control(MALFORMED[case])
    assert m.problem, case


def test_control_records_are_told_apart_like_tiflows_decoder() -> None:
    assert watermark.is_control(None, b"\x01{}") and watermark.is_control(None, b"\x02" + bytes(8))
    assert not watermark.is_control(b"\x00k", b"\x01{}")  # a key means a row
    assert not watermark.is_control(None, b"\x00\x00\x00\x00\x01")  # 0x00: a framed row
    assert not watermark.is_control(None, None) and not watermark.is_control(None, b"")
