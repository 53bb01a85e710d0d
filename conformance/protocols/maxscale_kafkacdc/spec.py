"""MariaDB MaxScale KafkaCDC: the protocol's rules as data and pure functions.

Sources: seed 004 (the published KafkaCDC router page) and `spec/notes/maxscale.md` (what
MaxScale 24.02 @ f72af992 really does, read from `kafkacdc.cc`, `rpl.cc`, `tokenizer.cc`);
golden data in `fixtures/maxscale/` (MaxScale's own system-test expectations, the documented
examples, a per-type rendering table).

Where the docs say nothing about how a value is rendered, the default profile (`current`)
holds encoders to the message format MaxScale's code emits (keys, the Avro type chosen from the
DDL text, `real_type` as written, `length` -1, hex for bytes that are not UTF-8 as 24.08 does)
with the table's data rendered faithfully. What 24.02 emits where it loses or garbles data is a
set of profile switches (`--option profile=maxscale-24.02` turns them all on): each is a
mutant of the default, caught by the check that cites both readings.
"""

from __future__ import annotations

import decimal
import functools
import ipaddress
import re
import uuid
import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass

from ...model.events import Ddl, Event, Gtid, Transaction, tso_physical_ms
from ...model.table import Column, Table
from ...model.types import BLOB_MAX_BYTES, Kind, SqlType
from ...model.values import Date, DateTime, Json, Time, Value, decimal_text, enum_index, set_bitmask, set_text
from ..base import OptionSpec, Profile

PROTOCOL = "maxscale-kafkacdc"
NOTES = "spec/notes/maxscale.md"
SEED = "seed 004 (KafkaCDC.md)"

NAMESPACE = "MaxScaleChangeDataSchema.avro"
RECORD_TYPE = "record"
RECORD_NAME = "ChangeRecord"
EVENT_TYPES = ("insert", "update_before", "update_after", "delete")
#: The six fields every schema event lists first (rpl.cc Table::to_json).
FIXED_FIELDS: tuple[dict[str, object], ...] = (
    {"name": "domain", "type": "int"},
    {"name": "server_id", "type": "int"},
    {"name": "sequence", "type": "int"},
    {"name": "event_number", "type": "int"},
    {"name": "timestamp", "type": "int"},
    {"name": "event_type", "type": {"type": "enum", "name": "EVENT_TYPES", "symbols": list(EVENT_TYPES)}},
)
SCHEMA_KEYS = ("namespace", "type", "name", "table", "database", "version", "gtid", "fields")
COLUMN_KEYS = ("name", "type", "real_type", "length", "unsigned")
DML_FIXED = ("domain", "server_id", "sequence", "event_number", "timestamp", "event_type", "table_schema",
             "table_name")
AVRO_TYPES = frozenset({"int", "long", "float", "double", "string", "bytes"})
#: The sanitizer appends `_` to these (case-insensitively): they name the fixed fields (rpl.hh).
RESERVED = frozenset({"domain", "server_id", "sequence", "event_number", "event_type", "timestamp"})
UINT32 = 1 << 32

# -- options ----------------------------------------------------------------------------------------

