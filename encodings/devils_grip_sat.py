"""The SAT prover for Devil's Grip: exact verdicts and proven best scores.

The encoding lives in `patience_encodings.devils_grip_sat_cnf` (its docstring
carries the exactness argument: the stock-pointer slots ``0..n`` cover every
line, so UNSAT means no line at all). This module drives CaDiCaL 1.9.5 through
python-sat:

- VERDICT: one call on the win formula. SAT gives a line, decoded and replayed
  with the reference engine (plus the sorting swaps); UNSAT proves the deal
  lost.
- SCORE: one incremental solver on the score formula. First "win?" under
  assumptions (the win literals); then a first line from the beam search
  (`verifier.devils_grip_beam`), or else any model, finished greedily (after
  the stock is exhausted only talon plays matter, and which copy a talon card
  goes on does not change the tops); then, for a share of the time, a
  large-neighbourhood search (`devils_grip_lns`) asks for "at most s-1 cards
  left" (a totalizer, under assumptions) with windows of the line's stock
  free, growing to the whole formula, where UNSAT proves the line optimal;
  then core-guided MaxSAT (`devils_grip_score`) raises a proven lower bound
  until it meets the line, counting the score two ways side by side: cards
  left unlinked, and cards missing from the grid's stacks. A `Plan` can run
  lines for the whole limit instead (`LINES`), or one view at once with no
  line of its own (`AT_ONCE`): ``auto`` runs the two side by side.

Every line is replayed with `verifier.results.check_result` before it is
returned. ``time_limit`` is honoured between solver calls and by conflict
budgets inside them (CaDiCaL cannot be interrupted through pysat); the portfolio
runner kills the process at the hard limit anyway.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from pysat.solvers import Solver

from verifier import devils_grip as dg
from verifier import devils_grip_beam
from verifier.cards import card_count
from verifier.results import (
    ProofResult,
    Question,
    Status,
    answer_deadline,
    check_result,
    line_elsewhere,
    report_partial,
)

from . import devils_grip_score as score_mod
from .devils_grip_lns import GROWTH, ONE_SWEEP, Neighbourhoods
from .devils_grip_sat_cnf import Encoding, build_encoding
from .devils_grip_sat_lines import decode

ENGINE = "sat"
SOLVER = "cadical195"
#: Conflicts per budgeted call when a time limit is set (then the clock is read).
CONFLICT_CHUNK = 10_000
#: Share of the time limit the line search gets (counted from the start, beam
#: included) before the core-guided search, and its cap in seconds (also its
#: allowance without a limit): the whole-formula descent's old share.
#: Sharing a third of the time with the core-guided search all along did
#: worse (one run each at 10 s: deal 7's bound 9 -> 5, deal 12 unproven). Up
#: to a 20 s limit the beam's own share covers it; at 60 s the line search
#: gets 3 s, and deal 7's optimal line (11, the beam's 13 before) takes it
#: 0.9 s.
LINES_SHARE = 0.1
LINES_MAX = 5.0


@dataclass(frozen=True)
class Plan:
    """How a best-score run spends its time: the beam's share, the views.

    The default (`BOTH_VIEWS`, the ``sat`` engine alone) runs both views of
    the score in one process after a short beam and a short line search.
    ``auto`` splits the work over two processes instead: one finds lines
    for the whole limit (`LINES`), the other counts short stacks at once
    (`AT_ONCE`; see `patience_encodings.engines`).
    """

    #: The one score view the core-guided search runs
    #: (`devils_grip_score.views`), or None for all of them side by side.
    view: str | None = None
    beam_share: float = devils_grip_beam.SHARE
    beam_cap: float = devils_grip_beam.MAX_SECONDS
    #: Whether to find a line (beam, neighbourhood search) before the
    #: core-guided search. Without one only lines found elsewhere restrict
    #: the search, and it brings a line only with its optimal model.
    line_first: bool = True
    #: When the line search (beam included) hands over to the core-guided
    #: search: at this share of the limit, counted from the start, and at
    #: most ``lines_cap`` seconds in (also its allowance without a limit);
    #: a cap of None lets it run to the limit, or without a limit until its
    #: whole-formula descent answers.
    lines_share: float = LINES_SHARE
    lines_cap: float | None = LINES_MAX
    #: How the neighbourhood search's windows grow after a fruitless sweep
    #: (`devils_grip_lns.Neighbourhoods`): by default through four widths
    #: to the whole formula; `devils_grip_lns.ONE_SWEEP` goes there after one.
    window_growth: float = GROWTH
    #: The SAT solver of the win check and the line search (the core-guided
    #: search runs on its own, `devils_grip_score.CORE_SOLVER`).
    solver: str = SOLVER


BOTH_VIEWS = Plan()
#: The line-finding member's solver. With the cells' count
#: (`Encoding.encode_cells`) Glucose 4 refutes the last call, "one card
#: fewer" on the whole formula, 1.3-1.5 times faster than CaDiCaL 1.9.5
#: (deals 1, 12, 43, 46, 60, 62, 72, 90, side by side). ``auto`` at 10 s,
#: one run each on the same day: 54 of deals 1-100 against 50 (1-40: 18
#: both, the same deals; 41-60: 12 against 9; 61-100: 24 against 23) --
#: within what one run tells, but never behind.
LINES_SOLVER = "glucose4"
#: The line-finding member's beam cap in seconds. Deals 1-20 in ``auto`` at
#: 60 s, one run each (the member then counted short stacks): 9 best scores
#: proven with 25 s, 11 with 10 s (deals 18 and 20 besides; 12 in 11.5 s
#: instead of 17 s), 10 with 5 s (deal 4 lost its line); lines summing 241,
#: 240 and 244.
LINES_BEAM_MAX = 10.0
#: Lines for the whole limit: in ``auto`` this member brings the lines (a
#: long beam: `devils_grip_beam.LONG_SHARE` of the limit, at most
#: `LINES_BEAM_MAX` seconds, then the neighbourhood search to the end),
#: which restrict the other member's short-stacks search (`AT_ONCE`) as they
#: come. The neighbourhood search's last stage, the whole formula under
#: "one card fewer" (`devils_grip_lns`), is this member's own proof: UNSAT
#: there proves its line optimal. So the core-guided search never runs in
#: this member (``view`` names the count it would run if the line search
#: ended without settling the score, which it does not). It replaced the
#: unlinked-cards count after the beam, which at 10 s decided 0 or 1 of
#: 100 proofs: ``patience bench --engine auto --count 100 --time-limit 10
#: --score``, two runs each on the idle machine, 51 and 46 best scores
#: proven against 40 and 44, lines summing 1153 and 1162 against 1202 and
#: 1187; deals 1-40 at 60 s, 37 against 35 (deal 25 in 46 s, by the
#: descent; its proof took RC2 115-266 s).
LINES = Plan(
    view="links",
    beam_share=devils_grip_beam.LONG_SHARE,
    beam_cap=LINES_BEAM_MAX,
    lines_share=1.0,
    lines_cap=None,
    solver=LINES_SOLVER,
)
#: Short stacks at once: RC2 from the start, with no line of its own. In
#: ``auto`` (`patience_encodings.engines`) the lines the `LINES`
#: member reports restrict it as they come (`devils_grip_score.least_score`'s
#: ``elsewhere``), and on easy deals it proves the best score while that
#: member's beam still runs (deals 41, 68 and 88 in under a second). Even
#: a brief beam first costs it these: the beam needs about 0.5 s for its
#: first line, and without it the solver's first model can take a second.
AT_ONCE = Plan(view="grid", line_first=False)
#: `LINES` for a prover alone (``auto`` on one or two cores,
#: `patience_encodings.engines.FEW_CORES`): a short beam, a twentieth of
#: the limit (a tenth until the merge count left the score formula, which
#: made the descent faster: pinned, 10 s, deals 1-100 and 101-200, 0.05
#: proved 100 and 99 with median proofs 1.61 and 1.55 s, against 0.1's
#: 100 and 99, 1.82 and 2.04 s, the same day; sooner on 77 and 87 of the
#: proofs both made; 0.02 100 and 100, 1.70 s on 101-200). Alone, the
#: descent must prove every best score itself, and it improves a short
#: beam's line fast; in the portfolio the long beam's early lines restrict
#: the other member. Pinned to one core, 10 s, one run each, the merge
#: count still in: deals 1-100, beam 0.4 of the limit 86 proven (proofs
#: median 4.80 s, the fastest 2.6 s), 0.2 88 (4.27 s), 0.1 89 (3.88 s,
#: 0.8 s), 0.05 90 (4.35 s, 0.6 s); deals 101-200, 0.4 86 (5.35 s), 0.1 88
#: (4.23 s).
#: Its windows go to the whole formula after one fruitless sweep of 18
#: slots (`devils_grip_lns.ONE_SWEEP`) instead of through widths 27, 40
#: and 60: once the line is near the optimum those sweeps mostly refute
#: their windows one by one, and the whole formula finds the last better
#: lines itself (deal 4: 14 in 2.4 s, then UNSAT in 0.9 s; deal 1's 21
#: fruitless windows took 0.7 s before its 0.9 s proof). Pinned, 10 s, the
#: two side by side on the two cores: deals 1-100 97 proven against 95
#: (median proof 2.97 s against 3.47 s), 101-200 97 against 90 (3.05 s
#: against 3.44 s); one sweep of 12 or of 27 slots first, deals 1-100, 98
#: and 98 (3.20 s, 3.35 s). Each line the whole formula finds then gets one
#: sweep of its own before the whole formula's next turn, and every new line
#: is first asked with the cards it links kept linked, in full and with each
#: chain free (`devils_grip_lns.Neighbourhoods.steps`).
ALONE = replace(LINES, beam_share=0.05, window_growth=ONE_SWEEP)


@dataclass
class _Run:
    """Book-keeping for one `prove` call: the clock and the figures reported."""

    began: float
    deadline: float | None
    dominance: bool | None = None
    plan: Plan = BOTH_VIEWS
    stats: dict[str, Any] = field(default_factory=dict)

    def elapsed(self) -> float:
        return round(time.monotonic() - self.began, 4)

    def expired(self) -> bool:
        """Whether the limit has passed (nothing more should be started)."""
        return self.deadline is not None and time.monotonic() >= self.deadline


def prove(
    state: dg.State,
    *,
    question: Question = Question.VERDICT,
    time_limit: float | None = None,
    plan: Plan = BOTH_VIEWS,
) -> ProofResult:
    """Answer ``question`` about a Devil's Grip position, with a proof."""
    return solve_position(state, question=question, time_limit=time_limit, plan=plan)


