"""Jobs: what a request asks for, validated, and the plain functions that run it.

The API parses a request here to reject bad input with a 4xx before anything
is queued; the worker parses the same JSON again from the message. One parser
for both sides means they never disagree about what is valid. Nothing here
knows Celery, Flask or Redis: the answer cache and progress reports come in as
small callables, so the functions are tested like any other code.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from patience_encodings import cases, certificates, generate
from patience_encodings.engines import AUTO, ENGINES, check_engine, settles, solve
from patience_encodings.registry import DEAL_GENERATORS
from verifier.errors import InputError, PatienceError, UnsupportedError
from verifier.fields import (
    check_fields,
    expect_object,
    get_choice,
    get_integer,
    get_number,
    get_string,
)
from verifier.formats import Start, start_from_json
from verifier.registry import DEFAULT_GAME, get_game
from verifier.results import (
    ProofResult,
    Question,
    ResultCheckError,
    Status,
    check_question,
    check_result,
)
from verifier.version import version

from .settings import Settings

QUESTIONS = tuple(q.value for q in Question)
#: Accepted difficulties: the graded generator's (`patience_encodings.generate`).
DIFFICULTIES = generate.DIFFICULTIES
START_KEYS = ("deal", "position", "number")
DEFAULT_TIME_LIMIT = 10.0
MIN_TIME_LIMIT = cases.MIN_TIME_LIMIT
MAX_DEALS = 1000
MAX_ITEMS = 1000
#: Budget estimates (seconds) for jobs without a time limit of their own.
#: A graded deal is constructed, graded and proven (SAT): median 0.46 s, p90
#: 0.71 s measured on a loaded machine (`docs/grades.md`).
SECONDS_PER_DEAL = 1.5
ITEM_OVERHEAD = 0.2
#: The error code of a batch item the batch's time limit never reached.
NOT_REACHED = "not_reached"

Progress = Callable[[dict[str, Any]], None]


class AnswerCache(Protocol):
    """Settled answers by submission key (a Redis hash in the service)."""

    def get(self, key: str) -> dict[str, Any] | None: ...

    def put(self, key: str, answer: dict[str, Any]) -> None: ...


def error_json(exc: Exception) -> dict[str, str]:
    """Return the API's structured form of an error a job can meet.

    Input errors carry their own code; a line that the reference engine
    rejects (`ResultCheckError`) is a prover bug, reported as ``check_failed``.
    """
    if isinstance(exc, PatienceError):
        return {"code": exc.code, "message": exc.message}
    if isinstance(exc, ResultCheckError):
        return {"code": "check_failed", "message": str(exc)}
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}"}


def prefixed(exc: PatienceError, prefix: str) -> PatienceError:
    """Return ``exc`` with its message prefixed (e.g. by ``items[3]: ``)."""
    return type(exc)(f"{prefix}{exc.message}", code=exc.code)


# -- proofs ----------------------------------------------------------------
PROOF_FIELDS = ("game", *START_KEYS, "question", "engine", "time_limit")


@dataclass(frozen=True)
class ProofJob:
    """Prove one deal or position: ``{game, deal|position|number, question, ...}``."""

    game: str
    start_field: str  # which of START_KEYS was given
    start_value: Any  # its value, as given
    question: Question
    engine: str
    time_limit: float
    start: Start = field(compare=False, repr=False, default=None)  # type: ignore[assignment]

    @classmethod
    def from_json(
        cls,
        data: Any,
        settings: Settings,
        defaults: Mapping[str, Any] | None = None,
    ) -> ProofJob:
        """Validate a proof request; ``defaults`` supply fields a batch sets once."""
        data = {**(defaults or {}), **expect_object(data, "a proof request")}
        check_fields(data, [*PROOF_FIELDS, "kind"], "a proof request")
        get_choice(data, "kind", ("proof",), "proof")  # a batch item's kind, if given
        game = get_game(get_string(data, "game", DEFAULT_GAME))
        given = [k for k in START_KEYS if data.get(k) is not None]
        # A number with its own deal is what `patience deal --json` prints.
        if len(given) != 1 and given != ["deal", "number"]:
            raise InputError(
                "give exactly one of 'deal', 'position' or 'number' "
                f"(got {', '.join(given) or 'none'})"
            )
        start = start_from_json({"game": game.name} | {k: data[k] for k in given})
        start_field = given[-1]  # "number" when both: its deal was checked
        question, time_limit, engine = _options(data, settings)
        check_question(game, question)
        check_engine(game.name, engine)
        return cls(
            game.name,
            start_field,
            data[start_field],
            question,
            engine,
            time_limit,
            start,
        )

    def to_json(self) -> dict[str, Any]:
        """Return the request as the worker receives it."""
        return {
            "game": self.game,
            self.start_field: self.start_value,
            "question": self.question.value,
            "engine": self.engine,
            "time_limit": self.time_limit,
        }

    @property
    def budget(self) -> float:
        """Return the seconds this job may take (before the margins)."""
        return self.time_limit

    @property
    def key(self) -> str:
        """Return the submission key: same game, position, question, engine.

        The key names the installed version too: it also keys the answer
        cache, whose proven dead ends are trusted without a new proof, so an
        upgrade (a fixed prover) must not be answered by the old one.
        """
        game = self.start.game
        canonical = {
            "version": version(),
            "game": game.name,
            "position": game.position_to_json(self.start.state),
            "question": self.question.value,
            "engine": self.engine,
        }
        text = json.dumps(canonical, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def run_proof(job: ProofJob, answers: AnswerCache | None = None) -> dict[str, Any]:
    """Prove ``job``, or return the stored answer of an identical submission.

    A stored answer is replayed again before it is returned: the cache is a
    shortcut around the provers, never around the checker.
    """
    start = job.start
    stored = answers.get(job.key) if answers else None
    if stored is not None:
        result = check_result(start.game, start.state, ProofResult.from_json(stored))
        cached = True
    else:
        result = solve(
            start, question=job.question, engine=job.engine, time_limit=job.time_limit
        )
        cached = False
        if answers and settles(result, job.question):
            answers.put(job.key, result.to_json())
    return {
        "game": job.game,
        "start": start.describe(),
        "position": start.game.position_to_json(start.state),
        "result": result.to_json(),
        "cached": cached,
    }


# -- certificates of proven dead ends ------------------------------------------------
CERTIFICATE_FIELDS = ("proof", "game", "position", "result", "seconds")
#: Seconds a worker spends on one DRAT certificate; a claim that takes longer
#: is refused (``patience certify`` on the command line has no such cap).
CERTIFICATE_SECONDS = 60.0


def certificate_seconds(settings: Settings) -> float:
    """Return the certificate cap of a deployment: `CERTIFICATE_SECONDS`, or
    ``max_job_seconds`` if lower. A certificate job is made by the API, never
    submitted, so it cannot be refused for its size as a batch is; it is cut
    to fit instead, because the broker's visibility timeout is checked
    against ``max_job_seconds`` only (a longer job would be delivered twice)."""
    return min(CERTIFICATE_SECONDS, settings.max_job_seconds)


def certificate_key(proof_id: str, seconds: float) -> str:
    """Return the submission key of a proof's certificate job.

    It names the installed version, like a proof's key, and the cap: an
    upgraded encoding, or a cap raised since, is asked again rather than
    answered by the old refusal.
    """
    return f"certificate:{version()}:{seconds:g}:{proof_id}"


@dataclass(frozen=True)
class CertificateJob:
    """Make the DRAT certificate of a proof job's proven dead end.

    The request carries the proof's position and result, not just its id, so
    the worker needs nothing else from the store; the result is only a claim
    here, which `certificates.certify_result` checks again (a false one is
    refused, never certified).
    """

    proof: str  # the proof job's id: one certificate job per proof
    game: str
    position: dict[str, Any]
    result: ProofResult
    start: Start = field(compare=False, repr=False, default=None)  # type: ignore[assignment]
    seconds: float = CERTIFICATE_SECONDS  # the API's cap: the message's, the key's
    limit: float = CERTIFICATE_SECONDS  # the run's: ``seconds``, or this worker's cap

    @classmethod
    def of_proof(
        cls, proof_id: str, value: Mapping[str, Any], settings: Settings
    ) -> CertificateJob:
        """Return the certificate job of a done proof job's ``value``, capped
        by ``settings`` (the API's; the message carries the cap to the worker,
        so a worker configured otherwise still fits the API's time limits)."""
        request = {name: value[name] for name in ("game", "position", "result")}
        request |= {"proof": proof_id, "seconds": certificate_seconds(settings)}
        return cls.from_json(request, settings)

    @classmethod
    def from_json(cls, data: Any, settings: Settings) -> CertificateJob:
        """Validate a certificate request (the API builds it from a done proof)."""
        data = expect_object(data, "a certificate request")
        check_fields(data, CERTIFICATE_FIELDS, "a certificate request")
        proof = get_string(data, "proof", "")
        game = get_game(get_string(data, "game", DEFAULT_GAME))
        start = start_from_json({"game": game.name, "position": data.get("position")})
        claim = expect_object(data.get("result"), "'result'")
        try:
            result = ProofResult.from_json(claim)
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"'result' is not a proof result: {exc}") from None
        certificates.check_certifiable(game.name)
        cap = certificate_seconds(settings)
        seconds = get_number(data, "seconds", cap, 0.1, CERTIFICATE_SECONDS)
        limit = min(seconds, cap)
        return cls(proof, game.name, data["position"], result, start, seconds, limit)

    def to_json(self) -> dict[str, Any]:
        """Return the request as the worker receives it."""
        return {
            "proof": self.proof,
            "game": self.game,
            "position": self.position,
            "result": self.result.to_json(),
            "seconds": self.seconds,
        }

    @property
    def budget(self) -> float:
        """Return the seconds this job may take (before the margins)."""
        return self.limit

    @property
    def key(self) -> str:
        """Return the submission key: one certificate job per proof and cap.

        The API's cap, as the message carries it: a worker configured with a
        lower one must still find the key the API wrote, or it would take
        every job for superseded.
        """
        return certificate_key(self.proof, self.seconds)


