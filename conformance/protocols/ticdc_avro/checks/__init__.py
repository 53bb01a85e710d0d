"""The TiCDC Avro checks, by concern: the Confluent framing and subjects (`framing`), a record's
schemas (`schema`), the type table (`types`), keys, deletes, extension fields and topics
(`messages`), control messages, streams and source events (`stream`).

Every check here has a stable id, a level and the clause it enforces, and a mutant in
`mutants.py` that it catches (the project's tests assert both). Checks read `RecordEvidence`
(one Kafka record), `EventEvidence` (one source event and its records; only when the
workload is known) or `StreamEvidence` (one topic). Without the workload (a captured topic),
checks judge what the record itself claims (its schema's `tidb_type`, the invariants between
key and value, commit ts and physical time…) and say `not-applicable` where only the source
could decide.
"""

from __future__ import annotations

from . import framing, messages, schema, stream, types  # noqa: F401 - their import declares the checks
from .common import CHECKS

__all__ = ["CHECKS"]
