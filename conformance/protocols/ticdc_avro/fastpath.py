"""The TiCDC Avro checker's compiled fast path (see `checks.compiled`).

A *kind* of record is its topic and the 5-byte Confluent headers of its key and value (a
tombstone has none for its value). Once the checks have seen `LEARN_AFTER` records of a kind, all
decoded without a fault, the kind gets one generated function over the decoded key and value
that returns the record's delivery identity when every record check its plan still runs surely
passes or has surely nothing to judge, and None otherwise. Where a live check passes on some
records of the kind and has nothing to judge on others (a decimal column that is null on some
rows), the function also says which (the *variant*, `checks.compiled.Seen`) and the record is
counted under that variant's outcomes. Records of the kind are then decoded with the kind's parsed schemas
(exactly as `decoder.decode_framed` decodes them: nothing may be left over) and judged by it; a
record it does not accept, or that does not decode, goes through the checks as before.

Why the kind decides the plan: the plan keys of the TiCDC Avro checks (`checks.common`) read the
topic, the schema ids (and whether they resolved), whether the record is a control record or a
tombstone, and which parts decoded: for records of one kind that decode, all the same.

What the checks keep per record besides outcomes (the stream state the stream checks judge at
the end) is kept here too: the topic's record count, the record names (the kind's, recorded when
its first record went through the checks) and, with avro-enable-watermark, each row's place in
its partition's log.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import fastavro

from ...checks.compiled import Answer, Source, variant_expression, variant_plan
from ...checks.registry import CheckSpec
from ...checks.results import RecordPlan
from .checks.common import FAST
from .delivery import emit_version, entity_function, entity_prefix
from .evidence import RecordEvidence, StreamEvidence

#: Records of a kind the checks see before the kind is compiled: a capture of many short-lived
#: schemas (a schema per few records) is not worth generating code for.
LEARN_AFTER = 1
#: Kinds one checker keeps (a capture has few; beyond this, the table starts again).
MAX_KINDS = 20_000
#: Decoded keys one kind keeps.
MAX_KEYS = 4096

Kind = tuple[str, bytes, bytes | None]


@dataclass(slots=True)
class FastKind:
    seen: int = 0
    # Set once compiled: the function (its answer: the delivery identity's (match, commit ts),
    # and with `answers`, the record's variant: ((match, commit ts), variant)), the identity's
    # entity from the key, the plan its records count in, the topic's stream state and the parsed
    # writer schemas of key and value.
    accept: Callable[[dict[str, Any], dict[str, Any] | None], Any] | None = None
    entity: Callable[[str, dict[str, Any]], Any] = None  # type: ignore[assignment]
    prefix: str = ""  # the entity's `delivery.entity_prefix` (the topic's)
    # Keys seen, decoded, with their entity: a row's key comes back with each of its changes.
    keys: dict[bytes, tuple[dict[str, Any], Any]] = field(default_factory=dict)
    plan: RecordPlan | None = None
    stream: StreamEvidence | None = None
    key_schema: Any = None
    value_schema: Any = None
    # What `decode` hands fastavro's reader with each schema (`named_schemas`).
    key_named: Any = None
    value_named: Any = None
    hopeless: bool = False  # a live check has no fast rule, or its rule cannot prove a pass
    # Where some live check's answer varies by record (a `Seen`): the plan's live checks, their
    # answers, and the outcomes of each variant met so far (variant 0, every live check passed,
    # is counted as `plan.fast`).
    specs: list[CheckSpec] | None = None
    answers: list[Answer] | None = None
    outcomes: dict[int, RecordPlan] = field(default_factory=dict)

    def outcome(self, variant: int) -> RecordPlan:
        """The live checks' outcomes on the records of one variant, as a plan whose checks are
        all fixed (the tally counts them when it is read, as it counts a plan's)."""
        assert self.specs is not None and self.answers is not None  # a kind with variants
        return variant_plan(self.outcomes, self.specs, self.answers, variant)


def kind_of(topic: str, key: bytes | None, value: bytes | None) -> Kind | None:
    if key is None or len(key) < 5:
        return None
    return (topic, key[:5], value[:5] if value is not None else None)


def learnable(ev: RecordEvidence) -> bool:
    """Whether a record the checks judged is one the fast path could judge: not a control record,
    a key, and every part framed, resolved and decoded with nothing left over."""
    if ev.control is not None or ev.key is None or ev.source is not None:
        return False
    for d in (ev.key, ev.value):
        if d is not None and (d.error_kind is not None or d.datum is None or d.view is None or d.view.parsed is None):
            return False
    return True


def compile_kind(kind: FastKind, ev: RecordEvidence, plan: RecordPlan, stream: StreamEvidence) -> None:
    """Generate the kind's function from one of its records (`ev`: only what the kind decides is
    read) and its plan; a kind whose live checks cannot all be proven stays on the checks."""
    k, v = ev.key, ev.value
    assert k is not None and k.view is not None
    src = Source("accept", ("kd", "vd"))
    answers = FAST.outcomes(plan.live, ev, src)
    if answers is None:
        kind.hopeless = True
        return
    version = emit_version(src, ev.o, None if v is None or v.view is None else [f.name for f in v.view.fields])
    if all(a is None for a in answers):
        src.line(f"return {version}")
    else:
        src.line(f"return ({version}, {variant_expression(answers)})")
        kind.specs = list(plan.live)
        kind.answers = answers
    kind.accept = src.build()
    kind.entity = entity_function([f.name for f in k.view.fields])
    kind.prefix = entity_prefix(ev.record.topic)
    kind.plan = plan
    kind.stream = stream
    kind.key_schema = k.view.parsed
    kind.key_named = named_schemas(kind.key_schema)
    if v is not None and v.view is not None:
        kind.value_schema = v.view.parsed
        kind.value_named = named_schemas(kind.value_schema)


_reader = fastavro.schemaless_reader
_BytesIO = io.BytesIO

# fastavro's `schemaless_reader(fo, schema, None)`, once its schema is parsed, is `_read_data(fo,
# schema, named, None, options)` with `named` its writer schema's named types (the
# `__named_schemas` `parse_schema` left in it, copied into a fresh dict at every call) and the
# default options (a fresh dict at every call too): `decode` calls that function with both made
# once per kind, which saves a sixth of fastavro's time per record. Only where the public reader
# is the compiled one whose body this is (`_DIRECT`); else, and for a schema without its named
# types, `decode` calls the public reader. Reading leaves both dicts as they are
# (`tests/unit/test_fast_paths_avro.py` holds the two readers to the same answers). The body is the
# same from fastavro 1.9.0, the oldest the project allows, to 1.13.1 (read in their sources); a
# later one whose `_read_data` took other arguments would raise on every record, and every record
# would go to the checks: slower, never another verdict.
try:
    from fastavro._read import _read_data as _read_data_c  # type: ignore[attr-defined]
    from fastavro._read import schemaless_reader as _compiled_reader
except ImportError:  # pragma: no cover - a fastavro without its compiled reader
    _DIRECT = False
    _read_data_c = None
else:
    _DIRECT = _reader is _compiled_reader
#: The compiled reader's body (None where it is missing), for `AvroChecker.check_fast`, which
#: calls it as `decode` does.
read_direct: Any = _read_data_c
_OPTIONS: dict[str, Any] = {"return_record_name": False, "return_record_name_override": False,
                            "handle_unicode_errors": "strict", "return_named_type": False,
                            "return_named_type_override": False}


def named_schemas(schema: Any) -> Any:
    """What `decode` passes for `schema` (parsed by fastavro): the named types `schemaless_reader`
    would gather for it, or None where `decode` must call `schemaless_reader` itself."""
    if not _DIRECT or not isinstance(schema, dict) or "__fastavro_parsed" not in schema:
        return None
    named = schema.get("__named_schemas")
    if not isinstance(named, dict):
        return None
    return {"writer": dict(named), "reader": {}}


def decode(raw: bytes, schema: Any, named: Any = None) -> Any:
    """The body after the 5-byte header, as `decoder.decode_framed` decodes it; None when it does
    not decode to a record or leaves bytes over (the checks then say what is wrong). `named`:
    `named_schemas(schema)`."""
    buf = _BytesIO(raw)
    buf.seek(5)
    try:
        datum = _reader(buf, schema, None) if named is None else _read_data_c(buf, schema, named, None, _OPTIONS)
    except Exception:  # noqa: BLE001 - the checks judge it
        return None
    if buf.tell() != len(raw) or datum.__class__ is not dict:
        return None
    return datum
