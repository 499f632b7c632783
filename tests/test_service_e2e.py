"""End to end over HTTP: real Redis, real worker process, real provers.

Each test submits through the API, polls the job, and checks the answer with
the reference engine — never with the code that produced it.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from service_helpers import forged_dead_end, near_win_position

from patience_encodings import certificates
from patience_encodings.engines import (
    CORES_ENV,
    FEW_CORES,
    PORTFOLIO,
    cores_available,
    engines_for,
)
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.replay import replay
from verifier.results import Question
from worker.celery_app import job_cores

needs_prover = pytest.mark.skipif(
    not engines_for("devils-grip"), reason="no Devil's Grip prover registered yet"
)
#: A numbered deal; random deals are almost always dead under this rule card.
DEAD_NUMBER = 1
VECTORS = Path(__file__).resolve().parent.parent / "seeds" / "vectors"


def _replay(position: dict[str, Any], line: list[str]):
    state = dg.parse_position(position)
    return replay(dg.GAME, state, dg.parse_moves("\n".join(line)))


def _submit(api: Any, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    reply = api.post(path, json=body)
    assert reply.status_code in (200, 202), reply.get_json()
    assert reply.headers["Location"] == f"/v1/jobs/{reply.get_json()['id']}"
    return reply.status_code, reply.get_json()


@needs_prover
def test_constructed_deal_is_proven_won_with_a_line_that_replays(api, wait_job):
    built = construct(2024)
    body = {"deal": [str(c) for c in built.deal], "time_limit": 20}
    status, job = _submit(api, "/v1/proofs", body)
    assert status == 202 and job["status"] in ("queued", "running", "done")
    view = wait_job(api, job["links"]["self"], timeout=60)
    assert view["status"] == "done", view["error"]
    result = view["result"]["result"]
    assert result["status"] == "won" and result["proven"]
    assert _replay(view["result"]["position"], result["line"]).won

    reply = api.get(view["links"]["certificate"])
    assert reply.status_code == 200  # a win's line is replayed at once
    cert = reply.get_json()
    assert cert["claim"]["status"] == "won"
    assert cert["replay"]["won"] and cert["replay"]["ok"]


@needs_prover
def test_dead_deal_is_proven_lost(api, wait_job):
    _, job = _submit(api, "/v1/proofs", {"number": DEAD_NUMBER, "time_limit": 20})
    view = wait_job(api, job["links"]["self"], timeout=60)
    assert view["status"] == "done", view["error"]
    result = view["result"]["result"]
    assert result["status"] == "lost" and result["proven"], result
    assert result["method"]  # how it was proven, in words
    first = api.get(view["links"]["certificate"])
    assert first.status_code == 202  # a worker makes the DRAT certificate
    maker = wait_job(api, first.headers["Location"], timeout=90)
    assert maker["kind"] == "certificate" and maker["status"] == "done"
    assert maker["links"]["proof"] == job["links"]["self"]
    again = api.get(view["links"]["certificate"])
    assert again.status_code == 200  # the same job's bundle, not a second job
    bundle = again.get_json()
    assert bundle == maker["result"]
    assert bundle["claim"]["text"] == "no line wins"
    assert certificates.check(bundle).ok


def test_a_dead_end_without_an_encoding_says_how_it_was_proven(api, wait_job):
    """Besieged Fortress has no CNF to certify: its certificate is the
    search's word, with the position and the replayed line."""
    body = {"game": "besieged-fortress", "number": 5, "time_limit": 20}
    _, job = _submit(api, "/v1/proofs", body)
    view = wait_job(api, job["links"]["self"], timeout=60)
    assert view["status"] == "done", view["error"]
    reply = api.get(view["links"]["certificate"])
    assert reply.status_code == 200, reply.get_json()
    cert = reply.get_json()
    assert cert["game"] == "besieged-fortress"
    assert cert["claim"]["status"] == "lost" and cert["claim"]["proven"]
    assert "search" in cert["claim"]["engine"] and cert["claim"]["method"]
    assert cert["replay"]["ok"] and cert["settled"]


