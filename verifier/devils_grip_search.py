"""Devil's Grip: the exact search prover (verdict, winning line, best score).

Depth-first branch and bound over the compact positions of
`verifier.devils_grip_search_model` (two positions that play alike are one
position: cells, copies, dead talon cards and interchangeable merges are
forgotten; safe talon plays are forced), with a transposition table keyed by
the canonical form, and the lower bounds of `verifier.devils_grip_search_bounds`.
Every reduction and bound carries its soundness argument in those modules.

The state graph is acyclic (a merge or a deal advances the stock pointer, a
talon play shortens the talon), so the table stores for each position either
its exact best score (with the move that reaches it) or a proven lower bound.

**Questions.** ``VERDICT`` is one search with the bar "score 0": every
position whose lower bound is 1 or more is cut, which is what makes dead deals
quick. A lost deal also gets a line from a few randomised greedy playouts
(its score is reported, unproven). ``SCORE`` then raises the bar one proven
step at a time: a search with bar ``k + 1`` either finds a line scoring ``k``
(optimal, since ``k`` is a proven lower bound) or proves every line leaves
more than ``k``. When a first short try does not settle it, a beam search
(`verifier.devils_grip_beam`, guided by the playouts' line, for the long
beam's share of the limit, `devils_grip_beam.LONG_SHARE`) looks for a better
line before the search resumes; the best line closes the gap from above
when the lower bound reaches it. Each step keeps the table, so later steps
reuse earlier proofs.

Time limits are honoured between expansions (the clock is read every few
hundred states); the answer is then ``unknown`` (or ``lost`` with an unproven
best score) with the best line found so far. Every line is replayed with the
reference engine (`verifier.results.check_result`) before it is returned.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from . import devils_grip as dg
from . import devils_grip_beam as beam_mod
from . import devils_grip_search_model as sm
from .cards import card_count
from .devils_grip_beam import Beam, BeamLine
from .devils_grip_search_bounds import Bounds
from .gcpause import cycles_uncollected
from .results import ProofResult, Question, Status, check_result, report_partial

ENGINE = "search"
#: States expanded between two looks at the clock.
CLOCK_EVERY = 256
#: Randomised greedy playouts for the first line of a lost position.
PLAYOUTS = 24
#: Nodes whose canonical form is kept (the cache is emptied when full).
CANON_CACHE = 1 << 20
#: Restarts of the win search, the first with this node budget (doubling).
RESTARTS = 8
RESTART_FIRST = 4000
INFINITY = 10**9


class _OutOfTime(Exception):
    """The time limit ran out inside the search."""


class _Restart(Exception):
    """A restart's node budget ran out (the table keeps what it proved)."""


@dataclass
class _Entry:
    """What the table knows of a position: a relative value and its kind.

    ``value`` excludes the position's dead prefix. ``exact`` says it is the
    best score (then ``move`` reaches it); otherwise it is a lower bound.
    """

    value: int
    exact: bool
    move: sm.Move | None = None


@dataclass
class _Incumbent:
    """The best line found so far (abstract moves) and its final score."""

    score: int = INFINITY
    moves: list[sm.Move] = field(default_factory=list)


