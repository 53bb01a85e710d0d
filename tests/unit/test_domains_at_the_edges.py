"""What real TiCDC sees and the model now expresses (issue 11): VECTOR, generated columns, dates a
relaxed sql_mode stores, identifiers and defaults at their limits; in the model, in the SQL it
prints, and in the generators' default domains (the seeded sampler and hypothesis alike)."""

from __future__ import annotations

import calendar
import json
from collections import Counter

import pytest
from hypothesis import find, settings

from conformance.model import Column, Index, InvalidType, Kind, Op, RowChange, SqlType, Table
from conformance.model.dialects import TIDB, workload_sql
from conformance.model.serde import workload_from_json, workload_to_json
from conformance.model.sql import SESSION_PREAMBLE, column_definition, literal
from conformance.model.table import NO_DEFAULT, Default, DefaultKind, Generated
from conformance.model.types import NO_LITERAL_DEFAULT_KINDS
from conformance.model.values import (
    FLOAT32_MAX,
    FLOAT32_MIN_SUBNORMAL,
    Date,
    DateTime,
    Vector,
    mysql_text,
    parse_vector,
    to_float32,
    values_equal,
)
from conformance.strategies import sample_workload, simplest_value, values_for
from conformance.strategies.names import MAX_IDENTIFIER

INT = SqlType(Kind.INT)


# -- VECTOR -----------------------------------------------------------------------------------------

def test_vector_type() -> None:
    assert SqlType(Kind.VECTOR, length=3).sql() == "VECTOR(3)"
    assert SqlType(Kind.VECTOR).sql() == "VECTOR"
    for bad in (0, 16384):
        with pytest.raises(InvalidType):
            SqlType(Kind.VECTOR, length=bad)
    with pytest.raises(InvalidType):
        SqlType(Kind.VECTOR, fsp=1)
    assert Kind.VECTOR in NO_LITERAL_DEFAULT_KINDS


@pytest.mark.parametrize(("elements", "text"), [
    ((1.0, -2.5, to_float32(0.1)), "[1,-2.5,0.1]"),
    ((0.0, -0.0), "[0,-0]"),
    ((FLOAT32_MAX,), "[340282350000000000000000000000000000000]"),
    ((FLOAT32_MIN_SUBNORMAL,), "[0." + "0" * 44 + "1]"),
    ((to_float32(1e20), to_float32(1e-7)), "[100000000000000000000,0.0000001]"),
    ((), "[]"),
])
def test_vector_text_is_tidbs(elements: tuple[float, ...], text: str) -> None:
    """TiDB's VectorFloat32.String(): strconv.AppendFloat(x, 'f', -1, 32) per element, joined by ','."""
    v = Vector(elements)
    assert v.text() == text == mysql_text(SqlType(Kind.VECTOR), v)
    assert parse_vector(text).text() == text


@pytest.mark.parametrize("text", ["[1.0]", "[1, 2]", "[1e5]", "1,2", "[0.1000]", "[3.5e38]", "[nan]"])
def test_parse_vector_refuses_what_tidb_never_prints(text: str) -> None:
    with pytest.raises(ValueError):
        parse_vector(text)


def test_vectors_compare_as_sql_and_print_apart() -> None:
    a, b = Vector((0.0,)), Vector((-0.0,))
    assert a == b  # SQL equality: an UPDATE to -0 changes nothing
    assert not values_equal(SqlType(Kind.VECTOR), a, b)  # but TiDB prints them differently


# -- generated columns --------------------------------------------------------------------------------

def _generated_table() -> Table:
    cols = (Column("k", INT, False, column_id=1),
            Column("g", INT, False, NO_DEFAULT, 2, Generated("`k`", False, ("k",))),
            Column("s", INT, True, NO_DEFAULT, 3, Generated("`k` + 1", True, ("k",))),
            Column("c", INT, False, column_id=4))
    return Table("db", "t", cols, (Index("uk_g", ("g",), unique=True, index_id=1),
                                  Index("uk_c", ("c",), unique=True, index_id=2)))


def test_the_handle_key_skips_virtual_columns() -> None:
    t = _generated_table()
    assert [c.name for c in t.handle_key_columns()] == ["c"]  # uk_g comes first but is over a virtual column
    assert [c.name for c in t.stored_columns] == ["k", "s", "c"]
    assert t.unique_key_column_names() == {"c"}  # a virtual column is in no row: it never splits an update


