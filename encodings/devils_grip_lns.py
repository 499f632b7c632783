"""Better Devil's Grip lines by large-neighbourhood search (LNS).

Why: a best score is proven when a line meets a proven lower bound, and on
whole deals asking a SAT solver for "at most best - 1" over the whole score
formula (the old descent) rarely answers in time. A line's *event pattern* -- which
slots the stock pointer visits and whether each ends with a merge or a deal
-- fixes most of the line. With the pattern fixed outside a window of slots
and free inside it, "one card fewer" is a small question: UNSAT in
milliseconds, or a better line. On deal 7 the beam's line of 13 becomes the
optimal 11 in 0.9 s this way; a whole-formula descent took 17 s.

How (`Neighbourhoods.steps`): each new line is first asked for one card
fewer with every card it links in full kept linked (`kept_links`), then
again with the cards of one chain free (a suit's 2-5-8-J, 3-6-9-Q or
4-7-10-K), chain by chain. The whole stock stays free; only *which* cards
end linked is held, so each question is close to a verdict ("link all of
these and one more"), answered in 0.01-0.15 s on deals 1-12, and these
find most lines: from the beam's narrowest lines (width 8) of deals 1-40,
136 lines against the windows' 11 and the whole formula's 13. Then
windows of `FIRST_WIDTH` slots slide over the stock by half a width. A
window that finds a line restarts from the new line; a sweep in which no
window does grows the width by a factor (`GROWTH`, or the caller's
``growth``), up to the whole stock, where the question is the descent's
own: there it runs until it is answered, and UNSAT then proves the line
optimal. A line the whole formula finds gets its kept links and one sweep
of `FIRST_WIDTH` windows of its own (a few milliseconds each), and if none
of them improves it the whole formula has the next turn at once, not the
growing widths again: from a line near the optimum, the next better line
often differs from it in a window, where it costs milliseconds instead of
seconds (deal 136: after the whole formula's 19, windows found 18 and 17
within 0.05 s; each had taken it about 3 s). Pinned, 10 s, side by side
with the code before (whole formula after whole formula, no windows
between) on the two cores, deals 1-100, 101-200 and 601-700: 299 against
297 best scores proven (136 besides), the 298 proofs both made 584 s
against 611 s, sooner on 174.

Why it is sound:

- Every window's assumptions (the pattern outside it) only restrict the
  score formula, so a model is a line of the position (decoded and replayed
  by the caller, `improve`) with at most ``best - 1`` cards left.
- A window's UNSAT, like a kept-links question's, proves nothing about
  other lines and is never reported.
  Only UNSAT with no pattern assumed -- the whole formula under "at most
  ``best - 1``" -- proves that no line leaves fewer cards (`steps` returns
  True).
- The line's own pattern satisfies the dominance restrictions: normalizing a
  line (`devils_grip_sat_cnf`) moves talon plays earlier, permutes merges among
  merge slots and exchanges copies, never changing which slots merge or deal.
  So every window admits the current line's normal form, and its question
  "one card fewer" is the only one left open.
- The kept links are assumptions of the same kind: "linked in the end"
  (``B_x,hi``) for each copy of a card whose every linkable copy the line
  links. Normalizing may exchange the two copies of a card, but never
  changes how many copies of each card end linked, so the line's normal
  form keeps them too.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Generator, Sequence

from pysat.card import ITotalizer
from pysat.solvers import Solver

from verifier import devils_grip as dg

from .devils_grip_sat_cnf import Encoding
from .devils_grip_sat_lines import trace_line, visited_slots

#: The first window, in stock-pointer slots (18 found the improvements of deals
#: 6, 7 and 9 of 1-20 in under a second), and its growth after a fruitless sweep.
FIRST_WIDTH = 18
GROWTH = 1.5
#: A growth that goes from the first window straight to the whole stock of a
#: deal (18 -> 72 slots): one sweep of windows, then the whole formula, which
#: finds the later lines itself (`devils_grip_sat.ALONE` has the figures).
ONE_SWEEP = 4.0
#: Conflicts per oracle call (then the caller may hand over), and the most a
#: window may take before the next window's turn (the whole formula: no cap).
CHUNK = 10_000
WINDOW_CONFLICTS = 50_000

#: A chain of cards (`verifier.devils_grip.chain_of`).
Chain = tuple[int, int]
#: Decode a model into a replayed line, return its score and moves.
Improve = Callable[[list[int]], tuple[int, list[dg.Move]]]


def event_literals(enc: Encoding, moves: Sequence[dg.Move]) -> list[list[int]]:
    """Return, per slot ``t < n``, the literals of the line's event pattern.

    ``[V_t, M_t, D_t]``, each signed as the line has it: visited or skipped,
    a merge, a deal or neither.
    """
    n = enc.layout.n
    events = trace_line(enc.layout, moves).events
    visited = visited_slots(n, events)
    pattern = []
    for t in range(n):
        visit, merge, deal = enc.var_visit(t), enc.var_merge(t), enc.var_deal(t)
        pattern.append(
            [
                visit if t in visited else -visit,
                merge if events.get(t) == "merge" else -merge,
                deal if events.get(t) == "deal" else -deal,
            ]
        )
    return pattern


def kept_links(enc: Encoding, moves: Sequence[dg.Move]) -> dict[Chain, list[int]]:
    """Return, chain by chain, ``B_x,hi`` ("linked in the end") for every
    copy of each card whose every linkable copy the line links.

    Held per card, not per copy: a line's normal form may link the other
    copy of a card (module docstring), but links as many copies of it.
    """
    layout = enc.layout
    linked = trace_line(layout, moves).onto
    linkable = layout.linkable()
    loose = {layout.pieces[x].card for x in linkable if x not in linked}
    held: dict[Chain, list[int]] = {}
    for x in linkable:
        card = layout.pieces[x].card
        if card not in loose:
            held.setdefault(dg.chain_of(card), []).append(enc.var_by(x, layout.hi(x)))
    return held


class Neighbourhoods:
    """Large-neighbourhood search for lines leaving fewer cards.

    ``solver`` holds the score formula and the totalizer ``bound`` over
    ``enc.unlinked`` (counting at least up to ``score - 1 - offset``);
    ``improve`` decodes and replays a model. ``score`` and ``moves`` always
    hold the best line.
    """

    def __init__(
        self,
        enc: Encoding,
        solver: Solver,
        bound: ITotalizer | None,
        line: tuple[int, list[dg.Move]],
        improve: Improve,
        *,
        growth: float = GROWTH,
    ) -> None:
        if growth <= 1:
            raise ValueError(f"windows must grow after a fruitless sweep: {growth}")
        self.enc, self.solver, self.bound = enc, solver, bound
        self.score, self.moves = line
        self.improve = improve
        self.growth = growth
        #: Every oracle call: its neighbourhood (``"kept"``, ``"window"`` or
        #: ``"whole"``) and whether it found a better line (None: capped).
        self.log: list[tuple[str, bool | None]] = []
        #: The neighbourhood of the oracle call under way, between its chunks.
        self.asking: str | None = None

    @property
    def calls(self) -> int:
        """The oracle calls made so far."""
        return len(self.log)

    def lines_by(self) -> dict[str, int]:
        """Return how many better lines each neighbourhood found."""
        return dict(Counter(kind for kind, found in self.log if found))

    def run(
        self,
        until: float,
        stop: Callable[[], bool] = lambda: False,
        proof_until: float | None = None,
    ) -> bool:
        """Run `steps` until the ``until`` instant or ``stop()``; True if the
        whole formula proved the line optimal.

        A whole-formula question under way at ``until`` may go on to
        ``proof_until`` (`verifier.results.answer_deadline`): its UNSAT is
        the proof, and every line it might find instead is reported as it
        comes. Any other question stops at ``until`` as before, after the
        chunk under way.
        """
        steps = self.steps()
        try:
            while not stop() and self._in_time(until, proof_until):
                next(steps)
        except StopIteration as end:
            return bool(end.value)
        return False

    def _in_time(self, until: float, proof_until: float | None) -> bool:
        now = time.monotonic()
        if now < until:
            return True
        return self.asking == "whole" and proof_until is not None and now < proof_until

    def steps(self) -> Generator[None, None, bool]:
        """Improve the line, yielding after every oracle chunk.

        Returns True once the whole formula refutes "one card fewer" (the line
        is optimal), or at once when the line leaves no unlinked piece to
        count; it never returns otherwise (the caller stops it). Each new
        line is first asked its kept links (`_kept`), once. After the whole
        formula's first turn, a fruitless sweep hands back to it at once
        instead of growing the windows (module docstring).
        """
        n = self.enc.layout.n
        width = FIRST_WIDTH
        whole = False  # the whole formula has had its turn
        kept_for = None  # the score whose kept links were last asked
        while True:
            k = self.score - 1 - self.enc.score_offset
            if self.bound is None or k < 0:
                return True
            if kept_for != self.score:
                kept_for = self.score
                if (yield from self._kept(k)):
                    width = FIRST_WIDTH
                    continue
            if width >= n:
                status = yield from self._ask("whole", [-self.bound.rhs[k]], cap=None)
                if status is False:
                    return True
                self._take(status)
                whole, width = True, FIRST_WIDTH
                continue
            if (yield from self._sweep(k, width)):
                width = FIRST_WIDTH
            elif whole:
                width = n
            else:
                width = int(width * self.growth)

    def _kept(self, k: int) -> Generator[None, None, bool]:
        """Ask "one card fewer" with the line's `kept_links`, then with one
        chain's links free at a time; True at the first better line."""
        assert self.bound is not None
        held = kept_links(self.enc, self.moves)
        for free in [None, *held]:
            kept = [
                lit for chain, lits in held.items() if chain != free for lit in lits
            ]
            assumptions = [-self.bound.rhs[k], *kept]
            status = yield from self._ask("kept", assumptions, cap=WINDOW_CONFLICTS)
            if status:
                self._take(status)
                return True
        return False

    def _sweep(self, k: int, width: int) -> Generator[None, None, bool]:
        """Try each window of ``width`` slots; True at the first better line."""
        assert self.bound is not None
        pattern = event_literals(self.enc, self.moves)
        for start in range(0, len(pattern), max(1, width // 2)):
            fixed = [
                lit
                for t, lits in enumerate(pattern)
                if not start <= t < start + width
                for lit in lits
            ]
            status = yield from self._ask(
                "window", [-self.bound.rhs[k], *fixed], cap=WINDOW_CONFLICTS
            )
            if status:
                self._take(status)
                return True
        return False

    def _ask(
        self, kind: str, assumptions: list[int], cap: int | None
    ) -> Generator[None, None, bool | None]:
        """Solve in `CHUNK`-conflict calls, at most ``cap`` conflicts in all.

        Returns the status (None: the cap came first), logged under ``kind``;
        yields between calls.
        """
        spent = 0
        status = None
        self.asking = kind
        try:
            while cap is None or spent < cap:
                self.solver.conf_budget(CHUNK)
                status = self.solver.solve_limited(assumptions=assumptions)
                if status is not None:
                    break
                spent += CHUNK
                yield None
        finally:
            self.asking = None
        self.log.append((kind, status))
        return status

    def _take(self, status: bool | None) -> None:
        """Adopt the line of the model just found (a better one, or a bug)."""
        if not status:
            return
        score, moves = self.improve(self.solver.get_model())
        if score >= self.score:
            raise AssertionError("a model under 'fewer cards' decoded to no better")
        self.score, self.moves = score, moves
