"""Debezium's compiled fast path gives the verdicts of the checks (see test_fast_paths.py, whose
helpers these use; that file also runs every in-memory Debezium mutant, on the mutant's own
options, and damaged / shuffled records).

Here: the reference's records under the option sets that change what the rules accept (time
precision, decimal and binary handling, schemas off for the key or the value, no tombstones,
transaction metadata) and with the Avro converter (kinds by registry id); the records with
edited copies placed right after their original, so that each meets its original's compiled kind
(every per-record input the generated function reads, changed one at a time, and the texts
around the payload: whitespace, trailing bytes, duplicate members); the real Debezium 3.6.3
captures, as they are and edited; a hypothesis property over generated workloads. And the
shortcuts, each held to its rule: the decoder's schema prefix route is the strict parse of the
whole text (a property over random documents and texts around them), a key's log text from the
parsed key is `key_text` of its bytes.
"""

from __future__ import annotations

import copy
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest
from helpers import encode, protocol_shape
from hypothesis import given, settings
from hypothesis import strategies as st
from test_fast_paths import _records, assert_parity, assert_reference_parity, check  # type: ignore[import-not-found]

from conformance.encoders.spi import Record
from conformance.harness.capture import parse_line
from conformance.infra.inprocess import InProcessRegistry
from conformance.protocols import get_protocol
from conformance.protocols.debezium import decoder
from conformance.protocols.debezium.checker import key_text, key_text_of
from conformance.protocols.kit import DuplicateKey, loads_strict
from conformance.strategies import workloads

DBZ = "debezium"
OPTIONS: list[dict[str, str]] = [
    {}, {"time.precision.mode": "connect"}, {"time.precision.mode": "adaptive_time_microseconds"},
    {"decimal.handling.mode": "string"}, {"decimal.handling.mode": "double"},
    {"binary.handling.mode": "base64"}, {"binary.handling.mode": "hex"},
    {"value.converter.schemas.enable": "false"}, {"key.converter.schemas.enable": "false"},
    {"key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false"},
    {"tombstones.on.delete": "false"}, {"provide.transaction.metadata": "true"},
    {"interval.handling.mode": "string", "hstore.handling.mode": "map"},
]
AVRO = {"key.converter": "io.confluent.connect.avro.AvroConverter",
        "value.converter": "io.confluent.connect.avro.AvroConverter",
        "field.name.adjustment.mode": "avro_unicode", "schema.name.adjustment.mode": "avro_unicode"}


def _name(o: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in o.items()) or "defaults"


@pytest.mark.parametrize("options", OPTIONS, ids=_name)
def test_debezium_fast_path_keeps_verdicts_under_each_option_set(options: dict[str, str]) -> None:
    assert_reference_parity(DBZ, options)


@pytest.mark.parametrize("options", [AVRO, {**AVRO, "key.converter": "org.apache.kafka.connect.json.JsonConverter"},
                                     {**AVRO, "value.converter": "org.apache.kafka.connect.json.JsonConverter"},
                                     {**AVRO, "time.precision.mode": "connect", "decimal.handling.mode": "string"},
                                     {**AVRO, "provide.transaction.metadata": "true"}], ids=_name)
def test_debezium_fast_path_keeps_verdicts_with_the_avro_converter(options: dict[str, str]) -> None:
    """With the Avro converter (both parts, or one), kinds are the parts' registry ids: the
    reference's records keep their verdicts, and the fast path takes records."""
    assert_reference_parity(DBZ, options)


# -- edited copies, each right after its original --------------------------------------------------

_VALUES: list[Any] = [None, "", "x", "__debezium_unavailable_value", 0, -1, 1.5, True, 2 ** 15, 2 ** 31, 2 ** 63,
                      86_400_000_001, "AA==", "not base64!", "/////////////////w==", "00000000-0000-0000-0000-00000000000",
                      "false", "NaN", "{", {}, [], [1], {"a": 1}]


