"""Besieged Fortress: the reference rules engine (rule card besieged-fortress.md).

Known elsewhere as Beleaguered Castle. Like `verifier.devils_grip`, this module
is the yardstick every prover is checked against: it is written for exactness
and clarity, not speed, and imports nothing from any prover.

Deck: one 52-card deck. The four aces start the foundations and are never
dealt; the other 48 cards are. Canonical order (for numbered deals): spades,
hearts, diamonds, clubs, each suit 2..K.

Rows are numbered ``1``..``8``: rows 1-4 lie left of the aces, rows 5-8 right
of them, row 1 (and row 5) at the top. Each row is listed from its inner,
covered card (next to the aces) to its outer, available card. A deal's 48 cards
fill row 1 inner to outer, then row 2, .. row 8, six cards each. The
foundations are named ``F``; a position records each one as the rank of its top
card (1 = only the ace, 13 = complete).

Move notation (input is case-insensitive; the left form is what we print):

=========  ==============  ==================================================
``3>5``    ``move 3 5``    move the available card of row 3 onto row 5
``3>F``    ``home 3``      move the available card of row 3 to its foundation
=========  ==============  ==================================================

A row-to-row move needs the target row's available card to be exactly one
rank higher (any suit), or the target row to be empty.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .cards import SUITS, Card, card_count
from .errors import (
    DealError,
    IllegalMoveError,
    MoveSyntaxError,
    PositionError,
)
from .textforms import (
    card_list,
    deal_from_tokens,
    key_lines,
    numbered,
    read_deal,
    read_moves,
)

ROWS = 8
ROW_LENGTH = 6
DEAL_SIZE = ROWS * ROW_LENGTH
ACE, KING = 1, 13
FULL_DECK = 52
FOUNDATION = "F"

Row = tuple[Card, ...]


def canonical_deck() -> list[Card]:
    """Return the 48 dealt cards in the documented canonical order."""
    return [Card(rank, suit) for suit in range(4) for rank in range(2, KING + 1)]


DECK = frozenset(canonical_deck())


# -- rows ------------------------------------------------------------------------
def row_name(index: int) -> str:
    """Return the name of row ``index`` (0..7): ``1``..``8``."""
    return str(index + 1)


def parse_row(token: str) -> int:
    """Parse a row name ``1``..``8`` into its index; raise `MoveSyntaxError`."""
    text = token.strip()
    if len(text) == 1 and text in "12345678":
        return int(text) - 1
    raise MoveSyntaxError(f"unknown row {token!r} (rows are 1..8, foundations F)")


# -- moves ------------------------------------------------------------------------
@dataclass(frozen=True)
class RowMove:
    """Move the available card of row ``src`` onto row ``dst``."""

    src: int
    dst: int


@dataclass(frozen=True)
class HomeMove:
    """Move the available card of row ``src`` to its suit's foundation."""

    src: int


Move = RowMove | HomeMove


def format_move(move: Move) -> str:
    """Return the canonical notation of ``move``."""
    match move:
        case RowMove(src, dst):
            return f"{row_name(src)}>{row_name(dst)}"
        case HomeMove(src):
            return f"{row_name(src)}>{FOUNDATION}"
    raise TypeError(f"not a Besieged Fortress move: {move!r}")


_SHORT = re.compile(r"^([0-9]+)>([0-9]+|F)$")


def _parse_short(token: str) -> Move:
    match = _SHORT.match(token.upper())
    if not match:
        raise MoveSyntaxError(f"cannot read move {token!r} (expected 3>5 or 3>F)")
    src, dst = match.groups()
    if dst == FOUNDATION:
        return HomeMove(parse_row(src))
    return RowMove(parse_row(src), parse_row(dst))


_LONG_FORMS: dict[str, tuple[int, Callable[..., Move]]] = {
    "MOVE": (2, lambda src, dst: RowMove(parse_row(src), parse_row(dst))),
    "HOME": (1, lambda src: HomeMove(parse_row(src))),
}


def parse_moves(text: str) -> list[Move]:
    """Parse a move list: tokens separated by blanks, commas or newlines.

    Short forms (``3>5``, ``3>F``) and long forms (``move 3 5``, ``home 3``)
    may be mixed; ``#`` starts a comment.
    """
    return read_moves(text, _parse_short, _LONG_FORMS, "rows")


