"""The upstream layer without a server: URLs, errors, value parsers, the binlog and pgoutput
decoders on hand-made bytes, the source checks on hand-made truths, and their capture mutants."""

from __future__ import annotations

import decimal
import struct
import uuid

import pytest

from conformance.checks import Outcome, Tally
from conformance.checks.source import (
    COMMIT_ORDER,
    LOG_IMAGES,
    ROWS_AFFECTED,
    SOURCE_CHECKS,
    STATEMENT_EXECUTES,
    STORED_VALUES,
    judge_source,
)
from conformance.errors import InfrastructureError, UsageError
from conformance.model import Column, Index, Kind, SqlType, Table
from conformance.model.events import Ddl, DdlKind, Op, RowChange, Transaction, Watermark, Workload
from conformance.model.table import ReplicaIdentity
from conformance.model.truth import AppliedEvent, LoggedEvent, SourceTruth, StatementResult, StoredRow, position_key
from conformance.model.values import Array, DateTime, Interval, Time
from conformance.protocols import all_checks
from conformance.upstream import NoUpstream, UpstreamUnavailable, open_upstream
from conformance.upstream import mariadb as mariadb_mod
from conformance.upstream.base import canonical_workload
from conformance.upstream.binlog import Reader, decode_decimal
from conformance.upstream.mutants import MUTANTS, capture_drops_column, capture_reorders
from conformance.upstream.postgres import decode_pgoutput
from conformance.upstream.textvalues import parse_datetime, parse_interval, parse_pg_array, parse_pg_text

INT = SqlType(Kind.INT)
TABLE = Table("db", "t", (Column("id", INT, False, column_id=1), Column("v", SqlType(Kind.DOUBLE), True, column_id=2)),
              (Index("PRIMARY", ("id",), primary=True),), table_id=1, version=1)


# -- URLs and errors -----------------------------------------------------------------------------

def test_urls_choose_providers_and_never_show_credentials() -> None:
    assert isinstance(open_upstream("none"), NoUpstream)
    assert open_upstream("embedded-mariadb").kind == "embedded"
    assert open_upstream("embedded-postgres").kind == "embedded"
    m = open_upstream("mariadb://bob:s3cret@db.example:3307")
    assert m.kind == "external" and "s3cret" not in m.url and "s3cret" not in m.describe()
    p = open_upstream("postgresql://bob:s3cret@db.example/x")
    assert p.kind == "external" and "s3cret" not in p.url
    assert open_upstream("container://mariadb").kind == "container"
    with pytest.raises(UsageError) as e:
        open_upstream("oracle://sys:hunter2@h")
    assert "hunter2" not in str(e.value)
    with pytest.raises(UsageError):
        open_upstream("container://db2")


def test_missing_mariadb_binaries_name_the_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mariadb_mod, "find_binary", lambda name: None)
    with pytest.raises(UpstreamUnavailable) as e:
        open_upstream("embedded-mariadb").start()
    assert isinstance(e.value, InfrastructureError)
    assert "apt-get install -y mariadb-server" in str(e.value)


def test_none_passes_the_workload_through() -> None:
    w = Workload((Watermark(5),), seed=1)
    c = NoUpstream().run_workload(w)
    assert c.workload is w and c.truth is None and c.events == w.events


# -- values as servers print them ----------------------------------------------------------------

def test_text_parsers() -> None:
    assert parse_pg_array('{1,"a,b",NULL,"NULL","x\\"y"}') == ["1", "a,b", None, "NULL", 'x"y']
    assert parse_pg_array("{}") == []
    assert parse_interval("1 year 2 mons -3 days +04:05:06.000007") == Interval(14, -3, 14_706_000_007)
    assert parse_interval("-00:00:00.000001") == Interval(0, 0, -1)
    assert parse_datetime("2000-01-01 02:00:00+02") == DateTime(2000, 1, 1)
    arr = SqlType(Kind.ARRAY, element=SqlType(Kind.INT))
    assert parse_pg_text(arr, "{1,NULL,-3}") == Array((1, None, -3))
    assert parse_pg_text(SqlType(Kind.BOOLEAN), "t") is True
    assert parse_pg_text(SqlType(Kind.BYTEA), "\\x00ff") == b"\x00\xff"
    assert parse_pg_text(SqlType(Kind.TIME), "24:00:00") == Time(False, 24, 0, 0)
    assert parse_pg_text(SqlType(Kind.UUID), str(uuid.UUID(int=7))) == uuid.UUID(int=7)


