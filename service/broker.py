"""The API's side of the queue: submit jobs, describe them, serve certificates.

A certificate of a proven dead end is a job of its own (kind
``certificate``), made by a worker like any proof: the API process only
replays lines, and never runs a solver.

A job's status is one of ``queued``, ``running``, ``done``, ``failed``; Celery's
states map onto them here and nowhere else. A job record is written before
its message is published, and removed again if publishing fails, so a client
that got a job id always has a job that will run, and one that got a 503 has
nothing half-submitted.

The broker can still lose a published message: the Redis transport delivers
in two steps (a worker's BRPOP takes it off the queue, a second command files
it as unacknowledged), and a Redis crash in between loses it. So a job still
queued after ``lost_after`` seconds has its message looked for when polled,
and is published again if it is nowhere (`_recover_if_lost`); running it
twice is harmless, as the first outcome stored is the answer
(`worker.tasks._once`).
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import redis
from celery import Celery
from kombu.exceptions import OperationalError
from kombu.transport.redis import Channel as RedisChannel

from patience_encodings import certificates
from patience_encodings.engines import settles
from verifier.errors import PatienceError
from verifier.registry import get_game
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status
from worker.celery_app import (
    KIND_TASKS,
    PROOFS_QUEUE,
    QUEUES,
    ROUTES,
)
from worker.jobs import BatchJob, CertificateJob, DealsJob, ProofJob
from worker.settings import Settings, hard_limit, soft_limit
from worker.store import JobRecord, Store

log = logging.getLogger(__name__)

JOB_STATUSES = ("queued", "running", "done", "failed")
#: Seconds a record may wait for its message to be published before the job
#: is reported failed (the API process died between the two steps).
PUBLISH_GRACE = 60.0
#: Seconds the health check waits for workers to answer a ping.
PING_TIMEOUT = 1.0
#: Seconds a certificate job may stay pending (queued, or running) before
#: the API looks whether anybody serves it (`_unserved`): a queue behind
#: long proofs is waited out; once started, a job runs at most the hard
#: limit of `worker.jobs.CERTIFICATE_SECONDS`, a small part of it.
CERTIFICATE_WAIT = 600.0
#: Seconds the second, longer look waits for workers to list their active
#: jobs before a running job counts as lost (a loaded worker answers late).
ACTIVE_TIMEOUT = 3.0
#: Seconds between the two looks for a queued job's message: a worker's BRPOP
#: and its filing of the message as unacknowledged are microseconds apart, so
#: a message missing at both looks is lost, not in flight.
LOST_RECHECK = 0.75
#: Seconds during which a job's message is looked for at most once, whoever
#: polls it (`worker.store.Store.claim_lost_check`).
LOST_CHECK_EVERY = 5.0
#: Queue entries the search script reads per LRANGE.
LOST_SCAN_CHUNK = 200
#: Return 1 if a broker key holds an entry containing ARGV[1] (a job id, in
#: plain text in every message's headers), else 0. KEYS: the queue's lists,
#: then the unacked hash. Lists are walked from the consuming end, where an
#: old job waits, in chunks of ARGV[2]; in Redis, so nothing moves meanwhile.
FIND_MESSAGE = """
local id, chunk = ARGV[1], tonumber(ARGV[2])
for i = 1, #KEYS - 1 do
  local stop = -1
  while true do
    local items = redis.call('LRANGE', KEYS[i], stop - chunk + 1, stop)
    for j = #items, 1, -1 do
      if string.find(items[j], id, 1, true) then return 1 end
    end
    if #items < chunk then break end
    stop = stop - chunk
  end
