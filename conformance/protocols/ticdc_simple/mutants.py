"""Deliberately broken TiCDC Simple encoders: the reference with exactly one defect each.

Each mutant names the check that must catch it, the options under which the defect shows,
and a workload shape that makes it likely. Several are behaviours real versions had or the
docs describe (the v7.6.0 draft's ENUM/SET names, TIMESTAMP as a plain string, Avro BIGINT
UNSIGNED as long-or-string, the docs' rule for disabling bootstraps).
"""

from __future__ import annotations

import base64
import contextlib
import json
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from ...encoders.spi import Record
from ...model.events import Ddl, Event, Op, RowChange, Transaction, tso
from ...model.table import Table
from ...model.types import Kind, SqlType
from ...model.values import Value, decimal_text, go_format_float
from ..kit import tables_of
from ..mutants import MutantRegistry
from . import codec, spec
from .checks import CHECKS
from .encoder import TiCDCSimpleEncoder, _TableState
from .spec import Family, SimpleOptions

mutant = MUTANTS = MutantRegistry(CHECKS)

# Options that make the periodic bootstraps frequent enough for a short workload to show them.
FREQUENT_BOOTSTRAPS = {"send-bootstrap-in-msg-count": "3"}
LARGE = {"large-message-handle-option": "handle-key-only", "max-message-bytes": "600"}
CLAIM_CHECK = {"large-message-handle-option": "claim-check", "max-message-bytes": "600",
               "claim-check-storage-uri": "file:///tmp/cdc-conformance-claim-check"}
# Commits seconds apart: TiCDC looks at bootstraps every 5 s, so count-driven ones need time to show.
SLOW = (1000, 4000)
WIDE = {"columns": (5, 8), "kinds": (Kind.VARCHAR, Kind.TEXT, Kind.BLOB, Kind.INT, Kind.DATETIME)}




def _kinds(*kinds: Kind, **more: Any) -> dict[str, Any]:
    return {"kinds": kinds, "edge_rate": 0.5, "null_rate": 0.05, **more}


class _MessageMutant(TiCDCSimpleEncoder):
    """Edits the message dicts (JSON form and Avro payload) before they are serialised."""

    def edit(self, kind: str, j: dict[str, Any], a: dict[str, Any]) -> None:
        raise NotImplementedError

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        j, a = dict(json_msg), dict(avro_payload)
        self.edit(kind, j, a)
        return super().serialize(kind, j, a)


# -- transport and framing --------------------------------------------------------------------------

@mutant("key-set", "kafka.key-null")
class KeySet(TiCDCSimpleEncoder):
    """Sets the Kafka key of row messages to the table name."""

    def row_key(self, change: RowChange) -> bytes | None:
        return change.table.qualified_name.encode("utf-8")


@mutant("compression-ignored", "message.decodes", needs={"large-message-handle-compression": "lz4"})
class CompressionIgnored(TiCDCSimpleEncoder):
    """Compresses only large messages (the docs' wording), so ordinary ones are not lz4 frames."""

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        return codec.encode_avro(kind, avro_payload) if self.o.avro else codec.encode_json(json_msg)


@mutant("avro-without-union-index", "message.decodes", needs={"encoding-format": "avro"})
class AvroWithoutUnionIndex(TiCDCSimpleEncoder):
    """Writes the Message record itself, not the top-level union of message.json (no 0x16)."""

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        if not self.o.avro:
            return super().serialize(kind, json_msg, avro_payload)
        return codec.compress(codec.encode_avro(kind, avro_payload)[1:], self.o.compression)


@mutant("version-2", "message.version")
class Version2(_MessageMutant):
    """Writes version 2."""

    def edit(self, kind: str, j: dict[str, Any], a: dict[str, Any]) -> None:
        j["version"] = a["version"] = 2


@mutant("dml-type-lowercase", "message.type", shape={"transactions": (4, 8)})
class DmlTypeLowercase(TiCDCSimpleEncoder):
    """Writes DML types in lower case ("insert") in JSON."""

    def dml_type(self, op: Op) -> str:
        t = super().dml_type(op)
        return t if self.o.avro else t.lower()


@mutant("build-ts-seconds", "message.build-ts")
class BuildTsSeconds(TiCDCSimpleEncoder):
    """Writes buildTs in seconds instead of milliseconds."""

    def build_ts(self) -> int:
        return int(self.now)