def solve_position(
    state: dg.State,
    *,
    question: Question,
    time_limit: float | None,
    dominance: bool | None = None,
    plan: Plan = BOTH_VIEWS,
) -> ProofResult:
    """`prove`, with the choice to add or leave out the dominance restrictions.

    Without them the formula admits every line, not just a normal form of
    each; the answers must be the same (the tests check it), only slower.
    """
    began = time.monotonic()
    deadline = None if time_limit is None else began + time_limit
    run = _Run(began, deadline, dominance, plan)
    if question is Question.VERDICT:
        result = _prove_verdict(state, run)
    else:
        result = _prove_score(state, run)
    return check_result(dg.GAME, state, result)


# -- solver plumbing ------------------------------------------------------------------
def _encode(state: dg.State, question: Question, run: _Run) -> Encoding:
    t0 = time.perf_counter()
    enc = build_encoding(state, question, dominance=run.dominance)
    run.stats.update(
        vars=enc.pool.top,
        clauses=len(enc.clauses),
        build_s=round(time.perf_counter() - t0, 4),
        solve_s=0.0,
        sat_calls=0,
    )
    return enc


def _solver(enc: Encoding, run: _Run) -> Solver:
    """Return the plan's solver loaded with the clauses (the load time is
    reported)."""
    t0 = time.perf_counter()
    solver = Solver(name=run.plan.solver, bootstrap_with=enc.clauses)
    run.stats["load_s"] = round(time.perf_counter() - t0, 4)
    return solver


