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
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from . import known_scores
from .bench import numbers_option
from .calibration import last_call

#: Solvers whose calls pysat can interrupt at the time limit.
SOLVERS = ("g4", "g3", "m22", "mc")


def timed_last_call(
    number: int, best: int, limit: float, solver: str, *, cells: bool = True
) -> tuple[str, str]:
    """Return (seconds or "over LIMIT s", conflicts) of "below ``best``" on deal
    ``number``; raise if a line below the best score turns up. ``cells=False``
    leaves the cells' count out (`build_encoding`), for a before-and-after."""
    call = last_call(number, best, limit, solver, cells=cells)
    if call.answer:
        raise AssertionError(f"deal {number}: a line below its best score {best}")
    seconds = f"{call.solve:.1f} s" if call.answer is False else f"over {limit:g} s"
    return seconds, f"{call.conflicts / 1000:.0f}k"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--numbers", type=numbers_option, default="1,4,5,7,9,12,13,14", help="deals"
    )
    parser.add_argument("--time-limit", type=float, default=120.0, help="seconds")
    parser.add_argument("--solver", choices=SOLVERS, default="g4")
    parser.add_argument("--known", default=str(known_scores.SHIPPED))
    parser.add_argument(
        "--no-cells",
        action="store_true",
        help="the formula without the cells' count (Encoding.encode_cells)",
    )
    args = parser.parse_args(argv)
    known = known_scores.load(Path(args.known))
    print("| deal | best score | seconds | conflicts |")
    print("|---|---|---|---|")
    for number in args.numbers:
        entry = known.get(number)
        if entry is None or not entry.settled:
            print(f"| {number} | unknown | — | — |", flush=True)
            continue
        seconds, conflicts = timed_last_call(
            number, entry.upper, args.time_limit, args.solver, cells=not args.no_cells
        )
        print(f"| {number} | {entry.upper} | {seconds} | {conflicts} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
