"""Resilience: a worker killed with SIGKILL, and a Redis crash and restart.

These tests break things, so they get a stack of their own: a Redis with
``appendfsync always`` (a crash loses nothing acknowledged) and a short
visibility timeout, so that the message of a killed worker is redelivered
within seconds instead of an hour. Jobs are kept short to match: the timeout
must exceed the longest job (`worker.settings.Settings`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from patience_encodings.engines import engines_for
from verifier import devils_grip as dg
from verifier.replay import replay

needs_prover = pytest.mark.skipif(
    not engines_for("devils-grip"), reason="no Devil's Grip prover registered yet"
)

#: Short limits: a job may take 6 s (13 s with margins), so 15 s of visibility.
FRAGILE_ENV = {
    "PATIENCE_MAX_TIME_LIMIT": "2",
    "PATIENCE_MAX_JOB_SECONDS": "6",
    "PATIENCE_VISIBILITY_TIMEOUT": "15",
    "PATIENCE_RESTORE_INTERVAL": "1",
    "PATIENCE_LOST_AFTER": "2",
}

#: Longer jobs, for a test that must catch a job's provers while they run:
#: at 2 s a busy machine could let them finish unseen. A pool process that
#: dies puts its job back at once (reject on worker lost), so this stack
#: needs no short visibility timeout; it only has to exceed the longest job.
LONG_JOBS_ENV = {
    **FRAGILE_ENV,
    "PATIENCE_MAX_TIME_LIMIT": "20",
    "PATIENCE_MAX_JOB_SECONDS": "20",
    "PATIENCE_VISIBILITY_TIMEOUT": "40",
}


@dataclass
class Fragile:
    """A stack the tests may break: Redis, an app, and workers on demand."""

    redis: Any
    env: dict[str, str]
    app: Any
    logs: Path

    def start_worker(self, queues: tuple[str, ...] | None = None) -> Any:
        from service.stack import WorkerProcess
        from worker.celery_app import QUEUES

        log = open(self.logs / f"worker-{time.monotonic_ns()}.log", "wb")  # noqa: SIM115
        worker = WorkerProcess(
            self.env, concurrency=1, queues=queues or QUEUES, log=log
        ).start()
        worker.wait_ready(self.app.extensions["patience"].celery, timeout=60)
        return worker


def _stack(
    tmp_path_factory: pytest.TempPathFactory, name: str, limits: dict[str, str]
) -> Iterator[Fragile]:
    from service.app import create_app
    from service.embedded import EmbeddedRedis

    server = EmbeddedRedis(tmp_path_factory.mktemp(f"{name}-redis"), fsync="always")
    env = {"REDIS_URL": server.start(), **limits}
    try:
        app = create_app({**env, "TESTING": True})
        yield Fragile(server, env, app, tmp_path_factory.mktemp(f"{name}-logs"))
    finally:
        server.close()


@pytest.fixture(scope="module")
def fragile(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fragile]:
    yield from _stack(tmp_path_factory, "fragile", FRAGILE_ENV)


@pytest.fixture(scope="module")
def long_jobs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fragile]:
    yield from _stack(tmp_path_factory, "long-jobs", LONG_JOBS_ENV)


def _wait(client: Any, location: str, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        view = client.get(location).get_json()
        if view["status"] in ("done", "failed") or time.monotonic() > deadline:
            return view
        time.sleep(0.05)


def _wait_health(client: Any, ok: bool, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        reply = client.get("/v1/health")
        if (reply.status_code == 200) == ok or time.monotonic() > deadline:
            return {"status_code": reply.status_code, **reply.get_json()}
        time.sleep(0.2)


@needs_prover
def test_killed_worker_job_is_redelivered_and_completes(fragile):
    client = fragile.app.test_client()
    worker = fragile.start_worker()
    body = {"time_limit": 2, "items": [{"number": n} for n in (300, 301)]}
    try:
        job = client.post("/v1/batches", json=body).get_json()
        deadline = time.monotonic() + 20
        while client.get(job["links"]["self"]).get_json()["status"] != "running":
            assert time.monotonic() < deadline, "the job never started"
            time.sleep(0.02)
        worker.kill()  # SIGKILL to the worker, its pool and its provers
        assert client.get(job["links"]["self"]).get_json()["status"] == "running"
        worker = fragile.start_worker()
        view = _wait(client, job["links"]["self"], timeout=60)
    finally:
        worker.stop()
    assert view["status"] == "done", view
    items = view["result"]["items"]
    assert [item["index"] for item in items] == list(range(len(body["items"])))
    assert all(item["ok"] for item in items)


def _wait_for(condition, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.02)
    return value


def _busy_pool(main: Any) -> Any:
    """Return the worker's pool process that has started provers, if any."""
    import psutil

    for pool in main.children():
        try:
            if pool.children():
                return pool
        except psutil.NoSuchProcess:
            continue
    return None


