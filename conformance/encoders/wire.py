"""The subprocess encoder protocol, version 1: its messages as data, and their JSON Schemas.

Both ends use this module: the adapter that drives an encoder process (`subprocess.py`) and
the server that exposes an in-process encoder through the protocol (`serve.py`). The schemas
are published under `schemas/v1/` (one file per message and direction); `docs/
subprocess-encoders.md` describes the protocol for people who implement it.

Validation uses `jsonschema_rs` (a compiled validator: a few microseconds per message, where
the pure-Python `jsonschema` costs tens to hundreds), one validator per message kind, built
once per process.
"""

from __future__ import annotations

import base64
import binascii
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import jsonschema_rs

from ..model.serde import FORMAT, FORMAT_VERSION
from .spi import Record

PROTOCOL_VERSION = 1
EVENT_FORMAT = FORMAT  # "cdc-conformance/workload": the event form is the workload file's entries
EVENT_FORMAT_VERSION = FORMAT_VERSION
SCHEMA_BASE = "tag:cdc-conformance,2026:subprocess/v1/"
COMMANDS = ("start", "open", "encode", "tick", "close")
ERROR_KINDS = ("encoder", "options", "infrastructure")


class MessageInvalid(ValueError):
    """A message that does not follow its schema; the text names the first problem and where."""


# -- schemas ----------------------------------------------------------------------------------------

def schema_names() -> list[str]:
    """Every schema file of version 1 (`start.request`, `record`, …)."""
    folder = resources.files(__package__).joinpath("schemas", "v1")
    return sorted(p.name.removesuffix(".json") for p in folder.iterdir() if p.name.endswith(".json"))


@functools.cache
def schema(name: str) -> dict[str, Any]:
    """The parsed JSON Schema `schemas/v1/<name>.json`."""
    text = resources.files(__package__).joinpath("schemas", "v1", f"{name}.json").read_text(encoding="utf-8")
    doc: dict[str, Any] = json.loads(text)
    return doc


@functools.lru_cache(maxsize=1)
def _registry() -> jsonschema_rs.Registry:
    return jsonschema_rs.Registry([(SCHEMA_BASE + n, schema(n)) for n in schema_names()])


@functools.cache
def validator(name: str) -> jsonschema_rs.Validator:
    """A compiled validator for one message kind (references resolved among our own schemas;
    nothing is ever fetched)."""
    return jsonschema_rs.validator_for(schema(name), registry=_registry(), offline=True)


def validate(name: str, message: Any) -> None:
    """Raise MessageInvalid when `message` does not follow schema `name`."""
    v = validator(name)
    if v.is_valid(message):
        return
    err = next(iter(v.iter_errors(message)))
    where = "/".join(str(p) for p in err.instance_path)
    raise MessageInvalid(f"{err.message} (at /{where})" if where else err.message)


# -- JSON lines -------------------------------------------------------------------------------------

def dumps(message: Mapping[str, Any]) -> bytes:
    """One line: compact JSON, ASCII only (a lone surrogate stays an escape, valid everywhere)."""
    return json.dumps(message, separators=(",", ":"), allow_nan=False).encode("ascii") + b"\n"


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def loads(line: bytes) -> Any:
    """Strict JSON (NaN / Infinity refused)."""
    return json.loads(line, parse_constant=_no_constants)