def test_packed_decimal() -> None:
    # MySQL's own example (strings/decimal.c): 1234567890.1234 as DECIMAL(14,4).
    raw = bytes.fromhex("810DFB38D204D2")
    assert decode_decimal(Reader(_reader(raw)), 14, 4) == decimal.Decimal("1234567890.1234")
    neg = bytes(b ^ 0xFF for b in raw)
    assert decode_decimal(Reader(_reader(neg)), 14, 4) == decimal.Decimal("-1234567890.1234")


def _reader(data: bytes):  # type: ignore[no-untyped-def]
    pos = [0]

    def read(n: int) -> bytes:
        b = data[pos[0]:pos[0] + n]
        pos[0] += n
        return b

    return read


# -- pgoutput ------------------------------------------------------------------------------------

def _s(text: str) -> bytes:
    return text.encode() + b"\x00"


def _tuple(*vals: str | None) -> bytes:
    out = struct.pack(">h", len(vals))
    for v in vals:
        out += b"n" if v is None else b"t" + struct.pack(">i", len(v.encode())) + v.encode()
    return out


def test_pgoutput_rebuilds_old_images_from_its_own_copy() -> None:
    t = Table("s", "t", TABLE.columns, (Index("pk_t1", ("id",), primary=True),), table_id=1, version=1,
              replica_identity=ReplicaIdentity.DEFAULT)
    create = Ddl(DdlKind.CREATE_TABLE, 1, "", t, None, "s")
    txn = Transaction(2, (RowChange(Op.INSERT, t, None, {"id": 1, "v": 0.5}),))
    txn2 = Transaction(3, (RowChange(Op.UPDATE, t, {"id": 1, "v": 0.5}, {"id": 2, "v": 0.5}),
                           RowChange(Op.DELETE, t, {"id": 2, "v": 0.5}, None)))
    applied = [AppliedEvent(0, create, (), True, "0/10", txid=700),
               AppliedEvent(1, txn, (), True, "0/20", txid=701),
               AppliedEvent(2, txn2, (), True, "0/30", txid=702)]
    rel = b"R" + struct.pack(">i", 99) + _s("s") + _s("t") + b"d" + struct.pack(">h", 2) + \
        b"\x01" + _s("id") + struct.pack(">ii", 23, -1) + b"\x00" + _s("v") + struct.pack(">ii", 701, -1)

    def begin(xid: int) -> bytes:
        return b"B" + struct.pack(">qqi", 0, 0, xid)

    def commit(lsn: int) -> bytes:
        return b"C" + b"\x00" + struct.pack(">qqq", lsn, lsn + 8, 0)

    msgs = [begin(701), rel, b"I" + struct.pack(">i", 99) + b"N" + _tuple("1", "0.5"), commit(0x18),
            begin(702), b"U" + struct.pack(">i", 99) + b"K" + _tuple("1", None) + b"N" + _tuple("2", "0.5"),
            b"D" + struct.pack(">i", 99) + b"K" + _tuple("2", None), commit(0x28)]
    logged = decode_pgoutput([("0/0", m) for m in msgs], applied)
    assert [le.applied_index for le in logged] == [0, 1, 2]
    assert logged[0].is_ddl and logged[0].note
    upd, dele = logged[2].changes
    assert upd.before == {"id": 1, "v": 0.5} and upd.after == {"id": 2, "v": 0.5}
    assert dele.before == {"id": 2, "v": 0.5}
    assert [position_key(le.position) for le in logged] == sorted(position_key(le.position) for le in logged)


# -- the source checks on hand-made truths -------------------------------------------------------

def _truth(*, error: str | None = None, rows: int = 1, stored: float = 0.5, logged_v: float = 0.5,
           order: tuple[int, ...] = (0, 1), dialect: str = "mariadb") -> SourceTruth:
    create = Ddl(DdlKind.CREATE_TABLE, 1, "CREATE", TABLE, None, "db")
    txn = Transaction(2, (RowChange(Op.INSERT, TABLE, None, {"id": 1, "v": 0.5}),))
    res = StatementResult("INSERT ...", error=error, rows=None if error else rows, expected_rows=1)
    applied = (AppliedEvent(0, create, (StatementResult("CREATE"),), True, "0-1-1"),
               AppliedEvent(1, txn, (res,), error is None, "0-1-2",
                            (StoredRow(TABLE, (1,), {"id": 1, "v": 0.5}, {"id": 1, "v": stored}, "SELECT"),)))
    logs = {0: LoggedEvent("0-1-1", 0, is_ddl=True),
            1: LoggedEvent("0-1-2", 1, (RowChange(Op.INSERT, TABLE, None, {"id": 1, "v": logged_v}),),
                           columns=(("db.t", ("id", "v")),))}
    return SourceTruth("MariaDB test", dialect, (("db", "sx_db"),), applied, tuple(logs[i] for i in order))