@needs_prover
def test_a_job_that_kills_its_process_every_time_fails_as_worker_lost(long_jobs):
    """A pool process dying puts its job straight back (reject on worker lost);
    after `MAX_ATTEMPTS` starts the job fails instead of looping for ever, and
    no prover process outlives the pool process that started it.

    The job asks z3 for a whole deal's best score, which it does not prove
    (README, "SMT": on deal 5 it still holds a line of 36 cards, unproven,
    when its time is up), so every start's prover runs for the whole 20 s
    limit and the test cannot miss it. (A hard deal under ``auto`` would
    not do: deals open for minutes once now settle within 20 s.) Each start
    is killed as soon as its prover is seen, so the limit does not lengthen
    the test.
    """
    import psutil

    from worker.tasks import MAX_ATTEMPTS

    client = long_jobs.app.test_client()
    redis_client = long_jobs.app.extensions["patience"].store.client
    worker = long_jobs.start_worker()
    body = {"number": 5, "question": "score", "engine": "smt", "time_limit": 20}
    try:
        job = client.post("/v1/proofs", json=body).get_json()
        attempts = f"patience:attempts:{job['id']}"
        main = psutil.Process(worker.proc.pid)
        for start in range(1, MAX_ATTEMPTS + 1):
            _wait_for(
                lambda n=start: int(redis_client.get(attempts) or 0) >= n,
                20,
                f"start {start} never came",
            )
            pool = _wait_for(lambda: _busy_pool(main), 10, "the provers never started")
            provers = pool.children()
            pool.kill()  # as the out-of-memory killer would
            gone, alive = psutil.wait_procs(provers, timeout=5)
            assert not alive, "prover processes outlived their pool process"
        view = _wait(client, job["links"]["self"], timeout=30)
    finally:
        worker.stop()
    assert view["status"] == "failed", view
    assert view["error"]["code"] == "worker_lost"
    assert f"died {MAX_ATTEMPTS} times" in view["error"]["message"]
    assert int(redis_client.get(attempts)) == MAX_ATTEMPTS + 1


def test_health_is_degraded_while_a_queue_has_no_consumer(fragile):
    client = fragile.app.test_client()
    worker = fragile.start_worker(queues=("batches",))
    try:
        reply = client.get("/v1/health")
    finally:
        worker.stop()
    body = reply.get_json()
    assert reply.status_code == 503 and body["status"] == "degraded"
    assert body["redis"]["ok"] and body["workers"]["count"] == 1
    assert body["queues"] == {"proofs": {"consumers": 0}, "batches": {"consumers": 1}}


def _stale_certificate_job(patience: Any, job_id: str | None = None) -> str:
    """Store a certificate job for a forged proof, pending since before
    `CERTIFICATE_WAIT`, holding the proof's key; return the proof's id."""
    import uuid

    from service_helpers import forged_dead_end

    from service.broker import CERTIFICATE_WAIT
    from worker.jobs import certificate_key, certificate_seconds
    from worker.store import JobRecord

    proof = forged_dead_end(patience.store)
    seconds = certificate_seconds(patience.settings)
    key = certificate_key(proof, seconds)
    stale = JobRecord(
        job_id or uuid.uuid4().hex,
        "certificate",
        {"proof": proof},
        seconds,
        key=key,
        queued=True,
        created=time.time() - CERTIFICATE_WAIT - 1,
    )
    patience.store.save_job(stale)
    assert patience.store.claim_submission(key, stale.id) is None
    return proof


def _purge_proofs(patience: Any) -> None:
    """Drop the messages queued on ``proofs`` (new jobs no test runs)."""
    from worker.celery_app import PROOFS_QUEUE

    with patience.celery.connection_for_write() as conn:
        conn.default_channel.queue_purge(PROOFS_QUEUE)


