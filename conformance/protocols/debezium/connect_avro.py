"""Kafka Connect data as Confluent's AvroConverter writes it, and back.

A Debezium record is Connect data: a Connect schema and a value. The JSON converter writes them as
`{"schema", "payload"}` (the form `spec.py` builds and the checks read); Confluent's AvroConverter
turns the same schema into an Avro schema (`AvroData.fromConnectSchema`, Confluent 7.0 with its
defaults: `connect.meta.data=true`, `enhanced.avro.schema.support=false`,
`scrub.invalid.names=false`), registers it under `<topic>-key` / `<topic>-value`
(TopicNameStrategy) and writes the value in Avro's binary encoding after the 5-byte header.

So the reference writes Avro by translating its JSON-converter form, and the decoder reads Avro
back into that form: every check of the JSON converter's schema and payload judges Avro records
too, and `avro.schema` judges the translation itself. The rules (read from AvroData 7.0.16 and
checked against it, `tests/unit/test_debezium_avro.py`):

* int8 / int16 → `{"type": "int", "connect.type": "int8|int16"}`; int32 → int, int64 → long,
  float32 → float, float64 → double, boolean, string, bytes;
* a struct → a record named by the Connect name split at its last dot (no name:
  `io.confluent.connect.avro.ConnectDefault`, numbered from the second), fields in order;
* `connect.doc`, `connect.version`, `connect.parameters`, `connect.default` and `connect.name`
  on every type that has them (not on unions); Decimal also gets `scale`, `precision` (its
  `connect.decimal.precision` parameter, else 64) and `logicalType: decimal`; Connect's Date,
  Time and Timestamp get `date`, `time-millis`, `timestamp-millis`;
* an optional schema is a union: `["null", T]`, or `[T, "null"]` when it has a default; an
  optional field's default is null unless the schema has one; a default of bytes is the bytes
  as ISO-8859-1 text;
* a named type met again is referred to by its full name;
* field names are not changed: a name Java's Avro refuses (`x-1`, an emoji; Unicode letters
  pass: `model/avro_names.py`) fails the conversion (Debezium's `field.name.adjustment.mode`
  is how a deployment avoids that); namespaces are not judged.
"""

from __future__ import annotations

import base64
import math
import unicodedata
from collections.abc import Callable
from typing import Any

from ...model.avro_names import java_valid_name
from ...model.values import to_float32

AVRO_NAMESPACE = "io.confluent.connect.avro"
DEFAULT_NAME = "ConnectDefault"
DECIMAL = "org.apache.kafka.connect.data.Decimal"
LOGICAL = {"org.apache.kafka.connect.data.Date": "date", "org.apache.kafka.connect.data.Time": "time-millis",
           "org.apache.kafka.connect.data.Timestamp": "timestamp-millis"}
DECIMAL_PRECISION_DEFAULT = 64
# A Connect schema's metadata and the Avro property that carries it, in AvroData's order.
_META = (("doc", "connect.doc"), ("version", "connect.version"), ("parameters", "connect.parameters"),
         ("default", "connect.default"), ("name", "connect.name"))
_PRIMITIVE = {"int8": "int", "int16": "int", "int32": "int", "int64": "long", "float": "float", "float32": "float",
              "double": "double", "float64": "double", "boolean": "boolean", "string": "string", "bytes": "bytes"}


class AvroNameError(ValueError):
    """A name Avro refuses (what the Java converter raises as SchemaParseException)."""


def _copy_meta(src: dict[str, Any], dst: dict[str, Any], default: Callable[[Any], Any], *, to_avro: bool) -> None:
    """Connect's metadata from `src` to `dst`, in AvroData's order: to the Avro schema's connect.*
    keys (`to_avro`) or back from them; a default through `default`, parameters only if any."""
    for connect_key, avro_key in _META:
        key, put = (connect_key, avro_key) if to_avro else (avro_key, connect_key)
        v = src.get(key)
        if v is not None and (v or connect_key != "parameters"):
            dst[put] = default(v) if connect_key == "default" else (dict(v) if isinstance(v, dict) else v)


def split_name(full: str) -> tuple[str | None, str]:
    i = full.rfind(".")
    return (full[:i], full[i + 1:]) if i >= 0 else (None, full)


class _Context:
    def __init__(self) -> None:
        self.defined: set[str] = set()
        self.unnamed = 0


def to_avro_schema(connect: dict[str, Any]) -> Any:
    """The Avro schema (JSON form) AvroData makes of a Connect schema (JSON converter form)."""
    return _to_avro(connect, _Context())


