"""The small typed interface every game module implements.

Provers, encodings, the replay checker, the CLI and the service see a game only
through this protocol (in the spirit of pyperplan's `Task`): states and moves are
immutable and hashable, and the rules live in exactly one place per game.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class Game(Protocol):
    """A patience game: formats, rules, win and score."""

    #: Registry key, e.g. ``"devils-grip"``.
    name: str
    #: Human title, e.g. ``"Devil's Grip"``.
    title: str
    #: Number of cards in a deal.
    deal_size: int
    #: Whether "score" (lower is better) is meaningful for lost deals.
    has_score: bool
    #: The rules in a few lines, for players choosing a game (``GET /v1/games``).
    summary: str
    #: What the score counts, for reports' words ("the fewest {unit}").
    score_unit: str
    #: Named grades of a best score, best first: a deal whose best score is at
    #: most the bound earns the grade. Empty when the game has none.
    score_grades: tuple[tuple[str, int], ...]

    # -- formats -------------------------------------------------------------
    def parse_deal(self, text: str) -> tuple[Any, ...]:
        """Parse deal text (whitespace-separated card tokens, ``#`` comments)."""

    def deal_from_list(self, tokens: Sequence[str]) -> tuple[Any, ...]:
        """Validate a deal given as a list of card tokens (the JSON form)."""

    def numbered_deal(self, number: int) -> tuple[Any, ...]:
        """Return deal ``number`` (documented, platform-independent shuffle)."""

    def format_deal(self, deal: Sequence[Any]) -> str:
        """Return the canonical deal text."""

    def parse_position(self, data: dict[str, Any]) -> Any:
        """Validate a position given in its JSON form."""

    def parse_position_text(self, text: str) -> Any:
        """Parse the game's compact, hand-writable position text."""

    def position_to_json(self, state: Any) -> dict[str, Any]:
        """Return the JSON form of a position."""

    def render(self, state: Any) -> str:
        """Draw a position for a terminal."""

    # -- moves ---------------------------------------------------------------
    def parse_moves(self, text: str) -> list[Any]:
        """Parse a move list in the game's notation."""

    def format_move(self, move: Any) -> str:
        """Return the canonical notation of a move."""

    def describe_move(self, state: Any, move: Any) -> str:
        """Say in words what ``move`` does in ``state`` (it must be legal)."""

    # -- rules ---------------------------------------------------------------
    def initial_state(self, deal: Sequence[Any]) -> Any:
        """Return the position at the start of ``deal``."""

    def legal_moves(self, state: Any) -> list[Any]:
        """Return every legal move in ``state``."""

    def illegal_reason(self, state: Any, move: Any) -> str | None:
        """Return why ``move`` is illegal in ``state``, or None when it is legal."""

    def apply(self, state: Any, move: Any) -> Any:
        """Return the successor; raise `IllegalMoveError` with the reason."""

    def is_won(self, state: Any) -> bool:
        """Return whether ``state`` is a finished, won game."""

    def is_stuck(self, state: Any) -> bool:
        """Return whether no move can bring another card into play."""

    def score(self, state: Any) -> int:
        """Return the game's score of ``state`` (meaningful once stuck)."""

    def finishing_moves(self, state: Any) -> list[Any]:
        """Return moves that only tidy a complete position into a won one."""
