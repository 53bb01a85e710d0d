"""TiCDC Simple: the protocol's rules as data and pure functions.

Sources: seed 002 (the published protocol, Chinese), `spec/notes/ticdc.md` §2 (what
pingcap/tiflow really emits), §5 (where they disagree); golden data in
`fixtures/ticdc/simple/` (`message.json` is the Avro schema of the Avro encoding;
`table_schema_vectors.json` TiDB column metadata -> tableSchema) and `fixtures/ticdc/docs_examples/`.
"""

from __future__ import annotations

import base64
import functools
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...model.events import Ddl, DdlKind
from ...model.table import Column, DefaultKind, Index, Table
from ...model.types import BINARY_KINDS, INTEGER_KINDS, TEXT_KINDS, Kind, SqlType
from ...model.values import (
    Date,
    DateTime,
    Json,
    Time,
    Value,
    Vector,
    bit_bytes_padded,
    decimal_text,
    enum_index,
    go_format_float,
    set_bitmask,
)
from ..base import OptionSpec, Profile

PROTOCOL = "ticdc-simple"
VERSION = 1
AVRO_NS = "com.pingcap.simple.avro"

OPTIONS = (
    OptionSpec("encoding-format", "json", ("json", "avro"), matrix=True, short="format",
               doc="Message encoding: JSON, or Avro with the embedded message.json schema (no registry)."),
    OptionSpec("send-bootstrap-interval-in-sec", "120", None, kind="sink config", short="bootstrap-every-s",
               doc="A BOOTSTRAP per table at least this often (seconds); <= 0 disables bootstraps."),
    OptionSpec("send-bootstrap-in-msg-count", "10000", None, kind="sink config", short="bootstrap-every-rows",
               doc="A BOOTSTRAP per table after this many row messages; <= 0 disables bootstraps."),
    OptionSpec("send-bootstrap-to-all-partition", "true", ("true", "false"), kind="sink config",
               short="bootstrap-all-partitions", doc="BOOTSTRAP to every partition of the topic, or to partition 0."),
    OptionSpec("large-message-handle-option", "none", ("none", "handle-key-only", "claim-check"), kind="sink config",
               short="large-message", doc="What to do with a message above max-message-bytes."),
    OptionSpec("large-message-handle-compression", "none", ("none", "snappy", "lz4"), kind="sink config",
               short="compression", doc="Compression applied to every Simple message (snappy: block; lz4: frame)."),
    OptionSpec("claim-check-storage-uri", "", None, kind="sink config",
               doc="file:///path where claim-check files are written (large-message-handle-option=claim-check)."),
    OptionSpec("claim-check-raw-value", "false", ("false", "true"), kind="sink config",
               doc="true: a claim-check file holds the compressed message's raw bytes instead of the JSON "
                   "{key, value-as-base64} (claimcheck/claim_check.go WriteMessage)."),
    OptionSpec("max-message-bytes", "10485760", None, kind="sink config", short="max-bytes",
               doc="Largest Kafka message; larger ones are handled per large-message-handle-option."),
    OptionSpec("topic", "tidb_simple", None, kind="sink-uri topic",
               doc="The topic every table is sent to (dispatch by table to its partitions)."),
    OptionSpec("time-zone", "UTC", None, kind="server --tz", doc="TiCDC server time zone (TIMESTAMP values)."),
    OptionSpec("bootstrap-disable-rule", "code", ("code", "docs"), kind="profile switch",
               doc="docs: bootstraps are disabled only when both bootstrap settings are 0 (seed 002); code: "
                   "when either is <= 0 (pkg/config/sink.go:224-233)."),
    OptionSpec("avro-bit-as-string", "false", ("false", "true"), kind="profile switch",
               doc="New-architecture TiCDC (pingcap/ticdc) writes BIT as a decimal string in Avro; tiflow as long."),
)

PROFILES = (
    Profile("current", {}, "pingcap/tiflow master / v8.x (the default)."),
    Profile("docs", {"bootstrap-disable-rule": "docs"}, "What seed 002 says where it differs from the code."),
    Profile("ticdc-next", {"avro-bit-as-string": "true"}, "New-architecture TiCDC (pingcap/ticdc)."),
)


