"""MariaDB upstreams: the embedded server (Debian's `mariadb-server`), an existing server
(`mariadb://user:pass@host:port`) and a container (`container://mariadb`), with one session
type that applies a workload and reads its binlog back.

The server must log rows with full images and full metadata: `log_bin`, `binlog_format=ROW`,
`binlog_row_image=FULL`, `binlog_row_metadata=FULL` (the embedded server and the container are
started so; an existing server is checked and refused with the setting to change).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import pwd
import random
import shutil
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..infra.urls import redact, redact_text
from ..model.dialects import MARIADB, Dialect
from ..model.events import Ddl, Workload
from ..model.table import Table
from ..model.truth import AppliedEvent, LoggedEvent
from ..model.types import Kind, SqlType
from ..model.values import Row
from . import lifecycle
from .base import Captured, SourceMutant, StatementRefused, Upstream, UpstreamLost, UpstreamUnavailable, run_session
from .mariadb_log import PIP_HINT, logged_since, parse_since, read_binlog
from .textvalues import parse_mariadb_text

SERVER_BINARIES = ("mariadbd", "mariadb-install-db")
INSTALL_HINT = ("install Debian's mariadb-server package (apt-get install -y mariadb-server), "
                "or use mariadb://user:pass@host:port for an existing server")
_LOST_CODES = frozenset({2003, 2006, 2013, 2055})
REQUIRED_VARIABLES = {"log_bin": "ON", "binlog_format": "ROW", "binlog_row_image": "FULL",
                      "binlog_row_metadata": "FULL"}


def _pymysql() -> Any:
    try:
        return importlib.import_module("pymysql")
    except ImportError:
        raise UpstreamUnavailable(f"MariaDB upstreams need PyMySQL: {PIP_HINT}") from None


def find_binary(name: str) -> str | None:
    """`name` on PATH, or in the sbin directories Debian installs servers to (not on a
    non-root PATH)."""
    found = shutil.which(name)
    if found:
        return found
    for d in ("/usr/sbin", "/usr/local/sbin", "/usr/libexec", "/sbin"):
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return None


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int
    user: str
    password: str

    @property
    def loopback(self) -> bool:
        """127.0.0.1 / localhost: no TLS (PyMySQL's preferred-TLS mode builds a certificate
        context for every connection, 25 ms each here; nothing leaves the machine anyway)."""
        return self.host in ("127.0.0.1", "localhost", "::1")

    def connect(self, *, timeout: float = 10.0, database: str | None = None) -> Any:
        pymysql = _pymysql()
        from pymysql.constants import CLIENT

        # conv={}: every value arrives as the server's text (str) or bytes (binary charset);
        # the suite parses it exactly (PyMySQL's conversions lose zero dates and TIME > 24 h).
        return pymysql.connect(host=self.host, port=self.port, user=self.user, password=self.password,
                               database=database, autocommit=True, charset="utf8mb4", conv={},
                               connect_timeout=timeout, read_timeout=120, write_timeout=120,
                               client_flag=CLIENT.FOUND_ROWS, ssl_disabled=self.loopback or None)


def _err_code(e: BaseException) -> int | None:
    args = getattr(e, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


class MariaDBUpstream(Upstream):
    """A MariaDB server shared by every workload of a run; each workload gets its own databases."""

    dialect = "mariadb"

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.endpoint: Endpoint | None = None
        self.version = ""
        self._lock = threading.Lock()

    def _check_server(self) -> None:
        assert self.endpoint is not None
        try:
            conn = self.endpoint.connect()
        except Exception as e:  # noqa: BLE001 - refused, unknown host, bad password: all "cannot use"
            raise UpstreamUnavailable(f"{self.url}: cannot connect ({type(e).__name__}: "
                                      f"{redact_text(str(e))[:300]})") from None
        try:
            with conn.cursor() as cur:
                cur.execute("SELECT VERSION()")
                self.version = str(cur.fetchone()[0])
                names = ", ".join(f"'{k}'" for k in REQUIRED_VARIABLES)
                cur.execute(f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({names})")
                have = {str(k).lower(): str(v).upper() for k, v in cur.fetchall()}
        finally:
            conn.close()
        wrong = [f"{k}={v} (has {have.get(k, 'nothing')})" for k, v in REQUIRED_VARIABLES.items()
                 if have.get(k) != v]
        if wrong:
            raise UpstreamUnavailable(f"{self.url}: the server must log full row images with full metadata; "
                                      f"set {', '.join(wrong)} and restart it")

    def describe(self) -> str:
        return f"MariaDB {self.version.split('-')[0]} ({self.url})" if self.version else self.url

    def run_workload(self, workload: Workload, *, mutant: SourceMutant | None = None,
                     on_capture_start: Callable[[], None] | None = None) -> Captured:
        name = str(workload.meta.get("dialect", "tidb"))
        if name not in ("tidb", "mariadb"):
            raise ValueError(f"a {name} workload cannot run on MariaDB: generate it with the mariadb dialect")
        self.start()
        assert self.endpoint is not None
        session = MariaDBSession(self.endpoint, self.describe(), workload, alive=self.alive)
        try:
            return run_session(session, workload, mutant=mutant, databases=tuple(session.names.items()),
                               on_capture_start=on_capture_start)
        finally:
            session.close()

    def since_error(self, since: str) -> str | None:
        try:
            parse_since(since)
        except ValueError as e:
            return str(e)
        return None

    def logged_since(self, since: str, workloads: Sequence[tuple[Workload, Sequence[str]]]
                     ) -> tuple[list[Captured], list[str]]:
        self.start()
        assert self.endpoint is not None
        return logged_since(self.endpoint, self.describe(), since, workloads, alive=self.alive)

    def alive(self) -> str | None:
        """None while the server runs; else why it does not (embedded servers know)."""
        return None


class EmbeddedMariaDB(lifecycle.EmbeddedServer, MariaDBUpstream):
    """`embedded-mariadb`: `mariadb-install-db` into a temporary datadir, then `mariadbd` on
    127.0.0.1 and a free port, logging rows with GTIDs, stopped at exit."""

    kind = "embedded"
    label = "MariaDB"
    log_name = "error.log"

    def __init__(self, url: str = "embedded-mariadb", *, startup: float = 60.0) -> None:
        super().__init__(url)
        self.startup = startup
        self.server_id = random.randint(2, 2**31 - 1)

    def start(self) -> None:
        with self._lock:
            if self.proc is not None and self.proc.poll() is None:
                return
            mariadbd = find_binary("mariadbd")
            install = find_binary("mariadb-install-db")
            if mariadbd is None or install is None:
                raise UpstreamUnavailable(f"embedded-mariadb needs {' and '.join(SERVER_BINARIES)}: {INSTALL_HINT}")
            _pymysql()
            root = os.geteuid() == 0
            user = None
            if root:
                try:
                    pw = pwd.getpwnam("mysql")
                except KeyError:
                    raise UpstreamUnavailable("embedded-mariadb runs as root only through the system user 'mysql' "
                                              f"that Debian's mariadb-server creates: {INSTALL_HINT}") from None
                user = (pw.pw_uid, pw.pw_gid)
            base = tempfile.mkdtemp(prefix="cdc-conformance-mariadb-")
            os.chmod(base, 0o755)
            datadir = os.path.join(base, "data")
            os.mkdir(datadir)
            if user is not None:
                os.chown(base, *user)
                os.chown(datadir, *user)
            self.base = base
            log = os.path.join(base, "install.log")
            argv = [install, "--no-defaults", f"--datadir={datadir}", "--auth-root-authentication-method=normal",
                    "--skip-test-db"]
            if root:
                argv.append("--user=mysql")
            with open(log, "wb") as out:
                rc = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    timeout=self.startup, check=False).returncode
            if rc != 0:
                tail = lifecycle.tail(log)
                self._remove()
                raise UpstreamUnavailable(f"embedded-mariadb: mariadb-install-db failed (exit {rc}): {tail}")
            why = self.launch_on_a_free_port(lambda port: self._launch(mariadbd, datadir, port, user))
            if why is not None:
                raise UpstreamUnavailable(f"embedded-mariadb: mariadbd did not start within {self.startup:g} s: {why}")
            lifecycle.register(id(self), self.close)
        self._check_server()

    def _launch(self, mariadbd: str, datadir: str, port: int, user: tuple[int, int] | None) -> bool:
        assert self.base is not None
        sock = os.path.join(self.base, "mariadb.sock")
        argv = [mariadbd, "--no-defaults", f"--datadir={datadir}", "--bind-address=127.0.0.1", f"--port={port}",
                f"--socket={sock}", f"--pid-file={os.path.join(self.base, 'mariadbd.pid')}",
                f"--log-error={os.path.join(self.base, self.log_name)}",
                "--log-bin=binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL",
                f"--server-id={self.server_id}", "--gtid-domain-id=0", "--log-slave-updates=OFF",
                "--skip-name-resolve", "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M",
                "--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--max-connections=200",
                "--character-set-server=utf8mb4", "--collation-server=utf8mb4_bin"]
        if user is not None:
            # Already running as 'mysql' (dropped in the child, so the parent-death signal
            # survives); --user=mysql says so to mariadbd, which then needs no root.
            argv.append("--user=mysql")
        self.proc = lifecycle.spawn(argv, user=user)
        endpoint = self.endpoint = Endpoint("127.0.0.1", port, "root", "")
        return self.wait_ready(lambda: endpoint.connect(timeout=1.0))

    def shareable_url(self) -> str:
        assert self.endpoint is not None, "start() first"
        return f"mariadb://{self.endpoint.user}:{self.endpoint.password}@{self.endpoint.host}:{self.endpoint.port}"

    def describe(self) -> str:
        v = self.version.split("-")[0]
        return f"MariaDB {v} (embedded-mariadb, pid {self.proc.pid if self.proc else '-'})"

    def close(self) -> None:
        with self._lock:
            self.stop_server()


class ExternalMariaDB(lifecycle.ExternalServer, MariaDBUpstream):
    """`mariadb://user:pass@host:port`: an existing server (it must log full row images)."""

    def __init__(self, url: str, endpoint: Endpoint) -> None:
        super().__init__(redact(url))
        self._url = url
        self.endpoint = endpoint


# -- one workload ----------------------------------------------------------------------------

class MariaDBSession:
    """One workload on a MariaDB server: its databases are `s<8 hex>_<name>`."""

    def __init__(self, endpoint: Endpoint, server: str, workload: Workload, *, alive: Any) -> None:
        self.endpoint = endpoint
        self.server = server
        self.alive = alive
        self.prefix = f"s{uuid.uuid4().hex[:8]}_"
        self.names: dict[str, str] = {}
        for e in workload.events:
            if isinstance(e, Ddl) and e.database and e.database not in self.names:
                self.names[e.database] = self.prefix + e.database
        self.dialect: Dialect = MARIADB.with_databases(lambda n: self.names.setdefault(n, self.prefix + n))
        self.applied_events = 0
        self.conn = self._connect()
        self.cur = self.conn.cursor()
        for s in self.dialect.session_setup():
            self.cur.execute(s)
        self.start_file = ""
        self.start_pos = 0
        self.in_transaction = False

    def _connect(self) -> Any:
        try:
            return self.endpoint.connect()
        except Exception as e:  # noqa: BLE001
            raise self._lost(e) from None

    def _lost(self, e: BaseException) -> UpstreamLost:
        why = self.alive() or f"{type(e).__name__}: {redact_text(str(e))[:200]}"
        return UpstreamLost(f"{self.server} went away after {self.applied_events} applied statements of this "
                            f"workload (databases {', '.join(self.names.values()) or '-'}): {why}")

    def execute(self, sql: str) -> int:
        pymysql = _pymysql()
        try:
            rows = int(self.cur.execute(sql))
        except pymysql.err.Error as e:
            if _err_code(e) in _LOST_CODES or isinstance(e, pymysql.err.InterfaceError):
                raise self._lost(e) from None
            raise StatementRefused(f"{_err_code(e)}: {e.args[1] if len(e.args) > 1 else e}") from None
        except OSError as e:
            raise self._lost(e) from None
        self.applied_events += 1
        return rows

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        self.execute(sql)
        return list(self.cur.fetchall())

    def begin_capture(self) -> None:
        row = self._query("SHOW MASTER STATUS")[0]
        self.start_file, self.start_pos = str(row[0]), int(row[1])


    def begin(self) -> None:
        self.execute("BEGIN")
        self.in_transaction = True

    def commit(self) -> tuple[str | None, int | None]:
        if self.in_transaction:
            self.execute("COMMIT")
            self.in_transaction = False
        return str(self._query("SELECT @@last_gtid")[0][0]), None

    def rollback(self) -> None:
        self.in_transaction = False
        with contextlib.suppress(StatementRefused):
            self.execute("ROLLBACK")

    def transactional_ddl(self) -> bool:
        return False  # every DDL commits implicitly, with its own GTID

    def read_rows(self, table: Table, keys: list[tuple[tuple[object, ...], Row]]) -> tuple[str, dict[
            tuple[object, ...], Row]]:
        cols = ", ".join(select_expression(self.dialect, c.name, c.type) for c in table.columns)
        where = " OR ".join(f"({self.dialect.where(table, image)})" for _key, image in keys)
        sql = f"SELECT {cols} FROM {self.dialect.qualified(table)} WHERE {where}"
        found: dict[tuple[object, ...], Row] = {}
        hk = table.handle_key_columns()
        for raw in self._query(sql):
            row = {c.name: None if v is None else parse_mariadb_text(c.type, v) for c, v in zip(table.columns, raw,
                                                                                                 strict=True)}
            found[tuple(row[c.name] for c in hk)] = row
        return sql, found

    def capture(self, applied: list[AppliedEvent], source: Workload) -> list[LoggedEvent]:
        end = self._query("SHOW MASTER STATUS")[0]
        return read_binlog(self.endpoint, self.start_file, self.start_pos, str(end[0]), int(end[1]), applied,
                           self.names, server=self.server, alive=self.alive)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            for db in self.names.values():
                self.cur.execute(f"DROP DATABASE IF EXISTS {self.dialect.quote_ident(db)}")
        with contextlib.suppress(Exception):
            self.conn.close()


def select_expression(d: Dialect, name: str, t: SqlType) -> str:
    """A SELECT expression whose text is the stored value exactly: FLOAT's own text has six
    significant digits, its value as DOUBLE is exact."""
    q = d.quote_ident(name)
    if t.kind is Kind.FLOAT:
        return f"CAST({q} AS DOUBLE)"
    return q
