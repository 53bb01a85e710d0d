"""MaxScale KafkaCDC against the golden data (fixtures/maxscale/, from MaxScale 24.02 @ f72af992):
the documented examples, what MaxScale's own system tests expect, the per-type rendering table
derived from its source; and bad input, which gives findings, never a traceback."""

from __future__ import annotations

import base64
import decimal
import json
import re
from pathlib import Path
from typing import Any

import pytest
from golden import FIXTURES
from helpers import check_capture, encode, problems
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import Outcome, Tally
from conformance.encoders import Record
from conformance.model.events import Ddl, DdlKind, Op, RowChange, Transaction, Workload, tso
from conformance.model.table import Column, Table
from conformance.model.types import Kind, SqlType
from conformance.model.values import Date, DateTime, Time
from conformance.protocols.maxscale_kafkacdc import spec
from conformance.protocols.maxscale_kafkacdc.spec import CdcOptions

P = "maxscale-kafkacdc"
VECTORS = FIXTURES / "maxscale"
DERIVED = VECTORS / "derived"


def _jsonc(path: Path) -> dict[str, Any]:
    """The docs' schema example carries `// comments` (it is no strict JSON)."""
    text = re.sub(r"//[^\n]*", "", path.read_text())
    obj: dict[str, Any] = json.loads(text)
    return obj


