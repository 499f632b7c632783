"""Besieged Fortress: an exact search prover (verdict and winning line).

Graph search over the positions reachable from a start, with a transposition
table of every position visited, so that cycles (row-to-row moves are often
reversible) and transpositions are expanded once. A win is found as a line; a
dead end is proven by exhausting a table: the start's whole reachable graph, up
to the reductions below, holds no winning position. Each reduction is sound,
and each is argued here.

**Strategies.** Three searches take turns (`Search`), each with its own table,
so none steals positions from another and each follows its own order: plain
depth-first search (moves in a fixed order of kinds; the cheapest per
position), *guided* depth-first search (each position's children tried best
`estimate` first) and greedy best-first search on `estimate`. Different deals
fall to different orders (measured: each wins deals the others miss within
seconds); plain depth-first search gets a growing share of the turns
(`turn`). Each one alone expands every position it reaches and skips only
positions already in its own table, so the first to empty its frontier
without meeting a sorted position has proven the dead end by itself. The
heuristic only orders the search; no verdict depends on it.

**Run moves (macros, no reduction).** A run is a sequence of cards at the
outer end of a row, each one rank below the card under it. With ``e`` empty
rows, ``n <= 2 ** e`` outer cards of a run reach a card one rank above the
lowest of them (or an empty row, through the ``e - 1`` others) by single
moves: half to an empty row, the rest to the target, the half back onto it
(`shift`). The search offers such a move as one step besides every single
move. It adds edges between positions that single moves already connect and
adds no position, so the reachable set, and with it every dead-end proof, is
unchanged; it only lets the search see the end of a long shuffle at once.
Lines are expanded into single moves (`to_moves`) and replayed by the
reference engine.

**Rows as a multiset.** The rules never look at a row's number: a card may go
onto any row whose available card is one rank higher, or into any empty row,
and nothing depends on the side or order of the rows. So permuting the rows is
an automorphism of the game graph; two positions that differ only by the order
of their rows are both won or both lost. The table therefore keys a position by
its rows sorted (foundations are implied: every card in no row is home). For
the same reason only one empty row is tried as a target, and a lone card is
never moved into an empty row (that only renumbers the rows).

**Sorted rows win.** Once every row descends in rank towards its outer end,
the position is won by foundation moves alone (`finishing_moves` in the rules
engine proves it). The search stops there and appends those moves. A row move
never unsorts a row (a card only goes onto one rank higher or into an empty
row), so the count of *breaks* (adjacent cards rising outwards) never grows;
it is kept incrementally and a win is ``breaks == 0``.

**Safe foundation moves.** Let ``c`` (rank ``r``, suit ``s``) be available with
its foundation at ``r - 1``, and let every card of rank ``r - 2`` or lower be
home (``r <= min(foundations) + 2``). Then moving ``c`` home loses no win, so
it is made at once, without branching. Proof: take a winning line ``L`` from
the position ``P``; build a line ``L'`` from ``P + (c home)`` that keeps the
invariant "the rows of ``L'`` are those of ``L`` less a set ``H`` of cards that
``L'`` already has home, and the cards of ``H`` lie at the outer ends of their
rows in ``L``". Initially ``H = {c}`` and ``c`` is available. Replay each move
of ``L``:

- a move of a card of ``H`` (within the rows or home) is skipped;
- a card ``d`` going onto ``c`` has rank ``r - 1``; every card of rank
  ``r - 2`` is home, so ``d``'s foundation shows ``r - 2`` and ``L'`` plays
  ``d`` home instead (``d`` is available in ``L'`` as it is in ``L``), adding
  it to ``H``;
- nothing goes onto a card ``d`` of ``H`` of rank ``r - 1``: that would be a
  card of rank ``r - 2``, all home; so cards of ``H`` stay at the outer ends;
- any other move keeps its meaning: its card is not in ``H`` and is available
  in ``L'`` too; its target row shows in ``L'`` the same available card as in
  ``L`` (cards of ``H`` are outermost, and no card goes onto them but the
  cases above), an empty target row in ``L`` is empty in ``L'``, and a
  foundation move of a card not in ``H`` finds the same foundation top (a
  suit's foundation differs between ``L`` and ``L'`` only while a card of
  ``H`` of that suit, its next card, is not yet home in ``L``, and then ``L``
  plays no other card of that suit home).

At the end of ``L`` every card is home, so ``L'`` ends won. Hence if ``P + (c
home)`` is lost, so is ``P``, and the reduced graph proves dead ends too. The
rule is checked against a search without it on small positions
(``tests/test_besieged_fortress_search.py``).

Dead-end proofs need the whole reachable graph, so they come only from
exhaustion; a search that runs out of time says ``unknown``.
"""

