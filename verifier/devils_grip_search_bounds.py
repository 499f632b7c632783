"""Lower bounds on the best score of a Devil's Grip position, with proofs.

The search prover (`verifier.devils_grip_search`) prunes a position when a
lower bound on its best score reaches the score it must beat. Each bound here
is a statement about *every* line from the position; each is proven below,
and the tests compare the pruned prover with an unpruned brute force.

Positions are the canonical forms of `verifier.devils_grip_search_model`
(`Canon`): pointer ``p`` into the stock, live talon, live bottoms, live tops
and ``tokens`` (interchangeable merges).

**Dead cards and missing slots.** The final talon holds the dead prefix
(`Canon.dead`), and at least `Canon.missing` cards: a stack whose top can
never be covered or whose bottom can never be merged stays short of four
cards, so the 24 cells hold fewer than 96 cards at the end.

**The surplus bound.** Suppose a line leaves no card in the talon beyond the
dead prefix. Then it deals no stock base (a base never leaves the talon), so
the stock pointer stops on every base and merges there; and when a deal from
pointer ``x`` would take a base (one among the next three cards), the line
merges at ``x`` instead. Call ``x`` *forced* when the line must stand on it:
every position from ``p`` to the end of the run of such positions holding
``p``, and in each later run ``a..b`` the positions ``a + 2..b`` (a run's
first base is at ``a + 2``, and a step of 1 or 3 from below cannot pass it).
At a forced ``x`` the line merges, so the position at ``x`` has a bottom
``v`` and a top ``v - 3`` (or a token).

Count them. Between ``p`` and ``x`` let ``X_w`` be the refills of card ``w``
(one per merge), ``Y_w`` the talon plays of ``w``, ``u_v`` the merges of
bottoms ``v``. Then the possible merges at ``x`` number

    tokens + sum_v min(nb_v + X_v, nt_{v-3} + X_{v-3} + Y_{v-3} - Y_v) - sum_w X_w

because a merge of ``v`` lowers both arguments of its ``min`` by one (so
``u_v`` cancels against the merges counted in ``sum X``). Every term of the sum
belongs to one *chain* (suit and base: 2-5-8-J, 3-6-9-Q or 4-7-10-K), so the
total is at most ``tokens`` plus, for each chain separately, the maximum of
its part over all counts the line could have made: ``X_w`` between the copies
of ``w`` on forced positions before ``x`` (and every base: a base is never
dealt) and all copies of ``w`` in ``stock[p:x]``; ``Y_w`` at most the copies
of ``w`` in the live talon plus those dealt; no top count below zero (`chain_max`).
If that maximum is below 1 at some forced ``x``, no such line exists: the
best score is at least ``dead + 1``.

Talon *reservations* sharpen it. A live talon card ``c`` must be played in
such a line. If no copy of ``c - 3`` is in the stock, ``c`` can only go on
a top ``c - 3`` showing now or on a talon copy of ``c - 3`` played first;
the bound reserves a top showing now for it (that top can never take a
merge), treating ``c`` as played at once (one top ``c - 3`` fewer, one top
``c`` more: the extra top only helps), and lets every copy of ``c - 3`` not
yet placed -- a talon copy, above or below ``c``, among them -- excuse one
reservation (`chain_max`'s ``u``), which covers the talon copies. If
``c`` is a 5, 6 or 7, the copies of its base ``c - 3`` still in the stock are
refilled where they stand (a base is never dealt), so from the last of them
on the same holds with "showing now" read as "showing then": the bound
reserves ``min(r, tops)`` tops for the ``r`` such cards (`_Chains.reserve`).
"""

from __future__ import annotations

from functools import lru_cache

from .devils_grip_search_model import IS_BASE, RANK, SIZE, Canon, Model

