"""What every protocol needs, once: digests, findings and the gate that hands a check what it
found (`given`), brief renderings, evidence locations, per-partition logs, version numbering for
the delivery analysis, strict JSON, the tables an event states, TiCDC's split of key-changing
updates, and how a schema resolver tells a registry that cannot answer from one that says no.

The protocols never import each other; they all import this (and the model).
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Callable, Hashable, Iterator
from typing import Any, Generic, TypeVar

from ..checks.delivery import Version
from ..checks.registry import Failure, Location, NotApplicable
from ..infra.registry.errors import (
    RegistryUnavailable,
    SchemaNotFound,
    SubjectNotFound,
    Unauthorized,
    VersionNotFound,
)
from ..model.events import Ddl, Event, Op, RowChange, Transaction
from ..model.table import Table
from ..model.values import Row
from .base import Identified as Identified  # the protocols import it from here, with the rest

#: What a check that finds several things yields.
Findings = Iterator[Failure | NotApplicable]

#: Bytes of a digest: short, and still never alike by chance in one run.
DIGEST_SIZE = 12


def _hash(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=DIGEST_SIZE).digest()


def digest(obj: Any) -> bytes:
    """A short stable digest of frozen data (tuples, strings, numbers): `repr` is the same in
    every process, unlike `hash`."""
    return _hash(repr(obj))


#: `digest` of an object given its `repr` text (`digest(x) == repr_digest(repr(x))`): for
#: generated code that writes a tuple's repr directly rather than building the tuple.
repr_digest = _hash


def json_digest(obj: Any) -> bytes:
    """A short stable digest of JSON-like data, blind to what a JSON document does not keep:
    an object's key order, a list from a tuple, a value's type where its text is alike."""
    return _hash(json.dumps(obj, sort_keys=True, default=str))


E = TypeVar("E")
T = TypeVar("T")


def given(find: Callable[[E], T | NotApplicable]) -> Callable[[Callable[[E, T], Findings]], Callable[[E], Findings]]:
    """A check that judges what `find` finds in its evidence: `find`'s NotApplicable where it
    finds nothing, else the check's findings about what it found (the check's own gate, written
    once and handing over what it looked up)."""
    def deco(judge: Callable[[E, T], Findings]) -> Callable[[E], Findings]:
        @functools.wraps(judge)
        def check(ev: E) -> Findings:
            found = find(ev)
            if isinstance(found, NotApplicable):
                yield found
                return
            yield from judge(ev, found)

        return check

    return deco


def brief(v: Any, n: int) -> str:
    """`repr(v)`, cut after `n` characters."""
    r = repr(v)
    return r if len(r) <= n else r[:n] + "…"


class Located:
    """Evidence of one record that says where a finding is: its record's place, its table (the
    protocol's `table_name`), and the column and part (key, value…) a check names."""

    __slots__ = ()
    loc: Location

    @property
    def table_name(self) -> str | None:
        return None

    def at(self, column: str | None = None, part: str | None = None) -> Location:
        return self.loc.within(self.table_name, column, part)


L = TypeVar("L")


class PartitionLogs(Generic[L]):
    """A stream's logs, one per (topic, partition), made by `new(topic, partition)` as records
    of a partition first arrive (a record without a partition is in partition 0)."""

    def __init__(self, new: Callable[[str, int], L]) -> None:
        self.new = new
        self.logs: dict[tuple[str, int], L] = {}

    def of(self, topic: str, partition: int | None) -> L:
        key = (topic, partition or 0)
        lg = self.logs.get(key)
        if lg is None:
            lg = self.logs[key] = self.new(*key)
        return lg

    def get(self, topic: str, partition: int) -> L | None:
        return self.logs.get((topic, partition))

    def by_topic(self) -> dict[str, dict[int, L]]:
        """The logs of each topic, by partition, in the order topics first came."""
        out: dict[str, dict[int, L]] = {}
        for (topic, part), lg in self.logs.items():
            out.setdefault(topic, {})[part] = lg
        return out

    def clear(self) -> None:
        self.logs.clear()