def format_moves(moves: Iterable[Move]) -> str:
    """Return a move list in canonical notation, one move per line."""
    return "\n".join(format_move(m) for m in moves)


# -- positions ---------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """A Besieged Fortress position.

    ``rows``: 8 rows, each from the inner (covered) card to the outer
    (available) one. ``foundations``: the top rank on each suit's foundation,
    in suit order S H D C (1 = only the ace).
    """

    rows: tuple[Row, ...]
    foundations: tuple[int, int, int, int]

    def cards(self) -> Iterable[Card]:
        """Yield every card in the rows."""
        for row in self.rows:
            yield from row


def validate_state(state: State) -> State:
    """Check a position: 8 rows, foundations 1..13, every card exactly once."""
    if len(state.rows) != ROWS:
        raise PositionError(f"position has {len(state.rows)} rows, expected 8")
    if len(state.foundations) != 4 or not all(
        isinstance(f, int) and ACE <= f <= KING for f in state.foundations
    ):
        raise PositionError("foundations are 4 top ranks (S H D C), each 1..13")
    home = {
        Card(r, s) for s, top in enumerate(state.foundations) for r in range(1, top + 1)
    }
    seen: Counter[Card] = Counter(state.cards())
    for index, row in enumerate(state.rows):
        for card in row:
            where = f"row {row_name(index)}: {card}"
            if card.rank == ACE:
                raise PositionError(f"{where} is an ace (aces are home from the start)")
            if card in home:
                raise PositionError(f"{where} is already on its foundation")
            if seen[card] > 1:
                raise PositionError(f"card {card} appears {seen[card]} times")
    missing = sorted((DECK - home) - set(seen), key=lambda c: (c.suit, c.rank))
    if missing:
        raise PositionError(
            f"cards neither in a row nor on a foundation: {' '.join(map(str, missing))}"
        )
    return state


def infer_foundations(rows: Sequence[Sequence[Card]]) -> tuple[int, int, int, int]:
    """Return the foundations implied by the cards that are not in ``rows``.

    Every card not in a row must be on a foundation, so per suit the missing
    cards must be ace .. some rank; anything else is not a position.
    """
    present = {c for row in rows for c in row}
    tops = []
    for suit in range(4):
        top = ACE
        while top < KING and Card(top + 1, suit) not in present:
            top += 1
        stray = [Card(r, suit) for r in range(top + 2, KING + 1)]
        gap = [c for c in stray if c not in present]
        if gap:
            raise PositionError(
                f"{gap[0]} is in no row, but {Card(top + 1, suit)} is not home"
            )
        tops.append(top)
    return (tops[0], tops[1], tops[2], tops[3])


def position_from_rows(rows: Sequence[Sequence[Card]]) -> State:
    """Return the position with these rows; cards in no row are on foundations."""
    padded = [tuple(r) for r in rows] + [()] * (ROWS - len(rows))
    if len(padded) != ROWS:
        raise PositionError(f"position has {len(rows)} rows, expected 8")
    return validate_state(State(tuple(padded), infer_foundations(padded)))


# -- deals -------------------------------------------------------------------------
Deal = tuple[Card, ...]


def validate_deal(cards: Sequence[Card]) -> Deal:
    """Check a deal: the 48 non-ace cards, each exactly once; return it."""
    counts = Counter(cards)
    for card, n in counts.items():
        if card.rank == ACE:
            raise DealError(f"deal: {card} is an ace; aces start the foundations")
        if n > 1:
            raise DealError(f"deal: card {card} appears {n} times")
    if len(cards) != DEAL_SIZE:
        missing = sorted(str(c) for c in DECK - set(counts))
        hint = f"; missing: {' '.join(missing[:12])}" if missing else ""
        size = card_count(len(cards))
        raise DealError(f"deal has {size}, expected {DEAL_SIZE}{hint}")
    return tuple(cards)


def parse_deal(text: str) -> Deal:
    """Parse deal text: 48 card tokens in deal order, ``#`` comments allowed.

    A JSON form (a list of tokens, or an object with a ``deal`` list) is
    accepted too.
    """
    return read_deal(text, validate_deal)


def deal_from_list(tokens: Sequence[Any]) -> Deal:
    """Validate a deal given as a list of card tokens."""
    return deal_from_tokens(tokens, validate_deal)


def numbered_deal(number: int) -> Deal:
    """Return deal ``number`` (SplitMix64 + Fisher–Yates; see `verifier.shuffle`)."""
    return numbered(canonical_deck(), number)


def format_deal(deal: Sequence[Card]) -> str:
    """Return canonical deal text: one line per row, inner card first."""
    lines = []
    for r in range(ROWS):
        side = "left" if r < 4 else "right"
        row = deal[r * ROW_LENGTH : (r + 1) * ROW_LENGTH]
        lines.append(f"# row {row_name(r)} ({side}), inner to outer")
        lines.append(" ".join(map(str, row)))
    return "\n".join(lines) + "\n"


def initial_state(deal: Sequence[Card]) -> State:
    """Return the starting position of ``deal``: aces home, 8 rows of 6."""
    cards = validate_deal(deal)
    rows = tuple(cards[r * ROW_LENGTH : (r + 1) * ROW_LENGTH] for r in range(ROWS))
    return State(rows=rows, foundations=(ACE, ACE, ACE, ACE))


# -- position JSON and text ------------------------------------------------------------
_RANK_BY_NAME = {"A": 1, "J": 11, "Q": 12, "K": 13} | {str(r): r for r in range(2, 11)}


def _rank(value: Any, suit: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().upper() in _RANK_BY_NAME:
        return _RANK_BY_NAME[value.strip().upper()]
    raise PositionError(
        f"foundation {suit}: {value!r} is not a rank (A, 2..10, J, Q, K)"
    )


def _foundations(value: Any) -> tuple[int, int, int, int]:
    """Read foundations: ``{"S": 3, "H": "A", ..}`` or a list of 4 ranks."""
    if isinstance(value, dict):
        unknown = set(value) - set(SUITS)
        if unknown:
            raise PositionError(
                f"unknown foundation suit(s): {', '.join(sorted(unknown))}"
            )
        ranks = [_rank(value.get(s, ACE), s) for s in SUITS]
    elif isinstance(value, list) and len(value) == 4:
        ranks = [_rank(v, s) for v, s in zip(value, SUITS, strict=True)]
    else:
        raise PositionError('foundations: an object like {"S": 3} or 4 ranks S H D C')
    return (ranks[0], ranks[1], ranks[2], ranks[3])


def parse_position(data: dict[str, Any]) -> State:
    """Validate a position in its JSON form.

    ``{"rows": [8 rows, each a list of tokens inner to outer], "foundations":
    {"S": top rank, "H": .., "D": .., "C": ..}}``; a row may also be one string
    of blank-separated tokens, foundations may be a list of 4 ranks (S H D C,
    ``1``..``13`` or ``A``..``K``). Without ``foundations`` they are inferred
    from the cards in no row.
    """
    if not isinstance(data, dict):
        raise PositionError("a position is a JSON object with rows and foundations")
    unknown = set(data) - {"game", "rows", "foundations"}
    if unknown:
        raise PositionError(f"unknown position field(s): {', '.join(sorted(unknown))}")
    rows = data.get("rows")
    if not isinstance(rows, list):
        raise PositionError("position needs 'rows': a list of 8 rows")
    if len(rows) != ROWS:
        raise PositionError(f"position has {len(rows)} rows, expected 8")
    parsed = tuple(card_list(r, f"row {row_name(i)}") for i, r in enumerate(rows))
    if "foundations" not in data:
        return position_from_rows(parsed)
    return validate_state(State(parsed, _foundations(data["foundations"])))


def position_to_json(state: State) -> dict[str, Any]:
    """Return the JSON form of ``state``."""
    return {
        "game": "besieged-fortress",
        "rows": [[str(c) for c in row] for row in state.rows],
        "foundations": dict(zip(SUITS, state.foundations, strict=True)),
    }


def parse_position_text(text: str) -> State:
    """Parse the compact, hand-writable position form.

    One ``key: cards`` line each: a row ``1``..``8`` (inner to outer; ``-`` or
    nothing for an empty row) and optionally ``F`` (the top card of each
    foundation that is above its ace, e.g. ``F: 5S 3H``). Rows not named are
    empty; without an ``F`` line the foundations hold exactly the cards in no
    row::

        1: KS QH
        5: 10D
    """
    rows: list[Row] = [()] * ROWS
    named: set[int] = set()
    tops: tuple[Card, ...] | None = None
    for name, cards in key_lines(text):
        key = name.upper()
        if key == FOUNDATION:
            if tops is not None:
                raise PositionError(f"the foundations line {FOUNDATION} is named twice")
            tops = cards
            continue
        index = parse_row(key)
        if index in named:
            raise PositionError(f"row {row_name(index)} is named twice")
        named.add(index)
        rows[index] = cards
    if tops is None:
        return position_from_rows(rows)
    foundations = [ACE] * 4
    for card in tops:
        if foundations[card.suit] != ACE:
            other = Card(foundations[card.suit], card.suit)
            raise PositionError(f"two tops for one foundation: {other} and {card}")
        foundations[card.suit] = card.rank
    return validate_state(State(tuple(rows), tuple(foundations)))  # type: ignore[arg-type]


def format_position_text(state: State) -> str:
    """Return the full text form of ``state`` (every row and the foundations)."""
    lines = [
        f"{row_name(i)}: {' '.join(map(str, row)) or '-'}"
        for i, row in enumerate(state.rows)
    ]
    tops = [str(Card(top, s)) for s, top in enumerate(state.foundations) if top > ACE]
    lines.append(f"{FOUNDATION}: {' '.join(tops) or '-'}")
    return "\n".join(lines) + "\n"


def render(state: State) -> str:
    """Draw the layout as dealt: rows 1-4 left, foundations, rows 5-8 right.

    Cards overlap towards the outer edge, so the available card of a left row
    is its leftmost, that of a right row its rightmost.
    """
    left = [" ".join(c.pretty for c in reversed(state.rows[r])) for r in range(4)]
    right = [" ".join(c.pretty for c in state.rows[r]) for r in range(4, ROWS)]
    width = max(len(text) for text in left)
    out = []
    for i in range(4):
        home = Card(state.foundations[i], i).pretty
        line = (
            f"{left[i] or '··':>{width}} {i + 1} │{home:^5}│ {i + 5} {right[i] or '··'}"
        )
        out.append(line.rstrip())
    out.append(f"on foundations {FULL_DECK - score(state)}/52   in rows {score(state)}")
    return "\n".join(out)


# -- rules ----------------------------------------------------------------------------
def builds_on(card: Card, onto: Card) -> bool:
    """Return whether ``card`` may go onto ``onto`` in a row: one rank lower."""
    return card.rank == onto.rank - 1


def goes_home(card: Card, foundations: Sequence[int]) -> bool:
    """Return whether ``card`` is the next card of its suit's foundation."""
    return card.rank == foundations[card.suit] + 1


