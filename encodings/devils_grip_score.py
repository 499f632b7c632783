"""Core-guided lower bounds for Devil's Grip best scores (OLL, through RC2).

The score formula of `devils_grip_sat_cnf` counts the pieces left unlinked
(``score = score_offset + #unlinked``). Descending from a found line with a
totalizer ("at most best - 1") makes CaDiCaL refute the whole count at once,
and near the optimum that refutation is what never comes on whole deals.
Measured on deals 1 and 5 (see the report): asking "score <= k" from scratch
costs about as much for k well below the optimum as near it, so an ascending
linear search does not help either; a core-guided MaxSAT search does, because
each unsatisfiable core names a few pieces of which one must stay unlinked and
the cores are relaxed one by one (OLL with core exhaustion and minimisation:
pysat's RC2, on Glucose 4, which beat CaDiCaL inside RC2 on these formulas).

Why the answer is exact
-----------------------
- Every soft clause is "piece x is linked" (``B_x,hi``); a model's cost is its
  number of unlinked pieces. RC2's ``cost`` is at every stage a lower bound on
  the least cost of any model (each processed core is a refutation under
  assumptions). So "cost c" proves: no model, hence (by the encoding's
  completeness and dominance arguments) no line, leaves fewer than
  ``score_offset + c`` cards.
- When RC2 returns a model, its cost is optimal; the model is decoded into a
  line and replayed, and the line must leave exactly ``score_offset + cost``
  cards (checked here, and again by `check_result`).
- A lower bound that reaches the score of a line found elsewhere (the
  descent) proves that line optimal at once: `CoreGuided` stops there.

Time limits: Glucose can be stopped between conflict budgets, so every oracle
call runs in chunks and raises `OutOfTime` at the deadline. A cut-short call
never counts as a core; the lower bound reported is the last one completed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pysat.examples.rc2 import RC2
from pysat.formula import WCNF

from .devils_grip_sat_cnf import Encoding

#: The SAT oracle inside RC2 (Glucose 4.1: interruptible by conflict budgets).
CORE_SOLVER = "g4"
#: Conflicts per budgeted oracle call before the clock is read.
CHUNK = 4_000


class OutOfTime(Exception):
    """The deadline passed inside the core-guided search."""


class LowerBoundReached(Exception):
    """The proven lower bound met the target: the target line is optimal."""


class CoreGuided(RC2):
    """RC2 with a deadline and a callback on every proven lower bound.

    ``on_bound(cost)`` is called after each processed core with RC2's cost (a
    proven lower bound on the number of unlinked pieces); it may raise
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
        self._minimizing = False
        super().__init__(
            wcnf, solver=CORE_SOLVER, adapt=False, exhaust=True, minz=True, trim=5
        )

    def _call_oracle(self, assumptions=(), expect_interrupt=False):
        """Solve in conflict chunks, reading the clock between them.

        Core minimisation sets its own budget and treats "undecided" as "keep
        the literal": its calls pass through unchanged (but still stop at the
        deadline).
        """
        assumptions = list(assumptions)
        if self._minimizing or self.deadline is None:
            self._check_clock()
            return super()._call_oracle(assumptions=assumptions)
        while True:
            self._check_clock()
            self.oracle.conf_budget(CHUNK)
            status = self.oracle.solve_limited(assumptions=assumptions)
            if status is not None:
                self.oracle.conf_budget(-1)
                return status

    def _check_clock(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise OutOfTime

    def minimize_core(self) -> None:
        self._minimizing = True
        try:
            super().minimize_core()
        finally:
            self._minimizing = False

    def process_core(self) -> None:
        super().process_core()
        self.on_bound(self.cost)


def score_wcnf(enc: Encoding) -> WCNF:
    """Return the MaxSAT form of a score encoding: hard clauses, "linked" softs."""
    wcnf = WCNF()
    wcnf.extend(enc.clauses)
    for unlinked in enc.unlinked:
        wcnf.append([-unlinked], weight=1)
    return wcnf


def least_unlinked(
    enc: Encoding,
    *,
    deadline: float | None,
    on_bound: Callable[[int], None],
) -> list[int] | None:
    """Return a model with the fewest unlinked pieces, or None if stopped.

    Raises `OutOfTime` at the deadline and passes on `LowerBoundReached` from
    ``on_bound``; either way the last bound given to ``on_bound`` is proven.
    """
    with CoreGuided(score_wcnf(enc), deadline=deadline, on_bound=on_bound) as rc2:
        model = rc2.compute()
        if model is not None:
            on_bound(rc2.cost)
        return model
