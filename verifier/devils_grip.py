"""Devil's Grip: the reference rules engine (``../shared/rules/devils-grip.md``).

This module is the yardstick every prover is checked against, so it is written
for exactness and clarity, not speed, and imports nothing from any prover.

Deck: two 52-card decks without aces, 96 cards; every card exists twice.
Canonical order (for numbered deals): copy 1 then copy 2, each as spades,
hearts, diamonds, clubs, each suit 2..K.

Grid cells are named by row letter and column number: ``A1``..``A8`` is the top
row, ``B1``..``B8`` the middle row, ``C1``..``C8`` the bottom row. A deal's first
24 cards fill ``A1, A2, .., A8, B1, .., C8`` in that order.

Move notation (input is case-insensitive; the left form is what we print):

============  ================  ==============================================
``A3>B5``     ``merge A3 B5``   merge the stack of A3 onto the stack of B5
``deal``      ``d``             turn the next three stock cards onto the talon
``T>B5``      ``talon B5``      play the talon top onto the stack of B5
``A3<>B5``    ``swap A3 B5``    exchange the stacks of A3 and B5
============  ================  ==============================================
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .cards import Card, card_count
from .errors import (
    DealError,
    IllegalMoveError,
    InputError,
    MoveSyntaxError,
    PositionError,
)
from .textforms import (
    card_list,
    deal_from_tokens,
    key_lines,
    numbered,
    pretty_cards,
    read_deal,
    read_moves,
)

ROWS = "ABC"
COLUMNS = 8
CELLS = 24
GRID_SIZE = 24
DECK_SIZE = 96
STOCK_SIZE = DECK_SIZE - GRID_SIZE
PACKET = 3
STEP = 3
MAX_STACK = 4
BASE_RANKS = (2, 3, 4)
TOP_RANKS = (11, 12, 13)

Stack = tuple[Card, ...]


def canonical_deck() -> list[Card]:
    """Return the 96 cards in the documented canonical order."""
    one = [Card(rank, suit) for suit in range(4) for rank in range(2, 14)]
    return one + one


DECK_COUNTS = Counter(canonical_deck())


# -- cells ---------------------------------------------------------------------
def cell_name(index: int) -> str:
    """Return the name of cell ``index`` (0..23), e.g. 0 -> ``A1``, 23 -> ``C8``."""
    return f"{ROWS[index // COLUMNS]}{index % COLUMNS + 1}"


def parse_cell(token: str) -> int:
    """Parse a cell name like ``b5`` into its index; raise `MoveSyntaxError`."""
    text = token.strip().upper()
    if len(text) == 2 and text[0] in ROWS and text[1] in "12345678":
        return ROWS.index(text[0]) * COLUMNS + int(text[1]) - 1
    raise MoveSyntaxError(f"unknown cell {token!r} (cells are A1..A8, B1..B8, C1..C8)")


def row_of_base(rank: int) -> int:
    """Return the row (0 top, 1 middle, 2 bottom) of stacks based at ``rank``."""
    return (rank - 2) % STEP


def chain_of(card: Card) -> tuple[int, int]:
    """Return the chain ``card`` belongs to: its suit and its row (a suit's
    2-5-8-J, 3-6-9-Q or 4-7-10-K), the cards one stack can hold."""
    return card.suit, row_of_base(card.rank)


# -- moves -----------------------------------------------------------------------
@dataclass(frozen=True)
class Merge:
    """Move the whole stack of cell ``src`` onto the stack of cell ``dst``."""

    src: int
    dst: int


@dataclass(frozen=True)
class DealMove:
    """Turn the next (up to) three stock cards onto the talon as one packet."""


@dataclass(frozen=True)
class TalonPlay:
    """Play the top talon card onto the stack of cell ``dst``."""

    dst: int


@dataclass(frozen=True)
class Swap:
    """Exchange the whole stacks of cells ``a`` and ``b``."""

    a: int
    b: int


Move = Merge | DealMove | TalonPlay | Swap
DEAL = DealMove()


def format_move(move: Move) -> str:
    """Return the canonical notation of ``move``."""
    match move:
        case Merge(src, dst):
            return f"{cell_name(src)}>{cell_name(dst)}"
        case DealMove():
            return "deal"
        case TalonPlay(dst):
            return f"T>{cell_name(dst)}"
        case Swap(a, b):
            return f"{cell_name(a)}<>{cell_name(b)}"
    raise TypeError(f"not a Devil's Grip move: {move!r}")


_SHORT = re.compile(r"^([A-Z0-9]+)(<>|>)([A-Z0-9]+)$")


def _parse_short(token: str) -> Move:
    match = _SHORT.match(token.upper())
    if not match:
        raise MoveSyntaxError(
            f"cannot read move {token!r} (expected A3>B5, deal, T>B5 or A3<>B5)"
        )
    left, op, right = match.groups()
    if op == "<>":
        return Swap(parse_cell(left), parse_cell(right))
    if left == "T":
        return TalonPlay(parse_cell(right))
    return Merge(parse_cell(left), parse_cell(right))


def _cells(build: type) -> Callable[..., Move]:
    return lambda *names: build(*(parse_cell(n) for n in names))


_LONG_FORMS: dict[str, tuple[int, Callable[..., Move]]] = {
    "DEAL": (0, lambda: DEAL),
    "D": (0, lambda: DEAL),
    "MERGE": (2, _cells(Merge)),
    "TALON": (1, _cells(TalonPlay)),
    "SWAP": (2, _cells(Swap)),
}


def parse_moves(text: str) -> list[Move]:
    """Parse a move list: tokens separated by blanks, commas or newlines.

    Short forms (``A3>B5``, ``deal``, ``T>B5``, ``A3<>B5``) and long forms
    (``merge A3 B5``, ``d``, ``talon B5``, ``swap A3 B5``) may be mixed;
    ``#`` starts a comment.
    """
    return read_moves(text, _parse_short, _LONG_FORMS, "cells")


def format_moves(moves: Iterable[Move]) -> str:
    """Return a move list in canonical notation, one move per line."""
    return "\n".join(format_move(m) for m in moves)


# -- cards and stacks --------------------------------------------------------------
def fits(card: Card, onto: Card) -> bool:
    """Return whether ``card`` may lie directly on ``onto``: same suit, rank + 3."""
    return card.suit == onto.suit and card.rank == onto.rank + STEP


def fit_reason(card: Card, onto: Card) -> str | None:
    """Return why ``card`` cannot lie on ``onto``, or None when it can."""
    if onto.rank in TOP_RANKS:
        return f"nothing goes on {onto.pretty}"
    if card.rank in BASE_RANKS:
        return f"{card.pretty} is a base card and goes on nothing"
    if not fits(card, onto):
        return f"{card.pretty} does not fit on {onto.pretty}"
    return None


def chain_error(stack: Sequence[Card]) -> str | None:
    """Return why ``stack`` (bottom to top) is not a valid stack, or None.

    A valid stack is an unbroken run of one chain 2-5-8-J, 3-6-9-Q or 4-7-10-K
    of one suit. Such a run has at most four cards, so the 4-card cap is
    implied; it is still checked to give the clearer message.
    """
    if len(stack) > MAX_STACK:
        return f"stack {pretty_cards(stack)} has {len(stack)} cards (at most 4)"
    for lower, upper in zip(stack, stack[1:], strict=False):
        if not fits(upper, lower):
            why = fit_reason(upper, lower)
            return f"stack {pretty_cards(stack)} is not a chain: {why}"
    return None


# -- positions ----------------------------------------------------------------------
@dataclass(frozen=True)
class State:
    """A Devil's Grip position.

    ``grid``: 24 stacks, cell A1 first, each bottom to top (empty only once the
    stock is exhausted). ``stock``: top card first. ``talon``: bottom to top.
    """

    grid: tuple[Stack, ...]
    stock: tuple[Card, ...]
    talon: tuple[Card, ...]

    def cards(self) -> Iterable[Card]:
        """Yield every card of the position."""
        for stack in self.grid:
            yield from stack
        yield from self.stock
        yield from self.talon


def check_counts(cards: Iterable[Card], what: str, error: type[InputError]) -> None:
    """Raise ``error`` unless ``cards`` are exactly the 96 cards, each twice."""
    counts = Counter(cards)
    for card, n in counts.items():
        if card not in DECK_COUNTS:
            raise error(f"{what}: {card} is not in the Devil's Grip deck (no aces)")
        if n > 2:
            raise error(f"{what}: card {card} appears {n} times (at most twice)")
    total = sum(counts.values())
    if total != DECK_SIZE:
        missing = sorted(str(c) for c in DECK_COUNTS if counts[c] < 2)
        hint = f"; missing: {' '.join(missing[:12])}" if missing else ""
        raise error(f"{what} has {card_count(total)}, expected {DECK_SIZE}{hint}")


def validate_state(state: State) -> State:
    """Check a position's card counts, chains and empty cells; return it."""
    if len(state.grid) != CELLS:
        raise PositionError(f"position has {len(state.grid)} grid cells, expected 24")
    check_counts(state.cards(), "position", PositionError)
    for index, stack in enumerate(state.grid):
        problem = chain_error(stack)
        if problem:
            raise PositionError(f"cell {cell_name(index)}: {problem}")
        if not stack and state.stock:
            raise PositionError(
                f"cell {cell_name(index)} is empty while the stock is not exhausted"
            )
    return state


