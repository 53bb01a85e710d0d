"""The TiCDC Avro checks of a message's key, deletes, TiDB extension fields and topic."""

from __future__ import annotations

import zlib
from typing import Any

from ....checks.compiled import Source
from ....checks.registry import Failure, Level, NotApplicable, Scope, Verdict
from ....model.events import Op, tso_physical_ms
from .. import spec
from ..evidence import RecordEvidence, StreamEvidence
from .common import NOTES, check, fast, schemas_key, shape_key
from .types import _show, emit_same_datum, same_datum

# == keys, deletes ======================================================================

def _no_key_to_judge(ev: RecordEvidence) -> NotApplicable | None:
    if ev.control is not None:
        return NotApplicable(f"a {ev.control.kind} control record has no key by design")
    k = ev.key
    if ev.record.key is not None and (k is None or k.view is None or k.view.error):
        return _KEY_UNRESOLVED
    return None


_KEY_UNRESOLVED = NotApplicable("key schema unresolved")


@check("key.columns", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §Key data format (primary key or unique index columns); {NOTES} §1.3 (handle key, "
              "table column order)", gate=(shape_key, _no_key_to_judge))
def key_columns(ev: RecordEvidence) -> Verdict:
    """The key holds exactly the handle-key columns (PK, else the NOT NULL unique key) with the row's values."""
    if ev.record.key is None:
        return Failure("record has no key", expected="the handle-key columns", actual=None, location=ev.at(part="key"))
    k, v = ev.key, ev.value
    assert k is not None and k.view is not None  # a key that is there resolved (the gate)
    out: list[Failure] = []
    if ev.source is not None:
        cols = spec.key_columns(ev.source.table)
        want = [spec.sanitize_name(c.name) for c in cols]
        got = [f.name for f in k.view.fields]
        if got != want:
            out.append(Failure("key fields are not the handle-key columns", expected=want, actual=got,
                               location=ev.at(part="key")))
        elif k.datum is not None:
            for c, name in zip(cols, want, strict=True):
                wv = spec.native_value(c, ev.source.image[c.name], ev.o)
                if not same_datum(wv, k.datum.get(name)):
                    out.append(Failure(f"key value of {name!r} differs from the row", expected=_show(wv),
                                       actual=_show(k.datum.get(name)), location=ev.at(c.name, "key")))
    for f in k.view.fields:
        if f.nullable:
            out.append(Failure(f"key field {f.name!r} is nullable; handle-key columns are NOT NULL",
                               expected="plain type", actual=f.type, location=ev.at(f.name, "key")))
    if v is not None and v.view is not None and not v.view.error:
        for f in k.view.fields:
            vf = v.view.by_name.get(f.name)
            if vf is None:
                out.append(Failure(f"key field {f.name!r} is not a value field", expected="a column of the row",
                                   actual=[x.name for x in v.view.fields], location=ev.at(f.name, "key")))
            elif vf.inner != f.inner:
                out.append(Failure(f"key field {f.name!r} has another type than in the value", expected=vf.inner,
                                   actual=f.inner, location=ev.at(f.name, "key")))
            elif k.datum is not None and v.datum is not None and not same_datum(
                    k.datum.get(f.name), v.datum.get(f.name)):
                out.append(Failure(f"key field {f.name!r} differs from the value's",
                                   expected=_show(v.datum.get(f.name)),
                                   actual=_show(k.datum.get(f.name)), location=ev.at(f.name, "key")))
    return out or None


@fast.rule("key.columns")
def _key_columns_fast(ev: RecordEvidence, src: Source) -> bool:
    """Without the source: no key field nullable and each one a value field of the same type
    (decided by the schemas), and each key value the same datum as the value's (per record)."""
    k, v = ev.key, ev.value
    if ev.source is not None or k is None or k.view is None or k.view.error:
        return False
    if any(f.nullable for f in k.view.fields):
        return False
    if v is None or v.view is None or v.view.error:
        return True
    for f in k.view.fields:
        vf = v.view.by_name.get(f.name)
        if vf is None or vf.inner != f.inner:
            return False
        name = src.const(f.name, "n")
        emit_same_datum(src, f"kd.get({name})", f"vd.get({name})")
    return True


@check("key.no-extension", level=Level.MUST, scope=Scope.RECORD,
       clause=f"seed 000 §TiDB extension fields (added to the Value); {NOTES} §1.3 (never in the key)",
       cache_key=schemas_key)
def key_no_extension(ev: RecordEvidence) -> Verdict:
    """The key schema never carries `_tidb_*` extension fields."""
    k = ev.key
    if k is None or k.view is None or k.view.error:
        return NotApplicable("key schema unresolved")
    ext = [f.name for f in k.view.fields if f.is_extension]
    if ext:
        return Failure("key schema has extension fields", expected=[], actual=ext, location=ev.at(part="key"))
    return None


def _not_a_tombstone(ev: RecordEvidence) -> NotApplicable | None:
    return _NOT_TOMBSTONE if ev.source is None and ev.record.value is not None else None


_NOT_TOMBSTONE = NotApplicable("not a tombstone (the source is unknown)")


@check("delete.tombstone", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 (\"For Delete events, Avro only encodes the Key part. The Value part is empty\"); seed 001 "
              f"(no extension fields for delete.on.null sinks); {NOTES} §1.1", gate=(shape_key, _not_a_tombstone))
def tombstone(ev: RecordEvidence) -> Verdict:
    """A DELETE is a key with a null value (a Kafka tombstone); nothing else has a null value."""
    is_tomb = ev.record.value is None
    if ev.source is not None:
        if ev.source.op is Op.DELETE and not is_tomb:
            return Failure("a DELETE was sent with a value", expected="null value (tombstone)",
                           actual=f"{len(ev.record.value or b'')} value bytes", location=ev.at(part="value"))
        if ev.source.op is not Op.DELETE and is_tomb:
            return Failure(f"an {ev.source.op.value.upper()} was sent as a tombstone", expected="a value",
                           actual=None, location=ev.at(part="value"))
        return None
    if ev.record.key is None:
        return Failure("tombstone without a key", expected="the deleted row's key", actual=None,
                       location=ev.at(part="key"))
    return None


@fast.rule("delete.tombstone")
def _tombstone_fast(ev: RecordEvidence, src: Source) -> bool:
    """Without the source, judged only on a tombstone (the gate), which passes with a key: the
    fast path's records all have one."""
    return ev.source is None and ev.record.key is not None


# == extension fields ===================================================================

@check("extension.fields", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 §TiDB extension fields; seed 003; "
              f"{NOTES} §1.4 (types and defaults; no defaults before v7.1.0), §1.6 (checksum fields), §5",
       cache_key=schemas_key)
def extension_fields(ev: RecordEvidence) -> Verdict:
    """With enable-tidb-extension the value ends with _tidb_op (string), _tidb_commit_ts and
    _tidb_commit_physical_time (long) [+ the three checksum fields]; without it, none of them."""
    v = ev.value
    if v is None or v.view is None or v.view.error:
        return NotApplicable("no value schema (tombstone or unresolved)")
    got = [(f.name, f.type, f.default if f.has_default else "<absent>") for f in v.view.fields if f.is_extension]
    want = [(n, spec._EXT_TYPES[n][0], spec._EXT_TYPES[n][1] if ev.o.extension_defaults else "<absent>")
            for n in spec.expected_extension_names(ev.o)]
    if got != want:
        return Failure("extension fields differ from the option settings",
                       expected=[{"name": n, "type": t, "default": d} for n, t, d in want],
                       actual=[{"name": n, "type": t, "default": d} for n, t, d in got], location=ev.at(part="value"),
                       hint=f"enable-tidb-extension={str(ev.o.extension).lower()}, "
                            f"integrity checksum={'on' if ev.o.checksum else 'off'}"
                            + ("; TiCDC <= v7.0.x writes extension fields without defaults: check with "
                               "--option profile=v7.0" if ev.o.extension_defaults and got and
                               all(d == "<absent>" for _n, _t, d in got) else ""))
    return None


def _ext_datum(ev: RecordEvidence) -> dict[str, Any] | NotApplicable:
    if not ev.o.extension:
        return _EXTENSION_OFF
    v = ev.value
    if v is None or v.datum is None:
        return _NO_VALUE
    return v.datum


_EXTENSION_OFF = NotApplicable("enable-tidb-extension is off")
_NO_VALUE = NotApplicable("no decoded value")
_CHECKSUM_OFF = NotApplicable("integrity checksum is off")


def _no_extension_datum(ev: RecordEvidence) -> NotApplicable | None:
    d = _ext_datum(ev)
    return d if isinstance(d, NotApplicable) else None


def _no_checksum(ev: RecordEvidence) -> NotApplicable | None:
    return _CHECKSUM_OFF if not ev.o.checksum else _no_extension_datum(ev)


@check("extension.op", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 (\"c\" indicates insert and \"u\" indicates updates); " f"{NOTES} §1.6",
       needs_options={"enable-tidb-extension": "true"}, gate=(shape_key, _no_extension_datum))
def extension_op(ev: RecordEvidence) -> Verdict:
    """`_tidb_op` is "c" for an insert (including the insert half of a split update), "u" for an update."""
    d = _ext_datum(ev)
    if isinstance(d, NotApplicable):
        return d
    got = d.get("_tidb_op")
    if ev.source is not None:
        want = "c" if ev.source.op is Op.INSERT else "u"
        if got != want:
            return Failure("wrong _tidb_op", expected=want, actual=got, location=ev.at("_tidb_op", "value"))
    elif got not in ("c", "u"):
        return Failure("_tidb_op is neither \"c\" nor \"u\"", expected=["c", "u"], actual=got,
                       location=ev.at("_tidb_op", "value"))
    return None


@fast.rule("extension.op")
def _extension_op_fast(ev: RecordEvidence, src: Source) -> bool:
    if ev.source is not None or ev.value is None:
        return False
    src.line("if vd.get('_tidb_op') not in ('c', 'u'): return None")
    return True


@check("extension.commit-ts", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 (_tidb_commit_ts, _tidb_commit_physical_time); "
              f"{NOTES} §1.6 (physical time = commitTs >> 18)",
       needs_options={"enable-tidb-extension": "true"}, gate=(shape_key, _no_extension_datum))
def extension_commit_ts(ev: RecordEvidence) -> Verdict:
    """`_tidb_commit_ts` is the transaction's commit TSO and `_tidb_commit_physical_time` its
    physical part (ts >> 18)."""
    d = _ext_datum(ev)
    if isinstance(d, NotApplicable):
        return d
    ts, phys = d.get("_tidb_commit_ts"), d.get("_tidb_commit_physical_time")
    out = []
    if ev.source is not None and ts != ev.source.commit_ts:
        out.append(Failure("wrong _tidb_commit_ts", expected=ev.source.commit_ts, actual=ts,
                           location=ev.at("_tidb_commit_ts", "value")))
    if isinstance(ts, int) and phys != tso_physical_ms(ts):
        out.append(Failure("_tidb_commit_physical_time is not _tidb_commit_ts >> 18", expected=tso_physical_ms(ts),
                           actual=phys, location=ev.at("_tidb_commit_physical_time", "value")))
    return out or None


@fast.rule("extension.commit-ts")
def _extension_commit_ts_fast(ev: RecordEvidence, src: Source) -> bool:
    if ev.source is not None or ev.value is None:
        return False
    phys = src.const(tso_physical_ms, "phys")
    src.line("_ts = vd.get('_tidb_commit_ts')")
    src.line(f"if isinstance(_ts, int) and vd.get('_tidb_commit_physical_time') != {phys}(_ts): return None")
    return True


@check("extension.checksum", level=Level.MUST, scope=Scope.RECORD,
       clause=f"{NOTES} §1.6 (CRC32-IEEE over columns in column-ID order); docs ticdc-avro-checksum-verification",
       needs_options={"integrity-check-level": "correctness"}, gate=(shape_key, _no_checksum))
def extension_checksum(ev: RecordEvidence) -> Verdict:
    """`_tidb_row_level_checksum` is the CRC32 of the row's columns as a consumer recomputes it, and
    `_tidb_corrupted` is false."""
    v = ev.value
    assert v is not None and v.view is not None and v.datum is not None  # the gate: a decoded value
    d = v.datum
    got = d.get("_tidb_row_level_checksum")
    if d.get("_tidb_corrupted") is not False:
        return Failure("_tidb_corrupted is set", expected=False, actual=d.get("_tidb_corrupted"),
                       location=ev.at("_tidb_corrupted", "value"))
    if got in (None, ""):
        return NotApplicable("the event carried no checksum")
    crc = 0
    for f in v.view.fields:
        if f.is_extension:
            break
        crc = zlib.crc32(spec.checksum_bytes(f.tidb_type or "", d.get(f.name), f.params, ev.o.tz), crc)
    if str(crc) != got:
        return Failure("row checksum does not match the columns", expected=str(crc), actual=got,
                       location=ev.at("_tidb_row_level_checksum", "value"),
                       hint="recomputed like TiCDC's consumer: CRC32-IEEE over the fields in schema order")
    return None


# == topics =============================================================================

@check("topic.dispatch", level=Level.MUST, scope=Scope.RECORD,
       clause="seed 000 §Topic distribution ({schema}/{table} rule); "
              f"{NOTES} §1.8 (characters outside [A-Za-z0-9._-] become _)", needs_source=True,
       cache_key=lambda ev: (ev.record.topic, ev.source.topic if ev.source is not None else None))
def topic_dispatch(ev: RecordEvidence) -> Verdict:
    """A row goes to the topic its dispatcher rule names, with schema/table substituted and sanitised."""
    if ev.source is None:
        return NotApplicable("needs the source table")
    if ev.record.topic != ev.source.topic:
        return Failure("record is in the wrong topic", expected=ev.source.topic, actual=ev.record.topic,
                       location=ev.at())
    return None


@check("topic.one-table", level=Level.MUST, scope=Scope.STREAM,
       clause="seed 000 §Topic distribution (\"TiCDC Avro prohibits mapping multiple tables to the same "
              f"topic\"); seed 003; {NOTES} §1.8 (a topic rule with {{schema}} and {{table}} is enforced)",
       docs_vs_code="docs: one table per topic, always; code: only a topic expression is validated, a "
                    "hard-coded topic (no placeholders) may carry several tables (#9755)")
def one_table_per_topic(ev: StreamEvidence) -> Verdict:
    """Every record of a topic comes from one table (one record name and namespace), unless the
    topic rule is hard-coded."""
    if ev.hard_coded_topic:
        return NotApplicable("a hard-coded topic: TiCDC lets several tables share it (notes §1.8, #9755)")
    if not ev.record_names:
        return NotApplicable("no decodable record in the topic")
    if len(ev.record_names) > 1:
        names = sorted(f"{ns}.{n}" for ns, n in ev.record_names)
        return Failure(f"topic {ev.topic!r} carries {len(names)} tables", expected="one table",
                       actual=names, location=next(iter(ev.record_names.values())))
    return None
