"""The prover registry and its time-limited runner."""

from __future__ import annotations

import gc
import os
import random
import re
import time
from dataclasses import replace

import pytest

from patience_encodings import bench_positions, engines
from verifier import devils_grip as dg
from verifier.errors import InputError, UnsupportedError
from verifier.formats import Start, start_from_number
from verifier.registry import get_game
from verifier.replay import replay
from verifier.results import (
    ProofResult,
    Question,
    ResultCheckError,
    Status,
    answer_deadline,
    check_result,
    line_elsewhere,
    report_partial,
)

SCORE = Question.SCORE

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


def test_a_question_no_prover_can_answer_is_an_error_not_unknown():
    bf = start_from_number(get_game("besieged-fortress"), 1)
    for engine in ("auto", "search"):
        with pytest.raises(UnsupportedError, match="no score to prove"):
            engines.solve(bf, question=Question.SCORE, engine=engine, time_limit=2)


def _refusing(state, *, question, time_limit):
    raise UnsupportedError("this prover refuses every position")


def _beside_search(member):
    """Deal 1's verdict by a portfolio of ``member`` (as "a") and the search."""
    search = engines.PROVERS["search"][GAME.name]
    state = start_from_number(GAME, 1).state
    return engines._portfolio(
        {"a": member, "search": search}, state, Question.VERDICT, 10
    )


def test_members_that_all_refuse_the_input_raise_its_error():
    state = start_from_number(GAME, 1).state
    both = {"a": _refusing, "b": _refusing}
    with pytest.raises(UnsupportedError, match="refuses every position"):
        engines._portfolio(both, state, Question.VERDICT, 10)
    # One member refusing is only that member's limit: the other answers.
    result = _beside_search(_refusing)
    assert result.status is Status.LOST and result.proven


def test_auto_has_a_portfolio_for_every_game_and_question():
    for game in ("devils-grip", "besieged-fortress"):
        for question in Question:
            assert engines.PORTFOLIO[game][question], (game, question)


def test_the_second_member_counts_short_stacks_early_and_searches_late():
    """On a whole deal it runs RC2 at once, and its optimal model is a line
    (deal 12: best score 6); with 12 stock cards left it is the search."""
    whole = start_from_number(GAME, 12).state
    result = engines._devils_grip_cores_or_search(whole, question=SCORE, time_limit=60)
    assert result.engine == "sat" and result.score_proven
    assert result.best_score == 6 and "beam_s" not in result.stats
    late = _late_start(5).state
    result = engines._devils_grip_cores_or_search(late, question=SCORE, time_limit=30)
    assert result.engine == "search" and result.score_proven


def test_auto_proves_a_late_best_score_quickly():
    """A late position is settled before the SAT members' beams would end."""
    start = _late_start(5)
    result = engines.solve(start, question=Question.SCORE, time_limit=30)
    assert result.score_proven and result.elapsed < 5


def test_cores_come_from_the_environment_or_the_affinity(monkeypatch):
    monkeypatch.setenv(engines.CORES_ENV, "3")
    assert engines.cores_available() == 3
    monkeypatch.delenv(engines.CORES_ENV)
    assert engines.cores_available() == len(os.sched_getaffinity(0))


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5"])
def test_a_bad_core_count_is_named(monkeypatch, text):
    monkeypatch.setenv(engines.CORES_ENV, text)
    with pytest.raises(InputError, match=engines.CORES_ENV):
        engines.cores_available()


def test_a_proof_needs_a_core():
    with pytest.raises(InputError, match="cores 0"):
        engines.solve(_late_start(5), question=SCORE, cores=0)


def test_with_few_cores_auto_runs_one_member_for_best_scores():
    """No more cores than members: best scores run `FEW_CORES`'s choice
    alone; verdicts keep the portfolio, which shares one core well; with a
    core to spare the portfolio runs."""
    start = _late_start(5)
    both = list(engines.PORTFOLIO["devils-grip"][SCORE])
    alone = list(engines.FEW_CORES["devils-grip"][SCORE])
    assert len(alone) < len(both)
    for cores in (1, len(both)):
        result = engines.solve(start, question=SCORE, time_limit=30, cores=cores)
        assert result.score_proven
        assert result.stats["run"] == {"members": alone, "cores": cores}
    spare = len(both) + 1
    result = engines.solve(start, question=SCORE, time_limit=30, cores=spare)
    assert result.score_proven and result.stats["run"]["members"] == both
    verdict = engines.solve(start, question=Question.VERDICT, time_limit=30, cores=1)
    assert verdict.proven
    assert verdict.stats["run"]["members"] == list(
        engines.PORTFOLIO["devils-grip"][Question.VERDICT]
    )


def test_the_one_core_member_finds_lines_early_and_searches_late():
    early = dg.initial_state(dg.numbered_deal(12))
    assert len(early.stock) > engines.LATE_STOCK
    result = engines._devils_grip_lines_or_search(early, question=SCORE, time_limit=1)
    assert result.engine == "sat" and result.line
    late = _late_start(5).state
    assert len(late.stock) <= engines.LATE_STOCK
    result = engines._devils_grip_lines_or_search(late, question=SCORE, time_limit=30)
    assert result.engine == "search" and result.score_proven


