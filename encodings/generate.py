"""Guaranteed-winnable Devil's Grip deals: constructed, proven, graded, shipped.

Random deals are almost never winnable under this rule card, so deals are
*built* (`verifier.devils_grip_construct`: a random walk of exact inverse moves
back from a won layout, whose reverse is a winning line) and then, for each
candidate:

1. **features and grade** (`patience_encodings.grading`): cheap, exact and
   deterministic, so candidates of an unwanted grade are dropped before any
   prover runs;
2. **proof**: a registered prover (`engines.solve`, SAT preferred) must say
   WON on its own, with a line that `engines.solve` replays with the reference
   engine (a prover that runs out of time is an error, never a reason to take
   another candidate: the deals of a seed must not depend on the machine);
3. **shipping**: the constructed line is replayed once more and shipped as the
   solution only if it ends won.

Reproducible: deal ``i`` of ``generate(count, seed, difficulty)`` is the first
candidate of grade ``difficulty`` in the candidate stream of seed ``seed + i``;
candidate 0 of seed ``s`` is ``construct(s)`` itself, candidate ``j > 0`` is
``construct`` of the ``j``-th SplitMix64 draw of ``s ^ CANDIDATE_SALT`` (63
bits). So ``--difficulty any`` gives ``construct(seed + i)``, and the same seed
gives the same deals forever. A candidate with every base card in the grid is
never shipped (it would need no tight merge).

Run as a module for the curated corpus, the grade table and the timing:

    python -m patience_encodings.generate curate --per-grade 30 --seed 1000
    python -m patience_encodings.generate table --count 200 --seed 0
    python -m patience_encodings.generate calibrate --count 200 --seed 0
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from verifier import devils_grip as dg
from verifier.cards import Card
from verifier.devils_grip_construct import Constructed, construct
from verifier.errors import InputError, PatienceError, UnsupportedError
from verifier.formats import start_from_deal
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status
from verifier.shuffle import MASK64, Rng, splitmix64

from . import engines
from .grading import GRADES, Features, casual, deal_id, grade_of, measure, play

GAME = dg.GAME
DIFFICULTIES = ("any", *GRADES)
#: Candidates tried per deal before a grade is declared out of reach.
MAX_CANDIDATES = 400
#: Provers tried in this order when no engine is named (SAT: measured fastest).
PREFERRED_ENGINES = ("sat", "search", "smt")
#: Seconds a prover may take to confirm one candidate (SAT: under 3 s measured).
PROOF_TIME_LIMIT = 10.0
#: Mixed into a seed for the candidates after the first.
CANDIDATE_SALT = 0x6A09E667F3BCC908
#: Seeds are 63-bit, as in the service.
MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class Generated:
    """A shipped deal: graded, proven by a prover, with a replayed solution."""

    deal: tuple[Card, ...]
    seed: int
    candidate: int
    grade: str
    features: Features
    line: tuple[str, ...]
    proof: ProofResult = field(repr=False)

    @property
    def id(self) -> str:
        """Return the stable id: 12 hex digits of SHA-256 of the deal text."""
        return deal_id(self.deal)

    def to_json(self) -> dict[str, Any]:
        """Return the JSON form (no timings, so that it is reproducible)."""
        return {
            "id": self.id,
            "game": GAME.name,
            "seed": self.seed,
            "candidate": self.candidate,
            "grade": self.grade,
            "features": self.features.to_json(),
            "deal": [str(c) for c in self.deal],
            "text": dg.format_deal(self.deal),
            "line": list(self.line),
            "proof": {
                "engine": self.proof.engine,
                "status": self.proof.status.value,
                "method": self.proof.method,
            },
        }


# -- candidates ---------------------------------------------------------------------
def candidate_seeds(seed: int) -> Iterator[int]:
    """Yield the construction seeds of ``seed``'s candidates (module docstring)."""
    yield seed
    for draw in splitmix64((seed ^ CANDIDATE_SALT) & MASK64):
        yield draw >> 1


@dataclass(frozen=True)
class Candidate:
    """A constructed deal with its features and grade, not yet proven."""

    index: int
    built: Constructed
    features: Features
    grade: str


def candidates(seed: int, limit: int = MAX_CANDIDATES) -> Iterator[Candidate]:
    """Yield ``seed``'s first ``limit`` candidates that have a base in the stock."""
    seeds = itertools.islice(candidate_seeds(seed), limit)
    for index, construct_seed in enumerate(seeds):
        built = construct(construct_seed)
        features = measure(built.deal)
        if features.stock_bases:
            yield Candidate(index, built, features, grade_of(features.difficulty))


