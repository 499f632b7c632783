"""Besieged Fortress rules: one test per clause of the rule card, then formats.

Rule card: shared/rules/besieged-fortress.md.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifier import besieged_fortress as bf
from verifier.cards import Card, parse_card, parse_cards
from verifier.errors import (
    CardError,
    DealError,
    IllegalMoveError,
    MoveSyntaxError,
    PositionError,
)
from verifier.formats import read_start
from verifier.registry import get_game
from verifier.replay import replay

C = parse_card
VECTORS = Path(__file__).resolve().parent.parent / "seeds" / "vectors"


def pos(text: str) -> bf.State:
    """Return a position from its text form (``|`` may separate lines)."""
    return bf.parse_position_text(text.replace("|", "\n"))


def fill(named: dict[int, str]) -> bf.State:
    """Return a full-deck position: the named rows (numbered from 1), and the
    other cards in the rows not named, descending, where they never interfere.
    """
    rows: list[list[Card]] = [[] for _ in range(8)]
    for number, text in named.items():
        rows[number - 1] = parse_cards(text)
    used = {c for row in rows for c in row}
    free = [i for i in range(8) if i + 1 not in named]
    rest = sorted((c for c in bf.canonical_deck() if c not in used), reverse=True)
    for i, card in enumerate(rest):
        rows[free[i % len(free)]].append(card)
    return bf.position_from_rows(rows)


def play(state: bf.State, line: str) -> bf.State:
    for move in bf.parse_moves(line):
        state = bf.apply(state, move)
    return state


def reason(state: bf.State, text: str) -> str | None:
    (move,) = bf.parse_moves(text)
    return bf.illegal_reason(state, move)


# -- deck and layout -------------------------------------------------------------------
def test_deck_is_the_48_non_aces_and_aces_start_the_foundations():
    deck = bf.canonical_deck()
    assert len(deck) == 48 == len(set(deck))
    assert {c.rank for c in deck} == set(range(2, 14))
    state = bf.initial_state(bf.numbered_deal(1))
    assert state.foundations == (1, 1, 1, 1)
    assert bf.score(state) == 48


def test_deal_fills_eight_rows_of_six_inner_to_outer():
    deal = bf.numbered_deal(5)
    state = bf.initial_state(deal)
    assert [len(r) for r in state.rows] == [6] * 8
    assert state.rows[0] == deal[:6] and state.rows[7] == deal[42:]
    assert state.rows[0][-1] == deal[5]  # the sixth card is the available one


def test_render_puts_rows_1_to_4_left_and_available_cards_outermost():
    # deal 1: row 1 is J♠ 5♣ 6♠ K♦ 4♦ Q♠, row 5 is 3♦ Q♣ 8♣ 9♣ 9♥ 4♥
    lines = bf.render(bf.initial_state(bf.numbered_deal(1))).splitlines()
    assert lines[0].lstrip().startswith("Q♠ 4♦ K♦ 6♠ 5♣ J♠ 1 ")  # leftmost available
    assert lines[0].endswith(" 5 3♦ Q♣ 8♣ 9♣ 9♥ 4♥")  # available card rightmost
    assert "A♠" in lines[0] and "A♣" in lines[3]


def test_there_is_no_stock_and_only_available_cards_move():
    state = bf.initial_state(bf.numbered_deal(1))
    for move in bf.legal_moves(state):
        after = bf.apply(state, move)
        moved = Counter(state.cards()) - Counter(after.cards())
        changed = [i for i in range(8) if after.rows[i] != state.rows[i]]
        assert state.rows[move.src][-1] not in after.rows[move.src]
        assert len(changed) <= 2 and sum(moved.values()) <= 1


# -- moves -----------------------------------------------------------------------------
def worked_example() -> bf.State:
    """One row ends in 7♥ over 2♦, another in 8♣; A♦ on its foundation."""
    return fill({1: "KS 2D 7H", 2: "QH 8C", 8: ""})


def test_worked_example_seven_on_eight_any_suit_then_two_home():
    state = worked_example()
    assert reason(state, "1>2") is None  # 7♥ on 8♣: suits differ, legal
    after = play(state, "1>2")
    assert after.rows[1] == tuple(parse_cards("QH 8C 7H"))
    assert after.rows[0][-1] == C("2D")
    after = play(after, "1>F")
    assert after.foundations[2] == 2


def test_the_two_cards_cannot_be_taken_together():
    state = worked_example()
    after = play(state, "1>2 2>8")  # moving row 2 to an empty row moves 7♥ only
    assert after.rows[7] == (C("7H"),)
    assert after.rows[1] == tuple(parse_cards("QH 8C"))


@pytest.mark.parametrize(
    "card,onto,ok",
    [("7H", "8C", True), ("7H", "8H", True), ("7H", "9C", False), ("7H", "7C", False)],
)
def test_row_to_row_needs_exactly_one_rank_higher(card, onto, ok):
    assert bf.builds_on(C(card), C(onto)) is ok


def test_building_is_by_rank_only_and_reasons_are_exact():
    state = fill({1: "9C", 2: "7H", 4: ""})
    assert reason(state, "2>1") == (
        "7♥ does not go on 9♣ (a card goes on one rank higher, any suit)"
    )
    assert reason(state, "1>1") == "cannot move row 1 onto itself"
    assert reason(state, "4>1") == "source row 4 is empty"


def test_empty_row_takes_any_card_not_only_a_king():
    state = fill({1: "9C 7H", 3: ""})
    after = play(state, "1>3")
    assert after.rows[2] == (C("7H"),)


def test_foundation_takes_the_next_rank_of_its_suit_only():
    state = pos("1: KC 9C | 2: KS QS | 3: QC JC 10C | F: JS KH KD 8C")
    assert reason(state, "1>F") is None
    assert reason(state, "3>F") == "10♣ does not go home: its foundation shows 8♣"
    after = play(state, "1>F 3>F 3>F")
    assert after.foundations[3] == 11


def test_no_wrap_from_king_to_ace():
    # A complete suit takes nothing more; there is no card above the king.
    state = pos("1: KS | F: QS KH KD KC")
    assert bf.goes_home(C("KS"), state.foundations)
    assert not bf.goes_home(C("AS"), (13, 13, 13, 13))
    assert bf.legal_moves(play(state, "1>F")) == []


def test_cards_on_foundations_never_come_back():
    with pytest.raises(MoveSyntaxError):
        bf.parse_moves("F>3")
    state = pos("1: KS QS | F: JS KH KD KC")
    after = play(state, "1>F")
    assert all(m.src == 0 for m in bf.legal_moves(after))  # only row cards move


# -- winning and stuck -----------------------------------------------------------------
def test_win_is_every_foundation_up_to_the_king():
    state = pos("1: KS QS | F: JS KH KD KC")
    assert not bf.is_won(state)
    after = play(state, "1>F 1>F")
    assert bf.is_won(after) and bf.score(after) == 0 and bf.is_stuck(after)


def test_no_legal_move_left_is_stuck_and_unsolved():
    state = pos(
        "1: 10H 8C JH | 2: 10C 9C | 3: JC | 4: JS | 5: QS 8H KC | 6: KH QC KS |"
        "7: 10S KD | 8: QH QD 9H | F: 9S 7H JD 7C"
    )
    assert bf.legal_moves(state) == []
    assert bf.is_stuck(state) and not bf.is_won(state)


def test_repeating_moves_back_and_forth_is_not_a_win():
    state = pos("1: KS QS | F: JS KH KD KC")
    result = replay(bf.GAME, state, bf.parse_moves("1>2 2>1 1>2 2>1"))
    assert result.ok and result.final == state and not result.won


def test_sorted_position_is_won_by_finishing_moves():
    state = pos(
        "1: KS QH JD 10C | 2: KH QS JS 10S 9D | 3: KD QD 10D 9S | 4: KC QC JC"
        "| F: 8S JH 8D 9C"
    )
    assert bf.is_sorted(state)
    finish = bf.finishing_moves(state)
    assert bf.is_won(replay(bf.GAME, state, finish).final)
    assert bf.finishing_moves(worked_example()) == []


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32))
def test_every_sorted_position_is_finished_by_foundation_moves(seed):
    rng = random.Random(seed)
    cards = bf.canonical_deck()
    rng.shuffle(cards)
    rows: list[list[Card]] = [[] for _ in range(8)]
    for card in cards:
        rows[rng.randrange(8)].append(card)
    sorted_rows = [tuple(sorted(r, key=lambda c: -c.rank)) for r in rows]
    state = bf.State(tuple(sorted_rows), (1, 1, 1, 1))
    result = replay(bf.GAME, state, bf.finishing_moves(state))
    assert result.ok and result.won


# -- properties over random play -------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(number=st.integers(0, 2**64 - 1), seed=st.integers(0, 2**32))
def test_random_playouts_keep_cards_and_list_only_legal_moves(number, seed):
    rng = random.Random(seed)
    state = bf.initial_state(bf.numbered_deal(number))
    for _ in range(150):
        moves = bf.legal_moves(state)
        assert bf.is_stuck(state) == (not moves)
        if not moves:
            break
        for move in moves:
            assert bf.illegal_reason(state, move) is None
        bad = bf.RowMove(rng.randrange(8), rng.randrange(8))
        if bad not in moves:
            with pytest.raises(IllegalMoveError):
                bf.apply(state, bad)
        state = bf.apply(state, rng.choice(moves))
        assert bf.validate_state(state) is state
        assert bf.score(state) == len(list(state.cards()))


# -- notation --------------------------------------------------------------------------
def test_move_notation_short_and_long_forms_round_trip():
    moves = bf.parse_moves("3>5, 3>f\nmove 1 8  home 2 # comment")
    assert moves == [bf.RowMove(2, 4), bf.HomeMove(2), bf.RowMove(0, 7), bf.HomeMove(1)]
    assert bf.format_moves(moves) == "3>5\n3>F\n1>8\n2>F"


@pytest.mark.parametrize("text", ["9>1", "0>1", "3-5", "3>", "move 3", "x"])
def test_bad_moves_are_syntax_errors(text):
    with pytest.raises(MoveSyntaxError):
        bf.parse_moves(text)


def test_describe_move_says_what_happens():
    state = worked_example()
    assert bf.describe_move(state, bf.RowMove(0, 1)) == (
        "7♥ (row 1) onto 8♣ (row 2), freeing 2♦"
    )
    assert "into empty row 8" in bf.describe_move(state, bf.RowMove(0, 7))


# -- deal and position formats ---------------------------------------------------------
def test_numbered_deals_match_the_vectors():
    data = json.loads((VECTORS / "besieged-fortress-numbered.json").read_text())
    for number, text in data["deals"].items():
        assert bf.numbered_deal(int(number)) == tuple(parse_cards(text))


def test_deal_text_round_trips_in_text_and_json():
    deal = bf.numbered_deal(42)
    text = bf.format_deal(deal)
    assert "# row 1 (left), inner to outer" in text
    assert bf.parse_deal(text) == deal
    assert bf.parse_deal(json.dumps([str(c) for c in deal])) == deal
    assert bf.parse_deal(json.dumps({"deal": [str(c) for c in deal]})) == deal


@pytest.mark.parametrize(
    "tokens,error,message",
    [
        (["AS"] + ["2S"] * 47, DealError, "AS is an ace"),
        (["2S", "2S"], DealError, "2S appears 2 times"),
        (["2S", "3S"], DealError, "deal has 2 cards, expected 48"),
        (["2S", "ZZ"], CardError, "unknown card token"),
    ],
)
def test_bad_deals_name_the_problem(tokens, error, message):
    with pytest.raises(error, match=message):
        bf.parse_deal(" ".join(tokens))


def test_position_json_and_text_round_trip():
    state = play(bf.initial_state(bf.numbered_deal(7)), "")
    assert bf.parse_position(bf.position_to_json(state)) == state
    assert bf.parse_position_text(bf.format_position_text(state)) == state
    small = worked_example()
    assert bf.parse_position(bf.position_to_json(small)) == small
    assert bf.parse_position_text(bf.format_position_text(small)) == small


def test_position_foundations_may_be_ranks_or_inferred():
    rows = [["KS", "QS"], [], [], [], [], [], [], []]
    full = {"S": "J", "H": "K", "D": 13, "C": "k"}
    a = bf.parse_position({"rows": rows, "foundations": full})
    b = bf.parse_position({"rows": rows, "foundations": [11, 13, 13, 13]})
    c = bf.parse_position({"rows": rows})
    assert a == b == c and a.foundations == (11, 13, 13, 13)


@pytest.mark.parametrize(
    "data,message",
    [
        ({"rows": [["AS"]] + [[]] * 7}, "AS is an ace"),
        ({"rows": [[]] * 7}, "7 rows, expected 8"),
        ({"rows": [["KS"]] + [[]] * 7, "foundations": [13, 13, 13, 13]}, "already"),
        ({"rows": [["KS"]] + [[]] * 7, "foundations": [11, 13, 13, 13]}, "QS"),
        ({"rows": [["QS"]] + [[]] * 7}, "KS is in no row, but QS is not home"),
        ({"rows": [[]] * 8, "foundations": [0, 13, 13, 13]}, "each 1..13"),
        ({"rows": [[]] * 8, "extra": 1}, "unknown position field"),
    ],
)
def test_bad_positions_name_the_problem(data, message):
    with pytest.raises(PositionError, match=message):
        bf.parse_position(data)


def test_read_start_accepts_numbers_deals_and_positions_for_this_game():
    by_number = read_start('{"game": "besieged-fortress", "number": 9}')
    assert by_number.state == bf.initial_state(bf.numbered_deal(9))
    assert by_number.describe() == "besieged-fortress deal #9"
    text = read_start("number 9", "besieged-fortress")
    assert text.state == by_number.state
    position = bf.position_to_json(worked_example())
    assert read_start(json.dumps(position)).state == worked_example()
    assert get_game("Besieged-Fortress") is bf.GAME
