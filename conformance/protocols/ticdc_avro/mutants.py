"""Deliberately broken TiCDC Avro encoders: the reference with exactly one defect each.

Each mutant names the check that must catch it, the options under which the defect shows,
and (optionally) a workload shape that makes the defect likely to appear. The project's tests
run every mutant and assert that its check fails, while the reference passes everything.
Many defects are ones real encoders have had (Debezium-style dates, fastavro's decimal bytes,
TiCDC's own old FLOAT mapping, new-architecture BIT padding…).
"""

from __future__ import annotations

import json
import struct
import time
import zlib
from typing import Any

import fastavro

from ...encoders.spi import EncoderError, Record
from ...model.events import Ddl, DdlKind, Event, Op, RowChange, Transaction
from ...model.table import Column, DefaultKind, Table
from ...model.types import Kind
from ...model.values import Row, bit_bytes_min, bit_bytes_padded, to_float32
from ..mutants import MutantRegistry
from . import spec, watermark
from .checks import CHECKS
from .encoder import TiCDCAvroEncoder, _Plan, strip_logical_types

mutant = MUTANTS = MutantRegistry(CHECKS)


def _kinds(*kinds: Kind) -> dict[str, Any]:
    return {"kinds": kinds, "edge_rate": 0.5}


# -- framing / registry -----------------------------------------------------------------------

@mutant("magic-byte-one", "framing.magic-byte")
class MagicByteOne(TiCDCAvroEncoder):
    """Frames records with magic byte 0x01 instead of 0x00."""

    def frame(self, schema_id: int, body: bytes) -> bytes:
        return b"\x01" + super().frame(schema_id, body)[1:]


@mutant("schema-id-little-endian", "framing.schema-id")
class SchemaIdLittleEndian(TiCDCAvroEncoder):
    """Writes the schema id little-endian."""

    def frame(self, schema_id: int, body: bytes) -> bytes:
        return b"\x00" + struct.pack("<i", schema_id) + body


@mutant("trailing-byte", "framing.body")
class TrailingByte(TiCDCAvroEncoder):
    """Appends a stray byte after the Avro body."""

    def write_body(self, parsed: Any, datum: dict[str, Any]) -> bytes:
        return super().write_body(parsed, datum) + b"\x00"


@mutant("subject-record-name", "registry.subject")
class SubjectRecordName(TiCDCAvroEncoder):
    """Registers under RecordNameStrategy subjects (`<namespace>.<name>-value`) instead of the topic's."""

    _current: tuple[str, str] = ("", "")

    def schema_dict(self, table: Table, part: str) -> dict[str, Any]:
        d = super().schema_dict(table, part)
        self._current = (d["namespace"], d["name"])
        return d

    def subject(self, topic: str, part: str) -> str:
        return f"{self._current[0]}.{self._current[1]}-{part}"


# -- schema shape -----------------------------------------------------------------------------

@mutant("union-order-ignores-default", "schema.valid-avro", shape={"default_rate": 0.9})
class UnionOrderIgnoresDefault(TiCDCAvroEncoder):
    """Always writes ["null", T], even when the default is not null (an invalid Avro default)."""

    def column_field(self, col: Column) -> dict[str, Any]:
        f = super().column_field(col)
        if isinstance(f["type"], list) and f["type"][1] == "null":
            f["type"] = ["null", f["type"][0]]
        return f


@mutant("namespace-without-changefeed", "schema.record-name")
class NamespaceWithoutChangefeed(TiCDCAvroEncoder):
    """Uses the database alone as namespace (drops the `default.` changefeed namespace)."""

    def record_namespace(self, table: Table, part: str) -> str:
        return spec.sanitize_name(table.database)


@mutant("key-record-suffix", "schema.key-value-names")
class KeyRecordSuffix(TiCDCAvroEncoder):
    """Names the key record `<table>_key`, Debezium style."""

    def schema_dict(self, table: Table, part: str) -> dict[str, Any]:
        d = super().schema_dict(table, part)
        if part == "key":
            d["name"] = d["name"] + "_key"
        return d


@mutant("field-names-lowercased", "schema.field-names", shape={"odd_name_rate": 0.0})
class FieldNamesLowercased(TiCDCAvroEncoder):
    """Lower-cases field names."""

    def field_name(self, col: Column) -> str:
        return spec.sanitize_name(col.name).lower()