def _split(text: str) -> tuple[str, Any] | None:
    """A value text as its `{"schema":…,"payload":` prefix (or "" with schemas off) and payload."""
    doc = json.loads(text)
    if isinstance(doc, dict) and list(doc) == ["schema", "payload"]:
        i = text.find(',"payload":')
        if i < 0:
            return None
        return text[:i + len(',"payload":')], doc["payload"]
    return "", doc


def _dump(v: Any) -> str:
    return json.dumps(v, ensure_ascii=False, separators=(",", ":"))


def _edits(text: str, rng: random.Random) -> list[str]:
    """Copies of a change event's text with one per-record input changed: timestamps, source
    fields, the transaction block, a column's value, the op, an extra member; and the text around
    the payload (whitespace, trailing bytes, duplicate members, a bare NaN)."""
    got = _split(text)
    if got is None:
        return []
    prefix, e = got
    if not isinstance(e, dict) or not isinstance(e.get("source"), dict) or e.get("op") not in ("c", "u", "d", "r"):
        return []

    def edited(change: Any) -> str:
        p = copy.deepcopy(e)
        change(p)
        return prefix + _dump(p) + ("}" if prefix else "")

    def put(*path: str, value: Any) -> Any:
        def change(p: Any) -> None:
            for k in path[:-1]:
                p = p[k]
            if value is KeyError:
                p.pop(path[-1], None)
            else:
                p[path[-1]] = value
        return change

    out = [edited(lambda p: None)]  # a good copy
    ms = e.get("ts_ms") if isinstance(e.get("ts_ms"), int) else 0
    for where in ((), ("source",)):
        out += [edited(put(*where, "ts_us", value=ms * 1000 + 1000)), edited(put(*where, "ts_ms", value=str(ms))),
                edited(put(*where, "ts_ms", value=True)), edited(put(*where, "ts_ns", value=ms * 10 ** 6 - 1)),
                edited(put(*where, "ts_ns", value=KeyError)), edited(put(*where, "ts_ms", value=1.0)),
                edited(put(*where, "ts_ms", value=None))]
    for name, value in (("connector", "mysql"), ("name", "other"), ("snapshot", "true"), ("snapshot", "false"),
                        ("snapshot", None), ("snapshot", "last"), ("snapshot", 1), ("txId", "5"), ("txId", None),
                        ("lsn", KeyError), ("db", KeyError), ("db", 1), ("schema", "other"), ("table", "other"),
                        ("table", None), ("version", 3), ("xmin", True), ("sequence", ["1"]), ("origin", "o")):
        out.append(edited(put("source", name, value=value)))
    block = e.get("transaction")
    if isinstance(block, dict):
        out += [edited(put("transaction", "id", value="1:2")), edited(put("transaction", "id", value=None)),
                edited(put("transaction", value=None))]
    else:
        src = e["source"]
        out.append(edited(put("transaction", value={"id": f"{src.get('txId')}:{src.get('lsn')}", "total_order": 1,
                                                    "data_collection_order": 1})))
    for part in ("after", "before"):
        row = e.get(part)
        if not isinstance(row, dict) or not row:
            continue
        out += [edited(put(part, value=dict(reversed(row.items())))), edited(put(part, value=list(row)))]
        for name in rng.sample(sorted(row), min(3, len(row))):
            for v in rng.sample(_VALUES, 6):
                out.append(edited(put(part, name, value=v)))
            if isinstance(row[name], str) and row[name]:
                out += [edited(put(part, name, value=row[name][:-1])), edited(put(part, name, value=row[name] + "="))]
            if isinstance(row[name], int) and not isinstance(row[name], bool):
                out += [edited(put(part, name, value=row[name] + 1)), edited(put(part, name, value=-row[name] - 1))]
    out += [edited(put("op", value={"c": "r", "r": "c", "u": "c", "d": "u"}[e["op"]])),
            edited(put("extra", value=1)), edited(put("ts_ms", value=KeyError))]
    good = out[0]
    body = good[len(prefix):]
    out += [good + " ", good + "\n", good + " \t\r\n", good[:-1] + " }", good + "x", good + "}", good[:-1],
            prefix + " " + body, prefix + "\n" + body, " " + good, good[:-1] + ',"payload":null}',
            good[:-1] + ',"schema":null}', good[:-1] + ',"x":1}']
    if prefix:
        out += [prefix + body.replace('{', '{"op":"c",', 1), prefix + '{"after":NaN,' + body[1:],
                prefix[:-2] + 'x":' + body, prefix.replace('"payload"', '"payloa\\u0064"') + body]
    return out