from __future__ import annotations

import heapq
import time
from typing import Any

from . import besieged_fortress as bf
from .cards import Card
from .results import ProofResult, Question, Status, check_question, check_result

ENGINE = "search"
HOME = -1
#: Expansions each strategy makes per turn (the clock is read once a turn).
#: Plain depth-first search, the cheapest per position, gets more; see `turn`.
SLICE = {"guided": 256, "best": 256, "dfs": 512}
#: Heuristic weights of the best-first strategy (cards home, breaks, depth of
#: the next foundation cards, empty rows, cards that must still move).
WEIGHTS = (5.0, 1.0, 0.5, 4.0, 3.0)

Rows = list[bytes]
Step = tuple[int, int, int]  # (src, dst, cards); dst == HOME: a foundation move
Child = tuple[list[Step], Rows, list[int], int]
STRATEGY_NAMES = {
    "dfs": "depth-first search",
    "guided": "guided depth-first search",
    "best": "best-first search",
    "shared": "all strategies over one table",
    "none": "safe foundation moves alone",
}
CARD_BYTE = [bytes((i,)) for i in range(256)]


def encode(card: Card) -> int:
    """Return a card's byte code: rank * 4 + suit (8..55, never 0)."""
    return card.rank * 4 + card.suit


def to_internal(state: bf.State) -> tuple[Rows, list[int], int]:
    """Return rows as bytes (inner to outer), foundations and the break count."""
    rows = [bytes(encode(c) for c in row) for row in state.rows]
    breaks = sum(
        1 for row in rows for a, b in zip(row, row[1:], strict=False) if a >> 2 < b >> 2
    )
    return rows, list(state.foundations), breaks


def key(rows: Rows) -> bytes:
    """Return the transposition key: the rows as a multiset (sorted, joined)."""
    return b"\x00".join(sorted(rows))


def is_safe(card: int, found: list[int]) -> bool:
    """Return whether ``card`` goes home and every rank two lower is home."""
    rank = card >> 2
    return found[card & 3] == rank - 1 and rank <= min(found) + 2


def autoplay(rows: Rows, found: list[int], steps: list[Step]) -> int:
    """Play safe foundation moves in place until none is left; return breaks removed."""
    removed = 0
    again = True
    while again:
        again = False
        for src in range(bf.ROWS):
            row = rows[src]
            if row and is_safe(row[-1], found):
                if len(row) >= 2 and row[-2] >> 2 < row[-1] >> 2:
                    removed += 1
                rows[src] = row[:-1]
                found[row[-1] & 3] = row[-1] >> 2
                steps.append((src, HOME, 1))
                again = True
    return removed


_RUN: dict[bytes, int] = {}


def top_run(row: bytes) -> int:
    """Return the length of the run at the outer end of ``row``.

    A run is a sequence of cards each exactly one rank below the card under it
    (any suits), so it may be moved as a unit through empty rows.
    """
    length = _RUN.get(row)
    if length is None:
        length = 1
        while length < len(row) and row[-length - 1] >> 2 == (row[-length] >> 2) + 1:
            length += 1
        if len(_RUN) < 1_000_000:
            _RUN[row] = length
    return length