@mutant("fields-sorted-by-name", "schema.field-order", shape={"columns": (4, 8)})
class FieldsSortedByName(TiCDCAvroEncoder):
    """Orders value fields by name instead of by column position."""

    def value_columns(self, table: Table) -> tuple[Column, ...]:
        return tuple(sorted(super().value_columns(table), key=lambda c: spec.sanitize_name(c.name)))


@mutant("not-null-as-union", "schema.nullability")
class NotNullAsUnion(TiCDCAvroEncoder):
    """Makes every column nullable in the schema, NOT NULL ones included."""

    def column_field(self, col: Column) -> dict[str, Any]:
        f = super().column_field(col)
        if not isinstance(f["type"], list):
            return {"default": None, "name": f["name"], "type": ["null", f["type"]]}
        return f


@mutant("defaults-dropped", "schema.default", shape={"default_rate": 0.9})
class DefaultsDropped(TiCDCAvroEncoder):
    """Ignores DDL defaults: nullable columns get ["null", T] / null, NOT NULL ones no default."""

    def column_field(self, col: Column) -> dict[str, Any]:
        t = spec.avro_type(col, self.o)
        if col.nullable:
            return {"default": None, "name": self.field_name(col), "type": ["null", t]}
        return {"name": self.field_name(col), "type": t}


@mutant("no-connect-parameters", "schema.connect-parameters")
class NoConnectParameters(TiCDCAvroEncoder):
    """Leaves out `connect.parameters` (plain Avro types)."""

    def column_field(self, col: Column) -> dict[str, Any]:
        f = super().column_field(col)

        def strip(t: Any) -> Any:
            if isinstance(t, dict):
                return {k: v for k, v in t.items() if k != "connect.parameters"}
            return t

        f["type"] = [strip(x) for x in f["type"]] if isinstance(f["type"], list) else strip(f["type"])
        return f


# -- type table -------------------------------------------------------------------------------

class _TypeMutant(TiCDCAvroEncoder):
    """Base: change the Avro type object and/or value of one family."""

    family: str = ""

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return t

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return v

    def column_field(self, col: Column) -> dict[str, Any]:
        f = super().column_field(col)
        if spec.family(col) != self.family:
            return f
        if isinstance(f["type"], list):
            f["type"] = [x if x == "null" else self.mutate_type(col, dict(x)) for x in f["type"]]
        else:
            f["type"] = self.mutate_type(col, dict(f["type"]))
        return f

    def native_value(self, col: Column, row: Row) -> Any:
        v = super().native_value(col, row)
        if v is None or spec.family(col) != self.family:
            return v
        return self.mutate_value(col, v, row[col.name])


@mutant("int-as-long", "type.int", shape=_kinds(Kind.INT, Kind.SMALLINT))
class IntAsLong(_TypeMutant):
    """Maps signed INT columns to Avro long."""

    family = spec.Family.INT

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "long"}


@mutant("int-unsigned-tidb-type", "type.int-unsigned", shape=_kinds(Kind.INT, Kind.TINYINT))
class IntUnsignedTidbType(_TypeMutant):
    """Labels unsigned integer columns tidb_type INT (drops UNSIGNED)."""

    family = spec.Family.INT_UNSIGNED

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "connect.parameters": {**t["connect.parameters"], "tidb_type": "INT"}}


@mutant("bigint-truncated", "type.bigint", shape=_kinds(Kind.BIGINT))
class BigintTruncated(_TypeMutant):
    """Writes BIGINT as a 32-bit int (values wrap)."""

    family = spec.Family.BIGINT

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "int"}

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return struct.unpack("<i", struct.pack("<I", v & 0xFFFFFFFF))[0]


@mutant("bigint-unsigned-clamped", "type.bigint-unsigned", shape=_kinds(Kind.BIGINT))
class BigintUnsignedClamped(_TypeMutant):
    """Clamps BIGINT UNSIGNED values above 2^63-1 instead of letting them wrap (long mode)."""

    family = spec.Family.BIGINT_UNSIGNED

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        if isinstance(v, int) and raw >= 1 << 63:
            return (1 << 63) - 1
        return v


@mutant("bigint-unsigned-string-signed", "type.bigint-unsigned",
        needs={"avro-bigint-unsigned-handling-mode": "string"}, shape=_kinds(Kind.BIGINT))
