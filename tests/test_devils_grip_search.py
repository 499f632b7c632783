"""The Devil's Grip search prover: sound against brute force, complete on wins.

Its reductions (`verifier.devils_grip_search_model`) and lower bounds
(`verifier.devils_grip_search_bounds`) each carry a proof in their
docstrings; these tests check the proofs against an unpruned brute force
(`tests/dg_brute_force.py`, which restates the rules without the model) on
small positions: late games of numbered and constructed deals, and positions
made by playing backwards from won layouts.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest
from dg_brute_force import positions, successors

from patience_encodings import devils_grip_sat
from verifier import devils_grip as dg
from verifier import devils_grip_beam as beam
from verifier import devils_grip_search as search
from verifier import devils_grip_search_model as sm
from verifier.devils_grip_construct import construct
from verifier.formats import start_from_json
from verifier.gcpause import cycles_uncollected
from verifier.replay import replay
from verifier.results import Question, Status

CURATED = Path(__file__).parent.parent / "seeds" / "curated" / "devils-grip.jsonl"


@pytest.fixture(scope="module")
def small_positions() -> list[tuple[dg.State, int]]:
    """520 small positions with their brute-force best scores."""
    return list(positions(520, seed=2026))


def test_the_sample_covers_wins_losses_and_stockless_positions(small_positions):
    scores = [score for _, score in small_positions]
    stocks = [len(state.stock) for state, _ in small_positions]
    assert sum(score == 0 for score in scores) >= 50
    assert sum(score > 0 for score in scores) >= 200
    assert min(stocks) == 0 and max(stocks) >= 12


def test_best_scores_agree_with_brute_force(small_positions):
    """The pruned prover's proven best score is the unpruned one, every time."""
    wrong = []
    for state, expected in small_positions:
        result = search.prove(state, question=Question.SCORE, time_limit=60)
        assert result.proven and result.score_proven, result.method
        if result.best_score != expected:
            wrong.append((expected, result.best_score, dg.position_to_json(state)))
        assert (result.status is Status.WON) == (expected == 0)
    assert not wrong, wrong[:3]


def test_verdicts_agree_with_brute_force(small_positions):
    """The verdict question (bar "score 0", strongest pruning) is exact too."""
    for state, expected in small_positions[:260]:
        result = search.prove(state, question=Question.VERDICT, time_limit=60)
        assert result.proven, result.method
        assert (result.status is Status.WON) == (expected == 0)
        if result.status is Status.LOST:
            assert result.lower_bound >= 1
            assert result.best_score >= expected


def test_every_returned_line_replays_to_its_score(small_positions):
    for state, expected in small_positions[:120]:
        result = search.prove(state, question=Question.SCORE, time_limit=60)
        moves = dg.parse_moves(" ".join(result.line))
        end = replay(dg.GAME, state, moves)
        assert end.ok, end.error
        assert end.score == expected
        assert end.won or end.stuck


def test_brute_force_moves_match_the_reference_engine(small_positions):
    """The brute force's move generator is the rule card's, not the model's."""
    for state, _ in small_positions[:80]:
        grid = tuple(sorted(s for s in state.grid if s))
        mine = {after for after in successors(grid, state.stock, state.talon)}
        theirs = set()
        for move in dg.legal_moves(state, swaps=False):
            after = dg.apply(state, move)
            theirs.add(
                (tuple(sorted(s for s in after.grid if s)), after.stock, after.talon)
            )
        assert mine == theirs


