"""Debezium's PostgreSQL connector through Kafka Connect's JSON converter: the rules as data.

Sources (cited by the checks): Debezium's PostgreSQL connector documentation ("Data change
events", "Data type mappings", "Transaction metadata", connector properties), Kafka Connect's
JsonConverter, and the output of the real connector (Debezium 3.6.3, pgoutput) captured here in
`tests/fixtures/debezium/` from generated SQL. Where the documentation and the real connector
disagree the checks follow the connector and say so (`docs_vs_code`).

What is covered: the key and the envelope (`before`, `after`, `source`, `op`, `ts_ms`/`ts_us`/
`ts_ns`, `transaction`), the PostgreSQL `source` block, `before` per REPLICA IDENTITY, tombstones,
key-changing updates (delete + tombstone + create), topic naming, the transaction topic, and the
type mapping of the column kinds in `KINDS` under `decimal.handling.mode`, `time.precision.mode`
and `binary.handling.mode`. Not yet: the Avro converter, arrays, intervals, BIT, hstore, snapshots
(`op` r), TRUNCATE (`op` t, skipped by Debezium's default `skipped.operations=t`; the PostgreSQL
connector has skipped it by default since it could emit it: `truncate.handling.mode=skip` from 1.4,
DBZ-2382, then `skipped.operations=t` from 1.9, DBZ-4419 — 2.0's DBZ-5497 moved that default to the
other connectors; docs/regressions.md).
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import functools
import json
import math
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...model import values
from ...model.table import Column, DefaultKind, ReplicaIdentity, Table
from ...model.types import Kind, SqlType
from ..base import REGISTRY_COMPATIBILITY, OptionSpec, Profile
from .connect_avro import adjust

PROTOCOL = "debezium"
CONNECTOR = "postgresql"
DOCS = "Debezium PostgreSQL connector docs"

# The column kinds whose mapping the reference and the checks know (a workload keeps to these).
KINDS: tuple[Kind, ...] = (
    Kind.BOOLEAN, Kind.SMALLINT, Kind.INT, Kind.BIGINT, Kind.FLOAT, Kind.DOUBLE, Kind.DECIMAL, Kind.NUMERIC,
    Kind.CHAR, Kind.VARCHAR, Kind.TEXT, Kind.BYTEA, Kind.DATE, Kind.TIME, Kind.DATETIME, Kind.TIMESTAMPTZ,
    Kind.JSON, Kind.JSONB, Kind.UUID, Kind.ENUM, Kind.BIT, Kind.INTERVAL, Kind.ARRAY, Kind.MONEY, Kind.INET,
    Kind.CIDR, Kind.MACADDR, Kind.MACADDR8, Kind.TIMETZ, Kind.VARBIT, Kind.HSTORE,
)

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
AVRO_CONVERTER = "io.confluent.connect.avro.AvroConverter"
CONNECTOR_PROPERTY = "connector property"
CONVERTER_PROPERTY = "converter property"

#: snapshot.mode values the model knows (3.6.3 accepts always, initial_only, configuration_based,
#: when_needed, initial, custom, no_data). With in-memory offsets a first start is a start without
#: offsets, so always and when_needed snapshot as initial does.
SNAPSHOT_MODES = ("initial", "no_data", "initial_only", "always", "when_needed")
#: Modes that read the existing rows first.
SNAPSHOTTING = frozenset({"initial", "initial_only", "always", "when_needed"})

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("topic.prefix", "cdc", None, kind=CONNECTOR_PROPERTY,
               doc="The connector's logical name: topics are <topic.prefix>.<schema>.<table>, source.name is it."),
    OptionSpec("decimal.handling.mode", "precise", ("precise", "double", "string"), matrix=True,
               kind=CONNECTOR_PROPERTY, short="decimal",
               doc="NUMERIC/DECIMAL as Connect Decimal bytes (precise), a double, or a plain string."),
    OptionSpec("time.precision.mode", "adaptive", ("adaptive", "adaptive_time_microseconds", "connect", "isostring",
                                                    "microseconds", "nanoseconds"),
               kind=CONNECTOR_PROPERTY, short="time",
               doc="Temporal values at the column's precision (adaptive), TIME always in microseconds, Kafka "
                   "Connect's own millisecond types (connect), ISO-8601 text (isostring), or every TIME and "
                   "TIMESTAMP in microseconds or nanoseconds (dates stay days)."),
    OptionSpec("interval.handling.mode", "numeric", ("numeric", "string"), kind=CONNECTOR_PROPERTY,
               short="interval",
               doc="interval as microseconds (io.debezium.time.MicroDuration, a month being 30.4375 days) or as "
                   "ISO-8601 text (io.debezium.time.Interval)."),
    OptionSpec("hstore.handling.mode", "json", ("json", "map"), kind=CONNECTOR_PROPERTY, short="hstore",
               doc="hstore as JSON text (io.debezium.data.Json) or as a Connect map of strings to optional strings."),
    OptionSpec("binary.handling.mode", "bytes", ("bytes", "base64", "base64-url-safe", "hex"),
               kind=CONNECTOR_PROPERTY, short="binary",
               doc="bytea as bytes (base64 in JSON), or as a base64 / base64-url-safe / hex string."),
    OptionSpec("snapshot.mode", "initial", SNAPSHOT_MODES, kind=CONNECTOR_PROPERTY, short="snapshot",
               doc="Where the connector starts on a database that already holds rows: read them first as op r "
                   "(initial, always, when_needed; initial_only then stops) or not (no_data). `never` is refused "
                   "by Debezium 3.x; configuration_based and custom are not modelled."),
    OptionSpec("tombstones.on.delete", "true", ("true", "false"), kind=CONNECTOR_PROPERTY, short="tombstones",
               doc="A delete event is followed by a tombstone (same key, null value)."),
    OptionSpec("provide.transaction.metadata", "false", ("false", "true"), matrix=True, kind=CONNECTOR_PROPERTY,
               short="tx", doc="BEGIN/END events on <topic.prefix>.transaction and a transaction block in events."),
    OptionSpec("value.converter.schemas.enable", "true", ("true", "false"), matrix=True, kind=CONVERTER_PROPERTY,
               short="value-schemas", doc="JsonConverter: values as {schema, payload} (true) or the payload alone."),
    OptionSpec("value.converter.replace.null.with.default", "true", ("true", "false"), kind=CONVERTER_PROPERTY,
               short="null-default",
               doc="JsonConverter (Kafka 3.5+): a null whose schema field has a default is written as the default."),
    OptionSpec("key.converter.schemas.enable", "true", ("true", "false"), kind=CONVERTER_PROPERTY,
               short="key-schemas", doc="JsonConverter: keys as {schema, payload} (true) or the payload alone."),
    OptionSpec("value.converter", JSON_CONVERTER, (JSON_CONVERTER, AVRO_CONVERTER), kind=CONVERTER_PROPERTY,
               short="value",
               doc="Kafka Connect's JSON converter, or Confluent's Avro converter with the Schema Registry "
                   "(subjects <topic>-value, Confluent framing)."),
    OptionSpec("key.converter", JSON_CONVERTER, (JSON_CONVERTER, AVRO_CONVERTER), kind=CONVERTER_PROPERTY,
               short="key", doc="The same for keys (subjects <topic>-key)."),
    OptionSpec("schema.name.adjustment.mode", "none", ("none", "avro", "avro_unicode"), kind=CONNECTOR_PROPERTY,
               short="schema-names",
               doc="Schema names made valid Avro: characters Avro refuses become _ (avro) or _uXXXX "
                   "(avro_unicode). Debezium 1.x adjusted them as avro by default (an option since 1.9, "
                   "DBZ-3535); 2.0 made none the default (https://issues.redhat.com/browse/DBZ-5541; "
                   "docs/regressions.md)."),
    OptionSpec("field.name.adjustment.mode", "none", ("none", "avro", "avro_unicode"), kind=CONNECTOR_PROPERTY,
               short="field-names",
               doc="Field (column) names made valid Avro, likewise; Avro refuses names such as `x-1` or `名前`."),
    REGISTRY_COMPATIBILITY,
)

#: `--option profile=avro`: Avro keys and values, names adjusted so that every generated name is
#: valid Avro and no two columns of a table meet (Debezium's advice for non-Latin names).
PROFILES: tuple[Profile, ...] = (
    Profile("json", {}, "Kafka Connect's JSON converter (the default)."),
    Profile("avro", {"value.converter": AVRO_CONVERTER, "key.converter": AVRO_CONVERTER,
                     "schema.name.adjustment.mode": "avro_unicode", "field.name.adjustment.mode": "avro_unicode"},
            "Confluent's Avro converter for keys and values with the Schema Registry; schema and field names "
            "adjusted with avro_unicode."),
)


@dataclass(frozen=True, slots=True)
class DbzOptions:
    prefix: str = "cdc"
    decimal_mode: str = "precise"
    time_mode: str = "adaptive"
    binary_mode: str = "bytes"
    tombstones: bool = True
    transactions: bool = False
    value_schemas: bool = True
    key_schemas: bool = True
    null_to_default: bool = True
    value_avro: bool = False
    key_avro: bool = False
    schema_adjust: str = "none"
    field_adjust: str = "none"
    snapshot_mode: str = "initial"
    interval_mode: str = "numeric"
    hstore_mode: str = "json"

    @property
    def snapshots(self) -> bool:
        """The connector reads the rows it finds when it starts (op r)."""
        return self.snapshot_mode in SNAPSHOTTING

    @property
    def streams(self) -> bool:
        """The connector streams changes after it started (all but initial_only)."""
        return self.snapshot_mode != "initial_only"

    @classmethod
    def from_options(cls, o: Mapping[str, str]) -> DbzOptions:
        return _parse(tuple(sorted(o.items())))

    @property
    def transaction_topic(self) -> str:
        return f"{self.prefix}.transaction"


@functools.lru_cache(maxsize=64)
def _parse(items: tuple[tuple[str, str], ...]) -> DbzOptions:
    o = dict(items)
    return DbzOptions(prefix=o.get("topic.prefix", "cdc"), decimal_mode=o.get("decimal.handling.mode", "precise"),
                      time_mode=o.get("time.precision.mode", "adaptive"),
                      binary_mode=o.get("binary.handling.mode", "bytes"),
                      tombstones=o.get("tombstones.on.delete", "true") == "true",
                      transactions=o.get("provide.transaction.metadata", "false") == "true",
                      # The Avro converter always carries the schema (in the registry).
                      value_schemas=o.get("value.converter.schemas.enable", "true") == "true"
                      or o.get("value.converter") == AVRO_CONVERTER,
                      key_schemas=o.get("key.converter.schemas.enable", "true") == "true"
                      or o.get("key.converter") == AVRO_CONVERTER,
                      # Avro: Connect's Struct.get gives a null field's default (AvroData 7.0 writes it).
                      null_to_default=o.get("value.converter.replace.null.with.default", "true") == "true"
                      or o.get("value.converter") == AVRO_CONVERTER,
                      value_avro=o.get("value.converter") == AVRO_CONVERTER,
                      key_avro=o.get("key.converter") == AVRO_CONVERTER,
                      schema_adjust=o.get("schema.name.adjustment.mode", "none"),
                      field_adjust=o.get("field.name.adjustment.mode", "none"),
                      snapshot_mode=o.get("snapshot.mode", "initial"),
                      interval_mode=o.get("interval.handling.mode", "numeric"),
                      hstore_mode=o.get("hstore.handling.mode", "json"))


# -- topics -----------------------------------------------------------------------------------

_INVALID_TOPIC_CHAR = re.compile(r"[^A-Za-z0-9._\-]")
#: Kafka's longest topic name (TopicNamingStrategy.MAX_NAME_LENGTH): longer names are cut.
MAX_TOPIC_LENGTH = 249


def _topic_replacement(m: re.Match[str]) -> str:
    # One `_` per UTF-16 unit: Java walks the name with charAt, so a character beyond the Basic
    # Multilingual Plane (a surrogate pair) becomes two (`t😀` -> `t__`, seen with 3.6.3).
    return "__" if ord(m.group()) > 0xFFFF else "_"


def sanitized_topic(name: str) -> str:
    """AbstractTopicNamingStrategy.sanitizedTopicName: every UTF-16 unit outside Kafka's topic
    alphabet (`A-Za-z0-9._-`) becomes `_`, the result is cut to 249 units, and `.` / `..` become
    `_` / `__`."""
    out = _INVALID_TOPIC_CHAR.sub(_topic_replacement, name)
    if len(out) > MAX_TOPIC_LENGTH:
        return out[:MAX_TOPIC_LENGTH]
    return {".": "_", "..": "__"}.get(out, out)


def topic_name(o: DbzOptions, schema: str, table: str, prefix: str = "") -> str:
    """<topic.prefix>.<schema>.<table> as the connector's topic naming strategy sanitises it
    (`sanitized_topic`: `tbl_ü` -> `tbl__`, `t😀` -> `t__`)."""
    return prefix + sanitized_topic(f"{o.prefix}.{schema}.{table}")


# A run's own topic prefix (`harness/stages.py: RunSpec.prefix`): records a run dumped carry it.
_RUN_PREFIX = re.compile(r"^[a-z0-9]*c\d+w\d+-")


def logical_topic(topic: str, o: DbzOptions, run_prefix: str = "") -> str:
    """The topic as the connector named it: without the run's prefix (known in a run; in a
    capture, recognised when what follows it is the connector's own `<topic.prefix>.`)."""
    if run_prefix and topic.startswith(run_prefix):
        return topic[len(run_prefix):]
    m = _RUN_PREFIX.match(topic)
    if m is not None and topic[m.end():].startswith(o.prefix + "."):
        return topic[m.end():]
    return topic


