"""Difficulty of a winnable Devil's Grip deal: measured features and a grade.

A constructed deal is winnable by construction; how *hard* it is depends on
how far from a win simple players get who, like a person, cannot see the
stock. Two players are run on the deal with a fast table (`Table`) that
follows the rule card exactly (tests replay its lines with the reference
engine):

- the **greedy** player: play the talon top whenever it fits, else merge
  whenever a merge exists (the first in cell order), else deal;
- **casual** players (`PLAYOUTS` of them): the same, but each time a merge is
  possible they deal instead with probability `SKIP_MERGE`, and they pick the
  merge at random. Their random numbers come from SplitMix64 seeded by the
  deal's id, so a deal's features never change.

Neither player merges once the stock is exhausted: such a merge empties a cell
for good and rules out a win. A deal's *difficulty* ``D`` is the number of
cards left in the talon by the better of the greedy player and the best tenth
of the casual players (the 10th percentile of their scores); the grade comes
from ``D`` by thresholds calibrated once on 200 generated deals (roughly even
thirds of the deals that are not easy) and frozen here; see ``docs/grades.md``
for the table:

========  ======================  ===============================================
easy      ``D = 0``               a simple player wins
medium    ``1 <= D <= 5``         Bicycle's "excellent" band for the remainder
hard      ``6 <= D <= 10``        Bicycle's "good" band
expert    ``D >= 11``             greedy and 9 casual players in 10 leave 11+
========  ======================  ===============================================

Why these players and this statistic (``python -m patience_encodings.generate
calibrate``): the greedy score is exact (picking its merges at random changed
it on none of the 200 calibration deals), and the 10th percentile of 64
casual players is stable: with another random stream the grade agreed on 96 %
of the calibration deals (93 % on 200 other deals), against 71 % (66 %) for a
grade built on the best single playout.

Two structural features are reported beside them: ``stock_bases``, the base
cards (2, 3, 4) in the stock -- each must be drawn into the grid by a merge
exactly while it is the stock top (a *tight merge*), since a base card on the
talon never leaves it -- and ``forced_merges``, the fewest merges that the
stock-pointer arithmetic forces: from pointer ``p`` a base at stock position
``k`` is reached only with ``(k - p) mod 3`` merges on the way (deals move the
pointer by 3), plus its own. They are measured, not graded on: over the
calibration set they do not track how far the players get.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from verifier import devils_grip as dg
from verifier.cards import Card
from verifier.shuffle import Rng

GRADES = ("easy", "medium", "hard", "expert")
#: Casual players run per deal, and how often each skips a possible merge.
PLAYOUTS = 64
SKIP_MERGE = 0.1
#: Frozen thresholds on the difficulty ``D`` (see the module docstring).
MEDIUM_MAX = 5
HARD_MAX = 10

#: Card codes: ``4 * rank + suit``, so a card fits on another iff its code is
#: exactly ``STEP_CODE`` more (same suit, rank + 3), and base cards are below
#: ``BASE_LIMIT``.
STEP_CODE = 4 * dg.STEP
BASE_LIMIT = 4 * (max(dg.BASE_RANKS) + 1)


def deal_id(deal: Sequence[Card]) -> str:
    """Return a deal's stable id: the first 12 hex digits of SHA-256 of its text."""
    return hashlib.sha256(dg.format_deal(deal).encode()).hexdigest()[:12]


def _code(card: Card) -> int:
    return 4 * card.rank + card.suit


# -- the fast table ----------------------------------------------------------------
class Table:
    """A Devil's Grip table reduced to what play needs: each cell's bottom and top.

    Merges move whole stacks and talon plays add on top, so legality only ever
    looks at bottoms (may this stack move?) and tops (what fits here?). The
    table never empties a cell: its players make no merge once the stock is
    exhausted.
    """

    def __init__(self, deal: Sequence[Card]) -> None:
        codes = [_code(c) for c in deal]
        self.bottoms = codes[: dg.GRID_SIZE]
        self.tops = list(self.bottoms)
        self.stock = codes[dg.GRID_SIZE :]
        self.pointer = 0
        self.talon: list[int] = []
        self.moves: list[dg.Move] = []

    def stock_left(self) -> bool:
        """Return whether cards remain in the stock."""
        return self.pointer < len(self.stock)

    def play_talon(self) -> None:
        """Play the talon top for as long as it fits a top (first cell in order).

        Both players do this: a talon card has nowhere else to go, and
        playing it uncovers the card under it (the SAT encoding's
        `encode_eager` argues that it loses no win).
        """
        while self.talon and self.talon[-1] >= BASE_LIMIT:
            want = self.talon[-1] - STEP_CODE
            if want not in self.tops:
                return
            dst = self.tops.index(want)
            self.tops[dst] = self.talon.pop()
            self.moves.append(dg.TalonPlay(dst))

    def merges(self) -> list[tuple[int, int]]:
        """Return every legal merge ``(src, dst)`` in cell order."""
        where: dict[int, list[int]] = {}
        for dst, top in enumerate(self.tops):
            where.setdefault(top, []).append(dst)
        return [
            (src, dst)
            for src, bottom in enumerate(self.bottoms)
            if bottom >= BASE_LIMIT
            for dst in where.get(bottom - STEP_CODE, ())
        ]

    def merge(self, src: int, dst: int) -> None:
        """Merge ``src`` onto ``dst`` and refill ``src`` from the stock."""
        self.tops[dst] = self.tops[src]
        self.bottoms[src] = self.tops[src] = self.stock[self.pointer]
        self.pointer += 1
        self.moves.append(dg.Merge(src, dst))

    def deal(self) -> None:
        """Turn the next (up to) three stock cards onto the talon."""
        self.talon += self.stock[self.pointer : self.pointer + dg.PACKET]
        self.pointer += dg.PACKET
        self.moves.append(dg.DEAL)


