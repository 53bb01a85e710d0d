"""TiCDC Simple for the delivery analysis.

Simple dispatches by table and promises commit order per partition, so an *entity* is a
table (topic, database, table) and its versions are its row messages in commit order. A
*match* is (commitTs, type, the row's handle-key values): rows of one transaction are told
apart by their keys, and handle-key-only messages (which carry nothing else) still match. A
message says which columns are the handle key only through the schema announced before it, so
identification follows the stream, remembering each DDL's and BOOTSTRAP's indexes. DDL,
BOOTSTRAP and WATERMARK messages are control messages: not part of the row accounting (the
stream checks judge them).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from hashlib import blake2b
from json.encoder import encode_basestring  # the C encoder json.dumps uses (ensure_ascii=False)
from operator import add, itemgetter
from typing import Any

from ...checks.delivery import Version
from ...model.events import Op, Workload
from ..kit import DIGEST_SIZE, Identified, VersionNumbers, digest, key_change_split
from . import spec
from .checks.messages import handle_key_names
from .decoder import decode, render, schema_key, table_schema_of
from .spec import SimpleOptions

_UNSEEN: Any = object()
_TYPE = {Op.INSERT: "INSERT", Op.UPDATE: "UPDATE", Op.DELETE: "DELETE"}


def topic_of(options: Mapping[str, str], topic_prefix: str) -> str:
    return topic_prefix + SimpleOptions.from_options(options).topic


def _canonical(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True, ensure_ascii=False, default=str)


def match_digest(commit_ts: Any, typ: Any, canonical: str) -> bytes:
    """A row message's match, the one definition (`expected_versions`, `identifier` and the fast
    path's `matcher` all give this): a plain text's UTF-8 bytes, the commit ts ("i" and an
    integer's digits, else "r" and its `repr`), NUL, `repr` of the type, NUL, the handle key's
    canonical text (`_canonical`); themselves where they are short (`short_match`), else their
    blake2b digest. The text is told apart part by part (the first two parts hold no NUL:
    digits, and `repr` of the JSON or decoded values that stand there, which escapes a NUL; the
    canonical text is last), and stable across processes (no `hash`): `--jobs` workers and Spark
    executors compare matches. A lone surrogate (the standard library's JSON reads one) is
    encoded as itself (`surrogatepass`), so that every text has its bytes."""
    ts = "i" + int.__repr__(commit_ts) if commit_ts.__class__ is int else "r" + repr(commit_ts)
    return short_match((ts + "\x00" + repr(typ) + "\x00" + canonical).encode("utf-8", "surrogatepass"))


#: The longest match text kept as itself (`short_match`): the usual one (a commit ts, the type, a
#: short key) fits, and costs no hashing.
SHORT_MATCH = 64


def short_match(data: bytes) -> bytes:
    """A match text's bytes as the match: themselves where at most SHORT_MATCH long and not
    DIGEST_SIZE long, else their blake2b digest (DIGEST_SIZE long: no text kept as itself is
    mistaken for a digest)."""
    if len(data) <= SHORT_MATCH and len(data) != DIGEST_SIZE:
        return data
    h = _new_hash()
    h.update(data)
    return h.digest()


#: `blake2b(digest_size=DIGEST_SIZE)` with nothing hashed yet: a copy of it is that hash, made
#: without the constructor's keyword parsing (a third of a match's cost on the fast path).
_new_hash = blake2b(digest_size=DIGEST_SIZE).copy


def matcher(names: list[str], typ: str) -> Callable[[dict[str, Any], int], bytes]:
    """`match(row, commit_ts)`: `match_digest` of a JSON DML message of type `typ` whose handle
    key is `names` (all in `row`), for the fast path's identity (fastpath.py): the canonical text
    built directly where the commit ts is an integer and every key value is a string, null, or an
    object of strings and nulls (a TIMESTAMP's {location, value}) (`_canonical`'s text:
    `json.dumps` with sorted keys at every level, ", " and ": ", no ASCII escaping), else by
    `match_digest` and `_canonical` themselves. The direct text is encoded without
    `surrogatepass`: the same bytes wherever the text has no lone surrogate (the fast parse
    refuses one), and one that has falls back to `match_digest`. Held to `match_digest` by
    tests/unit/test_fast_paths_simple.py."""
    order = sorted(set(names))
    heads = [encode_basestring(n) + ": " for n in order]
    pairs = list(zip(heads, order, strict=True))
    mid = "\x00" + repr(typ) + "\x00{"

    def match(row: dict[str, Any], commit_ts: int) -> bytes:
        parts = []
        for h, n in pairs:
            v = row[n]
            if v.__class__ is str:
                parts.append(h + encode_basestring(v))
            elif v is None:
                parts.append(h + "null")
            elif v.__class__ is dict and (text := _flat_object(v)) is not None:
                parts.append(h + text)
            else:
                break
        else:
            if commit_ts.__class__ is int:  # an int's format is its repr
                try:
                    return short_match(f"i{commit_ts}{mid}{', '.join(parts)}}}".encode())
                except UnicodeEncodeError:
                    pass
        return match_digest(commit_ts, typ, _canonical({n: row[n] for n in order}))

    if len(order) == 1:  # the usual handle key: one column whose value is a string, written at once
        (name,) = order
        mid_head = mid + heads[0]

        def match_one(row: dict[str, Any], commit_ts: int) -> bytes:
            v = row[name]
            if v.__class__ is str and commit_ts.__class__ is int:  # an int's format is its repr
                try:
                    text = f"i{commit_ts}{mid_head}{encode_basestring(v)}}}".encode()
                except UnicodeEncodeError:
                    return match(row, commit_ts)
                n = len(text)  # `short_match`, with no call where the text is the match
                return text if n <= SHORT_MATCH and n != DIGEST_SIZE else short_match(text)
            return match(row, commit_ts)

        return match_one
    if not order:
        return match

    values = itemgetter(*order)  # their values, in order, as a tuple (two names or more)
    strings = True  # False once a row's key held something else: `match` writes the rest (no raising)

    def match_many(row: dict[str, Any], commit_ts: int) -> bytes:
        nonlocal strings
        if strings and commit_ts.__class__ is int:  # every value a string: the text at once
            try:
                text = f"i{commit_ts}{mid}{', '.join(map(add, heads, map(encode_basestring, values(row))))}}}".encode()
            except TypeError:  # a value not a string (a key column of objects, a null): likely in the next rows too
                strings = False
                return match(row, commit_ts)
            except UnicodeEncodeError:  # a lone surrogate
                return match(row, commit_ts)
            n = len(text)  # `short_match`, with no call where the text is the match
            return text if n <= SHORT_MATCH and n != DIGEST_SIZE else short_match(text)
        return match(row, commit_ts)

    return match_many


def _flat_object(v: dict[str, Any]) -> str | None:
    """`_canonical`'s text of an object whose values are strings or null (its keys sorted); None
    for any other."""
    parts = []
    for k in sorted(v):
        x = v[k]
        if x.__class__ is str:
            parts.append(encode_basestring(k) + ": " + encode_basestring(x))
        elif x is None:
            parts.append(encode_basestring(k) + ": null")
        else:
            return None
    return "{" + ", ".join(parts) + "}"


def expected_versions(workload: Workload, options: Mapping[str, str], topic_prefix: str) -> Iterator[Version]:
    o = SimpleOptions.from_options(options)
    topic = topic_of(options, topic_prefix)
    numbers = VersionNumbers()
    for e in workload.transactions():
        for ch in e.changes:
            t = ch.table
            entity = digest(("t", topic, t.database, t.name))
            for op, image in key_change_split(ch):
                key = {c.name: render(spec.avro_value(c.type, image[c.name], o)) if o.avro
                       else spec.json_value(c.type, image[c.name], o) for c in t.handle_key_columns()}
                match = match_digest(e.commit_ts, _TYPE[op], _canonical(key))
                yield numbers.version(entity, match, e.commit_ts, topic)


def identifier(options: Mapping[str, str]) -> Callable[[str, bytes | None], Identified]:
    """A stateful identifier for the messages of one stream, in log (or send) order: (entity,
    match, commit ts) of a row message; None for a control message; None parts where the
    message cannot be decoded or its schema was never announced (then it counts as unexpected;
    its commit ts is still given when it has one)."""
    o = SimpleOptions.from_options(options)
    # The announced schema of each (topic, database, table, version): its handle key depends on
    # which columns a row carries (a virtual generated column is in none: handle_key_names).
    # With each, the handle key of each set of row keys met so far (it depends on nothing else).
    schemas: dict[tuple[str, str, str, int], tuple[dict[str, Any], dict[tuple[str, ...], list[str] | None]]] = {}

    def identify(topic: str, value: bytes | None) -> Identified:
        m = decode(value, o.compression, o.avro)
        if not m.ok:
            return None, None, None
        if m.kind in ("DDL", "BOOTSTRAP"):
            ts = table_schema_of(m)
            announced = schema_key(ts) if ts is not None else None
            if ts is not None and announced is not None:  # a malformed one names no table a DML could use
                schemas[(topic, *announced)] = (ts, {})
            return None
        if m.kind != "DML":
            return None
        commit_ts = m.get("commitTs")
        cts = commit_ts if isinstance(commit_ts, int) and not isinstance(commit_ts, bool) else None
        entity = digest(("t", topic, m.get("database"), m.get("table")))
        row = m.get("data") if m.type != "DELETE" else m.get("old")
        # Without its row or its handle key a message matches no version, but its commit ts still
        # places it in the partition's order (the checks without a workload judge by it).
        if not isinstance(row, dict):
            return entity, None, cts
        if m.get("handleKeyOnly") is True:
            names: list[str] | None = list(row)
        else:
            dml_key = m.dml_key
            known = schemas.get((topic, *dml_key)) if dml_key is not None else None
            if known is None:
                names = None
            else:
                cols = tuple(row)
                names = known[1].get(cols, _UNSEEN)
                if names is _UNSEEN:
                    if len(known[1]) >= 256:
                        known[1].clear()
                    names = known[1][cols] = handle_key_names(known[0], row)
        if names is None or any(n not in row for n in names):
            return entity, None, cts
        key = {n: render(row[n]) if o.avro else row[n] for n in names}
        return entity, match_digest(commit_ts, m.type, _canonical(key)), cts

    return identify