@dataclass(frozen=True, slots=True)
class SimpleOptions:
    avro: bool = False
    bootstrap_interval_s: float = 120.0
    bootstrap_count: int = 10000
    bootstrap_all_partitions: bool = True
    large_message: str = "none"
    compression: str = "none"
    claim_check_uri: str = ""
    claim_check_raw: bool = False
    max_message_bytes: int = 10485760
    topic: str = "tidb_simple"
    time_zone: str = "UTC"
    disable_rule: str = "code"
    avro_bit_as_string: bool = False

    @classmethod
    def from_options(cls, o: Mapping[str, str]) -> SimpleOptions:
        def num(name: str, default: str) -> float:
            try:
                return float(o.get(name, default))
            except ValueError:
                return float(default)

        return cls(
            avro=o.get("encoding-format", "json") == "avro",
            bootstrap_interval_s=num("send-bootstrap-interval-in-sec", "120"),
            bootstrap_count=int(num("send-bootstrap-in-msg-count", "10000")),
            bootstrap_all_partitions=o.get("send-bootstrap-to-all-partition", "true").lower() == "true",
            large_message=o.get("large-message-handle-option", "none"),
            compression=o.get("large-message-handle-compression", "none"),
            claim_check_uri=o.get("claim-check-storage-uri", "").rstrip("/"),
            claim_check_raw=o.get("claim-check-raw-value", "false").lower() == "true",
            max_message_bytes=int(num("max-message-bytes", "10485760")),
            topic=o.get("topic", "tidb_simple"),
            time_zone=o.get("time-zone", "UTC"),
            disable_rule=o.get("bootstrap-disable-rule", "code"),
            avro_bit_as_string=o.get("avro-bit-as-string", "false").lower() == "true",
        )

    @property
    def bootstraps_enabled(self) -> bool:
        """Code: either setting <= 0 disables (pkg/config/sink.go:221-242). Docs: both must be 0."""
        if self.disable_rule == "docs":
            return not (self.bootstrap_interval_s == 0 and self.bootstrap_count == 0)
        return self.bootstrap_interval_s > 0 and self.bootstrap_count > 0

    @property
    def tz(self) -> zoneinfo.ZoneInfo:
        return _zone(self.time_zone)


@functools.lru_cache(maxsize=64)
def _zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


# TiCDC sizes a Kafka message as len(key) + len(value) + MaxRecordOverhead before comparing it
# with max-message-bytes (common/message.go Message.Length, used by simple/encoder.go
# AppendRowChangedEvent): sarama's worst-case record overhead, 5*MaxVarintLen32 +
# MaxVarintLen64 + 1 = 36 bytes.
MAX_RECORD_OVERHEAD = 36


def message_length(key: bytes | None, value: bytes | None) -> int:
    """Message.Length(): what TiCDC compares with max-message-bytes."""
    return len(key or b"") + len(value or b"") + MAX_RECORD_OVERHEAD


