"""Benchmark: how good a line each line-finder gives on Devil's Grip deals.

Run::

    python -m patience_encodings.bench_lines --count 20 --budgets 0.5,2,5

A proven best score needs a line that meets a proven lower bound, so the
line-finders are measured on their own: for numbered deals ``start ..
start + count - 1`` it prints, per deal, the final talon size of the search
prover's randomised playouts (`Search.playouts`, what the score question used
before the beam) and of the beam search (`verifier.devils_grip_beam`) at each
time budget, with the largest beam width completed; then the sums. Every line
is replayed with the reference engine and must end stuck with its score.
Nothing here is proven: lower is better, and a known optimum is the floor.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from verifier import devils_grip as dg
from verifier import devils_grip_beam as beam
from verifier import devils_grip_search as search
from verifier import devils_grip_search_model as sm


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


def beam_line(state: dg.State, budget: float) -> tuple[int, int]:
    """Return the beam's best score within ``budget`` s and its widest run."""
    found = beam.best_lines(state, deadline=time.monotonic() + budget)
    if found is None:
        raise AssertionError(f"no beam run finished in {budget:g} s")
    return _checked(state, found.moves, found.score), max(found.runs, default=0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=20, help="number of deals")
    parser.add_argument(
        "--budgets", default="0.5,2,5", help="beam budgets in seconds, comma-separated"
    )
    args = parser.parse_args(argv)
    budgets = [float(b) for b in args.budgets.split(",")]
    head = " | ".join(f"beam {b:g} s (width)" for b in budgets)
    print(f"| deal | playouts | {head} |")
    print("|---" * (len(budgets) + 2) + "|")
    sums = [0] * (len(budgets) + 1)
    for number in range(args.start, args.start + args.count):
        state = dg.initial_state(dg.numbered_deal(number))
        cells = [playouts(state)]
        widths = []
        for budget in budgets:
            score, width = beam_line(state, budget)
            cells.append(score)
            widths.append(width)
        sums = [a + b for a, b in zip(sums, cells, strict=True)]
        pairs = zip(cells[1:], widths, strict=True)
        shown = [str(cells[0])] + [f"{s} ({w})" for s, w in pairs]
        print(f"| {number} | " + " | ".join(shown) + " |", flush=True)
    print("| sum | " + " | ".join(str(s) for s in sums) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