@needs_prover
def test_dead_deal_score_comes_with_a_line_that_reaches_it(
    api, service_worker, wait_job, wait_certificate
):
    position = json.loads((VECTORS / "devils-grip-dead-13-stock.json").read_text())
    body = {"position": position, "question": "score", "time_limit": 30}
    _, job = _submit(api, "/v1/proofs", body)
    view = wait_job(api, job["links"]["self"], timeout=60)
    assert view["status"] == "done", view["error"]
    result = view["result"]["result"]
    assert result["status"] == "lost" and result["question"] == "score"
    assert result["best_score"] >= 1
    # Each of the worker's concurrent jobs gets its share of the cores.
    run = result["stats"]["run"]
    share = job_cores(cores_available(), service_worker.concurrency)
    cores = os.environ.get(CORES_ENV) or str(share)
    assert run["cores"] == int(cores)
    portfolio = list(PORTFOLIO["devils-grip"][Question.SCORE])
    alone = list(FEW_CORES["devils-grip"][Question.SCORE])
    assert run["members"] == (alone if run["cores"] <= len(portfolio) else portfolio)
    outcome = _replay(view["result"]["position"], result["line"])
    assert outcome.stuck and outcome.score == result["best_score"]
    reply = wait_certificate(api, view["links"]["certificate"])
    assert reply.status_code == 200, reply.get_json()
    bundle = reply.get_json()
    if result["score_proven"]:
        assert bundle["claim"]["bound"] == result["best_score"]
    else:
        assert bundle["claim"]["text"] == "no line wins"
    report = certificates.check(bundle)
    assert report.ok, report.reason


@needs_prover
def test_identical_submission_returns_the_stored_result(api, wait_job):
    deal = dg.numbered_deal(DEAD_NUMBER + 1)
    first_body = {"number": DEAD_NUMBER + 1, "time_limit": 20}
    _, first = _submit(api, "/v1/proofs", first_body)
    done = wait_job(api, first["links"]["self"], timeout=60)
    assert done["status"] == "done"
    # The same deal, given as its cards: same submission, same job, no new work.
    status, again = _submit(
        api, "/v1/proofs", {"deal": [str(c) for c in deal], "time_limit": 20}
    )
    assert status == 200 and again["deduplicated"]
    assert again["id"] == first["id"]
    assert again["result"] == done["result"]


def test_generated_deals_are_winnable(api, wait_job):
    seen: list[dict[str, Any]] = []
    _, job = _submit(api, "/v1/deals", {"count": 4, "seed": 77})
    view = wait_job(api, job["links"]["self"], seen=seen)
    assert view["status"] == "done", view["error"]
    deals = view["result"]["deals"]
    assert [d["seed"] for d in deals] == [77, 78, 79, 80]
    for item in deals:
        state = dg.initial_state(dg.deal_from_list(item["deal"]))
        assert replay(dg.GAME, state, dg.parse_moves("\n".join(item["line"]))).won
    assert all(v["status"] in ("queued", "running", "done") for v in seen)


@needs_prover
def test_batch_reports_progress_and_per_item_results(api, wait_job):
    numbers = list(range(101, 107))
    body = {
        "time_limit": 5,
        "items": [{"number": n} for n in numbers] + [{"deal": "2S 5S"}],
    }
    reply = api.post("/v1/batches", json=body)
    assert reply.status_code == 400  # a bad item refuses the whole batch
    assert "items[6]" in reply.get_json()["error"]["message"]

    body["items"][-1] = {"position": near_win_position()}
    seen: list[dict[str, Any]] = []
    _, job = _submit(api, "/v1/batches", body)
    view = wait_job(api, job["links"]["self"], timeout=90, seen=seen)
    assert view["status"] == "done", view["error"]
    out = view["result"]
    assert out["total"] == len(body["items"])
    assert [item["index"] for item in out["items"]] == list(range(out["total"]))
    assert out["items"][-1]["result"]["status"] == "won"
    for item in out["items"][:-1]:  # numbered deals: dead, or not settled in 5 s
        assert item["ok"] and "error" not in item, item
        assert item["result"]["status"] in ("lost", "unknown"), item
        assert item["result"]["proven"] == (item["result"]["status"] == "lost")
    assert sum(out["counts"].values()) == out["total"]
    progress = [v["progress"]["done"] for v in seen if v["progress"]]
    assert progress == sorted(progress)
    assert progress and progress[-1] == out["total"]


