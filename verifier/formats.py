"""Reading a starting point — a deal or a position — in any accepted form.

A *start* is what a prover or a replay begins from. It may be given as

- deal text: card tokens in deal order, ``#`` comments allowed;
- a deal in JSON: a list of tokens, or ``{"game": ..., "deal": [...]}``;
- a position in JSON: ``{"game": ..., "grid": ..., ...}`` (the game's own fields);
- a position in the game's compact text, ``A1: 2S 5S`` lines
  (`Game.parse_position_text`);
- a numbered deal: ``{"game": ..., "number": N}`` or the text ``number N``
  (with ``"deal"`` too, as ``patience deal --json`` prints it, when the two agree).

`parse_numbers` reads a list of deal numbers (``1,4,10-20``), as the
benchmarks take them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .cards import strip_comments
from .errors import InputError
from .game import Game
from .registry import get_game
from .textforms import KEY_LINE, load_json

MAX_INPUT_BYTES = 256 * 1024


@dataclass(frozen=True)
class Start:
    """A validated starting point: the game, the state, and where it came from."""

    game: Game
    state: Any
    kind: str  # "deal", "position" or "number"
    deal: tuple[Any, ...] | None = None
    number: int | None = None

    def describe(self) -> str:
        """Return a short label, e.g. ``devils-grip deal #17``."""
        if self.number is not None:
            return f"{self.game.name} deal #{self.number}"
        return f"{self.game.name} {self.kind}"


def start_from_deal(
    game: Game, deal: tuple[Any, ...], number: int | None = None
) -> Start:
    """Return the start of ``deal``."""
    kind = "number" if number is not None else "deal"
    return Start(game, game.initial_state(deal), kind, deal=deal, number=number)


def start_from_number(game: Game, number: Any) -> Start:
    """Return numbered deal ``number`` of ``game``."""
    if isinstance(number, bool) or not isinstance(number, int):
        raise InputError(f"deal number must be an integer, not {number!r}")
    return start_from_deal(game, game.numbered_deal(number), number)


#: The ways to give a start in a JSON object (one of them, see `start_from_json`).
START_FORMS = ("number", "deal", "position")
#: Fields of a generated-deal record (``patience generate --json``, the curated
#: corpus) besides its deal: they describe the deal, so a record is a start.
RECORD_FIELDS = (
    "id",
    "seed",
    "candidate",
    "grade",
    "features",
    "text",
    "line",
    "proof",
)
#: The fields a JSON start object may carry, by form (a bare position's own
#: fields are the game's, checked by its ``parse_position``).
START_FIELDS = {
    "number": ("game", "number", "deal"),
    "deal": ("game", "deal"),
    "position": ("game", "position"),
}


def start_from_json(data: Any, game_name: str | None = None) -> Start:
    """Read a start from decoded JSON (deal list, deal object, number or position).

    An object gives one start; ``number`` with ``deal`` is accepted only when
    the deal is that numbered deal (what ``patience deal --json`` prints).
    Unknown fields are refused, as the API refuses them, so that a typo is an
    error and not a silently ignored request.
    """
    if isinstance(data, list):
        game = get_game(game_name)
        return start_from_deal(game, game.deal_from_list(data))
    if not isinstance(data, dict):
        raise InputError("expected a JSON object or a list of card tokens")
    game = get_game(data.get("game", game_name))
    forms = [key for key in START_FORMS if key in data]
    if len(forms) > 1 and forms != ["number", "deal"]:
        named = ", ".join(f"'{key}'" for key in forms)
        raise InputError(
            f"give one start (a number, a deal or a position), not {named}"
        )
    if forms:
        _check_start_fields(data, forms[0])
    if "number" in data:
        start = start_from_number(game, data["number"])
        if "deal" in data:
            _check_same_deal(start, _deal_field(game, data["deal"]))
        return start
    if "deal" in data:
        return start_from_deal(game, _deal_field(game, data["deal"]))
    position = data.get("position", data)
    return Start(game, position_from_json(game, position), "position")


def _check_start_fields(data: dict[str, Any], form: str) -> None:
    """Refuse fields a start of ``form`` does not have (e.g. ``quesiton``):
    the CLI proves a file as it is, so an ignored field would be a lie."""
    allowed = START_FIELDS[form]
    records = RECORD_FIELDS if form != "position" else ()
    unknown = sorted(key for key in data if key not in (*allowed, *records))
    if unknown:
        also = " and a generated deal's fields" if records else ""
        raise InputError(
            f"unknown field(s) in a {form} start: {', '.join(unknown)} "
            f"(allowed: {', '.join(allowed)}{also})"
        )


