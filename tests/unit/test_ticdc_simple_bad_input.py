"""TiCDC Simple: a capture may hold any JSON where the protocol puts a string, an integer or an
object. Whatever it holds, the checker reports findings at the record that holds it: it never
crashes (exit 2, no report) and no check errors out."""

from __future__ import annotations

import base64
import copy
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest
from golden import FIXTURES
from helpers import check_capture
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.checks import Outcome
from conformance.encoders import Record

P = "ticdc-simple"
DOCS = FIXTURES / "ticdc" / "docs_examples"


def _doc(name: str) -> dict[str, Any]:
    m: dict[str, Any] = json.loads((DOCS / f"simple_{name}.json").read_text())
    return m


def _boot() -> dict[str, Any]:
    """The docs' BOOTSTRAP, for the table the docs' DMLs name."""
    b = _doc("bootstrap")
    b["tableSchema"]["table"] = "user"
    return b


INSERT = _doc("insert")
BOOT = _boot()


def _with_schema(**over: Any) -> dict[str, Any]:
    b = copy.deepcopy(BOOT)
    b["tableSchema"].update(over)
    return b


def _one_column(name: Any, data_type: dict[str, Any]) -> dict[str, Any]:
    """A BOOTSTRAP of `user` whose only column is `name` with `data_type` (primary key on it)."""
    return _with_schema(columns=[{"name": name, "dataType": data_type, "nullable": True, "default": None}],
                        indexes=[{"name": "primary", "unique": True, "primary": True, "nullable": False,
                                  "columns": [name]}])


def _records(*msgs: dict[str, Any] | bytes, partition: int = 0) -> list[Record]:
    return [Record("tidb_simple", None, m if isinstance(m, bytes) else json.dumps(m).encode(), partition, offset=i)
            for i, m in enumerate(msgs)]


def _errored(tally: Any) -> list[tuple[str, str]]:
    return [(t.id, t.errors[0].strip().splitlines()[-1]) for t in tally if t.errored]


def _finding(tally: Any, check_id: str) -> Any:
    t = tally.checks[check_id]
    assert t.outcome is Outcome.FAILED, (check_id, t.outcome, sorted(tally.failed_ids()), _errored(tally))
    return next(iter(t.failures.values()))


# -- item 1: values used as keys -------------------------------------------------------------------------

# (messages, the check that must report it, the offset of the record it is about)
KEY_CASES: dict[str, tuple[list[dict[str, Any]], str, int]] = {
    "dml-schemaVersion-object": ([BOOT, {**INSERT, "schemaVersion": {"v": 1}}], "ticdc-simple.message.fields", 1),
    "dml-database-list": ([{**INSERT, "database": ["simple"]}], "ticdc-simple.message.fields", 0),
    "dml-table-object": ([BOOT, {**INSERT, "table": {"a": 1}}], "ticdc-simple.message.fields", 1),
    "dml-tableID-list": ([BOOT, {**INSERT, "tableID": [148]}], "ticdc-simple.message.fields", 1),
    "schema-version-list": ([_with_schema(version=[1])], "ticdc-simple.schema.table-schema", 0),
    "schema-schema-list": ([_with_schema(schema=["simple"])], "ticdc-simple.schema.table-schema", 0),
    "schema-tableID-list": ([_with_schema(tableID=[148]), INSERT], "ticdc-simple.schema.table-schema", 0),
    "schema-column-name-list": ([_one_column(["id"], {"mysqlType": "int", "charset": "binary",
                                                      "collate": "binary", "length": 11}), INSERT],
                                "ticdc-simple.schema.table-schema", 0),
    "schema-mysqlType-list": ([_one_column("id", {"mysqlType": ["int"]}), INSERT],
                              "ticdc-simple.schema.table-schema", 0),
}


