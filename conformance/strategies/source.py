"""Where random choices come from.

Every domain in this package is written once, against `Source`. Two implementations drive it:

* `RandomSource` wraps a seeded `random.Random`: fast (thousands of workloads a second),
  deterministic from (seed, shard), used for bulk generation on Spark executors.
* `HypothesisSource` wraps a hypothesis `draw`: every choice becomes a hypothesis choice, so
  failures shrink. Simple choices come first in every `choice()` and rare values sit behind
  `rare()`, which is False when shrunk, so examples shrink towards plain values.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")
_SURROGATES: tuple[Literal["Cs"]] = ("Cs",)

# Character pools for the fast sampler. The hypothesis side uses st.characters() instead.
_ASCII_PLAIN = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 "
_ASCII_SPECIAL = "',\"\\%_-.;:()[]{}<>&/!?@#$^*+=|~`\n\t\r"
_TWO_BYTE = "éüßñçøåλжשعЖ"
_THREE_BYTE = "中文字日本語한국€あ\u2028\u2029\ufeff"
_FOUR_BYTE = "😀🎉𝄞𠜎🙈🦀"


class Source(Protocol):
    def integer(self, lo: int, hi: int) -> int:
        """Uniform-ish integer in [lo, hi]; shrinks towards lo (or towards 0 when in range)."""
        ...

    def boolean(self) -> bool:
        """A fair coin; shrinks to False."""
        ...

    def rare(self, p: float) -> bool:
        """True with probability about p; shrinks to False."""
        ...

    def choice(self, options: Sequence[T]) -> T:
        """One of `options`; shrinks to the first."""
        ...

    def text(self, *, min_size: int, max_size: int, max_codepoint: int = 0x10FFFF,
             allow_nul: bool = True) -> str:
        """A string of code points (no surrogates) with a length in [min_size, max_size]."""
        ...

    def binary(self, *, min_size: int, max_size: int) -> bytes:
        ...

    def float32(self) -> float:
        """A finite float32 value (as a Python float), any bit pattern."""
        ...

    def float64(self) -> float:
        """A finite double."""
        ...


class RandomSource:
    """A `Source` over `random.Random`, deterministic from its seed."""

    __slots__ = ("rng",)

    def __init__(self, seed: int | str | random.Random) -> None:
        self.rng = seed if isinstance(seed, random.Random) else random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def boolean(self) -> bool:
        return self.rng.random() < 0.5

    def rare(self, p: float) -> bool:
        return self.rng.random() < p

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def text(self, *, min_size: int, max_size: int, max_codepoint: int = 0x10FFFF,
             allow_nul: bool = True) -> str:
        rng = self.rng
        n = rng.randint(min_size, max_size)
        if n == 0:
            return ""
        # Mostly plain ASCII so values stay readable; every few characters something nastier.
        pools = [_ASCII_PLAIN] * 12 + [_ASCII_SPECIAL] * 2 + [_TWO_BYTE]
        if max_codepoint >= 0xFFFF:
            pools.append(_THREE_BYTE)
        if max_codepoint >= 0x10FFFF:
            pools.append(_FOUR_BYTE)
        if max_codepoint < 0x80:
            pools = [_ASCII_PLAIN, _ASCII_SPECIAL]
        out = []
        for _ in range(n):
            if allow_nul and rng.random() < 0.01:
                out.append("\0")
            else:
                pool = pools[rng.randrange(len(pools))]
                out.append(pool[rng.randrange(len(pool))])
        return "".join(out)

    def binary(self, *, min_size: int, max_size: int) -> bytes:
        n = self.rng.randint(min_size, max_size)
        return self.rng.randbytes(n)

    def float32(self) -> float:
        while True:
            bits = self.rng.getrandbits(32)
            if (bits >> 23) & 0xFF != 0xFF:  # not NaN / Inf
                return float(struct.unpack("<f", bits.to_bytes(4, "little"))[0])

    def float64(self) -> float:
        while True:
            bits = self.rng.getrandbits(64)
            if (bits >> 52) & 0x7FF != 0x7FF:
                return float(struct.unpack("<d", bits.to_bytes(8, "little"))[0])


class HypothesisSource:
    """A `Source` over hypothesis' `draw`, so that every choice shrinks."""

    __slots__ = ("draw", "st")

    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self.draw = draw
        self.st = st

    def integer(self, lo: int, hi: int) -> int:
        return int(self.draw(self.st.integers(lo, hi)))

    def boolean(self) -> bool:
        return bool(self.draw(self.st.booleans()))

    def rare(self, p: float) -> bool:
        # Weighted, and 0 (the shrink target) means "not rare".
        cut = max(1, round(p * 100))
        return bool(self.draw(self.st.integers(0, 99)) >= 100 - cut)

    def choice(self, options: Sequence[T]) -> T:
        return options[int(self.draw(self.st.integers(0, len(options) - 1)))]

    def text(self, *, min_size: int, max_size: int, max_codepoint: int = 0x10FFFF,
             allow_nul: bool = True) -> str:
        chars = self.st.characters(min_codepoint=0 if allow_nul else 1, max_codepoint=max_codepoint,
                                   exclude_categories=_SURROGATES)
        return str(self.draw(self.st.text(chars, min_size=min_size, max_size=max_size)))

    def binary(self, *, min_size: int, max_size: int) -> bytes:
        return bytes(self.draw(self.st.binary(min_size=min_size, max_size=max_size)))

    def float32(self) -> float:
        return float(self.draw(self.st.floats(width=32, allow_nan=False, allow_infinity=False)))

    def float64(self) -> float:
        return float(self.draw(self.st.floats(allow_nan=False, allow_infinity=False)))
