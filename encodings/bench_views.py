"""Benchmark: the proven lower bound of each view of the score, RC2 alone.

Run::

    python -m patience_encodings.bench_views --count 15 --time-limit 30

The core-guided search (`devils_grip_score`) can count a line's score as the
cards left unlinked (``links``) or as the cards the grid's stacks lack at the
end (``grid``). For numbered deals ``start .. start + count - 1`` this runs
RC2 on each view alone (``--views links,grid``, one after the other) and
prints the best proven lower bound within the limit, with the time it came,
or the optimum (marked ``=``) when RC2 finished; and, for each pair of views,
on how many deals each was higher. No line-finder runs: the bounds are RC2's
own.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence

from verifier import devils_grip as dg
from verifier.results import Question

from . import devils_grip_score as score_mod
from .devils_grip_sat_cnf import build_encoding


def view_bound(number: int, view: str, limit: float) -> tuple[int, float, bool]:
    """Return the best bound of ``view`` on deal ``number``, when, and if optimal."""
    enc = build_encoding(dg.initial_state(dg.numbered_deal(number)), Question.SCORE)
    began = time.monotonic()
    best = [0, 0.0]

    def on_bound(lower: int, _view: str) -> None:
        if lower > best[0]:
            best[:] = [lower, time.monotonic() - began]

    try:
        model = score_mod.least_score(
            enc, deadline=began + limit, on_bound=on_bound, only=view
        )
    except score_mod.OutOfTime:
        model = None
    return best[0], best[1], model is not None


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=15, help="number of deals")
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds")
    parser.add_argument("--views", default="links,grid", help="comma-separated")
    args = parser.parse_args(argv)
    views = args.views.split(",")
    print("| deal | " + " | ".join(views) + " |")
    print("|---" * (len(views) + 1) + "|")
    rows = []
    for number in range(args.start, args.start + args.count):
        found = [view_bound(number, view, args.time_limit) for view in views]
        rows.append([bound for bound, _, _ in found])
        cells = [f"{'=' if done else ''}{b} ({t:.1f} s)" for b, t, done in found]
        print(f"| {number} | " + " | ".join(cells) + " |", flush=True)
    for i, a in enumerate(views):
        for j, b in enumerate(views[i + 1 :], i + 1):
            wins_a = sum(row[i] > row[j] for row in rows)
            wins_b = sum(row[j] > row[i] for row in rows)
            print(f"{a} higher on {wins_a} deals, {b} higher on {wins_b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
