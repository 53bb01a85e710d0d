"""TiCDC Avro: the reference passes every check under every option combination (every mutant is
caught by the check it names: tests/unit/test_mutants.py, from the mutants' own declarations)."""

from __future__ import annotations

import os

import pytest
from helpers import problems, run_encoder, shape_with

from conformance.checks import Outcome
from conformance.protocols import get_protocol

PROTOCOL = get_protocol("ticdc-avro")
# The acceptance bar is 200 workloads per option combination; CONFORMANCE_QUICK lowers it locally.
WORKLOADS = int(os.environ.get("CONFORMANCE_REFERENCE_WORKLOADS", "200"))

MATRIX = PROTOCOL.matrix({})
EXTRA = [
    {"enable-tidb-extension": "true", "integrity-check-level": "correctness",
     "avro-decimal-handling-mode": "string", "avro-bigint-unsigned-handling-mode": "string"},
    {"profile": "v6.5.0", "enable-tidb-extension": "true"},
    {"profile": "v7.0"},
    {"profile": "v8.5", "enable-tidb-extension": "true"},
    {"profile": "ticdc-next"},
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
