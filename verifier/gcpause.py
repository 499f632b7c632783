"""Pausing Python's cycle collector while a prover churns through positions.

Why: the search prover and the beam allocate millions of short-lived tuples
and keep hundreds of thousands alive (transposition table, layers), none of
them in reference cycles. Each allocation burst makes the cycle collector
walk the survivors again, for nothing: reference counting frees everything
these loops drop. Measured on the 2-core machine (paired runs, one after the
other): the Devil's Grip search prover expands 214k-227k states in 6 s on
deal 20 with the collector paused, 192k-204k without; the beam runs widths
8-1024 on deals 1-3 in 14.4, 13.8 and 13.1 s against 15.4, 15.3 and 13.5 s.
A few per cent, but free -- provided the survivors are not walked all at
once when the block ends (`_age_survivors`). The Devil's Grip CNF build
(100,000+ clause lists, all kept) is paused the same way.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def cycles_uncollected() -> Iterator[None]:
    """Disable the cycle collector inside the block, then restore its state.

    Nests: an inner block leaves it as the outer one set it. Memory stays
    bounded by reference counting; a cycle made inside (a caught exception's
    traceback) waits for the next full collection after the block.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            _age_survivors()
            gc.enable()


def _age_survivors() -> None:
    """Hand what the block allocated to the oldest generation, unwalked.

    Why: while the collector is off, every container the block allocates
    joins the youngest generation, so the first collection after the block
    walks all its survivors at once. After 8 s of search on deal 136 (a
    table of 266k positions, 294k canonical forms) that one collection took
    0.9 s, after the prover had its answer and before it could return it.
    `gc.freeze` moves every tracked object to the permanent generation, and
    `gc.unfreeze` moves them on to the oldest one, which only a full
    collection walks; both splice lists, whatever their length. A process
    that froze what it inherited (`patience_encodings.processes.start_child`)
    keeps everything frozen instead: unfreezing would hand the inherited
    objects back to the collector, whose passes would copy their pages.
    """
    frozen_before = gc.get_freeze_count()
    gc.freeze()
    if not frozen_before:
        gc.unfreeze()
