"""Devil's Grip as an SMT problem over integer clocks (z3): a second formulation.

This encoding is written independently of the SAT one (`devils_grip_sat`) so
that the two can catch each other's mistakes. It does not unroll states; it
asks *when* each card is laid onto its predecessor.

Cards and instances
    Every card of the position is an *instance* (the two copies of a card are
    two instances). An instance is *mobile* when it may still be laid onto its
    predecessor (same suit, rank − 3): a non-base card that is the bottom of a
    grid stack, or lies in the talon or the stock. It is a *target* when a card
    may still be laid on it: a card that is not J, Q or K and has nothing on
    it yet (a grid top, or any talon or stock card).

Slots and events
    Let n be the number of stock cards. Event p (0 ≤ p < n) is what happens
    while stock card p is the stock top: a merge, which draws card p into the
    grid, or the start of a deal, which turns p, p+1, p+2 (fewer at the end)
    onto the talon. Slot k is the time just before event k (slot n: after the
    last event, the end game). Talon plays happen in slots; within a slot they
    go from the top of the talon down (last in, first out), so a play's moment
    is (slot, talon height) and needs no variable of its own.

The formula is written as SMT-LIB 2 text (linear integer arithmetic) and
handed to z3 in one piece: building it through z3's Python API term by term
cost seconds per deal, the text costs milliseconds.

Variables (one accessor each, ``v_*``; SMT-LIB names built from tuple keys)
    drawn[p], start[p]  Bool: event p is a merge / starts a deal.
    arrive[p]           Int: first slot in which dealt card p lies in the talon.
    linked[x]           Bool: mobile x is laid onto its predecessor.
    on[x, y]            Bool: mobile x is laid onto target y.
    slot[x]             Int: the slot of x's talon play.
    event[x]            Int: the merge event that lays x's stack;
    merge[x, p]         Bool: event[x] = p (channelled, for the one-merge rule).

Constraints (one function each, math in its docstring): packets, links,
merges, talon order (last in, first out), availability of the target, and the
goal (score 0, i.e. a win) or the score (cards left in the talon).

Why a model is a legal line, and every legal line a model
    Order the links by clock (plays before an event at the same clock). A talon
    play lays x when everything dealt above it has left (talon order) and its
    target y is a grid top (availability: y is in the grid by then and nothing
    else lies on it, since each target takes at most one card). A merge lays
    the bottom of a grid stack on a top at a merge event, and that event draws
    stock card p into the emptied cell. Deals happen at deal starts; the stock
    is consumed in order, one event per card. Conversely, a line in which no
    merge follows the exhaustion of the stock is such a model, and a line never
    needs one: a merge then only covers a top (it brings no card into play and
    leaves an empty cell that can never be refilled), so it never lowers the
    score and never belongs to a win. Swaps change nothing reachable and are
    left out; a win ends with the swaps that sort the rows. Hence UNSAT of the
    win formula means no win exists, and UNSAT of "score ≤ k − 1" means no line
    leaves fewer than k cards.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field

import z3

from verifier import devils_grip as dg
from verifier.cards import Card
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status, report_partial

ENGINE = "smt"
TRUE, FALSE = "true", "false"


# -- SMT-LIB terms (strings) ------------------------------------------------------
def And(*terms: str) -> str:
    """Conjunction, simplified for constants."""
    if FALSE in terms:
        return FALSE
    kept = [t for t in terms if t != TRUE]
    if not kept:
        return TRUE
    return kept[0] if len(kept) == 1 else f"(and {' '.join(kept)})"


def Or(*terms: str) -> str:
    """Disjunction, simplified for constants."""
    if TRUE in terms:
        return TRUE
    kept = [t for t in terms if t != FALSE]
    if not kept:
        return FALSE
    return kept[0] if len(kept) == 1 else f"(or {' '.join(kept)})"


def Not(term: str) -> str:
    """Negation."""
    return {TRUE: FALSE, FALSE: TRUE}.get(term, f"(not {term})")


def Implies(a: str, b: str) -> str:
    """Implication."""
    if a == FALSE or b == TRUE:
        return TRUE
    return Not(a) if b == FALSE else f"(=> {a} {b})"


def Iff(a: str, b: str) -> str:
    """Equivalence of two formulas."""
    return f"(= {a} {b})"


def AtMostOne(terms: list[str]) -> str:
    """At most one of the terms holds (z3's native cardinality)."""
    return TRUE if len(terms) < 2 else f"((_ at-most 1) {' '.join(terms)})"


def num(value: int) -> str:
    """An integer literal."""
    return str(value) if value >= 0 else f"(- {-value})"


def cmp(op: str, a: str | int, b: str | int) -> str:
    """An integer comparison ``(op a b)``."""
    left = num(a) if isinstance(a, int) else a
    right = num(b) if isinstance(b, int) else b
    return f"({op} {left} {right})"


@dataclass(frozen=True)
class Inst:
    """A card instance: where it is now and what may still happen to it.

    ``height`` orders the talon and the stock as one pile: existing talon cards
    by depth, then stock cards in stock order; a higher card lies above a lower
    one whenever both are in the talon.
    """

    id: int
    card: Card
    where: str  # "grid", "talon" or "stock"
    index: int  # cell, talon depth (0 = bottom) or stock position (0 = top)
    height: int
    mobile: bool
    target: bool


def instances(state: dg.State) -> list[Inst]:
    """Return the instances of ``state`` with their roles."""
    out: list[Inst] = []

    def add(card: Card, where: str, index: int, bottom: bool, top: bool) -> None:
        mobile = bottom and card.rank not in dg.BASE_RANKS
        target = top and card.rank not in dg.TOP_RANKS
        height = {"grid": -1, "talon": index, "stock": len(state.talon) + index}
        out.append(Inst(len(out), card, where, index, height[where], mobile, target))

    for cell, stack in enumerate(state.grid):
        for level, card in enumerate(stack):
            add(card, "grid", cell, level == 0, level == len(stack) - 1)
    for depth, card in enumerate(state.talon):
        add(card, "talon", depth, True, True)
    for position, card in enumerate(state.stock):
        add(card, "stock", position, True, True)
    return out


@dataclass
class Encoding:
    """The formula for one position: declarations, assertions, accessors."""

    state: dg.State
    insts: list[Inst]
    n: int
    sorts: dict[str, str] = field(default_factory=dict)
    asserts: list[str] = field(default_factory=list)

    def add(self, term: str) -> None:
        """Assert ``term`` (constant-true terms are dropped)."""
        if term != TRUE:
            self.asserts.append(term)

    def _v(self, key: tuple, sort: str) -> str:
        name = "_".join(map(str, key))
        self.sorts.setdefault(name, sort)
        return name

    def v_drawn(self, p: int) -> str:
        return self._v(("drawn", p), "Bool")

    def v_start(self, p: int) -> str:
        return self._v(("start", p), "Bool") if 0 <= p < self.n else FALSE

    def v_arrive(self, p: int) -> str:
        return self._v(("arrive", p), "Int")

    def v_linked(self, x: Inst) -> str:
        return self._v(("linked", x.id), "Bool")

    def v_on(self, x: Inst, y: Inst) -> str:
        return self._v(("on", x.id, y.id), "Bool")

    def v_slot(self, x: Inst) -> str:
        return self._v(("slot", x.id), "Int")

    def v_event(self, x: Inst) -> str:
        return self._v(("event", x.id), "Int")

    def v_merge(self, x: Inst, p: int) -> str:
        return self._v(("merge", x.id, p), "Bool")

    # -- derived terms --------------------------------------------------------
    def in_grid(self, x: Inst) -> str:
        """x is, or will be drawn into, the grid (it moves only by merging)."""
        if x.where == "stock":
            return self.v_drawn(x.index)
        return TRUE if x.where == "grid" else FALSE

    def in_talon(self, x: Inst) -> str:
        """x is, or will be dealt to, the talon."""
        if x.where == "stock":
            return Not(self.v_drawn(x.index))
        return TRUE if x.where == "talon" else FALSE

    def arrival(self, x: Inst) -> str | int:
        """The first slot in which x may be played from the talon."""
        return self.v_arrive(x.index) if x.where == "stock" else 0

    def merged(self, x: Inst) -> str:
        return And(self.v_linked(x), self.in_grid(x))

    def played(self, x: Inst) -> str:
        return And(self.v_linked(x), self.in_talon(x)) if x.mobile else FALSE

    def first_event(self, x: Inst) -> int:
        """The earliest merge event that can lay x (a drawn card waits a turn)."""
        return x.index + 1 if x.where == "stock" else 0

    def targets_of(self, x: Inst) -> list[Inst]:
        """The instances x may be laid on."""
        want = Card(x.card.rank - dg.STEP, x.card.suit)
        return [y for y in self.insts if y.target and y.card == want]

    def mobiles(self) -> list[Inst]:
        return [x for x in self.insts if x.mobile]

    def piles(self) -> list[Inst]:
        """Talon and stock instances, lowest first."""
        return sorted(
            (x for x in self.insts if x.where != "grid"), key=lambda x: x.height
        )

    def smtlib(self) -> str:
        """Return the whole formula as SMT-LIB 2 text."""
        decls = [f"(declare-const {n} {s})" for n, s in self.sorts.items()]
        return "\n".join(decls + [f"(assert {a})" for a in self.asserts])


# -- constraint families -----------------------------------------------------------
def add_packets(enc: Encoding) -> None:
    """Each event is a merge or part of a deal; deals come in packets of three.

    start[p] → ¬drawn[q] ∧ arrive[q] = p + 1 for q = p, p+1, p+2 (q < n);
    drawn[p] ∨ start[p] ∨ start[p−1] ∨ start[p−2];
    start[p] → ¬start[p+1] ∧ ¬start[p+2].
    The last packet is short exactly when it reaches the end of the stock.
    """
    for p in range(enc.n):
        packet = [q for q in (p, p + 1, p + 2) if q < enc.n]
        dealt = [
            And(Not(enc.v_drawn(q)), cmp("=", enc.v_arrive(q), p + 1)) for q in packet
        ]
        enc.add(Implies(enc.v_start(p), And(*dealt)))
        enc.add(
            Or(enc.v_drawn(p), enc.v_start(p), enc.v_start(p - 1), enc.v_start(p - 2))
        )
        for q in packet[1:]:
            enc.add(Implies(enc.v_start(p), Not(enc.v_start(q))))


def add_links(enc: Encoding) -> None:
    """A laid card lies on exactly one target; a target takes at most one card.

    linked[x] ↔ ∨_y on[x, y];  at most one on[x, ·];  at most one on[·, y].
    """
    takers: dict[int, list[str]] = {}
    for x in enc.mobiles():
        options = [enc.v_on(x, y) for y in enc.targets_of(x)]
        enc.add(Iff(enc.v_linked(x), Or(*options)))
        enc.add(AtMostOne(options))
        for y in enc.targets_of(x):
            takers.setdefault(y.id, []).append(enc.v_on(x, y))
    for options in takers.values():
        enc.add(AtMostOne(options))


def add_merges(enc: Encoding) -> None:
    """Grid cards are laid by merges, exactly one merge at each merge event.

    merged[x] → first(x) ≤ event[x] < n, where first(x) = p + 1 for a card
    drawn at event p; merge[x, p] ↔ merged[x] ∧ event[x] = p;
    drawn[p] ↔ ∨_x merge[x, p], and at most one merge[·, p].
    """
    hosts: dict[int, list[str]] = {p: [] for p in range(enc.n)}
    for x in enc.mobiles():
        if x.where == "talon":
            continue
        event, merged = enc.v_event(x), enc.merged(x)
        window = And(cmp(">=", event, enc.first_event(x)), cmp("<", event, enc.n))
        enc.add(Implies(merged, window))
        for p in range(enc.first_event(x), enc.n):
            enc.add(Iff(enc.v_merge(x, p), And(merged, cmp("=", event, p))))
            hosts[p].append(enc.v_merge(x, p))
    for p, options in hosts.items():
        enc.add(Iff(enc.v_drawn(p), Or(*options)))
        enc.add(AtMostOne(options))


def add_talon_order(enc: Encoding) -> None:
    """Talon plays come after the deal and respect last in, first out.

    played[x] → arrival(x) ≤ slot[x] ≤ n. For i lower than j: if i is played
    once j lies above it, j was played first (an earlier slot, or the same
    slot, where plays go top down): played[i] ∧ talon[j] ∧ slot[i] ≥
    arrival(j) → played[j] ∧ slot[j] ≤ slot[i].
    """
    piles = enc.piles()
    for x in piles:
        if x.mobile:
            slot = enc.v_slot(x)
            window = And(cmp(">=", slot, enc.arrival(x)), cmp("<=", slot, enc.n))
            enc.add(Implies(enc.played(x), window))
    for i, low in enumerate(piles):
        if not low.mobile:
            continue
        low_played, low_slot = enc.played(low), enc.v_slot(low)
        for high in piles[i + 1 :]:
            above = And(enc.in_talon(high), cmp(">=", low_slot, enc.arrival(high)))
            first = (
                And(enc.played(high), cmp("<=", enc.v_slot(high), low_slot))
                if high.mobile
                else FALSE
            )
            enc.add(Implies(And(low_played, above), first))


def add_availability(enc: Encoding) -> None:
    """A target must be in the grid when a card is laid on it.

    For on[x, y], by how y reaches the grid and how x is laid:
    y drawn at event q: a merge of x at event[x] > q, a play of x at slot[x] > q;
    y played from the talon: a merge of x at event[x] ≥ slot[y], a play of x at
    slot[x] ≥ slot[y] (y higher than x) or slot[x] > slot[y] (y lower).
    A target in the grid from the start is always there.
    """
    for x in enc.mobiles():
        for y in enc.targets_of(x):
            if y.where != "grid":
                enc.add(Implies(enc.v_on(x, y), _ready(enc, x, y)))


def _ready(enc: Encoding, x: Inst, y: Inst) -> str:
    merge_at = enc.v_event(x) if x.where != "talon" else None
    play_at = enc.v_slot(x) if x.where != "grid" else None

    def laid_after(bound: str | int, strict_play: bool) -> str:
        ways = []
        if merge_at is not None:
            op = ">" if isinstance(bound, int) else ">="
            ways.append(And(enc.in_grid(x), cmp(op, merge_at, bound)))
        if play_at is not None:
            ways.append(
                And(enc.in_talon(x), cmp(">" if strict_play else ">=", play_at, bound))
            )
        return Or(*ways)

    cases = []
    if y.where == "stock":
        cases.append(And(enc.in_grid(y), laid_after(y.index, strict_play=True)))
    if y.mobile:
        later = laid_after(enc.v_slot(y), strict_play=y.height < x.height)
        cases.append(And(enc.played(y), later))
    return Or(*cases)


def add_win(enc: Encoding, win: str, score: str) -> None:
    """The goal: a win, with its implied constraints stated outright.

    win → score = 0. Implied, and given to the solver because they propagate
    at once where the sum does not: every mobile card is laid (a card left
    unlaid is a stack bottom that is not a base, or a talon card), and every
    base card in the stock is drawn by a merge (a dealt base never leaves the
    talon); a base card already in the talon rules the win out.
    """
    enc.add(Implies(win, cmp("=", score, 0)))
    for x in enc.insts:
        if x.mobile:
            enc.add(Implies(win, enc.v_linked(x)))
        elif x.where == "stock":
            enc.add(Implies(win, enc.v_drawn(x.index)))
        elif x.where == "talon":
            enc.add(Not(win))


def add_score(enc: Encoding, score: str) -> None:
    """score = the number of talon cards never played (cards left at the end)."""
    left = [
        f"(ite {And(enc.in_talon(x), Not(enc.played(x)))} 1 0)" for x in enc.piles()
    ]
    total = f"(+ 0 {' '.join(left)})" if left else "0"
    enc.add(cmp("=", score, total))


def encode(state: dg.State) -> Encoding:
    """Return the formula for ``state``, with the score and a ``win`` switch."""
    enc = Encoding(state, instances(state), len(state.stock))
    add_packets(enc)
    add_links(enc)
    add_merges(enc)
    add_talon_order(enc)
    add_availability(enc)
    score = enc._v(("score",), "Int")
    add_score(enc, score)
    add_win(enc, enc._v(("win",), "Bool"), score)
    return enc


# -- decoding ---------------------------------------------------------------------
class Values:
    """Read a z3 model by SMT-LIB name (unassigned names take default values)."""

    def __init__(self, model: z3.ModelRef) -> None:
        self.model = model

    def true(self, name: str) -> bool:
        if name in (TRUE, FALSE):
            return name == TRUE
        if name.startswith("(not "):
            return not self.true(name[5:-1])
        return z3.is_true(self.model.eval(z3.Bool(name), model_completion=True))

    def int(self, name: str) -> int:
        return self.model.eval(z3.Int(name), model_completion=True).as_long()


def decode(enc: Encoding, model: z3.ModelRef) -> list[dg.Move]:
    """Turn a model into a move line, tracking which cell holds each instance."""
    values = Values(model)
    steps: list[tuple[int, int, int, str, Inst | None, Inst | None]] = []
    for x in enc.mobiles():
        if not values.true(enc.v_linked(x)):
            continue
        (y,) = [y for y in enc.targets_of(x) if values.true(enc.v_on(x, y))]
        if values.true(enc.in_grid(x)):
            steps.append((values.int(enc.v_event(x)), 1, 0, "merge", x, y))
        else:
            steps.append((values.int(enc.v_slot(x)), 0, -x.height, "play", x, y))
    for p in range(enc.n):
        if values.true(enc.v_start(p)):
            steps.append((p, 1, 0, "deal", None, None))
    steps.sort(key=lambda step: step[:3])
    return _moves(enc, [step[3:] for step in steps])


def _moves(enc: Encoding, steps) -> list[dg.Move]:
    cell_of = {x.id: x.index for x in enc.insts if x.where == "grid"}
    stock = {x.index: x for x in enc.insts if x.where == "stock"}
    used = 0
    moves: list[dg.Move] = []
    for kind, x, y in steps:
        if kind == "deal":
            moves.append(dg.DEAL)
            used += min(dg.PACKET, enc.n - used)
        elif kind == "play":
            moves.append(dg.TalonPlay(cell_of[y.id]))
            cell_of[x.id] = cell_of[y.id]
        else:
            src, dst = cell_of[x.id], cell_of[y.id]
            moves.append(dg.Merge(src, dst))
            for inst_id, cell in list(cell_of.items()):
                if cell == src:
                    cell_of[inst_id] = dst
            cell_of[stock[used].id] = src
            used += 1
    return moves


def _finish(state: dg.State, moves: list[dg.Move]) -> list[dg.Move]:
    """Replay, play the talon out greedily, and add the sorting swaps of a win."""
    outcome = replay(dg.GAME, state, moves)
    if outcome.error:
        raise AssertionError(f"SMT line does not replay: {outcome.error}")
    final, moves = outcome.final, list(moves)
    while not dg.is_stuck(final):
        if final.stock:
            move: dg.Move = dg.DEAL
        else:
            card = final.talon[-1]
            cell = next(
                i for i, s in enumerate(final.grid) if s and dg.fits(card, s[-1])
            )
            move = dg.TalonPlay(cell)
        final = dg.apply(final, move)
        moves.append(move)
    return moves + dg.finishing_moves(final)


# -- the prover -----------------------------------------------------------------------
def _check(
    solver: z3.Solver, assumptions: Iterable[z3.BoolRef], deadline: float | None
):
    if deadline is not None:
        solver.set("timeout", max(1, int((deadline - time.monotonic()) * 1000)))
    return solver.check(*assumptions)


def prove(
    state: dg.State, *, question: Question, time_limit: float | None
) -> ProofResult:
    """Answer ``question`` for ``state`` with z3; lines are replayed before return."""
    began = time.monotonic()
    deadline = began + time_limit if time_limit else None
    enc = encode(state)
    solver = z3.SolverFor("QF_LIA")
    solver.from_string(enc.smtlib())
    stats = {
        "build_s": round(time.monotonic() - began, 4),
        "variables": len(enc.sorts),
        "assertions": len(enc.asserts),
    }
    answer = _check(solver, [z3.Bool("win")], deadline)
    if answer == z3.sat:
        line = _finish(state, decode(enc, solver.model()))
        return _result(
            Status.WON, True, question, 0, True, line, "line replayed", began, stats
        )
    if answer == z3.unknown:
        return _result(
            Status.UNKNOWN, False, question, None, False, [], "", began, stats
        )
    method = f"SMT: no win (UNSAT over all timings of the {enc.n}-card stock)"
    if question is Question.VERDICT:
        return _result(
            Status.LOST, True, question, None, False, [], method, began, stats
        )
    return _best_score(enc, solver, question, deadline, began, stats, method)


def _best_score(enc, solver, question, deadline, began, stats, method):
    """Bisect on ``score ≤ k`` between a proven lower bound and the best line.

    Each SAT answer gives a line (replayed; its score is the new upper bound),
    each UNSAT answer raises the proven lower bound. They meet at the optimum;
    on timeout the result keeps both bounds, and the score is not proven.
    """
    score = z3.Int("score")
    # A first line at once: deal through the stock, playing the talon greedily.
    best_line = _finish(enc.state, [])
    lower, best = 1, replay(dg.GAME, enc.state, best_line).score

    def unproven() -> ProofResult:
        """The answer so far: lost, best line found, proven lower bound."""
        return _result(
            Status.LOST,
            True,
            question,
            best,
            False,
            best_line,
            method,
            began,
            stats | {"lower_bound": lower},
            lower_bound=lower,
        )

    report_partial(unproven())
    while best is None or lower < best:
        assumptions = []
        if best is not None:
            bound = (lower + best - 1) // 2
            guard = z3.Bool(f"score_le_{bound}")
            solver.add(z3.Implies(guard, score <= bound))
            assumptions = [guard]
        answer = _check(solver, assumptions, deadline)
        if answer == z3.unknown:
            return unproven()
        if answer == z3.unsat:
            if best is None:
                raise AssertionError("SMT: a lost position must have some line")
            lower = bound + 1
            continue
        best_line = _finish(enc.state, decode(enc, solver.model()))
        best = replay(dg.GAME, enc.state, best_line).score
        report_partial(unproven())
    how = f"{method}; score <= {best - 1} UNSAT, score {best} reached"
    return _result(
        Status.LOST,
        True,
        question,
        best,
        True,
        best_line,
        how,
        began,
        stats,
        lower_bound=best,
    )


def _result(
    status,
    proven,
    question,
    best,
    score_proven,
    line,
    method,
    began,
    stats,
    lower_bound=None,
):
    return ProofResult(
        status=status,
        proven=proven,
        engine=ENGINE,
        question=question,
        best_score=best,
        score_proven=score_proven,
        line=tuple(dg.format_move(m) for m in line),
        method=method,
        lower_bound=lower_bound,
        elapsed=round(time.monotonic() - began, 4),
        stats=stats,
    )
