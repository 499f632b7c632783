"""Benchmark: Besieged Fortress numbered deals, verdicts and times.

Run::

    python -m patience_encodings.bench_besieged_fortress --count 1000 --time-limit 10

Each deal is proved in this process (no portfolio, no child process), so the
times are the prover's own. It prints the win rate with a Wilson 95 %
interval in which deals left unknown count as losses for the lower bound and
as wins for the upper bound, the share of deals resolved, and the median, p90
and maximum time per deal, and which of the search's strategies settled how
many deals (``--verbose`` adds one line per deal with the prover's stats).
With ``--fc-solve`` it also runs Freecell Solver
(``fc-solve``, preset ``beleaguered_castle``, atomic moves ``-to 01ABCDE``) on
every deal and compares verdicts: the outside yardstick of issue 9.
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Sequence

from verifier import besieged_fortress as bf
from verifier.results import Question, Status

from . import engines

Z95 = 1.959963984540054
FC_SOLVE = "fc-solve"
_FC_RANKS = {1: "A", 10: "T", 11: "J", 12: "Q", 13: "K"}


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Return the Wilson score interval for ``successes`` out of ``n``."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    denominator = 1 + z * z / n
    return (centre - spread) / denominator, (centre + spread) / denominator


def fc_card(card) -> str:
    """Return Freecell Solver's token for a card, e.g. ``TH``."""
    return _FC_RANKS.get(card.rank, str(card.rank)) + "SHDC"[card.suit]


def fc_solve_board(state: bf.State) -> str:
    """Return ``state`` in Freecell Solver's board format.

    One line per column, its first card the covered one and its last the one
    that moves — the same order as our rows (inner to outer).
    """
    tops = " ".join(
        f"{'SHDC'[s]}-{_FC_RANKS.get(top, str(top))}"
        for s, top in enumerate(state.foundations)
    )
    lines = [f"Foundations: {tops}"]
    lines += [" ".join(fc_card(c) for c in row) for row in state.rows]
    return "\n".join(lines) + "\n"


def fc_solve_verdict(state: bf.State, time_limit: float) -> tuple[str, float]:
    """Run fc-solve on ``state``; return ("won" | "lost" | "unknown", seconds)."""
    began = time.monotonic()
    try:
        done = subprocess.run(
            [FC_SOLVE, "--game", "beleaguered_castle", "-to", "01ABCDE", "-"],
            input=fc_solve_board(state),
            capture_output=True,
            text=True,
            timeout=time_limit,
        )
    except subprocess.TimeoutExpired:
        return "unknown", time.monotonic() - began
    elapsed = time.monotonic() - began
    if "This game is solveable" in done.stdout:
        return "won", elapsed
    if "could not solve" in done.stdout:
        return "lost", elapsed
    return "unknown", elapsed


def fc_solve_available() -> bool:
    """Return whether the ``fc-solve`` binary is installed."""
    return shutil.which(FC_SOLVE) is not None


def prove_deal(number: int, engine: str, time_limit: float) -> tuple[str, float, dict]:
    """Prove numbered deal ``number`` in this process.

    Return (status, seconds, the prover's stats).
    """
    state = bf.initial_state(bf.numbered_deal(number))
    prover = engines.PROVERS[engine][bf.GAME.name]
    began = time.monotonic()
    result = prover(state, question=Question.VERDICT, time_limit=time_limit)
    elapsed = time.monotonic() - began
    if result.status is Status.LOST and not result.proven:
        return "unknown", elapsed, result.stats
    return result.status.value, elapsed, result.stats


def percentile(values: Sequence[float], q: float) -> float:
    """Return the ``q`` quantile (nearest rank) of ``values``."""
    ordered = sorted(values)
    index = max(0, math.ceil(q * len(ordered)) - 1)
    return ordered[index]


def summary(label: str, statuses: list[str], times: list[float]) -> list[str]:
    """Return the report lines for one engine's run."""
    n = len(statuses)
    counts = Counter(statuses)
    won, unknown = counts["won"], counts["unknown"]
    low, _ = wilson(won, n)
    _, high = wilson(won + unknown, n)
    resolved = n - unknown
    return [
        f"{label}: {n} deals: won {won}, lost {counts['lost']}, unknown {unknown}",
        f"  win rate {100 * won / n:.1f} % (Wilson 95 %: {100 * low:.1f} - "
        f"{100 * high:.1f} %, unknown deals as losses / as wins)",
        f"  resolved {100 * resolved / n:.1f} %",
        f"  time per deal: median {statistics.median(times):.3f} s, "
        f"p90 {percentile(times, 0.9):.3f} s, max {max(times):.3f} s",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--start", type=int, default=1, help="first deal number")
    parser.add_argument("--count", type=int, default=100, help="number of deals")
    parser.add_argument("--time-limit", type=float, default=10.0, help="s per deal")
    parser.add_argument(
        "--engine",
        default="search",
        choices=sorted(e for e, g in engines.PROVERS.items() if bf.GAME.name in g),
    )
    parser.add_argument("--fc-solve", action="store_true", help="compare fc-solve")
    parser.add_argument("--verbose", action="store_true", help="one line per deal")
    args = parser.parse_args(argv)
    if args.fc_solve and not fc_solve_available():
        print("fc-solve is not installed (apt-get install freecell-solver-bin)")
        return 2
    ours: list[tuple[str, float]] = []
    details: list[dict] = []
    theirs: list[tuple[str, float]] = []
    for number in range(args.start, args.start + args.count):
        status, seconds, stats = prove_deal(number, args.engine, args.time_limit)
        ours.append((status, seconds))
        details.append(stats)
        line = f"{number} {status} {seconds:.3f}"
        if stats:
            line += " " + " ".join(f"{k}={v}" for k, v in sorted(stats.items()))
        if args.fc_solve:
            state = bf.initial_state(bf.numbered_deal(number))
            theirs.append(fc_solve_verdict(state, args.time_limit))
            line += f"  fc-solve {theirs[-1][0]} {theirs[-1][1]:.3f}"
        if args.verbose:
            print(line, flush=True)
    first, last = args.start, args.start + args.count - 1
    print(f"Besieged Fortress deals {first}-{last}, {args.time_limit:g} s each")
    print("\n".join(summary(args.engine, *map(list, zip(*ours, strict=True)))))
    settled_by = Counter(
        d["strategy"]
        for (status, _), d in zip(ours, details, strict=True)
        if status != "unknown" and "strategy" in d
    )
    if settled_by:
        print("  settled by: " + ", ".join(f"{k} {v}" for k, v in settled_by.items()))
    if args.fc_solve:
        print("\n".join(summary("fc-solve", *map(list, zip(*theirs, strict=True)))))
        both = [(a[0], b[0]) for a, b in zip(ours, theirs, strict=True)]
        settled = [(a, b) for a, b in both if "unknown" not in (a, b)]
        differ = sum(1 for a, b in settled if a != b)
        print(f"verdicts settled by both: {len(settled)}, disagreements: {differ}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
