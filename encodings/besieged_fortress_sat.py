"""Besieged Fortress as bounded-horizon SAT: find wins, and dead ends only when sound.

**Objects.** The cards ``X`` still in the rows, the 8 row bottoms ``base_r``,
and ``home``. A card's *domain* ``D(x)`` is where it can lie: its initial
support ``p0(x)`` (the card or bottom beneath it at the start), any card of
``X`` one rank higher, any bottom, and ``home``. A card never returns onto
``p0(x)`` unless ``p0(x)`` is one of its legal targets, so ``D(x)`` is small.

**Variables** (one `IDPool`, tuple keys):

- ``on(x, y, t)``: at time ``t`` card ``x`` lies directly on ``y ∈ D(x)``;
- ``mv(x, y, t)``: between ``t`` and ``t + 1`` card ``x`` moves onto ``y``, a
  legal target (a card one rank higher, a bottom, or ``home``);
- ``moved(x, t)``: card ``x`` moves between ``t`` and ``t + 1``;
- ``goal(T)``: the activation literal of the goal at horizon ``T``.

**Steps are parallel (∀-step semantics).** Several moves may share a step when
they do not interfere: no card moves twice, no two cards go onto the same
target, and a card that moves is nobody's target. Then every order of the
step's moves is legal in the rules (a move only ever *frees* its source and
*covers* its own target), so `decode` serialises a step in any order and the
rules engine replays it. Sequential lines are the special case of one move a
step, so a win exists within ``T`` sequential moves only if one exists within
``T`` parallel steps; steps may also be empty, so horizons are monotone.

**Goal.** The position is *sorted* (every row descends outwards), which the
rules engine finishes by foundation moves alone (`finishing_moves`). A row
move never creates a rising pair, and the only rising pairs that can exist are
initial ones ``x`` on ``p0(x)`` with ``rank(p0(x)) < rank(x)``; ``x`` never
returns there. So ``sorted(T) ≡ ⋀ ¬on(x, p0(x), T)`` over those ``x``.

**What a dead-end proof by SAT needs.** "No win within ``T`` steps" says
nothing about longer lines, and the state graph has cycles, so no count of
moves bounds a shortest win by itself. A sound bound is the *recurrence
diameter* ``d``: the length of the longest loop-free path from the start. A
shortest path to any reachable position is loop-free, so it has at most ``d``
steps; if no sorted position lies within ``d`` steps, none is reachable at
all. We bound ``d`` by SAT too (as in k-induction's completeness threshold):
if no loop-free path of ``k + 1`` steps exists (pairwise distinct positions),
then ``d ≤ k``. Both questions grow incrementally with ``k``; when the win
query at ``k`` and the path query at ``k + 1`` are both UNSAT, the position is
proven lost. The path query needs ``O(k²)`` distinctness constraints and ``d``
grows like the number of reachable positions, so this is practical only for
small positions (a few cards in the rows): for those the prover tries it, for
whole deals it answers ``unknown`` when no win is found, never ``lost``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from pysat.formula import IDPool
from pysat.solvers import Solver

from verifier import besieged_fortress as bf
from verifier.cards import Card
from verifier.results import (
    ProofResult,
    Question,
    Status,
    check_question,
    check_result,
)

ENGINE = "sat"
SOLVER = "cadical195"
HOME = "home"
#: Conflicts per solver call between two looks at the clock.
CONFLICT_SLICE = 2_000
#: Positions with at most this many cards in the rows also get the path query.
DIAMETER_CARDS = 20
#: Horizon at which the prover gives up (parallel steps).
MAX_HORIZON = 200

Obj = Any  # a Card, ("base", r) or HOME


def base(row: int) -> tuple[str, int]:
    """Return the object naming the bottom of row ``row``."""
    return ("base", row)


class Encoding:
    """The unrolled transition system of one position, horizon by horizon."""

    def __init__(self, state: bf.State) -> None:
        self.state = state
        self.pool = IDPool()
        self.cards: list[Card] = [c for row in state.rows for c in row]
        self.start: dict[Card, Obj] = {}
        for r, row in enumerate(state.rows):
            below: Obj = base(r)
            for card in row:
                self.start[card] = below
                below = card
        present = set(self.cards)
        self.targets: dict[Card, list[Obj]] = {
            x: [
                *(y for y in self.cards if y.rank == x.rank + 1),
                *(base(r) for r in range(bf.ROWS)),
                HOME,
            ]
            for x in self.cards
        }
        self.domain: dict[Card, list[Obj]] = {
            x: list(dict.fromkeys([self.start[x], *self.targets[x]]))
            for x in self.cards
        }
        #: for each object, the cards that can lie on it (its "coverers")
        self.coverers: dict[Obj, list[Card]] = {}
        for x in self.cards:
            for y in self.domain[x]:
                self.coverers.setdefault(y, []).append(x)
        self.pred_home = {
            x: Card(x.rank - 1, x.suit) not in present for x in self.cards
        }
        self.rising = [
            x
            for x in self.cards
            if isinstance(self.start[x], Card) and self.start[x].rank < x.rank
        ]
        self.horizon = 0

    # -- variables ---------------------------------------------------------------
    def var_on(self, x: Card, y: Obj, t: int) -> int:
        """``on(x, y, t)``: card ``x`` lies directly on ``y`` at time ``t``."""
        return self.pool.id(("on", x, y, t))

    def var_mv(self, x: Card, y: Obj, t: int) -> int:
        """``mv(x, y, t)``: card ``x`` moves onto ``y`` between ``t`` and ``t + 1``."""
        return self.pool.id(("mv", x, y, t))

    def var_moved(self, x: Card, t: int) -> int:
        """``moved(x, t)``: card ``x`` moves between ``t`` and ``t + 1``."""
        return self.pool.id(("moved", x, t))

    def var_goal(self, t: int) -> int:
        """``goal(t)``: activation literal of "sorted at time ``t``"."""
        return self.pool.id(("goal", t))

    # -- constraint families -----------------------------------------------------------
    def initial(self) -> list[list[int]]:
        """``on(x, p0(x), 0)`` and ``¬on(x, y, 0)`` for every other ``y ∈ D(x)``."""
        return [
            [self.var_on(x, y, 0) if y == self.start[x] else -self.var_on(x, y, 0)]
            for x in self.cards
            for y in self.domain[x]
        ]

    def exactly_one_place(self, t: int) -> list[list[int]]:
        """``Σ_{y ∈ D(x)} on(x, y, t) = 1`` for every card (pairwise AMO)."""
        clauses = []
        for x in self.cards:
            lits = [self.var_on(x, y, t) for y in self.domain[x]]
            clauses.append(lits)
            clauses += [[-a, -b] for i, a in enumerate(lits) for b in lits[i + 1 :]]
        return clauses

    def clear(self, obj: Obj, t: int, because: int) -> list[list[int]]:
        """``because → ¬on(z, obj, t)`` for every card ``z`` that can cover ``obj``."""
        return [[-because, -self.var_on(z, obj, t)] for z in self.coverers.get(obj, [])]

    def preconditions(self, t: int) -> list[list[int]]:
        """What a move needs at ``t``.

        ``mv(x, y, t) → ¬on(x, home, t) ∧ clear(x, t)``, and by target:
        a card ``y``: ``¬on(y, home, t) ∧ clear(y, t)``; a bottom: the row is
        empty, ``clear(base_r, t)``; ``home``: ``on(pred(x), home, t)`` unless
        the predecessor was home from the start.
        """
        clauses: list[list[int]] = []
        for x in self.cards:
            for y in self.targets[x]:
                m = self.var_mv(x, y, t)
                clauses.append([-m, -self.var_on(x, HOME, t)])
                clauses += self.clear(x, t, m)
                if y == HOME:
                    if not self.pred_home[x]:
                        pred = Card(x.rank - 1, x.suit)
                        clauses.append([-m, self.var_on(pred, HOME, t)])
                elif isinstance(y, Card):
                    clauses.append([-m, -self.var_on(y, HOME, t)])
                    clauses += self.clear(y, t, m)
                else:
                    clauses += self.clear(y, t, m)
        return clauses

    def effects_and_frame(self, t: int) -> list[list[int]]:
        """Effects and explanatory frame axioms between ``t`` and ``t + 1``.

        ``mv(x, y, t) → on(x, y, t+1)``;
        ``on(x, y, t) ∧ ¬on(x, y, t+1) → moved(x, t)``;
        ``¬on(x, y, t) ∧ on(x, y, t+1) → mv(x, y, t)`` (false for ``p0(x)``
        when it is no legal target: the card never returns there);
        ``moved(x, t) ↔ ⋁_y mv(x, y, t)``.
        """
        clauses: list[list[int]] = []
        for x in self.cards:
            moved = self.var_moved(x, t)
            mvs = [self.var_mv(x, y, t) for y in self.targets[x]]
            clauses.append([-moved, *mvs])
            clauses += [[-m, moved] for m in mvs]
            for y in self.domain[x]:
                now, nxt = self.var_on(x, y, t), self.var_on(x, y, t + 1)
                clauses.append([-now, nxt, moved])
                if y in self.targets[x]:
                    m = self.var_mv(x, y, t)
                    clauses.append([-m, nxt])
                    clauses.append([now, -nxt, m])
                else:
                    clauses.append([now, -nxt])
        return clauses

    def non_interference(self, t: int) -> list[list[int]]:
        """Moves sharing a step commute.

        At most one card goes onto each card or bottom (pairwise AMO over
        ``mv(·, y, t)``), and a card that moves is no target:
        ``moved(y, t) → ¬mv(z, y, t)``.
        """
        clauses: list[list[int]] = []
        for y, zs in self.coverers.items():
            if y == HOME:
                continue
            lits = [self.var_mv(z, y, t) for z in zs if y in self.targets[z]]
            clauses += [[-a, -b] for i, a in enumerate(lits) for b in lits[i + 1 :]]
            if isinstance(y, Card):
                clauses += [[-self.var_moved(y, t), -lit] for lit in lits]
        return clauses

    def goal(self, t: int) -> list[list[int]]:
        """``goal(t) → ¬on(x, p0(x), t)`` for each card on a lower card at the start."""
        g = self.var_goal(t)
        return [[-g, -self.var_on(x, self.start[x], t)] for x in self.rising]

    def first_clauses(self) -> list[list[int]]:
        """Return the clauses of time 0: the start and its places."""
        return self.initial() + self.exactly_one_place(0)

    def step_clauses(self, t: int) -> list[list[int]]:
        """Return the clauses that add step ``t → t + 1``."""
        return (
            self.exactly_one_place(t + 1)
            + self.preconditions(t)
            + self.effects_and_frame(t)
            + self.non_interference(t)
        )

    def distinct(self, i: int, j: int) -> list[list[int]]:
        """Positions ``i`` and ``j`` differ: ``⋁ e``, ``e → on(x,y,i) ∧ ¬on(x,y,j)``.

        Each card lies in exactly one place, so two positions differ exactly
        when some card lies somewhere at ``i`` and not there at ``j``.
        """
        clauses: list[list[int]] = []
        witnesses = []
        for x in self.cards:
            for y in self.domain[x]:
                e = self.pool.id(("diff", i, j, x, y))
                witnesses.append(e)
                clauses.append([-e, self.var_on(x, y, i)])
                clauses.append([-e, -self.var_on(x, y, j)])
        clauses.append(witnesses)
        return clauses

    # -- decoding ----------------------------------------------------------------------
    def decode(self, model: Iterable[int], horizon: int) -> list[bf.Move]:
        """Return the rules engine's line for a model, step by step.

        Each step's moves are serialised in the model's order (any order is
        legal, see the module docstring) and applied with the rules engine,
        which raises if the model lies.
        """
        true = {lit for lit in model if lit > 0}
        line: list[bf.Move] = []
        state = self.state
        for t in range(horizon):
            for x in self.cards:
                for y in self.targets[x]:
                    if self.var_mv(x, y, t) in true:
                        move = to_move(state, x, y)
                        state = bf.apply(state, move)
                        line.append(move)
        return line


def row_of(state: bf.State, card: Card) -> int:
    """Return the row that holds ``card``."""
    return next(r for r, row in enumerate(state.rows) if card in row)


def to_move(state: bf.State, card: Card, target: Obj) -> bf.Move:
    """Return the engine move that puts ``card`` onto ``target`` in ``state``."""
    src = row_of(state, card)
    if target == HOME:
        return bf.HomeMove(src)
    if isinstance(target, Card):
        return bf.RowMove(src, row_of(state, target))
    return bf.RowMove(src, target[1])


class Budget:
    """Solve in conflict slices, looking at the clock in between."""

    def __init__(self, deadline: float | None) -> None:
        self.deadline = deadline
        self.expired = False

    def solve(self, solver: Solver, assumptions: list[int]) -> bool | None:
        """Return the solver's answer, or None when the deadline passed."""
        while True:
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.expired = True
                return None
            solver.conf_budget(CONFLICT_SLICE)
            answer = solver.solve_limited(assumptions=assumptions)
            if answer is not None:
                return answer


