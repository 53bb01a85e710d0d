"""TiCDC Avro's compiled fast path: the shortcuts added for issue 32's second round, each held to
the rule it stands for (see test_fast_paths.py, which holds the whole fast path to the checks over
the reference, every in-memory mutant, damaged records and generated workloads).

* Variants (`checks.compiled.Seen`): a check that passes on some records of a kind and has
  nothing to judge on others (a null decimal) keeps them on the fast path, counted under the
  variant's outcomes.
* `quick_float32_text`: a vector element of 7 to 9 significant digits, or of a subnormal or huge
  float32, recognised as Go's shortest float32 text without the rule's search
  (`model.values.parse_vector`), on every float32's own
  text (which it must mostly take) and on texts one rounding too long or too short, or cut, near
  those (which it must only take where the rule does).
"""

from __future__ import annotations

import io
import json
import random
import struct
from typing import Any

import fastavro
from helpers import float32_texts_near
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.model.values import go_format_float, parse_vector, quick_float32_text, quick_float_text
from conformance.protocols.ticdc_avro.checks.types import quick_vector


def _rule_accepts(element: str) -> bool:
    try:
        parse_vector(f"[{element}]")
    except ValueError:
        return False
    return True


def _float32s() -> st.SearchStrategy[float]:
    """Any finite float32, its bits drawn whole (every exponent alike), or near a power of ten
    or two (where the shortest digits change length and the rounding interval is lopsided)."""
    bits = st.integers(0, 2**32 - 1).map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])
    powers = st.builds(lambda base, e, step: struct.unpack("<f", struct.pack(
        "<I", max(0, min(0x7F7FFFFF, struct.unpack("<I", struct.pack("<f", float(base) ** e))[0] + step))))[0],
        st.sampled_from([2, 10]), st.integers(-30, 30), st.integers(-3, 3))
    return st.one_of(bits, powers).filter(lambda x: x == x and abs(x) != float("inf"))


def _near(x: float) -> list[str]:
    return float32_texts_near(x)


@settings(max_examples=3000)
@given(_float32s())
@example(1.0000001)
@example(8388608.0)
@example(1e-30)
def test_quick_float32_texts_are_a_subset_of_what_the_rule_accepts(x: float) -> None:
    for text in _near(x) + ["-" + t for t in _near(x) if not t.startswith("-")]:
        if quick_float32_text(text):
            assert _rule_accepts(text), text


@settings(max_examples=1000)
@given(_float32s())
def test_quick_float32_texts_take_all_the_old_quick_texts(x: float) -> None:
    for t in _near(x):
        if quick_float_text(t):
            assert quick_float32_text(t), t


def test_quick_float32_texts_take_nearly_every_float32s_own_text() -> None:
    """Only ties (a shorter decimal exactly halfway to a neighbour) go to the rule."""
    rng = random.Random(32)
    floats = (struct.unpack("<f", struct.pack("<I", rng.getrandbits(32)))[0] for _ in range(20_000))
    texts = [go_format_float(x, 32, "f") for x in floats if x == x and x not in (0.0, float("inf"), float("-inf"))]
    taken = sum(map(quick_float32_text, texts))
    assert taken >= 0.99 * len(texts), (taken, len(texts))  # large integers at ties go to the rule


def test_quick_vectors_with_long_elements() -> None:
    assert quick_vector("[0.6919731,-0.05517707,0.037649807,1]")
    assert quick_vector("[0.1234567]")
    # Not Go's shortest text: a shorter one reads back as the same float32, or the digits are not
    # the closest to it, or 10 digits: all to the rule, which refuses them.
    for text in ("[0.100000001]", "[0.69197311]", "[0.1234567891]", "[1.0000000]"):
        assert not quick_vector(text) and not _rule_accepts(text[1:-1]), text
    assert not quick_vector("[-0]") and not quick_vector("[1e5]") and not quick_vector("[ 1]")


