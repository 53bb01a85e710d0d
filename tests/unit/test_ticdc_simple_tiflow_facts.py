"""TiCDC Simple: points where the reference and the checks follow pingcap/tiflow's code to the
byte: Avro default strings, the Kafka record overhead of large messages, `omitempty` lengths,
what an ERASE carries, the claim-check file, and the DECIMAL scale in Avro captures."""

from __future__ import annotations

import base64
import decimal
import json
import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from helpers import check_capture, encode, problems, run_workloads

from conformance.checks import Outcome
from conformance.encoders import Record
from conformance.encoders.spi import EncoderContext, ManualClock
from conformance.model import Column, Default, DefaultKind, Index, Kind, SqlType, Table
from conformance.model.events import Ddl, DdlKind, Op, RowChange, Transaction, Watermark, Workload, tso
from conformance.model.sql import create_table
from conformance.protocols import get_protocol
from conformance.protocols.ticdc_simple import codec, spec
from conformance.protocols.ticdc_simple.checks.values import format_problem
from conformance.protocols.ticdc_simple.decoder import decode, table_schema_of
from conformance.protocols.ticdc_simple.encoder import TiCDCSimpleEncoder
from conformance.protocols.ticdc_simple.spec import Family

P = "ticdc-simple"
PROTOCOL = get_protocol(P)
T0 = 1_767_225_600_000  # ms: 2026-01-01, the in-process clock's start
ENCODINGS = ["json", "avro"]


def _table(*cols: tuple[str, SqlType, Default], version: int, name: str = "t", table_id: int = 41) -> Table:
    columns = (Column("id", SqlType(Kind.INT), False, column_id=1),
               *(Column(n, t, True, d, column_id=i + 2) for i, (n, t, d) in enumerate(cols)))
    return Table("db", name, columns, (Index("PRIMARY", ("id",), primary=True, index_id=1),), table_id=table_id,
                 version=version)


def _workload(t: Table, rows: list[dict[str, Any]], *, drop: bool = False) -> Workload:
    """CREATE TABLE, one INSERT per row, then (drop) DROP TABLE, and a watermark."""
    events: list[Any] = [Ddl(DdlKind.CREATE_TABLE, t.version, create_table(t), t, None, t.database)]
    ts = T0 + 2000
    for row in rows:
        events.append(Transaction(tso(ts), (RowChange(Op.INSERT, t, None, row),)))
        ts += 1000
    if drop:
        events.append(Ddl(DdlKind.DROP_TABLE, tso(ts), f"DROP TABLE `{t.database}`.`{t.name}`", None, t, t.database))
        ts += 1000
    events.append(Watermark(tso(ts)))
    return Workload(tuple(events), seed="hand-made", shard=0)


BIT8_FF = _table(("b", SqlType(Kind.BIT, length=8), Default(DefaultKind.VALUE, 0xFF)), version=tso(T0 + 1000))


# -- item 3: the BIT default in the Avro TableSchema ------------------------------------------------------

def test_avro_bit_default_is_the_raw_byte_as_goavro_writes_it() -> None:
    """goavro writes a Go string's bytes: the default b'11111111' is the one byte 0xff (length
    1: `02 ff`), not the UTF-8 of U+00FF (`04 c3 bf`)."""
    ts = spec.table_schema(BIT8_FF, avro=True)
    assert ts["columns"][1]["default"] == b"\xff"
    raw = codec.encode_avro("BOOTSTRAP", {"version": 1, "buildTs": T0, "tableSchema": ts})
    assert b"\x02\xff" in raw and b"\xc3\xbf" not in raw
    m = decode(raw, "none", True)
    assert m.ok, m.error
    got = table_schema_of(m)
    assert got is not None and got["columns"][1]["default"] == b"\xff"


