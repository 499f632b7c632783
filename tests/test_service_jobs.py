"""The job layer without the queue: settings, request parsing, deals, batches."""

from __future__ import annotations

import os

import pytest

from patience_encodings.engines import CORES_ENV, cores_available, engines_for
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.errors import DealError, InputError, UnknownGameError, UnsupportedError
from verifier.replay import replay
from worker import jobs
from worker.celery_app import job_cores, share_cores
from worker.settings import Settings, hard_limit, soft_limit

SETTINGS = Settings(max_time_limit=30, max_job_seconds=120)
needs_prover = pytest.mark.skipif(
    not engines_for("devils-grip"), reason="no Devil's Grip prover registered yet"
)


# -- settings ----------------------------------------------------------------
def test_time_limits_leave_room_for_cleanup():
    for budget in (0.1, 1, 10, 600, 3600):
        assert budget < soft_limit(budget) < hard_limit(budget)


def test_visibility_timeout_is_derived_beyond_the_longest_job():
    settings = Settings()
    assert settings.visibility_timeout > hard_limit(settings.max_job_seconds)


def test_visibility_timeout_shorter_than_a_job_is_refused():
    with pytest.raises(ValueError, match="run twice"):
        Settings(max_time_limit=50, max_job_seconds=100, visibility_timeout=50)


def _certificate_request() -> dict:
    from verifier.results import ProofResult, Question, Status

    claim = ProofResult(Status.LOST, True, "sat", Question.VERDICT, method="unsat")
    position = dg.position_to_json(dg.initial_state(dg.numbered_deal(1)))
    return {"proof": "0" * 32, "position": position, "result": claim.to_json()}


def test_a_certificate_job_fits_the_deployments_longest_job():
    """The visibility timeout is checked against ``max_job_seconds`` only, so
    a certificate job is cut to fit it: else a deployment of short jobs (and
    a short timeout) would deliver a slow certificate job twice. The message
    carries the API's cap, so a worker configured wider keeps to it, and
    the cap is in the key: a cap raised later is asked again."""
    wide = jobs.CertificateJob.from_json(_certificate_request(), SETTINGS)
    assert wide.budget == jobs.CERTIFICATE_SECONDS
    short = Settings(max_time_limit=2, max_job_seconds=6, visibility_timeout=15)
    job = jobs.CertificateJob.from_json(_certificate_request(), short)
    assert job.budget == 6 and hard_limit(job.budget) < short.visibility_timeout
    assert jobs.CertificateJob.from_json(job.to_json(), SETTINGS).budget == 6
    narrow = jobs.CertificateJob.from_json(wide.to_json(), short)
    assert narrow.budget == 6
    assert narrow.key == wide.key  # the worker finds the key the API wrote
    assert job.key != wide.key and job.key.endswith(":6:" + "0" * 32)


def test_a_time_limit_beyond_the_provers_own_is_refused():
    from patience_encodings.engines import MAX_TIME_LIMIT

    with pytest.raises(ValueError, match="provers' limit"):
        Settings(max_time_limit=MAX_TIME_LIMIT + 1, max_job_seconds=2 * MAX_TIME_LIMIT)


def test_settings_come_from_environment_strings():
    env = {
        "REDIS_URL": "redis://example:1/2",
        "PATIENCE_MAX_TIME_LIMIT": "5",
        "PATIENCE_MAX_JOB_SECONDS": "8",
        "PATIENCE_VISIBILITY_TIMEOUT": "20",
        "PATIENCE_RESULT_EXPIRES": "60",
    }
    settings = Settings.from_mapping(env)
    assert settings.redis_url == "redis://example:1/2"
    assert (settings.max_time_limit, settings.visibility_timeout) == (5.0, 20.0)
    assert settings.result_expires == 60
    assert Settings.from_mapping(settings.to_env()) == settings


