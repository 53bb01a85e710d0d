"""The TiCDC Avro reference against golden data from pingcap/tiflow (fixtures/ticdc/avro)."""

from __future__ import annotations

import decimal
import io
import struct

import fastavro
import pytest
from golden import AVRO_VECTORS, golden_table, load, sql_type

from conformance.model import Column, Kind, SqlType, Table, gojson
from conformance.model.values import bit_bytes_min, decimal_unscaled, to_float32, twos_complement_min
from conformance.protocols.ticdc_avro import spec
from conformance.protocols.ticdc_avro.encoder import TiCDCAvroEncoder

CHECKSUM = {"enable-tidb-extension": "true", "integrity-check-level": "correctness",
            "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"}
V650_TABLE = dict(name="rowtoavroschema", with_id=False, elements=("a,", "b"))

GOLDEN = [
    ("schema_value_no_extension.v8x", {}, {}),
    ("schema_value_with_extension.v8x", {"enable-tidb-extension": "true"}, {}),
    ("schema_value_with_extension_checksum.v8x", CHECKSUM, {}),
    ("schema_value_no_extension.v6.5.0", {"profile": "v6.5.0"}, V650_TABLE),
    ("schema_value_with_extension.v6.5.0", {"profile": "v6.5.0", "enable-tidb-extension": "true"}, V650_TABLE),
]


def _opts(options: dict[str, str]) -> spec.AvroOptions:
    from conformance.protocols import get_protocol

    return spec.AvroOptions.from_options(get_protocol("ticdc-avro").resolve_options(options))


