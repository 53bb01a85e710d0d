"""MaxScale KafkaCDC as the harness and the CLI see it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...checks.results import Tally
from ...encoders.spi import EncoderInfo, EncoderKind, Record
from ...encoders.tool import FieldIds, ToolRecord
from ...model.events import Event, Workload
from ..base import Capabilities, CheckerMode, Identify, ProtocolSuite
from ..mutants import MutantSpec
from . import delivery, spec
from .checker import CdcChecker
from .checks import CHECKS
from .checks.common import FAST
from .encoder import MaxScaleKafkaCDCEncoder


class MaxScaleKafkaCDCSuite(ProtocolSuite):
    def combination_problems(self, options: Mapping[str, str]) -> list[str]:
        return spec.combination_problems(options)

    def reference(self) -> EncoderInfo:
        return EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, MaxScaleKafkaCDCEncoder,
                           "Reference encoder: MaxScale's KafkaCDC message format (spec/notes/maxscale.md), the "
                           "table's data rendered faithfully; --option profile=maxscale-24.02 for 24.02's quirks.")

    def mutants(self) -> Sequence[MutantSpec]:
        from . import log_mutants  # noqa: F401 - registers the mutants a capture alone catches
        from .mutants import MUTANTS

        return MUTANTS.specs()

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> CdcChecker:
        return CdcChecker(self.checks, options, tally, mode, topic_prefix=topic_prefix, partitions=partitions,
                          rules=FAST)

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> list[str]:
        """One topic for every table, schema and DML alike (notes §1)."""
        return [delivery.topic_of(options, topic_prefix)]

    expected_versions = staticmethod(delivery.expected_versions)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        return delivery.identifier(options)

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return True  # the GTID sequence, in every DML event

    def tool_record(self, record: Record, options: Mapping[str, str], registry: Any = None) -> ToolRecord:
        """A DML event: its table and GTID, ordered by event_number; a schema event goes with the
        DML event after it in the topic (it announces that event's table version), and names the
        GTID of the DDL that made that version (its key)."""
        from .decoder import decode

        m = decode(record.key, record.value)
        if m.kind == "dml":
            g = m.gtid
            return ToolRecord(table=m.table, tx=str(g) if g is not None else None, order=(1, m.event_number or 0))
        schema = m.kind == "schema"
        return ToolRecord(table=m.table if schema else None, with_next=True,
                          position=str(m.key[0]) if schema and m.key is not None else None)

    def record_table(self, database: str, table: str) -> tuple[str, str]:
        return (spec.sanitize(database), spec.sanitize(table))

    def field_ids(self, event: Event, records: Sequence[Record], options: Mapping[str, str], registry: Any = None
                  ) -> FieldIds:
        """A transaction's GTID and binlog time, from its first DML event."""
        from .decoder import decode

        for r in records:
            m = decode(r.key, r.value)
            if m.kind == "dml" and m.gtid is not None:
                t = m.get("timestamp")
                seconds = t if isinstance(t, int) and not isinstance(t, bool) else None
                return FieldIds(position=str(m.gtid), time_ms=None if seconds is None else seconds * 1000)
        return FieldIds()


SUITE = MaxScaleKafkaCDCSuite.from_spec(
    spec,
    title="MariaDB MaxScale KafkaCDC (MariaDB binlog as JSON)",
    spec_sources=("spec/004 (KafkaCDC.md)", "spec/notes/maxscale.md"),
    # Three partitions in memory, so that a sink that scatters a table's rows shows; the reference
    # writes partition 0 (a 1-partition topic, as MaxScale's tests use). Stream rules need to know
    # whether a topic's messages sit in one partition: checked per topic. The upstream is MariaDB:
    # generated workloads use its domain (INET4/INET6/UUID, type spellings) and carry GTIDs.
    capabilities=Capabilities(memory_partitions=3, stream_scope="topic", commit_ts_scope="partition",
                              dialect="mariadb"),
    checks=CHECKS,
)
