"""One test per clause of the Devil's Grip rule card (shared/rules/devils-grip.md)."""

from __future__ import annotations

import pytest
from dg_helpers import play, position, solved_grid, winnable_position

from verifier import devils_grip as dg
from verifier.cards import Card, parse_card, parse_cards
from verifier.errors import IllegalMoveError, PositionError
from verifier.replay import replay

C = parse_card


def reason(state, text):
    (move,) = dg.parse_moves(text)
    return dg.illegal_reason(state, move)


# -- deck -------------------------------------------------------------------------
def test_deck_is_96_cards_without_aces_each_twice():
    deck = dg.canonical_deck()
    assert len(deck) == 96
    assert {c.rank for c in deck} == set(range(2, 14))
    assert all(deck.count(c) == 2 for c in deck)


# -- layout -----------------------------------------------------------------------
def test_layout_first_24_cards_fill_grid_row_by_row_then_stock():
    deal = dg.numbered_deal(5)
    state = dg.initial_state(deal)
    assert [s[0] for s in state.grid] == list(deal[:24])
    assert state.grid[0] == (deal[0],) and state.grid[8] == (deal[8],)
    assert dg.cell_name(8) == "B1" and dg.cell_name(23) == "C8"
    assert state.stock == deal[24:] and state.stock[0] == deal[24]
    assert state.talon == ()


# -- building ---------------------------------------------------------------------
@pytest.mark.parametrize(
    "card,onto,ok",
    [
        ("5S", "2S", True),
        ("8S", "5S", True),
        ("JS", "8S", True),
        ("6H", "3H", True),
        ("10D", "7D", True),
        ("KC", "10C", True),
        ("5H", "2S", False),  # other suit
        ("6S", "2S", False),  # step 4
        ("5S", "5S", False),  # same rank
        ("3S", "2S", False),  # step 1
        ("2S", "JS", False),  # no wrap
    ],
)
def test_building_in_suit_by_three(card, onto, ok):
    assert dg.fits(C(card), C(onto)) is ok


def test_eight_may_go_on_a_lone_five():
    state = position({"A1": "5S", "B1": "8S"}, stock="2S JS 3C 6C 9C QC")
    after = play(state, "B1>A1")
    assert after.grid[0] == (C("5S"), C("8S"))


@pytest.mark.parametrize("top", ["JS", "QH", "KD"])
def test_nothing_goes_on_j_q_k(top):
    assert dg.fit_reason(C("5S"), C(top)) == f"nothing goes on {C(top).pretty}"


@pytest.mark.parametrize("base", ["2S", "3H", "4D"])
def test_base_cards_go_on_nothing(base):
    assert "is a base card and goes on nothing" in dg.fit_reason(C(base), C("7C"))
    state = position({"A1": "5S 8S", "A2": "2S"}, stock="JS 2H 5H 8H JH")
    assert "base card" in reason(state, "A2>A1")


def test_stack_never_exceeds_four_cards():
    assert dg.chain_error(parse_cards("2S 5S 8S JS")) is None
    five = parse_cards("2S 5S 8S JS JS")
    assert "at most 4" in dg.chain_error(five)
    full = position({})
    for move in dg.legal_moves(full, swaps=False):
        raise AssertionError(f"a complete grid allows no merge, got {move}")


def test_valid_stacks_are_runs_of_one_chain_starting_anywhere():
    for text in ["5S", "5S 8S", "8S JS", "2S 5S 8S JS", "6H 9H QH"]:
        assert dg.chain_error(parse_cards(text)) is None
    assert "not a chain" in dg.chain_error(parse_cards("2S 8S"))
    assert "not a chain" in dg.chain_error(parse_cards("2S 5H"))


# -- moves: merge --------------------------------------------------------------------
def worked_example_state():
    """2♠ in A1, 5♠ in A2, Q♦ on top of the stock (the card's worked example)."""
    return position(
        {"A1": "2S", "A2": "5S", "B3": "3D 6D 9D"},
        stock="QD 8S JS 2H 5H 8H JH",
    )


def test_worked_example_merge_refills_from_stock_and_queen_stands_alone():
    state = worked_example_state()
    after = play(state, "A2>A1")
    assert after.grid[0] == (C("2S"), C("5S"))
    assert after.grid[1] == (C("QD"),)  # refilled at once with the stock top
    assert after.stock == state.stock[1:]
    assert "does not fit" in reason(after, "A2>A1")  # Q♦ does not join the spades
    after = play(after, "A2>B3")  # Q♦ belongs after a 9♦
    assert after.grid[dg.parse_cell("B3")] == tuple(parse_cards("3D 6D 9D QD"))


def test_merge_moves_the_whole_stack_and_never_splits():
    state = position(
        {"A1": "2S", "A2": "5S 8S", "A3": "JS"}, stock="2H 5H 8H JH 2D 5D 8D JD"
    )
    after = play(state, "A2>A1")
    assert after.grid[0] == tuple(parse_cards("2S 5S 8S"))
    assert after.grid[1] == (C("2H"),)


def test_merge_uses_bottom_card_of_the_moving_stack():
    state = position(
        {"A1": "2S", "A2": "8S JS", "A3": "5S"}, stock="2H 5H 8H JH 2D 5D 8D JD"
    )
    assert "8♠ does not fit on 2♠" in reason(state, "A2>A1")
    assert reason(state, "A2>A3") is None


