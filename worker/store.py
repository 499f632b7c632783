"""What the service keeps in Redis besides Celery's own queues and results.

- ``patience:job:<id>``: the job record (kind, request, submission key),
  written before the task is queued. It is what makes an unknown id a 404
  (Celery reports every unknown id as PENDING) and what a status reply
  describes.
- ``patience:submission:<key>``: the job id of the latest submission with this
  key (same game, position, question, engine and installed version), so an
  identical submission is answered from that job instead of being solved
  again; ``certificate:<version>:<proof id>`` keys the one certificate job of
  a proof.
- ``patience:outcome:<id>``: a job's final answer, written once by the first
  worker to finish it. A redelivered copy of the job (its worker died before
  acknowledging it) returns this instead of working again, so a job is never
  answered twice with different results.
- ``patience:attempts:<id>``: how many times a worker has started the job.
  A job whose worker process dies is put back on the queue at once
  (``task_reject_on_worker_lost``); the count is what stops a job that kills
  its process every time (out of memory, a crash in a solver) from running
  for ever (`worker.tasks.MAX_ATTEMPTS`).
- ``patience:answer:<key>``: a settled answer, which a worker reuses (after
  replaying it) for identical proofs, in batches too.
- ``patience:lost-check:<id>``: set for a few seconds while (and after) the
  API looks whether a long-queued job's message still exists, so polls of
  that job, from any API process, look at most once in that time
  (`service.broker`).

Everything expires: records and submissions with the results
(``result_expires``), answers after ``answer_ttl``.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from .celery_app import CONNECT_TIMEOUT, SOCKET_TIMEOUT
from .settings import Settings

PREFIX = "patience:"


@dataclass(frozen=True)
class JobRecord:
    """A submitted job, as the API recorded it."""

    id: str
    kind: str  # "proof", "certificate", "deals" or "batch"
    request: dict[str, Any]
    budget: float
    key: str | None = None
    created: float = field(default_factory=time.time)
    queued: bool = False  # set once the broker has taken the message
    republished: int = 0  # times the API published it again (message lost)


class Store:
    """Job records, submission index and answers over one Redis client."""

    def __init__(self, client: redis.Redis, ttl: int, answer_ttl: int) -> None:
        self.client = client
        self.ttl = ttl
        self.answer_ttl = answer_ttl

    @classmethod
    def from_settings(cls, settings: Settings) -> Store:
        """Return a store whose calls fail fast when Redis is down."""
        client = redis.Redis.from_url(
            settings.redis_url,
            socket_timeout=SOCKET_TIMEOUT,
            socket_connect_timeout=CONNECT_TIMEOUT,
            decode_responses=True,
        )
        return cls(client, settings.result_expires, settings.answer_ttl)

    def ping(self) -> None:
        """Raise `redis.RedisError` unless Redis answers."""
        self.client.ping()

    # -- job records -------------------------------------------------------------
    def save_job(self, record: JobRecord) -> None:
        """Write (or overwrite) a job record."""
        self.client.set(_job(record.id), json.dumps(asdict(record)), ex=self.ttl)

    def get_job(self, job_id: str) -> JobRecord | None:
        """Return the record of ``job_id``, or None when unknown or expired."""
        raw = self.client.get(_job(job_id))
        return JobRecord(**json.loads(raw)) if raw else None

    def delete_job(self, record: JobRecord) -> None:
        """Forget a job that never reached the broker."""
        self.client.delete(_job(record.id))
        if record.key:
            self.release_submission(record.key, record.id)

    def claim_lost_check(self, job_id: str, seconds: float) -> bool:
        """Return whether nobody looked for ``job_id``'s message in ``seconds``.

        A true answer is a claim: other calls get false for ``seconds``.
        """
        name = _lost_check(job_id)
        return bool(self.client.set(name, 1, nx=True, px=int(seconds * 1000)))

    # -- identical submissions ---------------------------------------------------------
    def claim_submission(self, key: str, job_id: str) -> str | None:
        """Point ``key`` at ``job_id`` unless taken; return the holder if taken.

        A key released between the two calls is claimed again, so "None"
        always means the key now names ``job_id``.
        """
        for _ in range(3):
            if self.client.set(_submission(key), job_id, nx=True, ex=self.ttl):
                return None
            holder = self.holder(key)
            if holder:
                return holder
        self.replace_submission(key, job_id)  # released again and again: take it
        return None

    def holder(self, key: str) -> str | None:
        """Return the job id ``key`` points at, if any (a read, no claim)."""
        return self.client.get(_submission(key)) or None

    def replace_submission(self, key: str, job_id: str) -> None:
        """Point ``key`` at a new job (the old one failed or fell short)."""
        self.client.set(_submission(key), job_id, ex=self.ttl)

    def release_submission(self, key: str, job_id: str) -> None:
        """Drop ``key`` if it still points at ``job_id``."""
        name = _submission(key)
        with self.client.pipeline() as pipe:
            try:
                pipe.watch(name)
                if pipe.get(name) == job_id:
                    pipe.multi()
                    pipe.delete(name)
                    pipe.execute()
            except redis.WatchError:
                pass  # someone else re-pointed it meanwhile: leave theirs

    # -- outcomes: a job's final answer, written once ------------------------------
    def save_outcome(self, job_id: str, outcome: dict[str, Any]) -> None:
        """Keep a job's final answer; the first one written wins."""
        self.client.set(_outcome(job_id), json.dumps(outcome), ex=self.ttl, nx=True)

    def get_outcome(self, job_id: str) -> dict[str, Any] | None:
        """Return a job's final answer, if a worker finished it."""
        raw = self.client.get(_outcome(job_id))
        return json.loads(raw) if raw else None

    def count_attempt(self, job_id: str) -> int:
        """Count one more start of ``job_id``; return the starts so far."""
        with self.client.pipeline() as pipe:
            pipe.incr(_attempts(job_id))
            pipe.expire(_attempts(job_id), self.ttl)
            count, _ = pipe.execute()
        return int(count)

    # -- settled answers (the worker's `AnswerCache`) --------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        """Return the settled answer stored for ``key``, or None.

        The cache is a shortcut, so Redis failing here means "no answer
        stored" rather than a failed job (a whole batch would be lost to one
        unlucky lookup); the job store's own calls retry instead.
        """
        try:
            raw = self.client.get(_answer(key))
        except redis.RedisError:
            return None
        return json.loads(raw) if raw else None

    def put(self, key: str, answer: dict[str, Any]) -> None:
        """Store a settled answer for ``key`` (best effort, like `get`)."""
        with contextlib.suppress(redis.RedisError):
            self.client.set(_answer(key), json.dumps(answer), ex=self.answer_ttl)


def _job(job_id: str) -> str:
    return f"{PREFIX}job:{job_id}"


def _submission(key: str) -> str:
    return f"{PREFIX}submission:{key}"


def _outcome(job_id: str) -> str:
    return f"{PREFIX}outcome:{job_id}"


def _attempts(job_id: str) -> str:
    return f"{PREFIX}attempts:{job_id}"


def _lost_check(job_id: str) -> str:
    return f"{PREFIX}lost-check:{job_id}"


def _answer(key: str) -> str:
    return f"{PREFIX}answer:{key}"