def candidate_moves(rows: Rows, found: list[int]) -> list[Step]:
    """Return the moves worth trying, most promising first.

    Every legal move is listed except those that only renumber rows (a lone
    card into an empty row, or into a second empty row). Besides them come
    *run moves* ``(src, dst, n)``: the outer ``n >= 2`` cards of a run moved
    onto a card one rank above its lowest card, or into an empty row, through
    the other empty rows (``n <= 2 ** free``); each is a macro of single
    moves, so it adds edges to the graph but no position. Order (a heuristic):
    foundation moves, moves that empty a row, moves that lift cards off a lower
    card, moves into an empty row, then the rest.
    """
    outer = [row[-1] >> 2 if row else 0 for row in rows]
    free = outer.count(0)
    empty = outer.index(0) if free else -1
    home: list[Step] = []
    lone: list[Step] = []
    lift: list[Step] = []
    lift_empty: list[Step] = []
    other: list[Step] = []
    other_empty: list[Step] = []
    for src in range(bf.ROWS):
        rank = outer[src]
        if not rank:
            continue
        row = rows[src]
        if found[row[-1] & 3] == rank - 1:
            home.append((src, HOME, 1))
        if len(row) == 1:
            bucket, spare = lone, None
        elif row[-2] >> 2 < rank:
            bucket, spare = lift, lift_empty
        else:
            bucket, spare = other, other_empty
        if rank + 1 in outer:
            bucket += [
                (src, dst, 1) for dst in range(bf.ROWS) if outer[dst] == rank + 1
            ]
        if empty >= 0 and spare is not None:
            spare.append((src, empty, 1))
        if free and len(row) >= 2:
            run = top_run(row)
            if run >= 2:
                run_moves(row, src, outer, run, free, empty, lone, lift, other)
    return home + lone + lift + lift_empty + other + other_empty


def run_moves(
    row: bytes,
    src: int,
    outer: list[int],
    run: int,
    free: int,
    empty: int,
    lone: list[Step],
    lift: list[Step],
    other: list[Step],
) -> None:
    """Append the run moves out of row ``src`` to their buckets."""
    rank = outer[src]
    most = min(run, 1 << free)
    for dst in range(bf.ROWS):
        count = outer[dst] - rank  # cards moved so the lowest goes on dst
        if 2 <= count <= most:
            bucket = run_bucket(row, count, lone, lift, other)
            bucket.append((src, dst, count))
    count = min(run, 1 << (free - 1))
    if count >= 2 and count < len(row):
        run_bucket(row, count, lone, lift, other).append((src, empty, count))


def run_bucket(
    row: bytes, count: int, lone: list[Step], lift: list[Step], other: list[Step]
) -> list[Step]:
    """Return the bucket of a move of the outer ``count`` cards of ``row``."""
    if count == len(row):
        return lone
    if row[-count - 1] >> 2 < row[-count] >> 2:
        return lift
    return other


def child(rows0: Rows, found0: list[int], breaks: int, step: Step, safe: bool) -> Child:
    """Return the position after ``step`` and the safe moves it triggers.

    The parent's lists are not changed. After a row move only the card it
    uncovered can have become safe; after a foundation move any can.
    """
    src, dst, count = step
    row = rows0[src]
    card = row[-count]
    rows = rows0[:]
    rest = rows[src] = row[:-count]
    if rest and rest[-1] >> 2 < card >> 2:
        breaks -= 1
    steps = [step]
    if dst == HOME:
        found = found0[:]
        found[card & 3] = card >> 2
        if safe:
            breaks -= autoplay(rows, found, steps)
        return steps, rows, found, breaks
    rows[dst] = rows0[dst] + (CARD_BYTE[card] if count == 1 else row[-count:])
    if safe and rest and is_safe(rest[-1], found0):
        found = found0[:]
        breaks -= autoplay(rows, found, steps)
        return steps, rows, found, breaks
    return steps, rows, found0, breaks


class MustMove(dict[bytes, int]):
    """Memo: a row's count of cards above its lowest rising pair.

    Those cards must all move before the row is sorted (a move never sorts
    what lies under a card), so the count measures how far a row is from
    sorted. Looked up with ``MUST[row]``; computed on a miss.
    """

    def __missing__(self, row: bytes) -> int:
        count = 0
        for i in range(1, len(row)):
            if row[i] >> 2 > row[i - 1] >> 2:
                count = len(row) - i
                break
        if len(self) < 1_000_000:
            self[row] = count
        return count