def _row_error(state: State, row: int, role: str) -> str | None:
    if not 0 <= row < ROWS:
        return f"no row number {row}"
    if role == "source" and not state.rows[row]:
        return f"source row {row_name(row)} is empty"
    return None


def illegal_reason(state: State, move: Move) -> str | None:
    """Return the exact reason ``move`` is illegal in ``state``, or None."""
    match move:
        case RowMove(src, dst):
            if src == dst:
                return f"cannot move row {row_name(src)} onto itself"
            problem = _row_error(state, src, "source") or _row_error(
                state, dst, "target"
            )
            if problem:
                return problem
            card, target = state.rows[src][-1], state.rows[dst]
            if target and not builds_on(card, target[-1]):
                return (
                    f"{card.pretty} does not go on {target[-1].pretty} "
                    f"(a card goes on one rank higher, any suit)"
                )
            return None
        case HomeMove(src):
            problem = _row_error(state, src, "source")
            if problem:
                return problem
            card = state.rows[src][-1]
            if not goes_home(card, state.foundations):
                top = Card(state.foundations[card.suit], card.suit).pretty
                return f"{card.pretty} does not go home: its foundation shows {top}"
            return None
    return f"not a Besieged Fortress move: {move!r}"


def apply(state: State, move: Move) -> State:
    """Return the position after ``move``; raise `IllegalMoveError` if illegal."""
    reason = illegal_reason(state, move)
    if reason:
        raise IllegalMoveError(reason)
    rows = list(state.rows)
    card = rows[move.src][-1]
    rows[move.src] = rows[move.src][:-1]
    foundations = list(state.foundations)
    match move:
        case RowMove(_, dst):
            rows[dst] = rows[dst] + (card,)
        case HomeMove():
            foundations[card.suit] = card.rank
    return State(
        tuple(rows), (foundations[0], foundations[1], foundations[2], foundations[3])
    )


