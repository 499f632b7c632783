"""The API's contract for bad input: a precise 4xx, never a 500, nothing queued.

These requests go to the real app over a real Redis; no worker is needed,
because none of them may ever reach one.
"""

from __future__ import annotations

import json
import uuid

import pytest

ONE_DEAL = json.dumps({"deal": ["2S"] * 96}).encode()
ALIASES = "- &a {id: x, deal: number 1, dead: true}\n- *a"
A_DATE = "- {id: 2024-01-01, deal: number 1, dead: true}"
BAD_LIMIT = {
    "kind": "case",
    "case": {"deal": "number 1", "legal": "deal", "time_limit": "abc"},
}


def _body(**fields) -> bytes:
    return json.dumps(fields).encode()


def _count_jobs(app) -> int:
    store = app.extensions["patience"].store
    return len(list(store.client.scan_iter("patience:job:*")))


@pytest.mark.parametrize(
    "path, body, status, code, fragment",
    [
        ("/v1/proofs", b"", 400, "malformed_json", "empty body"),
        ("/v1/proofs", b"{bad", 400, "malformed_json", "line 1 column 2"),
        ("/v1/proofs", b"\xff\xfe\x00", 400, "malformed_json", "not UTF-8"),
        ("/v1/proofs", b'{"number": NaN}', 400, "malformed_json", "NaN"),
        ("/v1/proofs", b'{"number": 1' + b"0" * 5000 + b"}", 400, "malformed_json", ""),
        ("/v1/proofs", b"[" * 100_000, 400, "malformed_json", ""),
        ("/v1/proofs", b"[1, 2]", 400, "bad_input", "must be a JSON object"),
        ("/v1/proofs", b'{"game": "poker", "number": 1}', 400, "unknown_game", "poker"),
        ("/v1/proofs", b'{"deal": ["2S", "5S"]}', 400, "bad_deal", "has 2 cards"),
        ("/v1/proofs", ONE_DEAL, 400, "bad_deal", "2S appears 96 times"),
        ("/v1/proofs", b'{"deal": ["ZZ"]}', 400, "bad_card", "'ZZ'"),
        ("/v1/proofs", b'{"number": 1, "time_limit": 1e300}', 400, "bad_input", ""),
        ("/v1/proofs", b'{"number": 1, "time_limit": -3}', 400, "bad_input", ""),
        ("/v1/proofs", b'{"number": 1, "speed": 3}', 400, "bad_input", "speed"),
        ("/v1/deals", b'{"count": 0}', 400, "bad_input", "'count'"),
        ("/v1/batches", b'{"items": []}', 400, "bad_input", "'items'"),
        ("/v1/batches", b'{"items": [{"deal": "XX"}]}', 400, "bad_card", "items[0]"),
        # JSON inside a string field, and what YAML case files can smuggle in.
        ("/v1/proofs", _body(deal="[" * 100_000), 400, "bad_input", "too deeply"),
        ("/v1/proofs", _body(deal="[1" + "0" * 5000 + "]"), 400, "bad_input", "JSON"),
        ("/v1/batches", _body(cases=ALIASES), 400, "bad_input", "aliases"),
        ("/v1/batches", _body(cases=A_DATE), 400, "bad_input", "not a JSON value"),
        ("/v1/batches", _body(items=[BAD_LIMIT]), 400, "bad_input", "'time_limit'"),
    ],
)
def test_bad_input_gets_a_precise_4xx(
    api_no_worker, path, body, status, code, fragment
):
    app = api_no_worker.application
    before = _count_jobs(app)
    reply = api_no_worker.post(path, data=body, content_type="application/json")
    assert reply.status_code == status, reply.get_data(as_text=True)
    error = reply.get_json()["error"]
    assert error["code"] == code
    assert fragment in error["message"]
    assert _count_jobs(app) == before