def data_collection(table: Table) -> str:
    return f"{table.database}.{table.name}"


# -- keys and old images -------------------------------------------------------------------------

def key_columns(t: Table) -> tuple[Column, ...]:
    """The primary key; without one, the first unique index by name (JDBC's getIndexInfo order;
    PostgreSQL compares names bytewise): the connector "defaults to unique indices" whatever the
    REPLICA IDENTITY (seen with FULL and USING INDEX, and picking uk_1_… over uk_UPPER_… on a
    table with both). None: no key (a null Kafka key)."""
    pk = t.primary_key
    ix = pk
    if ix is None:
        uniques = sorted((i for i in t.indexes if i.is_unique), key=lambda i: i.name.encode("utf-8"))
        ix = uniques[0] if uniques else None
    if ix is None:
        return ()
    names = set(ix.columns)
    return tuple(c for c in t.columns if c.name in names)


def key_is_known(t: Table) -> bool:
    """Whether `key.fields` judges the key: a primary key, or a single unique index (the choice
    among several rests on one observation, good enough to pair messages, not to fail one)."""
    return t.primary_key is not None or sum(1 for ix in t.indexes if ix.is_unique) <= 1


def full_before(t: Table) -> bool:
    """REPLICA IDENTITY FULL: updates and deletes carry the whole old row."""
    return t.replica_identity is ReplicaIdentity.FULL


