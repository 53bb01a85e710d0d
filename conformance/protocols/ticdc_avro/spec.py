"""TiCDC Avro: the protocol's rules as data and pure functions.

Sources: seeds 000/001/003 (the published protocol), `spec/notes/ticdc.md` §1 (what
pingcap/tiflow really emits, read from its source). The reference encoder and the checks
both read these tables, and the golden schemas in `fixtures/ticdc/avro/` hold them to the
real implementation.
"""

from __future__ import annotations

import base64
import functools
import json
import re
import struct
import zlib
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...model.events import tso_physical_ms
from ...model.table import Column, DefaultKind, Table
from ...model.types import BINARY_KINDS, TEXT_KINDS, Kind
from ...model.values import (
    Date,
    DateTime,
    Json,
    Row,
    Time,
    Value,
    Vector,
    bit_bytes_min,
    bit_bytes_padded,
    decimal_text,
    decimal_unscaled,
    enum_index,
    set_bitmask,
    set_text,
    twos_complement_min,
)
from ..base import REGISTRY_COMPATIBILITY, OptionSpec, Profile

PROTOCOL = "ticdc-avro"

# -- options -----------------------------------------------------------------------------

OPTIONS = (
    OptionSpec("enable-tidb-extension", "false", ("false", "true"), matrix=True, short="ext",
               doc="Append _tidb_op, _tidb_commit_ts, _tidb_commit_physical_time to values."),
    OptionSpec("avro-decimal-handling-mode", "precise", ("precise", "string"), matrix=True, short="decimal",
               doc="DECIMAL as bytes with the decimal logical type, or as a string."),
    OptionSpec("avro-bigint-unsigned-handling-mode", "long", ("long", "string"), matrix=True, short="bigint-unsigned",
               doc="BIGINT UNSIGNED as a (wrapping) long, or as a decimal string."),
    OptionSpec("integrity-check-level", "none", ("none", "correctness"), kind="changefeed config", short="integrity",
               doc="correctness: row checksum fields, columns ordered by column ID. Needs "
                   "enable-tidb-extension=true and both handling modes = string."),
    OptionSpec("output-raw-change-event", "false", ("false", "true"), kind="changefeed config", short="raw-change",
               doc="false: an UPDATE that changes a primary/unique key becomes DELETE + INSERT."),
    OptionSpec("topic", "tidb_{schema}_{table}", None, kind="dispatcher rule",
               doc="Topic expression; Avro needs {schema} and {table} in it (one table per topic)."),
    OptionSpec("default-topic", "ticdc-default", None, kind="sink-uri topic",
               doc="The sink URI's topic. With avro-enable-watermark, schema-level DDLs and every "
                   "checkpoint go there."),
    OptionSpec("avro-enable-watermark", "false", ("false", "true"), kind="testing option", short="watermark",
               doc="TiCDC's testing switch, honoured only with enable-tidb-extension=true: DDLs and "
                   "checkpoints become key-less records (0x01 + JSON, 0x02 + big-endian ts) on every "
                   "partition. TiCDC's own kafka-consumer requires it; Confluent deserializers cannot "
                   "read these records."),
    OptionSpec("time-zone", "UTC", None, kind="server --tz",
               doc="TiCDC server time zone: TIMESTAMP values are rendered in it."),
    OptionSpec("float-as-double", "false", ("false", "true"), kind="profile switch",
               doc="FLOAT columns as Avro double (TiCDC <= v6.5.1 and v6.6.0; #8567). Docs' type "
                   "table still says double; code says float since v6.5.2 / v7.0.0. The upgrade "
                   "fails at a BACKWARD registry (https://github.com/pingcap/tiflow/issues/8490; "
                   "docs/regressions.md)."),
    OptionSpec("extension-field-defaults", "true", ("true", "false"), kind="profile switch",
               doc="Extension fields carry `default` attributes (v7.1.0+). Docs show them without."),
    OptionSpec("null-string-default", "string", ("string", "null"), kind="profile switch",
               doc="How a nullable column whose DDL default is the text 'null' is written: as the string "
                   "default it is ([T,\"null\"], default \"null\"; master, v26.3+, #12191), or as "
                   "[\"null\",T] with default \"null\" (v8.5.2-v8.5.7, v7.5.6+, v6.5.12; #11995/#12018), "
                   "which the Avro spec calls invalid."),
    OptionSpec("bit-bytes", "minimal", ("minimal", "padded"), kind="profile switch",
               doc="BIT values as tiflow writes them (big-endian, leading zero bytes trimmed, 0 as 00) or as "
                   "new-architecture TiCDC (pingcap/ticdc) does, padded to ceil(M/8) bytes from TiDB's chunk "
                   "(notes §1.12, derived from TiDB's chunk decoder)."),
    REGISTRY_COMPATIBILITY,
)

