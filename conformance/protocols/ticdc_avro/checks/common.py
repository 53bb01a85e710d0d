"""What every TiCDC Avro check module shares: the protocol's check registry, its clauses, and
the keys and gates that let a checker judge a schema once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ....checks import compatibility
from ....checks.compiled import FastRules
from ....checks.registry import CheckRegistry, NotApplicable
from .. import spec
from ..decoder import DecodedPart, SchemaView
from ..evidence import RecordEvidence

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)
# What the registry and the encoder do with a schema change its level refuses (checks/compatibility.py).
compatibility.declare(check)
#: The fast-path rules of these checks (`checks.compiled`), each declared next to its check. The
#: generated function reads the decoded key `kd` and value `vd` (None for a tombstone) of a
#: record whose parts all decoded, with nothing left over, from Confluent framing with registered,
#: usable schemas (the fast path's own precondition, `fastpath.FastKinds`).
fast = FAST = FastRules(CHECKS)
NOTES = "spec/notes/ticdc.md"


def _decoded_views(ev: RecordEvidence) -> Iterator[tuple[str, DecodedPart]]:
    for part, d in ev.parts():
        if d.view is not None:
            yield part, d


NO_SCHEMA = NotApplicable("no resolved schema")


def no_decoded_view(ev: RecordEvidence) -> NotApplicable | None:
    """`first=` for a check of every part whose registered schema was fetched."""
    return None if any(True for _ in _decoded_views(ev)) else NO_SCHEMA


def _part_key(d: DecodedPart | None) -> tuple[int | None, bool] | None:
    return None if d is None else (d.schema_id, d.view is not None)


def schemas_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """Everything a schema-only check depends on: both parts' schema ids (and whether they
    resolved) and the source table version, if known."""
    return (_part_key(ev.key), _part_key(ev.value), ev.source.table if ev.source is not None else None)


def topic_schemas_key(ev: RecordEvidence) -> tuple[Any, ...]:
    return (ev.record.topic, *schemas_key(ev))


def _decoded(d: DecodedPart | None) -> bool | None:
    return None if d is None else d.datum is not None


def shape_key(ev: RecordEvidence) -> tuple[Any, ...]:
    """What decides whether a record check has anything to judge (the gates below): the schemas,
    whether the source is known and its operation, the control-record kind, which parts the record
    has and which of them decoded."""
    src = ev.source
    return (schemas_key(ev), src.op if src is not None else None, ev.control.kind if ev.control is not None else None,
            ev.record.key is None, ev.record.value is None, _decoded(ev.key), _decoded(ev.value))


def _control_gate(ev: RecordEvidence) -> NotApplicable | None:
    if ev.control is None:
        return None
    return NotApplicable(f"a {ev.control.kind} control record (avro-enable-watermark), not Confluent-framed")


def _usable_views(ev: RecordEvidence) -> list[tuple[str, SchemaView]]:
    """(part, schema view) for every part whose registered schema is a well-formed record."""
    return [(part, d.view) for part, d in _decoded_views(ev) if d.view is not None and not d.view.error]


def no_usable_view(ev: RecordEvidence) -> NotApplicable | None:
    """`first=` for a check of every well-formed record schema."""
    return None if _usable_views(ev) else NO_SCHEMA