def test_quick_vector_elements_beyond_float32_or_reading_back_as_zero_go_to_the_rule() -> None:
    for text in ("1" + "0" * 39, "-4" + "0" * 38, "0." + "0" * 50 + "1", "340282360000000000000000000000000000000"):
        assert not quick_float32_text(text) and not _rule_accepts(text), text
    # Subnormal and huge float32s are taken where their text is the rule's.
    for text in ("0." + "0" * 44 + "1", "-0." + "0" * 44 + "3", "0.00000000000000000000000000000000000025964426",
                 "-3029916000000000000000000000000000000"):
        assert quick_float32_text(text) and _rule_accepts(text), text


def _times() -> st.SearchStrategy[str]:
    """TIME texts near the quick pattern's edges, negative or not."""
    part = st.sampled_from(["0", "00", "000", "01", "09", "12", "23", "24", "59", "60", "99", "799", "837", "838",
                            "839", "900"])
    return st.builds(lambda neg, h, m, s, f: f"{neg}{h}:{m}:{s}{f}", st.sampled_from(["", "-", "--", "+"]), part,
                     part, part, st.sampled_from(["", ".", ".0", ".000000", ".5", ".000001", ".1234567"]))


@settings(max_examples=3000)
@given(_times())
@example("-00:00:00")
@example("-00:00:00.000000")
@example("-000:00:00.0")
@example("-837:59:59.999999")
def test_quick_time_texts_are_a_subset_of_what_the_rule_accepts(text: str) -> None:
    from conformance.protocols.ticdc_avro.checks.types import QUICK_TEXT, _temporal_problem

    if QUICK_TEXT["time"].fullmatch(text):
        assert _temporal_problem("time", text) is None, text


def test_quick_time_texts_take_negative_times() -> None:
    from conformance.protocols.ticdc_avro.checks.types import QUICK_TEXT

    assert QUICK_TEXT["time"].fullmatch("-12:34:56.5") and QUICK_TEXT["time"].fullmatch("-00:00:00.000001")
    assert not QUICK_TEXT["time"].fullmatch("-00:00:00") and not QUICK_TEXT["time"].fullmatch("-00:00:00.000")


_DATA = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([2**63, -(2**63)]),
                  st.floats(allow_nan=True), st.sampled_from([0.0, -0.0, 1.0]), st.text(max_size=3),
                  st.binary(max_size=3), st.sampled_from(["1", b"1", "", b""]))


@settings(max_examples=3000)
@given(_DATA, _DATA)
def test_inline_same_datum_is_same_datum(a: object, b: object) -> None:
    from conformance.checks.compiled import Source
    from conformance.protocols.ticdc_avro.checks.types import emit_same_datum, same_datum

    src = Source("same", ("a", "b"))
    emit_same_datum(src, "a", "b")
    src.line("return True")
    assert (src.build()(a, b) is True) == same_datum(a, b), (a, b)


@settings(max_examples=300)
@given(st.lists(st.integers(0, 2**64), min_size=1, max_size=30), st.randoms())
def test_the_shared_version_memo_answers_as_identify(stamps: list[int], rnd: random.Random) -> None:
    """Every kind's function keeps (match, ts) per commit ts in one memo: each answer is what
    `identify` says of its own ts, whichever kind filled the memo, for ts one apart or of one
    physical millisecond."""
    from conformance.checks.compiled import Source
    from conformance.protocols.kit import digest
    from conformance.protocols.ticdc_avro.delivery import emit_version
    from conformance.protocols.ticdc_avro.spec import AvroOptions

    o = AvroOptions.from_options({"enable-tidb-extension": "true"})
    fns = []
    for names in (["a"], ["b", "c"]):
        src = Source("version", ("kd", "vd"))
        src.line(f"return {emit_version(src, o, names)}")
        fns.append(src.build())
    stamps = [t for s in stamps for t in (s, s + 1, s ^ 1, (s >> 18 << 18) | rnd.getrandbits(18))]
    for ts in stamps:
        assert rnd.choice(fns)(None, {"_tidb_commit_ts": ts}) == (digest(("v", ts)), ts)


