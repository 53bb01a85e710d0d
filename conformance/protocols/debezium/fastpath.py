"""The Debezium checker's compiled fast path (see `checks.compiled`), for change events and their
tombstones in a capture, written by the JSON converter or the Avro converter.

A *kind* of record is one topic (not the transaction or message topic), with a key that is null
or a document read with one key schema (JSON: the very object the decoder's schema prefix memo
holds, `decoder._quick`, or none with schemas off; Avro: the Connect schema the resolver made of
the part's registry id, one object per id, so the kind names the id too) whose payload has one
tuple of keys (or is null), and a value that is null (a tombstone) or a document read with one
value schema (likewise) whose payload is an object with one tuple of keys, one op, `before` and
`after` each null or an object with one tuple of keys, and a transaction block that is an object
or not. Every record
check the checker runs without the workload answers on such a record, beyond the values the
generated code reads, from these alone (check by check, in `_PER_RECORD` and `_BY_KIND`): so
after the checks have judged a kind's first record and it passed every one of them (or was not
applicable), the kind gets one generated function over the key's and the value's payloads that
returns True only when every per-record input is as the first record's answers need it; the
record is then counted with the first record's answers.

An Avro part is decoded in full on every record (its payload is the datum as the JSON converter
would write it, `connect_avro.from_avro_datum`), so the generated function reads what it reads of
a JSON payload; the Avro checks (`avro.framing`, `avro.subject`, `avro.schema`) answer by the
part's registry id, its decoding and the topic, which the kind fixes (a record whose part does
not decode takes no kind).

Kept off: the transaction and message topics, op `m`, a kind whose first record failed or
errored a check, a `before`/`after` that is neither null nor an object, and any live record check this module does
not know (a check added later stays on the explaining path until its argument is written here).
Everything the generated function is not sure of goes to the checks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...checks.compiled import Source, kind_answers
from ...checks.registry import CheckSpec
from ...checks.results import RecordPlan
from . import log_checks, spec
from .decoder import Message
from .delivery import _field_types, _fields, message_identity

__all__ = ["MAX_KINDS", "FastKind", "compile_kind", "kind_of", "message_identity"]

#: Kinds one checker keeps (a capture has few; beyond this, the table starts again).
MAX_KINDS = 20_000

P = spec.PROTOCOL + "."

#: Checks whose answer on a record of one kind has per-record inputs, and what the generated code
#: tests of them (see `compile_kind`).
_PER_RECORD = frozenset(P + c for c in (
    "envelope.timestamps",  # ts_ms/ts_us/ts_ns of the envelope and of source: integers that agree
    "source.postgresql",  # each source field's JSON type, connector, name, snapshot for the op
    "topic.name",  # source.schema and source.table: the first record's (its topic is the kind's)
    "key.fields",  # the key payload's values equal the row's (the names: the kind)
    "transaction.id",  # the block's id is <source.txId>:<source.lsn>
    "value.schema-conforms",  # the payloads are values of the schemas (the rule, compiled per schema)
))
#: Checks whose answer the kind decides (topic, options, the parts decoded and enveloped, the
#: schemas, the payloads' keys, op, before/after null or objects): the first record's answer stands.
_BY_KIND = frozenset(P + c for c in (
    "json.valid", "converter.schemas", "avro.framing", "avro.subject", "avro.schema", "envelope.fields",
    "envelope.schema", "message.content", "transaction.end-counts",
))

_INT_RANGE = {typ: (-(1 << (bits - 1)), 1 << (bits - 1)) for typ, bits in log_checks._INTS.items()}
_JSON_CLASS = {"string": "str", "int64": "int"}

Kind = tuple[Any, ...]


def _shape(v: Any) -> tuple[str, ...] | None | bool:
    """An object's keys, None for null, False for anything else."""
    return tuple(v) if v.__class__ is dict else (None if v is None else False)


def kind_of(topic: str, m: Message) -> Kind | None:
    """A decoded record's kind (None: no fast path for it). The schemas are named by identity:
    `FastKind` holds them, and the checker tests `is`."""
    kp, vp = m.key, m.value
    head = (topic, kp.raw is None, kp.enveloped, id(kp.schema), _shape(kp.payload))
    if vp.raw is None:
        return head
    e = vp.payload
    if e.__class__ is not dict:
        return None
    op = e.get("op")
    before, after = _shape(e.get("before")), _shape(e.get("after"))
    if op.__class__ is not str or op == "m" or before is False or after is False:
        return None
    return (*head, vp.enveloped, id(vp.schema), tuple(e), op, before, after, e.get("transaction").__class__ is dict)


