"""Cards: parsing, the canonical text form and the display form.

Input is case-insensitive: a rank ``A`` (Besieged Fortress only), ``2``..``10``
(``T`` also means ten), ``J``, ``Q``, ``K``, then a suit ``S H D C`` or
``♠ ♥ ♦ ♣``. Examples: ``5s``, ``10H``, ``th``, ``Q♦``.

The canonical output form is ASCII: rank ``2``..``10``, ``J``, ``Q``, ``K`` (``A``
for aces) followed by an upper-case suit letter — ``5S``, ``10H``, ``QD``. The
display form (`Card.pretty`) uses the suit symbols: ``5♠``, ``10♥``, ``Q♦``.
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import CardError

SUITS = "SHDC"
SUIT_SYMBOLS = "♠♥♦♣"
RANK_NAMES = {1: "A", 11: "J", 12: "Q", 13: "K"}

_SUIT_BY_TOKEN = {s: i for i, s in enumerate(SUITS)} | {
    s: i for i, s in enumerate(SUIT_SYMBOLS)
}
_SUIT_BY_TOKEN |= {"♤": 0, "♡": 1, "♢": 2, "♧": 3}
_RANK_BY_TOKEN = {str(r): r for r in range(2, 11)} | {
    "T": 10,
    "J": 11,
    "Q": 12,
    "K": 13,
    "A": 1,
}


class Card(NamedTuple):
    """A card: rank 1 (ace) .. 13 (king) and suit index 0..3 (S, H, D, C)."""

    rank: int
    suit: int

    def __str__(self) -> str:
        return rank_name(self.rank) + SUITS[self.suit]

    @property
    def pretty(self) -> str:
        """The display form with a suit symbol, e.g. ``10♥``."""
        return rank_name(self.rank) + SUIT_SYMBOLS[self.suit]


def rank_name(rank: int) -> str:
    """Return the printed name of a rank: ``A``, ``2``..``10``, ``J``, ``Q``, ``K``."""
    return RANK_NAMES.get(rank, str(rank))


def parse_card(token: str) -> Card:
    """Parse one card token; raise `CardError` naming the token if it is not one."""
    text = token.strip().upper()
    if len(text) >= 2:
        rank = _RANK_BY_TOKEN.get(text[:-1])
        suit = _SUIT_BY_TOKEN.get(text[-1])
        if rank is not None and suit is not None:
            return Card(rank, suit)
    raise CardError(f"unknown card token {token!r} (expected e.g. 5S, 10H, TH, Q♦)")


def strip_comments(text: str) -> str:
    """Remove ``#`` comments (to the end of each line)."""
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def parse_cards(text: str) -> list[Card]:
    """Parse whitespace-separated card tokens, ignoring ``#`` comments."""
    return [parse_card(tok) for tok in strip_comments(text).split()]


def card_count(count: int) -> str:
    """Return ``count`` with its noun: ``1 card``, ``7 cards`` (for messages)."""
    return f"{count} card" if count == 1 else f"{count} cards"