@pytest.mark.parametrize("name", sorted(KEY_CASES))
@pytest.mark.parametrize("partitions", [1, 3])
def test_wrongly_typed_keys_are_findings(name: str, partitions: int) -> None:
    msgs, check_id, offset = KEY_CASES[name]
    tally = check_capture(_records(*msgs), protocol=P, partitions=partitions)
    assert _errored(tally) == []
    f = _finding(tally, check_id)
    assert (f.location.topic, f.location.partition, f.location.offset) == ("tidb_simple", 0, offset)


@pytest.mark.parametrize("name", ["dml-schemaVersion-object", "dml-database-list", "schema-version-list"])
def test_the_cli_reports_them_and_exits_1(name: str, tmp_path: Path) -> None:
    """What the audit ran: `conformance check` on such a capture used to end in an internal error."""
    from conformance.cli.main import main

    msgs, check_id, offset = KEY_CASES[name]
    capture = tmp_path / "c.jsonl"
    capture.write_text("".join(json.dumps({"topic": "tidb_simple", "partition": 0, "offset": i, "key": None,
                                           "value": base64.b64encode(json.dumps(m).encode()).decode()}) + "\n"
                               for i, m in enumerate(msgs)))
    report = tmp_path / "r.json"
    rc = main(["check", "--protocol", P, "--input", str(capture), "--report-json", str(report)])
    data = json.loads(report.read_text())
    outcomes = {c["check"]: c["outcome"] for c in data["results"]}
    assert rc == 1
    assert outcomes[check_id] == "failed"
    assert "errored" not in outcomes.values()


# -- item 2: values that made checks error out ----------------------------------------------------------

FLOAT = {"mysqlType": "float", "charset": "binary", "collate": "binary", "length": 12}
DOUBLE = {"mysqlType": "double", "charset": "binary", "collate": "binary", "length": 22}
JSON_T = {"mysqlType": "json", "charset": "binary", "collate": "binary", "length": 4294967295}
ENUM = {"mysqlType": "enum", "charset": "utf8mb4", "collate": "utf8mb4_bin", "length": 1}
SET = {"mysqlType": "set", "charset": "utf8mb4", "collate": "utf8mb4_bin", "length": 5}


def _dml(col: str, value: Any) -> dict[str, Any]:
    return {**INSERT, "data": {col: value}}


VALUE_CASES: dict[str, tuple[list[dict[str, Any]], str, str | None]] = {
    # (messages, the check that must fail, a text its finding says)
    "type-list": ([{"version": 1, "type": ["INSERT"], "commitTs": 1, "buildTs": 1708923662983}],
                  "ticdc-simple.message.type", "unknown message type"),
    "type-object-dml": ([{**INSERT, "type": {"a": 1}}], "ticdc-simple.message.type", None),
    "float-above-float32": ([_one_column("v", FLOAT), _dml("v", "4" + "0" * 38)], "ticdc-simple.value.float",
                            "beyond float32's range"),
    "double-309-nines": ([_one_column("v", DOUBLE), _dml("v", "9" * 309)], "ticdc-simple.value.double",
                         "beyond float64's range"),
    "enum-elements-int": ([_one_column("v", {**ENUM, "elements": 3}), _dml("v", "3")],
                          "ticdc-simple.schema.table-schema", "elements is not a list of strings"),
    "set-elements-int": ([_one_column("v", {**SET, "elements": 3}), _dml("v", "3")],
                         "ticdc-simple.schema.table-schema", "elements is not a list of strings"),
    "json-100000-deep": ([_one_column("v", JSON_T), _dml("v", "[" * 100_000 + "]" * 100_000)],
                         "ticdc-simple.value.json", "nested deeper than TiDB's 100 levels"),
    "json-101-deep": ([_one_column("v", JSON_T), _dml("v", "[" * 101 + "1" + "]" * 101)],
                      "ticdc-simple.value.json", "nested deeper than TiDB's 100 levels"),
    "int-5000-digits": ([_one_column("id", {"mysqlType": "int", "charset": "binary", "collate": "binary",
                                            "length": 11}), _dml("id", "1" * 5000)], "ticdc-simple.value.int",
                        "outside int"),
    "bit-negative-length": ([_one_column("v", {"mysqlType": "bit", "charset": "binary", "collate": "binary",
                                               "length": -1}), _dml("v", "1")],
                            "ticdc-simple.schema.table-schema", "length is negative"),
    "commitTs-above-uint64": ([{**INSERT, "commitTs": 1 << 64}], "ticdc-simple.message.fields", "64 bits"),
}


