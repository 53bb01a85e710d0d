"""TiCDC Avro as the harness and the CLI see it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...checks.results import Tally
from ...encoders.spi import ConfigurationError, EncoderInfo, EncoderKind
from ..base import ProtocolSuite
from . import spec
from .checker import AvroChecker
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
        return out

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, *, topic_prefix: str = "",
                with_source: bool = True) -> AvroChecker:
        return AvroChecker(options, registry, tally, topic_prefix=topic_prefix, with_source=with_source)

    def needs_registry(self) -> bool:
        return True


SUITE = TiCDCAvroSuite(
    name=spec.PROTOCOL,
    title="TiCDC Avro (Confluent wire format + Schema Registry)",
    options=spec.OPTIONS,
    profiles=spec.PROFILES,
    spec_sources=("spec/000 (EN web)", "spec/001 (JA)", "spec/003 (EN markdown)", "spec/notes/ticdc.md §1"),
)
