"""TiCDC Avro as the harness and the CLI see it."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from ...checks.delivery import Version
from ...checks.results import Tally
from ...encoders.sink import SINKS
from ...encoders.spi import ConfigurationError, EncoderInfo, EncoderKind
from ...model.events import Workload
from ..base import ProtocolSuite
from . import delivery, spec, watermark
from .checker import AvroChecker
from .decoder import SchemaResolver
from .encoder import TiCDCAvroEncoder


class TiCDCAvroSuite(ProtocolSuite):
    def check_combination(self, options: Mapping[str, str]) -> None:
        problems = spec.combination_problems(spec.AvroOptions.from_options(options), options)
        if problems:
            raise ConfigurationError("; ".join(problems))

    def encoders(self) -> list[EncoderInfo]:
        from .mutants import MUTANTS

        out = [EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, TiCDCAvroEncoder,
                           "Reference encoder, byte-exact with pingcap/tiflow (spec/notes/ticdc.md §1).")]
        for m in MUTANTS:
            out.append(EncoderInfo(f"{self.name}/mutant/{m.name}", self.name, EncoderKind.MUTANT, m.cls,
                                   m.description, catches=m.catches, needs_options=m.needs_options,
                                   extra={"shape": m.shape}))
        # Delivery mutants: the reference encoder behind a broken sink (they need Kafka).
        for name, sink in SINKS.items():
            if sink.catches is None:
                continue
            doc = (sink.__doc__ or name).strip().splitlines()[0]
            out.append(EncoderInfo(f"{self.name}/mutant/{name}", self.name, EncoderKind.MUTANT, TiCDCAvroEncoder,
                                   doc, catches=sink.catches,
                                   needs_options={"enable-tidb-extension": "true"},
                                   extra={"sink": name, "faults": sink.faults, "needs_kafka": True,
                                          "shape": dict(sink.shape)}))
        return out

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, *, topic_prefix: str = "",
                with_source: bool = True, partitions: int | None = None) -> AvroChecker:
        return AvroChecker(options, registry, tally, topic_prefix=topic_prefix, with_source=with_source,
                           partitions=partitions)

    def needs_registry(self) -> bool:
        return True

    # -- Kafka mode: delivery against the workload ---------------------------------------------

    def expected_versions(self, workload: Workload, options: Mapping[str, str], topic_prefix: str
                          ) -> Iterator[Version]:
        return delivery.expected_versions(workload, options, topic_prefix)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Callable[[str, bytes | None, bytes | None],
                                                                             delivery.Identified]:
        resolver = SchemaResolver(registry)
        return lambda topic, key, value: delivery.identify(topic, key, value, resolver, options)

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return spec.AvroOptions.from_options(options).extension

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> set[str]:
        """The rows' topics, and with avro-enable-watermark those of the DDL and checkpoint records."""
        out = {v.topic for v in self.expected_versions(workload, options, topic_prefix) if v.topic is not None}
        o = spec.AvroOptions.from_options(options)
        if o.control_messages:
            out |= watermark.all_topics(workload.events, o, topic_prefix)
        return out


SUITE = TiCDCAvroSuite(
    name=spec.PROTOCOL,
    title="TiCDC Avro (Confluent wire format + Schema Registry)",
    options=spec.OPTIONS,
    profiles=spec.PROFILES,
    spec_sources=("spec/000 (EN web)", "spec/001 (JA)", "spec/003 (EN markdown)", "spec/notes/ticdc.md §1"),
    # In-memory runs give every topic three partitions, so that broadcasts (avro-enable-watermark)
    # and the table dispatcher are exercised as on a real topic.
    extra={"memory_partitions": 3},
)
