"""The SMT (z3) formulation: wins replay, dead ends agree with exhaustive search."""

from __future__ import annotations

import random

import pytest
import z3
from dg_helpers import position, winnable_position

from patience_encodings import devils_grip_smt as smt
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.results import Question, Status, check_result


def exhaustive_best_score(state: dg.State) -> int:
    """Unpruned reference: the least talon count over every line (no swaps)."""
    memo: dict = {}

    def best(s: dg.State) -> int:
        key = (tuple(sorted(s.grid)), s.stock, s.talon)
        if key not in memo:
            if dg.is_stuck(s):
                memo[key] = len(s.talon)
            else:
                memo[key] = min(
                    best(dg.apply(s, m)) for m in dg.legal_moves(s, swaps=False)
                )
        return memo[key]

    return best(state)


def late_positions(count: int, seed: int, max_stock: int = 8):
    """Positions near the end of constructed wins, knocked off course a little."""
    rng = random.Random(seed)
    for _ in range(count):
        built = construct(rng.randrange(1 << 30))
        state = dg.initial_state(built.deal)
        for move in built.line:
            if isinstance(move, dg.Swap) or (
                len(state.stock) <= max_stock and rng.random() < 0.3
            ):
                break
            state = dg.apply(state, move)
        for _ in range(rng.randrange(4)):
            moves = dg.legal_moves(state, swaps=False)
            if not moves:
                break
            state = dg.apply(state, rng.choice(moves))
        yield state


def test_hand_made_win_is_found_and_replays():
    state, _ = winnable_position()
    result = smt.prove(state, question=Question.VERDICT, time_limit=30)
    assert result.status is Status.WON and result.best_score == 0
    check_result(dg.GAME, state, result)


def test_base_card_in_talon_is_dead_with_score():
    state = position({"A1": "2S 5S 8S", "A2": "5H 8H JH"}, talon="2H JS")
    result = smt.prove(state, question=Question.SCORE, time_limit=30)
    assert result.status is Status.LOST and result.proven
    assert result.best_score == 1 and result.score_proven
    check_result(dg.GAME, state, result)


@pytest.mark.parametrize("seed", range(4))
def test_constructed_deals_are_won(seed):
    state = dg.initial_state(construct(seed).deal)
    result = smt.prove(state, question=Question.VERDICT, time_limit=120)
    assert result.status is Status.WON
    check_result(dg.GAME, state, result)


@pytest.mark.parametrize("number", [1, 2, 3])
def test_numbered_deals_are_proven_dead(number):
    state = dg.initial_state(dg.numbered_deal(number))
    result = smt.prove(state, question=Question.VERDICT, time_limit=120)
    assert result.status is Status.LOST and result.proven
    assert "UNSAT" in result.method


def test_best_scores_agree_with_exhaustive_search():
    checked = 0
    for state in late_positions(40, seed=11):
        expected = exhaustive_best_score(state)
        result = smt.prove(state, question=Question.SCORE, time_limit=60)
        assert result.best_score == expected, dg.position_to_json(state)
        assert result.status is (Status.WON if expected == 0 else Status.LOST)
        assert result.score_proven or result.status is Status.WON
        check_result(dg.GAME, state, result)
        checked += 1
    assert checked == 40


def test_formula_is_plain_smtlib():
    enc = smt.encode(dg.initial_state(dg.numbered_deal(1)))
    text = enc.smtlib()
    assert text.startswith("(declare-const")
    assert len(enc.asserts) > 1000 and "(assert" in text
    solver = z3.Solver()  # the text alone, read back by z3's own parser
    solver.add(z3.parse_smt2_string(text))
    assert solver.check() == z3.sat  # some line is played
    assert solver.check(z3.Bool("win")) == z3.unsat  # but none wins deal 1