def fill_position(
    cells: dict[int, Stack], stock: Sequence[Card] = (), talon: Sequence[Card] = ()
) -> State:
    """Return a position from its interesting parts; complete stacks fill the rest.

    Hand-written positions (tests, edge-case files) name only the cells, stock
    and talon that matter. Every card not named must then form complete
    stacks (2-5-8-J, 3-6-9-Q, 4-7-10-K of one suit), and these fill the cells
    not named, each in its own row where a cell there is free.
    """
    named = [c for stack in cells.values() for c in stack] + [*stock, *talon]
    rest = DECK_COUNTS - Counter(named)
    overused = Counter(named) - DECK_COUNTS
    if overused:
        card, n = next(iter(overused.items()))
        raise PositionError(
            f"card {card} appears {n + DECK_COUNTS[card]} times (at most twice)"
        )
    stacks: list[Stack] = []
    for base in sorted(c for c in rest.elements() if c.rank in BASE_RANKS):
        stack = tuple(Card(base.rank + STEP * i, base.suit) for i in range(MAX_STACK))
        if any(rest[c] == 0 for c in stack):
            break
        rest.subtract(stack)
        stacks.append(stack)
    leftover = +rest
    if leftover:
        cards = " ".join(str(c) for c in sorted(leftover.elements()))
        raise PositionError(f"cards not named do not form complete stacks: {cards}")
    free = [i for i in range(CELLS) if i not in cells]
    if len(stacks) != len(free):
        raise PositionError(
            f"{len(stacks)} complete stacks left for {len(free)} free cells"
        )
    grid: list[Stack] = [cells.get(i, ()) for i in range(CELLS)]
    stacks.sort(key=lambda s: row_of_base(s[0].rank))
    for want_own_row in (True, False):
        for stack in list(stacks):
            for i in free:
                if not grid[i] and (
                    not want_own_row or i // COLUMNS == row_of_base(stack[0].rank)
                ):
                    grid[i] = stack
                    stacks.remove(stack)
                    break
    return validate_state(State(tuple(grid), tuple(stock), tuple(talon)))


