"""The TiCDC Avro checks of the Confluent framing (magic byte, schema id, body) and of the
subjects the schemas are registered under."""

from __future__ import annotations

from ....checks.compiled import Source
from ....checks.registry import Failure, Level, NotApplicable, Scope, Verdict
from ...kit import Findings
from .. import spec, watermark
from ..decoder import ErrorKind
from ..evidence import RecordEvidence
from .common import NOTES, _control_gate, check, fast, schemas_key, shape_key, topic_schemas_key

# == framing ============================================================================

@check("framing.magic-byte", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Schema Registry (Confluent wire format); {NOTES} §1.2", gate=(shape_key, _control_gate))
def magic_byte(ev: RecordEvidence) -> Verdict:
    """Key and value start with the Confluent magic byte 0x00 and a 4-byte schema id."""
    k, v = ev.key, ev.value
    if (k is not None or v is not None) and (k is None or k.error_kind not in _UNFRAMED) and (
            v is None or v.error_kind not in _UNFRAMED):
        return None  # the common case, without a generator
    return _magic_byte_findings(ev)


_UNFRAMED = (ErrorKind.SHORT, ErrorKind.MAGIC)


@fast.rule("framing.magic-byte")
@fast.rule("framing.body")
def _framed_and_decoded(ev: RecordEvidence, src: Source) -> bool:
    """The fast path runs only on records whose parts are framed and decode with nothing left
    over (its precondition): these two checks pass on every one of them."""
    return True


def _magic_byte_findings(ev: RecordEvidence) -> Findings:
    seen = False
    for part, d in ev.parts():
        seen = True
        if d.error_kind in (ErrorKind.SHORT, ErrorKind.MAGIC):
            hint = None
            if d.raw[:2] == b"\x03\x00" and len(d.raw) >= 18:
                hint = ("0x03 0x00 + 16 bytes is AWS Glue Schema Registry framing (TiCDC with "
                        "glue-schema-registry-config, notes §1.2): the suite resolves Confluent-framed records only, "
                        "so it cannot judge this capture")
            elif part == "value" and ev.record.key is None and watermark.is_control(None, d.raw):
                hint = ("a key-less record starting 0x01/0x02 is a TiCDC DDL/checkpoint record: if the changefeed "
                        "sets avro-enable-watermark, check with --option avro-enable-watermark=true "
                        "--option enable-tidb-extension=true")
            yield Failure(f"{part} is not Confluent-framed: {d.error}", expected="0x00 + 4-byte big-endian id",
                          actual="0x" + d.raw[:8].hex(), location=ev.at(part=part), hint=hint)
    if not seen:
        yield NotApplicable("record has neither key nor value")


@check("framing.schema-id", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.2, §1.7 (consumers look schemas up by id)", cache_key=schemas_key)
def schema_id_known(ev: RecordEvidence) -> Findings:
    """The schema id in the header resolves in the Schema Registry."""
    seen = False
    for part, d in ev.parts():
        if d.schema_id is None:
            continue
        seen = True
        if d.error_kind == ErrorKind.UNKNOWN_ID:
            yield Failure(f"{part} names schema id {d.schema_id}, which the registry does not know",
                          expected="a registered schema id", actual=d.schema_id, location=ev.at(part=part),
                          hint=d.error)
    if not seen:
        yield NotApplicable("no framed part to look up")


def _no_usable_schema(ev: RecordEvidence) -> NotApplicable | None:
    if any(d.view is not None and d.error_kind != ErrorKind.SCHEMA for _p, d in ev.parts()):
        return None
    return _NO_USABLE_SCHEMA


_NO_USABLE_SCHEMA = NotApplicable("no part with a usable schema")


@check("framing.body", level=Level.MUST, scope=Scope.RECORD,
       clause=f"Avro spec §Binary encoding; {NOTES} §1.2 (body = one datum, nothing after it)",
       gate=(shape_key, _no_usable_schema))
def body_decodes(ev: RecordEvidence) -> Verdict:
    """The Avro body decodes with its writer schema and nothing is left over."""
    k, v = ev.key, ev.value
    if (k is None or k.datum is not None and k.error_kind is None) and (
            v is None or v.datum is not None and v.error_kind is None) and (k is not None or v is not None):
        return None  # every part decoded: the common case, without a generator
    return _body_findings(ev)


def _body_findings(ev: RecordEvidence) -> Findings:
    for part, d in ev.parts():
        if d.view is not None and d.error_kind in (ErrorKind.BODY, ErrorKind.TRAILING):
            yield Failure(f"{part} body: {d.error}", expected="one Avro datum of the writer schema",
                          actual="0x" + d.raw[5:40].hex() + ("…" if len(d.raw) > 40 else ""),
                          location=ev.at(part=part))


# == registry ===========================================================================

@check("registry.subject", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Topic distribution (TopicNameStrategy); {NOTES} §1.7, §4.1 "
              "(dots in the topic become underscores in the subject)",
       cache_key=topic_schemas_key)
def subject_naming(ev: RecordEvidence) -> Findings:
    """The schema id is registered under `<topic with . replaced by _>-key` / `-value`."""
    seen = False
    for part, d in ev.parts():
        if d.view is None or d.schema_id is None:
            continue
        seen = True
        want = spec.subject(ev.record.topic, part)
        subs = ev.resolver.subjects(d.schema_id, want)
        if isinstance(subs, str):
            yield NotApplicable(subs)
            continue
        if want not in {s for s, _ in subs}:
            yield Failure(f"{part} schema id {d.schema_id} is not registered under subject {want!r}",
                          expected=want, actual=sorted({s for s, _ in subs}), location=ev.at(part=part))
    if not seen:
        yield NotApplicable("no resolved schema")
