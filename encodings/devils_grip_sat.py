"""The SAT prover for Devil's Grip: exact verdicts and proven best scores.

The encoding lives in `patience_encodings.devils_grip_sat_cnf` (its docstring
carries the exactness argument: the stock-pointer slots ``0..n`` cover every
line, so UNSAT means no line at all). This module drives CaDiCaL 1.9.5 through
python-sat:

- VERDICT: one call on the win formula. SAT gives a line, decoded and replayed
  with the reference engine (plus the sorting swaps); UNSAT proves the deal
  lost.
- SCORE: one incremental solver on the score formula. First "win?" under
  assumptions (the win literals); then any line, finished greedily (after the
  stock is exhausted only talon plays matter, and which copy a talon card goes
  on does not change the tops); then "at most s-1 cards left" through a
  totalizer, under assumptions, until UNSAT: the last line found is optimal.

Every line is replayed with `verifier.results.check_result` before it is
returned. ``time_limit`` is honoured between solver calls and by conflict
budgets inside them (CaDiCaL cannot be interrupted through pysat); the portfolio
runner kills the process at the hard limit anyway.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from pysat.solvers import Solver

from verifier import devils_grip as dg
from verifier.results import (
    ProofResult,
    Question,
    Status,
    check_result,
    report_partial,
)

from .devils_grip_sat_cnf import Encoding, build_encoding
from .devils_grip_sat_lines import decode

ENGINE = "sat"
SOLVER = "cadical195"
#: Conflicts per budgeted call when a time limit is set (then the clock is read).
CONFLICT_CHUNK = 10_000


@dataclass
class _Run:
    """Book-keeping for one `prove` call: the clock and the figures reported."""

    began: float
    deadline: float | None
    dominance: bool | None = None
    stats: dict[str, Any] = field(default_factory=dict)

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def elapsed(self) -> float:
        return round(time.monotonic() - self.began, 4)


def prove(
    state: dg.State,
    *,
    question: Question = Question.VERDICT,
    time_limit: float | None = None,
) -> ProofResult:
    """Answer ``question`` about a Devil's Grip position, with a proof."""
    return solve_position(state, question=question, time_limit=time_limit)


def solve_position(
    state: dg.State,
    *,
    question: Question,
    time_limit: float | None,
    dominance: bool | None = None,
) -> ProofResult:
    """`prove`, with the choice to add or leave out the dominance restrictions.

    Without them the formula admits every line, not just a normal form of
    each; the answers must be the same (the tests check it), only slower.
    """
    began = time.monotonic()
    deadline = None if time_limit is None else began + time_limit
    run = _Run(began, deadline, dominance)
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
    """Return CaDiCaL loaded with the clauses (the load time is reported)."""
    t0 = time.perf_counter()
    solver = Solver(name=SOLVER, bootstrap_with=enc.clauses)
    run.stats["load_s"] = round(time.perf_counter() - t0, 4)
    return solver


def _solve(solver: Solver, assumptions: list[int], run: _Run) -> bool | None:
    """Solve under ``assumptions``; None when the time limit ran out first."""
    t0 = time.perf_counter()
    run.stats["sat_calls"] += 1
    try:
        if run.deadline is None:
            return solver.solve(assumptions=assumptions)
        while not run.out_of_time():
            solver.conf_budget(CONFLICT_CHUNK)
            status = solver.solve_limited(assumptions=assumptions)
            if status is not None:
                return status
        return None
    finally:
        run.stats["solve_s"] = round(run.stats["solve_s"] + time.perf_counter() - t0, 4)


def _line(enc: Encoding, model: list[int]) -> tuple[list[dg.Move], dg.State]:
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
        moves, _ = _line(enc, model)
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
def _prove_score(state: dg.State, run: _Run) -> ProofResult:
    enc = _encode(state, Question.SCORE, run)
    with _solver(enc, run) as solver:
        status = _solve(solver, enc.win_literals(), run)
        if status:
            moves, _ = _line(enc, solver.get_model())
            return _won(moves, run, Question.SCORE, "SAT: the decoded line wins")
        if status is None:
            return _unknown(run, Question.SCORE, None, None, ())
        lower = 1
        report_partial(_lost_unproven(run, None, lower, ()))
        return _descend(enc, solver, run, lower)


def _descend(enc: Encoding, solver: Solver, run: _Run, lower: int) -> ProofResult:
    """Find lines with fewer and fewer cards left until "fewer" is UNSAT."""
    status = _solve(solver, [], run)
    if not status:
        return _lost_unproven(run, None, lower, ())
    moves, final = _line(enc, solver.get_model())
    best, line = dg.score(final), _notation(moves)
    report_partial(_lost_unproven(run, best, lower, line))
    tot = enc.add_score_bound(None, best - 1 - enc.score_offset)
    if tot is not None:
        for clause in tot.cnf.clauses:
            solver.add_clause(clause)
    while best > lower:
        k = best - 1 - enc.score_offset  # "at most best - 1" = "k unlinked"
        if tot is None or k < 0:
            lower = best
            break
        status = _solve(solver, [-tot.rhs[k]], run)
        if status is None:
            return _lost_unproven(run, best, lower, line)
        if not status:
            lower = best
            break
        moves, final = _line(enc, solver.get_model())
        if dg.score(final) >= best:
            raise AssertionError("a model under 'fewer cards' decoded to no better")
        best, line = dg.score(final), _notation(moves)
        report_partial(_lost_unproven(run, best, lower, line))
    return ProofResult(
        status=Status.LOST,
        proven=True,
        engine=ENGINE,
        question=Question.SCORE,
        best_score=best,
        score_proven=True,
        lower_bound=best,
        line=line,
        method=(
            f"UNSAT with the win literals (no win); SAT at {best} (line attached), "
            f"UNSAT at {best - 1}: no line leaves fewer than {best} cards "
            f"(stock-pointer CNF + totalizer; {_size(run)})"
        ),
        elapsed=run.elapsed(),
        stats=run.stats,
    )


def _lost_unproven(
    run: _Run, best: int | None, lower: int, line: tuple[str, ...]
) -> ProofResult:
    """The verdict is proven (no win), the best score is not (time ran out)."""
    return ProofResult(
        status=Status.LOST,
        proven=True,
        engine=ENGINE,
        question=Question.SCORE,
        best_score=best,
        score_proven=False,
        lower_bound=lower,
        line=line,
        method="UNSAT with the win literals: no win; best score not proven in time",
        elapsed=run.elapsed(),
        stats=run.stats,
    )