@pytest.mark.parametrize(
    "cores, concurrency, share", [(2, 2, 1), (2, 1, 2), (8, 2, 4), (1, 4, 1), (3, 2, 1)]
)
def test_each_job_gets_its_share_of_the_workers_cores(cores, concurrency, share):
    assert job_cores(cores, concurrency) == share


def test_the_worker_sets_each_jobs_cores_unless_the_deployment_did(monkeypatch):
    monkeypatch.delenv(CORES_ENV, raising=False)
    share_cores(options={"concurrency": 2 * cores_available()})
    assert os.environ[CORES_ENV] == "1"
    monkeypatch.delenv(CORES_ENV)
    share_cores(options={"concurrency": 1})  # one job at a time: all the cores
    assert os.environ[CORES_ENV] == str(cores_available())
    monkeypatch.setenv(CORES_ENV, "7")
    share_cores(options={"concurrency": 2})
    assert os.environ[CORES_ENV] == "7"


def format_deal(number: int) -> str:
    """The text of numbered deal ``number`` (as ``patience deal`` prints it)."""
    return dg.format_deal(dg.numbered_deal(number))


# -- proof requests ------------------------------------------------------------------
@pytest.mark.parametrize(
    "body, error, fragment",
    [
        ([1, 2], InputError, "must be a JSON object"),
        ({}, InputError, "exactly one of 'deal', 'position' or 'number'"),
        ({"number": 1, "position": {}}, InputError, "got position, number"),
        ({"number": 1, "deal": "2S"}, DealError, "has 1 card"),
        ({"number": 1, "deal": format_deal(2)}, InputError, "not deal number 1"),
        ({"number": 1, "time_limt": 5}, InputError, "unknown field(s)"),
        ({"game": "poker", "number": 1}, UnknownGameError, "unknown game 'poker'"),
        ({"game": 7, "number": 1}, InputError, "'game' must be a string"),
        ({"game": "", "number": 1}, UnknownGameError, "unknown game ''"),
        ({"kind": "case", "number": 1}, InputError, "'kind' must be one of proof"),
        ({"deal": ["2S", "5S"]}, DealError, "has 2 cards, expected 96"),
        ({"deal": ["AS"] * 96}, DealError, "not in the Devil's Grip deck"),
        ({"number": -1}, DealError, "out of range"),
        ({"number": 1.5}, InputError, "must be an integer"),
        ({"number": 1, "question": "why"}, InputError, "'question' must be one of"),
        ({"number": 1, "time_limit": 0}, InputError, "'time_limit' must be between"),
        ({"number": 1, "time_limit": 1e9}, InputError, "between 0.1 and 30"),
        ({"number": 1, "time_limit": True}, InputError, "must be a number, not bool"),
        ({"number": 1, "time_limit": "9"}, InputError, "must be a number, not str"),
        ({"number": 1, "time_limit": float("nan")}, InputError, "between"),
        ({"position": {"grid": []}}, InputError, "0 grid cells, expected 24"),
    ],
)
def test_bad_proof_requests_name_the_problem(body, error, fragment):
    with pytest.raises(error) as caught:
        jobs.ProofJob.from_json(body, SETTINGS)
    assert fragment in caught.value.message


def test_a_number_with_its_own_deal_is_the_number_as_deal_json_prints_it():
    """``patience deal --json`` prints the number and the deal: both may be
    sent, and the job is the numbered deal's (one submission key for both)."""
    printed = {"game": "devils-grip", "number": 7, "deal": format_deal(7)}
    job = jobs.ProofJob.from_json(printed, SETTINGS)
    plain = jobs.ProofJob.from_json({"number": 7}, SETTINGS)
    assert job == plain and job.start.deal == plain.start.deal


def test_unknown_engine_is_refused():
    with pytest.raises(UnsupportedError):
        jobs.ProofJob.from_json({"number": 1, "engine": "oracle"}, SETTINGS)


