"""Benchmarks: provers on fixed deal sets, figures printed (never a timed test).

``patience bench --engine search,sat --count 1000 --time-limit 10 [--score]``
solves numbered deals ``start .. start + count - 1`` (or the list
``--numbers 1,4,10-20``) one after another (one
core; each solve in its own killable process, as in production) and prints,
per engine: verdicts proven, best scores proven, time median / p90 / p99 /
max, states per second where the prover counts states, and the distribution
of best scores. ``--out FILE`` keeps every result as JSON lines. ``--known
FILE`` (a `known_scores` file) compares each best-score run with what is
known: how many cards the lines leave above the best known line, how far the
proven bounds stay below the best known bound, and any contradiction (said
only when the file knows some of the deals). For best scores it also prints
where the proofs' seconds went (`time_split`: the formula and the beam, the
optimal line found, the last refutation after it; median and p90) and which
neighbourhoods found the better lines.
Each run also prints the machine's calibration (`calibration`: one fixed
solver call), since seconds on one machine are not seconds on another; each
row of ``--out`` carries its seconds too (``calibration_s``), so a file of
rows read later still says what machine made it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from verifier.errors import InputError
from verifier.formats import parse_numbers, start_from_number
from verifier.registry import get_game
from verifier.results import ProofResult, Question, Status

from . import engines, known_scores
from .calibration import calibrate


@dataclass(frozen=True)
class Row:
    """One solved deal."""

    number: int
    result: ProofResult


def run(
    game_name: str,
    engine: str,
    numbers: Iterable[int],
    *,
    question: Question,
    time_limit: float,
    on_row: Callable[[Row], None] | None = None,
) -> list[Row]:
    """Solve each numbered deal with ``engine``; return the rows."""
    game = get_game(game_name)
    rows = []
    for number in numbers:
        start = start_from_number(game, number)
        result = engines.solve(
            start, question=question, engine=engine, time_limit=time_limit
        )
        row = Row(number, result)
        rows.append(row)
        if on_row:
            on_row(row)
    return rows


def percentile(values: list[float], q: float) -> float:
    """Return the ``q``-quantile (0..1) by the nearest-rank method."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(1, min(len(ordered), round(q * len(ordered) + 0.5)))
    return ordered[rank - 1]


#: `proof_parts`' parts, in the order a proof goes through them.
PARTS = ("formula and beam", "optimal line at", "after it")


def proof_parts(result: ProofResult) -> dict[str, float] | None:
    """Return where a proven best score's seconds went, or None.

    None unless the result is a proven best score from the SAT prover's line
    search (its stats carry ``beam_s``). Parts: building and loading the
    formula and running the beam; the instant the optimal line was found
    (the neighbourhood search's last line, else the beam's, at the beam's
    end); and the rest, after it: the last refutation, which proves it.
    """
    stats = result.stats
    if not result.score_proven or "beam_s" not in stats:
        return None
    setup = stats.get("build_s", 0.0) + stats.get("load_s", 0.0) + stats["beam_s"]
    lines = stats.get("lines") or []
    found = lines[-1][1] if lines else setup
    times = (setup, found, max(0.0, result.elapsed - found))
    return dict(zip(PARTS, times, strict=True))


def time_split(results: list[ProofResult]) -> dict[str, object]:
    """Return `proof_parts`' median and p90 over ``results`` that have them,
    and how many better lines each neighbourhood found (``lns_lines``)."""
    parts = [p for p in map(proof_parts, results) if p is not None]
    spread: dict[str, tuple[float, float]] = {}
    for name in PARTS if parts else ():
        values = [p[name] for p in parts]
        spread[name] = (statistics.median(values), percentile(values, 0.90))
    found: Counter[str] = Counter()
    for result in results:
        found.update(result.stats.get("lns_lines") or {})
    lines_by = dict(found.most_common())
    return {"proofs": len(parts), "parts": spread, "lines_by": lines_by}


def summary(rows: list[Row], question: Question) -> dict[str, object]:
    """Return the figures of one engine's run."""
    results = [r.result for r in rows]
    times = [r.elapsed for r in results]
    n = len(results)
    statuses = Counter(r.status.value for r in results)
    settled = [r for r in results if engines.settles(r, question)]
    nodes = sum(int(r.stats.get("nodes", 0)) for r in results)
    scores = Counter(
        r.best_score for r in results if r.status is Status.WON or r.score_proven
    )
    return {
        "deals": n,
        "won": statuses.get("won", 0),
        "lost": statuses.get("lost", 0),
        "unknown": statuses.get("unknown", 0),
        "verdict_proven_pct": 100 * sum(r.proven for r in results) / max(1, n),
        "score_proven_pct": 100
        * sum(r.status is Status.WON or r.score_proven for r in results)
        / max(1, n),
        "settled_pct": 100 * len(settled) / max(1, n),
        "median_s": statistics.median(times) if times else float("nan"),
        "p90_s": percentile(times, 0.90),
        "p99_s": percentile(times, 0.99),
        "max_s": max(times, default=float("nan")),
        "states_per_s": nodes / sum(times) if nodes and sum(times) else None,
        "scores": dict(sorted(scores.items())),
        "split": time_split(results),
    }


