"""The load script (`service.loadtest`) on its own stack: it runs, reports, and
leaves no Redis or worker behind.

It is a script, not a benchmark here: a few cheap jobs (generated deals) only
check that the stack it starts serves them and is stopped afterwards.
"""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
from service_helpers import running


def _stack_processes() -> set[int]:
    """PIDs of the Redis servers and workers (`service.stack.WorkerProcess`,
    and its pool processes) running now."""
    pids = set()
    for proc in psutil.process_iter(["pid", "cmdline"]):
        line = " ".join(proc.info["cmdline"] or [])
        if "redis-server" in line or "service.cli worker" in line:
            pids.add(proc.info["pid"])
    return pids


def test_loadtest_serves_its_jobs_and_stops_its_own_stack():
    before = _stack_processes()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    argv = ["--n", "4", "--clients", "2", "--kind", "deals", "--concurrency", "1"]
    done = subprocess.run(
        [sys.executable, "-m", "service.loadtest", *argv],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert "answers: done 4" in done.stdout
    assert "lost jobs (submitted, never answered): 0" in done.stdout
    left = {pid for pid in _stack_processes() - before if running(pid)}
    assert not left, f"processes left running: {sorted(left)}"


def test_the_url_serve_prints_is_taken_as_the_base():
    """`serve` prints ``.../v1``; the script's paths start with ``/v1``."""
    from service.loadtest import service_url

    for url in ("http://h:5000/v1", "http://h:5000/v1/", "http://h:5000/"):
        assert service_url(url) == "http://h:5000"
    assert service_url("http://h:5000/api") == "http://h:5000/api"


def test_refused_submissions_count_as_a_failed_run():
    from service.loadtest import Tally, refused

    tally = Tally()
    tally.outcomes.update({"done": 3, "http 404": 2, "http 400": 1})
    assert refused(tally) == 3
    assert refused(Tally()) == 0
