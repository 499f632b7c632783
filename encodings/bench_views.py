"""Benchmark: the proven lower bound of each view of the score, RC2 alone.

Run::

    python -m patience_encodings.bench_views --count 15 --time-limit 30

The core-guided search (`devils_grip_score`) can count a line's score as the
cards left unlinked (``links``) or as the cards the grid's stacks lack at the
end (``grid``). For numbered deals ``start .. start + count - 1`` this runs
RC2 on each view alone (``--views links,grid``, one after the other; or the
deals ``--numbers 3,13,20-25``) and
prints the best proven lower bound within the limit, with the time it came,
or the optimum (marked ``=``) when RC2 finished; and, for each pair of views,
on how many deals each was higher. No line-finder runs: the bounds are RC2's
own. ``--out FILE`` keeps every run as a JSON line in the form of
``patience bench --out`` (engine ``rc2-VIEW``; a finished run carries its
optimal line, decoded and replayed), which `known_scores` merges.
``--known FILE`` hands RC2 each deal's best known line (a line in hand,
as the SAT prover has one from its beam): it then searches only better
lines, and a finished run proves the known line optimal.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from verifier import devils_grip as dg
from verifier.errors import InputError
from verifier.results import Question

from . import devils_grip_sat as sat
from . import devils_grip_score as score_mod
from . import known_scores
from .bench import numbers_option
from .devils_grip_sat_cnf import build_encoding
from .known_scores import KnownScore


@dataclass(frozen=True)
class ViewRun:
    """RC2 on one view of one deal: its best bound, when, and the time spent.

    ``line`` is the optimal line (notation) when RC2 finished, else empty.
    """

    number: int
    view: str
    bound: int
    at: float
    elapsed: float
    limit: float
    line: tuple[str, ...] = ()

    @property
    def done(self) -> bool:
        return bool(self.line)

    def to_json(self) -> dict[str, object]:
        """The run in the form of ``patience bench --out``'s lines."""
        return {
            "engine": f"rc2-{self.view}",
            "number": self.number,
            "best_score": self.bound if self.done else None,
            "lower_bound": self.bound,
            "score_proven": self.done,
            "line": list(self.line),
            "elapsed": round(self.elapsed, 1),
            "time_limit": self.limit,
        }


def view_bound(
    number: int, view: str, limit: float, known: KnownScore | None = None
) -> ViewRun:
    """Run RC2 on ``view`` of deal ``number`` for at most ``limit`` seconds.

    With ``known`` (the deal's best known line), RC2 searches only lines
    below it (`devils_grip_score.least_score`'s ``below``): a finished run
    either proves that line optimal (the run carries it) or returns a better
    one.
    """
    enc = build_encoding(dg.initial_state(dg.numbered_deal(number)), Question.SCORE)
    below = known.upper if known is not None else None
    began = time.monotonic()
    best = [0, 0.0]

    def on_bound(lower: int, _view: str) -> None:
        if lower > best[0]:
            best[:] = [lower, time.monotonic() - began]

    try:
        model = score_mod.least_score(
            enc, deadline=began + limit, on_bound=on_bound, only=view, below=below
        )
    except score_mod.OutOfTime:
        return ViewRun(number, view, best[0], best[1], time.monotonic() - began, limit)
    elapsed = time.monotonic() - began
    if model is None:  # no line below the known one: it is optimal
        if known is None or best[0] != known.upper:
            raise AssertionError("RC2 ended without a model or a line in hand")
        return ViewRun(number, view, best[0], best[1], elapsed, limit, known.line)
    moves, final = sat.model_line(enc, model)  # replayed move by move, to the end
    if dg.score(final) != best[0]:
        raise AssertionError("an optimal model decoded to another score")
    line = tuple(dg.format_move(move) for move in moves)
    return ViewRun(number, view, best[0], best[1], elapsed, limit, line)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=15, help="number of deals")
    parser.add_argument(
        "--numbers", type=numbers_option, help="deals 1,4,10-20, not --start/--count"
    )
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds")
    parser.add_argument("--views", default="links,grid", help="comma-separated")
    parser.add_argument("--out", help="write every run as JSON lines to this file")
    parser.add_argument(
        "--known",
        help="known best scores (JSON lines): give RC2 each deal's best line",
    )
    args = parser.parse_args(argv)
    views = args.views.split(",")
    numbers = args.numbers or range(args.start, args.start + args.count)
    try:  # the lines of these deals are replayed: a finished run calls one optimal
        known = known_scores.load(Path(args.known)) if args.known else {}
        for number in numbers:
            if number in known:
                known_scores.check(known[number])
    except InputError as exc:
        parser.error(exc.message)
    print("| deal | " + " | ".join(views) + " |")
    print("|---" * (len(views) + 1) + "|")
    rows = []
    sink = open(args.out, "w", encoding="utf-8") if args.out else None
    for number in numbers:
        entry = known.get(number)
        found = [view_bound(number, view, args.time_limit, entry) for view in views]
        rows.append([run.bound for run in found])
        cells = [f"{'=' if r.done else ''}{r.bound} ({r.at:.1f} s)" for r in found]
        print(f"| {number} | " + " | ".join(cells) + " |", flush=True)
        if sink:
            sink.writelines(json.dumps(run.to_json()) + "\n" for run in found)
            sink.flush()
    if sink:
        sink.close()
    for i, a in enumerate(views):
        for j, b in enumerate(views[i + 1 :], i + 1):
            wins_a = sum(row[i] > row[j] for row in rows)
            wins_b = sum(row[j] > row[i] for row in rows)
            print(f"{a} higher on {wins_a} deals, {b} higher on {wins_b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
