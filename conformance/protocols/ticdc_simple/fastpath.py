"""The TiCDC Simple checker's compiled fast path (see `checks.compiled`), for JSON DML and
WATERMARK messages.

A *kind* of record is a JSON DML message of one topic-partition whose `(database, table,
schemaVersion)` is one key, whose `type` is one DML type, whose top-level keys are one tuple
(in order), whose `data` and `old` are objects with one tuple of keys each (or not objects),
whose `handleKeyOnly` is true or absent/null, read with one resolved tableSchema (the very
object the partition, or partition 0, announced last for that key; or none). Every record check
the checker runs on a DML without the workload answers, beyond the values the generated code
reads, from these alone (the argument, check by check, is in `_PER_RECORD` and `_BY_KIND`): so
after the checks have judged a kind's first record and it passed every one of them, the kind
gets one generated function over the parsed message, the key and the value bytes that returns
True only when every per-record input is as the first record's answers need it; the record is
then counted with the first record's answers (passed, or the same not-applicable reason), and
so is the first record itself (the checks ran once on it, to find those answers). A WATERMARK's
kind is its topic-partition and its top-level keys; its per-record inputs are the fields' values.

The message is parsed with orjson (`parse`), not the decoder: where orjson reads what the
standard library reads, the values are the same, and the one thing it reads otherwise (an
integer beyond 64 bits, as a float) the generated functions refuse (no float anywhere: every
field and row value they accept is an integer of its width, a string, null, a boolean or a
TIMESTAMP object of two strings, so nothing nests deeper than the decoder reads either).

Kept off: Avro encoding (its union branches make another evidence), a message that repeats an
earlier one of the partition (a replay: its evidence has no schema), any kind whose first record
failed or errored a check, and any live record check this module does not know (a check added
later stays on the explaining path until its argument is written here).

The delivery identity of an accepted record is worked out with the kind too (`SimpleChecker.identity`,
`rematch`), as `delivery.identifier` works it out: the entity is the kind's (topic, database, table); the match
needs the handle key, which the identifier takes from the schema announced last *topic-wide* for
the DML's (database, table, schemaVersion), so the checker keeps that map as the identifier does
(`SimpleChecker.announced`, fed by every DDL and BOOTSTRAP, which never take this path), and the
kind remembers the match function of the handle key it worked out for the schema object it last
met (the key depends on nothing else: the row's keys are the kind's), looking the map up again only
after a schema was announced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...checks.compiled import Factory, Source, kind_answers
from ...checks.registry import CheckSpec
from ...checks.results import RecordPlan
from ...model.events import TSO_LOGICAL_BITS
from ..kit import digest
from . import codec, delivery, spec
from .checks.common import BUILD_TS_RANGE, CLOCK_SKEW_MS
from .checks.messages import handle_key_names
from .checks.values import shared_value_ok, string_test, value_columns
from .decoder import integer

#: Kinds one checker keeps per partition (a capture has few; beyond this, the table starts again).
MAX_KINDS = 20_000

P = spec.PROTOCOL + "."

#: Checks whose answer on a DML of one kind has per-record inputs, and what the generated code
#: tests of them (see `compile_kind`).
_PER_RECORD = frozenset(P + c for c in (
    "kafka.key-null",  # the key is None
    "message.version",  # version is the integer 1
    "message.build-ts",  # buildTs an integer in range, not before commitTs's physical time
    "message.fields",  # the integer fields are non-negative integers of their width (keys: the kind)
    "large-message.size",  # len(value) + 36 <= max-message-bytes (the key is None)
    "large-message.claim-check",  # claimCheckLocation is null or absent
))
#: Checks whose answer the kind decides (decoded, kind DML, type, keys of the message and of its
#: rows, handleKeyOnly, the resolved schema, the options): the first record's answer stands.
_BY_KIND = frozenset(P + c for c in (
    "message.decodes", "message.type", "dml.fields", "bootstrap.fields", "ddl.fields", "watermark.fields",
    "dml.columns", "dml.keys-sorted", "large-message.handle-key-only", "schema.table-schema",
))
_VALUE = P + "value."

_INT_BITS = {"version": 63, "tableID": 63, "commitTs": 64, "buildTs": 63, "schemaVersion": 64}

#: (database, table, schemaVersion, type, top-level keys, data keys or None, old keys or None)
Kind = tuple[Any, ...]


@dataclass(slots=True)
class FastKind:
    schema: Any  # the resolved tableSchema the kind was compiled for (None: none known)
    key: Kind = ()  # its key (`kind_of`'s)
    accept: Callable[[dict[str, Any], bytes | None, bytes], bool | None] | None = None
    plan: RecordPlan = field(default_factory=RecordPlan)
    hopeless: bool = False  # a check failed, errored or has no argument here: the kind stays on the checks
    # Every row value `accept` takes is a string or null (no TIMESTAMP object): an object row's
    # `checker.frozen` is its items, as they are.
    plain: bool = False
    schema_key: tuple[Any, ...] = ()  # (database, table, schemaVersion)
    table: tuple[str, str] | None = None  # (database, table)
    table_id: int | None = None  # the resolved schema's tableID (None: none, or not an integer)
    # The checker's count of recorded schemas when `_resolve` last gave `schema` for `schema_key`
    # (SimpleChecker.check_fast; -1: not yet).
    resolved: int = -1
    # The delivery identity (`SimpleChecker.identity`): the entity; the row part's name, its keys
    # if an object; the DML type; handleKeyOnly (the row is the handle key: `match` is fixed);
    # the topic-wide announced schema last met (`rematch`), its key, the checker's announcement
    # count then, and the match function of its handle key.
    entity: bytes = b""
    row: str = ""
    row_keys: tuple[str, ...] | None = None
    typ: str = ""
    key_only: bool = False
    announced: Any = None
    announced_key: tuple[str, str, str, int] | None = None
    generation: int = -1
    match: Callable[[dict[str, Any], int], bytes] | None = None


def kind_of(obj: dict[str, Any]) -> Kind | None:
    """A DML message's kind, or a WATERMARK's (its keys); None: no fast path for it."""
    if obj.get("type") == "WATERMARK":
        return ("WATERMARK", tuple(obj))
    d = obj.get("data")
    o = obj.get("old")
    h = obj.get("handleKeyOnly")
    if h is not None and h is not True:
        return None
    db, table, version, typ = obj.get("database"), obj.get("table"), obj.get("schemaVersion"), obj.get("type")
    if db.__class__ is not str or table.__class__ is not str or version.__class__ is not int \
            or typ.__class__ is not str:
        return None
    return (db, table, version, typ, tuple(obj), tuple(d) if d.__class__ is dict else None,
            tuple(o) if o.__class__ is dict else None, h is True)


def answers(specs: list[CheckSpec], ev: Any) -> list[tuple[str, str | None]] | None:
    """Every record check's answer on `ev` (`compiled.kind_answers`), for the checks this module knows."""
    return kind_answers(specs, ev, _KNOWN.__getitem__)


