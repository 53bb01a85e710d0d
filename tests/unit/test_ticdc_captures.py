"""The false-rejection regression set (issue 11): captures of what real TiCDC emits at the edges,
written from the notes independently of the suite (fixtures/ticdc/captures/build.py), which
`conformance check` must accept; the reference encoder writes the same schemas and values for
the same tables; and the rules relaxed for them still fail what TiCDC never writes."""

from __future__ import annotations

import base64
import importlib.util
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from golden import FIXTURES
from helpers import check_capture, problems

from conformance.checks import Outcome
from conformance.cli.main import main
from conformance.encoders.spi import Record
from conformance.harness.capture import parse_line
from conformance.infra.registry.dump import DumpRegistry
from conformance.model import gojson
from conformance.model.events import tso
from conformance.model.table import (
    DEFAULT_CURRENT_TIMESTAMP,
    NO_DEFAULT,
    Column,
    Default,
    DefaultKind,
    Generated,
    Index,
    Table,
)
from conformance.model.types import Kind, SqlType
from conformance.model.values import Date, DateTime, Json, Time, Vector, decimal_from_unscaled, to_float32
from conformance.protocols.ticdc_avro import spec as avro_spec
from conformance.protocols.ticdc_avro.encoder import strip_logical_types
from conformance.protocols.ticdc_simple import spec as simple_spec
from conformance.protocols.ticdc_simple.decoder import decode

CAPTURES = FIXTURES / "ticdc" / "captures"
EXT = {"enable-tidb-extension": "true"}
CHECKSUM = {**EXT, "integrity-check-level": "correctness", "avro-decimal-handling-mode": "string",
            "avro-bigint-unsigned-handling-mode": "string"}
KEY_ONLY = {"large-message-handle-option": "handle-key-only"}
SIMPLE_AVRO = {**KEY_ONLY, "encoding-format": "avro"}


def records(stem: str) -> list[Record]:
    return [parse_line(x) for x in (CAPTURES / f"{stem}.records.jsonl").read_text(encoding="utf-8").splitlines()
            if x.strip()]


def registry(stem: str) -> DumpRegistry:
    return DumpRegistry.from_file(CAPTURES / f"{stem}.registry.json")


def passed(tally: Any) -> set[str]:
    return {t.id for t in tally if t.outcome is Outcome.PASSED}


# -- the fixtures are what their builder writes ----------------------------------------------------