class BigintUnsignedStringSigned(_TypeMutant):
    """In string mode, renders BIGINT UNSIGNED as the signed (wrapped) number."""

    family = spec.Family.BIGINT_UNSIGNED

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return str(raw - (1 << 64) if raw >= 1 << 63 else raw)


@mutant("float-as-double", "type.float", shape=_kinds(Kind.FLOAT))
class FloatAsDouble(_TypeMutant):
    """Maps FLOAT to double under the current profile (TiCDC's pre-v6.5.2 behaviour): the regression
    of https://github.com/pingcap/tiflow/issues/8490 (fixed by tiflow#8567), catalogued in
    docs/regressions.md; the `float-as-double` profile switch is the same behaviour as an option."""

    family = spec.Family.FLOAT

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "double"}


@mutant("double-as-float", "type.double", shape=_kinds(Kind.DOUBLE))
class DoubleAsFloat(_TypeMutant):
    """Maps DOUBLE to float, losing precision."""

    family = spec.Family.DOUBLE

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "float"}

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return to_float32(v)  # ±inf beyond float32's range, as Go's float32(v) gives


@mutant("bit-padded", "type.bit", shape=_kinds(Kind.BIT))
class BitPadded(_TypeMutant):
    """Pads BIT values to ceil(M/8) bytes (the new-architecture TiCDC behaviour, not tiflow's)."""

    family = spec.Family.BIT

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        assert col.type.length is not None
        return bit_bytes_padded(raw, col.type.length)


@mutant("bit-minimal-under-ticdc-next", "type.bit", needs={"bit-bytes": "padded"}, shape=_kinds(Kind.BIT))
class BitMinimalUnderTicdcNext(_TypeMutant):
    """Under the ticdc-next profile, trims BIT values to their minimal bytes (tiflow's form) where
    new-architecture TiCDC pads them to ceil(M/8)."""

    family = spec.Family.BIT

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return bit_bytes_min(raw)


@mutant("decimal-bytes-little-endian", "type.decimal", shape=_kinds(Kind.DECIMAL))
class DecimalLittleEndian(_TypeMutant):
    """Writes precise decimals' two's-complement bytes little-endian."""

    family = spec.Family.DECIMAL

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return v[::-1] if isinstance(v, bytes) else v


@mutant("decimal-string-normalized", "type.decimal", needs={"avro-decimal-handling-mode": "string"},
        shape=_kinds(Kind.DECIMAL))
class DecimalStringNormalized(_TypeMutant):
    """In string mode, drops trailing fraction zeros ("1.50" -> "1.5")."""

    family = spec.Family.DECIMAL

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        if isinstance(v, str) and "." in v:
            return v.rstrip("0").rstrip(".")
        return v


@mutant("decimal-sign-byte", "type.decimal-minimal-bytes", shape=_kinds(Kind.DECIMAL))
class DecimalSignByte(_TypeMutant):
    """Prefixes every precise decimal with a sign byte (valid Avro, not minimal)."""

    family = spec.Family.DECIMAL

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        if isinstance(v, bytes):
            return (b"\xff" if v[0] >= 0x80 else b"\x00") + v
        return v


@mutant("text-as-bytes", "type.text", shape=_kinds(Kind.VARCHAR, Kind.TEXT))
class TextAsBytes(_TypeMutant):
    """Maps text columns to bytes."""

    family = spec.Family.TEXT

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "bytes"}

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return v.encode("utf-8")


@mutant("binary-padding-stripped", "type.blob", shape=_kinds(Kind.BINARY))
class BinaryPaddingStripped(_TypeMutant):
    """Strips the zero padding of BINARY(n) values."""

    family = spec.Family.BLOB

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return v.rstrip(b"\x00") if col.type.kind is Kind.BINARY else v


@mutant("enum-as-index", "type.enum", shape=_kinds(Kind.ENUM))
class EnumAsIndex(_TypeMutant):
    """Sends ENUM values as their 1-based index."""

    family = spec.Family.ENUM

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return str(spec.enum_value_index(col, raw))


@mutant("set-reversed", "type.set", shape=_kinds(Kind.SET))
class SetReversed(_TypeMutant):
    """Joins SET members in reverse definition order."""

    family = spec.Family.SET

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return ",".join(reversed(v.split(","))) if v else v


