"""What every MaxScale KafkaCDC check module shares: the protocol's check registry and readers
of a message's kind and paired source row."""

from __future__ import annotations

from typing import Any

from ....checks.compiled import FastRules
from ....checks.registry import CheckRegistry, NotApplicable
from .. import spec
from ..checker import RecordEvidence
from ..tracker import RowImage

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)
#: The fast-path rules of these checks (`checks.compiled`), each declared next to its check. The
#: generated function reads `obj` (the value, parsed as `jsontext.read` parses it: a JSON object),
#: `text` (the value's text, which holds no tab, CR or LF: the checker hands the function no other,
#: see `jsontext.parse_compact`) and `key` (the key's bytes) of a DML event of one kind
#: (`fastpath`: its topic-partition, its table, the schema event it is read with and its keys, in
#: order, which hold every fixed DML field); the fixed fields are in the locals `_d` (domain),
#: `_s` (server_id), `_q` (sequence), `_n` (event_number), `_t` (timestamp), `_et` (event_type).
fast = FAST = FastRules(CHECKS)

def _schema(ev: RecordEvidence) -> dict[str, Any] | None:
    return ev.msg.obj if ev.msg.ok and ev.msg.kind == "schema" else None


def _dml(ev: RecordEvidence) -> dict[str, Any] | None:
    return ev.msg.obj if ev.msg.ok and ev.msg.kind == "dml" else None


def _row(ev: RecordEvidence) -> RowImage | None:
    return ev.source if isinstance(ev.source, RowImage) and _dml(ev) is not None else None


NOT_SCHEMA = NotApplicable("not a schema event")
NOT_DML = NotApplicable("not a DML event")
NO_SOURCE_ROW = "no row of the workload is paired with this message (its key matches none)"