def _judge(truth: SourceTruth) -> Tally:
    tally = Tally([c for c in all_checks() if c.id in SOURCE_CHECKS])
    judge_source(truth, tally)
    return tally


def test_source_checks_pass_a_faithful_truth_and_count_named_conversions() -> None:
    tally = Tally([c for c in all_checks() if c.id in SOURCE_CHECKS])
    t = _truth()
    summary = judge_source(t, tally)
    assert tally.failed_ids() == set()
    assert all(tally.checks[c].passed > 0 for c in SOURCE_CHECKS)
    zero = _truth(stored=0.0, logged_v=0.0)
    zero = SourceTruth(zero.server, zero.dialect, zero.databases, tuple(
        AppliedEvent(a.index, Transaction(2, (RowChange(Op.INSERT, TABLE, None, {"id": 1, "v": -0.0}),)) if a.index
                     else a.event, a.statements, a.committed, a.position,
                     tuple(StoredRow(s.table, s.key, {"id": 1, "v": -0.0}, s.stored, s.sql) for s in a.stored))
        for a in zero.applied), zero.logged)
    tally = Tally([c for c in all_checks() if c.id in SOURCE_CHECKS])
    summary = judge_source(zero, tally)
    assert tally.failed_ids() == set()
    assert summary.conversions  # MariaDB's signed zero, named and counted
    assert any("signed-zero" in n for n in summary.notes())
    # PostgreSQL keeps the sign: the same truth under its dialect is a finding.
    pg = SourceTruth(zero.server, "postgresql", zero.databases, zero.applied, zero.logged)
    assert STORED_VALUES in _judge(pg).failed_ids()


@pytest.mark.parametrize("truth, check", [
    (_truth(error="1264: Out of range value"), STATEMENT_EXECUTES),
    (_truth(rows=0), ROWS_AFFECTED),
    (_truth(stored=0.25), STORED_VALUES),
    (_truth(logged_v=0.25), LOG_IMAGES),
    (_truth(order=(1, 0)), COMMIT_ORDER),
    (_truth(order=(0,)), COMMIT_ORDER),
])
def test_each_source_check_can_fail(truth: SourceTruth, check: str) -> None:
    tally = _judge(truth)
    assert check in tally.failed_ids()
    f = next(iter(tally.checks[check].failures.values()))
    assert f.actor.value == "suite"


def test_capture_mutants_on_a_truth() -> None:
    t = _truth()
    assert LOG_IMAGES in _judge(SourceTruth(t.server, t.dialect, t.databases, t.applied,
                                            tuple(capture_drops_column(list(t.logged))))).failed_ids()
    two = (LoggedEvent("0-1-2", 1, (RowChange(Op.INSERT, TABLE, None, {"id": 1, "v": 0.5}),)),
           LoggedEvent("0-1-3", 2, (RowChange(Op.INSERT, TABLE, None, {"id": 2, "v": 0.5}),)))
    assert [le.applied_index for le in capture_reorders(list(two))] == [2, 1]
    assert {m.catches for m in MUTANTS} == set(SOURCE_CHECKS)


def test_not_captured_is_not_applicable() -> None:
    t = _truth()
    t = SourceTruth(t.server, t.dialect, t.databases, t.applied, (), captured=False)
    tally = _judge(t)
    assert tally.checks[LOG_IMAGES].outcome is Outcome.NOT_APPLICABLE
    assert tally.checks[COMMIT_ORDER].outcome is Outcome.NOT_APPLICABLE


def test_canonical_workload_keeps_watermarks_after_their_events() -> None:
    create = Ddl(DdlKind.CREATE_TABLE, 1, "CREATE", TABLE, None, "db")
    txn = Transaction(2, (RowChange(Op.INSERT, TABLE, None, {"id": 1, "v": 0.5}),))
    w = Workload((create, txn, Watermark(2)), seed=3, shard=1)
    applied = [AppliedEvent(0, create, (), True, "0-1-1"), AppliedEvent(1, txn, (), True, "0-1-2")]
    logged = [LoggedEvent("0-1-1", 0, is_ddl=True),
              LoggedEvent("0-1-2", 1, (RowChange(Op.INSERT, TABLE, None, {"id": 1, "v": 0.5}),))]
    out = canonical_workload(w, applied, logged)
    assert [type(e).__name__ for e in out.events] == ["Ddl", "Transaction", "Watermark"]
    assert out.events[1].position == "0-1-2" and out.events[1].commit_ts == 2  # type: ignore[union-attr]
    assert (out.seed, out.shard) == (3, 1) and out.meta["captured"] is True
