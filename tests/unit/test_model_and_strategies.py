"""The canonical model and the generators: valid by construction, deterministic, shrinkable."""

from __future__ import annotations

import dataclasses
import decimal
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.model import Column, Ddl, DdlKind, Index, InvalidType, Kind, Op, SqlType, Table, Transaction, gojson
from conformance.model.dialects import workload_sql
from conformance.model.serde import WorkloadFormatError, workload_from_json, workload_to_json
from conformance.model.values import (
    Date,
    DateTime,
    Json,
    Time,
    decimal_text,
    go_format_float,
    to_float32,
    twos_complement_min,
)
from conformance.strategies import (
    ALL_KINDS,
    DEFAULT_SHAPE,
    edge_values,
    sample_workload,
    sql_types,
    tables,
    values_for,
    workloads,
)
from conformance.strategies.history import sql_equal
from conformance.strategies.names import avro_mangle, kafka_mangle


def test_invalid_types_are_refused() -> None:
    for bad in (dict(kind=Kind.DECIMAL, precision=66), dict(kind=Kind.DECIMAL, precision=5, scale=6),
                dict(kind=Kind.BIT, length=65), dict(kind=Kind.DATETIME, fsp=7), dict(kind=Kind.VARCHAR),
                dict(kind=Kind.ENUM), dict(kind=Kind.ENUM, elements=("a", "A")), dict(kind=Kind.DATE, unsigned=True)):
        with pytest.raises(InvalidType):
            SqlType(**bad)


def test_type_defaults_follow_mysql() -> None:
    assert SqlType(Kind.DECIMAL).sql() == "DECIMAL(10,0)"
    assert SqlType(Kind.BIT).length == 1
    assert SqlType(Kind.VARBINARY, length=4).charset == "binary"
    assert SqlType(Kind.ENUM, elements=("it's", "a,b")).sql() == "ENUM('it''s','a,b')"


@pytest.mark.parametrize(("v", "scale", "text"), [
    ("0", 2, "0.00"), ("-0.00", 2, "0.00"), ("-1.5", 3, "-1.500"), ("0.05", 2, "0.05"), ("123", 0, "123"),
    ("99999999999999999999999999999999999.999999999999999999999999999999", 30,
     "99999999999999999999999999999999999.999999999999999999999999999999"),
])
def test_decimal_text(v: str, scale: int, text: str) -> None:
    assert decimal_text(decimal.Decimal(v), scale) == text


@pytest.mark.parametrize(("x", "bits", "text"), [
    (3.140000104904175, 64, "3.140000104904175"), (1e20, 64, "100000000000000000000"), (1e21, 64, "1e+21"),
    (1e-7, 64, "1e-7"), (0.000001, 64, "0.000001"), (-0.0, 64, "-0"), (to_float32(3.14), 32, "3.14"),
    (123456789.0, 64, "123456789"), (1.5e-10, 64, "1.5e-10"),
])
def test_go_float_format(x: float, bits: int, text: str) -> None:
    assert go_format_float(x, bits) == text


def test_go_json_escapes_like_go() -> None:
    assert gojson.dumps({"a": "<&>\u2028\b\x01é"}) == '{"a":"\\u003c\\u0026\\u003e\\u2028\\b\\u0001é"}'
    assert gojson.dumps([b"\x02\xaa", None, True, 1.5]) == '["Aqo=",null,true,1.5]'


def test_temporal_text() -> None:
    assert DateTime(2020, 2, 3, 4, 5, 6, 789000).text(3) == "2020-02-03 04:05:06.789"
    assert DateTime(0, 0, 0).text(2) == "0000-00-00 00:00:00.00"
    assert Time(True, 838, 59, 59).text(0) == "-838:59:59"
    assert Date(0, 0, 0).text() == "0000-00-00"


def test_json_text_is_mysql_style() -> None:
    assert Json({"b": [1, 2], "a": {"x": None}}).text() == '{"a": {"x": null}, "b": [1, 2]}'


def test_twos_complement_is_minimal() -> None:
    assert [twos_complement_min(n).hex() for n in (0, 127, 128, -128, -129, -32768)] == [
        "00", "7f", "0080", "80", "ff7f", "8000"]


def test_handle_key_selection() -> None:
    i = SqlType(Kind.INT)
    cols = (Column("a", i, False), Column("b", i, True), Column("c", i, False), Column("d", i, False))
    t = Table("db", "t", cols, (Index("u1", ("a", "c"), unique=True, index_id=1),
                                Index("u2", ("b",), unique=True, index_id=2),
                                Index("u3", ("d",), unique=True, index_id=3)))
    assert [c.name for c in t.handle_key_columns()] == ["d"]  # fewest NOT NULL columns
    t2 = t.evolve(indexes=t.indexes + (Index("PRIMARY", ("c", "a"), primary=True, index_id=4),))
    assert [c.name for c in t2.handle_key_columns()] == ["a", "c"]  # PK, in table order


def test_sampling_is_deterministic() -> None:
    a = workload_to_json(sample_workload(42, 7))
    b = workload_to_json(sample_workload(42, 7))
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
    assert workload_to_json(sample_workload(42, 8)) != a


def test_sampler_covers_every_type_and_the_edges() -> None:
    kinds: set[Kind] = set()
    big_unsigned = zero_date = neg_zero = nul_bytes = four_byte = 0
    for shard in range(300):
        for c in sample_workload("coverage", shard).row_changes():
            for col in c.table.columns:
                kinds.add(col.type.kind)
                v = c.image()[col.name]
                big_unsigned += isinstance(v, int) and v > (1 << 63) - 1
                zero_date += isinstance(v, (Date, DateTime)) and v.is_zero
                neg_zero += isinstance(v, float) and v == 0 and str(v) == "-0.0"
                nul_bytes += isinstance(v, bytes) and b"\0" in v
                four_byte += isinstance(v, str) and any(ord(ch) > 0xFFFF for ch in v)
    assert kinds == set(ALL_KINDS)
    assert min(big_unsigned, zero_date, neg_zero, nul_bytes, four_byte) > 0


