"""MaxScale KafkaCDC's fast path takes the Kafka key it compared with the value's
`GTID:event_number` as the message's identity in its partition's log (what tells a replay) and as
its delivery match. These tests hold that shortcut to what the checks and the identifier work out
from the decoded message: the same duplicate flags, log entries and delivery identities with the
fast path on and off, over the reference's records with replays, near-replays and wrong keys
interleaved (test_fast_paths_json.py has the verdicts under every option set, the edits, the
mutants and the property)."""

from __future__ import annotations

import decimal
import gc
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fast_paths import _records, assert_parity  # type: ignore[import-not-found]

from conformance.checks import compiled
from conformance.encoders.spi import Record
from conformance.harness.capture import DeliveryLogs
from conformance.harness.check import LogCheck, capture_tally
from conformance.model.events import Gtid
from conformance.protocols import get_protocol
from conformance.protocols.kit import loads_strict
from conformance.protocols.maxscale_kafkacdc import delivery, spec
from conformance.protocols.maxscale_kafkacdc.checker import (
    DUPLICATE,
    SCHEMA_SEEN,
    dml_ident,
    entry,
    gtid_key,
    gtid_text,
)
from conformance.protocols.maxscale_kafkacdc.decoder import decode
from conformance.protocols.maxscale_kafkacdc.jsontext import parse_compact, parse_object, plain_spacing

MAXSCALE = "maxscale-kafkacdc"


def test_dml_ident_is_the_key_only_where_the_key_spells_the_values_place() -> None:
    g = Gtid(0, 1, 34)
    assert dml_ident(g, 4, b"0-1-34:4", "0-1-34:4") == b"0-1-34:4"
    # A key that says another place (or none, or is no text) keeps all three apart.
    assert dml_ident(g, 4, b"0-1-34:5", "0-1-34:5") == ("d", "0-1-34", 4, "0-1-34:5")
    assert dml_ident(g, 4, b"0-1-34", "0-1-34") == ("d", "0-1-34", 4, "0-1-34")
    assert dml_ident(g, 4, None, None) == ("d", "0-1-34", 4, None)
    assert dml_ident(None, 4, b"0-1-34:4", "0-1-34:4") == ("d", "None", 4, "0-1-34:4")
    assert dml_ident(g, None, b"0-1-34:4", "0-1-34:4") == ("d", "0-1-34", None, "0-1-34:4")
    assert dml_ident(g, 4, b"\xff", None) == ("d", "0-1-34", 4, None)


def test_the_delivery_match_is_the_conforming_key() -> None:
    """The identifier's match of every reference DML record is its key's bytes, and the versions
    the workload plans carry the same matches (the run's delivery analysis pairs them)."""
    records, _registry = _records(MAXSCALE, get_protocol(MAXSCALE).reference().name, {}, seed="match")
    identify = delivery.identifier({})
    dml = 0
    for r in records:
        got = identify(r.topic, r.key, r.value)
        m = decode(r.key, r.value)
        if m.kind == "dml":
            dml += 1
            assert got is not None and got[1] == r.key == spec.dml_key(m.gtid, m.event_number).encode("ascii")
    assert dml
    assert delivery.match(Gtid(0, 1, 34), 4) == b"0-1-34:4"


def _logs(records: list[Record], *, fast: bool) -> tuple[list[tuple[Any, ...]], dict[str, list[Any]], int]:
    """Each partition's log as the stream checks get it (kind, table, GTID, event number and type,
    duplicate flag, schema seen), the delivery entries, and how many records the fast path took."""
    suite = get_protocol(MAXSCALE)
    options = suite.resolve_options({})
    tally = capture_tally(suite, "test")
    logs = DeliveryLogs(MAXSCALE, options, None)
    with compiled.forced(fast):
        log = LogCheck(suite, options, None, tally, delivery=logs)
        accepted = 0
        for r in records:
            if log.checker.check_fast(r):
                accepted += 1
                logs.add_record(r, log.checker.identity(r))
            else:
                log.add(None, r)
        out = [(t, p, *e) for (t, p), lg in sorted(log.checker.logs.logs.items()) for e in lg.entries]
    return out, {t: list(es) for t, es in logs.entries.items()}, accepted