def legal_moves(state: State) -> list[Move]:
    """Return every legal move: foundation moves first, then row to row."""
    moves: list[Move] = [
        HomeMove(i)
        for i, row in enumerate(state.rows)
        if row and goes_home(row[-1], state.foundations)
    ]
    for src, row in enumerate(state.rows):
        if not row:
            continue
        for dst, target in enumerate(state.rows):
            if dst != src and (not target or builds_on(row[-1], target[-1])):
                moves.append(RowMove(src, dst))
    return moves


def is_won(state: State) -> bool:
    """Return whether every card is home: all foundations up to the kings."""
    return all(top == KING for top in state.foundations)


def is_stuck(state: State) -> bool:
    """Return whether no legal move is left (the deal is then unsolved)."""
    return not legal_moves(state)


def score(state: State) -> int:
    """Return the number of cards not yet home (48 at the start, 0 = won)."""
    return FULL_DECK - sum(state.foundations)


def is_sorted(state: State) -> bool:
    """Return whether every row descends (ties allowed) towards its outer end."""
    return all(
        lower.rank >= upper.rank
        for row in state.rows
        for lower, upper in zip(row, row[1:], strict=False)
    )


def with_finish(state: State, moves: list[Move]) -> list[Move]:
    """Return ``moves`` (legal from ``state``) followed by the foundation moves
    that finish the position they reach (see `finishing_moves`)."""
    end = state
    for move in moves:
        end = apply(end, move)
    return moves + finishing_moves(end)