class _KnownIds(dict[str, bool]):
    """Whether this module knows a check (an argument for it is written here), by id: worked out
    once per id, then a lookup."""

    def __missing__(self, i: str) -> bool:
        got = self[i] = i in _PER_RECORD or i in _BY_KIND or i.startswith(_VALUE)
        return got


_KNOWN = _KnownIds()


def compile_kind(kind: FastKind, ev: Any, specs: list[CheckSpec], kind_key: Kind) -> None:
    """Generate the kind's function from its first record (`ev`, which passed every check)."""
    got = answers(specs, ev)
    if got is None or ev.msg.avro or ev.source is not None:
        kind.hopeless = True
        return
    watermark = len(kind_key) == 2
    if watermark:
        kind.accept = _source(kind_key[1], True, None, None, ev.o.max_message_bytes, [])[0].build()
        kind.plan.fixed = got
        return
    vc = value_columns(ev)
    judged = vc.not_applicable is None and vc.source is None
    fam_of = {name: fam for fam, names in vc.by_family.items() for name in names} if judged else {}
    live = {s.id for s in specs}
    plain = True
    tests: list[tuple[str, Callable[[Any], bool]]] = []  # each column's name and value test, in order
    for names in (kind_key[5], kind_key[6]):
        for name in names or ():
            fam = fam_of.get(name)
            if fam is None or P + f"value.{fam}" not in live:
                # No value rule reads it: a string or null (what Simple writes), nothing that nests.
                tests.append((name, _STRING))
                continue
            # The value test takes only a string or (TIMESTAMP) an object of two strings.
            plain = plain and fam != spec.Family.TIMESTAMP
            tests.append((name, _value_ok(fam, vc.data_types[name], ev.o)))
    # The function's text and its constants but the columns' own depend on this layout only: the
    # first kind of a layout writes them, the next bind their columns' names and tests to the
    # same names (`_source`).
    layout = (kind_key[4], None if kind_key[5] is None else len(kind_key[5]),
              None if kind_key[6] is None else len(kind_key[6]), ev.o.max_message_bytes)
    cached = _LAYOUTS.get(layout)
    if cached is None:
        if len(_LAYOUTS) >= MAX_KINDS:
            _LAYOUTS.clear()
        src, slots = _source(kind_key[4], False, kind_key[5], kind_key[6], ev.o.max_message_bytes, tests)
        cached = _LAYOUTS[layout] = (src.consts, slots, src.factory())
    consts = dict(cached[0])
    for (n, known, miss, ok), (name, test) in zip(cached[1], tests, strict=True):
        consts[n] = name
        consts[known] = test.known  # type: ignore[attr-defined]
        consts[miss] = test.miss  # type: ignore[attr-defined]
        consts[ok] = test
    kind.accept = cached[2].bind(consts)
    kind.plan.fixed = got
    kind.plain = plain
    # What the checker's log entry of every record of the kind takes from the kind (`check_fast`).
    kind.schema_key = kind_key[:3]
    kind.table = (kind_key[0], kind_key[1])
    kind.table_id = integer(kind.schema.get("tableID")) if kind.schema is not None else None
    kind.entity = digest(("t", ev.record.topic, kind_key[0], kind_key[1]))
    delete = kind_key[3] == "DELETE"
    kind.row, kind.row_keys = ("old", kind_key[6]) if delete else ("data", kind_key[5])
    kind.typ = kind_key[3]
    kind.key_only = kind_key[7]
    kind.announced_key = (ev.record.topic, *kind.schema_key)
    if kind_key[7]:  # handleKeyOnly: the row is the handle key
        kind.match = delivery.matcher(list(kind.row_keys), kind_key[3]) if kind.row_keys is not None else None


