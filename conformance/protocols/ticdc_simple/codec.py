"""Bytes of a TiCDC Simple message: Go's JSON, or Avro through `message.json`; compression.

JSON: `json.Marshal` of the Go struct, fields in struct order, `omitempty` honoured by the
builders (they leave absent fields out), `data`/`old` maps with keys sorted as Go sorts map keys.

Avro: raw binary, no Confluent header, written with `message.json`, which is a JSON *array*:
the writer schema is a union of 12 named types and the datum the Message record, so every
payload begins with the union index 11 (zigzag 0x16). goavro writes map entries in Go's random
map order; the reference writes them sorted (readers must not care).

Compression (`large-message-handle-compression`) applies to every message: snappy in the
block format, lz4 in the frame format (cramjam implements both).
"""

from __future__ import annotations

import functools
import io
import json
from pathlib import Path
from typing import Any

import cramjam
import fastavro

from ...model import gojson
from .spec import AVRO_NS

MESSAGE_SCHEMA_PATH = Path(__file__).resolve().parent / "message.json"
MESSAGE = f"{AVRO_NS}.Message"
UNION_INDEX_BYTE = 0x16  # zigzag(11): Message is the 12th type of message.json


class CodecError(ValueError):
    """Bytes that are not what the codec promises (bad compression, not JSON, not Avro…)."""


@functools.lru_cache(maxsize=1)
def message_schema() -> Any:
    return fastavro.parse_schema(json.loads(MESSAGE_SCHEMA_PATH.read_text(encoding="utf-8")))


def compress(data: bytes, method: str) -> bytes:
    if method == "snappy":
        return bytes(cramjam.snappy.compress_raw(data))
    if method == "lz4":
        return bytes(cramjam.lz4.compress(data))
    return data


def decompress(data: bytes, method: str) -> bytes:
    try:
        if method == "snappy":
            return bytes(cramjam.snappy.decompress_raw(data))
        if method == "lz4":
            return bytes(cramjam.lz4.decompress(data))
    except Exception as e:  # noqa: BLE001 - cramjam raises its own DecompressionError
        raise CodecError(f"not {method}-compressed ({type(e).__name__}: {e})") from None
    return data


def encode_json(message: dict[str, Any]) -> bytes:
    return gojson.dumps(message).encode("utf-8")


def encode_avro(kind: str, payload: dict[str, Any]) -> bytes:
    """`kind` is WATERMARK / BOOTSTRAP / DDL / DML; `payload` the record of that name."""
    name = {"WATERMARK": "Watermark", "BOOTSTRAP": "Bootstrap", "DDL": "DDL", "DML": "DML"}[kind]
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, message_schema(),
                               (MESSAGE, {"type": kind, "payload": (f"{AVRO_NS}.{name}", payload)}))
    return buf.getvalue()


def decode_json(data: bytes) -> dict[str, Any]:
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CodecError(f"not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise CodecError(f"not JSON ({e.msg} at column {e.colno})") from None
    if not isinstance(obj, dict):
        raise CodecError(f"a Simple message is a JSON object, not {type(obj).__name__}")
    return obj


def decode_avro(data: bytes) -> tuple[str, dict[str, Any]]:
    """(message type, payload record); union branches of records come back as (name, value)."""
    if not data:
        raise CodecError("empty Avro payload")
    if data[0] != UNION_INDEX_BYTE:
        raise CodecError(f"the payload starts with 0x{data[0]:02x}, not 0x16 (the union index of "
                         f"{MESSAGE} in message.json)")
    buf = io.BytesIO(data)
    try:
        top = fastavro.schemaless_reader(buf, message_schema(), None, return_record_name=True)
    except Exception as e:  # noqa: BLE001 - truncated or garbage Avro is a finding
        raise CodecError(f"does not decode with message.json ({type(e).__name__}: {e})") from None
    if buf.tell() != len(data):
        raise CodecError(f"{len(data) - buf.tell()} bytes left over after the Avro datum")
    if not (isinstance(top, tuple) and top[0] == MESSAGE and isinstance(top[1], dict)):
        raise CodecError("the datum is not a Message record")
    msg = top[1]
    payload = msg.get("payload")
    if isinstance(payload, tuple):
        payload = payload[1]
    if not isinstance(payload, dict):
        raise CodecError("the Message has no record payload")
    return str(msg.get("type")), payload