@dataclass(slots=True)
class FastKind:
    key_schema: Any  # the schema objects the kind was compiled for (held: their ids name the kind)
    value_schema: Any
    accept: Callable[[Any, Any], bool | None] | None = None
    plan: RecordPlan = field(default_factory=RecordPlan)
    # The delivery identity's schema-level parts (delivery.message_identity), worked out once.
    after_fields: Any = None
    key_types: Any = None


def answers(specs: list[CheckSpec], ev: Any) -> list[tuple[str, str | None]] | None:
    """Every record check's answer on `ev` (`compiled.kind_answers`), for the checks this module knows."""
    return kind_answers(specs, ev, _known)


def _known(i: str) -> bool:
    return i in _PER_RECORD or i in _BY_KIND


def compile_kind(kind: FastKind, ev: Any, specs: list[CheckSpec]) -> bool:
    """Generate the kind's function from its first record (`ev`), if it passed every check (else
    the kind stays on the checks): True when it did, the answers in `kind.plan.fixed`."""
    got = answers(specs, ev)
    if got is None:
        return False
    try:
        accept = _generate(ev, {cid for cid, reason in got if reason is None})
    except Exception:  # noqa: BLE001 - a schema the generator does not follow: the checks judge the kind
        return False
    if accept is None:
        return False
    kind.accept = accept
    kind.plan.fixed = got
    m = ev.msg
    if not m.tombstone:
        kind.after_fields = _fields(m.value.schema, "after")
        kind.key_types = _field_types(m.key.schema) if isinstance(m.key.schema, dict) else None
    return True


def _generate(ev: Any, passed: set[str]) -> Callable[[Any, Any], bool | None] | None:
    m = ev.msg
    src = Source("accept", ("k", "e"))
    if P + "value.schema-conforms" in passed:
        for p, arg in ((m.key, "k"), (m.value, "e")):
            if p.raw is not None and p.ok and p.enveloped and isinstance(p.schema, dict):
                src.line(f"if {src.const(conformer(p.schema), 'conforms')}({arg}) is not True: return None")
    if not m.tombstone:
        e = m.envelope
        assert e is not None
        change = {P + c for c in ("envelope.timestamps", "source.postgresql", "topic.name")}
        if not change <= passed:
            return None  # a change event whose source or timestamps the kind cannot vouch for
        s = src.value("e.get('source')", "s")
        src.line(f"if {s}.__class__ is not dict: return None")
        _timestamps(src, "e")
        _timestamps(src, s)
        _source(src, s, m.op, ev.o)
        first = m.source
        assert first is not None
        src.line(f"if {s}.get('schema') != {src.const(first['schema'], 'n')} "
                 f"or {s}.get('table') != {src.const(first['table'], 'n')}: return None")
        # transaction.id: passed where the kind's block is an object, else not applicable.
        block = src.value("e.get('transaction')", "t")
        src.line(f"if {block}.__class__ is dict and {block}.get('id') != f\"{{{s}.get('txId')}}:{{{s}.get('lsn')}}\": "
                 "return None")
    if P + "key.fields" in passed:
        _key_fields(src, m)
    src.line("return True")
    return src.build()


def _key_fields(src: Source, m: Message) -> None:
    """key.fields: every key field the row has equals the row's value (`row[k] != v` fails)."""
    k, e = m.key.payload, m.envelope
    if not isinstance(k, dict) or e is None:
        return
    part = "after" if isinstance(e.get("after"), dict) else "before"
    row = e.get(part)
    if not isinstance(row, dict):
        return
    r = src.value(f"e[{src.const(part, 'n')}]", "r")
    for name in k:
        if name in row:
            n = src.const(name, "n")
            src.line(f"if {r}[{n}] != k[{n}]: return None")


def _timestamps(src: Source, obj: str) -> None:
    """envelope.timestamps on one object: each of ts_ms/us/ns null or an integer, each finer one
    the coarser at its precision."""
    names = [src.value(f"{obj}.get({src.const(t, 'n')})", t[3:]) for t in ("ts_ms", "ts_us", "ts_ns")]
    for v in names:
        src.line(f"if {v} is not None and {v}.__class__ is not int: return None")
    for coarse, fine in zip(names, names[1:], strict=False):
        src.line(f"if {fine} is not None and {coarse} is not None and {fine} // 1000 != {coarse}: return None")


