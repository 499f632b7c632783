"""Besieged Fortress: an exact search prover (verdict and winning line).

Depth-first search over the positions reachable from a start, with a
transposition table of every position visited, so that cycles (row-to-row
moves are often reversible) and transpositions are expanded once. A win is
found as a line; a dead end is proven by exhausting the table: the start's
whole reachable graph, up to the reductions below, holds no winning position.
Each reduction is sound, and each is argued here.

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
from collections.abc import Iterator
from typing import Any

from . import besieged_fortress as bf
from .cards import Card
from .errors import UnsupportedError
from .results import ProofResult, Question, Status, check_result

ENGINE = "search"
HOME = -1
#: Expansions each strategy makes per turn (the clock is read once a turn).
SLICE = 256
#: Heuristic weights of the best-first strategy (cards home, breaks, depth of
#: the next foundation cards, empty rows, cards that must still move).
WEIGHTS = (5.0, 1.0, 0.5, 4.0, 3.0)

Rows = list[bytes]
Step = tuple[int, int]  # (src, dst) with dst == HOME for a foundation move
Child = tuple[list[Step], Rows, list[int], int]
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
                steps.append((src, HOME))
                again = True
    return removed


def candidate_moves(rows: Rows, found: list[int]) -> list[Step]:
    """Return the moves worth trying, most promising first.

    Every legal move is listed except those that only renumber rows (a lone
    card into an empty row, or into a second empty row). Order (a heuristic):
    foundation moves, moves that empty a row, moves that lift a card off a
    lower card, moves into an empty row, then the rest.
    """
    outer = [row[-1] >> 2 if row else 0 for row in rows]
    empty = outer.index(0) if 0 in outer else -1
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
            home.append((src, HOME))
        if len(row) == 1:
            bucket, spare = lone, None
        elif row[-2] >> 2 < rank:
            bucket, spare = lift, lift_empty
        else:
            bucket, spare = other, other_empty
        if rank + 1 in outer:
            bucket += [(src, dst) for dst in range(bf.ROWS) if outer[dst] == rank + 1]
        if empty >= 0 and spare is not None:
            spare.append((src, empty))
    return home + lone + lift + lift_empty + other + other_empty


def child(rows0: Rows, found0: list[int], breaks: int, step: Step, safe: bool) -> Child:
    """Return the position after ``step`` and the safe moves it triggers.

    The parent's lists are not changed. After a row move only the card it
    uncovered can have become safe; after a foundation move any can.
    """
    src, dst = step
    row = rows0[src]
    card = row[-1]
    rows = rows0[:]
    rest = rows[src] = row[:-1]
    if rest and rest[-1] >> 2 < card >> 2:
        breaks -= 1
    steps = [step]
    if dst == HOME:
        found = found0[:]
        found[card & 3] = card >> 2
        if safe:
            breaks -= autoplay(rows, found, steps)
        return steps, rows, found, breaks
    rows[dst] = rows0[dst] + CARD_BYTE[card]
    if safe and rest and is_safe(rest[-1], found0):
        found = found0[:]
        breaks -= autoplay(rows, found, steps)
        return steps, rows, found, breaks
    return steps, rows, found0, breaks


_MUST: dict[bytes, int] = {}


def must_move(row: bytes) -> int:
    """Return how many cards of ``row`` lie above its lowest rising pair."""
    count = _MUST.get(row)
    if count is None:
        count = 0
        for i in range(1, len(row)):
            if row[i] >> 2 > row[i - 1] >> 2:
                count = len(row) - i
                break
        if len(_MUST) < 1_000_000:
            _MUST[row] = count
    return count


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
    must = 0
    for row in rows:
        if row:
            must += must_move(row)
    return (
        w_breaks * breaks
        + w_depth * depth
        + w_must * must
        - w_home * sum(found)
        - w_empty * rows.count(b"")
    )


class DepthFirst:
    """Depth-first strategy: a stack of frames, one per position on the path."""

    def __init__(self, search: Search, rows: Rows, found: list[int], breaks: int):
        self.search = search
        # frame: rows, foundations, breaks, candidate moves, next index, steps in
        self.stack = [[rows, found, breaks, candidate_moves(rows, found), 0, []]]

    def advance(self, budget: int) -> list[Step] | None:
        """Expand up to ``budget`` positions; return a winning line if found."""
        seen, safe, stack = self.search.seen, self.search.safe, self.stack
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

    @property
    def done(self) -> bool:
        """Return whether this strategy's frontier is exhausted."""
        return not self.stack


