"""Property tests: random legal playouts keep the rule card's invariants."""

from __future__ import annotations

import random
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import devils_grip as dg

DECK = Counter(dg.canonical_deck())


def check_invariants(state: dg.State) -> None:
    assert Counter(state.cards()) == DECK  # 96 cards conserved
    for stack in state.grid:
        assert dg.chain_error(stack) is None  # every stack a valid chain of <= 4
    if state.stock:
        assert all(state.grid)  # no empty cell while the stock remains
        assert not dg.is_stuck(state)


@settings(max_examples=60, deadline=None)
@given(
    number=st.integers(0, 2**64 - 1),
    seed=st.integers(0, 2**32),
    swap_rate=st.floats(0, 0.3),
)
def test_random_playouts_keep_invariants(number, seed, swap_rate):
    rng = random.Random(seed)
    state = dg.initial_state(dg.numbered_deal(number))
    check_invariants(state)
    for _ in range(400):
        moves = dg.legal_moves(state, swaps=rng.random() < swap_rate)
        if dg.is_stuck(state) or not moves:
            break
        move = rng.choice(moves)
        assert dg.illegal_reason(state, move) is None
        state = dg.apply(state, move)
        check_invariants(state)
    # play on until stuck, bringing cards in whenever possible
    while not dg.is_stuck(state):
        moves = dg.legal_moves(state, swaps=False)
        plays = [m for m in moves if isinstance(m, dg.TalonPlay)]
        state = dg.apply(state, (plays or [dg.DEAL])[0])
        check_invariants(state)
    assert dg.score(state) == 96 - sum(len(stack) for stack in state.grid)
    assert not any(
        isinstance(m, dg.TalonPlay | dg.DealMove) for m in dg.legal_moves(state)
    )
    assert (dg.score(state) == 0) == dg.is_complete(state)


@settings(max_examples=40, deadline=None)
@given(number=st.integers(0, 2**64 - 1), seed=st.integers(0, 2**32))
def test_every_listed_move_is_legal_and_illegal_ones_say_why(number, seed):
    rng = random.Random(seed)
    state = dg.initial_state(dg.numbered_deal(number))
    for _ in range(60):
        legal = set(dg.legal_moves(state))
        for src in range(dg.CELLS):
            for dst in range(dg.CELLS):
                move = dg.Merge(src, dst)
                assert (dg.illegal_reason(state, move) is None) == (move in legal)
            move = dg.TalonPlay(src)
            assert (dg.illegal_reason(state, move) is None) == (move in legal)
        if dg.is_stuck(state):
            break
        state = dg.apply(
            state,
            rng.choice(
                sorted(legal - {m for m in legal if isinstance(m, dg.Swap)}, key=repr)
            ),
        )