@needs_prover
def test_the_same_deal_in_any_form_has_one_submission_key():
    deal = dg.numbered_deal(17)
    forms = [
        {"number": 17},
        {"deal": [str(c) for c in deal]},
        {"deal": dg.format_deal(deal)},
        {"position": dg.position_to_json(dg.initial_state(deal))},
    ]
    keys = {jobs.ProofJob.from_json(f, SETTINGS).key for f in forms}
    assert len(keys) == 1
    other = jobs.ProofJob.from_json({"number": 17, "question": "score"}, SETTINGS)
    assert other.key not in keys


@needs_prover
def test_another_version_has_another_key(monkeypatch):
    """An upgraded prover must not be answered from the old one's cache."""
    job = jobs.ProofJob.from_json({"number": 17}, SETTINGS)
    ours = job.key
    monkeypatch.setattr(jobs, "version", lambda: "0.0.0-older")
    assert job.key != ours


@needs_prover
def test_proof_job_round_trips_through_its_message():
    job = jobs.ProofJob.from_json({"number": 3, "time_limit": 2}, SETTINGS)
    again = jobs.ProofJob.from_json(job.to_json(), SETTINGS)
    assert again == job and again.key == job.key
    assert job.budget == 2.0


# -- deals ----------------------------------------------------------------
@pytest.mark.parametrize(
    "body, error, fragment",
    [
        ({"count": 0}, InputError, "'count' must be between 1 and 1000"),
        ({"count": 10**9}, InputError, "'count' must be between"),
        ({"difficulty": "nightmare"}, InputError, "'difficulty' must be one of"),
        ({"seed": -5}, InputError, "'seed' must be between"),
        # deal i comes from seed + i, so the last seeds leave no room for more
        ({"count": 2, "seed": 2**63 - 1}, InputError, "'seed' must be between"),
        ({"game": "besieged-fortress"}, UnsupportedError, "no deal generator"),
        ({"colour": "red"}, InputError, "unknown field(s)"),
    ],
)
def test_bad_deals_requests_name_the_problem(body, error, fragment):
    with pytest.raises(error) as caught:
        jobs.DealsJob.from_json(body, SETTINGS)
    assert fragment in caught.value.message


def test_deals_job_draws_a_seed_once_so_redelivery_repeats_it():
    job = jobs.DealsJob.from_json({"count": 2}, SETTINGS)
    assert jobs.DealsJob.from_json(job.to_json(), SETTINGS) == job


def test_generated_deals_are_winnable_and_reproducible():
    job = jobs.DealsJob.from_json({"count": 3, "seed": 40}, SETTINGS)
    reports: list[dict] = []
    out = jobs.run_deals(job, reports.append)
    assert [r["done"] for r in reports] == [0, 1, 2, 3]
    for i, item in enumerate(out["deals"]):
        deal = dg.deal_from_list(item["deal"])
        assert deal == construct(40 + i).deal
        outcome = replay(
            dg.GAME, dg.initial_state(deal), dg.parse_moves("\n".join(item["line"]))
        )
        assert outcome.won
    assert jobs.run_deals(job) == out


# -- batches ----------------------------------------------------------------
@needs_prover
def test_batch_errors_name_the_item():
    body = {"items": [{"number": 1}, {"deal": ["2S", "XX"]}]}
    with pytest.raises(InputError, match=r"items\[1\]: unknown card token 'XX'"):
        jobs.BatchJob.from_json(body, SETTINGS)


@pytest.mark.parametrize(
    "body, fragment",
    [
        ({"items": []}, "'items' must be a list of 1 to 1000"),
        ({"items": {"number": 1}}, "'items' must be a list"),
        ({"items": [5]}, "items[0]: an item must be a JSON object"),
        ({"items": [{"kind": "case"}]}, "items[0]: 'case' must be a JSON object"),
        ({"cases": 5}, "'cases' must be the text of a case file"),
        ({"items": [{"kind": "poem"}]}, "items[0]: 'kind' must be one of"),
    ],
)
def test_bad_batches_are_refused(body, fragment):
    with pytest.raises(InputError) as caught:
        jobs.BatchJob.from_json(body, SETTINGS)
    assert fragment in caught.value.message