def _with_replays(records: list[Record], rng: random.Random) -> list[Record]:
    """The records with, now and then, a verbatim copy of an earlier one (a replay), a copy under
    a key that names another event number or another GTID (no replay: the key says another
    place), and a copy of an earlier record's value under a later record's key."""
    out: list[Record] = []
    for r in records:
        out.append(r)
        if r.key is None or rng.random() > 0.3:
            continue
        earlier = rng.choice(out)
        out.append(earlier)
        out.append(Record(r.topic, r.key + b"1", r.value, r.partition, r.headers, r.timestamp, r.offset))
        out.append(Record(r.topic, b"9" + r.key, r.value, r.partition, r.headers, r.timestamp, r.offset))
        if earlier.value is not None and earlier.topic == r.topic and earlier.partition == r.partition:
            out.append(Record(r.topic, r.key, earlier.value, r.partition, r.headers, r.timestamp, r.offset))
        out.append(r)
    return [Record(r.topic, r.key, r.value, r.partition, r.headers, r.timestamp, i) for i, r in enumerate(out)]


def test_replays_are_told_alike_on_and_off_the_fast_path() -> None:
    records, _registry = _records(MAXSCALE, get_protocol(MAXSCALE).reference().name, {}, seed="replays")
    mixed = _with_replays(records + records, random.Random("replays"))
    on, on_entries, accepted = _logs(mixed, fast=True)
    off, off_entries, none = _logs(mixed, fast=False)
    assert accepted > len(records) // 2 and none == 0
    assert sum(e[2 + DUPLICATE] for e in on) > len(records) // 2  # replays there were, and the fast path met them
    assert on == off
    assert on_entries == off_entries
    assert assert_parity(MAXSCALE, {}, None, mixed) > 0


def test_log_entries_are_left_alone_by_the_garbage_collector() -> None:
    """A partition log holds an entry per message until the stream checks run: plain tuples of
    plain values, which the collector stops walking after its first pass (a NamedTuple, or a
    tuple holding a `Gtid`, it would walk at every full collection). Entries of both paths."""
    records, _registry = _records(MAXSCALE, get_protocol(MAXSCALE).reference().name, {}, seed="untracked")
    suite = get_protocol(MAXSCALE)
    options = suite.resolve_options({})
    log = LogCheck(suite, options, None, capture_tally(suite, "test"))
    for r in records:
        log.add(None, r)
    checker: Any = log.checker  # the MaxScale checker (LogCheck types it as any protocol's)
    entries = [e for lg in checker.logs.logs.values() for e in lg.entries]
    assert len(entries) == len(records)
    assert {e[1] for e in entries} == {"schema", "dml"} and any(e[SCHEMA_SEEN] for e in entries)
    # A tuple holding a tuple made after it (its GTID's) is let go at the second pass.
    gc.collect()
    gc.collect()
    assert not [e for e in entries if e.__class__ is not tuple or gc.is_tracked(e)]
    made = entry(4, "dml", ("db", "t"), Gtid(1, 2, 3), 5, "insert", duplicate=True)
    gc.collect()
    gc.collect()
    assert not gc.is_tracked(made)


def test_gtid_keys_compare_and_read_as_gtids() -> None:
    a, b = Gtid(0, 1, 34), Gtid(0, 13, 4)
    assert gtid_key(a) == gtid_key(Gtid(0, 1, 34)) and gtid_key(a) != gtid_key(b) and gtid_key(None) is None
    assert gtid_text(gtid_key(a)) == str(a) == "0-1-34" and gtid_text(gtid_key(b)) == "0-13-4"
    assert gtid_text(None) == "None"


# -- the parse without the duplicate-key hook (jsontext.parse_object) ---------------------------------------

def _same_parse(text: str) -> None:
    """`parse_object` gives what the strict parse gives (the same keys in the same order, values of
    the same types), or refuses where it refuses (`jsontext.read` catches ValueError, which
    DuplicateKey is, and RecursionError; which refusal comes first may differ: the fast path
    hands every refused text to the checks)."""
    refused = (ValueError, RecursionError)
    try:
        want: Any = repr(loads_strict(text, parse_float=decimal.Decimal))
    except refused:
        want = "refused"
    try:
        got: Any = repr(parse_object(text))
    except refused:
        got = "refused"
    assert got == want, text
    # The fast path's parse: the same, but None for every text with a tab, CR or LF (which the
    # fast path leaves to the checks).
    try:
        compact: Any = repr(parse_compact(text))
    except refused:
        compact = "refused"
    assert plain_spacing(text) == ("\t" not in text and "\n" not in text and "\r" not in text)
    assert compact == (want if plain_spacing(text) else "None"), text