def test_merge_onto_itself_and_empty_cells_are_illegal():
    state = worked_example_state()
    assert "onto itself" in reason(state, "A1>A1")
    full = position({"A1": "2S", "A2": "5S 8S JS"}, talon="2H 5H 8H JH")
    empty = play(full, "A2>A1")
    assert "source cell A2 is empty" in reason(empty, "A2>A1")


def test_emptied_cells_stay_empty_once_the_stock_is_exhausted():
    state = position({"A1": "2S", "A2": "5S 8S JS"}, talon="2H 5H 8H JH")
    after = play(state, "A2>A1")
    assert after.grid[1] == ()
    assert "target cell A2 is empty" in reason(after, "A1>A2")
    assert "the stock is exhausted" in dg.illegal_reason(after, dg.DEAL)


# -- moves: deal ------------------------------------------------------------------
def test_deal_turns_three_cards_third_on_top():
    state = dg.initial_state(dg.numbered_deal(7))
    after = play(state, "deal")
    assert after.talon == state.stock[:3]
    assert after.talon[-1] == state.stock[2]  # the third is the accessible top
    assert after.stock == state.stock[3:]


def short_packet_state():
    """Five stock cards: one full packet, then a short one of two."""
    return position({"A1": "2S", "A2": "5S"}, stock="2H 5H 8H 8S JS", talon="JH")


def test_short_last_packet_turns_all_remaining_cards():
    after = play(short_packet_state(), "deal deal")
    assert after.talon == tuple(parse_cards("JH 2H 5H 8H 8S JS"))
    assert after.talon[-1] == C("JS")
    assert after.stock == ()


def test_no_redeal_once_the_stock_is_exhausted():
    after = play(short_packet_state(), "deal deal")
    assert "exhausted" in dg.illegal_reason(after, dg.DEAL)
    assert dg.DEAL not in dg.legal_moves(after)


# -- moves: talon play ---------------------------------------------------------
def test_talon_top_plays_onto_a_fitting_stack_and_exposes_the_card_beneath():
    state = position({"A1": "2S 5S"}, talon="JS 8S")
    after = play(state, "T>A1")
    assert after.grid[0] == tuple(parse_cards("2S 5S 8S"))
    assert after.talon == (C("JS"),)
    after = play(after, "T>A1")
    assert dg.is_won(after)


def test_only_the_talon_top_is_playable():
    state = position({"A1": "2S 5S"}, talon="8S JS")
    assert "J♠ does not fit on 5♠" in reason(state, "T>A1")


def test_talon_card_never_goes_into_an_empty_cell():
    state = position(
        {"A1": "2S", "A2": "5S 8S", "A3": "2H 5H 8H"}, talon="2D 5D 8D JD JS JH"
    )
    after = play(state, "A2>A1")  # stock exhausted: A2 stays empty
    assert "never goes into an empty cell" in reason(after, "T>A2")


# -- moves: swap -----------------------------------------------------------------------
def test_swap_exchanges_whole_stacks_and_changes_nothing_else():
    state = worked_example_state()
    after = play(state, "A1<>B3")
    assert after.grid[0] == state.grid[dg.parse_cell("B3")]
    assert after.grid[dg.parse_cell("B3")] == state.grid[0]
    assert (after.stock, after.talon) == (state.stock, state.talon)
    tops = sorted(s[-1] for s in state.grid)
    assert sorted(s[-1] for s in after.grid) == tops


# -- winning and scoring -------------------------------------------------------------
def test_win_needs_every_stack_in_its_row_and_swaps_put_rows_right():
    grid = solved_grid()
    grid[0], grid[8] = grid[8], grid[0]  # a 3-6-9-Q stack in the top row
    state = dg.validate_state(dg.State(tuple(grid), (), ()))
    assert dg.is_complete(state) and not dg.is_won(state)
    finish = dg.finishing_moves(state)
    assert [dg.format_move(m) for m in finish] == ["A1<>B1"]
    assert dg.is_won(play(state, finish))


def test_stuck_score_is_the_talon_count():
    state = position({"A1": "2S 5S", "A2": "5H 8H JH"}, talon="JS 8S 2H")
    assert dg.is_stuck(state)
    assert dg.score(state) == 3


def test_not_stuck_while_the_stock_lasts():
    state = dg.initial_state(dg.numbered_deal(3))
    assert not dg.is_stuck(state)


def test_base_card_in_the_talon_rules_out_a_win():
    # 2♥ dealt to the talon can never leave: nothing fits under a base card.
    state = position({"A2": "5H 8H JH", "A1": "2S 5S 8S JS"}, talon="2H")
    assert dg.is_stuck(state) and dg.score(state) == 1


def test_constructed_winning_line_replays_to_won():
    state, line = winnable_position()
    result = replay(dg.GAME, state, dg.parse_moves(line))
    assert result.ok and result.won and result.verdict() == "WON"


def test_illegal_step_is_reported_with_step_number_and_reason():
    state, _ = winnable_position()
    result = replay(dg.GAME, state, dg.parse_moves("A4>A3 deal T>A1"))
    assert not result.ok
    assert str(result.error) == "step 3: 5♣ does not fit on 8♠"
    assert result.steps == 2


def test_apply_raises_with_reason():
    with pytest.raises(IllegalMoveError, match="does not fit"):
        dg.apply(worked_example_state(), dg.Merge(1, dg.parse_cell("B3")))


def test_empty_cell_while_stock_remains_is_not_a_position():
    with pytest.raises(PositionError, match="empty while the stock"):
        position({"A1": "2S 5S 8S", "A2": ""}, stock="JS 2H 5H 8H JH")
    assert Card(2, 0) == C("2s")