def _solve(
    solver: Solver, assumptions: list[int], run: _Run, until: float | None = None
) -> bool | None:
    """Solve under ``assumptions``; None when ``until`` (or the limit) came first."""
    t0 = time.perf_counter()
    run.stats["sat_calls"] += 1
    stop = run.deadline if until is None else until
    try:
        if stop is None:
            return solver.solve(assumptions=assumptions)
        while time.monotonic() < stop:
            solver.conf_budget(CONFLICT_CHUNK)
            status = solver.solve_limited(assumptions=assumptions)
            if status is not None:
                return status
        return None
    finally:
        run.stats["solve_s"] = round(run.stats["solve_s"] + time.perf_counter() - t0, 4)


def model_line(enc: Encoding, model: list[int]) -> tuple[list[dg.Move], dg.State]:
    """Decode ``model`` and finish it: sorting swaps if complete, else talon plays."""
    moves = decode(enc, model)
    state = enc.layout.state
    for move in moves:
        state = dg.apply(state, move)
    if dg.is_complete(state):
        return moves + dg.finishing_moves(state), state
    while not dg.is_stuck(state):
        card = state.talon[-1]
        dst = next(i for i, s in enumerate(state.grid) if s and dg.fits(card, s[-1]))
        move = dg.TalonPlay(dst)
        state = dg.apply(state, move)
        moves.append(move)
    return moves, state


