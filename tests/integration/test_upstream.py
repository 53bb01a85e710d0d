"""Real servers upstream (127.0.0.1): every type of each dialect's domain round-trips through
the server and its change log, the source checks pass the faithful path and catch every
mutant, captured events feed an in-process encoder, a dying server is an infrastructure error,
and no server outlives the suite."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import pytest
from helpers import problems, run_workloads

from conformance.checks import Tally
from conformance.checks.source import SOURCE_CHECKS, judge_source
from conformance.model.dialects import MARIADB_KINDS, POSTGRES_KINDS, workload_sql
from conformance.model.events import Ddl, Transaction
from conformance.model.types import TIDB_KINDS
from conformance.protocols import all_checks
from conformance.strategies import sample_workload
from conformance.strategies.coverage import type_coverage_workload
from conformance.strategies.history import shape_for
from conformance.upstream import Captured, UpstreamLost
from conformance.upstream.mutants import MUTANTS

UPSTREAMS = {"mariadb": "mariadb_upstream", "postgresql": "postgres_upstream"}
KINDS = {"mariadb": set(MARIADB_KINDS), "postgresql": set(POSTGRES_KINDS)}


def _judge(c: Captured) -> Tally:
    assert c.truth is not None
    tally = Tally([s for s in all_checks() if s.id in SOURCE_CHECKS])
    judge_source(c.truth, tally)
    return tally


def _failures(tally: Tally) -> dict[str, list[str]]:
    return {t.id: [f"{f.message}: expected {f.expected!r}, actual {f.actual!r} at {f.location} ({f.hint})"
                   for f in t.failures.values()][:3] for t in tally if t.failed or t.errored}


@pytest.mark.parametrize("dialect", ["mariadb", "postgresql"])
def test_every_type_round_trips_through_the_server_and_its_log(dialect: str, request: pytest.FixtureRequest) -> None:
    up = request.getfixturevalue(UPSTREAMS[dialect])
    w = type_coverage_workload(dialect)
    c = up.run_workload(w)
    tally = _judge(c)
    assert _failures(tally) == {}
    assert c.truth is not None and c.truth.complete
    # Every value went generated -> SQL -> server -> log -> canonical and came back equal
    # (source.log-images passed for every transaction), for every kind of the domain.
    assert tally.checks["source.log-images"].passed == sum(isinstance(e, Transaction) for e in w.events)
    seen = {ch.table.column("v").type.kind for e in c.events if isinstance(e, Transaction) for ch in e.changes
            if (ch.after or ch.before or {}).get("v") is not None}
    assert seen == KINDS[dialect]
    # The captured workload is the source's shape: same DDL, transactions with log positions.
    assert sum(isinstance(e, Ddl) for e in c.events) == sum(isinstance(e, Ddl) for e in w.events)
    assert all(e.position for e in c.events if isinstance(e, (Ddl, Transaction)))


@pytest.mark.parametrize("dialect", ["mariadb", "postgresql"])
@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_each_source_mutant_is_caught_by_its_check(dialect: str, mutant: Any, request: pytest.FixtureRequest) -> None:
    up = request.getfixturevalue(UPSTREAMS[dialect])
    c = up.run_workload(type_coverage_workload(dialect, per_kind=1, samples=1), mutant=mutant)
    assert mutant.catches in _judge(c).failed_ids()


@pytest.mark.parametrize("dialect", ["mariadb", "postgresql"])
def test_generated_workloads_pass_the_source_checks(dialect: str, request: pytest.FixtureRequest) -> None:
    up = request.getfixturevalue(UPSTREAMS[dialect])
    shape = shape_for(dialect)
    ddl = 0
    for shard in range(25):
        w = sample_workload("upstream-it", shard, shape)
        ddl += sum(1 for e in w.events if isinstance(e, Ddl) and e.kind.value in ("add_column", "drop_column",
                                                                                 "truncate_table"))
        tally = _judge(up.run_workload(w))
        assert _failures(tally) == {}, (shard, workload_sql(w)[:3000])
    assert ddl > 0  # DDL between DML was exercised


def test_captured_events_feed_an_in_process_encoder(mariadb_upstream: Any) -> None:
    """The TiCDC Avro reference encoder consumes events read from a real binlog exactly like
    generated ones, and passes its checks on them (TiDB's kinds: those it knows)."""
    captured = []
    for shard in range(8):
        c = mariadb_upstream.run_workload(sample_workload("feed", shard, shape_for("mariadb", kinds=TIDB_KINDS)))
        assert c.workload.meta["captured"] is True
        captured.append(c.workload)
    tally = run_workloads("reference", captured, {"enable-tidb-extension": "true"}, protocol="ticdc-avro")
    assert problems(tally) == {}
    assert tally.checks["ticdc-avro.event.records"].passed > 20


def test_a_server_killed_mid_workload_is_an_infrastructure_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.upstream import UpstreamUnavailable, open_upstream
    from conformance.upstream.mariadb import MariaDBSession

    up = open_upstream("embedded-mariadb")
    try:
        up.start()
    except UpstreamUnavailable as e:
        pytest.skip(str(e))
    try:
        real = MariaDBSession.execute
        calls = [0]

        def execute(self: MariaDBSession, sql: str) -> int:
            calls[0] += 1
            if calls[0] == 12:
                os.kill(up.proc.pid, signal.SIGKILL)  # type: ignore[attr-defined]
                up.proc.wait(10)  # type: ignore[attr-defined]
            return real(self, sql)

        monkeypatch.setattr(MariaDBSession, "execute", execute)
        with pytest.raises(UpstreamLost) as e:
            up.run_workload(type_coverage_workload("mariadb", per_kind=1, samples=1))
        text = str(e.value)
        assert "embedded-mariadb" in text and "went away after" in text and "exited with status" in text
    finally:
        up.close()


CHILD = textwrap.dedent("""
    import sys, time
    from conformance.upstream import open_upstream
    ups = [open_upstream(u) for u in sys.argv[1:]]
    for u in ups:
        u.start()
    print(" ".join(str(u.proc.pid) for u in ups), flush=True)
    time.sleep(120)
""")


def _gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        # A zombie (exited, not yet reaped by init) counts as gone.
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return True
        except OSError:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_no_server_outlives_the_suite(sig: int, mariadb_upstream: Any, postgres_upstream: Any) -> None:
    """Ctrl-C, a polite kill and a hard kill of the process that started the servers: no
    mariadbd or postgres is left behind (atexit, signal handlers, the parent-death signal)."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, "embedded-mariadb", "embedded-postgres"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip(), proc.stderr.read() if proc.stderr else ""
        pids = [int(x) for x in line.split()]
        assert all(not _gone(p, 0.1) for p in pids)
        proc.send_signal(sig)
        proc.wait(30)
        assert all(_gone(p) for p in pids), pids
    finally:
        if proc.poll() is None:
            proc.kill()


@pytest.mark.parametrize("dialect", ["mariadb", "postgresql"])
def test_another_process_can_share_the_embedded_server(dialect: str, request: pytest.FixtureRequest) -> None:
    """What an executor does: open the driver's server by URL and run its own shard there."""
    from conformance.upstream import open_upstream

    up = request.getfixturevalue(UPSTREAMS[dialect])
    other = open_upstream(up.shareable_url())
    assert other.kind == "external"
    with other:
        tally = _judge(other.run_workload(sample_workload("share", 0, shape_for(dialect))))
    assert _failures(tally) == {}