#: For each card, the base of its chain (e.g. 8♠ -> 2♠).
CHAIN_BASE = tuple(c - 3 * ((RANK[c] - 2) // 3) for c in range(SIZE))
BASES = tuple(c for c in range(SIZE) if IS_BASE[c] and c < 64)
#: `chain_max` of a chain whose counts cannot all hold.
INFEASIBLE = -(10**6)
INFINITE = 10**9


@lru_cache(maxsize=1 << 18)
def chain_max(
    nb: tuple[int, int, int],
    nt: tuple[int, int, int],
    hi: tuple[int, int, int, int],
    lo: tuple[int, int, int, int],
    tl: tuple[int, int, int],
    rr: tuple[int, int, int],
) -> int:
    """Return the largest possible "merges minus refills" of one chain.

    Chain cards ``w0`` (base) .. ``w3``: ``nb[i]`` bottoms ``w(i+1)``,
    ``nt[i]`` tops ``w(i)``, ``hi``/``lo`` the most/fewest refills of each
    card, ``tl`` the live talon copies of ``w1..w3`` and ``rr`` how many of
    them must be played by now (see `Bounds.surplus_fails`): each unplayed
    copy of the card below may excuse one of them. Returns `INFEASIBLE` when
    no counts fit. Exhaustive over at most a few hundred combinations; cached.
    """
    best = INFEASIBLE
    for x0 in range(lo[0], hi[0] + 1):
        for x1 in range(lo[1], hi[1] + 1):
            for y1 in range(rr[0], hi[1] - x1 + tl[0] + 1):
                t0 = nt[0] + x0 - y1
                if t0 < 0:
                    break
                u1 = hi[1] - x1 + tl[0] - y1
                for x2 in range(lo[2], hi[2] + 1):
                    for y2 in range(max(0, rr[1] - u1), hi[2] - x2 + tl[1] + 1):
                        t1 = nt[1] + x1 + y1 - y2
                        if t1 < 0:
                            break
                        u2 = hi[2] - x2 + tl[1] - y2
                        for x3 in range(lo[3], hi[3] + 1):
                            for y3 in range(max(0, rr[2] - u2), hi[3] - x3 + tl[2] + 1):
                                t2 = nt[2] + x2 + y2 - y3
                                if t2 < 0:
                                    break
                                value = (
                                    min(nb[0] + x1, t0)
                                    + min(nb[1] + x2, t1)
                                    + min(nb[2] + x3, t2)
                                    - x0
                                    - x1
                                    - x2
                                    - x3
                                )
                                if value > best:
                                    best = value
    return best


@lru_cache(maxsize=1 << 18)
def chain_absorbs(
    nb: tuple[int, int, int],
    nt: tuple[int, int, int],
    hi: tuple[int, int, int, int],
    lo: tuple[int, int, int, int],
    tl: tuple[int, int, int],
    rr: tuple[int, int, int],
) -> bool:
    """Return whether counts fit in which every bottom has found a top.

    Same arguments as `chain_max`, at the last merge: each of the
    ``nb[i] + x(i+1)`` bottoms of a card is merged onto its own top, so the
    tops of the card below (after talon plays) must be as many.
    """
    for x0 in range(lo[0], hi[0] + 1):
        for x1 in range(lo[1], hi[1] + 1):
            for y1 in range(rr[0], hi[1] - x1 + tl[0] + 1):
                t0 = nt[0] + x0 - y1
                if t0 < nb[0] + x1:
                    break
                u1 = hi[1] - x1 + tl[0] - y1
                for x2 in range(lo[2], hi[2] + 1):
                    for y2 in range(max(0, rr[1] - u1), hi[2] - x2 + tl[1] + 1):
                        t1 = nt[1] + x1 + y1 - y2
                        if t1 < nb[1] + x2:
                            break
                        u2 = hi[2] - x2 + tl[1] - y2
                        for x3 in range(lo[3], hi[3] + 1):
                            top = max(0, rr[2] - u2)
                            for y3 in range(top, hi[3] - x3 + tl[2] + 1):
                                if nt[2] + x2 + y2 - y3 < nb[2] + x3:
                                    break
                                return True
    return False


#: Where each count sits in a chain's list of 20 (see `Bounds.slack`).
NB, NT, HI, LO, TL, RR = 0, 3, 6, 10, 14, 17
#: Position of each card in its chain: 0 for the base .. 3 for J, Q, K.
LEVEL = tuple((RANK[c] - 2) // 3 for c in range(SIZE))

Steps = tuple[int, tuple[tuple[int, int], ...], bool]
#: Kinds of chain events (see `Bounds._plan`): refills, dealt cards, and
#: talon cards that must be played from then on.
FREE, FORCED, DEALT, MUST = 0, 1, 2, 3


def _chain_absorbs(state: list[int]) -> bool:
    return chain_absorbs(
        (state[0], state[1], state[2]),
        (state[3], state[4], state[5]),
        (state[6], state[7], state[8], state[9]),
        (state[10], state[11], state[12], state[13]),
        (state[14], state[15], state[16]),
        (state[17], state[18], state[19]),
    )


def _chain_value(state: list[int]) -> int:
    return chain_max(
        (state[0], state[1], state[2]),
        (state[3], state[4], state[5]),
        (state[6], state[7], state[8], state[9]),
        (state[10], state[11], state[12], state[13]),
        (state[14], state[15], state[16]),
        (state[17], state[18], state[19]),
    )


class Bounds:
    """Lower bounds for positions of one stock (tables shared by all nodes)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        stock = model.stock
        n = model.n
        need = [any(IS_BASE[c] for c in stock[x : x + 3]) for x in range(n)]
        #: Start of the run of "a deal here would take a base" holding x.
        self.run_start: list[int | None] = [None] * n
        for x in range(n):
            if need[x]:
                prev = self.run_start[x - 1] if x else None
                self.run_start[x] = prev if prev is not None else x
        #: Last stock position of each card at or after each pointer.
        self.last_at: list[dict[int, int]] = [{} for _ in range(n + 1)]
        last: dict[int, int] = {}
        for x in range(n - 1, -1, -1):
            last.setdefault(stock[x], x)
            self.last_at[x] = dict(last)
        #: The last stock base: no line that keeps every card merges after it.
        self.last_base = max((x for x in range(n) if IS_BASE[stock[x]]), default=-1)
        self._plans: dict[tuple[int, bool], tuple] = {}
        #: Per pointer: copies of each card in the stock before the last base.
        self.early_counts: list[dict[int, int]] = []
        for p in range(n + 1):
            counts: dict[int, int] = {}
            for x in range(p, self.last_base):
                counts[stock[x]] = counts.get(stock[x], 0) + 1
            self.early_counts.append(counts)
        self._steps: dict[tuple, Steps] = {}
        self._slacks: dict[tuple, int] = {}
        self._spares: dict[tuple, int] = {}
        self.spare = 0

    def forced(self, x: int, p: int) -> bool:
        """Return whether a line that deals no base must merge at pointer ``x``."""
        a = self.run_start[x]
        return a is not None and (x >= a + 2 or a <= p)

    def _forced_from(self, p: int) -> list[bool]:
        """Return, for each pointer ``x >= p``, whether the line merges at ``x``.

        Besides `forced`: the pointer stands on ``p`` and on every forced
        position, and moves by 1 (merge) or 3 (deal); so when the next forced
        position is only 1 or 2 further on, everything in between is merged.
        """
        n = self.model.n
        forced = [self.forced(x, p) for x in range(p, n)]
        stand = p  # the last position the pointer surely stands on
        for x in range(p, n):
            if forced[x - p]:
                if x - stand <= 2:
                    for y in range(stand, x):
                        forced[y - p] = True
                stand = x + 1
        return forced

    def lower(self, canon: Canon, need: int) -> int:
        """Return a lower bound on the position's best score.

        The surplus bound is only worked out when it could matter: when the
        cheap bounds are below ``need`` and one more card would reach it.
        """
        cheap = max(canon.dead, canon.missing)
        if cheap >= need or canon.dead + 1 < need:
            return cheap
        if canon.dead == 0 and self.late_bottom(canon):
            return max(cheap, 1)
        # The cache's key leaves out ``dead``, and `margin` fills it at nodes
        # with no dead card (the "complete" checks). Reusing such a value at a
        # node with the same key and dead cards is sound all the same: the
        # key fixes how the rest of the game can go, so that node's lines are
        # the dead-0 node's lines plus its dead cards, and a negative slack
        # (no line of the key leaves 0 live cards) means at least dead + 1.
        slack = self._slacks.get(canon.key)
        if slack is None:
            slack = self.slack(canon, early=True)
        if slack < 0:
            return max(cheap, canon.dead + 1)
        return cheap

    def late_bottom(self, canon: Canon) -> bool:
        """Return whether some bottom cannot be merged before the last base.

        With no dead card, a line that leaves no card wins, so it merges every
        bottom, and every merge comes by the last stock base (see `_plan`).
        A bottom ``b`` then needs a ``b - 3`` that can be a top by then: a top
        now, a live talon card, or a stock card before the last base (from the
        base's own position on, it comes too late). Fewer such copies than
        bottoms ``b`` (one copy takes one bottom) mean no win.
        """
        p = canon.key[0]
        early = self.early_counts[p]
        need: dict[int, int] = {}
        for b in canon.bottoms:
            need[b] = need.get(b, 0) + 1
        for b, count in need.items():
            q = b - 3
            have = canon.tops.count(q) + canon.talon.count(q) + early.get(q, 0)
            if have < count:
                return True
        return False

    def margin(self, canon: Canon) -> tuple[int, int]:
        """Return `slack` of ``canon`` and the sum of its margins over all
        checks (remembered, for ordering moves)."""
        slack = self._slacks.get(canon.key)
        spare = self._spares.get(canon.key)
        if slack is None or spare is None:
            slack = self.slack(canon)
            spare = self.spare
            if len(self._slacks) > 1 << 20:
                self._slacks.clear()
                self._spares.clear()
            self._slacks[canon.key] = slack
            self._spares[canon.key] = spare
        return slack, spare

    def slack(self, canon: Canon, early: bool = False) -> int:
        """Return the least margin of the surplus bound over its checks.

        Negative means the bound fails: no line from ``canon`` loses no more
        cards. The checks are the forced positions (the count must be 1 or
        more) and the end of the stock (0 or more: below that the counts fit
        no line at all). With ``early`` it returns as soon as it is negative.
        """
        p = canon.key[0]
        n = self.model.n
        complete = canon.dead == 0
        checks, events = self._plan(p, complete)
        init = {b: [0] * 12 for b in BASES}
        for b in canon.bottoms:
            init[CHAIN_BASE[b]][LEVEL[b] - 1] += 1
        for t in canon.tops:
            init[CHAIN_BASE[t]][3 + LEVEL[t]] += 1
        last = self.last_at[p]
        pending: dict[int, list[tuple[int, int]]] = {}
        for c in canon.talon:
            base, level = CHAIN_BASE[c], LEVEL[c]
            init[base][5 + level] += 1
            if c - 3 in last:
                pending.setdefault(base, []).append((last[c - 3], level))
            else:
                init[base][8 + level] += 1
        delta = [0] * (n + 1)
        total = canon.tokens
        for base in BASES:
            pend = tuple(sorted(pending.get(base, ())))
            start, steps, absorbs = self._chain_steps(
                base, tuple(init[base]), events[base], pend
            )
            if complete and not absorbs:
                self.spare = 0
                return -1
            total += start
            prev = start
            for pos, value in steps:
                delta[pos] += value - prev
                prev = value
        best = INFINITE
        done = p
        spare = 0
        for x in checks:
            total += sum(delta[done:x])
            done = x
            margin = total - (1 if x < n else 0)
            spare += margin
            if margin < best:
                best = margin
                if early and best < 0:
                    return best
        self.spare = spare
        return best

    def _plan(self, p: int, complete: bool) -> tuple[tuple[int, ...], dict[int, tuple]]:
        """Return the checks from ``p`` and each chain's stock events.

        An event ``(x, level, kind)`` is the card of that level at stock
        position ``x``: a refill the line must make (`FORCED`), may make
        (`FREE`), or a card it must deal (`DEALT`). With ``complete`` (no dead
        card yet, so a line that loses no card wins) nothing is refilled after
        the last stock base: that card's bottom could never be merged (the
        merge would refill another card, and so on to a last refill that
        stays a bottom). An event counts at every check after ``x``.
        """
        plan = self._plans.get((p, complete))
        if plan is None:
            n = self.model.n
            forced = self._forced_from(p)
            checks = tuple(x for x in range(p, n) if forced[x - p]) + (n,)
            events: dict[int, list[tuple[int, int, int]]] = {b: [] for b in BASES}
            for x in range(p, n):
                c = self.model.stock[x]
                if complete and x > self.last_base:
                    kind = DEALT
                else:
                    kind = FORCED if forced[x - p] else FREE
                events[CHAIN_BASE[c]].append((x, LEVEL[c], kind))
            plan = checks, {b: tuple(e) for b, e in events.items()}
            self._plans[(p, complete)] = plan
        return plan

    def _chain_steps(
        self, base: int, init: tuple[int, ...], events: tuple, pending: tuple
    ) -> Steps:
        """Return one chain's value before any event, after each event, and
        whether its bottoms can all be merged by the last stock base.

        ``init`` holds the chain's bottoms, tops, talon copies and copies that
        must be played now (3 each); ``pending`` the ``(position, level)`` of
        talon copies that must be played after that position. Cached.
        """
        key = (init, events, pending)
        steps = self._steps.get(key)
        if steps is not None:
            return steps
        state = list(init[:6]) + [0] * 8 + list(init[6:])
        start = _chain_value(state)
        merged = sorted(
            [(x, kind, level) for x, level, kind in events]
            + [(x, MUST, level) for x, level in pending]
        )
        absorbs = None
        out = []
        for x, kind, level in merged:
            if absorbs is None and x > self.last_base:
                absorbs = _chain_absorbs(state)
            if kind == MUST:
                state[RR + level - 1] += 1
            elif kind == DEALT:
                state[TL + level - 1] += 1
            else:
                state[HI + level] += 1
                if kind == FORCED:
                    state[LO + level] += 1
            out.append((x, _chain_value(state)))
        if absorbs is None:
            absorbs = _chain_absorbs(state)
        steps = (start, tuple(out), absorbs)
        if len(self._steps) > 1 << 20:
            self._steps.clear()
        self._steps[key] = steps
        return steps
