"""Schema Registry support: an embedded Confluent-compatible server, a client, and dump files.

Four pieces, all speaking the Confluent Schema Registry REST protocol (v1):

* :class:`EmbeddedSchemaRegistry` -- an in-memory registry served by ``http.server`` on
  127.0.0.1. TiCDC, ``confluent_kafka.schema_registry.SchemaRegistryClient`` and our own
  :class:`RegistryClient` talk to it unchanged. It records the exact schema text every
  encoder registered (:attr:`EmbeddedSchemaRegistry.registrations`) so checks can look at the
  bytes that were sent, not at a re-serialisation.
* :class:`RegistryClient` -- a small, thread-safe client for any Confluent-compatible registry.
* :class:`DumpRegistry` -- a read-only registry loaded from a dump file
  (``{"schemas": [{"subject", "version", "id", "schema"}]}``), for offline checking of
  captured Kafka messages.
* :func:`open_registry` -- turns a ``--registry`` argument into one of the above.

Apache ``avro`` decides schema validity (``avro.schema.parse``) and compatibility
(``avro.compatibility.ReaderWriterCompatibilityChecker``). Findings about that library that
shaped this module (see :func:`parse_schema` and :func:`check_compatibility`):

* ``avro.schema.parse`` does not validate field defaults at all (an ``int`` field with
  default ``"x"`` parses). It is therefore *more* lenient than Confluent's Java parser, and
  accepts everything TiCDC registers, including ``bytes`` fields whose default is a JSON
  string such as ``"Aqo="`` and dotted namespaces such as ``default.testdb``. No workaround
  is needed; we do not add a stricter check, because a registry that refuses what Confluent
  accepts would fail encoders for the wrong reason.
* An invalid ``decimal`` (scale > precision) is ignored with an ``IgnoredLogicalType``
  *warning*, as Java ignores it silently; we silence that warning so the server stays quiet.
* The checker ignores logical types and custom attributes such as ``connect.parameters``
  (as Java's ``SchemaCompatibility`` does), so a change of ``tidb_type`` alone is compatible.
* ``SchemaCompatibilityResult.messages`` and ``.locations`` are *sets*, merged across all
  incompatibilities, so with several problems a message cannot be paired with its location;
  and for union branches the location is reported as ``/``. Our details list is therefore
  precise for one incompatibility and a sorted summary for several.
* The checker raises ``AvroRuntimeException("Unknown schema type: error")`` when both sides
  are ``"type": "error"`` records (valid Avro, records everywhere else); such schemas are
  compared through a twin parsed with ``error`` read as ``record``.
* Field names are not validated (``"a-b"`` parses), record/enum names and namespaces are
  (``default.1db`` is rejected, as in Java); enum ``symbols`` given as a string is accepted.
  We keep avro's verdict: leniency here never rejects a schema Confluent accepts.
* Deeply nested JSON makes ``json``/``avro`` raise ``RecursionError``; it is answered as a
  bad request like any other invalid input.

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
import http.client
import json
import os
import re
import socket
import ssl
import threading
import traceback
import urllib.parse
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Protocol, Self

import avro.compatibility
import avro.errors
import avro.schema

from conformance.infra.urls import redact, redact_text

from ..errors import InfrastructureError

__all__ = [
    "COMPATIBILITY_LEVELS",
    "CompatibilityResult",
    "DumpFormatError",
    "DumpRegistry",
    "EmbeddedSchemaRegistry",
    "IncompatibleSchema",
    "InvalidSchema",
    "ParsedSchema",
    "RegisteredSchema",
    "Registry",
    "RegistryClient",
    "RegistryError",
    "RegistryResponse",
    "RegistryUnavailable",
    "SchemaNotFound",
    "SchemaTextError",
    "SubjectNotFound",
    "Unauthorized",
    "VersionNotFound",
    "check_compatibility",
    "normalize_compatibility",
    "open_registry",
    "parse_schema",
    "schema_key",
    "serve",
]

#: Content type of every answer, as Confluent sends it.
CONTENT_TYPE: Final = "application/vnd.schemaregistry.v1+json"
#: The Accept header TiCDC (and the Confluent clients) send.
ACCEPT: Final = (
    "application/vnd.schemaregistry.v1+json, application/vnd.schemaregistry+json, application/json"
)

COMPATIBILITY_LEVELS: Final[tuple[str, ...]] = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
INVALID_COMPATIBILITY_MESSAGE: Final = (
    "Invalid compatibility level. Valid values are none, backward, forward, full, "
    "backward_transitive, forward_transitive, and full_transitive"
)

_MAX_VERSION: Final = 2**31 - 1


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RegisteredSchema:
    """One version of a subject: what ``GET /subjects/{s}/versions/{v}`` returns."""

    subject: str
    version: int
    id: int
    schema: str


@dataclass(frozen=True, slots=True)
class ParsedSchema:
    """A schema text that ``avro.schema.parse`` accepted.

    ``key`` is the identity of the schema: its JSON re-serialised with sorted keys and no
    whitespace. Two texts are "the same schema" when their keys are equal, i.e. when their
    JSON parses are equal. (Plain ``json.loads(a) == json.loads(b)`` is not used because
    Python considers ``true == 1`` and ``1 == 1.0``, which would merge distinct defaults.)
    """

    text: str
    key: str
    avro: avro.schema.Schema


@dataclass(frozen=True, slots=True)
class CompatibilityResult:
    """Outcome of a compatibility check; ``messages`` follow Confluent's verbose format."""

    compatible: bool
    messages: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class RegistryResponse:
    """An HTTP answer of the embedded registry (also returned by :meth:`EmbeddedSchemaRegistry.handle`)."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = (("Content-Type", CONTENT_TYPE),)

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body.decode("utf-8"))


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------


class RegistryError(InfrastructureError):
    """A Schema Registry refused a request, or could not be used.

    ``str(exc)`` is a full sentence (what happened, why, what to do). ``message`` is the
    registry's own ``message`` field when the error came from a registry answer (otherwise the
    same sentence), ``status`` the HTTP status and ``error_code`` Confluent's error code.
    Every URL in them is redacted.
    """

    def __init__(
        self,
        text: str,
        *,
        status: int | None = None,
        error_code: int | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(text)
        self.status = status
        self.error_code = error_code
        self.message = text if message is None else message


class SchemaNotFound(RegistryError):
    """40403: no schema with that id (or the schema is not registered under the subject)."""


class SubjectNotFound(RegistryError):
    """40401: the subject does not exist (or has no live version)."""


class VersionNotFound(RegistryError):
    """40402: the subject has no such version."""


class IncompatibleSchema(RegistryError):
    """409: the schema breaks the subject's compatibility level."""


