"""The one list of games. A new game is a module plus one line here."""

from __future__ import annotations

from . import besieged_fortress, devils_grip
from .errors import UnknownGameError
from .game import Game

GAMES: dict[str, Game] = {
    devils_grip.GAME.name: devils_grip.GAME,
    besieged_fortress.GAME.name: besieged_fortress.GAME,
}

DEFAULT_GAME = devils_grip.GAME.name


def get_game(name: str | None) -> Game:
    """Return the game registered as ``name`` (default Devil's Grip)."""
    if name is not None and not isinstance(name, str):
        raise UnknownGameError(f"'game' must be a string, not {type(name).__name__}")
    key = (DEFAULT_GAME if name is None else name).strip().lower()
    try:
        return GAMES[key]
    except KeyError:
        known = ", ".join(sorted(GAMES))
        raise UnknownGameError(f"unknown game {name!r} (known: {known})") from None