@mutant("dml-without-table-id", "message.fields", shape={"transactions": (4, 8)})
class DmlWithoutTableId(_MessageMutant):
    """Leaves tableID out of JSON DML messages."""

    def edit(self, kind: str, j: dict[str, Any], a: dict[str, Any]) -> None:
        if kind == "DML":
            j.pop("tableID", None)


# -- BOOTSTRAP, DDL, WATERMARK -----------------------------------------------------------------------

@mutant("bootstrap-commit-ts", "bootstrap.fields")
class BootstrapCommitTs(_MessageMutant):
    """Gives BOOTSTRAP messages the current ts as commitTs instead of 0 (JSON)."""

    def edit(self, kind: str, j: dict[str, Any], a: dict[str, Any]) -> None:
        if kind == "BOOTSTRAP":
            j["commitTs"] = tso(int(self.now * 1000), 0)


@mutant("no-pre-table-schema", "ddl.fields", shape={"ddl_rate": 0.6, "transactions": (6, 10)})
class NoPreTableSchema(_MessageMutant):
    """Leaves preTableSchema out of every DDL."""

    def edit(self, kind: str, j: dict[str, Any], a: dict[str, Any]) -> None:
        if kind == "DDL":
            j.pop("preTableSchema", None)
            a["preTableSchema"] = None


@mutant("watermark-ts-minus-one", "watermark.fields", shape={"watermark_rate": 0.8})
class WatermarkTsMinusOne(TiCDCSimpleEncoder):
    """Sends the checkpoint ts minus one."""

    def encode_watermark(self, ts: int) -> list[Record]:
        return super().encode_watermark(ts - 1)


# -- DML ------------------------------------------------------------------------------------------------

class _LeavesOutField(TiCDCSimpleEncoder):
    """Serializes the messages made inside `with self.leaving_out(field)` without `field` (JSON:
    no key; Avro: null)."""

    _left_out: str | None = None

    @contextlib.contextmanager
    def leaving_out(self, field: str) -> Iterator[None]:
        self._left_out = field
        try:
            yield
        finally:
            self._left_out = None

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        if self._left_out is not None:
            json_msg = {k: v for k, v in json_msg.items() if k != self._left_out}
            avro_payload = {**avro_payload, self._left_out: None}
        return super().serialize(kind, json_msg, avro_payload)


@mutant("update-without-old", "dml.fields", shape={"transactions": (6, 12)})
class UpdateWithoutOld(_LeavesOutField):
    """Sends UPDATE with the new row only (no `old`)."""

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Record]:
        if change.op is Op.UPDATE and not self.split_update(change):
            out = self.before_row(change.table)
            with self.leaving_out("old"):
                out.append(Record(self.topic(), None, self.row_payload(change, commit_ts, key_only=False),
                                  self.partition_of(change.table)))
            self.tables[change.table.table_id].rows_since += 1
            return out
        return super().encode_change(change, commit_ts)


@mutant("old-changed-columns-only", "dml.columns", shape={"transactions": (6, 12), "columns": (3, 6)})
class OldChangedColumnsOnly(TiCDCSimpleEncoder):
    """Puts only the changed columns (and the handle key) in an UPDATE's `old`."""

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Record]:
        if change.op is Op.UPDATE and not self.split_update(change):
            assert change.before is not None and change.after is not None
            keep = {c.name for c in change.table.handle_key_columns()} | {
                c.name for c in change.table.columns if change.before[c.name] != change.after[c.name]}
            self._old_keep = keep
            try:
                return super().encode_change(change, commit_ts)
            finally:
                self._old_keep = None
        return super().encode_change(change, commit_ts)

    _old_keep: set[str] | None = None

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        keep = self._old_keep
        if keep is not None and kind == "DML":
            if isinstance(json_msg.get("old"), dict):
                json_msg = {**json_msg, "old": {k: v for k, v in json_msg["old"].items() if k in keep}}
            if isinstance(avro_payload.get("old"), dict):
                avro_payload = {**avro_payload, "old": {k: v for k, v in avro_payload["old"].items() if k in keep}}
        return super().serialize(kind, json_msg, avro_payload)


@mutant("data-keys-ordinal", "dml.keys-sorted", shape={"columns": (4, 8)})
class DataKeysOrdinal(TiCDCSimpleEncoder):
    """Writes data/old keys in column order, not sorted (a struct, not a Go map)."""

    def row_values(self, t: Table, row: Any, *, avro: bool, key_only: bool) -> dict[str, Any]:
        cols = t.handle_key_columns() if key_only else t.columns
        fn = spec.avro_value if avro else spec.json_value
        return {c.name: fn(c.type, row[c.name], self.o) for c in cols}


