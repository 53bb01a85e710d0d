"""The TiCDC Simple checks, by concern: one message (`messages`), the table schemas it carries
(`schema`), its values (`values`), large messages (`large`), a source event's messages and a
topic's stream (`stream`).

Every check has a stable id, a level, the clause it enforces, and a mutant in `mutants.py`
that it catches (the project's tests assert both). Checks read `RecordEvidence` (one Kafka
record and the schema a consumer would resolve for it), `EventEvidence` (one source event
and its records; only when the workload is known) or `StreamEvidence` (one topic: every
partition's log). Without the workload (a capture), checks judge a record against the
schema the stream itself announced (a DDL or BOOTSTRAP seen earlier) and say
`not-applicable` where nothing can decide.

Where seed 002 (the published protocol) and pingcap/tiflow disagree (notes §5), the check
follows the code, says so in `docs_vs_code`, and a profile switch selects the docs where
both readings are plausible.
"""

from __future__ import annotations

from . import large, messages, schema, stream, values  # noqa: F401 - their import declares the checks
from .common import CHECKS

__all__ = ["CHECKS"]
