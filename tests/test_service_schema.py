"""A bounded schemathesis run against ``/v1/openapi.json``: no 5xx, ever.

The generated requests go to an app on the session's real Redis but on
database 1, where no worker listens: valid-looking proofs are queued there and
never run, so the fuzzing cannot flood the worker the other tests use. The
health endpoint, whose answer depends on a worker, is checked on its own.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

#: Examples per operation: bounded so the run takes seconds, not minutes.
MAX_EXAMPLES = 40


@pytest.fixture(scope="module")
def fuzz_app(service_env: dict[str, str]) -> Any:
    """The API on database 1 of the session's Redis (no worker there)."""
    from service.app import create_app

    url = service_env["REDIS_URL"].rsplit("/", 1)[0] + "/1"
    return create_app({**service_env, "REDIS_URL": url, "TESTING": True})


@pytest.fixture(scope="module")
def api_schema(fuzz_app: Any) -> Any:
    """The OpenAPI document, loaded from the running app."""
    return schemathesis.openapi.from_wsgi("/v1/openapi.json", fuzz_app)


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.exclude(path="/v1/health").parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_generated_requests_never_get_a_server_error(case: Any) -> None:
    case.call_and_validate(checks=[not_a_server_error])


def test_health_is_200_with_a_worker(api: Any) -> None:
    reply = api.get("/v1/health")
    assert reply.status_code == 200
    body = reply.get_json()
    assert body["redis"]["ok"] and body["workers"]["count"] >= 1