@pytest.mark.parametrize(
    "batch, error, message",
    [
        ({"question": "x"}, InputError, "'question' must be one of verdict, score"),
        ({"time_limit": 0}, InputError, "'time_limit' must be between 0.1 and 30"),
        ({"time_limit": 31}, InputError, "'time_limit' must be between 0.1 and 30"),
        ({"time_limit": "1"}, InputError, "'time_limit' must be a number, not str"),
        ({"game": "x"}, UnknownGameError, "unknown game 'x'"),
        ({"game": 5}, InputError, "'game' must be a string, not int"),
        ({"engine": "x"}, UnsupportedError, "unknown engine 'x'"),
        ({"engine": 5}, InputError, "'engine' must be a string, not int"),
        (
            {"game": "besieged-fortress", "question": "score"},
            UnsupportedError,
            "Besieged Fortress has no score to prove",
        ),
    ],
)
def test_a_bad_batch_default_names_the_batch_not_an_item(batch, error, message):
    body = batch | {"items": [{"number": 1}], "cases": "- {deal: number 1, dead: true}"}
    with pytest.raises(error) as caught:
        jobs.BatchJob.from_json(body, SETTINGS)
    assert caught.value.message.startswith(message)


@needs_prover
def test_a_batch_engine_is_checked_against_a_game_only_the_batch_names():
    """``engine: smt`` cannot prove Besieged Fortress: a batch that names that
    game is wrong as a whole; one whose item names it, only in that item."""
    smt = {"engine": "smt", "items": [{"number": 1}]}
    assert jobs.BatchJob.from_json(smt, SETTINGS).items[0].engine == "smt"
    with pytest.raises(UnsupportedError, match="^engine 'smt' does not support"):
        jobs.BatchJob.from_json(smt | {"game": "besieged-fortress"}, SETTINGS)
    mixed = smt | {"items": [{"number": 1}, {"number": 1, "game": "besieged-fortress"}]}
    with pytest.raises(UnsupportedError, match=r"^items\[1\]: engine 'smt'"):
        jobs.BatchJob.from_json(mixed, SETTINGS)


@pytest.mark.parametrize("time_limit", [1e9, 3600, 30.5, 0, 0.05])
def test_a_case_time_limit_gets_the_services_range_once(time_limit):
    case = {"deal": "number 1", "dead": True, "time_limit": time_limit}
    body = {"items": [{"kind": "case", "case": case}]}
    with pytest.raises(InputError) as caught:
        jobs.BatchJob.from_json(body, SETTINGS)
    message = caught.value.message
    assert message.startswith("items[0]: ")
    assert message.endswith(
        f"'time_limit' must be between 0.1 and 30, not {time_limit!r}"
    )


def test_a_case_without_a_time_limit_fits_a_service_with_a_low_cap():
    """A case's default limit (10 s) is cut to the service's cap, as a proof's
    is, instead of refusing a case that asked for nothing."""
    settings = Settings(max_time_limit=5, max_job_seconds=120)
    case = {"kind": "case", "case": {"deal": "number 1", "legal": "T>A1"}}
    job = jobs.BatchJob.from_json({"items": [case]}, settings)
    assert job.items[0].case.time_limit == 5
    batch = jobs.BatchJob.from_json({"time_limit": 2, "items": [case]}, settings)
    assert batch.items[0].case.time_limit == 2


@needs_prover
def test_batch_defaults_apply_to_items_and_the_budget_is_bounded():
    body = {"time_limit": 2, "question": "score", "items": [{"number": 1}]}
    job = jobs.BatchJob.from_json(body, SETTINGS)
    assert job.items[0].time_limit == 2 and job.items[0].question.value == "score"
    many = {"time_limit": 30, "items": [{"number": n} for n in range(5)]}
    with pytest.raises(InputError, match="split it or lower 'time_limit'"):
        jobs.BatchJob.from_json(many, SETTINGS)