@pytest.mark.parametrize(
    ("state", "queues", "code"),
    [
        ("PENDING", ("batches",), "not_started"),
        ("STARTED", ("batches",), "worker_gone"),
        ("STARTED", ("proofs", "batches"), "worker_gone"),
    ],
)
def test_a_certificate_job_nobody_serves_fails_and_is_retried(
    fragile, state, queues, code
):
    """A certificate job still pending past `CERTIFICATE_WAIT` is reported as
    the machine's failure instead of a 202 for ever when nobody will run it:
    never taken, and no live worker consumes ``proofs``; or taken by a
    worker that died (``STARTED`` stays in the result store), which no live
    worker runs, even one on ``proofs`` (a restart under the same name). Its
    key is released, so asking again queues a new job."""
    from worker.jobs import certificate_key, certificate_seconds

    client = fragile.app.test_client()
    patience = fragile.app.extensions["patience"]
    proof = _stale_certificate_job(patience)
    key = certificate_key(proof, certificate_seconds(patience.settings))
    stale = patience.store.holder(key)
    if state == "STARTED":  # what the dead worker wrote when it took the job
        patience.celery.backend.store_result(stale, None, state)
    url = f"/v1/jobs/{proof}/certificate"
    worker = fragile.start_worker(queues=queues)
    try:
        served = client.get("/v1/health").get_json()["queues"]
        assert served["batches"]["consumers"] == 1  # the worker answers
        late = client.get(url)
        again = client.get(url)
    finally:
        worker.stop()
        _purge_proofs(patience)
    assert late.status_code == 422, late.get_json()
    error = late.get_json()["error"]
    assert error["code"] == code and "ask again to retry" in error["message"]
    assert again.status_code == 202
    fresh = again.get_json()
    assert fresh["id"] != stale and fresh["status"] == "queued"
    assert patience.store.holder(key) == fresh["id"]


@needs_prover
def test_a_long_pending_certificate_job_that_is_served_is_waited_out(fragile):
    """The other side: a queued job while a worker consumes ``proofs`` (it is
    only busy), and a running job a live worker lists as active, stay 202
    with their keys, however old. The running one is a real batch job, its
    record given the certificate kind: what matters is that it runs."""
    client = fragile.app.test_client()
    patience = fragile.app.extensions["patience"]
    worker = fragile.start_worker()
    try:
        queued = f"/v1/jobs/{_stale_certificate_job(patience)}/certificate"
        body = {"time_limit": 2, "question": "score"}
        body["items"] = [{"number": n} for n in (3, 33)]  # 2 s each: open
        job = client.post("/v1/batches", json=body).get_json()
        _wait_for(
            lambda: client.get(job["links"]["self"]).get_json()["status"] == "running",
            20,
            "the batch never started",
        )
        running = f"/v1/jobs/{_stale_certificate_job(patience, job['id'])}/certificate"
        replies = [client.get(running), client.get(queued)]  # while it runs
    finally:
        worker.stop()
        _purge_proofs(patience)
    for reply in replies:
        assert reply.status_code == 202, reply.get_json()
    assert [r.get_json()["status"] for r in replies] == ["running", "queued"]


def _copies(redis_client: Any, queue: str, job_id: str) -> int:
    """Return how many entries of ``queue``'s list (or the unacked hash) hold
    the message of ``job_id``."""
    queued = redis_client.lrange(queue, 0, -1)
    unacked = redis_client.hvals("unacked")
    return sum(job_id in entry for entry in queued + unacked)


def _deals_won(view: dict[str, Any]) -> bool:
    """Return whether every deal of a done deals job replays to a win."""
    for item in view["result"]["deals"]:
        deal = dg.deal_from_list(item["deal"])
        line = dg.parse_moves("\n".join(item["line"]))
        if not replay(dg.GAME, dg.initial_state(deal), line).won:
            return False
    return True


def test_a_lost_message_is_published_again_once(fragile):
    """A Redis crash between a worker's BRPOP and its write of the message
    to the unacked hash leaves a job queued with its message nowhere. Polls
    past ``lost_after`` find it missing and publish it again, once; a job
    whose message only waits in the queue is not published twice."""
    from service.broker import LOST_CHECK_EVERY
    from worker.celery_app import BATCHES_QUEUE

    client = fragile.app.test_client()
    patience = fragile.app.extensions["patience"]
    redis_client = patience.store.client
    lost = client.post("/v1/deals", json={"count": 1, "seed": 3}).get_json()
    kept = client.post("/v1/deals", json={"count": 1, "seed": 4}).get_json()
    for entry in redis_client.lrange(BATCHES_QUEUE, 0, -1):
        if lost["id"] in entry:  # what the crash leaves: taken, never filed
            redis_client.lrem(BATCHES_QUEUE, 0, entry)
    assert _copies(redis_client, BATCHES_QUEUE, lost["id"]) == 0
    assert _copies(redis_client, BATCHES_QUEUE, kept["id"]) == 1

    lost_after = patience.settings.lost_after
    until = time.monotonic() + lost_after + 2 * LOST_CHECK_EVERY + 1
    while time.monotonic() < until:  # two checks of each job at least
        for job in (lost, kept):
            assert client.get(job["links"]["self"]).get_json()["status"] == "queued"
        time.sleep(0.1)
    assert _copies(redis_client, BATCHES_QUEUE, lost["id"]) == 1
    assert _copies(redis_client, BATCHES_QUEUE, kept["id"]) == 1
    assert patience.store.get_job(lost["id"]).republished == 1
    assert patience.store.get_job(kept["id"]).republished == 0

    worker = fragile.start_worker()
    try:
        views = [_wait(client, job["links"]["self"], 60) for job in (lost, kept)]
    finally:
        worker.stop()
    for view in views:
        assert view["status"] == "done", view
        assert _deals_won(view)


