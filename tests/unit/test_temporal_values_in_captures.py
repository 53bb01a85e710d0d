"""Temporal values at the edges of what a server stores, in captures of both TiCDC protocols.

The reference encoder writes a correctly shaped capture of one table (DATE, DATETIME, TIME,
TIMESTAMP, YEAR columns); one value of its INSERT is then replaced, and the capture is checked as
`conformance check` checks it (no workload). Values some sql_mode stores (the zero date, zero
parts, Feb 31, TIME ±838:59:59, a TIMESTAMP printed in a far zone) must pass every check; values
no server stores must still fail the value check of their type (model/mysql_text.py has the rule
and its sources)."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

import fastavro
import pytest
from helpers import check_capture, encode, problems

from conformance.checks import Outcome
from conformance.checks.results import Tally
from conformance.encoders import Record
from conformance.infra.inprocess import InProcessRegistry
from conformance.model import Column, Date, DateTime, Index, Kind, SqlType, Table, Time
from conformance.model.events import Ddl, DdlKind, Op, RowChange, Transaction, Watermark, Workload, tso
from conformance.model.sql import create_table
from conformance.protocols import get_protocol
from conformance.protocols.ticdc_simple import codec
from conformance.protocols.ticdc_simple.spec import AVRO_NS

T0 = 1_767_225_600_000  # ms: 2026-01-01

TABLE = Table("db", "temporal", (
    Column("id", SqlType(Kind.INT), False, column_id=1),
    Column("d", SqlType(Kind.DATE), True, column_id=2),
    Column("dt", SqlType(Kind.DATETIME), True, column_id=3),
    Column("t", SqlType(Kind.TIME), True, column_id=4),
    Column("t6", SqlType(Kind.TIME, fsp=6), True, column_id=5),
    Column("ts", SqlType(Kind.TIMESTAMP), True, column_id=6),
    Column("y", SqlType(Kind.YEAR), True, column_id=7),
), (Index("PRIMARY", ("id",), primary=True, index_id=1),), table_id=71, version=tso(T0 + 1000))

ROW = {"id": 1, "d": Date(2020, 1, 2), "dt": DateTime(2020, 1, 2, 3, 4, 5), "t": Time(False, 1, 2, 3),
       "t6": Time(False, 1, 2, 3, 4), "ts": DateTime(2020, 1, 2, 3, 4, 5), "y": 2020}

WORKLOAD = Workload((Ddl(DdlKind.CREATE_TABLE, TABLE.version, create_table(TABLE), TABLE, None, "db"),
                     Transaction(tso(T0 + 2000), (RowChange(Op.INSERT, TABLE, None, ROW),)),
                     Watermark(tso(T0 + 3000))), seed="temporal-edges", shard=0)

# (column, value as the server prints it, family): values some sql_mode lets a server store.
STORABLE: list[tuple[str, Any, str]] = [
    ("d", "0000-00-00", "date"),                    # the zero date (NO_ZERO_DATE off)
    ("d", "2020-00-15", "date"),                    # zero month (NO_ZERO_IN_DATE off)
    ("d", "2020-05-00", "date"),                    # zero day
    ("d", "2021-02-31", "date"),                    # ALLOW_INVALID_DATES
    ("dt", "0000-00-00 00:00:00", "datetime"),
    ("dt", "2020-00-00 12:00:00", "datetime"),
    ("dt", "2021-02-31 23:59:59", "datetime"),
    ("t", "838:59:59", "time"),
    ("t", "-838:59:59", "time"),
    ("t", "-00:00:01", "time"),
    ("t6", "838:59:59.000000", "time"),
    ("ts", "0000-00-00 00:00:00", "timestamp"),     # the zero TIMESTAMP
    ("y", 0, "year"),
    ("y", 2155, "year"),
]

# (column, value, family, rejected before this rule had one home?): what no server stores.
UNSTORABLE: list[tuple[str, Any, str]] = [
    ("d", "2020-13-01", "date"),
    ("d", "2020-01-32", "date"),
    ("dt", "2020-01-01 24:00:00", "datetime"),
    ("dt", "2020-01-01 00:60:00", "datetime"),
    ("t", "839:00:00", "time"),
    ("t", "-00:00:00", "time"),                     # negative zero: stored and printed as 00:00:00
    ("t6", "838:59:59.000001", "time"),             # MySQL/TiDB's TIME ends at 838:59:59.000000
    ("ts", "2021-02-31 00:00:00", "timestamp"),     # ALLOW_INVALID_DATES does not apply to TIMESTAMP
    ("ts", "2500-01-01 00:00:00", "timestamp"),     # no time zone prints a stored TIMESTAMP there
    ("y", 1900, "year"),
]


def _id(case: tuple[Any, ...]) -> str:
    return f"{case[0]}={case[1]}"


def _failed_on(tally: Tally, check_id: str, column: str) -> str:
    t = tally.checks[check_id]
    assert t.outcome is Outcome.FAILED, (check_id, t.outcome, problems(tally))
    msgs = [f.message for f in t.failures.values()]
    assert any(column in m for m in msgs), msgs
    others = set(problems(tally)) - {check_id}
    assert not others, problems(tally)
    return msgs[0]


# -- TiCDC Avro ----------------------------------------------------------------------------------

AVRO = get_protocol("ticdc-avro")


def _avro_capture() -> tuple[list[Record], InProcessRegistry]:
    """The reference's records for WORKLOAD, and the registry holding their schemas."""
    registry = InProcessRegistry()
    return encode("reference", {}, WORKLOAD, protocol="ticdc-avro", registry=registry, topic_prefix=""), registry