# -- table schemas -------------------------------------------------------------------------------

class _SchemaMutant(TiCDCSimpleEncoder):
    def schema_json(self, t: Table) -> dict[str, Any]:
        return spec.table_schema(t, avro=False)

    def schema_avro(self, t: Table) -> dict[str, Any]:
        return spec.table_schema(t, avro=True)

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        return ts

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        # The reference builds schemas through spec.table_schema; rebuild them edited.
        for msg, avro in ((json_msg, False), (avro_payload, True)):
            for k in ("tableSchema", "preTableSchema"):
                ts = msg.get(k)
                if isinstance(ts, dict):
                    t = self._table_for(ts)
                    if t is not None:
                        msg[k] = self.edit_schema(dict(ts), t, avro)
        return super().serialize(kind, json_msg, avro_payload)

    _versions: dict[tuple[Any, ...], Table]

    def _table_for(self, ts: dict[str, Any]) -> Table | None:
        key = (ts.get("tableID"), ts.get("version"), ts.get("table"))
        return getattr(self, "_versions", {}).get(key)

    def encode(self, event: Event) -> list[Record]:
        if not hasattr(self, "_versions"):
            self._versions = {}
        for t in tables_of(event):
            self._versions[(t.table_id, t.version, t.name)] = t
        return super().encode(event)


@mutant("table-schema-database-key", "schema.table-schema")
class TableSchemaDatabaseKey(_SchemaMutant):
    """Names the database `database` in JSON tableSchema (as DML messages do), not `schema`."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        if not avro:
            return {("database" if k == "schema" else k): v for k, v in ts.items()}
        return ts


@mutant("columns-ordinal-order", "schema.columns", shape={"ddl_rate": 0.6, "transactions": (6, 12)})
class ColumnsOrdinalOrder(_SchemaMutant):
    """Lists tableSchema columns in ordinal position, not column-ID order."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        by_name = {c["name"]: c for c in ts["columns"]}
        ts["columns"] = [by_name[c.name] for c in t.columns]
        return ts


@mutant("blob-mysql-type-text", "schema.data-type", shape=_kinds(Kind.BLOB, Kind.TINYBLOB, Kind.INT))
class BlobMysqlTypeText(_SchemaMutant):
    """Reports BLOB columns with the text type names (ignores the binary charset)."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        cols = []
        for c in ts["columns"]:
            dt = dict(c["dataType"])
            dt["mysqlType"] = dt["mysqlType"].replace("blob", "text")
            cols.append({**c, "dataType": dt})
        ts["columns"] = cols
        return ts


@mutant("no-synthetic-primary", "schema.indexes", shape={"key_kinds": (Kind.INT, Kind.BIGINT)})
class NoSyntheticPrimary(_SchemaMutant):
    """Leaves out the synthetic `primary` index of a clustered int primary key."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        ts["indexes"] = [ix for ix in ts["indexes"] if ix["name"] != "primary"]
        return ts