def _notation(moves: list[dg.Move]) -> tuple[str, ...]:
    return tuple(dg.format_move(m) for m in moves)


def _size(run: _Run) -> str:
    return f"{run.stats['vars']} vars, {run.stats['clauses']} clauses"


# -- verdict --------------------------------------------------------------------------
def _prove_verdict(state: dg.State, run: _Run) -> ProofResult:
    enc = _encode(state, Question.VERDICT, run)
    with _solver(enc, run) as solver:
        status = _solve(solver, [], run)
        model = solver.get_model() if status else None
    if model is not None:
        moves, _ = model_line(enc, model)
        return _won(moves, run, Question.VERDICT, "SAT: the decoded line wins")
    if status is None:
        return _unknown(run, Question.VERDICT, None, None, ())
    return ProofResult(
        status=Status.LOST,
        proven=True,
        engine=ENGINE,
        question=Question.VERDICT,
        lower_bound=1,
        method=(
            f"UNSAT: no winning line (stock-pointer CNF over slots "
            f"0..{enc.layout.n}, which cover every line; {_size(run)})"
        ),
        elapsed=run.elapsed(),
        stats=run.stats,
    )


def _won(moves: list[dg.Move], run: _Run, question: Question, how: str) -> ProofResult:
    return ProofResult(
        status=Status.WON,
        proven=True,
        engine=ENGINE,
        question=question,
        best_score=0,
        score_proven=True,
        lower_bound=0,
        line=_notation(moves),
        method=f"{how} ({_size(run)})",
        elapsed=run.elapsed(),
        stats=run.stats,
    )


def _unknown(
    run: _Run,
    question: Question,
    best: int | None,
    lower: int | None,
    line: tuple[str, ...],
) -> ProofResult:
    return ProofResult(
        status=Status.UNKNOWN,
        proven=False,
        engine=ENGINE,
        question=question,
        best_score=best,
        lower_bound=lower,
        line=line,
        method="time limit reached before a proof",
        elapsed=run.elapsed(),
        stats=run.stats,
    )


# -- best score -----------------------------------------------------------------------
@dataclass
class _Best:
    """The best line found so far and the proven lower bound on the score."""

    lower: int
    score: int | None = None
    moves: list[dg.Move] = field(default_factory=list)
    #: The score view whose core-guided search proved ``lower`` (if one did),
    #: or `DESCENT` when the totalizer refuted "one card fewer" outright.
    view: str = ""

    def settled(self) -> bool:
        return self.score is not None and self.score <= self.lower

    @property
    def line(self) -> tuple[str, ...]:
        return _notation(self.moves)


#: `_Best.view` when the whole formula under "at most best - 1" is UNSAT.
DESCENT = "descent"


def _prove_score(state: dg.State, run: _Run) -> ProofResult:
    """Win check, the beam's line, better lines, then core-guided bounds.

    The neighbourhood search (`devils_grip_lns`) gets the plan's share of
    the time (`Plan.lines_share`, at most `Plan.lines_cap` seconds; by
    default `LINES_SHARE` and `LINES_MAX`); the core-guided search
    (`devils_grip_score`) then raises a proven lower bound until it meets
    the best line's score or returns an optimal model itself. A plan without
    a line first (`AT_ONCE`) goes straight to the core-guided search,
    restricted only by lines found elsewhere: every bound it reports is
    proven all the same, and it ends settled only with a model of the
    least score, replayed (a bound that meets another member's line
    settles the score in the portfolio: `engines.combine_bounds`).
    """
    enc = _encode(state, Question.SCORE, run)
    with _solver(enc, run) as solver:
        status = _solve(solver, enc.win_literals(), run)
        if status:
            moves, _ = model_line(enc, solver.get_model())
            return _won(moves, run, Question.SCORE, "SAT: the decoded line wins")
        if status is None:
            return _unknown(run, Question.SCORE, None, None, ())
        best = _Best(lower=1)
        run.stats["lines"] = []
        if run.plan.line_first:
            _beam_line(state, run, best)
            _better_lines(enc, solver, run, best, _lines_deadline(run))
    if not best.settled() and not run.expired():
        _raise_lower_bound(enc, run, best)
    if best.settled():
        return _lost_proven(run, best)
    there = line_elsewhere()
    if best.score is None and there is not None and best.lower >= there:
        return _lost_unproven(run, best, when=MET_ELSEWHERE)
    return _lost_unproven(run, best)


