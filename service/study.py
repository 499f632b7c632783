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
import importlib.metadata
import json
import math
import os
import platform
import shlex
import signal
import statistics
import subprocess
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

from patience_encodings.bench import percentile
from patience_encodings.engines import AUTO, settles
from verifier.errors import InputError, PatienceError
from verifier.formats import start_from_number
from verifier.registry import get_game
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status
from worker.jobs import ITEM_OVERHEAD, BatchJob, ProofJob, check_engine
from worker.settings import Settings

from . import broker
from .broker import Service

#: Chunks kept in flight per worker process: one running, one waiting, so a
#: process never idles between chunks.
CHUNKS_PER_PROCESS = 2
#: Seconds between polls of the chunks in flight.
POLL_SECONDS = 0.2
#: Seconds between re-counts of the worker processes (external workers only).
WINDOW_REFRESH = 30.0
#: Seconds between samples of the machine's load during a run.
LOAD_SAMPLE = 10.0
#: Submissions of a deal whose chunk failed (worker lost, killed at its limit)
#: before it is written down as an error.
MAX_ATTEMPTS = 3
#: Seconds the study keeps retrying while Redis does not answer.
REDIS_PATIENCE = 120.0
#: Largest study one command may ask for.
MAX_DEALS = 1_000_000
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_CHUNK = 10
#: Bicycle's grades of a lost game's score, per game (best first): a deal
#: whose best score is at most the bound earns the grade.
GRADES: dict[str, tuple[tuple[str, int], ...]] = {
    "devils-grip": (("brilliant", 2), ("excellent", 5), ("good", 10)),
}
#: Bar colour of proven scores beyond every grade.
OTHER_COLOUR = "#888888"
#: What a game's score counts, for the report's words.
SCORE_UNITS: dict[str, str] = {"devils-grip": "cards left in the talon"}


# -- the plan ----------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """What a study proves: which deals, which question, with what."""

    game: str
    numbers: tuple[int, ...]
    spec: str
    question: Question
    engine: str = AUTO
    time_limit: float = DEFAULT_TIME_LIMIT
    chunk: int = DEFAULT_CHUNK

    @property
    def stem(self) -> str:
        """Return the file stem, e.g. ``devils-grip-1-10000-score``."""
        label = self.spec.replace(",", "_")
        return f"{self.game}-{label}-{self.question.value}"

    def identity(self) -> dict[str, Any]:
        """Return what a resumed study must share with the first run."""
        return {
            "game": self.game,
            "numbers": self.spec,
            "question": self.question.value,
            "engine": self.engine,
        }


def parse_numbers(spec: str) -> tuple[tuple[int, ...], str]:
    """Return the deal numbers of ``1-100,250`` (sorted, unique) and the spec.

    The normalised spec (no spaces) names the study's files, so the same
    command always finds its own results again.
    """
    spec = spec.replace(" ", "")
    numbers: set[int] = set()
    for part in spec.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise InputError(
                f"--numbers takes ranges like 1-10000 or 1-20,50, not {spec!r}"
            )
        first, last = int(lo), int(hi) if sep else int(lo)
        if first > last:
            raise InputError(f"--numbers: empty range {part!r}")
        if last - first + 1 + len(numbers) > MAX_DEALS:
            raise InputError(f"--numbers: at most {MAX_DEALS} deals per study")
        numbers.update(range(first, last + 1))
    return tuple(sorted(numbers)), spec


def make_plan(
    game: str | None,
    numbers: str,
    question: str = "verdict",
    engine: str = AUTO,
    time_limit: float = DEFAULT_TIME_LIMIT,
    chunk: int = DEFAULT_CHUNK,
) -> Plan:
    """Validate a study's options into a `Plan`; bad ones raise `InputError`."""
    the_game = get_game(game)
    asked = Question(question)
    if asked is Question.SCORE and not the_game.has_score:
        raise InputError(f"{the_game.name} has no score: use --question verdict")
    check_engine(the_game.name, engine)
    if not math.isfinite(time_limit) or time_limit <= 0:
        raise InputError("--time-limit must be a positive number of seconds")
    if chunk < 1:
        raise InputError("--chunk must be at least 1")
    parsed, spec = parse_numbers(numbers)
    return Plan(the_game.name, parsed, spec, asked, engine, time_limit, chunk)


