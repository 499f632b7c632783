"""What ``GET /v1/games`` says about each registered game.

Everything is read from the game registry (`verifier.registry`, the game's
own attributes), the prover-level registries (`patience_encodings.engines`,
`patience_encodings.registry`) and the job parsers, so a new game shows up
here without an edit.
"""

from __future__ import annotations

import inspect
from typing import Any

from patience_encodings.engines import AUTO, engines_for
from patience_encodings.registry import DEAL_GENERATORS
from verifier.cards import rank_name
from verifier.game import Game
from verifier.registry import DEFAULT_GAME, GAMES
from worker.jobs import (
    DEFAULT_TIME_LIMIT,
    DIFFICULTIES,
    MAX_DEALS,
    MAX_ITEMS,
    MIN_TIME_LIMIT,
    QUESTIONS,
)
from worker.settings import Settings

NUMBER_FORMAT = "an integer 0 .. 2**64-1: the numbered deal (same on every platform)"


def _format_doc(obj: Any) -> str:
    """Return a parser's docstring without its summary line: the format itself.

    The summary ("Validate a position in its JSON form.") says what the
    function does; a client asking for the format wants the paragraphs after it.
    """
    paragraphs = (inspect.getdoc(obj) or "").split("\n\n")
    text = " ".join(paragraphs[1:] or paragraphs).replace("``", "")
    return " ".join(text.split())


def deal_format(game: Game) -> str:
    """Describe a deal's tokens, with the ranks read from the game's own deck.

    Devil's Grip has no aces and Besieged Fortress has them, so the ranks are
    taken from a numbered deal rather than written down once for all games.
    """
    ranks = sorted({card.rank for card in game.numbered_deal(0)})
    aces = [rank_name(r) for r in ranks if r < 2]
    faces = [rank_name(r) for r in ranks if r > 10]
    names = ", ".join([*aces, "2-10 (T for 10)", *faces])
    return (
        f'{game.deal_size} cards in deal order: a list of tokens like "10H", '
        f'"QS" (rank {names}; suit S, H, D, C or ♠ ♥ ♦ ♣), or the same as '
        "blank-separated text"
    )


def describe_game(game: Game) -> dict[str, Any]:
    """Return one game's entry: rules summary, formats, engines, questions."""
    engines = engines_for(game.name)
    questions = [q for q in QUESTIONS if q == "verdict" or game.has_score]
    return {
        "name": game.name,
        "title": game.title,
        "summary": game.summary,
        "deal_size": game.deal_size,
        "has_score": game.has_score,
        "formats": {
            "deal": deal_format(game),
            "position": _format_doc(game.parse_position),
            "number": NUMBER_FORMAT,
        },
        "engines": [AUTO, *engines] if engines else [],
        "questions": questions,
        "generator": {
            "available": game.name in DEAL_GENERATORS,
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