#: A DML layout's constants as the first kind of the layout bound them, each column's constant names
#: (name, memo, miss answer, test), and its text's factory, by (top-level keys, data and old column
#: counts or None, max-message-bytes): `compile_kind`.
_LAYOUTS: dict[tuple[Any, ...], tuple[dict[str, Any], list[tuple[str, str, str, str]], Factory]] = {}


def _source(keys: tuple[str, ...], watermark: bool, data: tuple[str, ...] | None, old: tuple[str, ...] | None,
            max_message_bytes: int, tests: list[tuple[str, Callable[[Any], bool]]]
            ) -> tuple[Source, list[tuple[str, str, str, str]]]:
    """The source of a kind's function: the message's top-level `keys`, `data`'s and `old`'s keys
    (None: not an object), the columns' names and value tests in order (`tests`); with the
    constant names each column's are bound to."""
    src = Source("accept", ("obj", "key", "value"))
    src.line("if key is not None: return None")
    ints: dict[str, str] = {}
    for f, bits in _INT_BITS.items():
        if f in keys:
            v = ints[f] = src.value(f"obj[{src.const(f, 'n')}]", f[:2])
            if f == "version":  # the version is 1 (in range: its rule's too)
                src.line(f"if {v}.__class__ is not int or {v} != {spec.VERSION}: return None")
            else:
                src.line(f"if {v}.__class__ is not int or not 0 <= {v} < {1 << bits}: return None")
    b, c = ints["buildTs"], ints["commitTs"]
    src.line(f"if not {BUILD_TS_RANGE[0]} <= {b} <= {BUILD_TS_RANGE[1]}: return None")
    src.line(f"if {c} > 0 and {b} < ({c} >> {TSO_LOGICAL_BITS}) - {CLOCK_SKEW_MS}: return None")
    src.line(f"if len(value) + {spec.MAX_RECORD_OVERHEAD} > {max_message_bytes}: return None")
    # Every other field is a string, null or a boolean (strings: database, table, type, by `kind_of`
    # for a DML): nothing nests, and nothing is a number the fast parse may read otherwise.
    for f in keys:
        if f not in ints and (watermark or f not in ("data", "old", "claimCheckLocation", "handleKeyOnly", "database",
                                                     "table", "type")) and f != "type":
            src.line(f"if obj[{src.const(f, 'n')}].__class__ not in _scalar: return None")
    src.consts["_scalar"] = _SCALAR
    if watermark:
        # watermark.fields: a commitTs above 0 (its other rules are the kind's).
        src.line(f"if {c} <= 0: return None")
        src.line("return True")
        return src, []
    if "claimCheckLocation" in keys:
        src.line("if obj['claimCheckLocation'] is not None: return None")
    rows: dict[str, str] = {}
    for part, names in (("data", data), ("old", old)):
        if names is not None:
            # An object: `kind_of` gave the kind this part's keys only for one.
            rows[part] = src.value(f"obj[{src.const(part, 'n')}]", part[0])
        elif part in keys:
            src.line(f"if obj[{src.const(part, 'n')}].__class__ not in _scalar: return None")
    slots: list[tuple[str, str, str, str]] = []
    columns = iter(tests)
    for part, names in (("data", data), ("old", old)):
        for _ in names or ():
            # Every column is written alike, its name and test bound to names of its own (not
            # shared with another column's, even where the objects are): the text depends on the
            # number of columns only, and kinds of as many columns share their compiled code.
            name, test = next(columns)
            v, n = src.fresh("v"), src.fresh("n")
            src.consts[n] = name
            src.line(f"{v} = {rows[part]}[{n}]")
            line, names_ = _column_test(src, v, test)
            src.line(line)
            slots.append((n, *names_))
    src.line("return True")
    return src, slots