# -- files ----------------------------------------------------------------
@dataclass(frozen=True)
class StudyFiles:
    """Where a study keeps its results, runs, pending chunks and report."""

    directory: Path
    stem: str

    def path(self, suffix: str) -> Path:
        """Return ``<directory>/<stem><suffix>``."""
        return self.directory / f"{self.stem}{suffix}"

    @property
    def results(self) -> Path:
        return self.path(".jsonl")

    @property
    def runs(self) -> Path:
        return self.path(".runs.json")

    @property
    def pending(self) -> Path:
        return self.path(".pending.json")

    @property
    def report(self) -> Path:
        return self.path(".md")

    @property
    def plot(self) -> Path:
        return self.path(".png")


def load_rows(path: Path) -> dict[int, dict[str, Any]]:
    """Return the stored rows by deal number (the last row of a number wins).

    A line that does not parse (the study was killed mid-write) is skipped:
    its deal simply counts as missing and is proven again.
    """
    rows: dict[int, dict[str, Any]] = {}
    if not path.exists():
        return rows
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(row, dict) and isinstance(row.get("number"), int):
                rows[row["number"]] = row
    return rows


def append_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Append rows and force them to disk, after cutting off a torn last line."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _cut_torn_tail(path)
    with path.open("a", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, separators=(",", ":")) + "\n")
        out.flush()
        os.fsync(out.fileno())


def _cut_torn_tail(path: Path) -> None:
    """Drop a last line without its newline, so the next row starts clean."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as data:
        data.seek(-1, os.SEEK_END)
        if data.read(1) == b"\n":
            return
        data.seek(0)
        keep = data.read().rfind(b"\n") + 1
        data.truncate(keep)


def _write_json(path: Path, data: Any) -> None:
    """Replace ``path`` atomically (a kill never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path, default: Any) -> Any:
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return default


def is_done(row: dict[str, Any], plan: Plan) -> bool:
    """Return whether a stored row answers the plan, so it is not proven again.

    A settled answer always does. An unsettled one does unless this run allows
    more time per deal than it had: raising ``--time-limit`` retries exactly
    the deals that ran out of time. Error rows are always retried.
    """
    if "result" not in row:
        return False
    if settles(ProofResult.from_json(row["result"]), plan.question):
        return True
    return float(row.get("time_limit", 0)) >= plan.time_limit


def check_budget(plan: Plan, settings: Settings) -> None:
    """Refuse a plan whose chunks the service would refuse, in the CLI's words.

    A batch job may take at most ``max_job_seconds``; a chunk needs up to its
    time limits added up (plus a little per item).
    """
    if plan.time_limit > settings.max_time_limit:
        raise InputError(
            f"--time-limit {plan.time_limit:g} exceeds the service's limit of "
            f"{settings.max_time_limit:g} s per proof (PATIENCE_MAX_TIME_LIMIT)"
        )
    budget = plan.chunk * (plan.time_limit + ITEM_OVERHEAD)
    if budget > settings.max_job_seconds:
        raise InputError(
            f"a chunk of {plan.chunk} deals at {plan.time_limit:g} s each needs up "
            f"to {budget:g} s, more than the {settings.max_job_seconds:g} s a job "
            "may take (PATIENCE_MAX_JOB_SECONDS): lower --chunk or --time-limit"
        )


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
    from service.embedded import EmbeddedRedis
    from service.stack import WorkerProcess

    if workers < 1:
        raise InputError("--workers must be at least 1")
    embedded = EmbeddedRedis()
    worker = None
    try:
        settings = _settings({**os.environ, "REDIS_URL": embedded.start()})
        service = service_for(settings)
        worker = WorkerProcess(
            settings.to_env(), workers, log=log, loglevel="WARNING"
        ).start()
        worker.wait_ready(service.celery, timeout=60)
        yield Connection(service, "embedded", lambda: workers)
    finally:
        if worker:
            worker.stop(timeout=2.0)  # an interrupted chunk was salvaged already
        embedded.close()


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
                self._store_items(chunk, view["result"]["items"])
            elif view["status"] == "failed":
                self._failed(chunk, view["error"] or {}, todo)
            else:
                chunk.done = int((view["progress"] or {}).get("done", 0))
                continue
            del self.inflight[chunk.record.id]
            self._save_pending()

    def _store_items(self, chunk: Chunk, items: list[dict[str, Any]]) -> None:
        rows = []
        for item in items:
            number = chunk.numbers[item["index"]]
            if number in self.stored:
                continue  # salvaged or stored by an earlier run
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
            if number in self.stored:
                continue
            if self.attempts[number] < MAX_ATTEMPTS:
                todo.appendleft(number)
            else:
                given_up.append({**self._row(chunk, number), "error": error})
        self._append(given_up)

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
            _write_json(self.files.pending, pending)
        else:
            self.files.pending.unlink(missing_ok=True)

    def _reattach(self) -> None:
        """Take over the chunks an interrupted run left in flight, if they exist.

        Against the same Redis their jobs kept running (or are done), so their
        deals are not submitted again; with a fresh Redis they are gone and
        their deals are simply missing.
        """
        pending = _read_json(self.files.pending, {})
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
                    self._store_items(chunk, view["result"]["items"])
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
        eta = _duration(left / rate) if rate > 0 else "?"
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


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