class Search:
    """Branch and bound over one position's compact state graph."""

    def __init__(self, state: dg.State, deadline: float | None = None) -> None:
        self.model, self.root = sm.root(state)
        self.bounds = Bounds(self.model)
        self.deadline = deadline
        self.table: dict[tuple, _Entry] = {}
        self.nodes = 0
        self.incumbent = _Incumbent()
        self._path: list[sm.Move] = []
        #: Canonical forms of recently met nodes (transpositions meet a node
        #: again in its own form: merges in another order, say).
        self._canons: dict[sm.Node, sm.Canon] = {}
        #: Random tie-breaks between equally promising moves (restarts).
        self._rng: random.Random | None = None
        #: Node count at which the current restart gives up.
        self._budget: int | None = None
        #: Whether the current restart prefers dealing to merging on ties.
        self._lazy = False

    # -- the search ------------------------------------------------------------
    def value(self, node: sm.Node, bar: int) -> tuple[int, bool]:
        """Return ``(v, exact)``: the best score if below ``bar``, else a bound.

        ``exact`` is True iff ``v < bar``, and then ``v`` is the best score of
        ``node``; otherwise every line from ``node`` scores at least ``v``
        (and ``v >= bar``). A best score known to be ``>= bar`` (a leaf, an
        exact table entry) is returned as such a bound, which it also is, so
        that callers may take ``exact`` alone to mean "beats the bar".
        """
        self.nodes += 1
        if self.nodes % CLOCK_EVERY == 0:
            self._check_clock()
            if self._budget is not None and self.nodes >= self._budget:
                raise _Restart
        if node[0] == self.model.n:
            score = self._leaf(node)
            return score, score < bar
        canon = self._canon(node)
        entry = self.table.get(canon.key)
        known = 0
        if entry is not None:
            known = entry.value + canon.dead
            if known >= bar:
                return known, False
            if entry.exact:
                return known, True
        lower = max(known, self.bounds.lower(canon, bar))
        if lower >= bar:
            if lower > known:
                self.table[canon.key] = _Entry(lower - canon.dead, False)
            return lower, False
        best, best_move, floor = INFINITY, None, INFINITY
        children = self.model.children(node, canon)
        if bar == 1 and len(children) > 1:
            children = self._order(children)
        for move, child in children:
            # Sound: a child scoring >= best cannot improve best, so searching
            # it against min(bar, best) loses nothing; it only cuts sooner.
            limit = min(bar, best)
            self._path.append(move)
            try:
                v, exact = self.value(child, limit)
            finally:  # also when a restart or the clock cuts the search short
                self._path.pop()
            if exact:  # v < limit: a better line
                best, best_move = v, move
                # Sound: lower is a proven lower bound on every line from this
                # node, so once best <= lower no child can beat best.
                if best <= lower:
                    break
            else:
                floor = min(floor, v)
        if best < bar:
            self.table[canon.key] = _Entry(best - canon.dead, True, best_move)
            return best, True
        floor = max(floor, lower)
        self.table[canon.key] = _Entry(floor - canon.dead, False)
        return floor, False

    def _order(self, children: list) -> list:
        """Sort moves for a win search: the most slack in the surplus bound
        first (a heuristic only; every child is still searched).

        Along winning lines the slack is mostly 0 for every move, so ties
        decide: every fourth restart (`_lazy`) tries the deal before the merges, the
        others the merges first; constructed wins need either style.
        """

        rng = self._rng

        def rank(item: tuple) -> tuple[int, int, bool, float]:
            move, child = item
            if child[0] == self.model.n:
                return (0, 0, False, 0.0)
            canon = self._canon(child)
            if canon.dead or canon.missing:
                return (-1, 0, False, 0.0)
            slack = self.bounds.margin(canon)[0]
            lazy = (move == sm.DEAL) == self._lazy
            return (move == sm.TALON, slack, lazy, rng.random() if rng else 0.0)

        return sorted(children, key=rank, reverse=True)

    def _canon(self, node: sm.Node) -> sm.Canon:
        canon = self._canons.get(node)
        if canon is None:
            canon = self.model.canon(node)
            if len(self._canons) >= CANON_CACHE:
                self._canons.clear()
            self._canons[node] = canon
        return canon

    def verdict(self) -> int:
        """Search for a win with restarts; return the root's value at bar 1.

        Wins hide behind large dead subtrees when the first moves tried are
        wrong; restarts with random tie-breaks and growing node budgets
        (the table keeps every proof made so far) find them sooner. The last
        run has no budget, so a dead end is still proven by exhaustion.
        """
        budget = RESTART_FIRST
        for attempt in range(RESTARTS):
            self._budget = self.nodes + budget
            self._rng = random.Random(attempt) if attempt else None
            self._lazy = attempt % 4 == 3
            try:
                found = self.value(self.root, 1)[0]
            except _Restart:
                budget *= 2
                continue
            self._budget, self._rng = None, None
            return found
        self._budget, self._rng = None, None
        return self.value(self.root, 1)[0]

    def _leaf(self, node: sm.Node) -> int:
        """Score a node whose stock is exhausted; remember it if it is best."""
        plays, final = self.model.final_plays(node)
        score = len(final[1])
        if score < self.incumbent.score:
            self.incumbent = _Incumbent(score, self._path + [sm.TALON] * plays)
        return score

    @contextmanager
    def until(self, moment: float) -> Iterator[None]:
        """Stop at ``moment`` as well as at the deadline, inside the block."""
        deadline = self.deadline
        self.deadline = moment if deadline is None else min(moment, deadline)
        try:
            yield
        finally:
            self.deadline = deadline

    def _check_clock(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _OutOfTime

    # -- lines ---------------------------------------------------------------
    def best_line(self, score: int) -> list[sm.Move]:
        """Return abstract moves from the root that end with ``score``.

        Follows the table's exact entries; a position missing from it (never
        the case after a finished search) is searched again with bar
        ``score + 1``.
        """
        node, moves = self.root, []
        while node[0] < self.model.n:
            canon = self.model.canon(node)
            entry = self.table.get(canon.key)
            if entry is None or not entry.exact:
                self.value(node, score + 1)
                entry = self.table[canon.key]
            move = entry.move
            assert move is not None
            moves.append(move)
            node = self.apply(node, move)
        plays, final = self.model.final_plays(node)
        assert len(final[1]) == score, "table line does not reach its score"
        return moves + [sm.TALON] * plays

    def apply(self, node: sm.Node, move: sm.Move) -> sm.Node:
        """Return the abstract successor of ``node`` by ``move``."""
        if move == sm.DEAL:
            return self.model.deal(node)
        if move == sm.TALON:
            after = self.model.talon_play(node)
            assert after is not None
            return after
        return self.model.merge(node, move[1])

    # -- playouts ----------------------------------------------------------------
    def playouts(self, count: int, seed: int = 0) -> None:
        """Run randomised greedy playouts; keep the best line as incumbent.

        Each plays the safe and the possible talon plays, merges when a base
        is among the next three stock cards (a deal would bury it), and
        otherwise merges with a per-playout probability, else deals.
        """
        rng = random.Random(seed)
        for i in range(count):
            eagerness = i / max(1, count - 1)
            score, moves = self._playout(rng, eagerness)
            if score < self.incumbent.score:
                self.incumbent = _Incumbent(score, moves)

    def beam(
        self,
        budget: float,
        floor: int = 0,
        on_line: Callable[[], None] | None = None,
    ) -> None:
        """Run the beam for ``budget`` seconds (never past the deadline),
        guided by the incumbent; each better line becomes the incumbent as
        the beam finds it (the beam ends with its best).

        ``floor`` is a proven lower bound: a line reaching it ends the beam.
        ``on_line`` is called after each better line becomes the incumbent.
        """
        deadline = time.monotonic() + budget
        if self.deadline is not None:
            deadline = min(deadline, self.deadline)
        guide = None
        if self.incumbent.score < INFINITY:
            guide = BeamLine(self.incumbent.score, tuple(self.incumbent.moves))
        beam = Beam(self.model, self.root)
        beam.best(
            deadline=deadline,
            floor=floor,
            guide=guide,
            on_line=self._take_line(on_line),
        )

    def _take_line(self, then: Callable[[], None] | None) -> beam_mod.OnLine:
        """Return a beam callback that makes a better line the incumbent."""

        def take(line: BeamLine) -> None:
            if line.score < self.incumbent.score:
                self.incumbent = _Incumbent(line.score, list(line.moves))
                if then is not None:
                    then()

        return take

    def _playout(self, rng: random.Random, eagerness: float) -> tuple[int, list]:
        node, moves = self.root, []
        stock, n = self.model.stock, self.model.n
        while node[0] < n:
            canon = self.model.canon(node)
            options = self.model.children(node, canon)
            move, child = options[0]
            if move != sm.TALON and len(options) > 1:
                merges = options[:-1]
                p = node[0]
                base_near = any(sm.IS_BASE[c] for c in stock[p : p + 3])
                if base_near or rng.random() < eagerness:
                    move, child = rng.choice(merges)
                else:
                    move, child = options[-1]
            moves.append(move)
            node = child
        plays, final = self.model.final_plays(node)
        return len(final[1]), moves + [sm.TALON] * plays

    def stats(self) -> dict[str, Any]:
        """Return JSON-ready figures of the work done."""
        return {"nodes": self.nodes, "table": len(self.table)}


def prove(
    state: dg.State,
    *,
    question: Question = Question.VERDICT,
    time_limit: float | None = None,
    beam: bool = True,
) -> ProofResult:
    """Answer ``question`` about a Devil's Grip position, with a proof.

    Without ``beam`` a best score is searched for exactly all along, its
    line the playouts' until the search finds a better one: for a portfolio
    in which another member runs the beam.
    """
    began = time.monotonic()
    deadline = None if time_limit is None else began + time_limit
    run = _Run(state, question, began, Search(state, deadline), beam=beam)
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        with cycles_uncollected():
            return run.answer()
    finally:
        sys.setrecursionlimit(limit)


@dataclass
class _Run:
    """One `prove` call: the search, the question, the clock."""

    state: dg.State
    question: Question
    began: float
    search: Search
    beam: bool = True
    lower: int = 0

    def answer(self) -> ProofResult:
        search = self.search
        search.playouts(4)
        try:
            verdict = self._verdict()
        except _OutOfTime:
            return self._unknown()
        if verdict == 0:
            return self._won()
        self.lower = verdict
        search.playouts(PLAYOUTS, seed=1)
        if self.question is Question.VERDICT:
            return self._lost()
        self._report()
        try:
            if not self.beam:
                return self._best_score()
            return self._best_score_within(
                self._beam_budget() / 2
            ) or self._beam_then_search(self._score_beam_budget())
        except _OutOfTime:
            return self._lost()

    def _verdict(self) -> int:
        """Run the win search; for the score question, leave the beam its time.

        When the win search cannot finish, a score answer is only as good as
        its line: the beam then gets the last `_beam_budget` seconds (the
        playouts' line is far worse) before `_OutOfTime` goes on.
        """
        search = self.search
        deadline = search.deadline
        if self.question is not Question.SCORE or deadline is None or not self.beam:
            return search.verdict()
        budget = self._beam_budget()
        try:
            with search.until(deadline - budget):
                return search.verdict()
        except _OutOfTime:
            search.beam(budget)
            raise

    def _beam_budget(
        self, share: float = beam_mod.SHARE, cap: float = beam_mod.MAX_SECONDS
    ) -> float:
        """Return the beam's share of the time limit (`devils_grip_beam.budget`)."""
        deadline = self.search.deadline
        limit = None if deadline is None else deadline - self.began
        return beam_mod.budget(limit, share, cap)

    def _score_beam_budget(self) -> float:
        """Return the beam's time for a best score: the long beam's.

        On whole deals the search's own bound rarely settles anything beside
        the SAT prover's (lower on 19 of deals 1-20 at 10 s), while longer
        beams keep finding better lines (`devils_grip_beam.LONG_SHARE`).
        """
        return self._beam_budget(share=beam_mod.LONG_SHARE, cap=beam_mod.LONG_MAX)

    def _best_score_within(self, seconds: float) -> ProofResult | None:
        """Try the exact best score for ``seconds`` first; None if unfinished.

        Late positions are proven in a fraction of a second, before a beam
        would have paid for itself. What the search proved stays in the table.
        """
        deadline = self.search.deadline
        try:
            with self.search.until(time.monotonic() + seconds):
                return self._best_score()
        except _OutOfTime:
            if deadline is not None and time.monotonic() >= deadline:
                raise
            return None

    def _beam_then_search(self, budget: float) -> ProofResult:
        """Look for a better line with the beam, then resume the search."""
        self.search.beam(budget, floor=self.lower, on_line=self._report)
        return self._best_score()

    def _best_score(self) -> ProofResult:
        """Raise the proven lower bound until a line reaches it."""
        search = self.search
        while self.lower < search.incumbent.score:
            v, exact = search.value(search.root, self.lower + 1)
            if exact:
                return self._lost(search.best_line(v))
            self.lower = v
            self._report()
        return self._lost()

    # -- results -----------------------------------------------------------------
    def _report(self) -> None:
        """Offer the current answer (proven verdict, best line, bound) to a runner."""
        report_partial(self._check(self._lost()))

    def _result(self, **fields: Any) -> ProofResult:
        stats = self.search.stats()
        stats["lower_bound"] = self.lower
        result = ProofResult(
            engine=ENGINE,
            question=self.question,
            elapsed=round(time.monotonic() - self.began, 4),
            stats=stats,
            **fields,
        )
        return self._check(result)

    def _check(self, result: ProofResult) -> ProofResult:
        return check_result(dg.GAME, self.state, result)

    def _won(self) -> ProofResult:
        moves = self.search.best_line(0)
        return self._result(
            status=Status.WON,
            proven=True,
            best_score=0,
            score_proven=True,
            lower_bound=0,
            line=self._line(moves),
            method=f"search found a winning line ({self.search.nodes} states)",
        )

    def _lost(self, optimal: list[sm.Move] | None = None) -> ProofResult:
        search = self.search
        if optimal is not None:
            score, moves = self.lower, optimal
        else:
            score, moves = search.incumbent.score, search.incumbent.moves
        proven_score = score <= self.lower
        if proven_score:
            self.lower = score
            method = (
                f"search exhausted: no line leaves fewer than {card_count(score)} "
                f"({search.nodes} states)"
            )
        else:
            method = (
                f"search exhausted: no win ({search.nodes} states); every line "
                f"leaves at least {card_count(self.lower)}"
            )
        return self._result(
            status=Status.LOST,
            proven=True,
            best_score=score,
            score_proven=proven_score,
            lower_bound=self.lower,
            line=self._line(moves),
            method=method,
        )

    def _unknown(self) -> ProofResult:
        search = self.search
        known = search.incumbent.score < INFINITY
        return self._result(
            status=Status.UNKNOWN,
            proven=False,
            best_score=search.incumbent.score if known else None,
            line=self._line(search.incumbent.moves) if known else (),
            method=f"no proof within the time limit ({search.nodes} states)",
        )

    def _line(self, moves: list[sm.Move]) -> tuple[str, ...]:
        return tuple(dg.format_move(m) for m in sm.to_reference(self.state, moves))
