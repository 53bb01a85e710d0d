"""What every TiCDC Simple check module shares: the protocol's check registry, its clauses,
and small readers of a message's fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ....checks.registry import CheckRegistry, NotApplicable
from .. import spec
from ..checker import RecordEvidence
from ..decoder import Message

P = spec.PROTOCOL
#: The protocol's checks, by id relative to it.
check = CHECKS = CheckRegistry(P)
NOTES = "spec/notes/ticdc.md"
SEED = "seed 002 (TiCDC Simple protocol)"

# TiCDC's bootstrap worker looks at its tables every 5 s (bootstraper.go); a second of slack
# on top for the time between encoding and the Kafka write.
BOOTSTRAP_CHECK_PERIOD_MS = 5000
BOOTSTRAP_SLACK_MS = 1000

# buildTs is `time.Now().UnixMilli()`: between 2015 and 2100 whatever the machine.
BUILD_TS_RANGE = (1_420_070_400_000, 4_102_444_800_000)
# TSO physical time and the TiCDC server's clock may differ a little.
CLOCK_SKEW_MS = 300_000


def _hex(b: bytes | None, n: int = 24) -> str:
    if b is None:
        return "null"
    return "0x" + b[:n].hex() + ("…" if len(b) > n else "")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _dicts(v: Any) -> list[dict[str, Any]]:
    """The objects of a JSON list (columns, indexes): anything else in the list, or a field that
    is not a list at all, is left out here; the table-schema check reports it."""
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _strings(v: Any) -> list[str] | None:
    """A JSON list of strings (index columns, enum elements), or None if it is not one."""
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return v
    return None


def _ok(ev: RecordEvidence) -> Message | None:
    return ev.msg if ev.msg.ok else None


def _dml(ev: RecordEvidence) -> Message | None:
    return ev.msg if ev.msg.ok and ev.msg.kind == "DML" else None


def kind_key(ev: RecordEvidence) -> tuple[bool, str | None, bool]:
    """What decides the checks of one kind of message (their gate is worked out once per key)."""
    return ev.msg.ok, ev.msg.kind, ev.msg.avro


def _kind_gate(reason: str, applies: Callable[[Message], bool]) -> tuple[Any, Any]:
    """`gate=` for a check that has nothing to judge unless `applies` to the message: the
    NotApplicable it answers is the check's own."""
    na = NotApplicable(reason)
    return kind_key, lambda ev: None if applies(ev.msg) else na


def _is_kind(kind: str) -> Callable[[Message], bool]:
    return lambda m: m.ok and m.kind == kind


# == transport and framing ==============================================================


_JSON_TYPE = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "an object"}


def _type_ok(v: Any, typ: type) -> bool:
    return isinstance(v, typ) and (typ is bool or not isinstance(v, bool))


def _columns_by_name(ts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in _dicts(ts.get("columns")) if isinstance(c.get("name"), str)}


def _show(v: Any) -> Any:
    if isinstance(v, bytes):
        return "0x" + v.hex()
    if isinstance(v, tuple):
        return [v[0], _show(v[1])]
    return v


def _row_maps(m: Message) -> list[tuple[str, dict[str, Any]]]:
    return [(k, m.get(k)) for k in ("data", "old") if isinstance(m.get(k), dict)]