def combination_problems(o: SimpleOptions) -> list[str]:
    problems = []
    try:
        _zone(o.time_zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        problems.append(f"time-zone {o.time_zone!r} is not an IANA time zone name")
    if o.large_message == "claim-check" and not o.claim_check_uri.startswith("file://"):
        problems.append("large-message-handle-option=claim-check needs claim-check-storage-uri=file:///a/directory "
                        "(the suite reads claim-check files from a local directory)")
    if o.max_message_bytes <= 0:
        problems.append("max-message-bytes must be positive")
    return problems


# -- types ------------------------------------------------------------------------------------------

_MYSQL_TYPE = {
    Kind.BOOL: "tinyint", Kind.TINYINT: "tinyint", Kind.SMALLINT: "smallint", Kind.MEDIUMINT: "mediumint",
    Kind.INT: "int", Kind.BIGINT: "bigint", Kind.FLOAT: "float", Kind.DOUBLE: "double", Kind.DECIMAL: "decimal",
    Kind.BIT: "bit", Kind.CHAR: "char", Kind.VARCHAR: "varchar", Kind.TINYTEXT: "tinytext", Kind.TEXT: "text",
    Kind.MEDIUMTEXT: "mediumtext", Kind.LONGTEXT: "longtext", Kind.BINARY: "binary", Kind.VARBINARY: "varbinary",
    Kind.TINYBLOB: "tinyblob", Kind.BLOB: "blob", Kind.MEDIUMBLOB: "mediumblob", Kind.LONGBLOB: "longblob",
    Kind.DATE: "date", Kind.DATETIME: "datetime", Kind.TIMESTAMP: "timestamp", Kind.TIME: "time",
    Kind.YEAR: "year", Kind.JSON: "json", Kind.ENUM: "enum", Kind.SET: "set", Kind.VECTOR: "vector",
}
MYSQL_TYPES = frozenset(_MYSQL_TYPE.values())

# TiDB's default display widths (flen) where the DDL gives none (table_schema_vectors.json).
_INT_WIDTH = {Kind.BOOL: (1, 1), Kind.TINYINT: (4, 3), Kind.SMALLINT: (6, 5), Kind.MEDIUMINT: (9, 8),
              Kind.INT: (11, 10), Kind.BIGINT: (20, 20)}
_FIXED_WIDTH = {Kind.FLOAT: 12, Kind.DOUBLE: 22, Kind.TINYTEXT: 255, Kind.TINYBLOB: 255, Kind.TEXT: 65535,
                Kind.BLOB: 65535, Kind.MEDIUMTEXT: 16777215, Kind.MEDIUMBLOB: 16777215, Kind.LONGTEXT: 4294967295,
                Kind.LONGBLOB: 4294967295, Kind.JSON: 4294967295, Kind.DATE: 10, Kind.YEAR: 4}


def mysql_type(t: SqlType) -> str:
    """TiDB's TypeToStr(tp, charset)."""
    return _MYSQL_TYPE[t.kind]


def is_binary_charset(t: SqlType) -> bool:
    """Numbers, temporal types, JSON, BIT and the binary string types report charset `binary`."""
    return not (t.kind in TEXT_KINDS or t.kind in (Kind.ENUM, Kind.SET))


def length(t: SqlType) -> int:
    k = t.kind
    if k in _INT_WIDTH:
        signed, unsigned = _INT_WIDTH[k]
        return unsigned if t.unsigned else signed
    if k in _FIXED_WIDTH:
        return _FIXED_WIDTH[k]
    if k is Kind.DECIMAL:
        assert t.precision is not None
        return t.precision
    if k in (Kind.BIT, Kind.CHAR, Kind.VARCHAR, Kind.BINARY, Kind.VARBINARY):
        assert t.length is not None
        return t.length
    if k in (Kind.DATETIME, Kind.TIMESTAMP):
        return 19 + (1 + t.fsp if t.fsp else 0)
    if k is Kind.TIME:
        return 10 + (1 + t.fsp if t.fsp else 0)
    if k is Kind.ENUM:
        return max(len(e) for e in t.elements)
    if k is Kind.SET:
        return len(",".join(t.elements))
    if k is Kind.VECTOR:
        # TiDB's flen: the dimension, or UnspecifiedLength (-1) for a VECTOR of any dimension,
        # which `omitempty` does not drop (it drops only 0).
        return t.length if t.length is not None else -1
    raise AssertionError(k)


def decimal_of(t: SqlType) -> int:
    """TiDB's `Decimal` of the field type: scale for DECIMAL, fsp for temporal types."""
    if t.kind is Kind.DECIMAL:
        assert t.scale is not None
        return t.scale
    if t.kind in (Kind.DATETIME, Kind.TIMESTAMP, Kind.TIME):
        return t.fsp
    return 0


def unsigned_flag(t: SqlType) -> bool:
    return t.unsigned or t.kind in (Kind.YEAR, Kind.BIT)


def zerofill_flag(t: SqlType) -> bool:
    return t.kind is Kind.YEAR


def data_type_json(t: SqlType) -> dict[str, Any]:
    """The JSON dataType object (Go struct order). length, decimal, elements, unsigned and
    zerofill are `omitempty` in simple/message.go's dataType, so they are left out when zero or
    empty: CHAR(0) and BINARY(0) have no `length`."""
    binary = is_binary_charset(t)
    d: dict[str, Any] = {"mysqlType": mysql_type(t), "charset": "binary" if binary else t.charset,
                         "collate": "binary" if binary else t.collation}
    if length(t):
        d["length"] = length(t)
    if decimal_of(t):
        d["decimal"] = decimal_of(t)
    if t.elements:
        d["elements"] = list(t.elements)
    if unsigned_flag(t):
        d["unsigned"] = True
    if zerofill_flag(t):
        d["zerofill"] = True
    return d


_AVRO_FLAG_KINDS = frozenset(INTEGER_KINDS | {Kind.FLOAT, Kind.DOUBLE, Kind.BIT, Kind.YEAR, Kind.DECIMAL})


def data_type_avro(t: SqlType) -> dict[str, Any]:
    """The Avro DataType record: length always; decimal only for DECIMAL (the fsp of temporal
    types is lost); unsigned/zerofill set (true or false) for numeric kinds, BIT and YEAR."""
    binary = is_binary_charset(t)
    flags = t.kind in _AVRO_FLAG_KINDS
    return {"mysqlType": mysql_type(t), "charset": "binary" if binary else t.charset,
            "collate": "binary" if binary else t.collation, "length": length(t),
            "decimal": decimal_of(t) if t.kind is Kind.DECIMAL else None,
            "elements": list(t.elements) if t.elements else None,
            "unsigned": unsigned_flag(t) if flags else None,
            "zerofill": zerofill_flag(t) if flags else None}


def default_value(c: Column, *, avro: bool) -> Any:
    """TiDB's stored default: the string TiDB keeps; in JSON a BIT default is a number.

    In Avro the default is the Go string's bytes as goavro writes them (simple/avro.go
    newTableSchemaMap: `{"string": defaultValue}`), so `bytes` here: the UTF-8 of the text, and
    for BIT the raw binary literal (b'11111111' is the one byte 0xff, not UTF-8)."""
    d = c.default
    if d.kind is DefaultKind.CURRENT_TIMESTAMP:
        return b"CURRENT_TIMESTAMP" if avro else "CURRENT_TIMESTAMP"
    if d.kind is not DefaultKind.VALUE:
        return None
    t, v = c.type, d.value
    if t.kind is Kind.BIT:
        assert isinstance(v, int) and t.length is not None
        # JSON: MustBinaryLiteralToInt -> a number (simple/message.go newColumnSchema).
        return bit_bytes_padded(v, t.length) if avro else v
    text = stored_text(t, v)
    return text.encode("utf-8") if avro else text


def stored_text(t: SqlType, v: Value) -> str:
    """A value as TiDB prints it in its own strings (defaults, DECIMAL/temporal/JSON values)."""
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, DateTime):
        return v.text(t.fsp)
    if isinstance(v, (Date, Time)):
        return v.text() if isinstance(v, Date) else v.text(t.fsp)
    if isinstance(v, (Json, Vector)):
        return v.text()
    if isinstance(v, tuple):
        order = {e: i for i, e in enumerate(t.elements)}
        return ",".join(sorted(v, key=order.__getitem__))
    if t.kind is Kind.DECIMAL:
        assert t.scale is not None
        return decimal_text(v, t.scale)  # type: ignore[arg-type]
    if t.kind is Kind.FLOAT:
        return go_format_float(float(v), 32, "f")  # type: ignore[arg-type]
    if t.kind is Kind.DOUBLE:
        return go_format_float(float(v), 64, "f")  # type: ignore[arg-type]
    return str(v)


