"""The CNF encoding of Devil's Grip, indexed by the stock pointer.

A position (a deal's start or any mid-game position) becomes one CNF whose
models are the lines of play, up to swaps and up to moves that cannot matter.
`build_cnf` is deterministic (same input, same clauses in the same order), so
a certificate can re-derive the formula from the position.

Pieces and slots
----------------
Every physical card is a *piece*, named by where it starts: a grid cell and a
height, a talon position, or a stock position ``k`` (0 = top). The stock has
``n`` cards; the *pointer* counts the cards that have left it, so it runs from
0 to ``n``. Time is the pointer: *slot* ``t`` is everything that happens while
the pointer is ``t`` -- some talon plays, then one *event*: a merge (it refills
the emptied cell with stock card ``t``: pointer ``t+1``) or a deal (stock cards
``t..t+2`` go to the talon: pointer ``min(t+3, n)``). Slot ``n`` (stock
exhausted) holds talon plays only.

A *link* is a piece coming to rest on a copy of its predecessor (same suit,
rank - 3). Stacks only grow and merges move whole stacks, so a link, once made,
lasts; every merge makes one link (the moved stack's bottom onto the target's
top) and every talon play makes one link (the talon top onto a grid top). A
piece on top of a stack is a top exactly while nothing is linked onto it.
Where a piece stands (its cell) never matters, only what it is linked to.

Variables (tuple keys in one `IDPool`)
--------------------------------------
- ``("visit", t)``: the pointer stops at ``t`` (``V_t``; ``V_0 = V_n = 1``).
- ``("merge", t)`` / ``("deal", t)``: slot ``t`` ends with a merge / a deal
  (``M_t``, ``D_t``). ``M_k`` also says that stock card ``k`` was *drawn* into
  the grid; otherwise it went to the talon.
- ``("link", x, y)``: piece ``x`` ends on piece ``y`` (``L_xy``): which copy
  carries which. Only the copies of pred(x) not covered at the start are
  candidates; pieces that start on their predecessor are linked for good.
- ``("by", x, t)``: ``x`` is linked in slot ``t`` or earlier (``B_xt``): one
  order-encoded *link time* per piece still to be placed, over
  ``lo(x)..hi(x)`` (``lo`` is 0 for pieces in play and ``k+1`` for stock card
  ``k``; ``hi`` is ``n-1`` for grid pieces, which only a merge moves, else
  ``n``).
- ``("source", x, t)``: ``x`` is the bottom of the stack merged in slot ``t``.
- ``("clear", p, t)``: every talon card above talon position ``p`` that is on
  the talon at the start of slot ``t`` is played by the end of slot ``t``
  (``Q_pt``). Talon positions: the position's talon bottom to top, then the
  stock top first -- the order in which cards come to lie on the talon.
- ``("open", y)`` / ``("bottom", y)``: ``y`` ends as a stack's top with
  nothing on it / as a stack's bottom (`var_open`, `var_bottom`; the grid
  view of the score only).
- ``("order", t, i)``, ``(amo, t, i)``: auxiliaries (merge order, counters);
  ``("merges", t, j)``, ``("merged", x, t)``, ``("tally", t, node, r)``: the
  merge count's (`encode_merge_count`).

Families (one method each, the math in its docstring): `encode_path`,
`encode_links`, `encode_link_times`, `encode_targets`, `encode_merges`,
`encode_talon_order`; for a verdict `encode_win`; for a score `encode_seals`
and `encode_cells` (implied), `encode_score` and, for core-guided bounds,
`encode_grid_view` (`encode_merge_count`, implied too, only on request);
and the dominance restrictions `encode_eager`, `encode_copies`,
`encode_merge_order`, `encode_merge_copies`, each with its
without-loss-of-generality argument.

Why UNSAT means "no line" (exactness)
-------------------------------------
*Completeness* (every line is a model). Take any line and drop its swaps: a
swap only changes which cell holds which stack, never which cards are tops or
bottoms, and merges and plays name stacks, not places. Drop every merge made
after the stock is exhausted: it only covers a top (tops after = tops before
minus one), so every later talon play stays legal and the talon ends no
larger; a win never has one (it would leave a cell empty for good). Every
remaining move happens at a pointer value ``0..n``; merges and deals advance
the pointer (a merge draws exactly one card, because while the stock lasts no
cell is empty), talon plays do not. So the line is a path of events through
slots ``0..n``, each slot holding its talon plays (popped top first, the LIFO
order the ``clear`` variables describe) and at most one event. Setting every
variable from this path satisfies every clause of the families without
dominance; the tests check exactly this on real lines
(`devils_grip_sat_lines.line_assignment`). There is no horizon to choose:
slots ``0..n`` hold every line, of any length. A win from a deal is 72
placements (links) plus at most 24 deals, one event per slot -- the tests
check that constructed winning lines have that shape.

The dominance restrictions (score formulas only, by default) remove lines,
but each comes with a normalization that turns any line into one they allow
with the same final position: talon plays move earlier (`encode_eager`),
merges are permuted among merge slots (`encode_merge_order`,
`encode_merge_copies`) and copies of a target exchanged (`encode_copies`).
Each step lowers (sum of talon play slots, sequence of merged pieces, copy
violations) lexicographically: play moves change the first; merge moves keep
the first and lower the second; copy moves keep both and lower the third. So
normalization ends, and the best score and the verdict are unchanged.

*Soundness* (every model is a line). `devils_grip_sat_lines.decode` turns a
model into moves slot by slot (talon plays top first, then the event),
checking each with the reference engine; the driver replays the whole line
again before reporting anything.

Winning and scoring
-------------------
A line ends won iff every non-base piece is linked and no base card (2, 3, 4)
ever reaches the talon: then all 96 cards stand in the grid as chains, which
with 24 cells means 24 complete stacks, and swaps sort the rows. Score 0 is
the same as a win. The score of a line is ``m + n - links`` (`encode_score`):
each of the ``m`` talon cards and of the stock cards not drawn by a merge
stays on the talon unless played, and every merge draws exactly one card. A
totalizer over the unlinked pieces bounds it: "at most k" UNSAT means no line
ends with k or fewer cards in the talon.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pysat.card import ITotalizer
from pysat.formula import CNF, IDPool

from verifier import devils_grip as dg
from verifier.cards import Card
from verifier.gcpause import cycles_uncollected
from verifier.results import Question

GRID, TALON, STOCK = "grid", "talon", "stock"

#: `Encoding.encode_merge_count` ties the two counts at every third slot.
MERGE_COUNT_STRIDE = 3
#: `Encoding.encode_cells` ties its count at the end and every sixth slot.
CELLS_STRIDE = 6
#: The certificate's name for this encoding's clauses (2: with the merge count,
#: 4: with the cells' count at the end and every sixth slot, 5: the merge
#: count left out).
ENCODING_VERSION = "5"


# -- the position, as pieces -------------------------------------------------------
@dataclass(frozen=True)
class Piece:
    """A physical card, named by where it starts.

    ``index`` is the cell (grid), the position from the bottom (talon) or the
    position from the top (stock); ``height`` is the height in a grid stack.
    """

    card: Card
    origin: str
    index: int
    height: int = 0


def _chain_key(card: Card) -> tuple[int, int, int]:
    """Sort key putting the two copies of a card next to each other, and the
    cards of one chain (suit, 2-5-8-J / 3-6-9-Q / 4-7-10-K) in rank order
    (`Encoding._totalizer`)."""
    return *dg.chain_of(card), card.rank


def _pred(card: Card) -> Card | None:
    """Return the card ``card`` rests on in a chain, or None for a base card."""
    return None if card.rank in dg.BASE_RANKS else Card(card.rank - dg.STEP, card.suit)


@dataclass(frozen=True)
class Layout:
    """The static facts of a position that the encoding needs.

    ``talon_seq`` lists piece ids in talon order (the position's talon bottom
    to top, then the stock top first); ``resting`` maps each grid piece that
    starts on its predecessor to the piece below it; ``targets`` maps each
    linkable piece to the uncovered copies of its predecessor.
    """

    state: dg.State
    pieces: tuple[Piece, ...]
    talon_seq: tuple[int, ...]
    stock: tuple[int, ...]
    resting: dict[int, int]
    targets: dict[int, tuple[int, ...]]
    sources: dict[int, tuple[int, ...]]

    def __post_init__(self) -> None:
        # Hot in the encoder: precomputed once (the dataclass stays frozen).
        n, m = len(self.stock), len(self.talon_seq) - len(self.stock)
        lo = [p.index + 1 if p.origin == STOCK else 0 for p in self.pieces]
        hi = [n - 1 if p.origin == GRID else n for p in self.pieces]
        linkable = [x for x in range(len(self.pieces)) if self.targets.get(x)]
        cells = sum(1 for stack in self.state.grid if stack)
        values = (("n", n), ("m", m), ("cells", cells), ("_lo", lo), ("_hi", hi))
        for name, value in values:
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_linkable", linkable)

    #: The number of stock cards, and so the last slot.
    n: int = field(init=False)
    #: The number of cards on the talon at the start.
    m: int = field(init=False)
    #: The number of non-empty cells at the start (while the stock lasts, no
    #: cell is ever empty: a merge refills the cell it empties).
    cells: int = field(init=False)

    def tpos(self, x: int) -> int:
        """Return the talon position of a talon or stock piece."""
        piece = self.pieces[x]
        return piece.index if piece.origin == TALON else self.m + piece.index

    def lo(self, x: int) -> int:
        """Return the first slot in which ``x`` can be linked."""
        return self._lo[x]

    def hi(self, x: int) -> int:
        """Return the last slot in which ``x`` can be linked.

        A grid piece moves only by a merge, and no merge happens in slot ``n``.
        """
        return self._hi[x]

    def linkable(self) -> list[int]:
        """Return the pieces that may still be linked, in id order."""
        return list(self._linkable)


def layout_of(state: dg.State) -> Layout:
    """Return the `Layout` of ``state`` (pieces numbered grid, talon, stock)."""
    pieces: list[Piece] = []
    resting: dict[int, int] = {}
    for cell, stack in enumerate(state.grid):
        for height, card in enumerate(stack):
            if height:
                resting[len(pieces)] = len(pieces) - 1
            pieces.append(Piece(card, GRID, cell, height))
    talon_ids = []
    for index, card in enumerate(state.talon):
        talon_ids.append(len(pieces))
        pieces.append(Piece(card, TALON, index))
    stock_ids = []
    for index, card in enumerate(state.stock):
        stock_ids.append(len(pieces))
        pieces.append(Piece(card, STOCK, index))
    covered = set(resting.values())
    by_card: dict[Card, list[int]] = {}
    for x, piece in enumerate(pieces):
        by_card.setdefault(piece.card, []).append(x)
    n = len(stock_ids)
    targets: dict[int, tuple[int, ...]] = {}
    sources: dict[int, list[int]] = {}
    for x, piece in enumerate(pieces):
        pred = _pred(piece.card)
        if pred is None or x in resting or (piece.origin == GRID and n == 0):
            continue
        if piece.origin == STOCK and piece.index + 1 > n:
            continue
        ys = tuple(y for y in by_card.get(pred, ()) if y not in covered)
        if ys:
            targets[x] = ys
            for y in ys:
                sources.setdefault(y, []).append(x)
    return Layout(
        state=state,
        pieces=tuple(pieces),
        talon_seq=tuple(talon_ids + stock_ids),
        stock=tuple(stock_ids),
        resting=resting,
        targets=targets,
        sources={y: tuple(xs) for y, xs in sources.items()},
    )


# -- the encoding --------------------------------------------------------------------
class Encoding:
    """The clauses for one position and question, and the map back to moves.

    Constants are literals of one variable fixed true (``TRUE``); `add` drops
    satisfied clauses and false literals, so impossible cases cost nothing.
    """

    def __init__(
        self, layout: Layout, *, dominance: bool = True, win: bool = False
    ) -> None:
        self.layout = layout
        self.dominance = dominance
        self.win = win
        self.pool = IDPool()
        self.true = self.pool.id(("true",))
        self.clauses: list[list[int]] = [[self.true]]
        self.unlinked: list[int] = []
        self._counted: list[int] = []  # the same, card by card (`_totalizer`)
        self._by: dict[tuple[int, int], int] = {}
        self._merge: dict[int, int] = {}
        self.score_offset = 0
        #: The grid view of the score (`encode_grid_view`): weighted literals.
        self.grid_terms: list[tuple[int, int]] = []
        self.grid_offset = 0

    # -- clause helper ----------------------------------------------------------------
    def add(self, *lits: int) -> None:
        """Add the clause ``lits``, simplified against the constants.

        Satisfied clauses (a true constant, or ``l`` with ``-l``) are dropped;
        false constants and repeated literals are removed.
        """
        true = self.true
        if len(lits) == 2:  # 43 % of a score formula's clauses: a quick test
            a, b = lits
            if a != b and a != -b and abs(a) != true and abs(b) != true:
                self.clauses.append([a, b])
                return
        elif (
            true not in lits
            and -true not in lits
            and len(set(map(abs, lits))) == len(lits)
        ):
            self.clauses.append(list(lits))  # the common case
            return
        out: list[int] = []
        for lit in lits:
            if lit == true or -lit in out:
                return
            if lit != -true and lit not in out:
                out.append(lit)
        self.clauses.append(out or [-true])

    # -- variables ------------------------------------------------------------------
    def var_visit(self, t: int) -> int:
        """``V_t``: the pointer stops at ``t`` (true at 0 and at ``n``)."""
        if t in (0, self.layout.n):
            return self.true
        if 0 < t < self.layout.n:
            return self.pool.id(("visit", t))
        return -self.true

    def var_merge(self, t: int) -> int:
        """``M_t``: slot ``t`` ends with a merge, which draws stock card ``t``.

        In a win every base card is drawn (`win_literals`): then ``M_t`` of a
        base card is the constant true.
        """
        lit = self._merge.get(t)
        if lit is None:
            lit = self._merge[t] = self._merge_literal(t)
        return lit

    def _merge_literal(self, t: int) -> int:
        if not 0 <= t < self.layout.n:
            return -self.true
        stock_card = self.layout.pieces[self.layout.stock[t]].card
        if self.win and _pred(stock_card) is None:
            return self.true
        return self.pool.id(("merge", t))

    def var_deal(self, t: int) -> int:
        """``D_t``: slot ``t`` ends with a deal."""
        if 0 <= t < self.layout.n:
            return self.pool.id(("deal", t))
        return -self.true

    def var_drawn(self, x: int) -> int:
        """Return whether piece ``x`` is in the grid (once it left the stock)."""
        piece = self.layout.pieces[x]
        if piece.origin == STOCK:
            return self.var_merge(piece.index)
        return self.true if piece.origin == GRID else -self.true

    def var_link(self, x: int, y: int) -> int:
        """``L_xy``: piece ``x`` ends on piece ``y``."""
        if self.layout.resting.get(x) == y:
            return self.true
        if y in self.layout.targets.get(x, ()):
            return self.pool.id(("link", x, y))
        return -self.true

    def var_by(self, x: int, t: int) -> int:
        """``B_xt``: piece ``x`` is linked in slot ``t`` or earlier.

        In a win every non-base piece is linked in the end: ``B_x,hi`` is then
        the constant true.
        """
        lit = self._by.get((x, t))
        if lit is None:
            lit = self._by[x, t] = self._by_literal(x, t)
        return lit

    def _by_literal(self, x: int, t: int) -> int:
        if x in self.layout.resting:
            return self.true
        if x not in self.layout.targets or t < self.layout.lo(x):
            return -self.true
        hi = self.layout.hi(x)
        if self.win and t >= hi:
            return self.true
        return self.pool.id(("by", x, min(t, hi)))

    def var_source(self, x: int, t: int) -> int:
        """``S_xt``: the stack merged in slot ``t`` has ``x`` at its bottom."""
        return self.pool.id(("source", x, t))

    def var_clear(self, p: int, t: int) -> int:
        """``Q_pt``: nothing above talon position ``p`` is left after slot ``t``.

        True by definition for the highest position that has left the stock by
        slot ``t`` (``m + t - 1``): nothing lies above it.
        """
        if p >= self.layout.m + t - 1:
            return self.true
        return self.pool.id(("clear", p, t))

    def var_open(self, y: int) -> int:
        """``y`` ends as a stack's top with nothing on it (grid view)."""
        return self.pool.id(("open", y))

    def var_bottom(self, y: int) -> int:
        """``y`` ends as a stack's bottom, drawn but never linked (grid view)."""
        return self.pool.id(("bottom", y))

    # -- constraint families ------------------------------------------------------
    def encode_path(self) -> None:
        """The pointer path: one event per visited slot, each moving the pointer.

        For ``t < n``: ``V_t -> M_t | D_t``, ``~M_t | ~D_t``, ``M_t -> V_t & V_t+1``,
        ``D_t -> V_t & V_d & ~V_t+1 & ~V_t+2`` with ``d = min(t+3, n)``; for
        ``t > 0``: ``V_t -> M_t-1 | D_s`` over the deals ``s`` that land on ``t``.
        The visited slots are then exactly one path from 0 to ``n``.
        """
        n = self.layout.n
        for t in range(n):
            v, mg, dl = self.var_visit(t), self.var_merge(t), self.var_deal(t)
            land = min(t + 3, n)
            self.add(-v, mg, dl)
            self.add(-mg, -dl)
            self.add(-mg, v)
            self.add(-mg, self.var_visit(t + 1))
            self.add(-dl, v)
            self.add(-dl, self.var_visit(land))
            for skipped in range(t + 1, land):
                self.add(-dl, -self.var_visit(skipped))
        for t in range(1, n + 1):
            deals = [s for s in range(max(0, t - 3), t) if min(s + 3, n) == t]
            self.add(
                -self.var_visit(t),
                self.var_merge(t - 1),
                *(self.var_deal(s) for s in deals),
            )

    def encode_links(self) -> None:
        """Which copy carries which: ``L`` is a partial matching.

        Each piece ends on at most one copy of its predecessor, each piece
        carries at most one piece, and ``x`` is linked (``B_x,hi``) iff it has
        a target: ``B_x,hi <-> OR_y L_xy``.
        """
        layout = self.layout
        for x in layout.linkable():
            ys = layout.targets[x]
            links = [self.var_link(x, y) for y in ys]
            self._at_most_one_pairwise(links)
            linked = self.var_by(x, layout.hi(x))
            self.add(-linked, *links)
            for link in links:
                self.add(-link, linked)
        for y in sorted(layout.sources):
            self._at_most_one_pairwise([self.var_link(x, y) for x in layout.sources[y]])

    def encode_link_times(self) -> None:
        """Order encoding of link times; links happen only at visited slots.

        ``B_xt -> B_x,t+1``; ``B_xt & ~B_x,t-1 -> V_t``.
        """
        layout = self.layout
        for x in layout.linkable():
            lo, hi = layout.lo(x), layout.hi(x)
            for t in range(lo, hi + 1):
                if t < hi:
                    self.add(-self.var_by(x, t), self.var_by(x, t + 1))
                self.add(-self.var_by(x, t), self.var_by(x, t - 1), self.var_visit(t))

    def encode_targets(self) -> None:
        """A link needs its target in the grid (and uncovered) at that moment.

        For ``L_xy & B_xt``: a grid piece ``y`` is always there (uncovered by the
        matching); stock card ``y = i`` is there if drawn before slot ``t``
        (``M_i``, ``i < t``); a talon card ``y`` is there once played
        (``B_yt``), but if ``y`` lies below a talon card ``x`` it must have been
        played in an earlier slot (``B_y,t-1``), since ``x`` covers it until
        ``x`` itself is played.
        """
        layout = self.layout
        for x in layout.linkable():
            for y in layout.targets[x]:
                if layout.pieces[y].origin != GRID:
                    self._target_clauses(x, y)

    def _target_clauses(self, x: int, y: int) -> None:
        layout = self.layout
        px, py = layout.pieces[x], layout.pieces[y]
        link = self.var_link(x, y)
        below = px.origin != GRID and layout.tpos(y) < layout.tpos(x)
        for t in range(layout.lo(x), layout.hi(x) + 1):
            head = [-link, -self.var_by(x, t)]
            if py.origin == STOCK and py.index < t:
                head.append(self.var_merge(py.index))
            if not below:
                self.add(*head, self.var_by(y, t))
                continue
            # y under x on the talon: earlier slot, unless x was drawn (a merge
            # comes after the slot's talon plays).
            self.add(*head, self.var_by(y, t - 1), self.var_drawn(x))
            if px.origin == STOCK:
                self.add(*head, self.var_by(y, t))

    def encode_merges(self) -> None:
        """Each merge moves exactly one stack, whose bottom gets linked.

        ``S_xt <-> B_xt & ~B_x,t-1 & drawn(x)`` for the pieces that can be a
        stack bottom at slot ``t`` (grid pieces, stock cards ``k < t``);
        ``S_xt -> M_t``; ``M_t -> OR_x S_xt``; at most one ``S_xt`` per slot
        (sequential counter). A drawn stock card never links in slot ``n``.
        """
        layout = self.layout
        n = layout.n
        candidates = [x for x in layout.linkable() if layout.pieces[x].origin != TALON]
        for t in range(n):
            sources = []
            for x in candidates:
                if layout.lo(x) <= t <= layout.hi(x):
                    sources.append(self._source_at(x, t))
            self.add(-self.var_merge(t), *sources)
            self._at_most_one_sequential(sources, ("amo", t))
        for x in candidates:
            if layout.pieces[x].origin == STOCK and layout.lo(x) <= n:
                self.add(-self.var_by(x, n), self.var_by(x, n - 1), -self.var_drawn(x))

    def _source_at(self, x: int, t: int) -> int:
        s = self.var_source(x, t)
        now, before, drawn = self.var_by(x, t), self.var_by(x, t - 1), self.var_drawn(x)
        self.add(-s, now)
        self.add(-s, -before)
        self.add(-s, drawn)
        self.add(-now, before, -drawn, s)
        self.add(-s, self.var_merge(t))
        return s

    def encode_talon_order(self) -> None:
        """The talon is a stack: a card is played only from its top.

        ``Q_pt -> Q_p+1,t`` and ``Q_pt -> drawn(z) | B_zt`` for the next position
        ``z = p+1`` (a drawn card never lay on the talon); a talon card ``x``
        played in slot ``t`` needs ``Q_xt``. Cards played in the same slot are
        played top first, so ``B_zt`` (not ``B_z,t-1``) is enough.
        """
        layout = self.layout
        for t in range(layout.n + 1):
            top = layout.m + t - 1
            for p in range(top):
                z = layout.talon_seq[p + 1]
                clear, above = self.var_clear(p, t), self.var_clear(p + 1, t)
                drawn, played = self.var_drawn(z), self.var_by(z, t)
                self.add(-clear, above)
                self.add(-clear, drawn, played)
                if self.dominance:  # the converse, for `encode_eager`
                    self.add(clear, -above, -drawn)
                    self.add(clear, -above, -played)
        for x in layout.linkable():
            if layout.pieces[x].origin == GRID:
                continue
            p = layout.tpos(x)
            for t in range(layout.lo(x), layout.hi(x) + 1):
                self.add(
                    -self.var_by(x, t),
                    self.var_by(x, t - 1),
                    self.var_drawn(x),
                    self.var_clear(p, t),
                )

    def encode_seals(self) -> None:
        """Implied: a card that stays on the talon seals every card under it.

        For talon positions ``p < q`` (card ``z`` at ``q``, stock card ``k``):
        ``drawn(z) | B_z,n | drawn(x_p) | ~B_p,n | B_p,k``. If ``z`` went to the
        talon and never left it, a card ``x_p`` under it is played before ``z``
        arrives (by slot ``k``, as ``z`` is dealt in slot ``k-2..k``) or never.
        It follows from the talon order, but only through long chains of
        ``clear`` variables; stated directly it propagates at once (a base card
        on the talon is the common case).
        """
        layout = self.layout
        seq, n = layout.talon_seq, layout.n
        for q, z in enumerate(seq):
            stays = [self.var_drawn(z), self.var_by(z, n)]
            k = q - layout.m  # z's stock index (negative: on the talon already)
            for x in seq[:q]:
                self.add(
                    *stays,
                    self.var_drawn(x),
                    -self.var_by(x, n),
                    self.var_by(x, k),
                )

    def encode_eager(self) -> None:
        """Dominance: a talon card is played as soon as it can reach its target.

        ``L_cy & V_t & Q_ct & avail(y, t) -> drawn(c) | B_ct``. Sound as a
        restriction ("without loss of generality"): if a line plays ``c`` onto
        ``y`` in a later slot although in slot ``t`` ``c`` could be the talon
        top and ``y`` was in the grid, play ``c`` at the end of slot ``t``'s
        talon plays instead. Only ``c`` ever lands on ``y``, so no move in
        between needed ``y`` as a top; the new top ``c`` only adds options; the
        cards above ``c`` are played as before (``c`` lay under them), and the
        positions meet again once the old line plays ``c``. Repeating this
        moves plays only earlier, so it ends, with the same final position:
        same score, same win. (Here ``Q`` is exact: see `encode_talon_order`.)
        """
        layout = self.layout
        for c in layout.linkable():
            if layout.pieces[c].origin == GRID:
                continue
            p = layout.tpos(c)
            for y in layout.targets[c]:
                link = self.var_link(c, y)
                for t in range(layout.lo(c), layout.hi(c) + 1):
                    head = [-link, -self.var_visit(t), -self.var_clear(p, t)]
                    tail = [self.var_drawn(c), self.var_by(c, t)]
                    for ready in self._available(c, y, t):
                        self.add(*head, -ready, *tail)

    def _available(self, x: int, y: int, t: int, *, merge: bool = False) -> list[int]:
        """Return literals, any of which puts ``y`` in the grid for ``x`` in slot ``t``.

        For a grid piece ``x`` (moved by the merge that ends the slot) and for a
        talon card ``x`` lying under ``y``, playing ``y`` in slot ``t`` is soon
        enough; a talon card ``y`` under ``x`` must be played in an earlier slot.
        For a stock card ``x`` the talon case is taken (the stricter of the
        two) unless ``merge`` says ``x`` is moved by a merge.
        """
        layout = self.layout
        py = layout.pieces[y]
        if py.origin == GRID:
            return [self.true]
        ready = []
        if py.origin == STOCK and py.index < t:
            ready.append(self.var_merge(py.index))
        px = layout.pieces[x]
        above = merge or px.origin == GRID or layout.tpos(y) > layout.tpos(x)
        ready.append(self.var_by(y, t if above else t - 1))
        return [r for r in ready if r != -self.true]

    def encode_copies(self) -> None:
        """Symmetry: copies are interchangeable, so the earlier link takes copy 1.

        For targets ``y1 < y2`` (the two copies of pred(x)) and the other source
        ``x'``: ``L_x,y2 & B_xt & ~B_x,t-1 & avail(y1) -> B_x't``. Sound as a
        restriction: if ``x`` took ``y2`` in slot ``t`` while ``y1`` was in the
        grid, and ``x'`` was not linked by then, give ``y1`` to ``x`` and ``y2``
        to ``x'`` (if ``x'`` ever links: ``y2`` was in the grid at ``t``, so it
        is when ``x'`` links later). ``y1`` and ``y2`` are the same card, so the
        tops, the bottoms and every later move are unchanged.
        """
        layout = self.layout
        for x in layout.linkable():
            ys = sorted(layout.targets[x])
            if len(ys) != 2:
                continue
            y1, y2 = ys
            others = [o for o in layout.sources[y1] if o != x]
            link = self.var_link(x, y2)
            for t in range(layout.lo(x), layout.hi(x) + 1):
                exact = [-self.var_by(x, t), self.var_by(x, t - 1)]
                other = [self.var_by(o, t) for o in others]
                for ready in self._available(x, y1, t):
                    self.add(-link, *exact, -ready, *other)

    def encode_merge_order(self) -> None:
        """Symmetry: each merge moves the lowest-numbered stack that is ready.

        ``G_ti``: the piece merged in slot ``t`` is candidate ``i`` or later in
        slot ``t``'s candidate list (sorted by piece id). A piece ``x`` that is
        ready in slot ``t`` (in the grid, unlinked, its target ``y`` in the grid)
        but merges in a later slot forces a smaller one now:
        ``drawn(x) & L_xy & avail(y, t) & ~B_xt & B_x,hi -> ~G_t,i(x)+1``.

        Sound as a restriction: a merge has no effect but drawing stock card
        ``t`` (the same whichever stack moves) and covering its target, which
        only its own piece ever lands on. So the stacks merged in the merge
        slots can be permuted freely as long as each is ready in its slot;
        exchanging the piece of slot ``t`` with a ready lower-numbered one
        merged later makes the sequence of merged pieces lexicographically
        smaller, and leaves talon plays and targets alone.
        """
        layout = self.layout
        cands = self._merge_candidates()
        for t in range(layout.n - 1):
            order = self._merge_index(t, cands[t])
            for i, x in enumerate(cands[t][:-1]):
                later = [self.var_by(x, t), -self.var_by(x, layout.hi(x))]
                for y in layout.targets[x]:
                    link = self.var_link(x, y)
                    for ready in self._available(x, y, t, merge=True):
                        self.add(
                            -self.var_drawn(x), -link, -ready, *later, -order[i + 1]
                        )

    def encode_merge_copies(self) -> None:
        """Symmetry: of two copies that could merge, the lower-numbered one does.

        ``S_x2,t & L_x2,y & avail(y, t) & drawn(x) -> B_x,hi`` for the copies
        ``x < x2`` of one card that merges move: if ``x2`` merges in slot ``t``
        while ``x`` was in the grid, ``x`` merges too (and by `encode_merge_order`
        before ``t``). Sound as a restriction: merge ``x`` onto ``y`` instead of
        ``x2``; the bottoms and tops of the grid, as cards, are the same
        afterwards, and the sequence of merged pieces gets smaller.
        """
        layout = self.layout
        for x2 in layout.linkable():
            if layout.pieces[x2].origin == TALON:
                continue
            ys = layout.targets[x2]
            twins = [
                x
                for x in layout.sources[ys[0]]
                if x < x2 and layout.pieces[x].origin != TALON
            ]
            for x in twins:
                for t in range(max(layout.lo(x), layout.lo(x2)), layout.hi(x2) + 1):
                    if t >= layout.n:
                        continue
                    for y in ys:
                        head = [-self.var_source(x2, t), -self.var_link(x2, y)]
                        tail = [-self.var_drawn(x), self.var_by(x, layout.hi(x))]
                        for ready in self._available(x2, y, t, merge=True):
                            self.add(*head, -ready, *tail)

    def _merge_index(self, t: int, cands: list[int]) -> list[int]:
        """Order-encode the index of slot ``t``'s merged piece in ``cands``."""
        order = [self.true]
        order += [self.pool.id(("order", t, i)) for i in range(1, len(cands))]
        for i, x in enumerate(cands):
            source = self.var_source(x, t)
            self.add(-source, order[i])
            if i + 1 < len(order):
                self.add(-source, -order[i + 1])
            if i:
                self.add(-order[i], order[i - 1])
        return order

    def _merge_candidates(self) -> list[list[int]]:
        """Return, per slot ``t < n``, the pieces that may be merged in it."""
        layout = self.layout
        movable = [x for x in layout.linkable() if layout.pieces[x].origin != TALON]
        return [
            [x for x in movable if layout.lo(x) <= t <= layout.hi(x)]
            for t in range(layout.n)
        ]

    def encode_merge_count(self, stride: int = MERGE_COUNT_STRIDE) -> None:
        """Implied: the merges before slot ``t`` are as many as the pieces merged.

        Every merge moves exactly one stack and links its bottom, and a piece
        is merged at most once (`encode_merges`), so for every slot ``t``

            #{s < t : M_s} = #{x : drawn(x) & B_x,t-1}

        over the pieces merges move (grid pieces and stock cards; a talon card
        is linked by a play). Both sides are counted in unary and tied output
        by output: the slot side by an exact sequential counter over time,
        ``C_t,j`` = at least ``j`` merges before slot ``t``, with
        ``C_t+1,j <-> C_t,j | (C_t,j-1 & M_t)``; the piece side, at every
        ``stride``-th slot and at ``n``, by a totalizer over
        ``drawn(x) & B_x,t-1`` with clauses in both directions
        (`_exact_totalizer`), so that a count forced on one side propagates to
        the other both ways.

        Why: merge slots and merged pieces form a matching, and a schedule
        that needs more merges by slot ``t`` than pieces can be ready for them
        is a pigeonhole, which resolution alone refutes only with very long
        proofs: without a counter the solver learns it case by case. Tied to
        the counters it is propagation. Measured on the last call of a proof,
        "one card fewer than the best score" (`bench_last_call`, Glucose 4):
        deals 1, 4, 9, 13 in 7.1, 4.3, 16.0, 24.0 s against 15.9, 12.5 and
        over 120 s twice; RC2 alone with the known lines (`bench_views
        --views grid --known ...`, 30 s): 26 of deals 1-40 proven against
        23. Ties at every second or sixth slot did about as well as every
        third, ties only in the first half of the game nothing. The formula
        about doubles (median 156k clauses against 77k).

        Left out since (`build_encoding`'s ``merge_count``): the cells' count
        (`encode_cells`), which came later, follows from the same matching
        and now does its work for fewer clauses. With both, the last call on
        sixteen deals (3, 8, 25, 34, 37, 45, 48, 49, 51, 54, 4, 6, 10, 11,
        19, 23; Glucose 4, one at a time per core) took 46.9 s; without the
        merge count 28.6 s, shorter on every one of them, and "at most the
        best score" (a line from scratch) 24.7 s against 33.8 s. At every
        sixth slot 41.5 s. The calibration call keeps it: it measures the
        machine on the formula it was defined on.
        """
        layout = self.layout
        n = layout.n
        counts = self._merge_counter()
        movable = [x for x in layout.linkable() if layout.pieces[x].origin != TALON]
        for t in sorted({*range(stride, n + 1, stride), n}):
            merged = [self._merged_by(x, t - 1) for x in movable if layout.lo(x) < t]
            tally = self._exact_totalizer(merged, t, ("tally", t))
            for j in range(1, t + 1):
                if j <= len(tally):
                    self.add(-counts[t][j - 1], tally[j - 1])
                    self.add(counts[t][j - 1], -tally[j - 1])
                else:
                    self.add(-counts[t][j - 1])

    def encode_cells(self, stride: int = CELLS_STRIDE) -> None:
        """Implied: every cell holds one stack, so it has one bottom.

        Let ``c`` be the number of non-empty cells at the start. While the
        stock lasts no cell is empty (a merge empties one and refills it at
        once), and the lines the formula describes make no merge once it is
        exhausted (they drop those merges, and swaps: see "Completeness" in
        the module docstring; a real line may end with fewer stacks), so
        every model keeps ``c`` stacks from the start to the end. A stack's
        bottom is a piece in the grid that rests on nothing: a base card in
        the grid (at the bottom of its cell from the start, or drawn), or a
        non-base piece at the bottom of its cell from the start, or drawn,
        and not linked yet; and each such piece is a bottom. Grid pieces
        are linked only by merges, at the end of a slot, and the merge of
        slot ``s`` draws stock card ``s``. So at the start of every slot
        ``t < n``, and at the end (``t = n``, linked at all: ``B_x,hi``),

            #{base x : drawn by t} + #{non-base x : drawn by t & ~B_x,t-1} = c

        over the grid pieces that rest on nothing and the stock cards
        ``k < t`` ("drawn by t" is ``M_k``; grid pieces are drawn). On a
        deal (24 cells, 24 base cards, an empty talon) the end reads: as
        many stacks end without their base card as base cards stay on the
        talon. A base card dealt to the talon thus leaves some stack with
        an unlinked bottom, which the score's count of unlinked pieces sees
        at once; without this count the solver sees it only as a pigeonhole
        over the cells, case by case. The count follows by arithmetic from
        the one-to-one matching of merge slots and merged pieces in
        `encode_merges` (``c`` bottoms at the start; each merge draws one
        piece and links one), which propagation does not do.

        One exact totalizer (`_exact_totalizer`, both directions) fixed at
        ``c`` per tie, its inputs card by card, chain by chain
        (`_chain_key`), as the score counter's: a card's two copies are
        summed first. Ties at the end and at every ``stride``-th slot (as
        the merge count ties its counts at every third): the end alone made
        the last call 2-10 times shorter on most deals, the slots between
        about halved it again (docs/best-scores.md).
        """
        n = self.layout.n
        for t in sorted({*range(stride, n, stride), n}) if stride else [n]:
            self._cells_tie(t)

    def _cells_tie(self, t: int) -> None:
        """Tie the bottoms at the start of slot ``t`` (the end: ``t = n``) to
        the non-empty cells (`Layout.cells`, `encode_cells`)."""
        layout = self.layout
        keyed: list[tuple[tuple[int, int, int], int, int]] = []
        fixed = 0  # bottoms on every line: grid bases, pieces that cannot link
        for x, piece in enumerate(layout.pieces):
            if piece.origin == TALON or x in layout.resting:
                continue
            if piece.origin == STOCK and piece.index >= t:
                continue  # not drawn by then
            lit = self._bottom_literal(x, t)
            if lit == self.true:
                fixed += 1
            elif lit != -self.true:
                keyed.append((_chain_key(piece.card), x, lit))
        target = layout.cells - fixed
        if not 0 <= target <= len(keyed):  # each unfixed cell has a literal
            raise AssertionError(f"cells' count: {target} of {len(keyed)} bottoms")
        lits = [lit for *_, lit in sorted(keyed)]
        tally = self._exact_totalizer(lits, target, ("cells", t))
        if target:
            self.add(tally[target - 1])
        if len(tally) > target:
            self.add(-tally[target])

    def _bottom_literal(self, x: int, t: int) -> int:
        """Return a literal for "grid or stock piece ``x`` is a bottom at the
        start of slot ``t``" (at the end for ``t = n``)."""
        drawn = self.var_drawn(x)
        if _pred(self.layout.pieces[x].card) is None:
            return drawn
        linked = self.var_by(x, self.layout.hi(x) if t == self.layout.n else t - 1)
        if drawn == self.true or linked == self.true:
            return -linked
        if linked == -self.true:
            return drawn
        both = self.pool.id(("bottom-at", x, t))
        self.add(-both, drawn)
        self.add(-both, -linked)
        self.add(both, -drawn, linked)
        return both

    def _merge_counter(self) -> list[list[int]]:
        """Return ``C``: ``C[t][j-1]`` is "at least ``j`` merges before slot ``t``"."""
        n = self.layout.n
        counts: list[list[int]] = [[]]
        for t in range(n):
            merge, before = self.var_merge(t), counts[t]
            now = [self.pool.id(("merges", t + 1, j)) for j in range(1, t + 2)]
            for j, lit in enumerate(now, start=1):
                kept = before[j - 1] if j <= t else -self.true
                grown = before[j - 2] if j >= 2 else self.true
                self.add(-kept, lit)
                self.add(-grown, -merge, lit)
                self.add(-lit, kept, grown)
                self.add(-lit, kept, merge)
            counts.append(now)
        return counts

    def _merged_by(self, x: int, t: int) -> int:
        """Return a literal for "piece ``x`` was merged in slot ``t`` or earlier"."""
        linked, drawn = self.var_by(x, t), self.var_drawn(x)
        if drawn == self.true or linked == -self.true:
            return linked
        both = self.pool.id(("merged", x, t))
        self.add(-both, linked)
        self.add(-both, drawn)
        self.add(both, -linked, -drawn)
        return both

    def win_literals(self) -> list[int]:
        """Return the literals that together say "this line wins".

        Every non-base piece is linked (``B_x,hi``) and every base card is drawn
        into the grid, never dealt: a base card on the talon never leaves it.
        """
        layout, units = self.layout, []
        for x, piece in enumerate(layout.pieces):
            if _pred(piece.card) is None:
                unit = self.var_drawn(x)
            else:
                unit = self.var_by(x, layout.hi(x))
            if unit != self.true:
                units.append(unit)
        return units

    def encode_win(self) -> None:
        """A win: the `win_literals` as unit clauses.

        Also implied, and stated to help the solver: every uncovered piece that
        is not a J, Q or K carries a piece in the end.
        """
        layout = self.layout
        for unit in self.win_literals():
            self.add(unit)
        covered = set(layout.resting.values())
        for y, piece in enumerate(layout.pieces):
            if piece.card.rank not in dg.TOP_RANKS and y not in covered:
                self.add(*(self.var_link(x, y) for x in layout.sources.get(y, ())))

    def encode_score(self) -> None:
        """Prepare the score count: the talon keeps ``m + n - links`` cards.

        Every card that goes to the talon (the ``m`` there at the start, and
        each of the ``n`` stock cards not drawn by a merge) stays unless it is
        played, and every merge draws exactly one card; so the cards left
        number ``m + n - merges - plays``, and merges and plays are exactly the
        links made. The bound therefore counts unlinked pieces (``~B_x,hi``):
        ``score = score_offset + #unlinked`` with ``score_offset = m + n -
        #linkable``. Counting links rather than talon cards lets the count
        propagate straight into the link variables.
        """
        layout = self.layout
        linkable = layout.linkable()
        self.unlinked = [-self.var_by(x, layout.hi(x)) for x in linkable]
        self.score_offset = layout.m + layout.n - len(linkable)
        chained = sorted(linkable, key=lambda x: _chain_key(layout.pieces[x].card))
        self._counted = [-self.var_by(x, layout.hi(x)) for x in chained]

    def encode_grid_view(self) -> None:
        """Prepare the grid view of the score: what the grid lacks at the end.

        Every line keeps its cells non-empty (merges only happen while the
        stock lasts, and each refills its cell), and a cell's stack is one run
        of a chain, bottom ``b`` to top ``t``, of ``4 - SA(t) - SB(b)`` cards:
        ``SA(t) = (13 - rank t) // 3`` chain cards are missing above the top,
        ``SB(b) = (rank b - 2) // 3`` below the bottom. The talon keeps what
        the grid does not hold, so

            score = cards - 4 * cells + sum over cells (SA(top) + SB(bottom))

        (``cards`` and ``cells`` counted at the start: ``grid_offset``). Tops
        and bottoms get literals: ``open_y`` is forced true when ``y`` stands
        in the grid and nothing ends on it,
        ``~in_grid(y) | OR_x L_xy | open_y``; ``bottom_y`` when ``y`` was
        drawn and nothing holds it, ``~drawn(y) | B_y,hi | bottom_y``. So a
        line's cost ``sum SA * open + sum SB * bottom`` (`grid_terms`) is at
        least its score, and exactly its score when no literal is needlessly
        true: the least cost over all models is the best score, as with the
        unlinked count, but the cores a MaxSAT solver finds differ (they name
        stacks left short, not cards left out), and on many deals they come
        much faster (see `devils_grip_score`). J, Q, K tops and base bottoms
        weigh 0 and get no literal.

        The terms come card by card, chain by chain (`_chain_key`), as the
        score counter's inputs do. RC2 hands them to its oracle as assumptions
        in this order; Glucose reports a core by walking its trail back, so
        the core keeps the assumed order (reversed), and RC2 sums each core
        with a totalizer in that order (sorted by weight only): a card's two
        interchangeable copies tend to be summed first, as in the counter.
        That is the likely mechanism; the measurement is the reason. RC2 alone
        on this view with the known lines, deals 1-40 at 30 s (`bench_views
        --views grid --known ...`, two runs side by side): 23 proven against
        22 in piece order, bounds summing 413 against 410 (never lower on a
        deal), the 22 common proofs in 172 s against 196 s. Same literals,
        same clauses, same least cost.
        """
        layout = self.layout
        covered = set(layout.resting.values())
        resting = set(layout.resting)
        self.grid_offset = len(layout.pieces) - 4 * layout.cells
        terms: list[tuple[tuple[int, ...], tuple[int, int]]] = []  # (sort key, term)
        for y, piece in enumerate(layout.pieces):
            rank = piece.card.rank
            above, below = (13 - rank) // 3, (rank - 2) // 3
            linked = self.var_by(y, layout.hi(y)) if below and y not in resting else 0
            if above and y not in covered:
                top = self.var_open(y)
                carries = [self.var_link(x, y) for x in layout.sources.get(y, ())]
                self.add(-self.var_drawn(y), *carries, top)
                if linked:
                    self.add(-linked, *carries, top)
                terms.append(((*_chain_key(piece.card), 0, y), (top, above)))
            if linked and piece.origin != TALON:
                bottom = self.var_bottom(y)
                self.add(-self.var_drawn(y), linked, bottom)
                terms.append(((*_chain_key(piece.card), 1, y), (bottom, below)))
        self.grid_terms.extend(term for _, term in sorted(terms))

    # -- cardinality helpers ----------------------------------------------------------
    def _at_most_one_pairwise(self, lits: Sequence[int]) -> None:
        for i, a in enumerate(lits):
            for b in lits[i + 1 :]:
                self.add(-a, -b)

    def _at_most_one_sequential(self, lits: Sequence[int], key: Any) -> None:
        """Sinz's sequential counter: ``s_i`` = one of the first ``i+1`` is true."""
        if len(lits) < 5:
            self._at_most_one_pairwise(lits)
            return
        prev = None
        for i, lit in enumerate(lits):
            if prev is not None:
                self.add(-lit, -prev)
            if i == len(lits) - 1:
                break
            seen = self.pool.id((*key, i))
            self.add(-lit, seen)
            if prev is not None:
                self.add(-prev, seen)
            prev = seen

    def _exact_totalizer(self, lits: Sequence[int], ubound: int, key: Any) -> list[int]:
        """Return ``o``: ``o[r-1]`` true iff at least ``r`` of ``lits`` are true.

        A totalizer with clauses in both directions (pysat's counts upward
        only), its outputs cut at ``ubound + 1`` ("more than ``ubound``").
        Each node sums two children ``a`` and ``b`` into ``R`` outputs:
        ``a_i & b_j -> o_min(i+j, R)`` and ``~a_i+1 & ~b_j+1 -> ~o_i+j+1``
        for ``i + j < R``. A child's ``a_i+1`` past its last output is false
        when the child is not cut, and never needed when it is (then
        ``i + j < R <= ubound + 1`` = its width).
        """
        queue = [[lit] for lit in lits]
        clauses, node = self.clauses, 0  # no constants among the literals
        while len(queue) > 1:
            a, b = queue.pop(0), queue.pop(0)
            width = min(len(a) + len(b), ubound + 1)
            node += 1
            out = [self.pool.id((*key, node, r)) for r in range(1, width + 1)]
            up_a, up_b = [[]] + [[-lit] for lit in a], [[]] + [[-lit] for lit in b]
            down_a = [[lit] for lit in a] + [[]]
            down_b = [[lit] for lit in b] + [[]]
            for i in range(len(a) + 1):
                for j in range(len(b) + 1):
                    if i + j:
                        clauses.append(up_a[i] + up_b[j] + [out[min(i + j, width) - 1]])
                    if i + j < width:
                        clauses.append(down_a[i] + down_b[j] + [-out[i + j]])
            queue.append(out)
        return queue[0] if queue else []

    def add_score_bound(self, bound: int | None, ubound: int) -> ITotalizer | None:
        """Add a totalizer over the unlinked pieces, counting up to ``ubound``.

        Its ``rhs[k]`` false means "at most ``k`` unlinked", i.e. a score of at
        most ``score_offset + k``. With ``bound`` set, also add the unit "score
        at most ``bound``". Returns None when there is nothing to count.
        """
        if bound is not None and bound < self.score_offset:
            self.add(-self.true)
        if not self.unlinked:
            return None
        tot = self._totalizer(ubound)
        self.clauses.extend(list(c) for c in tot.cnf.clauses)
        if bound is not None:
            k = bound - self.score_offset
            if 0 <= k < len(tot.rhs):
                self.add(-tot.rhs[k])
        return tot

    def score_below(self, limit: int) -> ScoreBelow:
        """Return hard clauses whose models are exactly those of score below ``limit``.

        "At most ``limit - 1 - score_offset`` unlinked" on a fresh totalizer
        (its variables are taken from the pool). The clauses are returned,
        not added: the caller restricts one search with them, and ``clauses``
        keeps describing every line. The unlinked count is exact for every
        model (`encode_score`), so no model of a line below ``limit`` is cut.
        """
        k = limit - 1 - self.score_offset
        if k < 0 or not self.unlinked:
            below = ScoreBelow([], (), self.score_offset, self.true)
        else:
            tot = self._totalizer(k + 1)
            below = ScoreBelow(
                [list(c) for c in tot.cnf.clauses],
                tuple(tot.rhs),
                self.score_offset,
                self.true,
            )
            tot.delete()
        unit = below.unit(limit)
        if unit is not None:
            below.clauses.append(unit)
        return below

    def score_ceiling(self) -> int:
        """Return a limit no line reaches: every piece left unlinked, plus one.

        `score_below` of it restricts nothing yet (its counter spans every
        piece; about 3k clauses on a whole deal), and any line's score lowers
        it by one unit clause (`ScoreBelow.unit`).
        """
        return self.score_offset + len(self.unlinked) + 1

    def _totalizer(self, ubound: int) -> ITotalizer:
        """Return a totalizer over the unlinked pieces, its ids taken from the pool.

        The pieces are counted card by card, chain by chain (`_chain_key`).
        pysat's totalizer is built bottom-up, each node summing the next two in
        a queue, so its first level sums neighbours: in this order the two
        copies of one card, which are interchangeable; the next level two
        neighbouring cards, mostly of one chain. "Both copies of the 5 of spades
        unlinked" is a count a solver can learn from whichever copy a line uses.
        Measured with RC2 alone on the short-stacks view with the known lines,
        deals 1-40, 30 s each (`bench_views --views grid --known ...`): 22
        proven against 21 in piece order (grid first, then the stock in order,
        copies apart) and 21 in a random order; bounds summing 410 against 403
        and 402, never lower on any deal; the 20 deals all three prove in 146 s
        against 181 s and 196 s. Rank by rank (copies together, then the same
        rank's other suits): 23 proven, 408, 169 s. So what the two good orders
        share, the copies side by side, is what helps. The order changes neither
        the formula's size nor its models.
        """
        ubound = max(1, min(ubound, len(self._counted)))
        tot = ITotalizer(lits=self._counted, ubound=ubound, top_id=self.pool.top)
        self.pool.occupy(self.pool.top + 1, tot.top_id)
        self.pool.top = tot.top_id
        return tot


