"""Deliberately broken MaxScale KafkaCDC encoders: the reference with exactly one defect each.

Each names the check that must catch it, the options under which the defect shows, and a
workload shape that makes it likely. Several are what real MaxScale versions do: 24.02's value
quirks (notes §4: BIGINT UNSIGNED wrapping, DECIMAL as a double, ENUM/SET as hex, BIT as 0,
seven-digit odd fractions, "\\u0000" for an empty BLOB, strftime years), its ALTER rule (§5.1),
its resume after the last GTID in Kafka (§6.3), the docs' schema example (§9), versions before
2.5.3 (no table_schema/table_name).
"""

from __future__ import annotations

import base64
import dataclasses
import time
import zoneinfo
from typing import Any

from ...encoders.spi import Record
from ...model.events import Ddl, DdlKind, Transaction
from ...model.types import Kind
from ...model.values import DateTime
from ..mutants import MutantRegistry
from . import spec
from .checks import CHECKS
from .encoder import MaxScaleKafkaCDCEncoder
from .tracker import Planned, RowImage, SchemaEvent, row_values

mutant = MUTANTS = MutantRegistry(CHECKS)


def _kinds(*kinds: Kind, **more: Any) -> dict[str, Any]:
    return {"kinds": kinds, "edge_rate": 0.5, "null_rate": 0.05, **more}


# Filters that leave out some of the generated tables (`db.table`: test/db1/shop, t/orders/users/...).
FILTER = {"match": "t", "exclude": "users|[.]t$"}
DDL_HEAVY = {"ddl_rate": 0.7, "transactions": (8, 14), "ddl_kinds": (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN)}


class _ValueMutant(MaxScaleKafkaCDCEncoder):
    """Renders the values of some kinds differently."""

    kinds: frozenset[Kind] = frozenset()

    def render(self, c: spec.SchemaColumn, v: Any) -> object:
        raise NotImplementedError

    def values(self, r: RowImage) -> dict[str, object]:
        out = row_values(r, self.o)
        for c in r.schema.columns:
            src = c.source
            if src is not None and src.type.kind in self.kinds and r.image.get(src.name) is not None:
                out[c.name] = self.render(c, r.image[src.name])
        return out


# -- the message ----------------------------------------------------------------------------------------

@mutant("truncated-value", "message.json")
class TruncatedValue(MaxScaleKafkaCDCEncoder):
    """Cuts every value at 200 bytes, as a fixed-size buffer would: long messages are no JSON."""

    def serialize(self, obj: dict[str, Any]) -> bytes:
        return super().serialize(obj)[:200]


@mutant("trailing-newline", "message.compact")
class TrailingNewline(MaxScaleKafkaCDCEncoder):
    """Ends every value with a newline (JSON lines), which JSON_COMPACT never writes."""

    def serialize(self, obj: dict[str, Any]) -> bytes:
        return super().serialize(obj) + b"\n"


@mutant("uppercase-event-type", "message.kind")
class UppercaseEventType(MaxScaleKafkaCDCEncoder):
    """Writes event_type in upper case (INSERT, UPDATE_BEFORE...), outside the EVENT_TYPES enum."""

    def dml_json(self, r: RowImage) -> dict[str, Any]:
        obj = super().dml_json(r)
        obj["event_type"] = r.event_type.upper()
        return obj


# -- Kafka ----------------------------------------------------------------------------------------------

@mutant("key-without-event-number", "kafka.key")
class KeyWithoutEventNumber(MaxScaleKafkaCDCEncoder):
    """Keys DML events by their GTID alone, like schema events (MaxScale could not resume from it
    within a transaction, and consumers could not de-duplicate by it)."""

    def dml_key(self, r: RowImage) -> str:
        return str(r.gtid)


@mutant("topic-per-table", "kafka.topic")
class TopicPerTable(MaxScaleKafkaCDCEncoder):
    """Sends each table's DML events to a topic of its own (`<topic>.<db>.<table>`)."""

    def record(self, p: Planned) -> Record:
        r = super().record(p)
        if isinstance(p, RowImage):
            return dataclasses.replace(r, topic=f"{r.topic}.{p.schema.database}.{p.schema.table}")
        return r