def test_model_round_trip_matches_reference_moves():
    """Every abstract move has a concrete move that leads to the same node."""
    state = dg.initial_state(dg.numbered_deal(11))
    model, node = sm.root(state)
    for _ in range(30):
        options = model.children(node, model.canon(node))
        move, child = options[len(options) // 2]
        state = dg.apply(state, sm.concrete(state, move))
        _, again = sm.root(state)
        assert again[1:] == child[1:]
        assert len(state.stock) == model.n - child[0]
        node = child


@pytest.mark.parametrize("seed", range(12))
def test_finds_the_win_of_constructed_deals(seed):
    built = construct(seed)
    result = search.prove(
        dg.initial_state(built.deal), question=Question.VERDICT, time_limit=60
    )
    assert result.status is Status.WON, result.method
    assert result.proven and result.best_score == 0
    moves = dg.parse_moves(" ".join(result.line))
    assert replay(dg.GAME, dg.initial_state(built.deal), moves).won


def test_finds_the_win_of_curated_deals():
    """The shipped corpus: every deal is won (its lines are SAT's)."""
    deals = [json.loads(line) for line in CURATED.read_text().splitlines()]
    missed = []
    for item in deals[::4]:
        state = start_from_json(item).state
        result = search.prove(state, question=Question.VERDICT, time_limit=60)
        if result.status is not Status.WON:
            missed.append((item["id"], result.status.value, result.method))
    assert not missed, missed


@pytest.mark.parametrize("number", [2, 5, 16])
def test_dead_numbered_deals_are_proven_lost(number):
    state = dg.initial_state(dg.numbered_deal(number))
    result = search.prove(state, question=Question.VERDICT, time_limit=60)
    assert result.status is Status.LOST and result.proven
    assert result.lower_bound >= 1
    assert "search exhausted" in result.method
    assert result.best_score >= result.lower_bound


def test_late_position_best_score_is_proven_with_a_line():
    state = dg.initial_state(dg.numbered_deal(7))
    while len(state.stock) > 24:
        merges = [m for m in dg.legal_moves(state, swaps=False) if m != dg.DEAL]
        state = dg.apply(state, merges[0] if merges else dg.DEAL)
    result = search.prove(state, question=Question.SCORE, time_limit=60)
    assert result.score_proven
    assert result.lower_bound == result.best_score
    end = replay(dg.GAME, state, dg.parse_moves(" ".join(result.line)))
    assert end.stuck and end.score == result.best_score
    other = devils_grip_sat.prove(state, question=Question.SCORE, time_limit=60)
    assert other.score_proven and other.best_score == result.best_score
    exact = search.prove(state, question=Question.SCORE, time_limit=60, beam=False)
    assert exact.score_proven and exact.best_score == result.best_score


def test_without_the_beam_the_search_proves_the_brute_force_best_score(
    small_positions,
):
    """``auto``'s best-score member runs no beam: the search alone is exact."""
    for state, expected in small_positions[::10]:
        result = search.prove(state, question=Question.SCORE, time_limit=60, beam=False)
        assert result.score_proven and result.best_score == expected


def test_out_of_time_is_unknown_never_lost():
    """A budget that runs out gives `unknown` (with a replayable line)."""
    state = dg.initial_state(dg.numbered_deal(20))
    result = search.prove(state, question=Question.VERDICT, time_limit=0.3)
    assert result.status is Status.UNKNOWN and not result.proven
    assert result.line
    end = replay(dg.GAME, state, dg.parse_moves(" ".join(result.line)))
    assert end.ok and end.score == result.best_score


def test_score_question_out_of_time_keeps_the_proven_verdict():
    state = dg.initial_state(dg.numbered_deal(2))
    result = search.prove(state, question=Question.SCORE, time_limit=1.0)
    assert result.status is Status.LOST and result.proven
    assert result.lower_bound >= 1
    # The time did run out on the score: a line, a weaker proven bound.
    assert not result.score_proven and result.lower_bound < result.best_score


def test_the_cycle_collector_is_paused_inside_and_restored_after(monkeypatch):
    """`verifier.gcpause`: the search and the beam run without the cycle
    collector (it only slows them), and leave it as they found it, even when
    the block ends with an exception; blocks nest."""
    assert gc.isenabled()
    with cycles_uncollected():
        with cycles_uncollected():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), cycles_uncollected():
        raise RuntimeError
    assert gc.isenabled()
    seen: list[tuple[str, bool]] = []
    verdict, run = search.Search.verdict, beam.Beam.run

    def watched_verdict(self):
        seen.append(("search", gc.isenabled()))
        return verdict(self)

    def watched_run(self, width, guide=None):
        seen.append(("beam", gc.isenabled()))
        return run(self, width, guide)

    monkeypatch.setattr(search.Search, "verdict", watched_verdict)
    monkeypatch.setattr(beam.Beam, "run", watched_run)
    state = dg.initial_state(dg.numbered_deal(1))
    assert search.prove(state, question=Question.VERDICT, time_limit=5).proven
    assert beam.best_lines(state, deadline=None, widths=(8,)) is not None
    assert seen == [("search", False), ("beam", False)]
    assert gc.isenabled()


def _young(kept: list[list[int]]) -> int:
    """How many of ``kept``'s lists the youngest generation holds."""
    ids = {id(x) for x in kept}
    return sum(id(x) in ids for x in gc.get_objects(generation=0))


def test_what_a_paused_block_keeps_is_not_walked_when_it_ends():
    """A block's survivors leave the youngest generation as it ends, so the
    next collection does not walk them all at once (`gcpause._age_survivors`);
    nothing stays frozen in a process that froze nothing, and a process that
    froze its inheritance keeps everything frozen."""
    with cycles_uncollected():
        kept = [[i] for i in range(50_000)]
        assert _young(kept) == len(kept)
    assert _young(kept) == 0
    assert gc.get_freeze_count() == 0
    assert {id(x) for x in kept} <= {id(x) for x in gc.get_objects(generation=2)}
    gc.freeze()
    try:
        with cycles_uncollected():
            more = [[i] for i in range(1_000)]
        assert gc.get_freeze_count() >= len(kept) + len(more)
        assert _young(more) == 0
    finally:
        gc.unfreeze()