# -- tables ---------------------------------------------------------------------------------------

def pk_is_handle(t: Table) -> bool:
    """A single-column integer PRIMARY KEY is TiDB's clustered int handle (not in Indices)."""
    pk = t.primary_key
    return pk is not None and len(pk.columns) == 1 and t.column(pk.columns[0]).type.kind in INTEGER_KINDS


def index_json(t: Table, ix: Index, name: str | None = None) -> dict[str, Any]:
    return {"name": name if name is not None else ix.name, "unique": ix.is_unique, "primary": ix.primary,
            "nullable": any(t.column(c).nullable for c in ix.columns), "columns": list(ix.columns)}


def indexes(t: Table) -> list[dict[str, Any]]:
    """TiDB's index order; an int clustered PK is not an index there, so a synthetic lower-case
    `primary` comes last (simple/message.go:284-306)."""
    out = [index_json(t, ix) for ix in sorted(t.indexes, key=lambda i: i.index_id)
           if not (ix.primary and pk_is_handle(t))]
    if pk_is_handle(t):
        pk = t.primary_key
        assert pk is not None
        out.append(index_json(t, pk, "primary"))
    return out


def table_schema(t: Table, *, avro: bool) -> dict[str, Any]:
    """tableSchema: key `schema` in JSON but `database` in Avro; columns by column ID, virtual
    generated ones included (message.go newTableSchema lists every TableInfo column), though no
    DML carries them."""
    cols = []
    for c in t.columns_by_id():
        cols.append({"name": c.name, "dataType": data_type_avro(c.type) if avro else data_type_json(c.type),
                     "nullable": c.nullable, "default": default_value(c, avro=avro)})
    return {"database" if avro else "schema": t.database, "table": t.name, "tableID": t.table_id,
            "version": t.version, "columns": cols, "indexes": indexes(t)}


