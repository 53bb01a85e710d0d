"""A small, thread-safe client for any Confluent-compatible Schema Registry.

:class:`RegistryClient` speaks HTTP(S) with pooled keep-alive connections, caches id lookups,
and turns every refusal into a :class:`~.errors.RegistryError` whose message says what
happened and what to do, with credentials redacted.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import socket
import ssl
import threading
import urllib.parse
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ..closing import ClosesOnExit
from ..urls import redact, redact_text
from .errors import (
    IncompatibleSchema,
    InvalidSchema,
    RegistryError,
    RegistryUnavailable,
    SchemaNotFound,
    SubjectNotFound,
    Unauthorized,
    VersionNotFound,
)
from .wire import ACCEPT, CONTENT_TYPE, RegisteredSchema

if TYPE_CHECKING:
    from .server import EmbeddedSchemaRegistry

_ERRORS_BY_CODE: Final[Mapping[int, type[RegistryError]]] = {
    40401: SubjectNotFound,
    40402: VersionNotFound,
    40403: SchemaNotFound,
    409: IncompatibleSchema,
    42201: InvalidSchema,
    401: Unauthorized,
}

_HINTS: Final[Mapping[type[RegistryError], str]] = {
    SubjectNotFound: "Check the subject name (topic and subject naming strategy) or register a schema first.",
    VersionNotFound: "List the subject's versions to see which exist.",
    SchemaNotFound: "That id is not registered there; the data may come from another registry.",
    IncompatibleSchema: "Change the schema, or the subject's compatibility level (PUT /config/{subject}).",
    InvalidSchema: "Fix the schema: it must be a valid Avro schema, sent as a JSON string.",
    Unauthorized: (
        "Pass credentials in the URL as http://user:password@host:port (percent-encode special characters)."
    ),
}


class RegistryClient(ClosesOnExit):
    """A minimal, thread-safe client for a Confluent-compatible Schema Registry.

    ``url`` may carry ``user:password@`` (percent-encoded); it becomes a Basic
    ``Authorization`` header and is never shown: :attr:`url` and ``repr`` are redacted.
    Keep-alive connections are pooled (one per concurrent caller); id lookups are cached, the
    latest `CACHED_IDS` of them (a Spark worker's client lives as long as the worker, and a long
    run registers new schemas all along: unbounded, the cache was most of a worker's growth).
    """

    _MAX_IDLE: Final = 8
    #: Ids whose schema (and whose subjects) are kept; the oldest answer is dropped first.
    CACHED_IDS = 4096

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = redact(url).rstrip("/")
        self.timeout = timeout
        #: The embedded server behind this client when :func:`open_registry` started one.
        self.server: EmbeddedSchemaRegistry | None = None
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError:
            raise ValueError(
                f"The registry URL {self.url} is malformed (bad host or port). "
                "Use http(s)://[user:password@]host:port "
                "and percent-encode special characters in the credentials."
            ) from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(
                f"The registry URL {self.url} is not an http:// or https:// URL with a host. "
                "Use http(s)://[user:password@]host:port."
            )
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = port if port is not None else (443 if self._https else 80)
        self._base_path = parts.path.rstrip("/")
        self._auth: str | None = None
        if parts.username is not None:
            user = urllib.parse.unquote(parts.username)
            password = urllib.parse.unquote(parts.password or "")
            token = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
            self._auth = f"Basic {token}"
        self._pool: list[http.client.HTTPConnection] = []
        self._pool_lock = threading.Lock()
        self._cache_lock = threading.Lock()
        self._schemas: dict[int, str] = {}
        self._id_subjects: dict[int, tuple[tuple[str, int], ...]] = {}

    def __repr__(self) -> str:
        return f"RegistryClient({self.url!r})"

    def close(self) -> None:
        """Close pooled connections (the client stays usable; it reconnects on demand)."""
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    # ---- transport ---------------------------------------------------------------------------

    def _connect(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=ssl.create_default_context()
            )
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        conn.response_class = _Response
        return conn

    def _acquire(self) -> tuple[http.client.HTTPConnection, bool]:
        with self._pool_lock:
            if self._pool:
                return self._pool.pop(), True
        return self._connect(), False

    def _release(self, conn: http.client.HTTPConnection) -> None:
        with self._pool_lock:
            if len(self._pool) < self._MAX_IDLE:
                self._pool.append(conn)
                return
        conn.close()

    def _reason(self, exc: BaseException) -> str:
        if isinstance(exc, ConnectionRefusedError):
            return "connection refused"
        if isinstance(exc, TimeoutError):
            return f"no answer within {self.timeout:g} s"
        if isinstance(exc, socket.gaierror):
            return f"cannot resolve host name {self._host!r}"
        if isinstance(exc, ssl.SSLError):
            return f"TLS error: {exc.reason or exc}"
        if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            return "the connection was closed before an answer arrived"
        if isinstance(exc, http.client.HTTPException):
            return f"invalid HTTP answer ({type(exc).__name__})"
        if isinstance(exc, OSError):
            return redact_text(exc.strerror or str(exc))
        return type(exc).__name__

    def in_process(self) -> RegistryClient:
        """A client of the same registry that sends no request over a socket, where it is the
        embedded server of this process (:attr:`server`, running): each request goes to the
        server's own handler (what its HTTP front end calls), and the answer is decoded as one
        that came over HTTP. Itself for any other registry. For the driver's reading after a run,
        which would otherwise queue thousands of loopback round trips behind one another."""
        if self.server is None or not self.server.running:
            return self
        return _InProcessClient(self.server)

    def _unavailable(self, exc: BaseException) -> RegistryUnavailable:
        return RegistryUnavailable(
            f"Schema Registry at {self.url} is unreachable ({self._reason(exc)}). "
            "Start it, or pass the right --registry URL."
        )

    def _call(self, method: str, path: str, body: object | None = None) -> Any:
        """Send one request, return the parsed JSON answer or raise a :class:`RegistryError`."""
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": ACCEPT}
        if payload is not None:
            headers["Content-Type"] = CONTENT_TYPE
        if self._auth is not None:
            headers["Authorization"] = self._auth
        target = f"{self._base_path}{path}"
        for attempt in range(2):
            conn, reused = self._acquire()
            try:
                conn.request(method, target, body=payload, headers=headers)
                response = conn.getresponse()
                data = response.read()
            except (
                ConnectionResetError,
                ConnectionAbortedError,
                BrokenPipeError,
                http.client.BadStatusLine,
            ) as exc:
                conn.close()
                # A kept-alive connection may have been closed by the server while idle:
                # retry once on a fresh one (registration is idempotent, so POST is safe too).
                if reused and attempt == 0:
                    continue
                raise self._unavailable(exc) from exc
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                raise self._unavailable(exc) from exc
            if response.will_close:
                conn.close()
            else:
                self._release(conn)
            return self._decode(method, path, response.status, data)
        raise AssertionError("unreachable")  # pragma: no cover

    def _decode(self, method: str, path: str, status: int, data: bytes) -> Any:
        try:
            obj = json.loads(data.decode("utf-8")) if data else None
            parsed = True
        except (UnicodeDecodeError, json.JSONDecodeError):
            obj, parsed = None, False
        if 200 <= status < 300:
            if not parsed:
                snippet = redact_text(data[:120].decode("utf-8", "replace"))
                raise RegistryUnavailable(
                    f"Schema Registry at {self.url} answered {method} {path} with HTTP {status} and a body "
                    f"that is not JSON ({snippet!r}). Is that URL really a Schema Registry? "
                    "Pass the right --registry URL."
                )
            return obj
        code = obj.get("error_code") if isinstance(obj, dict) else None
        server_message = obj.get("message") if isinstance(obj, dict) else None
        if status == 401:
            error_class: type[RegistryError] = Unauthorized
        elif isinstance(code, int) and code in _ERRORS_BY_CODE:
            error_class = _ERRORS_BY_CODE[code]
        elif not isinstance(code, int) or not isinstance(server_message, str):
            snippet = redact_text(data[:120].decode("utf-8", "replace"))
            raise RegistryUnavailable(
                f"Schema Registry at {self.url} answered {method} {path} with HTTP {status} and no "
                f"Schema Registry error body ({snippet!r}). Is that URL really a Schema Registry? "
                "Pass the right --registry URL.",
                status=status,
            )
        else:
            error_class = RegistryError
        shown = redact_text(server_message if isinstance(server_message, str) else f"HTTP {status}")
        hint = _HINTS.get(error_class, "")
        text = (
            f"Schema Registry at {self.url} refused {method} {path}: {shown} "
            f"(HTTP {status}, error code {code}).{' ' + hint if hint else ''}"
        )
        return_code = code if isinstance(code, int) else None
        raise error_class(text, status=status, error_code=return_code, message=shown)

    @staticmethod
    def _subject_path(subject: str) -> str:
        return urllib.parse.quote(subject, safe="")

    # ---- API ---------------------------------------------------------------------------------

    def check_root(self) -> None:
        """``GET /`` must answer ``{}`` (TiCDC refuses any other registry); raise otherwise."""
        answer = self._call("GET", "/")
        if answer != {} or not isinstance(answer, dict):
            shown = redact_text(json.dumps(answer)[:120])
            raise RegistryError(
                f"Schema Registry at {self.url} answered GET / with {shown} instead of {{}}: "
                "it is not a Confluent-compatible Schema Registry (TiCDC would refuse it too). "
                "Pass the right --registry URL."
            )

    def register(self, subject: str, schema: str) -> int:
        """Register ``schema`` under ``subject`` exactly as TiCDC does; return its id."""
        answer = self._call("POST", f"/subjects/{self._subject_path(subject)}/versions", {"schema": schema})
        schema_id = answer.get("id") if isinstance(answer, dict) else None
        if not isinstance(schema_id, int):
            raise RegistryError(
                f"Schema Registry at {self.url} answered a registration without an integer id ({answer!r})."
            )
        with self._cache_lock:
            self._id_subjects.pop(schema_id, None)  # the id may now be under one more subject
        return schema_id

    def schema_by_id(self, schema_id: int) -> str:
        """The schema text registered with ``schema_id`` (cached)."""
        with self._cache_lock:
            cached = self._schemas.get(schema_id)
        if cached is not None:
            return cached
        if schema_id < 0:
            raise SchemaNotFound(
                f"Schema id {schema_id} is negative; Schema Registry ids are positive, so the "
                "message envelope is probably corrupt.",
                status=404,
                error_code=40403,
                message=f"Schema {schema_id} not found",
            )
        answer = self._call("GET", f"/schemas/ids/{schema_id}")
        text = answer.get("schema") if isinstance(answer, dict) else None
        if not isinstance(text, str):
            raise RegistryError(
                f"Schema Registry at {self.url} answered schema {schema_id} without a schema text."
            )
        with self._cache_lock:
            _keep(self._schemas, schema_id, text, self.CACHED_IDS)
        return text

    def subjects_for_id(self, schema_id: int, *, fresh: bool = False) -> list[tuple[str, int]]:
        """``(subject, version)`` pairs using ``schema_id`` (cached until a registration returns that id;
        ``fresh=True`` asks the registry again: another producer may have added a subject since)."""
        with self._cache_lock:
            cached = None if fresh else self._id_subjects.get(schema_id)
        if cached is not None:
            return list(cached)
        answer = self._call("GET", f"/schemas/ids/{schema_id}/versions")
        pairs = tuple((str(item["subject"]), int(item["version"])) for item in answer)
        with self._cache_lock:
            _keep(self._id_subjects, schema_id, pairs, self.CACHED_IDS)
        return list(pairs)

    def versions(self, subject: str) -> list[int]:
        return [int(v) for v in self._call("GET", f"/subjects/{self._subject_path(subject)}/versions")]

    def version(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        if not (version == "latest" or (isinstance(version, int) and not isinstance(version, bool))):
            raise ValueError(f"version must be a positive integer or 'latest', not {version!r}")
        answer = self._call("GET", f"/subjects/{self._subject_path(subject)}/versions/{version}")
        return RegisteredSchema(
            subject=str(answer["subject"]),
            version=int(answer["version"]),
            id=int(answer["id"]),
            schema=str(answer["schema"]),
        )

    def subjects(self) -> list[str]:
        return [str(s) for s in self._call("GET", "/subjects")]

    def test_compatibility(self, subject: str, schema: str, version: int | str | None = None) -> bool:
        """``POST /compatibility/subjects/{subject}/versions[/{version}]``: would ``schema`` be
        accepted (against every version the subject's level says, or against one version)?"""
        path = f"/compatibility/subjects/{self._subject_path(subject)}/versions" + (
            "" if version is None else f"/{version}")
        answer = self._call("POST", path, {"schema": schema})
        return bool(answer.get("is_compatible")) if isinstance(answer, dict) else False

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the global (or a subject's) compatibility level; return the level now in force."""
        path = "/config" if subject is None else f"/config/{self._subject_path(subject)}"
        answer = self._call("PUT", path, {"compatibility": level.upper()})
        return str(answer["compatibility"])

    def get_compatibility(self, subject: str | None = None) -> str:
        """The global level, or the level in force for ``subject`` (its own, else the global one)."""
        path = "/config" if subject is None else f"/config/{self._subject_path(subject)}?defaultToGlobal=true"
        return str(self._call("GET", path)["compatibilityLevel"])


class _Fields:
    """A response's header fields, names compared case-insensitively (what `http.client` and its
    callers read of them: `get`, `get_all`, `items`)."""

    __slots__ = ("_fields",)

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self._fields = fields

    def get(self, name: str, default: str | None = None) -> str | None:
        name = name.lower()
        return next((v for k, v in self._fields if k.lower() == name), default)

    def get_all(self, name: str, default: Any = None) -> list[str] | Any:
        name = name.lower()
        return [v for k, v in self._fields if k.lower() == name] or default

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)

    def keys(self) -> list[str]:
        return [k for k, _ in self._fields]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None


#: The longest status or header line, and the most header lines, a response may have.
_MAX_LINE = 65536
_MAX_FIELDS = 100


class _Response(http.client.HTTPResponse):
    """`http.client`'s response with its status line and header fields read here: it hands the
    fields to the e-mail parser, most of the client's time per request on a loopback registry (a
    run's workers send tens of thousands). Framing as HTTP/1.x has it: 1xx answers passed over,
    chunked or Content-Length bodies, whether the connection stays open."""

    def begin(self) -> None:
        if self.headers is not None:
            return  # already read
        while True:
            line = self.fp.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                raise http.client.LineTooLong("status line")
            if not line:
                raise http.client.RemoteDisconnected("Remote end closed connection without response")
            version, _, rest = str(line, "iso-8859-1").strip().partition(" ")
            code, _, reason = rest.partition(" ")
            if not version.startswith("HTTP/") or not (len(code) == 3 and code.isdigit()):
                self._close_conn()
                raise http.client.BadStatusLine(str(line, "iso-8859-1"))
            status = int(code)
            fields = self._fields()
            if status != 100:
                break
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        self.headers = self.msg = fields  # what is read of them
        self.chunked = (fields.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        connection = (fields.get("connection") or "").lower()
        if self.version == 11:
            self.will_close = "close" in connection
        else:  # HTTP/1.0 keeps the connection only when it says so
            self.will_close = not (fields.get("keep-alive") or "keep-alive" in connection
                                   or "keep-alive" in (fields.get("proxy-connection") or "").lower())
        self.length = None
        length = fields.get("content-length")
        if length and not self.chunked:
            with contextlib.suppress(ValueError):
                self.length = int(length) if int(length) >= 0 else None
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # the body ends where the connection does

    def _fields(self) -> _Fields:
        fields: list[tuple[str, str]] = []
        while True:
            line = self.fp.readline(_MAX_LINE + 1)
            if len(line) > _MAX_LINE:
                raise http.client.LineTooLong("header line")
            if line in (b"\r\n", b"\n", b""):
                return _Fields(fields)
            text = str(line, "iso-8859-1")
            if text[:1] in (" ", "\t") and fields:  # a folded line continues the field before
                fields[-1] = (fields[-1][0], f"{fields[-1][1]} {text.strip()}")
                continue
            if len(fields) >= _MAX_FIELDS:
                raise http.client.HTTPException(f"got more than {_MAX_FIELDS} headers")
            name, colon, value = text.partition(":")
            if colon:
                fields.append((name.strip(), value.strip()))


class _InProcessClient(RegistryClient):
    """`RegistryClient.in_process`: requests answered by the embedded server's handler directly."""

    def __init__(self, server: EmbeddedSchemaRegistry) -> None:
        super().__init__(server.url)
        self.server = server

    def _call(self, method: str, path: str, body: object | None = None) -> Any:
        assert self.server is not None
        payload = b"" if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": ACCEPT}
        if body is not None:
            headers["Content-Type"] = CONTENT_TYPE
        if self._auth is not None:
            headers["Authorization"] = self._auth
        if not self.server.running:
            raise self._unavailable(ConnectionRefusedError())
        answer = self.server.handle(method, f"{self._base_path}{path}", payload, headers)
        return self._decode(method, path, answer.status, answer.body)


def _keep(cache: dict[int, Any], key: int, value: Any, most: int) -> None:
    """`cache[key] = value`, first dropping the oldest entries beyond `most` (insertion order)."""
    while len(cache) >= most and cache:
        del cache[next(iter(cache))]
    cache[key] = value
