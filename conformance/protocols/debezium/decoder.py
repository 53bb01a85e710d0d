"""Reading a Debezium message as a consumer would: strict JSON, then the converter's framing."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


class DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise DuplicateKey(f"duplicate JSON member {k!r}")
        out[k] = v
    return out


def _constant(name: str) -> Any:
    # Jackson quotes NaN/Infinity by default; a bare token is not JSON (RFC 8259): keep it so
    # that the value checks can say which column, not a parse error for the whole message.
    return {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}[name]


@dataclass(slots=True)
class Part:
    """A key or a value: the JSON text decoded, and the converter's envelope split off."""

    raw: bytes | None
    doc: Any = None
    schema: Any = None
    payload: Any = None
    enveloped: bool | None = None  # {schema, payload} (schemas.enable=true) or the payload alone
    error: str | None = None
    bare_constant: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def decode_part(raw: bytes | None, schemas: bool) -> Part:
    p = Part(raw)
    if raw is None:
        return p
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        p.error = f"not UTF-8 ({e.reason} at byte {e.start})"
        return p
    seen_constant: list[str] = []

    def constant(name: str) -> Any:
        seen_constant.append(name)
        return _constant(name)

    try:
        p.doc = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=constant)
    except DuplicateKey as e:
        p.error = str(e)
        return p
    except ValueError as e:
        p.error = f"not JSON ({e})"
        return p
    p.bare_constant = bool(seen_constant)
    if schemas:
        if isinstance(p.doc, dict) and set(p.doc) == {"schema", "payload"}:
            p.enveloped, p.schema, p.payload = True, p.doc["schema"], p.doc["payload"]
        else:
            p.enveloped = False
            p.payload = p.doc
    else:
        p.enveloped = isinstance(p.doc, dict) and set(p.doc) == {"schema", "payload"}
        p.payload = p.doc
    return p


@dataclass(slots=True)
class Message:
    key: Part
    value: Part

    @property
    def tombstone(self) -> bool:
        return self.value.raw is None

    @property
    def envelope(self) -> dict[str, Any] | None:
        v = self.value.payload
        return v if isinstance(v, dict) else None

    @property
    def op(self) -> str | None:
        e = self.envelope
        op = e.get("op") if e is not None else None
        return op if isinstance(op, str) else None

    @property
    def source(self) -> dict[str, Any] | None:
        e = self.envelope
        s = e.get("source") if e is not None else None
        return s if isinstance(s, dict) else None


def decode(key: bytes | None, value: bytes | None, *, key_schemas: bool, value_schemas: bool) -> Message:
    return Message(decode_part(key, key_schemas), decode_part(value, value_schemas))