def against_known(
    rows: list[Row], known: dict[int, known_scores.KnownScore]
) -> dict[str, object]:
    """Return how one engine's best-score rows compare with ``known``.

    ``line_gap``: cards the lines leave above the best known line, summed;
    ``bound_gap``: how far the proven bounds stay below the best known bound,
    summed (a missing bound counts as 0); ``better``: deals whose line beats
    the known one (the file can be improved); ``conflicts``: contradictions,
    each a bug somewhere.
    """
    deals = line_gap = bound_gap = 0
    better: list[int] = []
    conflicts: list[str] = []
    for row in rows:
        entry, r = known.get(row.number), row.result
        if entry is None or r.status is Status.WON:
            continue
        deals += 1
        if r.best_score is not None:
            line_gap += max(0, r.best_score - entry.upper)
            if r.best_score < entry.upper:
                better.append(row.number)
        bound_gap += max(0, entry.lower - (r.lower_bound or 0))
        conflicts += known_scores.conflicts(entry, r.lower_bound, r.best_score)
    return {
        "deals": deals,
        "line_gap": line_gap,
        "bound_gap": bound_gap,
        "better": better,
        "conflicts": conflicts,
    }


def format_known(figures: dict[str, dict[str, object]], settled: int) -> str:
    """Return the lines that compare each engine's run with the known scores."""
    lines = []
    for engine, f in figures.items():
        lines.append(
            f"Against the known scores ({_count(f['deals'], 'deal')}, "
            f"{_count(settled, 'best score')} known), {engine}: lines "
            f"{f['line_gap']} cards above the best known "
            f"lines, bounds {f['bound_gap']} below the best known bounds; "
            f"better lines than known: {f['better'] or 'none'}; "
            f"contradictions: {'; '.join(f['conflicts']) or 'none'}"
        )
    return "\n".join(lines)


def _count(n: object, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def format_table(figures: dict[str, dict[str, object]], question: Question) -> str:
    """Return a Markdown table, one row per engine, plus score distributions."""
    head = (
        "| engine | deals | won | lost | unknown | verdict proven | score proven "
        "| median s | p90 s | p99 s | max s | states/s |"
    )
    lines = [head, "|" + "---|" * 12]
    for engine, f in figures.items():
        rate = f["states_per_s"]
        lines.append(
            f"| {engine} | {f['deals']} | {f['won']} | {f['lost']} | {f['unknown']} "
            f"| {f['verdict_proven_pct']:.1f} % | {f['score_proven_pct']:.1f} % "
            f"| {f['median_s']:.3f} | {f['p90_s']:.3f} | {f['p99_s']:.3f} "
            f"| {f['max_s']:.3f} | {f'{rate:,.0f}' if rate else '-'} |"
        )
    if question is Question.SCORE:
        for engine, f in figures.items():
            scores = f["scores"]
            lines.append("")
            counts = ", ".join(f"{score}: {count}" for score, count in scores.items())
            lines.append(f"Proven best scores, {engine}: {counts or 'none'}")
            split = format_split(engine, f["split"])
            if split:
                lines.append(split)
    return "\n".join(lines)


def format_split(engine: str, split: dict) -> str:
    """Return the line that says where ``engine``'s proofs spent their time."""
    if not split["parts"]:
        return ""
    parts = "; ".join(
        f"{name} {median:.2f} s, {p90:.2f} s"
        for name, (median, p90) in split["parts"].items()
    )
    text = (
        f"Where the time goes, {engine} ({_count(split['proofs'], 'proof')}; "
        f"median, p90): {parts}"
    )
    if split["lines_by"]:
        text += ". Better lines found by: " + ", ".join(
            f"{kind} {count}" for kind, count in split["lines_by"].items()
        )
    return text


def numbers_option(text: str) -> tuple[int, ...]:
    """Read a ``--numbers`` value for argparse: a bad list exits 2 with the reason."""
    try:
        return parse_numbers(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def describe_numbers(numbers: Sequence[int]) -> str:
    """Return ``a..b`` for a run of consecutive deals, else the count and the span."""
    first, last = min(numbers), max(numbers)
    if list(numbers) == list(range(first, last + 1)):
        return f"{first}..{last}"
    return f"{len(numbers)} between {first} and {last}"


def _open_out(path: str) -> TextIO:
    try:
        return open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by main)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def main(args, out: TextIO) -> int:
    """Run the benchmark described by the CLI arguments; print the table.

    ``args.numbers`` is the deal list (`verifier.formats.parse_numbers`), or
    None for ``args.start .. args.start + args.count - 1``.
    """
    question = Question.SCORE if args.score else Question.VERDICT
    numbers = args.numbers or range(args.start, args.start + args.count)
    figures, compared = {}, {}
    known = known_scores.load(Path(args.known)) if args.known else {}
    game_name = args.game or get_game(None).name
    names = args.engine.split(",")
    for engine in names:
        engines.check_engine(game_name, engine)  # before any waiting
    sink = _open_out(args.out) if args.out else None
    machine = None
    began = time.monotonic()
    try:
        if args.calibrate:
            machine = calibrate()
            began = time.monotonic()
        for engine in names:

            def record(row: Row, engine: str = engine) -> None:
                if sink:
                    data = {
                        "asked": engine,
                        "time_limit": args.time_limit,
                        "number": row.number,
                    }
                    if machine is not None:
                        data["calibration_s"] = round(machine.solve, 3)
                    sink.write(json.dumps(data | row.result.to_json()) + "\n")
                    sink.flush()

            rows = run(
                game_name,
                engine,
                numbers,
                question=question,
                time_limit=args.time_limit,
                on_row=record,
            )
            figures[engine] = summary(rows, question)
            if question is Question.SCORE and known.keys() & set(numbers):
                compared[engine] = against_known(rows, known)
    finally:
        if sink:
            sink.close()
    print(
        f"deals {describe_numbers(numbers)}, question "
        f"{question.value}, time limit {args.time_limit:g} s, "
        f"wall {time.monotonic() - began:.1f} s",
        file=out,
    )
    if machine is not None:
        print(machine.describe(), file=out)
    print(format_table(figures, question), file=out)
    if compared:
        settled = sum(e.settled for n, e in known.items() if n in numbers)
        print("\n" + format_known(compared, settled), file=out)
    return 0