def _nulled_decimals(records: list[Any], registry: Any) -> list[Any]:
    """For each row value with a non-null precise decimal in a nullable field: a copy with every
    such decimal null, re-encoded under the same schema id (the same kind)."""
    from conformance.encoders.spi import Record
    from conformance.protocols.ticdc_avro.encoder import strip_logical_types

    out = []
    for r in records:
        if r.value is None or len(r.value) < 5 or r.value[0] != 0:
            continue
        text = registry.schema_by_id(int.from_bytes(r.value[1:5], "big"))
        schema = json.loads(text)
        fields = [f["name"] for f in schema.get("fields", ())
                  if isinstance(f["type"], list) and "null" in f["type"]
                  and any(isinstance(t, dict) and t.get("logicalType") == "decimal" for t in f["type"])]
        if not fields:
            continue
        parsed = fastavro.parse_schema(strip_logical_types(schema), _ignore_default_error=True)
        datum = fastavro.schemaless_reader(io.BytesIO(r.value[5:]), parsed, None)
        if all(datum.get(f) is None for f in fields):
            continue
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {**datum, **dict.fromkeys(fields)})
        out.append(Record(r.topic, r.key, r.value[:5] + buf.getvalue(), r.partition, r.headers, r.timestamp,
                          r.offset))
    return out


def test_a_kind_whose_decimals_are_null_on_some_rows_stays_on_the_fast_path() -> None:
    """`type.decimal-minimal-bytes` passes where a row has a decimal to judge and has nothing to
    judge where every decimal is null: a kind compiled from a row with one meets rows without,
    and counts them under that variant's outcomes (not as passes, and not through the checks)."""
    from test_fast_paths import _records, assert_parity  # type: ignore[import-not-found]

    from conformance.protocols import get_protocol

    options = {"enable-tidb-extension": "true"}
    edited = 0
    for seed in ("s5", "s22", "s29"):  # seeds whose workloads have nullable DECIMAL columns
        records, registry = _records("ticdc-avro", get_protocol("ticdc-avro").reference().name, options, seed=seed)
        nulled = _nulled_decimals(records, registry)
        before = assert_parity("ticdc-avro", options, registry, records)
        after = assert_parity("ticdc-avro", options, registry, records + nulled)
        assert after - before == len(nulled)  # every copy accepted: its kind compiled from its original
        edited += len(nulled)
    assert edited, "no row had a nullable decimal: the test exercised nothing"


_key_values = (st.none() | st.booleans() | st.integers() | st.text(max_size=6) | st.binary(max_size=6)
               | st.floats(allow_nan=False) | st.decimals(allow_nan=False, allow_infinity=False))


@settings(max_examples=500)
@given(st.text(max_size=8), st.dictionaries(st.text(max_size=5), _key_values, max_size=4))
@example("t", {})
@example("t{x}", {"a{b}": "c}", "'": b"\"{"})
@example("t'\"é\ud800", {"k": "\ud800é"})
def test_the_generated_entity_is_identifys_digest(topic: str, kd: dict[str, object]) -> None:
    """The entity function writes the frozen key's repr directly: the same digest as `identify`'s
    `digest(("e", topic, freeze(kd)))`, whatever the names and values (braces, quotes, one name
    or none)."""
    from conformance.protocols.kit import digest
    from conformance.protocols.ticdc_avro.delivery import entity_function, entity_prefix
    from conformance.protocols.ticdc_avro.evidence import freeze

    assert entity_function(list(kd))(entity_prefix(topic), kd) == digest(("e", topic, freeze(kd)))


# -- fastavro's reader called with its named types and options made once per kind -----------------

_NAMED = {"type": "record", "name": "r", "namespace": "ns", "fields": [
    {"name": "a", "type": {"type": "fixed", "name": "f2", "size": 2}},
    {"name": "b", "type": ["null", "ns.f2"]},  # the named type again, by name
    {"name": "c", "type": {"type": "enum", "name": "e", "symbols": ["x", "y"]}},
    {"name": "d", "type": ["null", "e"]},
    {"name": "s", "type": ["null", "string"]},
    {"name": "n", "type": "long"},
]}


