"""The Besieged Fortress search prover: verdicts, lines, and each reduction held
against a search without it (or against brute force) on small positions."""

from __future__ import annotations

import heapq
import itertools
import random

import pytest
from bf_helpers import LOST, pos
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import besieged_fortress as bf
from verifier import besieged_fortress_search as bfs
from verifier.cards import Card
from verifier.errors import UnsupportedError
from verifier.replay import replay
from verifier.results import Question, Status


def random_position(rng: random.Random, in_rows: int, all_rows: bool) -> bf.State:
    """Return a position with ``in_rows`` cards (the top of some suits) in rows.

    With ``all_rows`` the cards are dealt round the rows, so every row holds
    some, and most rows then put their odd ranks outermost (their even ranks
    buried): the outer cards rarely build on one another, so some positions
    are lost (`test_random_positions_are_won_and_lost`). Otherwise each card
    goes to a random row, leaving empty rows and runs to move through them.
    """
    counts = [0, 0, 0, 0]
    while sum(counts) < in_rows:
        suit = rng.randrange(4)
        counts[suit] = min(12, counts[suit] + 1)
    cards = [Card(r, s) for s in range(4) for r in range(14 - counts[s], 14)]
    rng.shuffle(cards)
    rows: list[list[Card]] = [[] for _ in range(8)]
    for i, card in enumerate(cards):
        rows[i % 8 if all_rows else rng.randrange(8)].append(card)
    if all_rows:
        for row in rows:
            if rng.random() < 0.9:
                row.sort(key=lambda card: card.rank % 2)  # stable: odd ranks out
    tops = tuple(13 - n for n in counts)
    return bf.validate_state(bf.State(tuple(map(tuple, rows)), tops))  # type: ignore[arg-type]


def brute_force_winnable(state: bf.State) -> bool:
    """Return whether a won position is reachable: every legal move, no reduction
    but the rows-as-a-multiset key (itself tested in `test_rows_are_interchangeable`).

    Positions are taken fewest cards left and least out of order first; the
    order only finds a win sooner, since a lost verdict needs every position.
    """
    tie = itertools.count()
    seen = {(tuple(sorted(state.rows)), state.foundations)}
    todo = [(0, next(tie), state)]
    while todo:
        *_, current = heapq.heappop(todo)
        if bf.is_won(current):
            return True
        for move in bf.legal_moves(current):
            nxt = bf.apply(current, move)
            k = (tuple(sorted(nxt.rows)), nxt.foundations)
            if k not in seen:
                seen.add(k)
                heapq.heappush(todo, (untidiness(nxt), next(tie), nxt))
    return False


def untidiness(state: bf.State) -> int:
    """Return the cards left plus the cards lying on a lower one."""
    pairs = [pair for row in state.rows for pair in itertools.pairwise(row)]
    return sum(map(len, state.rows)) + sum(a.rank < b.rank for a, b in pairs)


def search_verdict(state: bf.State, **options) -> bool:
    """Return whether the search finds a win; a line it finds must win on replay."""
    steps = bfs.Search(**options).run(state)
    if steps is None:
        return False
    outcome = replay(bf.GAME, state, bfs.winning_line(state, steps))
    assert outcome.ok and outcome.won, outcome
    return True


# -- verdicts and lines ----------------------------------------------------------------
def test_won_deal_comes_with_a_replayed_winning_line():
    state = bf.initial_state(bf.numbered_deal(8))
    result = bfs.prove(state, time_limit=30)
    assert result.status is Status.WON and result.proven and result.best_score == 0
    outcome = replay(bf.GAME, state, bf.parse_moves("\n".join(result.line)))
    assert outcome.ok and outcome.won


def test_lost_deal_is_proven_by_exhausted_search_and_says_so():
    state = bf.initial_state(bf.numbered_deal(5))
    result = bfs.prove(state, time_limit=30)
    assert result.status is Status.LOST and result.proven
    assert result.method.startswith("search exhausted: ")
    assert result.line == () and result.best_score is None


@pytest.mark.parametrize("text", LOST)
def test_lost_positions_agree_with_brute_force(text):
    state = pos(text)
    assert not brute_force_winnable(state)
    result = bfs.prove(state)
    assert result.status is Status.LOST and result.proven


def test_running_out_of_time_is_unknown_never_lost():
    state = bf.initial_state(bf.numbered_deal(51))  # hard: > 0.05 s either way
    result = bfs.prove(state, time_limit=0.05)
    assert result.status is Status.UNKNOWN and not result.proven
    assert "time limit" in result.method


def test_best_score_is_unsupported():
    state = bf.initial_state(bf.numbered_deal(5))
    with pytest.raises(UnsupportedError):
        bfs.prove(state, question=Question.SCORE, time_limit=1)
    assert bf.GAME.has_score is False


def test_sorted_start_is_won_by_finishing_moves_alone():
    state = pos(
        "1: KS QH JD 10C | 2: KH QS JS 10S 9D | 3: KD QD 10D 9S |"
        "4: KC QC JC | F: 8S JH 8D 9C"
    )
    result = bfs.prove(state)
    assert result.status is Status.WON and all(m.endswith(">F") for m in result.line)


