"""The TiCDC Simple checks of large messages: the size limit, handle-key-only and claim-check."""

from __future__ import annotations

import base64
import binascii
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ....checks.registry import Failure, Level, NotApplicable, Scope
from ...kit import Findings
from .. import spec
from ..checker import RecordEvidence, SourceRow
from ..decoder import Message, decode
from .common import NOTES, _dml, _kind_gate, _row_maps, check
from .messages import handle_key_candidates

# == large messages =====================================================================

@check("large-message.size", level=Level.MUST, scope=Scope.RECORD,
       gate=_kind_gate("not a row message", lambda m: not m.ok or m.kind == "DML"),
       clause=f"{NOTES} §2.5 (a message above max-message-bytes is handled per large-message-handle-option; "
              "simple/encoder.go:39-110 compares common.Message.Length() = len(key) + len(value) + "
              "MaxRecordOverhead (36, sarama's record overhead; common/message.go) with max-message-bytes)")
def large_message_size(ev: RecordEvidence) -> Failure | NotApplicable | None:
    """No row message is larger than `max-message-bytes` as TiCDC counts it: key + value + 36
    bytes of Kafka record overhead (DDL, BOOTSTRAP and WATERMARK messages are not subject to
    large-message handling)."""
    size = spec.message_length(ev.record.key, ev.record.value)
    if size > ev.o.max_message_bytes:
        return Failure(f"a message of {size} bytes as TiCDC counts it (key + value + {spec.MAX_RECORD_OVERHEAD} "
                       "bytes of record overhead)", expected=f"<= max-message-bytes ({ev.o.max_message_bytes})",
                       actual=size, location=ev.at(),
                       hint="large-message-handle-option must shrink it (handle-key-only / claim-check)")
    return None