@pytest.mark.parametrize("name", sorted(VALUE_CASES))
def test_bad_values_are_findings_not_errors(name: str) -> None:
    msgs, check_id, says = VALUE_CASES[name]
    tally = check_capture(_records(*msgs), protocol=P, partitions=1)
    assert _errored(tally) == []
    f = _finding(tally, check_id)
    assert says is None or says in f.message, f.message
    assert f.location.offset == len(msgs) - 1 if check_id.startswith("ticdc-simple.value.") else True


def test_a_json_value_just_inside_tidbs_depth_passes() -> None:
    doc = "[" * 100 + "1" + "]" * 100  # depth 100: TiDB stores it
    tally = check_capture(_records(_one_column("v", JSON_T), _dml("v", doc)), protocol=P, partitions=1)
    assert tally.checks["ticdc-simple.value.json"].outcome is Outcome.PASSED


@pytest.mark.parametrize(("name", "raw"), [
    ("nested-message", b'{"version": 1, "type": "INSERT", "data": {"v": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}"),
    ("nested-40", b'{"version": 1, "type": "WATERMARK", "x": ' + b"[" * 40 + b"]" * 40 + b"}"),
    ("huge-integer", b'{"version": 1, "type": "WATERMARK", "commitTs": ' + b"9" * 5000 + b"}"),
])
def test_messages_python_cannot_hold_are_undecodable_not_crashes(name: str, raw: bytes) -> None:
    tally = check_capture(_records(raw), protocol=P, partitions=1)
    assert _errored(tally) == []
    f = _finding(tally, "ticdc-simple.message.decodes")
    assert f.location.offset == 0


def test_avro_message_type_naming_another_record_is_a_finding() -> None:
    """Message{type: DDL, payload: Watermark{…}}: the payload has no `type` of its own."""
    schema = fastavro.parse_schema(json.loads((FIXTURES / "ticdc" / "simple" / "message.json").read_text()))
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, schema, ("com.pingcap.simple.avro.Message", {
        "type": "DDL", "payload": ("com.pingcap.simple.avro.Watermark",
                                   {"version": 1, "commitTs": 447984084414103554, "buildTs": 1708923662983})}))
    tally = check_capture(_records(buf.getvalue()), {"encoding-format": "avro"}, protocol=P, partitions=1)
    assert _errored(tally) == []
    _finding(tally, "ticdc-simple.message.type")


# -- in general: any JSON anywhere -------------------------------------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False)
                     | st.text(max_size=8),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                  max_size=3),
                     max_leaves=8)


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, (*prefix, i))
    return out


def _replace(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    obj = copy.deepcopy(obj)
    cur = obj
    for p in path[:-1]:
        cur = cur[p]
    cur[path[-1]] = value
    return obj


BASE = [BOOT, INSERT, _doc("update"), _doc("delete"), _doc("watermark")]


@settings(max_examples=150)
@given(which=st.integers(0, len(BASE) - 1), pick=st.integers(0, 10_000), value=_JSON, partitions=st.sampled_from([1, 3]))
def test_any_json_anywhere_gives_findings_never_errors(which: int, pick: int, value: Any, partitions: int) -> None:
    """Replace any field of any docs message (a BOOTSTRAP, DMLs, a WATERMARK) by any JSON: no
    check errors out and the checker does not raise."""
    paths = _paths(BASE[which])
    msgs = list(BASE)
    msgs[which] = _replace(BASE[which], paths[pick % len(paths)], value)
    tally = check_capture(_records(*msgs), protocol=P, partitions=partitions)
    assert _errored(tally) == []