class _TimeUp(Exception):
    """Stands for Celery's soft time limit: an exception a signal raises."""


def _raise_time_up(signum, frame):
    raise _TimeUp


@pytest.mark.skipif(not engines_for("devils-grip"), reason="no prover registered")
def test_a_batch_out_of_time_keeps_the_items_it_finished():
    """The time-up exception arrives by a signal mid-proof, as the soft limit does."""
    import signal

    body = {
        "time_limit": 2,
        "question": "score",
        "items": [{"number": n} for n in (3, 9, 13)],
    }
    job = jobs.BatchJob.from_json(body, SETTINGS)
    reports = []

    def progress(meta):
        reports.append(meta)
        if (
            meta["done"] == 1
        ):  # the first item is proven: the time runs out in the second
            signal.setitimer(signal.ITIMER_REAL, 0.5)

    previous = signal.signal(signal.SIGALRM, _raise_time_up)
    try:
        out = jobs.run_batch(job, None, progress, time_up=(_TimeUp,))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    first, *rest = out["items"]
    assert first["ok"] and first["index"] == 0  # kept, whatever 2 s settled
    assert [item["index"] for item in rest] == [1, 2]
    assert all(item["error"]["code"] == jobs.NOT_REACHED for item in rest)
    assert out["counts"] == {first["result"]["status"]: 1, jobs.NOT_REACHED: 2}
    assert out["total"] == 3


# -- cases in batches -----------------------------------------------------------
def _case_items(body):
    return [item.case for item in jobs.BatchJob.from_json(body, SETTINGS).items]


def test_a_case_in_a_batch_keeps_its_own_game():
    cases_text = (
        "game: devils-grip\ncases:\n"
        "- {id: bf, game: besieged-fortress, deal: number 1, legal: 1>F}\n"
    )
    for body in (
        {"cases": cases_text},
        {
            "game": "devils-grip",
            "cases": "- {game: besieged-fortress, deal: number 1, legal: 1>F}",
        },
    ):
        (case,) = _case_items(body)
        assert case.start.game.name == "besieged-fortress"


def test_batch_defaults_apply_to_cases_that_set_none():
    text = (
        "- {id: a, deal: number 1, dead: true}\n"
        "- {id: b, deal: number 2, dead: true, time_limit: 3, engine: sat}"
    )
    body = {"time_limit": 1, "engine": "search", "cases": text}
    first, second = _case_items(body)
    assert (first.time_limit, first.engine) == (1.0, "search")
    assert (second.time_limit, second.engine) == (3.0, "sat")
    # ...so lowering the batch's time limit is advice that works:
    many = "\n".join(
        f'{{"id": "c{n}", "deal": "number {n}", "dead": true}}' for n in range(1, 30)
    )
    with pytest.raises(InputError, match="lower 'time_limit'"):
        jobs.BatchJob.from_json({"cases": many}, SETTINGS)
    assert len(_case_items({"cases": many, "time_limit": 1})) == 29


@pytest.mark.parametrize(
    "case, fragment",
    [
        ({"deal": "number 1", "dead": True, "engine": "bogus"}, "unknown engine"),
        ({"deal": "number 1", "dead": True, "time_limit": "abc"}, "'time_limit'"),
        ({"game": 5, "deal": "number 1", "dead": True}, "'game' must be a string"),
        (
            {"game": "besieged-fortress", "deal": "number 1", "best_score": 3},
            "no score to prove",
        ),
    ],
)
def test_bad_case_items_are_refused_at_submission(case, fragment):
    with pytest.raises(InputError) as caught:
        jobs.BatchJob.from_json({"items": [{"kind": "case", "case": case}]}, SETTINGS)
    assert fragment in caught.value.message
