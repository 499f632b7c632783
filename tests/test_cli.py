"""The ``patience`` CLI: deal, show, play; bad input exits 2 with one message."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from service import cli
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


def cli_process(argv: list[str], stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    """Run ``patience ARGV`` in a fresh interpreter (the real standard input)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONIOENCODING"}
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *argv],
        input=stdin,
        capture_output=True,
        env=env,
        check=False,
    )


def fake_stdin(monkeypatch, data: bytes) -> None:
    """Give the CLI standard input ``data``, decoded as Python decodes a pipe."""
    stream = io.TextIOWrapper(io.BytesIO(data), "utf-8", errors="surrogateescape")
    monkeypatch.setattr(sys, "stdin", stream)


def test_deal_json_is_read_back_by_every_reader(capsys, tmp_path):
    """``patience deal --json`` prints ``{game, number, deal}``; show, play and
    solve read it back as that numbered deal."""
    _, printed, _ = run(capsys, "deal", "--number", "17", "--json")
    path = tmp_path / "d17.json"
    path.write_text(printed)
    (tmp_path / "none.moves").write_text("")
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "") and "devils-grip deal #17" in out
    code, out, _ = run(capsys, "play", str(path), str(tmp_path / "none.moves"))
    assert code == 0
    argv = ("solve", str(path), "--engine", "search", "--time-limit", "5", "--json")
    code, out, _ = run(capsys, *argv)
    assert code == 0 and json.loads(out)["status"] == "lost"


def test_deal_json_pipes_into_show():
    printed = cli_process(["deal", "--number", "17", "--json"], b"").stdout
    proc = cli_process(["show", "-"], printed)
    assert proc.returncode == 0, proc.stderr
    assert b"devils-grip deal #17" in proc.stdout


def test_a_deal_json_with_another_number_exits_2(capsys, tmp_path):
    _, printed, _ = run(capsys, "deal", "--number", "17", "--json")
    path = tmp_path / "d.json"
    path.write_text(json.dumps(json.loads(printed) | {"number": 18}))
    code, _, err = run(capsys, "show", str(path))
    assert code == 2 and "'deal' is not deal number 18" in err


def test_empty_deal_numbers_exit_2_as_in_study(capsys):
    """``--numbers ""`` is an empty list, not "run --start/--count"."""
    code, out, err = run(
        capsys, "bench", "--numbers", "", "--count", "1", "--engine", "search",
        "--time-limit", "0.1", "--no-calibration",
    )  # fmt: skip
    assert code == 2 and out == ""
    assert err == "error: --numbers: bad deal numbers '': expected N or N-M\n"


def test_generate_refuses_more_deals_than_the_api(capsys, monkeypatch):
    """The CLI's bound is the API's (``worker.jobs.MAX_DEALS``); above it no
    deal is built."""
    from patience_encodings import generate
    from worker.jobs import MAX_DEALS

    def never(*_args, **_kwargs):
        pytest.fail("a deal was built for a count above the maximum")

    monkeypatch.setattr(generate, "generate_one", never)
    assert cli.MAX_GENERATE == MAX_DEALS
    code, out, err = run(capsys, "generate", "--count", str(MAX_DEALS + 1))
    assert code == 2 and out == ""
    assert f"--count must be between 1 and {MAX_DEALS}, not {MAX_DEALS + 1}" in err


def test_standard_input_not_utf8_names_standard_input(capsys, monkeypatch):
    """A pipe's bad bytes are named as such, not as a card token of surrogates."""
    fake_stdin(monkeypatch, b"\xff\xfe")
    code, _, err = run(capsys, "show", "-")
    assert code == 2
    assert err == "error: standard input is not UTF-8 text (byte 0xff at offset 0)\n"


def test_standard_input_not_utf8_in_the_default_environment():
    proc = cli_process(["show", "-"], b"\xff\xfe")
    assert proc.returncode == 2
    assert proc.stderr.startswith(b"error: standard input is not UTF-8 text")


