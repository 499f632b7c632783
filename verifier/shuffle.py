"""Platform-independent numbered deals: SplitMix64 feeding Fisher–Yates.

Deal number N of a game is defined, forever, as follows:

1. Start from the game's *canonical order* of its deck (each game module
   documents its own; it never changes).
2. Seed a SplitMix64 generator with ``N`` (as an unsigned 64-bit integer).
   Each draw does ``state += 0x9E3779B97F4A7C15`` and returns
   ``z ^ (z >> 31)`` where ``z`` is ``state`` mixed by
   ``z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9`` then
   ``z = (z ^ (z >> 27)) * 0x94D049BB133111EB``, all modulo 2**64.
3. Fisher–Yates: for ``i`` from ``n - 1`` down to ``1``, draw ``x`` and swap
   positions ``i`` and ``x % (i + 1)``.

Python's `random` module is deliberately not used: its algorithms and seeding
are not promised to stay the same across versions. The modulo bias is below
2**-57 per draw, far beneath any effect a deal set could show. Test vectors
live in ``seeds/vectors/``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(seed: int) -> Iterator[int]:
    """Yield the SplitMix64 stream for ``seed`` (reduced modulo 2**64)."""
    state = seed & MASK64
    while True:
        state = (state + GOLDEN) & MASK64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        yield z ^ (z >> 31)


def shuffled(items: Sequence[T], seed: int) -> list[T]:
    """Return ``items`` shuffled by Fisher–Yates driven by SplitMix64(seed)."""
    out = list(items)
    rng = splitmix64(seed)
    for i in range(len(out) - 1, 0, -1):
        j = next(rng) % (i + 1)
        out[i], out[j] = out[j], out[i]
    return out


class Rng:
    """A small deterministic generator over SplitMix64 (never Python's `random`).

    Used wherever the project promises "same seed, same output forever", e.g.
    constructed deals.
    """

    def __init__(self, seed: int) -> None:
        self._stream = splitmix64(seed)

    def below(self, n: int) -> int:
        """Return an integer in ``0 .. n - 1``."""
        return next(self._stream) % n

    def random(self) -> float:
        """Return a float in [0, 1) with 53 random bits."""
        return (next(self._stream) >> 11) / float(1 << 53)

    def choice(self, items: Sequence[T]) -> T:
        """Return one element of a non-empty sequence."""
        return items[self.below(len(items))]