def _to_avro(s: dict[str, Any], ctx: _Context) -> Any:
    t = s.get("type")
    optional = bool(s.get("optional"))
    name = s.get("name")
    if t == "struct":
        if optional:
            return ["null", _to_avro({**s, "optional": False}, ctx)]
        ns, short = split_name(name) if isinstance(name, str) else (AVRO_NAMESPACE, _default_name(ctx))
        full = f"{ns}.{short}" if ns else short
        if full in ctx.defined:
            return full
        if not java_valid_name(short):
            raise AvroNameError(f"Illegal character in: {short}")
        ctx.defined.add(full)
        fields = []
        for f in s.get("fields") or []:
            fields.append(_field(f, ctx))
        base: dict[str, Any] = {"type": "record", "name": short}
        if ns:
            base["namespace"] = ns
        base["fields"] = fields
    elif t == "array":
        base = {"type": "array", "items": _to_avro(s.get("items") or {}, ctx)}
    elif t == "map":
        base = {"type": "map", "values": _to_avro(s.get("values") or {}, ctx)}
    elif t in _PRIMITIVE:
        base = {"type": _PRIMITIVE[t]}
        if t == "bytes" and name == DECIMAL:
            params = s.get("parameters") or {}
            base["scale"] = int(params.get("scale", 0))
            base["precision"] = int(params.get("connect.decimal.precision", DECIMAL_PRECISION_DEFAULT))
    else:
        raise ValueError(f"no Avro form for Connect type {t!r}")
    _copy_meta(s, base, lambda v: _avro_default(s, v), to_avro=True)
    if t in ("int8", "int16"):
        base["connect.type"] = t
    if "scale" in base:  # a Decimal
        if 0 <= base["scale"] <= base["precision"]:
            base["logicalType"] = "decimal"
    elif name in LOGICAL:
        base["logicalType"] = LOGICAL[name]
    out: Any = base["type"] if len(base) == 1 and isinstance(base["type"], str) else base
    if optional:
        return [out, "null"] if s.get("default") is not None else ["null", out]
    return out


def _default_name(ctx: _Context) -> str:
    ctx.unnamed += 1
    return DEFAULT_NAME + (str(ctx.unnamed) if ctx.unnamed > 1 else "")


def _field(f: dict[str, Any], ctx: _Context) -> dict[str, Any]:
    name = f.get("field")
    if not isinstance(name, str) or not java_valid_name(name):
        raise AvroNameError(f"Illegal character in: {name}")
    out: dict[str, Any] = {"name": name, "type": _to_avro(f, ctx)}
    if f.get("default") is not None:
        out["default"] = _avro_default(f, f["default"])
    elif f.get("optional"):
        out["default"] = None
    return out


def _avro_default(s: dict[str, Any], v: Any) -> Any:
    """A Connect default (as the JSON converter writes it) as Avro writes defaults."""
    if s.get("type") == "bytes" and isinstance(v, str):
        return base64.b64decode(v).decode("latin-1")
    return v


# -- values ----------------------------------------------------------------------------------------

def _walk(s: dict[str, Any], v: Any, leaf: Callable[[Any, Any], Any], *, lenient: bool) -> Any:
    """`v`, a value of Connect schema `s`, with `leaf(type, value)` applied to every value in it
    that is no struct, array or map. `lenient`: a container that is not of its schema's shape
    is kept as it is (else it is taken to be one, and fails where it is not)."""
    if v is None:
        return None
    t = s.get("type")
    if t == "struct" and (not lenient or isinstance(v, dict)):
        return {f["field"]: _walk(f, v.get(f["field"]), leaf, lenient=lenient) for f in s.get("fields") or []}
    if t == "array" and (not lenient or isinstance(v, list)):
        return [_walk(s.get("items") or {}, x, leaf, lenient=lenient) for x in v]
    if t == "map" and (not lenient or isinstance(v, dict)):
        return {k: _walk(s.get("values") or {}, x, leaf, lenient=lenient) for k, x in v.items()}
    if t in ("struct", "array", "map"):
        return v
    return leaf(t, v)


def to_avro_datum(s: dict[str, Any], v: Any) -> Any:
    """A JSON-converter payload as the Avro datum of `to_avro_schema(s)` (bytes from base64)."""
    return _walk(s, v, _to_avro_leaf, lenient=False)


