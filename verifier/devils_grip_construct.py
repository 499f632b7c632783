"""Constructing winnable Devil's Grip deals by playing backwards from a win.

Random deals are almost never winnable under this rule card, so winnable deals
are built: start from a won layout and apply *exact inverse moves* until the
position is a starting position (24 lone cards, empty talon, 72 stock cards).
The inverse walk, read backwards, is a winning line; it is replayed by the
reference engine before a deal is returned, so a constructed deal is winnable
by construction *and* by check.

Inverse moves (each undoes exactly one forward move; why each is exact):

- **un-play** cell X, when X holds at least two cards: its top card goes back
  onto the talon. Forward, a talon play puts the talon top onto a non-empty
  cell whose top it fits; the card under it in a chain fits by definition.
- **un-deal** k cards: the top k talon cards go back onto the stock, in the
  order they came (the talon's top card becomes the packet's third). Forward,
  a deal turns min(3, stock) cards, so k = 3 while the stock (before undoing)
  is non-empty, and k may be 1..3 only while it is empty: the last, short
  packet.
- **un-merge** B at height j into A, when A holds a lone card s: B's upper part
  from height j moves to A, and s goes back onto the stock top. Forward, A's
  stack (bottom card B[j], not a base card since it lies on B[j-1]) merges
  onto B's lower part, which it fits, and A is refilled at once with the stock
  top s.

The walk never empties a cell, so no forward move happens after the stock is
exhausted except talon plays and the final swaps — exactly the shape of a win.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import devils_grip as dg
from .cards import Card
from .errors import InputError
from .replay import replay
from .shuffle import Rng


@dataclass(frozen=True)
class Constructed:
    """A winnable deal and a winning line that the reference engine replays."""

    deal: tuple[Card, ...]
    line: tuple[dg.Move, ...]
    seed: int
    attempts: int


@dataclass
class _Walk:
    grid: list[list[Card]]
    stock: list[Card]  # top first
    talon: list[Card]  # bottom to top
    undone: list[dg.Move]  # forward moves, in the order they were undone

    def is_start(self) -> bool:
        return not self.talon and all(len(s) == 1 for s in self.grid)


def _shuffled_solution(rng: Rng) -> list[list[Card]]:
    """Return the 24 complete stacks in random cells (swaps sort them at the end)."""
    stacks = [
        [Card(base + 3 * i, suit) for i in range(4)]
        for base in (2, 3, 4)
        for suit in (0, 1, 2, 3) * 2
    ]
    for i in range(len(stacks) - 1, 0, -1):
        j = rng.below(i + 1)
        stacks[i], stacks[j] = stacks[j], stacks[i]
    return stacks


def _unplay(walk: _Walk, cell: int) -> None:
    walk.talon.append(walk.grid[cell].pop())
    walk.undone.append(dg.TalonPlay(cell))


def _undeal(walk: _Walk, k: int) -> None:
    packet = walk.talon[-k:]
    del walk.talon[-k:]
    walk.stock[:0] = packet
    walk.undone.append(dg.DEAL)


def _unmerge(walk: _Walk, src: int, height: int, lone: int) -> None:
    upper = walk.grid[src][height:]
    del walk.grid[src][height:]
    walk.stock.insert(0, walk.grid[lone][0])
    walk.grid[lone] = upper
    walk.undone.append(dg.Merge(lone, src))


def _step(walk: _Walk, rng: Rng, p_unmerge: float, p_undeal: float) -> bool:
    """Undo one random move; return False when no inverse move is possible."""
    tall = [i for i, s in enumerate(walk.grid) if len(s) >= 2]
    lone = [i for i, s in enumerate(walk.grid) if len(s) == 1]
    k = 3 if walk.stock else min(3, len(walk.talon))
    can_undeal = len(walk.talon) >= 3 or (not walk.stock and walk.talon)
    roll = rng.random()
    if can_undeal and (roll < p_undeal or not tall):
        _undeal(walk, k)
    elif tall and lone and roll < p_undeal + p_unmerge:
        src = rng.choice(tall)
        _unmerge(walk, src, 1 + rng.below(len(walk.grid[src]) - 1), rng.choice(lone))
    elif tall:
        _unplay(walk, rng.choice(tall))
    else:
        return False
    return True


def _walk_once(rng: Rng) -> _Walk | None:
    """Run one backward walk; return it when it reaches a starting position."""
    walk = _Walk(_shuffled_solution(rng), [], [], [])
    p_unmerge = 0.25 + 0.5 * rng.random()
    p_undeal = 0.15 + 0.3 * rng.random()
    for _ in range(400):
        if walk.is_start():
            return walk if len(walk.stock) == dg.STOCK_SIZE else None
        if not _step(walk, rng, p_unmerge, p_undeal):
            return None
    return None


def construct(seed: int, *, max_attempts: int = 1000) -> Constructed:
    """Return a winnable deal built from ``seed`` (the same deal for the same seed)."""
    rng = Rng(seed)
    for attempt in range(1, max_attempts + 1):
        walk = _walk_once(rng)
        if walk is None:
            continue
        deal = tuple(s[0] for s in walk.grid) + tuple(walk.stock)
        line = _winning_line(deal, walk.undone[::-1])
        return Constructed(deal=deal, line=line, seed=seed, attempts=attempt)
    raise InputError(f"no winnable deal constructed from seed {seed}")


def _winning_line(deal: Sequence[Card], moves: list[dg.Move]) -> tuple[dg.Move, ...]:
    """Append the sorting swaps and check the line with the reference engine."""
    state = dg.initial_state(deal)
    outcome = replay(dg.GAME, state, moves)
    if outcome.error:
        raise AssertionError(f"constructed line does not replay: {outcome.error}")
    line = tuple(moves) + tuple(dg.finishing_moves(outcome.final))
    if not replay(dg.GAME, state, line).won:
        raise AssertionError("constructed line does not end won")
    return line
