"""`model.values.quick_float32_text` settles its two tests (p is the k-digit decimal closest to
its float32, and no shorter decimal reads back as it) by float arithmetic with a margin where
the margin holds, and by formatting and parsing decimals (`_quick_float32_exact`) elsewhere: the
two must answer alike on every text (held here near every float32's own text, at every rounding,
cut and moved by one in the last digit; near powers of two and ten, where the rounding interval is
lopsided; at the ends of the margin's range, 1e-37 and 1e37), and the arithmetic must be what
answers for the usual texts (7 to 9 digits of a normal float32). Its answers are held to the rule
itself by tests/unit/test_fast_paths_avro.py."""

from __future__ import annotations

import struct

import pytest
from helpers import float32_texts_near
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conformance.model import values
from conformance.model.values import _quick_float32_exact, quick_float32_text


def _float32s() -> st.SearchStrategy[float]:
    """Any finite float32 (its bits drawn whole), any normal one, or one near a power of
    ten or two (up to three float32 steps away)."""
    bits = st.integers(0, 2**32 - 1).map(lambda b: struct.unpack("<f", struct.pack("<I", b))[0])
    normal = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    powers = st.builds(lambda base, e, step: struct.unpack("<f", struct.pack(
        "<I", max(0, min(0x7F7FFFFF, struct.unpack("<I", struct.pack("<f", float(base) ** e))[0] + step))))[0],
        st.sampled_from([2, 10]), st.integers(-38, 38).filter(lambda e: e < 38), st.integers(-3, 3))
    return st.one_of(bits, normal, powers).filter(lambda x: x == x and abs(x) != float("inf"))


def _near(x: float) -> list[str]:
    """x's own text; its texts at every rounding of 1 to 11 digits, positional; those with the
    last digit moved by one; a fixed-point text of each precision; all also negated."""
    out = float32_texts_near(x)
    return out + ["-" + t for t in out if not t.startswith("-")]


@settings(max_examples=3000, deadline=None)
@given(_float32s())
@example(1.0000001)
@example(8388608.0)
@example(1e-37)
@example(1e37)
@example(9.99999e36)
@example(1.00001e-37)
@example(16777216.0)
@example(0.1)
def test_quick_float32_texts_by_arithmetic_are_the_exact_tests(x: float) -> None:
    for text in _near(x):
        assert quick_float32_text(text) == _quick_float32_exact(text), text


@pytest.mark.parametrize("text", ["1777.9219", "-6274.797", "12387.984", "0.12345679", "-0.05517707",
                                  "0.037649807", "0.0000000000000000000000000000096967925", "1234567",
                                  "-837285900000000000000000000000000", "0.6919731"])
def test_usual_vector_elements_are_settled_by_the_arithmetic(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Texts of 7 to 9 digits of a normal float32 (most generated vectors' elements) are taken
    without the exact tests (which are slower by half)."""
    assert _quick_float32_exact(text)

    def refused(p: str) -> bool:
        raise AssertionError(f"{p!r} went to the exact tests")

    monkeypatch.setattr(values, "_quick_float32_exact", refused)
    assert quick_float32_text(text)