def _to_avro_leaf(t: Any, v: Any) -> Any:
    if t == "bytes":
        return base64.b64decode(v) if isinstance(v, str) else bytes(v)
    if t in ("float", "float32", "double", "float64") and isinstance(v, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(v, v)
    return v


# -- back: Avro as Connect data ---------------------------------------------------------------------

class NotConnectAvro(ValueError):
    """An Avro schema AvroData would not have made (the decoder reports why)."""


def from_avro_schema(avro: Any) -> dict[str, Any]:
    """The Connect schema (JSON converter form) an Avro schema stands for, as AvroData's
    `toConnectSchema` reads it: unions with null are optional, connect.* props give name,
    version, doc, parameters, default and the int8/int16 types."""
    named: dict[str, Any] = {}
    return _from_avro(avro, named, None)


def _from_avro(a: Any, named: dict[str, Any], space: str | None) -> dict[str, Any]:
    if isinstance(a, list):
        branches = [b for b in a if b != "null"]
        if len(a) != 2 or len(branches) != 1:
            raise NotConnectAvro(f"a union other than null and one type: {a!r}"[:200])
        # A copy: a named record's dict is shared with later references to it, which may be
        # required where this one is optional.
        inner = dict(_from_avro(branches[0], named, space))
        inner["optional"] = True
        return inner
    if isinstance(a, str):
        if a in ("int", "long", "float", "double", "boolean", "string", "bytes"):
            return {"type": _CONNECT[a], "optional": False}
        ref = named.get(a) or (named.get(f"{space}.{a}") if space else None)
        if ref is None:
            raise NotConnectAvro(f"unknown type name {a!r}")
        return dict(ref)
    if not isinstance(a, dict):
        raise NotConnectAvro(f"not a schema: {a!r}"[:200])
    t = a.get("type")
    out: dict[str, Any]
    if t == "record":
        ns = a.get("namespace", space)
        full = f"{ns}.{a['name']}" if ns and "." not in a["name"] else a["name"]
        out = {"type": "struct", "fields": [], "optional": False}
        named[full] = out  # before the fields: a record may refer to itself
        inner_space = split_name(full)[0]
        for f in a.get("fields") or []:
            fs = _from_avro(f.get("type"), named, inner_space)
            fs = dict(fs)
            if "default" in f and f["default"] is not None:
                fs["default"] = _connect_default(fs, f["default"])
            fs["field"] = f.get("name")
            out["fields"].append(fs)
        if a.get("connect.name") is None and full != f"{AVRO_NAMESPACE}.{DEFAULT_NAME}" and \
                not full.startswith(f"{AVRO_NAMESPACE}.{DEFAULT_NAME}"):
            out["name"] = full
    elif t == "array":
        out = {"type": "array", "items": _from_avro(a.get("items"), named, space), "optional": False}
    elif t == "map":
        out = {"type": "map", "keys": {"type": "string", "optional": False},
               "values": _from_avro(a.get("values"), named, space), "optional": False}
    elif t in _CONNECT:
        out = {"type": _CONNECT[t], "optional": False}
        ct = a.get("connect.type")
        if t == "int" and ct in ("int8", "int16"):
            out["type"] = ct
    else:
        raise NotConnectAvro(f"no Connect type for Avro {t!r}")
    _copy_meta(a, out, lambda v: _connect_default(out, v), to_avro=False)
    return out


_CONNECT = {"int": "int32", "long": "int64", "float": "float", "double": "double", "boolean": "boolean",
            "string": "string", "bytes": "bytes"}


def _connect_default(s: dict[str, Any], v: Any) -> Any:
    if s.get("type") == "bytes" and isinstance(v, str):
        return base64.b64encode(v.encode("latin-1")).decode("ascii")
    return v


def from_avro_datum(s: dict[str, Any], v: Any) -> Any:
    """An Avro datum as the JSON converter would write its payload (bytes as base64)."""
    return _walk(s, v, _from_avro_leaf, lenient=True)


def datum_converter(s: dict[str, Any]) -> Callable[[Any], Any]:
    """`from_avro_datum(s, ·)`, worked out once for the schema: a part of `s` with no bytes and no
    floating-point value anywhere in it (where `_from_avro_leaf` changes nothing) is taken as it
    is rather than rebuilt. The two give equal values with their keys in the same order for every
    datum fastavro reads with the Avro schema `s` stands for (its records are dicts of the schema's
    fields, in order, which are the struct's fields: `from_avro_schema`), which is all the
    decoder hands it. Held to `from_avro_datum` by tests/unit/test_fast_paths_debezium.py."""
    conv = _converter(s, frozenset())
    return conv if conv is not None else _same


def _same(v: Any) -> Any:
    return v


def _converter(s: Any, active: frozenset[int]) -> Callable[[Any], Any] | None:
    """The converter of values of `s`; None where it changes nothing. `active`: the structs being
    worked out above this one (a record within itself is walked, as `from_avro_datum` walks it)."""
    t = s.get("type")
    if t == "struct":
        fields = s.get("fields") or []
        if id(fields) in active:
            return lambda v: _walk(s, v, _from_avro_leaf, lenient=True)
        inner = active | {id(fields)}
        convs = [(f["field"], _converter(f, inner)) for f in fields]
        if all(c is None for _n, c in convs):
            return None

        def struct(v: Any) -> Any:
            if not isinstance(v, dict):
                return v
            return {n: v.get(n) if c is None else c(v.get(n)) for n, c in convs}
        return struct
    if t in ("array", "map"):
        item = _converter(s.get("items" if t == "array" else "values") or {}, active)
        if item is None:
            return None
        if t == "array":
            return lambda v: [item(x) for x in v] if isinstance(v, list) else v
        return lambda v: {k: item(x) for k, x in v.items()} if isinstance(v, dict) else v
    if t == "bytes" or t in ("float", "double", "float32", "float64"):
        return lambda v: None if v is None else _from_avro_leaf(t, v)
    return None


def _from_avro_leaf(t: Any, v: Any) -> Any:
    if t == "bytes" and isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, float) and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("Infinity" if v > 0 else "-Infinity")
    return v


