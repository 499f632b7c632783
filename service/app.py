"""The Flask application factory and the error contract of the API.

Every error leaves as ``{"error": {"code", "message"}}``: bad input (the
`verifier.errors` hierarchy, malformed JSON, oversize bodies) as 4xx, an
unreachable Redis as 503. A 500 means a bug, never bad input.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import redis
from flask import Flask, Response, jsonify
from kombu.exceptions import OperationalError
from werkzeug.exceptions import HTTPException

from verifier.errors import PatienceError
from worker.celery_app import make_celery
from worker.settings import Settings
from worker.store import Store

from . import api, web
from .broker import (
    CertificateFailedError,
    ConflictError,
    NotFoundError,
    Service,
    UnsupportedMediaTypeError,
)

#: Largest accepted request body: a batch of 1000 deals fits with room to spare.
MAX_BODY_BYTES = 2 * 1024 * 1024

log = logging.getLogger(__name__)


#: Status codes of errors that are not plain bad input (400).
ERROR_STATUS: dict[type[PatienceError], int] = {
    NotFoundError: 404,
    ConflictError: 409,
    CertificateFailedError: 422,
    UnsupportedMediaTypeError: 415,
}


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    """Return the API app; ``REDIS_URL``/``PATIENCE_*`` come from env or config."""
    app = Flask("patience")
    keep_slashes(app)
    app.config.from_mapping(MAX_CONTENT_LENGTH=MAX_BODY_BYTES)
    app.config.update(
        {
            k: v
            for k, v in os.environ.items()
            if k == "REDIS_URL" or k.startswith("PATIENCE_")
        }
    )
    if test_config:
        app.config.update(test_config)
    settings = Settings.from_mapping(app.config)
    app.extensions["patience"] = Service(
        settings, make_celery(settings, role="client"), Store.from_settings(settings)
    )
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.register_blueprint(api.bp)
    app.register_blueprint(web.bp)
    register_error_handlers(app)
    return app


def keep_slashes(app: Flask) -> None:
    """Match paths as sent: ``/v1/jobs//certificate`` is a JSON 404.

    Werkzeug merges repeated slashes by answering a 308 redirect (an HTML
    page) to the merged path; for a JSON API that is neither an answer nor
    an error body, and the merged path is rarely what was meant (an empty
    job id). The map's matcher then tries no merged path at all.
    """
    app.url_map.merge_slashes = False


def error_body(code: str, message: str) -> dict[str, Any]:
    """Return the API's error body (also the server's own, `stack.JsonErrorHandler`)."""
    return {"error": {"code": code, "message": message}}


def error_code(title: str) -> str:
    """Return an HTTP error's code from its title: ``"Not Found"`` is
    ``not_found``, ``"Request-URI Too Long"`` ``request_uri_too_long``."""
    return "".join(c if c.isalnum() else "_" for c in title.lower())


def error_response(status: int, code: str, message: str) -> tuple[Response, int]:
    """Return the API's error body with ``status``."""
    return jsonify(error_body(code, message)), status


def register_error_handlers(app: Flask) -> None:
    """Map every error to the JSON error body (see the module docstring)."""

    @app.errorhandler(PatienceError)
    def on_patience_error(exc: PatienceError):
        return error_response(ERROR_STATUS.get(type(exc), 400), exc.code, exc.message)

    @app.errorhandler(HTTPException)
    def on_http_error(exc: HTTPException):
        response = exc.get_response()
        code = error_code(exc.name or "error")
        body, status = error_response(exc.code or 500, code, _describe(exc))
        body.headers.extend(
            (k, v) for k, v in response.headers.items() if k.lower() == "allow"
        )
        return body, status

    @app.errorhandler(redis.RedisError)
    @app.errorhandler(OperationalError)
    def on_unavailable(exc: Exception):
        log.warning("Redis unavailable: %s", exc)
        return error_response(
            503, "unavailable", f"the job store (Redis) is not reachable: {exc}"
        )

    @app.errorhandler(Exception)
    def on_bug(exc: Exception):
        log.exception("internal error")
        return error_response(500, "internal_error", f"{type(exc).__name__}: {exc}")


def _describe(exc: HTTPException) -> str:
    if exc.code == 413:
        return f"request body larger than {MAX_BODY_BYTES} bytes"
    if exc.code == 405:
        return "method not allowed on this path"
    return exc.description or exc.name