SWITCH = "profile switch"
OPTIONS = (
    OptionSpec("topic", "kafkacdc", None, kind="router parameter",
               doc="The one Kafka topic every table's schema and DML events go to."),
    OptionSpec("send_schema", "true", ("true", "false"), matrix=True, kind="router parameter", short="schema",
               doc="Send a schema event whenever a table's format changes (since 22.08)."),
    OptionSpec("match", "", None, kind="router parameter",
               doc="Only tables whose `database.table` this PCRE2 pattern finds (unanchored, case-sensitive)."),
    OptionSpec("exclude", "", None, kind="router parameter",
               doc="Leave out tables whose `database.table` this pattern finds (same matching as match)."),
    OptionSpec("read_gtid_from_kafka", "true", ("true", "false"), kind="router parameter", short="gtid-from-kafka",
               doc="On a restart, resume after the last key the topic holds (partition 0), as MaxScale does."),
    OptionSpec("time-zone", "UTC", None, kind="MaxScale process TZ",
               doc="The time zone MaxScale's process runs in: TIMESTAMP values are rendered in it (localtime_r)."),
    OptionSpec("bigint-unsigned", "exact", ("exact", "wrap"), kind=SWITCH,
               doc="24.02: column_long(get_byte8) ignores UNSIGNED, so BIGINT UNSIGNED values >= 2^63 come out "
                   "negative (wrap); exact: the stored value."),
    OptionSpec("decimal", "exact", ("exact", "double"), kind=SWITCH,
               doc="24.02: DECIMAL is decoded into a C double and printed with %.17g (double); exact: the stored "
                   "decimal as a JSON number."),
    OptionSpec("enum-set", "text", ("text", "hex"), kind=SWITCH,
               doc="24.02: ENUM/SET are the UPPERCASE hex of the stored little-endian index / bitmask (hex); text: "
                   "the member / comma-separated members."),
    OptionSpec("bit", "value", ("value", "zero"), kind=SWITCH,
               doc="24.02: 'BIT is not currently supported, values are stored as 0' (zero); value: the bits as "
                   "an unsigned integer."),
    OptionSpec("fraction-digits", "six", ("six", "odd-seven"), kind=SWITCH,
               doc="24.02 multiplies the stored fraction by 10^(6-n) although MariaDB keeps odd precisions n=1,3,5 "
                   "in units of 10^-(n+1) s: those print 7 digits (odd-seven); six: always .ffffff when n > 0."),
    OptionSpec("empty-blob", "empty", ("empty", "nul"), kind=SWITCH,
               doc="24.02 writes an empty TEXT/BLOB value as one NUL character, \"\\u0000\" (nul); empty: \"\"."),
    OptionSpec("temporal-text", "padded", ("padded", "strftime"), kind=SWITCH,
               doc="24.02 prints dates with strftime's %Y (no padding: the zero date is 0-00-00), the zero "
                   "TIMESTAMP as 0-00-00 00:00:00 and YEAR 0 as 1900 (strftime); padded: MariaDB's own text."),
    OptionSpec("schema-on-alter", "always", ("always", "after-rows"), kind=SWITCH,
               doc="24.02 sends a schema event for an ALTER only if a row of the table was seen since its last "
                   "schema event, else it changes the columns silently (after-rows); always: whenever the table's "
                   "format changes, as the docs say."),
    OptionSpec("schema-types", "code", ("code", "docs"), kind=SWITCH,
               doc="docs: the docs' example (MaxScale 2.4): integer columns are [\"null\", \"long\"] and real_type is "
                   "lower case; code (2.5+): the Avro type from the lower-cased DDL type token, real_type as written."),
)

PROFILES = (
    Profile("current", {}, "MaxScale's message format (24.02 code), the table's data rendered faithfully (default)."),
    Profile("maxscale-24.02", {"bigint-unsigned": "wrap", "decimal": "double", "enum-set": "hex", "bit": "zero",
                               "fraction-digits": "odd-seven", "empty-blob": "nul", "temporal-text": "strftime",
                               "schema-on-alter": "after-rows"},
            "What MaxScale 24.02 really emits, value quirks included (spec/notes/maxscale.md §4, §5.1)."),
    Profile("docs", {"schema-types": "docs"}, "The documented schema example (seed 004): INT as long."),
)