# -- names -----------------------------------------------------------------------------------------

def adjust(name: str, mode: str, *, field: bool) -> str:
    """Debezium's `schema.name.adjustment.mode` / `field.name.adjustment.mode` (SchemaNameAdjuster):
    `none`; `avro`: every character Avro refuses becomes `_` (a leading digit keeps itself after
    the `_`); `avro_unicode`: it becomes `_uXXXX` (Java's UTF-16 units, hex lower case, padded to
    four digits only from one or two). Full names keep their dots, field names do not."""
    if mode == "none" or not name:
        return name
    unicode = mode == "avro_unicode"
    units = name.encode("utf-16-be")
    chars = [chr(int.from_bytes(units[i:i + 2], "big")) for i in range(0, len(units), 2)]

    def first_ok(c: str) -> bool:
        return ("a" <= c <= "z") or ("A" <= c <= "Z") or (c == "_" and not unicode)

    def rest_ok(c: str) -> bool:
        return first_ok(c) or ("0" <= c <= "9") or (c == "." and not field)

    def replace(c: str) -> str:
        if not unicode:
            return "_"
        h = format(ord(c), "x")
        return "_u" + ("00" + h if len(h) <= 2 else h)

    out = []
    c0 = chars[0]
    if first_ok(c0):
        out.append(c0)
    else:
        out.append(replace(c0))
        if unicodedata.category(c0) == "Nd" and not unicode:  # Java's Character.isDigit
            out.append(c0)
    for c in chars[1:]:
        out.append(c if rest_ok(c) else replace(c))
    return "".join(out)


# -- comparing schemas --------------------------------------------------------------------------------

def normal(a: Any, space: str | None = None) -> Any:
    """An Avro schema with every name in full and namespaces resolved: JSON forms that differ only
    in where they put namespaces (the Java library omits an inherited one) compare equal."""
    if isinstance(a, list):
        return [normal(x, space) for x in a]
    if isinstance(a, str):
        if a in ("null", "int", "long", "float", "double", "boolean", "string", "bytes") or "." in a or not space:
            return a
        return f"{space}.{a}"
    if not isinstance(a, dict):
        return a
    out = dict(a)
    if a.get("type") == "float" and _number(a.get("connect.default")):
        out["connect.default"] = to_float32(float(a["connect.default"]))
    if a.get("type") == "record" and isinstance(a.get("name"), str):
        ns = a.get("namespace", space)
        full = a["name"] if "." in a["name"] or not ns else f"{ns}.{a['name']}"
        out.pop("namespace", None)
        out["name"] = full
        inner = split_name(full)[0]
        out["fields"] = [_normal_field(f, inner) if isinstance(f, dict) else f for f in a.get("fields") or []]
    elif a.get("type") == "array":
        out["items"] = normal(a.get("items"), space)
    elif a.get("type") == "map":
        out["values"] = normal(a.get("values"), space)
    return out


def _normal_field(f: dict[str, Any], space: str | None) -> dict[str, Any]:
    out = {**f, "type": normal(f.get("type"), space)}
    t = f.get("type")
    branch = t[0] if isinstance(t, list) and t else t
    if (branch == "float" or (isinstance(branch, dict) and branch.get("type") == "float")) and \
            _number(f.get("default")):
        # A float32 default is the same number however many digits its text has (Java 17's
        # Float.toString writes more than the shortest).
        out["default"] = to_float32(float(f["default"]))
    return out


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def first_difference(want: Any, got: Any, where: str = "$") -> tuple[str, Any, Any] | None:
    """Where two JSON values first differ (a path, and both sides there), or None."""
    if isinstance(want, dict) and isinstance(got, dict):
        for k in list(want) + [k for k in got if k not in want]:
            if k not in got or k not in want:
                return f"{where}.{k}", want.get(k, "(absent)"), got.get(k, "(absent)")
            d = first_difference(want[k], got[k], f"{where}.{k}")
            if d is not None:
                return d
        return None
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return where, want, got
        for i, (w, g) in enumerate(zip(want, got, strict=True)):
            d = first_difference(w, g, f"{where}[{i}]")
            if d is not None:
                return d
        return None
    if want != got or type(want) is not type(got):
        return where, want, got
    return None
