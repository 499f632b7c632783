"""The one registry of provers, and the runner that enforces real time limits.

A prover is a plain function ``prove(state, *, question, time_limit) ->
ProofResult`` for one game. ``time_limit`` is advisory (a search can stop and
return its best line so far); the runner makes it real by running provers in
child processes and killing them at the limit, because CaDiCaL cannot be
interrupted through pysat.

``auto`` runs the game's portfolio for the question (`PORTFOLIO`; with no
more cores than members, `FEW_CORES` where it names a choice), one process
per member, and returns the first answer that settles the question; the
others are killed. For the best score the engines also settle it *together*
(`combine_bounds`): a line from one engine and a proven lower bound from
another that meet prove the line optimal, although neither engine could say so
alone. Every line is replayed by the reference engine (`check_result`) before
it leaves this module.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import replace
from functools import partial
from typing import Any, Protocol

import billiard
from billiard.connection import wait

from verifier import besieged_fortress_search, devils_grip_search
from verifier.errors import InputError, PatienceError, UnsupportedError, from_code
from verifier.formats import Start
from verifier.results import (
    ProofResult,
    Question,
    ResultCheckError,
    Status,
    check_question,
    check_result,
    set_answer_deadline,
    set_line_source,
    set_partial_sink,
)

from . import besieged_fortress_sat, devils_grip_sat, devils_grip_smt
from .processes import start_child, stop


class Prover(Protocol):
    """A prover for one game."""

    def __call__(
        self, state: Any, *, question: Question, time_limit: float | None
    ) -> ProofResult: ...


#: engine name -> game name -> prover. The CLI and API read their choices here.
PROVERS: dict[str, dict[str, Prover]] = {
    "sat": {
        "devils-grip": devils_grip_sat.prove,
        "besieged-fortress": besieged_fortress_sat.prove,
    },
    "smt": {"devils-grip": devils_grip_smt.prove},
    "search": {
        "devils-grip": devils_grip_search.prove,
        "besieged-fortress": besieged_fortress_search.prove,
    },
}


def _devils_grip_sat(plan: devils_grip_sat.Plan) -> Prover:
    """Return the Devil's Grip SAT prover with ``plan`` for best scores."""
    return partial(devils_grip_sat.prove, plan=plan)


EARLY_STOCK = 60


def _devils_grip_cores_or_search(
    state: Any, *, question: Question, time_limit: float | None
) -> ProofResult:
    """Core-guided bounds at once on early positions, else the search.

    On a whole deal the search prover rarely proves a best score, so for
    the best score of an early position (more than `EARLY_STOCK` stock
    cards) this member runs RC2 on the short-stacks view from the start
    (`devils_grip_sat.AT_ONCE`), restricted by the lines the other member
    reports as its beam finds them. Later in the game the search settles
    most positions first (median 1 s to a proven best score at 48 stock
    cards left, 3.6 s at 60, 23 s at 66).
    """
    if len(state.stock) > EARLY_STOCK and question is Question.SCORE:
        plan = devils_grip_sat.AT_ONCE
        return devils_grip_sat.prove(
            state, question=question, time_limit=time_limit, plan=plan
        )
    return devils_grip_search.prove(
        state, question=question, time_limit=time_limit, beam=False
    )


#: What ``auto`` runs side by side, per game and question: named provers, one
#: process each. The machine has few cores: SMT is the slower cross-check and
#: runs on request; Besieged Fortress's SAT encoding finds wins only in small
#: positions. For a Devil's Grip best score two members run side by side
#: when the proof has more cores than members (else `FEW_CORES` runs one):
#: the SAT prover finding lines for the whole limit (a long beam, then the
#: neighbourhood search, whose last stage, the whole formula under "one card
#: fewer", proves its line optimal: `devils_grip_sat.LINES`), whose lines
#: restrict the other member's short-stacks search as they come; and
#: `_devils_grip_cores_or_search`. On this machine's two cores, deals 1-1000
#: at 10 s (`patience bench --engine auto --start S --count 100 --time-limit
#: 10 --score`, one run per hundred, older code): 910 of the 998 lost deals
#: proven, median 4.3 s, 477 by the first member's descent, 433 by the
#: second's RC2 bound.
PORTFOLIO: dict[str, dict[Question, dict[str, Prover]]] = {
    "devils-grip": {
        Question.VERDICT: {
            "sat": devils_grip_sat.prove,
            "search": devils_grip_search.prove,
        },
        Question.SCORE: {
            "sat-lines": _devils_grip_sat(devils_grip_sat.LINES),
            "cores-or-search": _devils_grip_cores_or_search,
        },
    },
    "besieged-fortress": {
        question: {"search": besieged_fortress_search.prove} for question in Question
    },
}

