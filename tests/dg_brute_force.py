"""An unpruned brute force for Devil's Grip, and small positions to run it on.

The search prover's reductions and bounds are tested against this: it tries
every legal move of the reference engine (`verifier.devils_grip`) except
swaps, and plays on until the game is over (`is_stuck`: no card can be brought
into play). Its one economy is exact: positions are remembered with the grid
as a multiset, because swaps make every order of the cells reachable and no
rule reads a cell's place (swaps themselves are then never needed), and an
empty cell (possible only once the stock is out) takes part in no move.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator

from verifier import devils_grip as dg
from verifier.cards import Card
from verifier.devils_grip_construct import _shuffled_solution, _step, _Walk, construct
from verifier.shuffle import Rng

Grid = tuple[tuple[Card, ...], ...]


def successors(
    grid: Grid, stock: tuple[Card, ...], talon: tuple[Card, ...]
) -> Iterator[tuple[Grid, tuple[Card, ...], tuple[Card, ...]]]:
    """Yield every position one legal move away (swaps aside).

    ``grid`` is the multiset of non-empty stacks, sorted. This restates the
    rule card (merge a whole stack whose bottom fits another's top, refill
    from the stock; deal up to three; play the talon top onto a fitting top)
    without the search prover's model; `test_brute_force_moves_match_the_
    reference_engine` checks it against `verifier.devils_grip`.
    """
    for i, src in enumerate(grid):
        if src[0].rank in dg.BASE_RANKS:
            continue
        for j, dst in enumerate(grid):
            if i != j and dg.fits(src[0], dst[-1]):
                rest = [s for k, s in enumerate(grid) if k not in (i, j)]
                rest.append(dst + src)
                if stock:
                    rest.append(stock[:1])
                yield tuple(sorted(rest)), stock[1:], talon
    if stock:
        yield grid, stock[dg.PACKET :], talon + stock[: dg.PACKET]
    if talon:
        card = talon[-1]
        for j, dst in enumerate(grid):
            if dg.fits(card, dst[-1]):
                rest = list(grid)
                rest[j] = dst + (card,)
                yield tuple(sorted(rest)), stock, talon[:-1]


def is_over(grid: Grid, stock: tuple[Card, ...], talon: tuple[Card, ...]) -> bool:
    """Return whether no card can be brought into play (`dg.is_stuck`)."""
    if stock:
        return False
    return not talon or not any(dg.fits(talon[-1], s[-1]) for s in grid)


class TooBig(Exception):
    """The brute force met more positions than it was allowed."""


def best_score(state: dg.State, budget: int | None = None) -> int:
    """Return the fewest cards any line leaves in the talon (0: a win).

    Raises `TooBig` after ``budget`` distinct positions, if given.
    """
    memo: dict[tuple, int] = {}

    def value(grid: Grid, stock: tuple[Card, ...], talon: tuple[Card, ...]) -> int:
        if is_over(grid, stock, talon):
            return len(talon)
        key = (grid, stock, talon)
        if key not in memo:
            if budget is not None and len(memo) >= budget:
                raise TooBig
            memo[key] = min(value(*after) for after in successors(grid, stock, talon))
        return memo[key]

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        grid = tuple(sorted(s for s in state.grid if s))
        return value(grid, state.stock, state.talon)
    finally:
        sys.setrecursionlimit(limit)


def late_position(rng: random.Random, stock_left: int) -> dg.State:
    """Return a late position with at most ``stock_left`` cards in the stock.

    Half the time: a constructed winnable deal played along its winning line
    until the stock is that short, then a few random moves (which may throw
    the win away). Otherwise: a numbered deal played at random (talon plays
    first, merges with a random eagerness, else deals), which leaves a long,
    mostly dead talon.
    """
    if rng.random() < 0.5:
        built = construct(rng.randrange(10**6))
        state = dg.initial_state(built.deal)
        for move in built.line:
            if len(state.stock) <= stock_left:
                break
            state = dg.apply(state, move)
        detour = rng.randrange(0, 7)
    else:
        state = dg.initial_state(dg.numbered_deal(rng.randrange(1, 10**9)))
        detour = 10**6
    eager = 0.5 + 0.5 * rng.random()
    while (len(state.stock) > stock_left or detour > 0) and not dg.is_stuck(state):
        detour -= 1
        moves = dg.legal_moves(state, swaps=False)
        talon = [m for m in moves if isinstance(m, dg.TalonPlay)]
        merges = [m for m in moves if isinstance(m, dg.Merge)]
        if talon and rng.random() < 0.9:
            state = dg.apply(state, rng.choice(talon))
        elif merges and rng.random() < eager:
            state = dg.apply(state, rng.choice(merges))
        elif state.stock:
            state = dg.apply(state, dg.DEAL)
        else:
            break
    return state


def backward_position(rng: random.Random, max_stock: int) -> dg.State:
    """Undo random moves from a won layout (exact inverse moves, as in
    `verifier.devils_grip_construct`) while the stock holds at most
    ``max_stock`` cards; then, half the time, deal the stock and talon cards
    anew (same sizes).

    Unshuffled, the position is winnable (the undone moves, replayed, win);
    shuffled, it is usually not.
    """
    seed = rng.randrange(2**32)
    walk_rng = Rng(seed)
    walk = _Walk(_shuffled_solution(walk_rng), [], [], [])
    p_unmerge, p_undeal = 0.2 + 0.5 * rng.random(), 0.15 + 0.3 * rng.random()
    for _ in range(rng.randrange(1, 60)):
        before = ([list(s) for s in walk.grid], list(walk.stock), list(walk.talon))
        if not _step(walk, walk_rng, p_unmerge, p_undeal):
            break
        if len(walk.stock) > max_stock:
            walk.grid, walk.stock, walk.talon = before
            break
    stock, talon = list(walk.stock), list(walk.talon)
    if rng.random() < 0.5:
        cards = stock + talon
        rng.shuffle(cards)
        stock, talon = cards[: len(stock)], cards[len(stock) :]
    grid = tuple(tuple(s) for s in walk.grid)
    return dg.validate_state(dg.State(grid, tuple(stock), tuple(talon)))


def positions(
    count: int, seed: int, max_stock: int = 15, budget: int = 20_000
) -> Iterator[tuple[dg.State, int]]:
    """Yield ``count`` small positions with their brute-force best scores.

    Late games and backward walks alternate; a position whose brute force
    would visit more than ``budget`` positions is skipped (the same ones for
    the same seed), to keep the tests quick.
    """
    rng = random.Random(seed)
    made = 0
    while made < count:
        if made % 2:
            state = backward_position(rng, max_stock)
        else:
            state = late_position(rng, rng.randrange(0, max_stock + 1))
        try:
            score = best_score(state, budget)
        except TooBig:
            continue
        made += 1
        yield state, score