MUST = MustMove()


def estimate(k: bytes, rows: Rows, found: list[int], breaks: int) -> float:
    """Return the best-first heuristic (lower is more promising).

    It rewards cards home and empty rows, and penalises breaks, cards that
    must still move, and how deep the next card of each foundation lies
    (found in the key ``k``, whose rows are joined by zero bytes). It only
    orders the search; no verdict depends on it.
    """
    w_home, w_breaks, w_depth, w_empty, w_must = WEIGHTS
    depth = 0
    for suit in range(4):
        if found[suit] < bf.KING:
            at = k.find(CARD_BYTE[(found[suit] + 1) * 4 + suit])
            end = k.find(0, at)
            depth += (len(k) if end < 0 else end) - at - 1
    must = sum(map(MUST.__getitem__, rows))
    return (
        w_breaks * breaks
        + w_depth * depth
        + w_must * must
        - w_home * sum(found)
        - w_empty * rows.count(b"")
    )


class Strategy:
    """One order of search over a transposition table (its own or shared).

    A strategy starts from a position (rows, foundations, breaks), expands its
    ``frontier`` in turns (`advance`) and is `done` when the frontier is
    empty: then every position reachable from the start is in ``seen``.
    """

    name = ""
    frontier: list

    def __init__(
        self,
        search: Search,
        seen: set[bytes],
        rows: Rows,
        found: list[int],
        breaks: int,
    ) -> None:
        self.search = search
        self.seen = seen
        self.frontier = self.start(rows, found, breaks)

    def start(self, rows: Rows, found: list[int], breaks: int) -> list:
        """Return the frontier holding only the start position."""
        raise NotImplementedError

    def advance(self, budget: int) -> list[Step] | None:
        """Expand up to ``budget`` positions; return a winning line if found."""
        raise NotImplementedError

    @property
    def done(self) -> bool:
        """Return whether this strategy's frontier is exhausted."""
        return not self.frontier


class DepthFirst(Strategy):
    """Depth-first strategy: a stack of frames, one per position on the path."""

    name = "dfs"

    def start(self, rows: Rows, found: list[int], breaks: int) -> list:
        # frame: rows, foundations, breaks, candidate moves, next index, steps in
        return [[rows, found, breaks, candidate_moves(rows, found), 0, []]]

    def advance(self, budget: int) -> list[Step] | None:
        """Expand up to ``budget`` positions; return a winning line if found."""
        seen, safe, stack = self.seen, self.search.safe, self.frontier
        while stack and budget > 0:
            frame = stack[-1]
            if frame[4] >= len(frame[3]):
                stack.pop()
                continue
            step = frame[3][frame[4]]
            frame[4] += 1
            steps, rows, found, breaks = child(frame[0], frame[1], frame[2], step, safe)
            if breaks == 0:
                return [s for f in stack for s in f[5]] + steps
            k = key(rows)
            if k in seen:
                continue
            seen.add(k)
            budget -= 1
            stack.append([rows, found, breaks, candidate_moves(rows, found), 0, steps])
        return None


class GuidedDepthFirst(Strategy):
    """Depth-first strategy that tries each position's children best `estimate`
    first: cheap like depth-first search, steered like best-first search."""

    name = "guided"

    def start(self, rows: Rows, found: list[int], breaks: int) -> list:
        # frame: children (best last), steps into the frame's position
        return [[self.children(rows, found, breaks), []]]

    def children(self, rows0: Rows, found0: list[int], breaks0: int) -> list[Any]:
        """Return the unseen children of a position, the most promising last."""
        seen, safe = self.seen, self.search.safe
        out = []
        for step in candidate_moves(rows0, found0):
            steps, rows, found, breaks = child(rows0, found0, breaks0, step, safe)
            k = key(rows)
            if breaks and k in seen:
                continue
            out.append(
                (estimate(k, rows, found, breaks), k, steps, rows, found, breaks)
            )
        out.sort(key=lambda c: -c[0])
        return out

    def advance(self, budget: int) -> list[Step] | None:
        """Expand up to ``budget`` positions; return a winning line if found."""
        seen, stack = self.seen, self.frontier
        while stack and budget > 0:
            frame = stack[-1]
            if not frame[0]:
                stack.pop()
                continue
            _, k, steps, rows, found, breaks = frame[0].pop()
            if breaks == 0:
                return [s for f in stack for s in f[1]] + steps
            if k in seen:
                continue
            seen.add(k)
            budget -= 1
            stack.append([self.children(rows, found, breaks), steps])
        return None