def _check_history(w) -> None:  # type: ignore[no-untyped-def]
    """Every UPDATE/DELETE touches a live row; keys stay unique; updates change something."""
    live: dict[tuple[int, tuple[object, ...]], dict] = {}
    for e in w.events:
        if isinstance(e, Ddl) and e.pre_table is not None and e.table is not None:
            if e.table.table_id != e.pre_table.table_id:
                live = {k: v for k, v in live.items() if k[0] != e.pre_table.table_id}
            else:
                for k, row in list(live.items()):
                    if k[0] == e.table.table_id:
                        live[k] = {c.name: row.get(c.name) for c in e.table.columns} | {
                            c.name: (c.default.value if c.default.kind.value == "value" else None)
                            for c in e.table.columns if c.name not in row}
        if not isinstance(e, Transaction):
            continue
        for c in e.changes:
            tid = c.table.table_id
            if c.op is Op.INSERT:
                k = (tid, c.handle_key(c.after))
                assert k not in live
                live[k] = dict(c.after)
            else:
                k = (tid, c.handle_key(c.before))
                assert k in live, f"{c.op} of a row that does not exist"
                assert live[k] == c.before
                del live[k]
                if c.op is Op.UPDATE:
                    assert any(not sql_equal(col.type, c.before[col.name], c.after[col.name]) for col in c.table.columns)
                    live[(tid, c.handle_key(c.after))] = dict(c.after)
            for col in c.table.columns:
                v = c.image()[col.name]
                assert v is not None or col.nullable


def test_sampled_histories_are_consistent() -> None:
    for shard in range(150):
        _check_history(sample_workload("history", shard))


def test_dropped_column_names_are_never_reused() -> None:
    """Re-adding a dropped name with another type would make the next Avro schema unreadable
    with the last registered one: BACKWARD refuses it and TiCDC stops by design (seed 000). The
    1M-record benchmark met it at shard 193 of seed `bench`; this shape reaches it quickly."""
    shape = dataclasses.replace(DEFAULT_SHAPE, tables=(1, 1), transactions=(60, 60), ddl_rate=0.5,
                                ddl_kinds=(DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN))
    drops = 0
    for shard in range(80):
        retired: dict[int, set[str]] = {}
        for e in sample_workload("retired", shard, shape).events:
            if not isinstance(e, Ddl) or e.table is None or e.pre_table is None:
                continue
            before, after = {c.name for c in e.pre_table.columns}, {c.name for c in e.table.columns}
            gone = retired.setdefault(e.table.table_id, set())
            assert not (after - before) & gone, f"shard {shard}: {sorted((after - before) & gone)} re-added"
            gone |= before - after
            drops += len(before - after)
    assert drops > 50  # the shape did drop columns (and re-adds were possible)


@settings(max_examples=60)
@given(workloads())
def test_hypothesis_histories_are_consistent(w) -> None:  # type: ignore[no-untyped-def]
    _check_history(w)


@settings(max_examples=40)
@given(workloads())
def test_workload_json_round_trip(w) -> None:  # type: ignore[no-untyped-def]
    back = workload_from_json(json.loads(json.dumps(workload_to_json(w))))
    assert workload_sql(back) == workload_sql(w)
    assert len(back.events) == len(w.events)


def test_serde_refuses_other_formats() -> None:
    with pytest.raises(WorkloadFormatError):
        workload_from_json({"format": "cdc-conformance/workload", "format_version": 99})


@settings(max_examples=200)
@given(st.data())
def test_values_are_valid_for_their_type(data) -> None:  # type: ignore[no-untyped-def]
    t = data.draw(sql_types())
    v = data.draw(values_for(t))
    if t.is_integer:
        lo, hi = t.int_range()
        assert lo <= v <= hi
    elif t.kind is Kind.DECIMAL:
        assert -v.as_tuple().exponent == t.scale and len(v.as_tuple().digits) <= max(t.precision, t.scale + 1)
    elif t.kind is Kind.BIT:
        assert 0 <= v < 1 << t.length
    elif t.kind is Kind.CHAR:
        assert len(v) <= t.length and not v.endswith(" ")
    elif t.kind is Kind.BINARY:
        assert len(v) == t.length
    elif t.kind is Kind.FLOAT:
        assert to_float32(v) == v
    elif t.kind is Kind.SET:
        assert all(m in t.elements for m in v)
    elif t.kind is Kind.ENUM:
        assert v in t.elements
    for e in edge_values(t):
        assert e is not None


@settings(max_examples=50)
@given(tables())
def test_tables_have_a_handle_key_and_distinct_names(t: Table) -> None:
    assert t.handle_key_columns()
    assert all(not c.nullable for c in t.handle_key_columns())
    names = [c.name for c in t.columns]
    for mangle in (str.casefold, avro_mangle, kafka_mangle):
        assert len({mangle(n).casefold() for n in names}) == len(names)


def test_default_shape_has_odd_names() -> None:
    names = {c.name for s in range(60) for t in sample_workload("names", s).tables() for c in t.columns}
    assert any(not avro_mangle(n) == n for n in names)
    assert DEFAULT_SHAPE.odd_name_rate > 0


def test_invalid_strategy_arguments_raise() -> None:
    from hypothesis.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        sql_types([])
    with pytest.raises(InvalidArgument):
        values_for("INT")  # type: ignore[arg-type]
