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
replayed). It prints a row per position and engine, then per ``L`` and
engine the positions proven and the median and largest times.

With several engines (``--engine sat,search,smt``) it is also the
cross-check the issue asks for on mid-game positions: each position is
answered by every engine, and the answers must agree (`engines.consistent`:
no engine's replayed line below another's proven bound, so two proven best
scores are equal). Disagreements are listed at the end and the run exits 1.
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Iterator, Mapping, Sequence
from itertools import accumulate

from verifier import devils_grip as dg
from verifier import devils_grip_beam as beam
from verifier import devils_grip_search_model as sm
from verifier.errors import PatienceError
from verifier.formats import Start
from verifier.results import ProofResult, Question, ResultCheckError

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


def disagreement(answers: Mapping[str, ProofResult]) -> str | None:
    """Return why one position's answers by several engines contradict, or None.

    Every line is replayed and every bound proven, so a contradiction means
    an engine is wrong: the cross-check's whole point is to see it.
    """
    try:
        engines.consistent(list(answers.values()))
    except ResultCheckError as exc:
        return str(exc)
    return None


def _engine_list(text: str) -> list[str]:
    """Read ``--engine``: one or more engines, comma-separated (argparse type)."""
    names = [name.strip() for name in text.split(",")]
    try:
        for name in names:
            engines.check_engine(dg.GAME.name, name)
    except PatienceError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    if len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r}: an engine named twice")
    return names


def _answer(
    number: int, state: dg.State, names: Sequence[str], limit: float
) -> dict[str, ProofResult]:
    """Solve one position's best score with each engine; print a row for each."""
    start = Start(dg.GAME, state, "position")
    answers = {}
    for name in names:
        result = engines.solve(
            start, question=Question.SCORE, engine=name, time_limit=limit
        )
        answers[name] = result
        settled = engines.settles(result, Question.SCORE)
        print(
            f"| {number} | {len(state.stock)} | {name} | {result.best_score} | "
            f"{'yes' if settled else 'no'} | {result.elapsed:.2f} | {result.engine} |",
            flush=True,
        )
    return answers


def _summary(
    records: Sequence[tuple[int, Mapping[str, ProofResult]]],
    lefts: Sequence[int],
    names: Sequence[str],
) -> None:
    """Print, per ``L`` and engine, the positions proven and the seconds."""
    print("| stock left | engine | positions | best score proven | median s | max s |")
    print("|---|---|---|---|---|---|")
    for left in lefts:
        for name in names:
            answers = [found[name] for at, found in records if at == left]
            if not answers:
                continue
            spent = [a.elapsed for a in answers]
            settled = sum(engines.settles(a, Question.SCORE) for a in answers)
            print(
                f"| ≤ {left} | {name} | {len(answers)} | {settled} | "
                f"{statistics.median(spent):.2f} | {max(spent):.2f} |"
            )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=6, help="number of deals")
    parser.add_argument(
        "--left", default="48,30,12", help="stock cards left, comma-separated"
    )
    parser.add_argument(
        "--engine",
        type=_engine_list,
        default=[engines.AUTO],
        help="engines, comma-separated (several: cross-checked)",
    )
    parser.add_argument("--time-limit", type=float, default=10.0)
    args = parser.parse_args(argv)
    lefts = [int(x) for x in args.left.split(",")]
    records, clashes = [], []
    print("| deal | stock left | engine | best score | proven | seconds | by |")
    print("|---|---|---|---|---|---|---|")
    for number in range(args.start, args.start + args.count):
        for left, state in positions(number, lefts):
            answers = _answer(number, state, args.engine, args.time_limit)
            records.append((left, answers))
            clash = disagreement(answers)
            if clash:
                clashes.append(f"deal {number}, {len(state.stock)} left: {clash}")
    print()
    _summary(records, lefts, args.engine)
    if len(args.engine) > 1:
        print()
        print(
            f"Cross-check of {', '.join(args.engine)} on {len(records)} positions: "
            f"{len(clashes)} disagreements"
        )
        for clash in clashes:
            print(f"- {clash}")
    return 1 if clashes else 0


if __name__ == "__main__":
    raise SystemExit(main())
