"""The study: many numbered deals proven on the workers, summed up in a report.

``patience study --game devils-grip --numbers 1-10000 --question score`` cuts
the deals into chunks and submits each chunk as a batch job through the API's
own submission path (`service.broker.submit_batch`), so the workers treat it
like any batch: every item is proven (or answered from the stored answer of an
identical proof, after a replay), and its answer is stored for the next one.

Why it is shaped this way:

- **Resumable.** The results file (JSON Lines, one deal per line, appended
  and flushed as each chunk arrives) is the study's memory: a restarted study
  reads it and submits only what is missing. The chunks in flight are listed
  in a pending file; a restart against the same Redis reattaches to those jobs
  instead of proving their deals again, and on Ctrl-C the answers a running
  chunk has already settled are salvaged from the answer cache.
- **Bounded.** Only about two chunks per worker process are queued at a time,
  so a study never floods the queues ahead of interactive proofs, and an
  interrupted study leaves little work behind. Against a shared Redis the
  window is re-measured as workers come and go, so adding ``patience worker``
  on more machines speeds up a running study.
- **Checkable.** The report replays every line in the file with the reference
  engine (`verifier.replay.replay`) instead of trusting the workers' checks,
  and says how many lines it replayed.

Without ``REDIS_URL`` the study starts an embedded Redis and a local worker
with ``--workers`` processes (as ``patience serve`` does); with it, it uses
the workers already running against that Redis.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import redis
from kombu.exceptions import OperationalError

from verifier.errors import InputError
from worker.jobs import NOT_REACHED, BatchJob, ProofJob
from worker.settings import Settings

from . import broker
from .broker import Service
from .stack import stopped_by_signals
from .study_plan import (
    LOAD_SAMPLE,
    Plan,
    StudyFiles,
    append_rows,
    check_budget,
    command_line,
    format_duration,
    is_done,
    load_rows,
    load_runs,
    make_plan,
    read_json,
    software_version,
    write_json,
)
from .study_report import percent, write_report

#: Chunks kept in flight per worker process: one running, one waiting, so a
#: process never idles between chunks.
CHUNKS_PER_PROCESS = 2
#: Seconds between polls of the chunks in flight.
POLL_SECONDS = 0.2
#: Seconds between re-counts of the worker processes (external workers only).
WINDOW_REFRESH = 30.0
#: Submissions of a deal whose chunk failed (worker lost, killed at its limit)
#: before it is written down as an error.
MAX_ATTEMPTS = 3
#: Seconds the study keeps retrying while Redis does not answer.
REDIS_PATIENCE = 120.0


# -- talking to the workers ----------------------------------------------------------
@dataclass
class Connection:
    """The service the study submits to, and how many worker processes serve it."""

    service: Service
    mode: str  # "embedded" or "external"
    processes: Callable[[], int]


def service_for(settings: Settings) -> Service:
    """Return a client `Service` (Celery client app and job store) for ``settings``."""
    from worker.celery_app import make_celery
    from worker.store import Store

    return Service(
        settings, make_celery(settings, role="client"), Store.from_settings(settings)
    )


def worker_processes(service: Service, timeout: float = 1.0) -> int:
    """Return the pool processes of every worker that answers (0 if none).

    The broadcast gets a connection of its own, closed right after: a pooled
    connection would keep a reply channel waiting on Redis, and every process
    forked later (a prover) would first block reading that socket in kombu's
    after-fork clean-up (5 s, the socket timeout) and steal its reply.
    """
    try:
        with service.celery.connection_for_write() as conn:
            inspect = service.celery.control.inspect(timeout=timeout, connection=conn)
            replies = inspect.stats() or {}
    except (OperationalError, redis.RedisError, OSError):
        return 0
    return sum(
        int(stats.get("pool", {}).get("max-concurrency", 1) or 1)
        for stats in replies.values()
    )


def _settings(env: dict[str, str]) -> Settings:
    try:
        return Settings.from_mapping(env)
    except ValueError as exc:
        raise InputError(f"bad PATIENCE_* setting: {exc}") from None


@contextlib.contextmanager
def connect(workers: int, log: IO[bytes] | None = None) -> Iterator[Connection]:
    """Yield a connection: ``REDIS_URL``'s workers, or a local stack of our own.

    The local stack is an embedded Redis and one worker with ``workers``
    processes; both are stopped on the way out, whatever happened.
    """
    if os.environ.get("REDIS_URL"):
        service = service_for(_settings(dict(os.environ)))
        yield Connection(service, "external", lambda: worker_processes(service))
        return
    from service.stack import embedded_stack

    if workers < 1:
        raise InputError("--workers must be at least 1")

    def settings_at(url: str) -> Settings:
        return _settings({**os.environ, "REDIS_URL": url})

    with embedded_stack(
        lambda url: settings_at(url).to_env(),
        workers,
        log=log,
        loglevel="WARNING",
        stop_timeout=2.0,  # an interrupted chunk was salvaged already
    ) as (url, worker):
        service = service_for(settings_at(url))
        worker.wait_ready(service.celery, timeout=60)
        yield Connection(service, "embedded", lambda: workers)


# -- running ----------------------------------------------------------------
@dataclass
class Chunk:
    """A batch job in flight: its record and the deals it proves, in order."""

    record: Any  # worker.store.JobRecord
    numbers: tuple[int, ...]
    keys: tuple[str, ...]  # submission keys, to salvage settled answers
    done: int = 0  # items finished, from the job's progress reports


@dataclass
class Tally:
    """What one run did, for the progress bar, the runs file and the tests."""

    submitted: list[int] = field(default_factory=list)
    reattached: list[int] = field(default_factory=list)
    stored: list[int] = field(default_factory=list)
    salvaged: list[int] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    interrupted: bool = False


class Study:
    """One run of a study: submit what is missing, store what arrives."""

    def __init__(
        self,
        plan: Plan,
        files: StudyFiles,
        connection: Connection,
        *,
        run_index: int = 0,
        on_row: Callable[[dict[str, Any]], None] | None = None,
        bar: ProgressBar | None = None,
    ) -> None:
        self.plan = plan
        self.files = files
        self.conn = connection
        self.service = connection.service
        self.run_index = run_index
        self.on_row = on_row
        self.bar = bar
        self.tally = Tally()
        self.inflight: dict[str, Chunk] = {}
        self.stored: set[int] = set()
        self.attempts: Counter[int] = Counter()
        self.began = time.monotonic()
        self._window = 0
        self._window_checked = -math.inf
        #: The machine's 1-minute load, sampled during the run (see `_sample`).
        self.loads: list[float] = []
        self._sampled = -math.inf

    # -- the loop ---------------------------------------------------------------
    def run(self) -> Tally:
        """Prove every missing deal of the plan; return what this run did."""
        check_budget(self.plan, self.service.settings)
        rows = load_rows(self.files.results)
        self.stored = {n for n, row in rows.items() if is_done(row, self.plan)}
        wanted = set(self.plan.numbers)
        self.stored &= wanted
        self._reattach()
        busy = {n for chunk in self.inflight.values() for n in chunk.numbers}
        todo = deque(n for n in self.plan.numbers if n not in self.stored | busy)
        try:
            while todo or self.inflight:
                self._fill(todo)
                self._poll(todo)
                self._draw()
                self._sample()
                if todo or self.inflight:
                    time.sleep(POLL_SECONDS)
        except KeyboardInterrupt:
            self.tally.interrupted = True
            self._salvage()
            raise
        finally:
            self._save_pending()
            if self.bar:
                self.bar.close(len(self.tally.stored), self.tally.statuses)
        return self.tally

    def _fill(self, todo: deque[int]) -> None:
        """Submit chunks until the window is full."""
        while todo and len(self.inflight) < self.window():
            numbers = [todo.popleft() for _ in range(min(self.plan.chunk, len(todo)))]
            self._retrying(lambda numbers=numbers: self._submit(numbers))
            self._save_pending()

    def window(self) -> int:
        """Return how many chunks may be in flight (re-measured now and then)."""
        now = time.monotonic()
        if now - self._window_checked >= WINDOW_REFRESH:
            self._window_checked = now
            processes = self.conn.processes()
            if processes == 0 and self._window == 0:
                print(
                    "warning: no worker answers; chunks wait in the queue until "
                    "one starts (patience worker)",
                    file=sys.stderr,
                )
            if processes:
                self._window = CHUNKS_PER_PROCESS * processes
        return max(1, self._window or CHUNKS_PER_PROCESS)

    def _submit(self, numbers: list[int]) -> None:
        request = {
            "game": self.plan.game,
            "question": self.plan.question.value,
            "engine": self.plan.engine,
            "time_limit": self.plan.time_limit,
            "items": [{"number": n} for n in numbers],
        }
        job = BatchJob.from_json(request, self.service.settings)
        submitted = broker.submit_batch(self.service, job)
        record = broker.get_record(self.service, submitted.view["id"])
        keys = tuple(item.key for item in job.items)
        self.inflight[record.id] = Chunk(record, tuple(numbers), keys)
        self.tally.submitted.extend(numbers)
        for n in numbers:
            self.attempts[n] += 1

    def _poll(self, todo: deque[int]) -> None:
        """Store the chunks that are done; requeue the deals of failed ones."""
        for chunk in list(self.inflight.values()):
            view = self._retrying(
                lambda c=chunk: broker.job_view(self.service, c.record)
            )
            if view["status"] == "done":
                self._store_items(chunk, view["result"]["items"], todo)
            elif view["status"] == "failed":
                self._failed(chunk, view["error"] or {}, todo)
            else:
                chunk.done = int((view["progress"] or {}).get("done", 0))
                continue
            del self.inflight[chunk.record.id]
            self._save_pending()

    def _store_items(
        self, chunk: Chunk, items: list[dict[str, Any]], todo: deque[int] | None
    ) -> None:
        """Store the chunk's answers; items its time never reached go back.

        They go back into ``todo`` (or, without one, stay unstored for the
        next run), up to `MAX_ATTEMPTS`, like the items of a failed chunk.
        """
        rows = []
        for item in items:
            number = chunk.numbers[item["index"]]
            if number in self.stored:
                continue  # salvaged or stored by an earlier run
            if not item["ok"] and item["error"].get("code") == NOT_REACHED:
                if todo is None or self._requeued(number, todo):
                    continue
            row = self._row(chunk, number)
            if item["ok"]:
                row.update(
                    result=item["result"], cached=item["cached"], start=item["start"]
                )
            else:
                row["error"] = item["error"]
            rows.append(row)
        self._append(rows)

    def _failed(self, chunk: Chunk, error: dict[str, Any], todo: deque[int]) -> None:
        """Keep what the chunk settled; retry the rest, or write it down as failed."""
        self._salvage_chunk(chunk)
        given_up = []
        for number in chunk.numbers:
            if number in self.stored or self._requeued(number, todo):
                continue
            given_up.append({**self._row(chunk, number), "error": error})
        self._append(given_up)

    def _requeued(self, number: int, todo: deque[int]) -> bool:
        """Put ``number`` back at the front of ``todo`` unless its attempts
        are spent; return whether it went back."""
        if self.attempts[number] >= MAX_ATTEMPTS:
            return False
        todo.appendleft(number)
        return True

    def _row(self, chunk: Chunk, number: int) -> dict[str, Any]:
        index = chunk.numbers.index(number)
        item = chunk.record.request["items"][index]
        return {
            "number": number,
            "game": self.plan.game,
            "question": self.plan.question.value,
            "engine": item.get("engine", self.plan.engine),
            "time_limit": item.get("time_limit", self.plan.time_limit),
            "job": chunk.record.id,
            "run": self.run_index,
            "at": round(time.monotonic() - self.began, 3),
        }

    def _append(self, rows: list[dict[str, Any]]) -> None:
        if not rows:
            return
        append_rows(self.files.results, rows)
        for row in rows:
            self.stored.add(row["number"])
            self.tally.stored.append(row["number"])
            status = row["result"]["status"] if "result" in row else "failed"
            self.tally.statuses[status] += 1
        for row in rows:
            if self.on_row:
                self.on_row(row)

    # -- resuming ---------------------------------------------------------------
    def _save_pending(self) -> None:
        pending = {
            job_id: list(chunk.numbers) for job_id, chunk in self.inflight.items()
        }
        if pending:
            write_json(self.files.pending, pending)
        else:
            self.files.pending.unlink(missing_ok=True)

    def _reattach(self) -> None:
        """Take over the chunks an interrupted run left in flight, if they exist.

        Against the same Redis their jobs kept running (or are done), so their
        deals are not submitted again; with a fresh Redis they are gone and
        their deals are simply missing.
        """
        pending = read_json(self.files.pending, {})
        for job_id, numbers in pending.items():
            if not set(numbers) - self.stored:
                continue
            record = self._retrying(lambda j=job_id: self.service.store.get_job(j))
            if record is None or record.kind != "batch":
                continue
            items = record.request.get("items", [])
            numbers = tuple(item["number"] for item in items)
            keys = tuple(self._key(item) for item in items)
            self.inflight[job_id] = Chunk(record, numbers, keys)
            self.tally.reattached.extend(n for n in numbers if n not in self.stored)

    def _key(self, item: dict[str, Any]) -> str:
        """Return the submission key of one item of a stored batch request."""
        return ProofJob.from_json(item, self.service.settings).key

    def _salvage(self) -> None:
        """Store the settled answers of the chunks in flight (on Ctrl-C)."""
        for chunk in list(self.inflight.values()):
            try:
                view = broker.job_view(self.service, chunk.record)
                if view["status"] == "done":
                    self._store_items(chunk, view["result"]["items"], None)
                    del self.inflight[chunk.record.id]
                else:
                    self._salvage_chunk(chunk)
            except (OperationalError, redis.RedisError, OSError):
                return  # Redis is gone: the pending file still names the chunks

    def _salvage_chunk(self, chunk: Chunk) -> None:
        """Store the answers the worker settled for a chunk that did not finish."""
        rows = []
        for number, key in zip(chunk.numbers, chunk.keys, strict=True):
            answer = self.service.store.get(key) if number not in self.stored else None
            if answer is not None:
                row = self._row(chunk, number)
                row.update(result=answer, cached=False, salvaged=True)
                rows.append(row)
                self.tally.salvaged.append(number)
        self._append(rows)

    # -- helpers ----------------------------------------------------------------
    def _retrying(self, call: Callable[[], Any]) -> Any:
        """Call ``call``, riding out a Redis restart for up to `REDIS_PATIENCE` s."""
        deadline = time.monotonic() + REDIS_PATIENCE
        while True:
            try:
                return call()
            except (OperationalError, redis.RedisError, OSError) as exc:
                if time.monotonic() > deadline:
                    raise InputError(f"Redis does not answer: {exc}") from None
                print(f"warning: Redis: {exc}; retrying", file=sys.stderr)
                time.sleep(1.0)

    def _sample(self) -> None:
        """Record the load every `LOAD_SAMPLE` s: timings mean little without it."""
        now = time.monotonic()
        if now - self._sampled >= LOAD_SAMPLE:
            self._sampled = now
            self.loads.append(os.getloadavg()[0])

    def _draw(self) -> None:
        if self.bar:
            running = sum(chunk.done for chunk in self.inflight.values())
            self.bar.update(len(self.tally.stored), running, self.tally.statuses)


# -- progress ----------------------------------------------------------------
class ProgressBar:
    """Progress on standard error: a bar on a terminal, a line now and then else."""

    def __init__(self, total: int, already: int, stream: IO[str] | None = None) -> None:
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()
        self.total, self.already = total, already
        self.began = time.monotonic()
        self.last = 0.0
        self.line = ""

    def update(self, new: int, running: int, statuses: Counter[str]) -> None:
        """Redraw: ``new`` stored by this run, ``running`` done in running chunks."""
        now = time.monotonic()
        if now - self.last < (0.25 if self.tty else 15.0):
            return
        self.last = now
        self.line = self.text(new, running, statuses, now - self.began)
        if self.tty:
            print("\r" + self.line.ljust(110), end="", file=self.stream, flush=True)
        else:
            print(self.line, file=self.stream, flush=True)

    def text(
        self, new: int, running: int, statuses: Counter[str], seconds: float
    ) -> str:
        """Return the progress line: bar, counts, rate, ETA, verdicts so far."""
        done = self.already + new
        share = done / max(1, self.total)
        filled = int(24 * share)
        bar = "#" * filled + "." * (24 - filled)
        rate = (new + running) / seconds if seconds > 0 else 0.0
        left = self.total - done - running
        eta = format_duration(left / rate) if rate > 0 else "?"
        counts = " ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
        return (
            f"[{bar}] {done}/{self.total} {100 * share:5.1f}% "
            f"{rate:.2f} deals/s ETA {eta}  {counts}"
        )

    def close(self, new: int, statuses: Counter[str]) -> None:
        """Draw the final state and end the bar's line."""
        self.last = -math.inf
        self.update(new, 0, statuses)
        if self.tty:
            print(file=self.stream, flush=True)


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_study(
    plan: Plan,
    files: StudyFiles,
    connection: Connection,
    *,
    workers: int | None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
    show_progress: bool = False,
) -> Tally:
    """Run (or resume) a study and record the run in the runs file."""
    runs = load_runs(files, plan)
    wanted = set(plan.numbers)
    rows = load_rows(files.results)
    already = sum(is_done(row, plan) for n, row in rows.items() if n in wanted)
    run = {
        "run": len(runs["runs"]),
        "command": command_line(plan, workers),
        "mode": connection.mode,
        "processes": connection.processes(),
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "already_stored": already,
        "load_start": _load(),
        "cores": os.cpu_count(),
        "version": software_version(),
    }
    runs["runs"].append(run)
    write_json(files.runs, runs)
    bar = ProgressBar(len(plan.numbers), already) if show_progress else None
    study = Study(plan, files, connection, run_index=run["run"], on_row=on_row, bar=bar)
    began = time.monotonic()
    try:
        return study.run()
    finally:
        tally = study.tally
        run.update(
            ended=datetime.now(UTC).isoformat(timespec="seconds"),
            wall=round(time.monotonic() - began, 3),
            submitted=len(tally.submitted),
            reattached=len(tally.reattached),
            stored=len(tally.stored),
            salvaged=len(tally.salvaged),
            interrupted=tally.interrupted,
            load_end=_load(),
            load_mean=round(statistics.fmean(study.loads or [_load()[0]]), 2),
        )
        write_json(files.runs, runs)


