"""TiCDC Simple against golden data from pingcap/tiflow and the published docs."""

from __future__ import annotations

import json

from golden import FIXTURES

from conformance.model import Column, Default, DefaultKind, Index, Kind, SqlType, Table
from conformance.protocols.ticdc_simple import spec

SIMPLE = FIXTURES / "ticdc" / "simple"


def _t3() -> Table:
    """`create table test.t3(...)` of tiflow's TestNewTableSchema, column by column."""
    K = Kind
    specs = [
        ("t", SqlType(K.TINYINT), False, None), ("tu1", SqlType(K.TINYINT, unsigned=True), True, None),
        ("s", SqlType(K.SMALLINT), True, None), ("su1", SqlType(K.SMALLINT, unsigned=True), True, None),
        ("m", SqlType(K.MEDIUMINT), True, None), ("mu1", SqlType(K.MEDIUMINT, unsigned=True), True, None),
        ("i", SqlType(K.INT), True, 100), ("iu1", SqlType(K.INT, unsigned=True), True, None),
        ("bi", SqlType(K.BIGINT), True, None), ("biu1", SqlType(K.BIGINT, unsigned=True), True, None),
        ("floatT", SqlType(K.FLOAT), True, None), ("doubleT", SqlType(K.DOUBLE), True, None),
        ("decimalT", SqlType(K.DECIMAL), True, None), ("floatTu", SqlType(K.FLOAT, unsigned=True), True, None),
        ("doubleTu", SqlType(K.DOUBLE, unsigned=True), True, None),
        ("decimalTu", SqlType(K.DECIMAL, unsigned=True), True, None),
        ("varcharT", SqlType(K.VARCHAR, length=255), True, None), ("charT", SqlType(K.CHAR, length=255), True, None),
        ("binaryT", SqlType(K.BINARY, length=255), True, None),
        ("varbinaryT", SqlType(K.VARBINARY, length=255), True, None),
        ("tinytextT", SqlType(K.TINYTEXT), True, None), ("textT", SqlType(K.TEXT), True, None),
        ("mediumtextT", SqlType(K.MEDIUMTEXT), True, None), ("longtextT", SqlType(K.LONGTEXT), True, None),
        ("tinyblobT", SqlType(K.TINYBLOB), True, None), ("blobT", SqlType(K.BLOB), True, None),
        ("mediumblobT", SqlType(K.MEDIUMBLOB), True, None), ("longblobT", SqlType(K.LONGBLOB), True, None),
        ("dateT", SqlType(K.DATE), True, None), ("datetimeT", SqlType(K.DATETIME), True, None),
        ("timestampT", SqlType(K.TIMESTAMP), True, None), ("timeT", SqlType(K.TIME), True, None),
        ("yearT", SqlType(K.YEAR), True, None), ("enumT", SqlType(K.ENUM, elements=("a", "b", "c")), True, "b"),
        ("setT", SqlType(K.SET, elements=("a", "b", "c")), True, None), ("bitT", SqlType(K.BIT, length=10), True, None),
        ("jsonT", SqlType(K.JSON), True, None),
    ]
    cols = tuple(Column(n, t, nullable, Default(DefaultKind.VALUE, d) if d is not None else Default(), i + 1)
                 for i, (n, t, nullable, d) in enumerate(specs))
    return Table("test", "t3", cols, (Index("PRIMARY", ("t",), primary=True, index_id=1),), table_id=1, version=2)


def test_table_schema_matches_tiflow() -> None:
    golden = json.loads((SIMPLE / "table_schema_vectors.json").read_text())
    want = golden["table_schema_json"]
    got = spec.table_schema(_t3(), avro=False)
    # The model has no virtual generated columns (`tgen`): compare the others.
    want_cols = [c for c in want["columns"] if c["name"] != "tgen"]
    assert got["columns"] == want_cols
    assert got["indexes"] == want["indexes"]
    assert list(got) == ["schema", "table", "tableID", "version", "columns", "indexes"]


def test_secondary_indexes_then_synthetic_primary() -> None:
    golden = json.loads((SIMPLE / "table_schema_vectors.json").read_text())["other_cases"]["t1"]
    i, v = SqlType(Kind.INT), SqlType(Kind.VARCHAR, length=64)
    cols = (Column("id", i, False, column_id=1), Column("name", v, False, column_id=2),
            Column("age", i, True, column_id=3), Column("email", SqlType(Kind.VARCHAR, length=255), False, column_id=4))
    t = Table("test", "t1", cols, (Index("PRIMARY", ("id",), primary=True, index_id=1),
                                  Index("idx_name", ("name",), unique=True, index_id=2),
                                  Index("idx_age_email", ("age", "email"), index_id=3)))
    assert spec.indexes(t) == golden["indexes"]
