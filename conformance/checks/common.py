"""Checks that hold for every protocol: the encoder runs, answers, and the capture is readable.

The runner decides these itself (it sees the crash, the timeout, the unreadable line) and
records them with `Tally.fail` / `Tally.passed`; the functions below exist so that the checks
are listed, documented and reported like every other.
"""

from __future__ import annotations

from typing import Any

from .registry import Level, NotApplicable, Scope, check

ENCODER_NO_CRASH = "encoder.no-crash"
ENCODER_RESPONSIVE = "encoder.responsive"
CAPTURE_RECORD_FORMAT = "capture.record-format"


@check(ENCODER_NO_CRASH, level=Level.MUST, scope=Scope.RUN,
       clause="encoder SPI v1 (open/encode/tick/close return records or raise only for invalid options)")
def encoder_no_crash(_: Any) -> NotApplicable:
    """The encoder handles every generated event without raising."""
    return NotApplicable("decided by the runner")


@check(ENCODER_RESPONSIVE, level=Level.MUST, scope=Scope.RUN,
       clause="encoder SPI v1 (every call returns within --encoder-timeout)")
def encoder_responsive(_: Any) -> NotApplicable:
    """Every call into the encoder returns within the timeout."""
    return NotApplicable("decided by the runner")


@check(CAPTURE_RECORD_FORMAT, level=Level.MUST, scope=Scope.INPUT,
       clause="cdc-conformance records.jsonl format v1 (topic, partition, offset, key, value as base64 or null)")
def capture_record_format(_: Any) -> NotApplicable:
    """Every line of a captured records file is a JSON object with topic, partition, offset and base64 key/value."""
    return NotApplicable("decided by the capture reader")