def _deal_field(game: Game, deal: Any) -> tuple[Any, ...]:
    """Return the deal of a ``deal`` field: deal text or a list of card tokens."""
    if isinstance(deal, str):
        return game.parse_deal(deal)
    if not isinstance(deal, list):
        raise InputError("'deal' must be deal text or a list of card tokens")
    return game.deal_from_list(deal)


def _check_same_deal(start: Start, deal: tuple[Any, ...]) -> None:
    """Refuse a ``deal`` that is not the numbered deal given with it: the two
    would name different starts, and neither may silently win."""
    if tuple(deal) != tuple(start.deal or ()):
        raise InputError(
            f"'deal' is not deal number {start.number} of {start.game.name}: "
            "give the number or the deal, or the deal that number names"
        )


def position_from_json(game: Game, position: Any) -> Any:
    """Return ``game``'s position from its JSON form, refusing one that names
    another game (a position's own ``game`` field, if it has one)."""
    named = position.get("game") if isinstance(position, dict) else None
    if named is not None and get_game(named) is not game:
        raise InputError(f"the position is for {named!r}, not {game.name!r}")
    return game.parse_position(position)


_NUMBER = re.compile(r"^\s*number\s+([0-9]+)\s*$", re.IGNORECASE)
#: More digits than any deal number has (seeds stop at 2**64 - 1).
MAX_DIGITS = 30


def read_start(text: str, game_name: str | None = None) -> Start:
    """Read a start from file text in any accepted form: JSON, ``number N``,
    the game's compact position text or deal text."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_INPUT_BYTES:
        raise InputError(f"input larger than {MAX_INPUT_BYTES} bytes")
    stripped = text.strip()
    if not stripped:
        raise InputError("empty input: expected a deal or a position")
    if stripped[0] in "[{":
        return start_from_json(load_json(stripped), game_name)
    game = get_game(game_name)
    match = _NUMBER.match(stripped)
    if match:
        return start_from_number(game, _whole(match.group(1), "deal number"))
    if _is_position_text(text):
        return Start(game, game.parse_position_text(text), "position")
    return start_from_deal(game, game.parse_deal(text))


def _is_position_text(text: str) -> bool:
    """Return whether ``text`` is the compact position form (``A1: 2S 5S``).

    Its first line that is not blank or a comment is ``key: cards``; no card
    token holds a colon, so deal text never starts that way.
    """
    for line in strip_comments(text).splitlines():
        if line.strip():
            return KEY_LINE.match(line) is not None
    return False


#: `parse_numbers` expands at most this many deal numbers.
MAX_NUMBERS = 100_000
_SPAN = re.compile(r"^([0-9]+)(?:-([0-9]+))?$")


def _whole(digits: str, what: str) -> int:
    """Return ASCII ``digits`` as an int, refusing more than `MAX_DIGITS`."""
    if len(digits) > MAX_DIGITS:
        raise InputError(f"{what} {digits[:12]}... is too large ({len(digits)} digits)")
    return int(digits)


def parse_numbers(text: str, limit: int = MAX_NUMBERS) -> tuple[int, ...]:
    """Return the deal numbers of ``1,4,10-20`` in the order given (ranges inclusive).

    A benchmark on scattered deals (the ones a run left open, a sample across
    1-1000) names them instead of running a whole range. Repeats are kept
    once; an empty item, a backwards range, anything but ASCII digits or
    more than ``limit`` numbers is an `InputError` naming the item.
    """
    numbers: dict[int, None] = {}
    for item in (part.strip() for part in text.split(",")):
        match = _SPAN.match(item)
        if not match:
            raise InputError(f"bad deal numbers {item!r}: expected N or N-M")
        first = _whole(match.group(1), "deal number")
        last = _whole(match.group(2), "deal number") if match.group(2) else first
        if last < first:
            raise InputError(f"bad deal numbers {item!r}: {last} < {first}")
        if len(numbers) + last - first + 1 > limit:
            raise InputError(f"more than {limit} deal numbers")
        numbers.update(dict.fromkeys(range(first, last + 1)))
    return tuple(numbers)