def test_a_named_engine_runs_alone_whatever_the_cores():
    result = engines.solve(
        _late_start(5), question=SCORE, engine="search", time_limit=30, cores=4
    )
    assert result.stats["run"] == {"members": ["search"], "cores": 4}


def _late_start(seed: int) -> Start:
    """A late position of a numbered deal: merges at random, 12 stock cards left."""
    rng = random.Random(seed)
    state = dg.initial_state(dg.numbered_deal(rng.randrange(1, 10**6)))
    while len(state.stock) > 12:
        moves = dg.legal_moves(state, swaps=False)
        merges = [m for m in moves if isinstance(m, dg.Merge)]
        state = dg.apply(state, rng.choice(merges) if merges else dg.DEAL)
    return Start(GAME, state, "position")


def test_a_line_and_a_bound_from_two_engines_prove_the_best_score_together():
    start = _late_start(3)
    sat = engines.solve(start, question=Question.SCORE, engine="sat", time_limit=60)
    assert sat.score_proven and sat.best_score >= 2
    best = sat.best_score
    # What two engines might report mid-run: one has the line, one the bound.
    line_only = replace(sat, engine="a", score_proven=False, lower_bound=1)
    bound_only = replace(
        sat, engine="b", score_proven=False, best_score=None, line=(), lower_bound=best
    )
    together = engines.combine_bounds([line_only, bound_only], Question.SCORE)
    assert together is not None and together.score_proven
    assert (together.best_score, together.engine) == (best, "a+b")
    assert "b proves every line leaves at least" in together.method
    check_result(GAME, start.state, together)  # the line is real
    short = replace(bound_only, lower_bound=best - 1)
    assert engines.combine_bounds([line_only, short], Question.SCORE) is None
    # Unsettled at the limit: the answer keeps the line and the higher bound.
    merged = engines._best_unsettled([line_only, short], [], ["a", "b"], 9, SCORE)
    assert (merged.best_score, merged.lower_bound) == (best, best - 1)
    assert not merged.score_proven and "b proves every line leaves" in merged.method
    assert engines.combine_bounds([line_only], Question.SCORE) is None
    assert engines.combine_bounds([line_only, bound_only], Question.VERDICT) is None
    # A line below another engine's proven bound: one of them is wrong, and
    # the runner says so instead of reporting an optimum.
    over = replace(bound_only, lower_bound=best + 1)
    with pytest.raises(ResultCheckError, match="proves every line leaves at least"):
        engines.combine_bounds([line_only, over], Question.SCORE)
    with pytest.raises(ResultCheckError):
        engines._best_unsettled([line_only, over], [], ["a", "b"], 9, SCORE)
    # The replay holds a result's line against its own bound, too.
    with pytest.raises(ResultCheckError, match="lower bound"):
        check_result(GAME, start.state, replace(sat, lower_bound=best + 1))
    # A failed member is on the record of the answer that settled without it.
    kept = engines._best_unsettled(
        [sat], ["c: a line that does not replay"], [], 9, SCORE
    )
    assert kept.stats["errors"] == ["c: a line that does not replay"]


def test_a_line_that_wins_refutes_a_lost_result():
    won = dg.parse_position_text("")  # every stack complete: won already
    assert dg.is_won(won)
    lie = ProofResult(status=Status.LOST, proven=True, engine="x")
    with pytest.raises(ResultCheckError, match="a lost result's line ends won"):
        check_result(GAME, won, lie)


def test_members_of_a_portfolio_see_the_best_line_of_the_others():
    """The runner passes a member's line score to the others (`line_elsewhere`).

    Two stand-in members in real processes: one reports a real line and waits;
    the other waits for the score to reach it and answers with it as a bound,
    so the portfolio's answer combines the two.
    """
    start = _late_start(3)
    sat = engines.solve(start, question=Question.SCORE, engine="sat", time_limit=60)
    best = sat.best_score
    line_only = replace(sat, engine="a", score_proven=False, lower_bound=1)

    def reporter(state, *, question, time_limit):
        report_partial(line_only)
        time.sleep(time_limit)
        return line_only

    def reader(state, *, question, time_limit):
        until = time.monotonic() + time_limit
        while line_elsewhere() is None and time.monotonic() < until:
            time.sleep(0.01)
        seen = line_elsewhere()
        return replace(
            sat,
            engine="b",
            best_score=None,
            line=(),
            score_proven=False,
            lower_bound=seen if seen is not None else 0,
        )

    began = time.monotonic()
    result = engines._portfolio({"a": reporter, "b": reader}, start.state, SCORE, 20)
    assert result.score_proven and result.engine == "a+b"
    assert result.best_score == best and time.monotonic() - began < 10
    assert line_elsewhere() is None  # no runner in this process


