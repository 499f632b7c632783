"""The plan of a study and its files: which deals, which question, where it is written.

A study is identified by its plan (game, deal numbers, question, engine, time
limit, chunk size); its results file (JSON Lines) and runs file (one record
per command that ran it) belong to that plan and refuse to be mixed with
another. Both the runner (`service.study`) and the report
(`service.study_report`) read them through this module.
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patience_encodings.engines import AUTO, check_engine, settles
from verifier import formats
from verifier.errors import InputError
from verifier.registry import get_game
from verifier.results import ProofResult, Question, check_question
from verifier.version import version
from worker.jobs import ITEM_OVERHEAD
from worker.settings import Settings

#: Largest study one command may ask for.
MAX_DEALS = 1_000_000
DEFAULT_TIME_LIMIT = 60.0
DEFAULT_CHUNK = 10
#: Seconds between samples of the machine's load during a run.
LOAD_SAMPLE = 10.0


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
    try:
        numbers = formats.parse_numbers(spec, limit=MAX_DEALS)
    except InputError as exc:
        raise InputError(f"--numbers: {exc.message}") from None
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
    check_question(the_game, asked)
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


def write_json(path: Path, data: Any) -> None:
    """Replace ``path`` atomically (a kill never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def read_json(path: Path, default: Any) -> Any:
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
    versions = {"patience-prover": version()}
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
    runs = read_json(files.runs, None)
    if runs is None:
        return {"study": plan.identity(), "runs": []}
    if runs.get("study") != plan.identity():
        raise InputError(
            f"{files.runs} belongs to another study ({runs.get('study')}); "
            "use another --out directory or the same options"
        )
    return runs


def format_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"
