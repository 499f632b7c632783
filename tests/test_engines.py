"""The prover registry and its time-limited runner."""

from __future__ import annotations

import time

import pytest

from patience_encodings import engines
from verifier.errors import InputError, UnsupportedError
from verifier.formats import start_from_number
from verifier.registry import get_game
from verifier.replay import replay
from verifier.results import Question, Status

GAME = get_game("devils-grip")


def test_time_limit_keeps_the_proven_verdict_and_the_best_line_so_far():
    start = start_from_number(GAME, 5)
    began = time.monotonic()
    result = engines.solve(start, question=Question.SCORE, engine="smt", time_limit=3)
    assert time.monotonic() - began < 6
    assert result.status is Status.LOST and result.proven
    if not result.score_proven:
        assert result.best_score is not None and result.line
    outcome = replay(GAME, start.state, GAME.parse_moves("\n".join(result.line)))
    assert outcome.stuck and outcome.score == result.best_score


@pytest.mark.parametrize("limit", [0, -1, float("nan"), 10**6])
def test_absurd_time_limits_are_bad_input(limit):
    with pytest.raises(InputError, match="time limit"):
        engines.solve(start_from_number(GAME, 1), time_limit=limit)


def test_unknown_engines_are_named():
    with pytest.raises(UnsupportedError, match="unknown engine 'magic'"):
        engines.solve(start_from_number(GAME, 1), engine="magic")
    with pytest.raises(UnsupportedError, match="does not support besieged-fortress"):
        bf = get_game("besieged-fortress")
        engines.solve(start_from_number(bf, 1), engine="smt")


def test_auto_uses_the_games_portfolio():
    for game, preferred in engines.PORTFOLIO.items():
        available = engines.engines_for(game)
        assert any(name in available for name in preferred)