class InvalidSchema(RegistryError):
    """42201: the registry does not accept the schema text."""


class Unauthorized(RegistryError):
    """401: missing or wrong credentials."""


class RegistryUnavailable(RegistryError):
    """The registry cannot be reached, or what answered is not a Schema Registry."""


class DumpFormatError(ValueError):
    """A registry dump file is malformed; the message says which entry and what to fix."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


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


# --------------------------------------------------------------------------------------------
# Schemas and compatibility
# --------------------------------------------------------------------------------------------


class SchemaTextError(ValueError):
    """A schema text is not valid Avro; ``reason`` says why (used for 42201 answers)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# catch_warnings() swaps process-global state, so parses that silence warnings take turns.
_PARSE_LOCK = threading.Lock()


def schema_key(obj: object) -> str:
    """Identity key of a parsed schema JSON value (see :class:`ParsedSchema`)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def parse_schema(text: str) -> ParsedSchema:
    """Parse ``text`` as an Avro schema with ``avro.schema.parse``; raise :class:`SchemaTextError`.

    The invalid-decimal warning (``IgnoredLogicalType``) is silenced: Java ignores such logical
    types silently and the server must not write to stderr.
    """
    try:
        obj = json.loads(text)
        key = schema_key(obj)
    except json.JSONDecodeError as exc:
        raise SchemaTextError(
            f"the schema is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise SchemaTextError("the schema is nested too deeply to be processed") from None
    with _PARSE_LOCK, warnings.catch_warnings():
        warnings.simplefilter("ignore", avro.errors.IgnoredLogicalType)
        try:
            parsed = avro.schema.parse(text)
        # avro raises many exception types, and TypeError/KeyError on oddly shaped JSON.
        except Exception as exc:  # noqa: BLE001
            reason = str(exc) or type(exc).__name__
            raise SchemaTextError(f"the schema is not valid Avro ({reason})") from None
        if _has_error_type(obj):
            # The checker raises "Unknown schema type: error" for two "error" types, which are
            # records for every other purpose (Java treats them so): keep a record twin to compare.
            with contextlib.suppress(Exception):
                parsed = avro.schema.parse(json.dumps(_errors_as_records(obj)))
    return ParsedSchema(text=text, key=key, avro=parsed)


def _has_error_type(obj: object) -> bool:
    if isinstance(obj, dict):
        return obj.get("type") == "error" or any(_has_error_type(v) for v in obj.values())
    if isinstance(obj, list):
        return any(_has_error_type(v) for v in obj)
    return False


def _errors_as_records(obj: object) -> object:
    if isinstance(obj, dict):
        return {
            k: ("record" if k == "type" and v == "error" else _errors_as_records(v)) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [_errors_as_records(v) for v in obj]
    return obj


def normalize_compatibility(level: str) -> str:
    """Upper-case and validate a compatibility level; raise ``ValueError`` with the valid values."""
    upper = level.strip().upper() if isinstance(level, str) else ""
    if upper not in COMPATIBILITY_LEVELS:
        raise ValueError(INVALID_COMPATIBILITY_MESSAGE)
    return upper


_DESCRIPTIONS: Final[Mapping[str, str]] = {
    "READER_FIELD_MISSING_DEFAULT_VALUE": (
        "The field '{info}' at path '{loc}' in the {reader} has no default value "
        "and is missing in the {writer}"
    ),
    "TYPE_MISMATCH": "The type (path '{loc}') of a field in the {reader} does not match with the {writer}",
    "NAME_MISMATCH": "The name of the schema has changed (path '{loc}')",
    "MISSING_ENUM_SYMBOLS": "The {reader} is missing enum symbols '{info}' at path '{loc}' in the {writer}",
    "MISSING_UNION_BRANCH": (
        "The {reader} is missing a type inside a union field at path '{loc}' in the {writer}"
    ),
    "FIXED_SIZE_MISMATCH": (
        "The size of FIXED type field at path '{loc}' in the {reader} does not match with the {writer}"
    ),
}


def _quote(text: str) -> str:
    # Confluent writes details as pseudo-JSON with single quotes; keep it readable and unambiguous.
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _pair_messages(reader: avro.schema.Schema, writer: avro.schema.Schema, reader_is_new: bool) -> list[str]:
    """Confluent-style detail entries for reader/writer, empty when the reader can read the writer."""
    # A fresh checker per pair: it memoizes by object identity and is not meant to be shared.
    checker = avro.compatibility.ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    try:
        result = checker.get_compatibility(reader=reader, writer=writer)
    except (avro.errors.AvroException, RecursionError) as exc:
        # The checker gives up on some exotic shapes; refusing is the conservative answer.
        return [
            f"{{errorType:'UNCHECKABLE', description:'avro cannot compare these schemas: {_quote(str(exc))}'}}"
        ]
    if result.compatibility is not avro.compatibility.SchemaCompatibilityType.incompatible:
        return []
    new_old = {"reader": "new schema", "writer": "old schema"}
    roles = new_old if reader_is_new else {"reader": new_old["writer"], "writer": new_old["reader"]}
    kinds = [i.name.upper() for i in result.incompatibilities]
    infos = sorted(result.messages)
    locs = sorted(result.locations)
    entries: list[str] = []
    if len(kinds) == 1:
        # One problem: message and location belong to it (the sets hold one element each).
        info, loc = (infos[0] if infos else ""), (locs[0] if locs else "/")
        desc = _DESCRIPTIONS.get(kinds[0], "{info}").format(info=info, loc=loc, **roles)
        entries.append(
            f"{{errorType:'{kinds[0]}', description:'{_quote(desc)}', additionalInfo:'{_quote(info)}'}}"
        )
    else:
        # avro merges messages/locations into sets, so they cannot be paired with each kind.
        loc_text = ", ".join(locs)
        info_text = "; ".join(infos)
        for kind in sorted(set(kinds)):
            desc = _DESCRIPTIONS.get(kind, "{info}").format(info=info_text, loc=loc_text, **roles)
            entries.append(
                f"{{errorType:'{kind}', description:'{_quote(desc)}', additionalInfo:'{_quote(info_text)}'}}"
            )
    return entries


def _level_directions(level: str) -> tuple[bool, bool, bool]:
    """(backward, forward, transitive) for a normalized level."""
    return (
        level.startswith(("BACKWARD", "FULL")),
        level.startswith(("FORWARD", "FULL")),
        level.endswith("_TRANSITIVE"),
    )


def _check(
    candidate: ParsedSchema,
    previous: Sequence[tuple[int, ParsedSchema]],
    level: str,
    *,
    against_all: bool | None = None,
) -> CompatibilityResult:
    """Check ``candidate`` against ``previous`` (oldest first, live versions only) per ``level``.

    Non-transitive levels look at the latest version only; transitive ones at all, newest
    first, stopping at the first incompatible version as Confluent does. ``against_all``
    overrides the transitivity (the compatibility endpoint for one version passes a single
    version and ``True``).
    """
    backward, forward, transitive = _level_directions(level)
    if level == "NONE" or not previous:
        return CompatibilityResult(True)
    if against_all is not None:
        transitive = against_all
    targets = list(reversed(previous)) if transitive else [previous[-1]]
    for version, old in targets:
        messages: list[str] = []
        if backward:
            messages += _pair_messages(candidate.avro, old.avro, reader_is_new=True)
        if forward:
            messages += _pair_messages(old.avro, candidate.avro, reader_is_new=False)
        if messages:
            messages += [
                f"{{oldSchemaVersion: {version}}}",
                f"{{oldSchema: '{_quote(old.text)}'}}",
                f"{{compatibility: '{level}'}}",
            ]
            return CompatibilityResult(False, tuple(messages))
    return CompatibilityResult(True)


def check_compatibility(candidate: str, previous: Sequence[str], level: str) -> CompatibilityResult:
    """Is schema text ``candidate`` acceptable as the next version after ``previous`` (oldest first)?

    The same decision the embedded registry makes before adding a version. ``level`` is one of
    :data:`COMPATIBILITY_LEVELS` (any case). Raises :class:`SchemaTextError` for invalid schemas
    and ``ValueError`` for an unknown level.
    """
    norm = normalize_compatibility(level)
    parsed = [(i + 1, parse_schema(text)) for i, text in enumerate(previous)]
    return _check(parse_schema(candidate), parsed, norm)


# --------------------------------------------------------------------------------------------
# Embedded server
# --------------------------------------------------------------------------------------------


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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients look ids up at high rates
    server_version = "cdc-conformance-schema-registry/1"
    # Idle keep-alive connections end after this, so handler threads do not pile up.
    timeout = 60

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
        self.send_response(response.status)
        for name, value in response.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)


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
        return any(v.schema_id == schema_id for vs in self._subjects.values() for v in vs)

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
                for subject in sorted(self._subjects)
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
            result = _check(parsed, self._previous(live), level)
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
                result = _check(parsed, self._previous(live), level)
            else:
                if not live:
                    raise _subject_not_found(subject)
                target = live[-1] if number is None else next((v for v in live if v.version == number), None)
                if target is None:
                    raise _version_not_found(raw_version)
                # One version only: the level's directions apply, transitivity does not.
                result = _check(parsed, self._previous([target]), level, against_all=True)
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


# --------------------------------------------------------------------------------------------
# Client
# --------------------------------------------------------------------------------------------


class RegistryClient:
    """A minimal, thread-safe client for a Confluent-compatible Schema Registry.

    ``url`` may carry ``user:password@`` (percent-encoded); it becomes a Basic
    ``Authorization`` header and is never shown: :attr:`url` and ``repr`` are redacted.
    Keep-alive connections are pooled (one per concurrent caller); id lookups are cached.
    """

    _MAX_IDLE: Final = 8

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

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close pooled connections (the client stays usable; it reconnects on demand)."""
        with self._pool_lock:
            pool, self._pool = self._pool, []
        for conn in pool:
            conn.close()

    # ---- transport ---------------------------------------------------------------------------

    def _connect(self) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(
                self._host, self._port, timeout=self.timeout, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)

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
            self._schemas[schema_id] = text
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
            self._id_subjects[schema_id] = pairs
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

    def set_compatibility(self, level: str, subject: str | None = None) -> str:
        """Set the global (or a subject's) compatibility level; return the level now in force."""
        path = "/config" if subject is None else f"/config/{self._subject_path(subject)}"
        answer = self._call("PUT", path, {"compatibility": level.upper()})
        return str(answer["compatibility"])

    def get_compatibility(self, subject: str | None = None) -> str:
        """The global level, or the level in force for ``subject`` (its own, else the global one)."""
        path = "/config" if subject is None else f"/config/{self._subject_path(subject)}?defaultToGlobal=true"
        return str(self._call("GET", path)["compatibilityLevel"])