# -- proof and shipping ------------------------------------------------------------
def default_engine() -> str:
    """Return the first registered prover of `PREFERRED_ENGINES`."""
    available = engines.engines_for(GAME.name)
    for name in (*PREFERRED_ENGINES, *available):
        if name in available:
            return name
    raise UnsupportedError(f"no prover is registered for {GAME.name}")


def prove(
    deal: Sequence[Card],
    engine: str | None = None,
    time_limit: float = PROOF_TIME_LIMIT,
) -> ProofResult:
    """Prove ``deal`` with a prover; `engines.solve` replays the line it returns.

    One named engine runs in this process (no fork; its CPU time is ours to
    measure); ``auto`` runs the portfolio.
    """
    start = start_from_deal(GAME, tuple(deal))
    name = engine or default_engine()
    return engines.solve(
        start,
        question=Question.VERDICT,
        engine=name,
        time_limit=time_limit,
        isolate=name == engines.AUTO,
    )


class ProofTimeoutError(PatienceError):
    """The prover did not confirm a candidate in time.

    Not a reason to move on to the next candidate: which deal a seed gives
    must not depend on how fast the machine is.
    """

    code = "prover_timeout"


def ship(seed: int, candidate: Candidate, proof: ProofResult) -> Generated:
    """Return the shipped deal: the prover proved it won and the line wins."""
    where = f"seed {seed}, candidate {candidate.index}"
    if proof.status is Status.UNKNOWN:
        raise ProofTimeoutError(f"{proof.engine}: {proof.method} ({where}); retry")
    if proof.status is not Status.WON:
        raise AssertionError(
            f"{proof.engine} proved a constructed deal lost ({where}): "
            "the constructor or the prover is wrong"
        )
    built = candidate.built
    if not replay(GAME, GAME.initial_state(built.deal), built.line).won:
        raise AssertionError(f"the constructed line does not win ({where})")
    return Generated(
        deal=built.deal,
        seed=seed,
        candidate=candidate.index,
        grade=candidate.grade,
        features=candidate.features,
        line=tuple(dg.format_move(m) for m in built.line),
        proof=proof,
    )


def generate_one(
    seed: int,
    difficulty: str = "any",
    *,
    engine: str | None = None,
    time_limit: float = PROOF_TIME_LIMIT,
    limit: int = MAX_CANDIDATES,
) -> Generated:
    """Return the first candidate of ``seed`` with grade ``difficulty``, proven."""
    if difficulty not in DIFFICULTIES:
        raise InputError(
            f"difficulty must be one of {', '.join(DIFFICULTIES)}, not {difficulty!r}"
        )
    for candidate in candidates(seed, limit):
        if difficulty not in ("any", candidate.grade):
            continue
        proof = prove(candidate.built.deal, engine, time_limit)
        return ship(seed, candidate, proof)
    raise InputError(
        f"no {difficulty} deal among the first {limit} "
        f"candidates of seed {seed}; try another seed"
    )


def generate(
    count: int,
    seed: int,
    difficulty: str = "any",
    *,
    engine: str | None = None,
    time_limit: float = PROOF_TIME_LIMIT,
) -> Iterator[Generated]:
    """Yield ``count`` deals; deal ``i`` comes from seed ``seed + i``."""
    if count < 1:
        raise InputError(f"count must be at least 1, not {count}")
    if not 0 <= seed <= MAX_SEED - count + 1:
        raise InputError(f"seed must be between 0 and {MAX_SEED - count + 1}")
    for i in range(count):
        yield generate_one(seed + i, difficulty, engine=engine, time_limit=time_limit)


def describe(made: Generated) -> str:
    """Return a deal as text: a header with its grade, the deal, the solution."""
    f = made.features
    head = (
        f"# deal {made.id}: {made.grade} (D={f.difficulty}: greedy player leaves "
        f"{f.greedy_score}, best tenth of casual players {f.casual_p10}); "
        f"seed {made.seed}"
    )
    proof = f"# proven by {made.proof.engine}: {made.proof.method}"
    moves = [" ".join(made.line[i : i + 16]) for i in range(0, len(made.line), 16)]
    solution = f"# solution, {len(made.line)} moves"
    return "\n".join(
        [head, dg.format_deal(made.deal).rstrip(), proof, solution, *moves]
    )