def _bodies(rnd: random.Random) -> list[bytes]:
    """Framed bodies of `_NAMED`: well formed, cut short, with bytes left over, garbage, and a
    string that is not UTF-8."""
    parsed = fastavro.parse_schema(_NAMED)
    out = []
    for _ in range(40):
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, {
            "a": rnd.randbytes(2), "b": rnd.choice([None, rnd.randbytes(2)]), "c": rnd.choice("xy"),
            "d": rnd.choice([None, "x", "y"]), "s": rnd.choice([None, "", "é", "abc"]), "n": rnd.randint(-2**63, 2**63 - 1)})
        body = b"\x00\x00\x00\x00\x07" + buf.getvalue()
        out += [body, body[:-1], body + b"\x00", body[:5] + rnd.randbytes(len(body) - 5)]
    # "s" = the two bytes ff fe (not UTF-8): strict decoding refuses them.
    bad = io.BytesIO()
    fastavro.schemaless_writer(bad, parsed, {"a": b"ab", "b": None, "c": "x", "d": None, "s": "zz", "n": 1})
    out.append(b"\x00\x00\x00\x00\x07" + bad.getvalue().replace(b"\x04zz", b"\x04\xff\xfe"))
    return out


def test_the_direct_reader_decodes_as_schemaless_reader() -> None:
    """`fastpath.decode` with `named_schemas` answers as with fastavro's public reader on every
    body (decoded, refused, bytes left over), named types referred to by name included, and
    leaves the named types as they were."""
    from conformance.protocols.ticdc_avro import fastpath

    assert fastpath._DIRECT, "the compiled reader is not in use: the test would exercise nothing"
    schema = fastavro.parse_schema(json.loads(json.dumps(_NAMED)))
    named = fastpath.named_schemas(schema)
    assert named is not None and set(named["writer"]) >= {"ns.r", "ns.f2", "ns.e"}
    before = repr(named)
    bodies = _bodies(random.Random(7))
    answers = [fastpath.decode(b, schema, named) for b in bodies]
    assert answers == [fastpath.decode(b, schema) for b in bodies]
    assert any(a is not None for a in answers) and any(a is None for a in answers)
    assert answers[-1] is None  # not UTF-8
    assert repr(named) == before


def test_the_direct_reader_decodes_the_reference_as_the_checks_do() -> None:
    """Every key and value of the reference's records (and each cut short by a byte or with a
    byte more): `fastpath.decode` with the kind's named types gives the datum
    `decoder.decode_framed` gives (None where it finds a fault)."""
    from test_fast_paths import _records  # type: ignore[import-not-found]

    from conformance.protocols import get_protocol
    from conformance.protocols.ticdc_avro import fastpath
    from conformance.protocols.ticdc_avro.decoder import SchemaResolver, decode_framed

    records, registry = _records("ticdc-avro", get_protocol("ticdc-avro").reference().name,
                                 {"enable-tidb-extension": "true"})
    resolver = SchemaResolver(registry)
    checked = 0
    for r in records:
        for raw in (r.key, r.value):
            if raw is None or len(raw) < 5:
                continue
            for body in (raw, raw[:-1], raw + b"\x01"):
                d = decode_framed(body, resolver)
                if d.view is None or d.view.parsed is None:
                    continue
                named = fastpath.named_schemas(d.view.parsed)
                assert named is not None
                want = d.datum if d.error_kind is None else None
                assert fastpath.decode(body, d.view.parsed, named) == want, body
                checked += 1
    assert checked > 100


def test_named_schemas_leaves_unparsed_schemas_to_the_public_reader() -> None:
    from conformance.protocols.ticdc_avro import fastpath

    assert fastpath.named_schemas(_NAMED) is None  # not parsed by fastavro
    parsed = fastavro.parse_schema(_NAMED)
    assert isinstance(parsed, dict)
    assert fastpath.named_schemas({k: v for k, v in parsed.items() if k != "__named_schemas"}) is None
    assert fastpath.named_schemas("long") is None


# -- the value rules' memo, tested inline by the generated code -------------------------------------

_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, -1.0, 2.0]),
                    st.sampled_from(["", "0", "1", "a", "[1]", "[-0]", "[0.1]"]), st.sampled_from([b"", b"\x00", b"\x01"]))