def _compact(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _records(*items: tuple[str | None, bytes | None], first_offset: int = 0) -> list[Record]:
    return [Record("kafkacdc", None if k is None else k.encode(), v, 0, offset=first_offset + i)
            for i, (k, v) in enumerate(items)]


def _failed(tally: Tally) -> set[str]:
    return {t.id for t in tally if t.outcome is Outcome.FAILED}


def _errored(tally: Tally) -> dict[str, list[str]]:
    return {t.id: t.errors for t in tally if t.errored}


# -- hand-made workloads from MaxScale's test SQL ---------------------------------------------------------

MS = 1_767_225_600_000


def _table(name: str, db: str = "test") -> Table:
    return Table(db, name, (Column("id", SqlType(Kind.INT)),), table_id=hash(name) % 1000)


def _create(t: Table, seq: int) -> Ddl:
    return Ddl(DdlKind.CREATE_TABLE, tso(MS + seq), f"CREATE TABLE {t.name}(id INT)", t, None, t.database,
               position=f"0-3000-{seq}")


def _txn(seq: int, *changes: RowChange) -> Transaction:
    return Transaction(tso(MS + seq * 1000), changes, position=f"0-3000-{seq}")


def _ins(t: Table, v: int) -> RowChange:
    return RowChange(Op.INSERT, t, None, {"id": v})


def phase1() -> Workload:
    """test_kafkacdc phase 1: CREATE TABLE t1(id INT); INSERT INTO t1 VALUES (1), (2), (3);
    UPDATE t1 SET id = 4 WHERE id = 2; DELETE FROM t1 WHERE id = 3 (autocommit: one GTID each)."""
    t1 = _table("t1")
    return Workload((
        _create(t1, 15),
        _txn(16, _ins(t1, 1), _ins(t1, 2), _ins(t1, 3)),
        _txn(17, RowChange(Op.UPDATE, t1, {"id": 2}, {"id": 4})),
        _txn(18, RowChange(Op.DELETE, t1, {"id": 3}, None)),
    ), seed="test_kafkacdc-phase1")


def test_the_seven_messages_of_maxscales_own_test() -> None:
    """Schema event, three inserts, update before/after, delete: seven messages, each sequence in
    (start, end] (test_kafkacdc_expectations.json phase 1); a schema event is told apart by its
    namespace, its sequence read from `gtid`."""
    expect = json.loads((VECTORS / "test_kafkacdc_expectations.json").read_text())["phases"][0]
    w = phase1()
    sql = spec_sql(w)
    assert sql[0] == "CREATE TABLE `test`.`t1` (\n  `id` INT NULL\n);"  # MaxScale reads real_type INT from it
    assert sql[1:4] == [f"INSERT INTO `test`.`t1` (`id`) VALUES ({i});" for i in (1, 2, 3)]
    recs = encode("reference", {}, w, protocol=P, topic_prefix="")
    assert len(recs) == expect["expect_messages"] == 7
    msgs = [json.loads(r.value or b"") for r in recs]
    seqs = [int(m["gtid"].split("-")[2]) if m.get("namespace") == spec.NAMESPACE else m["sequence"] for m in msgs]
    assert all(14 < s <= 18 for s in seqs)
    assert [m.get("event_type", "schema") for m in msgs] == [
        "schema", "insert", "insert", "insert", "update_before", "update_after", "delete"]
    assert [r.key for r in recs] == [b"0-3000-15", b"0-3000-16:1", b"0-3000-16:2", b"0-3000-16:3", b"0-3000-17:1",
                                     b"0-3000-17:2", b"0-3000-18:1"]
    assert [m.get("id") for m in msgs[1:]] == [1, 2, 3, 2, 4, 3]
    assert {r.topic for r in recs} == {"kafkacdc"}
    # Byte-exact with what the notes say MaxScale writes (fixtures/maxscale/derived, provenance in its meta).
    golden = [json.loads(line) for line in (DERIVED / "test_kafkacdc_phase1.records.jsonl").read_text().splitlines()]
    assert [(base64.b64decode(g["key"]), base64.b64decode(g["value"])) for g in golden] == [(r.key, r.value)
                                                                                          for r in recs]
    assert problems(check_capture(recs, protocol=P)) == {}


def spec_sql(w: Workload) -> list[str]:
    from conformance.model.dialects import MARIADB

    out: list[str] = []
    for e in w.events:
        if isinstance(e, Ddl):
            out += MARIADB.ddl_statements(e)
        elif isinstance(e, Transaction):
            out += [MARIADB.dml(ch) for ch in e.changes]
    return out


def test_match_and_exclude_as_maxscales_test_expects() -> None:
    """Phase 4: match=cat exclude=bob over bob, bobcat, cat: cat's schema event, then its row, nothing else."""
    bob, bobcat, cat = _table("bob"), _table("bobcat"), _table("cat")
    w = Workload((_create(bob, 30), _txn(31, _ins(bob, 10)), _create(bobcat, 32), _txn(33, _ins(bobcat, 11)),
                  _create(cat, 34), _txn(35, _ins(cat, 12))), seed="phase4")
    recs = encode("reference", {"match": "cat", "exclude": "bob"}, w, protocol=P, topic_prefix="")
    msgs = [json.loads(r.value or b"") for r in recs]
    assert len(msgs) == 2
    assert msgs[0]["namespace"] == spec.NAMESPACE and msgs[0]["table"] == "cat"
    assert msgs[1]["table_name"] == "cat" and msgs[1]["id"] == 12
    o = CdcOptions(match="cat", exclude="bob")
    assert [o.passes(f"test.{t}") for t in ("bob", "bobcat", "cat", "Cat", "concat")] == [False, False, True, False,
                                                                                          True]


def test_the_documented_dml_example_is_accepted() -> None:
    """The docs' DML event, after the docs' schema event (seed 004), through `check` with the docs'
    schema types; alone, in a window of a stream, it passes too (its schema may sit before)."""
    dml = json.loads((VECTORS / "kafkacdc_doc_dml_event_example.json").read_text())
    schema = _jsonc(VECTORS / "kafkacdc_doc_schema_event_example.jsonc")
    recs = _records(("0-3000-14", _compact(schema)), ("0-3000-20:1", _compact(dml)))
    tally = check_capture(recs, {"profile": "docs"}, protocol=P)
    assert problems(tally) == {}
    for cid in ("schema.fixed-fields", "schema.avro-type", "dml.fields", "dml.columns", "kafka.key",
                "value.json-type", "stream.schema-before-dml"):
        assert tally.checks[f"{P}.{cid}"].outcome is Outcome.PASSED, cid
    # In a window of a stream (read from offset 20), the DML alone.
    alone = check_capture(_records(("0-3000-20:1", _compact(dml)), first_offset=20), protocol=P)
    assert problems(alone) == {}
    # With the code's schema types, the docs' `long` for INT is the disagreement the check names.
    code = check_capture(recs, protocol=P)
    assert _failed(code) == {f"{P}.schema.avro-type"}


def test_the_documented_examples_pass_conformance_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The same through the command line: `conformance check --input` on a records.jsonl capture."""
    from conformance.cli.main import main

    dml = json.loads((VECTORS / "kafkacdc_doc_dml_event_example.json").read_text())
    schema = _jsonc(VECTORS / "kafkacdc_doc_schema_event_example.jsonc")
    lines = [json.dumps({"topic": "kafkacdc", "partition": 0, "offset": i, "key": base64.b64encode(k).decode(),
                         "value": base64.b64encode(_compact(v)).decode()})
             for i, (k, v) in enumerate(((b"0-3000-14", schema), (b"0-3000-20:1", dml)))]
    (tmp_path / "docs.jsonl").write_text("\n".join(lines) + "\n")
    code = main(["check", "--protocol", P, "--input", str(tmp_path / "docs.jsonl"), "--option", "profile=docs",
                 "--report-json", str(tmp_path / "r.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    results = {r["check"]: r["outcome"] for r in json.loads((tmp_path / "r.json").read_text())["results"]}
    assert results[f"{P}.dml.columns"] == results[f"{P}.stream.schema-before-dml"] == "passed"


def test_the_documented_schema_example_and_its_disagreements() -> None:
    schema = _jsonc(VECTORS / "kafkacdc_doc_schema_event_example.jsonc")
    assert schema["fields"][:6] == list(spec.FIXED_FIELDS)
    assert spec.avro_type("int") == "int" and spec.avro_type("int", docs=True) == "long"


# -- the derived per-type rendering table (kafkacdc_derived_type_rendering.json) ---------------------------

def _row(sql_type: str) -> dict[str, Any]:
    table = json.loads((VECTORS / "kafkacdc_derived_type_rendering.json").read_text())["rows"]
    return next(r for r in table if r["sql_type"] == sql_type)


Q = CdcOptions.from_options(spec.PROFILES[1].values)  # maxscale-24.02
D = CdcOptions()


def _text(t: SqlType, v: Any, o: CdcOptions) -> str:
    from conformance.protocols.maxscale_kafkacdc import jsontext

    return jsontext.dumps(spec.value(t, v, o))


@pytest.mark.parametrize(("sql_type", "t", "v", "current"), [
    ("BIGINT UNSIGNED", SqlType(Kind.BIGINT, unsigned=True), 18446744073709551615, "18446744073709551615"),
    ("FLOAT", SqlType(Kind.FLOAT), 1.100000023841858, "1.1000000238418579"),
    ("DOUBLE", SqlType(Kind.DOUBLE), 0.1, "0.10000000000000001"),
    ("DECIMAL(p,s)", SqlType(Kind.DECIMAL, precision=10, scale=2), decimal.Decimal("1.15"), "1.15"),
    ("DECIMAL integer 3.0", SqlType(Kind.DECIMAL, precision=10, scale=2), decimal.Decimal("3.00"), "3.00"),
    ("ENUM(...)", SqlType(Kind.ENUM, elements=("a", "b", "c")), "b", '"b"'),
    ("SET(...)", SqlType(Kind.SET, elements=("x", "y", "z")), ("x", "z"), '"x,z"'),
    ("BIT(n)", SqlType(Kind.BIT, length=3), 5, "5"),
    ("YEAR", SqlType(Kind.YEAR), 2024, '"2024"'),
    ("DATE", SqlType(Kind.DATE), Date(2024, 1, 2), '"2024-01-02"'),
    ("DATETIME (dec 0)", SqlType(Kind.DATETIME), DateTime(2018, 1, 1, 11, 11, 11), '"2018-01-01 11:11:11"'),
    ("DATETIME(6)", SqlType(Kind.DATETIME, fsp=6), DateTime(2018, 1, 1, 11, 11, 11, 1), '"2018-01-01 11:11:11.000001"'),
    ("DATETIME(2)/(4)", SqlType(Kind.DATETIME, fsp=2), DateTime(2024, 1, 2, 3, 4, 5, 550000),
     '"2024-01-02 03:04:05.550000"'),
    ("DATETIME(1)/(3)/(5)", SqlType(Kind.DATETIME, fsp=3), DateTime(2024, 1, 2, 3, 4, 5, 123000),
     '"2024-01-02 03:04:05.123000"'),
    ("TIME / TIME(n)", SqlType(Kind.TIME, fsp=6), Time(False, 12, 0, 0, 1), '"12:00:00.000001"'),
    ("TEXT/BLOB empty value", SqlType(Kind.BLOB), b"", '""'),
    ("TINYBLOB/BLOB/MEDIUMBLOB/LONGBLOB", SqlType(Kind.BLOB), b"\x00\xff", '"00ff"'),
    ("CHAR(n)", SqlType(Kind.CHAR, length=4), "ab", '"ab"'),
    ("TINYINT / SMALLINT / MEDIUMINT", SqlType(Kind.SMALLINT), -5, "-5"),
])
def test_values_as_the_rendering_table_says(sql_type: str, t: SqlType, v: Any, current: str) -> None:
    """`current` renders the data; `maxscale-24.02` reproduces the table's 24.02 column."""
    row = _row(sql_type)
    assert _text(t, v, D) == current
    want = row["kafkacdc_24.02_value"]
    if sql_type == "TINYBLOB/BLOB/MEDIUMBLOB/LONGBLOB":
        want = row["kafkacdc_24.08+_value"]  # 24.02 fails to write JSON at all: the suite follows 24.08's fix
    if sql_type == "DATETIME(1)/(3)/(5)":
        assert want == '"2024-01-02 03:04:05.1230000"'
    assert _text(t, v, Q) == want


def test_zero_values_and_years_as_strftime_prints_them() -> None:
    assert _text(SqlType(Kind.DATE), Date(0, 0, 0), Q) == '"0-00-00"'
    assert _text(SqlType(Kind.DATETIME, fsp=6), DateTime(0, 0, 0), Q) == '"0-00-00 00:00:00.000000"'
    assert _text(SqlType(Kind.TIMESTAMP), DateTime(0, 0, 0), Q) == '"0-00-00 00:00:00"'
    assert _text(SqlType(Kind.YEAR), 0, Q) == '"1900"'
    assert _text(SqlType(Kind.DATE), Date(5, 1, 1), Q) == '"5-01-01"'  # glibc's %Y: no padding
    assert _text(SqlType(Kind.DATE), Date(0, 0, 0), D) == '"0000-00-00"'
    assert _text(SqlType(Kind.YEAR), 0, D) == '"0000"'


def test_timestamps_in_maxscales_zone() -> None:
    t = SqlType(Kind.TIMESTAMP, fsp=3)
    v = DateTime(2018, 1, 1, 11, 11, 11, 500000)
    assert _text(t, v, D) == '"2018-01-01 11:11:11.500000"'
    assert _text(t, v, CdcOptions(time_zone="Asia/Kolkata")) == '"2018-01-01 16:41:11.500000"'


@pytest.mark.parametrize(("name", "sanitized"), [("g-g", "g_g"), ("timestamp", "timestamp_"), ("Domain", "Domain_"),
                                                 ("名前", "______"), ("ok_1", "ok_1"), ("event_TYPE", "event_TYPE_")])
def test_identifier_sanitizing(name: str, sanitized: str) -> None:
    assert spec.sanitize(name) == sanitized


@pytest.mark.parametrize(("t", "real_type", "avro"), [
    (SqlType(Kind.INT), "INT", "int"), (SqlType(Kind.INT, spelling="integer"), "integer", "int"),
    (SqlType(Kind.BOOL), "BOOL", "string"), (SqlType(Kind.BOOL, spelling="BOOLEAN"), "BOOLEAN", "int"),
    (SqlType(Kind.BIGINT, spelling="INT8"), "INT8", "string"), (SqlType(Kind.TIMESTAMP), "TIMESTAMP_", "string"),
    (SqlType(Kind.DOUBLE, spelling="DOUBLE PRECISION"), "DOUBLE", "double"),
    (SqlType(Kind.DECIMAL, precision=5, scale=2, spelling="FIXED"), "FIXED", "double"),
    (SqlType(Kind.BINARY, length=4), "BINARY", "bytes"), (SqlType(Kind.VARBINARY, length=4), "VARBINARY", "string"),
    (SqlType(Kind.MEDIUMTEXT, spelling="LONG VARCHAR"), "LONG", "string"), (SqlType(Kind.FLOAT), "FLOAT", "float"),
    (SqlType(Kind.JSON), "JSON", "string"), (SqlType(Kind.TEXT), "TEXT", "bytes"), (SqlType(Kind.UUID), "UUID", "string"),
])
def test_avro_types_from_the_ddl_text(t: SqlType, real_type: str, avro: str) -> None:
    """notes §2.1/§2.2: the lower-cased first DDL token chooses the type; real_type keeps the case."""
    assert spec.real_type(t) == real_type
    assert spec.avro_type(spec.real_type(t)) == avro


# -- bad input: findings, never a traceback -------------------------------------------------------------

SCHEMA = {"namespace": spec.NAMESPACE, "type": "record", "name": "ChangeRecord", "table": "t1", "database": "test",
          "version": 1, "gtid": "0-1-5", "fields": [*spec.FIXED_FIELDS, {"name": "id", "type": ["null", "int"],
                                                                         "real_type": "INT", "length": -1,
                                                                         "unsigned": False}]}
DML = {"domain": 0, "server_id": 1, "sequence": 6, "event_number": 1, "timestamp": 1767225600,
       "event_type": "insert", "table_schema": "test", "table_name": "t1", "id": 1}


def _with(**over: Any) -> bytes:
    return _compact({**DML, **over})


def test_a_good_stream_passes() -> None:
    tally = check_capture(_records(("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _compact(DML))), protocol=P)
    assert problems(tally) == {}


@pytest.mark.parametrize(("items", "check_id"), [
    ([("0-1-6:1", _compact(DML))], "stream.schema-before-dml"),  # a DML for a table with no schema event yet
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", b'{"domain": 0, "server_id": ')], "message.json"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", b"\xff\xfe")], "message.json"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", None)], "message.json"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", b'{"a": NaN}')], "message.json"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", b'{"id": 1, "id": 2, "event_type": "insert"}')], "message.json"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", b"[1, 2]")], "message.json"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _with(event_type="upsert"))], "message.kind"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", b'{"hello": "world"}')], "message.kind"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6", _compact(DML))], "kafka.key"),
    ([("0-1-5", _compact(SCHEMA)), ("not a key", _compact(DML))], "kafka.key"),
    ([("0-1-5", _compact(SCHEMA)), (None, _compact(DML))], "kafka.key"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:2", _compact(DML))], "kafka.key"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _with(domain="0"))], "dml.fields"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _with(id="1"))], "value.json-type"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _with(extra=3))], "dml.columns"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _with(timestamp=1767225600000))], "dml.timestamp"),
    ([("0-1-5", _compact({**SCHEMA, "fields": "id"}))], "schema.envelope"),
    ([("0-1-5", _compact({**SCHEMA, "fields": SCHEMA["fields"][1:]}))], "schema.fixed-fields"),
    ([("0-1-5", _compact({**SCHEMA, "fields": [*spec.FIXED_FIELDS, {"name": 3, "type": "int"}, 7]}))],
     "schema.columns"),
    ([("0-1-5", _compact({**SCHEMA, "version": 2})), ("0-1-7", _compact({**SCHEMA, "version": 2, "gtid": "0-1-7"}))],
     "stream.schema-version"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:1", _with(event_type="update_before")),
      ("0-1-6:2", _with(event_number=2, event_type="insert"))], "stream.update-pairs"),
    ([("0-1-5", _compact(SCHEMA)), ("0-1-6:2", _with(event_number=2))], "stream.event-numbers"),
])
def test_bad_input_gives_findings(items: list[tuple[str | None, bytes | None]], check_id: str) -> None:
    tally = check_capture(_records(*items), protocol=P)
    assert f"{P}.{check_id}" in _failed(tally), sorted(_failed(tally))
    assert _errored(tally) == {}