# -- the curated corpus -------------------------------------------------------------
def grid_key(deal: Sequence[Card]) -> tuple[str, ...]:
    """Return the 24 grid cards as a multiset (sorted), for the diversity rule."""
    return tuple(sorted(str(c) for c in deal[: dg.GRID_SIZE]))


def curate(
    per_grade: int, seed: int, *, engine: str | None = None, limit: int = 20_000
) -> list[Generated]:
    """Return ``per_grade`` deals of every grade, no two with the same grid cards.

    Seeds ``seed, seed + 1, ...`` are taken in turn (candidate 0 of each, so
    every entry is ``generate --count 1 --seed S`` again); a seed whose deal
    is of a full grade, or repeats a grid, is skipped.
    """
    wanted = Counter({grade: per_grade for grade in GRADES})
    grids: set[tuple[str, ...]] = set()
    out: list[Generated] = []
    for s in range(seed, seed + limit):
        candidate = next(candidates(s, limit=1), None)
        if candidate is None or not wanted[candidate.grade]:
            continue
        if grid_key(candidate.built.deal) in grids:
            continue
        shipped = ship(s, candidate, prove(candidate.built.deal, engine))
        grids.add(grid_key(shipped.deal))
        wanted[shipped.grade] -= 1
        out.append(shipped)
        if not +wanted:
            return out
    raise InputError(f"grades not filled within {limit} seeds: {dict(+wanted)}")


# -- the grade table and the timing ------------------------------------------------
@dataclass(frozen=True)
class Timed:
    """One generated deal with the seconds (wall and CPU) of each stage."""

    shipped: Generated
    wall: float
    cpu: float
    prove_wall: float


