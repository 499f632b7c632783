"""Benchmark: the last call of a best-score proof, "one card fewer", alone.

Run::

    python -m patience_encodings.bench_last_call --numbers 1,4,5,7,9,12,13,14

Every proof that a deal's best score is ``b`` ends with one refutation: no
line leaves ``b - 1`` cards or fewer. For each listed deal whose best score
the known-scores file knows, this runs that single call, the score formula
restricted below ``b`` (`Encoding.score_below`), on one SAT solver, and
prints its seconds and conflicts. It is the hardest call of most proofs and
has no line search, no MaxSAT and no portfolio around it, so it measures a
change to the formula directly. The answer must be UNSAT (a model would be
a line better than the best score: a bug, and the run stops on it). The
limit is enforced by interrupting the solver, so only solvers pysat can
interrupt are offered.

``--at-best`` asks the other half of a proof instead: a line leaving at
most ``b`` cards, from scratch (SAT; UNSAT would contradict the known line).
Together the two are a floor for a whole proof on this formula and solver:
what it costs when the best score is handed over and only the two calls
are left. A summary line follows the table: median, 90th percentile and
largest seconds, and how many calls took at most half a second.
"""

from __future__ import annotations

import argparse
import math
import statistics
from collections.abc import Sequence
from pathlib import Path

from . import known_scores
from .bench import numbers_option, percentile
from .calibration import last_call

#: Seconds a call may take and count as fast in the summary: issue 4's
#: median target for a whole best-score proof.
FAST = 0.5
#: Solvers whose calls pysat can interrupt at the time limit.
SOLVERS = ("g4", "g3", "m22", "mc")


def timed_last_call(
    number: int,
    best: int,
    limit: float,
    solver: str,
    *,
    cells: bool = True,
    merge_count: bool = False,
    at_best: bool = False,
) -> tuple[float | None, str]:
    """Return (seconds, or None past ``limit``; conflicts) of "below ``best``"
    on deal ``number``, or with ``at_best`` of "at most ``best``"; raise if the
    answer contradicts the best score. ``cells=False`` leaves the cells'
    count out and ``merge_count=True`` adds the merge count (`build_encoding`),
    for a before-and-after."""
    call = last_call(
        number,
        best,
        limit,
        solver,
        cells=cells,
        merge_count=merge_count,
        slack=int(at_best),
    )
    if at_best and call.answer is False:
        raise AssertionError(f"deal {number}: no line at its best score {best}")
    if not at_best and call.answer:
        raise AssertionError(f"deal {number}: a line below its best score {best}")
    seconds = None if call.answer is None else call.solve
    return seconds, f"{call.conflicts / 1000:.0f}k"


def shown(seconds: float | None, limit: float, places: int = 1) -> str:
    """Return ``seconds`` as printed ("over LIMIT s" for None or infinity:
    the call was interrupted at ``limit``)."""
    if seconds is None or seconds == math.inf:
        return f"over {limit:g} s"
    return f"{seconds:.{places}f} s"


def summary(seconds: Sequence[float | None], limit: float) -> str:
    """Return one line on the calls' seconds (None: past ``limit``, counted
    as slower than every answered call)."""
    if not seconds:
        return "no calls"
    ranked = sorted(math.inf if s is None else s for s in seconds)
    median, p90 = statistics.median_low(ranked), percentile(ranked, 0.9)
    over = ranked.count(math.inf)
    return (
        f"{len(ranked)} calls: median {shown(median, limit, 2)}, "
        f"p90 {shown(p90, limit, 2)}, max {shown(ranked[-1], limit, 2)}; "
        f"{sum(s <= FAST for s in ranked)} within {FAST:g} s, {over} over {limit:g} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--numbers", type=numbers_option, default="1,4,5,7,9,12,13,14", help="deals"
    )
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds")
    parser.add_argument("--solver", choices=SOLVERS, default="g4")
    parser.add_argument("--known", default=str(known_scores.SHIPPED))
    parser.add_argument(
        "--at-best",
        action="store_true",
        help="ask for a line at the best score from scratch (SAT) instead",
    )
    parser.add_argument(
        "--merge-count",
        action="store_true",
        help="the formula with the merge count (Encoding.encode_merge_count)",
    )
    parser.add_argument(
        "--no-cells",
        action="store_true",
        help="the formula without the cells' count (Encoding.encode_cells)",
    )
    args = parser.parse_args(argv)
    known = known_scores.load(Path(args.known))
    print("| deal | best score | seconds | conflicts |")
    print("|---|---|---|---|")
    times: list[float | None] = []
    for number in args.numbers:
        entry = known.get(number)
        if entry is None or not entry.settled:
            print(f"| {number} | unknown | — | — |", flush=True)
            continue
        seconds, conflicts = timed_last_call(
            number,
            entry.upper,
            args.time_limit,
            args.solver,
            cells=not args.no_cells,
            merge_count=args.merge_count,
            at_best=args.at_best,
        )
        times.append(seconds)
        cell = shown(seconds, args.time_limit)
        print(f"| {number} | {entry.upper} | {cell} | {conflicts} |", flush=True)
    print(summary(times, args.time_limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