def run_certificate(job: CertificateJob) -> dict[str, Any]:
    """Return the certificate bundle of ``job``'s claim, within the time cap.

    The proof runs in a child process that is killed at the cap (CaDiCaL
    cannot be interrupted), so a hard claim ends as a clear refusal rather
    than a worker stuck past its time limit.
    """
    return certificates.certify_within(job.start, job.result, job.limit)


# -- guaranteed-winnable deals -------------------------------------------------------
DEALS_FIELDS = ("game", "count", "difficulty", "seed")


@dataclass(frozen=True)
class DealsJob:
    """Generate ``count`` guaranteed-winnable deals from ``seed``."""

    game: str
    count: int
    difficulty: str
    seed: int

    @classmethod
    def from_json(cls, data: Any, settings: Settings) -> DealsJob:
        """Validate a deals request; a missing seed is drawn here, once."""
        data = expect_object(data, "a deals request")
        check_fields(data, DEALS_FIELDS, "a deals request")
        game = get_game(get_string(data, "game", DEFAULT_GAME))
        if game.name not in DEAL_GENERATORS:
            raise UnsupportedError(f"no deal generator for {game.name} yet")
        count = get_integer(data, "count", 1, 1, MAX_DEALS)
        difficulty = get_choice(data, "difficulty", DIFFICULTIES, "any")
        top = generate.MAX_SEED - count + 1  # deal i comes from seed + i
        seed = get_integer(data, "seed", secrets.randbelow(top + 1), 0, top)
        job = cls(game.name, count, difficulty, seed)
        if job.budget > settings.max_job_seconds:
            raise InputError(f"'count' {count} is too large for one job")
        return job

    def to_json(self) -> dict[str, Any]:
        """Return the request as the worker receives it (seed included)."""
        return {
            "game": self.game,
            "count": self.count,
            "difficulty": self.difficulty,
            "seed": self.seed,
        }

    @property
    def budget(self) -> float:
        """Return the seconds this job may take (before the margins)."""
        return 1.0 + SECONDS_PER_DEAL * self.count


