"""Benchmark: how good a line each line-finder gives on Devil's Grip deals.

Run::

    python -m patience_encodings.bench_lines --count 20 --budgets 0.5,2,5
    python -m patience_encodings.bench_lines --count 20 --budgets 2,12 --lns 10

A proven best score needs a line that meets a proven lower bound, so the
line-finders are measured on their own: for numbered deals ``start ..
start + count - 1`` it prints, per deal, the final talon size of the search
prover's randomised playouts (`Search.playouts`, what the score question used
before the beam) and of the beam search (`verifier.devils_grip_beam`) at each
time budget, with the largest beam width completed; then the sums. Every line
is replayed with the reference engine and must end stuck with its score.
With ``--lns S``, each beam line is then given to the SAT neighbourhood
search (`devils_grip_lns`) for ``S`` more seconds, in a column of its own
(marked ``=`` when the whole formula proved the line optimal).
Nothing here is proven unless so marked: lower is better, and a known
optimum is the floor.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from pysat.solvers import Solver

from verifier import devils_grip as dg
from verifier import devils_grip_beam as beam
from verifier import devils_grip_search as search
from verifier import devils_grip_search_model as sm
from verifier.results import Question

from . import devils_grip_sat as sat
from .devils_grip_lns import Neighbourhoods
from .devils_grip_sat_cnf import build_encoding


def _checked(state: dg.State, moves: Sequence[sm.Move], score: int) -> int:
    """Replay abstract ``moves``; return ``score`` if the line ends with it."""
    end = state
    for move in sm.to_reference(state, list(moves)):
        end = dg.apply(end, move)
    if not dg.is_stuck(end) or dg.score(end) != score:
        raise AssertionError(f"line ends with {dg.score(end)}, reported {score}")
    return score


def playouts(state: dg.State) -> int:
    """Return the best score of the search prover's playouts (as it runs them)."""
    prover = search.Search(state)
    prover.playouts(4)
    prover.playouts(search.PLAYOUTS, seed=1)
    found = prover.incumbent
    return _checked(state, found.moves, found.score)


def beam_line(state: dg.State, budget: float) -> tuple[int, int, list[dg.Move]]:
    """Return the beam's best score within ``budget`` s, its widest run, its line."""
    found = beam.best_lines(state, deadline=time.monotonic() + budget)
    if found is None:
        raise AssertionError(f"no beam run finished in {budget:g} s")
    score = _checked(state, found.moves, found.score)
    return score, max(found.runs, default=0), sm.to_reference(state, list(found.moves))


def lns_line(
    state: dg.State, score: int, moves: list[dg.Move], seconds: float
) -> tuple[int, bool]:
    """Return the neighbourhood search's score from a line, and if proven optimal."""
    enc = build_encoding(state, Question.SCORE)
    tot = enc.add_score_bound(None, score - 1 - enc.score_offset)

    def improve(model: list[int]) -> tuple[int, list[dg.Move]]:
        line, final = sat.model_line(enc, model)  # replayed move by move, to the end
        return dg.score(final), line

    with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as solver:
        search = Neighbourhoods(enc, solver, tot, (score, moves), improve)
        optimal = search.run(time.monotonic() + seconds)
    return search.score, optimal


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=20, help="number of deals")
    parser.add_argument(
        "--budgets", default="0.5,2,5", help="beam budgets in seconds, comma-separated"
    )
    parser.add_argument(
        "--lns", type=float, default=0.0, help="seconds of neighbourhood search"
    )
    args = parser.parse_args(argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    heads = ["playouts"]
    for b in budgets:
        heads.append(f"beam {b:g} s (width)")
        if args.lns:
            heads.append(f"then LNS {args.lns:g} s")
    print("| deal | " + " | ".join(heads) + " |")
    print("|---" * (len(heads) + 1) + "|")
    sums = [0] * len(heads)
    for number in range(args.start, args.start + args.count):
        state = dg.initial_state(dg.numbered_deal(number))
        scores = [playouts(state)]
        shown = [str(scores[0])]
        for budget in budgets:
            score, width, moves = beam_line(state, budget)
            scores.append(score)
            shown.append(f"{score} ({width})")
            if args.lns:
                better, optimal = lns_line(state, score, moves, args.lns)
                scores.append(better)
                shown.append(f"{'=' if optimal else ''}{better}")
        sums = [a + b for a, b in zip(sums, scores, strict=True)]
        print(f"| {number} | " + " | ".join(shown) + " |", flush=True)
    print("| sum | " + " | ".join(str(s) for s in sums) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