@mutant("json-compact", "type.json", shape=_kinds(Kind.JSON))
class JsonCompact(_TypeMutant):
    """Writes JSON without MySQL's spacing (`{"a":1}` instead of `{"a": 1}`)."""

    family = spec.Family.JSON

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return json.dumps(raw.data, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


@mutant("date-as-days", "type.date", shape=_kinds(Kind.DATE))
class DateAsDays(_TypeMutant):
    """Sends DATE as days since the epoch (Avro's date logical type, Debezium style)."""

    family = spec.Family.DATE

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "int", "logicalType": "date"}

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        import datetime as dt

        try:
            return (dt.date(raw.year, raw.month, raw.day) - dt.date(1970, 1, 1)).days
        except ValueError:  # the zero date, zero parts, Feb 31: no calendar day
            return 0


@mutant("datetime-iso-t", "type.datetime", shape=_kinds(Kind.DATETIME))
class DatetimeIsoT(_TypeMutant):
    """Separates date and time with "T" (ISO 8601) instead of a space."""

    family = spec.Family.DATETIME

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return v.replace(" ", "T", 1)


@mutant("timestamp-utc-suffix", "type.timestamp", shape=_kinds(Kind.TIMESTAMP))
class TimestampUtcSuffix(_TypeMutant):
    """Appends "Z" to TIMESTAMP values."""

    family = spec.Family.TIMESTAMP

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return v + "Z"


@mutant("time-hours-mod-24", "type.time", shape=_kinds(Kind.TIME))
class TimeHoursMod24(_TypeMutant):
    """Wraps TIME hours at 24 (treats TIME as a time of day)."""

    family = spec.Family.TIME

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        sign = "-" if v.startswith("-") else ""
        h, rest = v.lstrip("-").split(":", 1)
        return f"{sign}{int(h) % 24:02d}:{rest}"


@mutant("year-as-string", "type.year", shape=_kinds(Kind.YEAR))
class YearAsString(_TypeMutant):
    """Sends YEAR as a string."""

    family = spec.Family.YEAR

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        return {**t, "type": "string"}

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return str(v)


@mutant("invalid-date-as-zero", "type.date", shape=_kinds(Kind.DATE))
class InvalidDateAsZero(_TypeMutant):
    """Sends a date with zero parts or a day past the month's end (`2020-00-15`, `2021-02-31`,
    stored under a relaxed sql_mode) as the zero date, as a server without ALLOW_INVALID_DATES
    would have stored it: TiDB prints the stored date as it is."""

    family = spec.Family.DATE

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        import calendar

        if raw.is_zero or raw.month == 0 or raw.day == 0 or raw.day > calendar.monthrange(raw.year, raw.month)[1]:
            return "0000-00-00"
        return v


@mutant("vector-json-spacing", "type.vector", shape=_kinds(Kind.VECTOR))
class VectorJsonSpacing(_TypeMutant):
    """Writes VECTOR values with JSON's spacing and Python's float digits (`[1.0, 2.5]`), not
    TiDB's VectorFloat32.String() (`[1,2.5]`)."""

    family = spec.Family.VECTOR

    def mutate_value(self, col: Column, v: Any, raw: Any) -> Any:
        return "[" + ", ".join(repr(x) for x in raw.elements) + "]"


@mutant("allowed-quotes-verbatim", "type.enum", shape=_kinds(Kind.ENUM))
class AllowedQuotesVerbatim(_TypeMutant):
    """Lists ENUM members in `allowed` with their quotes as they are (`two''quotes`), without
    TiCDC's EscapeEnumAndSetOptions rewriting `''` and `\\'` to `'`."""

    family = spec.Family.ENUM

    def mutate_type(self, col: Column, t: dict[str, Any]) -> dict[str, Any]:
        params = dict(t["connect.parameters"])
        params["allowed"] = ",".join(e.replace(",", "\\,") for e in col.type.elements)
        return {**t, "connect.parameters": params}


# -- generated columns, defaults ---------------------------------------------------------------

GENERATED = {"generated_rate": 1.0, "columns": (2, 5)}


@mutant("virtual-column-in-value", "schema.field-names", shape=GENERATED)
class VirtualColumnInValue(TiCDCAvroEncoder):
    """Writes virtual generated columns as value fields (TiCDC never has them: they are in no row)."""

    def value_columns(self, table: Table) -> tuple[Column, ...]:
        return table.columns_by_id() if self.o.checksum else table.columns