def parse(value: bytes, compression: str) -> dict[str, Any] | None:
    """The message as `decoder.decode` reads it (None: the fast parse refuses it, and the checks
    decode it): orjson, which refuses what the standard library refuses (not UTF-8, not JSON,
    nested beyond its limit) and more (NaN, lone surrogates), and reads the rest alike (key
    order, the last of duplicate keys, strings, integers within 64 bits), except integers beyond
    64 bits, which it reads as floats: the generated functions accept no float anywhere. No
    record they accept nests deeper than 3 (message, row, TIMESTAMP object), so `json_depth`'s
    limit is not reached. Held to the standard library by tests/unit/test_fast_paths_simple.py."""
    try:
        obj = orjson.loads(codec.decompress(value, compression) if compression != "none" else value)
    except (orjson.JSONDecodeError, codec.CodecError):
        return None
    return obj if obj.__class__ is dict else None


#: The classes a field or value no rule reads may have on the fast path (no float: see `parse`).
_SCALAR = frozenset({str, bool, int, type(None)})


#: The value test of a column (family, dataType, options), shared by every kind that asks and by
#: the value checks themselves (`values.shared_value_ok`).
_value_ok = shared_value_ok


def _column_test(src: Source, v: str, test: Callable[[Any], bool]) -> tuple[str, tuple[str, str, str]]:
    """The line testing the local `v` (a column's value: null, or what `test` accepts), with
    `values.value_ok`'s memo of `test` inline before the call (`test.known`: what the rule said
    of strings met before, `test.miss` what it answers for a string it does not know): a string
    the memo accepted costs no call. The same text for every test (the objects bound to names of
    their own, returned too), so that kinds of one layout share their compiled code (`Source.build`)."""
    known, miss, ok = src.fresh("known"), src.fresh("miss"), src.fresh("ok")
    src.consts[known] = test.known  # type: ignore[attr-defined]
    src.consts[miss] = test.miss  # type: ignore[attr-defined]
    src.consts[ok] = test
    return (f"if {v} is not None and not (({v}.__class__ is str and {known}.get({v}, {miss})) or {ok}({v})): "
            "return None", (known, miss, ok))


#: The test of a column no value rule reads: a string (or null), nothing else.
_STRING = string_test()


def rematch(kind: FastKind, announced: dict[Any, Any], generation: int) -> None:
    """`kind.match` as `delivery.identifier` would find it now, given the schemas announced so far
    in the topic (`announced`, keyed as the identifier keys them; `generation`: how many times
    it was written to, which `SimpleChecker.identity` compares to `kind.generation` to call
    this only when a schema was announced since the kind's last call). None: no schema is
    announced for the kind's key, or it names no handle key (the match is None)."""
    kind.generation = generation
    ts = announced.get(kind.announced_key)
    if ts is None:
        kind.match = None
    elif ts is not kind.announced:
        names = handle_key_names(ts, kind.row_keys)
        kind.match = _matcher(names, kind.typ) if names is not None else None
    kind.announced = ts


#: `delivery.matcher` of each (handle key names, DML type) met: a schema announced again (a
#: BOOTSTRAP's, every interval) gives its kinds the match they had (`rematch`).
_MATCHERS: dict[tuple[tuple[str, ...], str], Callable[[dict[str, Any], int], bytes]] = {}


def _matcher(names: list[str], typ: str) -> Callable[[dict[str, Any], int], bytes]:
    """`delivery.matcher(names, typ)`, one for each (names, typ): it depends on nothing else."""
    key = (tuple(names), typ)
    got = _MATCHERS.get(key)
    if got is None:
        if len(_MATCHERS) >= MAX_KINDS:
            _MATCHERS.clear()
        got = _MATCHERS[key] = delivery.matcher(names, typ)
    return got
