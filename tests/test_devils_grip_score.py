"""Core-guided best scores (`devils_grip_score`) against an unpruned brute force.

Every lower bound the core-guided search reports must be at most the true best
score, and the model it returns must decode to a line that reaches exactly
the brute force's best score.
"""

from __future__ import annotations

import time

import pytest
from dg_brute_force import positions
from pysat.solvers import Solver

from patience_encodings import devils_grip_sat as sat
from patience_encodings import devils_grip_score as score_mod
from patience_encodings.devils_grip_sat_cnf import build_encoding
from verifier import devils_grip as dg
from verifier.results import Question, Status, check_result


def _core_guided(state: dg.State, dominance: bool | None = None):
    """The links view alone (the one RC2 ran before the grid view came)."""
    enc = build_encoding(state, Question.SCORE, dominance=dominance)
    bounds: list[int] = []
    model = score_mod.least_score(
        enc, deadline=None, on_bound=lambda b, _: bounds.append(b), only="links"
    )
    return enc, model, bounds


def _least_score(state: dg.State, only: str | None):
    enc = build_encoding(state, Question.SCORE)
    bounds: list[tuple[int, str]] = []
    model = score_mod.least_score(
        enc, deadline=None, on_bound=lambda b, v: bounds.append((b, v)), only=only
    )
    return enc, model, bounds


@pytest.mark.parametrize("only", ["grid", None])
def test_grid_view_optimum_matches_brute_force(only):
    """The grid view alone, and both views side by side, are exact too."""
    for state, best in positions(8, seed=110):
        enc, model, bounds = _least_score(state, only)
        assert model is not None
        _, final = sat.model_line(enc, model)
        assert dg.score(final) == best == max(b for b, _ in bounds)
        assert all(b <= best for b, _ in bounds)
        assert {v for _, v in bounds} <= {only} if only else {"grid", "links"}


def test_grid_view_counts_what_the_grid_lacks():
    """A model's grid-view cost is never below its line's score (so a proven
    least cost is a proven lower bound on the best score)."""
    for state, best in positions(6, seed=120):
        enc = build_encoding(state, Question.SCORE)
        enc.encode_grid_view()
        weights = dict(enc.grid_terms)
        with Solver(name="g4", bootstrap_with=enc.clauses) as solver:
            checked = 0
            while checked < 5 and solver.solve():
                checked += 1
                model = solver.get_model()
                _, final = sat.model_line(enc, model)
                cost = sum(w for lit, w in weights.items() if model[lit - 1] > 0)
                assert best <= dg.score(final) <= enc.grid_offset + cost
                solver.add_clause([-lit for lit in weights if model[lit - 1] > 0])
            assert checked


def test_grid_view_lower_bound_on_a_whole_deal():
    """Deal 12: the grid view proves the best score, 6, within seconds."""
    state = dg.initial_state(dg.numbered_deal(12))
    enc, model, bounds = _least_score(state, "grid")
    _, final = sat.model_line(enc, model)
    assert dg.score(final) == 6 == bounds[-1][0]


@pytest.mark.parametrize("chunk", range(3))
def test_core_guided_optimum_matches_brute_force(chunk):
    for state, best in positions(8, seed=100 + chunk):
        for dominance in (True, False):
            enc, model, bounds = _core_guided(state, dominance)
            assert model is not None
            moves, final = sat.model_line(enc, model)
            assert dg.score(final) == best == bounds[-1]
            assert bounds == sorted(bounds) and all(b <= best for b in bounds)


def test_past_deadline_stops_without_a_bound():
    state = dg.initial_state(dg.numbered_deal(1))
    enc = build_encoding(state, Question.SCORE)
    bounds: list[int] = []
    with pytest.raises(score_mod.OutOfTime):
        score_mod.least_score(
            enc, deadline=time.monotonic() - 1, on_bound=lambda b, _: bounds.append(b)
        )
    assert bounds == []


def test_lower_bound_reached_stops_the_search():
    state = dg.initial_state(dg.numbered_deal(5))
    enc = build_encoding(state, Question.SCORE)
    seen: list[int] = []

    def on_bound(lower: int, view: str) -> None:
        seen.append(lower)
        if lower >= 3:
            raise score_mod.LowerBoundReached

    with pytest.raises(score_mod.LowerBoundReached):
        score_mod.least_score(enc, deadline=None, on_bound=on_bound)
    assert seen[-1] >= 3 and all(b < 3 for b in seen[:-1])


def test_whole_deal_score_reports_a_proven_lower_bound():
    state = dg.initial_state(dg.numbered_deal(5))
    result = sat.prove(state, question=Question.SCORE, time_limit=10.0)
    assert result.status is Status.LOST and result.proven
    assert result.best_score is not None
    assert 1 < result.lower_bound <= result.best_score
    check_result(dg.GAME, state, result)
