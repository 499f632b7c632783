"""The ``patience`` CLI: deal, show, play; bad input exits 2 with one message."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from service.cli import main
from verifier import devils_grip as dg

VECTORS = Path(__file__).resolve().parent.parent / "seeds" / "vectors"
WIN_POSITION = VECTORS / "devils-grip-win-position.json"
WIN_MOVES = VECTORS / "devils-grip-win-position.moves"


def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_deal_prints_numbered_deal_text(capsys):
    code, out, _ = run(capsys, "deal", "--number", "1")
    assert code == 0
    assert dg.parse_deal(out) == dg.numbered_deal(1)


def test_deal_without_number_is_a_fresh_valid_deal(capsys):
    _, first, _ = run(capsys, "deal")
    _, second, _ = run(capsys, "deal")
    assert len(dg.parse_deal(first)) == 96
    assert first != second


def test_show_draws_the_grid_with_counts(capsys, tmp_path):
    path = tmp_path / "d.txt"
    path.write_text(dg.format_deal(dg.numbered_deal(1)))
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert " A  6♦" in out and "stock 72   talon 0" in out


def test_play_winning_line_prints_won(capsys):
    code, out, _ = run(capsys, "play", str(WIN_POSITION), str(WIN_MOVES))
    assert code == 0
    assert out.strip().endswith("WON")


def test_play_illegal_step_exits_1_with_reason(capsys, tmp_path):
    moves = tmp_path / "m.txt"
    moves.write_text("A4>A3 deal T>A1\n")
    code, out, _ = run(capsys, "play", str(WIN_POSITION), str(moves))
    assert code == 1
    assert "step 3: 5♣ does not fit on 8♠" in out


@pytest.mark.parametrize(
    "content,message",
    [
        ("2S 3S", "2 cards, expected 96"),
        ("2S QQ", "unknown card token 'QQ'"),
        ("{bad json", "malformed JSON"),
    ],
)
def test_bad_input_exits_2_with_one_message(capsys, tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content)
    code, out, err = run(capsys, "show", str(path))
    assert code == 2
    assert message in err and "Traceback" not in err


def test_missing_file_is_bad_input(capsys):
    code, _, err = run(capsys, "show", "/no/such/file")
    assert code == 2 and "no such file" in err


def test_installed_console_script_shows_no_traceback(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("2S 2S 2S")
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "show", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip() == "error: deal: card 2S appears 3 times (at most twice)"


def test_bench_runs_the_listed_deals(capsys):
    """``--numbers`` names scattered deals; the table counts exactly those."""
    code, out, _ = run(
        capsys, "bench", "--engine", "sat", "--numbers", "7,3", "--time-limit", "10"
    )
    assert code == 0
    assert "deals 2 between 3 and 7, question verdict" in out
    assert "| sat | 2 | 0 | 2 | 0 | 100.0 % |" in out
    # the machine's speed, printed beside the figures (the same conflicts anywhere)
    assert "calibration: deal 12's last call (UNSAT below 6, Glucose 4, 9k" in out


def test_bench_says_where_a_best_scores_time_goes(capsys):
    """With ``--score``, under the table: the proof's parts (median, p90)."""
    code, out, _ = run(
        capsys, "bench", "--engine", "auto", "--numbers", "12", "--score",
        "--time-limit", "10", "--no-calibration",
    )  # fmt: skip
    assert code == 0
    assert "Proven best scores, auto: 6: 1" in out
    assert "Where the time goes, auto (1 proof; median, p90): formula and beam" in out


def test_bench_with_bad_deal_numbers_exits_2(capsys):
    code, _, err = run(capsys, "bench", "--numbers", "5-2")
    assert code == 2 and "bad deal numbers '5-2'" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (("bench", "--count", "1", "--known", "/no/such.jsonl"), "no such file"),
        (("bench", "--count", "1", "--out", "/no/such/dir/x.jsonl"), "cannot write"),
    ],
)
def test_bad_files_and_options_exit_2_with_one_message(capsys, argv, message):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert message in err and "Traceback" not in err


def test_a_malformed_known_scores_file_names_its_line(capsys, tmp_path):
    path = tmp_path / "known.jsonl"
    path.write_text('{"number": 1, "lower": 3}\n[')
    code, _, err = run(capsys, "bench", "--count", "1", "--known", str(path))
    assert code == 2 and "line 2: malformed JSON" in err


def test_standard_input_that_is_not_utf8_is_bad_input():
    proc = subprocess.run(
        [sys.executable, "-m", "service.cli", "show", "-"],
        input=b"\xff\xfe5S",
        capture_output=True,
        env={"PYTHONIOENCODING": "utf-8:strict", "PATH": "/usr/bin:/bin"},
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert b"not UTF-8" in proc.stderr and b"Traceback" not in proc.stderr


@pytest.mark.parametrize("port", ["-1", "99999", "http"])
def test_serve_refuses_a_port_out_of_range(capsys, port):
    with pytest.raises(SystemExit) as caught:
        main(["serve", "--port", port])
    assert caught.value.code == 2
    assert "port" in capsys.readouterr().err
