"""The OpenAPI 3.0 document of the ``/v1`` API, served at ``/v1/openapi.json``.

Enums and limits are filled in from the registries and the settings, so the
document describes the running service; a schemathesis run against it is part
of the tests.
"""

from __future__ import annotations

from typing import Any

from patience_encodings.generate import MAX_SEED
from verifier.registry import GAMES
from worker.jobs import DIFFICULTIES, MAX_DEALS, MAX_ITEMS, MIN_TIME_LIMIT, QUESTIONS
from worker.settings import Settings

from .broker import JOB_STATUSES

API_VERSION = "1.0.0"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _reply(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema}},
    }


def _errors(*codes: int) -> dict[str, Any]:
    texts = {
        400: "Bad input: malformed JSON, unknown game or engine, wrong cards, ...",
        404: "Unknown or expired job id",
        405: "Method not allowed",
        409: "The job is not done",
        413: "Request body too large",
        415: "The body is not sent as application/json",
        422: "The certificate job ended without a certificate (its code says why)",
        503: "Redis is not reachable",
    }
    return {str(c): _reply(texts[c], _ref("Error")) for c in codes}


def _start_properties(settings: Settings) -> dict[str, Any]:
    """Return the fields shared by a proof request and a batch item."""
    return {
        "game": {"type": "string", "enum": sorted(GAMES)},
        "deal": {
            "description": "The deal's cards in deal order (list or text).",
            "oneOf": [
                {"type": "array", "items": {"type": "string"}},
                {"type": "string"},
            ],
        },
        "position": {
            "type": "object",
            "description": "A position in the game's JSON form (see /v1/games).",
        },
        "number": {"type": "integer", "minimum": 0, "maximum": 2**64 - 1},
        "question": {"type": "string", "enum": list(QUESTIONS)},
        "engine": {"type": "string", "description": "auto or a listed engine"},
        "time_limit": {
            "type": "number",
            "minimum": MIN_TIME_LIMIT,
            "maximum": settings.max_time_limit,
        },
    }


def _schemas(settings: Settings) -> dict[str, Any]:
    start = _start_properties(settings)
    nullable_object = {"type": "object", "nullable": True}
    return {
        "Error": {
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                    },
                }
            },
        },
        "ProofRequest": {
            "type": "object",
            "description": "Exactly one of deal, position or number.",
            "additionalProperties": False,
            "properties": start,
        },
        "DealsRequest": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "game": start["game"],
                "count": {"type": "integer", "minimum": 1, "maximum": MAX_DEALS},
                "difficulty": {"type": "string", "enum": list(DIFFICULTIES)},
                "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
            },
        },
        "BatchRequest": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **{k: start[k] for k in ("game", "question", "engine", "time_limit")},
                "cases": {
                    "type": "string",
                    "description": "the text of an edge-case file (YAML or JSON "
                    "Lines); its cases join the items",
                },
                "items": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_ITEMS,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "kind": {"type": "string", "enum": ["proof", "case"]},
                            "case": {"type": "object"},
                            **start,
                        },
                    },
                },
            },
        },
        "Job": {
            "type": "object",
            "required": ["id", "kind", "status", "links"],
            "properties": {
                "id": {"type": "string"},
                "kind": {
                    "type": "string",
                    "enum": ["proof", "certificate", "deals", "batch"],
                },
                "status": {"type": "string", "enum": list(JOB_STATUSES)},
                "created": {"type": "string"},
                "request": {"type": "object"},
                "progress": nullable_object,
                "result": nullable_object,
                "error": {**nullable_object, "properties": {"code": {}, "message": {}}},
                "links": {"type": "object"},
                "deduplicated": {"type": "boolean"},
            },
        },
        "Games": {"type": "object", "required": ["games"]},
        "Health": {
            "type": "object",
            "required": ["status", "redis", "workers", "queues"],
            "properties": {
                "status": {"type": "string", "enum": ["ok", "degraded"]},
                "redis": {"type": "object"},
                "workers": {"type": "object"},
                "queues": {
                    "description": "Per queue, how many live workers consume it",
                    "type": "object",
                },
            },
        },
    }


def _submit(summary: str, request: str) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "requestBody": _json_body(_ref(request)),
            "responses": {
                "202": _reply("Queued; poll the Location", _ref("Job")),
                "200": _reply("Answered by an identical submission", _ref("Job")),
                **_errors(400, 405, 413, 415, 503),
            },
        }
    }


def _job_id() -> list[dict[str, Any]]:
    return [
        {"name": "job_id", "in": "path", "required": True, "schema": {"type": "string"}}
    ]


def document(settings: Settings) -> dict[str, Any]:
    """Return the OpenAPI document for a service running with ``settings``."""
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "patience-prover",
            "version": API_VERSION,
            "description": "Proofs of patience deals: winning lines that replay, "
            "proven dead ends and best scores; guaranteed-winnable deals.",
        },
        "paths": {
            "/v1/proofs": _submit("Prove a deal or position", "ProofRequest"),
            "/v1/deals": _submit("Generate winnable deals", "DealsRequest"),
            "/v1/batches": _submit("Prove many items in one job", "BatchRequest"),
            "/v1/jobs/{job_id}": {
                "get": {
                    "summary": "A job's status, progress, result or error",
                    "parameters": _job_id(),
                    "responses": {
                        "200": _reply("The job", _ref("Job")),
                        **_errors(404, 503),
                    },
                }
            },
            "/v1/jobs/{job_id}/certificate": {
                "get": {
                    "summary": (
                        "A done proof's certificate: a DRAT bundle for a proven "
                        "dead end (a worker makes it: 202 with that job's view "
                        "until it is done, then 200), else the line replayed again"
                    ),
                    "parameters": _job_id(),
                    "responses": {
                        "200": _reply("The certificate", {"type": "object"}),
                        "202": _reply(
                            "The certificate job, still at work: ask again "
                            "(Retry-After, Location of the job)",
                            _ref("Job"),
                        ),
                        **_errors(404, 409, 422, 503),
                    },
                }
            },
            "/v1/games": {
                "get": {
                    "summary": "Games, rules summaries, formats, engines",
                    "responses": {"200": _reply("The games", _ref("Games"))},
                }
            },
            "/v1/health": {
                "get": {
                    "summary": "Redis reachable, every queue consumed by a live worker",
                    "responses": {
                        "200": _reply("Healthy", _ref("Health")),
                        "503": _reply("Degraded", _ref("Health")),
                    },
                }
            },
            "/v1/openapi.json": {
                "get": {
                    "summary": "This document",
                    "responses": {"200": _reply("OpenAPI", {"type": "object"})},
                }
            },
        },
        "components": {"schemas": _schemas(settings)},
    }
