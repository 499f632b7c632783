"""Celery tasks: thin wrappers that parse the JSON message and call `worker.jobs`.

A task returns ``{"ok": true, "value": ...}`` or ``{"ok": false, "error":
{"code", "message"}}``: expected failures (bad input that slipped past the
API, a line the checker rejects, the soft time limit) are answers, not
exceptions, so the API can report them precisely. Anything else is a bug and
is left to Celery, which records it as FAILURE.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import redis
from celery import Task, shared_task
from celery.exceptions import SoftTimeLimitExceeded

from verifier.errors import PatienceError
from verifier.results import ResultCheckError

from . import jobs
from .celery_app import BATCH_TASK, CERTIFY_TASK, DEALS_TASK, PROVE_TASK
from .settings import Settings
from .store import Store

_STORE: Store | None = None
#: Starts a job gets. A worker process that dies (SIGKILL, out of memory, a
#: crash in a solver) puts its job straight back on the queue; the job that
#: caused it would cause it again, so after this many starts it fails as
#: ``worker_lost`` instead. Three, because a worker machine lost for another
#: reason costs one start too.
MAX_ATTEMPTS = 3
#: Seconds a task keeps retrying the job store while Redis is down.
REDIS_PATIENCE = 120.0


class SupersededError(PatienceError):
    """A certificate job the API replaced (or gave up on) before it ran."""

    code = "superseded"


def _settings(task: Task) -> Settings:
    return getattr(task.app.conf, "patience_settings", None) or Settings.from_env()


def _store(task: Task) -> Store:
    """Return this process's store (created after the pool forked)."""
    global _STORE
    if _STORE is None:
        _STORE = Store.from_settings(_settings(task))
    return _STORE


def _progress(task: Task) -> jobs.Progress:
    def report(meta: dict[str, Any]) -> None:
        task.update_state(state="PROGRESS", meta=meta)

    return report


def _answer(work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    try:
        return {"ok": True, "value": work()}
    except (PatienceError, ResultCheckError) as exc:
        return {"ok": False, "error": jobs.error_json(exc)}
    except SoftTimeLimitExceeded:
        error = {"code": "time_limit", "message": "the job ran past its time limit"}
        return {"ok": False, "error": error}


def _worker_lost(attempts: int) -> dict[str, Any]:
    message = (
        f"the worker running this job died {attempts - 1} times "
        "(out of memory or killed); it is not started again"
    )
    return {"ok": False, "error": {"code": "worker_lost", "message": message}}


def _once(task: Task, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """Run ``work`` unless this job already has an outcome; keep the first one.

    With late acks a job whose worker died after finishing (but before the
    acknowledgement) is delivered again; it must give the same answer.
    """
    store = _store(task)
    job_id = task.request.id
    outcome = _retrying(lambda: store.get_outcome(job_id))
    if outcome is None:
        attempts = _retrying(lambda: store.count_attempt(job_id))
        outcome = _answer(work) if attempts <= MAX_ATTEMPTS else _worker_lost(attempts)
        _retrying(lambda: store.save_outcome(job_id, outcome))
        outcome = _retrying(lambda: store.get_outcome(job_id)) or outcome
    return outcome


def _retrying(call: Callable[[], Any]) -> Any:
    """Call ``call``, retrying through a Redis restart (up to `REDIS_PATIENCE` s)."""
    deadline = time.monotonic() + REDIS_PATIENCE
    while True:
        try:
            return call()
        except redis.ConnectionError:
            if time.monotonic() > deadline:
                raise
            time.sleep(1.0)


@shared_task(bind=True, name=PROVE_TASK)
def prove(self: Task, request: dict[str, Any]) -> dict[str, Any]:
    """Prove one deal or position (or reuse the stored answer)."""

    def work() -> dict[str, Any]:
        job = jobs.ProofJob.from_json(request, _settings(self))
        return jobs.run_proof(job, _store(self))

    return _once(self, work)


@shared_task(bind=True, name=CERTIFY_TASK)
def certify(self: Task, request: dict[str, Any]) -> dict[str, Any]:
    """Make the DRAT certificate of a proven dead end, unless superseded.

    The API gives up on a job nobody ran in time and releases its key (a new
    job takes it when asked again), and its revoke reaches only the workers
    alive then. So a job whose key no longer names it is skipped here: its
    answer would be read by nobody, after a minute of work.
    """

    def work() -> dict[str, Any]:
        job = jobs.CertificateJob.from_json(request, _settings(self))
        holder = _retrying(lambda: _store(self).holder(job.key))
        if holder != self.request.id:
            now = f"job {holder}" if holder else "no job (it was given up)"
            raise SupersededError(f"the proof's certificate is now {now}")
        return jobs.run_certificate(job)

    return _once(self, work)


@shared_task(bind=True, name=DEALS_TASK)
def deals(self: Task, request: dict[str, Any]) -> dict[str, Any]:
    """Generate guaranteed-winnable deals, reporting progress."""

    def work() -> dict[str, Any]:
        job = jobs.DealsJob.from_json(request, _settings(self))
        return jobs.run_deals(job, _progress(self))

    return _once(self, work)


@shared_task(bind=True, name=BATCH_TASK)
def batch(self: Task, request: dict[str, Any]) -> dict[str, Any]:
    """Prove many items, reporting progress after each."""

    def work() -> dict[str, Any]:
        job = jobs.BatchJob.from_json(request, _settings(self))
        return jobs.run_batch(
            job, _store(self), _progress(self), time_up=(SoftTimeLimitExceeded,)
        )

    return _once(self, work)