@pytest.mark.parametrize("text", [
    '{"a":1,"a":2}', '{"a":1,"b":2,"a":3}', '{"a":":","a":1}', '{"a":":x","b":":y","a":1}',
    '{"a":"\\":","a":1}', '{"a":"x\\\\","a":1}', '{"a" :1,"a":2}', '{"a":1, "a" :2}', '{"a":1,"a"\t:2}', '{"a":1,"a"\n:2}', '{"a":1,"a"\r:2}',
    '{"a":{"b":1,"b":2}}', '{"a":[{"b":1,"b":2}]}', '{"a":{},"b":[]}', '{"a":{"b":1},"c":":"}',
    '{"a":"\\u003a","a":1}', '{"\\u0061":1,"a":2}', '{"a":NaN}', '{"a":1.50}', '{"a":1e5,"b":-0.0}',
    '{"a":1} ', ' {"a":1}', '{"a":1}x', '[1,2]', '"a"', '{"a":1', '{"a":"\x01"}', '{}', '{"":1,"":2}',
    '{"a":1}\n', '{"a":1,"b":"\\"","b":2}', '{":":1,":":2}', '{"a:":1,"a:":2}', '{"a":":","b":":"}',
    # What the fast decoder (msgspec) reads otherwise, or refuses where the strict parse reads it.
    '{"a":"\\ud800"}', '{"a":"\\udc00x"}', '{"a":"\\ud83d\\ude00"}', '{"a":123456789012345678901234567890}',
    '{"a":-18446744073709551617}', '{"a":' + "9" * 4301 + '}', '{"a":1E400,"b":-0,"c":0e0,"d":-0.0}',
    '{"a":Infinity}', '{"a":-Infinity}', '{"a":+1}', '{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":"\x7f\u2028"}',
    '\ufeff{"a":1}', '{"a":[1,]}', '{"a":1,}', '{"a":"\\x"}', '{"a" : 1}', '  {"a":1}  ',
])
def test_parse_object_is_the_strict_parse(text: str) -> None:
    _same_parse(text)


def _json_texts() -> st.SearchStrategy[str]:
    """Texts near MaxScale's: compact objects over few keys (so keys repeat), strings with colons,
    quotes, backslashes, escapes and spaces, nested objects and arrays, whitespace now and then."""
    key = st.sampled_from(["a", "b", ":", "a:", " a", "\\u0061", "\\\"", "c d"]).map(lambda k: f'"{k}"')
    string = st.sampled_from(["", ":", ":x", "x:", "\\\"", "\\\":", "\\\\", "\\u003a", "\\u0022", " : ", "a b",
                              "\\t", "\\n", "\\ud800", "\\udfff:", "\\ud83d\\ude00", "\x7f"]).map(lambda s: f'"{s}"')
    scalar = st.one_of(string, st.sampled_from(["1", "-2", "1.50", "1e3", "null", "true", "NaN", "-0", "-0.0", "1E-400",
                                                "123456789012345678901234567890", "-Infinity"]))
    sep = st.sampled_from([":", ":", ":", " :", ": ", "\t:", "\n:", "\r:"])
    comma = st.sampled_from([",", ",", ",", ", ", "\n,"])

    def obj(values: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        pairs = st.lists(st.tuples(key, sep, values), max_size=5)
        return st.builds(lambda ps, c: "{" + c.join(k + s + v for k, s, v in ps) + "}", pairs, comma)

    value = st.recursive(scalar, lambda inner: st.one_of(
        obj(inner), st.lists(inner, max_size=3).map(lambda xs: "[" + ",".join(xs) + "]")), max_leaves=8)
    return st.builds(lambda o, pad: pad[0] + o + pad[1], obj(value),
                     st.sampled_from([("", ""), ("", ""), ("", ""), (" ", ""), ("", " "), ("", "\n")]))


@settings(max_examples=1500, deadline=None)
@given(_json_texts())
def test_parse_object_is_the_strict_parse_over_generated_texts(text: str) -> None:
    _same_parse(text)
