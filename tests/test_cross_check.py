"""Every Devil's Grip engine agrees with every other on verdicts and best scores.

The engines are independent formulations (SAT over stock-pointer slots, SMT
over merge events and talon slots, and the search prover where registered), so
agreement on a corpus is evidence that none of them hides an encoding bug.
"""

from __future__ import annotations

import random

import pytest
from pysat.solvers import Solver

from patience_encodings import devils_grip_sat, engines
from patience_encodings.devils_grip_sat_cnf import build_encoding
from patience_encodings.devils_grip_sat_lines import line_assignment
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.formats import Start, start_from_number
from verifier.registry import get_game
from verifier.results import Question, Status

GAME = get_game("devils-grip")
ENGINES = engines.engines_for(GAME.name)


def answers(start: Start, question: Question) -> dict[str, tuple]:
    out = {}
    for name in ENGINES:
        result = engines.solve(start, question=question, engine=name, time_limit=60)
        if engines.settles(result, question):
            out[name] = (
                result.status,
                result.best_score if question is Question.SCORE else None,
            )
    return out


def late_starts(count: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        state = dg.initial_state(dg.numbered_deal(rng.randrange(1, 10**6)))
        while len(state.stock) > 12:
            moves = dg.legal_moves(state, swaps=False)
            plays = [m for m in moves if not isinstance(m, dg.DealMove)]
            use = plays and rng.random() < 0.7
            state = dg.apply(state, rng.choice(plays) if use else dg.DEAL)
        yield Start(GAME, state, "position")


def test_at_least_two_engines_are_registered():
    assert {"sat", "smt"} <= set(ENGINES)


@pytest.mark.parametrize("number", range(1, 9))
def test_numbered_deal_verdicts_agree(number):
    found = answers(start_from_number(GAME, number), Question.VERDICT)
    assert len(found) >= 2, found
    assert len({status for status, _ in found.values()}) == 1, found


@pytest.mark.parametrize("seed", range(3))
def test_constructed_deals_are_won_by_every_engine(seed):
    start = Start(GAME, dg.initial_state(construct(seed).deal), "deal")
    found = answers(start, Question.VERDICT)
    assert set(found) == set(ENGINES), found
    assert all(status is Status.WON for status, _ in found.values())


def assert_best_scores_agree(starts) -> None:
    """At least two engines settle each position, and all give one answer."""
    for start in starts:
        found = answers(start, Question.SCORE)
        assert len(found) >= 2, found
        assert len(set(found.values())) == 1, (
            found,
            GAME.position_to_json(start.state),
        )


def test_late_position_best_scores_agree():
    assert_best_scores_agree(late_starts(6, seed=5))


@pytest.mark.parametrize("seed", range(5))
def test_search_wins_fit_the_sat_horizon(seed):
    """The SAT horizon argument, checked on the other engine's lines.

    A win places 72 stock cards (merges and talon plays) and deals at most 24
    times, so UNSAT over the stock-pointer slots means no win. Every winning
    line the search prover finds, independently of SAT, fits that bound and
    is a model of SAT's verdict CNF (without its normal-form restrictions).
    """
    state = dg.initial_state(construct(seed).deal)
    result = engines.solve(Start(GAME, state, "deal"), engine="search", time_limit=60)
    assert result.status is Status.WON, result.method
    line = dg.parse_moves(" ".join(result.line))
    placements = sum(isinstance(m, dg.Merge | dg.TalonPlay) for m in line)
    deals = sum(m == dg.DEAL for m in line)
    assert placements == 72 and deals <= 24
    enc = build_encoding(state, Question.VERDICT, dominance=False)
    with Solver(name=devils_grip_sat.SOLVER, bootstrap_with=enc.clauses) as solver:
        values = line_assignment(enc, line)
        assert solver.solve(assumptions=[v if b else -v for v, b in values.items()])


def along_winning_lines(count: int, seed: int):
    """Late positions on and just off the winning lines of constructed deals."""
    rng = random.Random(seed)
    for k in range(count):
        built = construct(100 + k)
        state = dg.initial_state(built.deal)
        for move in built.line:
            if len(state.stock) <= 15:
                break
            state = dg.apply(state, move)
        if k % 2:  # step off the line: deal until a base goes to the talon
            while state.stock and not any(
                c.rank in dg.BASE_RANKS for c in state.talon[-dg.PACKET :]
            ):
                state = dg.apply(state, dg.DEAL)
        else:  # a few random moves, which may or may not throw the win away
            for _ in range(rng.randrange(4)):
                state = dg.apply(state, rng.choice(dg.legal_moves(state, swaps=False)))
        yield Start(GAME, state, "position")


def test_positions_along_winning_lines_agree():
    assert_best_scores_agree(along_winning_lines(6, seed=11))