# -- the command ----------------------------------------------------------------
def main(args: argparse.Namespace) -> int:
    """Run ``patience study``: prove what is missing, then write the report."""
    plan = make_plan(
        args.game, args.numbers, args.question, args.engine, args.time_limit, args.chunk
    )
    files = StudyFiles(Path(args.out), plan.stem)
    if not args.report_only:
        workers = None if os.environ.get("REDIS_URL") else args.workers
        try:
            with stopped_by_signals(), tempfile.TemporaryFile() as log:
                with connect(args.workers, log) as conn:
                    tally = run_study(
                        plan, files, conn, workers=workers, show_progress=True
                    )
        except KeyboardInterrupt:
            print(
                f"\ninterrupted: results so far are in {files.results}; "
                "run the same command to resume",
                file=sys.stderr,
            )
            raise
        print(
            f"this run: {len(tally.submitted)} deals submitted, "
            f"{len(tally.reattached)} reattached, {len(tally.stored)} stored",
            file=sys.stderr,
        )
    summary = write_report(plan, files)
    low, high = summary.win_interval()
    print(
        f"{summary.won} won, {summary.lost} lost, {summary.open} open of "
        f"{summary.deals}; win rate {percent(summary.won, summary.deals)} "
        f"(Wilson 95 % {100 * low:.2f}–{100 * high:.2f} %)"
    )
    print(f"report: {files.report}; results: {files.results}")
    if summary.check.failures:
        print(
            f"{len(summary.check.failures)} lines FAILED their replay", file=sys.stderr
        )
        return 1
    return 0