def _key_edits(r: Record) -> list[bytes]:
    """Copies of a key with a field's value changed (no longer the row's), or the field renamed."""
    if r.key is None:
        return []
    got = _split(r.key.decode("utf-8"))
    if got is None or not isinstance(got[1], dict) or not got[1]:
        return []
    prefix, k = got
    name = sorted(k)[0]
    out = []
    for v in (None, "x", 1, k[name]):
        out.append(prefix + _dump({**k, name: v}) + ("}" if prefix else ""))
    out.append(prefix + _dump({**k, name + "_": k[name]}) + ("}" if prefix else ""))
    return [t.encode("utf-8") for t in out]


def _with_edits(records: list[Record], rng: random.Random, per_topic: int | None = None) -> list[Record]:
    """The records, each followed by its edited copies (only the first `per_topic` change events of
    each topic, if given, the others as they are)."""
    out: list[Record] = []
    edited: dict[str, int] = {}
    for r in records:
        out.append(r)
        if r.value is None:
            continue
        edited[r.topic] = edited.get(r.topic, 0) + 1
        if per_topic is not None and (edited[r.topic] > per_topic or len(r.value) > 20_000):
            continue  # (the TOASTed captures' values are large: copies of their small ones are enough)
        for text in _edits(r.value.decode("utf-8"), rng):
            out.append(Record(r.topic, r.key, text.encode("utf-8"), r.partition, r.headers, r.timestamp, r.offset))
        for key in _key_edits(r):
            out.append(Record(r.topic, key, r.value, r.partition, r.headers, r.timestamp, r.offset))
            out.append(Record(r.topic, key, None, r.partition, r.headers, r.timestamp, r.offset))  # its tombstone
    return out


@pytest.mark.parametrize(("options", "seed"), [
    ({}, "edits"), ({}, "edits2"), ({"provide.transaction.metadata": "true"}, "edits"),
    ({"value.converter.schemas.enable": "false", "key.converter.schemas.enable": "false"}, "edits"),
    ({"time.precision.mode": "connect", "decimal.handling.mode": "double", "binary.handling.mode": "hex"}, "edits")],
    ids=["defaults", "defaults-2", "transactions", "schemas-off", "connect-double-hex"])
def test_debezium_fast_path_keeps_verdicts_over_edited_records(options: dict[str, str], seed: str) -> None:
    """Each edited copy follows its original, so it meets the original's compiled kind."""
    records, registry = _records(DBZ, get_protocol(DBZ).reference().name, options, seed=seed)
    rng = random.Random(f"{seed}{sorted(options.items())}")
    edited = _with_edits(records, rng)
    assert len(edited) > 3 * len(records)
    assert assert_parity(DBZ, options, registry, edited)


