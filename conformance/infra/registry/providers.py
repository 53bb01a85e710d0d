"""Choosing a registry: a ``--registry`` argument becomes a :class:`Registry`; ``conformance serve``.

:func:`open_registry` turns ``embedded://``, ``http(s)://``, ``container://`` or the path of a
dump file into one provider behind the :class:`Registry` interface; :func:`serve` keeps an
embedded registry up until the user stops it.
"""

from __future__ import annotations

import contextlib
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, Protocol

from ..urls import redact, redact_text
from .client import RegistryClient
from .compat import COMPATIBILITY_LEVELS, normalize_compatibility
from .dump import DumpRegistry
from .server import EmbeddedSchemaRegistry
from .wire import RegisteredSchema


class Registry(Protocol):
    """What :func:`open_registry` yields: the read API, ``register`` and ``server``."""

    @property
    def server(self) -> EmbeddedSchemaRegistry | None: ...

    @property
    def url(self) -> str: ...

    def schema_by_id(self, schema_id: int) -> str: ...

    def subjects_for_id(self, schema_id: int) -> list[tuple[str, int]]: ...

    def versions(self, subject: str) -> list[int]: ...

    def version(self, subject: str, version: int | str = "latest") -> RegisteredSchema: ...

    def subjects(self) -> list[str]: ...

    def register(self, subject: str, schema: str) -> int: ...


_ACCEPTED_FORMS: Final = (
    "Accepted forms: embedded:// (an in-process registry; embedded://?compatibility=NONE sets its level), "
    "http(s)://[user:password@]host:port (a running registry), container:// (a Schema Registry container), "
    "or the path of an existing registry dump file (JSON)."
)


def _safe_spec(spec: str) -> str:
    """``spec`` fit for a message: URL userinfo redacted, and a scheme-less ``user:pw@host`` too."""
    shown = redact_text(redact(spec))
    if "://" not in shown and "@" in shown:
        shown = "***" + shown[shown.rfind("@") :]
    return shown


@contextlib.contextmanager
def open_registry(spec: str) -> Iterator[Registry]:
    """Open the registry named by a ``--registry`` argument for the duration of the block."""
    if spec.startswith("embedded://"):
        parts = urllib.parse.urlsplit(spec)
        query = urllib.parse.parse_qs(parts.query, keep_blank_values=True)
        unknown = sorted(set(query) - {"compatibility"})
        if unknown or parts.path not in ("", "/"):
            raise ValueError(
                f"Unknown option in {_safe_spec(spec)}: only embedded://[host:port][?compatibility=LEVEL] "
                f"is understood ({', '.join(COMPATIBILITY_LEVELS)})."
            )
        level = query.get("compatibility", ["BACKWARD"])[-1]
        try:
            level = normalize_compatibility(level)
        except ValueError:
            raise ValueError(
                f"{_safe_spec(spec)}: {level!r} is not a compatibility level; "
                f"use one of {', '.join(COMPATIBILITY_LEVELS)}."
            ) from None
        try:
            host, port = parts.hostname or "127.0.0.1", parts.port or 0
        except ValueError:
            raise ValueError(f"{_safe_spec(spec)}: the port is not a number.") from None
        server = EmbeddedSchemaRegistry(host, port, default_compatibility=level)
        with server, RegistryClient(server.url) as client:
            client.server = server
            yield client
        return
    if spec.startswith(("http://", "https://", "container://")):
        running: contextlib.AbstractContextManager[str]
        if spec.startswith("container://"):
            from .container import schema_registry_container

            running = schema_registry_container()
        else:
            running = contextlib.nullcontext(spec)
        # A registry we did not start must prove it is one (GET / answers {}) before it is used.
        with running as url, RegistryClient(url) as client:
            client.check_root()
            yield client
        return
    if "://" not in spec and spec and Path(spec).is_file():
        yield DumpRegistry.from_file(spec)
        return
    shown = _safe_spec(spec)
    if "://" not in spec and "@" in spec:
        why = "it looks like a URL without its scheme; did you mean http://…?"
    elif "://" in spec:
        why = "that URL scheme is not supported."
    else:
        why = "no such file."
    raise ValueError(f"Unknown registry {shown!r}: {why} {_ACCEPTED_FORMS}")


def serve(
    host: str,
    port: int,
    auth: tuple[str, str] | None,
    compatibility: str,
    ready: Callable[[str], None] | None = None,
) -> None:
    """Run an embedded registry until KeyboardInterrupt or SIGTERM, then stop it cleanly.

    ``ready`` is called with the URL (never with credentials) once requests are accepted.
    SIGTERM is only handled when called from the main thread (Python's signal rule); the
    previous handler is restored on return.
    """
    from ..serving import serve_until_stopped

    serve_until_stopped(lambda: EmbeddedSchemaRegistry(host, port, auth=auth, default_compatibility=compatibility),
                        lambda server: server.url, ready)