def test_tiflows_avro_bytes_for_a_bit_default_check_clean() -> None:
    """The reference's Avro log (BOOTSTRAP and DDL with the raw 0xff) passes every check, in a
    run and as a capture; the JSON default stays the number 255."""
    options = {"encoding-format": "avro"}
    w = _workload(BIT8_FF, [{"id": 1, "b": 3}])
    tally = run_workloads("reference", [w], options, protocol=P)
    assert problems(tally) == {}
    assert tally.checks["ticdc-simple.schema.default"].passed > 0
    records = encode("reference", PROTOCOL.resolve_options(options), w, protocol=P)
    assert any(r.value and b"\x02\xff" in r.value for r in records)
    assert problems(check_capture(records, options, protocol=P, partitions=3)) == {}
    assert spec.table_schema(BIT8_FF, avro=False)["columns"][1]["default"] == 255


def test_a_utf8_rendering_of_the_bit_default_is_caught() -> None:
    """What the reference used to write (the default as latin-1 text, which fastavro writes as
    UTF-8: `04 c3 bf`) is not TiCDC's default, and schema.default says so."""
    from conformance.harness.stages import new_tally
    from conformance.protocols.base import ENCODE

    class Utf8Default(TiCDCSimpleEncoder):
        def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
            for k in ("tableSchema", "preTableSchema"):
                ts = avro_payload.get(k)
                if isinstance(ts, dict):
                    ts["columns"] = [{**c, "default": c["default"].decode("latin-1").encode("utf-8")}
                                     if isinstance(c["default"], bytes) else c for c in ts["columns"]]
            return super().serialize(kind, json_msg, avro_payload)

    options = PROTOCOL.resolve_options({"encoding-format": "avro"})
    enc = Utf8Default()
    enc.open(EncoderContext(options, clock=ManualClock(T0 / 1000), partitions=1))
    create = _workload(BIT8_FF, []).events[0]
    records = [Record(r.topic, r.key, r.value, r.partition, offset=0) for r in enc.encode(create)]
    assert records[0].value is not None and b"\x04\xc3\xbf" in records[0].value
    tally = new_tally(PROTOCOL)
    checker = PROTOCOL.checker(options, None, tally, ENCODE, partitions=1)
    checker.check_event(create, records)
    f = next(iter(tally.checks["ticdc-simple.schema.default"].failures.values()))
    assert (f.expected, f.actual) == ("0xff", "0xc3bf")


# -- item 4: Kafka's record overhead counts toward max-message-bytes ---------------------------------------

WIDE = _table(("v", SqlType(Kind.VARCHAR, length=400), Default()), version=tso(T0 + 1000))


def _insert_value(max_bytes: int) -> bytes:
    enc = TiCDCSimpleEncoder()
    enc.open(EncoderContext({"large-message-handle-option": "handle-key-only", "max-message-bytes": str(max_bytes)},
                            clock=ManualClock(T0 / 1000 + 1), partitions=1))
    tx = Transaction(tso(T0 + 1000), (RowChange(Op.INSERT, WIDE, None, {"id": 1, "v": "x" * 100}),))
    out = [r.value for r in enc.encode(tx) if r.value and b'"INSERT"' in r.value]
    assert len(out) == 1 and out[0] is not None
    return out[0]


def test_reference_counts_the_36_byte_record_overhead() -> None:
    """simple/encoder.go compares Message.Length() = len(key) + len(value) + 36 with
    max-message-bytes: a value of exactly max-message-bytes is already too large."""
    assert spec.MAX_RECORD_OVERHEAD == 5 * 5 + 10 + 1  # 5*MaxVarintLen32 + MaxVarintLen64 + 1
    full = _insert_value(10**6)
    assert b'"handleKeyOnly"' not in full
    for max_bytes in (len(full), len(full) + 35):
        assert b'"handleKeyOnly":true' in _insert_value(max_bytes), max_bytes
    assert _insert_value(len(full) + 36) == full


