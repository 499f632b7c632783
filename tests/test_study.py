"""The study: deals proven through a real Redis and a real worker, then reported.

The service tests' session fixtures provide the Redis server and the worker
(``REDIS_URL`` mode); one test runs the command without ``REDIS_URL``, so it
starts its own embedded Redis and worker. Every study here uses deal numbers
of its own, so no answer is already in the session's answer cache and "proven
once" can be read off the rows' ``cached`` flags.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from conftest import SERVICE_ENV

from service import study
from service.cli import main
from service.study_plan import (
    StudyFiles,
    append_rows,
    check_budget,
    is_done,
    load_rows,
    load_runs,
    make_plan,
    parse_numbers,
    write_json,
)
from service.study_report import (
    Recheck,
    Summary,
    recheck,
    render_report,
    summarise,
    wilson,
    write_plot,
)
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.errors import InputError
from verifier.results import ProofResult, Status
from worker.settings import Settings

TIME_LIMIT = 20.0


# -- options and files ----------------------------------------------------------------
@pytest.mark.parametrize(
    "spec, numbers",
    [("1-5", (1, 2, 3, 4, 5)), ("7,3-4, 3", (3, 4, 7)), ("10", (10,))],
)
def test_numbers_are_ranges_and_lists(spec, numbers):
    assert parse_numbers(spec)[0] == numbers


@pytest.mark.parametrize(
    "spec", ["", "5-3", "a-b", "1-", "-4", "1-2000000", "²", "1-³"]
)
def test_bad_numbers_are_input_errors(spec):
    with pytest.raises(InputError):
        parse_numbers(spec)


def test_plans_refuse_what_cannot_be_studied():
    with pytest.raises(InputError, match="no score"):
        make_plan("besieged-fortress", "1-3", "score")
    with pytest.raises(InputError, match="engine"):
        make_plan("devils-grip", "1-3", "verdict", engine="nope")
    with pytest.raises(InputError, match="chunk"):
        make_plan("devils-grip", "1-3", "verdict", chunk=0)
    plan = make_plan(None, "1-3", "verdict")
    assert plan.stem == "devils-grip-1-3-verdict"


def test_wilson_interval_matches_the_formula_and_stays_in_range():
    low, high = wilson(5, 10)
    assert low == pytest.approx(0.2366, abs=1e-4)
    assert high == pytest.approx(0.7634, abs=1e-4)
    assert wilson(0, 100)[0] == 0.0
    assert wilson(0, 100)[1] == pytest.approx(0.0370, abs=1e-4)
    assert wilson(100, 100)[1] == pytest.approx(1.0)


def test_a_torn_last_line_is_skipped_and_cut_before_appending(tmp_path):
    path = tmp_path / "r.jsonl"
    append_rows(path, [{"number": 1, "x": 1}])
    with path.open("a") as out:
        out.write('{"number": 2, "x"')  # the study was killed mid-write
    assert set(load_rows(path)) == {1}
    append_rows(path, [{"number": 3, "x": 3}])
    assert set(load_rows(path)) == {1, 3}
    assert all(json.loads(line) for line in path.read_text().splitlines())


def test_unsettled_rows_are_retried_only_with_more_time():
    plan = make_plan(None, "1", "verdict", time_limit=5)
    unknown = ProofResult(Status.UNKNOWN, False, "sat", method="no proof within 5 s")
    row = {"number": 1, "time_limit": 5.0, "result": unknown.to_json()}
    assert is_done(row, plan)
    assert not is_done(row, make_plan(None, "1", "verdict", time_limit=9))
    assert not is_done({"number": 1, "error": {"code": "x"}}, plan)


def test_chunks_must_fit_the_services_job_limit():
    settings = Settings(max_time_limit=30, max_job_seconds=120)
    check_budget(make_plan(None, "1", time_limit=30, chunk=3), settings)
    with pytest.raises(InputError, match="lower --chunk or --time-limit"):
        check_budget(make_plan(None, "1", time_limit=30, chunk=4), settings)
    with pytest.raises(InputError, match="PATIENCE_MAX_TIME_LIMIT"):
        check_budget(make_plan(None, "1", time_limit=31), settings)


def test_a_results_folder_is_not_shared_by_two_studies(tmp_path):
    files = StudyFiles(tmp_path, "same")
    first = make_plan(None, "1-3", "verdict")
    write_json(files.runs, load_runs(files, first))
    with pytest.raises(InputError, match="another study"):
        load_runs(files, make_plan(None, "1-3", "score"))


# -- the report's replay check -----------------------------------------------------
def _won_row(number: int, line: tuple[str, ...]) -> dict[str, Any]:
    result = ProofResult(Status.WON, True, "construct", best_score=0, line=line)
    return {"number": number, "result": result.to_json()}


def test_recheck_replays_winning_lines_and_names_a_false_one():
    built = construct(3)
    line = tuple(dg.GAME.format_move(m) for m in built.line)
    state = dg.initial_state(built.deal)
    rows = [_won_row(1, line), _won_row(2, line[:-5])]
    check = recheck("devils-grip", rows, start_of=lambda number: state)
    assert check.won == 1
    assert len(check.failures) == 1 and check.failures[0].startswith("deal 2:")


# -- the report and its plot ---------------------------------------------------------
def test_report_shows_scores_grades_and_bounds(tmp_path):
    plan = make_plan(None, "1-10", "score")
    summary = Summary(
        plan=plan,
        deals=10,
        won=1,
        lost=8,
        unknown=1,
        failed=0,
        missing=0,
        scores={0: 1, 2: 2, 4: 3, 12: 2},
        open_scores=((3, 2), (None, None)),
        times=(0.1, 0.2, 0.3),
        methods={"lost: sat: UNSAT": 8},
        check=Recheck(won=1, scored=7),
    )
    assert write_plot(summary, tmp_path / "p.png")
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    text = render_report(summary, {"runs": []}, "p.png")
    assert "![Distribution of best scores](p.png)" in text
    # score, proven deals, share, cumulative, best found (not proven)
    assert "| 2 | 2 | 20.00 % | 30.00 % | 1 |" in text
    assert "| 4 | 3 | 30.00 % | 60.00 % | 0 |" in text
    # proven 3, plus the line found at 2; possibly also the deal with no bound
    assert "| brilliant | ≤ 2 | 4 | 40.00 % | 50.00 % |" in text
    assert "| good | ≤ 10 | 7 | 70.00 % | 80.00 % |" in text
    assert "Best scores proven for 8 of 10 deals." in text
    low, high = summary.win_interval()
    assert (low, high) == (wilson(1, 10)[0], wilson(2, 10)[1])


# -- real studies ----------------------------------------------------------------
def _args(numbers: str, out: Path, *extra: str) -> list[str]:
    return [
        "study",
        "--numbers",
        numbers,
        "--question",
        "verdict",
        "--time-limit",
        f"{TIME_LIMIT:g}",
        "--chunk",
        "4",
        "--out",
        str(out),
        *extra,
    ]


def _lines_per_number(path: Path) -> Counter[int]:
    return Counter(json.loads(line)["number"] for line in path.read_text().splitlines())


def _patience_solve(number: int) -> ProofResult:
    """Return ``patience solve --number N --json``'s answer, from its own process.

    Its own process, because forking provers from this one (which holds the
    session's Celery connections) would trip over kombu's after-fork clean-up.
    """
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "solve", "--number", str(number)]
        + ["--time-limit", f"{TIME_LIMIT:g}", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return ProofResult.from_json(json.loads(done.stdout))


def test_study_through_a_worker_agrees_with_direct_proofs(
    service_worker, service_env, monkeypatch, tmp_path
):
    for key, value in service_env.items():
        monkeypatch.setenv(key, value)
    assert main(_args("910001-910020", tmp_path)) == 0
    plan = make_plan(None, "910001-910020", "verdict", time_limit=TIME_LIMIT)
    files = StudyFiles(tmp_path, plan.stem)
    rows = load_rows(files.results)
    assert sorted(rows) == list(plan.numbers)
    with ThreadPoolExecutor(2) as pool:
        answers = pool.map(_patience_solve, plan.numbers)
        direct = dict(zip(plan.numbers, answers, strict=True))
    for n, row in rows.items():
        assert row["start"] == f"devils-grip deal #{n}"
        assert row["result"]["status"] == direct[n].status.value, n
    expected = Counter(
        r.status.value if r.proven else "unknown" for r in direct.values()
    )
    summary = summarise(plan, rows)
    assert (summary.won, summary.lost, summary.unknown) == (
        expected["won"],
        expected["lost"],
        expected["unknown"],
    )
    assert summary.check.won == summary.won and not summary.check.failures
    report = files.report.read_text()
    assert f"| lost (proven: no winning line exists) | {summary.lost} |" in report
    assert "patience study --game devils-grip --numbers 910001-910020" in report
    assert not files.pending.exists()
    assert main(_args("910001-910020", tmp_path, "--report-only")) == 0
    assert files.report.read_text() == report


def test_an_interrupted_study_resumes_without_proving_anything_twice(
    service_worker, service_env, tmp_path
):
    service = study.service_for(Settings.from_mapping(service_env))
    connection = study.Connection(
        service, "external", lambda: study.worker_processes(service)
    )
    plan = make_plan(None, "920001-920020", "verdict", time_limit=TIME_LIMIT, chunk=3)
    files = StudyFiles(tmp_path, plan.stem)
    seen: list[int] = []

    def interrupt_once(row: dict[str, Any]) -> None:
        seen.append(row["number"])
        if len(seen) == 5:
            raise KeyboardInterrupt

    first = study.Study(plan, files, connection, on_row=interrupt_once)
    with pytest.raises(KeyboardInterrupt):
        first.run()
    stored_first = set(load_rows(files.results))
    assert 5 <= len(stored_first) < 20
    left_in_flight = set(first.tally.submitted) - stored_first
    assert left_in_flight and files.pending.exists()

    second = study.Study(plan, files, connection, run_index=1)
    tally = second.run()
    assert not set(tally.submitted) & set(first.tally.submitted)
    assert left_in_flight <= set(tally.reattached)
    assert _lines_per_number(files.results) == Counter(plan.numbers)
    rows = load_rows(files.results)
    assert not any(row["cached"] for row in rows.values())  # each proven once
    assert not files.pending.exists()

    # The same deals again, uninterrupted: answered from the stored answers,
    # with the same counts.
    again = StudyFiles(tmp_path / "again", plan.stem)
    study.Study(plan, again, connection).run()
    rows_again = load_rows(again.results)
    assert all(row["cached"] for row in rows_again.values())
    one, two = (
        summarise(plan, rows),
        summarise(plan, rows_again),
    )
    assert (one.won, one.lost, one.unknown) == (two.won, two.lost, two.unknown)


def test_without_redis_url_the_study_brings_its_own_stack(monkeypatch, tmp_path):
    """The default path, with a won deal among the lost ones.

    Deal 274 is winnable (the study of deals 1-500 found it), so a winning
    line travels through the worker and the report replays it again.
    """
    monkeypatch.delenv("REDIS_URL", raising=False)
    for key, value in SERVICE_ENV.items():
        monkeypatch.setenv(key, value)
    assert main(_args("274,930001-930002", tmp_path, "--workers", "1")) == 0
    plan = make_plan(None, "274,930001-930002", "verdict")
    files = StudyFiles(tmp_path, plan.stem)
    rows = load_rows(files.results)
    assert sorted(rows) == [274, 930001, 930002]
    assert rows[274]["result"]["status"] == "won"
    summary = summarise(plan, rows)
    assert summary.won >= 1 and summary.check.won == summary.won
    assert not summary.check.failures
    runs = json.loads(files.runs.read_text())["runs"]
    assert [(r["mode"], r["processes"], r["stored"]) for r in runs] == [
        ("embedded", 1, 3)
    ]