def test_a_file_not_utf8_is_named(capsys, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\xff\xfe")
    code, _, err = run(capsys, "show", str(path))
    assert code == 2 and f"{path} is not UTF-8 text (byte 0xff" in err


def _with_bom(text: str) -> bytes:
    return b"\xef\xbb\xbf" + text.encode()


@pytest.mark.parametrize("form", ["text", "json"])
def test_a_leading_byte_order_mark_is_ignored_in_files(capsys, tmp_path, form):
    deal = dg.numbered_deal(17)
    text = dg.format_deal(deal)
    if form == "json":
        text = json.dumps({"deal": [str(c) for c in deal]})
    path = tmp_path / "bom.txt"
    path.write_bytes(_with_bom(text))
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "") and " A  J♦" in out


def test_a_leading_byte_order_mark_is_ignored_on_standard_input(capsys, monkeypatch):
    fake_stdin(monkeypatch, _with_bom(dg.format_deal(dg.numbered_deal(17))))
    code, out, err = run(capsys, "show", "-")
    assert (code, err) == (0, "") and " A  J♦" in out


def test_a_byte_order_mark_in_a_moves_file_is_ignored(capsys, tmp_path):
    moves = tmp_path / "m.txt"
    moves.write_bytes(_with_bom(WIN_MOVES.read_text()))
    code, out, _ = run(capsys, "play", str(WIN_POSITION), str(moves))
    assert code == 0 and out.strip().endswith("WON")


@pytest.mark.parametrize(
    "fields, named",
    [
        ({"quesiton": "score"}, "unknown field(s) in a number start: quesiton"),
        ({"bogus": 1}, "unknown field(s) in a number start: bogus"),
    ],
)
def test_unknown_fields_in_a_start_file_exit_2(capsys, tmp_path, fields, named):
    """The API refuses these fields; the CLI must not quietly ignore them."""
    path = tmp_path / "start.json"
    path.write_text(json.dumps({"game": "devils-grip", "number": 5} | fields))
    code, out, err = run(capsys, "show", str(path))
    assert code == 2 and out == ""
    assert err.startswith(f"error: {named} (allowed: game, number, deal")


@pytest.mark.parametrize("command", ["show", "solve", "certify"])
def test_a_file_and_a_number_together_exit_2(capsys, tmp_path, command):
    """Neither start may be silently dropped."""
    path = tmp_path / "d17.txt"
    path.write_text(dg.format_deal(dg.numbered_deal(17)))
    code, out, err = run(capsys, command, str(path), "--number", "5")
    assert code == 2 and out == ""
    both = f"not both: {str(path)!r} and --number 5"
    assert err == f"error: give one start (a FILE or --number N), {both}\n"


def test_verify_cases_checks_the_engine_before_any_case(capsys):
    cases = Path(__file__).resolve().parent.parent / "seeds" / "edge-cases"
    code, out, err = run(
        capsys, "verify-cases", "--engine", "nope", str(cases / "devils-grip.yaml")
    )
    assert code == 2 and out == ""
    assert err.startswith("error: unknown engine 'nope'")


def test_bench_prints_no_empty_best_scores_line(capsys):
    code, out, _ = run(
        capsys, "bench", "--engine", "search", "--numbers", "1", "--score",
        "--time-limit", "0.1", "--no-calibration",
    )  # fmt: skip
    assert code == 0
    # the empty list's line would end with its colon
    assert not any(line.rstrip().endswith(":") for line in out.splitlines())
    assert "Proven best scores, search: none" in out


def test_a_line_the_reference_engine_refuses_exits_3_with_one_message(
    capsys, monkeypatch
):
    """A prover bug surfaces as one line and its own exit code, no traceback
    (the portfolio raises it when no member has a sound answer)."""
    from verifier.results import ResultCheckError

    def refused_line(args):
        raise ResultCheckError("step 3: 5C does not fit on 8S")

    monkeypatch.setattr(cli, "cmd_solve", refused_line)
    code, out, err = run(capsys, "solve", "--number", "1")
    assert code == cli.EXIT_CHECK_FAILED == 3 and out == ""
    assert err == (
        "internal error: the reference engine refused a line: "
        "step 3: 5C does not fit on 8S\n"
    )