@settings(max_examples=1000)
@given(st.lists(_VALUES, max_size=30), st.integers(0, 2**32), st.booleans())
def test_the_memo_passes_only_what_the_rule_passes(values: list[Any], salt: int, with_quick: bool) -> None:
    """Whatever a rule answers (here an arbitrary function of a value and its class), the
    memoised rule answers the same, and `passed.get(w) is w.__class__` (the generated code's
    inline test) holds only for values the rule passes: `1` remembered does not answer for
    `True` or `1.0`. With a quick test (a subset of the rule), the same."""
    from conformance.checks.compiled import Source
    from conformance.protocols.ticdc_avro.checks.types import memoised_rule, passed_expression

    def rule(f: Any, v: Any, o: Any) -> str | None:
        return "no" if hash((salt, v.__class__.__name__, repr(v))) % 3 == 0 else None

    def quick(v: Any) -> bool:
        return rule(None, v, None) is None and hash((salt, repr(v))) % 2 == 0

    judge, passed = memoised_rule(rule, None, None, quick if with_quick else None)  # type: ignore[arg-type]
    src = Source("known", ("v",))
    src.line(f"return {passed_expression(src, passed, 'v')}")
    known = src.build()
    for v in values:
        assert judge(v) == rule(None, v, None), v
        for w in values:
            if known(w):
                assert rule(None, w, None) is None, (w, passed)


def test_the_memo_keeps_at_most_its_bound(monkeypatch: Any) -> None:
    from conformance.protocols.ticdc_avro.checks import types

    monkeypatch.setattr(types, "_MEMO_MAX", 8)
    judge, passed = types.memoised_rule(lambda f, v, o: None, None, None)  # type: ignore[arg-type]
    for i in range(100):
        judge(i)
        assert len(passed) <= 8


_MODES = [{}, {"avro-bigint-unsigned-handling-mode": "string"}, {"avro-decimal-handling-mode": "string"},
          {"enable-tidb-extension": "true", "avro-bigint-unsigned-handling-mode": "long"}]


@settings(max_examples=500)
@given(_VALUES | st.text(max_size=25) | st.integers() | st.binary(max_size=9) | st.floats())
def test_families_without_a_value_line_pass_every_value(v: Any) -> None:
    """Where `_no_value_problem` says the fast path emits no line for a family's values, the
    family's rule passes every value (under each handling mode of the families' options)."""
    from conformance.protocols.ticdc_avro.checks.types import _VALUE_RULES, _no_value_problem
    from conformance.protocols.ticdc_avro.decoder import _field_view
    from conformance.protocols.ticdc_avro.spec import AvroOptions

    f = _field_view({"name": "c", "type": ["null", {"type": "long", "connect.parameters": {"tidb_type": "BIGINT UNSIGNED"}}]})
    skipped = 0
    for options in _MODES:
        o = AvroOptions.from_options(options)
        for fam, rule in _VALUE_RULES.items():
            if _no_value_problem(fam, o):
                skipped += 1
                assert rule(f, v, o) is None, (fam, options, v)
    assert skipped, "no family is skipped under any option set: the test exercised nothing"


def test_parts_with_bytes_left_over_go_to_the_checks() -> None:
    """A key or value with a byte more than its body (the same kind: the same 5-byte headers),
    met after the kind was compiled: the fast path accepts none of them, and the verdicts are
    the checks'."""
    from test_fast_paths import _records, assert_parity  # type: ignore[import-not-found]

    from conformance.encoders.spi import Record
    from conformance.protocols import get_protocol

    options = {"enable-tidb-extension": "true"}
    records, registry = _records("ticdc-avro", get_protocol("ticdc-avro").reference().name, options)
    longer = [Record(r.topic, r.key + b"\x00", r.value, r.partition, r.headers, r.timestamp, r.offset)
              for r in records if r.key is not None and len(r.key) > 5]
    longer += [Record(r.topic, r.key, r.value + b"\x00", r.partition, r.headers, r.timestamp, r.offset)
               for r in records if r.value is not None and len(r.value) > 5]
    assert len(longer) > 50
    accepted = assert_parity("ticdc-avro", options, registry, records)
    assert accepted
    assert assert_parity("ticdc-avro", options, registry, records + longer) == accepted


