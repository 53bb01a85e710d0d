"""Helpers that turn the golden vectors' TiDB column descriptions into model tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from conformance.model import Column, Index, Kind, SqlType, Table

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
AVRO_VECTORS = FIXTURES / "ticdc" / "avro"

_MYSQL_TYPES = {
    ("TypeTiny", False): Kind.TINYINT, ("TypeShort", False): Kind.SMALLINT,
    ("TypeInt24", False): Kind.MEDIUMINT, ("TypeLong", False): Kind.INT,
    ("TypeLonglong", False): Kind.BIGINT, ("TypeFloat", False): Kind.FLOAT,
    ("TypeDouble", False): Kind.DOUBLE, ("TypeBit", False): Kind.BIT,
    ("TypeNewDecimal", False): Kind.DECIMAL,
    ("TypeTinyBlob", False): Kind.TINYTEXT, ("TypeTinyBlob", True): Kind.TINYBLOB,
    ("TypeMediumBlob", False): Kind.MEDIUMTEXT, ("TypeMediumBlob", True): Kind.MEDIUMBLOB,
    ("TypeBlob", False): Kind.TEXT, ("TypeBlob", True): Kind.BLOB,
    ("TypeLongBlob", False): Kind.LONGTEXT, ("TypeLongBlob", True): Kind.LONGBLOB,
    ("TypeVarchar", False): Kind.VARCHAR, ("TypeVarchar", True): Kind.VARBINARY,
    ("TypeVarString", False): Kind.VARCHAR, ("TypeVarString", True): Kind.VARBINARY,
    ("TypeString", False): Kind.CHAR, ("TypeString", True): Kind.BINARY,
    ("TypeEnum", False): Kind.ENUM, ("TypeSet", False): Kind.SET, ("TypeJSON", False): Kind.JSON,
    ("TypeDate", False): Kind.DATE, ("TypeDatetime", False): Kind.DATETIME,
    ("TypeTimestamp", False): Kind.TIMESTAMP, ("TypeDuration", False): Kind.TIME,
    ("TypeYear", False): Kind.YEAR,
}


def load(name: str) -> Any:
    return json.loads((AVRO_VECTORS / name).read_text(encoding="utf-8"))


def sql_type(entry: dict[str, Any], *, elements: tuple[str, ...] = ("a", "b")) -> SqlType:
    binary = "Binary" in entry["flags"]
    kind = _MYSQL_TYPES[(entry["mysql_type"], binary)]
    kw: dict[str, Any] = {"unsigned": "Unsigned" in entry["flags"]}
    if kind in (Kind.VARCHAR, Kind.VARBINARY):
        kw["length"] = 255
    if kind in (Kind.ENUM, Kind.SET):
        kw["elements"] = elements
    return SqlType(kind, **kw)


def golden_table(*, name: str = "avroencode", with_id: bool = True,
                 elements: tuple[str, ...] = ("a", "b")) -> Table:
    """`newLargeEvent()` of tiflow's avro_test.go: `id` INT PK (column ID 1000), then every
    vector column NOT NULL (IDs 1..36) followed by its nullable twin (IDs 37..72)."""
    entries = load("column_vectors.json")["columns"]
    n = len(entries)
    cols: list[Column] = []
    if with_id:
        cols.append(Column("id", SqlType(Kind.INT), nullable=False, column_id=1000))
    for i, e in enumerate(entries, start=1):
        t = sql_type(e, elements=elements)
        cols.append(Column(e["name"], t, nullable=False, column_id=i))
        cols.append(Column(e["name"] + "nullable", t, nullable=True, column_id=n + i))
    indexes = (Index("PRIMARY", ("id",), primary=True, index_id=1),) if with_id else (
        Index("PRIMARY", ("tiny",), primary=True, index_id=1),)
    return Table("testdb", name, tuple(cols), indexes, table_id=1, version=1)
