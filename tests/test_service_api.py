"""The API's contract for bad input: a precise 4xx, never a 500, nothing queued.

These requests go to the real app over a real Redis; no worker is needed,
because none of them may ever reach one.
"""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterable, Iterator

import pytest
from werkzeug.test import EnvironBuilder
from werkzeug.wrappers import Request

from service.app import MAX_BODY_BYTES

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
        (
            "/v1/proofs",
            b'{"number": 1' + b"0" * 5000 + b"}",
            400,
            "malformed_json",
            "malformed JSON: a number longer than 4300 digits",
        ),
        ("/v1/proofs", b"[" * 100_000, 400, "malformed_json", "nested too deeply"),
        ("/v1/proofs", b"[1, 2]", 400, "bad_input", "must be a JSON object"),
        ("/v1/proofs", b'{"game": "poker", "number": 1}', 400, "unknown_game", "poker"),
        ("/v1/proofs", b'{"deal": ["2S", "5S"]}', 400, "bad_deal", "has 2 cards"),
        ("/v1/proofs", ONE_DEAL, 400, "bad_deal", "2S appears 96 times"),
        ("/v1/proofs", b'{"deal": ["ZZ"]}', 400, "bad_card", "'ZZ'"),
        (
            "/v1/proofs",
            b'{"number": 1, "time_limit": 1e300}',
            400,
            "bad_input",
            "'time_limit' must be between 0.1 and",
        ),
        ("/v1/proofs", b'{"number": 1, "time_limit": -3}', 400, "bad_input", "not -3"),
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


class _ChunkedBody(io.RawIOBase):
    """A request body made on demand, as a chunked upload arrives: its size
    is known to nobody, and it counts what the app read of it."""

    def __init__(self, chunks: Iterable[bytes]) -> None:
        self.chunks: Iterator[bytes] = iter(chunks)
        self.pending = b""
        self.read_bytes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[override]
        while not self.pending:
            self.pending = next(self.chunks, b"")
            if not self.pending:
                return 0
        size = min(len(buffer), len(self.pending))
        buffer[:size] = self.pending[:size]
        self.pending = self.pending[size:]
        self.read_bytes += size
        return size


def _post_chunked(client, path: str, chunks: Iterable[bytes]):
    """POST ``chunks`` as a server passes on ``Transfer-Encoding: chunked``:
    no Content-Length, and ``wsgi.input_terminated`` set (the server ends the
    stream; werkzeug's does, and so do gunicorn's and others'). The test
    client would otherwise measure the body and send its length."""
    environ = EnvironBuilder(
        path=path,
        method="POST",
        content_type="application/json",
        headers={"Transfer-Encoding": "chunked"},
    ).get_environ()
    environ.pop("CONTENT_LENGTH", None)
    body = _ChunkedBody(chunks)
    environ |= {"wsgi.input": body, "wsgi.input_terminated": True}
    return client.open(Request(environ)), body


SMALL_PROOF = b'{"number": 10, "time_limit": 1}'


@pytest.mark.parametrize(
    "chunks",
    [
        pytest.param([SMALL_PROOF, b" " * 3_000_000], id="spaces-after-the-json"),
        pytest.param([SMALL_PROOF[:-1], b" " * 3_000_000, b"}"], id="cut-inside"),
        pytest.param([SMALL_PROOF] + [b" " * 10**6] * 100, id="100-MB"),
        pytest.param([b" " * (MAX_BODY_BYTES + 1)], id="one-byte-over"),
    ],
)
def test_a_chunked_body_over_the_limit_is_413_like_a_measured_one(
    api_no_worker, chunks
):
    """A body without Content-Length is refused past the limit, not cut there."""
    app = api_no_worker.application
    before = _count_jobs(app)
    measured = api_no_worker.post(
        "/v1/proofs", data=b"".join(chunks), content_type="application/json"
    )
    reply, body = _post_chunked(api_no_worker, "/v1/proofs", chunks)
    assert reply.status_code == measured.status_code == 413, reply.get_json()
    assert reply.get_json() == measured.get_json()
    assert reply.get_json()["error"]["code"] == "request_entity_too_large"
    assert body.read_bytes == MAX_BODY_BYTES + 1  # the rest is never read
    assert _count_jobs(app) == before


