"""The one command: ``patience serve`` brings everything up and takes it down.

Runs the real command in a subprocess, talks to it over HTTP, sends SIGINT
(Ctrl-C) and checks that the worker and the embedded Redis are gone too.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

import psutil
import pytest

from service.cli import main
from service.embedded import free_port


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _as_a_background_job() -> None:
    """Start the child as a shell without job control starts ``cmd &``:
    with SIGINT ignored (Python then keeps it ignored unless told)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_serve_starts_everything_and_ctrl_c_stops_everything(tmp_path):
    """Also when started in the background: Ctrl-C must still stop it."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}
    out = open(tmp_path / "serve.out", "w+")  # noqa: SIM115
    command = [sys.executable, "-m", "service.cli", "serve", "--port", str(port)]
    proc = subprocess.Popen(
        [*command, "--concurrency", "1"],
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_as_a_background_job,
    )
    try:
        deadline = time.monotonic() + 60
        while "Ctrl-C stops everything" not in (tmp_path / "serve.out").read_text():
            assert proc.poll() is None, (tmp_path / "serve.out").read_text()
            assert time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.2)
        text = (tmp_path / "serve.out").read_text()
        redis_port = int(re.search(r"redis://127\.0\.0\.1:(\d+)/0", text).group(1))
        status, health = _get(f"http://127.0.0.1:{port}/v1/health")
        assert status == 200 and health["workers"]["count"] == 1
        started = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        started += [
            c.pid
            for c in psutil.process_iter(["cmdline"])
            if f"127.0.0.1:{redis_port}" in " ".join(c.info["cmdline"] or [])
        ]
        assert len(started) >= 3  # worker, its pool child, redis-server
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        out.close()
    time.sleep(0.2)
    assert [pid for pid in started if _running(pid)] == []


def test_worker_without_redis_url_is_a_usage_error(monkeypatch, capsys):
    monkeypatch.delenv("REDIS_URL", raising=False)
    assert main(["worker"]) == 2
    assert "REDIS_URL is not set" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["worker", "--queues", "fast"], "--queues takes proofs, batches"),
        (["worker", "--concurrency", "0"], "--concurrency must be at least 1"),
    ],
)
def test_worker_options_are_checked(monkeypatch, capsys, argv, fragment):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    assert main(argv) == 2
    assert fragment in capsys.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_serve_and_study_are_stopped_by_each_signal_even_if_ignored(signum):
    """`stopped_by_signals` (``serve``, ``study``) turns each into an interrupt.

    SIGINT starts ignored here, as in a background job; the handlers from
    before come back afterwards. SIGHUP is a closed terminal.
    """
    from service.stack import stopped_by_signals

    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {sig: signal.getsignal(sig) for sig in stops}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with pytest.raises(KeyboardInterrupt), stopped_by_signals():
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler interrupts this at once
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is before[signal.SIGTERM]
        assert signal.getsignal(signal.SIGHUP) is before[signal.SIGHUP]
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_sighup_stays_ignored_under_nohup():
    """``nohup patience serve`` asks to outlive the terminal: no handler then."""
    from service.stack import stopped_by_signals

    before = signal.getsignal(signal.SIGHUP)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stopped_by_signals():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: nothing happens
            assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGHUP, before)