@pytest.mark.parametrize(("extra", "fails"), [(0, False), (-1, True), (-36, True)])
def test_large_message_size_counts_the_overhead(extra: int, fails: bool) -> None:
    """max-message-bytes = len(value) + 36 + extra: only a value within 36 bytes of the limit fits."""
    value = json.dumps({"version": 1, "database": "db", "table": "t", "tableID": 41, "type": "INSERT",
                        "commitTs": tso(T0 + 1000), "buildTs": T0 + 1000, "schemaVersion": tso(T0),
                        "data": {"id": "1", "v": "x" * 100}}, separators=(",", ":")).encode()
    options = {"max-message-bytes": str(len(value) + 36 + extra)}
    tally = check_capture([Record("tidb_simple", None, value, 0, offset=0)], options, protocol=P, partitions=1)
    t = tally.checks["ticdc-simple.large-message.size"]
    assert t.outcome is (Outcome.FAILED if fails else Outcome.PASSED)


# -- item 5: `length,omitempty` --------------------------------------------------------------------------

ZERO = _table(("c", SqlType(Kind.CHAR, length=0), Default()), ("b", SqlType(Kind.BINARY, length=0), Default()),
              version=tso(T0 + 1000))


def test_zero_length_is_omitted_in_json_and_kept_in_avro() -> None:
    """simple/message.go dataType: `Length int json:"length,omitempty"`; Avro writes length always."""
    for t in (SqlType(Kind.CHAR, length=0), SqlType(Kind.BINARY, length=0), SqlType(Kind.VARCHAR, length=0)):
        assert "length" not in spec.data_type_json(t)
        assert spec.data_type_avro(t)["length"] == 0
    assert spec.data_type_json(SqlType(Kind.CHAR, length=1))["length"] == 1


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_char0_and_binary0_pass_every_check(encoding: str) -> None:
    w = _workload(ZERO, [{"id": 1, "c": "", "b": b""}, {"id": 2, "c": None, "b": None}])
    options = {"encoding-format": encoding}
    tally = run_workloads("reference", [w], options, protocol=P)
    assert problems(tally) == {}
    assert tally.checks["ticdc-simple.schema.data-type"].passed > 0
    records = encode("reference", PROTOCOL.resolve_options(options), w, protocol=P)
    tally = check_capture(records, options, protocol=P, partitions=3)
    assert problems(tally) == {}
    assert tally.checks["ticdc-simple.value.binary"].passed > 0


def _zero_bootstrap(length: Any) -> dict[str, Any]:
    dt: dict[str, Any] = {"mysqlType": "binary", "charset": "binary", "collate": "binary"}
    if length is not None:
        dt["length"] = length
    return {"version": 1, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": T0, "tableSchema": {
        "schema": "db", "table": "t", "tableID": 41, "version": tso(T0), "columns": [
            {"name": "b", "dataType": dt, "nullable": False, "default": None}],
        "indexes": [{"name": "primary", "unique": True, "primary": True, "nullable": False, "columns": ["b"]}]}}


def _dml_b(value: str) -> dict[str, Any]:
    return {"version": 1, "database": "db", "table": "t", "tableID": 41, "type": "INSERT",
            "commitTs": tso(T0 + 1000), "buildTs": T0 + 1000, "schemaVersion": tso(T0), "data": {"b": value}}


@pytest.mark.parametrize(("length", "value", "schema_ok", "value_ok"), [
    (None, "", True, True),  # Go's output for BINARY(0): no length, an empty value
    (0, "", False, True),  # "length":0 is what Go never writes
    (None, "AA==", True, False),  # absent = 0: a one-byte value is not a BINARY(0) value
    (1, "AA==", True, True),
])
def test_capture_reads_an_absent_length_as_zero(length: Any, value: str, schema_ok: bool, value_ok: bool) -> None:
    msgs = [_zero_bootstrap(length), _dml_b(value)]
    records = [Record("tidb_simple", None, json.dumps(m).encode(), 0, offset=i) for i, m in enumerate(msgs)]
    tally = check_capture(records, protocol=P, partitions=1)
    assert (tally.checks["ticdc-simple.schema.table-schema"].outcome is Outcome.PASSED) is schema_ok
    assert (tally.checks["ticdc-simple.value.binary"].outcome is Outcome.PASSED) is value_ok


# -- item 6: ERASE (DROP TABLE) -----------------------------------------------------------------------------

