"""Known best scores: the shipped ground truth, its merge, and engines against it."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from patience_encodings import (
    bench,
    bench_last_call,
    bench_views,
    engines,
    known_scores,
)
from patience_encodings.known_scores import KnownScore
from service.cli import main as cli_main
from verifier import devils_grip as dg
from verifier.errors import InputError
from verifier.formats import start_from_number
from verifier.results import ProofResult, Question, Status

SHIPPED = known_scores.load()


def test_shipped_file_covers_deals_1_to_1000_and_every_line_replays():
    """Every lost deal of 1-1000 (deals 274 and 390 are won: no best-score
    benchmark), each best score of 1-600 known; beyond, some are ranges."""
    assert sorted(SHIPPED) == [n for n in range(1, 1001) if n not in (274, 390)]
    for entry in SHIPPED.values():
        known_scores.check(entry)  # replays the line, checks lower <= upper
    assert all(entry.settled for n, entry in SHIPPED.items() if n <= 600)
    assert SHIPPED[12].settled and SHIPPED[12].upper == 6


def test_check_refuses_a_line_with_another_score_or_a_bound_above_it():
    entry = SHIPPED[12]
    with pytest.raises(InputError, match="leaves 6 cards"):
        known_scores.check(replace(entry, upper=5, lower=5))
    with pytest.raises(InputError, match="bound 7 above"):
        known_scores.check(replace(entry, lower=7))
    with pytest.raises(InputError, match="not over"):
        known_scores.check(replace(entry, line=entry.line[:5]))


def _record(number, engine, best=None, lower=None, line=(), status="lost"):
    return {
        "asked": engine,
        "engine": "member",
        "number": number,
        "status": status,
        "best_score": best,
        "lower_bound": lower,
        "line": list(line),
        "elapsed": 1.0,
    }


def test_merge_keeps_the_best_line_and_the_highest_bound_of_all_runs():
    line = SHIPPED[12].line
    records = [
        _record(12, "auto", best=6, lower=4, line=line),
        _record(12, "rc2-grid", lower=6),
        _record(12, "sat", best=None, lower=5),
        _record(12, "won-run", best=0, line=("deal",), status="won"),
    ]
    entry = known_scores.merge(records)[12]
    assert (entry.lower, entry.upper, entry.line) == (6, 6, line)
    assert entry.lower_by.startswith("rc2-grid") and entry.upper_by.startswith("auto")
    with pytest.raises(InputError, match="bound 7 above"):
        known_scores.merge([*records, _record(12, "liar", lower=7)])


def test_merge_takes_a_known_scores_file_with_new_runs():
    """The shipped entries merge with new runs: a higher bound replaces the
    old one, and on ties the file keeps its own labels."""
    old = _open(SHIPPED[54])
    entries = [(old if n == 54 else e).to_json() for n, e in SHIPPED.items()]
    runs = [_record(54, "auto", lower=old.upper), _record(12, "auto", lower=6)]
    merged = known_scores.merge([*entries, *runs])
    assert sorted(merged) == sorted(SHIPPED)
    assert merged[54].settled and merged[54].lower_by.startswith("auto")
    assert merged[54].upper_by == old.upper_by and merged[54].line == old.line
    assert merged[12] == SHIPPED[12]


def _open(entry: KnownScore) -> KnownScore:
    """Return ``entry`` as it stood before its bound met its line (every
    shipped deal is settled now): a card lower, by an older run."""
    assert entry.settled
    return replace(entry, lower=entry.lower - 1, lower_by="an older run")


def test_conflicts_name_a_bound_above_a_known_line_and_a_line_below_a_bound():
    entry = KnownScore(3, 14, 16, (), "a", "b")
    assert known_scores.conflicts(entry, 16, 16) == []
    assert known_scores.conflicts(entry, 17, None) == [
        "deal 3: bound 17 above known line 16"
    ]
    assert known_scores.conflicts(entry, None, 13) == [
        "deal 3: line 13 below known bound 14"
    ]


def test_bench_compares_rows_with_the_known_scores():
    def row(number, best, lower):
        result = ProofResult(
            Status.LOST, True, "x", Question.SCORE, best, best == lower, lower
        )
        return bench.Row(number, result)

    known = {n: SHIPPED[n] for n in (9, 12)}
    rows = [row(9, 11, 7), row(12, 6, 6), row(30, 10, 1)]
    got = bench.against_known(rows, known)
    assert got == {
        "deals": 2,
        "line_gap": 11 - SHIPPED[9].upper,
        "bound_gap": SHIPPED[9].lower - 7,
        "better": [],
        "conflicts": [],
    }
    liar = bench.against_known([row(12, 5, 5)], known)
    assert (
        liar["better"] == [12] and "line 5 below known bound 6" in liar["conflicts"][0]
    )


@pytest.mark.parametrize(
    ("number", "engine"), [(12, "auto"), (125, "auto"), (2, "sat"), (9, "sat")]
)
def test_engines_never_contradict_the_known_scores(number, engine):
    """A proven bound above a known line, or a line below a known bound, is a bug.

    Deal 2's best line (5) is far below what the beam finds (8), and its bound
    comes slowly: both sides of the bracket are exercised. Deal 125 is one of
    the deals no setting was tuned on (best score 5).
    """
    entry = SHIPPED[number]
    start = start_from_number(dg.GAME, number)
    result = engines.solve(start, question=Question.SCORE, engine=engine, time_limit=6)
    assert result.status is Status.LOST and result.proven
    assert known_scores.conflicts(entry, result.lower_bound, result.best_score) == []
    if result.score_proven:
        assert result.best_score == entry.upper == entry.lower


def test_bench_known_option_reports_gaps_and_keeps_the_asked_engine(tmp_path, capsys):
    out = tmp_path / "rows.jsonl"
    argv = ["bench", "--engine", "sat", "--start", "12", "--count", "1"]
    argv += ["--time-limit", "8", "--score", "--out", str(out)]
    argv += ["--known", str(known_scores.SHIPPED), "--no-calibration"]
    assert cli_main(argv) == 0
    text = capsys.readouterr().out
    assert "Against the known scores (1 deal, 1 best score known), sat:" in text
    assert "contradictions: none" in text
    assert "calibration" not in text
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["asked"] == "sat" and record["number"] == 12
    assert "calibration_s" not in record  # no calibration was run


def test_bench_says_nothing_of_known_scores_that_know_none_of_its_deals(
    tmp_path, capsys
):
    """A file that knows other deals gives no "0 deals known" paragraph; the
    rows carry the calibration's seconds, the machine's mark."""
    first = known_scores.SHIPPED.read_text().splitlines()[0]
    assert json.loads(first)["number"] != 12
    other = tmp_path / "other.jsonl"
    other.write_text(first + "\n")
    out = tmp_path / "rows.jsonl"
    argv = ["bench", "--engine", "sat", "--start", "12", "--count", "1"]
    argv += ["--time-limit", "8", "--score", "--out", str(out), "--known", str(other)]
    assert cli_main(argv) == 0
    text = capsys.readouterr().out
    assert "calibration: deal 12's last call" in text
    assert "Against the known scores" not in text
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert 0 < record["calibration_s"] < 120


def test_view_benchmark_writes_runs_that_merge_into_known_scores(tmp_path, capsys):
    out = tmp_path / "views.jsonl"
    argv = ["--numbers", "12", "--time-limit", "8", "--views", "grid"]
    assert bench_views.main([*argv, "--out", str(out)]) == 0
    assert "| 12 | =6 (" in capsys.readouterr().out
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["engine"] for r in records] == ["rc2-grid"]
    entry = known_scores.merge(records)[12]  # replays the decoded line
    assert entry.settled and entry.upper == SHIPPED[12].upper


def test_view_benchmark_with_the_known_line_in_hand(tmp_path, capsys):
    """``--known`` hands RC2 the deal's best line: the short-stacks view,
    restricted to better lines, finds none and so proves that line optimal."""
    out = tmp_path / "views.jsonl"
    argv = ["--start", "12", "--count", "1", "--time-limit", "30", "--views", "grid"]
    argv += ["--known", str(known_scores.SHIPPED), "--out", str(out)]
    assert bench_views.main(argv) == 0
    assert "| 12 | =6 (" in capsys.readouterr().out
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["score_proven"] and record["line"] == list(SHIPPED[12].line)


def _claiming(entry: KnownScore, best: int, path):
    """Write a known-scores file in which ``entry``'s best score is ``best``
    (proven, as it claims), and return its path."""
    known_scores.save([replace(entry, lower=best, upper=best)], path)
    return path


def _answered(out: str, number: int) -> bool:
    """Whether deal ``number``'s row of a last-call table has its seconds
    (not "over" the limit)."""
    rows = [row for row in out.split("\n") if row.startswith(f"| {number} | ")]
    return bool(rows) and not any("over" in row for row in rows)


def test_last_call_benchmark_refutes_one_card_fewer(tmp_path, capsys):
    """Deal 12's best score is 6: "5 or fewer" is refuted; a deal whose best
    score is unknown is skipped; a file claiming 7 is caught, since the call
    then finds a line leaving 6."""
    known = tmp_path / "known.jsonl"
    known_scores.save([SHIPPED[12], _open(SHIPPED[54])], known)
    argv = ["--numbers", "12,54", "--time-limit", "60", "--known", str(known)]
    assert bench_last_call.main(argv) == 0
    out = capsys.readouterr().out
    assert "| 12 | 6 | " in out and "| 54 | unknown |" in out
    assert _answered(out, 12)
    assert out.strip().splitlines()[-1].endswith("0 over 60 s")
    wrong = _claiming(SHIPPED[12], 7, tmp_path / "wrong.jsonl")
    with pytest.raises(AssertionError, match="a line below its best score 7"):
        bench_last_call.main(["--numbers", "12", "--known", str(wrong)])


def test_last_call_benchmark_at_best_finds_the_line_and_sums_up(tmp_path, capsys):
    """``--at-best`` asks deal 12 for a line leaving at most its 6 cards (found
    from scratch); the summary counts the one call; a file claiming 5 is
    caught, since "at most 5" is then refuted."""
    argv = ["--numbers", "12", "--time-limit", "60", "--at-best"]
    assert bench_last_call.main(argv) == 0
    out = capsys.readouterr().out
    assert "| 12 | 6 | " in out
    assert _answered(out, 12)
    assert out.strip().splitlines()[-1].startswith("1 calls: median ")
    assert out.strip().endswith("0 over 60 s")
    wrong = _claiming(SHIPPED[12], 5, tmp_path / "wrong.jsonl")
    with pytest.raises(AssertionError, match="no line at its best score 5"):
        bench_last_call.main(argv + ["--known", str(wrong)])


def test_last_call_summary_ranks_calls_past_the_limit_last():
    line = bench_last_call.summary([0.1, 0.3, 2.0, None], 20)
    assert line == (
        "4 calls: median 0.30 s, p90 over 20 s, max over 20 s; "
        "2 within 0.5 s, 1 over 20 s"
    )
    assert bench_last_call.summary([], 20) == "no calls"


def test_summary_counts_only_settled_best_scores():
    """The spread of the shipped file, and an open entry left out of it."""
    lines = known_scores.summary(SHIPPED)
    settled = sum(e.settled for e in SHIPPED.values())
    assert lines[0] == f"{len(SHIPPED)} deals, {settled} best scores known"
    header, _, counts = lines[-3:]
    values = [int(v) for v in header.strip("|").split("|")[1:]]
    numbers = [int(v) for v in counts.strip("|").split("|")[1:]]
    assert sum(numbers) == settled
    assert dict(zip(values, numbers, strict=True))[6] == sum(
        e.settled and e.upper == 6 for e in SHIPPED.values()
    )
    some = {12: SHIPPED[12], 54: _open(SHIPPED[54])}
    assert known_scores.summary(some)[:2] == [
        "2 deals, 1 best scores known",
        "median 6, mean 6.00, range 6-6",
    ]


def test_benchmark_scripts_reject_bad_deal_numbers(capsys):
    for script in (bench_views, bench_last_call):
        with pytest.raises(SystemExit) as exit_:
            script.main(["--numbers", "3,x"])
        assert exit_.value.code == 2
        assert "bad deal numbers 'x'" in capsys.readouterr().err
