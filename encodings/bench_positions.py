"""Benchmark: time to a proven best score of mid-game Devil's Grip positions.

Run::

    python -m patience_encodings.bench_positions --count 6 --left 48,30,12

Whole deals are hard for a best score; positions later in the game are what
the edge-case batches and most submitted positions are. For numbered deals
``start .. start + count - 1`` this plays the beam's line (one fixed width,
no clock, so the positions are the same on every run) and stops at the first
position with at most ``L`` stock cards left, for each ``L`` of ``--left``.
Each position is solved for its best score by ``--engine`` (default ``auto``)
as in production (`engines.solve`: killable child processes, every line
replayed). It prints a row per position, then per ``L`` the positions proven
and the median and largest times.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator, Sequence
from itertools import accumulate

from verifier import devils_grip as dg
from verifier import devils_grip_beam as beam
from verifier import devils_grip_search_model as sm
from verifier.formats import Start
from verifier.results import Question

from . import engines

#: The beam width that picks the line the positions lie on (about 0.8 s a deal).
WIDTH = 256


def positions(number: int, lefts: Sequence[int]) -> Iterator[tuple[int, dg.State]]:
    """Yield ``(L, position)`` along deal ``number``'s beam line, for each ``L``.

    The position is the first one with at most ``L`` stock cards left; a line
    that ends sooner yields nothing more.
    """
    state = dg.initial_state(dg.numbered_deal(number))
    found = beam.best_lines(state, deadline=None, widths=(WIDTH,))
    if found is None:
        raise AssertionError("the beam without a deadline always ends")
    wanted = sorted(lefts, reverse=True)
    line = sm.to_reference(state, list(found.moves))
    for reached in accumulate(line, dg.apply, initial=state):
        while wanted and len(reached.stock) <= wanted[0]:
            yield wanted.pop(0), reached


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=6, help="number of deals")
    parser.add_argument(
        "--left", default="48,30,12", help="stock cards left, comma-separated"
    )
    parser.add_argument("--engine", default=engines.AUTO, choices=engines.ENGINES)
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    lefts = [int(x) for x in args.left.split(",")]
    times: dict[int, list[float]] = {left: [] for left in lefts}
    proven: dict[int, int] = dict.fromkeys(lefts, 0)
    print("| deal | stock left | best score | proven | seconds | engine |")
    print("|---|---|---|---|---|---|")
    for number in range(args.start, args.start + args.count):
        for left, state in positions(number, lefts):
            start = Start(dg.GAME, state, "position")
            result = engines.solve(
                start,
                question=Question.SCORE,
                engine=args.engine,
                time_limit=args.time_limit,
            )
            settled = engines.settles(result, Question.SCORE)
            times[left].append(result.elapsed)
            proven[left] += settled
            print(
                f"| {number} | {len(state.stock)} | {result.best_score} | "
                f"{'yes' if settled else 'no'} | {result.elapsed:.2f} | "
                f"{result.engine} |",
                flush=True,
            )
    print()
    print("| stock left | positions | best score proven | median s | max s |")
    print("|---|---|---|---|---|")
    for left in lefts:
        spent = times[left]
        if spent:
            print(
                f"| ≤ {left} | {len(spent)} | {proven[left]} | "
                f"{statistics.median(spent):.2f} | {max(spent):.2f} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