# -- schema events --------------------------------------------------------------------------------------

@mutant("schema-version-string", "schema.envelope")
class SchemaVersionString(MaxScaleKafkaCDCEncoder):
    """Writes version as the zero-padded string of the state directory's .avsc file names ("000001")."""

    def schema_json(self, s: SchemaEvent) -> dict[str, Any]:
        obj = super().schema_json(s)
        obj["version"] = f"{s.version:06d}"
        return obj


@mutant("columns-before-fixed-fields", "schema.fixed-fields")
class ColumnsBeforeFixedFields(MaxScaleKafkaCDCEncoder):
    """Lists the table's columns before the six fixed fields."""

    def schema_json(self, s: SchemaEvent) -> dict[str, Any]:
        obj = super().schema_json(s)
        n = len(spec.FIXED_FIELDS)
        obj["fields"] = obj["fields"][n:] + obj["fields"][:n]
        return obj


@mutant("not-null-without-union", "schema.columns")
class NotNullWithoutUnion(MaxScaleKafkaCDCEncoder):
    """Types NOT NULL columns as plain X instead of ["null", X] (what a careful Avro writer would do;
    MaxScale ignores NOT NULL)."""

    def column_json(self, c: spec.SchemaColumn) -> dict[str, Any]:
        obj = super().column_json(c)
        if c.source is not None and not c.source.nullable:
            obj["type"] = c.avro
        return obj


@mutant("int-as-long", "schema.avro-type")
class IntAsLong(MaxScaleKafkaCDCEncoder):
    """Types INT columns as long, as the docs' schema example (MaxScale 2.4's mapping) shows."""

    def column_json(self, c: spec.SchemaColumn) -> dict[str, Any]:
        obj = super().column_json(c)
        if c.avro == "int":
            obj["type"] = ["null", "long"]
        return obj


@mutant("length-from-ddl", "schema.length", shape=_kinds(Kind.VARCHAR, Kind.CHAR, Kind.INT))
class LengthFromDdl(MaxScaleKafkaCDCEncoder):
    """Fills length from the DDL (VARCHAR(20) -> 20), as "Field length, if found" suggests."""

    def column_json(self, c: spec.SchemaColumn) -> dict[str, Any]:
        obj = super().column_json(c)
        if c.source is not None and c.source.type.length is not None:
            obj["length"] = c.source.type.length
        return obj


@mutant("real-type-lowercase", "schema.real-type")
class RealTypeLowercase(MaxScaleKafkaCDCEncoder):
    """Writes real_type in lower case (as SHOW CREATE TABLE prints types), not as the DDL wrote it."""

    def column_json(self, c: spec.SchemaColumn) -> dict[str, Any]:
        obj = super().column_json(c)
        obj["real_type"] = c.real_type.lower()
        return obj