LATE_STOCK = 48


def _devils_grip_lines_or_search(
    state: Any, *, question: Question, time_limit: float | None
) -> ProofResult:
    """The line-finding SAT prover with a short beam (`devils_grip_sat.ALONE`),
    or the search on late positions: the best-score member for one core.

    Alone on a core, the SAT prover's lines and descent prove the most best
    scores of whole deals and of early positions; with at most `LATE_STOCK`
    stock cards left the search proves them faster. Pinned to one core, 10 s,
    six positions each along the beam's lines of deals 1-6 (`python -m
    patience_encodings.bench_positions --count 6 --left 66,60,48,30,12`): the
    search proves 1, 3, 6, 6, 6 of them with 66, 60, 48, 30, 12 stock cards
    left (median 0.60 s at 48, 0.03 s at 30), `sat-lines` 6 at every level
    (median 3.49 s at 48, 0.21 s at 30).
    """
    if len(state.stock) > LATE_STOCK:
        return devils_grip_sat.prove(
            state, question=question, time_limit=time_limit, plan=devils_grip_sat.ALONE
        )
    return devils_grip_search.prove(state, question=question, time_limit=time_limit)


#: What ``auto`` runs instead of `PORTFOLIO`, per game and question, when a
#: proof's cores do not exceed the portfolio's members (`cores_available`):
#: members sharing a core each get part of it, members filling every core
#: slow one another, and where one member alone proves more, it runs alone.
#: A question not listed keeps its whole portfolio. Best scores of Devil's
#: Grip, 10 s a deal (``patience bench --engine auto --start S --count 100
#: --time-limit 10 --score``):
#:
#: - one core (``taskset -c 0``): this member alone, deals 1-1000, 950 of
#:   998 proven, median proof 3.2 s; both members sharing the core, deals
#:   1-100, 53.
#: - two cores, one run each on one day: this member alone (the other core
#:   idle), deals 1-100 96 proven (median proof 2.95 s), 101-200 93
#:   (3.32 s); the portfolio's two members 89 (median time over all 100
#:   deals 5.4 s against this member's 3.1 s) and 94 (3.52 s); this member
#:   beside the short-stacks member, 1-100: 94 (median over all 3.6 s);
#:   beside a second line member with the long beam: 95 (median proof
#:   3.8 s). No second member on the other core won back what it cost
#:   the first on this machine.
#:
#: Verdicts of deals 1-1000, both members sharing one core: all proven,
#: median 0.063 s, max 2.4 s (`sat` alone: median 0.105 s), so verdicts keep
#: both. Proofs with more cores than members (three or more here) were not
#: measured, since this machine has two: there the portfolio runs.
FEW_CORES: dict[str, dict[Question, dict[str, Prover]]] = {
    "devils-grip": {Question.SCORE: {"lines-or-search": _devils_grip_lines_or_search}},
}

#: Environment variable: the cores one proof may use (a whole number, >= 1).
CORES_ENV = "PATIENCE_CORES"

AUTO = "auto"
#: The longest time limit a caller may ask for, in seconds.
MAX_TIME_LIMIT = 3600.0
ENGINES = (AUTO, *PROVERS)
#: Seconds of headroom a cooperative prover gets before it is killed.
GRACE = 0.25
#: The most a member's limit falls short of the caller's (`member_limit`).
MARGIN_MAX = 1.0
#: Seconds before the runner's limit by which a member's proof must be sent
#: (`verifier.results.answer_deadline`): building and sending a proof took
#: about 10 ms on deals 136 and 675, and the runner then replays its line.
ANSWER_MARGIN = 0.1


def engines_for(game_name: str) -> list[str]:
    """Return the engines that can prove positions of ``game_name``."""
    return [name for name, games in PROVERS.items() if game_name in games]


def settles(result: ProofResult, question: Question) -> bool:
    """Return whether ``result`` answers ``question`` with a proof."""
    if result.status is Status.WON:
        return True
    if question is Question.SCORE:
        return result.score_proven
    return result.proven


def check_engine(game_name: str, engine: str) -> None:
    """Refuse an engine that cannot prove positions of ``game_name``.

    The doors (jobs, studies, case files) call it before any work is queued,
    and `solve` again before it forks.
    """
    available = engines_for(game_name)
    if not available:
        raise UnsupportedError(f"no prover is registered for {game_name} yet")
    if engine == AUTO:
        return
    if engine not in PROVERS:
        raise UnsupportedError(
            f"unknown engine {engine!r} (known: {', '.join(ENGINES)})"
        )
    if engine not in available:
        raise UnsupportedError(
            f"engine {engine!r} does not support {game_name} "
            f"(available: {', '.join([AUTO, *available])})"
        )


