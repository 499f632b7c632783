"""The versioned JSON API (blueprint ``/v1``); `service.openapi` documents it.

Views only read the body, let `worker.jobs` validate it (the same parser the
worker uses), and hand the job to `service.broker`.
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, current_app, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from verifier.errors import InputError
from verifier.textforms import load_json
from worker.jobs import BatchJob, DealsJob, ProofJob

from . import broker, openapi
from .broker import UnsupportedMediaTypeError
from .games import games_summary

bp = Blueprint("v1", __name__, url_prefix="/v1")


def service() -> broker.Service:
    """Return the running app's `broker.Service`."""
    return current_app.extensions["patience"]


def read_json() -> Any:
    """Return the decoded JSON body; any malformation is a precise 400.

    The body must say it is JSON (``Content-Type: application/json``, which
    ``curl --json`` and ``fetch`` with that header send). A form or
    ``text/plain`` POST is what any web page can send across origins without
    the browser asking first, so accepting one would let every page a user
    opens queue hour-long jobs on a service at ``localhost``.
    """
    if request.mimetype != "application/json":
        raise UnsupportedMediaTypeError(
            f"the body must be JSON, sent with 'Content-Type: application/json' "
            f"(got {request.mimetype or 'none'!r})"
        )
    raw = read_body()
    if not raw.strip():
        raise InputError("empty body: expected a JSON object", code="malformed_json")
    return load_json(raw, code="malformed_json")


def read_body() -> bytes:
    """Return the raw body; one longer than ``MAX_CONTENT_LENGTH`` is a 413,
    however it is sent.

    Werkzeug refuses a ``Content-Length`` over the limit before reading, but
    a chunked body (no ``Content-Length``) it reads only *up to* the limit
    and stops there without looking for more: a longer body would be cut
    silently and the prefix taken as the request (or reported as malformed
    JSON at the cut). So a body that fills the limit exactly is checked for
    one byte more; the server ends a chunked stream (it sets
    ``wsgi.input_terminated``), so that read cannot wait for ever.
    """
    raw = request.get_data(cache=False)
    limit = request.max_content_length
    if (
        limit is not None
        and len(raw) >= limit
        and request.content_length is None
        and request.environ.get("wsgi.input_terminated")
        and request.environ["wsgi.input"].read(1)
    ):
        raise RequestEntityTooLarge()
    return raw


def _reply(submitted: broker.Submitted):
    response = jsonify(submitted.view)
    response.headers["Location"] = submitted.view["links"]["self"]
    return response, submitted.status


@bp.post("/proofs")
def post_proof():
    """Submit a deal or position to prove."""
    svc = service()
    job = ProofJob.from_json(read_json(), svc.settings)
    return _reply(broker.submit_proof(svc, job))


@bp.post("/deals")
def post_deals():
    """Ask for guaranteed-winnable deals with their solutions."""
    svc = service()
    job = DealsJob.from_json(read_json(), svc.settings)
    return _reply(broker.submit_deals(svc, job))


@bp.post("/batches")
def post_batch():
    """Submit many proofs as one job with per-item results and progress."""
    svc = service()
    job = BatchJob.from_json(read_json(), svc.settings)
    return _reply(broker.submit_batch(svc, job))


@bp.get("/jobs/<job_id>")
def get_job(job_id: str):
    """Return a job's status, progress, result or error."""
    svc = service()
    return jsonify(broker.job_view(svc, broker.get_record(svc, job_id)))


@bp.get("/jobs/<job_id>/certificate")
def get_certificate(job_id: str):
    """Return a done proof's certificate; 202 while a worker makes a DRAT one."""
    submitted = broker.certificate(service(), job_id)
    if submitted.status == 200:
        return jsonify(submitted.view)
    response, status = _reply(submitted)
    response.headers["Retry-After"] = "1"
    return response, status


@bp.get("/games")
def get_games():
    """Return every game's rules summary, formats, engines and questions."""
    return jsonify(games_summary(service().settings))


@bp.get("/health")
def get_health():
    """Return 200 when Redis answers and every queue has a live worker, else 503."""
    body, ok = broker.health(service())
    return jsonify(body), 200 if ok else 503


@bp.get("/openapi.json")
def get_openapi():
    """Return the OpenAPI document of this API."""
    return jsonify(openapi.document(service().settings))