def generate_deal(game_name: str, difficulty: str, seed: int) -> dict[str, Any]:
    """Return one winnable deal of ``difficulty``: graded, proven, line checked.

    This is the one place the generator is called; its line is replayed here
    once more before it leaves the worker.
    """
    game = get_game(game_name)
    made = DEAL_GENERATORS[game.name](seed, difficulty).to_json()
    notation = tuple(made["line"])
    claim = ProofResult(
        Status.WON, True, "construct", best_score=0, line=notation, method="built"
    )
    deal = game.deal_from_list(made["deal"])
    check_result(game, game.initial_state(deal), claim)
    return {**made, "seed": seed, "difficulty": difficulty}


def run_deals(job: DealsJob, progress: Progress | None = None) -> dict[str, Any]:
    """Generate the deals of ``job``; deal ``i`` comes from seed ``seed + i``."""
    deals = []
    if progress:
        progress({"done": 0, "total": job.count})
    for i in range(job.count):
        deals.append(generate_deal(job.game, job.difficulty, job.seed + i))
        if progress:
            progress({"done": i + 1, "total": job.count})
    return {"game": job.game, "seed": job.seed, "deals": deals}


# -- batches ----------------------------------------------------------------
BATCH_FIELDS = ("game", "question", "engine", "time_limit", "items", "cases")
ITEM_DEFAULTS = ("game", "question", "engine", "time_limit")
#: The batch defaults a case takes (its claim is its question).
CASE_DEFAULTS = ("game", "engine", "time_limit")