def cores_available() -> int:
    """Return the cores one proof may use: `CORES_ENV` if set, else this
    process's CPUs.

    The CPUs are the process's affinity (what ``taskset`` or a container's
    cpuset allows), not the machine's count, since a portfolio whose
    members would share or fill the cores gives way to `FEW_CORES`. A
    worker that runs several jobs at once sets `CORES_ENV` to each job's
    share (`worker.celery_app.share_cores`).
    """
    text = os.environ.get(CORES_ENV, "").strip()
    if text:
        if not text.isdigit() or int(text) < 1:
            raise InputError(
                f"{CORES_ENV}={text!r}: expected a whole number of cores, at least 1"
            )
        return int(text)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 1


def _select(
    game_name: str, engine: str, question: Question, cores: int
) -> dict[str, Prover]:
    check_engine(game_name, engine)
    if engine != AUTO:
        return {engine: PROVERS[engine][game_name]}
    chosen = PORTFOLIO.get(game_name, {}).get(question)
    if not chosen:
        return {name: PROVERS[name][game_name] for name in engines_for(game_name)}
    narrow = FEW_CORES.get(game_name, {}).get(question)
    return narrow if narrow and cores <= len(chosen) else chosen


def solve(
    start: Start,
    *,
    question: Question = Question.VERDICT,
    engine: str = AUTO,
    time_limit: float = 10.0,
    isolate: bool = True,
    cores: int | None = None,
) -> ProofResult:
    """Answer ``question`` about ``start`` with ``engine``; replay before returning.

    With ``isolate`` (the default) each prover runs in a child process that is
    killed at ``time_limit``; without it the single prover runs in this process
    (for profiling; its limit is then only advisory). ``cores`` is what ``auto``
    may use (default `cores_available`); with no more cores than members it
    runs the game's `FEW_CORES` choice. The answer's stats name the members run.
    """
    if not 0 < time_limit <= MAX_TIME_LIMIT:
        raise InputError(
            f"time limit {time_limit:g} s out of range "
            f"(0 < limit <= {MAX_TIME_LIMIT:g})"
        )
    check_question(start.game, question)
    cores = cores_available() if cores is None else cores
    if cores < 1:
        raise InputError(f"cores {cores}: at least 1")
    provers = _select(start.game.name, engine, question, cores)
    began = time.monotonic()
    if not isolate and len(provers) == 1:
        (prover,) = provers.values()
        result = _run_here(prover, start.state, question, time_limit)
    else:
        result = _portfolio(provers, start.state, question, time_limit)
    run = {"members": list(provers), "cores": cores}
    result = replace(
        result,
        elapsed=round(time.monotonic() - began, 4),
        stats={**result.stats, "run": run},
    )
    return check_result(start.game, start.state, result)


def _run_here(
    prover: Prover, state: Any, question: Question, time_limit: float | None
) -> ProofResult:
    return prover(state, question=question, time_limit=time_limit)


def _child(
    prover: Prover,
    state: Any,
    question: Question,
    limit: float,
    stopped_at: float,
    conn,
    shared,
    parent_pid: int,
) -> None:
    """Run one prover and send its result (as JSON-ready data) to the parent.

    Partial answers (`verifier.results.report_partial`) go to the parent as
    they come, so that a prover killed at the limit still leaves its best.
    ``shared`` holds the best line's score over all members (-1: none yet),
    which the prover reads through `verifier.results.line_elsewhere`.
    ``stopped_at`` is the parent's `time.monotonic` instant of the kill (the
    clock is the machine's, shared by parent and child): a proof under way
    at ``limit`` may run on to `ANSWER_MARGIN` before it
    (`verifier.results.answer_deadline`).
    """
    start_child(parent_pid)
    set_partial_sink(lambda partial: conn.send(("partial", partial.to_json())))
    set_line_source(lambda: shared.value if shared.value >= 0 else None)
    set_answer_deadline(stopped_at - ANSWER_MARGIN)
    try:
        result = prover(state, question=question, time_limit=limit)
        conn.send(("ok", result.to_json()))
    except PatienceError as exc:  # the input: the parent may raise it as such
        conn.send(("refused", {"code": exc.code, "message": exc.message}))
    except ResultCheckError as exc:  # its own line failed the replay: a bug
        conn.send(("unsound", str(exc)))
    except BaseException:  # report everything, the parent decides
        conn.send(("error", traceback.format_exc(limit=8)))
    finally:
        conn.close()