DDL_TYPES = ("CREATE", "ALTER", "ERASE", "RENAME", "TRUNCATE", "CINDEX", "DINDEX", "QUERY")


def ddl_schema_tables(d: Ddl) -> tuple[Table | None, Table | None]:
    """The tables whose schemas a DDL message carries: (tableSchema, preTableSchema).

    newDDLMessage (simple/message.go) writes tableSchema whenever the event's TableInfo has
    TiDB table info, and preTableSchema whenever its PreTableInfo has. buildDDLEvents
    (cdc/entry/schema_storage.go) takes TableInfo from the job's BinlogInfo.TableInfo and
    PreTableInfo from the snapshot before the job (Snapshot.PreTableInfo: none for CREATE TABLE,
    the dropped table for DROP TABLE). A DROP TABLE job's binlog holds the dropped table's info,
    so an ERASE carries the dropped table in both (FromJobWithArgs rebuilds its query from
    TableInfo's name); its version is unchanged, as TiDB moves UpdateTS only while a table is
    public (ddl updateVersionAndTableInfo). Only DROP DATABASE and the like have neither."""
    table = d.table
    if table is None and d.kind is DdlKind.DROP_TABLE:
        table = d.pre_table
    pre = d.pre_table if ddl_type(d.kind) != "CREATE" else None
    return table, pre


def ddl_type(kind: DdlKind) -> str:
    return {DdlKind.CREATE_TABLE: "CREATE", DdlKind.RENAME_TABLE: "RENAME", DdlKind.ADD_INDEX: "CINDEX",
            DdlKind.DROP_INDEX: "DINDEX", DdlKind.DROP_TABLE: "ERASE", DdlKind.TRUNCATE_TABLE: "TRUNCATE",
            DdlKind.ADD_COLUMN: "ALTER", DdlKind.DROP_COLUMN: "ALTER", DdlKind.MODIFY_COLUMN: "ALTER",
            }.get(kind, "QUERY")


# -- values -----------------------------------------------------------------------------------------

class Family:
    INT = "int"
    BIGINT_UNSIGNED = "bigint-unsigned"
    FLOAT = "float"
    DOUBLE = "double"
    DECIMAL = "decimal"
    BIT = "bit"
    ENUM = "enum"
    SET = "set"
    TEXT = "text"
    BINARY = "binary"
    DATE = "date"
    DATETIME = "datetime"
    TIMESTAMP = "timestamp"
    TIME = "time"
    YEAR = "year"
    JSON = "json"
    VECTOR = "vector"
    ALL = ("int", "bigint-unsigned", "float", "double", "decimal", "bit", "enum", "set", "text", "binary", "date",
           "datetime", "timestamp", "time", "year", "json", "vector")


def family(t: SqlType) -> str:
    k = t.kind
    if k is Kind.BIGINT and t.unsigned:
        return Family.BIGINT_UNSIGNED
    if k in INTEGER_KINDS:
        return Family.INT
    if k in TEXT_KINDS:
        return Family.TEXT
    if k in BINARY_KINDS:
        return Family.BINARY
    return {Kind.FLOAT: Family.FLOAT, Kind.DOUBLE: Family.DOUBLE, Kind.DECIMAL: Family.DECIMAL, Kind.BIT: Family.BIT,
            Kind.ENUM: Family.ENUM, Kind.SET: Family.SET, Kind.DATE: Family.DATE, Kind.DATETIME: Family.DATETIME,
            Kind.TIMESTAMP: Family.TIMESTAMP, Kind.TIME: Family.TIME, Kind.YEAR: Family.YEAR,
            Kind.JSON: Family.JSON, Kind.VECTOR: Family.VECTOR}[k]