def timed_generate(seed: int, engine: str | None) -> Timed:
    """Generate the deal of ``seed`` (any grade) and time it."""
    wall, cpu = time.perf_counter(), time.process_time()
    candidate = next(candidates(seed))
    began = time.perf_counter()
    proof = prove(candidate.built.deal, engine)
    prove_wall = time.perf_counter() - began
    shipped = ship(seed, candidate, proof)
    return Timed(
        shipped, time.perf_counter() - wall, time.process_time() - cpu, prove_wall
    )


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _p90(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


TABLE_COLUMNS = (
    ("difficulty", "D"),
    ("greedy_score", "greedy left"),
    ("casual_p10", "casual p10"),
    ("casual_mean", "casual mean"),
    ("casual_wins", "casual wins /64"),
    ("stock_bases", "stock bases"),
    ("forced_merges", "forced merges"),
)


def grade_table(runs: Sequence[Timed]) -> str:
    """Return the Markdown table of features per grade (means; D as a range)."""
    head = ["grade", "deals", *(name for _, name in TABLE_COLUMNS)]
    head += ["talon plays in line", "prover s (median)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for grade in GRADES:
        rows = [r for r in runs if r.shipped.grade == grade]
        if not rows:
            continue
        feats = [r.shipped.features.to_json() for r in rows]
        cells = [grade, str(len(rows))]
        ds = [f["difficulty"] for f in feats]
        cells.append(f"{min(ds)}-{max(ds)}")
        cells += [
            f"{statistics.mean(f[key] for f in feats):.1f}"
            for key, _ in TABLE_COLUMNS[1:]
        ]
        plays = [sum(m.startswith("T>") for m in r.shipped.line) for r in rows]
        cells.append(f"{statistics.mean(plays):.1f}")
        cells.append(f"{_median([r.prove_wall for r in rows]):.2f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def timing_report(runs: Sequence[Timed]) -> str:
    """Return median and p90 seconds per generated, proven deal."""
    wall = [r.wall for r in runs]
    cpu = [r.cpu for r in runs]
    prover = [r.prove_wall for r in runs]
    engines_used = Counter(r.shipped.proof.engine for r in runs)
    return (
        f"{len(runs)} deals, prover {dict(engines_used)}: per generated, proven deal "
        f"wall median {_median(wall):.3f} s, p90 {_p90(wall):.3f} s; "
        f"CPU median {_median(cpu):.3f} s, p90 {_p90(cpu):.3f} s; "
        f"prover wall median {_median(prover):.3f} s, p90 {_p90(prover):.3f} s"
    )


def _cmd_table(args: argparse.Namespace, out: TextIO) -> None:
    runs = [
        timed_generate(s, args.engine) for s in range(args.seed, args.seed + args.count)
    ]
    print(grade_table(runs), file=out)
    print(file=out)
    print(timing_report(runs), file=out)


def calibration_report(seeds: range) -> str:
    """Return how stable the grade is, measured on the deals of ``seeds``.

    Two random streams for the casual players (the deal id's, and another):
    how often the grade agrees, for ``D`` and for a grade built on the best
    single playout instead of the 10th percentile; and on how many deals the
    greedy score changes when the greedy player picks its merges at random.
    """
    same_d = same_best = greedy_varies = 0
    grades: Counter[str] = Counter()
    for s in seeds:
        deal = construct(s).deal
        one, two = measure(deal), measure(deal, salt=1)
        grades[grade_of(one.difficulty)] += 1
        same_d += grade_of(one.difficulty) == grade_of(two.difficulty)
        best = [grade_of(min(f.greedy_score, f.casual_best)) for f in (one, two)]
        same_best += best[0] == best[1]
        rng = Rng(s)
        picks = {len(play(deal, casual(rng, skip=0.0)).talon) for _ in range(8)}
        greedy_varies += picks != {one.greedy_score}
    n = len(seeds)
    return (
        f"{n} deals (seeds {seeds.start}..{seeds.stop - 1}): grades {dict(grades)}; "
        f"grade agrees across two casual streams on {same_d / n:.0%} "
        f"(best single playout instead of the 10th percentile: {same_best / n:.0%}); "
        f"greedy score changed by random merge picks on {greedy_varies} deals"
    )


def merge_patterns(deal: Sequence[Card], cap: int = 16) -> int:
    """Count the deal's winning merge-timing patterns with SAT, up to ``cap``.

    A pattern is the set of stock cards drawn by merges (the ``M_t`` of the
    SAT encoding); each model found is blocked on those variables and the
    solver asked again. Measured for the calibration only: see
    ``docs/grades.md`` for why it is not a grading feature.
    """
    from pysat.solvers import Solver

    from .devils_grip_sat import SOLVER
    from .devils_grip_sat_cnf import build_encoding

    enc = build_encoding(GAME.initial_state(tuple(deal)), Question.VERDICT)
    merges = [enc.var_merge(t) for t in range(enc.layout.n)]
    found = 0
    with Solver(name=SOLVER, bootstrap_with=enc.clauses) as solver:
        while found < cap and solver.solve():
            true = set(solver.get_model())
            solver.add_clause([-v if v in true else v for v in merges])
            found += 1
    return found


def patterns_report(seeds: range, cap: int = 16) -> str:
    """Return the merge-pattern counts of the deals of ``seeds`` and their cost."""
    counts, seconds = [], []
    for s in seeds:
        began = time.perf_counter()
        counts.append(merge_patterns(construct(s).deal, cap))
        seconds.append(time.perf_counter() - began)
    return (
        f"merge-timing patterns (cap {cap}) on seeds {seeds.start}..{seeds.stop - 1}: "
        f"{dict(sorted(Counter(counts).items()))}; "
        f"{min(seconds):.2f}-{max(seconds):.2f} s per deal"
    )


def _cmd_calibrate(args: argparse.Namespace, out: TextIO) -> None:
    print(calibration_report(range(args.seed, args.seed + args.count)), file=out)
    if args.patterns:
        seeds = range(args.seed, args.seed + args.patterns)
        print(patterns_report(seeds), file=out)


def _cmd_curate(args: argparse.Namespace, out: TextIO) -> None:
    for shipped in curate(args.per_grade, args.seed, engine=args.engine):
        print(json.dumps(shipped.to_json(), separators=(",", ":")), file=out)


def main(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """Write the curated corpus, or print the grade table and the timing."""
    parser = argparse.ArgumentParser(prog="python -m patience_encodings.generate")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("curate", help="write the curated corpus as JSON lines")
    p.add_argument("--per-grade", type=int, default=30)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--engine", default=None)
    p.set_defaults(func=_cmd_curate)
    p = sub.add_parser("table", help="features per grade and seconds per deal")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--engine", default=None)
    p.set_defaults(func=_cmd_table)
    p = sub.add_parser("calibrate", help="how stable the grades are (no proofs)")
    p.add_argument("--count", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--patterns", type=int, default=0, help="also count SAT patterns")
    p.set_defaults(func=_cmd_calibrate)
    args = parser.parse_args(argv)
    args.func(args, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
