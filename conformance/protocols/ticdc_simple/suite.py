"""TiCDC Simple as the harness and the CLI see it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ...checks.delivery import Version
from ...checks.results import Tally
from ...encoders.sink import SINKS
from ...encoders.spi import ConfigurationError, EncoderInfo, EncoderKind
from ...model.events import Workload
from ..base import ProtocolSuite
from . import delivery, spec
from .checker import SimpleChecker
from .encoder import TiCDCSimpleEncoder

Identify = Callable[[str, bytes | None, bytes | None], tuple[bytes | None, bytes | None, int | None] | None]


class TiCDCSimpleSuite(ProtocolSuite):
    def check_combination(self, options: Mapping[str, str]) -> None:
        problems = spec.combination_problems(spec.SimpleOptions.from_options(options))
        if problems:
            raise ConfigurationError("; ".join(problems))

    def encoders(self) -> list[EncoderInfo]:
        from .mutants import MUTANTS

        out = [EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, TiCDCSimpleEncoder,
                           "Reference encoder, as pingcap/tiflow emits Simple (spec/notes/ticdc.md §2).")]
        for m in MUTANTS:
            out.append(EncoderInfo(f"{self.name}/mutant/{m.name}", self.name, EncoderKind.MUTANT, m.cls,
                                   m.description, catches=m.catches, needs_options=m.needs_options,
                                   extra={"shape": m.shape}))
        for name, sink in SINKS.items():
            if sink.catches is None:
                continue
            doc = (sink.__doc__ or name).strip().splitlines()[0]
            out.append(EncoderInfo(f"{self.name}/mutant/{name}", self.name, EncoderKind.MUTANT, TiCDCSimpleEncoder,
                                   doc, catches=sink.catches, extra={"sink": name, "faults": sink.faults,
                                                                     "needs_kafka": True, "shape": dict(sink.shape)}))
        return out

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, *, topic_prefix: str = "",
                with_source: bool = True, partitions: int | None = None) -> SimpleChecker:
        return SimpleChecker(options, registry, tally, topic_prefix=topic_prefix, with_source=with_source,
                             partitions=partitions)

    def needs_registry(self) -> bool:
        return False

    # -- Kafka mode -------------------------------------------------------------------------

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> list[str]:
        """Every message goes to the one sink topic (DDLs and watermarks too, even with no rows)."""
        return [delivery.topic_of(options, topic_prefix)]

    def expected_versions(self, workload: Workload, options: Mapping[str, str], topic_prefix: str
                          ) -> Iterator[Version]:
        return delivery.expected_versions(workload, options, topic_prefix)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        """Stateful (it learns handle keys from the schemas in the stream): one per stream."""
        identify = delivery.identifier(options)
        return lambda topic, key, value: identify(topic, value)

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return True


SUITE = TiCDCSimpleSuite(
    name=spec.PROTOCOL,
    title="TiCDC Simple (JSON or Avro; schemas in DDL and BOOTSTRAP messages)",
    options=spec.OPTIONS,
    profiles=spec.PROFILES,
    spec_sources=("spec/002 (ZH)", "spec/notes/ticdc.md §2, §5"),
    # Three partitions in memory (DDLs, watermarks and bootstraps are broadcast); live topics
    # are checked per topic, not per partition.
    extra={"memory_partitions": 3, "stream_scope": "topic", "commit_ts_scope": "entity"},
)
