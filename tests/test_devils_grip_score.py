"""Core-guided best scores (`devils_grip_score`) against an unpruned brute force.

Every lower bound the core-guided search reports must be at most the true best
score, and the model it returns must decode to a line that reaches exactly
the brute force's best score.
"""

from __future__ import annotations

import time

import pytest
from dg_brute_force import positions

from patience_encodings import devils_grip_sat as sat
from patience_encodings import devils_grip_score as score_mod
from patience_encodings.devils_grip_sat_cnf import build_encoding
from verifier import devils_grip as dg
from verifier.results import Question, Status, check_result


def _core_guided(state: dg.State, dominance: bool | None = None):
    enc = build_encoding(state, Question.SCORE, dominance=dominance)
    bounds: list[int] = []
    model = score_mod.least_unlinked(
        enc, deadline=None, on_bound=lambda c: bounds.append(enc.score_offset + c)
    )
    return enc, model, bounds


@pytest.mark.parametrize("chunk", range(3))
def test_core_guided_optimum_matches_brute_force(chunk):
    for state, best in positions(8, seed=100 + chunk):
        for dominance in (True, False):
            enc, model, bounds = _core_guided(state, dominance)
            assert model is not None
            moves, final = sat._line(enc, model)
            assert dg.score(final) == best == bounds[-1]
            assert bounds == sorted(bounds) and all(b <= best for b in bounds)


def test_past_deadline_stops_without_a_bound():
    state = dg.initial_state(dg.numbered_deal(1))
    enc = build_encoding(state, Question.SCORE)
    bounds: list[int] = []
    with pytest.raises(score_mod.OutOfTime):
        score_mod.least_unlinked(
            enc, deadline=time.monotonic() - 1, on_bound=bounds.append
        )
    assert bounds == []


def test_lower_bound_reached_stops_the_search():
    state = dg.initial_state(dg.numbered_deal(5))
    enc = build_encoding(state, Question.SCORE)
    seen: list[int] = []

    def on_bound(cost: int) -> None:
        seen.append(cost)
        if enc.score_offset + cost >= 3:
            raise score_mod.LowerBoundReached

    with pytest.raises(score_mod.LowerBoundReached):
        score_mod.least_unlinked(enc, deadline=None, on_bound=on_bound)
    assert enc.score_offset + seen[-1] >= 3


def test_whole_deal_score_reports_a_proven_lower_bound():
    state = dg.initial_state(dg.numbered_deal(5))
    result = sat.prove(state, question=Question.SCORE, time_limit=10.0)
    assert result.status is Status.LOST and result.proven
    assert result.best_score is not None
    assert 1 < result.lower_bound <= result.best_score
    check_result(dg.GAME, state, result)
