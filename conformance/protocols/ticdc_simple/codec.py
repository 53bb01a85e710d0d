"""Bytes of a TiCDC Simple message: Go's JSON, or Avro through `message.json`; compression.

JSON: `json.Marshal` of the Go struct, fields in struct order, `omitempty` honoured by the
builders (they leave absent fields out), `data`/`old` maps with keys sorted as Go sorts map keys.

Avro: raw binary, no Confluent header, written with `message.json`, which is a JSON *array*:
the writer schema is a union of 12 named types and the datum the Message record, so every
payload begins with the union index 11 (zigzag 0x16). goavro writes map entries in Go's random
map order; the reference writes them sorted (readers must not care).

The column `default` of an Avro TableSchema is written and read as Avro `bytes`, not `string`:
goavro writes a Go string's bytes as they are, and TiDB's default of a BIT column is its raw
binary literal (b'11111111' -> the byte 0xff), which is not UTF-8. Avro encodes `string` and
`bytes` alike (a length, then the bytes), so this reads and writes exactly message.json's bytes.

Compression (`large-message-handle-compression`) applies to every message: snappy in the
block format, lz4 in the frame format (cramjam implements both).
"""

from __future__ import annotations

import functools
import io
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cramjam
import fastavro
import orjson

from ...errors import exception_text
from ...model import gojson
from .spec import AVRO_NS

MESSAGE_SCHEMA_PATH = Path(__file__).resolve().parent / "message.json"
MESSAGE = f"{AVRO_NS}.Message"
UNION_INDEX_BYTE = 0x16  # zigzag(11): Message is the 12th type of message.json


class CodecError(ValueError):
    """Bytes that are not what the codec promises (bad compression, not JSON, not Avro…)."""


# A Simple JSON message nests at most 6 levels (message > tableSchema > columns > column >
# dataType > elements). Deeper JSON is not a Simple message, and reading it further would run
# into Python's recursion limit (in json, repr, the reports): it is refused at decoding.
MAX_JSON_DEPTH = 32


@functools.lru_cache(maxsize=1)
def message_schema() -> Any:
    return fastavro.parse_schema(_raw_schema())


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
    """The message `decode_json_strict` reads, read by orjson where that is the same thing: an
    object with no float anywhere, nested no deeper than a Simple message (orjson reads what the
    standard library reads alike, but an integer beyond 64 bits, as a float: held to it by
    tests/unit/test_fast_paths_simple.py); anything else (a float, an error to explain) by the
    standard library."""
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    else:
        if obj.__class__ is dict and json_depth(obj, MAX_JSON_DEPTH, float_deeper=True) <= MAX_JSON_DEPTH:
            return obj
    return decode_json_strict(data)


def decode_json_strict(data: bytes) -> dict[str, Any]:
    """The message as the standard library reads it from UTF-8 (a CodecError says why not)."""
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise CodecError(f"not UTF-8 ({e.reason} at byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise CodecError(f"not JSON ({e.msg} at column {e.colno})") from None
    except RecursionError:
        raise CodecError(f"JSON nested deeper than a Simple message can be (at most {MAX_JSON_DEPTH} "
                         "levels are read)") from None
    except ValueError as e:  # e.g. an integer of more digits than Python converts
        raise CodecError(f"not JSON this checker can read ({e})") from None
    if not isinstance(obj, dict):
        raise CodecError(f"a Simple message is a JSON object, not {type(obj).__name__}")
    depth = json_depth(obj, MAX_JSON_DEPTH)
    if depth > MAX_JSON_DEPTH:
        raise CodecError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep (a Simple message has at most 6: "
                         "message, tableSchema, columns, column, dataType, elements)")
    return obj


def json_depth(obj: Any, limit: int, *, float_deeper: bool = False) -> int:
    """How deep lists and objects nest in `obj` (a scalar is 0; `obj` as JSON decodes it), counted
    without recursion, a level at a time (most values are scalars: only containers are kept), and
    given up past `limit`; with `float_deeper`, more than `limit` where a float is anywhere."""
    level = [obj] if obj.__class__ is dict or obj.__class__ is list else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return depth
        below = []
        for v in level:
            for x in (v.values() if v.__class__ is dict else v):
                c = x.__class__
                if c is dict or c is list:
                    below.append(x)
                elif float_deeper and c is float:
                    return limit + 1
        level = below
    return depth


def decode_avro(data: bytes) -> tuple[str, dict[str, Any], str]:
    """(Message.type, payload record, the payload's record kind); values of the data/old maps
    come back as (branch, value)."""
    if not data:
        raise CodecError("empty Avro payload")
    if data[0] != UNION_INDEX_BYTE:
        raise CodecError(f"the payload starts with 0x{data[0]:02x}, not 0x16 (the union index of "
                         f"{MESSAGE} in message.json)")
    buf = io.BytesIO(data)
    try:
        top = fastavro.schemaless_reader(buf, message_schema(), None, return_record_name=True)
    except Exception as e:  # noqa: BLE001 - truncated or garbage Avro is a finding
        raise CodecError(f"does not decode with message.json ({exception_text(e)})") from None
    if buf.tell() != len(data):
        raise CodecError(f"{len(data) - buf.tell()} bytes left over after the Avro datum")
    if not (isinstance(top, tuple) and top[0] == MESSAGE and isinstance(top[1], dict)):
        raise CodecError("the datum is not a Message record")
    msg = top[1]
    payload = msg.get("payload")
    branch = ""
    if isinstance(payload, tuple):
        branch = _KIND_OF_RECORD.get(payload[0], payload[0])
        payload = payload[1]
    if not isinstance(payload, dict):
        raise CodecError("the Message has no record payload")
    if isinstance(payload.get("data"), dict) or isinstance(payload.get("old"), dict):
        # fastavro does not say which branch a primitive came from (float or double?): read
        # the datum again, keeping the branch of every map value.
        annotated = _branch_reader().read(data)
        for k in ("data", "old"):
            if isinstance(payload.get(k), dict):
                payload[k] = annotated.get(k)
    return str(msg.get("type")), payload, branch


_KIND_OF_RECORD = {f"{AVRO_NS}.{n}": k for n, k in (("Watermark", "WATERMARK"), ("Bootstrap", "BOOTSTRAP"),
                                                      ("DDL", "DDL"), ("DML", "DML"))}


@functools.lru_cache(maxsize=1)
def _raw_schema() -> list[dict[str, Any]]:
    """message.json, with ColumnSchema.default read and written as bytes (see the module doc)."""
    schema: list[dict[str, Any]] = json.loads(MESSAGE_SCHEMA_PATH.read_text(encoding="utf-8"))
    for t in schema:
        if t.get("name") == "ColumnSchema":
            for f in t["fields"]:
                if f["name"] == "default" and f["type"] == ["null", "string"]:
                    f["type"] = ["null", "bytes"]
    return schema


_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})