end
for _, value in ipairs(redis.call('HVALS', KEYS[#KEYS])) do
  if string.find(value, id, 1, true) then return 1 end
end
return 0
"""
#: Failures of a certificate job that were the machine's, not the claim's
#: (``not_started`` and ``worker_gone`` come from `_unserved`): asking again
#: starts a new job. Any other would fail the same way again, so it is
#: answered as it stands: a refused claim or the time cap (``bad_input``,
#: ``unsupported``), and ``worker_lost``, a job that killed its worker on
#: every attempt (`worker.tasks.MAX_ATTEMPTS`).
RETRIED_FAILURES = frozenset(
    {
        "not_queued",
        "not_started",
        "worker_gone",
        "internal_error",
        "revoked",
        "time_limit",
    }
)


class NotFoundError(PatienceError):
    """An unknown (or expired) job id."""

    code = "not_found"


class ConflictError(PatienceError):
    """The job exists but cannot give what was asked (yet)."""

    code = "not_ready"


class CertificateFailedError(PatienceError):
    """The certificate job of a proof ended without a certificate."""

    code = "certificate_failed"


class UnsupportedMediaTypeError(PatienceError):
    """A request body that does not say it is JSON."""

    code = "unsupported_media_type"


@dataclass(frozen=True)
class Service:
    """What the views need: settings, the Celery client and the job store."""

    settings: Settings
    celery: Celery
    store: Store


@dataclass(frozen=True)
class Submitted:
    """A reply: the job's view (or a certificate) and the HTTP status (202 or 200)."""

    view: dict[str, Any]
    status: int


# -- submitting ----------------------------------------------------------------
def submit_proof(service: Service, job: ProofJob) -> Submitted:
    """Queue a proof, or answer from the job of an identical submission."""
    new_id = uuid.uuid4().hex
    holder = service.store.claim_submission(job.key, new_id)
    if holder is not None:
        record = service.store.get_job(holder)
        if record is not None:
            view = job_view(service, record)
            if _reusable(view, record, job):
                view["deduplicated"] = True
                return Submitted(view, 200 if view["status"] == "done" else 202)
        service.store.replace_submission(job.key, new_id)
    record = JobRecord(new_id, "proof", job.to_json(), job.budget, key=job.key)
    return _enqueue(service, record)


def submit_deals(service: Service, job: DealsJob) -> Submitted:
    """Queue a deal-generation job."""
    record = JobRecord(uuid.uuid4().hex, "deals", job.to_json(), job.budget)
    return _enqueue(service, record)


def submit_batch(service: Service, job: BatchJob) -> Submitted:
    """Queue a batch job."""
    record = JobRecord(uuid.uuid4().hex, "batch", job.to_json(), job.budget)
    return _enqueue(service, record)


def _reusable(view: dict[str, Any], record: JobRecord, job: ProofJob) -> bool:
    """Return whether an earlier identical job answers this submission.

    A settled answer does; a failed job does not. A pending job, or an
    unsettled answer, does only when it was given at least the time this
    submission allows: a longer limit asks for more than it may bring.
    """
    longer = job.time_limit > float(record.request.get("time_limit", 0))
    if view["status"] in ("queued", "running"):
        return not longer
    if view["status"] != "done":
        return False
    result = ProofResult.from_json(view["result"]["result"])
    return settles(result, job.question) or not longer


def _enqueue(service: Service, record: JobRecord) -> Submitted:
    service.store.save_job(record)
    try:
        _publish(service, record)
    except (OperationalError, redis.RedisError, OSError):
        _forget(service.store, record)
        raise
    record = replace(record, queued=True)
    service.store.save_job(record)
    return Submitted(job_view(service, record), 202)


def _publish(service: Service, record: JobRecord) -> None:
    """Send ``record``'s message, to its kind's task; the job id is the task id."""
    task = KIND_TASKS[record.kind]
    service.celery.send_task(
        task,
        args=[record.request],
        task_id=record.id,
        queue=ROUTES[task],
        soft_time_limit=soft_limit(record.budget),
        time_limit=hard_limit(record.budget),
    )


def _forget(store: Store, record: JobRecord) -> None:
    try:
        store.delete_job(record)
    except redis.RedisError:
        pass  # Redis is down: the record expires with its TTL


# -- describing ----------------------------------------------------------------
def get_record(service: Service, job_id: str) -> JobRecord:
    """Return the record of ``job_id``; raise `NotFoundError` when unknown."""
    record = service.store.get_job(job_id) if _plausible_id(job_id) else None
    if record is None:
        raise NotFoundError(f"no job {job_id!r} (unknown, or its result expired)")
    return record


def _plausible_id(job_id: str) -> bool:
    return 0 < len(job_id) <= 64 and all(c in "0123456789abcdef-" for c in job_id)


def job_view(service: Service, record: JobRecord) -> dict[str, Any]:
    """Return the public description of a job: status, progress, result, error."""
    outcome = service.store.get_outcome(record.id)
    if outcome is not None:
        status, progress, result, error = _from_outcome(outcome)
    else:
        status, progress, result, error = _celery_status(service.celery, record)
        if status == "queued":
            _recover_if_lost(service, record)
    if status == "done" and record.kind in ("batch", "deals"):
        total = result["total"] if record.kind == "batch" else len(result["deals"])
        progress = {"done": total, "total": total}
    links = {"self": f"/v1/jobs/{record.id}"}
    if record.kind == "proof":
        links["certificate"] = f"/v1/jobs/{record.id}/certificate"
    if record.kind == "certificate":
        links["proof"] = f"/v1/jobs/{record.request['proof']}"
        links["certificate"] = f"/v1/jobs/{record.request['proof']}/certificate"
    return {
        "id": record.id,
        "kind": record.kind,
        "status": status,
        "created": datetime.fromtimestamp(record.created, UTC).isoformat(),
        "request": _request_summary(record),
        "progress": progress,
        "result": result,
        "error": error,
        "links": links,
    }


def _request_summary(record: JobRecord) -> dict[str, Any]:
    """Return the request as shown in a job view (a batch only by its size)."""
    if record.kind == "batch":
        return {"items": len(record.request.get("items", []))}
    if record.kind == "certificate":
        return {"proof": record.request["proof"]}
    return record.request


def _celery_status(celery: Celery, record: JobRecord) -> tuple[str, Any, Any, Any]:
    """Map Celery's state of the job to (status, progress, result, error)."""
    outcome = celery.AsyncResult(record.id)
    state, info = outcome.state, outcome.info
    if state == "PENDING":
        if not record.queued and time.time() - record.created > PUBLISH_GRACE:
            return (
                "failed",
                None,
                None,
                _error("not_queued", "the job was never queued"),
            )
        return "queued", None, None, None
    if state in ("STARTED", "RETRY"):
        return "running", None, None, None
    if state == "PROGRESS":
        return "running", info if isinstance(info, dict) else None, None, None
    if state == "SUCCESS" and isinstance(info, dict):
        return _from_outcome(info)
    if state == "REVOKED":
        return "failed", None, None, _error("revoked", "the job was cancelled")
    return "failed", None, None, _failure(info)


def _from_outcome(outcome: dict[str, Any]) -> tuple[str, Any, Any, Any]:
    if outcome.get("ok"):
        return "done", None, outcome.get("value"), None
    return "failed", None, None, outcome.get("error")


def _failure(info: Any) -> dict[str, str]:
    name = type(info).__name__
    if name == "TimeLimitExceeded":
        return _error("time_limit", "the job was killed at its hard time limit")
    if name == "WorkerLostError":
        return _error("worker_lost", f"the worker died running the job: {info}")
    return _error("internal_error", f"{name}: {info}")


def _error(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


# -- lost messages ----------------------------------------------------------------
def _recover_if_lost(service: Service, record: JobRecord) -> None:
    """Publish a job queued for `Settings.lost_after` again if its message is gone.

    A Redis crash between a worker's BRPOP and its filing of the message as
    unacknowledged loses the message, and nothing else would ever run the
    job. Only jobs older than ``lost_after`` are looked at, each at most once
    per `LOST_CHECK_EVERY` seconds, so fresh polls stay cheap. Redis failing
    here must not fail the poll: the next one looks again.
    """
    if not record.queued:
        return  # never published: `_celery_status` reports it after the grace
    if time.time() - record.created <= service.settings.lost_after:
        return
    with contextlib.suppress(OperationalError, redis.RedisError, OSError):
        if service.store.claim_lost_check(record.id, LOST_CHECK_EVERY):
            if _message_lost(service, record):
                _republish(service, record)


def _message_lost(service: Service, record: JobRecord) -> bool:
    """Return whether the job's message is missing twice, the job still pending.

    Two looks `LOST_RECHECK` apart, so a message between BRPOP and the
    unacked hash is not taken for lost; then the job's state once more, as
    a job that ended (and was acknowledged) meanwhile has no message either.
    """
    if _message_exists(service, record):
        return False
    time.sleep(LOST_RECHECK)
    if _message_exists(service, record):
        return False
    pending = service.celery.AsyncResult(record.id).state == "PENDING"
    return pending and service.store.get_outcome(record.id) is None


def _message_exists(service: Service, record: JobRecord) -> bool:
    """Return whether the broker holds the job's message, queued or unacked."""
    keys = [*_queue_lists(ROUTES[KIND_TASKS[record.kind]]), RedisChannel.unacked_key]
    found = service.store.client.eval(
        FIND_MESSAGE, len(keys), *keys, record.id, LOST_SCAN_CHUNK
    )
    return bool(found)


def _queue_lists(queue: str) -> list[str]:
    """Return the Redis lists of ``queue``, one per priority step (kombu's
    ``Channel._q_for_pri``: step 0 is the queue's own name)."""
    sep = RedisChannel.sep
    return [f"{queue}{sep}{p}" if p else queue for p in RedisChannel.priority_steps]


def _republish(service: Service, record: JobRecord) -> None:
    """Publish the job's message again, as `_enqueue` did, and count it."""
    current = service.store.get_job(record.id)
    if current is None:
        return  # expired meanwhile: nobody waits for it
    _publish(service, current)
    current = replace(current, republished=current.republished + 1)
    service.store.save_job(current)
    log.warning(
        "job %s (%s): its message was lost from the broker; published again (%d)",
        current.id,
        current.kind,
        current.republished,
    )


# -- certificates ----------------------------------------------------------------
def certificate(service: Service, job_id: str) -> Submitted:
    """Return a done proof's certificate (200), or the job making it (202).

    A proven dead end gets a DRAT certificate bundle (`patience_encodings.
    certificates`: the CNF of the claim and its refutation, which ``patience
    check-cert`` and any DRAT checker verify) when its game has a certificate
    encoding; a worker makes it (`_certificate_job`), so until it is done the
    reply is that job's view, and asking again gives the bundle. Any other
    result gets its line replayed again right now, with the game, the
    position and how the verdict was reached: for a win, the line is the
    proof; for a dead end of a game without an encoding (Besieged Fortress),
    the method says how it was proven (the search exhausted).
    """
    record = get_record(service, job_id)
    if record.kind != "proof":
        raise NotFoundError(f"job {job_id} is a {record.kind} job: no certificate")
    view = job_view(service, record)
    if view["status"] != "done":
        raise ConflictError(f"job {job_id} is {view['status']}, not done")
    value = view["result"]
    game = get_game(value["game"])
    result = ProofResult.from_json(value["result"])
    state = game.parse_position(value["position"])
    if (
        result.status is Status.LOST
        and result.proven
        and certificates.encodes(game.name)
    ):
        try:
            job = CertificateJob.of_proof(record.id, value, service.settings)
        except PatienceError as exc:  # a stored result no worker would take
            message = f"no certificate: {exc.message}"
            raise CertificateFailedError(message, code=exc.code) from None
        return _certificate_job(service, job)
    outcome = replay(game, state, game.parse_moves("\n".join(result.line)))
    body = {
        "game": game.name,
        "position": value["position"],
        "claim": {
            "status": result.status.value,
            "proven": result.proven,
            "question": result.question.value,
            "best_score": result.best_score,
            "score_proven": result.score_proven,
            "engine": result.engine,
            "method": result.method,
        },
        "line": list(result.line),
        "replay": {
            "ok": outcome.ok,
            "steps": outcome.steps,
            "won": outcome.won,
            "stuck": outcome.stuck,
            "score": outcome.score,
            "verdict": outcome.verdict(),
        },
        "settled": settles(result, Question(result.question)),
    }
    return Submitted(body, 200)


def _certificate_job(service: Service, job: CertificateJob) -> Submitted:
    """Return the bundle of ``job`` if made, else queue it once; 202 meanwhile.

    The proof's id keys the certificate job, so polling never starts a second
    one, and a poll only reads. A new job's record is written before the key
    is claimed, so a second request in between finds the first one's job
    instead of queueing its own.
    """
    key = job.key
    earlier = _holder_record(service, key)
    if earlier is None:
        return _new_certificate_job(service, job, key)
    return _earlier_certificate(service, key, earlier)


def _new_certificate_job(service: Service, job: CertificateJob, key: str) -> Submitted:
    """Queue ``job`` under ``key``, unless a request in between got there first."""
    request = job.to_json()
    record = JobRecord(uuid.uuid4().hex, "certificate", request, job.budget, key=key)
    service.store.save_job(record)
    holder = service.store.claim_submission(key, record.id)
    earlier = service.store.get_job(holder) if holder is not None else None
    if earlier is None:
        if holder is not None:  # the earlier job's record expired
            service.store.replace_submission(key, record.id)
        return _enqueue(service, record)
    _forget(service.store, record)
    return _earlier_certificate(service, key, earlier)


def _holder_record(service: Service, key: str) -> JobRecord | None:
    """Return the record of the job ``key`` points at, if both still exist."""
    holder = service.store.holder(key)
    return service.store.get_job(holder) if holder is not None else None


def _unserved(
    service: Service, view: dict[str, Any], record: JobRecord
) -> dict[str, str] | None:
    """Return the error of a job pending `CERTIFICATE_WAIT` with nobody on it.

    Queued, with no live worker consuming ``proofs``: nobody will take it
    (one that does is only busy, and waited out). Running, but on no live
    worker's list of active jobs: its worker died (the stored state stays
    "started"; a worker restarted under the same name does not run it
    either, and the broker hands the message back only after the
    visibility timeout, an hour or more). A job that finished meanwhile
    is not one: its outcome is read again. Only jobs older than the wait
    pay for the broadcast, so fresh polls stay cheap.
    """
    pending = view["status"] in ("queued", "running")
    if not pending or time.time() - record.created <= CERTIFICATE_WAIT:
        return None
    if view["status"] == "queued":
        consumers = consumed_queues(service).values()
        if any(PROOFS_QUEUE in queues for queues in consumers):
            return None
        late = f"the certificate job waited {CERTIFICATE_WAIT:g} s, and no worker "
        return _error("not_started", late + f"consumes the {PROOFS_QUEUE} queue")
    for timeout in (PING_TIMEOUT, ACTIVE_TIMEOUT):
        if record.id in active_jobs(service, timeout):
            return None
    if job_view(service, record)["status"] not in ("queued", "running"):
        return None  # it ended while we looked: the caller asks again
    return _error("worker_gone", "the certificate job's worker is gone")


def _earlier_certificate(service: Service, key: str, record: JobRecord) -> Submitted:
    """Answer from the certificate job already made for this proof.

    Done: its bundle. Pending: its view (202). Failed, or pending after
    `CERTIFICATE_WAIT` with no worker on its queue: a `CertificateFailedError`
    with its code; a failure of the machine (`RETRIED_FAILURES`) is
    forgotten, so asking again starts a new job, while a refused claim stays
    refused.
    """
    view = job_view(service, record)
    if view["status"] == "done":
        return Submitted(view["result"], 200)
    if view["status"] == "failed":
        error = view["error"] or _error("internal_error", "the certificate job failed")
    elif unserved := _unserved(service, view, record):
        error = unserved
        with contextlib.suppress(OperationalError, redis.RedisError, OSError):
            service.celery.control.revoke(record.id)  # if a worker comes back
    else:
        return Submitted(view, 202)
    retried = error["code"] in RETRIED_FAILURES
    if retried:
        service.store.release_submission(key, record.id)
    again = " (ask again to retry)" if retried else ""
    raise CertificateFailedError(
        f"no certificate: {error['message']}{again}", code=error["code"]
    )


# -- health ----------------------------------------------------------------
def consumed_queues(service: Service) -> dict[str, list[str]]:
    """Return each live worker's queues (one broadcast; the dead do not answer)."""
    # Its own connection: a ping on the pooled one leaves state that makes
    # every prover process forked later wait in kombu's clean-up.
    with service.celery.connection_for_write() as conn:
        inspect = service.celery.control.inspect(timeout=PING_TIMEOUT, connection=conn)
        replies = inspect.active_queues() or {}
    return {name: sorted(q["name"] for q in qs or []) for name, qs in replies.items()}


def active_jobs(service: Service, timeout: float = PING_TIMEOUT) -> set[str]:
    """Return the ids of the jobs live workers are running (one broadcast)."""
    with service.celery.connection_for_write() as conn:
        inspect = service.celery.control.inspect(timeout=timeout, connection=conn)
        replies = inspect.active() or {}
    return {task["id"] for tasks in replies.values() for task in tasks or []}


def health(service: Service) -> tuple[dict[str, Any], bool]:
    """Return whether Redis answers and every queue has a live consumer.

    One broadcast asks each worker which queues it consumes (it answers
    only if alive), so a deployment whose workers all serve ``batches``
    is reported down for ``proofs`` instead of "ok" while proofs wait.
    """
    try:
        service.store.ping()
        redis_state: dict[str, Any] = {"ok": True}
    except redis.RedisError as exc:
        redis_state = {"ok": False, "error": str(exc)}
    consumed: dict[str, list[str]] = {}
    if redis_state["ok"]:
        try:
            consumed = consumed_queues(service)
        except (OperationalError, redis.RedisError, OSError) as exc:
            redis_state = {"ok": False, "error": str(exc)}
    workers = sorted(consumed)
    queues = {
        q: {"consumers": sum(q in names for names in consumed.values())} for q in QUEUES
    }
    served = all(queue["consumers"] for queue in queues.values())
    ok = redis_state["ok"] and served  # every queue consumed: a worker is alive
    body = {
        "status": "ok" if ok else "degraded",
        "redis": redis_state,
        "workers": {"ok": bool(workers), "count": len(workers), "names": workers},
        "queues": queues,
    }
    return body, ok