@mutant("ignores-send-schema", "schema.disabled", needs={"send_schema": "false"})
class IgnoresSendSchema(MaxScaleKafkaCDCEncoder):
    """Sends schema events although send_schema=false (MaxScale before 22.08 had no such switch)."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        return [dataclasses.replace(p, sent=self.o.passes(p.id)) if isinstance(p, SchemaEvent) else p
                for p in super().plan(event)]


# -- DML events -----------------------------------------------------------------------------------------

@mutant("no-table-names", "dml.fields")
class NoTableNames(MaxScaleKafkaCDCEncoder):
    """Leaves table_schema and table_name out, as MaxScale before 2.5.3 did: MXS-3095
    (https://jira.mariadb.org/browse/MXS-3095, MaxScale commit 453b0b43, first in maxscale-2.5.3),
    catalogued in docs/regressions.md."""

    def dml_json(self, r: RowImage) -> dict[str, Any]:
        obj = super().dml_json(r)
        del obj["table_schema"], obj["table_name"]
        return obj


@mutant("timestamp-millis", "dml.timestamp")
class TimestampMillis(MaxScaleKafkaCDCEncoder):
    """Writes timestamp in milliseconds (a 64-bit Kafka-style time), not the binlog's 32-bit seconds."""

    def timestamp(self, r: RowImage) -> int:
        return r.timestamp * 1000 + 123


@mutant("null-columns-omitted", "dml.columns", shape={"null_rate": 0.5})
class NullColumnsOmitted(MaxScaleKafkaCDCEncoder):
    """Leaves NULL columns out of DML events instead of writing null."""

    def values(self, r: RowImage) -> dict[str, object]:
        return {k: v for k, v in super().values(r).items() if v is not None}


# -- values ---------------------------------------------------------------------------------------------

@mutant("decimal-as-string", "value.json-type", shape=_kinds(Kind.DECIMAL, Kind.INT))
class DecimalAsString(_ValueMutant):
    """Writes DECIMAL values as JSON strings ("1.50"), not numbers."""

    kinds = frozenset({Kind.DECIMAL})

    def render(self, c: spec.SchemaColumn, v: Any) -> object:
        assert c.source is not None and c.source.type.scale is not None
        from ...model.values import decimal_text

        return decimal_text(v, c.source.type.scale)


@mutant("bigint-unsigned-wrap", "value.integer", shape=_kinds(Kind.BIGINT, edge_rate=0.7))
class BigintUnsignedWrap(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: BIGINT UNSIGNED values >= 2^63 come out negative (column_long ignores UNSIGNED)."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, bigint_wrap=True))


@mutant("bit-zero", "value.bit", shape=_kinds(Kind.BIT))
class BitZero(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: every BIT value is 0 ('BIT is not currently supported')."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, bit_zero=True))


@mutant("decimal-as-double", "value.decimal", shape=_kinds(Kind.DECIMAL))
class DecimalAsDouble(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: DECIMAL values as the nearest double, %.17g (1.15 -> 1.1499999999999999)."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, decimal_double=True))


@mutant("float-six-digits", "value.float", shape=_kinds(Kind.DOUBLE, Kind.FLOAT))
class FloatSixDigits(_ValueMutant):
    """Prints FLOAT and DOUBLE with printf's default %g: six significant digits."""

    kinds = frozenset({Kind.FLOAT, Kind.DOUBLE})

    def render(self, c: spec.SchemaColumn, v: Any) -> object:
        text = format(v, "g")
        return spec.Raw(text if any(ch in text for ch in ".e") else text + ".0")


@mutant("binary-as-base64", "value.string", shape=_kinds(Kind.BLOB, Kind.VARBINARY, Kind.BINARY))
class BinaryAsBase64(_ValueMutant):
    """Writes binary values that are not UTF-8 in base64 instead of lowercase hex."""

    kinds = frozenset({Kind.BINARY, Kind.VARBINARY, Kind.TINYBLOB, Kind.BLOB, Kind.MEDIUMBLOB, Kind.LONGBLOB})

    def render(self, c: spec.SchemaColumn, v: Any) -> object:
        assert c.source is not None
        raw = spec.stored_bytes(c.source.type, v)
        text = spec.bytes_text(raw)
        return text if text != raw.hex() or not raw else base64.b64encode(raw).decode("ascii")


@mutant("empty-blob-nul", "value.empty-blob", shape=_kinds(Kind.TEXT, Kind.BLOB, Kind.LONGTEXT, edge_rate=0.8))
class EmptyBlobNul(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: an empty TEXT/BLOB is written as "\\u0000", one NUL character."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, empty_blob_nul=True))


@mutant("enum-set-hex", "value.enum-set", shape=_kinds(Kind.ENUM, Kind.SET))
class EnumSetHex(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: ENUM/SET as the UPPERCASE hex of the stored index / bitmask ('b' -> "02")."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, enum_set_hex=True))


@mutant("uuid-hex", "value.address", shape=_kinds(Kind.UUID, Kind.INET6))
class UuidHex(_ValueMutant):
    """Writes UUIDs as 32 hex digits without dashes."""

    kinds = frozenset({Kind.UUID})

    def render(self, c: spec.SchemaColumn, v: Any) -> object:
        return str(v.hex)


@mutant("strftime-years", "value.temporal", shape=_kinds(Kind.DATE, Kind.DATETIME, Kind.YEAR, edge_rate=0.8))
class StrftimeYears(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: strftime's %Y, unpadded (the zero date is 0-00-00), and YEAR 0 as 1900."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, strftime_text=True))


@mutant("timestamp-local-zone", "value.timestamp", shape=_kinds(Kind.TIMESTAMP))
class TimestampLocalZone(_ValueMutant):
    """Renders TIMESTAMP in its own local zone (America/Sao_Paulo here), not the configured time-zone."""

    kinds = frozenset({Kind.TIMESTAMP})
    zone = zoneinfo.ZoneInfo("America/Sao_Paulo")

    def render(self, c: spec.SchemaColumn, v: Any) -> object:
        assert c.source is not None and isinstance(v, DateTime)
        return spec.timestamp_text(v, c.source.type.fsp, dataclasses.replace(self.o, time_zone="America/Sao_Paulo"))


@mutant("odd-fsp-seven-digits", "value.fraction", shape=_kinds(Kind.DATETIME, Kind.TIME, Kind.TIMESTAMP))
class OddFspSevenDigits(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: DATETIME/TIMESTAMP/TIME(1, 3, 5) fractions times ten, seven digits (.1230000)."""

    def values(self, r: RowImage) -> dict[str, object]:
        return row_values(r, dataclasses.replace(self.o, odd_seven=True))


# -- stream rules ---------------------------------------------------------------------------------------

@mutant("schema-after-first-row", "stream.schema-before-dml", shape={"transactions": (3, 8)})
class SchemaAfterFirstRow(MaxScaleKafkaCDCEncoder):
    """Announces a new table after its first DML event instead of before."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Planned] = []

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        planned = super().plan(event)
        if isinstance(event, Ddl):
            self.held += [p for p in planned if isinstance(p, SchemaEvent)]
            return [p for p in planned if not isinstance(p, SchemaEvent)]
        if not any(isinstance(p, RowImage) and p.sent for p in planned):
            return planned
        out, self.held = [*planned, *self.held], []
        return out


@mutant("schema-version-stuck", "stream.schema-version", shape=DDL_HEAVY)
class SchemaVersionStuck(MaxScaleKafkaCDCEncoder):
    """Announces every version of a table as version 1."""

    def schema_json(self, s: SchemaEvent) -> dict[str, Any]:
        obj = super().schema_json(s)
        obj["version"] = 1
        return obj


@mutant("updates-not-interleaved", "stream.update-pairs", shape={"changes_per_transaction": (3, 6)})
class UpdatesNotInterleaved(MaxScaleKafkaCDCEncoder):
    """Sends all of a transaction's update_before images, then all its update_after images, numbered in
    that order (MaxScale interleaves them per row)."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        planned = super().plan(event)
        rows = [p for p in planned if isinstance(p, RowImage)]
        if sum(r.event_type == "update_before" for r in rows) < 2:
            return planned
        befores = [r for r in rows if r.event_type == "update_before"]
        afters = [r for r in rows if r.event_type == "update_after"]
        others = [r for r in rows if r.event_type not in ("update_before", "update_after")]
        ordered = others + befores + afters
        return [p for p in planned if not isinstance(p, RowImage)] + [
            dataclasses.replace(r, event_number=i + 1) for i, r in enumerate(ordered)]


@mutant("event-number-from-zero", "stream.event-numbers")
class EventNumberFromZero(MaxScaleKafkaCDCEncoder):
    """Numbers a transaction's row images from 0 (post-increment)."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        return [dataclasses.replace(p, event_number=p.event_number - 1) if isinstance(p, RowImage) else p
                for p in super().plan(event)]


# -- what each source event gives -----------------------------------------------------------------------

@mutant("no-schema-on-alter", "event.schema-events", shape=DDL_HEAVY)
class NoSchemaOnAlter(MaxScaleKafkaCDCEncoder):
    """MaxScale 24.02: an ALTER before any row of the table since its last schema event is not
    announced (the columns change silently)."""

    def open(self, ctx: Any) -> None:
        super().open(ctx)
        self.o = dataclasses.replace(self.o, alter_after_rows=True)
        self.tracker.o = self.o


@mutant("update-after-only", "event.rows", shape={"transactions": (4, 10)})
class UpdateAfterOnly(MaxScaleKafkaCDCEncoder):
    """Sends only the update_after image of an UPDATE."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        return [p for p in super().plan(event) if not (isinstance(p, RowImage) and p.event_type == "update_before")]


@mutant("renumber-after-filter", "event.numbering", needs=FILTER, shape={"tables": (2, 3), "transactions": (4, 10)})
class RenumberAfterFilter(MaxScaleKafkaCDCEncoder):
    """Numbers only the rows of tables match/exclude let through (MaxScale counts every row)."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        out, n = [], 0
        for p in super().plan(event):
            if isinstance(p, RowImage) and p.sent:
                n += 1
                p = dataclasses.replace(p, event_number=n)
            out.append(p)
        return out


@mutant("match-anchored", "event.filter", needs=FILTER, shape={"tables": (2, 3)})
class MatchAnchored(MaxScaleKafkaCDCEncoder):
    """Matches `match` against the whole `db.table` (anchored) instead of searching it."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        import re

        def passes(table_id: str) -> bool:
            m, x = self.o.match, self.o.exclude
            return (not m or re.fullmatch(m, table_id) is not None) and (not x or re.search(x, table_id) is None)

        out: list[Planned] = []
        for p in super().plan(event):
            tid = p.id if isinstance(p, SchemaEvent) else p.schema.id
            ok = passes(tid) and (self.o.send_schema or not isinstance(p, SchemaEvent))
            out.append(dataclasses.replace(p, sent=ok))
        return out


# -- the encoder itself ---------------------------------------------------------------------------------

@mutant("crash-on-delete", "encoder.no-crash", shape={"transactions": (6, 12)})
class CrashOnDelete(MaxScaleKafkaCDCEncoder):
    """Raises on the first DELETE row."""

    def dml_json(self, r: RowImage) -> dict[str, Any]:
        if r.event_type == "delete":
            raise KeyError("no such row")
        return super().dml_json(r)


@mutant("hang-on-alter", "encoder.responsive", shape=DDL_HEAVY)
class HangOnAlter(MaxScaleKafkaCDCEncoder):
    """Never returns from an ALTER TABLE."""

    def plan(self, event: Transaction | Ddl) -> list[Planned]:
        if isinstance(event, Ddl) and event.kind in (DdlKind.ADD_COLUMN, DdlKind.DROP_COLUMN):
            time.sleep(3600)
        return super().plan(event)


# -- restarts -------------------------------------------------------------------------------------------

@mutant("resume-at-next-gtid", "delivery.no-loss",
        faults="produce-errors@0.2s:INVALID_REQUIRED_ACKS×1,produce-errors@0.6s:INVALID_REQUIRED_ACKS×1,"
               "produce-errors@1.0s:INVALID_REQUIRED_ACKS×1",
        shape={"changes_per_transaction": (6, 10), "transactions": (60, 60), "tables": (1, 2)})
class ResumeAtNextGtid(MaxScaleKafkaCDCEncoder):
    """MaxScale's own recovery: after a restart it resumes at the GTID after the last key in Kafka,
    so the rest of a partly delivered transaction is lost (notes §6.3).

    Rows are lost when a failed produce request cuts a transaction: the schedule makes restarts,
    whether one cuts a transaction depends on how the producer batched it (the integration tests
    fail a delivery inside a transaction deterministically)."""

    def delivered(self, p: Planned) -> bool:
        return self.resume is not None and p.gtid <= self.resume[0]
