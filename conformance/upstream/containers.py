"""`container://mariadb` and `container://postgres`: the servers in Docker through testcontainers.

Where no Docker engine answers, testcontainers fails within ~0.1 s (DESIGN, "testcontainers
without Docker"): that becomes `UpstreamUnavailable` saying what to use instead.
"""

from __future__ import annotations

import importlib
import secrets
import time
from collections.abc import Callable
from typing import Any, ClassVar

from ..infra.urls import redact_text
from .base import Upstream, UpstreamUnavailable
from .mariadb import Endpoint, MariaDBUpstream
from .postgres import PostgresUpstream

MARIADB_IMAGE = "mariadb:10.11"
POSTGRES_IMAGE = "postgres:16"


def _container(image: str, what: str) -> Any:
    try:
        docker_exception: type[Exception] = importlib.import_module("docker.errors").DockerException
        from testcontainers.core.container import DockerContainer
    except ImportError as e:
        raise UpstreamUnavailable(f"container://{what} needs the testcontainers and docker packages ({e}); "
                                  f"use embedded-{what} instead") from None
    try:
        return DockerContainer(image)
    except docker_exception as e:
        raise UpstreamUnavailable(
            f"container://{what} needs a Docker engine; none answers here ({type(e).__name__}: "
            f"{redact_text(str(e))[:200]}). Start Docker (or set DOCKER_HOST), or use embedded-{what}.") from None


def _start(container: Any, what: str, startup: float) -> None:
    try:
        container.start()
    except Exception as e:  # noqa: BLE001 - docker, image or timeout errors all mean: no server
        try:
            container.stop()
        except Exception:  # noqa: BLE001 - best effort cleanup of a half-started container
            pass
        raise UpstreamUnavailable(f"container://{what} could not start ({type(e).__name__}: "
                                  f"{redact_text(str(e))[:300]})") from None


class _InContainer(Upstream):
    """A server in a container this process started (`image`, its own default otherwise);
    `close` stops it."""

    kind = "container"
    default_image: ClassVar[str]

    def __init__(self, url: str, *, image: str | None = None, startup: float = 180.0) -> None:
        super().__init__(url)
        self.image = image or self.default_image
        self.startup = startup
        self.container: Any = None

    def _await_answer(self, connect: Callable[[], Any], what: str) -> None:
        """Until the server answers `connect()`; past `startup` seconds the container stops."""
        deadline = time.monotonic() + self.startup
        while True:
            try:
                connect().close()
                return
            except Exception:  # noqa: BLE001 - not ready yet
                if time.monotonic() > deadline:
                    self.close()
                    raise UpstreamUnavailable(f"container://{what} did not answer within {self.startup:g} s") from None
                time.sleep(0.5)

    def close(self) -> None:
        c, self.container = self.container, None
        if c is not None:
            c.stop()


class ContainerMariaDB(_InContainer, MariaDBUpstream):
    default_image = MARIADB_IMAGE

    def start(self) -> None:
        if self.container is not None:
            return
        password = secrets.token_hex(8)
        c = (_container(self.image, "mariadb").with_env("MARIADB_ROOT_PASSWORD", password)
             .with_command("--log-bin=binlog --binlog-format=ROW --binlog-row-image=FULL --binlog-row-metadata=FULL "
                           "--server-id=1 --character-set-server=utf8mb4 --collation-server=utf8mb4_bin")
             .with_exposed_ports(3306))
        _start(c, "mariadb", self.startup)
        self.container = c
        endpoint = self.endpoint = Endpoint(c.get_container_host_ip(), int(c.get_exposed_port(3306)), "root",
                                            password)
        self._await_answer(lambda: endpoint.connect(timeout=2), "mariadb")
        self._check_server()


class ContainerPostgres(_InContainer, PostgresUpstream):
    default_image = POSTGRES_IMAGE

    def start(self) -> None:
        if self.container is not None:
            return
        password = secrets.token_hex(8)
        c = (_container(self.image, "postgres").with_env("POSTGRES_PASSWORD", password)
             .with_command("postgres -c wal_level=logical -c max_replication_slots=100 -c fsync=off")
             .with_exposed_ports(5432))
        _start(c, "postgres", self.startup)
        self.container = c
        self.conninfo = {"host": c.get_container_host_ip(), "port": int(c.get_exposed_port(5432)),
                         "user": "postgres", "password": password, "dbname": "postgres"}
        self._await_answer(lambda: self.connect(timeout=2), "postgres")
        self._check_server()