@mutant("bit-default-string", "schema.default", shape=_kinds(Kind.BIT, Kind.INT, default_rate=0.9))
class BitDefaultString(_SchemaMutant):
    """Writes a BIT column's default as a string (the docs' type) in JSON, not a number."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        if not avro:
            ts["columns"] = [{**c, "default": str(c["default"])} if isinstance(c["default"], int) else c
                             for c in ts["columns"]]
        return ts


# -- values ------------------------------------------------------------------------------------------

class _ValueMutant(TiCDCSimpleEncoder):
    """Renders one family of values wrongly (JSON unless `avro` says otherwise)."""

    family = ""

    def wrong_json(self, t: SqlType, v: Value) -> Any:
        return spec.json_value(t, v, self.o)

    def wrong_avro(self, t: SqlType, v: Value) -> Any:
        return spec.avro_value(t, v, self.o)

    def row_values(self, t: Table, row: Any, *, avro: bool, key_only: bool) -> dict[str, Any]:
        out = super().row_values(t, row, avro=avro, key_only=key_only)
        for c in t.columns:
            if c.name in out and row[c.name] is not None and spec.family(c.type) == self.family:
                out[c.name] = self.wrong_avro(c.type, row[c.name]) if avro else self.wrong_json(c.type, row[c.name])
        return out


def value_mutant(name: str, fam: str, doc: str, *, kinds: tuple[Kind, ...], avro: bool = False,
                 json_fn: Callable[[Any, SqlType, Any], Any] | None = None,
                 avro_fn: Callable[[Any, SqlType, Any], Any] | None = None) -> None:
    attrs: dict[str, Any] = {"family": fam, "__doc__": doc}
    if json_fn is not None:
        attrs["wrong_json"] = json_fn
    if avro_fn is not None:
        attrs["wrong_avro"] = avro_fn
    cls = type(name.title().replace("-", ""), (_ValueMutant,), attrs)
    mutant(name, f"value.{fam}", needs={"encoding-format": "avro"} if avro else None,
           shape=_kinds(*kinds, Kind.INT))(cls)


def _ref(self: Any, t: SqlType, v: Value) -> Any:
    return spec.json_value(t, v, self.o)


def _not_calendar(d: Any) -> bool:
    import calendar

    return bool(d.month == 0 or d.day == 0 or d.day > calendar.monthrange(max(d.year, 1), d.month)[1])


value_mutant("int-as-number", Family.INT, "Writes integers as JSON numbers, not strings.",
             kinds=(Kind.SMALLINT, Kind.TINYINT), json_fn=lambda self, t, v: v)
value_mutant("bigint-unsigned-signed", Family.BIGINT_UNSIGNED,
             "Writes BIGINT UNSIGNED above 2^63-1 as the signed int64 (wrapped).", kinds=(Kind.BIGINT,),
             json_fn=lambda self, t, v: str(v - (1 << 64) if v >= 1 << 63 else v))
value_mutant("avro-bigint-unsigned-docs", Family.BIGINT_UNSIGNED,
             "Avro: BIGINT UNSIGNED as long up to 2^63-1 and string above (what the docs say).",
             kinds=(Kind.BIGINT,), avro=True,
             avro_fn=lambda self, t, v: ("string", str(v)) if v >= 1 << 63 else ("long", v))
value_mutant("float-as-double-text", Family.FLOAT, "Formats FLOAT with float64 precision (3.140000104904175).",
             kinds=(Kind.FLOAT,), json_fn=lambda self, t, v: go_format_float(v, 64, "f"))
value_mutant("avro-float-as-double", Family.FLOAT, "Avro: writes FLOAT in the double branch.",
             kinds=(Kind.FLOAT,), avro=True, avro_fn=lambda self, t, v: ("double", v))
value_mutant("double-python-repr", Family.DOUBLE, "Formats DOUBLE with Python's repr (1.0, 1e+20).",
             kinds=(Kind.DOUBLE,), json_fn=lambda self, t, v: repr(v))
value_mutant("decimal-normalized", Family.DECIMAL, "Strips a DECIMAL's trailing zeros (1.50 -> 1.5).",
             kinds=(Kind.DECIMAL,),
             json_fn=lambda self, t, v: decimal_text(v, t.scale or 0).rstrip("0").rstrip(".")
             if "." in decimal_text(v, t.scale or 0) else decimal_text(v, t.scale or 0))
value_mutant("bit-as-base64", Family.BIT, "Writes BIT as base64 of its bytes, like a binary column.",
             kinds=(Kind.BIT,),
             json_fn=lambda self, t, v: base64.b64encode(v.to_bytes(max(1, ((t.length or 1) + 7) // 8), "big"))
             .decode())
value_mutant("enum-as-name", Family.ENUM, "Writes ENUM as its element (the v7.6.0 draft), not the index.",
             kinds=(Kind.ENUM,), json_fn=lambda self, t, v: v)
value_mutant("set-as-names", Family.SET, "Writes SET as its element names (the v7.6.0 draft), not the bitmask.",
             kinds=(Kind.SET,), json_fn=lambda self, t, v: spec.stored_text(t, v))
value_mutant("text-as-base64", Family.TEXT, "Base64-encodes text columns too (every []byte as binary).",
             kinds=(Kind.VARCHAR, Kind.TEXT), json_fn=lambda self, t, v: base64.b64encode(v.encode()).decode())
value_mutant("binary-unpadded-base64", Family.BINARY, "Writes binary values as base64 without padding.",
             kinds=(Kind.VARBINARY, Kind.BLOB), json_fn=lambda self, t, v: base64.b64encode(v).decode().rstrip("="))
value_mutant("date-with-time", Family.DATE, "Writes DATE as a DATETIME at midnight.",
             kinds=(Kind.DATE,), json_fn=lambda self, t, v: v.text() + " 00:00:00")
value_mutant("datetime-iso-t", Family.DATETIME, "Writes DATETIME in ISO 8601 with a T.",
             kinds=(Kind.DATETIME,), json_fn=lambda self, t, v: v.text(t.fsp).replace(" ", "T"))
value_mutant("timestamp-as-string", Family.TIMESTAMP,
             "Writes TIMESTAMP as a plain string (the docs' mysqlType table), not {location, value}.",
             kinds=(Kind.TIMESTAMP,), json_fn=lambda self, t, v: _ref(self, t, v)["value"])
value_mutant("time-hours-unpadded", Family.TIME, "Writes TIME hours without the leading zero (1:02:03).",
             kinds=(Kind.TIME,), json_fn=lambda self, t, v: v.text(t.fsp).replace("-0", "-", 1)
             if v.text(t.fsp).startswith("-0") else v.text(t.fsp).removeprefix("0"))
value_mutant("year-two-digits", Family.YEAR, "Writes YEAR with two digits.",
             kinds=(Kind.YEAR,), json_fn=lambda self, t, v: f"{v % 100:02d}")
value_mutant("zero-in-date-as-zero-date", Family.DATE,
             "Writes a date with zero parts or a day past the month's end (2020-00-15, 2021-02-31: a relaxed "
             "sql_mode stores them) as the zero date, not as TiDB prints the stored date.",
             kinds=(Kind.DATE,), json_fn=lambda self, t, v: "0000-00-00" if _not_calendar(v) else v.text())
value_mutant("vector-as-json-array", Family.VECTOR,
             "Writes VECTOR as a JSON array of numbers, not TiDB's vector text in a string.",
             kinds=(Kind.VECTOR,), json_fn=lambda self, t, v: list(v.elements))
value_mutant("json-compact", Family.JSON, "Writes JSON values without MySQL's spacing.",
             kinds=(Kind.JSON,), json_fn=lambda self, t, v: json.dumps(v.data, separators=(",", ":"),
                                                                      ensure_ascii=False, sort_keys=True))


# -- generated columns -----------------------------------------------------------------------------

GENERATED = {"generated_rate": 1.0, "columns": (2, 5), "transactions": (3, 8)}


@mutant("virtual-column-in-data", "dml.columns", shape=GENERATED)
class VirtualColumnInData(TiCDCSimpleEncoder):
    """Puts virtual generated columns in data / old (TiCDC's rows never have them)."""

    def row_values(self, t: Table, row: Any, *, avro: bool, key_only: bool) -> dict[str, Any]:
        if key_only:
            return super().row_values(t, row, avro=avro, key_only=True)
        fn = spec.avro_value if avro else spec.json_value
        return {c.name: fn(c.type, row[c.name], self.o) for c in sorted(t.columns, key=lambda c: c.name)}


@mutant("schema-without-virtual", "schema.columns", shape=GENERATED)
class SchemaWithoutVirtual(_SchemaMutant):
    """Leaves virtual generated columns out of tableSchema (TiCDC lists every column of the table)."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        virtual = {c.name for c in t.columns if c.is_virtual}
        ts["columns"] = [c for c in ts["columns"] if c["name"] not in virtual]
        return ts


@mutant("vector-length-omitted", "schema.data-type", shape=_kinds(Kind.VECTOR))
class VectorLengthOmitted(_SchemaMutant):
    """Omits dataType.length of a VECTOR of any dimension (TiDB's flen is -1, which Go's
    omitempty keeps: only 0 is empty)."""

    def edit_schema(self, ts: dict[str, Any], t: Table, avro: bool) -> dict[str, Any]:
        if not avro:
            ts["columns"] = [{**c, "dataType": {k: v for k, v in c["dataType"].items() if k != "length"}}
                             if c["dataType"].get("length") == -1 else c for c in ts["columns"]]
        return ts


@mutant("handle-key-on-virtual-index", "large-message.handle-key-only", needs=LARGE,
        shape={**WIDE, "generated_rate": 1.0, "columns": (3, 6), "odd_name_rate": 0.0})
class HandleKeyOnVirtualIndex(TiCDCSimpleEncoder):
    """Takes a unique index over a virtual generated column as the handle key of handle-key-only
    messages, which TiCDC skips (IsIndexUnique)."""

    def row_values(self, t: Table, row: Any, *, avro: bool, key_only: bool) -> dict[str, Any]:
        if not key_only or t.primary_key is not None:
            return super().row_values(t, row, avro=avro, key_only=key_only)
        candidates = [ix for ix in t.indexes if ix.unique and all(not t.column(c).nullable for c in ix.columns)]
        ix = min(candidates, key=lambda i: (len(i.columns), i.index_id))
        fn = spec.avro_value if avro else spec.json_value
        return {c: fn(t.column(c).type, row[c], self.o) for c in sorted(ix.columns)}


# -- large messages ------------------------------------------------------------------------------------

@mutant("claim-check-raw-value-ignored", "large-message.claim-check",
        needs={**CLAIM_CHECK, "claim-check-raw-value": "true"}, shape=WIDE)
class ClaimCheckRawValueIgnored(TiCDCSimpleEncoder):
    """Writes the claim-check file as JSON {key, value} although claim-check-raw-value asks for the
    raw message."""

    def claim_check_content(self, full: bytes) -> bytes:
        return json.dumps({"key": None, "value": base64.b64encode(full).decode()}).encode()


@mutant("large-message-ignored", "large-message.size", needs=LARGE, shape=WIDE)
class LargeMessageIgnored(TiCDCSimpleEncoder):
    """Sends messages above max-message-bytes as they are."""

    def large_message(self, change: RowChange, commit_ts: int, full: bytes) -> bytes:
        return full


@mutant("key-only-first-column", "large-message.handle-key-only", needs=LARGE, shape=WIDE)
class KeyOnlyFirstColumn(TiCDCSimpleEncoder):
    """Keeps the first column, not the handle key, in handle-key-only messages."""

    def row_values(self, t: Table, row: Any, *, avro: bool, key_only: bool) -> dict[str, Any]:
        if not key_only:
            return super().row_values(t, row, avro=avro, key_only=False)
        first = min(t.columns, key=lambda c: c.column_id)
        if {c.name for c in t.handle_key_columns()} == {first.name}:
            first = max(t.columns, key=lambda c: c.column_id)
        fn = spec.avro_value if avro else spec.json_value
        return {first.name: fn(first.type, row[first.name], self.o)}


@mutant("claim-check-without-key-only", "large-message.claim-check", needs=CLAIM_CHECK, shape=WIDE)
class ClaimCheckWithoutKeyOnly(_LeavesOutField):
    """Sends the claim-check pointer without handleKeyOnly."""

    def row_payload(self, change: RowChange, commit_ts: int, *, key_only: bool,
                    claim_check: str | None = None) -> bytes:
        if claim_check is None:
            return super().row_payload(change, commit_ts, key_only=key_only)
        with self.leaving_out("handleKeyOnly"):
            return super().row_payload(change, commit_ts, key_only=key_only, claim_check=claim_check)


# -- one source event ----------------------------------------------------------------------------------

@mutant("update-not-split", "event.messages", shape={"columns": (1, 2), "transactions": (8, 14)})
class UpdateNotSplit(TiCDCSimpleEncoder):
    """Sends an UPDATE that changes the primary key as one UPDATE (no DELETE + INSERT)."""

    def split_update(self, change: RowChange) -> bool:
        return False


# -- the stream ------------------------------------------------------------------------------------

@mutant("schema-version-off-by-one", "consumer.schema-known", shape={"transactions": (3, 8)})
class SchemaVersionOffByOne(_MessageMutant):
    """Writes schemaVersion one above the table's version (so no schema matches it)."""

    def edit(self, kind: str, j: dict[str, Any], a: dict[str, Any]) -> None:
        if kind == "DML":
            j["schemaVersion"] = a["schemaVersion"] = j["schemaVersion"] + 1


@mutant("bootstrap-stale-schema", "consumer.join-anywhere", needs=FREQUENT_BOOTSTRAPS,
        shape={"ddl_rate": 0.4, "transactions": (10, 16), "tables": (1, 1), "ms_per_step": SLOW})
class BootstrapStaleSchema(TiCDCSimpleEncoder):
    """Repeats the schema a table had when first seen in every later BOOTSTRAP."""

    def encode_ddl(self, d: Ddl) -> list[Record]:
        return self.broadcast(self.serialize("DDL", *self.ddl_message(d)))

    def before_row(self, table: Table) -> list[Record]:
        st = self.tables.get(table.table_id)
        if st is None:
            return super().before_row(table)
        return []


@mutant("bootstrap-count-ignored", "bootstrap.interval", needs=FREQUENT_BOOTSTRAPS,
        shape={"transactions": (10, 16), "tables": (1, 2), "ms_per_step": SLOW})
class BootstrapCountIgnored(TiCDCSimpleEncoder):
    """Repeats bootstraps on time only, ignoring send-bootstrap-in-msg-count."""

    def tick(self, now: float) -> list[Record]:
        out: list[Record] = []
        if self.o.bootstraps_enabled:
            for st in self.tables.values():
                if now - st.last_bootstrap_s >= self.o.bootstrap_interval_s:
                    out += self.bootstrap(st, now)
        return out


@mutant("no-initial-bootstrap", "bootstrap.before-first-dml", shape={"transactions": (3, 8)})
class NoInitialBootstrap(TiCDCSimpleEncoder):
    """Sends a table's first BOOTSTRAP on the next periodic check, after its first rows."""

    def before_row(self, table: Table) -> list[Record]:
        if table.table_id not in self.tables:
            self.tables[table.table_id] = _TableState(table, self.now - self.o.bootstrap_interval_s)
        self.tables[table.table_id].table = table
        return []


@mutant("bootstrap-own-partition", "bootstrap.partitions", shape={"transactions": (3, 8)})
class BootstrapOwnPartition(TiCDCSimpleEncoder):
    """Sends a table's BOOTSTRAP only to the table's partition."""

    def bootstrap(self, st: _TableState, now: float) -> list[Record]:
        return [r for r in super().bootstrap(st, now) if r.partition == self.partition_of(st.table)]


@mutant("bootstrap-docs-disable-rule", "bootstrap.disabled", needs={"send-bootstrap-interval-in-sec": "0"},
        shape={"transactions": (3, 8)})
class BootstrapDocsDisableRule(TiCDCSimpleEncoder):
    """Keeps bootstraps on unless both settings are 0 (the docs' rule) although the code's rule is set."""

    def open(self, ctx: Any) -> None:
        super().open(ctx)
        self.o = SimpleOptions.from_options({**ctx.options, "bootstrap-disable-rule": "docs"})


@mutant("transactions-swapped", "order.dml-commit-ts", shape={"transactions": (8, 14), "tables": (1, 1),
                                                             "ddl_rate": 0.0, "watermark_rate": 0.0})
class TransactionsSwapped(TiCDCSimpleEncoder):
    """Holds each transaction back and sends it after the next one."""

    _held: list[Record] | None = None

    def encode(self, event: Event) -> list[Record]:
        out = super().encode(event)
        if not isinstance(event, Transaction):
            held, self._held = self._held or [], None
            return held + out
        if self._held is None:
            self._held = out
            return []
        held, self._held = self._held, None
        return out + held


@mutant("ddl-partition-zero", "order.ddl-barrier", shape={"ddl_rate": 0.5, "transactions": (6, 10)})
class DdlPartitionZero(TiCDCSimpleEncoder):
    """Sends DDLs to partition 0 only (where TiCDC's own consumer applies them)."""

    def encode_ddl(self, d: Ddl) -> list[Record]:
        return [r for r in super().encode_ddl(d) if r.partition == 0]


@mutant("watermark-partition-zero", "order.watermark", shape={"watermark_rate": 0.8})
class WatermarkPartitionZero(TiCDCSimpleEncoder):
    """Sends WATERMARKs to partition 0 only."""

    def encode_watermark(self, ts: int) -> list[Record]:
        return [r for r in super().encode_watermark(ts) if r.partition == 0]


# -- the encoder itself -----------------------------------------------------------------------------

@mutant("crash-on-delete", "encoder.no-crash", shape={"transactions": (6, 12)})
class CrashOnDelete(TiCDCSimpleEncoder):
    """Raises on the first DELETE."""

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Record]:
        if change.op is Op.DELETE:
            raise KeyError(zlib.crc32(b"no such row"))
        return super().encode_change(change, commit_ts)


@mutant("hang-on-ddl", "encoder.responsive", shape={"ddl_rate": 0.8})
class HangOnDdl(TiCDCSimpleEncoder):
    """Never returns from a DDL after the first CREATE TABLE."""

    def encode_ddl(self, d: Ddl) -> list[Record]:
        if d.pre_table is not None:
            time.sleep(3600)
        return super().encode_ddl(d)

