"""The Besieged Fortress SAT encoding: wins within a horizon, dead ends only with a
sound bound (the recurrence diameter), and a step that means what the rules say."""

from __future__ import annotations

import pytest
from bf_helpers import LOST, WON, pos
from pysat.card import CardEnc, EncType
from pysat.solvers import Solver

from patience_encodings import besieged_fortress_sat as bsat
from verifier import besieged_fortress as bf
from verifier import besieged_fortress_search as bfs
from verifier.errors import UnsupportedError
from verifier.replay import replay
from verifier.results import Question, Status


@pytest.mark.parametrize("text", WON)
def test_wins_are_found_and_replay(text):
    state = pos(text)
    result = bsat.prove(state, time_limit=30)
    assert result.status is Status.WON and result.proven
    outcome = replay(bf.GAME, state, bf.parse_moves("\n".join(result.line)))
    assert outcome.ok and outcome.won


@pytest.mark.parametrize("text", LOST)
def test_small_dead_ends_are_proven_by_the_diameter_bound(text):
    state = pos(text)
    result = bsat.prove(state, time_limit=60)
    assert result.status is Status.LOST and result.proven
    assert "recurrence diameter" in result.method
    assert bfs.prove(state).status is Status.LOST  # the search agrees


def test_a_whole_deal_without_a_win_in_reach_is_unknown_never_lost():
    state = bf.initial_state(bf.numbered_deal(5))  # lost (search), 48 cards
    result = bsat.prove(state, time_limit=1.0)
    assert result.status is Status.UNKNOWN and not result.proven
    assert "sound horizon bound" in result.method


def test_best_score_is_unsupported():
    with pytest.raises(UnsupportedError):
        bsat.prove(pos(WON[0]), question=Question.SCORE, time_limit=1)


def one_move_models(state: bf.State) -> set[bf.Move]:
    """Return every single move the encoding allows at step 0, decoded."""
    enc = bsat.Encoding(state)
    moves = [enc.var_mv(x, y, 0) for x in enc.cards for y in enc.targets[x]]
    clauses = enc.first_clauses() + enc.step_clauses(0)
    exactly_one = CardEnc.equals(
        moves, 1, top_id=enc.pool.top, encoding=EncType.pairwise
    )
    found: set[bf.Move] = set()
    with Solver(name="cadical195", bootstrap_with=clauses + exactly_one.clauses) as s:
        while s.solve():
            model = s.get_model()
            (move,) = enc.decode(model, 1)
            found.add(move)
            s.add_clause([-v for v in moves if model[v - 1] > 0])
    return found


@pytest.mark.parametrize("text", WON + LOST)
def test_one_step_allows_exactly_the_legal_moves(text):
    state = pos(text)
    assert one_move_models(state) == set(bf.legal_moves(state))


def test_parallel_steps_decode_into_legal_sequential_moves():
    state = pos(WON[2])
    enc = bsat.Encoding(state)
    status, line, horizon, _ = bsat.search(state, None)
    assert status == "won" and horizon <= len(line)
    # The line ends sorted: foundation moves alone then win (the goal).
    end = replay(bf.GAME, state, line)
    assert end.ok
    assert replay(bf.GAME, state, line + bf.finishing_moves(end.final)).won
    assert enc.rising  # the goal is not trivially true here