def test_oversize_body_is_413(api_no_worker):
    body = b" " * (3 * 1024 * 1024)
    reply = api_no_worker.post(
        "/v1/batches", data=body, content_type="application/json"
    )
    assert reply.status_code == 413
    assert "larger than" in reply.get_json()["error"]["message"]


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data"],
)
def test_a_body_not_sent_as_json_is_415_and_queues_nothing(api_no_worker, content_type):
    """What a web page can POST across origins without a preflight is refused."""
    app = api_no_worker.application
    before = _count_jobs(app)
    body = json.dumps({"number": 5, "time_limit": 1})
    reply = api_no_worker.post("/v1/proofs", data=body, content_type=content_type)
    assert reply.status_code == 415, reply.get_data(as_text=True)
    error = reply.get_json()["error"]
    assert error["code"] == "unsupported_media_type"
    assert "application/json" in error["message"]
    assert _count_jobs(app) == before
    charset = "application/json; charset=utf-8"
    sent = api_no_worker.post("/v1/proofs", data=b"[", content_type=charset)
    assert sent.status_code == 400  # with a charset it is read (and found malformed)


def test_wrong_method_is_405_with_allow(api_no_worker):
    reply = api_no_worker.put("/v1/proofs", json={})
    assert reply.status_code == 405
    assert "POST" in reply.headers["Allow"]
    assert reply.get_json()["error"]["code"] == "method_not_allowed"


@pytest.mark.parametrize(
    "path", [f"/v1/jobs/{uuid.uuid4().hex}", "/v1/jobs/../../etc", "/v1/nothing"]
)
def test_unknown_paths_and_jobs_are_404_json(api_no_worker, path):
    reply = api_no_worker.get(path)
    assert reply.status_code == 404
    assert reply.get_json()["error"]["code"] == "not_found"


def test_games_lists_rules_formats_and_limits(api_no_worker):
    body = api_no_worker.get("/v1/games").get_json()
    (dg,) = [g for g in body["games"] if g["name"] == "devils-grip"]
    assert dg["deal_size"] == 96 and dg["has_score"]
    assert "2-5-8-J" in dg["summary"]
    assert set(dg["formats"]) == {"deal", "position", "number"}
    assert dg["formats"]["deal"].startswith("96 cards")
    assert "J, Q, K;" in dg["formats"]["deal"]  # no aces in a deal
    assert dg["formats"]["position"].startswith('{"grid": [24 stacks')
    assert dg["questions"] == ["verdict", "score"]
    assert dg["generator"]["available"]
    assert body["limits"]["time_limit"]["max"] == 30


def test_openapi_document_lists_every_route(api_no_worker, service_app):
    doc = api_no_worker.get("/v1/openapi.json").get_json()
    assert doc["openapi"].startswith("3.")
    documented = {
        (path, method.upper()) for path, ops in doc["paths"].items() for method in ops
    }
    served = {
        (rule.rule.replace("<job_id>", "{job_id}"), method)
        for rule in service_app.url_map.iter_rules()
        if rule.rule.startswith("/v1/")
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert documented == served


def test_a_job_keeps_its_first_outcome(service_app):
    store = service_app.extensions["patience"].store
    job_id = uuid.uuid4().hex
    assert store.get_outcome(job_id) is None
    store.save_outcome(job_id, {"ok": True, "value": 1})
    store.save_outcome(job_id, {"ok": True, "value": 2})  # a redelivered rerun
    assert store.get_outcome(job_id) == {"ok": True, "value": 1}


def test_a_submission_key_is_claimed_once(service_app):
    store = service_app.extensions["patience"].store
    key = uuid.uuid4().hex
    assert store.claim_submission(key, "job-a") is None
    assert store.claim_submission(key, "job-b") == "job-a"
    store.release_submission(key, "job-b")  # not the holder: no effect
    assert store.claim_submission(key, "job-c") == "job-a"
    store.release_submission(key, "job-a")
    assert store.claim_submission(key, "job-c") is None


@pytest.mark.parametrize(
    "status, earlier, later, reused",
    [
        ("running", 10, 10, True),
        ("running", 10, 5, True),
        ("queued", 1, 30, False),  # a longer limit asks for more than it may bring
        ("failed", 30, 1, False),
    ],
)
def test_an_identical_submission_reuses_a_pending_job_only_with_time_enough(
    status, earlier, later, reused
):
    from service.broker import _reusable
    from worker.jobs import ProofJob
    from worker.settings import Settings
    from worker.store import JobRecord

    settings = Settings(max_time_limit=60, max_job_seconds=120)
    old = ProofJob.from_json({"number": 1, "time_limit": earlier}, settings)
    new = ProofJob.from_json({"number": 1, "time_limit": later}, settings)
    record = JobRecord("a" * 32, "proof", old.to_json(), old.budget, key=old.key)
    assert _reusable({"status": status}, record, new) is reused
