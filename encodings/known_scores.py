"""Known best scores of numbered Devil's Grip deals: a benchmark's ground truth.

Run::

    python -m patience_encodings.known_scores merge RESULTS.jsonl... --out FILE
    python -m patience_encodings.known_scores check FILE
    python -m patience_encodings.known_scores summary FILE

Proofs of whole deals' best scores take minutes where the benchmarks give
seconds, so the truth they measure against is computed once, with long
limits, and shipped (`SHIPPED`). Each line of the file is one deal::

    {"number": 9, "lower": 9, "upper": 9, "line": [...], "lower_by": "...",
     "upper_by": "..."}

``upper`` is the score ``line`` leaves (`check` replays it with the reference
engine); ``lower`` a proven lower bound, ``lower_by`` the run that proved
it. When they meet, the best score is known. `merge` builds the file from
result files of ``patience bench --out`` and ``bench_views --out``: per deal
the highest proven bound and the best replayed line over all runs. That is
sound because each bound holds for every line and each line is a line; a
bound above a line is a contradiction, and `merge` refuses it.

What it is for: ``patience bench --known FILE`` says how far a run's lines
and bounds are from the truth (which side a proof is missing), and the tests
check engines against it (a proven bound above a known line, or a line
below a known bound, is a bug).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from verifier import devils_grip as dg
from verifier.errors import InputError
from verifier.replay import replay
from verifier.textforms import load_json

#: The file shipped with the project (the lost deals of 1-700; 1-600 all settled).
SHIPPED = (
    Path(__file__).resolve().parent.parent
    / "seeds"
    / "vectors"
    / "devils-grip-best-scores.jsonl"
)


@dataclass(frozen=True)
class KnownScore:
    """What is known of one deal's best score: ``lower <= best <= upper``."""

    number: int
    lower: int
    upper: int
    line: tuple[str, ...]
    lower_by: str
    upper_by: str

    @property
    def settled(self) -> bool:
        """Whether the best score is known (the bound meets the line)."""
        return self.lower == self.upper

    def to_json(self) -> dict[str, object]:
        return {
            "number": self.number,
            "lower": self.lower,
            "upper": self.upper,
            "line": list(self.line),
            "lower_by": self.lower_by,
            "upper_by": self.upper_by,
        }


def check(entry: KnownScore) -> None:
    """Replay ``entry.line`` on its deal; raise `InputError` if it does not
    end stuck with ``upper`` cards, or if ``lower > upper``."""
    start = dg.initial_state(dg.numbered_deal(entry.number))
    moves = dg.parse_moves("\n".join(entry.line))
    outcome = replay(dg.GAME, start, moves)
    if outcome.error:
        raise InputError(f"deal {entry.number}: {outcome.error}")
    if not outcome.stuck or outcome.score != entry.upper:
        raise InputError(
            f"deal {entry.number}: the line leaves {outcome.score} cards"
            f"{'' if outcome.stuck else ' and is not over'}, not {entry.upper}"
        )
    if entry.lower > entry.upper:
        raise InputError(f"deal {entry.number}: bound {entry.lower} above its line")