PROFILES = (
    Profile("current", {}, "pingcap/tiflow master and v8.x: what consumers see today (the default)."),
    Profile("v6.5.0", {"float-as-double": "true", "extension-field-defaults": "false"},
            "TiCDC v6.5.0 - v6.5.1: FLOAT as double, extension fields without defaults."),
    Profile("v7.0", {"extension-field-defaults": "false"},
            "TiCDC v6.5.2 - v7.0.x: FLOAT as float, extension fields without defaults."),
    Profile("ticdc-next", {"bit-bytes": "padded"},
            "New-architecture TiCDC (pingcap/ticdc, v9 / next-gen): BIT values padded to ceil(M/8) bytes (§1.12)."),
    Profile("v8.5", {"null-string-default": "null"},
            "TiCDC v8.5.2 - v8.5.7 (and v7.5.6+, v6.5.12): a 'null' text default makes a null-first union "
            "with default \"null\" (spec/notes/ticdc.md §1.4, §1.11)."),
)

CHANGEFEED_NAMESPACE = "default"  # config.ChangefeedID.Namespace of every normal changefeed

EXTENSION_FIELDS = ("_tidb_op", "_tidb_commit_ts", "_tidb_commit_physical_time")
CHECKSUM_FIELDS = ("_tidb_row_level_checksum", "_tidb_corrupted", "_tidb_checksum_version")
ALL_EXTENSION_FIELDS = frozenset(EXTENSION_FIELDS + CHECKSUM_FIELDS)
_EXT_TYPES = {"_tidb_op": ("string", ""), "_tidb_commit_ts": ("long", 0),
              "_tidb_commit_physical_time": ("long", 0), "_tidb_row_level_checksum": ("string", ""),
              "_tidb_corrupted": ("boolean", False), "_tidb_checksum_version": ("int", 0)}
CHECKSUM_VERSION = 1

KAFKA_MESSAGE_OVERHEAD = 36  # TiCDC adds this to key+value when comparing with max-message-bytes


@dataclass(frozen=True, slots=True)
class AvroOptions:
    extension: bool = False
    decimal_string: bool = False
    bigint_unsigned_string: bool = False
    checksum: bool = False
    raw_change_event: bool = False
    topic: str = "tidb_{schema}_{table}"
    time_zone: str = "UTC"
    float_as_double: bool = False
    extension_defaults: bool = True
    watermark: bool = False
    default_topic: str = "ticdc-default"
    null_string_default: bool = False  # v8.5.2-8.5.7: a "null" text default is written null-first
    bit_padded: bool = False  # new-architecture TiCDC: BIT values over ceil(M/8) bytes

    @classmethod
    def from_options(cls, o: Mapping[str, str]) -> AvroOptions:
        def flag(name: str, default: str) -> bool:
            return o.get(name, default).lower() == "true"

        return cls(
            extension=flag("enable-tidb-extension", "false"),
            decimal_string=o.get("avro-decimal-handling-mode", "precise") == "string",
            bigint_unsigned_string=o.get("avro-bigint-unsigned-handling-mode", "long") == "string",
            checksum=o.get("integrity-check-level", "none") == "correctness",
            raw_change_event=flag("output-raw-change-event", "false"),
            topic=o.get("topic", "tidb_{schema}_{table}"),
            time_zone=o.get("time-zone", "UTC"),
            float_as_double=flag("float-as-double", "false"),
            extension_defaults=flag("extension-field-defaults", "true"),
            watermark=flag("avro-enable-watermark", "false"),
            default_topic=o.get("default-topic", "ticdc-default"),
            null_string_default=o.get("null-string-default", "string") == "null",
            bit_padded=o.get("bit-bytes", "minimal") == "padded",
        )

    @property
    def control_messages(self) -> bool:
        """DDL and checkpoint records are sent (`avro.go`: both switches must be on)."""
        return self.watermark and self.extension

    @property
    def tz(self) -> zoneinfo.ZoneInfo:
        return _zone(self.time_zone)


