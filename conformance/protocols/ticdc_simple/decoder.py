"""Strict decoding of TiCDC Simple messages: decompress, parse, normalise; never raises.

Both encodings become one `Message` view so that the checks are written once: field names as
in the JSON form, plus what only one encoding can tell (`present`: which JSON fields exist;
`avro`: the payload came from message.json). Avro values keep their type (a Timestamp record,
an UnsignedBigint, a long…); `render()` turns any value into its JSON rendering for comparison.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from ...model.values import go_format_float
from . import codec
from .spec import AVRO_NS

TIMESTAMP = f"{AVRO_NS}.Timestamp"
UNSIGNED_BIGINT = f"{AVRO_NS}.UnsignedBigint"
KINDS = ("WATERMARK", "BOOTSTRAP", "DDL", "DML")
DML_TYPES = ("INSERT", "UPDATE", "DELETE")


@dataclass(slots=True)
class Message:
    raw: bytes
    error: str | None = None  # why it could not be decoded (then nothing else is set)
    avro: bool = False
    kind: str | None = None  # WATERMARK / BOOTSTRAP / DDL / DML, or an unknown type string
    type: str | None = None  # the `type` field: DDL type, DML type, or the kind
    fields: dict[str, Any] = field(default_factory=dict)  # the message as decoded
    present: frozenset[str] = frozenset()  # fields that are set (JSON: present; Avro: non-null)
    branch: str | None = None  # Avro: the payload's record (WATERMARK / BOOTSTRAP / DDL / DML)

    @property
    def ok(self) -> bool:
        return self.error is None

    def get(self, name: str) -> Any:
        return self.fields.get(name)

    @property
    def table_key(self) -> tuple[Any, Any]:
        return self.get("database"), self.get("table")


def decode(raw: bytes | None, compression: str, avro: bool) -> Message:
    m = Message(raw or b"", avro=avro)
    if raw is None:
        m.error = "the Kafka value is null (Simple always sends a message)"
        return m
    try:
        data = codec.decompress(raw, compression)
        if avro:
            kind, payload, branch = codec.decode_avro(data)
            m.kind = kind
            m.branch = branch
            m.fields = payload
            m.present = frozenset(k for k, v in payload.items() if v is not None)
            m.type = payload["type"] if kind in ("DDL", "DML") else kind
        else:
            obj = codec.decode_json(data)
            m.fields = obj
            m.present = frozenset(obj)
            t = obj.get("type")
            m.type = t if isinstance(t, str) else None
            m.kind = (t if t in ("WATERMARK", "BOOTSTRAP") else "DML" if t in DML_TYPES
                      else "DDL" if isinstance(t, str) and t in ("CREATE", "RENAME", "CINDEX", "DINDEX", "ERASE",
                                                                  "TRUNCATE", "ALTER", "QUERY") else t)
    except codec.CodecError as e:
        m.error = str(e)
    return m


def render(value: Any, mysql_type: str | None = None) -> Any:
    """A decoded value (either encoding) as the JSON encoding writes it, for comparisons.
    Floats need the column type: float32 and float64 print differently."""
    if value is None or isinstance(value, (str, dict)):
        return value
    if isinstance(value, tuple) and len(value) == 2:
        # An Avro union value with its branch.
        name, rec = value
        if name == TIMESTAMP and isinstance(rec, dict):
            return {"location": rec.get("location"), "value": rec.get("value")}
        if name == UNSIGNED_BIGINT and isinstance(rec, dict) and isinstance(rec.get("value"), int):
            v = rec["value"]
            return str(v + (1 << 64) if v < 0 else v)
        if name == "float" and isinstance(rec, float):
            return go_format_float(rec, 32, "f")
        return render(rec, mysql_type)
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return go_format_float(value, 32 if mysql_type == "float" else 64, "f")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


def table_schema_of(m: Message, name: str = "tableSchema") -> dict[str, Any] | None:
    """A tableSchema (or preTableSchema) as the JSON form names it (`schema`, not `database`)."""
    ts = m.get(name)
    if isinstance(ts, tuple):
        ts = ts[1]
    if not isinstance(ts, dict):
        return None
    if m.avro:
        ts = dict(ts)
        ts["schema"] = ts.pop("database", None)
    return ts