def _json_lines(path: Path) -> list[dict]:
    """Return the records of a JSON-lines file (a known-scores or result file).

    A missing or unreadable file, or a line that is not a JSON object, is an
    `InputError` naming the file and the line.
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read {path}: {exc}") from None
    records = []
    for number, text in enumerate(lines, 1):
        if not text.strip():
            continue
        try:
            record = load_json(text)
        except InputError as exc:
            raise InputError(f"{path} line {number}: {exc.message}") from None
        if not isinstance(record, dict):
            raise InputError(f"{path} line {number}: not a JSON object")
        records.append(record)
    return records


def load(path: Path = SHIPPED) -> dict[int, KnownScore]:
    """Return the entries of a known-scores file by deal number (unchecked)."""
    entries = {}
    for data in _json_lines(path):
        try:
            entry = KnownScore(**(data | {"line": tuple(data["line"])}))
        except (KeyError, TypeError) as exc:
            raise InputError(f"{path}: not a known-scores record: {exc}") from None
        entries[entry.number] = entry
    return entries


def save(entries: Iterable[KnownScore], path: Path) -> None:
    """Write ``entries`` as a known-scores file (one JSON line each)."""
    path.write_text(
        "".join(json.dumps(e.to_json()) + "\n" for e in entries), encoding="utf-8"
    )


def merge(records: Iterable[dict]) -> dict[int, KnownScore]:
    """Return, per deal, the highest proven bound and the best line of
    ``records`` (result lines of ``patience bench --out`` or ``bench_views
    --out``, or the entries of a known-scores file, which keep their labels
    on ties). Raises `InputError` on a bound above a line."""
    # Per deal: (-bound, seconds, label) and (score, seconds, line, label);
    # the least wins, so of equal bounds or lines the fastest run is named.
    lows: dict[int, tuple[int, float, str]] = {}
    ups: dict[int, tuple[int, float, tuple[str, ...], str]] = {}
    for rec in records:
        if "upper" in rec:  # an entry of a known-scores file
            number, line = rec["number"], tuple(rec["line"])
            low = (-rec["lower"], -1.0, rec["lower_by"])
            lows[number] = min(lows.get(number, low), low)
            up = (rec["upper"], -1.0, line, rec["upper_by"])
            ups[number] = min(ups.get(number, up), up)
            continue
        if rec.get("status") == "won":
            continue  # a win is not a best-score benchmark
        # ``asked``: the engine named to the benchmark (``auto``), whose
        # answer's own ``engine`` is only the member that answered first.
        number, engine = rec["number"], rec.get("asked") or rec.get("engine", "?")
        elapsed, limit = rec.get("elapsed", 0.0), rec.get("time_limit")
        within = f" (limit {limit:g} s)" if limit else ""
        label = f"{engine}, {elapsed:.0f} s{within}"
        lower = rec.get("lower_bound")
        if lower is not None:
            low = (-lower, elapsed, label)
            lows[number] = min(lows.get(number, low), low)
        score, line = rec.get("best_score"), tuple(rec.get("line") or ())
        if score is not None and line:
            up = (score, elapsed, line, label)
            ups[number] = min(ups.get(number, up), up)
    out = {}
    for number in sorted(ups):
        minus_lower, _, lower_by = lows.get(number, (0, 0.0, "none"))
        upper, _, line, upper_by = ups[number]
        entry = KnownScore(number, -minus_lower, upper, line, lower_by, upper_by)
        check(entry)
        out[number] = entry
    return out


def conflicts(entry: KnownScore, lower: int | None, upper: int | None) -> list[str]:
    """Return what contradicts ``entry`` in a run's proven ``lower`` bound and
    line score ``upper`` (a bug in a prover, or in the entry)."""
    found = []
    if lower is not None and lower > entry.upper:
        found.append(
            f"deal {entry.number}: bound {lower} above known line {entry.upper}"
        )
    if upper is not None and upper < entry.lower:
        found.append(
            f"deal {entry.number}: line {upper} below known bound {entry.lower}"
        )
    return found


def summary(entries: dict[int, KnownScore]) -> list[str]:
    """Return the report of `summary`: how the known best scores spread.

    Only settled entries count (an open range is no best score); the
    histogram gives each best score and how many deals have it, so any
    grading scale can be read off it.
    """
    scores = [e.upper for e in entries.values() if e.settled]
    out = [f"{len(entries)} deals, {len(scores)} best scores known"]
    if not scores:
        return out
    out.append(
        f"median {statistics.median(scores):g}, "
        f"mean {statistics.mean(scores):.2f}, range {min(scores)}-{max(scores)}"
    )
    counts = sorted(Counter(scores).items())
    out += [
        "",
        "| best score | " + " | ".join(str(v) for v, _ in counts) + " |",
        "|---|" + "---|" * len(counts),
        "| deals | " + " | ".join(str(k) for _, k in counts) + " |",
    ]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("merge", help="build a known-scores file from result files")
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("check", help="replay every line of a known-scores file")
    p.add_argument("file", type=Path, nargs="?", default=SHIPPED)
    p = sub.add_parser("summary", help="how the known best scores spread")
    p.add_argument("file", type=Path, nargs="?", default=SHIPPED)
    args = parser.parse_args(argv)
    if args.command == "summary":
        print("\n".join(summary(load(args.file))))
        return 0
    if args.command == "merge":
        records = [rec for path in args.results for rec in _json_lines(path)]
        entries = merge(records)
        save(entries.values(), args.out)
    else:
        entries = load(args.file)
        for entry in entries.values():
            check(entry)
    settled = sum(e.settled for e in entries.values())
    print(f"{len(entries)} deals, {settled} best scores known, every line replayed")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
