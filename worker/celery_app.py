"""The Celery application: JSON only, late acks, explicit queues.

Run a worker with ``patience worker`` (or ``celery -A worker.celery_app worker``);
both read `worker.settings.Settings` from the environment. The API builds its
own client app with `make_celery(settings, role="client")`: same broker and
queues, but no endless retries, so a request never hangs on a dead Redis.

Pool: prefork (billiard). Its children are daemonic, and billiard — unlike the
standard library's multiprocessing — lets daemonic processes start children,
which `patience_encodings.engines.solve` needs for its killable prover
processes. Soft time limits (SIGUSR1) also need prefork.
"""

from __future__ import annotations

import math
import os
from typing import Any

from celery import Celery
from celery.signals import celeryd_init
from kombu import Exchange, Queue

from patience_encodings.engines import CORES_ENV, cores_available

from .settings import Settings

#: Queues: quick proofs, and long jobs (batches, deal generation).
PROOFS_QUEUE = "proofs"
BATCHES_QUEUE = "batches"
QUEUES = (PROOFS_QUEUE, BATCHES_QUEUE)

#: Task names, so the API can send tasks without importing their code.
PROVE_TASK = "patience.prove"
DEALS_TASK = "patience.deals"
BATCH_TASK = "patience.batch"
CERTIFY_TASK = "patience.certify"
ROUTES = {
    PROVE_TASK: PROOFS_QUEUE,
    CERTIFY_TASK: PROOFS_QUEUE,
    DEALS_TASK: BATCHES_QUEUE,
    BATCH_TASK: BATCHES_QUEUE,
}
#: The task of each kind of job record (`worker.store.JobRecord.kind`), so the
#: API can publish a job again from its record alone.
KIND_TASKS = {
    "proof": PROVE_TASK,
    "certificate": CERTIFY_TASK,
    "deals": DEALS_TASK,
    "batch": BATCH_TASK,
}

#: Socket timeouts (seconds): a dead Redis must fail fast, not hang a request.
SOCKET_TIMEOUT = 5.0
CONNECT_TIMEOUT = 2.0


def unacked_mutex_expire(settings: Settings) -> int:
    """Return the seconds the broker's restore lock may be held.

    A worker sweeping for messages to redeliver holds a lock in Redis while
    it does; a crash (of Redis, or of the worker) while it is held leaves it
    until it expires, and no message is redelivered meanwhile: kombu's
    default is 5 minutes. A sweep restores a handful of messages, well within
    a few seconds, and two sweeps overlapping after an early expiry do no
    harm (each message is moved back in a transaction that watches the
    unacked hash, so only one of them moves it). So: five sweep intervals,
    at least 5 s, at most kombu's 300 s.
    """
    return min(300, max(5, math.ceil(5 * settings.restore_interval)))


def celery_config(settings: Settings, role: str = "worker") -> dict[str, Any]:
    """Return the Celery configuration for ``role`` ("worker" or "client")."""
    transport = {
        "visibility_timeout": settings.visibility_timeout,
        "unacked_restore_interval": settings.restore_interval,
        "unacked_restore_throttle": 1,
        "unacked_mutex_expire": unacked_mutex_expire(settings),
        "socket_timeout": SOCKET_TIMEOUT,
        "socket_connect_timeout": CONNECT_TIMEOUT,
    }
    worker = role == "worker"
    return {
        "broker_url": settings.redis_url,
        "result_backend": settings.redis_url,
        "task_serializer": "json",
        "result_serializer": "json",
        "accept_content": ["json"],
        "result_accept_content": ["json"],
        "task_acks_late": True,
        "task_reject_on_worker_lost": True,
        "task_track_started": True,
        "worker_prefetch_multiplier": 1,
        "result_expires": settings.result_expires,
        "task_queues": [Queue(q, Exchange(q), routing_key=q) for q in QUEUES],
        "task_default_queue": PROOFS_QUEUE,
        "task_default_exchange": PROOFS_QUEUE,
        "task_default_routing_key": PROOFS_QUEUE,
        "task_create_missing_queues": False,
        "task_routes": {
            name: {"queue": q, "exchange": q, "routing_key": q}
            for name, q in ROUTES.items()
        },
        "broker_transport_options": transport,
        "redis_socket_timeout": SOCKET_TIMEOUT,
        "redis_socket_connect_timeout": CONNECT_TIMEOUT,
        "redis_retry_on_timeout": True,
        "broker_connection_retry_on_startup": True,
        "broker_connection_timeout": CONNECT_TIMEOUT,
        "broker_connection_max_retries": None if worker else 1,
        "task_publish_retry_policy": {
            "max_retries": 2,
            "interval_start": 0,
            "interval_step": 0.5,
            "interval_max": 1,
        },
        # A worker keeps storing results through a Redis restart; the API
        # must not retry forever inside a request.
        "result_backend_always_retry": worker,
        "result_backend_max_retries": 60 if worker else 0,
        # On a lost broker connection a running job finishes; its message comes
        # back after the visibility timeout and the rerun returns the stored
        # outcome (`worker.tasks._once`) instead of working again.
        "worker_cancel_long_running_tasks_on_connection_loss": False,
        "worker_hijack_root_logger": False,
        "worker_send_task_events": False,
    }


def make_celery(settings: Settings | None = None, role: str = "worker") -> Celery:
    """Return a Celery app for ``settings`` (default: from the environment)."""
    settings = settings or Settings.from_env()
    app = Celery("patience", include=["worker.tasks"] if role == "worker" else [])
    app.conf.update(celery_config(settings, role))
    app.conf.patience_settings = settings
    return app


_APP: Celery | None = None


def __getattr__(name: str) -> Any:
    """Build the worker's app (``celery -A worker.celery_app``) on first use.

    Lazily, so that importing the constants above has no side effects (the
    API imports them and builds its own client app).
    """
    global _APP
    if name != "app":
        raise AttributeError(name)
    if _APP is None:
        _APP = make_celery()
    return _APP


def job_cores(cores: int, concurrency: int) -> int:
    """Return the cores each of ``concurrency`` jobs at once may use, of ``cores``."""
    return max(1, cores // max(1, concurrency))


@celeryd_init.connect
def share_cores(options: dict[str, Any] | None = None, **_: Any) -> None:
    """Give each job its share of the worker's cores, before the pool forks.

    A worker runs ``--concurrency`` jobs at once, and each proof's ``auto``
    starts one process per portfolio member: two jobs on two cores, each
    with two members, would share one core per job without knowing it, and
    on best scores members that share or fill the cores prove less than one
    member alone (`patience_encodings.engines.FEW_CORES`). So the worker sets
    `CORES_ENV` for its jobs to its cores divided by its concurrency, unless
    the deployment set it.
    """
    if os.environ.get(CORES_ENV, "").strip():
        return
    cores = cores_available()
    concurrency = (options or {}).get("concurrency") or cores
    os.environ[CORES_ENV] = str(job_cores(cores, int(concurrency)))
