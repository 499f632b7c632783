"""What ``GET /v1/games`` says about each registered game.

Everything is read from the game registry, the prover registry and the job
parsers, so a new game shows up here without an edit.
"""

from __future__ import annotations

import inspect
from typing import Any

from patience_encodings.engines import AUTO, engines_for
from verifier.game import Game
from verifier.registry import DEFAULT_GAME, GAMES
from worker.jobs import (
    DEFAULT_TIME_LIMIT,
    DIFFICULTIES,
    GENERATORS,
    MAX_DEALS,
    MAX_ITEMS,
    MIN_TIME_LIMIT,
    QUESTIONS,
)
from worker.settings import Settings

NUMBER_FORMAT = "an integer 0 .. 2**64-1: the numbered deal (same on every platform)"
DEAL_FORMAT = (
    'the cards in deal order: a list of tokens like "10H", "QS" '
    "(rank 2-10, J, Q, K, A; suit S, H, D, C), or the same as blank-separated text"
)


def _doc(obj: Any) -> str:
    return " ".join((inspect.getdoc(obj) or "").split())


def describe_game(game: Game) -> dict[str, Any]:
    """Return one game's entry: rules summary, formats, engines, questions."""
    engines = engines_for(game.name)
    questions = [q for q in QUESTIONS if q == "verdict" or game.has_score]
    return {
        "name": game.name,
        "title": game.title,
        "summary": getattr(game, "summary", "") or _doc(type(game)),
        "deal_size": game.deal_size,
        "has_score": game.has_score,
        "formats": {
            "deal": f"{game.deal_size} cards; {DEAL_FORMAT}",
            "position": _doc(game.parse_position),
            "number": NUMBER_FORMAT,
        },
        "engines": [AUTO, *engines] if engines else [],
        "questions": questions,
        "generator": {
            "available": game.name in GENERATORS,
            "difficulties": list(DIFFICULTIES),
        },
    }


def games_summary(settings: Settings) -> dict[str, Any]:
    """Return every game's entry and the request limits that apply to all."""
    return {
        "default": DEFAULT_GAME,
        "games": [describe_game(game) for game in GAMES.values()],
        "limits": {
            "time_limit": {
                "min": MIN_TIME_LIMIT,
                "max": settings.max_time_limit,
                "default": min(DEFAULT_TIME_LIMIT, settings.max_time_limit),
            },
            "max_job_seconds": settings.max_job_seconds,
            "max_deals": MAX_DEALS,
            "max_batch_items": MAX_ITEMS,
        },
    }