@mutant("handle-key-on-virtual-index", "key.columns", shape={**GENERATED, "columns": (1, 3)})
class HandleKeyOnVirtualIndex(TiCDCAvroEncoder):
    """Takes a unique index over a virtual generated column as the handle key, which TiCDC skips
    (IsIndexUnique): the key then holds the virtual column's value."""

    def key_columns(self, table: Table) -> tuple[Column, ...]:
        if table.primary_key is not None:
            return table.handle_key_columns()
        candidates = [ix for ix in table.indexes
                      if ix.unique and all(not table.column(c).nullable for c in ix.columns)]
        if not candidates:
            return ()
        ix = min(candidates, key=lambda i: (len(i.columns), i.index_id))
        return tuple(c for c in table.columns if c.name in ix.columns)


_NULL_TEXT_DEFAULT = {"kinds": (Kind.VARCHAR, Kind.CHAR, Kind.ENUM, Kind.SET), "edge_rate": 0.6,
                      "default_rate": 0.9, "columns": (3, 8)}


def _null_text_default(col: Column) -> bool:
    return col.nullable and col.default.kind is DefaultKind.VALUE and (
        col.default.value == "null" or col.default.value == ("null",))


@mutant("null-text-default-as-null", "schema.default", shape=_NULL_TEXT_DEFAULT)
class NullTextDefaultAsNull(TiCDCAvroEncoder):
    """Writes a nullable column whose DDL default is the text 'null' as ["null", T] with default
    "null" (TiCDC v8.5.2-v8.5.7) under the current profile, where it is an ordinary string default."""

    def column_field(self, col: Column) -> dict[str, Any]:
        f = super().column_field(col)
        if _null_text_default(col):
            return {"default": "null", "name": f["name"], "type": ["null", f["type"][0]]}
        return f


@mutant("v85-null-text-default-as-string", "schema.default", needs={"null-string-default": "null"},
        shape=_NULL_TEXT_DEFAULT)
class V85NullTextDefaultAsString(TiCDCAvroEncoder):
    """Under the v8.5 profile, writes a 'null' text default as an ordinary string default
    ([T, "null"]), as tiflow master does, not as v8.5.2-v8.5.7 did."""

    def column_field(self, col: Column) -> dict[str, Any]:
        f = super().column_field(col)
        if _null_text_default(col):
            return {"default": "null", "name": f["name"], "type": [f["type"][1], "null"]}
        return f


# -- keys, deletes, updates -------------------------------------------------------------------

@mutant("key-all-columns", "key.columns", shape={"columns": (3, 6)})
class KeyAllColumns(TiCDCAvroEncoder):
    """Puts every column in the key, not just the handle key."""

    def key_columns(self, table: Table) -> tuple[Column, ...]:
        return table.columns


@mutant("key-with-extension", "key.no-extension", needs={"enable-tidb-extension": "true"})
class KeyWithExtension(TiCDCAvroEncoder):
    """Adds the extension fields to the key too."""

    def extension_fields(self, part: str) -> list[dict[str, Any]]:
        return [spec.extension_field(n, self.o) for n in spec.expected_extension_names(self.o)]

    def encode_key(self, table: Table, topic: str, row: Row) -> bytes | None:
        p = self.plan(table, topic, "key")
        datum = {n: self.native_value(c, row) for c, n in zip(p.columns, p.field_names, strict=True)}
        datum.update(spec.extension_values("c", 0, None, self.o))
        return self.frame(p.schema_id, self.write_body(p.parsed, datum))


@mutant("delete-with-value", "delete.tombstone", shape={"transactions": (6, 12)})
class DeleteWithValue(TiCDCAvroEncoder):
    """Sends the old row as the value of a delete instead of a tombstone."""

    def delete_value(self, table: Table, topic: str, before: Row, commit_ts: int) -> bytes | None:
        return self.encode_value(table, topic, before, "d", commit_ts)


@mutant("no-update-split", "update.split-key-change", shape={"columns": (1, 2), "transactions": (8, 14)})
class NoUpdateSplit(TiCDCAvroEncoder):
    """Sends a key-changing UPDATE as one update of the new key (no DELETE + INSERT)."""

    def split_update(self, change: RowChange) -> bool:
        return False


@mutant("update-dropped", "event.records", shape={"transactions": (6, 12)})
class UpdateDropped(TiCDCAvroEncoder):
    """Sends nothing for plain UPDATEs."""

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Any]:
        if change.op is Op.UPDATE and not self.split_update(change):
            return []
        return super().encode_change(change, commit_ts)