# -- Connect schemas --------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class FieldType:
    """A column's Connect schema: type, logical name, version, parameters."""

    type: str
    name: str | None = None
    version: int | None = None
    parameters: tuple[tuple[str, str], ...] = ()


#: The kinds whose Connect schema no option changes.
_FIXED_TYPES = {
    Kind.BOOLEAN: FieldType("boolean"), Kind.SMALLINT: FieldType("int16"), Kind.INT: FieldType("int32"),
    Kind.BIGINT: FieldType("int64"), Kind.FLOAT: FieldType("float"), Kind.DOUBLE: FieldType("double"),
    Kind.CHAR: FieldType("string"), Kind.VARCHAR: FieldType("string"), Kind.TEXT: FieldType("string"),
    Kind.TIMESTAMPTZ: FieldType("string", "io.debezium.time.ZonedTimestamp", 1),
    Kind.TIMETZ: FieldType("string", "io.debezium.time.ZonedTime", 1),
    Kind.UUID: FieldType("string", "io.debezium.data.Uuid", 1),
}
#: DATE, TIME and TIMESTAMP under the time.precision.mode values that fix their Connect schema
#: whatever the column's precision (the others: `field_type`).
_TEMPORAL_BY_MODE = {
    (Kind.DATE, "connect"): FieldType("int32", "org.apache.kafka.connect.data.Date", 1),
    (Kind.DATE, "isostring"): FieldType("string", "io.debezium.time.IsoDate", 1),
    (Kind.TIME, "connect"): FieldType("int32", "org.apache.kafka.connect.data.Time", 1),
    (Kind.TIME, "isostring"): FieldType("string", "io.debezium.time.IsoTime", 1),
    (Kind.TIME, "nanoseconds"): FieldType("int64", "io.debezium.time.NanoTime", 1),
    (Kind.DATETIME, "connect"): FieldType("int64", "org.apache.kafka.connect.data.Timestamp", 1),
    (Kind.DATETIME, "isostring"): FieldType("string", "io.debezium.time.IsoTimestamp", 1),
    (Kind.DATETIME, "nanoseconds"): FieldType("int64", "io.debezium.time.NanoTimestamp", 1),
}


def field_type(t: SqlType, o: DbzOptions) -> FieldType:
    k = t.kind
    fixed = _FIXED_TYPES.get(k)
    if fixed is not None:
        return fixed
    if k in (Kind.DECIMAL, Kind.NUMERIC):
        if o.decimal_mode == "double":
            return FieldType("double")
        if o.decimal_mode == "string":
            return FieldType("string")
        if k is Kind.NUMERIC:
            return FieldType("struct", "io.debezium.data.VariableScaleDecimal", 1)
        return FieldType("bytes", "org.apache.kafka.connect.data.Decimal", 1,
                         (("scale", str(t.scale)), ("connect.decimal.precision", str(t.precision))))
    if k is Kind.BYTEA:
        return FieldType("bytes") if o.binary_mode == "bytes" else FieldType("string")
    if k in (Kind.DATE, Kind.TIME, Kind.DATETIME):
        fixed = _TEMPORAL_BY_MODE.get((k, o.time_mode))
        if fixed is not None:
            return fixed
        millis = (t.fsp if t.fsp is not None else 6) <= 3
        if k is Kind.DATE:
            return FieldType("int32", "io.debezium.time.Date", 1)
        if k is Kind.TIME:
            if o.time_mode == "adaptive" and millis:
                return FieldType("int32", "io.debezium.time.Time", 1)
            return FieldType("int64", "io.debezium.time.MicroTime", 1)
        if o.time_mode == "microseconds" or not millis:
            return FieldType("int64", "io.debezium.time.MicroTimestamp", 1)
        return FieldType("int64", "io.debezium.time.Timestamp", 1)
    if k in (Kind.JSON, Kind.JSONB) or (k is Kind.HSTORE and o.hstore_mode != "map"):
        return FieldType("string", "io.debezium.data.Json", 1)
    if k is Kind.HSTORE:
        return FieldType("map")  # keys: strings, values: optional strings
    if k is Kind.ENUM:
        return FieldType("string", "io.debezium.data.Enum", 1, (("allowed", ",".join(t.elements or ())),))
    if k is Kind.MONEY:
        # A Decimal of the monetary scale (2), no precision (PostgresValueConverter's money schema).
        if o.decimal_mode == "double":
            return FieldType("double")
        if o.decimal_mode == "string":
            return FieldType("string")
        return FieldType("bytes", "org.apache.kafka.connect.data.Decimal", 1, (("scale", "2"),))
    if k in (Kind.INET, Kind.CIDR, Kind.MACADDR, Kind.MACADDR8):
        return FieldType("string")  # the server's text
    if k in (Kind.BIT, Kind.VARBIT):
        if t.length == 1:
            return FieldType("boolean")
        return FieldType("bytes", "io.debezium.data.Bits", 1, (("length", str(t.length)),))
    if k is Kind.INTERVAL:
        if o.interval_mode == "string":
            return FieldType("string", "io.debezium.time.Interval", 1)
        return FieldType("int64", "io.debezium.time.MicroDuration", 1)
    if k is Kind.ARRAY:
        return FieldType("array")
    raise ValueError(f"{k} is not a kind this protocol maps")