class VersionNumbers:
    """Numbers each entity's versions in the order they come (its commit order)."""

    def __init__(self) -> None:
        self.seq: dict[Hashable, int] = {}

    def version(self, entity: Hashable, match: Hashable, ts: int | None, topic: str,
                alternates: tuple[Hashable, ...] = ()) -> Version:
        n = self.seq.get(entity, 0)
        self.seq[entity] = n + 1
        return Version(entity, n, match, ts, topic, alternates)


def key_change_split(ch: RowChange, *, split: bool = True) -> list[tuple[Op, Row]]:
    """The row messages TiCDC makes of one change: an UPDATE that changes a unique key is a
    DELETE of the old row and an INSERT of the new one (unless `split` is off: the raw change
    event); anything else is itself, with its image (`after`, or `before` for a DELETE)."""
    if split and ch.op is Op.UPDATE and ch.changes_unique_key():
        assert ch.before is not None and ch.after is not None
        return [(Op.DELETE, ch.before), (Op.INSERT, ch.after)]
    return [(ch.op, ch.image())]


def update_halves(ch: RowChange) -> list[RowChange]:
    """An UPDATE as TiCDC splits one that changes a unique key: the DELETE of the old row, then
    the INSERT of the new one (the encoders decide when; `key_change_split` says the same of images)."""
    assert ch.before is not None and ch.after is not None
    return [RowChange(Op.DELETE, ch.table, ch.before, None), RowChange(Op.INSERT, ch.table, None, ch.after)]


# -- strict JSON ------------------------------------------------------------------------------------

def tables_of(event: Event) -> list[Table]:
    """The table versions an event states: every change's table, a DDL's new and previous one."""
    if isinstance(event, Transaction):
        return [ch.table for ch in event.changes]
    if isinstance(event, Ddl):
        return [t for t in (event.table, event.pre_table) if t is not None]
    return []


class DuplicateKey(ValueError):
    """A JSON object names `key` twice."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for k, _v in pairs:
            if k in seen:
                raise DuplicateKey(k)
            seen.add(k)
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: The tokens Python's JSON reader takes beyond JSON (RFC 8259 has none of them), as floats.
CONSTANTS: dict[str, float] = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


#: One decoder per (constant, parse_float): `json.loads` with hooks builds a new one per call.
_DECODERS: dict[tuple[Any, Any], json.JSONDecoder] = {}


def strict_decoder(*, constant: Callable[[str], Any] = _no_constant,
                   parse_float: Callable[[str], Any] | None = None) -> json.JSONDecoder:
    """The decoder `loads_strict` parses with (one per hook set); its `raw_decode` parses a value
    where a text's prefix is already known."""
    decoder = _DECODERS.get((constant, parse_float))
    if decoder is None:
        if len(_DECODERS) > 64:
            _DECODERS.clear()
        decoder = _DECODERS[(constant, parse_float)] = json.JSONDecoder(
            object_pairs_hook=_no_duplicates, parse_constant=constant, parse_float=parse_float)
    return decoder


def loads_strict(text: str, *, constant: Callable[[str], Any] = _no_constant,
                 parse_float: Callable[[str], Any] | None = None) -> Any:
    """JSON text, strictly: a key twice in an object raises `DuplicateKey`; a bare `NaN` or
    `Infinity` raises ValueError unless `constant` gives its value."""
    return strict_decoder(constant=constant, parse_float=parse_float).decode(text)


# -- schema registries ------------------------------------------------------------------------------

#: A registered schema that nests deeper than a checker's reading of it can follow (Python's
#: recursion limit): the encoder's finding, not the suite's crash (the Avro protocols' decoders).
SCHEMA_TOO_DEEP = "the registered schema nests deeper than this checker can read (Python's recursion limit)"


def registry_unreachable(e: BaseException) -> bool:
    """The registry cannot answer (down, or refusing the suite's credentials): an
    infrastructure error to raise, not a finding about the encoder."""
    return isinstance(e, (RegistryUnavailable, Unauthorized, ConnectionError, TimeoutError))


def registry_not_found(e: BaseException) -> bool:
    """The registry answered that it holds no such schema, subject or version (Confluent's
    40401-40403, HTTP 404; a test double's KeyError)."""
    return (isinstance(e, (SchemaNotFound, SubjectNotFound, VersionNotFound, KeyError))
            or getattr(e, "error_code", None) in (40401, 40402, 40403) or getattr(e, "status", None) == 404)
