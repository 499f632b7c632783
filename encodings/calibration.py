"""How fast this machine is, in one fixed solver call, printed beside benchmarks.

Benchmark figures are seconds on one machine. The development machine has not
always been the same one: on one day the same SAT call, with the same
conflicts, took 2.5–3 times as long as on another, and a best-score run at
10 s proved half as many deals. So ``patience bench`` prints this figure with
its table, and a figure from another day or machine is compared only
alongside its own calibration.

The call is the last call of deal 12's best-score proof, "no line leaves 5
cards or fewer" (its best score is 6; `Encoding.score_below`), on Glucose 4,
on the formula as it was when the figure was defined: with the merge count
(`Encoding.encode_merge_count`, since left out of score formulas) and
without the cells' count (`Encoding.encode_cells`), which came later and
settles this call in a fifth of the time, so that the figure keeps
measuring the machine:
deterministic (about 9k conflicts with this encoding and pysat build, the
same on any machine; the count is printed, so a change of either shows as
a change of conflicts, not of speed), about a second on the machine of the
README's tables, and hard enough to measure the solver rather than Python's
start-up. Building the CNF is timed apart: it measures Python.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from pysat.solvers import Solver

from verifier import devils_grip as dg
from verifier.results import Question

from .devils_grip_sat_cnf import build_encoding

#: The reference deal and its best score (the known-scores file has it).
DEAL, BEST = 12, 6
#: The reference call's seconds where the README's tables were measured
#: (`bench_last_call` on deal 12: 0.8–1.1 s over several sessions).
README_SOLVE_TEXT = "0.8–1.1 s"
#: Seconds after which the call is interrupted: a regressed encoding must
#: not hang a benchmark.
LIMIT = 120.0


@dataclass(frozen=True)
class Calibration:
    """Seconds to build the reference CNF and to refute it, and its conflicts."""

    build: float
    solve: float
    conflicts: int

    def describe(self) -> str:
        """Return one line for a benchmark's header."""
        return (
            f"calibration: deal {DEAL}'s last call (UNSAT below {BEST}, Glucose 4, "
            f"{self.conflicts / 1000:.0f}k conflicts) solved in {self.solve:.2f} s, "
            f"built in {self.build:.2f} s; {README_SOLVE_TEXT} where the README's "
            "tables were measured"
        )


@dataclass(frozen=True)
class LastCall:
    """How "no line leaves fewer than ``best``" went: the answer (None when
    interrupted, True for a line below the best score: a bug), the seconds
    spent building the CNF and solving it, and the conflicts."""

    answer: bool | None
    build: float
    solve: float
    conflicts: int


def last_call(
    number: int,
    best: int,
    limit: float,
    solver: str = "g4",
    *,
    cells: bool = True,
    merge_count: bool = False,
    slack: int = 0,
) -> LastCall:
    """Run deal ``number``'s last call below ``best`` on ``solver``, interrupted
    at ``limit`` seconds (so ``solver`` must be one pysat can interrupt);
    ``cells`` and ``merge_count`` as in `build_encoding`. ``slack`` raises
    the limit: with 1 the call asks for a line leaving at most ``best``
    cards, from scratch."""
    began = time.perf_counter()
    state = dg.initial_state(dg.numbered_deal(number))
    enc = build_encoding(state, Question.SCORE, cells=cells, merge_count=merge_count)
    below = enc.score_below(best + slack)
    built = time.perf_counter()
    with Solver(name=solver, bootstrap_with=enc.clauses + below.clauses) as oracle:
        timer = threading.Timer(limit, oracle.interrupt)
        timer.start()
        try:
            answer = oracle.solve_limited(expect_interrupt=True)
        finally:
            timer.cancel()
        conflicts = int(oracle.accum_stats().get("conflicts", 0))
    solved = time.perf_counter()
    return LastCall(answer, built - began, solved - built, conflicts)


def calibrate() -> Calibration:
    """Time the reference call; raise unless it is UNSAT within `LIMIT`."""
    call = last_call(DEAL, BEST, LIMIT, cells=False, merge_count=True)
    if call.answer is None:
        raise RuntimeError(f"the calibration call took over {LIMIT:g} s")
    if call.answer:
        raise RuntimeError(f"deal {DEAL} has a line below its best score {BEST}")
    return Calibration(call.build, call.solve, call.conflicts)