class BestFirst(Strategy):
    """Greedy best-first strategy on `estimate`, with parent links for the line."""

    name = "best"

    def start(self, rows: Rows, found: list[int], breaks: int) -> list:
        self.count = 0
        # entry: estimate, tie-break, rows, foundations, breaks, node
        # node: (parent node, steps into this position) or None at the start
        return [(0.0, 0, rows, found, breaks, None)]

    def advance(self, budget: int) -> list[Step] | None:
        """Expand up to ``budget`` positions; return a winning line if found."""
        seen, safe, heap = self.seen, self.search.safe, self.frontier
        while heap and budget > 0:
            _, _, rows0, found0, breaks0, node = heapq.heappop(heap)
            budget -= 1
            for step in candidate_moves(rows0, found0):
                steps, rows, found, breaks = child(rows0, found0, breaks0, step, safe)
                if breaks == 0:
                    return self.line(node) + steps
                k = key(rows)
                if k in seen:
                    continue
                seen.add(k)
                self.count += 1
                entry = (
                    estimate(k, rows, found, breaks),
                    self.count,
                    rows,
                    found,
                    breaks,
                )
                heapq.heappush(heap, (*entry, (node, steps)))
        return None

    @staticmethod
    def line(node: Any) -> list[Step]:
        """Return the steps from the start to ``node``."""
        parts = []
        while node is not None:
            node, steps = node
            parts.append(steps)
        return [s for steps in reversed(parts) for s in steps]


def turn(strategy: str, seconds: int) -> int:
    """Return how many expansions ``strategy`` makes in its next turn.

    Plain depth-first search's turn grows by its base size each second of
    search. Measured on numbered deals: the guided orders find most wins
    within the first second, while the slow settlements (the dead ends, which
    every strategy must exhaust alike, and the wins found late) mostly come
    from plain depth-first search, the cheapest per position.
    """
    if strategy == "dfs":
        return SLICE[strategy] * (1 + seconds)
    return SLICE[strategy]


class Search:
    """A portfolio of strategies that take turns of `SLICE` expansions.

    With ``shared=False`` (the default) each strategy keeps its own
    transposition table: they do not steal positions from one another, so
    each follows its own order, and each alone is an exhaustive search of the
    reduced graph. The first to empty its frontier without a win has proven
    the dead end by itself. With ``shared=True`` they share one table, so
    every position is expanded once in all, and the dead end is proven only
    when every frontier is empty. Either way the strategies only change how
    soon a win is found, never a dead-end proof.
    """

    def __init__(
        self,
        *,
        safe: bool = True,
        deadline: float | None = None,
        strategies: tuple[str, ...] = ("guided", "best", "dfs"),
        shared: bool = False,
    ) -> None:
        self.safe = safe
        self.deadline = deadline
        self.strategies = strategies
        self.shared = shared
        self.seen: set[bytes] = set()
        self.tables: list[set[bytes]] = []
        self.timed_out = False
        #: the strategy that found the win or exhausted its table
        self.winner = "none"

    def run(self, state: bf.State) -> list[Step] | None:
        """Return a line to a sorted position, or None when none exists.

        Sets ``timed_out`` (and returns None) when the deadline passes first.
        """
        rows, found, breaks = to_internal(state)
        first: list[Step] = []
        if self.safe:
            breaks -= autoplay(rows, found, first)
        if breaks == 0:
            return first
        self.seen.add(key(rows))
        kinds = {"dfs": DepthFirst, "best": BestFirst, "guided": GuidedDepthFirst}
        runners = [
            kinds[name](self, self.table(rows), rows, found, breaks)
            for name in self.strategies
        ]
        began = time.monotonic()
        while runners:
            seconds = int(time.monotonic() - began)
            for runner in runners:
                line = runner.advance(turn(runner.name, seconds))
                if line is not None:
                    self.winner = runner.name
                    return first + line
                if runner.done and not self.shared:
                    self.winner = runner.name
                    self.seen = runner.seen  # this table alone is the proof
                    return None
            runners = [r for r in runners if not r.done]
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.timed_out = bool(runners)
                return None
        self.winner = "shared"
        return None

    def table(self, rows: Rows) -> set[bytes]:
        """Return a strategy's transposition table: the shared one or its own."""
        if self.shared:
            return self.seen
        own = {key(rows)}
        self.tables.append(own)
        return own

    @property
    def states(self) -> int:
        """Return how many positions the strategies have visited in all."""
        return sum(map(len, self.tables)) if self.tables else len(self.seen)


