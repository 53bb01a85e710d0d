"""Strict decoding of TiCDC Simple messages: decompress, parse, normalise; never raises.

Both encodings become one `Message` view so that the checks are written once: field names as
in the JSON form, plus what only one encoding can tell (`present`: which JSON fields exist;
`avro`: the payload came from message.json). Avro values keep their type (a Timestamp record,
an UnsignedBigint, a long…); `render()` turns any value into its JSON rendering for comparison.
"""

from __future__ import annotations

import base64
import functools
from dataclasses import dataclass, field
from typing import Any

from ...model.values import go_format_float
from . import codec
from .spec import AVRO_NS, DDL_TYPES

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
    def table_key(self) -> tuple[str | None, str | None]:
        """(database, table) of a DML; a part of the wrong JSON type is None (message.fields
        reports it), so that the key can always index a dict."""
        return text(self.get("database")), text(self.get("table"))

    @property
    def dml_key(self) -> tuple[str, str, int] | None:
        """(database, table, schemaVersion): the key a consumer resolves a DML's schema by
        (simple/decoder.go memo), or None when a part has the wrong type."""
        db, table = self.table_key
        version = integer(self.get("schemaVersion"))
        if db is None or table is None or version is None:
            return None
        return db, table, version


def text(v: Any) -> str | None:
    """`v` if it is a string, else None: JSON fields are read through these accessors, because
    a capture may hold any JSON where a string or an integer belongs."""
    return v if isinstance(v, str) else None


def integer(v: Any) -> int | None:
    """`v` if it is an integer (JSON true/false are not), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def schema_key(ts: dict[str, Any]) -> tuple[str, str, int] | None:
    """(schema, table, version) of a tableSchema (JSON names), the key consumers index
    schemas by; None when a part has the wrong type (schema.table-schema reports it)."""
    db, table, version = text(ts.get("schema")), text(ts.get("table")), integer(ts.get("version"))
    if db is None or table is None or version is None:
        return None
    return db, table, version


# The checker decodes each message, and so does the delivery identifier right after it: the
# last few messages decoded are kept (callers only read a Message).
@functools.lru_cache(maxsize=32)
def decode(raw: bytes | None, compression: str, avro: bool) -> Message:
    """A message decoded (see `Message`); callers only read the result."""
    return _decode(raw, compression, avro)


def _decode(raw: bytes | None, compression: str, avro: bool) -> Message:
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
            # Message.type may name another record than the payload's (message.type reports
            # it): the payload then has no `type` of its own.
            m.type = text(payload.get("type")) if kind in ("DDL", "DML") else kind
        else:
            obj = codec.decode_json(data)
            m.fields = obj
            m.present = frozenset(obj)
            # A `type` that is not a string leaves kind and type None (message.type reports it):
            # kind keys tables of fields, so it must never be a list or an object.
            t = text(obj.get("type"))
            m.type = t
            m.kind = (t if t in ("WATERMARK", "BOOTSTRAP") else "DML" if t in DML_TYPES
                      else "DDL" if t in DDL_TYPES else t)
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
