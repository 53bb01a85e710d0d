"""The TiCDC Simple reference encoder (pingcap/tiflow as `spec/notes/ticdc.md` §2 describes it).

* Every table's rows go to one topic (the sink-URI topic), to the partition its table hashes to;
  the Kafka key is always null.
* DDL and WATERMARK messages go to every partition of the topic, in commit order, after the
  rows of earlier transactions.
* BOOTSTRAP messages (a table's schema, commitTs 0) go out before a table's first row, then
  again after `send-bootstrap-in-msg-count` rows or `send-bootstrap-interval-in-sec` seconds
  (checked on `tick`, driven by the context's clock); to every partition or to partition 0.
  Either setting <= 0 disables them (the code; the docs say both must be 0: profile switch).
* Every message is compressed per `large-message-handle-compression`; one larger than
  `max-message-bytes` is re-sent with the handle-key columns only (`handleKeyOnly`), after
  writing the full message to a claim-check file when so configured.

Every step is a method, so that a mutant can break exactly one.
"""

from __future__ import annotations

import hashlib
import uuid
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ...encoders.spi import ConfigurationError, EncoderContext, EncoderError, Record
from ...model import gojson
from ...model.events import Ddl, Event, Op, RowChange, Transaction, Watermark
from ...model.table import Table
from ...model.values import Row
from ..kit import update_halves
from . import codec, spec
from .spec import SimpleOptions

CLAIM_CHECK_NAMESPACE = uuid.UUID("2f5d7f3e-6b1c-4c63-9a53-9e1b2a5f4d10")


@dataclass(slots=True)
class _TableState:
    table: Table
    last_bootstrap_s: float
    rows_since: int = 0


