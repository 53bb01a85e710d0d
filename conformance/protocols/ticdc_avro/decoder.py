"""Strict decoding of TiCDC Avro records: every deviation becomes data, never an exception.

`SchemaView` is what the registry says about one schema id (parsed once, cached);
`DecodedPart` is one framed key or value: schema id, view, datum, or the reason it could not
be decoded (short, bad magic byte, unknown id, schema invalid, body undecodable, trailing
bytes). Checks read these; the decoder itself judges nothing.
"""

from __future__ import annotations

import io
import json
import struct
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

import fastavro

from ...errors import InfrastructureError, exception_text
from ..kit import SCHEMA_TOO_DEEP as TOO_DEEP
from ..kit import registry_not_found, registry_unreachable
from .encoder import strip_logical_types
from .spec import ALL_EXTENSION_FIELDS


class RegistryDown(InfrastructureError):
    """The registry cannot be reached: an infrastructure error, not a finding."""


@dataclass(slots=True)
class FieldView:
    name: str
    type: Any  # the raw "type" of the field
    nullable: bool  # a union that contains "null"
    null_first: bool | None  # for two-branch unions: is "null" the first branch?
    inner: Any  # the non-null branch (or the type itself)
    primitive: str | None
    params: dict[str, Any]
    logical: str | None
    precision: Any
    scale: Any
    has_default: bool
    default: Any
    problem: str | None = None  # shape problems (a union of three, a nested record …)
    # What checks work out once per field (e.g. whether its schema fits its tidb_type).
    memo: dict[Hashable, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def tidb_type(self) -> str | None:
        v = self.params.get("tidb_type")
        return v if isinstance(v, str) else None

    @property
    def is_extension(self) -> bool:
        return self.name in ALL_EXTENSION_FIELDS

    def inner_json(self) -> Any:
        return self.inner


@dataclass(slots=True)
class SchemaView:
    schema_id: int
    text: str
    json: Any = None
    error: str | None = None  # not JSON, not a record, fields malformed
    name: str | None = None
    namespace: str | None = None
    fields: list[FieldView] = field(default_factory=list)
    by_name: dict[str, FieldView] = field(default_factory=dict)
    parsed: Any = None  # fastavro schema (logical types stripped) or None
    parse_error: str | None = None
    _apache_error: Any = None  # cached result of the Apache Avro validation

    def apache_avro_problem(self) -> str | None:
        """Whether Apache Avro (the reference implementation) accepts the schema."""
        if self._apache_error is None:
            import avro.schema

            try:
                avro.schema.parse(self.text)
                self._apache_error = ""
            except Exception as e:  # noqa: BLE001 - any rejection is the finding
                self._apache_error = f"{type(e).__name__}: {e}"
        return self._apache_error or None

    @property
    def column_fields(self) -> list[FieldView]:
        return [f for f in self.fields if not f.is_extension]


def _field_view(f: Any) -> FieldView:
    if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
        return FieldView(str(f.get("name") if isinstance(f, dict) else f), None, False, None, None, None, {},
                         None, None, None, False, None, problem="field is not an object with name and type")
    t = f["type"]
    nullable = False
    null_first: bool | None = None
    inner = t
    problem = None
    if isinstance(t, list):
        non_null = [x for x in t if x != "null"]
        nullable = len(non_null) < len(t)
        if len(t) == 2 and nullable and len(non_null) == 1:
            null_first = t[0] == "null"
            inner = non_null[0]
        else:
            problem = f"union {json.dumps(t)[:120]} is not [\"null\", T] or [T, \"null\"]"
            inner = non_null[0] if non_null else None
    prim = inner if isinstance(inner, str) else (inner.get("type") if isinstance(inner, dict) else None)
    params = inner.get("connect.parameters") if isinstance(inner, dict) else None
    return FieldView(
        name=f["name"], type=t, nullable=nullable, null_first=null_first, inner=inner,
        primitive=prim if isinstance(prim, str) else None,
        params=params if isinstance(params, dict) else {},
        logical=inner.get("logicalType") if isinstance(inner, dict) else None,
        precision=inner.get("precision") if isinstance(inner, dict) else None,
        scale=inner.get("scale") if isinstance(inner, dict) else None,
        has_default="default" in f, default=f.get("default"), problem=problem,
    )


def schema_view(schema_id: int, text: str) -> SchemaView:
    v = SchemaView(schema_id, text)
    try:
        v.json = json.loads(text)
    except ValueError as e:
        v.error = f"the registered schema is not JSON: {e}"
        return v
    except RecursionError:
        v.error = TOO_DEEP
        return v
    j = v.json
    if not isinstance(j, dict) or j.get("type") != "record" or not isinstance(j.get("fields"), list):
        v.error = "the registered schema is not an Avro record with a fields list"
        return v
    v.name = j.get("name") if isinstance(j.get("name"), str) else None
    v.namespace = j.get("namespace") if isinstance(j.get("namespace"), str) else None
    try:
        v.fields = [_field_view(f) for f in j["fields"]]
    except RecursionError:
        v.json, v.error = None, TOO_DEEP
        return v
    v.by_name = {f.name: f for f in v.fields}
    try:
        # fastavro insists that a double's default be written 0.0, not 0; Avro, Java and
        # TiCDC (Go prints 0.0 as 0) do not. Defaults are judged by the checks instead.
        v.parsed = fastavro.parse_schema(strip_logical_types(j), _ignore_default_error=True)
    except Exception as e:  # noqa: BLE001 - the encoder registered something unparseable
        v.parse_error = f"{type(e).__name__}: {e}"
    return v


class SchemaResolver:
    """Schema ids -> views and subjects, through any registry-like object; cached."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self._views: dict[int, SchemaView | str] = {}
        self._subjects: dict[int, list[tuple[str, int]] | str] = {}
        # What checks work out once per schema (or pair of schemas) rather than per record.
        self.memo: dict[Hashable, Any] = {}

    def view(self, schema_id: int) -> SchemaView | str:
        """The view, or a string saying why there is none."""
        got = self._views.get(schema_id)
        if got is None:
            try:
                text = self.registry.schema_by_id(schema_id)
                got = schema_view(schema_id, text)
            except Exception as e:  # noqa: BLE001
                if registry_unreachable(e):
                    raise RegistryDown(str(e)) from e
                got = (f"schema id {schema_id} is not in the registry" if registry_not_found(e)
                       else f"the registry answered an error for schema id {schema_id}: {e}")
            self._views[schema_id] = got
        return got

    def subjects(self, schema_id: int, want: str | None = None) -> list[tuple[str, int]] | str:
        """Subjects that use `schema_id`. If `want` is not among the cached ones, ask again:
        ids are global, and an identical schema may since have been registered elsewhere."""
        got = self._subjects.get(schema_id)
        if got is None or (want is not None and not isinstance(got, str) and want not in {s for s, _ in got}):
            try:
                try:
                    pairs = self.registry.subjects_for_id(schema_id, fresh=got is not None)
                except TypeError:  # a registry object without the `fresh` switch
                    pairs = self.registry.subjects_for_id(schema_id)
                got = [(str(s), int(v)) for s, v in pairs]
            except Exception as e:  # noqa: BLE001
                if registry_unreachable(e):
                    raise RegistryDown(str(e)) from e
                got = f"the registry cannot list subjects of schema id {schema_id}: {e}"
            self._subjects[schema_id] = got
        return got


class ErrorKind:
    SHORT = "short"
    MAGIC = "magic"
    UNKNOWN_ID = "unknown-id"
    SCHEMA = "schema"
    BODY = "body"
    TRAILING = "trailing"


@dataclass(slots=True)
class DecodedPart:
    raw: bytes
    schema_id: int | None = None
    view: SchemaView | None = None
    datum: dict[str, Any] | None = None
    error_kind: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.datum is not None


# The last few decodes, by their bytes: a record's key and value are decoded by the checker and
# again by the delivery identifier (each with its own resolver over the same registry). Parts
# naming an id the registry did not know are not kept (it may know it by the next lookup).
_RECENT: dict[bytes, tuple[Any, DecodedPart]] = {}
_RECENT_MAX = 32


def decode_framed(raw: bytes, resolver: SchemaResolver) -> DecodedPart:
    """One framed key or value, decoded (see `DecodedPart`); callers only read the result."""
    hit = _RECENT.get(raw)
    if hit is not None and hit[0] is resolver.registry:
        return hit[1]
    d = _decode_framed(raw, resolver)
    if d.error_kind != ErrorKind.UNKNOWN_ID:
        if len(_RECENT) >= _RECENT_MAX:
            _RECENT.clear()
        _RECENT[raw] = (resolver.registry, d)
    return d


def _decode_framed(raw: bytes, resolver: SchemaResolver) -> DecodedPart:
    d = DecodedPart(raw)
    if len(raw) < 5:
        d.error_kind, d.error = ErrorKind.SHORT, f"{len(raw)} bytes: shorter than the 5-byte Confluent header"
        return d
    if raw[0] != 0:
        d.error_kind, d.error = ErrorKind.MAGIC, f"magic byte is 0x{raw[0]:02x}, not 0x00"
        return d
    d.schema_id = struct.unpack(">i", raw[1:5])[0]
    v = resolver.view(d.schema_id)
    if isinstance(v, str):
        d.error_kind, d.error = ErrorKind.UNKNOWN_ID, v
        return d
    d.view = v
    if v.error or v.parse_error or v.parsed is None:
        d.error_kind, d.error = ErrorKind.SCHEMA, v.error or v.parse_error or "schema unusable"
        return d
    buf = io.BytesIO(raw)
    buf.seek(5)
    try:
        datum = fastavro.schemaless_reader(buf, v.parsed, None)
    except Exception as e:  # noqa: BLE001 - truncated / garbage bodies are findings
        d.error_kind = ErrorKind.BODY
        d.error = f"the Avro body does not decode with schema {d.schema_id}: {exception_text(e)}"
        return d
    if buf.tell() != len(raw):
        d.error_kind = ErrorKind.TRAILING
        d.error = f"{len(raw) - buf.tell()} bytes left over after the Avro body"
        d.datum = datum if isinstance(datum, dict) else None
        return d
    if not isinstance(datum, dict):
        d.error_kind, d.error = ErrorKind.BODY, "the body did not decode to a record"
        return d
    d.datum = datum
    return d
