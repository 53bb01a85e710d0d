"""The embedded Schema Registry: an in-memory, Confluent-compatible registry on 127.0.0.1.

:class:`EmbeddedSchemaRegistry` is served by ``http.server``; TiCDC,
``confluent_kafka.schema_registry.SchemaRegistryClient`` and our own
:class:`~conformance.infra.registry.RegistryClient` talk to it unchanged. It records the exact
schema text every encoder registered (:attr:`EmbeddedSchemaRegistry.registrations`) so checks
can look at the bytes that were sent, not at a re-serialisation. Its compatibility decisions
are those of :mod:`.compat`.

Schema identity and texts follow the brief for this suite rather than Confluent's internals:
Confluent compares and returns its canonical re-serialisation, whereas this registry compares
parsed JSON (whitespace and key order ignored) and returns, verbatim, the text the id was
first registered with, so encoders' exact bytes stay observable.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hmac
import json
import re
import socket
import threading
import time
import traceback
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Final, Self

from .compat import INVALID_COMPATIBILITY_MESSAGE, ParsedSchema, check_parsed, normalize_compatibility, parse_schema
from .errors import RegistryError, SchemaTextError
from .wire import CONTENT_TYPE

_MAX_VERSION: Final = 2**31 - 1


@dataclass(frozen=True, slots=True)
class RegistryResponse:
    """An HTTP answer of the embedded registry (also returned by :meth:`EmbeddedSchemaRegistry.handle`)."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = (("Content-Type", CONTENT_TYPE),)

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body.decode("utf-8"))