def type_schema(t: SqlType, o: DbzOptions, optional: bool) -> dict[str, Any]:
    """A type's Connect schema as the JSON converter writes it (without field name or default); an
    array's items are its element's, optional."""
    ft = field_type(t, o)
    out: dict[str, Any] = {"type": ft.type}
    if t.kind is Kind.ARRAY and t.element is not None:
        out["items"] = type_schema(t.element, o, True)
    if ft.type == "map":
        out["keys"] = {"type": "string", "optional": False}
        out["values"] = {"type": "string", "optional": True}
    out["optional"] = optional
    if ft.name is not None:
        out["name"] = ft.name
    if ft.version is not None:
        out["version"] = ft.version
    if ft.parameters:
        out["parameters"] = dict(ft.parameters)
    if ft.name == "io.debezium.data.VariableScaleDecimal":
        out["fields"] = [{"type": "int32", "optional": False, "field": "scale"},
                         {"type": "bytes", "optional": False, "field": "value"}]
        out["doc"] = "Variable scaled decimal"
    return out


def field_schema(c: Column, o: DbzOptions, *, optional: bool | None = None) -> dict[str, Any]:
    out = type_schema(c.type, o, c.nullable if optional is None else optional)
    carried, default = schema_default(c, o)
    if carried:
        out["default"] = default
    out["field"] = field_name(c, o)
    return out


def field_name(c: Column, o: DbzOptions) -> str:
    """The column's field name: its name, adjusted by `field.name.adjustment.mode`."""
    return adjust(c.name, o.field_adjust, field=True) if o.field_adjust != "none" else c.name


def schema_name(topic: str, suffix: str, o: DbzOptions) -> str:
    """`<topic>.<suffix>` adjusted by `schema.name.adjustment.mode`."""
    name = f"{topic}.{suffix}"
    return adjust(name, o.schema_adjust, field=False) if o.schema_adjust != "none" else name


def row_schema(t: Table, topic: str, o: DbzOptions, *, field: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "struct", "fields": [field_schema(c, o) for c in t.columns],
                           "optional": True, "name": schema_name(topic, "Value", o)}
    if field is not None:
        out["field"] = field
    return out


def key_schema(t: Table, topic: str, o: DbzOptions) -> dict[str, Any]:
    """Each key field optional as its column is (TableSchemaBuilder.addField): a primary key's
    never are, a unique index's on a nullable column are, and its null is written (real 3.6.3,
    seed issue27 shard 30: `"-lead"`, numeric NULL under UNIQUE, no primary key)."""
    return {"type": "struct", "fields": [field_schema(c, o) for c in key_columns(t)],
            "optional": False, "name": schema_name(topic, "Key", o)}


SOURCE_FIELDS: tuple[tuple[str, str, bool], ...] = (
    ("version", "string", False), ("connector", "string", False), ("name", "string", False),
    ("ts_ms", "int64", False), ("snapshot", "string", True), ("db", "string", False),
    ("sequence", "string", True), ("ts_us", "int64", True), ("ts_ns", "int64", True),
    ("schema", "string", False), ("table", "string", False), ("txId", "int64", True), ("lsn", "int64", True),
    ("xmin", "int64", True), ("origin", "string", True), ("origin_lsn", "int64", True),
)
def snapshot_order(tables: Any) -> list[Any]:
    """The tables a snapshot reads, in its order: by `<schema>.<table>` as Java compares strings
    (UTF-16 code units: Debezium sorts the captured TableIds); each row as the snapshot reads it
    (through JDBC: a date's infinity is `ReadInfinity`)."""
    return sorted(((t, [_read_row(t, r) for r in rows]) for t, rows in tables),
                  key=lambda tr: f"{tr[0].database}.{tr[0].name}".encode("utf-16-be"))


@dataclass(frozen=True, slots=True, order=True)
class ReadInfinity(values.Infinity):
    """An infinity that pgjdbc read (a snapshot's row, an array element) rather than the connector
    decoding pgoutput's text: a date's reads as pgjdbc's infinity constant (a Long.MAX_VALUE or
    MIN_VALUE of milliseconds) turned into days, far from the text decoder's (real 3.6.3,
    snapshot-special-*.records.jsonl); a timestamp's is the same either way."""


def _read_row(t: Any, row: Any) -> Any:
    dates = [c.name for c in t.columns if c.type.kind is Kind.DATE and isinstance(row.get(c.name), values.Infinity)]
    if not dates:
        return row
    return {**row, **{n: ReadInfinity(row[n].positive) for n in dates}}