def search(
    state: bf.State, deadline: float | None, max_horizon: int = MAX_HORIZON
) -> tuple[str, list[bf.Move], int, str]:
    """Run the incremental horizon loop; return (status, line, horizon, method)."""
    enc = Encoding(state)
    if not enc.rising:
        return "won", [], 0, "sorted at the start"
    budget = Budget(deadline)
    small = len(enc.cards) <= DIAMETER_CARDS
    with Solver(name=SOLVER, bootstrap_with=enc.first_clauses()) as wins:
        paths = (
            Solver(name=SOLVER, bootstrap_with=enc.first_clauses()) if small else None
        )
        try:
            for t in range(max_horizon):
                step = enc.step_clauses(t)
                wins.append_formula(step + enc.goal(t + 1))
                answer = budget.solve(wins, [enc.var_goal(t + 1)])
                if answer is None:
                    return "unknown", [], t, "time limit"
                if answer:
                    return "won", enc.decode(wins.get_model(), t + 1), t + 1, ""
                if paths is not None:
                    paths.append_formula(step)
                    for i in range(t + 1):
                        paths.append_formula(enc.distinct(i, t + 1))
                    longer = budget.solve(paths, [])
                    if longer is None:
                        return "unknown", [], t + 1, "time limit"
                    if not longer:
                        return "lost", [], t + 1, diameter_method(t + 1)
        finally:
            if paths is not None:
                paths.delete()
    return "unknown", [], max_horizon, f"no win within {max_horizon} steps"