@pytest.mark.parametrize(("name", "options", "table_kw"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_value_schema_is_byte_exact(name: str, options: dict[str, str], table_kw: dict) -> None:
    table = golden_table(**table_kw)
    got = gojson.dumps(spec.schema(table, "value", _opts(options)))
    assert got == (AVRO_VECTORS / f"{name}.compact.json").read_text(encoding="utf-8").strip()


@pytest.mark.parametrize(("name", "options", "table_kw"), GOLDEN, ids=[g[0] for g in GOLDEN])
def test_golden_indented_form_is_the_same_schema(name: str, options: dict[str, str], table_kw: dict) -> None:
    import json

    table = golden_table(**table_kw)
    want = json.loads((AVRO_VECTORS / f"{name}.indented.json").read_text(encoding="utf-8"))
    assert spec.schema(table, "value", _opts(options)) == want


def test_encoder_registers_the_golden_text() -> None:
    """What the encoder POSTs is exactly the golden compact text."""
    from conformance.encoders.spi import EncoderContext
    from conformance.infra.inprocess import InProcessRegistry

    reg = InProcessRegistry()
    enc = TiCDCAvroEncoder()
    enc.open(EncoderContext({"enable-tidb-extension": "true"}, reg))
    table = golden_table()
    enc.plan(table, "t", "value")
    assert reg.server is not None
    subject, text = reg.server.registrations[-1]
    assert subject == "t-value"
    assert text == (AVRO_VECTORS / "schema_value_with_extension.v8x.compact.json").read_text(encoding="utf-8").strip()


COLUMNS = load("column_vectors.json")["columns"]


def _native_of(entry: dict) -> object:
    n = entry["expected_native"]
    if "hex" in n:
        return bytes.fromhex(n["hex"])
    if n["go"] == "[]byte":
        return n["utf8"].encode("utf-8")
    if n["go"] == "*big.Rat":
        return None  # checked through the primitive vectors
    if n["go"] == "float32":
        return to_float32(n["v"])
    return n["v"]


def _input_value(entry: dict, t: SqlType) -> object:
    i = entry["input"]
    from conformance.model.values import Date, DateTime, Json, Time

    if t.kind is Kind.BIT:
        return i["v"]
    if t.kind is Kind.DECIMAL:
        return decimal.Decimal(i["v"])
    if t.kind is Kind.FLOAT:
        return to_float32(i["v"])
    if t.kind is Kind.ENUM:
        return t.elements[i["v"] - 1]
    if t.kind is Kind.SET:
        return tuple(e for n, e in enumerate(t.elements) if i["v"] >> n & 1)
    if t.kind is Kind.JSON:
        import json

        return Json(json.loads(i["v"]))
    if t.kind is Kind.DATE:
        return Date(*(int(x) for x in i["v"].split("-")))
    if t.kind in (Kind.DATETIME, Kind.TIMESTAMP):
        d, tm = i["v"].split(" ")
        return DateTime(*(int(x) for x in d.split("-")), *(int(x) for x in tm.split(":")))
    if t.kind is Kind.TIME:
        h, m, s = (int(x) for x in i["v"].split(":"))
        return Time(False, h, m, s)
    if "utf8" in i:
        return i["utf8"] if t.is_text else i["utf8"].encode("utf-8")
    return i["v"]


@pytest.mark.parametrize("entry", COLUMNS, ids=[c["name"] for c in COLUMNS])
def test_column_vector(entry: dict) -> None:
    t = sql_type(entry)
    col = Column(entry["name"], t, nullable=False, column_id=entry["column_id"])
    o = spec.AvroOptions()
    assert spec.avro_type(col, o) == entry["expected_schema"]
    want = _native_of(entry)
    if want is not None:
        got = spec.native_value(col, _input_value(entry, t), o)
        if isinstance(want, float):
            assert struct.pack("<f", got) == struct.pack("<f", want)
        else:
            assert got == want
    # Nullable twin: ["null", T], default null, non-null values in branch 1.
    twin = Column(entry["name"] + "nullable", t, nullable=True, column_id=entry["column_id"] + 36)
    f = spec.field(twin, o)
    assert f == {"default": None, "name": twin.name, "type": ["null", entry["expected_schema"]]}


@pytest.mark.parametrize("ov", load("column_vectors.json")["mode_overrides"], ids=lambda o: o["column"])
def test_mode_overrides(ov: dict) -> None:
    entry = next(c for c in COLUMNS if c["name"] == ov["column"])
    t = sql_type(entry)
    if t.kind is Kind.DECIMAL:
        # tiflow's test feeds "129012.1230000" to a column of unspecified scale; in TiDB a value
        # carries exactly the column's scale, so the same text comes from DECIMAL(14,7).
        t = SqlType(Kind.DECIMAL, precision=14, scale=7)
    col = Column(entry["name"], t, nullable=False)
    o = spec.AvroOptions.from_options(ov["config"])
    assert spec.avro_type(col, o) == ov["expected_schema"]
    assert spec.native_value(col, _input_value(entry, t), o) == ov["expected_native"]["v"]


def test_decimal_vector_floors_to_scale() -> None:
    """129012.1230000 in DECIMAL(10,0) is written as 129012 (goavro floors big.Rat * 10^scale)."""
    entry = next(c for c in COLUMNS if c["name"] == "decimal")
    col = Column("decimal", sql_type(entry), nullable=False)
    got = spec.native_value(col, decimal.Decimal("129012.1230000"), spec.AvroOptions())
    assert got == bytes.fromhex("01f7f4")


def test_v650_allowed_escaping() -> None:
    v = load("column_vectors.json")["v6.5.0_variant"]
    assert spec.escape_allowed(tuple(v["enum/set elems"])) == v["allowed"]
    assert spec.split_allowed(v["allowed"]) == v["enum/set elems"]


PRIM = load("primitive_encoding_vectors.json")


@pytest.mark.parametrize("v", PRIM["decimal_precise_mode"], ids=lambda v: v["tidb_string"])
def test_decimal_bytes(v: dict) -> None:
    unscaled = decimal_unscaled(decimal.Decimal(v["tidb_string"]), v["scale"])
    assert unscaled == v["unscaled"]
    assert twos_complement_min(unscaled).hex() == v["goavro_bytes_hex"]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema({"type": "bytes"}), twos_complement_min(unscaled))
    assert buf.getvalue().hex() == v["avro_encoded_hex"]


@pytest.mark.parametrize("v", PRIM["bit_values"], ids=lambda v: str(v["uint64"]))
def test_bit_bytes(v: dict) -> None:
    assert bit_bytes_min(v["uint64"]).hex() == v["bytes_hex"]


@pytest.mark.parametrize("v", PRIM["zigzag"], ids=lambda v: str(v["int"]))
def test_zigzag(v: dict) -> None:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema({"type": "long"}), v["int"])
    assert buf.getvalue().hex() == v["zigzag_varint_hex"]


SANITIZE = load("sanitize_name_vectors.json")


@pytest.mark.parametrize(("raw", "want"), SANITIZE["SanitizeName"])
def test_sanitize_name(raw: str, want: str) -> None:
    assert spec.sanitize_name(raw) == want


@pytest.mark.parametrize(("args", "want"), SANITIZE["getAvroNamespace(changefeedNamespace, schema)"])
def test_namespace(args: list[str], want: str) -> None:
    assert spec.namespace(args[1], args[0]) == want


TOPICS = load("topic_expression_vectors.json")


@pytest.mark.parametrize("v", TOPICS["substitute"], ids=lambda v: f"{v['expression']}|{v['schema']}|{v['table']}")
def test_topic_expression(v: dict) -> None:
    assert spec.substitute_topic(v["expression"], v["schema"], v["table"]) == v["topic"]
    assert spec.subject(v["topic"], "value") == v["avro_subject_value"]
    valid = not spec.combination_problems(spec.AvroOptions(topic=v["expression"]), {})
    # Hard-coded topics pass too (not checked by TiCDC), so only the rule form is compared.
    if "{" in v["expression"]:
        assert valid == v["valid_for_avro_rule"]


