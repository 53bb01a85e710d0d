"""TiCDC Simple as the harness and the CLI see it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...checks.results import Tally
from ...encoders.spi import EncoderInfo, EncoderKind, Record
from ...model.events import Ddl, Event, Transaction, Watermark, Workload
from ...model.table import Table
from ...model.types import TIDB_KINDS
from ..base import Capabilities, CheckerMode, Identify, ProtocolSuite
from . import delivery, fastpath, spec
from .checker import SimpleChecker
from .checks import CHECKS
from .decoder import decode, integer, schema_key, table_schema_of

if TYPE_CHECKING:  # imported where used: a `conformance check` needs neither the encoder nor the tool records
    from ...encoders.tool import FieldIds, ToolRecord
    from ..mutants import MutantSpec


class TiCDCSimpleSuite(ProtocolSuite):
    def combination_problems(self, options: Mapping[str, str]) -> list[str]:
        return spec.combination_problems(spec.SimpleOptions.from_options(options))

    def reference(self) -> EncoderInfo:
        from .encoder import TiCDCSimpleEncoder

        return EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, TiCDCSimpleEncoder,
                           "Reference encoder, as pingcap/tiflow emits Simple (spec/notes/ticdc.md §2).")

    def mutants(self) -> Sequence[MutantSpec]:
        from .mutants import MUTANTS

        return MUTANTS.specs()

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> SimpleChecker:
        return SimpleChecker(self.checks, options, registry, tally, mode, topic_prefix=topic_prefix,
                             partitions=partitions, fastpath=fastpath)

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> list[str]:
        """Every message goes to the one sink topic (DDLs and watermarks too, even with no rows)."""
        return [delivery.topic_of(options, topic_prefix)]

    expected_versions = staticmethod(delivery.expected_versions)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        """Stateful (it learns handle keys from the schemas in the stream): one per stream."""
        identify = delivery.identifier(options)
        return lambda topic, key, value: identify(topic, value)

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return True

    # -- a deployment's capture against its workload (`check --workload`) ------------------------

    field_joins_ddl = True

    def tool_record(self, record: Record, options: Mapping[str, str], registry: Any = None) -> ToolRecord:
        """A DML: its table and commitTs (the transaction's); a DDL: the table it made and its own
        commitTs; a BOOTSTRAP goes with what follows it in its partition; a WATERMARK is made on
        TiCDC's own schedule."""
        from ...encoders.tool import ToolRecord

        o = spec.SimpleOptions.from_options(options)
        m = decode(record.value, o.compression, o.avro)
        if not m.ok:
            return ToolRecord()
        ts = integer(m.get("commitTs"))
        if m.kind == "DML":
            db, table = m.table_key
            return ToolRecord(table=(db, table) if db is not None and table is not None else None, tx=ts)
        if m.kind == "WATERMARK":
            return ToolRecord(own_schedule=True)
        schema = table_schema_of(m)
        key = schema_key(schema) if schema is not None else None
        named = (key[0], key[1]) if key is not None else None
        if m.kind == "DDL":
            # One that makes no table (CREATE DATABASE) belongs with what follows it.
            return ToolRecord(table=named, tx=f"ddl:{ts}" if ts is not None else None, ddl=True,
                              with_next=named is None)
        return ToolRecord(table=named, with_next=True)  # a BOOTSTRAP

    def field_reproducible(self, event: Event) -> bool:
        return not isinstance(event, Watermark)

    def field_ids(self, event: Event, records: Sequence[Record], options: Mapping[str, str], registry: Any = None
                  ) -> FieldIds:
        """The commit ts TiDB gave the transaction or DDL, a DDL's statement as TiDB recorded it,
        and each table version's tableID and schemaVersion (TiDB's UpdateTS)."""
        from ...encoders.tool import FieldIds

        o = spec.SimpleOptions.from_options(options)
        msgs = [m for m in (decode(r.value, o.compression, o.avro) for r in records) if m.ok]
        tables: list[tuple[Table, dict[str, Any]]] = []
        if isinstance(event, Transaction):
            by_name = {(c.table.database, c.table.name): c.table for c in event.changes}
            dml = [m for m in msgs if m.kind == "DML"]
            for m in dml:
                t = by_name.get(m.table_key)  # type: ignore[arg-type]
                tid, version = integer(m.get("tableID")), integer(m.get("schemaVersion"))
                if t is not None and tid is not None and version is not None:
                    tables.append((t, {"table_id": tid, "version": version}))
            ts = integer(dml[0].get("commitTs")) if dml else None
            return FieldIds(commit_ts=ts, tables=tuple(tables))
        ddl = next((m for m in msgs if m.kind == "DDL"), None)
        if ddl is None or not isinstance(event, Ddl):
            return FieldIds()
        for t, name in zip(spec.ddl_schema_tables(event), ("tableSchema", "preTableSchema"), strict=True):
            got = table_schema_of(ddl, name)
            tid = integer(got.get("tableID")) if got is not None else None
            version = integer(got.get("version")) if got is not None else None
            if t is not None and tid is not None and version is not None:
                tables.append((t, {"table_id": tid, "version": version}))
        sql = ddl.get("sql")
        return FieldIds(commit_ts=integer(ddl.get("commitTs")), sql=sql if isinstance(sql, str) else None,
                        tables=tuple(tables))


SUITE = TiCDCSimpleSuite.from_spec(
    spec,
    title="TiCDC Simple (JSON or Avro; schemas in DDL and BOOTSTRAP messages)",
    spec_sources=("spec/002 (ZH)", "spec/notes/ticdc.md §2, §5"),
    # Three partitions in memory (DDLs, watermarks and bootstraps are broadcast); stream rules span
    # a topic's partitions, so live topics are checked per topic; tables share a partition and
    # interleave, so commit-ts order is per table (the entity).
    capabilities=Capabilities(memory_partitions=3, stream_scope="topic", commit_ts_scope="entity", kinds=TIDB_KINDS),
    checks=CHECKS,
)
