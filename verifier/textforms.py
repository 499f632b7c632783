"""Text and JSON forms every game shares: deals, card lists, move lists, key lines.

A game module defines what its cards, cells and moves are; the reading of
``#`` comments, JSON envelopes, token lists and ``key: cards`` lines is the
same for all of them, so it lives here once. Every error is an `InputError`
subclass whose message names the problem.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from .cards import Card, parse_card, parse_cards, strip_comments
from .errors import DealError, InputError, MoveSyntaxError, PositionError
from .shuffle import shuffled

T = TypeVar("T")
M = TypeVar("M")

#: One line of a hand-written position: ``key: cards``.
KEY_LINE = re.compile(r"^\s*([A-Za-z0-9]+)\s*:(.*)$")


def _reject_constant(name: str) -> Any:
    raise InputError(f"malformed JSON: {name} is not a JSON number")


def load_json(text: str | bytes, *, code: str | None = None) -> Any:
    """Parse JSON text; every way it can be malformed is an `InputError`.

    The one JSON reader for input (request bodies, deal and position files,
    case and known-scores lines, certificates), so each refuses the same
    things with the same messages: a syntax error (with its place), bytes
    that are not UTF-8, ``NaN`` and ``Infinity`` (not JSON), nesting past
    Python's recursion limit and integers past its digit limit (both would
    otherwise escape as exceptions that are not bad input). ``code``
    overrides the error's code (the API's ``malformed_json``).
    """
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        message = f"malformed JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
    except UnicodeDecodeError:
        message = "malformed JSON: not UTF-8 text"
    except RecursionError:
        message = "malformed JSON: nested too deeply"
    except InputError as exc:
        message = exc.message
    except ValueError as exc:  # e.g. an integer with more digits than Python reads
        message = f"malformed JSON: {_plain(exc)}"
    raise InputError(message, code=code)


def _plain(exc: ValueError) -> str:
    """Say what was wrong, without Python's advice to the programmer (the
    digit limit's message ends "use sys.set_int_max_str_digits() ...")."""
    if "limit" in str(exc) and "digits" in str(exc):
        return f"a number longer than {sys.get_int_max_str_digits()} digits"
    return str(exc)


def read_deal(text: str, validate: Callable[[Sequence[Card]], T]) -> T:
    """Read a deal: card tokens in deal order (``#`` comments allowed), or JSON
    (a list of tokens, or an object with a ``deal`` list); ``validate``
    checks the game's card counts."""
    stripped = text.strip()
    if stripped.startswith(("[", "{")):
        data = load_json(stripped)
        tokens = data.get("deal") if isinstance(data, dict) else data
        if not isinstance(tokens, list):
            raise DealError("JSON deal needs a list of card tokens under 'deal'")
        return deal_from_tokens(tokens, validate)
    return validate(parse_cards(text))


def deal_from_tokens(
    tokens: Sequence[Any], validate: Callable[[Sequence[Card]], T]
) -> T:
    """Validate a deal given as a list of card tokens."""
    if not all(isinstance(t, str) for t in tokens):
        raise DealError("a deal is a list of card tokens (strings)")
    return validate([parse_card(t) for t in tokens])


def numbered(deck: Sequence[Card], number: int) -> tuple[Card, ...]:
    """Return deal ``number`` of ``deck`` (SplitMix64 + Fisher–Yates, see
    `verifier.shuffle`); the same number gives the same deal everywhere."""
    if not 0 <= number < 2**64:
        raise DealError(f"deal number {number} out of range (0 .. 2**64 - 1)")
    return tuple(shuffled(list(deck), number))


def card_list(value: Any, what: str) -> tuple[Card, ...]:
    """Read a JSON pile: a list of card tokens or one string of them."""
    if isinstance(value, str):
        return tuple(parse_cards(value))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(parse_card(v) for v in value)
    raise PositionError(f"{what} must be a list of card tokens or a string of them")


def pretty_cards(cards: Iterable[Card]) -> str:
    """Return cards with suit symbols for messages (``(empty)`` for none)."""
    return " ".join(c.pretty for c in cards) or "(empty)"


def read_moves(
    text: str,
    short: Callable[[str], M],
    long_forms: dict[str, tuple[int, Callable[..., M]]],
    what: str,
) -> list[M]:
    """Read a move list: tokens separated by blanks, commas or newlines.

    A token that is a long-form word (upper case key of ``long_forms``) takes
    that many argument tokens (``what`` names them in the error); any other
    token is a short form read by ``short``. ``#`` starts a comment.
    """
    tokens = [t for t in re.split(r"[\s,;]+", strip_comments(text).strip()) if t]
    moves: list[M] = []
    i = 0
    while i < len(tokens):
        word = tokens[i].upper()
        if word not in long_forms:
            moves.append(short(tokens[i]))
            i += 1
            continue
        arity, build = long_forms[word]
        args = tokens[i + 1 : i + 1 + arity]
        if len(args) < arity:
            raise MoveSyntaxError(f"move {word.lower()!r} needs more {what}")
        moves.append(build(*args))
        i += 1 + arity
    return moves


def key_lines(text: str) -> Iterator[tuple[str, tuple[Card, ...]]]:
    """Yield the ``(key, cards)`` of each ``key: cards`` line of a position text
    (``-`` or nothing for no cards; blank lines and comments skipped)."""
    for raw in strip_comments(text).splitlines():
        if not raw.strip():
            continue
        match = KEY_LINE.match(raw)
        if not match:
            raise PositionError(f"cannot read position line {raw.strip()!r}")
        value = match.group(2).strip()
        cards = () if value in ("", "-") else tuple(parse_cards(value))
        yield match.group(1), cards
