"""Capture lines are read with orjson first, the standard library deciding: the answer must
always be the stdlib's (a line is never read differently because orjson read it)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.encoders.spi import Record
from conformance.harness.capture import _explained, _json_line, _quick, parse_line, read_records

_scalars = (st.none() | st.booleans() | st.text(max_size=8)
            | st.integers(min_value=-(2**70), max_value=2**70)
            | st.floats(allow_nan=False, allow_infinity=False))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12)
_texts = (_values.map(json.dumps)
          | st.sampled_from(["NaN", "[Infinity]", '"\\ud800"', "1e400", "-0", "18446744073709551616",
                             '{"offset": 18446744073709551616}', '{"a": 1, "a": 2}', "[1.0, 2]", "1E2"]))


def _same(text: str) -> tuple[str, str]:
    try:
        want = repr(json.loads(text))
    except ValueError as e:
        want = f"error {type(e).__name__}"
    try:
        got = repr(_json_line(text))
    except ValueError as e:
        got = f"error {type(e).__name__}"
    return got, want


@settings(max_examples=1500, deadline=None)
@given(_texts)
def test_a_line_is_read_as_the_standard_library_reads_it(text: str) -> None:
    got, want = _same(text)
    assert got == want  # repr: an int is not a float, and NaN is NaN


def test_an_offset_beyond_64_bits_is_an_integer() -> None:
    # orjson reads 2**64 as 1.8446744073709552e+19: the line would have been refused.
    rec = parse_line('{"topic": "t", "partition": 0, "offset": 18446744073709551616, "key": null, "value": null}')
    assert rec.offset == 2**64


# -- the quick reading of a line (`_quick`) against the explained one ------------------------------

_b64s = st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
_field_values = (_scalars | _b64s | st.sampled_from(["", "=", "AA=", "AAAA====", "ä", "Zm9v\n", " Zm9v"])
                 | st.lists(st.lists(_b64s | st.none() | _scalars, max_size=3), max_size=2))
_good = st.fixed_dictionaries(
    {"topic": st.text(min_size=1, max_size=6), "partition": st.integers(0, 2**63 - 1),
     "offset": st.integers(0, 2**63 - 1), "key": st.none() | _b64s, "value": st.none() | _b64s},
    optional={"timestamp": st.none() | st.integers(0, 2**63 - 1),
              "headers": st.none() | st.lists(st.tuples(st.text(max_size=4), st.none() | _b64s).map(list), max_size=3)})


@st.composite
def _lines(draw: st.DrawFn) -> str:
    """A well-formed capture line, often with one field removed, retyped or replaced (an
    integer beyond 64 bits, a bool, a float, bad base64, a header of the wrong shape), or
    repeated with another value."""
    obj = draw(_good)
    for _ in range(draw(st.integers(0, 2))):
        name = draw(st.sampled_from(["topic", "partition", "offset", "key", "value", "timestamp", "headers", "x"]))
        how = draw(st.sampled_from(["drop", "set", "big"]))
        if how == "drop":
            obj.pop(name, None)
        elif how == "set":
            obj[name] = draw(_field_values)
        else:
            obj[name] = draw(st.sampled_from([2**64, -(2**64), -1, True, False, 1.0, 0]))
    text = json.dumps(obj, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):  # a key given twice: both readers keep the last
        name = draw(st.sampled_from(["topic", "partition", "offset", "key", "value"]))
        text = text[:-1] + f', "{name}": {json.dumps(draw(_field_values))}}}'
    return text


def _outcome(read: Any, text: str) -> str:
    try:
        return repr(read(text))
    except ValueError as e:
        return f"refused: {e}"


@settings(max_examples=2000, deadline=None)
@given(_lines())
def test_a_line_read_quickly_is_the_line_explained(text: str) -> None:
    assert _outcome(parse_line, text) == _outcome(_explained, text)


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines() | st.sampled_from(["", "  ", "[1]", "{", '{"topic": "\\ud800"}', "NaN"]), max_size=6),
       st.sampled_from([b"", b"\xff", b"\xef\xbb\xbf", b"\xed\xa0\x80"]))
def test_a_capture_file_is_read_as_each_line_explained(tmp_path_factory: pytest.TempPathFactory,
                                                       texts: list[str], junk: bytes) -> None:
    lines = [t.encode() for t in texts] + ([junk + b'{"topic": "t", "partition": 0, "offset": 0, "key": null, '
                                                    b'"value": null}'] if junk else [])
    path = tmp_path_factory.mktemp("cap") / "records.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    want = []
    for n, raw in enumerate(lines, start=1):
        try:
            text = (raw + b"\n").decode("utf-8")  # a line as the file gives it
        except UnicodeDecodeError:
            want.append((n, "not UTF-8"))
            continue
        if text.strip():
            want.append((n, _outcome(_explained, text)))
    got = [(n, repr(r) if isinstance(r, Record) else ("not UTF-8" if r.problem.startswith("not UTF-8")
                                                       else f"refused: {r.problem}"))
           for n, r in read_records(path)]
    assert got == want


def test_the_quick_reading_refuses_what_it_cannot_prove() -> None:
    base = {"topic": "t", "partition": 0, "offset": 0, "key": None, "value": None}
    assert _quick(dict(base)) == Record("t", None, None, 0, (), None, 0)
    for name, bad in [("partition", True), ("offset", 2.0), ("key", 1), ("value", "A"), ("timestamp", False),
                      ("headers", {"a": "AA=="}), ("headers", 0), ("headers", [["a"]]), ("headers", [[1, None]]),
                      ("headers", [["a", "A"]]), ("topic", "")]:
        assert _quick({**base, name: bad}) is None, (name, bad)
    assert _quick({k: v for k, v in base.items() if k != "key"}) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(_lines() | st.sampled_from(["", "[1]", "{", '{"topic": "\\ud800"}', '{"topic": 7}', "NaN",
                                            '{"topic": "a", "partition": -1}', '{"topic": "\\u0061", "x": NaN}',
                                            # records only the standard library reads (orjson refuses NaN
                                            # and lone surrogates): dealt by their record's topic
                                            '{"topic": "a", "partition": 0, "offset": 1, "key": null, '
                                            '"value": null, "x": NaN}',
                                            '{"topic": "\\ud800", "partition": 0, "offset": 2, "key": null, '
                                            '"value": null}']),
                max_size=8),
       st.sampled_from([b"", b"\xff", b"\xed\xa0\x80"]), st.integers(1, 3), st.integers(0, 2**16))
def test_readers_sharing_a_file_by_topic_see_every_line_once(tmp_path_factory: pytest.TempPathFactory,
                                                             texts: list[str], junk: bytes, workers: int,
                                                             salt: int) -> None:
    """`--jobs`: each reader takes the lines of its topics (`mine`), one of them also the lines
    that name none (`bad_lines`); together they read exactly what one reader reads, each line once
    and as one reader reads it, whichever way the topics are dealt."""
    lines = [t.encode() for t in texts] + ([junk + b'{"topic": "a", "partition": 0, "offset": 0, "key": null, '
                                                    b'"value": null}'] if junk else [])
    path = tmp_path_factory.mktemp("cap") / "records.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")

    def owner(topic: str) -> int:
        return (hash(topic) ^ salt) % workers

    want = [(n, repr(r)) for n, r in read_records(path)]
    got = sorted((n, repr(r)) for i in range(workers)
                 for n, r in read_records(path, mine=lambda t, i=i: owner(t) == i, bad_lines=i == 0))  # type: ignore[misc]
    assert got == want