class BestFirst:
    """Greedy best-first strategy on `estimate`, with parent links for the line."""

    def __init__(self, search: Search, rows: Rows, found: list[int], breaks: int):
        self.search = search
        self.count = 0
        # entry: estimate, tie-break, rows, foundations, breaks, node
        # node: (parent node, steps into this position) or None at the start
        self.heap: list[tuple[float, int, Rows, list[int], int, Any]] = [
            (0.0, 0, rows, found, breaks, None)
        ]

    def advance(self, budget: int) -> list[Step] | None:
        """Expand up to ``budget`` positions; return a winning line if found."""
        seen, safe, heap = self.search.seen, self.search.safe, self.heap
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

    @property
    def done(self) -> bool:
        """Return whether this strategy's frontier is exhausted."""
        return not self.heap


class Search:
    """A portfolio of two strategies over one shared transposition table.

    Depth-first and best-first search take turns of `SLICE` expansions. They
    share the table, so every position enters exactly one frontier and is
    expanded once: when both frontiers are empty the whole reachable graph
    (up to the reductions) has been seen. Diversity only changes how soon a
    win is found, never a dead-end proof.
    """

    def __init__(
        self,
        *,
        safe: bool = True,
        deadline: float | None = None,
        strategies: tuple[str, ...] = ("dfs", "best"),
    ) -> None:
        self.safe = safe
        self.deadline = deadline
        self.strategies = strategies
        self.seen: set[bytes] = set()
        self.timed_out = False

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
        kinds = {"dfs": DepthFirst, "best": BestFirst}
        runners = [kinds[name](self, rows, found, breaks) for name in self.strategies]
        while runners:
            for runner in runners:
                line = runner.advance(SLICE)
                if line is not None:
                    return first + line
            runners = [r for r in runners if not r.done]
            if self.deadline is not None and time.monotonic() > self.deadline:
                self.timed_out = bool(runners)
                return None
        return None


def to_moves(steps: list[Step]) -> list[bf.Move]:
    """Return the rules engine's moves for internal steps (same row numbers)."""
    return [bf.HomeMove(s) if d == HOME else bf.RowMove(s, d) for s, d in steps]


def winning_line(state: bf.State, steps: list[Step]) -> list[bf.Move]:
    """Return the full winning line: the steps, then the finishing moves."""
    moves = to_moves(steps)
    end = state
    for move in moves:
        end = bf.apply(end, move)
    return moves + bf.finishing_moves(end)


def prove(
    state: bf.State,
    *,
    question: Question = Question.VERDICT,
    time_limit: float | None = None,
) -> ProofResult:
    """Prove ``state`` won (with a replayed line) or lost (search exhausted)."""
    if question is not Question.VERDICT:
        raise UnsupportedError(
            "Besieged Fortress has no proven best score; ask for the verdict"
        )
    began = time.monotonic()
    deadline = None if time_limit is None else began + time_limit
    search = Search(deadline=deadline)
    steps = search.run(state)
    elapsed = round(time.monotonic() - began, 4)
    stats = {"states": len(search.seen)}
    if steps is not None:
        line = tuple(bf.format_move(m) for m in winning_line(state, steps))
        result = ProofResult(
            status=Status.WON,
            proven=True,
            engine=ENGINE,
            question=question,
            best_score=0,
            line=line,
            method="winning line found by depth-first search, replayed",
            elapsed=elapsed,
            stats=stats,
        )
    elif search.timed_out:
        result = ProofResult(
            status=Status.UNKNOWN,
            proven=False,
            engine=ENGINE,
            question=question,
            method=f"search stopped at the time limit after {len(search.seen)} states",
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
                f"search exhausted: {len(search.seen)} states (rows as a multiset, "
                "safe foundation moves only); no sorted position is reachable"
            ),
            elapsed=elapsed,
            stats=stats,
        )
    return check_result(bf.GAME, state, result)


def iter_reachable(state: bf.State) -> Iterator[bf.State]:
    """Yield every position reachable from ``state`` (small positions only).

    The plain breadth-first closure under the rules engine, with no reduction
    at all: the reference the tests hold the reductions against.
    """
    seen = {state}
    todo = [state]
    while todo:
        current = todo.pop()
        yield current
        for move in bf.legal_moves(current):
            nxt = bf.apply(current, move)
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