# -- deals ---------------------------------------------------------------------------
Deal = tuple[Card, ...]


def validate_deal(cards: Sequence[Card]) -> Deal:
    """Check a deal's cards (96, each exactly twice); return it as a tuple."""
    check_counts(cards, "deal", DealError)
    return tuple(cards)


def parse_deal(text: str) -> Deal:
    """Parse deal text: 96 card tokens in deal order, ``#`` comments allowed.

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
    """Return canonical deal text: grid rows on three lines, then the stock."""
    rows = [deal[r * COLUMNS : (r + 1) * COLUMNS] for r in range(3)]
    stock = deal[GRID_SIZE:]
    lines = [
        f"# grid row {ROWS[i]}\n" + " ".join(map(str, row))
        for i, row in enumerate(rows)
    ]
    lines.append("# stock, top first")
    lines += [" ".join(map(str, stock[i : i + 12])) for i in range(0, len(stock), 12)]
    return "\n".join(lines) + "\n"


def initial_state(deal: Sequence[Card]) -> State:
    """Return the starting position of ``deal``."""
    cards = validate_deal(deal)
    grid = tuple((c,) for c in cards[:GRID_SIZE])
    return State(grid=grid, stock=cards[GRID_SIZE:], talon=())


# -- position JSON -----------------------------------------------------------------
def parse_position(data: dict[str, Any]) -> State:
    """Validate a position in its JSON form.

    ``{"grid": [24 stacks, each a list of tokens bottom to top],
    "stock": [top first], "talon": [bottom to top]}``; a stack or pile may also
    be one string of blank-separated tokens.
    """
    if not isinstance(data, dict):
        raise PositionError("a position is a JSON object with grid, stock and talon")
    unknown = set(data) - {"game", "grid", "stock", "talon"}
    if unknown:
        raise PositionError(f"unknown position field(s): {', '.join(sorted(unknown))}")
    grid = data.get("grid")
    if not isinstance(grid, list):
        raise PositionError("position needs 'grid': a list of 24 stacks")
    if len(grid) != CELLS:
        raise PositionError(f"position has {len(grid)} grid cells, expected 24")
    stacks = tuple(
        card_list(stack, f"cell {cell_name(i)}") for i, stack in enumerate(grid)
    )
    stock = card_list(data.get("stock", []), "stock")
    talon = card_list(data.get("talon", []), "talon")
    return validate_state(State(grid=stacks, stock=stock, talon=talon))


def parse_position_text(text: str) -> State:
    """Parse the compact, hand-writable position form.

    One ``key: cards`` line each: a cell (``A1``..``C8``, bottom to top; ``-``
    or nothing for an empty cell), ``stock`` (top first) and ``talon`` (bottom
    to top). Cells not named hold complete stacks made of the cards not named
    (see `fill_position`), so a late-game position takes a few lines::

        A1: 2S 5S
        A2: 5H 8H JH
        talon: JS 8S 2H
    """
    cells: dict[int, Stack] = {}
    piles: dict[str, tuple[Card, ...]] = {"stock": (), "talon": ()}
    named: set[str] = set()
    for name, cards in key_lines(text):
        key = name.lower()
        if key in piles:
            if key in named:
                raise PositionError(f"the {key} is named twice")
            named.add(key)
            piles[key] = cards
            continue
        index = parse_cell(key)
        if index in cells:
            raise PositionError(f"cell {cell_name(index)} is named twice")
        cells[index] = cards
    return fill_position(cells, piles["stock"], piles["talon"])


def format_position_text(state: State) -> str:
    """Return the full text form of ``state`` (every cell named)."""
    lines = [
        f"{cell_name(i)}: {' '.join(map(str, stack)) or '-'}"
        for i, stack in enumerate(state.grid)
    ]
    lines.append(f"stock: {' '.join(map(str, state.stock))}".rstrip())
    lines.append(f"talon: {' '.join(map(str, state.talon))}".rstrip())
    return "\n".join(lines) + "\n"


def position_to_json(state: State) -> dict[str, Any]:
    """Return the JSON form of ``state``."""
    return {
        "game": "devils-grip",
        "grid": [[str(c) for c in stack] for stack in state.grid],
        "stock": [str(c) for c in state.stock],
        "talon": [str(c) for c in state.talon],
    }


def render(state: State) -> str:
    """Draw the 3×8 grid (stacks grow downwards), then stock and talon counts."""
    width = 5
    out = ["    " + "".join(f"{c:<{width}}" for c in range(1, COLUMNS + 1))]
    for r, row_name in enumerate(ROWS):
        stacks = state.grid[r * COLUMNS : (r + 1) * COLUMNS]
        height = max(1, *(len(s) for s in stacks))
        for level in range(height):
            label = f" {row_name}  " if level == 0 else "    "
            cells = []
            for stack in stacks:
                if level < len(stack):
                    cells.append(stack[level].pretty)
                else:
                    cells.append("··" if level == 0 else "")
            out.append((label + "".join(f"{c:<{width}}" for c in cells)).rstrip())
    top = state.talon[-1].pretty if state.talon else "-"
    out.append(f"stock {len(state.stock)}   talon {len(state.talon)} (top {top})")
    return "\n".join(out)


# -- rules -------------------------------------------------------------------------
def _refill(grid: list[Stack], cell: int, stock: tuple[Card, ...]) -> tuple[Card, ...]:
    """Fill emptied ``cell`` with the stock top at once, if any; return the stock."""
    if stock:
        grid[cell] = (stock[0],)
        return stock[1:]
    grid[cell] = ()
    return stock


def _cell_error(state: State, cell: int, role: str) -> str | None:
    if not 0 <= cell < CELLS:
        return f"no cell number {cell}"
    if not state.grid[cell]:
        return f"{role} cell {cell_name(cell)} is empty"
    return None


def illegal_reason(state: State, move: Move) -> str | None:
    """Return the exact reason ``move`` is illegal in ``state``, or None."""
    match move:
        case Merge(src, dst):
            if src == dst:
                return f"cannot merge cell {cell_name(src)} onto itself"
            problem = _cell_error(state, src, "source") or _cell_error(
                state, dst, "target"
            )
            if problem:
                return problem
            return fit_reason(state.grid[src][0], state.grid[dst][-1])
        case DealMove():
            if not state.stock:
                return "the stock is exhausted (one pass only, no redeal)"
            if any(not stack for stack in state.grid):
                return "cannot deal while a grid cell is empty"
            return None
        case TalonPlay(dst):
            if not state.talon:
                return "the talon is empty"
            if not 0 <= dst < CELLS:
                return f"no cell number {dst}"
            card = state.talon[-1]
            if not state.grid[dst]:
                return (
                    f"a talon card never goes into an empty cell "
                    f"({card.pretty} to {cell_name(dst)})"
                )
            return fit_reason(card, state.grid[dst][-1])
        case Swap(a, b):
            if not (0 <= a < CELLS and 0 <= b < CELLS):
                return "no such cell"
            if a == b:
                return f"cannot swap cell {cell_name(a)} with itself"
            return None
    return f"not a Devil's Grip move: {move!r}"


def apply(state: State, move: Move) -> State:
    """Return the position after ``move``; raise `IllegalMoveError` if illegal."""
    reason = illegal_reason(state, move)
    if reason:
        raise IllegalMoveError(reason)
    grid = list(state.grid)
    stock, talon = state.stock, state.talon
    match move:
        case Merge(src, dst):
            grid[dst] = grid[dst] + grid[src]
            stock = _refill(grid, src, stock)
        case DealMove():
            packet = stock[:PACKET]
            talon, stock = talon + packet, stock[PACKET:]
        case TalonPlay(dst):
            grid[dst] = grid[dst] + talon[-1:]
            talon = talon[:-1]
        case Swap(a, b):
            grid[a], grid[b] = grid[b], grid[a]
    return State(grid=tuple(grid), stock=stock, talon=talon)


def legal_moves(state: State, *, swaps: bool = True) -> list[Move]:
    """Return every legal move: merges, deal, talon plays and (optionally) swaps."""
    moves: list[Move] = []
    tops = [(i, s[-1]) for i, s in enumerate(state.grid) if s]
    for src, stack in enumerate(state.grid):
        if stack and stack[0].rank not in BASE_RANKS:
            moves += [
                Merge(src, dst)
                for dst, top in tops
                if dst != src and fits(stack[0], top)
            ]
    if state.stock:
        moves.append(DEAL)
    if state.talon:
        card = state.talon[-1]
        moves += [TalonPlay(dst) for dst, top in tops if fits(card, top)]
    if swaps:
        moves += [Swap(a, b) for a in range(CELLS) for b in range(a + 1, CELLS)]
    return moves


def is_complete(state: State) -> bool:
    """Return whether all 96 cards stand in 24 full stacks (rows maybe unsorted)."""
    return not state.stock and not state.talon and all(len(s) == 4 for s in state.grid)


def rows_sorted(state: State) -> bool:
    """Return whether every stack stands in the row of its base card."""
    return all(
        stack and row_of_base(stack[0].rank) == index // COLUMNS
        for index, stack in enumerate(state.grid)
    )


def is_won(state: State) -> bool:
    """Return whether ``state`` is won: complete, each stack in its row."""
    return is_complete(state) and rows_sorted(state)


def can_bring_card_into_play(state: State) -> bool:
    """Return whether a deal or a talon play is possible.

    While the stock lasts no cell is empty, so a deal is always possible. Once
    it is exhausted, merges and swaps only move cards already in play.
    """
    if state.stock:
        return True
    if not state.talon:
        return False
    card = state.talon[-1]
    return any(s and fits(card, s[-1]) for s in state.grid)


def is_stuck(state: State) -> bool:
    """Return whether the attempt is over: no card can be brought into play."""
    return not can_bring_card_into_play(state)


def score(state: State) -> int:
    """Return the number of cards in the talon (the score once stuck; 0 is a win)."""
    return len(state.talon)


def finishing_moves(state: State) -> list[Move]:
    """Return the swaps that put every stack of a complete position in its row.

    Each misplaced cell swaps with a later cell holding a stack of its row,
    preferring one whose own stack then lands in its row too, so that a
    two-way mix-up costs one swap; at most 23 swaps.
    """
    if not is_complete(state):
        return []
    rows = [row_of_base(s[0].rank) for s in state.grid]
    moves: list[Move] = []
    for i in range(CELLS):
        want = i // COLUMNS
        if rows[i] == want:
            continue
        later = [j for j in range(i + 1, CELLS) if rows[j] == want]
        j = next((j for j in later if j // COLUMNS == rows[i]), later[0])
        rows[i], rows[j] = rows[j], rows[i]
        moves.append(Swap(i, j))
    return moves


def describe_move(state: State, move: Move) -> str:
    """Say in words what a legal ``move`` does, e.g. ``merge 5♠ onto 2♠, refill Q♦``."""
    match move:
        case Merge(src, dst):
            stack, onto = state.grid[src], state.grid[dst][-1]
            where = f"({cell_name(src)}) onto {onto.pretty} ({cell_name(dst)})"
            text = f"merge {pretty_cards(stack)} {where}"
            refill = (
                f"refill {state.stock[0].pretty}" if state.stock else "cell stays empty"
            )
            return f"{text}, {refill}"
        case DealMove():
            return f"deal {pretty_cards(state.stock[:PACKET])} onto the talon"
        case TalonPlay(dst):
            onto = state.grid[dst][-1].pretty
            return f"talon {state.talon[-1].pretty} onto {onto} ({cell_name(dst)})"
        case Swap(a, b):
            return f"swap {cell_name(a)} and {cell_name(b)}"
    return format_move(move)


class DevilsGrip:
    """The `verifier.game.Game` implementation for Devil's Grip."""

    name = "devils-grip"
    title = "Devil's Grip"
    deal_size = DECK_SIZE
    has_score = True
    summary = (
        "96 cards (two decks without aces) dealt 3x8; build 2-5-8-J, 3-6-9-Q and "
        "4-7-10-K in suit by merging whole stacks; emptied cells refill from the "
        "stock; deal three at a time to a talon, one pass; score = cards left in "
        "the talon."
    )
    score_unit = "cards left in the talon"
    #: Bicycle's grades of a lost game's score.
    score_grades = (("brilliant", 2), ("excellent", 5), ("good", 10))

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


GAME = DevilsGrip()