@functools.lru_cache(maxsize=1)
def _branch_reader() -> BranchReader:
    return BranchReader(_raw_schema())


class BranchReader:
    """A minimal Avro binary reader for message.json that keeps, for every union inside a map,
    the branch name next to the value: `{"col": ("float", 1.5)}`. Only called on payloads
    fastavro has already read, so it trusts the bytes."""

    def __init__(self, schema: list[dict[str, Any]]) -> None:
        self.named: dict[str, Any] = {}
        for t in schema:
            self._register(t, t.get("namespace", ""))
        self.top = schema
        self._primitive: dict[str, Callable[[], Any]] = {
            "null": lambda: None, "boolean": self._bool, "int": self._long, "long": self._long,
            "float": lambda: self._fixed_float("<f", 4), "double": lambda: self._fixed_float("<d", 8),
            "bytes": self._bytes, "string": lambda: self._bytes().decode("utf-8")}

    def _register(self, t: Any, ns: str) -> None:
        if isinstance(t, dict):
            if t.get("type") in ("record", "enum", "fixed") and "name" in t:
                ns = t.get("namespace", ns)
                full = t["name"] if "." in t["name"] else f"{ns}.{t['name']}"
                self.named[full] = (t, ns)
            for f in t.get("fields", ()):
                self._register(f["type"], ns)
            for k in ("items", "values"):
                if k in t:
                    self._register(t[k], ns)
        elif isinstance(t, list):
            for b in t:
                self._register(b, ns)

    def read(self, data: bytes) -> dict[str, Any]:
        self.buf, self.pos = data, 0
        _, msg = self._union(self.top, "", in_map=False)
        return msg["payload"]  # type: ignore[no-any-return]

    def _long(self) -> int:
        shift = result = 0
        while True:
            b = self.buf[self.pos]
            self.pos += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return (result >> 1) ^ -(result & 1)
            shift += 7

    def _bytes(self) -> bytes:
        n = self._long()
        out = self.buf[self.pos:self.pos + n]
        self.pos += n
        return out

    def _union(self, branches: list[Any], ns: str, *, in_map: bool) -> tuple[str, Any]:
        i = self._long()
        b = branches[i]
        name = str(b if isinstance(b, str) else b.get("name", b.get("type")))
        if "." not in name and name not in _PRIMITIVES:
            name = f"{ns}.{name}"
        return name, self._datum(b, ns, in_map=in_map)

    def _datum(self, t: Any, ns: str, *, in_map: bool = False) -> Any:
        if isinstance(t, list):
            branch, v = self._union(t, ns, in_map=in_map)
            return (branch, v) if in_map else v
        if isinstance(t, str):
            prim = self._primitive.get(t)
            if prim is not None:
                return prim()
            full = t if "." in t else f"{ns}.{t}"
            named, nns = self.named[full]
            return self._datum(named, nns)
        kind = t.get("type")
        if isinstance(kind, (dict, list)) or kind in _PRIMITIVES:
            return self._datum(kind, ns, in_map=in_map)
        if kind == "record":
            rns = t.get("namespace", ns)
            return {f["name"]: self._datum(f["type"], rns) for f in t["fields"]}
        if kind == "enum":
            return t["symbols"][self._long()]
        if kind == "array":
            return [self._datum(t["items"], ns) for _ in self._blocks()]
        if kind == "map":
            out = {}
            for _ in self._blocks():
                k = self._bytes().decode("utf-8")
                out[k] = self._datum(t["values"], ns, in_map=True)
            return out
        raise CodecError(f"unsupported Avro type {kind!r}")

    def _blocks(self) -> Any:
        while True:
            n = self._long()
            if n == 0:
                return
            if n < 0:
                n = -n
                self._long()  # block size in bytes
            for _ in range(n):
                yield None

    def _bool(self) -> bool:
        b = self.buf[self.pos]
        self.pos += 1
        return b != 0

    def _fixed_float(self, fmt: str, n: int) -> float:
        v: float = struct.unpack_from(fmt, self.buf, self.pos)[0]
        self.pos += n
        return v
