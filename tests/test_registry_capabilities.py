"""The registries stay the one place a game is described.

Every game-keyed table names registered games only, and every game carries
the attributes the doors read directly (no ``getattr`` with a default).
"""

from __future__ import annotations

import pytest

from patience_encodings import certificates, devils_grip_sat_cnf
from patience_encodings.engines import PROVERS
from patience_encodings.registry import CERTIFICATE_ENCODINGS, DEAL_GENERATORS
from service.games import describe_game
from verifier.errors import UnsupportedError
from verifier.registry import GAMES


@pytest.mark.parametrize(
    "table",
    [CERTIFICATE_ENCODINGS, DEAL_GENERATORS, *PROVERS.values()],
    ids=["certificate encodings", "deal generators", *PROVERS],
)
def test_game_keyed_tables_name_registered_games_only(table):
    assert set(table) <= set(GAMES)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_every_game_has_the_protocol_attributes(name):
    game = GAMES[name]
    assert game.name == name
    assert game.summary.strip()
    assert game.score_unit.strip()
    bounds = [bound for _, bound in game.score_grades]
    assert bounds == sorted(set(bounds)), "grades best first, distinct bounds"
    assert not game.score_grades or game.has_score


@pytest.mark.parametrize("name", sorted(GAMES))
def test_the_games_entry_reads_the_registries(name):
    entry = describe_game(GAMES[name])
    assert entry["summary"] == GAMES[name].summary
    assert entry["generator"]["available"] == (name in DEAL_GENERATORS)


@pytest.mark.parametrize("name", sorted(GAMES))
def test_certifiable_exactly_when_an_encoding_is_registered(name):
    assert certificates.encodes(name) == (name in CERTIFICATE_ENCODINGS)
    if name in CERTIFICATE_ENCODINGS:
        certificates.check_certifiable(name)
    else:
        with pytest.raises(UnsupportedError, match="no certificate encoding"):
            certificates.check_certifiable(name)


def test_devils_grip_keeps_its_report_words_and_encoding_labels():
    """The values that used to live in per-game tables, unchanged."""
    game = GAMES["devils-grip"]
    assert game.score_unit == "cards left in the talon"
    assert game.score_grades == (("brilliant", 2), ("excellent", 5), ("good", 10))
    encoding = CERTIFICATE_ENCODINGS["devils-grip"]
    assert encoding.name == "devils-grip-sat"
    assert encoding.version == devils_grip_sat_cnf.ENCODING_VERSION