def _beam_line(state: dg.State, run: _Run, best: _Best) -> None:
    """Start from the beam's line (`verifier.devils_grip_beam`).

    On whole deals it finds lines within a few cards of the optimum in well
    under a second (deal 1: 10, the optimum), where the solver's first
    models leave 20-40. It gets `devils_grip_beam.budget` of the limit, and
    its first run ends even when the build has used that up
    (`devils_grip_beam.Beam.best`), so ``best`` always has a line after it.
    Each better line is reported as the beam finds it, so that in a
    portfolio the other members may search below it at once.
    """
    t0 = time.perf_counter()
    limit = None if run.deadline is None else run.deadline - run.began
    plan = run.plan
    until = run.began + devils_grip_beam.budget(limit, plan.beam_share, plan.beam_cap)

    def on_line(score: int, moves: list[dg.Move]) -> None:
        best.score, best.moves = score, moves
        report_partial(_lost_unproven(run, best, when="yet"))

    found = devils_grip_beam.reference_line(
        state, deadline=until, floor=best.lower, on_line=on_line
    )
    run.stats["beam_s"] = round(time.perf_counter() - t0, 4)
    if found is not None:  # its line is ``best``'s already (``on_line``)
        run.stats["beam_score"] = found[0]


def _improve(
    enc: Encoding, model: list[int], *, run: _Run, best: _Best
) -> tuple[int, list[dg.Move]]:
    """Decode ``model`` into a replayed line and make it ``best``'s line.

    The line is reported at once (a prover killed at the limit keeps it).
    That it beats the line before is checked by `Neighbourhoods`, which asked
    for "one card fewer".
    """
    moves, final = model_line(enc, model)
    score = dg.score(final)
    best.score, best.moves = score, moves
    run.stats["lines"].append([score, round(time.monotonic() - run.began, 3)])
    report_partial(_lost_unproven(run, best, when="yet"))
    return score, moves


def _lines_deadline(run: _Run) -> float:
    """Return when the line search must hand over to the core-guided search."""
    plan = run.plan
    cap = math.inf if plan.lines_cap is None else plan.lines_cap
    if run.deadline is None:
        return run.began + cap
    share = plan.lines_share * (run.deadline - run.began)
    return min(run.deadline, run.began + min(share, cap))


def _better_lines(
    enc: Encoding, solver: Solver, run: _Run, best: _Best, until: float
) -> None:
    """Improve ``best`` by neighbourhood search on ``solver`` until ``until``.

    Its last stage is the whole formula under "at most best - 1": UNSAT there
    proves the line optimal (``best.lower`` rises to it, `DESCENT`). The
    totalizer's clauses stay in ``enc.clauses`` (definitions only: they
    remove no model), so the core-guided search's formula has them too, as
    it had with the descent, even when no time is left for this search.
    """
    assert best.score is not None
    tot = enc.add_score_bound(None, best.score - 1 - enc.score_offset)
    if tot is not None:
        for clause in tot.cnf.clauses:
            solver.add_clause(clause)
    improve = partial(_improve, enc, run=run, best=best)
    line = (best.score, best.moves)
    growth = run.plan.window_growth
    lines = Neighbourhoods(enc, solver, tot, line, improve, growth=growth)
    t0 = time.perf_counter()
    try:
        if lines.run(until, stop=best.settled, proof_until=_proof_until(run, until)):
            best.lower, best.view = best.score, DESCENT
    finally:
        run.stats["lns_s"] = round(time.perf_counter() - t0, 4)
        run.stats["lns_calls"] = lines.calls
        run.stats["lns_lines"] = lines.lines_by()


def _proof_until(run: _Run, until: float) -> float | None:
    """Return how long a whole-formula refutation under way at ``until`` may go on.

    Only when the line search runs to the limit (nothing comes after it),
    and under a runner that stops this prover later than its own limit
    (`verifier.results.answer_deadline`): then the refutation, which is the
    proof, has the runner's margin too. Deal 675 on one core: its
    refutation of 18 (145k conflicts) ends 9.3-9.85 s after the start,
    past the 9 s a member is given at 10 s.
    """
    if run.deadline is None or until < run.deadline:
        return None
    return answer_deadline()


