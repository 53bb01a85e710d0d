"""The MaxScale KafkaCDC checks, by concern: one message (`messages`), its values (`values`), a
topic's stream and a source event's messages (`stream`).

Every check has a stable id, a level, the clause it enforces and a mutant in `mutants.py` that it
catches (the project's tests assert both). Checks read `RecordEvidence` (one Kafka record, the
latest schema event of its table in the partition, and with the workload what MaxScale would
have sent), `EventEvidence` (one source event and its records: needs the workload) or
`StreamEvidence` (one topic: every partition's log).

Where seed 004 and MaxScale's code disagree (notes §9), the check follows the code for the
message format and says so in `docs_vs_code`; where MaxScale 24.02 loses or garbles the table's
data (notes §4), the check holds encoders to the data and a profile switch accepts what 24.02
really emits (`--option profile=maxscale-24.02` turns them all on).
"""

from __future__ import annotations

from . import messages, stream, values  # noqa: F401 - their import declares the checks
from .common import CHECKS

__all__ = ["CHECKS"]