def test_a_member_leaves_the_objects_it_inherited_to_the_parent():
    """A member starts with what it inherited frozen (`processes.start_child`):
    its cycle collections walk only its own objects. The parent's stay
    collectable (nothing frozen here)."""
    start = _late_start(3)
    sat = engines.solve(start, question=Question.VERDICT, engine="sat", time_limit=60)
    inherited = len(gc.get_objects())

    def member(state, *, question, time_limit):
        return replace(sat, stats={"frozen": gc.get_freeze_count()})

    result = engines._portfolio({"a": member}, start.state, Question.VERDICT, 20)
    assert result.stats["frozen"] >= inherited // 2
    assert gc.get_freeze_count() == 0


@pytest.mark.parametrize(
    ("limit", "given"), [(1.0, 0.75), (5.0, 4.5), (10.0, 9.0), (60.0, 59.0)]
)
def test_members_get_the_limit_less_a_tenth_and_may_deliver_until_the_stop(
    limit, given
):
    """A member runs in a real process with the limit the runner gives it:
    a tenth short (at least `GRACE`), but never more than a second short, so
    a long proof is not cut a tenth early. Beside it the member learns the
    instant by which a proof must be sent (`verifier.results.answer_deadline`):
    `engines.ANSWER_MARGIN` before the runner stops it, later than its limit.
    Outside a runner there is no such instant."""
    start = _late_start(3)
    proven = engines.solve(start, question=Question.VERDICT, engine="search")
    began = time.monotonic()

    def member(state, *, question, time_limit):
        return replace(proven, stats={"given": time_limit, "by": answer_deadline()})

    result = engines._portfolio({"a": member}, start.state, Question.VERDICT, limit)
    assert result.stats["given"] == pytest.approx(given)
    by = result.stats["by"] - began
    assert by == pytest.approx(limit - engines.ANSWER_MARGIN, abs=0.05)
    assert by > result.stats["given"]
    assert answer_deadline() is None


def test_bench_positions_lies_on_the_beam_line_and_proves_late_positions(capsys):
    """The positions benchmark: fixed positions, each late one proven by auto."""
    first = list(bench_positions.positions(3, [30, 12]))
    again = list(bench_positions.positions(3, [30, 12]))
    assert [left for left, _ in first] == [30, 12]
    assert first == again
    assert all(len(s.stock) <= left for left, s in first)
    assert bench_positions.main(["--count", "1", "--start", "3", "--left", "12"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\| 3 \| 1[0-2] \| auto \| \d+ \| yes \|", out, re.M)
    assert "| ≤ 12 | auto | 1 | 1 |" in out
    assert "Cross-check" not in out  # one engine: nothing to cross-check


def test_bench_positions_cross_checks_the_engines_on_each_position(capsys):
    """Several engines answer each position, and their answers must agree."""
    argv = ["--count", "1", "--start", "3", "--left", "12", "--engine", "sat,search"]
    assert bench_positions.main(argv) == 0
    out = capsys.readouterr().out
    scores = re.findall(r"^\| 3 \| \d+ \| (sat|search) \| (\d+) \| yes \|", out, re.M)
    assert [name for name, _ in scores] == ["sat", "search"]
    assert scores[0][1] == scores[1][1]
    assert "Cross-check of sat, search on 1 positions: 0 disagreements" in out
    # What the cross-check catches: a proven bound above another's line.
    [(_, state)] = bench_positions.positions(3, [12])
    start = Start(GAME, state, "position")
    answers = {
        name: engines.solve(start, question=Question.SCORE, engine=name)
        for name in ("sat", "search")
    }
    assert bench_positions.disagreement(answers) is None
    best = answers["sat"].best_score
    wrong = replace(answers["search"], best_score=best + 1, lower_bound=best + 1)
    clash = bench_positions.disagreement({**answers, "search": wrong})
    assert clash == (
        f"sat's line leaves {best}, but search proves every line leaves at least "
        f"{best + 1}"
    )
    with pytest.raises(SystemExit) as exc:
        bench_positions.main(["--engine", "sat,nope"])
    assert exc.value.code == 2


def _crashing(state, *, question, time_limit):
    raise RuntimeError("this prover crashes at once")


def _unsound(state, *, question, time_limit):
    raise ResultCheckError("step 3: 5C does not fit on 8S")


def test_members_that_all_crash_are_not_reported_as_out_of_time():
    state = start_from_number(GAME, 1).state
    began = time.monotonic()
    result = engines._portfolio(
        {"a": _crashing, "b": _crashing}, state, Question.VERDICT, 10
    )
    assert time.monotonic() - began < 5  # it did not wait for the limit
    assert result.status is Status.UNKNOWN and not result.proven
    assert result.method.startswith("no proof: every engine failed")
    assert "this prover crashes at once" in result.method
    assert "within" not in result.method
    assert len(result.stats["errors"]) == 2


def test_a_line_that_fails_the_replay_is_raised_when_no_member_answers():
    state = start_from_number(GAME, 1).state
    members = {"a": _unsound, "b": _crashing}
    with pytest.raises(ResultCheckError, match="a: step 3: 5C does not fit on 8S"):
        engines._portfolio(members, state, Question.VERDICT, 10)
    # Another member's sound answer still stands, with the failure on record.
    result = _beside_search(_unsound)
    assert result.status is Status.LOST and result.proven
    assert any("failed the replay" in e for e in result.stats["errors"])
