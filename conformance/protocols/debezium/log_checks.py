"""What a Debezium record shows by itself, judged without the workload: with the JsonConverter's
schemas on, the payload is the value of the Connect schema beside it, field by field, and each
logical type's value lies in its domain. A captured topic is held to it as strictly as a run."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterator
from typing import Any

from ...checks.registry import Failure, Level, NotApplicable, Scope
from ..kit import Findings, brief
from .checker import RecordEvidence
from .checks import check
from .spec import PLACEHOLDER

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_FLOAT_WORDS = ("NaN", "Infinity", "-Infinity")  # Jackson writes non-finite doubles as strings
# Logical types whose integer counts a unit of a day: their value lies within one day.
_DAY = {"io.debezium.time.Time": 86_400_000, "io.debezium.time.MicroTime": 86_400_000_000,
        "io.debezium.time.NanoTime": 86_400_000_000_000, "org.apache.kafka.connect.data.Time": 86_400_000}
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_DECIMAL = "org.apache.kafka.connect.data.Decimal"


def _b64(v: Any) -> bytes | None:
    if not isinstance(v, str):
        return None
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError):
        return None


def problems(schema: Any, value: Any, path: str) -> Iterator[tuple[str, str, Any, Any]]:
    """(path, what is wrong, expected, actual) for each place `value` is not a value of the Connect
    `schema` as the JsonConverter writes it."""
    if not isinstance(schema, dict):
        return
    typ, name = schema.get("type"), schema.get("name")
    if value is None:
        if not schema.get("optional", False):
            yield path, "null in a required field", f"a {name or typ}", None
        return
    if typ in _INTS:
        bits = _INTS[typ]
        if not isinstance(value, int) or isinstance(value, bool):
            yield path, f"not a JSON integer, as {typ} is", typ, brief(value, 60)
        elif not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
            yield path, f"out of the range of {typ}", f"{-(1 << (bits - 1))} .. {(1 << (bits - 1)) - 1}", value
        elif name in _DAY and not 0 <= value <= _DAY[name]:
            yield path, f"{name} is a time of day", f"0 .. {_DAY[name]}", value
    elif typ in ("float32", "float64"):
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)) and value not in _FLOAT_WORDS:
            yield path, f"not a JSON number, as {typ} is", typ, brief(value, 60)
    elif typ == "boolean":
        if not isinstance(value, bool):
            yield path, "not true or false", "boolean", brief(value, 60)
    elif typ == "string":
        if not isinstance(value, str):
            yield path, "not a JSON string", "string", brief(value, 60)
        elif value in (PLACEHOLDER, ""):
            # An unchanged TOASTed value's placeholder; "": the converter's fallback for a NOT NULL
            # column a delete's old row lacks (REPLICA IDENTITY DEFAULT), whatever the type.
            return
        elif name == "io.debezium.data.Uuid" and not _UUID.match(value):
            yield path, "io.debezium.data.Uuid is a UUID's text", "8-4-4-4-12 hex digits", value
        elif name == "io.debezium.data.Json":
            try:
                json.loads(value)
            except ValueError:
                yield path, "io.debezium.data.Json is a JSON document's text", "JSON text", brief(value, 60)
        elif name == "io.debezium.data.Enum":
            allowed = (schema.get("parameters") or {}).get("allowed")
            # Members are comma-joined (and may hold commas). The field's own default is a value too:
            # the converter writes it for a null (replace.null.with.default), and the connector
            # reads an enum's default literal without undoubling its quotes (PostgresDefaultValue-
            # Converter.extractEnumDefault: `'it''s'` gives "it''s"; real 3.6.3).
            if isinstance(allowed, str) and value not in allowed and value != schema.get("default"):
                yield path, "not a member of the enum", allowed, value
    elif typ == "bytes":
        yield from _bytes(schema, value, path)
    elif typ == "struct":
        if not isinstance(value, dict):
            yield path, "not a JSON object, as a struct is", "object", brief(value, 60)
            return
        fields = [f for f in schema.get("fields") or [] if isinstance(f, dict)]
        for f in fields:
            name_of = str(f.get("field"))
            yield from problems(f, value.get(name_of), f"{path}.{name_of}" if path else name_of)
    elif typ == "array":
        if not isinstance(value, list):
            yield path, "not a JSON array", "array", brief(value, 60)
            return
        for i, x in enumerate(value):
            yield from problems(schema.get("items"), x, f"{path}[{i}]")
    elif typ == "map":
        if isinstance(value, dict):
            for k, x in value.items():
                yield from problems(schema.get("values"), x, f"{path}[{k!r}]")
        elif isinstance(value, list):  # a map whose keys are not strings: [[key, value], ...]
            for i, pair in enumerate(value):
                if not (isinstance(pair, list) and len(pair) == 2):
                    yield f"{path}[{i}]", "a map entry of non-string keys is a [key, value] pair", "[k, v]", brief(
                        pair, 60)
                    continue
                yield from problems(schema.get("keys"), pair[0], f"{path}[{i}].key")
                yield from problems(schema.get("values"), pair[1], f"{path}[{i}].value")
        else:
            yield path, "not a JSON object or array of pairs, as a map is", "map", brief(value, 60)


def _bytes(schema: dict[str, Any], value: Any, path: str) -> Iterator[tuple[str, str, Any, Any]]:
    name, params = schema.get("name"), schema.get("parameters") or {}
    if name == _DECIMAL and isinstance(value, (int, float)) and not isinstance(value, bool):
        return  # decimal.format=NUMERIC writes the number itself
    raw = _b64(value)
    if raw is None:
        yield path, "bytes are base64 text in JSON", "base64", brief(value, 60)
        return
    if name == _DECIMAL:
        precision = params.get("connect.decimal.precision")
        # The unscaled value: big-endian two's complement (decimal.format BASE64, the default).
        unscaled = int.from_bytes(raw, "big", signed=True)
        if precision is not None and str(precision).isdigit() and len(str(abs(unscaled))) > int(precision):
            yield (path, "more digits than the declared connect.decimal.precision",
                   f"at most {precision} digits", f"{unscaled} (scale {params.get('scale')})")
    elif name == "io.debezium.data.Bits":
        length = params.get("length")
        if length is not None and str(length).isdigit() and len(raw) > (int(length) + 7) // 8:
            yield path, "more bytes than a bit string of the declared length holds", \
                f"at most {(int(length) + 7) // 8} byte(s)", len(raw)


@check("value.schema-conforms", level=Level.MUST, scope=Scope.RECORD,
       clause="Kafka Connect JsonConverter (schemas.enable=true): the payload is a value of the schema beside it "
              "(int8..int64 as integers in range, float32/64 as numbers, boolean, string, bytes as base64, struct, "
              "array, map; null only where optional); logical types within their domain (Decimal's unscaled value "
              "within connect.decimal.precision, io.debezium.time.(Micro|Nano)Time within a day, Uuid, Json, Enum "
              "members, Bits within their length)")
def value_schema_conforms(ev: RecordEvidence) -> Findings:
    """Key and value payloads are values of the Connect schemas beside them."""
    judged = False
    for part, p in (("key", ev.msg.key), ("value", ev.msg.value)):
        if p.raw is None or not p.ok or not p.enveloped or not isinstance(p.schema, dict):
            continue
        judged = True
        for path, what, expected, actual in problems(p.schema, p.payload, ""):
            column = path.split(".")[1] if path.startswith(("after.", "before.")) else None
            yield Failure(f"{part} {path or 'payload'}: {what}", expected=expected, actual=actual,
                          location=ev.at(column, part))
    if not judged:
        yield NotApplicable("no {schema, payload} document (schemas off, Avro, or a tombstone)")


@check("transaction.end-counts", level=Level.MUST, scope=Scope.RECORD,
       clause="Debezium documentation, Transaction metadata (END: event_count, the transaction's events; "
              "data_collections, each collection's data_collection and event_count); TransactionContext "
              "(every event counts once in the total and once in its collection's count)")
def transaction_end_counts(ev: RecordEvidence) -> Findings:
    """An END counts its transaction's events once in all and once per data collection: its
    `event_count` is the sum of its `data_collections`' counts, each a collection name with a count
    of at least one."""
    if not ev.transaction_topic:
        yield NotApplicable("not on the transaction topic")
        return
    p = ev.msg.value.payload
    if not isinstance(p, dict) or p.get("status") != "END":
        yield NotApplicable("not an END")
        return
    total, colls = p.get("event_count"), p.get("data_collections")
    if not isinstance(total, int) or isinstance(total, bool) or total < 0 or not isinstance(colls, list):
        yield Failure("an END without an event_count and a list of data_collections",
                      expected="event_count: a count; data_collections: a list", actual=brief(p, 120),
                      location=ev.at("event_count", "value"))
        return
    counts: list[int] = []
    for d in colls:
        n = d.get("event_count") if isinstance(d, dict) else None
        if not isinstance(d, dict) or not isinstance(d.get("data_collection"), str) \
                or not isinstance(n, int) or isinstance(n, bool) or n < 1:
            yield Failure("a data collection of an END is not a name with a count of at least one",
                          expected='{"data_collection": "<schema>.<table>", "event_count": >= 1}',
                          actual=brief(d, 100), location=ev.at("data_collections", "value"))
            return
        counts.append(n)
    if sum(counts) != total:
        yield Failure("END's event_count is not the sum of its data collections' counts", expected=sum(counts),
                      actual=total, location=ev.at("event_count", "value"))