def snapshot_markers(sizes: list[int]) -> list[list[str]]:
    """`source.snapshot` of each row of each table, the tables in snapshot order with their row
    counts (RelationalSnapshotChangeEventSource: last-in-snapshot > first-in-snapshot >
    last-in-table > first-in-table > true; `first` only if the first table has rows; the last
    record emitted is always `last`, held back until the snapshot completes)."""
    out = []
    for ti, n in enumerate(sizes):
        marks = []
        for ri in range(n):
            if ti == 0 and ri == 0:
                mark = "first"
            elif ri == n - 1:
                mark = "last_in_data_collection"
            elif ri == 0:
                mark = "first_in_data_collection"
            else:
                mark = "true"
            marks.append(mark)
        out.append(marks)
    for marks in reversed(out):
        if marks:
            marks[-1] = "last"
            break
    return out


#: The markers of snapshot records (op r); `false` is a streamed change's, `incremental` an
#: incremental snapshot's.
SNAPSHOT_RECORD_VALUES = ("first", "first_in_data_collection", "true", "last_in_data_collection", "last")

SNAPSHOT_VALUES = ("true", "first", "first_in_data_collection", "last_in_data_collection", "last", "false",
                   "incremental")
REQUIRED_SOURCE = tuple(n for n, _t, optional in SOURCE_FIELDS if not optional)
OPS = ("c", "u", "d", "r", "t", "m")
ENVELOPE_FIELDS = ("before", "after", "source", "transaction", "op", "ts_ms", "ts_us", "ts_ns")


def source_schema() -> dict[str, Any]:
    fields: list[dict[str, Any]] = []
    for name, typ, optional in SOURCE_FIELDS:
        f: dict[str, Any] = {"type": typ, "optional": optional, "field": name}
        if name == "snapshot":
            f.update(name="io.debezium.data.Enum", version=1, parameters={"allowed": ",".join(SNAPSHOT_VALUES)},
                     default="false")
            f["field"] = "snapshot"
        fields.append(f)
    return {"type": "struct", "fields": fields, "optional": False, "name": "io.debezium.connector.postgresql.Source",
            "version": 1, "field": "source"}


TRANSACTION_BLOCK_SCHEMA = {"type": "struct", "fields": [
    {"type": "string", "optional": False, "field": "id"},
    {"type": "int64", "optional": False, "field": "total_order"},
    {"type": "int64", "optional": False, "field": "data_collection_order"}],
    "optional": True, "name": "event.block", "version": 1, "field": "transaction"}


def envelope_schema(t: Table, topic: str, o: DbzOptions) -> dict[str, Any]:
    return {"type": "struct", "fields": [
        row_schema(t, topic, o, field="before"), row_schema(t, topic, o, field="after"), source_schema(),
        TRANSACTION_BLOCK_SCHEMA,
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        {"type": "int64", "optional": True, "field": "ts_us"},
        {"type": "int64", "optional": True, "field": "ts_ns"}],
        "optional": False, "name": schema_name(topic, "Envelope", o), "version": 2}


# -- logical decoding messages (LogicalDecodingMessageMonitor, PostgresSchemaFactory) ------------

MESSAGE_TOPIC_SUFFIX = "message"
MESSAGE_KEY_NAME = "io.debezium.connector.postgresql.MessageKey"
MESSAGE_VALUE_NAME = "io.debezium.connector.postgresql.MessageValue"
MESSAGE_BLOCK_NAME = "io.debezium.connector.postgresql.Message"
#: A message's own data collection in END's data_collections: the id object's default
#: toString, a new object per message (so one entry of count 1 per message; 3.6.3).
MESSAGE_COLLECTION = re.compile(
    r"io\.debezium\.connector\.postgresql\.LogicalDecodingMessageMonitor\$LogicalDecodingMessageId@[0-9a-f]+")


def message_topic(o: DbzOptions) -> str:
    """`<topic.prefix>.message`, whatever the table topics are (not sanitised)."""
    return f"{o.prefix}.{MESSAGE_TOPIC_SUFFIX}"


def message_key_schema(o: DbzOptions) -> dict[str, Any]:
    return {"type": "struct", "fields": [{"type": "string", "optional": True, "field": "prefix"}],
            "optional": False, "name": adjusted_name(MESSAGE_KEY_NAME, o), "version": 1}


def _content_type(o: DbzOptions) -> str:
    return "bytes" if o.binary_mode == "bytes" else "string"


def message_value_schema(o: DbzOptions) -> dict[str, Any]:
    block = {"type": "struct", "fields": [{"type": "string", "optional": True, "field": "prefix"},
                                          {"type": _content_type(o), "optional": True, "field": "content"}],
             "optional": False, "name": adjusted_name(MESSAGE_BLOCK_NAME, o), "version": 1, "field": "message"}
    return {"type": "struct", "fields": [
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"},
        source_schema(), TRANSACTION_BLOCK_SCHEMA, block],
        "optional": False, "name": adjusted_name(MESSAGE_VALUE_NAME, o), "version": 1}


MESSAGE_FIELDS = ("op", "ts_ms", "source", "transaction", "message")


def binary_text(b: bytes, o: DbzOptions) -> str:
    """Bytes as `binary.handling.mode` writes them in JSON: base64 (bytes mode, through the JSON
    converter, and base64 mode), URL-safe base64, or lower-case hex."""
    if o.binary_mode == "hex":
        return b.hex()
    if o.binary_mode == "base64-url-safe":
        return base64.urlsafe_b64encode(b).decode("ascii")
    return b64(b)


def binary_content(v: Any, o: DbzOptions) -> bytes | None:
    """The bytes a `binary_text` stands for (None: not such a text)."""
    if not isinstance(v, str):
        return None
    try:
        if o.binary_mode == "hex":
            return bytes.fromhex(v) if re.fullmatch(r"(?:[0-9a-f]{2})*", v) else None
        if o.binary_mode == "base64-url-safe":
            return base64.urlsafe_b64decode(v) if re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", v) else None
        return base64.b64decode(v, validate=True)
    except ValueError:
        return None


def adjusted_name(name: str, o: DbzOptions) -> str:
    """A fixed schema name as `schema.name.adjustment.mode` adjusts it."""
    return adjust(name, o.schema_adjust, field=False) if o.schema_adjust != "none" else name


TX_KEY_SCHEMA = {"type": "struct", "fields": [{"type": "string", "optional": False, "field": "id"}],
                 "optional": False, "name": "io.debezium.connector.common.TransactionMetadataKey", "version": 1}
