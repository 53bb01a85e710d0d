"""Debezium for the delivery analysis.

An *entity* is a row: (topic, key payload). Its versions are the change events of that key in
commit order (a key-changing update is a delete of the old key and a create of the new one); a
*match* tells versions apart by op and row image (`after`, or `before`'s key columns for a
delete). Tombstones and transaction boundaries are control messages for this analysis (the
tombstone check judges tombstones). Debezium carries no commit ts of the workload's clock.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ...checks import compiled
from ...checks.delivery import Version
from ...model.events import CaptureStart, Transaction, Workload, capture_start
from ...model.table import Table
from ...model.values import Row, to_float32
from ..kit import Identified, VersionNumbers, json_digest
from . import spec
from .checker import emitted_messages
from .decoder import Message, SchemaResolver, decode
from .encoder import DebeziumEncoder
from .spec import (
    DbzOptions,
    decimal_of,
    field_type,
    json_value,
    key_columns,
    parse_zoned,
    topic_name,
)


def canonical(typ: Any, name: Any, v: Any, items: Any = None) -> Any:
    """A value in a form that does not depend on how its text was written (a JSON document's
    spacing, a float32's digits, a zoned timestamp's fraction, a variable-scale decimal's scale;
    an array's elements each so, `items` being their schema), so that the version a message
    carries can be matched exactly."""
    if v is None:
        return None
    if typ == "array" and isinstance(v, list) and isinstance(items, dict):
        return [canonical(items.get("type"), items.get("name"), x, items.get("items")) for x in v]
    if name == "io.debezium.data.Json" and isinstance(v, str):
        try:
            return ["json", json.dumps(json.loads(v), sort_keys=True)]
        except ValueError:
            return v
    if typ == "float" and isinstance(v, (int, float)) and not isinstance(v, bool):
        return ["f32", to_float32(float(v))]
    if name == "io.debezium.time.ZonedTimestamp" and isinstance(v, str):
        return ["tz", str(parse_zoned(v) or v)]
    if name == "io.debezium.data.VariableScaleDecimal":
        d = decimal_of(v)
        return ["num", str(d.normalize()) if d is not None else v]
    return v


#: A null and a column's default are one value to the match: whether the converter writes a null
#: as the default depends on the schema the connector built, and the connector reads defaults
#: (like optionality) from the live catalog when it handles a relation message, so a later
#: ALTER TABLE (a dropped column, a changed default) can take a default away or give one before
#: the rows that precede it are converted. `row.values` judges the value itself.
NULL_OR_DEFAULT = ["null-or-default"]


def _row_form(row: Any, fields: Mapping[Any, dict[str, Any]] | None) -> Any:
    """What a version is matched on: the canonical row where the message's schema says the
    types; without schemas (schemas.enable=false) nothing of the row: the op alone."""
    if fields is None or not isinstance(row, dict):
        return None
    out = {}
    for k, v in row.items():
        f = fields.get(k, {})
        c = canonical(f.get("type"), f.get("name"), v, f.get("items"))
        if v is None or ("default" in f and c == canonical(f.get("type"), f.get("name"), f["default"],
                                                           f.get("items"))):
            c = NULL_OR_DEFAULT
        out[k] = c
    return out


def _expected_forms(t: Any, after: Any, o: DbzOptions, unavailable: frozenset[str] = frozenset()
                    ) -> tuple[Any, Any]:
    """The same of the expected row: its values as the converter writes them (a null of a column
    whose default the connector carries written as that default; a value the change log lacks as
    the placeholder); and, where a value equals its column's default, the form of a message whose
    schema lacks the default (the connector built it after the column was gone from the catalog:
    then the value is written as itself), else None."""
    if after is None:
        return None, None
    out, alt = {}, {}
    for c in t.columns:
        s = spec.type_schema(c.type, o, True)
        v = spec.unavailable_value(c, o) if c.name in unavailable else json_value(c, after[c.name], o)
        form = canonical(s["type"], s.get("name"), v, s.get("items"))
        carried, default = spec.schema_default(c, o)
        name = spec.field_name(c, o)
        alt[name] = NULL_OR_DEFAULT if v is None or (c.name not in unavailable and after[c.name] is None) else form
        if v is None or (carried and form == canonical(s["type"], s.get("name"), default, s.get("items"))):
            form = NULL_OR_DEFAULT
        out[name] = form
    return out, (alt if alt != out else None)


# Versions are digested as JSON (`json_digest`): a message's values, read from JSON, are compared
# with values the suite computes, so key order and a value's Python type must not matter.


def _message_version(topic: str, prefix: Any, content: Any) -> tuple[bytes, bytes]:
    """A logical decoding message as the delivery analysis follows it: the messages of one prefix
    are one entity, each message a version of it (told apart by its content)."""
    return json_digest(["m", topic, prefix]), json_digest(["mv", content])


def expected_versions(workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Iterator[Version]:
    o = DbzOptions.from_options(options)
    plan = DebeziumEncoder()
    plan.o = o
    numbers = VersionNumbers()
    message_topic = topic_prefix + spec.message_topic(o)

    def version(t: Table, op: str, before: Row | None, after: Row | None,
                unavailable: frozenset[str] = frozenset()) -> Version | None:
        cols = key_columns(t)
        if not cols:
            return None  # a keyless table's events have no entity to follow
        topic = topic_name(o, t.database, t.name, topic_prefix)
        image = after if after is not None else before
        assert image is not None
        key = {spec.field_name(c, o): canonical(field_type(c.type, o).type, field_type(c.type, o).name,
                                                json_value(c, image[c.name], o)) if o.key_schemas
               else json_value(c, image[c.name], o) for c in cols}
        entity = json_digest(["e", topic, key])
        form, alt = _expected_forms(t, after, o, unavailable) if o.value_schemas else (None, None)
        return numbers.version(entity, json_digest(["v", op, form]), None, topic,
                               () if alt is None else (json_digest(["v", op, alt]),))

    events = workload.events
    for e in events[capture_start(events):]:  # the connector sees nothing before its start
        if isinstance(e, CaptureStart):
            if o.snapshots:
                for t, rows in spec.snapshot_order(e.tables):
                    for row in rows:
                        v = version(t, "r", None, row)
                        if v is not None:
                            yield v
            continue
        if not isinstance(e, Transaction) or not o.streams:  # initial_only streams nothing
            continue
        for m in emitted_messages(e):
            entity, mv = _message_version(message_topic, m.prefix, spec.binary_text(m.content, o))
            yield numbers.version(entity, mv, None, message_topic)
        for ch in e.changes:
            for op, before, after in plan.events_of(ch):
                v = version(ch.table, op, before, after, plan.unavailable_of(ch, op))
                if v is not None:
                    yield v


def _fields(schema: Any, part: str) -> dict[Any, dict[str, Any]] | None:
    if not isinstance(schema, dict):
        return None
    for f in schema.get("fields") or []:
        if isinstance(f, dict) and f.get("field") == part:
            return {c.get("field"): c for c in f.get("fields") or [] if isinstance(c, dict)}
    return None


def _field_types(struct: dict[str, Any]) -> dict[Any, tuple[Any, Any]]:
    return {c.get("field"): (c.get("type"), c.get("name")) for c in struct.get("fields") or [] if isinstance(c, dict)}


def _key_form(payload: Any, schema: Any, types: dict[Any, tuple[Any, Any]] | None = None) -> Any:
    if not isinstance(schema, dict) or not isinstance(payload, dict):
        return payload
    if types is None:
        types = _field_types(schema)
    return {k: canonical(*types.get(k, (None, None)), v) for k, v in payload.items()}


_ASK = object()


def message_identity(o: DbzOptions, topic: str, key: bytes | None, value: bytes | None, m: Message,
                     after_fields: Any = _ASK, key_types: Any = _ASK) -> Identified:
    """The identity of a decoded message (`identifier`'s answer). The checker's fast path gives
    the schema-level parts it worked out once per kind: `after_fields` (`_fields` of the value
    schema's `after`) and `key_types` (`_field_types` of the key schema)."""
    if value is None or topic.endswith(o.transaction_topic):
        return None  # a tombstone or a transaction boundary
    if not m.key.ok or not m.value.ok or m.envelope is None or not isinstance(m.key.payload, dict):
        return (None, None, None) if key is not None else None
    if m.op == "m" and isinstance(m.envelope.get("message"), dict):
        block = m.envelope["message"]
        entity, version = _message_version(topic, block.get("prefix"), block.get("content"))
        return entity, version, None
    types = None if key_types is _ASK else key_types
    entity = json_digest(["e", topic, _key_form(m.key.payload, m.key.schema, types)])
    after = m.envelope.get("after")
    fields = _fields(m.value.schema, "after") if after_fields is _ASK else after_fields
    return entity, json_digest(["v", m.op, _row_form(after, fields)]), None


def identifier(options: Mapping[str, str], registry: Any = None
               ) -> Callable[[str, bytes | None, bytes | None], Identified]:
    o = DbzOptions.from_options(options)
    resolver = SchemaResolver(registry)
    # With the fast path on, the checker decodes through the schema prefix memo: so does this, so
    # that it reads the parts the checker decoded (the decoder keeps the last few).
    quick = compiled.enabled() and not (o.key_avro or o.value_avro)

    def identify(topic: str, key: bytes | None, value: bytes | None) -> Identified:
        if value is None or topic.endswith(o.transaction_topic):
            return None  # a tombstone or a transaction boundary
        m = decode(key, value, key_schemas=o.key_schemas, value_schemas=o.value_schemas, key_avro=o.key_avro,
                   value_avro=o.value_avro, resolver=resolver, quick=quick)
        return message_identity(o, topic, key, value, m)

    return identify
