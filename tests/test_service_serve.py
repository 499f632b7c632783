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
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from service_helpers import running, start_serve

from service.cli import main


def _get(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _start_serve(tmp_path) -> tuple[subprocess.Popen, int, list[int], str]:
    """Start ``patience serve`` as a background job; return it, its port, the
    processes it started (worker, pool child, redis-server, lifeline) and its
    output once it is up."""
    proc, port = start_serve(tmp_path / "serve.out", background=True)
    text = (tmp_path / "serve.out").read_text()
    redis_port = int(re.search(r"redis://127\.0\.0\.1:(\d+)/0", text).group(1))
    started = [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
    started += [
        c.pid
        for c in psutil.process_iter(["cmdline"])
        if f"127.0.0.1:{redis_port}" in " ".join(c.info["cmdline"] or [])
    ]
    assert len(started) >= 4  # worker, its pool child, lifeline, redis-server
    return proc, port, started, text


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    """Return the processes of ``pids`` still running after ``seconds``."""
    deadline = time.monotonic() + seconds
    while (alive := [pid for pid in pids if running(pid)]) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.1)
    return alive


def test_serve_starts_everything_and_ctrl_c_stops_everything(tmp_path):
    """Also when started in the background: Ctrl-C must still stop it."""
    proc, port, started, _ = _start_serve(tmp_path)
    try:
        status, health = _get(f"http://127.0.0.1:{port}/v1/health")
        assert status == 200 and health["workers"]["count"] == 1
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    assert _gone_within(started, 2) == []


def test_serve_killed_with_sigkill_leaves_nothing_running(tmp_path):
    """No handler runs on SIGKILL: the lifeline sees its pipe close and stops
    the worker (its own session) and the daemonized Redis, and deletes the
    embedded Redis's directories."""
    proc, _, started, _ = _start_serve(tmp_path)
    redis = [pid for pid in started if "redis-server" in psutil.Process(pid).name()]
    (server,) = redis
    files = [Path(f.path).parent for f in psutil.Process(server).open_files()]
    files = [path for path in files if "patience-redis-" in str(path)]
    assert files, "the embedded Redis keeps its data in a directory of its own"
    proc.kill()
    proc.wait(timeout=10)
    assert _gone_within(started, 30) == []
    assert not any(path.exists() for path in files)


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


@pytest.mark.parametrize("command", ["worker", "serve"])
def test_a_bad_core_count_stops_the_worker_before_it_starts(
    monkeypatch, capsys, command
):
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("PATIENCE_CORES", "none")
    assert main([command]) == 2
    assert "PATIENCE_CORES='none'" in capsys.readouterr().err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_serve_and_study_are_stopped_by_each_signal_even_if_ignored(signum):
    """`stopped_by_signals` (``serve``, ``study``) turns each into an interrupt.

    SIGINT starts ignored here, as in a background job; the handlers from
    before come back afterwards. SIGHUP is a closed terminal; it starts at
    its default here whatever the test run inherited (under ``nohup`` it is
    ignored, and then stays so: `test_sighup_stays_ignored_under_nohup`).
    """
    from service.stack import stopped_by_signals

    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    before = {sig: signal.getsignal(sig) for sig in stops}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    try:
        with pytest.raises(KeyboardInterrupt), stopped_by_signals():
            os.kill(os.getpid(), signum)
            time.sleep(5)  # the handler interrupts this at once
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        assert signal.getsignal(signal.SIGTERM) is before[signal.SIGTERM]
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
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


def test_lifeline_reads_its_targets_in_order_and_done_releases_them():
    from service.lifeline import read_targets

    lines = ["process 5\n", "group 7\n", "path /tmp/x\n", "forget 5\n", "bogus\n"]
    assert read_targets(lines) == [("group", "7"), ("path", "/tmp/x")]
    assert read_targets(["group 7\n", "done\n", "process 9\n"]) is None


def _sleeper() -> subprocess.Popen:
    return subprocess.Popen(["sleep", "60"], start_new_session=True)


def test_a_lifeline_whose_owner_goes_stops_the_targets_and_one_released_does_not(
    tmp_path,
):
    """Its pipe closing without ``done`` is what the owner's death looks like
    from the other end: the watched group is stopped, the directory deleted.
    After ``done`` nothing is touched."""
    from service.lifeline import Lifeline

    doomed, spared = _sleeper(), _sleeper()
    leftover = tmp_path / "leftover"
    leftover.mkdir()
    try:
        lifeline = Lifeline().start()
        lifeline.watch_group(doomed.pid)
        lifeline.watch_path(leftover)
        lifeline.proc.stdin.close()  # as if the owner died
        assert lifeline.proc.wait(timeout=15) == 0
        assert doomed.wait(timeout=5) == -signal.SIGTERM
        assert not leftover.exists()

        released = Lifeline().start()
        released.watch_process(spared.pid)
        released.release()
        with pytest.raises(subprocess.TimeoutExpired):
            spared.wait(timeout=1)  # still alive a second after the release
    finally:
        for proc in (doomed, spared):
            proc.kill()
            proc.wait()