@pytest.mark.parametrize("expr", TOPICS["invalid_expressions"])
def test_invalid_topic_expressions_are_refused(expr: str) -> None:
    assert spec.combination_problems(spec.AvroOptions(topic=expr), {})


def test_envelope_vector() -> None:
    env = load("envelope_vector.json")
    parsed = fastavro.parse_schema(env["schema"])
    enc = TiCDCAvroEncoder()
    body = enc.write_body(parsed, env["datum"])
    framed = enc.frame(env["confluent"]["schema_id"], body)
    assert framed.hex() == env["confluent"]["message_hex"]
    # and back: the strict decoder reads what the vector holds
    from conformance.protocols.ticdc_avro.decoder import SchemaResolver, decode_framed

    class OneSchema:
        def schema_by_id(self, i: int) -> str:
            import json

            if i != env["confluent"]["schema_id"]:
                raise KeyError(i)
            return json.dumps(env["schema"])

    d = decode_framed(bytes.fromhex(env["confluent"]["message_hex"]), SchemaResolver(OneSchema()))
    assert d.ok and d.error is None and d.datum == env["datum"] and d.schema_id == 8


def test_bytes_reencode_identically() -> None:
    """Every record the reference writes decodes and re-encodes to the same bytes."""
    from helpers import run_workloads  # noqa: F401  (registry wiring)

    from conformance.encoders.spi import EncoderContext
    from conformance.infra.inprocess import InProcessRegistry
    from conformance.protocols.ticdc_avro.decoder import SchemaResolver, decode_framed
    from conformance.strategies import sample_workload

    reg = InProcessRegistry()
    resolver = SchemaResolver(reg)
    n = 0
    for shard in range(30):
        enc = TiCDCAvroEncoder()
        enc.open(EncoderContext({"enable-tidb-extension": "true"}, reg, topic_prefix=f"re{shard}-"))
        for ev in sample_workload("reencode", shard).events:
            for rec in enc.encode(ev):
                for raw in (rec.key, rec.value):
                    if raw is None:
                        continue
                    d = decode_framed(raw, resolver)
                    assert d.ok and d.error is None
                    assert d.view is not None
                    again = enc.frame(d.schema_id or 0, enc.write_body(d.view.parsed, d.datum or {}))
                    assert again == raw
                    n += 1
    assert n > 300


def test_float_default_is_widened_float32() -> None:
    from conformance.model import Default, DefaultKind

    col = Column("f", SqlType(Kind.FLOAT), nullable=True, default=Default(DefaultKind.VALUE, to_float32(3.14)))
    f = spec.field(col, spec.AvroOptions())
    assert f["type"][1] == "null" and f["default"] == 3.140000104904175
    assert gojson.dumps(f).startswith('{"default":3.140000104904175,')


def test_bit_default_is_base64_of_padded_bytes() -> None:
    from conformance.model import Default, DefaultKind

    col = Column("b", SqlType(Kind.BIT, length=10), nullable=False, default=Default(DefaultKind.VALUE, 0b1010101010))
    assert spec.field(col, spec.AvroOptions())["default"] == "Aqo="


def test_precise_decimal_never_has_a_default() -> None:
    from conformance.model import Default, DefaultKind

    col = Column("d", SqlType(Kind.DECIMAL, precision=5, scale=2), nullable=True,
                 default=Default(DefaultKind.VALUE, decimal.Decimal("1.50")))
    assert spec.field(col, spec.AvroOptions()) == {
        "default": None, "name": "d", "type": ["null", spec.avro_type(col, spec.AvroOptions())]}
    assert spec.field(col, spec.AvroOptions(decimal_string=True))["default"] == "1.50"


def test_unsigned_bigint_wraps_in_long_mode() -> None:
    col = Column("u", SqlType(Kind.BIGINT, unsigned=True), nullable=False)
    assert spec.native_value(col, (1 << 64) - 1, spec.AvroOptions()) == -1
    assert spec.native_value(col, 1 << 63, spec.AvroOptions()) == -(1 << 63)
    assert spec.native_value(col, (1 << 64) - 1, spec.AvroOptions(bigint_unsigned_string=True)) == "18446744073709551615"


def test_key_is_handle_key_in_table_order() -> None:
    from conformance.model import Index

    cols = (Column("b", SqlType(Kind.INT), False, column_id=1), Column("a", SqlType(Kind.INT), False, column_id=2),
            Column("c", SqlType(Kind.INT), True, column_id=3))
    t = Table("db", "t", cols, (Index("uk", ("a", "b"), unique=True, index_id=1),))
    assert [c.name for c in spec.key_columns(t)] == ["b", "a"]
    assert [f["name"] for f in spec.schema(t, "key", spec.AvroOptions(extension=True))["fields"]] == ["b", "a"]