def _avro_with(records: list[Record], registry: InProcessRegistry, column: str, value: Any) -> list[Record]:
    """The records with `column` of every row value set to `value` (same schema id)."""
    out = []
    for r in records:
        if r.key is not None and r.value is not None and r.value[:1] == b"\x00":
            schema = fastavro.parse_schema(json.loads(registry.schema_by_id(int.from_bytes(r.value[1:5], "big"))))
            datum = fastavro.schemaless_reader(io.BytesIO(r.value[5:]), schema, None)
            assert isinstance(datum, dict) and column in datum, datum
            datum[column] = value
            buf = io.BytesIO()
            fastavro.schemaless_writer(buf, schema, datum)
            r = replace(r, value=r.value[:5] + buf.getvalue())
        out.append(r)
    return out


def _check_avro(records: list[Record], registry: InProcessRegistry) -> Tally:
    """As `conformance check` does: the log and the registry, no workload."""
    return check_capture(records, protocol="ticdc-avro", registry=registry)


@pytest.fixture(scope="module")
def avro_capture() -> tuple[list[Record], InProcessRegistry]:
    records, registry = _avro_capture()
    assert problems(_check_avro(records, registry)) == {}
    return records, registry


@pytest.mark.parametrize("case", STORABLE, ids=_id)
def test_avro_accepts_what_a_server_stores(case: tuple[str, Any, str],
                                           avro_capture: tuple[list[Record], InProcessRegistry]) -> None:
    column, value, family = case
    records, registry = avro_capture
    tally = _check_avro(_avro_with(records, registry, column, value), registry)
    assert problems(tally) == {}
    assert tally.checks[f"ticdc-avro.type.{family}"].outcome is Outcome.PASSED


@pytest.mark.parametrize("case", UNSTORABLE, ids=_id)
def test_avro_rejects_what_no_server_stores(case: tuple[str, Any, str],
                                            avro_capture: tuple[list[Record], InProcessRegistry]) -> None:
    column, value, family = case
    records, registry = avro_capture
    _failed_on(_check_avro(_avro_with(records, registry, column, value), registry), f"ticdc-avro.type.{family}",
               column)


def test_avro_timestamp_near_the_end_printed_far_east_passes(
        avro_capture: tuple[list[Record], InProcessRegistry]) -> None:
    """TiCDC prints TIMESTAMP in its `--tz`, which an Avro record does not name: the last storable
    instant printed at UTC+14 (Pacific/Kiritimati) is past 2038-01-19 03:14:07 and still fine."""
    records, registry = avro_capture
    for value in ("2038-01-19 17:14:07", "1969-12-31 12:00:01"):
        assert problems(_check_avro(_avro_with(records, registry, "ts", value), registry)) == {}


# -- TiCDC Simple --------------------------------------------------------------------------------

SIMPLE = "ticdc-simple"


def _simple_capture(encoding: str) -> list[Record]:
    p = get_protocol(SIMPLE)
    return encode("reference", p.resolve_options({"encoding-format": encoding}), WORKLOAD, protocol=SIMPLE)


