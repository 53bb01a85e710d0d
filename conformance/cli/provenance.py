"""What a `run` or `check` report records about itself, from the command's arguments: the
encoder under test (name, kind, the version it says it is) and the configuration it ran with."""

from __future__ import annotations

import argparse
from typing import Any

from ..encoders.spi import EncoderInfo
from ..infra.urls import redact_text
from ..reporting import Report
from ..reporting.trust import configuration, encoder_identity

# Arguments that say how the command was invoked, not how the run was configured.
_NOT_CONFIGURATION = frozenset({"command", "debug", "what"})


def stamp(report: Report, args: argparse.Namespace, encoder: EncoderInfo | None = None) -> Report:
    """Record `encoder` (None: a capture, whose writer the suite cannot name) and the command's
    settings, credentials taken out of every URL, on `report`; returns it."""
    settings: dict[str, Any] = {}
    for k, v in sorted(vars(args).items()):
        if k in _NOT_CONFIGURATION:
            continue
        settings[k] = redact_text(v) if isinstance(v, str) else (
            [redact_text(x) if isinstance(x, str) else x for x in v] if isinstance(v, list) else v)
    report.configuration = configuration(settings)
    if encoder is not None:
        report.encoder = encoder_identity(encoder)
    return report
