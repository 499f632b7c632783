"""The Devil's Grip beam: real lines, exact scores, never worse than its guide.

The beam proves nothing, so these tests check what it does promise: every
line replays with the reference engine to exactly the score reported, no line
beats the brute-force optimum (and a run that dropped nothing meets it),
wider schedules and guided runs never end worse, and whole deals get far
better lines than the playouts had.
"""

from __future__ import annotations

import time

import pytest
from dg_brute_force import positions

from patience_encodings import bench_lines
from verifier import devils_grip as dg
from verifier import devils_grip_beam as beam
from verifier import devils_grip_search as search
from verifier import devils_grip_search_model as sm
from verifier.replay import replay
from verifier.results import (
    ProofResult,
    Question,
    ResultCheckError,
    Status,
    check_result,
    set_partial_sink,
)


def deal(number: int) -> dg.State:
    return dg.initial_state(dg.numbered_deal(number))


def check_line(state: dg.State, line: beam.BeamLine) -> None:
    """Replay ``line`` as the search prover reports it: it must end with its score."""
    moves = sm.to_reference(state, list(line.moves))
    won = line.score == 0
    result = ProofResult(
        status=Status.WON if won else Status.LOST,
        proven=won,
        engine="beam",
        question=Question.SCORE,
        best_score=line.score,
        line=tuple(dg.format_move(m) for m in moves),
    )
    check_result(dg.GAME, state, result)  # raises if the line lies
    end = replay(dg.GAME, state, moves)
    assert end.ok and end.score == line.score
    assert end.won if won else end.stuck


def playout_line(state: dg.State) -> beam.BeamLine:
    """Return the search prover's playout line for ``state`` (its old incumbent)."""
    prover = search.Search(state)
    prover.playouts(search.PLAYOUTS, seed=1)
    return beam.BeamLine(prover.incumbent.score, tuple(prover.incumbent.moves))


@pytest.mark.parametrize("number", [1, 2, 3, 4])
def test_lines_of_whole_deals_replay_to_their_scores(number):
    state = deal(number)
    found = beam.best_lines(state, deadline=None, widths=(8, 32))
    assert found is not None and found.runs == (8, 32)
    check_line(state, found)


def test_small_positions_never_beat_the_optimum_and_complete_runs_meet_it():
    """A line is real, so it scores at least the brute-force optimum; a run
    that dropped no position has seen every one, so it scores exactly that.
    (Measured: all 60 meet it; a win ends the widths at once.)"""
    met = 0
    for state, optimum in positions(60, seed=7):
        found = beam.best_lines(state, deadline=None, widths=(1, 4, 16, 64))
        assert found is not None
        check_line(state, found)
        assert found.score >= optimum
        if found.complete:
            assert found.score == optimum, dg.position_to_json(state)
        met += found.score == optimum
    assert met >= 55


@pytest.mark.parametrize("number", [1, 5, 6])
def test_more_widths_never_end_worse(number):
    state = deal(number)
    narrow = beam.best_lines(state, deadline=None, widths=(1,))
    wide = beam.best_lines(state, deadline=None, widths=(1, 4, 16))
    assert narrow is not None and wide is not None
    assert wide.score <= narrow.score
    check_line(state, narrow)
    check_line(state, wide)


@pytest.mark.parametrize("number", [1, 2, 3, 4, 5, 6])
def test_a_guided_run_never_ends_worse_than_its_guide(number):
    """The guide's positions are kept besides the width best, at any width."""
    state = deal(number)
    guide = playout_line(state)
    model, root = sm.root(state)
    for width in (1, 2):
        found = beam.Beam(model, root).run(width, guide)
        assert found.score <= guide.score
        check_line(state, found)


def test_whole_deals_get_far_better_lines_than_the_playouts():
    """Measured at widths 8-32: deals 1-4 score 15, 11, 20, 18 against the
    playouts' 24, 24, 24, 29."""
    gains = []
    for number in (1, 2, 3, 4):
        state = deal(number)
        found = beam.best_lines(state, deadline=None, widths=(8, 16, 32))
        assert found is not None
        gains.append(playout_line(state).score - found.score)
    assert min(gains) >= 1 and sum(gains) >= 25, gains


def test_a_line_at_the_floor_stops_the_widths():
    found = beam.best_lines(deal(1), deadline=None, widths=(8, 16, 32), floor=90)
    assert found is not None and found.runs == (8,)


def test_a_passed_deadline_gives_the_first_runs_line_or_the_guide():
    """With no line in hand the first run ends past the deadline, and no
    other starts; with a guide no run starts and the guide comes back."""
    state = deal(2)
    model, root = sm.root(state)
    past = time.monotonic() - 1
    found = beam.Beam(model, root).best(deadline=past, widths=(8, 16))
    assert found is not None and found.runs == (8,)
    assert found == beam.best_lines(state, deadline=None, widths=(8,))
    guide = playout_line(state)
    assert beam.Beam(model, root).best(deadline=past, guide=guide) == guide