def finishing_moves(state: State) -> list[Move]:
    """Return foundation moves that win a sorted position, or [] if not sorted.

    When every row descends towards its outer end, the lowest-ranked card left
    anywhere is available (it is the lowest of its row, and a tie of equal
    ranks leaves an equally low card outermost). The lowest card left of its
    suit is the next card of that foundation, and no card of its suit ranks
    lower than the overall lowest, so that available card goes home. Removing
    it keeps every row descending, so playing home the lowest available card
    again and again wins.
    """
    if not is_sorted(state):
        return []
    moves: list[Move] = []
    while not is_won(state):
        outer = [(row[-1].rank, i) for i, row in enumerate(state.rows) if row]
        _, src = min(outer)
        moves.append(HomeMove(src))
        state = apply(state, HomeMove(src))
    return moves


def describe_move(state: State, move: Move) -> str:
    """Say in words what a legal ``move`` does, e.g. ``7♥ (row 3) onto 8♣ (row 5)``."""
    card = state.rows[move.src][-1]
    where = f"{card.pretty} (row {row_name(move.src)})"
    under = state.rows[move.src][:-1]
    frees = (
        f", freeing {under[-1].pretty}"
        if under
        else f", emptying row {row_name(move.src)}"
    )
    match move:
        case RowMove(_, dst):
            target = state.rows[dst]
            onto = (
                f"onto {target[-1].pretty} (row {row_name(dst)})"
                if target
                else f"into empty row {row_name(dst)}"
            )
            return f"{where} {onto}{frees}"
        case HomeMove():
            return f"{where} to its foundation{frees}"
    return format_move(move)


class BesiegedFortress:
    """The `verifier.game.Game` implementation for Besieged Fortress."""

    name = "besieged-fortress"
    title = "Besieged Fortress"
    deal_size = DEAL_SIZE
    has_score = False
    summary = (
        "Beleaguered Castle: aces start the foundations; the other 48 cards lie "
        "face up in 8 rows of 6; move one available card at a time onto a card "
        "one rank higher (any suit), into an empty row, or home up in suit. "
        "Score = cards not yet home."
    )
    score_unit = "cards not yet home"
    score_grades = ()

    parse_deal = staticmethod(parse_deal)
    deal_from_list = staticmethod(deal_from_list)
    numbered_deal = staticmethod(numbered_deal)
    format_deal = staticmethod(format_deal)
    parse_position = staticmethod(parse_position)
    parse_position_text = staticmethod(parse_position_text)
    position_to_json = staticmethod(position_to_json)
    render = staticmethod(render)
    parse_moves = staticmethod(parse_moves)
    format_move = staticmethod(format_move)
    describe_move = staticmethod(describe_move)
    initial_state = staticmethod(initial_state)
    legal_moves = staticmethod(legal_moves)
    illegal_reason = staticmethod(illegal_reason)
    apply = staticmethod(apply)
    is_won = staticmethod(is_won)
    is_stuck = staticmethod(is_stuck)
    score = staticmethod(score)
    finishing_moves = staticmethod(finishing_moves)


GAME = BesiegedFortress()
