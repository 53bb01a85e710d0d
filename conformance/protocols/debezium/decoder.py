"""Reading a Debezium message as a consumer would: strict JSON, then the converter's framing; or
Confluent's Avro framing, the schema from the registry, and the datum read back as the JSON
converter would have written it (`connect_avro.py`), so that one set of checks judges both."""

from __future__ import annotations

import functools
import io
import json
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any

from ...errors import exception_text
from ..kit import CONSTANTS, DuplicateKey, loads_strict, registry_unreachable, strict_decoder
from ..kit import SCHEMA_TOO_DEEP as TOO_DEEP
from . import connect_avro


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
    avro: AvroPart | None = None  # what the Avro framing said (None: a JSON part)
    # `schema` is one object for every part read with it: the schema prefix memo's (JSON, see
    # `_quick`) or the resolver's Connect schema of the part's registry id (Avro).
    shared: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


_seen = threading.local()


def _constant(name: str) -> Any:
    # Jackson quotes NaN/Infinity by default; a bare token is not JSON (RFC 8259): keep it so
    # that the value checks can say which column, not a parse error for the whole message. One
    # function for every part (the decoder is made once), the names seen kept per thread.
    _seen.names.append(name)
    return CONSTANTS[name]


# The checker decodes each message, and so does the delivery identifier right after it: the
# last few parts decoded are kept (callers only read a Part).
@functools.lru_cache(maxsize=64)
def decode_part(raw: bytes | None, schemas: bool, quick: bool = False) -> Part:
    """A JSON key or value, strictly parsed. `quick` (the compiled fast path's checker and its
    identifier): a text that starts with a `{"schema":…,"payload":` prefix remembered from an
    earlier text has only its payload parsed (see `_quick`); the Part is the same."""
    p = Part(raw)
    if raw is None:
        return p
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        p.error = f"not UTF-8 ({e.reason} at byte {e.start})"
        return p
    got = _quick(text) if quick else None
    if got is not None:
        p.doc, p.bare_constant = got
        p.shared = True
    else:
        seen_constant = _seen.names = []
        try:
            p.doc = loads_strict(text, constant=_constant)
        except DuplicateKey as e:
            p.error = f"duplicate JSON member {e.key!r}"
            return p
        except ValueError as e:
            p.error = f"not JSON ({e})"
            return p
        p.bare_constant = bool(seen_constant)
        if quick:
            p.shared = _remember(text, p.doc)
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


# -- the schema prefix ---------------------------------------------------------------------------
#
# With schemas on, every message of a table version repeats one `schema` text, which is most of
# its parse. A text that starts `{"schema":S,"payload":` (no whitespace) where S was parsed
# strictly before (a JSON value whose text ends there) is, to the strict parser, an object whose
# first member is that value: parsing a value reads only its own text. So when the rest is a
# value (parsed strictly, with the same hooks: duplicate keys, bare constants) followed by `}`
# and nothing but whitespace, the strict parse of the whole text is {"schema": <S's value>,
# "payload": <that value>}; anything else (whitespace after the colon, another member after the
# payload, a parse error) goes to the full parse, which says what is wrong. S's value is shared
# between the messages (callers treat parts as read-only). Held to the full parse by
# tests/unit/test_fast_paths_debezium.py.

_HEAD = '{"schema":'
_PAYLOAD = ',"payload":'
_TAIL = re.compile(r"[ \t\n\r]*\}[ \t\n\r]*")
_DECODER = strict_decoder(constant=_constant)  # loads_strict's own, for the payload after a prefix
#: Remembered prefixes, by the index of their `,"payload":` (newest first): (prefix, the schema's
#: value, whether its text holds a bare NaN/Infinity).
_PREFIXES: dict[int, list[tuple[str, Any, bool]]] = {}
_PREFIXES_MAX = 4096  # lengths kept (beyond this, the memo starts again)
_PER_LENGTH = 8


def _quick(text: str) -> tuple[dict[str, Any], bool] | None:
    """The strict parse of `text` from a remembered prefix (the document and whether a bare
    constant was read), or None: parse it all."""
    i = text.find(_PAYLOAD)
    got = _PREFIXES.get(i) if i > 0 else None
    if got is None:
        return None
    for prefix, schema, bare in got:
        if text.startswith(prefix):
            names = _seen.names = []
            try:
                payload, end = _DECODER.raw_decode(text, i + len(_PAYLOAD))
            except Exception:  # noqa: BLE001 - the full parse says what is wrong
                return None
            if not (end == len(text) - 1 and text[end] == "}") and _TAIL.fullmatch(text, end) is None:
                return None
            return {"schema": schema, "payload": payload}, bare or bool(names)
    return None


def _remember(text: str, doc: Any) -> bool:
    """Keep `text`'s `{"schema":…,"payload":` prefix with the schema's value `doc` holds, when
    the schema's own text ends at the first `,"payload":` (True: kept)."""
    if not (doc.__class__ is dict and len(doc) == 2 and "schema" in doc and "payload" in doc
            and text.startswith(_HEAD)):
        return False
    i = text.find(_PAYLOAD)
    if i < 0:
        return False
    names = _seen.names = []
    try:
        _value, end = _DECODER.raw_decode(text, len(_HEAD))
    except Exception:  # noqa: BLE001 - not a prefix to keep
        return False
    if end != i:
        return False
    prefix = text[:i + len(_PAYLOAD)]
    got = _PREFIXES.get(i)
    if got is None:
        if len(_PREFIXES) >= _PREFIXES_MAX:
            _PREFIXES.clear()
        got = _PREFIXES[i] = []
    elif any(p == prefix for p, _s, _b in got):
        return False  # kept already (this text did not take the quick route: e.g. trailing spaces)
    got.insert(0, (prefix, doc["schema"], bool(names)))
    del got[_PER_LENGTH:]
    return True


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