def _avro_edits(raw: bytes, registry: Any) -> list[bytes]:
    """Copies of an Avro-framed change event with one per-record input of its datum changed (as
    `_edits` changes a JSON one), written again with the same registry id: timestamps, source
    fields, the op, each column's value (an int16/int8 beyond its Connect range but inside Avro's
    int, an empty string, a zero), and trailing bytes after the body."""
    import io

    import fastavro

    sid = int.from_bytes(raw[1:5], "big", signed=True)
    schema = fastavro.parse_schema(decoder._without_logical(json.loads(registry.schema_by_id(sid))),
                                   _ignore_default_error=True)
    e = fastavro.schemaless_reader(io.BytesIO(raw[5:]), schema, None)
    if not isinstance(e, dict) or not isinstance(e.get("source"), dict):
        return []

    def framed(change: Any) -> bytes | None:
        p = copy.deepcopy(e)
        change(p)
        buf = io.BytesIO()
        try:
            fastavro.schemaless_writer(buf, schema, p)
        except Exception:  # noqa: BLE001 - a value the schema cannot hold: no copy
            return None
        return raw[:5] + buf.getvalue()

    def put(*path_value: Any) -> Any:
        *path, value = path_value

        def change(p: Any) -> None:
            for k in path[:-1]:
                p = p[k]
            p[path[-1]] = value
        return change

    changes = [lambda p: None, put("ts_ms", (e.get("ts_ms") or 0) + 1), put("op", "u"), put("op", "d"),
               put("op", "x"), put("source", "snapshot", "true"), put("source", "connector", "mysql"),
               put("source", "name", "other"), put("source", "table", "other"), put("source", "ts_ms", None)]
    row = e.get("after") if isinstance(e.get("after"), dict) else e.get("before")
    part = "after" if isinstance(e.get("after"), dict) else "before"
    for col, v in (row or {}).items():
        for x in ((2 ** 15, -(2 ** 15) - 1, 128, 0) if isinstance(v, int) and not isinstance(v, bool)
                  else ("", "x", "__debezium_unavailable_value") if isinstance(v, str) else (None,)):
            changes.append(put(part, col, x))
    out = [got for got in map(framed, changes) if got is not None]
    return [*out, raw + b"\x00"]


@pytest.mark.parametrize("seed", ["edits2", "fast"])
def test_debezium_fast_path_keeps_verdicts_over_edited_avro_records(seed: str) -> None:
    """With the Avro converter: each change event followed by copies of it with one datum field
    changed (written with the same schema id, so each meets the original's compiled kind). The
    copies fail the checks the generated function stands in for (the seeds' tables have columns
    whose Connect types are narrower than their Avro types), on both paths alike."""
    records, registry = _records(DBZ, get_protocol(DBZ).reference().name, AVRO, seed=seed)
    out: list[Record] = []
    for r in records:
        out.append(r)
        if r.value is not None and r.value[:1] == b"\x00":
            out += [Record(r.topic, r.key, v, r.partition, r.headers, r.timestamp, r.offset)
                    for v in _avro_edits(r.value, registry)]
    assert len(out) > 3 * len(records)
    assert assert_parity(DBZ, AVRO, registry, out)
    tally, _entries, _accepted = check(DBZ, AVRO, registry, out, fast=True)
    failed = {t["check"] for t in tally if t["counts"]["failed"]}
    assert {f"{DBZ}.{c}" for c in ("value.schema-conforms", "key.fields", "avro.framing", "source.postgresql",
                                   "envelope.timestamps", "topic.name")} <= failed


@pytest.mark.parametrize("options", [AVRO, {**AVRO, "decimal.handling.mode": "double", "binary.handling.mode": "bytes"},
                                     {**AVRO, "time.precision.mode": "connect"}], ids=_name)
def test_the_datum_converter_is_from_avro_datum(options: dict[str, str]) -> None:
    """`datum_converter(s)` gives what `from_avro_datum(s, ·)` gives, keys in the same order (`repr`),
    on every part the reference wrote and on copies of each datum with one field's value replaced
    (a non-finite float, bytes, another container, None…) that fastavro writes and reads back with
    the schema: datums as the decoder meets them."""
    import io
    import math

    import fastavro

    from conformance.protocols.debezium import connect_avro

    records, registry = _records(DBZ, get_protocol(DBZ).reference().name, options, seed="fast")
    resolver = decoder.SchemaResolver(registry)
    odd: list[Any] = [None, math.nan, -math.inf, 1.5, b"\x00\xff", "s", 7, [], [b"x", math.inf], {}, {"a": b"y"}]
    compared = 0
    for r in records:
        for raw in (r.key, r.value):
            if raw is None:
                continue
            view = resolver.view(int.from_bytes(raw[1:5], "big", signed=True))
            assert not isinstance(view, str) and view.connect is not None
            datum = fastavro.schemaless_reader(io.BytesIO(raw[5:]), view.parsed, None)
            variants = [datum]
            for k in datum if isinstance(datum, dict) else ():
                variants += [{**datum, k: x} for x in odd]
                inner = datum[k]
                if isinstance(inner, dict):
                    variants += [{**datum, k: {**inner, n: x}} for n in inner for x in odd]
            convert = connect_avro.datum_converter(view.connect)
            for d in variants:
                buf = io.BytesIO()
                try:
                    fastavro.schemaless_writer(buf, view.parsed, d)
                except Exception:  # noqa: BLE001 - a value the schema cannot hold: not a datum
                    continue
                d = fastavro.schemaless_reader(io.BytesIO(buf.getvalue()), view.parsed, None)
                want = connect_avro.from_avro_datum(view.connect, copy.deepcopy(d))
                assert repr(convert(copy.deepcopy(d))) == repr(want)
                compared += 1
    assert compared > 300