def member_limit(time_limit: float) -> float:
    """Return the limit a member of ``time_limit``'s run is given.

    A tenth of the limit short, at least `GRACE` and at most `MARGIN_MAX`
    seconds: time for a member to notice its limit between two oracle chunks
    (10,000 conflicts: about 0.5 s for Glucose on a hard deal's
    score formula, 0.8 s for CaDiCaL) or search nodes,
    then build and send its answer before the runner kills it. The cap
    matters for long limits: a member reports every line, and every bound
    with its proof, as it finds them (`verifier.results.report_partial`), so
    the margin only has to cover the final answer, not a tenth of an hour.
    Up to 10 s the limit is the tenth short it always was (at 10 s, 9 s).
    """
    margin = min(max(GRACE, 0.1 * time_limit), MARGIN_MAX)
    return max(0.05, time_limit - margin)


def _portfolio(
    provers: dict[str, Prover], state: Any, question: Question, time_limit: float
) -> ProofResult:
    """Run provers in parallel processes; return the first settling answer."""
    ctx = billiard.get_context("fork")
    deadline = time.monotonic() + time_limit
    soft = member_limit(time_limit)
    running: dict[Any, tuple[str, Any]] = {}
    #: The best line's score reported by any member (written here only).
    shared = ctx.Value("i", -1, lock=False)
    for name, prover in provers.items():
        parent, child = ctx.Pipe(duplex=False)
        args = (prover, state, question, soft, deadline, child, shared, os.getpid())
        proc = ctx.Process(target=_child, args=args)
        proc.daemon = True
        proc.start()
        child.close()
        running[parent] = (name, proc)
    #: Each engine's latest answer: partial while it runs, final once done.
    latest: dict[str, ProofResult] = {}
    errors: list[str] = []
    refusals: list[dict[str, str]] = []
    unsound: list[str] = []
    try:
        while running:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            for conn in wait(list(running), timeout=remaining):
                name = running[conn][0]
                kind, payload = _receive(conn)
                if kind != "partial":
                    running.pop(conn)[1].join(timeout=1)
                if kind == "error":
                    errors.append(f"{name}: {payload.strip().splitlines()[-1]}")
                    continue
                if kind == "unsound":
                    errors.append(f"{name}: its line failed the replay: {payload}")
                    unsound.append(f"{name}: {payload}")
                    continue
                if kind == "refused":
                    errors.append(f"{name}: {payload['message']}")
                    refusals.append(payload)
                    continue
                result = ProofResult.from_json(payload)
                if kind == "ok" and settles(result, question):
                    return _noting(result, errors)
                _share_line(shared, result)
                latest[name] = result
                together = combine_bounds(list(latest.values()), question)
                if together is not None:
                    return _noting(together, errors)
    finally:
        stop([proc for _, proc in running.values()])
    answers = list(latest.values())
    if refusals and len(refusals) == len(provers):
        # Every member refused the input: its error is the answer, not "no
        # proof within the limit". (One member refusing while another answers
        # is only that member's limitation.)
        raise from_code(refusals[0]["code"], refusals[0]["message"])
    if not answers and len(errors) == len(provers) and unsound:
        # No member answered, and a line the reference engine refused is a
        # prover bug: raised as such (the API's ``check_failed``).
        raise ResultCheckError("; ".join(unsound))
    return _best_unsettled(answers, errors, list(provers), time_limit, question)


def _noting(result: ProofResult, errors: list[str]) -> ProofResult:
    """Return ``result`` with the other members' errors in its stats.

    A member that failed (a line its own replay refused, a crash) did not
    stop the answer, but the answer keeps the record: a study or benchmark
    file shows it, and a member's unsoundness does not go unseen.
    """
    if not errors:
        return result
    return replace(result, stats={**result.stats, "errors": list(errors)})


def _line_and_bound(
    answers: list[ProofResult],
) -> tuple[ProofResult | None, ProofResult | None]:
    """Return the answer with the best line and the one with the highest bound.

    Only a line in hand counts (``best_score`` with its moves); None where no
    answer has a line, or none a bound.
    """
    lined = [a for a in answers if a.best_score is not None and a.line]
    bounded = [a for a in answers if a.lower_bound is not None]
    line = min(lined, key=lambda a: a.best_score, default=None)
    bound = max(bounded, key=lambda a: a.lower_bound, default=None)
    return line, bound