class TiCDCSimpleEncoder:
    protocol = spec.PROTOCOL

    def __init__(self) -> None:
        self.ctx: EncoderContext | None = None
        self.o = SimpleOptions()
        self.tables: dict[int, _TableState] = {}  # by table id, as TiCDC's bootstrap worker
        self._claims = 0

    # -- SPI --------------------------------------------------------------------------------------

    def open(self, ctx: EncoderContext) -> None:
        self.ctx = ctx
        self.o = SimpleOptions.from_options(ctx.options)
        problems = spec.combination_problems(self.o)
        if problems:
            raise ConfigurationError("; ".join(problems))

    def encode(self, event: Event) -> list[Record]:
        if isinstance(event, Transaction):
            out: list[Record] = []
            for change in event.changes:
                out += self.encode_change(change, event.commit_ts)
            return out
        if isinstance(event, Ddl):
            return self.encode_ddl(event)
        if isinstance(event, Watermark):
            return self.encode_watermark(event.ts)
        raise EncoderError(f"unknown event {type(event).__name__}")

    def tick(self, now: float) -> list[Record]:
        """Periodic bootstraps (TiCDC checks every few seconds; here on every tick)."""
        out: list[Record] = []
        if not self.o.bootstraps_enabled:
            return out
        for st in self.tables.values():
            if now - st.last_bootstrap_s >= self.o.bootstrap_interval_s or st.rows_since >= self.o.bootstrap_count:
                out += self.bootstrap(st, now)
        return out

    def close(self) -> None:
        self.tables.clear()

    # -- helpers ----------------------------------------------------------------------------------

    @property
    def now(self) -> float:
        assert self.ctx is not None
        return float(self.ctx.clock())

    def build_ts(self) -> int:
        return int(self.now * 1000)

    def topic(self) -> str:
        assert self.ctx is not None
        return self.ctx.topic_prefix + self.o.topic

    def partitions(self) -> range:
        assert self.ctx is not None
        return range(max(1, self.ctx.partitions))

    def partition_of(self, table: Table) -> int:
        """The table dispatcher: one table, one partition."""
        return zlib.crc32((table.database + table.name).encode("utf-8")) % len(self.partitions())

    def serialize(self, kind: str, json_msg: dict[str, Any], avro_payload: dict[str, Any]) -> bytes:
        raw = codec.encode_avro(kind, avro_payload) if self.o.avro else codec.encode_json(json_msg)
        return codec.compress(raw, self.o.compression)

    def broadcast(self, payload: bytes) -> list[Record]:
        return [Record(self.topic(), None, payload, p) for p in self.partitions()]

    def table_schema(self, t: Table) -> dict[str, Any]:
        return spec.table_schema(t, avro=self.o.avro)

    # -- WATERMARK --------------------------------------------------------------------------------

    def encode_watermark(self, ts: int) -> list[Record]:
        bt = self.build_ts()
        j = {"version": spec.VERSION, "type": "WATERMARK", "commitTs": ts, "buildTs": bt}
        a = {"version": spec.VERSION, "commitTs": ts, "buildTs": bt}
        return self.broadcast(self.serialize("WATERMARK", j, a))

    # -- DDL --------------------------------------------------------------------------------------

    def ddl_message(self, d: Ddl) -> tuple[dict[str, Any], dict[str, Any]]:
        bt = self.build_ts()
        typ = spec.ddl_type(d.kind)
        j: dict[str, Any] = {"version": spec.VERSION, "type": typ, "sql": d.sql, "commitTs": d.commit_ts,
                             "buildTs": bt}
        a: dict[str, Any] = {"version": spec.VERSION, "type": typ, "sql": d.sql, "commitTs": d.commit_ts,
                             "buildTs": bt, "tableSchema": None, "preTableSchema": None}
        table, pre = spec.ddl_schema_tables(d)  # an ERASE carries the dropped table in both
        if table is not None:
            j["tableSchema"] = spec.table_schema(table, avro=False)
            a["tableSchema"] = spec.table_schema(table, avro=True)
        if pre is not None:
            j["preTableSchema"] = spec.table_schema(pre, avro=False)
            a["preTableSchema"] = spec.table_schema(pre, avro=True)
        return j, a

    def encode_ddl(self, d: Ddl) -> list[Record]:
        j, a = self.ddl_message(d)
        if d.table is not None:
            st = self.tables.get(d.table.table_id)
            if st is not None:
                st.table = d.table
        return self.broadcast(self.serialize("DDL", j, a))

    # -- BOOTSTRAP --------------------------------------------------------------------------------

    def bootstrap_partitions(self) -> range:
        return self.partitions() if self.o.bootstrap_all_partitions else range(1)

    def bootstrap(self, st: _TableState, now: float) -> list[Record]:
        bt = self.build_ts()
        j = {"version": spec.VERSION, "type": "BOOTSTRAP", "commitTs": 0, "buildTs": bt,
             "tableSchema": spec.table_schema(st.table, avro=False)}
        a = {"version": spec.VERSION, "buildTs": bt, "tableSchema": spec.table_schema(st.table, avro=True)}
        payload = self.serialize("BOOTSTRAP", j, a)
        st.last_bootstrap_s = now
        st.rows_since = 0
        return [Record(self.topic(), None, payload, p) for p in self.bootstrap_partitions()]

    def before_row(self, table: Table) -> list[Record]:
        """A table seen for the first time gets its BOOTSTRAP before its first row."""
        st = self.tables.get(table.table_id)
        if st is None:
            st = self.tables[table.table_id] = _TableState(table, self.now)
            if self.o.bootstraps_enabled:
                return self.bootstrap(st, self.now)
        st.table = table
        return []

    # -- DML --------------------------------------------------------------------------------------

    def split_update(self, change: RowChange) -> bool:
        return change.changes_unique_key()

    def encode_change(self, change: RowChange, commit_ts: int) -> list[Record]:
        if change.op is Op.UPDATE and self.split_update(change):
            return [r for half in update_halves(change) for r in self.encode_change(half, commit_ts)]
        t = change.table
        out = self.before_row(t)
        payload = self.row_payload(change, commit_ts, key_only=False)
        key = self.row_key(change)
        if spec.message_length(key, payload) > self.o.max_message_bytes:
            payload = self.large_message(change, commit_ts, payload)
        out.append(Record(self.topic(), key, payload, self.partition_of(t)))
        self.tables[t.table_id].rows_since += 1
        return out

    def row_key(self, change: RowChange) -> bytes | None:
        return None

    def dml_type(self, op: Op) -> str:
        return {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}[op]

    def row_values(self, t: Table, row: Row, *, avro: bool, key_only: bool) -> dict[str, Any]:
        # A virtual generated column is in no row event (notes §3.2): never in data / old.
        cols = t.handle_key_columns() if key_only else t.stored_columns
        if avro:
            return {c.name: spec.avro_value(c.type, row[c.name], self.o) for c in sorted(cols, key=lambda c: c.name)}
        return {c.name: spec.json_value(c.type, row[c.name], self.o) for c in sorted(cols, key=lambda c: c.name)}

    def row_payload(self, change: RowChange, commit_ts: int, *, key_only: bool,
                    claim_check: str | None = None) -> bytes:
        t = change.table
        bt = self.build_ts()
        typ = self.dml_type(change.op)
        j: dict[str, Any] = {"version": spec.VERSION, "database": t.database, "table": t.name, "tableID": t.table_id,
                             "type": typ, "commitTs": commit_ts, "buildTs": bt, "schemaVersion": t.version}
        a: dict[str, Any] = {"version": spec.VERSION, "database": t.database, "table": t.name,
                             "tableID": t.table_id, "type": typ, "commitTs": commit_ts, "buildTs": bt,
                             "schemaVersion": t.version, "claimCheckLocation": claim_check,
                             "handleKeyOnly": True if key_only else None, "checksum": None, "data": None,
                             "old": None}
        if claim_check is not None:
            j["claimCheckLocation"] = claim_check
        if key_only:
            j["handleKeyOnly"] = True
        # Only the configured encoding's rendering is built (the other dict stays without rows).
        avro = self.o.avro
        target = a if avro else j
        if change.after is not None:
            target["data"] = self.row_values(t, change.after, avro=avro, key_only=key_only)
        if change.before is not None and change.op is not Op.INSERT:
            target["old"] = self.row_values(t, change.before, avro=avro, key_only=key_only)
        return self.serialize("DML", j, a)

    def large_message(self, change: RowChange, commit_ts: int, full: bytes) -> bytes:
        """handle-key-only / claim-check (simple/encoder.go:39-110); `none` is TiCDC's error."""
        opt = self.o.large_message
        key = self.row_key(change)
        if opt == "none":
            raise EncoderError(f"message of {spec.message_length(key, full)} bytes (with Kafka's record overhead) "
                               f"exceeds max-message-bytes={self.o.max_message_bytes} and "
                               "large-message-handle-option is none (TiCDC reports ErrMessageTooLarge)")
        location = None
        if opt == "claim-check":
            location = self.write_claim_check(full, commit_ts)
        small = self.row_payload(change, commit_ts, key_only=True, claim_check=location)
        if spec.message_length(key, small) > self.o.max_message_bytes:
            raise EncoderError(f"even with the handle key only, the message has {spec.message_length(key, small)} "
                               f"bytes (with Kafka's record overhead) > max-message-bytes={self.o.max_message_bytes} "
                               "(TiCDC reports ErrMessageTooLarge)")
        return small

    def claim_check_name(self, full: bytes, commit_ts: int) -> str:
        """`<uuid4>.json`. TiCDC draws a random UUID v4 (claimcheck.NewFileName: uuid.NewString);
        the reference must be deterministic from (seed, shard), so it takes the 122 random bits
        from a hash of what the workload decides (the message, its commit ts, how many came
        before) and keeps the v4 shape: version nibble 4, RFC 4122 variant."""
        self._claims += 1
        h = hashlib.sha256(CLAIM_CHECK_NAMESPACE.bytes + f"{commit_ts}:{self._claims}:".encode() + full).digest()
        return f"{uuid.UUID(bytes=h[:16], version=4)}.json"

    def claim_check_content(self, full: bytes) -> bytes:
        """The file: the compressed message itself with claim-check-raw-value, else Go's JSON of
        ClaimCheckMessage{Key, Value} (claimcheck/claim_check.go WriteMessage)."""
        if self.o.claim_check_raw:
            return full
        return gojson.dumps({"key": None, "value": full}).encode("utf-8")

    def write_claim_check(self, full: bytes, commit_ts: int) -> str:
        """A `<uuid4>.json` file holding Go's json.Marshal of ClaimCheckMessage{Key, Value}:
        compact `{"key":null,"value":"<base64 of the compressed full message>"}` ([]byte is
        base64, a nil key null; claimcheck/claim_check.go WriteMessage); returns the location URI."""
        name = self.claim_check_name(full, commit_ts)
        directory = Path(urlsplit(self.o.claim_check_uri).path)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(self.claim_check_content(full))
        return f"{self.o.claim_check_uri}/{name}"
