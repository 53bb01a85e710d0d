"""The suite can pass and can fail: the reference passes every check, every mutant is caught."""

from __future__ import annotations

import os

import pytest
from helpers import problems, run_encoder, shape_with

from conformance.checks import Level, Outcome, Scope, all_checks
from conformance.encoders import EncoderKind, all_encoders
from conformance.protocols import get_protocol
from conformance.upstream.mutants import MUTANTS as SOURCE_MUTANTS

PROTOCOL = get_protocol("ticdc-avro")
# The acceptance bar is 200 workloads per option combination; CONFORMANCE_QUICK lowers it locally.
WORKLOADS = int(os.environ.get("CONFORMANCE_REFERENCE_WORKLOADS", "200"))

# The full kill list: every mutant and the check that must catch it. Adding a check means
# adding its mutant here too; a check no mutant trips is a check that cannot fail.
KILL_LIST = {
    "magic-byte-one": "ticdc-avro.framing.magic-byte",
    "schema-id-little-endian": "ticdc-avro.framing.schema-id",
    "trailing-byte": "ticdc-avro.framing.body",
    "subject-record-name": "ticdc-avro.registry.subject",
    "union-order-ignores-default": "ticdc-avro.schema.valid-avro",
    "namespace-without-changefeed": "ticdc-avro.schema.record-name",
    "key-record-suffix": "ticdc-avro.schema.key-value-names",
    "field-names-lowercased": "ticdc-avro.schema.field-names",
    "fields-sorted-by-name": "ticdc-avro.schema.field-order",
    "not-null-as-union": "ticdc-avro.schema.nullability",
    "defaults-dropped": "ticdc-avro.schema.default",
    "no-connect-parameters": "ticdc-avro.schema.connect-parameters",
    "int-as-long": "ticdc-avro.type.int",
    "int-unsigned-tidb-type": "ticdc-avro.type.int-unsigned",
    "bigint-truncated": "ticdc-avro.type.bigint",
    "bigint-unsigned-clamped": "ticdc-avro.type.bigint-unsigned",
    "bigint-unsigned-string-signed": "ticdc-avro.type.bigint-unsigned",
    "float-as-double": "ticdc-avro.type.float",
    "double-as-float": "ticdc-avro.type.double",
    "bit-padded": "ticdc-avro.type.bit",
    "decimal-bytes-little-endian": "ticdc-avro.type.decimal",
    "decimal-string-normalized": "ticdc-avro.type.decimal",
    "decimal-sign-byte": "ticdc-avro.type.decimal-minimal-bytes",
    "text-as-bytes": "ticdc-avro.type.text",
    "binary-padding-stripped": "ticdc-avro.type.blob",
    "enum-as-index": "ticdc-avro.type.enum",
    "set-reversed": "ticdc-avro.type.set",
    "json-compact": "ticdc-avro.type.json",
    "date-as-days": "ticdc-avro.type.date",
    "datetime-iso-t": "ticdc-avro.type.datetime",
    "timestamp-utc-suffix": "ticdc-avro.type.timestamp",
    "time-hours-mod-24": "ticdc-avro.type.time",
    "year-as-string": "ticdc-avro.type.year",
    "key-all-columns": "ticdc-avro.key.columns",
    "key-with-extension": "ticdc-avro.key.no-extension",
    "delete-with-value": "ticdc-avro.delete.tombstone",
    "no-update-split": "ticdc-avro.update.split-key-change",
    "update-dropped": "ticdc-avro.event.records",
    "extension-without-physical-time": "ticdc-avro.extension.fields",
    "op-update-as-c": "ticdc-avro.extension.op",
    "physical-time-seconds": "ticdc-avro.extension.commit-ts",
    "checksum-over-text": "ticdc-avro.extension.checksum",
    "topic-unsanitized": "ticdc-avro.topic.dispatch",
    "single-topic": "ticdc-avro.topic.one-table",
    "watermark-ddl-keys-sorted": "ticdc-avro.watermark.ddl-message",
    "watermark-checkpoint-little-endian": "ticdc-avro.watermark.checkpoint-message",
    "watermark-partition-zero": "ticdc-avro.watermark.broadcast",
    "watermark-before-rows": "ticdc-avro.watermark.order",
    "crash-on-delete": "encoder.no-crash",
    "hang-on-ddl": "encoder.responsive",
    # Delivery mutants: the reference encoder behind a broken sink; run over Kafka under the
    # fault that exposes them (tests/integration/test_delivery_kafka.py).
    "sink-skip-failures": "delivery.no-loss",
    "sink-inflight-retries": "delivery.per-key-order",
    "sink-key-scatter": "delivery.one-partition-per-key",
    "sink-batch-reversed": "delivery.commit-ts-order",
    "sink-stray-messages": "delivery.no-strays",
}
KAFKA_MUTANTS = {n for n in KILL_LIST if n.startswith("sink-")}