# -- extension fields -------------------------------------------------------------------------

@mutant("extension-without-physical-time", "extension.fields", needs={"enable-tidb-extension": "true"})
class ExtensionWithoutPhysicalTime(TiCDCAvroEncoder):
    """Leaves out `_tidb_commit_physical_time`."""

    def extension_fields(self, part: str) -> list[dict[str, Any]]:
        return [f for f in super().extension_fields(part) if f["name"] != "_tidb_commit_physical_time"]

    def extension_values(self, op: str, commit_ts: int, table: Table, row: Row) -> dict[str, Any]:
        d = super().extension_values(op, commit_ts, table, row)
        d.pop("_tidb_commit_physical_time", None)
        return d


@mutant("op-update-as-c", "extension.op", needs={"enable-tidb-extension": "true"},
        shape={"transactions": (6, 12)})
class OpUpdateAsC(TiCDCAvroEncoder):
    """Marks updates with `_tidb_op` "c"."""

    def op_code(self, op: Op) -> str:
        return "c"


@mutant("physical-time-seconds", "extension.commit-ts", needs={"enable-tidb-extension": "true"})
class PhysicalTimeSeconds(TiCDCAvroEncoder):
    """Writes `_tidb_commit_physical_time` in seconds instead of milliseconds."""

    def extension_values(self, op: str, commit_ts: int, table: Table, row: Row) -> dict[str, Any]:
        d = super().extension_values(op, commit_ts, table, row)
        d["_tidb_commit_physical_time"] //= 1000
        return d


@mutant("checksum-over-text", "extension.checksum",
        needs={"enable-tidb-extension": "true", "integrity-check-level": "correctness",
               "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"})
class ChecksumOverText(TiCDCAvroEncoder):
    """Computes the row checksum over the values' text, not TiDB's binary layout."""

    def checksum(self, table: Table, row: Row) -> int:
        text = "|".join(repr(row[c.name]) for c in spec.value_columns(table, self.o))
        return zlib.crc32(text.encode("utf-8"))


# -- topics -----------------------------------------------------------------------------------

@mutant("topic-unsanitized", "topic.dispatch", shape={"odd_name_rate": 0.9})
class TopicUnsanitized(TiCDCAvroEncoder):
    """Substitutes schema and table names into the topic without replacing forbidden characters."""

    def topic(self, table: Table) -> str:
        assert self.ctx is not None
        return self.ctx.topic_prefix + self.o.topic.replace("{schema}", table.database).replace("{table}", table.name)


@mutant("single-topic", "topic.one-table", shape={"tables": (2, 3)})
class SingleTopic(TiCDCAvroEncoder):
    """Sends every table to one topic (subjects per table, so the registry accepts it)."""

    def topic(self, table: Table) -> str:
        assert self.ctx is not None
        return self.ctx.topic_prefix + "tidb_all"

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Any]:
        self._table = change.table
        return super().encode_change(change, commit_ts)

    def subject(self, topic: str, part: str) -> str:
        t = self._table
        return spec.subject(topic + "." + spec.substitute_topic("{schema}_{table}", t.database, t.name), part)


# -- control messages (avro-enable-watermark) -------------------------------------------------

_WATERMARK = {"enable-tidb-extension": "true", "avro-enable-watermark": "true"}


@mutant("watermark-ddl-keys-sorted", "watermark.ddl-message", needs=_WATERMARK)
class WatermarkDdlKeysSorted(TiCDCAvroEncoder):
    """Writes the DDL control record's JSON from a map (keys sorted), not the Go struct (declaration order)."""

    def ddl_value(self, d: Ddl) -> bytes:
        return b"\x01" + json.dumps(dict(sorted(watermark.ddl_fields(d).items())), separators=(",", ":"),
                                     ensure_ascii=False).encode("utf-8")


@mutant("watermark-checkpoint-little-endian", "watermark.checkpoint-message", needs=_WATERMARK)
class WatermarkCheckpointLittleEndian(TiCDCAvroEncoder):
    """Writes the checkpoint ts little-endian."""

    def checkpoint_value(self, ts: int) -> bytes:
        return b"\x02" + ts.to_bytes(8, "little")


@mutant("watermark-partition-zero", "watermark.broadcast", needs=_WATERMARK)
class WatermarkPartitionZero(TiCDCAvroEncoder):
    """Sends DDL and checkpoint records to partition 0 only (Canal's rule, not Avro's)."""

    def broadcast(self, topic: str, value: bytes) -> list[Record]:
        return super().broadcast(topic, value)[:1]