def test_a_width_the_pace_says_cannot_end_in_time_is_not_started():
    """The estimate scales the last run's seconds by the widths' ratio; a run
    predicted to end after the deadline is skipped, so the beam hands over
    at once instead of spending the rest of its time on a cut run."""
    assert beam.fits(None, 8, now=0.0, deadline=0.1)  # the first run: tried
    assert beam.fits((64, 0.2), 128, now=0.0, deadline=None)
    assert beam.fits((64, 0.2), 128, now=1.0, deadline=1.5)  # 0.4 s: fits
    assert not beam.fits((64, 0.2), 128, now=1.0, deadline=1.3)
    assert not beam.fits((64, 0.2), 256, now=1.0, deadline=1.7)  # 0.8 s
    began = time.monotonic()
    found = beam.best_lines(deal(1), deadline=began + 5, widths=(8, 8192))
    assert found is not None and found.runs == (8,)  # 8192: about 25 s
    assert time.monotonic() - began < 2.5  # not the 5 s of a cut run


def test_the_search_prover_reports_the_beam_line_for_the_score_question():
    """The prover replays its line before returning it (`check_result`).

    Deal 2's verdict takes a few hundredths of a second, so the beam gets its
    share (0.6 s of 3 s): measured 11 cards against the playouts' 24.
    """
    state = deal(2)
    result = search.prove(state, question=Question.SCORE, time_limit=3)
    assert result.status is Status.LOST and result.proven
    assert result.best_score is not None
    assert result.best_score + 5 <= playout_line(state).score
    assert result.elapsed < 6


def test_a_score_answer_whose_verdict_runs_out_still_gets_the_beam_line():
    """Deal 20's win search does not finish in 3 s (nor in 10 s): the beam gets
    the last 0.6 s instead, and its line is reported (measured 11 against 30)."""
    state = deal(20)
    result = search.prove(state, question=Question.SCORE, time_limit=3)
    assert result.status is Status.UNKNOWN and result.best_score is not None
    assert result.best_score + 5 <= playout_line(state).score
    assert result.elapsed < 6


def test_the_line_benchmark_replays_every_line_and_prints_the_sums(capsys):
    argv = ["--start", "3", "--count", "1", "--budgets", "1", "--lns", "1"]
    assert bench_lines.main(argv) == 0
    table = capsys.readouterr().out.splitlines()
    assert "then LNS 1 s" in table[0]
    playouts, beam, lns = (int(c.split()[0]) for c in table[-1].split("|")[2:5])
    assert table[2].startswith("| 3 | ") and lns <= beam <= playouts


@pytest.mark.parametrize("number", [1, 3])
def test_each_better_line_is_handed_on_as_its_run_ends(number):
    """``on_line`` sees every improvement, best last: the returned line."""
    state = deal(number)
    seen: list[beam.BeamLine] = []
    found = beam.best_lines(
        state, deadline=None, widths=(1, 2, 4, 8, 16), on_line=seen.append
    )
    assert found is not None and seen and seen[-1].score == found.score
    scores = [line.score for line in seen]
    assert scores == sorted(set(scores), reverse=True)  # strictly better each time
    for line in seen:
        check_line(state, line)
    streamed: list[tuple[int, list[dg.Move]]] = []
    score_moves = beam.reference_line(
        state, deadline=None, on_line=lambda s, m: streamed.append((s, m))
    )
    assert score_moves is not None and streamed[-1] == score_moves


def test_the_search_beam_makes_each_better_line_the_incumbent_at_once():
    prover = search.Search(deal(2))
    prover.playouts(search.PLAYOUTS, seed=1)
    before = prover.incumbent.score
    taken: list[int] = []
    prover.beam(1.0, on_line=lambda: taken.append(prover.incumbent.score))
    assert taken and taken[0] < before
    assert taken == sorted(set(taken), reverse=True)
    assert taken[-1] == prover.incumbent.score


def test_the_search_prover_reports_each_beam_line_as_it_comes():
    """A portfolio member's lines reach the runner, each replayed."""
    reports: list[ProofResult] = []
    set_partial_sink(reports.append)
    try:
        result = search.prove(deal(2), question=Question.SCORE, time_limit=3)
    finally:
        set_partial_sink(None)
    scores = [r.best_score for r in reports if r.best_score is not None]
    assert len(set(scores)) >= 2  # the playouts' line, then the beam's better ones
    assert scores == sorted(scores, reverse=True)
    assert min(scores) == result.best_score
    for report in reports:
        check_result(dg.GAME, deal(2), report)


def test_a_line_whose_score_the_reference_engine_disputes_is_refused():
    """The score handed to other provers is the reference engine's count."""
    from dataclasses import replace

    state = dg.initial_state(dg.numbered_deal(12))
    found = beam.best_lines(state, deadline=None, widths=(8,))
    assert found is not None
    score, moves = beam._in_reference_moves(state, found)
    assert score == found.score == replay(dg.GAME, state, moves).score
    with pytest.raises(ResultCheckError, match="beam's line leaves"):
        beam._in_reference_moves(state, replace(found, score=found.score - 1))