def _erase(records: list[Record], avro: bool) -> list[Any]:
    out = []
    for r in records:
        m = decode(r.value, "none", avro)
        if m.kind == "DDL" and m.type == "ERASE":
            out.append(m)
    return out


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_drop_table_erase_carries_the_dropped_table_in_both_schemas(encoding: str) -> None:
    """tiflow: buildDDLEvents takes TableInfo from the DROP TABLE job's binlog (the dropped table)
    and PreTableInfo from the snapshot; newDDLMessage writes both. The reference does so, and a
    hand-made CREATE / INSERT / DROP TABLE workload passes every check."""
    options = {"encoding-format": encoding}
    w = _workload(WIDE, [{"id": 1, "v": "a"}], drop=True)
    tally = run_workloads("reference", [w], options, protocol=P)
    assert problems(tally) == {}
    assert tally.checks["ticdc-simple.ddl.fields"].passed >= 2 * 3  # CREATE and ERASE, 3 partitions
    records = encode("reference", PROTOCOL.resolve_options(options), w, protocol=P)
    erase = _erase(records, encoding == "avro")
    assert len(erase) == 3
    for m in erase:
        ts, pre = table_schema_of(m), table_schema_of(m, "preTableSchema")
        assert ts is not None and pre is not None
        assert (ts["schema"], ts["table"], ts["tableID"], ts["version"]) == ("db", "t", 41, WIDE.version)
        assert ts == pre
    assert problems(check_capture(records, options, protocol=P, partitions=3)) == {}


def test_an_erase_without_table_schema_is_caught() -> None:
    """What the reference used to send (preTableSchema only) is not what TiCDC sends."""
    w = _workload(WIDE, [{"id": 1, "v": "a"}], drop=True)
    records = encode("reference", PROTOCOL.resolve_options({}), w, protocol=P)
    edited = []
    for r in records:
        m = json.loads(r.value or b"{}")
        if m.get("type") == "ERASE":
            m.pop("tableSchema")
        edited.append(Record(r.topic, r.key, json.dumps(m).encode(), r.partition, offset=r.offset))
    tally = check_capture(edited, protocol=P, partitions=3)
    f = next(iter(tally.checks["ticdc-simple.ddl.fields"].failures.values()))
    assert "ERASE without tableSchema" in f.message


# -- item 7: the claim-check file ------------------------------------------------------------------------

UUID4_JSON = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.json")


def _claims(tmp_path: Path, name: str) -> tuple[list[Record], dict[str, str]]:
    uri = f"file://{tmp_path}/{name}"
    options = {"large-message-handle-option": "claim-check", "max-message-bytes": "400",
               "claim-check-storage-uri": uri}
    rows = [{"id": i, "v": "x" * 300} for i in range(3)]
    return encode("reference", PROTOCOL.resolve_options(options), _workload(WIDE, rows), protocol=P), options


def test_claim_check_files_are_gos_compact_json_under_uuid4_names(tmp_path: Path) -> None:
    records, options = _claims(tmp_path, "a")
    files = sorted((tmp_path / "a").iterdir())
    assert len(files) == 3
    for f in files:
        assert UUID4_JSON.fullmatch(f.name), f.name
        u = uuid.UUID(f.name.removesuffix(".json"))
        assert u.version == 4 and u.variant == uuid.RFC_4122
        raw = f.read_bytes()
        value = json.loads(raw)["value"]
        # json.Marshal(ClaimCheckMessage{Key: nil, Value: …}): compact, []byte as base64.
        assert raw == b'{"key":null,"value":"' + value.encode() + b'"}'
        assert decode(base64.b64decode(value), "none", False).ok
    locations = [json.loads(r.value)["claimCheckLocation"] for r in records if r.value and b"claimCheck" in r.value]
    assert sorted(loc.rsplit("/", 1)[1] for loc in locations) == [f.name for f in files]
    assert problems(check_capture(records, options, protocol=P, partitions=3)) == {}
    # Deterministic: the same workload names its files the same way.
    again, _ = _claims(tmp_path, "b")
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [f.name for f in files]
    assert len(again) == len(records)