# --------------------------------------------------------------------------------------------
# Dump files
# --------------------------------------------------------------------------------------------

_DUMP_HELP: Final = (
    'A registry dump is {"schemas": [{"subject": ..., "version": ..., "id": ..., '
    '"schema": "<schema JSON as a '
    'string>"}, ...]} as written by EmbeddedSchemaRegistry.dump().'
)


class DumpRegistry:
    """A read-only registry loaded from a dump file (offline checking of captured messages)."""

    def __init__(self, entries: Sequence[RegisteredSchema], *, source: str = "<dict>") -> None:
        self.source = source
        #: Always ``None``: there is no server behind a dump.
        self.server: EmbeddedSchemaRegistry | None = None
        self._entries = tuple(sorted(entries, key=lambda e: (e.subject, e.version)))
        self._by_id: dict[int, str] = {}
        self._id_subjects: dict[int, list[tuple[str, int]]] = {}
        self._by_subject: dict[str, list[RegisteredSchema]] = {}
        for entry in self._entries:
            self._by_id.setdefault(entry.id, entry.schema)
            self._id_subjects.setdefault(entry.id, []).append((entry.subject, entry.version))
            self._by_subject.setdefault(entry.subject, []).append(entry)

    def __repr__(self) -> str:
        return f"DumpRegistry({self.source!r}, {len(self._entries)} versions)"

    @property
    def url(self) -> str:
        """Where the data came from (the dump's path), for messages."""
        return self.source

    @property
    def entries(self) -> tuple[RegisteredSchema, ...]:
        return self._entries

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> DumpRegistry:
        shown = os.fspath(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DumpFormatError(shown, "the file is not UTF-8 text. " + _DUMP_HELP) from None
        except OSError as exc:
            raise DumpFormatError(shown, f"cannot read the file ({exc.strerror or exc}).") from None
        try:
            data = json.loads(text)
        except RecursionError:
            raise DumpFormatError(shown, "the JSON is nested too deeply. " + _DUMP_HELP) from None
        except json.JSONDecodeError as exc:
            raise DumpFormatError(
                shown, f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}). " + _DUMP_HELP
            ) from None
        return cls.from_dict(data, source=shown)

    @classmethod
    def from_dict(cls, data: Any, *, source: str = "<dict>") -> DumpRegistry:
        """Validate ``data`` (the parsed dump) and build the registry; raise :class:`DumpFormatError`."""
        if not isinstance(data, dict) or not isinstance(data.get("schemas"), list):
            found = type(data).__name__ if not isinstance(data, dict) else f"keys {sorted(data)}"
            raise DumpFormatError(
                source,
                f'the top level must be a JSON object with a "schemas" list (found {found}). ' + _DUMP_HELP,
            )
        entries: list[RegisteredSchema] = []
        where_version: dict[tuple[str, int], int] = {}
        where_id: dict[int, tuple[int, str]] = {}
        for index, raw in enumerate(data["schemas"]):
            label = f'entry {index} of "schemas"'
            if not isinstance(raw, dict):
                raise DumpFormatError(
                    source,
                    f"{label} is a {type(raw).__name__}, not an object with subject, version, id and schema.",
                )
            if isinstance(raw.get("subject"), str):
                label += f" (subject {raw['subject']!r})"
            for key in ("subject", "version", "id", "schema"):
                if key not in raw:
                    raise DumpFormatError(
                        source, f'{label} has no "{key}"; every entry needs subject, version, id and schema.'
                    )
            subject, version, schema_id, schema = raw["subject"], raw["version"], raw["id"], raw["schema"]
            if not isinstance(subject, str) or not subject:
                raise DumpFormatError(
                    source, f'{label}: "subject" must be a non-empty string, not {subject!r}.'
                )
            for key, value in (("version", version), ("id", schema_id)):
                if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                    raise DumpFormatError(
                        source, f'{label}: "{key}" must be a positive integer, not {value!r}.'
                    )
            if not isinstance(schema, str):
                raise DumpFormatError(
                    source,
                    f'{label}: "schema" must be the schema as a JSON *string* (json.dumps of the schema), '
                    f"not a {type(schema).__name__}.",
                )
            try:
                key = schema_key(json.loads(schema))
            except RecursionError:
                raise DumpFormatError(source, f'{label}: "schema" is nested too deeply.') from None
            except json.JSONDecodeError as exc:
                raise DumpFormatError(
                    source,
                    f'{label}: "schema" does not parse as JSON ({exc.msg} at column {exc.colno}); '
                    "fix the text.",
                ) from None
            previous = where_version.get((subject, version))
            if previous is not None:
                raise DumpFormatError(
                    source,
                    f"entries {previous} and {index} both define subject {subject!r} "
                    f"version {version}; keep one.",
                )
            where_version[(subject, version)] = index
            seen = where_id.get(schema_id)
            if seen is not None and seen[1] != key:
                raise DumpFormatError(
                    source,
                    f"id {schema_id} is registered with two different schemas "
                    f"(entries {seen[0]} and {index}); "
                    "an id names exactly one schema: fix or drop one of them.",
                )
            where_id.setdefault(schema_id, (index, key))
            entries.append(RegisteredSchema(subject, version, schema_id, schema))
        return cls(entries, source=source)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schemas": [
                {"subject": e.subject, "version": e.version, "id": e.id, "schema": e.schema}
                for e in self._entries
            ]
        }

    # ---- read API (same as RegistryClient) -----------------------------------------------------

    def check_root(self) -> None:
        return None

    def close(self) -> None:
        return None

    def schema_by_id(self, schema_id: int) -> str:
        text = self._by_id.get(schema_id)
        if text is None:
            raise SchemaNotFound(
                f"Schema id {schema_id} is not in the registry dump {self.source}. The data was encoded "
                "against another registry, or the dump is incomplete; dump the registry the encoder used.",
                status=404,
                error_code=40403,
                message=f"Schema {schema_id} not found",
            )
        return text

    def subjects_for_id(self, schema_id: int, *, fresh: bool = False) -> list[tuple[str, int]]:
        self.schema_by_id(schema_id)
        return list(self._id_subjects.get(schema_id, ()))

    def _subject(self, subject: str) -> list[RegisteredSchema]:
        versions = self._by_subject.get(subject)
        if not versions:
            raise SubjectNotFound(
                f"Subject {subject!r} is not in the registry dump {self.source}; it has "
                f"{len(self._by_subject)} subjects. Check the subject naming, or dump the right registry.",
                status=404,
                error_code=40401,
                message=f"Subject '{subject}' not found.",
            )
        return versions

    def versions(self, subject: str) -> list[int]:
        return [e.version for e in self._subject(subject)]

    def version(self, subject: str, version: int | str = "latest") -> RegisteredSchema:
        entries = self._subject(subject)
        if version == "latest" or version == -1:
            return entries[-1]
        for entry in entries:
            if entry.version == version:
                return entry
        raise VersionNotFound(
            f"Subject {subject!r} has no version {version!r} in the registry dump {self.source} "
            f"(versions: {[e.version for e in entries]}).",
            status=404,
            error_code=40402,
            message=f"Version {version} not found.",
        )

    def subjects(self) -> list[str]:
        return sorted(self._by_subject)

    def register(self, subject: str, schema: str) -> int:
        raise RegistryError(
            f"The registry dump {self.source} is read-only: cannot register a schema under {subject!r}. "
            "Use --registry embedded:// or an http:// registry to run encoders."
        )


# --------------------------------------------------------------------------------------------
# Opening a registry from a --registry argument
# --------------------------------------------------------------------------------------------


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
        with server:
            client = RegistryClient(server.url)
            client.server = server
            try:
                yield client
            finally:
                client.close()
        return
    if spec.startswith("container://"):
        from .containers import schema_registry_container

        with schema_registry_container() as url:
            client = RegistryClient(url)
            try:
                client.check_root()
                yield client
            finally:
                client.close()
        return
    if spec.startswith(("http://", "https://")):
        client = RegistryClient(spec)
        try:
            client.check_root()
            yield client
        finally:
            client.close()
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


# --------------------------------------------------------------------------------------------
# Console entry point
# --------------------------------------------------------------------------------------------


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
    from .serving import serve_until_stopped

    serve_until_stopped(lambda: EmbeddedSchemaRegistry(host, port, auth=auth, default_compatibility=compatibility),
                        lambda server: server.url, ready)