def test_a_chunked_body_that_fills_the_limit_is_read_whole(api_no_worker):
    """Exactly the limit is allowed: the body is parsed, not refused as too large."""
    chunks = [b"[1, 2]", b" " * (MAX_BODY_BYTES - 6)]
    reply, _ = _post_chunked(api_no_worker, "/v1/proofs", chunks)
    assert reply.status_code == 400, reply.get_json()
    assert "must be a JSON object" in reply.get_json()["error"]["message"]


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"question": "x"},
            "'question' must be one of verdict, score, not 'x'",
        ),
        ({"time_limit": 0}, "'time_limit' must be between 0.1 and 30, not 0"),
        ({"time_limit": "1"}, "'time_limit' must be a number, not str"),
        ({"game": "x"}, "unknown game 'x' (known: besieged-fortress, devils-grip)"),
        ({"engine": "x"}, "unknown engine 'x' (known: auto, sat, smt, search)"),
        (
            {"game": "besieged-fortress", "question": "score"},
            "Besieged Fortress has no score to prove; ask for the verdict",
        ),
        (
            {"game": "besieged-fortress", "engine": "smt"},
            "engine 'smt' does not support besieged-fortress (available: auto, "
            "sat, search)",
        ),
    ],
)
def test_a_bad_batch_field_is_named_as_the_batches(api_no_worker, body, message):
    """A value the batch sets is not blamed on ``items[0]``, which inherits it."""
    items = {"items": [{"number": 1}, {"number": 2}]}
    reply = api_no_worker.post("/v1/batches", json=body | items)
    assert reply.status_code == 400, reply.get_json()
    assert reply.get_json()["error"]["message"] == message


@pytest.mark.parametrize(
    "body, message",
    [
        (
            {"items": [{"number": 1}, {"number": 2, "question": "x"}]},
            "items[1]: 'question' must be one of verdict, score, not 'x'",
        ),
        (
            {"question": "score", "items": [{"game": "besieged-fortress"}]},
            "items[0]: Besieged Fortress has no score to prove; ask for the verdict",
        ),
        (
            {"engine": "smt", "items": [{"game": "besieged-fortress"}]},
            "items[0]: engine 'smt' does not support besieged-fortress",
        ),
    ],
)
def test_an_items_own_bad_field_keeps_its_index(api_no_worker, body, message):
    """What only an item's own fields make wrong is that item's error."""
    for item in body["items"]:
        item.setdefault("number", 1)
    reply = api_no_worker.post("/v1/batches", json=body)
    assert reply.status_code == 400, reply.get_json()
    assert reply.get_json()["error"]["message"].startswith(message)


@pytest.mark.parametrize("time_limit", [1e9, 3600, 30.5, 0, 0.05, "fast"])
def test_a_case_time_limit_is_checked_once_against_the_service(
    api_no_worker, time_limit
):
    """The test service takes 0.1 to 30 s; a case's limit gets that range, once."""
    case = {"id": "a", "deal": "number 5", "dead": True, "time_limit": time_limit}
    reply = api_no_worker.post(
        "/v1/batches", json={"items": [{"kind": "case", "case": case}]}
    )
    assert reply.status_code == 400, reply.get_json()
    message = reply.get_json()["error"]["message"]
    assert message.startswith("items[0]: ")
    if isinstance(time_limit, str):
        assert message.endswith("'time_limit' must be a number, not str")
    else:
        expected = f"'time_limit' must be between 0.1 and 30, not {time_limit!r}"
        assert message.endswith(expected)


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
    "path",
    [
        f"/v1/jobs/{uuid.uuid4().hex}",
        "/v1/jobs/../../etc",
        "/v1/nothing",
        # Not a 308 redirect (an HTML page) to the path with slashes merged.
        "/v1/jobs//certificate",
        "/v1//games",
        f"/v1/jobs//{uuid.uuid4().hex}",
    ],
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


def _raw_request(url: str, request: bytes) -> tuple[int, str, bytes]:
    """Send ``request`` as it is over a socket; return status, type, body."""
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as sock:
        sock.sendall(request)
        reply = b""
        while chunk := sock.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), fields.get("Content-Type", ""), body


@pytest.mark.parametrize(
    "request_bytes, status, code",
    [
        (
            b"GET /v1/" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
            414,
            "request_uri_too_long",
        ),
        (
            b"GET /v1/games HTTP/1.1\r\n" + b"X-Big: 1\r\n" * 120 + b"\r\n",
            431,
            "request_header_fields_too_large",
        ),
        (b"GET /v1/games x HTTP/1.1\r\n\r\n", 400, "bad_request"),
    ],
    ids=["long-url", "big-headers", "bad-request-line"],
)
def test_requests_the_server_refuses_get_the_json_error_body(
    service_app, request_bytes, status, code
):
    """Refused before the app runs (by `http.server`), still JSON, not HTML."""
    from service.stack import ServerThread

    server = ServerThread(service_app).start()
    try:
        got, content_type, body = _raw_request(server.url, request_bytes)
    finally:
        server.stop()
    assert (got, content_type) == (status, "application/json")
    error = json.loads(body)["error"]
    assert error["code"] == code and error["message"]