def _renamed_claim(tmp_path: Path, directory: str, new_name: str) -> tuple[list[Record], dict[str, str]]:
    """The reference's first claim-check message, its file renamed to `new_name`."""
    records, options = _claims(tmp_path, directory)
    for r in records:
        m = json.loads(r.value or b"{}")
        loc = m.get("claimCheckLocation")
        if loc:
            (tmp_path / directory / loc.rsplit("/", 1)[1]).rename(tmp_path / directory / new_name)
            m["claimCheckLocation"] = f"{options['claim-check-storage-uri']}/{new_name}"
            return [Record(r.topic, r.key, json.dumps(m).encode(), r.partition, offset=0)], options
    raise AssertionError("no claim-check message")


@pytest.mark.parametrize(("name", "ok"), [
    ("3b241101-e2bb-4255-8caf-4136c566a962.json", True),  # TiCDC's names are random: any v4 will do
    ("00000000-0000-4000-b000-000000000000.json", True),
    (f"{uuid.uuid5(uuid.NAMESPACE_URL, 'x')}.json", False),  # version 5
    ("3b241101-e2bb-4255-cacf-4136c566a962.json", False),  # not the RFC 4122 variant
    ("3B241101-E2BB-4255-8CAF-4136C566A962.json", False),  # Go prints lower case
])
def test_claim_check_accepts_any_uuid4_name_and_only_those(name: str, ok: bool, tmp_path: Path) -> None:
    records, options = _renamed_claim(tmp_path, "c", name)
    tally = check_capture(records, options, protocol=P, partitions=1)
    want = Outcome.PASSED if ok else Outcome.FAILED
    assert tally.checks["ticdc-simple.large-message.claim-check"].outcome is want


# -- item 8: the DECIMAL scale in Avro captures ----------------------------------------------------------

@pytest.mark.parametrize("avro", [False, True])
@pytest.mark.parametrize(("value", "ok"), [("1.50", True), ("1.5", False), ("-0.05", True), ("2", False)])
def test_capture_checks_the_decimal_scale_in_both_encodings(avro: bool, value: str, ok: bool) -> None:
    """The Avro DataType keeps `decimal` for DECIMAL (avro.go newTableSchemaMap), so the scale
    is judged as in JSON."""
    o = spec.SimpleOptions.from_options(PROTOCOL.resolve_options({"encoding-format": "avro" if avro else "json"}))
    dt = {"mysqlType": "decimal", "charset": "binary", "collate": "binary", "length": 10, "decimal": 2}
    problem = format_problem(Family.DECIMAL, dt, value, o, avro)
    assert (problem is None) is ok, problem


def test_avro_decimal_capture_with_the_wrong_scale_fails() -> None:
    t = _table(("d", SqlType(Kind.DECIMAL, precision=10, scale=2), Default()), version=tso(T0 + 1000))
    options = {"encoding-format": "avro"}
    records = encode("reference", PROTOCOL.resolve_options(options), _workload(t, [{"id": 1, "d": decimal.Decimal("1.50")}]),
                     protocol=P)
    assert problems(check_capture(records, options, protocol=P, partitions=3)) == {}

    class Normalized(TiCDCSimpleEncoder):
        def row_values(self, table: Table, row: Any, *, avro: bool, key_only: bool) -> dict[str, Any]:
            out = super().row_values(table, row, avro=avro, key_only=key_only)
            if "d" in out and out["d"] is not None:
                out["d"] = ("string", out["d"][1].rstrip("0"))
            return out

    enc = Normalized()
    enc.open(EncoderContext(PROTOCOL.resolve_options(options), clock=ManualClock(T0 / 1000 + 5), partitions=1))
    out: list[Record] = []
    for e in _workload(t, [{"id": 1, "d": decimal.Decimal("1.50")}]).events:
        out += enc.encode(e)
    out = [Record(r.topic, r.key, r.value, r.partition, offset=i) for i, r in enumerate(out)]
    tally = check_capture(out, options, protocol=P, partitions=1)
    f = next(iter(tally.checks["ticdc-simple.value.decimal"].failures.values()))
    assert "fractional digits" in f.message
