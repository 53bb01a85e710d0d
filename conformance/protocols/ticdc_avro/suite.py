"""TiCDC Avro as the harness and the CLI see it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...checks.results import Tally
from ...encoders.spi import EncoderInfo, EncoderKind, Record
from ...model.events import Event, Workload
from ...model.types import TIDB_KINDS
from ...strategies.history import EVOLUTIONS
from ..base import Capabilities, CheckerMode, Identify, ProtocolSuite
from . import delivery, spec, watermark
from .checker import AvroChecker
from .checks import CHECKS
from .decoder import SchemaResolver, decode_framed
from .encoder import TiCDCAvroEncoder

if TYPE_CHECKING:  # imported where used: a capture check needs neither (~9 ms of its start)
    from ...encoders.tool import FieldIds
    from ..mutants import MutantSpec


class TiCDCAvroSuite(ProtocolSuite):
    def combination_problems(self, options: Mapping[str, str]) -> list[str]:
        return spec.combination_problems(spec.AvroOptions.from_options(options), options)

    def reference(self) -> EncoderInfo:
        return EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, TiCDCAvroEncoder,
                           "Reference encoder, byte-exact with pingcap/tiflow (spec/notes/ticdc.md §1).")

    def mutants(self) -> Sequence[MutantSpec]:
        from .mutants import MUTANTS

        return MUTANTS.specs()

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> AvroChecker:
        return AvroChecker(self.checks, options, registry, tally, mode, topic_prefix=topic_prefix,
                           partitions=partitions)

    expected_versions = staticmethod(delivery.expected_versions)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        resolver = SchemaResolver(registry)
        return lambda topic, key, value: delivery.identify(topic, key, value, resolver, options)

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return spec.AvroOptions.from_options(options).extension

    def topic_subjects(self, topic: str) -> set[str]:
        """`<topic with . replaced by _>-key|-value` (spec/notes/ticdc.md §1)."""
        return {spec.subject(topic, "key"), spec.subject(topic, "value")}

    # -- check --workload (harness/field.py): row by row --------------------------------------

    field_joins_rows = True

    def record_table(self, database: str, table: str) -> tuple[str, str]:
        """As a record's schema names its table: the namespace of the database, the sanitized name."""
        return (spec.namespace(database), spec.sanitize_name(table))

    def _field_resolver(self, registry: Any) -> SchemaResolver:
        """One resolver per registry for `check --workload`, kept across records: a resolver reads
        and parses each schema once."""
        kept = getattr(self, "_kept_resolver", None)
        if kept is None or kept.registry is not registry:
            kept = self._kept_resolver = SchemaResolver(registry)
        return kept

    def field_table(self, record: Record, options: Mapping[str, str], registry: Any = None) -> tuple[str, str] | None:
        """The key's (else the value's) writer schema: its namespace and name."""
        resolver = self._field_resolver(registry)
        for part in (record.key, record.value):
            if part is None or len(part) < 5 or part[0] != 0:
                continue
            view = resolver.view(int.from_bytes(part[1:5], "big", signed=True))
            if not isinstance(view, str) and view.namespace is not None and view.name is not None:
                return (view.namespace, view.name)
        return None

    def field_refuses(self, options: Mapping[str, str]) -> str | None:
        if spec.AvroOptions.from_options(options).control_messages:
            return ("avro-enable-watermark (a testing option) writes DDL and checkpoint records on TiCDC's own "
                    "schedule, which the row join does not place")
        return None

    def field_ids(self, event: Event, records: Sequence[Record], options: Mapping[str, str], registry: Any = None
                  ) -> FieldIds | None:
        """With enable-tidb-extension, the commit ts TiDB gave the transaction (its rows'
        `_tidb_commit_ts`, the most common one: a tombstone carries none); else nothing."""
        if not spec.AvroOptions.from_options(options).extension:
            return None
        resolver = self._field_resolver(registry)
        seen: Counter[int] = Counter()
        for r in records:
            if r.value is not None:
                d = decode_framed(r.value, resolver)
                ts = d.datum.get("_tidb_commit_ts") if d.datum is not None else None
                if isinstance(ts, int) and not isinstance(ts, bool):
                    seen[ts] += 1
        if not seen:
            return None
        from ...encoders.tool import FieldIds

        return FieldIds(commit_ts=min(seen.items(), key=lambda kv: (-kv[1], kv[0]))[0])

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> set[str]:
        """The rows' topics, and with avro-enable-watermark those of the DDL and checkpoint records."""
        out = {v.topic for v in self.expected_versions(workload, options, topic_prefix) if v.topic is not None}
        o = spec.AvroOptions.from_options(options)
        if o.control_messages:
            out |= watermark.all_topics(workload.events, o, topic_prefix)
        return out


SUITE = TiCDCAvroSuite.from_spec(
    spec,
    title="TiCDC Avro (Confluent wire format + Schema Registry)",
    spec_sources=("spec/000 (EN web)", "spec/001 (JA)", "spec/003 (EN markdown)", "spec/notes/ticdc.md §1"),
    # In-memory runs give every topic three partitions, so that broadcasts (avro-enable-watermark)
    # and the table dispatcher are exercised as on a real topic. Rows carry their commit ts only
    # with the TiDB extension, so delivery mutants run with it.
    capabilities=Capabilities(memory_partitions=3, needs_registry=True, evolutions=EVOLUTIONS,
                              delivery_options={"enable-tidb-extension": "true"}, kinds=TIDB_KINDS),
    checks=CHECKS,
    default=True,
)
