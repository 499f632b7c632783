"""Devil's Grip for the search prover: a compact, exact model of positions.

The search prover (`verifier.devils_grip_search`) does not walk the reference
engine's positions: it walks an *abstraction* that forgets everything the
rules never look at, so that positions which play alike are one position. This
module defines that abstraction and argues, for each thing it forgets or each
move it forces, why no line (and so no verdict and no best score) is lost.
Lines found here are turned back into real moves and replayed by the
reference engine before anyone sees them.

**Cards** are small ints ``suit * 16 + rank`` (ranks 2..13). Card ``c`` fits
on card ``d`` iff ``c == d + 3``: same suit and three ranks up, since ranks
stay inside one block of 16 (``d + 3`` of a J, Q or K is no card).

**Only bottoms and tops matter (exact).** A stack is an unbroken chain run, so
it is fixed by its bottom and top card; a merge moves stack A (bottom ``b``)
onto B (top ``b - 3``) and leaves one stack with B's bottom and A's top: the
bottoms lose ``b``, the tops lose ``b - 3``, nothing else changes, and the
refill adds one lone card, a bottom and a top at once. A talon play of ``c``
takes top ``c - 3`` and gives top ``c``. A deal only moves stock cards to the
talon. So which moves exist, and what they lead to, depend only on the
*multiset of bottoms* and the *multiset of tops* (the pairing of bottoms with
tops in stacks never matters: a stack's own top is never the card its bottom
needs). Cells never matter (swaps), nor which copy of a card is which. The
win needs no grid test either: with stock and talon empty all 96 cards lie in
24 cells of at most 4, so every stack is complete. A position is therefore
``(p, talon, bottoms, tops)``: the stock is the start's stock from index
``p``; ``bottoms`` keeps the non-base bottoms (a base never moves) and
``tops`` the tops of rank 10 or less (nothing goes on J, Q, K), both sorted.

**The end is computed (exact).** Once the stock is exhausted a merge only
removes a top (its cell stays empty), so it never helps; the talon top either
fits some top or the game is over, and which copy of ``c - 3`` it goes on does
not change the tops. So the final score is found by playing the talon
greedily (`final_plays`), without search.

**Dead cards and the key (exact).** A talon card is *dead* when it can never
be played: a base, or a card none of whose ``c - 3`` copies can ever be a top
when the card is exposed (each copy is covered in a stack, or lies in the talon
below it, or is itself dead). Copies only ever move from stock and talon into
the grid, and a covered card stays covered, so dead stays dead; every card
under a dead card stays too. This *dead prefix* of the talon only adds its
length to the final score; the search keys a position without it and adds
its length back (`Canon.dead`). Likewise a bottom that can never merge (no
``b - 3`` left in stock, live talon or tops) and a top nothing can ever go on
take part in no move again and are dropped from the key, though they still
count towards the lower bound (`Canon.missing`).

**Interchangeable pairs (exact).** A bottom ``b`` with a top ``b - 3`` is a
possible merge. When the tops ``b - 3`` outnumber every copy of ``b`` that may
still want one (bottoms ``b``, plus ``b`` in stock or live talon), merging a
``b`` has no effect but advancing the stock: no other card can ever need that
top or that bottom. Such pairs are *tokens*; the key keeps only how many
(``Canon.tokens``), and the search tries one token merge instead of one per
card.

**Safe talon plays (forced).** If the talon top ``c`` fits a top ``c - 3``,
and either two tops ``c - 3`` show or the other copy of ``c`` is neither a
bottom nor in the stock, then playing ``c`` at once loses nothing. Proof: take
any line ``L``. Only copies of ``c`` ever go onto a ``c - 3``; the other copy
is then covered, a top of another stack, or under ``c`` in the talon (it can
only move after ``c`` does), or there is a second ``c - 3`` for it. If ``L``
plays ``c`` at some step, ``L'`` = "play ``c`` now, then ``L`` without that
step" is legal (until that step nothing else uses the ``c - 3`` that ``c``
took, and the extra top ``c`` only adds options) and reaches the same
position after it. If ``L`` never plays ``c``, ``L'`` = "play ``c``, then
``L``" ends with one card fewer in the talon. So the forced play is the only
child searched (`Model.children`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from . import devils_grip as dg
from .cards import Card

#: Card codes run up to 3 * 16 + 13; arrays are indexed up to a J's ``+ 3``.
SIZE = 70
RANK = tuple(c % 16 for c in range(SIZE))
IS_BASE = tuple(2 <= r <= 4 for r in RANK)
#: A top of this card can still receive a card (ranks 2..10).
CAN_TOP = tuple(2 <= r <= 10 for r in RANK)
#: A stack with this bottom can still be merged (ranks 5..13).
CAN_MOVE = tuple(5 <= r <= 13 for r in RANK)
#: Cards a stack misses above a top that stays uncovered, below a bottom
#: that never moves (e.g. 3 above a 2, 1 below a 5).
SHORT_ABOVE = tuple(max(0, (13 - r) // 3) if 2 <= r <= 13 else 0 for r in RANK)
SHORT_BELOW = tuple(max(0, (r - 2) // 3) if 2 <= r <= 13 else 0 for r in RANK)

#: Abstract moves: a talon play, a merge of a bottom ``b``, a deal.
TALON = ("T",)
DEAL = ("D",)

Node = tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]
Move = tuple


def encode(card: Card) -> int:
    """Return the code of ``card``."""
    return card.suit * 16 + card.rank


def decode(code: int) -> Card:
    """Return the card of ``code``."""
    return Card(code % 16, code // 16)


def merge_move(bottom: int) -> Move:
    """Return the abstract move "merge a stack whose bottom is ``bottom``"."""
    return ("M", bottom)


def _remove(items: tuple[int, ...], x: int) -> tuple[int, ...]:
    i = items.index(x)
    return items[:i] + items[i + 1 :]


def _insert(items: tuple[int, ...], x: int) -> tuple[int, ...]:
    i = bisect.bisect(items, x)
    return items[:i] + (x,) + items[i:]


@dataclass(frozen=True)
class Canon:
    """A position reduced to what decides its future.

    ``key`` is ``(p, live talon, live bottoms, live tops, tokens)``; the final
    score of the position is ``dead`` plus that of the key. ``missing`` counts
    the grid slots that can never be filled (each forces a card to stay in
    the talon); ``token_cards`` are the bottoms whose merges are tokens.
    """

    key: tuple
    dead: int
    missing: int
    talon: tuple[int, ...]
    bottoms: tuple[int, ...]
    tops: tuple[int, ...]
    tokens: int
    token_cards: frozenset[int]


class Model:
    """The stock of one search, with per-pointer tables, and the moves."""

    def __init__(self, stock: Sequence[int]) -> None:
        self.stock = tuple(stock)
        self.n = len(self.stock)
        rem = [0] * SIZE
        self.remaining: list[tuple[int, ...]] = [()] * (self.n + 1)
        self.remaining[self.n] = tuple(rem)
        for p in range(self.n - 1, -1, -1):
            rem[self.stock[p]] += 1
            self.remaining[p] = tuple(rem)

    # -- the canonical form ------------------------------------------------
    def canon(self, node: Node) -> Canon:
        """Return the canonical form of ``node`` (see the module docstring)."""
        p, talon, bottoms, tops = node
        rem = self.remaining[p]
        dead, above = self._dead_prefix(talon, tops, rem)
        in_t = [0] * SIZE
        for t in tops:
            in_t[t] += 1
        in_b = [0] * SIZE
        for b in bottoms:
            in_b[b] += 1
        missing = 0
        keep_t = in_t[:]
        for t in set(tops):
            s = t + 3
            want = in_b[s] + rem[s] + above[s]
            if in_t[t] > want:
                keep_t[t] = want
                missing += (in_t[t] - want) * SHORT_ABOVE[t]
        keep_b = in_b[:]
        token_cards = []
        tokens = 0
        for b in set(bottoms):
            q = b - 3
            have = in_t[q] + rem[q] + above[q]
            if in_b[b] > have:
                keep_b[b] = have
                missing += (in_b[b] - have) * SHORT_BELOW[b]
            m = min(keep_b[b], keep_t[q] - rem[b] - above[b])
            if m > 0:
                tokens += m
                token_cards.append(b)
                keep_b[b] -= m
                keep_t[q] -= m
        live_b = []
        for b in bottoms:
            if keep_b[b]:
                keep_b[b] -= 1
                live_b.append(b)
        live_t = []
        for t in tops:
            if keep_t[t]:
                keep_t[t] -= 1
                live_t.append(t)
        live_talon = talon[dead:]
        lb, lt = tuple(live_b), tuple(live_t)
        return Canon(
            (p, live_talon, lb, lt, tokens),
            dead,
            missing,
            live_talon,
            lb,
            lt,
            tokens,
            frozenset(token_cards),
        )

    @staticmethod
    def _dead_prefix(
        talon: tuple[int, ...], tops: tuple[int, ...], rem: tuple[int, ...]
    ) -> tuple[int, list[int]]:
        """Return the dead prefix length and the live talon's card counts.

        Scanning from the top: a card is dead when it is a base, or when no
        copy of ``c - 3`` is a top, in the stock, or higher in the talon.
        """
        above = [0] * SIZE
        for i in range(len(talon) - 1, -1, -1):
            c = talon[i]
            q = c - 3
            if IS_BASE[c] or not (rem[q] or above[q] or q in tops):
                return i + 1, above
            above[c] += 1
        return 0, above

    # -- moves ---------------------------------------------------------------
    def children(self, node: Node, canon: Canon) -> list[tuple[Move, Node]]:
        """Return the moves worth trying from ``node``, each with its result.

        A safe talon play is returned alone (see the module docstring); one
        merge stands for all token merges; a deal comes last.
        """
        p, talon, bottoms, tops = node
        out: list[tuple[Move, Node]] = []
        play = self.talon_play(node)
        if play is not None:
            c = talon[-1]
            if tops.count(c - 3) >= 2 or (
                c not in bottoms and not self.remaining[p][c]
            ):
                return [(TALON, play)]
            out.append((TALON, play))
        if p == self.n:
            return out
        if canon.token_cards:
            b = min(canon.token_cards)
            out.append((merge_move(b), self.merge(node, b)))
        seen = set()
        for b in canon.bottoms:
            if b in seen or b - 3 not in canon.tops:
                continue
            seen.add(b)
            out.append((merge_move(b), self.merge(node, b)))
        out.append((DEAL, self.deal(node)))
        return out

    def talon_play(self, node: Node) -> Node | None:
        """Return ``node`` after playing the talon top, or None if it fits nowhere."""
        p, talon, bottoms, tops = node
        if not talon:
            return None
        c = talon[-1]
        if IS_BASE[c] or c - 3 not in tops:
            return None
        new_tops = _remove(tops, c - 3)
        if CAN_TOP[c]:
            new_tops = _insert(new_tops, c)
        return (p, talon[:-1], bottoms, new_tops)

    def merge(self, node: Node, b: int) -> Node:
        """Return ``node`` after merging a stack with bottom ``b`` (stock left)."""
        p, talon, bottoms, tops = node
        r = self.stock[p]
        new_bottoms = _remove(bottoms, b)
        if CAN_MOVE[r]:
            new_bottoms = _insert(new_bottoms, r)
        new_tops = _remove(tops, b - 3)
        if CAN_TOP[r]:
            new_tops = _insert(new_tops, r)
        return (p + 1, talon, new_bottoms, new_tops)

    def deal(self, node: Node) -> Node:
        """Return ``node`` after dealing the next packet of (up to) three."""
        p, talon, bottoms, tops = node
        q = min(p + dg.PACKET, self.n)
        return (q, talon + self.stock[p:q], bottoms, tops)

    def final_plays(self, node: Node) -> tuple[int, Node]:
        """Return how many talon plays end the game, and the final node.

        Only called with the stock exhausted: the plays are then forced.
        """
        count = 0
        while (after := self.talon_play(node)) is not None:
            node = after
            count += 1
        return count, node


def root(state: dg.State) -> tuple[Model, Node]:
    """Return the model and the abstract node of a reference position."""
    stock = [encode(c) for c in state.stock]
    bottoms = tuple(
        sorted(encode(s[0]) for s in state.grid if s and CAN_MOVE[encode(s[0])])
    )
    tops = tuple(
        sorted(encode(s[-1]) for s in state.grid if s and CAN_TOP[encode(s[-1])])
    )
    talon = tuple(encode(c) for c in state.talon)
    return Model(stock), (0, talon, bottoms, tops)


def concrete(state: dg.State, move: Move) -> dg.Move:
    """Return a reference move that realises abstract ``move`` in ``state``.

    Any stack with the named bottom and any stack with the needed top will
    do: by the abstraction argument every choice leads to the same node.
    """
    if move == DEAL:
        return dg.DEAL
    if move == TALON:
        target = state.talon[-1]
        return dg.TalonPlay(_cell_with_top(state, encode(target) - 3))
    bottom = move[1]
    src = next(i for i, s in enumerate(state.grid) if s and encode(s[0]) == bottom)
    dst = _cell_with_top(state, bottom - 3, avoid=src)
    return dg.Merge(src, dst)


def _cell_with_top(state: dg.State, top: int, avoid: int = -1) -> int:
    return next(
        i for i, s in enumerate(state.grid) if s and i != avoid and encode(s[-1]) == top
    )


def to_reference(state: dg.State, moves: list[Move]) -> list[dg.Move]:
    """Turn abstract moves into reference moves by replaying them on ``state``.

    A won line gets the swaps that put every stack in its row.
    """
    line: list[dg.Move] = []
    for move in moves:
        real = concrete(state, move)
        state = dg.apply(state, real)
        line.append(real)
    return line + dg.finishing_moves(state)