@pytest.mark.parametrize("junk", [
    b"null", b"1", b'"x"', b"{}", b'{"namespace": 1}', b'{"event_type": 7}', b'{"namespace": null, "fields": [null]}',
    b'{"event_type": "insert", "domain": -1, "server_id": 1.5, "sequence": "a", "event_number": 0, '
    b'"table_schema": 1, "table_name": [], "id": {"a": 1}}',
    b'{"namespace": "MaxScaleChangeDataSchema.avro", "gtid": 5, "version": "x", "table": [], "fields": '
    b'[{"name": "domain"}, 1, "x", {"type": ["null"]}, {"name": "c", "type": ["null", 5], "real_type": 1}]}',
    b"[" * 5000, b'{"a": 1e999999}',
])
def test_any_junk_gives_findings_and_no_errors(junk: bytes) -> None:
    for key in ("0-1-6:1", "0-1-6", "x-y-z", None):
        tally = check_capture(_records(("0-1-5", _compact(SCHEMA)), (key, junk)), protocol=P)
        assert _errored(tally) == {}
        assert _failed(tally), (key, junk)


def _first_whitespace_outside_strings(text: str) -> int | None:
    """The rule spelled out character by character (the checker's is one regular expression)."""
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in " \t\r\n":
            return i
    return None


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=' "\\a1\t\n\r{}:,\u00e9\x0b\x0c', max_size=60))
def test_compact_json_finds_the_first_whitespace_outside_a_string(text: str) -> None:
    from conformance.protocols.maxscale_kafkacdc.jsontext import whitespace_outside_strings

    assert whitespace_outside_strings(text) == _first_whitespace_outside_strings(text)
    assert whitespace_outside_strings('{"a":"b c","d":"e\\" f"}') is None
    assert whitespace_outside_strings('{"a": 1}') == 5
