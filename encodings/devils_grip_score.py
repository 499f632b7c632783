"""Core-guided lower bounds for Devil's Grip best scores (OLL, through RC2).

The score formula of `devils_grip_sat_cnf` counts the score two ways (`views`):
the pieces left unlinked (``score = score_offset + #unlinked``), and the cards
the grid's stacks lack at the end (``grid_offset`` plus, per stack, the chain
cards missing above its top and below its bottom:
`Encoding.encode_grid_view`). Both have the best score as their least value;
RC2 runs on each, side by side (`least_score`). Descending from a found line
with a totalizer ("at most best - 1") makes CaDiCaL refute the whole count at once,
and near the optimum that refutation is what never comes on whole deals.
Measured on deals 1 and 5 (see the report): asking "score <= k" from scratch
costs about as much for k well below the optimum as near it, so an ascending
linear search does not help either; a core-guided MaxSAT search does, because
each unsatisfiable core names a few pieces of which one must stay unlinked and
the cores are relaxed one by one (OLL with core exhaustion and minimisation:
pysat's RC2, on Glucose 4, which beat CaDiCaL inside RC2 on these formulas).

Why the answer is exact
-----------------------
- Links view: every soft clause is "piece x is linked" (``B_x,hi``); a
  model's cost is its number of unlinked pieces, and its line leaves exactly
  ``score_offset + cost`` cards. Grid view: the soft clauses deny the
  "open top" and "bottom" literals, weighted by the cards each stack end
  lacks; a model's line leaves at most ``grid_offset + cost`` cards, exactly
  that for the model that sets no literal needlessly.
- RC2's ``cost`` is at every stage a lower bound on the least cost of any
  model (each processed core is a refutation under assumptions). So "cost c"
  proves: no model, hence (by the encoding's completeness and dominance
  arguments) no line, leaves fewer than ``offset + c`` cards.
- When RC2 returns a model, its cost is optimal, and so is its line (its
  score is at most the cost, and no line's is below it); the model is decoded
  into a line and replayed, and the line must leave exactly ``offset + cost``
  cards (checked by the SAT prover, and again by `check_result`).
- A lower bound that reaches the score of a line found elsewhere (the
  beam, the neighbourhood search) proves that line optimal at once:
  `CoreGuided` stops there.

A line in hand
--------------
Once a line leaving ``u`` cards is known, only lines leaving fewer matter.
``least_score(below=u)`` adds the hard clauses `Encoding.score_below` ("at
most ``u - 1 - score_offset`` pieces unlinked", on a totalizer) to the
formula of each restricted view (the grid view: see below). The unlinked
count is exact on every model, so every line below ``u`` keeps the models
it had (with dominance on, those of its normal form, which leaves as many
cards), among them one whose view cost is its score. Hence RC2's cost
``c`` on the restricted formula proves that every line leaves at least
``min(u, offset + c)`` cards; once ``offset + c`` reaches ``u``, or the
restricted formula has no model, ``u`` is optimal; and a model RC2 returns
is optimal among the lines below ``u``, hence among all. A line found
elsewhere while the search runs lowers ``u`` by one unit clause on the
same counter: a hard clause only removes models, so every core found
stays a core and ``c`` stays a lower bound.

It pays because the count is a second view of the score inside each search:
a partial assignment that already leaves ``u - 1 - score_offset`` pieces
unlinked propagates every other piece linked, which the cores of the grid
view (stacks left short) never say. The hard oracle call of deal 9 (grid
view, bound 8 to 9: dumped with its assumptions, Glucose alone) takes 39 s
as it was, 2.4 s with the optimal line in hand (``u`` = 9), 2.8 s with
``u`` = 10, 3.8 s with 11, 6.1 s with 15 and 26 s with 25; as unit clauses
instead of assumptions, 37 s. The count of the other view (the short
stacks' weighted cost at most ``u - 1``) added besides took it to 1.8 s,
for 44k more clauses; it is left out.

Only the grid view is restricted (`View.restricted`). With the best known
line in hand, RC2 alone for 30 s on 13 of deals 1-19: the grid view proves
4 unrestricted and 8 restricted (deal 1 in 5.5 s instead of 20.7 s, deal 9
in 3.2 s instead of never); the links view proves 6 either way, restricted
a little slower (there the count is the objective itself: nothing new),
and restricted crosswise by the grid count it proves the grid view's 8 but
not deals 4 and 5, which it proves unrestricted. Side by side, the links
view unrestricted and the grid view restricted prove 10 of the 13.

Neither view is ahead on all deals. RC2 alone for 30 s on deals 1-15
(`python -m patience_encodings.bench_views --count 15 --time-limit 30`): the
grid view's bound is higher on seven, the links view's on five; deal 12 is
proven (6 cards) in 1.2 s by the grid view, 7.6 s by the links view; deal 5
(14) in 6.0 s by the links view, where the grid view reaches 8. So the
``sat`` engine alone runs both in one process, each getting the next step
when its oracle has met fewer conflicts. ``auto`` gave each view a process
of its own (deals 1-20 at 9 s: bounds summing 183 against 170 for both
views in one process); it now runs the grid view alone beside a member
that searches lines all along (`devils_grip_sat.LINES`), which at 10 and
60 s proved more than the links view did in its place.

Time limits: Glucose can be stopped between conflict budgets, so every oracle
call runs in chunks and raises `OutOfTime` at the deadline. A cut-short call
never counts as a core; the lower bound reported is the last one completed.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass

from pysat.examples.rc2 import RC2
from pysat.formula import WCNF

from .devils_grip_sat_cnf import Encoding, ScoreBelow

#: The SAT oracle inside RC2 (Glucose 4.1: interruptible by conflict budgets).
CORE_SOLVER = "g4"
#: Conflicts per budgeted oracle call before the clock is read.
CHUNK = 4_000
#: Conflicts after which core exhaustion gives way (to the other view's
#: search, or to the view's next core), counted from the start of the step
#: (the main oracle call's conflicts included; an exhaustion call begun
#: before then runs its chunk). A conflict count, not a clock, so that a run
#: does the same work whatever the machine's load: with the clock (0.1 s,
#: which this replaces; Glucose meets 8-13k conflicts a second on deals 1-6)
#: RC2 on deal 9's grid view reached 9 in 46 s in one run and 148 s in
#: another. Cutting exhaustion at all is what pays: deals 1-20
#: at 9 s, both views, run side by side: bounds summing 169 and 170 with
#: 0.1 s against 165 with 0.5 s (higher on four deals, lower on none);
#: without exhaustion, 166 (deal 5: 7 instead of 12). Uncut, one exhaustion
#: can take all the time: on deal 13 either view alone finds no bound in
#: 10 s, and cut at 0.1 s the grid view reaches 10. Reproducibility cost a
#: little in ``auto`` (deals 1-20 at 10 s: bounds 43 and 46 cards below the
#: known in two runs, 41-42 in three with the clock; the same proofs at 10
#: and 60 s); 500 conflicts did no better.
SLICE = 1_000


class OutOfTime(Exception):
    """The deadline passed inside the core-guided search."""


class _NoneBelow(Exception):
    """No model is left below the line in hand: a view's bound reached it,
    or its restricted formula has no model (with no line in hand: no model
    at all)."""

    def __init__(self, view: str) -> None:
        super().__init__(view)
        self.view = view


class LowerBoundReached(Exception):
    """The proven lower bound met the target: the target line is optimal."""


class CoreGuided(RC2):
    """RC2 with a deadline and a callback on every proven lower bound.

    ``on_bound(cost)`` is called after each processed core with RC2's cost (a
    proven lower bound on the view's cost: `View`); it may raise
    `LowerBoundReached` to stop the search.
    """

    def __init__(
        self,
        wcnf: WCNF,
        *,
        deadline: float | None,
        on_bound: Callable[[int], None],
    ) -> None:
        self.deadline = deadline
        self.on_bound = on_bound
        #: The oracle's conflict count at which core exhaustion inside
        #: `steps` must give way (to the other view, or to the next core;
        #: set by the caller before each step).
        self.pause_after: int | None = None
        self._minimizing = False
        super().__init__(
            wcnf, solver=CORE_SOLVER, adapt=False, exhaust=True, minz=True, trim=5
        )

    def _call_oracle(self, assumptions=(), expect_interrupt=False):
        """Solve in conflict chunks, reading the clock between them.

        Core minimisation sets its own budget and treats "undecided" as "keep
        the literal": its calls pass through unchanged (but still stop at the
        deadline). Inside `steps` the other calls come from core exhaustion,
        which raises a new sum's bound while "sum above the bound" stays
        UNSAT; past ``pause_after`` conflicts such a call answers True
        ("satisfiable"), which ends the exhaustion early. That is sound: RC2
        adds to its cost only for bounds refuted, so it keeps the bound proven
        so far, as if it had never tried further, and later cores can still
        raise it.
        """
        assumptions = list(assumptions)
        if self._minimizing or (self.deadline is None and self.pause_after is None):
            self._check_clock()
            return super()._call_oracle(assumptions=assumptions)
        while True:
            self._check_clock()
            if self.pause_after is not None and self.conflicts() >= self.pause_after:
                return True
            status = self._chunk(assumptions)
            if status is not None:
                return status

    def _chunk(self, assumptions: list[int]) -> bool | None:
        """One oracle call of at most `CHUNK` conflicts; None if undecided."""
        self.oracle.conf_budget(CHUNK)
        status = self.oracle.solve_limited(assumptions=assumptions)
        if status is not None:
            self.oracle.conf_budget(-1)
        return status

    def conflicts(self) -> int:
        """Return the conflicts the oracle has met so far (its work done)."""
        return self.oracle.accum_stats()["conflicts"]

    def _check_clock(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise OutOfTime

    def minimize_core(self) -> None:
        self._minimizing = True
        try:
            super().minimize_core()
        finally:
            self._minimizing = False

    def trim_core(self) -> None:
        """RC2's core trimming, which keeps the core in hand when paused.

        RC2 reads the oracle's core after each trimming call; a call that
        `_call_oracle` ended undecided (past ``pause_after``, answering True)
        leaves no core to read. Trimming only shortens a core already proven,
        so stopping early keeps a valid (longer) core.
        """
        for _ in range(self.trim):
            if self._call_oracle(assumptions=self.core):
                return  # paused: no new core, keep this one
            new_core = self.oracle.get_core()
            if len(new_core) == len(self.core):
                return
            self.core = new_core

    def process_core(self) -> None:
        super().process_core()
        self.on_bound(self.cost)

    def steps(self) -> Generator[None, None, bool]:
        """Run RC2's core loop one conflict chunk at a time.

        Yields after every chunk of the main oracle call and after every
        core, so that two searches can share one process; returns True when
        the soft clauses left are satisfiable (then `compute` returns the
        optimal model at once), False when the hard clauses are not. The loop
        is RC2's own (`compute_`, without its optional am1 adaptation), cut
        only where its state is whole: between cores, or inside the main
        call, which is simply resumed.
        """
        while True:
            assumptions = self.active_assumps()
            self._check_clock()
            while (status := self._chunk(assumptions)) is None:
                yield None
                self._check_clock()
            if status:
                return True
            self.get_core()
            if not self.core:
                return False
            self.process_core()
            yield None


#: The views of the score (`views`) by name, in words for answers.
VIEW_WORDS = {"links": "unlinked cards", "grid": "short stacks"}
#: The views restricted by a line in hand (`View.restricted`), by name.
RESTRICTED = frozenset({"grid"})


@dataclass(frozen=True)
class View:
    """One objective whose least value over all models is the best score.

    A model's score is at most ``offset + cost``, its cost being the summed
    weights of its true ``terms``, and equal to it for some model of each
    line; so RC2's proven cost bounds the score from below.
    """

    name: str
    terms: tuple[tuple[int, int], ...]
    offset: int

    @property
    def restricted(self) -> bool:
        """Whether a line in hand restricts this view's search by the unlinked
        count (`RESTRICTED`; see "A line in hand": it pays where the count is
        a second view, not where it is the objective itself)."""
        return self.name in RESTRICTED


def views(enc: Encoding) -> tuple[View, ...]:
    """Return both views of the score of ``enc``: unlinked cards, short stacks.

    Adds the grid view's clauses to ``enc`` (`Encoding.encode_grid_view`) if
    they are not there yet.
    """
    if not enc.grid_terms:
        enc.encode_grid_view()
    return (
        View("links", tuple((lit, 1) for lit in enc.unlinked), enc.score_offset),
        View("grid", tuple(enc.grid_terms), enc.grid_offset),
    )


def score_wcnf(
    enc: Encoding, view: View, restrict: Sequence[Sequence[int]] = ()
) -> WCNF:
    """Return the MaxSAT form of a score encoding: hard clauses, one view's softs.

    ``restrict`` are further hard clauses (`Encoding.score_below`). The hard
    clauses are handed over as one list, not appended one by one: that took
    0.12 s of an easy deal's first second (`devils_grip_sat.AT_ONCE`).
    """
    wcnf = WCNF()
    wcnf.hard = [*enc.clauses, *map(list, restrict)]
    wcnf.nv = max(map(abs, itertools.chain.from_iterable(wcnf.hard)), default=0)
    for lit, weight in view.terms:
        wcnf.append([-lit], weight=weight)
    return wcnf


def least_score(
    enc: Encoding,
    *,
    deadline: float | None,
    on_bound: Callable[[int, str], None],
    only: str | None = None,
    below: int | None = None,
    elsewhere: Callable[[], int | None] | None = None,
) -> list[int] | None:
    """Return a model of least score, or None if there is none (below ``below``).

    Both views (`views`) run side by side in one process, the one whose
    oracle has met fewer conflicts taking the next step (a conflict chunk,
    or a core; conflicts, not seconds, so that a run is reproducible),
    so the bound rises at the pace of whichever view's cores come faster:
    on deals 1-15 neither was ahead on all (see above). ``on_bound``
    gets every proven lower bound on the score and the view's name; ``only``
    runs a single view.

    With ``below`` (the score of a line in hand) the restricted views
    (`View.restricted`) search only the models of score below it (see "A
    line in hand" above), and the search ends as soon as no model below it
    is left: a view's bound reaches ``below``, or a restricted formula has
    no model. Then ``below`` is reported and None returned; a model is
    returned only when its score is below ``below``. ``elsewhere`` is asked
    between steps for a better line's score (a fellow prover's:
    `verifier.results.line_elsewhere`); one lowers ``below`` by a unit
    clause on the same counter. With ``elsewhere`` but no ``below`` the
    counter spans every piece (`Encoding.score_ceiling`), so the first line
    found elsewhere restricts a search begun without one.

    Raises `OutOfTime` at the deadline and passes on `LowerBoundReached`
    from ``on_bound``; either way the last bound given to ``on_bound`` is
    proven.
    """
    chosen = [v for v in views(enc) if only is None or v.name == only]
    if not chosen:
        raise ValueError(f"no view of the score is called {only!r}")
    restrict = None
    if any(view.restricted for view in chosen):
        if below is not None:
            restrict = enc.score_below(below)
        elif elsewhere is not None:
            restrict = enc.score_below(enc.score_ceiling())
    limit = [below]  # the restriction in force (lowered by `elsewhere`)
    solvers = []
    try:
        for view in chosen:

            def report(cost: int, view: View = view) -> None:
                lower = view.offset + cost
                if limit[0] is not None and lower >= limit[0]:
                    raise _NoneBelow(view.name)
                on_bound(lower, view.name)

            hard = restrict.clauses if restrict and view.restricted else ()
            wcnf = score_wcnf(enc, view, hard)
            solvers.append(CoreGuided(wcnf, deadline=deadline, on_bound=report))
        runs = [rc2.steps() for rc2 in solvers]
        restricted = [r for r, v in zip(solvers, chosen, strict=True) if v.restricted]
        while True:
            if restrict is not None and elsewhere is not None:
                _tighten(restricted, restrict, limit, elsewhere())
            work = [rc2.conflicts() for rc2 in solvers]
            i = work.index(min(work))
            solvers[i].pause_after = work[i] + SLICE
            try:
                try:
                    next(runs[i])
                except StopIteration as end:
                    solvers[i].pause_after = None
                    if not end.value:
                        raise _NoneBelow(chosen[i].name) from None
                    model = solvers[i].compute()
                    if model is not None:
                        solvers[i].on_bound(solvers[i].cost)
                    return model
            except _NoneBelow as reached:
                if limit[0] is not None:
                    on_bound(limit[0], reached.view)
                return None
    finally:
        for rc2 in solvers:
            rc2.delete()


def _tighten(
    solvers: list[CoreGuided],
    restrict: ScoreBelow,
    limit: list[int | None],
    score: int | None,
) -> None:
    """Lower the restriction of every search to ``score``, if that is lower.

    A hard clause added to RC2 only removes models, so every core found so
    far stays a core and its cost stays a lower bound of the smaller formula.
    """
    if score is None or (limit[0] is not None and score >= limit[0]):
        return
    unit = restrict.unit(score)
    if unit is not None:
        for rc2 in solvers:
            rc2.add_clause(unit)
    limit[0] = score
