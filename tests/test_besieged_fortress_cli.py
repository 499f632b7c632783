"""Besieged Fortress through the shared front doors: the CLI, the prover registry
and the outside yardstick (Freecell Solver, when it is installed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from patience_encodings import bench_besieged_fortress as bench
from patience_encodings import engines
from service.cli import main
from verifier import besieged_fortress as bf
from verifier import besieged_fortress_search as bfs
from verifier.formats import start_from_number
from verifier.results import Status

VECTORS = Path(__file__).resolve().parent.parent / "seeds" / "vectors"
WIN_POSITION = VECTORS / "besieged-fortress-win-position.json"
WIN_MOVES = VECTORS / "besieged-fortress-win-position.moves"
VERDICTS = json.loads((VECTORS / "besieged-fortress-verdicts.json").read_text())
GAME = ("--game", "besieged-fortress")


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_deal_prints_numbered_deal_text(capsys):
    code, out, _ = run(capsys, "deal", *GAME, "--number", "1")
    assert code == 0
    assert "# Besieged Fortress deal number 1" in out
    assert bf.parse_deal(out) == bf.numbered_deal(1)


def test_show_draws_rows_and_foundations(capsys, tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(bf.format_deal(bf.numbered_deal(1)))
    code, out, _ = run(capsys, "show", *GAME, str(path))
    assert code == 0
    assert "Q♠ 4♦ K♦ 6♠ 5♣ J♠ 1 │ A♠" in out and "on foundations 4/52" in out


def test_play_winning_line_prints_won(capsys):
    code, out, _ = run(capsys, "play", str(WIN_POSITION), str(WIN_MOVES))
    assert code == 0 and out.strip().endswith("WON")


def test_play_illegal_step_exits_1_with_reason(capsys, tmp_path):
    moves = tmp_path / "m.txt"
    moves.write_text("3>F 1>4\n")
    code, out, _ = run(capsys, "play", str(WIN_POSITION), str(moves))
    assert code == 1
    assert "step 2: 10♣ does not go on Q♣" in out


def test_bad_deal_exits_2_with_one_message(capsys, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("AS 2S")
    code, _, err = run(capsys, "show", *GAME, str(path))
    assert code == 2 and "AS is an ace" in err and "Traceback" not in err


def test_both_provers_are_registered_for_the_game():
    assert set(engines.engines_for(bf.GAME.name)) >= {"search", "sat"}


def test_solve_through_the_runner_replays_the_line(capsys):
    code, out, _ = run(
        capsys, "solve", *GAME, "--number", "8", "--engine", "search", "--json"
    )
    assert code == 0
    result = json.loads(out)
    assert result["status"] == "won" and result["proven"]


@pytest.mark.parametrize("number", [5, 8, 10, 18, 21, 28])
def test_verdicts_match_the_vectors(number):
    state = bf.initial_state(bf.numbered_deal(number))
    result = bfs.prove(state, time_limit=30)
    assert result.status.value == VERDICTS["verdicts"][str(number)]


def test_solve_runner_with_a_time_limit_answers_unknown_not_lost():
    start = start_from_number(bf.GAME, 51)
    result = engines.solve(start, engine="search", time_limit=0.3)
    assert result.status is Status.UNKNOWN and not result.proven
    assert "within 0.3 s" in result.method  # stopped by the limit it was given


@pytest.mark.skipif(not bench.fc_solve_available(), reason="fc-solve not installed")
@pytest.mark.parametrize("number", [3, 5, 6, 8, 10, 12, 19, 22])
def test_verdicts_match_freecell_solver(number):
    state = bf.initial_state(bf.numbered_deal(number))
    theirs, _ = bench.fc_solve_verdict(state, 30)
    ours = bfs.prove(state, time_limit=30).status.value
    assert theirs != "unknown" and ours == theirs


def test_fc_solve_board_lists_rows_inner_to_outer():
    board = bench.fc_solve_board(bf.initial_state(bf.numbered_deal(1)))
    lines = board.splitlines()
    assert lines[0] == "Foundations: S-A H-A D-A C-A"
    assert lines[1] == "JS 5C 6S KD 4D QS"


def test_wilson_interval_brackets_the_rate():
    low, high = bench.wilson(70, 100)
    assert 0.60 < low < 0.70 < high < 0.79
    assert bench.wilson(0, 0) == (0.0, 1.0)


def test_deal_json_is_read_back_as_that_numbered_deal(capsys, tmp_path):
    """``deal --json`` of this game reads back too (its file names the game)."""
    _, printed, _ = run(capsys, "deal", *GAME, "--number", "8", "--json")
    path = tmp_path / "bf8.json"
    path.write_text(printed)
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "") and "besieged-fortress deal #8" in out
    code, out, _ = run(capsys, "solve", str(path), "--engine", "search", "--json")
    assert code == 0 and json.loads(out)["status"] == "won"


def test_deal_json_of_another_game_for_the_number_exits_2(capsys, tmp_path):
    """A Devil's Grip deal under a Besieged Fortress number is two starts."""
    _, printed, _ = run(capsys, "deal", "--number", "8", "--json")
    path = tmp_path / "d.json"
    path.write_text(json.dumps(json.loads(printed) | {"game": "besieged-fortress"}))
    code, _, err = run(capsys, "show", str(path))
    assert code == 2 and err.startswith("error: deal: ")


def test_a_file_and_a_number_together_exit_2(capsys, tmp_path):
    path = tmp_path / "bf1.txt"
    path.write_text(bf.format_deal(bf.numbered_deal(1)))
    code, out, err = run(capsys, "show", *GAME, str(path), "--number", "2")
    assert code == 2 and out == "" and "give one start" in err
