"""Properties of the value domains and the model's conversion helpers (issue 26): every helper
answers for every value a domain can produce (±inf, NaN, -0.0, subnormals and the extremes
included), and what it answers round-trips. Oracles are independent of the helpers: C's float
conversion (ctypes) for float32 rounding, Python's own float parsing for texts."""

from __future__ import annotations

import ctypes
import decimal
import math
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.harness.soak import render_value
from conformance.model import Kind, SqlType
from conformance.model.values import (
    FLOAT32_MAX,
    bit_bytes_min,
    bit_bytes_padded,
    decimal_from_unscaled,
    decimal_text,
    decimal_unscaled,
    float32_shortest,
    go_format_float,
    is_float32,
    to_float32,
    twos_complement_min,
)
from conformance.strategies.dialect_domains import DOMAINS
from conformance.strategies.source import HypothesisSource

ANY_FLOAT = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True)
FLOAT32 = st.floats(width=32, allow_nan=False, allow_infinity=False)
SPECIAL = (0.0, -0.0, math.inf, -math.inf, math.nan, 5e-324, -5e-324, 1.7976931348623157e308,
           -1.7976931348623157e308, FLOAT32_MAX, -FLOAT32_MAX, 1.4e-45, 7e-46, 1e39, -1e39)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


def _c_float(x: float) -> float:
    """C's `(float)x` then back to double: IEEE round-to-nearest-even, overflow to ±inf."""
    return float(ctypes.c_float(x).value)


# -- float32 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("x", SPECIAL)
def test_to_float32_at_the_edges(x: float) -> None:
    got, want = to_float32(x), _c_float(x)
    assert (math.isnan(got) and math.isnan(want)) or _bits(got) == _bits(want)


@given(ANY_FLOAT)
def test_to_float32_is_total_and_rounds_as_c_does(x: float) -> None:
    got, want = to_float32(x), _c_float(x)
    assert (math.isnan(got) and math.isnan(want)) or _bits(got) == _bits(want)
    assert is_float32(x) == (math.isfinite(x) and got == x)
    if math.isfinite(got):
        assert is_float32(got) and to_float32(got) == got  # idempotent


@given(FLOAT32)
def test_float32_texts_read_back_as_the_same_float32(x: float) -> None:
    s = float32_shortest(x)
    assert to_float32(float(s)) == x and math.copysign(1, float(s)) == math.copysign(1, x)
    f = go_format_float(x, 32, "f")
    assert "e" not in f and to_float32(float(f)) == x


@given(ANY_FLOAT)
def test_go_format_float_answers_for_every_double(x: float) -> None:
    f = go_format_float(x, 64, "f")
    if math.isfinite(x):
        assert float(f) == x and "e" not in f
        j = go_format_float(x, 64)
        assert float(j) == x
    else:
        assert f in ("+Inf", "-Inf", "NaN")
        with pytest.raises(ValueError, match="no JSON form"):
            go_format_float(x, 64)


# -- DECIMAL, integers, BIT -----------------------------------------------------------------------

@given(st.integers(-(10**65) + 1, 10**65 - 1), st.integers(0, 30))
def test_decimal_helpers_round_trip(unscaled: int, scale: int) -> None:
    d = decimal_from_unscaled(unscaled, scale)
    assert d.as_tuple().exponent == -scale
    assert decimal_unscaled(d, scale) == unscaled
    text = decimal_text(d, scale)
    assert decimal.Decimal(text) == d and not text.startswith("-0" if unscaled == 0 else "--")
    assert (len(text.split(".")[1]) if "." in text else 0) == scale


@given(st.integers(-(1 << 200), 1 << 200))
def test_twos_complement_is_minimal_and_exact(n: int) -> None:
    b = twos_complement_min(n)
    assert int.from_bytes(b, "big", signed=True) == n
    assert len(b) == 1 or int.from_bytes(b[1:], "big", signed=True) != n  # one byte fewer would not do


@given(st.integers(1, 64).flatmap(lambda m: st.tuples(st.just(m), st.integers(0, (1 << m) - 1))))
def test_bit_bytes(mv: tuple[int, int]) -> None:
    m, v = mv
    assert int.from_bytes(bit_bytes_min(v), "big") == v
    padded = bit_bytes_padded(v, m)
    assert len(padded) == (m + 7) // 8 and int.from_bytes(padded, "big") == v


# -- every dialect's domain through every conversion of the model ----------------------------------

@pytest.mark.parametrize("dialect", sorted(DOMAINS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_value_a_domain_produces_renders(dialect: str, data: st.DataObject) -> None:
    """A type of any of the dialect's kinds, then a value of it (edges included, at a high rate)
    and every edge value of the type: each through `render_value` (SQL literal, TiDB text, self
    equality, workload-file round trip, FLOAT values float32)."""
    dom = DOMAINS[dialect]
    src = HypothesisSource(data.draw)
    key = src.rare(0.2)
    t = dom.sample_type(src, dom.key_kinds if key else dom.kinds, key=key)
    v = dom.sample_value(src, t, edge_rate=0.5, key=key)
    render_value(dialect, t, v)
    for e in dom.edge_values(t):
        render_value(dialect, t, e)


@pytest.mark.parametrize("dialect", sorted(DOMAINS))
def test_every_kind_of_every_domain_has_renderable_edges(dialect: str) -> None:
    """Each kind at least once, whatever hypothesis happens to draw: its simplest type's edges."""
    dom = DOMAINS[dialect]
    from conformance.strategies.source import RandomSource

    for kind in dom.kinds:
        for i in range(5):
            t = dom.sample_type(RandomSource(f"{dialect}:{kind}:{i}"), (kind,))
            assert t.kind is kind
            for e in dom.edge_values(t):
                render_value(dialect, t, e)


def test_postgres_real_and_double_hold_the_infinities() -> None:
    for kind in (Kind.FLOAT, Kind.DOUBLE):
        edges = DOMAINS["postgresql"].edge_values(SqlType(kind))
        assert math.inf in edges and -math.inf in edges
        assert any(isinstance(x, float) and x == 0 and math.copysign(1, x) < 0 for x in edges)
        for e in edges:
            render_value("postgresql", SqlType(kind), e)
