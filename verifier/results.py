"""Typed prover results: proven and unproven answers are never confused.

Every prover (search, SAT, SMT) returns a `ProofResult`. Lines are stored in the
game's canonical move notation so that results cross process boundaries (the
portfolio, Celery) as plain JSON, and `check_result` replays them with the
reference engine before anyone reports them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from .errors import UnsupportedError
from .game import Game
from .replay import replay


class Status(StrEnum):
    """What a prover found out about a deal or position."""

    WON = "won"  # a winning line exists (and is attached)
    LOST = "lost"  # no winning line exists (proven when `proven`)
    UNKNOWN = "unknown"  # a budget ran out before the question was settled


class Question(StrEnum):
    """What was asked: only whether it can be won, or also the best score."""

    VERDICT = "verdict"
    SCORE = "score"


@dataclass(frozen=True)
class ProofResult:
    """A prover's answer.

    - ``status``/``proven``: the verdict, and whether it is proven. ``WON`` is
      always proven (the line is the proof); ``UNKNOWN`` never is.
    - ``best_score``: the best score of any line found (0 for a win), and
      ``score_proven`` whether no line does better (the optimum is proven).
    - ``lower_bound``: a proven lower bound on the best score, where known.
    - ``line``: canonical notation of a line that reaches ``best_score``.
    - ``method``: how the verdict (and score) was proven, in words.
    """

    status: Status
    proven: bool
    engine: str
    question: Question = Question.VERDICT
    best_score: int | None = None
    score_proven: bool = False
    lower_bound: int | None = None
    line: tuple[str, ...] = ()
    method: str = ""
    elapsed: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.status is Status.WON and not (self.proven and self.best_score == 0):
            raise ValueError("a win is proven by its line and scores 0")
        if self.status is Status.UNKNOWN and self.proven:
            raise ValueError("an unknown result cannot be proven")
        if self.score_proven and (self.best_score is None or not self.proven):
            raise ValueError("a proven best score needs a proven verdict and a score")
        if self.status is Status.LOST and self.best_score == 0:
            raise ValueError("a lost deal cannot score 0")

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        data = asdict(self)
        data["status"] = self.status.value
        data["question"] = self.question.value
        data["line"] = list(self.line)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProofResult:
        """Rebuild a result from `to_json` output."""
        fields = dict(data)
        fields["status"] = Status(fields["status"])
        fields["question"] = Question(fields.get("question", "verdict"))
        fields["line"] = tuple(fields.get("line", ()))
        return cls(**fields)


def check_question(game: Game, question: Question) -> None:
    """Refuse the score question for a game that has no score to prove.

    One check, one message, wherever a question arrives: at the provers (they
    may be called directly), and at the doors (jobs, studies) before any work.
    """
    if question is Question.SCORE and not game.has_score:
        raise UnsupportedError(
            f"{game.title} has no score to prove; ask for the verdict"
        )


class ResultCheckError(AssertionError):
    """A prover returned a line that the reference engine does not confirm."""


def check_result(game: Game, start: Any, result: ProofResult) -> ProofResult:
    """Replay ``result.line`` from ``start``; raise `ResultCheckError` if it lies.

    A ``WON`` line must end won; a line reported with a best score must end
    stuck with exactly that score. The line is also the one piece of
    evidence that can refute the result's other claims, so it is held
    against them: a line of a result that is not ``WON`` must not win, and a
    proven lower bound must not exceed the best score reported, nor the
    score of a line that ends stuck (a line leaving fewer cards than "every
    line leaves at least L" is a counterexample). Returns ``result``
    unchanged when it checks.
    """
    low, best = result.lower_bound, result.best_score
    if low is not None and best is not None and low > best:
        raise ResultCheckError(
            f"{result.engine}: lower bound {low} above its own best score {best}"
        )
    if result.status is Status.UNKNOWN and not result.line:
        return result
    moves = game.parse_moves("\n".join(result.line))
    outcome = replay(game, start, moves)
    if outcome.error:
        raise ResultCheckError(f"{result.engine}: line fails at {outcome.error}")
    if result.status is Status.WON and not outcome.won:
        raise ResultCheckError(f"{result.engine}: 'won' line does not end won")
    if result.status is not Status.WON and outcome.won:
        raise ResultCheckError(
            f"{result.engine}: a {result.status.value} result's line ends won"
        )
    if low is not None and outcome.stuck and outcome.score < low:
        raise ResultCheckError(
            f"{result.engine}: lower bound {low}, but its line leaves {outcome.score}"
        )
    if result.best_score is not None and result.status is not Status.WON:
        if not outcome.stuck or outcome.score != result.best_score:
            raise ResultCheckError(
                f"{result.engine}: line ends with {outcome.verdict()}, "
                f"reported best score {result.best_score}"
            )
    return result


_partial_sink: Callable[[ProofResult], None] | None = None


def set_partial_sink(sink: Callable[[ProofResult], None] | None) -> None:
    """Install (or remove) the receiver of `report_partial` answers."""
    global _partial_sink
    _partial_sink = sink


def report_partial(result: ProofResult) -> None:
    """Offer an unsettled but useful answer while a prover keeps working.

    E.g. "lost, proven; best line so far scores 7" during a best-score search.
    A runner that must stop the prover at its time limit (CaDiCaL cannot be
    interrupted) reports the last such answer instead of nothing. Without a
    runner listening this does nothing.
    """
    if _partial_sink is not None:
        _partial_sink(result)


_line_source: Callable[[], int | None] | None = None


def set_line_source(source: Callable[[], int | None] | None) -> None:
    """Install (or remove) the provider of `line_elsewhere`."""
    global _line_source
    _line_source = source


def line_elsewhere() -> int | None:
    """Return the score of the best line a fellow prover has reported, if any.

    A portfolio runner passes each member's lines (their scores, from
    `report_partial`) on to the others, so that a best-score search may
    look only below the best of them. Whatever the line, a lower bound proven
    that way is unconditional ("no line leaves fewer"); the line only makes
    it meet. None without a runner, or before any line.
    """
    return _line_source() if _line_source is not None else None


_answer_deadline: float | None = None


def set_answer_deadline(instant: float | None) -> None:
    """Install (or remove) the last instant (`time.monotonic`) at which an
    answer sent to the runner still arrives before it stops the prover."""
    global _answer_deadline
    _answer_deadline = instant


def answer_deadline() -> float | None:
    """Return the last instant at which a proof still reaches the runner.

    A runner gives its prover a limit short of its own (time to notice the
    limit between two oracle calls, then build and send an answer), and
    stops the prover at its own. A proof already under way when the
    prover's limit passes -- a refutation whose UNSAT settles the question
    -- may run on to this instant: if it ends by then it is delivered; if
    not, the runner stops it and keeps the partial answers
    (`report_partial`), which is all that stopping it at the prover's own
    limit would have left. None without a runner (the prover's limit is
    then the only one).
    """
    return _answer_deadline