def test_certificate_needs_a_proof_job(api, wait_job):
    _, job = _submit(api, "/v1/deals", {"count": 1, "seed": 1})
    wait_job(api, job["links"]["self"])
    reply = api.get(f"/v1/jobs/{job['id']}/certificate")
    assert reply.status_code == 404
    assert "no certificate" in reply.get_json()["error"]["message"]


@needs_prover
def test_a_false_dead_end_in_the_store_gets_no_certificate(api, wait_certificate):
    """A claim is checked again by the worker that certifies it: a false one
    ends in a 422 naming the reason, and stays refused when asked again
    (no second job: the same claim would fail the same way)."""
    url = f"/v1/jobs/{forged_dead_end(api.application.extensions['patience'].store)}"
    url += "/certificate"
    first = api.get(url)
    assert first.status_code == 202
    reply = wait_certificate(api, url)
    assert reply.status_code == 422
    error = reply.get_json()["error"]
    assert error["code"] == "bad_input" and "the claim is false" in error["message"]
    assert "ask again" not in error["message"]
    again = api.get(url)
    assert again.status_code == 422 and again.get_json() == reply.get_json()


@needs_prover
def test_a_certificate_job_lost_on_the_way_is_retried(api, wait_certificate):
    """A certificate job whose message never reached the queue (the API
    process died in between) is reported as the machine's failure, and
    asking again starts a new job, which then gets the claim's own answer."""
    from service.broker import PUBLISH_GRACE
    from worker.jobs import certificate_key, certificate_seconds
    from worker.store import JobRecord

    patience = api.application.extensions["patience"]
    store = patience.store
    proof = forged_dead_end(store)
    key = certificate_key(proof, certificate_seconds(patience.settings))
    stale = JobRecord(
        uuid.uuid4().hex,
        "certificate",
        {"proof": proof},
        60.0,
        key=key,
        created=time.time() - PUBLISH_GRACE - 1,
    )
    store.save_job(stale)
    assert store.claim_submission(key, stale.id) is None

    url = f"/v1/jobs/{proof}/certificate"
    lost = api.get(url)
    assert lost.status_code == 422
    error = lost.get_json()["error"]
    assert error["code"] == "not_queued" and "ask again to retry" in error["message"]
    retried = api.get(url)
    assert retried.status_code == 202
    assert retried.headers["Location"] != f"/v1/jobs/{stale.id}"
    reply = wait_certificate(api, url)
    assert reply.status_code == 422
    assert reply.get_json()["error"]["code"] == "bad_input"


@needs_prover
def test_a_certificate_job_whose_key_names_another_is_skipped(api, wait_job):
    """A job the API gave up on (its key released, or taken by a newer job)
    that reaches a worker later is not run: nobody would read its answer."""
    from service.broker import _enqueue
    from worker.jobs import CertificateJob
    from worker.store import JobRecord

    patience = api.application.extensions["patience"]
    proof = forged_dead_end(patience.store)
    value = patience.store.get_outcome(proof)["value"]
    job = CertificateJob.of_proof(proof, value, patience.settings)
    newer = uuid.uuid4().hex
    assert patience.store.claim_submission(job.key, newer) is None
    record = JobRecord(uuid.uuid4().hex, "certificate", job.to_json(), job.budget)
    submitted = _enqueue(patience, record)
    view = wait_job(api, submitted.view["links"]["self"])
    assert view["status"] == "failed"
    assert view["error"]["code"] == "superseded" and newer in view["error"]["message"]
