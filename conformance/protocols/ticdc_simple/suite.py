"""TiCDC Simple as the harness and the CLI see it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...checks.results import Tally
from ...encoders.spi import EncoderInfo, EncoderKind
from ...model.events import Workload
from ...model.types import TIDB_KINDS
from ..base import Capabilities, CheckerMode, Identify, ProtocolSuite
from ..mutants import MutantSpec
from . import delivery, spec
from .checker import SimpleChecker
from .checks import CHECKS
from .encoder import TiCDCSimpleEncoder


class TiCDCSimpleSuite(ProtocolSuite):
    def combination_problems(self, options: Mapping[str, str]) -> list[str]:
        return spec.combination_problems(spec.SimpleOptions.from_options(options))

    def reference(self) -> EncoderInfo:
        return EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, TiCDCSimpleEncoder,
                           "Reference encoder, as pingcap/tiflow emits Simple (spec/notes/ticdc.md §2).")

    def mutants(self) -> Sequence[MutantSpec]:
        from .mutants import MUTANTS

        return MUTANTS.specs()

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> SimpleChecker:
        return SimpleChecker(self.checks, options, registry, tally, mode, topic_prefix=topic_prefix,
                             partitions=partitions)

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