@dataclass(slots=True)
class AvroPart:
    """A Confluent-framed Avro key or value: its schema id and Avro schema (as registered), or
    where the framing broke (`kind`: short, magic, unknown-id, schema, body, trailing)."""

    schema_id: int | None = None
    schema: Any = None
    kind: str | None = None


@dataclass(slots=True)
class _View:
    avro: Any = None
    parsed: Any = None
    connect: Any = None
    from_datum: Any = None  # `connect_avro.datum_converter(connect)`
    error: str | None = None
    subjects: list[str] | None = None


class SchemaResolver:
    """Schema ids to Avro and Connect schemas, through the registry; once per id."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.views: dict[int, _View | str] = {}

    def view(self, schema_id: int) -> _View | str:
        got = self.views.get(schema_id)
        if got is not None:
            return got
        if self.registry is None:
            got = f"schema id {schema_id}: no registry to ask (pass --registry)"
        else:
            try:
                text = self.registry.schema_by_id(schema_id)
            except Exception as e:  # noqa: BLE001 - an unknown id (or garbage) is the encoder's finding
                if registry_unreachable(e):
                    raise  # the registry cannot answer: an infrastructure error, not a finding
                got = f"schema id {schema_id} is not in the registry ({type(e).__name__}: {str(e)[:120]})"
            else:
                got = _view_of(text)
        self.views[schema_id] = got
        return got

    def subjects(self, schema_id: int, want: str) -> list[str] | None:
        """The subjects that hold `schema_id` (None where the registry cannot say). Ids are global
        and an identical schema may since have been registered under another subject: a list
        without `want` is asked for again."""
        v = self.view(schema_id)
        if isinstance(v, str):
            return None
        for fresh in (False, True):
            if v.subjects is not None and want in v.subjects:
                break
            try:
                try:
                    pairs = self.registry.subjects_for_id(schema_id, fresh=fresh)
                except TypeError:  # a registry object without the `fresh` switch
                    pairs = self.registry.subjects_for_id(schema_id)
            except Exception:  # noqa: BLE001 - a registry without the lookup
                return None
            v.subjects = sorted(str(s) for s, _ in pairs)
        return v.subjects


def _view_of(text: str) -> _View:
    import fastavro

    v = _View()
    try:
        v.avro = json.loads(text)
    except ValueError as e:
        v.error = f"the registered schema is not JSON: {e}"
        return v
    except RecursionError:
        v.error = TOO_DEEP
        return v
    try:
        v.parsed = fastavro.parse_schema(_without_logical(v.avro), _ignore_default_error=True)
    except RecursionError:
        v.error = TOO_DEEP
        return v
    except Exception as e:  # noqa: BLE001
        v.error = f"the registered schema is not valid Avro: {type(e).__name__}: {e}"
        return v
    try:
        v.connect = connect_avro.from_avro_schema(v.avro)
        v.from_datum = connect_avro.datum_converter(v.connect)
    except connect_avro.NotConnectAvro as e:
        v.error = f"the registered schema is not one the Avro converter makes: {e}"
    except RecursionError:
        v.connect = v.from_datum = None
        v.error = TOO_DEEP
    return v


def _without_logical(a: Any) -> Any:
    """The schema with `logicalType` removed: datums stay raw (bytes, ints) as the checks compare."""
    if isinstance(a, list):
        return [_without_logical(x) for x in a]
    if isinstance(a, dict):
        return {k: _without_logical(v) for k, v in a.items() if k != "logicalType"}
    return a


def decode_avro_part(raw: bytes | None, resolver: SchemaResolver) -> Part:
    p = Part(raw, avro=AvroPart())
    if raw is None:
        return p
    a = p.avro
    assert a is not None
    if len(raw) < 5:
        a.kind, p.error = "short", f"{len(raw)} bytes: shorter than the 5-byte Confluent header"
        return p
    if raw[0] != 0:
        a.kind, p.error = "magic", f"magic byte 0x{raw[0]:02x}, not 0x00"
        return p
    a.schema_id = struct.unpack(">i", raw[1:5])[0]
    v = resolver.view(a.schema_id)
    if isinstance(v, str):
        a.kind, p.error = "unknown-id", v
        return p
    a.schema = v.avro
    if v.error is not None or v.parsed is None:
        a.kind, p.error = "schema", v.error or "unusable schema"
        return p
    import fastavro

    buf = io.BytesIO(raw)
    buf.seek(5)
    try:
        datum = fastavro.schemaless_reader(buf, v.parsed, None)
    except Exception as e:  # noqa: BLE001 - garbage and truncated bodies are findings
        a.kind, p.error = "body", f"the Avro body does not decode with schema {a.schema_id}: {exception_text(e)}"
        return p
    if buf.tell() != len(raw):
        a.kind, p.error = "trailing", f"{len(raw) - buf.tell()} byte(s) left after the Avro body"
        return p
    p.schema = v.connect
    p.shared = True  # the resolver's Connect schema of the id: one object for every part it decodes
    p.payload = v.from_datum(datum)  # connect_avro.from_avro_datum(v.connect, datum), made once per id
    p.doc = {"schema": p.schema, "payload": p.payload}
    p.enveloped = True
    return p


def decode(key: bytes | None, value: bytes | None, *, key_schemas: bool, value_schemas: bool,
           key_avro: bool = False, value_avro: bool = False, resolver: SchemaResolver | None = None,
           quick: bool = False) -> Message:
    r = resolver if resolver is not None else SchemaResolver(None)
    return Message(decode_avro_part(key, r) if key_avro else decode_part(key, key_schemas, quick),
                   decode_avro_part(value, r) if value_avro else decode_part(value, value_schemas, quick))