@dataclass(frozen=True, slots=True)
class CdcOptions:
    topic: str = "kafkacdc"
    send_schema: bool = True
    match: str = ""
    exclude: str = ""
    read_gtid_from_kafka: bool = True
    time_zone: str = "UTC"
    bigint_wrap: bool = False
    decimal_double: bool = False
    enum_set_hex: bool = False
    bit_zero: bool = False
    odd_seven: bool = False
    empty_blob_nul: bool = False
    strftime_text: bool = False
    alter_after_rows: bool = False
    docs_types: bool = False

    @classmethod
    def from_options(cls, o: Mapping[str, str]) -> CdcOptions:
        return _parse(tuple(sorted(o.items())))

    @property
    def filtered(self) -> bool:
        return bool(self.match or self.exclude)

    def passes(self, table_id: str) -> bool:
        """`(match empty || match) && (exclude empty || !exclude)` on the sanitized `db.table`
        (kafkacdc.cc table_matches): an unanchored, case-sensitive search (notes §7)."""
        m, x = _regex(self.match), _regex(self.exclude)
        return (m is None or m.search(table_id) is not None) and (x is None or x.search(table_id) is None)

    @property
    def tz(self) -> zoneinfo.ZoneInfo:
        return _zone(self.time_zone)


@functools.lru_cache(maxsize=64)
def _parse(items: tuple[tuple[str, str], ...]) -> CdcOptions:
    o = dict(items)

    def flag(name: str, on: str) -> bool:
        return o.get(name, "") == on

    return CdcOptions(
        topic=o.get("topic", "kafkacdc"), send_schema=o.get("send_schema", "true").lower() != "false",
        match=o.get("match", ""), exclude=o.get("exclude", ""),
        read_gtid_from_kafka=o.get("read_gtid_from_kafka", "true").lower() != "false",
        time_zone=o.get("time-zone", "UTC") or "UTC",
        bigint_wrap=flag("bigint-unsigned", "wrap"), decimal_double=flag("decimal", "double"),
        enum_set_hex=flag("enum-set", "hex"), bit_zero=flag("bit", "zero"),
        odd_seven=flag("fraction-digits", "odd-seven"), empty_blob_nul=flag("empty-blob", "nul"),
        strftime_text=flag("temporal-text", "strftime"), alter_after_rows=flag("schema-on-alter", "after-rows"),
        docs_types=flag("schema-types", "docs"),
    )


@functools.lru_cache(maxsize=64)
def _regex(pattern: str) -> re.Pattern[str] | None:
    return re.compile(pattern) if pattern else None