def _bounds_until(run: _Run) -> float | None:
    """Return when the core-guided search must stop: at the runner's answer
    deadline if there is one later than the limit (`_proof_until`'s
    reason: every bound is reported as it comes, and the one that meets
    the line, or an optimal model, is the proof), else at the limit."""
    later = answer_deadline()
    if run.deadline is None or later is None:
        return run.deadline
    return max(run.deadline, later)


def _raise_lower_bound(enc: Encoding, run: _Run, best: _Best) -> None:
    """Run the core-guided searches until they meet ``best`` or time runs out.

    Both views of the score run (`devils_grip_score.least_score`); each bound
    is recorded with its view and the time.
    """
    t0 = time.perf_counter()
    run.stats["core_bounds"] = []

    def on_bound(lower: int, view: str) -> None:
        if best.score is not None and lower > best.score:
            raise AssertionError("a proven lower bound above a replayed line")
        moment = round(time.monotonic() - run.began, 3)
        run.stats["core_bounds"].append([lower, moment, view])
        if lower > best.lower:
            best.lower, best.view = lower, view
            report_partial(_lost_unproven(run, best, when="yet"))
        if best.settled():
            raise score_mod.LowerBoundReached

    def elsewhere() -> int | None:
        score = line_elsewhere()
        if score is not None and best.score is None:
            run.stats.setdefault("first_line_elsewhere", [score, run.elapsed()])
        return score

    try:
        model = score_mod.least_score(
            enc,
            deadline=_bounds_until(run),
            on_bound=on_bound,
            only=run.plan.view,
            below=best.score,
            elsewhere=elsewhere,
        )
    except (score_mod.OutOfTime, score_mod.LowerBoundReached):
        model = None
    finally:
        run.stats["core_s"] = round(time.perf_counter() - t0, 4)
    if model is not None:
        moves, final = model_line(enc, model)
        if dg.score(final) != best.lower:
            raise AssertionError("an optimal model decoded to another score")
        best.score, best.moves = dg.score(final), moves


def _lost_proven(run: _Run, best: _Best) -> ProofResult:
    """The best score is proven: a line reaches it, nothing goes below it."""
    if best.view == DESCENT:
        proof = f"totalizer UNSAT at {best.score - 1}"
    else:
        search = _core_guided(run, best)
        proof = f"{search} lower bound {best.lower} meets the line's score"
    method = (
        f"UNSAT with the win literals (no win); SAT at {best.score} (line "
        f"attached), {proof}: no line leaves fewer than {best.score} cards "
        f"(stock-pointer CNF; {_size(run)})"
    )
    return _lost(run, best, True, method)


def _core_guided(run: _Run, best: _Best) -> str:
    """Name the core-guided search that proved ``best.lower``, with its view.

    A restricted view searched below the line in hand exactly when the plan
    finds a line first (without one `_prove_score` returns before the
    search); a plan without a line first searched below the lines other
    members found once the first came (``first_line_elsewhere``).
    """
    words = score_mod.VIEW_WORDS.get(best.view)
    counted = f" counting {words}" if words else ""
    if words and best.view in score_mod.RESTRICTED:
        if run.plan.line_first:
            counted += ", searching below the line in hand"
        elif "first_line_elsewhere" in run.stats:
            counted += ", searching below the lines found elsewhere"
        else:
            counted += ", with no line in hand"
    return f"core-guided MaxSAT (OLL/RC2{counted})"


#: Why a search with no line of its own (`AT_ONCE`) stopped before the limit.
MET_ELSEWHERE = "alone: its bound meets a line found elsewhere"


def _lost_unproven(run: _Run, best: _Best, *, when: str = "in time") -> ProofResult:
    """The verdict is proven (no win), the best score is not (time ran out).

    A partial answer (``when="yet"``) says "not proven yet": another member
    may join it to a proof (`engines.combine_bounds`), and its words are
    then quoted in that proof. So is the final answer of a search that
    stopped when its bound met another member's line (`MET_ELSEWHERE`).
    """
    method = f"UNSAT with the win literals: no win; best score not proven {when}"
    if best.lower > 1:
        search = _core_guided(run, best)
        method += f"; {search} proves at least {card_count(best.lower)}"
    return _lost(run, best, False, method)


def _lost(run: _Run, best: _Best, score_proven: bool, method: str) -> ProofResult:
    return ProofResult(
        status=Status.LOST,
        proven=True,
        engine=ENGINE,
        question=Question.SCORE,
        best_score=best.score,
        score_proven=score_proven,
        lower_bound=best.lower,
        line=best.line,
        method=method,
        elapsed=run.elapsed(),
        stats=run.stats,
    )