def _simple_value(column: str, value: Any, avro: bool, location: str = "UTC") -> Any:
    if column == "ts":
        ts = {"location": location, "value": value}
        return (f"{AVRO_NS}.Timestamp", ts) if avro else ts
    if column == "y":
        return ("long", value) if avro else str(value)
    return ("string", value) if avro else value


def _simple_with(records: list[Record], column: str, value: Any, encoding: str, location: str = "UTC"
                 ) -> list[Record]:
    """The records with `column` of the INSERT's `data` set to `value`, rendered as TiCDC does."""
    avro = encoding == "avro"
    out, edited = [], 0
    for r in records:
        if avro:
            kind, payload, _ = codec.decode_avro(r.value or b"")
            if kind == "DML" and isinstance(payload.get("data"), dict):
                payload["data"][column] = _simple_value(column, value, True, location)
                r, edited = replace(r, value=codec.encode_avro("DML", payload)), edited + 1
        else:
            m = json.loads(r.value or b"{}")
            if m.get("type") == "INSERT":
                m["data"][column] = _simple_value(column, value, False, location)
                r, edited = replace(r, value=json.dumps(m).encode()), edited + 1
        out.append(r)
    assert edited == 1
    return out


def _check_simple(records: list[Record], encoding: str) -> Tally:
    return check_capture(records, {"encoding-format": encoding}, protocol=SIMPLE, partitions=3)


@pytest.fixture(scope="module", params=["json", "avro"])
def simple_capture(request: pytest.FixtureRequest) -> tuple[list[Record], str]:
    encoding: str = request.param
    records = _simple_capture(encoding)
    assert problems(_check_simple(records, encoding)) == {}
    return records, encoding


@pytest.mark.parametrize("case", STORABLE, ids=_id)
def test_simple_accepts_what_a_server_stores(case: tuple[str, Any, str],
                                             simple_capture: tuple[list[Record], str]) -> None:
    column, value, family = case
    records, encoding = simple_capture
    tally = _check_simple(_simple_with(records, column, value, encoding), encoding)
    assert problems(tally) == {}
    assert tally.checks[f"ticdc-simple.value.{family}"].outcome is Outcome.PASSED


@pytest.mark.parametrize("case", UNSTORABLE, ids=_id)
def test_simple_rejects_what_no_server_stores(case: tuple[str, Any, str],
                                              simple_capture: tuple[list[Record], str]) -> None:
    column, value, family = case
    records, encoding = simple_capture
    _failed_on(_check_simple(_simple_with(records, column, value, encoding), encoding),
               f"ticdc-simple.value.{family}", column)


@pytest.mark.parametrize(("location", "value", "passes"), [
    ("UTC", "2038-01-19 03:14:07", True),                 # MaxTimestamp, printed in UTC
    ("UTC", "2038-01-19 17:14:07", False),                # printed in UTC, so past the end
    ("Pacific/Kiritimati", "2038-01-19 17:14:07", True),  # the same text at UTC+14: MaxTimestamp
    ("Etc/GMT+12", "1969-12-31 12:00:01", True),          # MinTimestamp at UTC-12
    ("UTC", "1969-12-31 12:00:01", False),
])
def test_simple_timestamp_range_follows_its_location(location: str, value: str, passes: bool,
                                                     simple_capture: tuple[list[Record], str]) -> None:
    """A Simple TIMESTAMP names the zone it is printed in: in UTC the stored range is exact, in
    any other zone it is widened by the largest offset a zone can have."""
    records, encoding = simple_capture
    tally = _check_simple(_simple_with(records, "ts", value, encoding, location), encoding)
    if passes:
        assert problems(tally) == {}
    else:
        assert "TIMESTAMP range in UTC" in _failed_on(tally, "ticdc-simple.value.timestamp", "ts")


def test_simple_fraction_digits_stay_its_own_rule(simple_capture: tuple[list[Record], str]) -> None:
    """TiCDC prints exactly fsp fraction digits (JSON knows the fsp): a storable value with fewer
    digits is still a Simple finding; Avro's DataType has no fsp, so there it passes."""
    records, encoding = simple_capture
    tally = _check_simple(_simple_with(records, "t6", "838:59:59.000", encoding), encoding)
    if encoding == "json":
        assert "fractional digits" in _failed_on(tally, "ticdc-simple.value.time", "t6")
    else:
        assert problems(tally) == {}