def shift(count: int, src: int, dst: int, free: list[int]) -> list[tuple[int, int]]:
    """Return single moves taking the outer ``count`` cards of a run from ``src``
    to ``dst`` through the empty rows ``free`` (``count <= 2 ** len(free)``).

    The outer half goes to an empty row, the inner half to ``dst`` through the
    other empty rows, then the outer half follows it there.
    """
    if count == 1:
        return [(src, dst)]
    half, spare, others = count // 2, free[0], free[1:]
    return (
        shift(half, src, spare, others)
        + shift(count - half, src, dst, others)
        + shift(half, spare, dst, others)
    )


def to_moves(state: bf.State, steps: list[Step]) -> list[bf.Move]:
    """Return the rules engine's single moves for internal steps from ``state``.

    Row numbers are the same; a run move becomes its single moves through the
    rows that are empty when it is made (the lowest numbers first).
    """
    moves: list[bf.Move] = []
    for src, dst, count in steps:
        single: list[bf.Move]
        if dst == HOME:
            single = [bf.HomeMove(src)]
        else:
            free = [i for i, row in enumerate(state.rows) if not row and i != dst]
            single = [bf.RowMove(s, d) for s, d in shift(count, src, dst, free)]
        for move in single:
            state = bf.apply(state, move)
        moves += single
    return moves


def winning_line(state: bf.State, steps: list[Step]) -> list[bf.Move]:
    """Return the full winning line: the steps, then the finishing moves."""
    return bf.with_finish(state, to_moves(state, steps))


def prove(
    state: bf.State,
    *,
    question: Question = Question.VERDICT,
    time_limit: float | None = None,
) -> ProofResult:
    """Prove ``state`` won (with a replayed line) or lost (search exhausted)."""
    check_question(bf.GAME, question)
    began = time.monotonic()
    deadline = None if time_limit is None else began + time_limit
    search = Search(deadline=deadline)
    steps = search.run(state)
    elapsed = round(time.monotonic() - began, 4)
    stats: dict[str, Any] = {"states": search.states}
    if not search.timed_out:
        stats["strategy"] = search.winner
    if steps is not None:
        line = tuple(bf.format_move(m) for m in winning_line(state, steps))
        result = ProofResult(
            status=Status.WON,
            proven=True,
            engine=ENGINE,
            question=question,
            best_score=0,
            line=line,
            method=f"winning line found by {STRATEGY_NAMES[search.winner]}, replayed",
            elapsed=elapsed,
            stats=stats,
        )
    elif search.timed_out:
        result = ProofResult(
            status=Status.UNKNOWN,
            proven=False,
            engine=ENGINE,
            question=question,
            method=f"search stopped at the time limit after {search.states} states",
            elapsed=elapsed,
            stats=stats,
        )
    else:
        result = ProofResult(
            status=Status.LOST,
            proven=True,
            engine=ENGINE,
            question=question,
            method=(
                f"search exhausted: {len(search.seen)} states by "
                f"{STRATEGY_NAMES[search.winner]} (rows as a multiset, "
                "safe foundation moves at once, every single move tried); "
                "no sorted position is reachable"
            ),
            elapsed=elapsed,
            stats=stats,
        )
    return check_result(bf.GAME, state, result)