@mutant("watermark-before-rows", "watermark.order", needs=_WATERMARK, shape={"transactions": (6, 12)})
class WatermarkBeforeRows(TiCDCAvroEncoder):
    """Holds a transaction's rows back and sends them after the next DDL or checkpoint."""

    def __init__(self) -> None:
        super().__init__()
        self._held: list[Record] = []

    def encode(self, event: Event) -> list[Record]:
        out = super().encode(event)
        if isinstance(event, Transaction):
            self._held.extend(out)
            return []
        if out:
            out, self._held = out + self._held, []
        return out


# -- schema evolution and the registry's verdicts ----------------------------------------------

_EVOLVING = {"ddl_rate": 0.4, "transactions": (6, 14)}


@mutant("stale-id-after-rejection", "registry.rejection", needs={"registry-compatibility": "BACKWARD"},
        shape={**_EVOLVING, "evolutions": ("add-required", "narrow", "nullability")})
class StaleIdAfterRejection(TiCDCAvroEncoder):
    """When the registry refuses a table's new schema, goes on writing with the schema id it had before."""

    def __init__(self) -> None:
        super().__init__()
        self._last_ids: dict[tuple[str, str], int] = {}

    def plan(self, table: Table, topic: str, part: str) -> _Plan:
        try:
            p = super().plan(table, topic, part)
        except EncoderError:
            old = self._last_ids.get((topic, part))
            if old is None:
                raise
            schema = self.schema_dict(table, part)
            cols = self.key_columns(table) if part == "key" else self.value_columns(table)
            p = _Plan(old, fastavro.parse_schema(strip_logical_types(schema), _ignore_default_error=True), cols,
                      tuple(self.field_name(c) for c in cols))
            self._plans[(topic, table.table_id, table.version, part)] = p
        self._last_ids[(topic, part)] = p.schema_id
        return p


@mutant("subject-of-old-name", "registry.subject", needs={"registry-compatibility": "NONE"},
        shape={"ddl_rate": 0.5, "transactions": (6, 14), "ddl_kinds": (DdlKind.RENAME_TABLE,), "evolutions": ()})
class SubjectOfOldName(TiCDCAvroEncoder):
    """After RENAME TABLE, registers the table's schemas under the subject of its first name."""

    def __init__(self) -> None:
        super().__init__()
        self._first: dict[int, str] = {}
        self._topic: str | None = None

    def plan(self, table: Table, topic: str, part: str) -> _Plan:
        self._topic = self._first.setdefault(table.table_id, topic)
        return super().plan(table, topic, part)

    def subject(self, topic: str, part: str) -> str:
        return spec.subject(self._topic or topic, part)


@mutant("skip-registration-default-only", "schema.default",
        shape={**_EVOLVING, "evolutions": ("set-default",), "default_rate": 0.6})
class SkipRegistrationDefaultOnly(TiCDCAvroEncoder):
    """Registers no new schema when only a column's default changed: records keep the old schema id."""

    def __init__(self) -> None:
        super().__init__()
        self._by_shape: dict[tuple[Any, ...], _Plan] = {}

    def plan(self, table: Table, topic: str, part: str) -> _Plan:
        cols = self.key_columns(table) if part == "key" else self.value_columns(table)
        k = (topic, table.table_id, part, tuple((c.name, c.type, c.nullable) for c in cols))
        p = self._by_shape.get(k)
        if p is None:
            p = self._by_shape[k] = super().plan(table, topic, part)
        return p


# -- the encoder as a program -----------------------------------------------------------------

@mutant("crash-on-delete", "encoder.no-crash", shape={"transactions": (6, 12)})
class CrashOnDelete(TiCDCAvroEncoder):
    """Raises on every DELETE."""

    def delete_value(self, table: Table, topic: str, before: Row, commit_ts: int) -> bytes | None:
        raise RuntimeError("delete not supported")


@mutant("hang-on-ddl", "encoder.responsive", shape={"ddl_rate": 0.8})
class HangOnDdl(TiCDCAvroEncoder):
    """Never returns from an ALTER / TRUNCATE event."""

    def encode_other(self, event: Any) -> list[Any]:
        if isinstance(event, Ddl) and event.pre_table is not None:
            time.sleep(3600)
        return []
