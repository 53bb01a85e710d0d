"""Capture lines are read with orjson first, the standard library deciding: the answer must
always be the stdlib's (a line is never read differently because orjson read it)."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.harness.capture import _json_line, parse_line

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