_ZONES: dict[str, zoneinfo.ZoneInfo] = {}


def _zone(name: str) -> zoneinfo.ZoneInfo:
    z = _ZONES.get(name)
    if z is None:
        z = _ZONES[name] = zoneinfo.ZoneInfo(name)
    return z


def combination_problems(o: AvroOptions, raw: Mapping[str, str]) -> list[str]:
    """What TiCDC's config validation (`common/config.go:344-431`) would refuse."""
    problems = []
    if o.checksum and not (o.extension and o.decimal_string and o.bigint_unsigned_string):
        problems.append("integrity-check-level=correctness needs enable-tidb-extension=true, "
                        "avro-decimal-handling-mode=string and avro-bigint-unsigned-handling-mode=string")
    if not _AVRO_TOPIC_RE.match(o.topic) and not _HARD_CODED_TOPIC_RE.match(o.topic):
        problems.append(f"topic expression {o.topic!r} is invalid: Avro needs a rule like "
                        "'prefix_{schema}_{table}' (one table per topic)")
    if not _HARD_CODED_TOPIC_RE.match(o.default_topic) or len(o.default_topic) > 249 \
            or o.default_topic in (".", ".."):
        problems.append(f"default-topic {o.default_topic!r} is not a Kafka topic name ([A-Za-z0-9._-], "
                        "at most 249 characters)")
    try:
        _zone(o.time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        problems.append(f"time-zone {o.time_zone!r} is not an IANA time zone name")
    return problems


# -- names -------------------------------------------------------------------------------

_AVRO_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@functools.lru_cache(maxsize=8192)
def sanitize_name(name: str) -> str:
    """TiCDC's SanitizeName (`common/helper.go:345-373`), per Unicode code point: the first
    character must be [A-Za-z_] (else `_`, keeping a digit after it), later characters
    [A-Za-z0-9_] (else one `_` each)."""
    out = []
    for i, ch in enumerate(name):
        ok_first = ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z")
        if i == 0:
            if ok_first:
                out.append(ch)
            else:
                out.append("_")
                if "0" <= ch <= "9":
                    out.append(ch)
        elif ok_first or "0" <= ch <= "9":
            out.append(ch)
        else:
            out.append("_")
    return "".join(out)


def is_avro_name(s: str) -> bool:
    return bool(_AVRO_NAME_RE.match(s))


def namespace(database: str, changefeed_namespace: str = CHANGEFEED_NAMESPACE) -> str:
    ns = sanitize_name(changefeed_namespace)
    db = sanitize_name(database)
    return f"{ns}.{db}" if db else ns


# Topic dispatch (`cdc/sink/dmlsink/mq/dispatcher/topic/expression.go`).
_AVRO_TOPIC_RE = re.compile(r"^[A-Za-z0-9._\-]*\{schema\}[A-Za-z0-9._\-]*\{table\}[A-Za-z0-9._\-]*$")
_HARD_CODED_TOPIC_RE = re.compile(r"^[A-Za-z0-9._\-]+$")
_KAFKA_FORBID_RE = re.compile(r"[^a-zA-Z0-9._\-]")


def is_hard_coded_topic(expression: str) -> bool:
    """A topic rule without placeholders: TiCDC does not validate it (#9755), so several tables
    may share the topic and its subjects (notes §1.8)."""
    return bool(_HARD_CODED_TOPIC_RE.match(expression))


def substitute_topic(expression: str, schema: str, table: str) -> str:
    s = _KAFKA_FORBID_RE.sub("_", schema)
    t = _KAFKA_FORBID_RE.sub("_", table)
    topic = expression.replace("{schema}", s).replace("{table}", t)
    b = topic.encode("utf-8")[:249]
    topic = b.decode("utf-8", "ignore")
    if topic == ".":
        return "_"
    if topic == "..":
        return "__"
    return topic


def subject(topic: str, part: str) -> str:
    """Subjects replace `.` in the topic with `_` (`avro.go:119-121`), then `-key`/`-value`."""
    return topic.replace(".", "_") + "-" + part


# -- type mapping ------------------------------------------------------------------------

class Family:
    """Rows of the type table: one check per row."""

    INT = "int"
    INT_UNSIGNED = "int-unsigned"
    BIGINT = "bigint"
    BIGINT_UNSIGNED = "bigint-unsigned"
    FLOAT = "float"
    DOUBLE = "double"
    BIT = "bit"
    DECIMAL = "decimal"
    TEXT = "text"
    BLOB = "blob"
    ENUM = "enum"
    SET = "set"
    JSON = "json"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    YEAR = "year"
    VECTOR = "vector"

    ALL = ("int", "int-unsigned", "bigint", "bigint-unsigned", "float", "double", "bit", "decimal", "text",
           "blob", "enum", "set", "json", "date", "datetime", "timestamp", "time", "year", "vector")


@functools.lru_cache(maxsize=8192)
def family(col: Column) -> str:
    t = col.type
    k = t.kind
    if k in (Kind.BOOL, Kind.TINYINT, Kind.SMALLINT, Kind.MEDIUMINT, Kind.INT):
        return Family.INT_UNSIGNED if t.unsigned else Family.INT
    if k is Kind.BIGINT:
        return Family.BIGINT_UNSIGNED if t.unsigned else Family.BIGINT
    if k in TEXT_KINDS:
        return Family.TEXT
    if k in BINARY_KINDS:
        return Family.BLOB
    return {Kind.FLOAT: Family.FLOAT, Kind.DOUBLE: Family.DOUBLE, Kind.BIT: Family.BIT,
            Kind.DECIMAL: Family.DECIMAL, Kind.ENUM: Family.ENUM, Kind.SET: Family.SET,
            Kind.JSON: Family.JSON, Kind.DATE: Family.DATE, Kind.DATETIME: Family.DATETIME,
            Kind.TIMESTAMP: Family.TIMESTAMP, Kind.TIME: Family.TIME, Kind.YEAR: Family.YEAR,
            Kind.VECTOR: Family.VECTOR}[k]


# tidb_type (connect.parameters) -> family, for records checked without their source table.
TIDB_TYPE_FAMILY = {
    "INT": Family.INT, "INT UNSIGNED": Family.INT_UNSIGNED, "BIGINT": Family.BIGINT,
    "BIGINT UNSIGNED": Family.BIGINT_UNSIGNED, "FLOAT": Family.FLOAT, "DOUBLE": Family.DOUBLE,
    "BIT": Family.BIT, "DECIMAL": Family.DECIMAL, "TEXT": Family.TEXT, "BLOB": Family.BLOB,
    "ENUM": Family.ENUM, "SET": Family.SET, "JSON": Family.JSON, "DATE": Family.DATE,
    "DATETIME": Family.DATETIME, "TIMESTAMP": Family.TIMESTAMP, "TIME": Family.TIME, "YEAR": Family.YEAR,
    "TiDBVECTORFloat32": Family.VECTOR,
}


def tidb_type(col: Column) -> str:
    """`connect.parameters.tidb_type` (`avro.go:352-420`)."""
    fam = family(col)
    return {
        Family.INT: "INT", Family.INT_UNSIGNED: "INT UNSIGNED", Family.BIGINT: "BIGINT",
        Family.BIGINT_UNSIGNED: "BIGINT UNSIGNED", Family.FLOAT: "FLOAT", Family.DOUBLE: "DOUBLE",
        Family.BIT: "BIT", Family.DECIMAL: "DECIMAL", Family.TEXT: "TEXT", Family.BLOB: "BLOB",
        Family.ENUM: "ENUM", Family.SET: "SET", Family.JSON: "JSON", Family.DATE: "DATE",
        Family.DATETIME: "DATETIME", Family.TIMESTAMP: "TIMESTAMP", Family.TIME: "TIME",
        Family.YEAR: "YEAR", Family.VECTOR: "TiDBVECTORFloat32",
    }[fam]


def escape_allowed(elements: tuple[str, ...]) -> str:
    """`allowed` parameter: each element with `,` escaped as `\\,` (then `\\'` -> `'` and
    `''` -> `'`), joined with `,` (`common/helper.go:320-328`)."""
    out = []
    for e in elements:
        e = e.replace(",", "\\,").replace("\\'", "'").replace("''", "'")
        out.append(e)
    return ",".join(out)


def allowed_name(element: str) -> str:
    """An ENUM/SET member as `allowed` shows it (escape_allowed without the comma escape): a
    member with `''` or `\\'` in its name is listed with `'`, while values carry the real name."""
    return element.replace("\\'", "'").replace("''", "'")


def split_allowed(allowed: str) -> list[str]:
    """Inverse of `escape_allowed` (a `\\,` is part of an element)."""
    parts, cur, i = [], [], 0
    while i < len(allowed):
        ch = allowed[i]
        if ch == "\\" and i + 1 < len(allowed) and allowed[i + 1] == ",":
            cur.append(",")
            i += 2
            continue
        if ch == ",":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    parts.append("".join(cur))
    return parts


def avro_primitive(col: Column, o: AvroOptions) -> str:
    fam = family(col)
    if fam == Family.INT_UNSIGNED:
        return "long" if col.type.kind is Kind.INT else "int"
    return {
        Family.INT: "int", Family.BIGINT: "long",
        Family.BIGINT_UNSIGNED: "string" if o.bigint_unsigned_string else "long",
        Family.FLOAT: "double" if o.float_as_double else "float", Family.DOUBLE: "double",
        Family.BIT: "bytes", Family.DECIMAL: "string" if o.decimal_string else "bytes",
        Family.TEXT: "string", Family.BLOB: "bytes", Family.ENUM: "string", Family.SET: "string",
        Family.JSON: "string", Family.DATE: "string", Family.DATETIME: "string",
        Family.TIMESTAMP: "string", Family.TIME: "string", Family.YEAR: "int", Family.VECTOR: "string",
    }[fam]


def is_precise_decimal(col: Column, o: AvroOptions) -> bool:
    return col.type.kind is Kind.DECIMAL and not o.decimal_string


@functools.lru_cache(maxsize=8192)
def avro_type(col: Column, o: AvroOptions) -> dict[str, Any]:
    """Shared and cached: callers build new objects rather than change this one.

    The per-column Avro type object, keys in Go's order: type, connect.parameters
    (sorted keys), then logicalType / precision / scale for precise decimals."""
    params: dict[str, str] = {}
    t = col.type
    if t.kind in (Kind.ENUM, Kind.SET):
        params["allowed"] = escape_allowed(t.elements)
    if t.kind is Kind.BIT:
        params["length"] = str(t.length)
    params["tidb_type"] = tidb_type(col)
    out: dict[str, Any] = {"type": avro_primitive(col, o), "connect.parameters": params}
    if is_precise_decimal(col, o):
        out["logicalType"] = "decimal"
        out["precision"] = t.precision
        out["scale"] = t.scale
    return out


_ABSENT = object()


def avro_default(col: Column, o: AvroOptions) -> Any:
    """The converted DDL default for the `default` attribute, or `_ABSENT`.

    TiCDC passes TiDB's stored default string through the value converter
    (`avro.go:544-576`): numbers become numbers (FLOAT widened from float32), BIT and binary
    defaults become base64 text, temporal defaults stay raw strings (`CURRENT_TIMESTAMP` too).
    Decimals in precise mode never get a default.
    """
    d = col.default
    if not d.is_non_null or is_precise_decimal(col, o):
        return _ABSENT
    if d.kind is DefaultKind.CURRENT_TIMESTAMP:
        return "CURRENT_TIMESTAMP"
    v = d.value
    t = col.type
    fam = family(col)
    if fam == Family.BIT:
        assert isinstance(v, int) and t.length is not None
        return base64.b64encode(bit_bytes_padded(v, t.length)).decode("ascii")
    if fam == Family.BLOB:
        assert isinstance(v, bytes)
        return base64.b64encode(v).decode("ascii")
    if fam == Family.TIMESTAMP or fam == Family.DATETIME:
        assert isinstance(v, DateTime)
        return v.text(t.fsp)
    return native_value(col, v, o)


def has_default(col: Column, o: AvroOptions) -> bool:
    return avro_default(col, o) is not _ABSENT


def field(col: Column, o: AvroOptions, name: str | None = None) -> dict[str, Any]:
    """One column's field object; keys sorted as Go marshals a map: default, name, type."""
    t = avro_type(col, o)
    fname = sanitize_name(col.name) if name is None else name
    default = avro_default(col, o)
    if col.nullable:
        if default is _ABSENT:
            return {"default": None, "name": fname, "type": ["null", t]}
        if o.null_string_default and default == "null":
            # v8.5.2-8.5.7 (avro.go columns2AvroSchema: `defaultValue == nil || defaultValue == "null"`).
            return {"default": "null", "name": fname, "type": ["null", t]}
        return {"default": default, "name": fname, "type": [t, "null"]}
    if default is _ABSENT:
        return {"name": fname, "type": t}
    return {"default": default, "name": fname, "type": t}


def extension_field(name: str, o: AvroOptions) -> dict[str, Any]:
    typ, dflt = _EXT_TYPES[name]
    if o.extension_defaults:
        return {"default": dflt, "name": name, "type": typ}
    return {"name": name, "type": typ}


def value_columns(table: Table, o: AvroOptions) -> tuple[Column, ...]:
    """Value columns: table order, or column-ID order when the checksum is on (`avro.go:581-584`);
    never a virtual generated column, which no row event carries (§1.4, §3.2)."""
    cols = table.columns_by_id() if o.checksum else table.columns
    return tuple(c for c in cols if not c.is_virtual)


def key_columns(table: Table) -> tuple[Column, ...]:
    return table.handle_key_columns()


def schema(table: Table, part: str, o: AvroOptions) -> dict[str, Any]:
    cols = key_columns(table) if part == "key" else value_columns(table, o)
    fields = [field(c, o) for c in cols]
    if part == "value" and o.extension:
        names = EXTENSION_FIELDS + (CHECKSUM_FIELDS if o.checksum else ())
        fields += [extension_field(n, o) for n in names]
    return {"type": "record", "name": sanitize_name(table.name), "namespace": namespace(table.database),
            "fields": fields}


def expected_extension_names(o: AvroOptions) -> tuple[str, ...]:
    if not o.extension:
        return ()
    return EXTENSION_FIELDS + (CHECKSUM_FIELDS if o.checksum else ())


# -- values ------------------------------------------------------------------------------

def native_value(col: Column, v: Value, o: AvroOptions) -> Any:
    """The Avro datum for a column value (`columnToAvroData`, `avro.go:782-940`).
    Precise decimals are returned as their raw two's-complement bytes."""
    if v is None:
        return None
    t = col.type
    fam = family(col)
    if fam in (Family.INT, Family.INT_UNSIGNED, Family.BIGINT, Family.YEAR):
        assert isinstance(v, int)
        return v
    if fam == Family.BIGINT_UNSIGNED:
        assert isinstance(v, int)
        if o.bigint_unsigned_string:
            return str(v)
        return v - (1 << 64) if v >= 1 << 63 else v
    if fam in (Family.FLOAT, Family.DOUBLE):
        return v
    if fam == Family.BIT:
        assert isinstance(v, int) and t.length is not None
        return bit_bytes_padded(v, t.length) if o.bit_padded else bit_bytes_min(v)
    if fam == Family.DECIMAL:
        assert t.scale is not None
        if o.decimal_string:
            return decimal_text(v, t.scale)  # type: ignore[arg-type]
        return twos_complement_min(decimal_unscaled(v, t.scale))  # type: ignore[arg-type]
    if fam == Family.TEXT:
        assert isinstance(v, str)
        return v
    if fam == Family.BLOB:
        assert isinstance(v, bytes)
        return v
    if fam == Family.ENUM:
        assert isinstance(v, str)
        return v
    if fam == Family.SET:
        assert isinstance(v, tuple)
        return set_text(t, v)
    if fam == Family.JSON:
        assert isinstance(v, Json)
        return v.text()
    if fam == Family.DATE:
        assert isinstance(v, Date)
        return v.text()
    if fam == Family.DATETIME:
        assert isinstance(v, DateTime)
        return v.text(t.fsp)
    if fam == Family.TIMESTAMP:
        assert isinstance(v, DateTime)
        return v.in_zone(o.tz).text(t.fsp)
    if fam == Family.TIME:
        assert isinstance(v, Time)
        return v.text(t.fsp)
    if fam == Family.VECTOR:
        assert isinstance(v, Vector)
        return v.text()
    raise AssertionError(fam)


def extension_values(op: str, commit_ts: int, checksum: int | None, o: AvroOptions) -> dict[str, Any]:
    if not o.extension:
        return {}
    out: dict[str, Any] = {"_tidb_op": op, "_tidb_commit_ts": commit_ts,
                           "_tidb_commit_physical_time": tso_physical_ms(commit_ts)}
    if o.checksum:
        out["_tidb_row_level_checksum"] = "" if checksum is None else str(checksum)
        out["_tidb_corrupted"] = False
        out["_tidb_checksum_version"] = 0 if checksum is None else CHECKSUM_VERSION
    return out


# -- row checksum --------------------------------------------------------------------------

def _u64(n: int) -> bytes:
    return struct.pack("<Q", n & 0xFFFFFFFFFFFFFFFF)


def _lv(b: bytes) -> bytes:
    return struct.pack("<I", len(b)) + b


def checksum_bytes(tidb_type_name: str, datum: Any, params: Mapping[str, str], tz: zoneinfo.ZoneInfo
                   ) -> bytes:
    """One column's contribution to the row checksum, from the *encoded* datum, following
    TiCDC's consumer (`common/verify_checksum.go`, docs `ticdc-avro-checksum-verification`):
    integers as uint64 LE, floats as float64 bits, ENUM/SET as their index/bitmask, BIT as
    its integer, everything textual as uint32-LE length + bytes, TIMESTAMP in UTC."""
    if datum is None:
        return b""
    if tidb_type_name in ("INT", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED", "YEAR"):
        return _u64(int(datum))
    if tidb_type_name in ("FLOAT", "DOUBLE"):
        return struct.pack("<d", float(datum))
    if tidb_type_name == "ENUM":
        # Members are looked up as `allowed` lists them (quotes rewritten: allowed_name).
        elems = split_allowed(params.get("allowed", ""))
        name = allowed_name(datum)
        return _u64(elems.index(name) + 1 if name in elems else 0)
    if tidb_type_name == "SET":
        elems = split_allowed(params.get("allowed", ""))
        mask = 0
        for m in (datum.split(",") if datum else []):
            m = allowed_name(m)
            if m in elems:
                mask |= 1 << elems.index(m)
        return _u64(mask)
    if tidb_type_name == "BIT":
        return _u64(int.from_bytes(datum, "big"))
    if tidb_type_name == "TIMESTAMP":
        return _lv(_timestamp_to_utc(datum, tz).encode("utf-8"))
    if tidb_type_name == "TiDBVECTORFloat32":
        # verify_checksum.go: ParseVectorFloat32(text).SerializeTo: uint32-LE dimension + float32-LE elements.
        return vector_bytes(datum)
    if isinstance(datum, bytes):
        return _lv(datum)
    return _lv(str(datum).encode("utf-8"))


def vector_bytes(text: str) -> bytes:
    """TiDB's VectorFloat32 serialisation of a vector's text (a text that is not one: nothing)."""
    try:
        elems = json.loads(text)
        return struct.pack("<I", len(elems)) + b"".join(struct.pack("<f", float(x)) for x in elems)
    except (ValueError, TypeError, OverflowError, struct.error):
        return b""


_TS_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d+)?$")


def _timestamp_to_utc(text: str, tz: zoneinfo.ZoneInfo) -> str:
    m = _TS_RE.match(text)
    if not m or text.startswith("0000-00-00"):
        return text
    import datetime as dt

    frac = m.group(7) or ""
    y, mo, d, h, mi, s = (int(x) for x in m.groups()[:6])
    local = dt.datetime(y, mo, d, h, mi, s, tzinfo=tz)
    u = local.astimezone(dt.UTC)
    return u.strftime("%Y-%m-%d %H:%M:%S") + frac


def row_checksum(cols: tuple[Column, ...], row: Row, o: AvroOptions) -> int:
    crc = 0
    for c in cols:
        t = avro_type(c, o)
        crc = zlib.crc32(checksum_bytes(t["connect.parameters"]["tidb_type"], native_value(c, row[c.name], o),
                                        t["connect.parameters"], o.tz), crc)
    return crc


# -- misc ----------------------------------------------------------------------------------

def enum_value_index(col: Column, v: str) -> int:
    return enum_index(col.type, v)


def set_value_mask(col: Column, v: tuple[str, ...]) -> int:
    return set_bitmask(col.type, v)