def test_a_restore_lock_left_by_a_crash_holds_up_redelivery_briefly(fragile):
    """A worker restoring unacknowledged messages holds a lock in Redis; a
    crash while it is held leaves the lock until it expires, kombu's default
    being 5 minutes. The worker's transport holds it a few seconds instead,
    so a message a dead worker took is redelivered soon after all."""
    from worker.celery_app import BATCHES_QUEUE, make_celery

    client = fragile.app.test_client()
    patience = fragile.app.extensions["patience"]
    redis_client = patience.store.client
    with make_celery(patience.settings).connection_for_write() as conn:
        expire = conn.default_channel.unacked_mutex_expire
    assert expire == 5  # restore interval 1 s: five sweeps
    job = client.post("/v1/deals", json={"count": 1, "seed": 7}).get_json()
    raw = redis_client.rpop(BATCHES_QUEUE)  # as a worker that died took it
    assert job["id"] in raw
    delivered = time.time() - patience.settings.visibility_timeout - 1
    # What kombu's QoS.append writes: payload, exchange, routing key.
    entry = [json.loads(raw), BATCHES_QUEUE, BATCHES_QUEUE]
    redis_client.hset("unacked", "tag-1", json.dumps(entry))
    redis_client.zadd("unacked_index", {"tag-1": delivered})
    redis_client.set("unacked_mutex", "crashed", ex=expire)  # a sweep died
    worker = fragile.start_worker()
    try:
        view = _wait(client, job["links"]["self"], 60)
    finally:
        worker.stop()
    assert view["status"] == "done", view  # within 60 s, not after 300
    assert patience.store.get_job(job["id"]).republished == 0


def test_redis_restart_is_reported_then_recovered(fragile):
    client = fragile.app.test_client()
    worker = fragile.start_worker()
    try:
        before = client.post("/v1/deals", json={"count": 2, "seed": 9}).get_json()
        assert _wait(client, before["links"]["self"], 30)["status"] == "done"
        pending = client.post("/v1/deals", json={"count": 3, "seed": 90}).get_json()

        fragile.redis.kill()  # a crash: SIGKILL
        health = _wait_health(client, ok=False, timeout=10)
        assert health["status_code"] == 503 and not health["redis"]["ok"]
        refused = client.post("/v1/deals", json={"count": 1})
        assert refused.status_code == 503
        assert refused.get_json()["error"]["code"] == "unavailable"
        assert client.get(before["links"]["self"]).status_code == 503

        fragile.redis.start()  # same port, same append-only file
        health = _wait_health(client, ok=True, timeout=60)
        assert health["status_code"] == 200, health

        for job in (before, pending):  # nothing submitted before the crash is lost
            view = _wait(client, job["links"]["self"], 60)
            assert view["status"] == "done", view
        after = client.post("/v1/deals", json={"count": 1, "seed": 5}).get_json()
        view = _wait(client, after["links"]["self"], 60)
        assert view["status"] == "done", view
    finally:
        worker.stop()
    deal = dg.deal_from_list(view["result"]["deals"][0]["deal"])
    line = dg.parse_moves("\n".join(view["result"]["deals"][0]["line"]))
    assert replay(dg.GAME, dg.initial_state(deal), line).won


def test_workers_started_without_a_name_are_told_apart(fragile):
    """Two ``patience worker`` on one machine, no ``--name``: health counts two.

    Celery's own default name (celery@host) would be the same for both, and
    the broker would see one node.
    """
    import os
    import signal
    import subprocess
    import sys

    command = [sys.executable, "-m", "service.cli", "worker", "--concurrency", "1"]
    env = {**os.environ, **fragile.env}
    procs = [
        subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(2)
    ]
    client = fragile.app.test_client()
    try:
        deadline = time.monotonic() + 60
        names: list[str] = []
        while time.monotonic() < deadline and len(names) < 2:
            names = client.get("/v1/health").get_json()["workers"]["names"]
            time.sleep(0.5)
    finally:
        for proc in procs:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert len(names) == 2, names
    assert all(name.startswith("patience-") for name in names)