class _ApiError(Exception):
    """An error answer: HTTP status = first three digits of the Confluent error code."""

    def __init__(self, error_code: int, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code
        self.message = message

    @property
    def status(self) -> int:
        return int(str(self.error_code)[:3])


@dataclass(frozen=True, slots=True)
class _Version:
    version: int
    schema_id: int
    deleted: bool = False


def _subject_not_found(subject: str) -> _ApiError:
    return _ApiError(40401, f"Subject '{subject}' not found.")


def _version_not_found(version: int | str) -> _ApiError:
    return _ApiError(40402, f"Version {version} not found.")


def _parse_version(raw: str) -> int | None:
    """A path version: ``None`` for latest (``latest`` or ``-1``), else 1..2^31-1; 42202 otherwise."""
    if raw == "latest":
        return None
    if re.fullmatch(r"[+-]?[0-9]+", raw):
        number = int(raw)
        if number == -1:
            return None
        if 1 <= number <= _MAX_VERSION:
            return number
    raise _ApiError(
        42202,
        f"The specified version '{raw}' is not a valid version id. "
        'Allowed values are between [1, 2^31-1] and the string "latest"',
    )


def _flag(query: Mapping[str, str], name: str) -> bool:
    return query.get(name, "").strip().lower() == "true"


def _json_body(body: bytes) -> dict[str, Any]:
    """The request body as a JSON object: 400 when unparseable (as Confluent), 42201 when not an object."""
    try:
        obj = json.loads(body.decode("utf-8"))
    except RecursionError:
        raise _ApiError(400, "Unparseable request body: JSON nested too deeply") from None
    except UnicodeDecodeError:
        raise _ApiError(
            400, 'The request body is not UTF-8 text; send JSON such as {"schema": "..."}'
        ) from None
    except json.JSONDecodeError as exc:
        raise _ApiError(
            400,
            f"Unparseable request body: {exc.msg} at line {exc.lineno}, column {exc.colno}; "
            'send JSON such as {"schema": "..."}',
        ) from None
    if not isinstance(obj, dict):
        raise _ApiError(42201, 'Invalid request body: expected a JSON object such as {"schema": "..."}')
    return obj


def _schema_from_request(obj: Mapping[str, Any]) -> str:
    """The ``schema`` string of a register/lookup/compatibility request, after type checks."""
    schema_type = obj.get("schemaType")
    if schema_type is not None and (not isinstance(schema_type, str) or schema_type.upper() != "AVRO"):
        raise _ApiError(
            42201,
            f"Invalid schema type {schema_type!r}: this embedded registry supports only AVRO schemas",
        )
    references = obj.get("references")
    if references:
        raise _ApiError(
            42201,
            "Invalid schema: schema references are not supported by this embedded registry; "
            "inline the referenced types",
        )
    schema = obj.get("schema")
    if not isinstance(schema, str):
        raise _ApiError(
            42201,
            'Invalid schema: the request must carry the schema as a JSON string in "schema" '
            f"(got {type(schema).__name__})",
        )
    return schema


def _parse_for_api(text: str) -> ParsedSchema:
    try:
        return parse_schema(text)
    except SchemaTextError as exc:
        shown = text if len(text) <= 500 else text[:500] + "..."
        raise _ApiError(42201, f"Invalid schema {shown} of type AVRO, details: {exc.reason}") from None


class _Server(ThreadingHTTPServer):
    """ThreadingHTTPServer that can close idle keep-alive connections when it stops.

    Without that, a handler thread blocked on a kept-alive socket would go on answering a
    client after :meth:`EmbeddedSchemaRegistry.stop`, and "the registry is down" tests would lie.
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], registry: EmbeddedSchemaRegistry) -> None:
        self.registry = registry
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: socket.socket | tuple[bytes, socket.socket]) -> None:
        if isinstance(request, socket.socket):
            with self._connections_lock:
                self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for conn in connections:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        # Only socket errors reach here (clients that went away); request-handling bugs are
        # caught in EmbeddedSchemaRegistry.handle and answered as 500s. Stay quiet.
        return


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Headers:
    """A request's header fields, names compared case-insensitively: what the handler reads of
    them (`get`, `items`). The first field of a repeated name is the one `get` answers."""

    __slots__ = ("_fields", "_first")

    def __init__(self, fields: list[tuple[str, str]]) -> None:
        self._fields = fields
        self._first: dict[str, str] = {}
        for name, value in fields:
            self._first.setdefault(name.lower(), value)

    def get(self, name: str, default: str | None = None) -> str | None:
        return self._first.get(name.lower(), default)

    def items(self) -> list[tuple[str, str]]:
        return list(self._fields)


#: Header lines a request may have, and the longest line (as http.server allows).
_MAX_HEADERS = 100
_MAX_LINE = 65536


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive. The request line and header fields are read here (http.server
    hands them to the e-mail parser: about 40% of the registry's time per request, thousands of
    requests a run), and an answer leaves in one write."""

    protocol_version = "HTTP/1.1"  # keep-alive: clients look ids up at high rates
    server_version = "cdc-conformance-schema-registry/1"
    # Idle keep-alive connections end after this, so handler threads do not pile up.
    timeout = 60
    _date: tuple[int, str] = (0, "")

    def parse_request(self) -> bool:
        """Read the request line (already in `raw_requestline`) and the header fields; answer
        400/431/505 and return False where they are not HTTP/1.x (or too long, or too many)."""
        self.command = ""  # none yet
        self.request_version = self.default_request_version
        self.close_connection = True
        self.requestline = line = str(getattr(self, "raw_requestline", b""), "iso-8859-1").rstrip("\r\n")
        words = line.split()
        version = words[-1] if words else ""
        major, _, minor = version.removeprefix("HTTP/").partition(".")
        if len(words) < 3 or not version.startswith("HTTP/") or not (major.isdigit() and minor.isdigit()) \
                or len(major + minor) > 20:
            self.send_error(400, f"Bad request version ({version!r})")  # answered as HTTP/0.9 (no status line)
            return False
        self.request_version = version
        if len(words) != 3:
            self.send_error(400, f"Bad request syntax ({line!r})")
            return False
        if int(major) >= 2:
            self.send_error(505, f"Invalid HTTP version ({version})")
            return False
        command, path = words[0], words[1]
        self.command = command
        # A target starting with '//' would read as a host name to URL parsers: one '/'.
        self.path = "/" + path.lstrip("/") if path.startswith("//") else path
        fields: list[tuple[str, str]] = []
        while True:
            raw = self.rfile.readline(_MAX_LINE + 1)
            if len(raw) > _MAX_LINE:
                self.send_error(431, "Line too long")
                return False
            if raw in (b"\r\n", b"\n", b""):
                break
            text = raw.decode("iso-8859-1")
            if text[:1] in (" ", "\t") and fields:  # a folded line continues the field before
                name, value = fields[-1]
                fields[-1] = (name, f"{value} {text.strip()}")
                continue
            if len(fields) >= _MAX_HEADERS:
                self.send_error(431, "Too many headers")
                return False
            name, colon, value = text.partition(":")
            if colon and name.strip():  # a line that is no field is passed over, as http.server does
                fields.append((name.strip(), value.strip()))
        self.headers = _Headers(fields)  # type: ignore[assignment]  # what the handler reads of them
        http11 = (int(major), int(minor)) >= (1, 1)
        connection = (self.headers.get("Connection") or "").lower()
        self.close_connection = connection == "close" or (not http11 and connection != "keep-alive")
        if http11 and (self.headers.get("Expect") or "").lower() == "100-continue":
            return self.handle_expect_100()
        return True

    def _answer(self, response: RegistryResponse) -> None:
        """The status line, the Server and Date fields, the response's own, its length and its
        body, in one write."""
        now = int(time.time())
        if self._date[0] != now:
            _Handler._date = (now, self.date_time_string(now))
        reason = self.responses.get(response.status, ("",))[0]
        head = [f"HTTP/1.1 {response.status} {reason}", f"Server: {self.version_string()}",
                f"Date: {self._date[1]}", *(f"{name}: {value}" for name, value in response.headers),
                f"Content-Length: {len(response.body)}", "", ""]
        self.wfile.write("\r\n".join(head).encode("latin-1", "strict") + response.body)

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in separate writes; without TCP_NODELAY, Nagle's algorithm
        # and the client's delayed ACK add ~40 ms to every keep-alive request.
        with contextlib.suppress(OSError):
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        self._dispatch()

    def do_POST(self) -> None:
        self._dispatch()

    def do_PUT(self) -> None:
        self._dispatch()

    def do_DELETE(self) -> None:
        self._dispatch()

    def log_message(self, format: str, *args: Any) -> None:
        # The suite's output is a report; request logs on stderr would drown it.
        return

    def _read_body(self) -> bytes | None:
        """The request body (Content-Length or chunked); ``None`` when framing is broken."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    return None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline(1024)
        raw = self.headers.get("Content-Length")
        if raw is None:
            return b""
        try:
            length = int(raw)
        except ValueError:
            return None
        if length < 0:
            return None
        return self.rfile.read(length)

    def _dispatch(self) -> None:
        server = self.server
        assert isinstance(server, _Server)
        body = self._read_body()
        if body is None:
            self.close_connection = True
            response = _json_response(400, {"error_code": 400, "message": "Malformed request body framing"})
        else:
            headers = {k.lower(): v for k, v in self.headers.items()}
            response = server.registry.handle(self.command, self.path, body, headers)
        self._answer(response)


def _json_response(status: int, obj: object, extra: tuple[tuple[str, str], ...] = ()) -> RegistryResponse:
    body = json.dumps(obj, ensure_ascii=False).encode("utf-8")
    return RegistryResponse(status, body, (("Content-Type", CONTENT_TYPE), *extra))


def _error_response(exc: _ApiError) -> RegistryResponse:
    return _json_response(exc.status, {"error_code": exc.error_code, "message": exc.message})


def _not_found() -> _ApiError:
    return _ApiError(404, "HTTP 404 Not Found")


def _not_allowed() -> _ApiError:
    return _ApiError(405, "HTTP 405 Method Not Allowed")


class EmbeddedSchemaRegistry:
    """An in-memory, Confluent-compatible Schema Registry served on a daemon thread.

    Use as a context manager (``with EmbeddedSchemaRegistry() as reg: reg.url``) or call
    :meth:`start` / :meth:`stop`. State survives a stop/start cycle (the port is kept), which
    lets tests take the registry down and bring it back. All state sits behind one lock.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        auth: tuple[str, str] | None = None,
        default_compatibility: str = "BACKWARD",
    ) -> None:
        self._host = host
        self._port = port
        # Only the "user:password" token is kept (for a constant-time compare), never shown.
        self._auth_token: bytes | None = None if auth is None else f"{auth[0]}:{auth[1]}".encode()
        self._default_level = normalize_compatibility(default_compatibility)
        self._lock = threading.Lock()
        self._global_level = self._default_level
        self._subject_levels: dict[str, str] = {}
        self._schemas: dict[int, ParsedSchema] = {}
        self._ids_by_key: dict[str, int] = {}
        self._next_id = 1
        self._subjects: dict[str, list[_Version]] = {}
        # schema id -> the subjects holding a version (live or soft-deleted) of it: lookups by id
        # (`/schemas/ids/{id}/versions`, every consumer's subject check) would otherwise scan and
        # sort every subject of the registry, thousands in a run.
        self._id_holders: dict[int, set[str]] = {}
        self._registrations: list[tuple[str, str]] = []
        self._internal_errors: list[str] = []
        self._lifecycle = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._url: str | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def start(self) -> EmbeddedSchemaRegistry:
        """Bind and serve. Raises :class:`RegistryError` when the address cannot be used."""
        with self._lifecycle:
            if self._httpd is not None:
                return self
            server_class = _Server6 if ":" in self._host else _Server
            try:
                httpd = server_class((self._host, self._port), self)
            except OSError as exc:
                raise RegistryError(
                    f"The embedded Schema Registry cannot listen on {self._host}:{self._port} "
                    f"({exc.strerror or exc}). Choose another port, or 0 for any free port."
                ) from None
            port = int(httpd.server_address[1])
            self._port = port  # a restart after stop() comes back on the same URL
            host = f"[{self._host}]" if ":" in self._host else self._host
            self._url = f"http://{host}:{port}"
            thread = threading.Thread(
                target=httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name=f"schema-registry-{port}",
                daemon=True,
            )
            thread.start()
            self._httpd, self._thread = httpd, thread
            return self

    def stop(self) -> None:
        """Stop serving, close kept-alive connections and join the thread. Idempotent."""
        with self._lifecycle:
            httpd, thread = self._httpd, self._thread
            self._httpd = self._thread = None
            if httpd is None:
                return
            httpd.shutdown()
            httpd.close_connections()
            httpd.server_close()
            if thread is not None:
                thread.join(timeout=10)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._httpd is not None

    @property
    def url(self) -> str:
        """``http://host:port`` (no credentials). Available once started; kept after stop."""
        if self._url is None:
            raise RuntimeError(
                "The embedded Schema Registry has no URL yet: call start() or use it in a with block."
            )
        return self._url

    def __repr__(self) -> str:
        where = self._url or f"{self._host}:{self._port} (not started)"
        return (
            f"EmbeddedSchemaRegistry(url={where!r}, running={self.running}, "
            f"auth={'on' if self._auth_token else 'off'}, compatibility={self._global_level!r})"
        )

    # ---- observations for the suite ---------------------------------------------------------

    @property
    def registrations(self) -> list[tuple[str, str]]:
        """Every successful ``POST /subjects/{s}/versions`` as ``(subject, schema text sent)``."""
        with self._lock:
            return list(self._registrations)

    @property
    def internal_errors(self) -> list[str]:
        """Tracebacks of bugs hit while answering (answered as HTTP 500); empty when healthy."""
        with self._lock:
            return list(self._internal_errors)

    def dump(self) -> dict[str, Any]:
        """Live versions as a registry dump (sorted by subject, then version); see :class:`DumpRegistry`."""
        with self._lock:
            entries = [
                {
                    "subject": subject,
                    "version": v.version,
                    "id": v.schema_id,
                    "schema": self._schemas[v.schema_id].text,
                }
                for subject in sorted(self._subjects)
                for v in self._subjects[subject]
                if not v.deleted
            ]
        return {"schemas": entries}

    # ---- request handling -------------------------------------------------------------------

    def handle(
        self,
        method: str,
        target: str,
        body: bytes = b"",
        headers: Mapping[str, str] | None = None,
    ) -> RegistryResponse:
        """Answer one request (the HTTP server calls this; tests may call it without sockets).

        ``target`` is the request target (path and query, still percent-encoded), ``headers``
        a mapping whose keys are compared case-insensitively.
        """
        lowered = {k.lower(): v for k, v in (headers or {}).items()}
        if self._auth_token is not None and not self._authorized(lowered.get("authorization", "")):
            return _json_response(
                401,
                {"error_code": 401, "message": "Unauthorized"},
                (("WWW-Authenticate", 'Basic realm="SchemaRegistry"'),),
            )
        try:
            return self._route(method.upper(), target, body)
        except _ApiError as exc:
            return _error_response(exc)
        except Exception:  # noqa: BLE001 - a bug must not kill the connection; recorded for the tests
            with self._lock:
                self._internal_errors.append(traceback.format_exc())
            return _error_response(_ApiError(50001, "Internal error in the embedded Schema Registry"))

    def _authorized(self, header: str) -> bool:
        scheme, _, value = header.partition(" ")
        if scheme.lower() != "basic" or self._auth_token is None:
            return False
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return False
        return hmac.compare_digest(decoded, self._auth_token)

    def _route(self, method: str, target: str, body: bytes) -> RegistryResponse:
        split = urllib.parse.urlsplit(target)
        # Split before decoding: a subject may contain an encoded '/'.
        raw = split.path.split("/")[1:] if split.path.startswith("/") else split.path.split("/")
        if len(raw) > 1 and raw[-1] == "":
            raw = raw[:-1]
        if raw == [""]:
            raw = []
        seg = [urllib.parse.unquote(s) for s in raw]
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(split.query, keep_blank_values=True).items()}

        def only(allowed: str) -> None:
            if method != allowed:
                raise _not_allowed()

        match seg:
            case []:
                only("GET")
                return _json_response(200, {})  # TiCDC requires exactly {}
            case ["schemas", "types"]:
                only("GET")
                return _json_response(200, ["AVRO"])
            case ["schemas", "ids", sid]:
                only("GET")
                return _json_response(200, {"schema": self._schema_text(self._path_id(sid))})
            case ["schemas", "ids", sid, "versions"]:
                only("GET")
                refs = self._id_refs(self._path_id(sid), _flag(query, "deleted"))
                return _json_response(200, [{"subject": s, "version": v} for s, v in refs])
            case ["schemas", "ids", sid, "subjects"]:
                only("GET")
                refs = self._id_refs(self._path_id(sid), _flag(query, "deleted"))
                return _json_response(200, sorted({s for s, _ in refs}))
            case ["subjects"]:
                only("GET")
                return _json_response(200, self._list_subjects(query))
            case ["subjects", subject]:
                if method == "POST":
                    return _json_response(200, self._lookup(subject, body, _flag(query, "deleted")))
                only("DELETE")
                return _json_response(200, self._delete_subject(subject, _flag(query, "permanent")))
            case ["subjects", subject, "versions"]:
                if method == "POST":
                    return _json_response(200, {"id": self._register(subject, body)})
                only("GET")
                return _json_response(200, self._list_versions(subject, query))
            case ["subjects", subject, "versions", raw_version]:
                if method == "DELETE":
                    deleted = self._delete_version(subject, raw_version, _flag(query, "permanent"))
                    return _json_response(200, deleted)
                only("GET")
                return _json_response(200, self._get_version(subject, raw_version, _flag(query, "deleted")))
            case ["subjects", subject, "versions", raw_version, "schema"]:
                only("GET")
                text = self._get_version(subject, raw_version, _flag(query, "deleted"))["schema"]
                return RegistryResponse(200, str(text).encode("utf-8"))
            case ["subjects", subject, "versions", raw_version, "referencedby"]:
                only("GET")
                self._get_version(subject, raw_version, _flag(query, "deleted"))
                return _json_response(200, [])  # references are not supported, so nothing refers
            case ["config"]:
                return _json_response(200, self._config(method, None, body, query))
            case ["config", subject]:
                return _json_response(200, self._config(method, subject, body, query))
            case ["compatibility", "subjects", subject, "versions"]:
                only("POST")
                return _json_response(
                    200, self._test_compatibility(subject, None, body, _flag(query, "verbose"))
                )
            case ["compatibility", "subjects", subject, "versions", raw_version]:
                only("POST")
                return _json_response(
                    200, self._test_compatibility(subject, raw_version, body, _flag(query, "verbose"))
                )
            case ["mode"]:
                only("GET")
                return _json_response(200, {"mode": "READWRITE"})
            case ["mode", subject]:
                only("GET")
                if _flag(query, "defaultToGlobal"):
                    return _json_response(200, {"mode": "READWRITE"})
                raise _ApiError(40409, f"Subject '{subject}' does not have subject-level mode configured")
            case _:
                raise _not_found()

    # ---- state helpers (caller holds self._lock) -----------------------------------------------

    def _live(self, subject: str) -> list[_Version]:
        return [v for v in self._subjects.get(subject, []) if not v.deleted]

    def _visible(self, subject: str, include_deleted: bool) -> list[_Version]:
        versions = self._subjects.get(subject, [])
        return list(versions) if include_deleted else [v for v in versions if not v.deleted]

    def _level(self, subject: str) -> str:
        return self._subject_levels.get(subject, self._global_level)

    def _previous(self, versions: Sequence[_Version]) -> list[tuple[int, ParsedSchema]]:
        return [(v.version, self._schemas[v.schema_id]) for v in versions]

    @staticmethod
    def _path_id(raw: str) -> int:
        if not re.fullmatch(r"-?[0-9]+", raw):
            raise _not_found()  # as Jersey answers a path parameter that is not an integer
        return int(raw)

    def _referenced(self, schema_id: int) -> bool:
        return bool(self._id_holders.get(schema_id))

    def _unhold(self, subject: str, schema_ids: Iterable[int]) -> None:
        """`subject` no longer holds these ids unless one of its remaining versions does."""
        left = {v.schema_id for v in self._subjects.get(subject, ())}
        for schema_id in set(schema_ids) - left:
            holders = self._id_holders.get(schema_id)
            if holders is not None:
                holders.discard(subject)
                if not holders:
                    del self._id_holders[schema_id]

    # ---- endpoints ---------------------------------------------------------------------------

    def _schema_text(self, schema_id: int) -> str:
        with self._lock:
            # Soft-deleted versions still resolve by id (consumers need old data); permanently
            # deleted ones do not.
            if schema_id in self._schemas and self._referenced(schema_id):
                return self._schemas[schema_id].text
        raise _ApiError(40403, f"Schema {schema_id} not found")

    def _id_refs(self, schema_id: int, include_deleted: bool) -> list[tuple[str, int]]:
        with self._lock:
            if schema_id not in self._schemas or not self._referenced(schema_id):
                raise _ApiError(40403, f"Schema {schema_id} not found")
            return [
                (subject, v.version)
                for subject in sorted(self._id_holders.get(schema_id, ()))
                for v in self._subjects[subject]
                if v.schema_id == schema_id and (include_deleted or not v.deleted)
            ]

    def _list_subjects(self, query: Mapping[str, str]) -> list[str]:
        deleted_only = _flag(query, "deleted_only")
        include_deleted = _flag(query, "deleted")
        prefix = query.get("subjectPrefix", "")
        with self._lock:
            result = []
            for subject in sorted(self._subjects):
                versions = self._subjects[subject]
                has_live = any(not v.deleted for v in versions)
                has_deleted = any(v.deleted for v in versions)
                if deleted_only:
                    keep = has_deleted
                else:
                    keep = has_live or (include_deleted and has_deleted)
                if keep and subject.startswith(prefix):
                    result.append(subject)
        return _page(result, query)

    def _list_versions(self, subject: str, query: Mapping[str, str]) -> list[int]:
        with self._lock:
            versions = self._subjects.get(subject, [])
            if _flag(query, "deleted_only"):
                numbers = [v.version for v in versions if v.deleted]
            else:
                numbers = [v.version for v in self._visible(subject, _flag(query, "deleted"))]
            if not numbers and not any(not v.deleted for v in versions):
                raise _subject_not_found(subject)
        return _page(numbers, query)

    def _find_version(self, subject: str, raw_version: str, include_deleted: bool) -> _Version:
        number = _parse_version(raw_version)
        visible = self._visible(subject, include_deleted)
        if not visible:
            raise _subject_not_found(subject)
        if number is None:
            return visible[-1]
        for v in visible:
            if v.version == number:
                return v
        raise _version_not_found(number)

    def _get_version(self, subject: str, raw_version: str, include_deleted: bool) -> dict[str, Any]:
        with self._lock:
            v = self._find_version(subject, raw_version, include_deleted)
            return {
                "subject": subject,
                "version": v.version,
                "id": v.schema_id,
                "schema": self._schemas[v.schema_id].text,
            }

    def _register(self, subject: str, body: bytes) -> int:
        text = _schema_from_request(_json_body(body))
        parsed = _parse_for_api(text)  # parse outside the lock: it is the slow part
        with self._lock:
            live = self._live(subject)
            for v in live:
                if self._schemas[v.schema_id].key == parsed.key:
                    self._registrations.append((subject, text))
                    return v.schema_id
            level = self._level(subject)
            result = check_parsed(parsed, self._previous(live), level)
            if not result.compatible:
                raise _ApiError(
                    409,
                    "Schema being registered is incompatible with an earlier schema "
                    f'for subject "{subject}", '
                    f"details: [{', '.join(result.messages)}]",
                )
            schema_id = self._ids_by_key.get(parsed.key)
            if schema_id is None:
                # Ids are global: the same schema under another subject keeps its id.
                schema_id = self._next_id
                self._next_id += 1
                self._ids_by_key[parsed.key] = schema_id
                self._schemas[schema_id] = parsed  # first registration's exact text is kept
            versions = self._subjects.setdefault(subject, [])
            number = versions[-1].version + 1 if versions else 1
            versions.append(_Version(number, schema_id))
            self._id_holders.setdefault(schema_id, set()).add(subject)
            self._registrations.append((subject, text))
            return schema_id

    def _lookup(self, subject: str, body: bytes, include_deleted: bool) -> dict[str, Any]:
        text = _schema_from_request(_json_body(body))
        parsed = _parse_for_api(text)
        with self._lock:
            visible = self._visible(subject, include_deleted)
            if not visible:
                raise _subject_not_found(subject)
            for v in reversed(visible):
                stored = self._schemas[v.schema_id]
                if stored.key == parsed.key:
                    return {
                        "subject": subject,
                        "version": v.version,
                        "id": v.schema_id,
                        "schema": stored.text,
                    }
        raise _ApiError(40403, "Schema not found")

    def _delete_subject(self, subject: str, permanent: bool) -> list[int]:
        with self._lock:
            versions = self._subjects.get(subject, [])
            if not versions:
                raise _subject_not_found(subject)
            live = [v for v in versions if not v.deleted]
            if permanent:
                if live:
                    raise _ApiError(
                        40405, f"Subject '{subject}' was not deleted first before being permanently deleted"
                    )
                del self._subjects[subject]
                self._unhold(subject, [v.schema_id for v in versions])
                return [v.version for v in versions]
            if not live:
                raise _ApiError(
                    40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently"
                )
            self._subjects[subject] = [replace(v, deleted=True) for v in versions]
            # Confluent drops the subject-level configuration with the subject.
            self._subject_levels.pop(subject, None)
            return [v.version for v in live]

    def _delete_version(self, subject: str, raw_version: str, permanent: bool) -> int:
        number = _parse_version(raw_version)
        with self._lock:
            versions = self._subjects.get(subject, [])
            if not versions:
                raise _subject_not_found(subject)
            if number is None:
                candidates = versions if permanent else [v for v in versions if not v.deleted]
                if not candidates:
                    raise _subject_not_found(subject)
                number = candidates[-1].version
            index = next((i for i, v in enumerate(versions) if v.version == number), None)
            if index is None:
                raise _version_not_found(number)
            target = versions[index]
            if permanent:
                if not target.deleted:
                    raise _ApiError(
                        40407,
                        f"Subject '{subject}' Version {number} was not deleted first "
                        "before being permanently deleted",
                    )
                del versions[index]
                if not versions:
                    del self._subjects[subject]
                self._unhold(subject, [target.schema_id])
            else:
                if target.deleted:
                    raise _ApiError(
                        40406,
                        f"Subject '{subject}' Version {number} was soft deleted."
                        "Set permanent=true to delete permanently",
                    )
                versions[index] = replace(target, deleted=True)
            return number

    def _config(
        self, method: str, subject: str | None, body: bytes, query: Mapping[str, str]
    ) -> dict[str, str]:
        if method == "GET":
            with self._lock:
                if subject is None:
                    return {"compatibilityLevel": self._global_level}
                if subject in self._subject_levels:
                    return {"compatibilityLevel": self._subject_levels[subject]}
                if _flag(query, "defaultToGlobal"):
                    return {"compatibilityLevel": self._global_level}
            raise _ApiError(
                40408, f"Subject '{subject}' does not have subject-level compatibility configured"
            )
        if method == "PUT":
            obj = _json_body(body)
            raw = obj.get("compatibility", obj.get("compatibilityLevel"))
            try:
                level = normalize_compatibility(raw if isinstance(raw, str) else "")
            except ValueError:
                raise _ApiError(42203, INVALID_COMPATIBILITY_MESSAGE) from None
            with self._lock:
                if subject is None:
                    self._global_level = level
                else:
                    self._subject_levels[subject] = level
            return {"compatibility": level}
        if method == "DELETE":
            with self._lock:
                if subject is None:
                    previous = self._global_level
                    self._global_level = self._default_level
                    return {"compatibilityLevel": previous}
                if subject not in self._subject_levels:
                    raise _subject_not_found(subject)
                return {"compatibilityLevel": self._subject_levels.pop(subject)}
        raise _not_allowed()

    def _test_compatibility(
        self, subject: str, raw_version: str | None, body: bytes, verbose: bool
    ) -> dict[str, Any]:
        number = None if raw_version is None else _parse_version(raw_version)
        text = _schema_from_request(_json_body(body))
        parsed = _parse_for_api(text)
        with self._lock:
            level = self._level(subject)
            live = self._live(subject)
            if raw_version is None:
                # Like Confluent 7.x: against all live versions per level; no subject = compatible.
                result = check_parsed(parsed, self._previous(live), level)
            else:
                if not live:
                    raise _subject_not_found(subject)
                target = live[-1] if number is None else next((v for v in live if v.version == number), None)
                if target is None:
                    raise _version_not_found(raw_version)
                # One version only: the level's directions apply, transitivity does not.
                result = check_parsed(parsed, self._previous([target]), level, against_all=True)
        answer: dict[str, Any] = {"is_compatible": result.compatible}
        if verbose:
            answer["messages"] = list(result.messages)
        return answer


def _page(items: list[Any], query: Mapping[str, str]) -> list[Any]:
    """Apply ``offset`` / ``limit`` (negative limit = all), as the Confluent clients send them."""
    try:
        offset = max(int(query.get("offset", "0")), 0)
        limit = int(query.get("limit", "-1"))
    except ValueError:
        return items
    items = items[offset:]
    return items if limit < 0 else items[:limit]