#: A policy picks a merge from the legal ones, or None to deal instead.
Policy = Callable[[list[tuple[int, int]]], tuple[int, int] | None]


def play(deal: Sequence[Card], policy: Policy) -> Table:
    """Play ``deal`` to the end with ``policy``; return the final table.

    The score is ``len(table.talon)``. At 0 every card stands in a complete
    stack (no cell was ever emptied): a win once `dg.finishing_moves` sort
    the rows.
    """
    table = Table(deal)
    while True:
        table.play_talon()
        if not table.stock_left():
            return table
        options = table.merges()
        choice = policy(options) if options else None
        if choice is None:
            table.deal()
        else:
            table.merge(*choice)


def greedy(options: list[tuple[int, int]]) -> tuple[int, int]:
    """Merge whenever possible: the first merge in cell order."""
    return options[0]


def casual(rng: Rng, skip: float = SKIP_MERGE) -> Policy:
    """Return a player that skips a merge with probability ``skip``."""

    def choose(options: list[tuple[int, int]]) -> tuple[int, int] | None:
        if skip and rng.random() < skip:
            return None
        return rng.choice(options)

    return choose


def playout_seed(deal: Sequence[Card]) -> int:
    """Return the seed of a deal's casual players (from its id, so it is fixed)."""
    return int(deal_id(deal), 16)


# -- features and grade ------------------------------------------------------------
@dataclass(frozen=True)
class Features:
    """The measured features behind a grade (see the module docstring).

    ``casual_*`` summarise the casual players' scores: wins, best, 10th
    percentile and mean (rounded to 2 places so that it prints the same
    everywhere); ``difficulty`` is ``D``.
    """

    stock_bases: int
    forced_merges: int
    greedy_score: int
    casual_players: int
    casual_wins: int
    casual_best: int
    casual_p10: int
    casual_mean: float
    difficulty: int

    def to_json(self) -> dict[str, int | float]:
        """Return the features as a JSON-ready dict."""
        return asdict(self)


def stock_bases(deal: Sequence[Card]) -> list[int]:
    """Return the stock positions (0 = top) of the base cards in the stock."""
    stock = deal[dg.GRID_SIZE :]
    return [k for k, card in enumerate(stock) if card.rank in dg.BASE_RANKS]


def forced_merges(deal: Sequence[Card]) -> int:
    """Return the fewest merges the stock bases force (module docstring)."""
    pointer, total = 0, 0
    for k in stock_bases(deal):
        total += (k - pointer) % dg.PACKET + 1
        pointer = k + 1
    return total


def measure(deal: Sequence[Card], players: int = PLAYOUTS, salt: int = 0) -> Features:
    """Return the features of ``deal`` (deterministic: same deal, same features).

    ``salt`` picks another random stream for the casual players; only the
    calibration uses it, to see how much the grade depends on the stream.
    """
    rng = Rng(playout_seed(deal) ^ salt)
    scores = sorted(len(play(deal, casual(rng)).talon) for _ in range(players))
    greedy_score = len(play(deal, greedy).talon)
    p10 = scores[players // 10]
    return Features(
        stock_bases=len(stock_bases(deal)),
        forced_merges=forced_merges(deal),
        greedy_score=greedy_score,
        casual_players=players,
        casual_wins=scores.count(0),
        casual_best=scores[0],
        casual_p10=p10,
        casual_mean=round(sum(scores) / players, 2),
        difficulty=min(greedy_score, p10),
    )


def grade_of(difficulty: int) -> str:
    """Return the grade of a deal of this difficulty (frozen thresholds)."""
    if difficulty == 0:
        return "easy"
    if difficulty <= MEDIUM_MAX:
        return "medium"
    if difficulty <= HARD_MAX:
        return "hard"
    return "expert"