TX_VALUE_SCHEMA = {"type": "struct", "fields": [
    {"type": "string", "optional": False, "field": "status"},
    {"type": "string", "optional": False, "field": "id"},
    {"type": "int64", "optional": True, "field": "event_count"},
    {"type": "array", "items": {"type": "struct", "fields": [
        {"type": "string", "optional": False, "field": "data_collection"},
        {"type": "int64", "optional": False, "field": "event_count"}],
        "optional": True, "name": "event.collection", "version": 1}, "optional": True, "field": "data_collections"},
    {"type": "int64", "optional": False, "field": "ts_ms"}],
    "optional": False, "name": "io.debezium.connector.common.TransactionMetadataValue", "version": 1}


# -- values -----------------------------------------------------------------------------------

_EPOCH = dt.date(1970, 1, 1)


def _days(d: values.Date) -> int:
    return (dt.date(d.year, d.month, d.day) - _EPOCH).days


def _micros(v: values.DateTime) -> int:
    return _days(values.Date(v.year, v.month, v.day)) * 86_400_000_000 + (
        (v.hour * 3600 + v.minute * 60 + v.second) * 1_000_000 + v.microsecond)


def _time_micros(v: values.Time) -> int:
    us = (v.hours * 3600 + v.minutes * 60 + v.seconds) * 1_000_000 + v.microsecond
    return -us if v.negative else us


def _java_clock(us: int) -> str:
    """HH:MM:SS as DateTimeFormatter.ISO_LOCAL_TIME prints it: the fraction with as few digits as
    it needs (`.3`, `.789`, `.08048`), none for a whole second (real 3.6.3: `…09.3Z`)."""
    secs, frac = divmod(us, 1_000_000)
    h, rest = divmod(secs, 3600)
    text = f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}"
    if frac:
        text += "." + f"{frac:06d}".rstrip("0")
    return text


# What real 3.6.3 writes for PostgreSQL's infinities (pgjdbc's PGStatement constants read as dates and
# timestamps): `+` then `-`, per field type (types-*.records.jsonl, s1.spec); a date pgjdbc read
# itself (`ReadInfinity`: a snapshot's row, an array element) apart (snapshot-special-*.records.jsonl).
_READ_DATE_INFINITY = {
    "io.debezium.time.Date": (-622191234, -625821272),
    "org.apache.kafka.connect.data.Date": (-622191234, -625821272),
    "io.debezium.time.IsoDate": ("+292278994-08-16Z", "+292269055-12-02Z"),
}
_INFINITY = {
    "io.debezium.time.Date": (-2147472692, -2147472691),
    "org.apache.kafka.connect.data.Date": (-2147472692, -2147472691),
    "io.debezium.time.IsoDate": ("-5877611-06-21Z", "-5877611-06-22Z"),
    "io.debezium.time.MicroTimestamp": (9223372036825200000, -9223372036832400000),
    "io.debezium.time.Timestamp": (9223372036825200, -9223372036832400),
    "org.apache.kafka.connect.data.Timestamp": (9223372036825200, -9223372036832400),
    "io.debezium.time.IsoTimestamp": ("+294247-01-10T04:00:25.2Z", "-290308-12-21T19:59:27.6Z"),
    "io.debezium.time.NanoTimestamp": ((1 << 63) - 1, -(1 << 63)),
    "io.debezium.time.ZonedTimestamp": ("infinity", "-infinity"),
}


def _infinity(t: SqlType, v: values.Infinity, o: DbzOptions) -> Any:
    name = field_type(t, o).name
    if name not in _INFINITY:
        raise ValueError(f"{t.kind} holds no infinity")
    if isinstance(v, ReadInfinity) and name in _READ_DATE_INFINITY:
        return _READ_DATE_INFINITY[name][0 if v.positive else 1]
    return _INFINITY[name][0 if v.positive else 1]


