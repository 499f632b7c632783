"""Cards, deal text, positions, numbered deals and move notation."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
from dg_helpers import position

from verifier import devils_grip as dg
from verifier.cards import Card, parse_card
from verifier.errors import (
    CardError,
    DealError,
    InputError,
    MoveSyntaxError,
    PositionError,
)
from verifier.formats import parse_numbers, read_start
from verifier.registry import get_game
from verifier.shuffle import splitmix64

SEEDS = Path(__file__).resolve().parent.parent / "seeds"


@pytest.mark.parametrize(
    "token,card",
    [
        ("5S", Card(5, 0)),
        ("5s", Card(5, 0)),
        ("10H", Card(10, 1)),
        ("th", Card(10, 1)),
        ("Q♦", Card(12, 2)),
        ("k♣", Card(13, 3)),
        ("2c", Card(2, 3)),
    ],
)
def test_card_tokens_are_case_insensitive_with_letters_or_symbols(token, card):
    assert parse_card(token) == card


def test_canonical_and_display_forms():
    assert str(parse_card("th")) == "10H"
    assert parse_card("qd").pretty == "Q♦"


@pytest.mark.parametrize("token", ["1S", "11H", "5X", "S5", "", "♠", "10"])
def test_unknown_card_tokens_are_named(token):
    with pytest.raises(CardError, match="unknown card token"):
        parse_card(token)


def test_deal_text_round_trips_with_comments():
    deal = dg.numbered_deal(42)
    text = dg.format_deal(deal)
    assert "#" in text
    assert dg.parse_deal(text) == deal
    assert dg.parse_deal(json.dumps([str(c) for c in deal])) == deal
    assert dg.parse_deal(json.dumps({"deal": [str(c) for c in deal]})) == deal


def test_wrong_card_count_is_named():
    tokens = [str(c) for c in dg.numbered_deal(1)]
    with pytest.raises(DealError, match="95 cards, expected 96; missing: "):
        dg.parse_deal(" ".join(tokens[:-1]))


def test_third_copy_is_named():
    tokens = [str(c) for c in dg.numbered_deal(1)]
    tokens[-1] = tokens[0]
    with pytest.raises(DealError, match=f"card {tokens[0]} appears 3 times"):
        dg.parse_deal(" ".join(tokens))


def test_aces_are_not_in_the_deck():
    tokens = [str(c) for c in dg.numbered_deal(1)]
    tokens[0] = "AS"
    with pytest.raises(DealError, match="AS is not in the Devil's Grip deck"):
        dg.parse_deal(" ".join(tokens))


def test_unknown_token_in_deal_is_named():
    with pytest.raises(CardError, match="'ZZ'"):
        dg.parse_deal("2S ZZ")


def test_position_json_round_trip():
    state = dg.apply(dg.initial_state(dg.numbered_deal(9)), dg.DEAL)
    data = dg.position_to_json(state)
    assert dg.parse_position(json.loads(json.dumps(data))) == state
    assert read_start(json.dumps(data)).state == state


def test_position_rejects_broken_chain_and_names_the_cell():
    data = dg.position_to_json(position({"A1": "2S 5S"}, talon="8S JS"))
    data["grid"][0] = ["2S", "8S"]
    data["talon"] = ["5S", "JS"]
    with pytest.raises(PositionError, match="cell A1: stack 2♠ 8♠ is not a chain"):
        dg.parse_position(data)


def test_position_rejects_wrong_cell_count_and_unknown_fields():
    data = dg.position_to_json(position({}))
    with pytest.raises(PositionError, match="23 grid cells"):
        dg.parse_position(data | {"grid": data["grid"][:23]})
    with pytest.raises(PositionError, match="unknown position field"):
        dg.parse_position(data | {"foundations": []})


def test_position_rejects_a_missing_card():
    data = dg.position_to_json(position({"A1": "2S 5S"}, talon="8S JS"))
    data["talon"] = ["8S"]
    with pytest.raises(PositionError, match="95 cards, expected 96; missing: JS"):
        dg.parse_position(data)


def test_read_start_forms():
    assert read_start("number 7").state == dg.initial_state(dg.numbered_deal(7))
    assert read_start('{"game": "devils-grip", "number": 7}').number == 7
    with pytest.raises(InputError, match="malformed JSON"):
        read_start("{oops")
    with pytest.raises(InputError, match="unknown game"):
        read_start('{"game": "klondike", "number": 1}')
    with pytest.raises(InputError, match="empty input"):
        read_start("  ")


def test_splitmix64_matches_published_reference_and_vectors():
    assert next(splitmix64(0)) == 0xE220A8397B1DCDAF
    vectors = json.loads((SEEDS / "vectors" / "splitmix64.json").read_text())
    for seed, outputs in vectors["splitmix64"].items():
        got = [f"{x:016x}" for x in itertools.islice(splitmix64(int(seed)), 5)]
        assert got == outputs


def test_numbered_deals_match_the_shipped_vectors():
    vectors = json.loads((SEEDS / "vectors" / "devils-grip-numbered.json").read_text())
    assert len(vectors["deals"]) >= 5
    for number, text in vectors["deals"].items():
        assert dg.format_deal(dg.numbered_deal(int(number))).split("\n")[1] in text
        assert " ".join(map(str, dg.numbered_deal(int(number)))) == text


@pytest.mark.parametrize(
    "text,canonical",
    [
        ("A3>B5", "A3>B5"),
        ("merge a3 b5", "A3>B5"),
        ("deal", "deal"),
        ("D", "deal"),
        ("t>c8", "T>C8"),
        ("talon C8", "T>C8"),
        ("a1<>c8", "A1<>C8"),
        ("swap A1 C8", "A1<>C8"),
    ],
)
def test_move_notation_parses_and_prints(text, canonical):
    (move,) = dg.parse_moves(text)
    assert dg.format_move(move) == canonical
    assert dg.parse_moves(canonical) == [move]


def test_move_lists_allow_commas_newlines_and_comments():
    moves = dg.parse_moves("A1>A2, deal # first packet\nT>B3\n")
    assert [dg.format_move(m) for m in moves] == ["A1>A2", "deal", "T>B3"]


@pytest.mark.parametrize("text", ["A9>B1", "D1>A1", "merge A1", "fly", "A1>>B2"])
def test_bad_moves_are_named(text):
    with pytest.raises(MoveSyntaxError):
        dg.parse_moves(text)


def test_deal_numbers_read_lists_and_ranges_in_the_order_given():
    assert parse_numbers("12, 3,7-9,3") == (12, 3, 7, 8, 9)
    assert parse_numbers("0") == (0,)


@pytest.mark.parametrize(
    "text,message",
    [
        ("1,,2", "bad deal numbers ''"),
        ("9-3", "bad deal numbers '9-3': 3 < 9"),
        ("4,x", "bad deal numbers 'x'"),
        ("-2", "bad deal numbers '-2'"),
        ("1-2000000", "more than 100000 deal numbers"),
        ("²", "bad deal numbers '²'"),  # a digit to str.isdigit, not to int
        ("1" * 31, "is too large (31 digits)"),
    ],
)
def test_bad_deal_numbers_name_the_item(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_numbers(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"number": 1' + "0" * 5000 + "}", "malformed JSON"),
        ('{"number": NaN}', "NaN is not a JSON number"),
        ('{"game": 5, "number": 1}', "'game' must be a string, not int"),
        ("number 1" + "0" * 5000, "too large (5001 digits)"),
        ('{"number": 3, "position": {}}', "not 'number', 'position'"),
        ('{"deal": "2S", "position": {}}', "not 'deal', 'position'"),
        ('{"number": 3, "deal": "2S"}', "expected 96"),
        ('{"position": {"game": "besieged-fortress"}}', "the position is for"),
    ],
)
def test_starts_that_python_cannot_read_are_input_errors(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        read_start(text)


def test_a_pile_named_twice_is_refused():
    with pytest.raises(PositionError, match="the talon is named twice"):
        dg.parse_position_text("talon: 2S 5S 8S JS\ntalon:\n")
    bf = get_game("besieged-fortress")
    with pytest.raises(PositionError, match="F is named twice"):
        bf.parse_position_text("F: 2S\nF: KS KH KD KC")
    with pytest.raises(PositionError, match="two tops for one foundation: 2S and KS"):
        bf.parse_position_text("F: 2S KS KH KD KC")


def _deal_json(number: int, **extra: object) -> str:
    """Return what ``patience deal --number N --json`` prints (plus ``extra``)."""
    tokens = [str(c) for c in dg.numbered_deal(number)]
    return json.dumps({"game": "devils-grip", "number": number, "deal": tokens} | extra)


def test_a_number_with_its_own_deal_is_that_numbered_deal():
    """What ``patience deal --json`` prints reads back as the numbered deal."""
    start = read_start(_deal_json(17))
    assert start.number == 17 and start.kind == "number"
    assert start.state == dg.initial_state(dg.numbered_deal(17))
    text = dg.format_deal(dg.numbered_deal(17))
    as_text = read_start(json.dumps({"number": 17, "deal": text}))
    assert as_text.number == 17


def test_a_number_with_another_deal_is_refused():
    wrong = json.loads(_deal_json(17)) | {"number": 18}
    with pytest.raises(InputError, match="'deal' is not deal number 18 of devils-grip"):
        read_start(json.dumps(wrong))


@pytest.mark.parametrize(
    "data, message",
    [
        (
            {"game": "devils-grip", "number": 5, "quesiton": "score"},
            "unknown field(s) in a number start: quesiton",
        ),
        ({"game": "devils-grip", "number": 5, "bogus": 1}, "number start: bogus"),
        ({"number": 5, "question": "score", "engine": "sat"}, "engine, question"),
        ({"deal": "2S", "bogus": 1}, "unknown field(s) in a deal start: bogus"),
        ({"position": {}, "number_of": 1}, "in a position start: number_of"),
    ],
)
def test_unknown_fields_of_a_start_are_named(data, message):
    """A start file is proven as it is: a field it cannot mean is refused."""
    with pytest.raises(InputError, match=re.escape(message)):
        read_start(json.dumps(data))


def test_generated_deal_records_are_starts():
    """``patience generate --json`` lines (the curated corpus) carry more than
    the deal; every field of theirs is read (as a deal)."""
    line = (SEEDS / "curated" / "devils-grip.jsonl").read_text().splitlines()[0]
    record = json.loads(line)
    start = read_start(line)
    assert start.kind == "deal"
    assert start.deal == dg.deal_from_list(record["deal"])


@pytest.mark.parametrize(
    "game, text",
    [
        ("devils-grip", "# late game\nA1: 2S 5S\nA2: 5H 8H JH\ntalon: JS 8S 2H\n"),
        (
            "besieged-fortress",
            "1: 9C QH 10C\n2: KC JC\n3: KH JH\n4: QC\nF: KS 10H KD 8C\n",
        ),
    ],
)
def test_the_compact_position_text_is_a_start(game, text):
    """The form the README and the edge-case files use reads as a start too."""
    start = read_start(text, game)
    assert start.kind == "position"
    assert start.state == get_game(game).parse_position_text(text)


def test_deal_text_is_not_taken_for_position_text():
    start = read_start(dg.format_deal(dg.numbered_deal(3)), "devils-grip")
    assert start.kind == "deal" and start.deal == dg.numbered_deal(3)