def consistent(answers: list[ProofResult]) -> None:
    """Refuse answers that contradict each other: a line below a proven bound.

    Every ``lower_bound`` is proven for every line and every ``best_score``
    is reached by a replayed line, so a line below a bound means a member
    is wrong; combining the two would report the contradiction as an
    optimum. `bench_positions` cross-checks engines with it too.
    """
    line, bound = _line_and_bound(answers)
    if line is not None and bound is not None and line.best_score < bound.lower_bound:
        raise ResultCheckError(
            f"{line.engine}'s line leaves {line.best_score}, but {bound.engine} "
            f"proves every line leaves at least {bound.lower_bound}"
        )


def _share_line(shared: Any, result: ProofResult) -> None:
    """Publish ``result``'s line score to the members if it is the best yet.

    Members replay their lines before reporting them (and `solve` replays
    the answer's line again); a member searching below this score proves
    only unconditional bounds (`verifier.results.line_elsewhere`).
    """
    score = result.best_score
    if score is None or not result.line or result.status is not Status.LOST:
        return
    if shared.value < 0 or score < shared.value:
        shared.value = score


def combine_bounds(
    answers: list[ProofResult], question: Question
) -> ProofResult | None:
    """Return the best score proven by several engines together, if it is.

    Every ``lower_bound`` a prover reports is proven (no line leaves fewer
    cards) and every ``best_score`` comes with a line that reaches it (replayed
    again by `solve`). So when the best line of one engine scores no more than
    the highest lower bound of another, that line is optimal: the two facts
    together are the proof, and the result names both. None when they do not
    meet (or for a verdict, which needs no combining).
    """
    if question is not Question.SCORE or len(answers) < 2:
        return None
    consistent(answers)
    line, bound = _line_and_bound(answers)
    if line is None or bound is None:
        return None
    if line.best_score > bound.lower_bound or line.best_score == 0:
        return None  # they do not meet; or a win, which settles alone
    return ProofResult(
        status=Status.LOST,
        proven=True,
        engine=_joined(line.engine, bound.engine),
        question=question,
        best_score=line.best_score,
        score_proven=True,
        lower_bound=line.best_score,
        line=line.line,
        method=(
            f"line from {line.engine} leaves {line.best_score}; {bound.engine} "
            f"proves every line leaves at least {bound.lower_bound} "
            f"({bound.method})"
        ),
        stats={line.engine: line.stats, bound.engine: bound.stats},
    )


def _joined(*names: str) -> str:
    """Return engine names joined by '+', each once, in order."""
    return "+".join(dict.fromkeys(names))


def _receive(conn) -> tuple[str, Any]:
    try:
        return conn.recv()
    except EOFError:
        return "error", "the prover process died without an answer"


def _best_unsettled(
    answers: list[ProofResult],
    errors: list[str],
    names: list[str],
    time_limit: float,
    question: Question,
) -> ProofResult:
    """Merge unsettled answers: a proven verdict, the best line, the best bound."""
    consistent(answers)
    with_line = [a for a in answers if a.best_score is not None]
    best = min(with_line, key=lambda a: a.best_score) if with_line else None
    proven = [a for a in answers if a.proven]
    if proven:
        verdict = proven[0]
        _, bound = _line_and_bound(answers)
        if bound is not None and bound.lower_bound > (verdict.lower_bound or 0):
            verdict = replace(
                verdict,
                lower_bound=bound.lower_bound,
                method=f"{verdict.method}; {bound.engine} proves every line "
                f"leaves at least {bound.lower_bound}",
            )
        if best is None or (
            verdict.best_score is not None and verdict.best_score <= best.best_score
        ):
            return _noting(verdict, errors)
        return _noting(
            replace(
                verdict,
                best_score=best.best_score,
                line=best.line,
                score_proven=False,
                method=f"{verdict.method}; best line so far from {best.engine}",
            ),
            errors,
        )
    stats: dict[str, Any] = {"time_limit": time_limit}
    if errors:
        stats["errors"] = errors
    # Every member failed before its limit: that is no timeout, and must not
    # read as one.
    failed = not answers and len(errors) == len(names)
    return ProofResult(
        status=Status.UNKNOWN,
        proven=False,
        engine="+".join(names),
        question=question,
        best_score=best.best_score if best else None,
        line=best.line if best else (),
        method=f"no proof: every engine failed ({'; '.join(errors)})"
        if failed
        else f"no proof within {time_limit:g} s",
        stats=stats,
    )
