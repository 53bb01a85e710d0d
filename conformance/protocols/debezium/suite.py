"""Debezium as the harness and the CLI see it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...checks.results import Tally
from ...encoders.spi import ConfigurationError, EncoderInfo, EncoderKind, Record
from ...encoders.tool import CAPTURE_START, FieldIds, ToolRecord
from ...model.events import CaptureStart, Ddl, DdlKind, Event, Transaction, Workload
from ...strategies.history import EVOLUTIONS
from ..base import Capabilities, CheckerMode, Identify, ProtocolSuite
from ..connector_config import ConnectorOptions
from ..mutants import MutantSpec
from . import delivery, log_checks, spec  # noqa: F401 - log_checks registers the checks a capture alone judges
from .checker import DebeziumChecker
from .checks import CHECKS
from .decoder import SchemaResolver, decode_avro_part
from .encoder import DebeziumEncoder

JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"


class DebeziumSuite(ProtocolSuite):
    _resolvers: dict[int, SchemaResolver] = {}  # noqa: RUF012 - a per-process cache
    # What a connector's configuration holds that does not change the records it writes.
    config_irrelevant = (
        "name", "connector.class", "tasks.max", "database.", "plugin.name", "slot.", "publication.", "snapshot.",
        "offset.", "heartbeat.", "signal.", "incremental.snapshot.", "schema.include.list", "table.include.list",
        "poll.interval.ms", "max.batch.size", "max.queue.size", "max.queue.size.in.bytes", "status.update.interval.ms",
        "retriable.restart.connector.wait.ms", "errors.", "key.converter", "value.converter", "header.converter",
        "topic.creation.", "producer.", "consumer.", "notification.", "schema.history.internal.",
        # The registry is the run's (--registry), not the converter's.
        "key.converter.schema.registry.url", "value.converter.schema.registry.url",
        "key.converter.basic.auth.", "value.converter.basic.auth.",
    )

    def check_combination(self, options: Mapping[str, str]) -> None:
        for side in ("key", "value"):
            if options.get(f"{side}.converter") == spec.AVRO_CONVERTER and \
                    options.get(f"{side}.converter.schemas.enable") == "false":
                raise ConfigurationError(f"{side}.converter.schemas.enable is the JSON converter's setting: the Avro "
                                         "converter always registers the schema")

    def registry_options(self) -> dict[str, str]:
        return {"profile": "avro"}

    def needs_registry(self, options: Mapping[str, str]) -> bool:
        return spec.AVRO_CONVERTER in (options.get("key.converter"), options.get("value.converter"))

    def generation_fits(self, options: Mapping[str, str]) -> str | None:
        avro = spec.AVRO_CONVERTER in (options.get("key.converter"), options.get("value.converter"))
        if avro and (options.get("field.name.adjustment.mode") != "avro_unicode"
                     or options.get("schema.name.adjustment.mode") != "avro_unicode"):
            return ("generated names include ones Avro refuses (x-1, 名前, 9lives) and ones that meet under the avro "
                    "mode's `_`: with the Avro converter, generated workloads need field.name.adjustment.mode and "
                    "schema.name.adjustment.mode avro_unicode (--option profile=avro); `check` judges a capture "
                    "under any mode")
        return None

    def connector_options(self, config: Mapping[str, str]) -> ConnectorOptions:
        """A connector's configuration as it is; its converters must be ones this protocol models
        (Connect's JSON converter, Confluent's Avro converter)."""
        for side in ("key", "value"):
            conv = config.get(f"{side}.converter")
            if conv is not None and conv not in (spec.JSON_CONVERTER, spec.AVRO_CONVERTER):
                raise ConfigurationError(f"--connector-config: {side}.converter={conv} is not modelled yet; the "
                                         f"debezium protocol checks {spec.JSON_CONVERTER} and {spec.AVRO_CONVERTER}")
        if config.get("snapshot.mode") == "configuration_based":
            # Its sub-options say what it does: read the rows or not, stream or not.
            sub = "snapshot.mode.configuration.based."
            data = config.get(sub + "snapshot.data", "false") == "true"
            stream = config.get(sub + "start.stream", "false") == "true"
            if not stream and not data:
                raise ConfigurationError("--connector-config: snapshot.mode=configuration_based with neither "
                                         f"{sub}snapshot.data nor {sub}start.stream writes no records")
            config = {**config, "snapshot.mode": ("initial" if stream else "initial_only") if data else "no_data"}
        return super().connector_options(config)
    def reference(self) -> EncoderInfo:
        return EncoderInfo(f"{self.name}/reference", self.name, EncoderKind.REFERENCE, DebeziumEncoder,
                           "Reference encoder: Debezium's PostgreSQL connector through Kafka Connect's JSON converter "
                           "(documented envelope and type mapping; transaction ids as the real connector writes them).")

    def encoders(self) -> list[EncoderInfo]:
        """The reference, its mutants, and real Debezium's embedded engine (a whole tool)."""
        from .engine import DebeziumEngineAdapter, installed_version

        return [*super().encoders(),
                EncoderInfo(f"{self.name}/engine-postgres", self.name, EncoderKind.EXTERNAL, DebeziumEncoder,
                            "Real Debezium (3.6.3 from the `.[debezium]` extra): the embedded engine's PostgreSQL "
                            "connector reads --upstream's logical decoding; its JSON records go to Kafka as a "
                            "Connect worker would send them.", bounds_own_calls=True, tool=DebeziumEngineAdapter,
                            identify=installed_version)]

    def mutants(self) -> Sequence[MutantSpec]:
        from . import log_mutants  # noqa: F401 - registers the mutants a capture alone catches
        from .mutants import MUTANTS

        return MUTANTS.specs()

    def checker(self, options: Mapping[str, str], registry: Any, tally: Tally, mode: CheckerMode, *,
                topic_prefix: str = "", partitions: int | None = None) -> DebeziumChecker:
        from . import fastpath

        return DebeziumChecker(self.checks, options, tally, mode, topic_prefix=topic_prefix, partitions=partitions,
                               registry=registry, fastpath=fastpath)

    def topics(self, workload: Workload, options: Mapping[str, str], topic_prefix: str) -> set[str]:
        o = spec.DbzOptions.from_options(options)
        out = set()
        truncates = False
        for e in workload.events:
            if isinstance(e, Transaction):
                for ch in e.changes:
                    out.add(spec.topic_name(o, ch.table.database, ch.table.name, topic_prefix))
                if e.messages:
                    out.add(topic_prefix + spec.message_topic(o))
            elif isinstance(e, CaptureStart):
                out |= {spec.topic_name(o, t.database, t.name, topic_prefix) for t, rows in e.tables if rows}
            elif isinstance(e, Ddl) and e.kind is DdlKind.TRUNCATE_TABLE:
                truncates = True
        if o.transactions and (out or truncates):
            out.add(topic_prefix + o.transaction_topic)
        return out

    expected_versions = staticmethod(delivery.expected_versions)

    def identifier(self, options: Mapping[str, str], registry: Any) -> Identify:
        return delivery.identifier(options, registry)

    def carries_commit_ts(self, options: Mapping[str, str]) -> bool:
        return False

    def tool_record(self, record: Record, options: Mapping[str, str], registry: Any = None) -> ToolRecord:
        """A change event: its source table and txId, ordered by LSN (then total_order, or a
        delete before a create); BEGIN / END (the id's txId part) around them; a tombstone goes
        with the delete before it. Avro values are read through the registry."""
        payload = self._payload(record, options, registry)
        if payload is None:
            return ToolRecord()
        src = payload.get("source")
        if isinstance(src, dict):
            table = (src.get("schema"), src.get("table"))
            tx = src.get("txId")
            if payload.get("op") == "r":
                # A snapshot's read events: the snapshot's own transaction, where the tool started.
                return ToolRecord(table=table if all(isinstance(x, str) for x in table) else None,  # type: ignore[arg-type]
                                  tx=CAPTURE_START, order=(1, 0, 0))
            lsn = src.get("lsn")
            # A primary-key update is a delete and a create at one LSN (on two keys: two
            # partitions): the transaction block's total_order where there is one, else the
            # delete first.
            block = payload.get("transaction")
            total = block.get("total_order") if isinstance(block, dict) else None
            rank = total if isinstance(total, int) else (0 if payload.get("op") == "d" else 1)
            body = payload.get("message")
            prefix = body.get("prefix") if isinstance(body, dict) and payload.get("op") == "m" else None
            return ToolRecord(table=table if all(isinstance(x, str) for x in table) else None,  # type: ignore[arg-type]
                              tx=tx & 0xFFFFFFFF if isinstance(tx, int) else None,
                              order=(1, lsn if isinstance(lsn, int) else 0, rank),
                              # A non-transactional logical decoding message names no transaction.
                              loose=payload.get("op") == "m" and tx is None,
                              message=prefix if isinstance(prefix, str) else None)
        status, tid = payload.get("status"), payload.get("id")
        if status in ("BEGIN", "END") and isinstance(tid, str):
            head = tid.split(":", 1)[0]
            return ToolRecord(tx=int(head) & 0xFFFFFFFF if head.isdigit() else None,
                              order=(0,) if status == "BEGIN" else (2,))
        return ToolRecord()

    def field_tableless(self, event: Event) -> bool:
        """A TRUNCATE: pgoutput publishes it, the connector skips it and leaves its transaction's
        BEGIN/END (with transaction metadata) with nothing between."""
        return isinstance(event, Ddl) and event.kind is DdlKind.TRUNCATE_TABLE

    def field_ids(self, event: Event, records: Sequence[Record], options: Mapping[str, str], registry: Any = None
                  ) -> FieldIds:
        """A transaction's commit time, from its change events' source.ts_ms (txId and LSN are
        judged against each other in the log itself, never against the workload)."""
        for r in records:
            payload = self._payload(r, options, registry)
            src = payload.get("source") if payload is not None else None
            ms = src.get("ts_ms") if isinstance(src, dict) else None
            if isinstance(ms, int) and not isinstance(ms, bool) and payload is not None and payload.get("op") != "r":
                return FieldIds(time_ms=ms)
        return FieldIds()

    def _payload(self, record: Record, options: Mapping[str, str], registry: Any) -> dict[str, Any] | None:
        """A record's value payload (JSON, with or without the schema envelope, or Avro through
        the registry); None for a tombstone or what does not decode to an object."""
        if record.value is None:
            return None
        if spec.DbzOptions.from_options(options).value_avro:
            part = decode_avro_part(record.value, self._resolver(registry))
            payload = part.payload if part.ok else None
        else:
            try:
                doc = json.loads(record.value)
            except ValueError:
                return None
            payload = doc.get("payload", doc) if isinstance(doc, dict) and "schema" in doc else doc
        return payload if isinstance(payload, dict) else None

    def _resolver(self, registry: Any) -> SchemaResolver:
        """One schema cache per registry (a tool's records are read many times over)."""
        key = id(registry)
        got = self._resolvers.get(key)
        if got is None or got.registry is not registry:
            got = self._resolvers[key] = SchemaResolver(registry)
        return got


SUITE = DebeziumSuite.from_spec(
    spec,
    title="Debezium (PostgreSQL connector; Kafka Connect JSON or Confluent Avro converter)",
    spec_sources=("Debezium PostgreSQL connector documentation", "Kafka Connect JsonConverter",
                  "tests/fixtures/debezium (real Debezium 3.6.3 output)"),
    # Connect's producer hashes keys over a topic's partitions: three in memory, so that a sink
    # that scatters a key shows. The upstream is PostgreSQL, kept to the kinds the mapping covers.
    capabilities=Capabilities(memory_partitions=3, stream_scope="topic", commit_ts_scope="entity",
                              dialect="postgresql", kinds=spec.KINDS, evolutions=EVOLUTIONS,
                              # Logical decoding messages (op m), unchanged TOASTed values (the
                              # placeholder) and a connector that starts on a database with rows (a
                              # snapshot): what every PostgreSQL deployment meets.
                              shape={"message_rate": 0.15, "large_value_rate": 0.15, "capture_start_rate": 0.3}),
    checks=CHECKS,
)