def test_the_builder_reproduces_every_capture(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("ticdc_captures_build", CAPTURES / "build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    build.main(tmp_path)
    made = sorted(p.name for p in tmp_path.iterdir())
    committed = sorted(p.name for p in CAPTURES.iterdir() if p.suffix in (".jsonl", ".json")
                       and not p.name.endswith(".meta.json"))
    assert made == committed
    for name in made:
        assert (tmp_path / name).read_bytes() == (CAPTURES / name).read_bytes(), name
        assert (CAPTURES / f"{name}.meta.json").exists(), name


# -- conformance check accepts them ------------------------------------------------------------------

AVRO_CASES = [
    ("avro_edges", EXT, {"ticdc-avro.type.vector", "ticdc-avro.type.enum", "ticdc-avro.type.date",
                         "ticdc-avro.type.timestamp", "ticdc-avro.schema.default", "ticdc-avro.schema.valid-avro",
                         "ticdc-avro.key.columns", "ticdc-avro.schema.field-names", "ticdc-avro.type.year"}),
    ("avro_v85_null_default", {**EXT, "profile": "v8.5"}, {"ticdc-avro.schema.default",
                                                            "ticdc-avro.schema.valid-avro"}),
    ("avro_checksum_edges", CHECKSUM, {"ticdc-avro.extension.checksum", "ticdc-avro.type.vector",
                                       "ticdc-avro.type.enum"}),
]
SIMPLE_CASES = [
    ("simple_json_edges", KEY_ONLY),
    ("simple_avro_edges", SIMPLE_AVRO),
]
SIMPLE_JUDGED = {"ticdc-simple.dml.columns", "ticdc-simple.large-message.handle-key-only", "ticdc-simple.value.vector",
                 "ticdc-simple.value.date", "ticdc-simple.value.datetime", "ticdc-simple.value.timestamp",
                 "ticdc-simple.value.year", "ticdc-simple.schema.table-schema", "ticdc-simple.consumer.schema-known",
                 "ticdc-simple.bootstrap.before-first-dml", "ticdc-simple.bootstrap.interval"}


@pytest.mark.parametrize(("stem", "options", "judged"), AVRO_CASES, ids=[c[0] for c in AVRO_CASES])
def test_avro_captures_pass(stem: str, options: dict[str, str], judged: set[str]) -> None:
    tally = check_capture(records(stem), options, protocol="ticdc-avro", registry=registry(stem))
    assert problems(tally) == {}
    assert judged <= passed(tally), sorted(judged - passed(tally))


@pytest.mark.parametrize(("stem", "options"), SIMPLE_CASES, ids=[c[0] for c in SIMPLE_CASES])
def test_simple_captures_pass(stem: str, options: dict[str, str]) -> None:
    tally = check_capture(records(stem), options, protocol="ticdc-simple")
    assert problems(tally) == {}
    assert SIMPLE_JUDGED <= passed(tally), sorted(SIMPLE_JUDGED - passed(tally))


def _cli(tmp_path: Path, *args: str) -> tuple[int, dict[str, str]]:
    report = tmp_path / "report.json"
    rc = main(["check", *args, "--report-json", str(report)])
    data = json.loads(report.read_text())
    return rc, {c["check"]: c["outcome"] for c in data["results"]}


def test_conformance_check_accepts_the_avro_capture(tmp_path: Path) -> None:
    rc, outcomes = _cli(tmp_path, "--protocol", "ticdc-avro", "--input", str(CAPTURES / "avro_edges.records.jsonl"),
                        "--registry", str(CAPTURES / "avro_edges.registry.json"), "--option",
                        "enable-tidb-extension=true")
    assert rc == 0 and not {c for c, o in outcomes.items() if o in ("failed", "errored")}
    assert outcomes["ticdc-avro.type.vector"] == "passed"


def test_conformance_check_accepts_the_simple_captures(tmp_path: Path) -> None:
    for stem, options in SIMPLE_CASES:
        opts = [x for k, v in options.items() for x in ("--option", f"{k}={v}")]
        rc, outcomes = _cli(tmp_path, "--protocol", "ticdc-simple", "--input",
                            str(CAPTURES / f"{stem}.records.jsonl"), *opts)
        assert rc == 0 and not {c for c, o in outcomes.items() if o in ("failed", "errored")}, stem
        assert outcomes["ticdc-simple.dml.columns"] == "passed"


def test_the_v85_null_default_needs_its_profile(tmp_path: Path) -> None:
    """Without profile v8.5 the null-first union with default "null" is a finding (it is not valid
    Avro, and master writes [T, "null"]), and the finding names the profile."""
    tally = check_capture(records("avro_v85_null_default"), EXT, protocol="ticdc-avro",
                          registry=registry("avro_v85_null_default"))
    for cid in ("ticdc-avro.schema.default", "ticdc-avro.schema.valid-avro"):
        t = tally.checks[cid]
        assert t.outcome is Outcome.FAILED, cid
        assert "--option profile=v8.5" in (next(iter(t.failures.values())).hint or "")
    rc, outcomes = _cli(tmp_path, "--protocol", "ticdc-avro", "--option", "profile=v8.5", "--input",
                        str(CAPTURES / "avro_v85_null_default.records.jsonl"), "--registry",
                        str(CAPTURES / "avro_v85_null_default.registry.json"), "--option",
                        "enable-tidb-extension=true")
    assert rc == 0 and outcomes["ticdc-avro.schema.default"] == "passed"


# -- the relaxed rules still fail what TiCDC never writes -------------------------------------------

def _edit_simple(stem: str, index: int, edit: Any) -> list[Record]:
    recs = records(stem)
    msg = json.loads(recs[index].value or b"")
    edit(msg)
    recs[index] = Record(recs[index].topic, None, gojson.dumps(msg).encode(), recs[index].partition,
                         offset=recs[index].offset)
    return recs


def _dml_index(stem: str, table: str, typ: str) -> int:
    for i, r in enumerate(records(stem)):
        m = json.loads(r.value or b"")
        if m.get("table") == table and m.get("type") == typ:
            return i
    raise AssertionError((table, typ))


def test_a_missing_column_that_cannot_be_virtual_is_still_a_finding() -> None:
    """A DML may lack only announced columns that can be virtual generated ones: not a primary-key
    column, not one with a default."""
    i = _dml_index("simple_json_edges", "t_generated", "INSERT")
    for gone in ("lt<gt>&amp", "id"):
        recs = _edit_simple("simple_json_edges", i, lambda m, g=gone: m["data"].pop(g))
        t = check_capture(recs, KEY_ONLY, protocol="ticdc-simple").checks["ticdc-simple.dml.columns"]
        assert t.outcome is Outcome.FAILED, gone


def test_update_data_and_old_must_hold_the_same_columns() -> None:
    i = _dml_index("simple_json_edges", "t_generated", "UPDATE")
    recs = _edit_simple("simple_json_edges", i, lambda m: m["old"].pop("s"))
    t = check_capture(recs, KEY_ONLY, protocol="ticdc-simple").checks["ticdc-simple.dml.columns"]
    assert t.outcome is Outcome.FAILED


def test_a_handle_key_only_message_must_name_a_handle_key() -> None:
    i = next(i for i, r in enumerate(records("simple_json_edges")) if b"handleKeyOnly" in (r.value or b""))
    recs = _edit_simple("simple_json_edges", i, lambda m: (m["data"].update(c2="10"), m["old"].update(c2="10")))
    t = check_capture(recs, KEY_ONLY, protocol="ticdc-simple").checks["ticdc-simple.large-message.handle-key-only"]
    assert t.outcome is Outcome.FAILED


@pytest.mark.parametrize("text", ["[1.0,-2.5,0.1]", "[1, -2.5, 0.1]", "[1e+00,-2.5,0.1]", "[1,-2.5]", "1,-2.5,0.1"])
def test_a_vector_not_as_tidb_prints_it_is_a_finding(text: str) -> None:
    i = _dml_index("simple_json_edges", LONG_TABLE, "INSERT")
    recs = _edit_simple("simple_json_edges", i, lambda m: m["data"].update(vec=text))
    t = check_capture(recs, KEY_ONLY, protocol="ticdc-simple").checks["ticdc-simple.value.vector"]
    assert t.outcome is Outcome.FAILED


def test_a_negative_length_other_than_a_vectors_is_a_finding() -> None:
    i = next(i for i, r in enumerate(records("simple_json_edges")) if b'"BOOTSTRAP"' in (r.value or b"")
             and b"vany" in (r.value or b""))

    def edit(m: dict[str, Any]) -> None:
        m["tableSchema"]["columns"][0]["dataType"]["length"] = -1  # `k` INT

    t = check_capture(_edit_simple("simple_json_edges", i, edit), KEY_ONLY, protocol="ticdc-simple")
    assert t.checks["ticdc-simple.schema.table-schema"].outcome is Outcome.FAILED


# -- the reference writes the same schemas and values for the same tables ---------------------------

LONG_DB = ("long_database_" * 5)[:64]
LONG_TABLE = ("long_table_" * 6)[:64]
CJK = "列" * 64
INT = SqlType(Kind.INT)
PK_ID = Index("PRIMARY", ("id",), primary=True, index_id=1)


def _v(text: str) -> Vector:
    return Vector(tuple(float(x) for x in json.loads(text)))


T_GENERATED = Table("db`tick", "t_generated", (
    Column("id", INT, False, column_id=1),
    Column("v", INT, True, NO_DEFAULT, 2, Generated("`id` * 2", False, ("id",))),
    Column("s", SqlType(Kind.VARCHAR, length=10), True, NO_DEFAULT, 3, Generated("concat('x', `id`)", True, ("id",))),
    Column("we`ird-col", SqlType(Kind.VARCHAR, length=8), True, Default(DefaultKind.VALUE, "null"), 4),
    Column("lt<gt>&amp", INT, True, Default(DefaultKind.VALUE, 5), 5),
    Column(CJK, SqlType(Kind.DATE), True, Default(DefaultKind.VALUE, Date(0, 0, 0)), 6),
), (PK_ID,), table_id=120, version=tso(1_767_225_600_000 + 500))
GENERATED_ROWS = [
    {"id": 1, "v": 2, "s": "x1", "we`ird-col": "null", "lt<gt>&amp": None, CJK: Date(2020, 0, 15)},
    {"id": 1, "v": 2, "s": "x1", "we`ird-col": "a", "lt<gt>&amp": 7, CJK: Date(2021, 2, 31)},
]

T_VECTOR = Table(LONG_DB, LONG_TABLE, (
    Column("k", INT, False, column_id=1),
    Column("g", INT, False, NO_DEFAULT, 2, Generated("`k`", False, ("k",))),
    Column("vec", SqlType(Kind.VECTOR, length=3), True, column_id=3),
    Column("vany", SqlType(Kind.VECTOR), True, column_id=4),
    Column("c2", INT, False, column_id=5),
), (Index("uk_g", ("g",), unique=True, index_id=1), Index("uk_k", ("k",), unique=True, index_id=2)),
    table_id=121, version=tso(1_767_225_600_000 + 600))
VECTOR_ROWS = [
    {"k": 0, "g": 0, "vec": _v("[1,-2.5,0.1]"), "vany": _v("[1e-45]"), "c2": 0},
    {"k": 1, "g": 1, "vec": Vector((0.0, -0.0, to_float32(3.4028234663852886e38))),
     "vany": _v("[3,1,4,1,5,9,2,6]"), "c2": 10},
]

_ENUM = SqlType(Kind.ENUM, elements=("a", "two''quotes", "null"))
_SET = SqlType(Kind.SET, elements=("a", "b"))
T_DEFAULTS = Table("shop", "t_defaults", (
    Column("id", SqlType(Kind.BIGINT), False, column_id=1),
    Column("i", INT, True, Default(DefaultKind.VALUE, 5), 2),
    Column("bu", SqlType(Kind.BIGINT, unsigned=True), True, Default(DefaultKind.VALUE, (1 << 64) - 1), 3),
    Column("f", SqlType(Kind.FLOAT), True, Default(DefaultKind.VALUE, 3.0), 4),
    Column("f2", SqlType(Kind.FLOAT), False, Default(DefaultKind.VALUE, to_float32(3.14)), 5),
    Column("d", SqlType(Kind.DOUBLE), True, Default(DefaultKind.VALUE, 1e20), 6),
    Column("dec", SqlType(Kind.DECIMAL, precision=6, scale=2), True,
           Default(DefaultKind.VALUE, decimal_from_unscaled(150, 2)), 7),
    Column("c", SqlType(Kind.CHAR, length=4), False, Default(DefaultKind.VALUE, "x"), 8),
    Column("b", SqlType(Kind.BIT, length=10), True, Default(DefaultKind.VALUE, 0b1010101010), 9),
    Column("bin", SqlType(Kind.BINARY, length=2), True, Default(DefaultKind.VALUE, b"\x01\x02"), 10),
    Column("e", _ENUM, True, Default(DefaultKind.VALUE, "two''quotes"), 11),
    Column("st", _SET, True, Default(DefaultKind.VALUE, ("a", "b")), 12),
    Column("dt", SqlType(Kind.DATETIME), True, DEFAULT_CURRENT_TIMESTAMP, 13),
    Column("ts", SqlType(Kind.TIMESTAMP, fsp=3), True, Default(DefaultKind.VALUE, DateTime(0, 0, 0)), 14),
    Column("tm", SqlType(Kind.TIME), True, Default(DefaultKind.VALUE, Time(True, 1, 2, 3)), 15),
    Column("y", SqlType(Kind.YEAR), True, Default(DefaultKind.VALUE, 2024), 16),
    Column("dz", SqlType(Kind.DATE), False, Default(DefaultKind.VALUE, Date(2020, 0, 0)), 17),
    Column("j", SqlType(Kind.JSON), True, column_id=18),
), (Index("PRIMARY", ("id",), primary=True, index_id=1),), table_id=130, version=1)
DEFAULTS_ROWS = [
    {"id": 1, "i": 5, "bu": (1 << 64) - 1, "f": 3.0, "f2": to_float32(3.14), "d": 1e20,
     "dec": decimal_from_unscaled(1234, 2), "c": "x", "b": 683, "bin": b"\x01\x02", "e": "two''quotes",
     "st": ("a", "b"), "dt": DateTime(2026, 1, 1), "ts": DateTime(0, 0, 0), "tm": Time(True, 838, 59, 59), "y": 0,
     "dz": Date(0, 0, 0), "j": Json({"a": [1, 2]})},
]


def _registered(stem: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in json.loads((CAPTURES / f"{stem}.registry.json").read_text())["schemas"]:
        out.setdefault(e["subject"], []).append(e["schema"])
    return out


@pytest.mark.parametrize(("table", "topic"), [
    (T_GENERATED, "tidb_db_tick_t_generated"), (T_VECTOR, f"tidb_{LONG_DB}_{LONG_TABLE}"),
    (T_DEFAULTS, "tidb_shop_t_defaults")], ids=["generated", "vector", "defaults"])
def test_the_reference_writes_the_golden_avro_schemas(table: Table, topic: str) -> None:
    o = avro_spec.AvroOptions.from_options(EXT)
    assert avro_spec.substitute_topic(o.topic, table.database, table.name) == topic
    reg = _registered("avro_edges")
    for part in ("key", "value"):
        assert reg[avro_spec.subject(topic, part)] == [gojson.dumps(avro_spec.schema(table, part, o))], part


@pytest.mark.parametrize(("table", "rows"), [(T_GENERATED, GENERATED_ROWS), (T_VECTOR, VECTOR_ROWS),
                                             (T_DEFAULTS, DEFAULTS_ROWS)], ids=["generated", "vector", "defaults"])
def test_the_reference_writes_the_golden_avro_values(table: Table, rows: list[dict[str, Any]]) -> None:
    o = avro_spec.AvroOptions.from_options(EXT)
    schema = avro_spec.schema(table, "value", o)
    parsed = fastavro.parse_schema(strip_logical_types(schema), _ignore_default_error=True)
    bodies = [r.value[5:] for r in records("avro_edges")
              if r.value is not None and r.topic.endswith(avro_spec.substitute_topic("{table}", "", table.name))]
    assert len(bodies) >= len(rows)
    for row, body in zip(rows, bodies[:len(rows)], strict=True):
        got = fastavro.schemaless_reader(io.BytesIO(body), parsed, None)
        want = {avro_spec.sanitize_name(c.name): avro_spec.native_value(c, row[c.name], o)
                for c in avro_spec.value_columns(table, o)}
        assert {k: got[k] for k in want} == want


def _simple_messages(stem: str, avro: bool) -> list[Any]:
    return [decode(r.value, "none", avro) for r in records(stem)]


@pytest.mark.parametrize("avro", [False, True], ids=["json", "avro"])
def test_the_reference_writes_the_golden_simple_schemas_and_values(avro: bool) -> None:
    msgs = _simple_messages("simple_avro_edges" if avro else "simple_json_edges", avro)
    o = simple_spec.SimpleOptions.from_options({"encoding-format": "avro" if avro else "json"})
    for table, rows in ((T_GENERATED, GENERATED_ROWS), (T_VECTOR, VECTOR_ROWS)):
        boot = next(m for m in msgs if m.kind == "BOOTSTRAP" and (m.get("tableSchema") or {}).get("table") == table.name)
        want = simple_spec.table_schema(table, avro=avro)
        got = boot.get("tableSchema")
        assert [c["name"] for c in got["columns"]] == [c.name for c in table.columns_by_id()]  # virtual included
        assert got == {**want, "version": got["version"]}
        inserts = [m for m in msgs if m.kind == "DML" and m.get("table") == table.name and m.type == "INSERT"]
        assert inserts
        for row, m in zip(rows[:len(inserts)], inserts, strict=True):
            values = {c.name: (simple_spec.avro_value(c.type, row[c.name], o) if avro
                               else simple_spec.json_value(c.type, row[c.name], o)) for c in table.stored_columns}
            got_data = m.get("data")
            if avro:
                got_data = {k: (None if v is None or v[0] == "null" else v) for k, v in got_data.items()}
            assert got_data == values


def test_b64_of_bit_default_is_the_padded_literal() -> None:
    """BIT(10) DEFAULT b'1010101010': TiDB keeps the literal over ceil(10/8) bytes; Avro's schema
    writes those bytes as base64 text (§1.4), the vector's "Aqo="."""
    col = T_DEFAULTS.column("b")
    assert avro_spec.avro_default(col, avro_spec.AvroOptions()) == base64.b64encode(b"\x02\xaa").decode() == "Aqo="


def test_a_hard_coded_topic_may_carry_several_tables() -> None:
    """TiCDC validates only a topic expression with {schema} and {table}: a hard-coded topic is
    not checked (#9755, notes §1.8), so several tables share it and its subjects."""
    recs = [Record("cdc_all", r.key, r.value, r.partition, offset=i) for i, r in enumerate(records("avro_edges"))]
    entries = json.loads((CAPTURES / "avro_edges.registry.json").read_text())["schemas"]
    shared: list[dict[str, Any]] = []
    for part in ("key", "value"):
        mine = [e for e in entries if e["subject"].endswith(f"-{part}")]
        shared += [{**e, "subject": f"cdc_all-{part}", "version": v} for v, e in enumerate(mine, start=1)]
    reg = DumpRegistry.from_dict({"schemas": shared})
    tally = check_capture(recs, {**EXT, "topic": "cdc_all"}, protocol="ticdc-avro", registry=reg)
    assert problems(tally) == {}
    assert tally.checks["ticdc-avro.topic.one-table"].outcome is Outcome.NOT_APPLICABLE
    strict = check_capture(recs, EXT, protocol="ticdc-avro", registry=reg)
    assert strict.checks["ticdc-avro.topic.one-table"].outcome is Outcome.FAILED


@pytest.mark.parametrize(("writer", "option", "cid"), [
    ("mutant/bit-padded", "profile=ticdc-next", "ticdc-avro.type.bit"),
    ("mutant/float-as-double", "float-as-double=true", "ticdc-avro.type.float"),
])
def test_what_an_older_or_newer_ticdc_writes_names_its_profile(writer: str, option: str, cid: str) -> None:
    """Output of another TiCDC version fails under the default profile, and the finding names the
    profile under which the same output passes."""
    from helpers import encode, shape_with

    from conformance.infra.inprocess import InProcessRegistry
    from conformance.strategies import sample_workload

    reg = InProcessRegistry()
    shape = shape_with(kinds=(Kind.BIT, Kind.FLOAT, Kind.INT), edge_rate=0.5, generated_rate=0.0)
    recs = [r for shard in range(3) for r in encode(writer, EXT, sample_workload("profile-hint", shard, shape),
                                                     protocol="ticdc-avro", registry=reg)]
    t = check_capture(recs, EXT, protocol="ticdc-avro", registry=reg).checks[cid]
    assert t.outcome is Outcome.FAILED
    assert f"--option {option}" in (next(iter(t.failures.values())).hint or "")
    k, v = option.split("=")
    assert problems(check_capture(recs, {**EXT, k: v}, protocol="ticdc-avro", registry=reg)) == {}


# -- single defects in the Avro capture fail `check` alone, each by the rule it breaks (issue 29) -----

def _avro_variant(change: Any) -> list[Record]:
    """avro_edges with one defect in the first row of `tidb_shop_t_defaults`: `change` takes the
    decoded value (and returns it), or the framed bytes (and returns new bytes)."""
    out, done = [], False
    reg = registry("avro_edges")
    for r in records("avro_edges"):
        if not done and r.topic == "tidb_shop_t_defaults" and r.value is not None:
            done = True
            try:
                new = change(r.value)
            except TypeError:
                sid = int.from_bytes(r.value[1:5], "big")
                parsed = fastavro.parse_schema(strip_logical_types(json.loads(reg.schema_by_id(sid))))
                datum = change(fastavro.schemaless_reader(io.BytesIO(r.value[5:]), parsed, None))
                buf = io.BytesIO()
                fastavro.schemaless_writer(buf, parsed, datum)
                new = r.value[:5] + buf.getvalue()
            r = Record(r.topic, r.key, new, r.partition, headers=r.headers, offset=r.offset)
        out.append(r)
    assert done
    return out


def _field(name: str, value: Any) -> Any:
    def change(d: Any) -> Any:
        if isinstance(d, bytes):
            raise TypeError("a decoded value, please")
        return {**d, name: value}
    return change


AVRO_DEFECTS = [
    (_field("e", "three"), "ticdc-avro.type.enum"),  # not a member of the column's ENUM
    (_field("y", 1800), "ticdc-avro.type.year"),  # YEAR holds 1901..2155 or 0
    (_field("tm", "839:00:00"), "ticdc-avro.type.time"),  # TIME is within ±838:59:59
    (_field("dt", "2026-01-01T00:00:00"), "ticdc-avro.type.datetime"),  # TiDB's text has a space
    (_field("j", '{"a": [1, 2]'), "ticdc-avro.type.json"),  # not JSON
    (_field("_tidb_op", "d"), "ticdc-avro.extension.op"),  # a value is an insert or an update
    (_field("_tidb_commit_physical_time", 1), "ticdc-avro.extension.commit-ts"),  # not the commit ts's time
    (lambda v: b"\x01" + v[1:], "ticdc-avro.framing.magic-byte"),
    (lambda v: v[:1] + (424242).to_bytes(4, "big") + v[5:], "ticdc-avro.framing.schema-id"),
    (lambda v: v[:-3], "ticdc-avro.framing.body"),
]


@pytest.mark.parametrize(("change", "check"), AVRO_DEFECTS, ids=[c for _, c in AVRO_DEFECTS])
def test_a_single_defect_in_the_avro_capture_fails_its_rule(change: Any, check: str) -> None:
    tally = check_capture(_avro_variant(change), EXT, protocol="ticdc-avro", registry=registry("avro_edges"))
    assert check in problems(tally), sorted(problems(tally))