MUTANTS = {e.name.rsplit("/", 1)[1]: e for e in all_encoders("ticdc-avro") if e.kind is EncoderKind.MUTANT}


def test_kill_list_is_complete() -> None:
    assert {n: e.catches for n, e in MUTANTS.items()} == KILL_LIST


def test_every_check_has_a_mutant() -> None:
    # The source.* checks (protocol "*") judge the generator and a real server, not the encoder:
    # their mutants are generator renderings and captures (conformance.upstream.mutants), run
    # against real servers in tests/integration/test_upstream_*.py.
    caught = set(KILL_LIST.values()) | {m.catches for m in SOURCE_MUTANTS}
    # Input checks judge captured files, not encoders: bad captures exercise them (test_cli).
    # INFO checks judge the broker, not the encoder: a broker fault exercises them
    # (test_delivery_kafka::test_retention_is_unknown_not_lost).
    missing = [c.id for c in all_checks("ticdc-avro")
               if c.id not in caught and c.scope is not Scope.INPUT and c.level is not Level.INFO]
    assert missing == []


MATRIX = PROTOCOL.matrix({})
EXTRA = [
    {"enable-tidb-extension": "true", "integrity-check-level": "correctness",
     "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"},
    {"profile": "v6.5.0", "enable-tidb-extension": "true"},
    {"profile": "v7.0"},
    {"output-raw-change-event": "true", "enable-tidb-extension": "true"},
    {"time-zone": "Asia/Shanghai"},
    {"topic": "cdc.{schema}.{table}.v1"},
    {"enable-tidb-extension": "true", "avro-enable-watermark": "true"},
    {"enable-tidb-extension": "true", "avro-enable-watermark": "true", "default-topic": "cdc.default"},
]


@pytest.mark.parametrize("options", MATRIX, ids=[f"matrix{i}" for i in range(len(MATRIX))])
def test_reference_passes_every_check(options: dict[str, str]) -> None:
    tally = run_encoder("reference", options, workloads=WORKLOADS, seed="reference")
    assert problems(tally) == {}
    passed = {t.id for t in tally if t.outcome is Outcome.PASSED}
    # The run really exercised the checks, not only skipped them.
    assert len(passed) >= 36, sorted(t.id for t in tally if t.outcome is not Outcome.PASSED)


@pytest.mark.parametrize("options", EXTRA, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_reference_passes_with_other_options(options: dict[str, str]) -> None:
    tally = run_encoder("reference", options, workloads=max(40, WORKLOADS // 5), seed="extra")
    assert problems(tally) == {}
    if options.get("integrity-check-level") == "correctness":
        assert tally.checks["ticdc-avro.extension.checksum"].passed > 100
    if options.get("avro-enable-watermark") == "true":
        for cid in ("ddl-message", "checkpoint-message", "broadcast", "order"):
            assert tally.checks[f"ticdc-avro.watermark.{cid}"].passed > 20, cid


def test_watermark_needs_the_extension() -> None:
    """TiCDC honours avro-enable-watermark only with enable-tidb-extension: without it, DDLs and
    watermarks still produce nothing, and the control-message checks are skipped."""
    tally = run_encoder("reference", {"avro-enable-watermark": "true"}, workloads=20, seed="wm-off")
    assert problems(tally) == {}
    assert tally.checks["ticdc-avro.event.records"].passed > 0
    assert tally.checks["ticdc-avro.watermark.broadcast"].outcome is Outcome.SKIPPED


def test_reference_passes_with_ddl_heavy_workloads() -> None:
    shape = shape_with(ddl_rate=0.6, transactions=(8, 16))
    tally = run_encoder("reference", {"enable-tidb-extension": "true"}, workloads=60, seed="ddl", shape=shape)
    assert problems(tally) == {}


@pytest.mark.parametrize("name", sorted(set(KILL_LIST) - KAFKA_MUTANTS), ids=sorted(set(KILL_LIST) - KAFKA_MUTANTS))
def test_mutant_is_caught_by_its_check(name: str) -> None:
    info = MUTANTS[name]
    options = dict(info.needs_options)
    shape = shape_with(**dict(info.extra.get("shape", {})))
    tally = run_encoder(info.name, options, workloads=60, seed=f"mutant-{name}", shape=shape,
                        stop_when_failing=info.catches, timeout=1.0 if name.startswith("hang") else 10.0)
    t = tally.checks[info.catches]
    assert t.outcome is Outcome.FAILED, (
        f"{info.name} was not caught by {info.catches}; failing: {sorted(tally.failed_ids())}")
    # Every finding carries what was expected, what was seen and where.
    rec = next(iter(t.failures.values()))
    assert rec.message and rec.workload is not None