# -- reductions against searches without them ------------------------------------------
def test_random_positions_are_won_and_lost():
    """The sample the tests below draw from holds lost positions too, and on a
    fixed part of it the search and brute force agree."""
    verdicts = []
    for seed in range(100):
        state = random_position(random.Random(seed), 16 + seed % 11, all_rows=True)
        verdict = search_verdict(state)
        assert verdict == brute_force_winnable(state), seed
        verdicts.append(verdict)
    assert 3 <= verdicts.count(False) <= 50  # both verdicts, and mostly won


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), in_rows=st.integers(8, 26))
def test_search_verdicts_match_brute_force(seed, in_rows):
    state = random_position(random.Random(seed), in_rows, all_rows=True)
    assert search_verdict(state) == brute_force_winnable(state)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32), in_rows=st.integers(16, 30))
def test_safe_foundation_moves_never_change_a_verdict(seed, in_rows):
    state = random_position(random.Random(seed), in_rows, all_rows=True)
    assert search_verdict(state) == search_verdict(state, safe=False)


def safe_move(state: bf.State) -> bf.Move | None:
    """Return a foundation move the search would make at once, if any."""
    for i, row in enumerate(state.rows):
        if row and bfs.is_safe(bfs.encode(row[-1]), list(state.foundations)):
            return bf.HomeMove(i)
    return None


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), in_rows=st.integers(8, 26))
def test_a_safe_move_keeps_a_winnable_position_winnable(seed, in_rows):
    # The claim itself, by brute force: P winnable <=> P + (safe move) winnable.
    state = random_position(random.Random(seed), in_rows, all_rows=True)
    move = safe_move(state)
    if move is not None:
        after = bf.apply(state, move)
        assert brute_force_winnable(after) == brute_force_winnable(state)


@pytest.mark.parametrize("text", LOST)
def test_safe_moves_in_lost_positions_keep_them_lost(text):
    state = pos(text)
    move = safe_move(state)
    while move is not None:
        state = bf.apply(state, move)
        assert not brute_force_winnable(state)
        move = safe_move(state)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32), in_rows=st.integers(10, 30))
def test_rows_are_interchangeable(seed, in_rows):
    rng = random.Random(seed)
    state = random_position(rng, in_rows, all_rows=True)
    order = list(range(8))
    rng.shuffle(order)
    permuted = bf.State(tuple(state.rows[i] for i in order), state.foundations)
    assert bfs.key(bfs.to_internal(state)[0]) == bfs.key(bfs.to_internal(permuted)[0])
    assert search_verdict(state) == search_verdict(permuted)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32), in_rows=st.integers(16, 30))
def test_each_strategy_alone_reaches_the_same_verdict(seed, in_rows):
    state = random_position(random.Random(seed), in_rows, all_rows=True)
    verdicts = {
        search_verdict(state, strategies=s, shared=shared)
        for s in [("dfs",), ("best",), ("guided",), ("guided", "best", "dfs")]
        for shared in (False, True)
    }
    assert len(verdicts) == 1


def test_a_lost_verdict_names_the_strategy_that_exhausted_its_table():
    state = bf.initial_state(bf.numbered_deal(5))
    search = bfs.Search()
    assert search.run(state) is None and not search.timed_out
    assert search.winner in ("dfs", "guided", "best")
    assert bfs.STRATEGY_NAMES[search.winner] in bfs.prove(state).method


def where(state: bf.State, moves: list[bf.Move]) -> bytes:
    for move in moves:
        state = bf.apply(state, move)
    return bfs.key(bfs.to_internal(state)[0])


def test_candidate_moves_cover_every_legal_move_up_to_renumbering():
    # Every legal move leads where a listed move leads, or only renumbers rows;
    # every listed step expands into legal single moves.
    state = bf.initial_state(bf.numbered_deal(3))
    rng = random.Random(3)
    for _ in range(120):
        rows, found, _ = bfs.to_internal(state)
        steps = bfs.candidate_moves(rows, found)
        legal = bf.legal_moves(state)
        singles = [m for s in steps if s[2] == 1 for m in bfs.to_moves(state, [s])]
        assert set(singles) <= set(legal)

        reached = {where(state, bfs.to_moves(state, [s])) for s in steps}
        reached.add(bfs.key(rows))
        assert all(where(state, [m]) in reached for m in legal)
        state = bf.apply(state, rng.choice(legal))


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32), in_rows=st.integers(12, 30))
def test_run_moves_are_single_moves_landing_where_the_search_says(seed, in_rows):
    # Few rows used, so there are empty rows and runs to move through them.
    rng = random.Random(seed)
    state = random_position(rng, in_rows, all_rows=False)
    for _ in range(30):
        rows, found, breaks = bfs.to_internal(state)
        for step in bfs.candidate_moves(rows, found):
            moves = bfs.to_moves(state, [step])  # raises if one is illegal
            assert len(moves) >= step[2]
            _, after, _, _ = bfs.child(rows, found, breaks, step, safe=False)
            assert where(state, moves) == bfs.key(after)
        legal = bf.legal_moves(state)
        if not legal:
            break
        state = bf.apply(state, rng.choice(legal))


def test_run_move_through_two_empty_rows_moves_four_cards():
    state = pos(
        "1: KD QS JH 10S 9S | 2: KH | 3: JS | 4: KS | 5: QH | 6: KC | F: 8S 10H QD QC"
    )
    rows, found, _ = bfs.to_internal(state)
    assert (0, 1, 4) in bfs.candidate_moves(rows, found)
    moves = bfs.to_moves(state, [(0, 1, 4)])
    assert all(isinstance(m, bf.RowMove) for m in moves)
    end = state
    for move in moves:
        end = bf.apply(end, move)
    assert [str(c) for c in end.rows[1]] == ["KH", "QS", "JH", "10S", "9S"]
    assert end.rows[0] == (Card(13, 2),) and not end.rows[6] and not end.rows[7]