@dataclass(frozen=True)
class ScoreBelow:
    """Hard clauses that admit only the models of score below a limit.

    ``outputs[k]`` is true when more than ``k`` pieces stay unlinked, so a
    lower limit on the same counter is one more unit clause (`unit`): a
    search restricted this way can be tightened while it runs, with no new
    variables.
    """

    clauses: list[list[int]]
    outputs: tuple[int, ...]
    offset: int
    true: int

    def unit(self, limit: int) -> list[int] | None:
        """Return the unit clause "score below ``limit``", or None if implied.

        The counter is built up to the first limit (or to every piece), so a
        limit past its outputs is implied by the clauses in place; with no
        outputs there is nothing to count, or the first limit already left
        no model.
        """
        k = limit - 1 - self.offset
        if k < 0:
            return [-self.true]
        if k >= len(self.outputs):
            return None
        return [-self.outputs[k]]


# -- building --------------------------------------------------------------------------
@cycles_uncollected()
def build_encoding(
    state: dg.State,
    question: Question,
    *,
    dominance: bool | None = None,
    cells: bool = True,
    merge_count: bool = False,
) -> Encoding:
    """Return the encoding of ``state`` (no score bound yet).

    VERDICT: the win constraints, with the win literals substituted as
    constants (a smaller formula, refuted by propagation for most deals).
    SCORE: the score count is prepared. ``dominance`` adds the
    without-loss-of-generality restrictions, which keep the best score and the
    verdict but not every line; by default only for SCORE, where they pay
    (for verdicts they only cost time, and without them UNSAT reads directly
    "no line wins"). ``cells=False`` leaves `Encoding.encode_cells` out of a
    SCORE formula and ``merge_count=True`` adds `Encoding.encode_merge_count`
    to it: the machine's calibration keeps the formula it was defined on
    (`patience_encodings.calibration`); the merge count, implied and once a
    gain, now only slows the calls (its docstring has the figures).

    The cycle collector is paused while it runs: the build allocates over
    100,000 clause lists and keeps them all, so each burst made the
    collector walk the survivors again. Deals 1-20 in one process: median
    0.15 s with it, 0.12 s without; in a prover child, which freezes what it
    inherits (`processes.start_child`), deals 1-200: 0.132 s against 0.119 s
    (`docs/best-scores.md`).
    """
    win = question is Question.VERDICT
    if dominance is None:
        dominance = not win
    enc = Encoding(layout_of(state), dominance=dominance, win=win)
    enc.encode_path()
    enc.encode_links()
    enc.encode_link_times()
    enc.encode_targets()
    enc.encode_merges()
    enc.encode_talon_order()
    if win:
        enc.encode_win()
    else:
        enc.encode_seals()
        enc.encode_score()
        if merge_count:
            enc.encode_merge_count()
        if cells:
            enc.encode_cells()
    if dominance:
        enc.encode_eager()
        enc.encode_copies()
        enc.encode_merge_order()
        enc.encode_merge_copies()
    return enc


def build_cnf(
    state: dg.State,
    question: Question = Question.VERDICT,
    bound: int | None = None,
    *,
    dominance: bool | None = None,
) -> tuple[CNF, Encoding]:
    """Return the CNF for ``question`` about ``state``, and its encoding.

    VERDICT: satisfiable iff some line wins. SCORE with ``bound`` k:
    satisfiable iff some line ends with at most k cards in the talon (a
    totalizer over the unlinked pieces; ``bound=None`` leaves the score
    free). ``dominance`` as in `build_encoding` (by default on for SCORE:
    then "some line" reads "some line in normal form", which exists whenever
    any line does). The same input gives the same clauses in the same order.
    """
    enc = build_encoding(state, question, dominance=dominance)
    if question is Question.SCORE and bound is not None:
        enc.add_score_bound(bound, bound - enc.score_offset)
    cnf = CNF()
    cnf.clauses, cnf.nv = enc.clauses, enc.pool.top  # shared, not deep-copied
    return cnf, enc
