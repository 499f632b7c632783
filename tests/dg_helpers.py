"""Builders for hand-made Devil's Grip positions used across the tests."""

from __future__ import annotations

from collections.abc import Sequence

from verifier import devils_grip as dg
from verifier.cards import Card, parse_card, parse_cards


def chain(base: str) -> tuple[Card, ...]:
    """Return the full stack that starts at ``base``, e.g. ``2S`` -> 2S 5S 8S JS."""
    card = parse_card(base)
    return tuple(Card(card.rank + 3 * i, card.suit) for i in range(4))


def solved_grid() -> list[tuple[Card, ...]]:
    """Return the 24 complete stacks, each in its row (suits S H D C twice)."""
    return [chain(f"{base}{suit}") for base in "234" for suit in "SHDCSHDC"]


def position(cells: dict[str, str], stock: str = "", talon: str = "") -> dg.State:
    """Return a position naming only some cells; complete stacks fill the rest."""
    named = {dg.parse_cell(k): tuple(parse_cards(v)) for k, v in cells.items()}
    return dg.fill_position(named, parse_cards(stock), parse_cards(talon))


def play(state: dg.State, moves: str | Sequence[dg.Move]) -> dg.State:
    """Apply a line (text or moves) with the reference engine."""
    if isinstance(moves, str):
        moves = dg.parse_moves(moves)
    for move in moves:
        state = dg.apply(state, move)
    return state


def winnable_position() -> tuple[dg.State, str]:
    """Return a constructed winnable position and a winning line for it.

    A1 lacks J♠; A3/A4 hold 2♦ 5♦ | 8♦ J♦; the club stack 2-5-8-J and J♠ wait in
    the stock as 2♣ | J♣ 8♣ 5♣ | J♠, so the line merges, refills 2♣, deals a
    packet whose top is 5♣, builds clubs from the talon, then the short packet.
    """
    state = position(
        {"A1": "2S 5S 8S", "A3": "2D 5D", "A4": "8D JD"},
        stock="2C JC 8C 5C JS",
    )
    return state, "A4>A3 deal T>A4 T>A4 T>A4 deal T>A1"