@check("large-message.handle-key-only", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §2.5 (handle-key-only: data/old re-encoded with the handle-key columns only and "
              "handleKeyOnly true)")
def handle_key_only(ev: RecordEvidence) -> Findings:
    """A DML with handleKeyOnly carries exactly the handle-key columns, and only appears when
    large-message handling is on."""
    m = _dml(ev)
    if m is None or m.get("handleKeyOnly") is None:
        yield NotApplicable("not a handle-key-only DML")
        return
    if m.get("handleKeyOnly") is not True:
        yield Failure("handleKeyOnly is present but not true", expected=True, actual=m.get("handleKeyOnly"),
                      location=ev.at("handleKeyOnly"))
        return
    if ev.o.large_message == "none":
        yield Failure("handleKeyOnly without large-message handling", expected="large-message-handle-option "
                      "handle-key-only or claim-check", actual="none", location=ev.at("handleKeyOnly"))
    s = ev.source
    if isinstance(s, SourceRow):
        candidates = [[c.name for c in s.table.handle_key_columns()]]
        what = "the source table's handle key"
    elif ev.schema is not None:
        # Which candidate TiCDC took depends on which columns are virtual, which the schema does
        # not say (handle_key_candidates): any of them is accepted.
        candidates = handle_key_candidates(ev.schema)
        what = "a handle key of the announced schema"
    else:
        yield NotApplicable("no schema known for this DML")
        return
    for part, row in _row_maps(m):
        if candidates and not any(set(row) == set(c) for c in candidates):
            yield Failure(f"{part} columns are not {what}", expected=candidates if len(candidates) > 1
                          else sorted(candidates[0]), actual=sorted(row), location=ev.at(part))


# claimcheck.NewFileName: uuid.NewString() + ".json", a random (version 4, RFC 4122 variant)
# UUID in Go's lower-case form. Any such name is accepted: the bits are random.
_UUID_JSON = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\.json")


@check("large-message.claim-check", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §2.5, §4.17 (claimCheckLocation = storage URI + '/' + <uuid4>.json, also handleKeyOnly; "
              "the file holds {{\"key\": null, \"value\": base64 of the compressed full message}}; "
              "claim_check.go:85-123, NewFileName: uuid.NewString() + \".json\")")
def claim_check(ev: RecordEvidence) -> Findings:
    """A claim-check DML points at `<storage>/<uuid4>.json`, sets handleKeyOnly, and the file
    holds the full message: same table, type and commitTs, every column."""
    m = _dml(ev)
    if m is None or m.get("claimCheckLocation") is None:
        yield NotApplicable("no claimCheckLocation")
        return
    loc = m.get("claimCheckLocation")
    where = ev.at("claimCheckLocation")
    if ev.o.large_message != "claim-check":
        yield Failure("claimCheckLocation without claim-check", expected="large-message-handle-option=claim-check",
                      actual=ev.o.large_message, location=where)
        return
    if m.get("handleKeyOnly") is not True:
        yield Failure("a claim-check message without handleKeyOnly", expected=True, actual=m.get("handleKeyOnly"),
                      location=ev.at("handleKeyOnly"))
    name = loc.rsplit("/", 1)[-1] if isinstance(loc, str) else ""
    if not isinstance(loc, str) or loc != f"{ev.o.claim_check_uri}/{name}" or not _UUID_JSON.fullmatch(name):
        yield Failure("claimCheckLocation is not <claim-check-storage-uri>/<uuid4>.json",
                      expected=f"{ev.o.claim_check_uri}/<uuid4>.json", actual=loc, location=where)
        return
    path = Path(urlsplit(ev.o.claim_check_uri).path) / name
    if ev.o.claim_check_raw:
        # claim-check-raw-value: the file is the compressed message itself (WriteMessage skips the JSON).
        try:
            full_bytes = path.read_bytes()
        except OSError as e:
            yield Failure("the claim-check file cannot be read", expected=str(path),
                          actual=f"{type(e).__name__}: {e}", location=where,
                          hint="claim-check files must be readable where the check runs")
            return
        yield from _claim_check_full(ev, m, full_bytes, where)
        return
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        yield Failure("the claim-check file cannot be read", expected=str(path), actual=f"{type(e).__name__}: {e}",
                      location=where, hint="claim-check files must be readable where the check runs")
        return
    except (ValueError, RecursionError):
        yield Failure("the claim-check file is not JSON", expected='{"key": null, "value": "<base64>"}',
                      actual=path.read_bytes()[:60].decode("latin-1"), location=where)
        return
    if not (isinstance(stored, dict) and set(stored) == {"key", "value"} and stored["key"] is None
            and isinstance(stored["value"], str)):
        yield Failure("the claim-check file is not {key: null, value: base64}", expected=["key", "value"],
                      actual=stored if not isinstance(stored, dict) else sorted(stored), location=where)
        return
    try:
        full_bytes = base64.b64decode(stored["value"], validate=True)
    except (binascii.Error, ValueError):
        yield Failure("the claim-check value is not base64", expected="base64", actual=stored["value"][:40],
                      location=where)
        return
    yield from _claim_check_full(ev, m, full_bytes, where)


def _claim_check_full(ev: RecordEvidence, m: Message, full_bytes: bytes, where: Any) -> Findings:
    """The full message a claim-check file holds: the same DML, not itself a pointer."""
    full = decode(full_bytes, ev.o.compression, ev.o.avro)
    if not full.ok or full.kind != "DML":
        yield Failure("the claim-check value is not a DML message", expected="the full DML",
                      actual=full.error or full.kind, location=where)
        return
    for f in ("database", "table", "type", "commitTs"):
        if full.get(f) != m.get(f):
            yield Failure(f"the stored message's {f} differs", expected=m.get(f), actual=full.get(f), location=where)
    if full.get("handleKeyOnly") is not None or full.get("claimCheckLocation") is not None:
        yield Failure("the stored message is itself a large-message pointer", expected="the full message",
                      actual="handleKeyOnly/claimCheckLocation set", location=where)