# -- real Debezium ----------------------------------------------------------------------------------

REAL = Path(__file__).parent.parent / "fixtures" / "debezium" / "real-3.6.3"
CAPTURES = sorted(p.name[: -len(".records.jsonl")] for p in REAL.glob("*.records.jsonl"))


def _real(name: str) -> tuple[list[Record], dict[str, str]]:
    recs = [parse_line(line) for line in (REAL / f"{name}.records.jsonl").read_text(encoding="utf-8").splitlines()]
    if not recs:
        return [], {}  # Debezium wrote nothing (a configuration it refuses)
    props = {}
    for line in (REAL / f"{name}.properties").read_text(encoding="utf-8").splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            props[k.strip()] = v.strip()
    return recs, dict(get_protocol(DBZ).connector_options(props).options)


@pytest.mark.parametrize("name", CAPTURES)
def test_debezium_fast_path_keeps_verdicts_over_real_captures(name: str) -> None:
    """A real capture twice (the second time its kinds are compiled), and with edited copies of
    the first two change events of each topic (after the capture once: their kinds compiled)."""
    recs, options = _real(name)
    if not recs:
        pytest.skip(f"{name}: Debezium wrote nothing")
    accepted = assert_parity(DBZ, options, None, recs + recs)
    assert_parity(DBZ, options, None, recs + _with_edits(recs, random.Random(name), per_topic=2))
    # Every capture with change events has some the fast path takes (its kinds compile).
    assert accepted or not any(r.value is not None and b'"op":"' in r.value for r in recs)


# -- generated workloads ----------------------------------------------------------------------------

@settings(max_examples=20, deadline=None)
@given(workloads(protocol_shape(DBZ)), st.sampled_from([{}, {"provide.transaction.metadata": "true"},
                                                          {"value.converter.schemas.enable": "false"},
                                                          {"time.precision.mode": "connect",
                                                           "decimal.handling.mode": "string"}]))
def test_debezium_fast_path_keeps_verdicts_over_generated_workloads(w: Any, options: dict[str, str]) -> None:
    registry = InProcessRegistry()
    records = encode(get_protocol(DBZ).reference().name, options, w, protocol=DBZ, registry=registry,
                     topic_prefix="hc0w0-")
    # Twice: the second time every kind is compiled.
    assert_parity(DBZ, options, registry, records + records)


# -- the schema prefix route is the strict parse ------------------------------------------------------

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 70), 2 ** 70) | st.floats(allow_nan=False)
    | st.text(max_size=8) | st.sampled_from([",\"payload\":", "payload", "}", "\"schema\""]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "payload", "schema", "é", ""]) |
                                                        st.text(max_size=4), c, max_size=3),
    max_leaves=12)


def _variants(prefix: str, other: str) -> list[str]:
    """Texts that start (or nearly start) with a remembered prefix."""
    out = [prefix + other + "}", prefix + other + " }\n", prefix + other + "}" + " \t\r\n", prefix + other + "}x",
           prefix + other + "}}", prefix + other, prefix + other + ",}", prefix + " " + other + "}",
           prefix + other + ',"payload":1}', prefix + other + ',"schema":1}', prefix + other + ',"x":1}',
           prefix + "NaN}", prefix + "[-Infinity,1]}", prefix + '{"a":Infinity}}', prefix + other[:-1] + "}",
           prefix[:-2] + 'X":' + other + "}", prefix + other + "}\x00", prefix + other + "}\u00a0",
           prefix + "\u2028" + other + "}", prefix + other + "\f}"]
    if other.startswith("{") and other != "{}":
        out.append(prefix + '{"a":1,' + other[1:] + "}")  # a duplicate where `other` has "a"
        out.append(prefix + other[:-1] + ',"a":2}' + "}")
        out.append(prefix + '{"a":1,"a":1}}')
    return out