def _parse_proof_item(
    data: Any, settings: Settings, defaults: Mapping[str, Any]
) -> ProofJob:
    return ProofJob.from_json(data, settings, defaults)


@dataclass(frozen=True)
class CaseJob:
    """One edge case (`patience_encodings.cases`): a position and a claim."""

    case: cases.Case
    raw: dict[str, Any]

    @classmethod
    def from_json(
        cls, data: Any, settings: Settings, defaults: Mapping[str, Any]
    ) -> CaseJob:
        """Validate ``{"kind": "case", "case": {...a case-file mapping...}}``."""
        check_fields(data, ("kind", "case"), "a case item")
        raw = expect_object(data.get("case"), "'case'")
        # The batch's game, engine and time limit apply where the case sets none.
        raw = {k: defaults[k] for k in CASE_DEFAULTS if k in defaults} | raw
        # Checked once, against what this service accepts (not the provers' cap).
        case = cases.parse_case(raw, max_time_limit=settings.max_time_limit)
        return cls(case, raw | {"game": case.start.game.name})

    def to_json(self) -> dict[str, Any]:
        """Return the item as the worker receives it."""
        return {"kind": "case", "case": self.raw}

    @property
    def budget(self) -> float:
        """Seconds the case may take: a proof's limit, or nothing for rules."""
        proves = self.case.claim in ("winnable", "dead", "best_score")
        return self.case.time_limit if proves else 0.0

    def run(self) -> dict[str, Any]:
        """Check the claim; return the verdict and its evidence."""
        return {"case": cases.run_case(self.case).to_json()}


def _parse_case_item(
    data: Any, settings: Settings, defaults: Mapping[str, Any]
) -> CaseJob:
    return CaseJob.from_json(data, settings, defaults)