@functools.lru_cache(maxsize=16)
def _zone(name: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(name)


def combination_problems(options: Mapping[str, str]) -> list[str]:
    problems = []
    for name in ("match", "exclude"):
        try:
            _regex(options.get(name, ""))
        except re.error as e:
            problems.append(f"{name}={options.get(name)!r} is not a regular expression: {e}")
    try:
        _zone(options.get("time-zone", "UTC") or "UTC")
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        problems.append(f"time-zone {options.get('time-zone')!r} is not an IANA time zone name")
    if not options.get("topic", "kafkacdc"):
        problems.append("topic must not be empty (KafkaCDC's topic parameter is mandatory)")
    return problems


# -- names ------------------------------------------------------------------------------------------

_NOT_AVRO = re.compile(rb"[^A-Za-z0-9_]")


def sanitize(name: str) -> str:
    """`avro_sanitizer` (rpl.cc): every byte that is not [A-Za-z0-9_] becomes `_` (a two-byte
    UTF-8 character becomes `__`); a name that equals a fixed field's, case-insensitively, gets
    a trailing `_`."""
    out = _NOT_AVRO.sub(b"_", name.encode("utf-8")).decode("ascii")
    return out + "_" if out.lower() in RESERVED else out


def table_id(database: str, table: str) -> str:
    """`Table::id()`: what match/exclude are matched against (sanitized names, a period between)."""
    return f"{sanitize(database)}.{sanitize(table)}"


# -- types ------------------------------------------------------------------------------------------

_INT_TYPES = frozenset({"tinyint", "boolean", "smallint", "mediumint", "int", "integer"})
_LONG_TYPES = frozenset({"bigint", "serial"})
_DOUBLE_TYPES = frozenset({"double", "decimal", "numeric", "fixed", "dec", "real"})
_BYTES_TYPES = frozenset({"tinyblob", "blob", "mediumblob", "longblob", "tinytext", "text", "mediumtext",
                          "longtext", "binary"})


def avro_type(real_type: str, *, docs: bool = False) -> str:
    """`column_type_to_avro_type` (rpl.cc, notes §2.1): chosen from the lower-cased type token of
    the DDL, whatever the binlog type; `docs`: the documented example's integers as long."""
    t = real_type.lower()
    if t in _INT_TYPES:
        return "long" if docs else "int"
    if t in _LONG_TYPES:
        return "long"
    if t in _DOUBLE_TYPES:
        return "double"
    if t in _BYTES_TYPES:
        return "bytes"
    if t == "float":
        return "float"
    return "string"


#: JSON kinds of a value by the binlog decoder's path (notes §4: "JSON type follows the binlog
#: decoder path, not the schema's avro type"): integers for every integer and BIT column (BOOL,
#: INT1..INT8 and MIDDLEINT too, whose DDL token maps to "string"), numbers for FLOAT, DOUBLE and
#: DECIMAL (FLOAT4/FLOAT8 too), strings for everything else.
INTEGER_TOKENS = frozenset({"tinyint", "bool", "boolean", "smallint", "mediumint", "middleint", "int", "integer",
                            "int1", "int2", "int3", "int4", "int8", "bigint", "serial", "bit"})
NUMBER_TOKENS = frozenset({"float", "float4", "float8", "double", "real", "decimal", "dec", "numeric", "fixed"})


def json_family(real_type: str) -> str:
    """"integer", "number" or "string": what JSON a column with this real_type holds."""
    t = real_type.lower()
    if t in INTEGER_TOKENS:
        return "integer"
    if t in NUMBER_TOKENS:
        return "number"
    return "string"


# What MariaDB's SHOW CREATE TABLE prints for each kind (tables MaxScale discovers that way).
_SHOW_CREATE = {Kind.BOOL: "tinyint", Kind.JSON: "longtext", Kind.TIMESTAMP: "timestamp"}


def type_token(t: SqlType, *, discovered: bool = False) -> str:
    """The first token of the column's type in the DDL (`DOUBLE` of `DOUBLE PRECISION`)."""
    if discovered:
        return _SHOW_CREATE.get(t.kind, t.kind.value.lower())
    return (t.spelling or t.kind.value).split()[0].split("(")[0]


def real_type(t: SqlType, *, discovered: bool = False, docs: bool = False) -> str:
    """`real_type`: the type token as written, through the sanitizer (TIMESTAMP -> TIMESTAMP_),
    notes §2.2; lower case for tables discovered through SHOW CREATE TABLE (and in the docs)."""
    tok = sanitize(type_token(t, discovered=discovered))
    return tok.lower() if docs else tok


@dataclass(frozen=True, slots=True)
class SchemaColumn:
    name: str  # sanitized
    real_type: str
    avro: str
    unsigned: bool
    length: int = -1
    source: Column | None = None


def schema_columns(table: Table, *, discovered: bool = False, docs: bool = False) -> tuple[SchemaColumn, ...]:
    out = []
    for c in table.columns:
        rt = real_type(c.type, discovered=discovered, docs=docs)
        out.append(SchemaColumn(sanitize(c.name), rt, avro_type(rt, docs=docs), c.type.unsigned, -1, c))
    return tuple(out)


# -- GTIDs and keys ---------------------------------------------------------------------------------

FALLBACK_SERVER_ID = 1


def gtid_of(event: Transaction | Ddl) -> Gtid:
    """The event's GTID: its MariaDB position (a real server's, or the one a generated MariaDB
    workload carries); events that never had one (another dialect's workloads, hand-made ones)
    get `0-1-<commit ts>`, deterministic and increasing in commit order."""
    if event.position is not None:
        g = Gtid.parse(event.position)
        if g is not None:
            return g
    return Gtid(0, FALLBACK_SERVER_ID, event.commit_ts)


def event_seconds(event: Event) -> int:
    """The DML `timestamp`: the binlog header time of the row event, in seconds (uint32)."""
    ts = event.commit_ts if isinstance(event, (Transaction, Ddl)) else 0
    return tso_physical_ms(ts) // 1000 % UINT32


def dml_key(g: Gtid, event_number: int) -> str:
    return f"{g}:{event_number}"


_KEY = re.compile(r"(\d+)-(\d+)-(\d+)(?::(\d+))?")


def parse_key(key: str) -> tuple[Gtid, int | None] | None:
    """`d-s-q` (schema) or `d-s-q:n` (DML); None if it is neither."""
    m = _KEY.fullmatch(key)
    if m is None or not key.isascii():
        return None
    g = Gtid.parse(f"{m.group(1)}-{m.group(2)}-{m.group(3)}")
    if g is None:
        return None
    return g, (int(m.group(4)) if m.group(4) is not None else None)


# -- values -----------------------------------------------------------------------------------------

BLOB_PATH = frozenset({Kind.TINYTEXT, Kind.TEXT, Kind.MEDIUMTEXT, Kind.LONGTEXT, Kind.TINYBLOB, Kind.BLOB,
                       Kind.MEDIUMBLOB, Kind.LONGBLOB, Kind.JSON})
_CODECS = {"utf8mb4": "utf-8", "utf8": "utf-8", "ascii": "ascii", "latin1": "cp1252"}


@dataclass(frozen=True, slots=True)
class Raw:
    """A JSON token written as is (numbers whose text matters: DECIMAL's digits, jansson reals)."""

    text: str


def jansson_real(x: float) -> str:
    """jansson's `jsonp_dtostr`: %.17g, `.0` when neither a point nor an exponent shows, `+` and
    leading zeros dropped from the exponent."""
    s = format(x, ".17g")
    if "." not in s and "e" not in s:
        s += ".0"
    if "e" in s:
        mant, exp = s.split("e")
        sign = "-" if exp.startswith("-") else ""
        s = f"{mant}e{sign}{exp.lstrip('+-').lstrip('0') or '0'}"
    return s


def stored_bytes(t: SqlType, v: str | bytes) -> bytes:
    """The bytes a row image holds for a string value (text in the column's charset; BINARY(n)
    without the trailing zero padding the server strips from the image)."""
    if isinstance(v, bytes):
        return v.rstrip(b"\x00") if t.kind is Kind.BINARY else v
    try:
        return v.encode(_CODECS.get(t.charset or "utf8mb4", "utf-8"))
    except UnicodeEncodeError:
        return v.encode("utf-8")


def bytes_text(raw: bytes) -> str:
    """What KafkaCDC makes of a string's bytes (24.08+, MXS-5246; the avrorouter's [test]
    cdc_datatypes oracle): valid UTF-8 as it is (a NUL kept), anything else as lowercase hex."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.hex()


def enum_set_hex(t: SqlType, v: str | tuple[str, ...]) -> str:
    """24.02: `mxs::bin2hex` (UPPERCASE) of the stored little-endian ENUM index / SET bitmask."""
    if t.kind is Kind.ENUM:
        assert isinstance(v, str)
        size = 1 if len(t.elements) < 256 else 2
        n = enum_index(t, v) if v in t.elements else 0
    else:
        assert isinstance(v, tuple)
        size = (len(t.elements) + 7) // 8
        size = 8 if size > 4 else size
        n = set_bitmask(t, v)
    return n.to_bytes(size, "little").hex().upper()


def fraction_text(micro: int, fsp: int, o: CdcOptions) -> str:
    """`.%06d` of the stored fraction scaled by 10^(6-fsp) (rpl.cc): exact for even fsp; for odd
    fsp MariaDB stores units of 10^-(fsp+1) s, so 24.02 prints micro*10 (odd-seven)."""
    if not fsp:
        return ""
    if o.odd_seven and fsp % 2:
        return f".{micro * 10:06d}"
    return f".{micro:06d}"


def _year_text(y: int, o: CdcOptions) -> str:
    return str(y) if o.strftime_text else f"{y:04d}"


def date_text(v: Date, o: CdcOptions) -> str:
    return f"{_year_text(v.year, o)}-{v.month:02d}-{v.day:02d}"


def datetime_text(v: DateTime, fsp: int, o: CdcOptions) -> str:
    return (f"{_year_text(v.year, o)}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
            + fraction_text(v.microsecond, fsp, o))


def timestamp_text(v: DateTime, fsp: int, o: CdcOptions) -> str:
    """`localtime_r` in MaxScale's zone; the zero value as 0-00-00 00:00:00 (strftime) or
    0000-00-00 00:00:00 (padded)."""
    if v.is_zero:
        base = "0-00-00 00:00:00" if o.strftime_text else "0000-00-00 00:00:00"
        return base + fraction_text(v.microsecond, fsp, o)
    return datetime_text(v.in_zone(o.tz), fsp, o)


def time_text(v: Time, fsp: int, o: CdcOptions) -> str:
    return v.text(0) + fraction_text(v.microsecond, fsp, o)


def year_text(y: int, o: CdcOptions) -> str:
    """YEAR: strftime("%Y") of 1900 + the stored byte: YEAR 0 is 1900 in 24.02."""
    if y == 0:
        return "1900" if o.strftime_text else "0000"
    return str(y)


def value(t: SqlType, v: Value, o: CdcOptions) -> object:
    """The JSON a DML event carries for a column value: None, int, str, or Raw (a number whose
    text is given)."""
    if v is None:
        return None
    k = t.kind
    if k in (Kind.BOOL, Kind.TINYINT, Kind.SMALLINT, Kind.MEDIUMINT, Kind.INT, Kind.BIGINT):
        assert isinstance(v, int)
        if k is Kind.BIGINT and o.bigint_wrap and v >= 1 << 63:
            return v - (1 << 64)
        return int(v)
    if k is Kind.BIT:
        assert isinstance(v, int)
        return 0 if o.bit_zero else v
    if k in (Kind.FLOAT, Kind.DOUBLE):
        assert isinstance(v, float)
        return Raw(jansson_real(v))
    if k is Kind.DECIMAL:
        assert isinstance(v, decimal.Decimal) and t.scale is not None
        return Raw(jansson_real(float(v)) if o.decimal_double else decimal_text(v, t.scale))
    if k in (Kind.ENUM, Kind.SET):
        assert isinstance(v, (str, tuple))
        if o.enum_set_hex:
            return enum_set_hex(t, v)
        return v if isinstance(v, str) else set_text(t, v)
    if k is Kind.DATE:
        assert isinstance(v, Date)
        return date_text(v, o)
    if k is Kind.DATETIME:
        assert isinstance(v, DateTime)
        return datetime_text(v, t.fsp, o)
    if k is Kind.TIMESTAMP:
        assert isinstance(v, DateTime)
        return timestamp_text(v, t.fsp, o)
    if k is Kind.TIME:
        assert isinstance(v, Time)
        return time_text(v, t.fsp, o)
    if k is Kind.YEAR:
        assert isinstance(v, int)
        return year_text(v, o)
    if k in (Kind.INET4, Kind.INET6):
        assert isinstance(v, (ipaddress.IPv4Address, ipaddress.IPv6Address))
        return str(v)
    if k is Kind.UUID:
        assert isinstance(v, uuid.UUID)
        return str(v)
    if k is Kind.JSON:
        assert isinstance(v, Json)
        raw = v.text().encode("utf-8")
    else:
        assert isinstance(v, (str, bytes)), (t, v)
        raw = stored_bytes(t, v)
    if not raw and k in BLOB_PATH:
        return "\x00" if o.empty_blob_nul else ""
    return bytes_text(raw)


assert set(BLOB_MAX_BYTES) <= BLOB_PATH