MYSQL_TYPE_FAMILY = {
    "tinyint": Family.INT, "smallint": Family.INT, "mediumint": Family.INT, "int": Family.INT, "bigint": Family.INT,
    "float": Family.FLOAT, "double": Family.DOUBLE, "decimal": Family.DECIMAL, "bit": Family.BIT,
    "enum": Family.ENUM, "set": Family.SET, "char": Family.TEXT, "varchar": Family.TEXT, "tinytext": Family.TEXT,
    "text": Family.TEXT, "mediumtext": Family.TEXT, "longtext": Family.TEXT, "binary": Family.BINARY,
    "varbinary": Family.BINARY, "tinyblob": Family.BINARY, "blob": Family.BINARY, "mediumblob": Family.BINARY,
    "longblob": Family.BINARY, "date": Family.DATE, "datetime": Family.DATETIME, "timestamp": Family.TIMESTAMP,
    "time": Family.TIME, "year": Family.YEAR, "json": Family.JSON, "vector": Family.VECTOR,
}


def int_of(t: SqlType, v: Value) -> int:
    """The uint64/int64 TiCDC holds for integer-like kinds (ENUM index, SET bitmask, BIT)."""
    if t.kind is Kind.ENUM:
        assert isinstance(v, str)
        return enum_index(t, v)
    if t.kind is Kind.SET:
        assert isinstance(v, tuple)
        return set_bitmask(t, v)
    assert isinstance(v, int)
    return v


def json_value(t: SqlType, v: Value, o: SimpleOptions) -> Any:
    """encodeValue (simple/message.go:650-726): every non-NULL value is a JSON string, except
    TIMESTAMP, an object {location, value}."""
    if v is None:
        return None
    fam = family(t)
    if fam in (Family.INT, Family.BIGINT_UNSIGNED, Family.YEAR, Family.BIT, Family.ENUM, Family.SET):
        return str(int_of(t, v))
    if fam == Family.FLOAT:
        assert isinstance(v, float)
        return go_format_float(v, 32, "f")
    if fam == Family.DOUBLE:
        assert isinstance(v, float)
        return go_format_float(v, 64, "f")
    if fam == Family.BINARY:
        assert isinstance(v, bytes)
        return base64.b64encode(v).decode("ascii")
    if fam == Family.TIMESTAMP:
        assert isinstance(v, DateTime)
        return {"location": o.time_zone, "value": v.in_zone(o.tz).text(t.fsp)}
    if fam == Family.TEXT:
        assert isinstance(v, str)
        return v
    return stored_text(t, v)


def avro_value(t: SqlType, v: Value, o: SimpleOptions) -> Any:
    """The Avro map value as (branch name, datum), so that the union branch is explicit
    (simple/message.go:605-648)."""
    if v is None:
        return None
    fam = family(t)
    if fam == Family.TIMESTAMP:
        assert isinstance(v, DateTime)
        return (f"{AVRO_NS}.Timestamp", {"location": o.time_zone, "value": v.in_zone(o.tz).text(t.fsp)})
    if fam == Family.BIGINT_UNSIGNED:
        assert isinstance(v, int)
        return (f"{AVRO_NS}.UnsignedBigint", {"value": v - (1 << 64) if v >= 1 << 63 else v})
    if fam == Family.BIT and o.avro_bit_as_string:
        return ("string", str(int_of(t, v)))
    if fam in (Family.INT, Family.YEAR, Family.BIT, Family.ENUM, Family.SET):
        n = int_of(t, v)
        return ("long", n - (1 << 64) if n >= 1 << 63 else n)  # a uint64 (BIT(64), SET) goes as int64(v)
    if fam == Family.FLOAT:
        return ("float", v)
    if fam == Family.DOUBLE:
        return ("double", v)
    if fam == Family.BINARY:
        return ("bytes", v)
    if fam == Family.TEXT:
        return ("string", v)
    return ("string", stored_text(t, v))