# -- per-field quick tests of YEAR, DECIMAL and BIT values ------------------------------------------

def _field_of(fam: str, precision: int, width: int) -> Any:
    from conformance.protocols.ticdc_avro.decoder import _field_view

    inner: dict[str, Any] = {
        "year": {"type": "int", "connect.parameters": {"tidb_type": "YEAR"}},
        "decimal": {"type": "bytes", "logicalType": "decimal", "precision": precision, "scale": 0,
                    "connect.parameters": {"tidb_type": "DECIMAL"}},
        "bit": {"type": "bytes", "connect.parameters": {"tidb_type": "BIT", "length": str(width)}},
    }[fam]
    return _field_view({"name": "c", "type": ["null", inner]})


def _quick_of(fam: str, f: Any, o: Any) -> Any:
    from conformance.checks.compiled import Source
    from conformance.protocols.ticdc_avro.checks.types import field_quick

    src = Source("quick", ("v",))
    expr = field_quick(fam, f, o, src, "v")
    if expr is None:
        return None
    src.line(f"return {expr}")
    return src.build()


_FIELD_VALUES = st.one_of(
    st.integers(-3, 3), st.integers(1895, 1905), st.integers(2150, 2160), st.booleans(), st.floats(),
    st.binary(max_size=10), st.sampled_from([b"\x00", b"\x00\x01", b"\x80", b"\x7f\xff", b"\xff\xff", b"\x01" + b"\x00" * 8]),
    st.integers(1, 40).flatmap(lambda n: st.sampled_from([
        b"\x7f" + b"\xff" * (n - 1), b"\x80" + b"\x00" * (n - 1), b"\xff" * n, b"\x01" + b"\x00" * (n - 1)])),
    st.text(max_size=3))


@settings(max_examples=3000)
@given(st.sampled_from(["year", "decimal", "bit"]), st.integers(1, 65), st.integers(1, 64), st.booleans(),
       st.lists(_FIELD_VALUES, max_size=8))
def test_field_quick_values_are_a_subset_of_what_the_rules_accept(fam: str, precision: int, width: int, padded: bool,
                                                                 values: list[Any]) -> None:
    from conformance.protocols.ticdc_avro.checks.types import _VALUE_RULES, field_plausibility
    from conformance.protocols.ticdc_avro.spec import AvroOptions

    o = AvroOptions.from_options({"bit-bytes": "padded"} if padded else {})
    f = _field_of(fam, precision, width)
    assert field_plausibility(fam, f, o) is None
    quick = _quick_of(fam, f, o)
    if quick is None:
        return
    for v in values:
        if quick(v):
            assert _VALUE_RULES[fam](f, v, o) is None, (fam, precision, width, v)


def test_field_quick_values_take_the_common_values() -> None:
    from conformance.protocols.ticdc_avro.spec import AvroOptions

    o = AvroOptions.from_options({})
    year = _quick_of("year", _field_of("year", 0, 0), o)
    assert year(0) and year(1901) and year(2155) and not year(1900) and not year(2156) and not year(True)
    dec = _quick_of("decimal", _field_of("decimal", 10, 0), o)
    # 10 digits: 4 bytes hold at most 2^31 in magnitude (< 10^10), 5 bytes up to 2^39 (> 10^10).
    assert dec(b"\x01") and dec(b"\x80\x00\x00\x00") and not dec(b"\x01\x00\x00\x00\x00") and not dec(b"")
    assert _quick_of("decimal", _field_of("decimal", 2, 0), o) is None  # one byte already reaches 128
    bit = _quick_of("bit", _field_of("bit", 0, 12), o)
    assert bit(b"\x00") and bit(b"\x0f\xff") and not bit(b"\x1f\xff") and not bit(b"\x00\x01") and not bit(b"")
    assert _quick_of("bit", _field_of("bit", 0, 12), AvroOptions.from_options({"bit-bytes": "padded"})) is None
