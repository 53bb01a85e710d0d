"""TiCDC Avro for the delivery analysis: what each row change should look like in the log, and
what a message in the log is.

An *entity* is a row of a table: (topic, key). A *match* tells versions of the row apart: the
commit ts when the value carries it (`enable-tidb-extension=true`), otherwise the row image
itself; a delete is a tombstone, which carries neither. Both are reduced to short stable
digests, so that they cross process boundaries (Spark stages) cheaply and compare exactly.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any

from ...checks.compiled import Source
from ...checks.delivery import Version
from ...model.events import Op, Workload
from ..kit import DIGEST_SIZE, Identified, VersionNumbers, digest, key_change_split, repr_digest
from . import spec, watermark
from .decoder import SchemaResolver, decode_framed
from .evidence import freeze

TOMBSTONE = digest(("d",))


def expected_versions(workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Iterator[Version]:
    """Every message the workload should put in the log, per entity in commit order (after
    TiCDC's split of key-changing updates)."""
    o = spec.AvroOptions.from_options(options)
    numbers = VersionNumbers()
    for e in workload.transactions():
        for ch in e.changes:
            t = ch.table
            topic = topic_prefix + spec.substitute_topic(o.topic, t.database, t.name)
            for op, image in key_change_split(ch, split=not o.raw_change_event):
                key = {spec.sanitize_name(c.name): spec.native_value(c, image[c.name], o) for c in spec.key_columns(t)}
                entity = digest(("e", topic, freeze(key)))
                if op is Op.DELETE:
                    match, ts = TOMBSTONE, None
                elif o.extension:
                    match, ts = digest(("v", e.commit_ts)), e.commit_ts
                else:
                    value = {spec.sanitize_name(c.name): spec.native_value(c, image[c.name], o)
                             for c in spec.value_columns(t, o)}
                    match, ts = digest(("v", freeze(value))), None
                yield numbers.version(entity, match, ts, topic)


@functools.lru_cache(maxsize=64)
def _options(items: frozenset[tuple[str, str]]) -> spec.AvroOptions:
    """Parsed options, once per set of options (identify runs once per message, and parsing
    them each time took a tenth of its time)."""
    return spec.AvroOptions.from_options(dict(items))


def identify(topic: str, key: bytes | None, value: bytes | None, resolver: SchemaResolver,
             options: Mapping[str, str]) -> Identified:
    """(entity, match, commit ts) of a message; None parts where it cannot be decoded; None for
    a DDL or checkpoint control record (avro-enable-watermark), which is no row to account for."""
    o = _options(frozenset(options.items()))
    if o.control_messages and watermark.is_control(key, value):
        return None
    if key is None:
        return None, None, None
    k = decode_framed(key, resolver)
    if k.datum is None:
        return None, None, None
    entity = digest(("e", topic, freeze(k.datum)))
    if value is None:
        return entity, TOMBSTONE, None
    v = decode_framed(value, resolver)
    if v.datum is None:
        return entity, None, None
    if o.extension:
        ts = v.datum.get("_tidb_commit_ts")
        return entity, digest(("v", ts)), ts if isinstance(ts, int) else None
    cols = {n: x for n, x in v.datum.items() if n not in spec.ALL_EXTENSION_FIELDS}
    return entity, digest(("v", freeze(cols))), None


def entity_prefix(topic: str) -> str:
    """The start of the repr text of `identify`'s entity tuple for `topic`: what the functions of
    `entity_function` take first (worked out once per kind, not per record)."""
    return f"('e', {topic!r}, "


def entity_function(key_names: list[str]) -> Any:
    """`identify`'s entity of a record, `(entity_prefix(topic), kd)` -> digest, from its decoded
    key `kd` (which has exactly the fields `key_names`, so `freeze` is those fields in sorted
    order), compiled once per set of names (kinds of one table's key share it)."""
    return _entity_function(tuple(sorted(key_names)))


@functools.lru_cache(maxsize=1024)
def _entity_function(names: tuple[str, ...]) -> Any:
    """`digest(('e', topic, ((name, kd[name]), …)))`, with the tuple's repr written directly as
    one f-string after the topic's prefix (a tuple's repr is its items' reprs joined by ", ", a
    one-item tuple's ends with ","): the same text, hence the same digest, without building the
    tuples; `kit.digest`'s hash called in place."""
    src = Source("entity", ("prefix", "kd"))
    b2 = src.const(hashlib.blake2b, "blake2b")
    pairs = [f"({{{src.const(repr(n), 'r')}}}, {{kd[{src.const(n, 'n')}]!r}})" for n in names]
    frozen = "(" + ", ".join(pairs) + ("," if len(pairs) == 1 else "") + ")"
    src.line(f'return {b2}((prefix + f"{frozen})").encode("utf-8"), digest_size={DIGEST_SIZE}).digest()')
    return src.build()


#: (match, commit ts) by commit ts, shared by every kind's function (a transaction's rows in several
#: tables share their ts): a function of the ts alone.
_BY_TS: dict[int, tuple[bytes, int]] = {}


def emit_version(src: Source, o: spec.AvroOptions, value_names: list[str] | None) -> str:
    """Lines computing the rest of what `identify` says of a record of one kind, (match, commit
    ts), from the decoded value `vd` (None for a tombstone: `value_names` None), into a local;
    returns its name. A transaction's rows share their commit ts: its match is kept per ts
    (an int; anything else is worked out each time)."""
    dig = src.const(digest, "digest")
    out = src.fresh("version")
    if value_names is None:
        src.line(f"{out} = ({src.const(TOMBSTONE, 'tomb')}, None)")
    elif o.extension:
        memo = src.const(_BY_TS, "by_ts")
        src.line("_cts = vd.get('_tidb_commit_ts')")
        src.line("if _cts.__class__ is int:")
        src.line(f"{out} = {memo}.get(_cts)", 2)
        src.line(f"if {out} is None:", 2)
        src.line(f"if len({memo}) > 4096: {memo}.clear()", 3)
        src.line(f"{out} = {memo}[_cts] = ({src.const(repr_digest, 'rdigest')}(f\"('v', {{_cts}})\"), _cts)", 3)
        src.line("else:")
        src.line(f"{out} = ({dig}(('v', _cts)), _cts if isinstance(_cts, int) else None)", 2)
    else:
        cols = sorted(n for n in value_names if n not in spec.ALL_EXTENSION_FIELDS)
        frozen = "(" + "".join(f"({c}, vd[{c}]), " for c in (src.const(n, "n") for n in cols)) + ")"
        src.line(f"{out} = ({dig}(('v', {frozen})), None)")
    return out