def test_generated_columns_in_sql() -> None:
    t = _generated_table()
    assert column_definition(t.column("g")) == "`g` INT GENERATED ALWAYS AS (`k`) VIRTUAL NOT NULL"
    assert column_definition(t.column("s")) == "`s` INT GENERATED ALWAYS AS (`k` + 1) STORED NULL"
    row = {"k": 1, "g": 1, "s": 2, "c": 5}
    assert TIDB.dml(RowChange(Op.INSERT, t, None, row)) == "INSERT INTO `db`.`t` (`k`, `c`) VALUES (1, 5);"
    upd = TIDB.dml(RowChange(Op.UPDATE, t, row, {"k": 2, "g": 2, "s": 3, "c": 5}))
    assert upd == "UPDATE `db`.`t` SET `k` = 2 WHERE `c` = 5;"
    with pytest.raises(ValueError):
        Column("x", INT, True, Default(DefaultKind.VALUE, 1), 9, Generated("1"))


def test_relaxed_dates_need_their_sql_mode() -> None:
    assert "ALLOW_INVALID_DATES" in SESSION_PREAMBLE and "NO_ZERO" not in SESSION_PREAMBLE
    assert literal(SqlType(Kind.DATE), Date(2021, 2, 31)) == "'2021-02-31'"
    assert literal(SqlType(Kind.VECTOR), Vector((1.0, -0.5))) == "'[1,-0.5]'"


# -- the default domains ---------------------------------------------------------------------------------

def _not_calendar(d: Date | DateTime) -> bool:
    return not d.is_zero and (d.month == 0 or d.day == 0 or d.day > calendar.monthrange(max(d.year, 1), d.month)[1])


def test_the_default_sampler_generates_every_feature() -> None:
    seen: Counter[str] = Counter()
    for shard in range(300):
        w = sample_workload("edges", shard)
        for t in {c.table for c in w.row_changes()}:
            for c in t.columns:
                seen["virtual" if c.is_virtual else "stored generated" if c.generated else "plain"] += 1
                if c.type.kind is Kind.VECTOR:
                    seen["vector(d)" if c.type.length else "vector"] += 1
                if len(c.name) == MAX_IDENTIFIER:
                    seen["64-character column"] += 1
                if "`" in c.name:
                    seen["backtick column"] += 1
                if c.default.kind is DefaultKind.VALUE and c.default.value in ("null", ("null",)):
                    seen["'null' text default"] += 1
                if any("''" in e for e in c.type.elements):
                    seen["member with ''"] += 1
            if t.primary_key is None and any(c.is_virtual for ix in t.unique_indexes() for c in
                                             (t.column(n) for n in ix.columns)):
                seen["virtual unique index, no primary key"] += 1
            if MAX_IDENTIFIER in (len(t.name), len(t.database)):
                seen["64-character table or database"] += 1
        for ch in w.row_changes():
            for c in ch.table.columns:
                v = ch.image()[c.name]
                if isinstance(v, (Date, DateTime)) and _not_calendar(v):
                    seen[f"{c.type.kind.value} with zero parts or day past month end"] += 1
                if c.type.kind is Kind.TIMESTAMP and isinstance(v, DateTime) and v.is_zero:
                    seen["zero TIMESTAMP"] += 1
                if isinstance(v, Vector):
                    seen["vector value"] += 1
    want = {"virtual", "stored generated", "vector(d)", "vector", "64-character column", "backtick column",
            "'null' text default", "member with ''", "virtual unique index, no primary key",
            "64-character table or database", "DATE with zero parts or day past month end",
            "DATETIME with zero parts or day past month end", "zero TIMESTAMP", "vector value"}
    assert {k for k in want if seen[k] == 0} == set(), seen


def test_workloads_with_the_new_shapes_round_trip() -> None:
    for shard in range(40):
        w = sample_workload("edges-serde", shard)
        back = workload_from_json(json.loads(json.dumps(workload_to_json(w))))
        assert back.events == w.events
        assert workload_sql(back) == workload_sql(w)


def _find(t: SqlType, cond):  # type: ignore[no-untyped-def]
    return find(values_for(t), cond, settings=settings(max_examples=3000, database=None, derandomize=True))


def test_hypothesis_reaches_the_edges_and_shrinks_them_away() -> None:
    date, dt = SqlType(Kind.DATE), SqlType(Kind.DATETIME, fsp=3)
    assert _not_calendar(_find(date, _not_calendar))
    assert _not_calendar(_find(dt, _not_calendar))
    vec = _find(SqlType(Kind.VECTOR), lambda v: len(v) > 1 and any(x < 0 for x in v.elements))
    assert len(vec) == 2  # shrunk
    # The minimal examples are plain: the rare branches shrink away.
    assert _find(date, lambda v: True) == simplest_value(date) == Date(2000, 1, 1)
    assert _find(dt, lambda v: True) == simplest_value(dt) == DateTime(2000, 1, 1)
    assert len(_find(SqlType(Kind.VECTOR, length=3), lambda v: True)) == 3
