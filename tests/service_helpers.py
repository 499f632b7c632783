"""Helpers of the service tests: a real ``patience serve`` in a subprocess,
and records put in a real store by hand, as a tampered or half-finished
deployment would leave them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import psutil

from verifier import devils_grip as dg


def near_win_position() -> dict[str, Any]:
    """Return a winnable mid-game position, in the position format."""
    from dg_helpers import winnable_position

    state, _ = winnable_position()
    return dg.position_to_json(state)


def forged_dead_end(store: Any) -> str:
    """Store a done proof job that says "lost" about a winnable position, as a
    tampered store would; return its id."""
    from verifier.results import ProofResult, Question, Status
    from worker.store import JobRecord

    position = near_win_position()
    claim = ProofResult(Status.LOST, True, "forged", Question.VERDICT, method="none")
    value = {"game": "devils-grip", "position": position, "result": claim.to_json()}
    record = JobRecord(uuid.uuid4().hex, "proof", {"position": position}, 10.0)
    store.save_job(record)
    store.save_outcome(record.id, {"ok": True, "value": value})
    return record.id


def _as_a_background_job() -> None:
    """Start the child as a shell without job control starts ``cmd &``:
    with SIGINT ignored (Python then keeps it ignored unless told)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start_serve(log: Path, background: bool = False) -> tuple[subprocess.Popen, int]:
    """Start ``patience serve`` (embedded Redis, one worker process), its
    output in ``log``; return it and its port once it says it is up."""
    from service.embedded import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    command = [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [*command, "--concurrency", "1"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_as_a_background_job if background else None,
        )
    deadline = time.monotonic() + 60
    while "Ctrl-C stops everything" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"serve did not come up:\n{log.read_text()}")
        time.sleep(0.2)
    return proc, port


def running(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie has ended: only unreaped)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