def _same(quick: decoder.Part, full: decoder.Part) -> None:
    assert (quick.error, quick.bare_constant, quick.enveloped) == (full.error, full.bare_constant, full.enveloped)
    assert repr(quick.doc) == repr(full.doc)
    assert repr(quick.schema) == repr(full.schema) and repr(quick.payload) == repr(full.payload)


@settings(max_examples=600, deadline=None)
@given(_JSON, _JSON, _JSON, st.booleans(), st.sampled_from(["", " ", "NaN", "[NaN]"]))
def test_the_schema_prefix_route_is_the_strict_parse(schema: Any, payload: Any, other: Any, schemas: bool,
                                                     bare: str) -> None:
    decoder.decode_part.cache_clear()
    s_text = _dump(schema) if bare in ("", " ") else bare  # a schema of a bare constant: remembered as such
    # With a space before the comma: not a prefix to remember.
    first = '{"schema":' + s_text + bare.replace("NaN", "").replace("[]", "") + ',"payload":' + _dump(payload) + "}"
    _same(decoder.decode_part(first.encode(), schemas, True), decoder.decode_part(first.encode(), schemas, False))
    prefix = first[:first.find(',"payload":') + len(',"payload":')]
    took = False
    for text in _variants(prefix, _dump(other)):
        raw = text.encode("utf-8")
        quick = decoder.decode_part(raw, schemas, True)
        full = decoder.decode_part(raw, schemas, False)
        _same(quick, full)
        took |= decoder._quick(text) is not None
    if bare != " " and ',"payload":' not in s_text:
        assert took, "the prefix route was never taken: the test exercised nothing"


@settings(max_examples=300, deadline=None)
@given(_JSON, _JSON, st.sampled_from(["{}", '{"schema":1,"payload":2}', '{"payload":2,"schema":1}']))
def test_a_keys_log_text_from_its_parse_is_key_text(schema: Any, payload: Any, shape: str) -> None:
    for text in ('{"schema":' + _dump(schema) + ',"payload":' + _dump(payload) + "}", _dump(payload), shape,
                 '{"schema":' + _dump(schema) + "}", "NaN", '{"schema":1,"payload":NaN}'):
        raw = text.encode()
        for quick in (False, True):
            p = decoder.decode_part(raw, True, quick)
            if p.ok:
                assert key_text_of(p) == key_text(raw)
    assert key_text_of(decoder.decode_part(None, True, True)) == key_text(None) is None


def test_the_prefix_route_shares_the_schema_and_keeps_no_more_than_its_bound() -> None:
    decoder.decode_part.cache_clear()
    a = b'{"schema":{"type":"struct","fields":[]},"payload":{"x":1}}'
    b = b'{"schema":{"type":"struct","fields":[]},"payload":{"x":2}}'
    pa, pb = decoder.decode_part(a, True, True), decoder.decode_part(b, True, True)
    assert pa.schema is pb.schema and pb.payload == {"x": 2} and pa.shared and pb.shared
    # A schema the memo cannot keep (whitespace before the comma): each part its own, not shared,
    # so that the checker compiles no kind for it (it would never recur).
    pc = decoder.decode_part(b'{"schema":{"type":"struct","fields":[]} ,"payload":{"x":1}}', True, True)
    assert pc.ok and not pc.shared and not decoder.decode_part(a, True, False).shared
    with pytest.raises(DuplicateKey):
        loads_strict('{"a":1,"a":2}')
    assert decoder.decode_part(b'{"schema":{"type":"struct","fields":[]},"payload":{"x":2,"x":3}}', True,
                               True).error == "duplicate JSON member 'x'"
    assert math.isnan(decoder.decode_part(b'{"schema":{"type":"struct","fields":[]},"payload":NaN}', True,
                                          True).payload)
