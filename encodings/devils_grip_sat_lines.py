"""Between models and lines: `decode` a model, `line_assignment` of a line.

`decode` is the soundness half of the encoding's exactness argument: every
model becomes moves, each checked by the reference engine as it is made.
`line_assignment` is the completeness half, made testable: it replays a real
line (any legal line, swaps and late merges included) and returns the value
every semantic variable takes on it; the tests check that these values
satisfy the formula (without the dominance restrictions, which keep the
optimum but not every line).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from verifier import devils_grip as dg

from .devils_grip_sat_cnf import GRID, STOCK, Encoding, Layout


def decode(enc: Encoding, model: Iterable[int]) -> list[dg.Move]:
    """Return the moves of a model, slot by slot, checked as they are made.

    In each visited slot: the talon plays, top card first, then the merge
    (of the one piece with ``S_xt``) or the deal. Raises `DecodeError` when
    the model does not describe legal moves (that would be an encoding bug).
    """
    return _Decoder(enc, {lit for lit in model if lit > 0}).moves()


class DecodeError(AssertionError):
    """A model does not decode to a legal line: the encoding is wrong."""


class _Decoder:
    """Turns a model into moves, tracking which cell holds which piece.

    Every move is checked as it is made: the reference engine must find it
    legal, and the cards it moves must be the pieces the model names.
    """

    def __init__(self, enc: Encoding, true: set[int]) -> None:
        self.enc, self.layout, self.true = enc, enc.layout, true
        self.state = enc.layout.state
        self.cell_of = {
            x: p.index for x, p in enumerate(self.layout.pieces) if p.origin == GRID
        }
        self.out: list[dg.Move] = []

    def val(self, lit: int) -> bool:
        if abs(lit) == self.enc.true:
            return lit > 0
        return (lit in self.true) if lit > 0 else (-lit not in self.true)

    def link_time(self, x: int) -> int | None:
        layout = self.layout
        for t in range(layout.lo(x), layout.hi(x) + 1):
            if self.val(self.enc.var_by(x, t)):
                return t
        return None

    def target(self, x: int) -> int:
        ys = [y for y in self.layout.targets[x] if self.val(self.enc.var_link(x, y))]
        if len(ys) != 1:
            raise DecodeError(f"piece {x} is linked to {len(ys)} targets")
        return ys[0]

    def play(self, move: dg.Move, moved: int, onto: int) -> None:
        pieces, state = self.layout.pieces, self.state
        reason = dg.illegal_reason(state, move)
        if reason:
            raise DecodeError(f"decoded {dg.format_move(move)} is illegal: {reason}")
        if isinstance(move, dg.TalonPlay):
            card = state.talon[-1]
        else:
            card = state.grid[move.src][0]
        dst = move.dst
        if card != pieces[moved].card or state.grid[dst][-1] != pieces[onto].card:
            raise DecodeError(f"decoded {dg.format_move(move)} moves other cards")
        self.state = dg.apply(state, move)
        self.out.append(move)

    def moves(self) -> list[dg.Move]:
        enc, layout = self.enc, self.layout
        times = {x: self.link_time(x) for x in layout.linkable()}
        drawn = {x for x in times if self.val(enc.var_drawn(x))}
        t = 0
        while True:
            plays = [x for x, tx in times.items() if tx == t and x not in drawn]
            for x in sorted(plays, key=layout.tpos, reverse=True):
                y = self.target(x)
                self.play(dg.TalonPlay(self.cell_of[y]), x, y)
                self.cell_of[x] = self.cell_of[y]
            if t == layout.n:
                return self.out
            if self.val(enc.var_merge(t)):
                bottoms = [x for x, tx in times.items() if tx == t and x in drawn]
                if len(bottoms) != 1:
                    raise DecodeError(f"slot {t}: {len(bottoms)} merge sources")
                self._merge(bottoms[0], t)
                t += 1
            elif self.val(enc.var_deal(t)):
                self.state = dg.apply(self.state, dg.DEAL)
                self.out.append(dg.DEAL)
                t = min(t + 3, layout.n)
            else:
                raise DecodeError(f"slot {t} is visited but has no event")

    def _merge(self, x: int, t: int) -> None:
        y = self.target(x)
        src, dst = self.cell_of[x], self.cell_of[y]
        moved = [z for z, c in self.cell_of.items() if c == src]
        self.play(dg.Merge(src, dst), x, y)
        for z in moved:
            self.cell_of[z] = dst
        self.cell_of[self.layout.stock[t]] = src


# -- lines to assignments ------------------------------------------------------------
@dataclass
class Trace:
    """What a line does, in the encoding's terms.

    ``events``: slot -> ``"merge"`` or ``"deal"``; ``slot_of``: piece -> the
    slot of its link; ``onto``: piece -> the piece it was linked onto;
    ``merged``: pieces linked by a merge.
    """

    events: dict[int, str] = field(default_factory=dict)
    slot_of: dict[int, int] = field(default_factory=dict)
    onto: dict[int, int] = field(default_factory=dict)
    merged: set[int] = field(default_factory=set)


def trace_line(layout: Layout, moves: Sequence[dg.Move]) -> Trace:
    """Replay ``moves`` with piece bookkeeping; return the `Trace`.

    Swaps only permute cells; merges after the stock is exhausted are not
    part of the model (they only cover a top) and are left out of the trace.
    """
    state = layout.state
    cells: list[list[int]] = [[] for _ in range(dg.CELLS)]
    talon: list[int] = []
    for x, piece in enumerate(layout.pieces):
        if piece.origin == GRID:
            cells[piece.index].append(x)
        elif piece.origin != STOCK:
            talon.append(x)
    trace, t, n = Trace(), 0, layout.n
    for move in moves:
        state = dg.apply(state, move)  # raises on an illegal line
        match move:
            case dg.Swap(a, b):
                cells[a], cells[b] = cells[b], cells[a]
            case dg.Merge(src, dst):
                x, y = cells[src][0], cells[dst][-1]
                cells[dst] += cells[src]
                cells[src] = [layout.stock[t]] if t < n else []
                if t < n:
                    trace.events[t] = "merge"
                    trace.slot_of[x], trace.onto[x] = t, y
                    trace.merged.add(x)
                    t += 1
            case dg.DealMove():
                trace.events[t] = "deal"
                talon += layout.stock[t : t + dg.PACKET]
                t = min(t + dg.PACKET, n)
            case dg.TalonPlay(dst):
                x, y = talon.pop(), cells[dst][-1]
                cells[dst].append(x)
                trace.slot_of[x], trace.onto[x] = t, y
    return trace


def visited_slots(n: int, events: dict[int, str]) -> set[int]:
    """Return the slots the pointer stops at, given the events of a line.

    Slot 0 and slot ``n`` always; after a merge in slot ``t``, ``t + 1``;
    after a deal, ``min(t + 3, n)``.
    """
    visited = {0, n}
    for t, kind in events.items():
        visited.add(t + 1 if kind == "merge" else min(t + dg.PACKET, n))
    return visited


def line_assignment(enc: Encoding, moves: Sequence[dg.Move]) -> dict[int, bool]:
    """Return the value of every semantic variable of ``enc`` on a real line.

    Auxiliary variables (counters, totalizer, merge order) are left out: the
    caller lets a solver extend the assignment, or shows it cannot.
    """
    layout, trace = enc.layout, trace_line(enc.layout, moves)
    visited = visited_slots(layout.n, trace.events)
    drawn = {layout.stock[t] for t, kind in trace.events.items() if kind == "merge"}

    def gone(z: int, t: int) -> bool:
        return z in drawn or trace.slot_of.get(z, layout.n + 1) <= t

    values: dict[int, bool] = {}
    for key, var in enc.pool.obj2id.items():
        match key:
            case ("visit", t):
                values[var] = t in visited
            case ("merge", t) | ("deal", t):
                values[var] = trace.events.get(t) == key[0]
            case ("link", x, y):
                values[var] = trace.onto.get(x) == y
            case ("by", x, t):
                values[var] = trace.slot_of.get(x, layout.n + 1) <= t
            case ("source", x, t):
                values[var] = x in trace.merged and trace.slot_of[x] == t
            case ("clear", p, t):
                above = layout.talon_seq[p + 1 : layout.m + t]
                values[var] = all(gone(z, t) for z in above)
    return values