# -- handshake ----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Implementation:
    name: str
    version: str
    language: str | None = None
    homepage: str | None = None
    issues: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "version": self.version}
        for k in ("language", "homepage", "issues"):
            v = getattr(self, k)
            if v is not None:
                d[k] = v
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Implementation:
        return cls(d["name"], d["version"], d.get("language"), d.get("homepage"), d.get("issues"))


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What an encoder says it can do. `options`: the protocol options it honours, each with
    the values it supports (None: any); an option it does not list works only at its default."""

    options: Mapping[str, tuple[str, ...] | None] = field(default_factory=dict)
    registers_schemas: bool = False
    needs_ticks: bool = False

    def unsupported(self, options: Mapping[str, str], defaults: Mapping[str, str] | None = None) -> list[str]:
        """`name=value` for each given option the encoder does not support. `defaults` (the
        protocol's option defaults) allow unlisted options at their default; without it,
        unlisted options are not judged."""
        out = []
        for name, value in options.items():
            if name == "profile":
                continue  # a bundle of other options, each judged itself
            if name in self.options:
                allowed = self.options[name]
                if allowed is not None and value not in allowed:
                    out.append(f"{name}={value} (supported: {', '.join(allowed) or 'none'})")
            elif defaults is not None and name in defaults and value != defaults[name]:
                out.append(f"{name}={value} (only the default, {defaults[name]!r}, is supported)")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"options": {k: None if v is None else list(v) for k, v in self.options.items()},
                "registers_schemas": self.registers_schemas, "needs_ticks": self.needs_ticks}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Capabilities:
        opts = {k: None if v is None else tuple(v) for k, v in d["options"].items()}
        return cls(opts, bool(d["registers_schemas"]), bool(d["needs_ticks"]))


@dataclass(frozen=True, slots=True)
class Handshake:
    """The encoder's answer to `start`."""

    version: int
    implementation: Implementation
    protocol: str
    capabilities: Capabilities

    def to_json(self, request_id: int) -> dict[str, Any]:
        return {"id": request_id, "version": self.version, "implementation": self.implementation.to_json(),
                "protocol": self.protocol, "capabilities": self.capabilities.to_json()}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Handshake:
        return cls(d["version"], Implementation.from_json(d["implementation"]), d["protocol"],
                   Capabilities.from_json(d["capabilities"]))


# -- requests -----------------------------------------------------------------------------------------

def start_request(request_id: int) -> dict[str, Any]:
    return {"cmd": "start", "id": request_id, "version": PROTOCOL_VERSION, "event_format": EVENT_FORMAT,
            "event_format_version": EVENT_FORMAT_VERSION}


def open_request(request_id: int, *, now: float, protocol: str, options: Mapping[str, str], partitions: int,
                 topic_prefix: str, time_zone: str, registry_url: str | None) -> dict[str, Any]:
    return {"cmd": "open", "id": request_id, "now": now, "protocol": protocol, "options": dict(options),
            "partitions": partitions, "topic_prefix": topic_prefix, "time_zone": time_zone,
            "registry_url": registry_url}


def encode_request(request_id: int, *, now: float, event: Mapping[str, Any], tables: Sequence[Mapping[str, Any]],
                   tick: bool = False) -> dict[str, Any]:
    req = {"cmd": "encode", "id": request_id, "now": now, "tables": list(tables), "event": event}
    if tick:
        req["tick"] = True
    return req


def tick_request(request_id: int, *, now: float) -> dict[str, Any]:
    return {"cmd": "tick", "id": request_id, "now": now}


def close_request(request_id: int) -> dict[str, Any]:
    return {"cmd": "close", "id": request_id}


# -- replies ------------------------------------------------------------------------------------------

def ok_reply(request_id: int) -> dict[str, Any]:
    return {"id": request_id, "ok": True}


def records_reply(request_id: int, records: Sequence[Record]) -> dict[str, Any]:
    return {"id": request_id, "records": [record_to_json(r) for r in records]}


def error_reply(request_id: int, kind: str, message: str, detail: str | None = None) -> dict[str, Any]:
    err: dict[str, Any] = {"kind": kind, "message": message}
    if detail:
        err["detail"] = detail
    return {"id": request_id, "error": err}


def _b64(b: bytes | None) -> str | None:
    return None if b is None else base64.b64encode(b).decode("ascii")


def _unb64(s: str | None, what: str) -> bytes | None:
    if s is None:
        return None
    try:
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        raise MessageInvalid(f"{what} is not standard base64 with padding: {s[:60]!r}") from None


def record_to_json(r: Record) -> dict[str, Any]:
    d: dict[str, Any] = {"topic": r.topic, "partition": r.partition, "key": _b64(r.key), "value": _b64(r.value)}
    if r.headers:
        d["headers"] = [{"name": n, "value": _b64(v)} for n, v in r.headers]
    if r.timestamp is not None:
        d["timestamp"] = r.timestamp
    return d


def record_from_json(d: Mapping[str, Any], where: str = "record") -> Record:
    """A record of a validated reply (base64 is checked here: cheaper than a schema pattern)."""
    headers = tuple((h["name"], _unb64(h["value"], f"{where}: header {h['name']!r}")) for h in d.get("headers", ()))
    return Record(d["topic"], _unb64(d["key"], f"{where}: key"), _unb64(d["value"], f"{where}: value"),
                  d.get("partition"), headers, d.get("timestamp"))