# -- runs ----------------------------------------------------------------
def command_line(plan: Plan, workers: int | None) -> str:
    """Return the canonical command that runs (or resumes) this study."""
    argv = [
        "patience",
        "study",
        "--game",
        plan.game,
        "--numbers",
        plan.spec,
        "--question",
        plan.question.value,
        "--engine",
        plan.engine,
        "--time-limit",
        f"{plan.time_limit:g}",
        "--chunk",
        str(plan.chunk),
    ]
    if workers is not None:
        argv += ["--workers", str(workers)]
    return shlex.join(argv)


def software_version() -> dict[str, str]:
    """Return the versions a reader needs to reproduce the figures."""
    versions = {"patience-prover": _version("patience-prover")}
    commit = _git("rev-parse", "--short", "HEAD")
    if commit:
        dirty = _git("diff-index", "--quiet", "HEAD", "--", check=False) is None
        versions["commit"] = commit + (" (with local changes)" if dirty else "")
    versions["python"] = platform.python_version()
    for package in ("python-sat", "z3-solver", "celery"):
        versions[package] = _version(package)
    return versions


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _git(*argv: str, check: bool = True) -> str | None:
    """Run a read-only git command in the source tree; None when it fails."""
    try:
        done = subprocess.run(
            ["git", *argv],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.strip() if check else ""


def load_runs(files: StudyFiles, plan: Plan) -> dict[str, Any]:
    """Return the runs file, refusing to mix two different studies in one file."""
    runs = _read_json(files.runs, None)
    if runs is None:
        return {"study": plan.identity(), "runs": []}
    if runs.get("study") != plan.identity():
        raise InputError(
            f"{files.runs} belongs to another study ({runs.get('study')}); "
            "use another --out directory or the same options"
        )
    return runs


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
    _write_json(files.runs, runs)
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
        _write_json(files.runs, runs)


# -- the report ----------------------------------------------------------------
def wilson(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Return the Wilson score interval of a binomial proportion.

    Chosen over the normal approximation because it stays inside [0, 1] and
    is honest for proportions near 0, which is where wins live.
    """
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = (z / (1 + z2 / trials)) * math.sqrt(
        p * (1 - p) / trials + z2 / (4 * trials * trials)
    )
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Recheck:
    """The report's own replay of every line in the results."""

    won: int = 0  # won lines replayed to a win
    scored: int = 0  # lost lines replayed to stuck with their best score
    failures: tuple[str, ...] = ()


def recheck(
    game_name: str,
    rows: list[dict[str, Any]],
    start_of: Callable[[int], Any] | None = None,
) -> Recheck:
    """Replay every line with the reference engine; name each one that fails.

    ``start_of`` maps a row's number to its starting state; by default the
    numbered deal, rebuilt here from the number alone (not taken from the
    workers), so a line is checked against the deal the study is about.
    """
    game = get_game(game_name)
    start_of = start_of or (lambda number: start_from_number(game, number).state)
    won = scored = 0
    failures = []
    for row in rows:
        result = row.get("result")
        if not result or not result.get("line"):
            continue
        try:
            moves = game.parse_moves("\n".join(result["line"]))
        except PatienceError as exc:
            failures.append(f"deal {row['number']}: unreadable line: {exc.message}")
            continue
        outcome = replay(game, start_of(row["number"]), moves)
        claim = result["status"]
        if claim == Status.WON and outcome.ok and outcome.won:
            won += 1
        elif (
            claim != Status.WON
            and result.get("best_score") is not None
            and outcome.ok
            and outcome.stuck
            and outcome.score == result["best_score"]
        ):
            scored += 1
        else:
            failures.append(
                f"deal {row['number']}: claimed {claim} "
                f"(best score {result.get('best_score')}), replay: {outcome.verdict()}"
            )
    return Recheck(won, scored, tuple(failures))


@dataclass(frozen=True)
class Summary:
    """The figures of a study, computed from its results file."""

    plan: Plan
    deals: int
    won: int
    lost: int  # proven lost
    unknown: int  # not settled in time (or a verdict not proven)
    failed: int  # the job failed (error rows)
    missing: int  # no row yet
    scores: dict[int, int]  # proven best score -> deals (wins score 0)
    #: (proven lower bound, best score found) of each deal without a proven
    #: best score, missing deals included; None where nothing is known.
    open_scores: tuple[tuple[int | None, int | None], ...]
    times: tuple[float, ...]
    methods: dict[str, int]
    check: Recheck

    @property
    def open(self) -> int:
        """Return the deals whose verdict is not known (unknown, failed, missing)."""
        return self.unknown + self.failed + self.missing

    def win_interval(self) -> tuple[float, float]:
        """Return the Wilson 95 % interval, open deals as losses / as wins."""
        low, _ = wilson(self.won, self.deals)
        _, high = wilson(self.won + self.open, self.deals)
        return low, high

    def at_most(self, bound: int) -> int:
        """Return the deals whose proven best score is at most ``bound``."""
        return sum(count for score, count in self.scores.items() if score <= bound)

    def found(self) -> dict[int, int]:
        """Return best score found (not proven optimal) -> deals."""
        found = Counter(best for _, best in self.open_scores if best is not None)
        return dict(sorted(found.items()))

    def grade_bounds(self, bound: int) -> tuple[int, int]:
        """Return how many deals surely / possibly have a best score <= ``bound``.

        Surely: a proven score, or a line found that already reaches it (the
        best can only be lower). Possibly: also every open deal whose proven
        lower bound does not exclude it.
        """
        sure = self.at_most(bound)
        maybe = sure
        for lower, best in self.open_scores:
            if best is not None and best <= bound:
                sure += 1
                maybe += 1
            elif lower is None or lower <= bound:
                maybe += 1
        return sure, maybe


def summarise(plan: Plan, rows: dict[int, dict[str, Any]]) -> Summary:
    """Return the figures of the plan's deals from the stored rows."""
    chosen = [rows[n] for n in plan.numbers if n in rows]
    counts: Counter[str] = Counter()
    scores: Counter[int] = Counter()
    methods: Counter[str] = Counter()
    open_scores: list[tuple[int | None, int | None]] = []
    for row in chosen:
        if "result" not in row:
            counts["failed"] += 1
            open_scores.append((None, None))
            continue
        result = ProofResult.from_json(row["result"])
        kind = result.status.value if result.proven else "unknown"
        counts[kind] += 1
        if result.status is Status.WON:
            scores[0] += 1
        elif result.score_proven and result.best_score is not None:
            scores[result.best_score] += 1
        else:
            open_scores.append((result.lower_bound, result.best_score))
        if result.proven:
            methods[f"{result.status.value}: {result.engine}: {_method(result)}"] += 1
    times = tuple(sorted(r["result"]["elapsed"] for r in chosen if "result" in r))
    open_scores += [(None, None)] * (len(plan.numbers) - len(chosen))
    return Summary(
        plan=plan,
        deals=len(plan.numbers),
        won=counts["won"],
        lost=counts["lost"],
        unknown=counts["unknown"],
        failed=counts["failed"],
        missing=len(plan.numbers) - len(chosen),
        scores=dict(sorted(scores.items())),
        open_scores=tuple(open_scores),
        times=times,
        methods=dict(methods.most_common()),
        check=recheck(plan.game, chosen),
    )


def _method(result: ProofResult) -> str:
    """Return the kind of proof, without the per-deal figures in brackets."""
    return result.method.split("(")[0].strip().rstrip(":;,") or "-"


def _pct(part: float, whole: float, digits: int = 2) -> str:
    return f"{100 * part / whole:.{digits}f} %" if whole else "-"


def render_report(summary: Summary, runs: dict[str, Any], plot_name: str | None) -> str:
    """Return the study's report in Markdown."""
    plan = summary.plan
    title = get_game(plan.game).title
    lines = [f"# {title}: deals {plan.spec}, {plan.question.value} question", ""]
    lines += _headline(summary) + [""]
    lines += _verdict_section(summary) + [""]
    lines += _score_section(summary, plot_name) + [""]
    lines += _check_section(summary) + [""]
    lines += _time_section(summary, runs) + [""]
    lines += _reproduce_section(runs, plan)
    return "\n".join(lines).rstrip() + "\n"


def _headline(s: Summary) -> list[str]:
    low, high = s.win_interval()
    text = (
        f"**{s.won} of {s.deals} deals can be won "
        f"({_pct(s.won, s.deals)}; Wilson 95 % interval "
        f"{100 * low:.2f} %–{100 * high:.2f} %).**"
    )
    if s.plan.question is Question.SCORE and not s.open_scores:
        text += f" Median best score: {_median_score(s)}."
        grades = GRADES.get(s.plan.game, ())
        text += "".join(
            f" {_pct(s.at_most(bound), s.deals, 1)} {name} (≤ {bound})."
            for name, bound in grades
        )
    elif s.plan.question is Question.SCORE:
        text += (
            f" Best scores proven for {s.deals - len(s.open_scores)} of "
            f"{s.deals} deals."
        )
    if s.open:
        text += (
            f" Not settled: {s.unknown} unknown, {s.failed} failed, "
            f"{s.missing} not yet proven."
        )
    return [text]


def _median_score(s: Summary) -> str:
    values = [score for score, count in s.scores.items() for _ in range(count)]
    return f"{percentile([float(v) for v in values], 0.5):g}" if values else "-"


def _verdict_section(s: Summary) -> list[str]:
    low, high = s.win_interval()
    rows = [
        ("won (line attached and replayed)", s.won),
        ("lost (proven: no winning line exists)", s.lost),
        ("unknown (not settled within the time limit)", s.unknown),
        ("failed (the job failed)", s.failed),
        ("missing (not proven yet)", s.missing),
    ]
    out = ["## Verdicts", "", "| verdict | deals | share |", "|---|---:|---:|"]
    out += [f"| {name} | {n} | {_pct(n, s.deals)} |" for name, n in rows if n]
    out += [f"| **all** | **{s.deals}** | |", ""]
    out.append(
        f"Winnability: {s.won}/{s.deals} = {_pct(s.won, s.deals, 3)}. Wilson 95 % "
        f"interval: {100 * low:.3f} % – {100 * high:.3f} % (unknown, failed and "
        "missing deals counted as losses for the lower bound and as wins for the "
        "upper bound)."
    )
    return out


def _score_section(s: Summary, plot_name: str | None) -> list[str]:
    unit = SCORE_UNITS.get(s.plan.game, "score")
    out = ["## Best scores", ""]
    if s.plan.question is not Question.SCORE:
        out.append(
            "This study asked for verdicts only, so no best score of a lost deal is "
            "proven; run it with `--question score` for the distribution."
        )
        return out
    out.append(
        f"The best score is the fewest {unit} that perfect play reaches "
        "(a win scores 0); every score below is proven optimal: a line reaching it "
        "is attached and no line does better."
    )
    if plot_name:
        out += ["", f"![Distribution of best scores]({plot_name})"]
    out += ["", *_score_table(s)]
    grades = GRADES.get(s.plan.game)
    if grades:
        out += ["", "Bicycle's grades (of all deals; a win counts as brilliant):", ""]
        if s.open_scores:
            out += ["| grade | best score | deals | share | possibly |"]
            out += ["|---|---:|---:|---:|---:|"]
        else:
            out += ["| grade | best score | deals | share |", "|---|---:|---:|---:|"]
        for name, bound in grades:
            sure, maybe = s.grade_bounds(bound)
            row = f"| {name} | ≤ {bound} | {sure} | {_pct(sure, s.deals)} |"
            out.append(row + (f" {_pct(maybe, s.deals)} |" if s.open_scores else ""))
        if s.open_scores:
            out += [
                "",
                "*deals*: proven to reach the grade (a proven best score, or a line "
                "found that reaches it); *possibly*: also the open deals whose proven "
                "lower bound does not rule it out.",
            ]
    return out


def _score_table(s: Summary) -> list[str]:
    """Return the table of proven best scores, with best-found ones apart."""
    found = s.found()
    head = "| best score | deals (proven) | share | cumulative |"
    rule = "|---:|---:|---:|---:|"
    if found:
        head += " best found, not proven |"
        rule += "---:|"
    out = [head, rule]
    total = 0
    for score in sorted(set(s.scores) | set(found)):
        count = s.scores.get(score, 0)
        total += count
        line = (
            f"| {score} | {count} | {_pct(count, s.deals)} | {_pct(total, s.deals)} |"
        )
        out.append(line + (f" {found.get(score, 0)} |" if found else ""))
    if s.open_scores:
        nothing = len(s.open_scores) - sum(found.values())
        out += [
            "",
            f"{len(s.open_scores)} deals have no proven best score: "
            f"{sum(found.values())} with a line found (its score is an upper bound, "
            f"column *best found*), {nothing} without any (unknown, failed or "
            "missing).",
        ]
    return out


def _check_section(s: Summary) -> list[str]:
    c = s.check
    out = ["## Checking", ""]
    out.append(
        f"The report replayed every line in the results file with the reference "
        f"rules engine (`verifier.replay.replay`): {c.won} winning lines ended won "
        f"(of {s.won} won deals), {c.scored} best-score lines ended stuck with "
        f"exactly their score; {len(c.failures)} failed."
    )
    out += [f"- FAILED {failure}" for failure in c.failures]
    if s.methods:
        out += ["", "How the verdicts were proven:", ""]
        out += ["| verdict: engine: method | deals |", "|---|---:|"]
        out += [f"| {m} | {n} |" for m, n in s.methods.items()]
    return out


def _time_section(s: Summary, runs: dict[str, Any]) -> list[str]:
    out = ["## Time", ""]
    if s.times:
        t = list(s.times)
        out.append(
            f"Time per deal (prover time in the worker, portfolio start and replay "
            f"included): median {percentile(t, 0.5):.3f} s, p90 "
            f"{percentile(t, 0.9):.3f} s, max {t[-1]:.3f} s; "
            f"time limit {s.plan.time_limit:g} s per deal."
        )
    done = [r for r in runs.get("runs", []) if r.get("wall")]
    stored = sum(r.get("stored", 0) for r in done)
    wall = sum(r["wall"] for r in done)
    if wall:
        out.append(
            f"Throughput: {stored} deals stored in {_duration(wall)} of wall time "
            f"over {len(done)} run(s): **{stored / wall:.2f} deals per second**."
        )
    out += [
        "",
        "| run | started (UTC) | mode | worker processes | deals stored | wall "
        "| deals/s | load (1 min): start, mean, end |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for r in done:
        rate = r["stored"] / r["wall"] if r["wall"] else 0.0
        out.append(
            f"| {r['run']} | {r['started']} | {r['mode']} | {r['processes']} "
            f"| {r['stored']} | {_duration(r['wall'])} | {rate:.2f} "
            f"| {r['load_start'][0]}, {r.get('load_mean', '?')}, "
            f"{r.get('load_end', ['?'])[0]} |"
        )
    cores = sorted({str(r.get("cores", "?")) for r in done})
    out.append("")
    out.append(
        f"Load is the 1-minute load average of the machine running the study "
        f"({'/'.join(cores)} cores), sampled every {LOAD_SAMPLE:g} s; where it "
        "exceeds the cores, other work shared them and the timings are on the "
        "slow side."
    )
    return out


def _reproduce_section(runs: dict[str, Any], plan: Plan) -> list[str]:
    all_runs = runs.get("runs", [])
    out = ["## Reproduce", ""]
    out.append(
        f"Raw results: `{plan.stem}.jsonl`, one JSON object per deal (its "
        "`number`, the proof `result` exactly as the worker returned it — status, "
        "proven, engine, best score, line, method, elapsed — and the `job` and "
        f"`run` that stored it); `{plan.stem}.runs.json` records every run "
        "(command, workers, wall time, load, versions)."
    )
    out.append("")
    if not all_runs:
        return out
    last = all_runs[-1]
    out += ["```", last["command"], "```", ""]
    out.append(
        "The same command resumes an interrupted study; with `REDIS_URL` set it "
        "uses the workers running against that Redis (`patience worker`), without "
        "it an embedded Redis and a local worker with `--workers` processes."
    )
    out += ["", f"Date: {last.get('ended') or last['started']}.", ""]
    out += ["Software:", ""]
    out += [f"- {name}: {value}" for name, value in last["version"].items()]
    if len(all_runs) > 1:
        out += ["", "Commands of every run:", ""]
        out += [f"- run {r['run']}: `{r['command']}`" for r in all_runs]
    return out


def write_plot(summary: Summary, path: Path) -> bool:
    """Draw the distribution of best scores as a PNG; False if there is none.

    Proven scores are coloured by Bicycle's grade; best scores found but not
    proven optimal are stacked on top, hatched grey, so the two are never
    mistaken for each other.
    """
    found = summary.found()
    if not summary.scores and not found:
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    grades = GRADES.get(summary.plan.game, ())
    colours = ("#1b7837", "#5aae61", "#a6dba0")
    xs = list(range(0, max([*summary.scores, *found]) + 1))
    proven = [summary.scores.get(x, 0) for x in xs]
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=110)
    ax.bar(xs, proven, color=[_colour(x, grades, colours) for x in xs])
    handles = [Patch(color=c) for c in colours[: len(grades)]]
    names = [f"proven, {g} (≤ {b})" for g, b in grades]
    handles.append(Patch(color=OTHER_COLOUR))
    names.append("proven" if not grades else "proven, other")
    if found:
        tops = [x for x in xs if found.get(x)]
        style = {"facecolor": "#dddddd", "hatch": "//", "edgecolor": "#999999"}
        upper = [found[x] for x in tops]
        ax.bar(tops, upper, bottom=[summary.scores.get(x, 0) for x in tops], **style)
        handles.append(Patch(**style))
        names.append("best found, not proven optimal")
    title = get_game(summary.plan.game).title
    ax.set_title(
        f"{title}: best scores of deals {summary.plan.spec} "
        f"({sum(proven)} proven of {summary.deals})"
    )
    unit = SCORE_UNITS.get(summary.plan.game, "score")
    ax.set_xlabel(f"best score ({unit}; 0 = won)")
    ax.set_ylabel("deals")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(handles, names, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def _colour(score: int, grades: Any, colours: tuple[str, ...]) -> str:
    for (_, bound), colour in zip(grades, colours, strict=False):
        if score <= bound:
            return colour
    return OTHER_COLOUR


def write_report(plan: Plan, files: StudyFiles) -> Summary:
    """Summarise the results file and write the Markdown report and plot."""
    summary = summarise(plan, load_rows(files.results))
    runs = load_runs(files, plan)
    plotted = plan.question is Question.SCORE and write_plot(summary, files.plot)
    text = render_report(summary, runs, files.plot.name if plotted else None)
    files.report.parent.mkdir(parents=True, exist_ok=True)
    files.report.write_text(text, encoding="utf-8")
    return summary


# -- the command ----------------------------------------------------------------
def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main(args: argparse.Namespace) -> int:
    """Run ``patience study``: prove what is missing, then write the report."""
    plan = make_plan(
        args.game, args.numbers, args.question, args.engine, args.time_limit, args.chunk
    )
    files = StudyFiles(Path(args.out), plan.stem)
    if not args.report_only:
        workers = None if os.environ.get("REDIS_URL") else args.workers
        previous = signal.signal(signal.SIGTERM, _raise_interrupt)
        try:
            with tempfile.TemporaryFile() as log, connect(args.workers, log) as conn:
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
        finally:
            signal.signal(signal.SIGTERM, previous)
        print(
            f"this run: {len(tally.submitted)} deals submitted, "
            f"{len(tally.reattached)} reattached, {len(tally.stored)} stored",
            file=sys.stderr,
        )
    summary = write_report(plan, files)
    low, high = summary.win_interval()
    print(
        f"{summary.won} won, {summary.lost} lost, {summary.open} open of "
        f"{summary.deals}; win rate {_pct(summary.won, summary.deals)} "
        f"(Wilson 95 % {100 * low:.2f}–{100 * high:.2f} %)"
    )
    print(f"report: {files.report}; results: {files.results}")
    if summary.check.failures:
        print(
            f"{len(summary.check.failures)} lines FAILED their replay", file=sys.stderr
        )
        return 1
    return 0
