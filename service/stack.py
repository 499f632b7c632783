"""Starting and stopping the parts of the service: Redis, workers, the API.

`patience serve`, the load script and the tests all use these, so the one
command and the tests run the same processes the same way. A worker is a
separate process in its own session (process group), so it can be stopped
— or killed with SIGKILL, prover processes and all — as one unit.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

from celery import Celery
from werkzeug.serving import BaseWSGIServer, WSGIRequestHandler, make_server

from service.app import error_body, error_code
from worker.celery_app import QUEUES

#: Seconds a worker gets for a warm shutdown before it is killed.
WORKER_STOP_TIMEOUT = 10.0


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[None]:
    """Raise KeyboardInterrupt on SIGTERM, SIGINT and SIGHUP inside the block.

    SIGTERM (a service manager's stop, ``kill``) must shut down as cleanly
    as Ctrl-C. SIGINT is set too because a shell without job control starts
    a background command with SIGINT ignored, and Python then leaves it
    ignored: Ctrl-C (or ``kill -INT``) would not stop it. SIGHUP is a closed
    terminal or SSH session: without a handler Python dies at once and the
    worker (in its own session) and Redis are left running -- unless SIGHUP
    is ignored (``nohup``), which is the user asking to outlive the terminal,
    so it stays ignored. The handlers before the block come back after it.
    """
    stops = [signal.SIGTERM, signal.SIGINT]
    if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:
        stops.append(signal.SIGHUP)
    previous = {sig: signal.signal(sig, signal.default_int_handler) for sig in stops}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def ignore_stops() -> None:
    """Ignore the stopping signals, so a second one cannot cut a clean-up short."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)


def guard(lifeline: Any, embedded: Any = None, worker: Any = None) -> None:
    """Name an embedded Redis (its process, its directories) and a worker
    (its process group) to ``lifeline`` (`service.lifeline.Lifeline`), so
    that they are stopped even if their owner dies without a clean-up."""
    if embedded is not None and embedded.pid:
        lifeline.watch_process(embedded.pid)
        for path in embedded.owned_paths():
            lifeline.watch_path(path)
    if worker is not None and worker.proc is not None:
        lifeline.watch_group(worker.proc.pid)  # its own session: pgid == pid


class WorkerProcess:
    """A ``patience worker`` child process (prefork pool)."""

    def __init__(
        self,
        env: Mapping[str, str],
        concurrency: int = 2,
        queues: tuple[str, ...] = QUEUES,
        log: IO[Any] | None = None,
        loglevel: str = "INFO",
    ) -> None:
        self.env = {**os.environ, **env}
        self.concurrency = concurrency
        self.queues = queues
        self.log = log
        self.loglevel = loglevel
        self.name = f"patience-{uuid.uuid4().hex[:8]}@%h"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> WorkerProcess:
        """Start the worker in a new session."""
        command = [
            sys.executable,
            "-m",
            "service.cli",
            "worker",
            "--concurrency",
            str(self.concurrency),
            "--queues",
            ",".join(self.queues),
            "--loglevel",
            self.loglevel,
            "--name",
            self.name,
        ]
        self.proc = subprocess.Popen(
            command,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT if self.log else None,
            start_new_session=True,
        )
        return self

    def wait_ready(self, celery: Celery, timeout: float = 30.0) -> None:
        """Wait until this worker answers a ping; raise if it dies or times out."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is None or self.proc.poll() is not None:
                raise RuntimeError("the worker process exited during start-up")
            try:
                # Its own connection (see `service.broker.health`).
                with celery.connection_for_write() as conn:
                    replies = celery.control.ping(timeout=0.5, connection=conn) or []
            except Exception:  # broker not reachable yet: try again
                replies = []
            host = self.name.split("@")[0]
            if any(name.startswith(host + "@") for r in replies for name in r):
                return
        raise TimeoutError(f"worker {self.name} not ready after {timeout:g} s")

    def stop(self, timeout: float = WORKER_STOP_TIMEOUT) -> None:
        """Warm shutdown (SIGTERM); kill the whole group if it takes too long.

        A job cut short this way is not lost: its message is unacknowledged
        (late acks) and goes back to the queue.
        """
        if self.proc is None or self.proc.poll() is not None:
            self.kill()  # reap what may be left of its group
            return
        try:
            os.kill(self.proc.pid, signal.SIGTERM)  # the main process stops its pool
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        """Kill the worker and every process of its group with SIGKILL."""
        if self.proc is None:
            return
        self._signal(signal.SIGKILL)
        self.proc.wait()

    def _signal(self, sig: int) -> None:
        assert self.proc is not None
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass


class JsonErrorHandler(WSGIRequestHandler):
    """A request handler whose own errors are the API's JSON error body.

    Some requests never reach the app: a request line over 64 KiB (414),
    headers too large (431), a malformed request line (400). Python's
    `http.server` answers those itself with an HTML page; a client of a JSON
    API should get ``{"error": {"code", "message"}}`` there too.
    """

    def send_error(
        self, code: int, message: str | None = None, explain: str | None = None
    ) -> None:
        short, long = self.responses.get(code, ("Error", ""))
        self.log_error("code %d, message %s", code, message or short)
        self.close_connection = True
        self.send_response(code, message or short)
        self.send_header("Connection", "close")
        if code < 200 or code in (204, 205, 304):  # no body allowed
            self.end_headers()
            return
        text = explain or long or message or short
        body = json.dumps(error_body(error_code(short), text)).encode()
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if getattr(self, "command", None) != "HEAD":
            self.wfile.write(body)


class _QuietHandler(JsonErrorHandler):
    """A request handler that keeps no access log (for the load script)."""

    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


@contextlib.contextmanager
def embedded_stack(
    worker_env: Callable[[str], Mapping[str, str]],
    concurrency: int,
    *,
    log: IO[Any] | None = None,
    loglevel: str = "INFO",
    stop_timeout: float = WORKER_STOP_TIMEOUT,
) -> Iterator[tuple[str, WorkerProcess]]:
    """Start an embedded Redis and a worker on it; yield its URL and the worker.

    ``worker_env`` gives the worker's environment from the Redis URL. Both
    are named to a lifeline (`guard`), so they are stopped even if this
    process is SIGKILLed, and both are stopped on the way out whatever
    happened, a start that failed half-way included. The worker is not
    waited for: the caller does, with its own Celery app (`wait_ready`).
    """
    from service.embedded import EmbeddedRedis
    from service.lifeline import Lifeline

    embedded = EmbeddedRedis()
    worker = None
    lifeline = Lifeline().start()
    try:
        url = embedded.start()
        guard(lifeline, embedded)
        worker = WorkerProcess(
            worker_env(url), concurrency, log=log, loglevel=loglevel
        ).start()
        guard(lifeline, worker=worker)
        yield url, worker
    finally:
        if worker:
            worker.stop(timeout=stop_timeout)
        embedded.close()
        lifeline.release()


class ServerThread:
    """The API on a threaded werkzeug server, served from a background thread."""

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, quiet: bool = False
    ) -> None:
        handler = _QuietHandler if quiet else JsonErrorHandler
        self.server: BaseWSGIServer = make_server(
            host, port, app, threaded=True, request_handler=handler
        )
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Return the base URL, e.g. ``http://127.0.0.1:8000``."""
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> ServerThread:
        """Start serving."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)
