"""The replay checker: the one place a line of moves is judged.

It uses only a game's rules (`verifier.game.Game`), never a prover, so that it
can check every prover's output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import IllegalMoveError
from .game import Game


@dataclass(frozen=True)
class IllegalStep:
    """The first illegal move of a line: 1-based step, the move, the reason."""

    step: int
    move: str
    reason: str

    def __str__(self) -> str:
        return f"step {self.step}: {self.reason}"


@dataclass(frozen=True)
class ReplayResult:
    """The outcome of replaying a line.

    ``final`` is the position after the last legal move; ``error`` is set when a
    move was illegal (and then ``steps`` counts the legal moves before it).
    """

    final: Any
    steps: int
    won: bool
    stuck: bool
    score: int
    error: IllegalStep | None = None

    @property
    def ok(self) -> bool:
        """Return whether every move was legal."""
        return self.error is None

    def verdict(self) -> str:
        """Return ``WON``, ``score N`` (stuck), or how far the line got."""
        if self.error:
            return str(self.error)
        if self.won:
            return "WON"
        if self.stuck:
            return f"score {self.score}"
        return f"not finished (score so far {self.score})"


def replay(game: Game, start: Any, moves: Sequence[Any]) -> ReplayResult:
    """Apply ``moves`` to ``start``; stop at the first illegal move with its reason."""
    state = start
    for index, move in enumerate(moves):
        try:
            state = game.apply(state, move)
        except IllegalMoveError as exc:
            error = IllegalStep(index + 1, game.format_move(move), exc.message)
            return _result(game, state, index, error)
    return _result(game, state, len(moves), None)


def _result(
    game: Game, state: Any, steps: int, error: IllegalStep | None
) -> ReplayResult:
    return ReplayResult(
        final=state,
        steps=steps,
        won=game.is_won(state),
        stuck=game.is_stuck(state),
        score=game.score(state),
        error=error,
    )
