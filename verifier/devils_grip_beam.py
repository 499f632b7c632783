"""Devil's Grip: a beam search for good lines (upper bounds on the best score).

Why: a best score is proven when a line meets a proven lower bound. The search
prover raises its bound one step at a time and stops when the bound reaches
the best line known, so a good line found early shortens every proof, and when
the time runs out it is the best score reported. Randomised playouts end far
above the optimum on whole deals (deal 1: 24 cards, optimum 10); this beam
finds lines within a few cards of it in well under a second.

**What it guarantees.** Every returned line is a real line of the search
prover's compact model (`verifier.devils_grip_search_model`): abstract moves
from the root, each one a move `Model.children` offers, ending with the forced
talon plays of an exhausted stock (`Model.final_plays`). `sm.concrete` turns it
into reference moves (see `verifier.devils_grip_search_model.to_reference`), and its
score is exact for that line: the number of cards its final talon holds.
Nothing is proven: the beam drops positions, so a better line may exist.

**How.** Positions are layered by the stock pointer ``p`` (a merge moves it by
one, a deal by up to three, a talon play not at all; so every line visits the
layers in order). A layer's candidates are the positions arriving at ``p`` and
every position their talon plays lead to. Of those, the beam keeps the
``width`` best distinct canonical positions (`Model.canon`: one key is one
future, so of two with the same key the one with fewer dead cards is kept)
and expands them by merges and deals. A position whose only child is a safe
talon play (`Model.children`) is never kept: its successor, also a candidate,
is as good. At the stock's end each arrival is scored by its forced plays.

**The ranking** is the talon's size less half the number of open tops (tops
of rank 10 or less, which can still take a card), ties broken by a fixed hash
of the position (so runs are reproducible). At one pointer every position has
drawn the same stock cards, and each is in the talon or in the grid, so a
smaller talon means more cards placed; open tops are where later talon cards
can go. On deals 1-20 at width 128 the open tops took the sum of best scores
from 288 to 276 (deal 1 from 15 to its optimum 10; on deals 21-60, 554 to
549). Dead cards, missing slots, spare merges, playable talon cards, cards
only a refill can place, greedy rollouts and the surplus bound's margins did
no better for their time; weighting merges in hand hoards them (much worse).
Width is what pays.

**Widths and the guide.** `Beam.best` runs widths doubling (8, 16, 32, ...)
until the deadline, until a line reaches ``floor`` (a proven lower bound: no
line does better), or until a run drops no position (a wider run would see
the same positions). Each run is *guided* by the best line so far: the
positions along it are always kept besides the ``width`` best, so a run never
ends worse than the line it was given, and neither does `best`. A run cut by
the deadline brings nothing, so a width the last run's pace says would end
after the deadline is not started (`fits`): the time goes to whoever runs
after the beam.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from . import devils_grip as dg
from . import devils_grip_search_model as sm
from .gcpause import cycles_uncollected
from .results import ResultCheckError

#: Widths run by default, doubling. On a whole deal a run takes about 3 ms per
#: unit of width (width 8: 25 ms; 4096: 12 s and 300 MB, its positions' parents).
WIDTHS = tuple(8 << i for i in range(10))
#: The share of a prover's time limit a beam gets when it runs beside an exact
#: search (`budget`), and its cap in seconds (also its time without a limit).
SHARE = 0.2
MAX_SECONDS = 2.0
#: The long beam's share and cap, for a prover whose own bound rarely settles
#: a best score, so its line is what it brings (the search prover, and the
#: line-finding member of ``auto``'s best-score portfolio). On deals 1-20 the
#: lines sum to 266 cards at 2 s, 257 at 5 s, 249 at 12 s and 247 at 25 s
#: (width 4096, the last width, ends there).
LONG_SHARE = 0.4
LONG_MAX = 25.0
#: What an open top (rank 10 or less: it can still take a card) is worth
#: against one talon card in the ranking (0.5 measured best of 0.25 .. 1).
OPEN_TOP_WEIGHT = 0.5
#: Canonical forms computed between two looks at the clock.
CLOCK_EVERY = 64


#: Moves worth trying from a position, each with the position it leads to.
Children = list[tuple[sm.Move, sm.Node]]


class _OutOfTime(Exception):
    """The deadline passed inside a run."""


@dataclass(frozen=True)
class BeamLine:
    """A line from the root and its exact final score.

    ``width`` is the width of the run that found it (0 for a guide line that
    no run improved); ``runs`` the widths of the runs completed; ``complete``
    whether the last run dropped no position.
    """

    score: int
    moves: tuple[sm.Move, ...]
    width: int = 0
    runs: tuple[int, ...] = ()
    complete: bool = False


#: Called with each better line as soon as a run finds it.
OnLine = Callable[[BeamLine], None]


def best_lines(
    state: dg.State,
    *,
    deadline: float | None,
    widths: Sequence[int] = WIDTHS,
    floor: int = 0,
    on_line: OnLine | None = None,
) -> BeamLine | None:
    """Return the best line the beam finds from ``state`` by ``deadline``.

    ``deadline`` is a `time.monotonic` instant (None: no limit); the first
    run ends even past it (`Beam.best`), so None comes only with no
    ``widths``.
    """
    model, root = sm.root(state)
    beam = Beam(model, root)
    return beam.best(deadline=deadline, widths=widths, floor=floor, on_line=on_line)


def budget(
    time_limit: float | None, share: float = SHARE, cap: float = MAX_SECONDS
) -> float:
    """Return the seconds a prover with ``time_limit`` gives its beam.

    By default a fifth of the limit, at most two seconds (`SHARE`,
    `MAX_SECONDS`): on deals 1-20 the beam's lines sum to 266 cards at 2 s and
    257 at 5 s, so the rest of the time is better spent on the lower bound.
    ``cap`` is also the budget without a limit.
    """
    if time_limit is None:
        return cap
    return min(share * time_limit, cap)


def reference_line(
    state: dg.State,
    *,
    deadline: float | None,
    floor: int = 0,
    on_line: Callable[[int, list[dg.Move]], None] | None = None,
) -> tuple[int, list[dg.Move]] | None:
    """Return `best_lines`' score and its line in reference moves (or None).

    For provers that do not speak the compact model (the SAT prover starts
    its search for a proven best score from this line). ``on_line`` gets
    each better line, in reference moves, as soon as a run finds it.
    """
    stream = None
    if on_line is not None:

        def stream(line: BeamLine) -> None:
            on_line(*_in_reference_moves(state, line))

    found = best_lines(state, deadline=deadline, floor=floor, on_line=stream)
    if found is None:
        return None
    return _in_reference_moves(state, found)


def _in_reference_moves(state: dg.State, line: BeamLine) -> tuple[int, list[dg.Move]]:
    """Return ``line``'s score and moves, the score read off the reference
    engine's final position, not taken on the compact model's word.

    Other provers search below this score at once (and a portfolio shares it),
    so a model that miscounted would mislead them before any final replay.
    """
    moves = sm.to_reference(state, list(line.moves))
    end = state
    for move in moves:
        end = dg.apply(end, move)
    if dg.score(end) != line.score:
        raise ResultCheckError(
            f"the beam's line leaves {dg.score(end)} cards, not {line.score}"
        )
    return line.score, moves


class Beam:
    """Beam runs over one position's compact state graph."""

    def __init__(self, model: sm.Model, root: sm.Node) -> None:
        self.model = model
        self.root = root
        self.deadline: float | None = None
        #: Positions met in a run, each with the move that first reached it.
        self._parent: dict[sm.Node, tuple[sm.Node, sm.Move] | None] = {}
        self._dropped = False
        self._canons = 0

    def best(
        self,
        *,
        deadline: float | None,
        widths: Sequence[int] = WIDTHS,
        floor: int = 0,
        guide: BeamLine | None = None,
        on_line: OnLine | None = None,
    ) -> BeamLine | None:
        """Run ``widths`` in turn, each guided by the best line so far.

        Stops early at ``deadline``, at a line scoring ``floor`` or less, or
        after a run that dropped nothing; returns the best line (``guide``
        when no run beat it). ``on_line`` gets each line better than the
        one before (the first included) when its run ends, so that a prover
        running beside the beam can use it before the beam's time is up.

        A run with no line in hand (no ``guide``, no run ended yet) ignores
        the deadline: a caller asking for a line gets one, however slow the
        machine. Why: the SAT prover's beam share counts from the prover's
        start (`devils_grip_sat.ALONE`: a twentieth of the limit), and on a
        day this machine ran at half speed (calibration 1.3-1.9 s against
        the README tables' 0.8) building the formula used it all up on 159
        of deals 1-1000, which then started from the solver's first model
        (45-58 cards left) instead of a beam line (about 20). Whether a deal
        had a beam line hung on a few hundredths of a second of build time.
        The narrowest run costs little: width 8 takes about 25 ms on a whole
        deal (50 ms at half speed). Paired runs that day, best scores at 10 s
        (`docs/best-scores.md`, "The beam's first run always ends"): 724
        proofs against 727 in five runs, the proofs both made 2.1 % sooner.
        """
        best, runs = guide, []
        pace: tuple[int, float] | None = None
        with cycles_uncollected():
            for width in widths:
                if best is not None and best.score <= floor:
                    break
                began = time.monotonic()
                if not fits(pace, width, began, deadline):
                    break
                self.deadline = deadline if best is not None else None
                try:
                    found = self.run(width, best)
                except _OutOfTime:
                    break
                pace = (width, time.monotonic() - began)
                runs.append(width)
                complete = not self._dropped
                better = best is None or found.score < best.score
                if better:
                    best = found
                best = BeamLine(
                    best.score, best.moves, best.width, tuple(runs), complete
                )
                if better and on_line is not None:
                    on_line(best)
                if complete:
                    break
        return best

    def run(self, width: int, guide: BeamLine | None = None) -> BeamLine:
        """Return the best line of one beam of ``width`` (never worse than
        ``guide``, whose positions it keeps)."""
        model = self.model
        keep = self._positions(guide.moves) if guide is not None else set()
        self._parent = {self.root: None}
        self._dropped = False
        layers: dict[int, dict[sm.Node, None]] = {self.root[0]: {self.root: None}}
        for p in range(self.root[0], model.n):
            arrivals = layers.pop(p, None)
            if arrivals:
                chosen = self._select(self._candidates(arrivals), width, keep)
                for node, children in chosen:
                    self._expand(node, children, layers)
        score, moves = self._finish(layers.pop(model.n, {}))
        if guide is not None and guide.score <= score:
            return guide
        return BeamLine(score, moves, width)

    # -- one layer ---------------------------------------------------------------
    def _candidates(self, arrivals: Iterable[sm.Node]) -> list[sm.Node]:
        """Return the arrivals and every position their talon plays reach."""
        out = []
        for node in arrivals:
            while node is not None:
                out.append(node)
                after = self.model.talon_play(node)
                if after is not None:
                    self._parent.setdefault(after, (node, sm.TALON))
                node = after
        return out

    def _select(
        self, nodes: list[sm.Node], width: int, keep: set[sm.Node]
    ) -> list[tuple[sm.Node, Children]]:
        """Return the ``width`` best distinct positions with their children,
        plus the guide's positions among ``nodes``."""
        nodes = sorted(set(nodes), key=rank)
        chosen: dict[sm.Node, Children] = {}
        #: Canonical key -> (dead cards, the position chosen for it).
        seen: dict[tuple, tuple[int, sm.Node]] = {}
        for node in nodes:
            if len(chosen) == width:
                self._dropped = True
                break
            canon = self._canon(node)
            other = seen.get(canon.key)
            if other is not None and canon.dead >= other[0]:
                continue  # the same future with no fewer dead cards
            children = self._children(node, canon)
            if children is not None:
                if other is not None:
                    del chosen[other[1]]
                chosen[node] = children
                seen[canon.key] = (canon.dead, node)
        for node in keep.intersection(nodes).difference(chosen):
            children = self._children(node, self._canon(node))
            if children is not None:
                chosen[node] = children
        return list(chosen.items())

    def _canon(self, node: sm.Node) -> sm.Canon:
        """Return the canonical form of ``node`` (the clock is read here)."""
        self._canons += 1
        if self._canons % CLOCK_EVERY == 0:
            self._check_clock()
        return self.model.canon(node)

    def _children(self, node: sm.Node, canon: sm.Canon) -> Children | None:
        """Return the moves worth trying from ``node``, or None when its only
        move is a safe talon play."""
        children = self.model.children(node, canon)
        if len(children) == 1 and children[0][0] == sm.TALON:
            return None
        return children

    def _expand(
        self, node: sm.Node, children: Children, layers: dict[int, dict[sm.Node, None]]
    ) -> None:
        """Add ``node``'s merges and deal to the layers they reach."""
        for move, child in children:
            if move == sm.TALON:
                continue  # a candidate of this layer already
            self._parent.setdefault(child, (node, move))
            layers.setdefault(child[0], {})[child] = None

    def _finish(self, arrivals: Iterable[sm.Node]) -> tuple[int, tuple[sm.Move, ...]]:
        """Return the best score at the stock's end and its line."""
        best: tuple[int, sm.Node, int] | None = None
        for node in arrivals:
            plays, final = self.model.final_plays(node)
            if best is None or len(final[1]) < best[0]:
                best = (len(final[1]), node, plays)
        assert best is not None, "a beam keeps at least one line"
        score, node, plays = best
        return score, tuple(self._path(node)) + (sm.TALON,) * plays

    # -- lines ---------------------------------------------------------------------
    def _path(self, node: sm.Node) -> list[sm.Move]:
        """Return the moves that first reached ``node`` in this run."""
        moves = []
        step = self._parent[node]
        while step is not None:
            node, move = step
            moves.append(move)
            step = self._parent[node]
        moves.reverse()
        return moves

    def _positions(self, moves: Iterable[sm.Move]) -> set[sm.Node]:
        """Return the positions a line from the root passes through."""
        node = self.root
        out = {node}
        for move in moves:
            node = apply(self.model, node, move)
            out.add(node)
        return out

    def _check_clock(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _OutOfTime


def fits(
    pace: tuple[int, float] | None, width: int, now: float, deadline: float | None
) -> bool:
    """Whether a run of ``width`` started ``now`` should end by ``deadline``.

    ``pace`` is the last run's width and seconds (None before the first run,
    which is always tried). A run's time grows linearly with its width
    (about 3 ms per unit on a whole deal; doubling the width took 2.1-2.3
    times as long on deals 102, 109 and 122), so the estimate is the last
    run's time scaled by the widths' ratio. Why skip: a run cut by the
    deadline is thrown away, and at a 10 s limit the line-finding member's
    beam (4 s) used to spend 1-2 s on a width 1024 it could not finish
    instead of handing over to the neighbourhood search.
    """
    if deadline is None or pace is None:
        return True
    last_width, seconds = pace
    return now + seconds * width / last_width < deadline


def rank(node: sm.Node) -> tuple[float, int]:
    """Order a layer's positions, best first (see the module docstring)."""
    return len(node[1]) - OPEN_TOP_WEIGHT * len(node[3]), hash(node)


def apply(model: sm.Model, node: sm.Node, move: sm.Move) -> sm.Node:
    """Return the abstract successor of ``node`` by ``move``."""
    if move == sm.DEAL:
        return model.deal(node)
    if move == sm.TALON:
        after = model.talon_play(node)
        if after is None:
            raise ValueError("no talon play here")
        return after
    return model.merge(node, move[1])