def diameter_method(k: int) -> str:
    """Say how a dead end was proven at horizon ``k``."""
    return (
        f"UNSAT: no sorted position within {k} steps, and no loop-free path of "
        f"{k} steps (recurrence diameter ≤ {k - 1})"
    )


def prove(
    state: bf.State,
    *,
    question: Question = Question.VERDICT,
    time_limit: float | None = None,
) -> ProofResult:
    """Find a win by SAT; prove a dead end only by the recurrence-diameter bound."""
    check_question(bf.GAME, question)
    began = time.monotonic()
    deadline = None if time_limit is None else began + time_limit
    status, line, horizon, method = search(state, deadline)
    elapsed = round(time.monotonic() - began, 4)
    stats = {"horizon": horizon}
    if status == "won":
        moves = bf.with_finish(state, line)
        result = ProofResult(
            status=Status.WON,
            proven=True,
            engine=ENGINE,
            question=question,
            best_score=0,
            line=tuple(bf.format_move(m) for m in moves),
            method=f"SAT at horizon {horizon} (parallel steps), replayed",
            elapsed=elapsed,
            stats=stats,
        )
    elif status == "lost":
        result = ProofResult(
            status=Status.LOST,
            proven=True,
            engine=ENGINE,
            question=question,
            method=method,
            elapsed=elapsed,
            stats=stats,
        )
    else:
        result = ProofResult(
            status=Status.UNKNOWN,
            proven=False,
            engine=ENGINE,
            question=question,
            method=f"no win found up to horizon {horizon} ({method}); "
            "a dead end needs a sound horizon bound",
            elapsed=elapsed,
            stats=stats,
        )
    return check_result(bf.GAME, state, result)
