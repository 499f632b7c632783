"""Load script (not a test): N jobs from C concurrent clients, over real HTTP.

    python -m service.loadtest --n 200 --clients 8
    python -m service.loadtest --n 200 --clients 8 --url http://127.0.0.1:8000

Without ``--url`` it starts its own stack (embedded Redis, one worker with
``--concurrency`` processes, the API on a free port) and stops it afterwards.
Each client submits a job, polls it until it is done or failed, and moves on;
latency is submission to the first poll that sees the answer (polls every
``--poll`` seconds, so that is the resolution). Proofs are numbered deals
``--first``, ``--first + 1``, ... so no two are identical submissions.

Prints throughput, p50/p99 latency, the outcome counts and **lost jobs**:
submitted (202) but never answered before ``--deadline`` — which must be 0.
Exits with 1 when a job was lost or a submission refused (``http 4xx``), so
a wrong ``--url`` cannot pass for a quiet run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tally:
    """What the clients saw, shared between their threads."""

    latencies: list[float] = field(default_factory=list)
    outcomes: Counter[str] = field(default_factory=Counter)
    lost: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Set on an interrupt: the clients leave their jobs and stop.
    stop: threading.Event = field(default_factory=threading.Event)


def _call(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _body(args: argparse.Namespace, index: int) -> tuple[str, dict[str, Any]]:
    if args.kind == "deals":
        return "/v1/deals", {"count": 1, "seed": args.first + index}
    body = {"number": args.first + index, "time_limit": args.time_limit}
    if args.engine:
        body["engine"] = args.engine
    return "/v1/proofs", body


def _one_job(args: argparse.Namespace, index: int, tally: Tally) -> None:
    path, body = _body(args, index)
    began = time.monotonic()
    status, job = _call(args.url + path, body)
    if status not in (200, 202):
        with tally.lock:
            tally.outcomes[f"http {status}"] += 1
        return
    location = args.url + job["links"]["self"]
    deadline = began + args.deadline
    while job["status"] not in ("done", "failed"):
        if tally.stop.is_set():
            return
        if time.monotonic() > deadline:
            with tally.lock:
                tally.lost.append(job["id"])
            return
        time.sleep(args.poll)
        status, job = _call(location)
    latency = time.monotonic() - began
    outcome = job["status"]
    if outcome == "done" and args.kind == "proofs":
        outcome = job["result"]["result"]["status"]
    with tally.lock:
        tally.latencies.append(latency)
        tally.outcomes[outcome] += 1


def run_load(args: argparse.Namespace) -> Tally:
    """Run ``args.n`` jobs from ``args.clients`` threads; return the tally."""
    tally = Tally()
    counter = iter(range(args.n))
    lock = threading.Lock()

    def client() -> None:
        while not tally.stop.is_set():
            with lock:
                index = next(counter, None)
            if index is None:
                return
            _one_job(args, index, tally)

    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            t.join()
    except KeyboardInterrupt:
        # Stop the clients while the service still answers (their call in
        # flight ends), so that none is left calling a stack being stopped.
        tally.stop.set()
        for t in threads:
            t.join()
        raise
    return tally


def percentile(values: list[float], q: float) -> float:
    """Return the ``q``-th percentile (0..100) by linear interpolation."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


def report(args: argparse.Namespace, tally: Tally, wall: float) -> str:
    """Return the printed summary."""
    lat = sorted(tally.latencies)
    lines = [
        f"jobs: {args.n} {args.kind} from {args.clients} clients against {args.url}",
        f"wall time: {wall:.2f} s; throughput: {len(lat) / wall:.2f} jobs/s",
    ]
    if lat:
        lines.append(
            f"latency: p50 {percentile(lat, 50):.3f} s, p99 "
            f"{percentile(lat, 99):.3f} s, max {lat[-1]:.3f} s"
        )
    outcomes = ", ".join(f"{k} {v}" for k, v in sorted(tally.outcomes.items()))
    lines.append(f"answers: {outcomes or 'none'}")
    lines.append(f"lost jobs (submitted, never answered): {len(tally.lost)}")
    return "\n".join(lines)


@contextmanager
def _own_stack(concurrency: int) -> Iterator[str]:
    """Start Redis, a worker and the API; yield the URL; stop them on the way out.

    Redis and the worker are `service.stack.embedded_stack`'s, as ``study``'s
    are: stopped even if this process is SIGKILLed, and after a start that
    failed (a worker that never got ready).
    """
    from service.app import create_app
    from service.stack import ServerThread, embedded_stack

    with (
        open(os.devnull, "wb") as log,
        embedded_stack(
            lambda url: {"REDIS_URL": url}, concurrency, log=log, loglevel="WARNING"
        ) as (url, worker),
    ):
        app = create_app({"REDIS_URL": url})
        worker.wait_ready(app.extensions["patience"].celery, timeout=60)
        server = ServerThread(app, quiet=True).start()
        try:
            yield server.url
        finally:
            server.stop()


def service_url(url: str) -> str:
    """Return the service's base URL: ``serve`` prints ``.../v1``, the paths
    here start with ``/v1``, so a trailing ``/v1`` (or slash) is dropped."""
    return url.rstrip("/").removesuffix("/v1")


def refused(tally: Tally) -> int:
    """Return how many submissions the service answered with an HTTP error."""
    return sum(n for k, n in tally.outcomes.items() if k.startswith("http "))


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the load, print the figures; exit 1 if jobs got lost
    or refused.

    SIGTERM and SIGHUP stop a run as Ctrl-C does (`stopped_by_signals`), so
    its own stack is always stopped; an interrupted run exits with 130.
    """
    from service.stack import stopped_by_signals

    p = argparse.ArgumentParser(prog="python -m service.loadtest")
    p.add_argument("--n", type=int, default=100, help="jobs to submit")
    p.add_argument("--clients", type=int, default=8, help="concurrent clients")
    p.add_argument("--url", help="a running service (default: start one)")
    p.add_argument("--kind", choices=("proofs", "deals"), default="proofs")
    p.add_argument("--first", type=int, default=1, help="first deal number / seed")
    p.add_argument("--time-limit", type=float, default=2.0, help="per proof")
    p.add_argument("--engine", help="prover engine (default: auto)")
    p.add_argument("--poll", type=float, default=0.05, help="poll interval, s")
    p.add_argument("--deadline", type=float, default=300.0, help="per job, s")
    p.add_argument(
        "--concurrency", type=int, default=os.cpu_count() or 1, help="own worker"
    )
    args = p.parse_args(argv)
    if args.url:
        stack = nullcontext(service_url(args.url))
    else:
        stack = _own_stack(args.concurrency)
    try:
        with stopped_by_signals(), stack as url:
            args.url = url
            began = time.monotonic()
            tally = run_load(args)
            wall = time.monotonic() - began
    except KeyboardInterrupt:
        print("interrupted: no figures", file=sys.stderr)
        return 130
    print(report(args, tally, wall))
    return 1 if tally.lost or refused(tally) else 0


if __name__ == "__main__":
    sys.exit(main())