def _cases_from_file(text: Any, defaults: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Expand a case file's text (YAML or JSON Lines) into batch items."""
    if not isinstance(text, str):
        raise InputError("'cases' must be the text of a case file (YAML or JSON Lines)")
    raw, game = cases.raw_cases(text, source="cases")
    game = game or defaults.get("game")
    return [
        {"kind": "case", "case": ({"game": game} if game else {}) | item}
        if isinstance(item, dict)
        else {"kind": "case", "case": item}
        for item in raw
    ]


BatchItem = ProofJob | CaseJob

#: Item kind -> parser. A batch item is ``{"kind": ..., ...}``; "proof" is the
#: default kind.
ITEM_KINDS: dict[str, Callable[[Any, Settings, Mapping[str, Any]], BatchItem]] = {
    "proof": _parse_proof_item,
    "case": _parse_case_item,
}


@dataclass(frozen=True)
class BatchJob:
    """Many proofs in one job, with per-item results and progress."""

    items: tuple[BatchItem, ...]

    @classmethod
    def from_json(cls, data: Any, settings: Settings) -> BatchJob:
        """Validate a batch; errors name the item, e.g. ``items[3]: ...``.

        ``items`` lists proofs and cases; ``cases`` is the text of a case file
        (YAML or JSON Lines), whose cases are added as items.
        """
        data = expect_object(data, "a batch request")
        check_fields(data, BATCH_FIELDS, "a batch request")
        defaults = _batch_defaults(data, settings)
        raw = data.get("items", [] if "cases" in data else None)
        if not isinstance(raw, list):
            raise InputError(f"'items' must be a list of 1 to {MAX_ITEMS} items")
        if "cases" in data:
            raw = raw + _cases_from_file(data["cases"], defaults)
        if not 1 <= len(raw) <= MAX_ITEMS:
            raise InputError(f"'items' must be a list of 1 to {MAX_ITEMS} items")
        items = tuple(
            _parse_item(i, item, settings, defaults) for i, item in enumerate(raw)
        )
        job = cls(items)
        if job.budget > settings.max_job_seconds:
            raise InputError(
                f"the batch needs up to {job.budget:g} s (its time limits added "
                f"up); the limit is {settings.max_job_seconds:g} s: split it or "
                "lower 'time_limit'"
            )
        return job

    def to_json(self) -> dict[str, Any]:
        """Return the request as the worker receives it (defaults applied)."""
        return {"items": [item.to_json() for item in self.items]}

    @property
    def budget(self) -> float:
        """Return the seconds this job may take (before the margins)."""
        return sum(item.budget + ITEM_OVERHEAD for item in self.items)


def _options(
    data: Mapping[str, Any], settings: Settings
) -> tuple[Question, float, str]:
    """Read a request's question, time limit and engine, each on its own (a
    proof request and a batch's defaults share them; whether they fit the
    game is the caller's check)."""
    question = Question(get_choice(data, "question", QUESTIONS, "verdict"))
    top = settings.max_time_limit
    time_limit = get_number(
        data, "time_limit", min(DEFAULT_TIME_LIMIT, top), MIN_TIME_LIMIT, top
    )
    return question, time_limit, get_string(data, "engine", AUTO)


def _batch_defaults(data: Mapping[str, Any], settings: Settings) -> dict[str, Any]:
    """Return the fields the batch sets for its items, each checked here.

    A bad value the batch sets once must be named as the batch's own field,
    not blamed on ``items[0]``, the first item to inherit it. A default is
    judged as far as the batch alone decides it: the question and engine
    against the game only when the batch names that game too, since each
    item may name its own (such a mismatch is then the item's error).
    """
    defaults = {k: data[k] for k in ITEM_DEFAULTS if data.get(k) is not None}
    game = get_game(get_string(defaults, "game", DEFAULT_GAME))
    question, _, engine = _options(defaults, settings)
    if "game" in defaults:
        check_question(game, question)
    if "game" in defaults or engine not in ENGINES:
        check_engine(game.name, engine)
    return defaults


def _parse_item(
    index: int, item: Any, settings: Settings, defaults: Mapping[str, Any]
) -> ProofJob:
    prefix = f"items[{index}]: "
    try:
        item = expect_object(item, "an item")
        kind = get_choice(item, "kind", tuple(ITEM_KINDS), "proof")
        return ITEM_KINDS[kind](item, settings, defaults)
    except PatienceError as exc:
        raise prefixed(exc, prefix) from None


def run_batch(
    job: BatchJob,
    answers: AnswerCache | None = None,
    progress: Progress | None = None,
    time_up: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """Prove every item; one item's error does not stop the others.

    ``time_up`` are the exceptions that say the job's own time is over (the
    task passes Celery's soft time limit). The items finished by then are
    kept and the rest answered `NOT_REACHED` (a study sends those again): a
    batch that overruns loses its last items, not the hundreds it proved.
    """
    results: list[dict[str, Any]] = []
    counts: Counter[str] = Counter()
    try:
        if progress:
            progress({"done": 0, "total": len(job.items)})
        for index, item in enumerate(job.items):
            results.append(_batch_item(index, item, answers, counts))
            if progress:
                progress({"done": index + 1, "total": len(job.items), **counts})
    except time_up:
        late = {
            "code": NOT_REACHED,
            "message": "the batch ran out of time before answering this item",
        }
        reached = len(results)
        for rest in range(reached, len(job.items)):
            results.append({"index": rest, "ok": False, "error": late})
        counts[NOT_REACHED] += len(job.items) - reached
    return {"total": len(job.items), "counts": dict(counts), "items": results}


def _batch_item(
    index: int,
    item: ProofJob | CaseJob,
    answers: AnswerCache | None,
    counts: Counter[str],
) -> dict[str, Any]:
    """Answer one batch item; bad input or a refused line is its own error."""
    try:
        if isinstance(item, CaseJob):
            out = item.run()
            counts["passed" if out["case"]["passed"] else "failed_claims"] += 1
        else:
            out = run_proof(item, answers)
            out.pop("position")
            counts[out["result"]["status"]] += 1
        return {"index": index, "ok": True, **out}
    except (PatienceError, ResultCheckError) as exc:
        counts["failed"] += 1
        return {"index": index, "ok": False, "error": error_json(exc)}