def _unscaled_bytes(n: int) -> bytes:
    """Two's complement, big-endian, minimal length (java.math.BigInteger.toByteArray)."""
    length = max(1, (n + (n < 0)).bit_length() // 8 + 1)
    return n.to_bytes(length, "big", signed=True)


def _unscaled(v: decimal.Decimal, scale: int) -> int:
    """v * 10^scale exactly (no context rounding: DECIMAL(65, 30) has more digits than the
    default context's 28), truncated as a stored value already is to its scale."""
    sign, digits, exp = v.as_tuple()
    assert isinstance(exp, int)
    n = int("".join(map(str, digits)) or "0")
    shift = exp + scale
    n = n * 10**shift if shift >= 0 else n // 10 ** (-shift)
    return int(-n if sign else n)


def decimal_of(obj: Any) -> decimal.Decimal | None:
    """The number a VariableScaleDecimal {scale, value} stands for."""
    if not isinstance(obj, dict) or not isinstance(obj.get("scale"), int) or not isinstance(obj.get("value"), str):
        return None
    try:
        n = int.from_bytes(base64.b64decode(obj["value"], validate=True), "big", signed=True)
    except ValueError:
        return None
    return decimal.Decimal(n).scaleb(-obj["scale"])


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def zoned_text(v: values.DateTime, fsp: int | None = 6) -> str:
    """ISO-8601 in UTC with `Z` (io.debezium.time.ZonedTimestamp), the fraction padded to the
    column's precision as the real connector writes it (`2000-01-01T00:00:00.000000Z` for a
    timestamptz(6)): keys carry this text, so it must be exact for a key to match."""
    p = 6 if fsp is None else fsp
    frac = f".{v.microsecond:06d}"[:p + 1] if p else ""
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T{v.hour:02d}:{v.minute:02d}:{v.second:02d}{frac}Z"


def parse_zoned(text: str) -> values.DateTime | None:
    m = re.fullmatch(r"(\d{4,})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?Z", text)
    if m is None:
        return None
    frac = (m.group(7) or "").ljust(9, "0")
    if frac[6:].strip("0"):
        return None  # below a microsecond: PostgreSQL keeps microseconds
    return values.DateTime(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                    int(m.group(6)), int(frac[:6]))


def _float(v: float) -> float | str:
    """Jackson writes NaN and the infinities as quoted strings (QUOTE_NON_NUMERIC_NUMBERS)."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "Infinity" if v > 0 else "-Infinity"
    return v


def default_carried(c: Column, o: DbzOptions) -> bool:
    """Whether the connector can put the column's literal default in its field schema
    (PostgresDefaultValueConverter): not for a bytea or an array (no default mapper), and not for a numeric
    without scale in precise mode (a VariableScaleDecimal is a Struct, which Connect refuses as a
    default: KAFKA-12694); in double and string modes its default is a double or a string and is
    carried (3.6.3: `numeric DEFAULT 1.5` gives `"default":"1.5"` in string mode)."""
    k = c.type.kind
    if k in (Kind.BYTEA, Kind.ARRAY, Kind.MONEY, Kind.INET, Kind.CIDR, Kind.MACADDR, Kind.MACADDR8, Kind.TIMETZ,
             Kind.HSTORE):
        return False  # no default mapper for these types
    return not (k is Kind.NUMERIC and o.decimal_mode == "precise")


def schema_default(c: Column, o: DbzOptions) -> tuple[bool, Any]:
    """Whether the connector puts a default in the column's field schema, and its JSON value
    there (3.6.3 as seen): a literal default rendered like a value (`default_carried` says which
    kinds), except that a character(n) default keeps the literal's text (the stored value is
    padded, the DDL's text is not), an enum's keeps its doubled quotes and a time of 24:00:00 is
    LocalTime.MAX; for a timestamp
    DEFAULT CURRENT_TIMESTAMP, the epoch (0)."""
    d = c.default
    special = isinstance(d.value, decimal.Decimal) and not d.value.is_finite()  # no BigDecimal parses it
    if d.kind is DefaultKind.VALUE and d.value is not None and default_carried(c, o) and not special:
        if c.type.kind is Kind.CHAR and isinstance(d.value, str):
            return True, d.value
        if c.type.kind is Kind.ENUM and isinstance(d.value, str):
            # The literal's text between its quotes, a quote still doubled (extractEnumDefault does
            # not undouble them, as extractDefault does for text; real 3.6.3: "it''s").
            return True, d.value.replace("'", "''")
        if c.type.kind is Kind.TIME and isinstance(d.value, values.Time) and d.value.hours >= 24:
            # A default of 24:00:00 becomes java.time.LocalTime.MAX (23:59:59.999999999).
            return True, _json_value(c, values.Time(False, 23, 59, 59, 999999), o)
        return True, _json_value(c, d.value, o)
    if d.kind is DefaultKind.CURRENT_TIMESTAMP and c.type.kind is Kind.DATETIME:
        return True, 0
    return False, None


def json_value(c: Column, v: values.Value, o: DbzOptions, *, replace_null: bool = True) -> Any:
    """The column's value as the JSON converter writes it: a null of a column whose schema
    carries a default is written as the default (JsonConverter's `replace.null.with.default`,
    on by default since Kafka 3.5)."""
    if v is None:
        carried, default = schema_default(c, o)
        return default if replace_null and o.null_to_default and carried else None
    return _json_value(c, v, o)


def _json_value(c: Column, v: values.Value, o: DbzOptions) -> Any:
    if v is None:
        return None
    t = c.type
    k = t.kind
    if k in (Kind.BOOLEAN, Kind.SMALLINT, Kind.INT, Kind.BIGINT):
        return v
    if k is Kind.FLOAT:
        assert isinstance(v, float)
        # Jackson writes a Java float with Float.toString: the shortest digits of the float32.
        return _float(v) if not math.isfinite(v) else float(values.float32_shortest(v))
    if k is Kind.DOUBLE:
        assert isinstance(v, float)
        return _float(v)
    if k in (Kind.DECIMAL, Kind.NUMERIC):
        assert isinstance(v, decimal.Decimal)
        if o.decimal_mode == "double":
            return _float(float(v))
        if not v.is_finite():
            # PostgreSQL's NaN and infinities: no BigDecimal holds them (precise: null, with a
            # warning); string mode writes the names of its special values (real 3.6.3).
            if o.decimal_mode == "string":
                return "NAN" if v.is_nan() else ("POSITIVE_INFINITY" if v > 0 else "NEGATIVE_INFINITY")
            return None
        if o.decimal_mode == "string":
            return format(v, "f")
        tup = v.as_tuple()
        assert isinstance(tup.exponent, int)
        scale = t.scale if k is Kind.DECIMAL and t.scale is not None else max(0, -tup.exponent)
        unscaled = _unscaled(v, scale)
        if k is Kind.NUMERIC:
            return {"scale": scale, "value": b64(_unscaled_bytes(unscaled))}
        return b64(_unscaled_bytes(unscaled))
    if k is Kind.CHAR:
        assert isinstance(v, str) and t.length is not None
        return v.ljust(t.length)  # character(n) keeps its padding
    if k in (Kind.VARCHAR, Kind.TEXT, Kind.ENUM):
        return v
    if k is Kind.BYTEA:
        assert isinstance(v, bytes)
        if o.binary_mode == "hex":
            return v.hex()
        if o.binary_mode == "base64-url-safe":
            return base64.urlsafe_b64encode(v).decode("ascii")
        return b64(v)
    if isinstance(v, values.Infinity):
        return _infinity(t, v, o)
    if k is Kind.DATE:
        assert isinstance(v, values.Date)
        return f"{v.text()}Z" if o.time_mode == "isostring" else _days(v)
    if k is Kind.TIME:
        assert isinstance(v, values.Time)
        ft = field_type(t, o)
        us = _time_micros(v)
        if ft.type == "string":  # IsoTime: java.time.LocalTime (24:00:00 wraps to midnight)
            return _java_clock(us % 86_400_000_000) + "Z"
        if ft.name == "io.debezium.time.NanoTime":
            return us * 1000
        return us if ft.type == "int64" else us // 1000
    if k is Kind.DATETIME:
        assert isinstance(v, values.DateTime)
        ft = field_type(t, o)
        us = _micros(v)
        if ft.type == "string":  # IsoTimestamp: java.time.LocalDateTime's text and Z
            return f"{v.year:04d}-{v.month:02d}-{v.day:02d}T" + _java_clock(
                ((v.hour * 60 + v.minute) * 60 + v.second) * 1_000_000 + v.microsecond) + "Z"
        if ft.name == "io.debezium.time.NanoTimestamp":
            # Nanoseconds since the epoch in a long: beyond 1677-09-21 .. 2262-04-11 there is none (null).
            ns = us * 1000
            return ns if -(1 << 63) <= ns < (1 << 63) else None
        return us if ft.name == "io.debezium.time.MicroTimestamp" else us // 1000
    if k is Kind.TIMESTAMPTZ:
        assert isinstance(v, values.DateTime)
        return zoned_text(v, t.fsp)
    if k is Kind.HSTORE:
        # json: the pairs as a JSON object (Jackson, compact); map: a Connect map. pgjdbc's
        # HStoreConverter reads them into a HashMap, so no order is promised.
        assert isinstance(v, values.Hstore)
        if o.hstore_mode == "map":
            return v.as_dict()
        return json.dumps(v.as_dict(), ensure_ascii=False, separators=(",", ":"))
    if k is Kind.TIMETZ:
        # io.debezium.time.ZonedTime: the time in UTC as ISO_OFFSET_TIME prints it (24:00:00 is
        # midnight; real 3.6.3: `'23:59:59.999999+14'` -> `"09:59:59.999999Z"`).
        assert isinstance(v, values.TimeTz)
        return _java_clock(v.utc_micros()) + "Z"
    if k in (Kind.JSON, Kind.JSONB):
        assert isinstance(v, values.Json)
        return json.dumps(v.data, ensure_ascii=False)
    if k is Kind.UUID:
        assert isinstance(v, uuid.UUID)
        return str(v)
    if k is Kind.MONEY:
        assert isinstance(v, decimal.Decimal)
        if o.decimal_mode == "double":
            return _float(float(v))
        if o.decimal_mode == "string":
            return values.decimal_text(v, 2)
        return b64(_unscaled_bytes(_unscaled(v, 2)))
    if k in (Kind.INET, Kind.CIDR, Kind.MACADDR, Kind.MACADDR8):
        return str(v)
    if k is Kind.BIT:
        assert isinstance(v, int)
        if t.length == 1:
            return bool(v)
        # java.util.BitSet.toByteArray: little-endian, no trailing zero bytes (0: no bytes).
        return b64(v.to_bytes((v.bit_length() + 7) // 8, "little"))
    if k is Kind.VARBIT:
        # As a bit(n): the bit string read as a number (real 3.6.3: `'101'` -> `"BQ=="`, `''` -> `""`).
        assert isinstance(v, str)
        n = int(v, 2) if v else 0
        if t.length == 1:
            return bool(n)
        return b64(n.to_bytes((n.bit_length() + 7) // 8, "little"))
    if k is Kind.INTERVAL:
        assert isinstance(v, values.Interval)
        return interval_value(v, o)
    if k is Kind.ARRAY:
        assert isinstance(v, values.Array) and t.element is not None
        el = Column(c.name, t.element, True)
        # pgjdbc reads the elements itself (PgArray): an infinity as it reads one.
        return [None if x is None else _json_value(el, ReadInfinity(x.positive) if isinstance(x, values.Infinity)
                                                   else x, o) for x in v.items]
    raise ValueError(f"{k} is not a kind this protocol maps")


_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _pg_interval_fields(v: values.Interval) -> tuple[int, int, int, int, int, float]:
    """What pgjdbc's PGInterval reads from PostgreSQL's text of an interval: years and months
    (months split, truncated toward zero), days, and the time part's hours, minutes and seconds
    (a double), each with the time part's sign."""
    years, months = int(v.months / 12), v.months - 12 * int(v.months / 12)
    sign = -1 if v.microseconds < 0 else 1
    a = abs(v.microseconds)
    hours, minutes = a // 3_600_000_000, a // 60_000_000 % 60
    whole, micros = a // 1_000_000 % 60, a % 1_000_000
    seconds = float(sign * whole) + float(sign * micros) / 1e6
    return years, months, v.days, sign * hours, sign * minutes, seconds


def interval_value(v: values.Interval, o: DbzOptions) -> Any:
    """io.debezium.time.MicroDuration (MicroDuration.durationMicros in doubles, a month 30.4375
    days, the long cast saturating) or io.debezium.time.Interval (Interval.toIsoString:
    `P<y>Y<m>M<d>DT<h>H<min>M<s>S`, the seconds as BigDecimal.valueOf(double) without trailing zeros)."""
    years, months, days, hours, minutes, seconds = _pg_interval_fields(v)
    if o.interval_mode == "string":
        sec = decimal.Decimal(repr(seconds)).normalize()
        text = "0" if sec.is_zero() else format(sec, "f")
        return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{text}S"
    number_of_days = (years * 12 + months) * 30.4375 + days
    number_of_seconds = (((number_of_days * 24 + hours) * 60) + minutes) * 60 + seconds
    x = number_of_seconds * 1e6
    if math.isnan(x):
        return 0
    return max(_LONG_MIN, min(_LONG_MAX, int(x))) if math.isfinite(x) else (_LONG_MAX if x > 0 else _LONG_MIN)


#: Debezium's `unavailable.value.placeholder` (default): what it writes for a value the change
#: log does not carry (an unchanged TOASTed value under REPLICA IDENTITY DEFAULT / USING INDEX).
PLACEHOLDER = "__debezium_unavailable_value"


def unavailable_value(c: Column, o: DbzOptions) -> Any:
    """The placeholder as the column's type writes it (UnchangedToastedPlaceholder and
    PostgresValueConverter, 3.6.3): the text for strings, JSON and bytea in hex mode; the text's
    bytes for bytea in bytes mode (base64 in JSON); null in the base64 modes (the converter calls
    the marker an unexpected binary value); for arrays of text one text, of integers and bigints
    the text's bytes as numbers, of uuids the name-based UUID of the text's bytes."""
    t = c.type
    raw = PLACEHOLDER.encode("utf-8")
    if t.kind is Kind.BYTEA:
        if o.binary_mode == "bytes":
            return b64(raw)
        return PLACEHOLDER if o.binary_mode == "hex" else None
    if t.kind is Kind.ARRAY and t.element is not None:
        el = t.element.kind
        if el in (Kind.INT, Kind.BIGINT, Kind.DATE):
            return list(raw)
        if el is Kind.UUID:
            return [str(uuid.UUID(bytes=_name_uuid_bytes(raw)))]
        return [PLACEHOLDER]
    return PLACEHOLDER


def _name_uuid_bytes(raw: bytes) -> bytes:
    """java.util.UUID.nameUUIDFromBytes: MD5 with version 3 and the IETF variant."""
    import hashlib

    d = bytearray(hashlib.md5(raw).digest())  # noqa: S324 - Java's name-based UUID is MD5 by definition
    d[6] = (d[6] & 0x0F) | 0x30
    d[8] = (d[8] & 0x3F) | 0x80
    return bytes(d)