def _source(src: Source, s: str, op: str, o: Any) -> None:
    """source.postgresql: each field of its JSON type (required ones present), connector, name, and
    snapshot as the op needs it."""
    for name, typ, optional in spec.SOURCE_FIELDS:
        v = src.value(f"{s}.get({src.const(name, 'n')})", "f")
        cls = _JSON_CLASS[typ]
        if optional:
            src.line(f"if {v} is not None and {v}.__class__ is not {cls}: return None")
        else:
            src.line(f"if {v}.__class__ is not {cls}: return None")
    src.line(f"if {s}['connector'] != {src.const(spec.CONNECTOR, 'n')}: return None")
    src.line(f"if {s}['name'] != {src.const(o.prefix, 'n')}: return None")
    snap = src.value(f"{s}.get('snapshot')", "sn")
    if op in ("c", "u", "d"):
        src.line(f"if {snap} is not None and {snap} != 'false': return None")
    elif op == "r":
        src.line(f"if {snap} not in {src.const((*spec.SNAPSHOT_RECORD_VALUES, 'incremental'), 'sv')}: return None")


#: Each schema's compiled `value.schema-conforms` test, by the schema object's id (the object held:
#: the decoder's prefix memo shares one per schema text, so kinds of one schema share the test).
_CONFORMERS: dict[int, tuple[Any, Callable[[Any], bool | None]]] = {}
_CONFORMERS_MAX = 4096


def conformer(schema: Any) -> Callable[[Any], bool | None]:
    """A function that returns True only where its argument is a value of `schema` (as
    `log_checks.problems` judges it), compiled once per schema object."""
    got = _CONFORMERS.get(id(schema))
    if got is not None and got[0] is schema:
        return got[1]
    src = Source("conforms", ("x",))
    _conforms(src, schema, "x", 1, top=True)
    src.line("return True")
    fn = src.build()
    if len(_CONFORMERS) >= _CONFORMERS_MAX:
        _CONFORMERS.clear()
    _CONFORMERS[id(schema)] = (schema, fn)
    return fn


def _conforms(src: Source, schema: Any, expr: str, indent: int, *, top: bool = False) -> None:
    """value.schema-conforms on one value: the lines that return None unless `expr` is a value of
    the Connect `schema` as `log_checks.problems` judges it. The common types are tested inline,
    a struct within a struct by its own function (the text of a struct's function depends only on
    its fields' types: the source block, and tables of one column signature, share the code);
    any other type (arrays, maps, JSON texts, odd schemas) by the rule itself."""
    if not isinstance(schema, dict):
        return
    typ, name = schema.get("type"), schema.get("name")
    v = src.fresh("v")
    src.line(f"{v} = {expr}", indent)
    simple = typ.__class__ is str and (name is None or name.__class__ is str) and (
        typ in _INT_RANGE or typ in ("float32", "float64", "boolean")
        or (typ == "string" and name not in ("io.debezium.data.Json",))
        or typ == "bytes" or (typ == "struct" and isinstance(schema.get("fields"), list)))
    if simple and typ == "struct" and not top:
        src.line(f"if {src.const(conformer(schema), 'conforms')}({v}) is not True: return None", indent)
        return
    if not simple:
        rule = src.const(log_checks.problems, "problems")
        src.line(f"if next({rule}({src.const(schema, 'sc')}, {v}, ''), None) is not None: return None", indent)
        return
    if schema.get("optional", False):
        src.line(f"if {v} is not None:", indent)
        indent += 1
    else:
        src.line(f"if {v} is None: return None", indent)
    if typ in _INT_RANGE:
        lo, hi = _INT_RANGE[typ]
        day = log_checks._DAY.get(name) if name.__class__ is str else None
        extra = f" or not 0 <= {v} <= {day}" if day is not None else ""
        src.line(f"if {v}.__class__ is not int or not {lo} <= {v} < {hi}{extra}: return None", indent)
    elif typ in ("float32", "float64"):
        src.line(f"if {v}.__class__ is not float and {v}.__class__ is not int: return None", indent)
    elif typ == "boolean":
        src.line(f"if {v}.__class__ is not bool: return None", indent)
    elif typ == "bytes":
        rule = src.const(log_checks._bytes, "bytes")
        src.line(f"if next({rule}({src.const(schema, 'sc')}, {v}, ''), None) is not None: return None", indent)
    elif typ == "string":
        src.line(f"if {v}.__class__ is not str: return None", indent)
        ok = src.const((spec.PLACEHOLDER, ""), "ph")
        if name == "io.debezium.data.Uuid":
            src.line(f"if {v} not in {ok} and not {src.const(log_checks._UUID, 're')}.match({v}): return None",
                     indent)
        elif name == "io.debezium.data.Enum":
            allowed = (schema.get("parameters") or {}).get("allowed")
            if isinstance(allowed, str):
                src.line(f"if {v} not in {ok} and {v} not in {src.const(allowed, 'al')} "
                         f"and {v} != {src.const(schema.get('default'), 'df')}: return None", indent)
    else:  # struct
        src.line(f"if {v}.__class__ is not dict: return None", indent)
        for f in schema["fields"]:
            if isinstance(f, dict):
                _conforms(src, f, f"{v}.get({src.const(str(f.get('field')), 'n')})", indent)
