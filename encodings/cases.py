"""Batch verification of rule edge cases: small positions with a claim.

A case file is YAML (a list of cases, or a mapping with ``game`` and ``cases``)
or JSON Lines (one case object per line). A case names a position and exactly
one claim:

=====================  ==========================================================
``legal: MOVE``        the move is legal in the position
``illegal: MOVE``      it is illegal; optional ``reason:`` must occur in the
                       engine's reason (case-insensitive)
``winnable: true``     some line wins (a prover finds it; the line is replayed)
``dead: true``         no line wins (a prover proves it)
``best_score: N``      perfect play leaves exactly N cards (proven optimal)
``after: MOVES``       the moves are legal and lead to the ``expect:`` position
=====================  ==========================================================

The position is ``position:`` in the game's compact text form (or its JSON
form), or ``deal:`` (deal text, or ``number N``). Optional per case: ``id``,
``game``, ``rule`` (the clause of the rule card it checks), ``engine`` and
``time_limit``. Legality and ``after`` are judged by the reference engine alone;
``winnable``, ``dead`` and ``best_score`` by the provers, with their evidence.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml

from verifier.errors import InputError, PatienceError
from verifier.fields import check_plain, get_number, get_string
from verifier.formats import Start, position_from_json, read_start, start_from_json
from verifier.game import Game
from verifier.registry import get_game
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status, check_question
from verifier.textforms import load_json

from . import engines

CLAIMS = ("legal", "illegal", "winnable", "dead", "best_score", "after")
OPTIONAL = ("id", "game", "rule", "reason", "expect", "engine", "time_limit")
DEFAULT_TIME_LIMIT = 10.0
#: The shortest time limit a case (or a proof job) may ask for, in seconds.
MIN_TIME_LIMIT = 0.1


@dataclass(frozen=True)
class Case:
    """One parsed, validated case."""

    id: str
    start: Start
    claim: str
    value: Any
    rule: str = ""
    reason: str = ""
    expect: Any = None
    engine: str = engines.AUTO
    time_limit: float = DEFAULT_TIME_LIMIT

    def describe(self) -> str:
        """Return the claim in the case-file notation, e.g. ``illegal: T>A2``."""
        if self.claim in ("winnable", "dead"):
            return self.claim
        return f"{self.claim}: {self.value}"


@dataclass(frozen=True)
class CaseResult:
    """The verdict on one case and the evidence behind it."""

    id: str
    claim: str
    passed: bool
    evidence: dict[str, Any] = field(default_factory=dict)
    rule: str = ""

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "id": self.id,
            "claim": self.claim,
            "passed": self.passed,
            "rule": self.rule,
            "evidence": self.evidence,
        }


# -- reading --------------------------------------------------------------------
def load_cases(text: str, *, source: str = "cases") -> list[Case]:
    """Parse a case file (YAML or JSON Lines); raise `InputError` naming the case."""
    raw, default_game = _raw_cases(text, source)
    cases = [_case(item, i, default_game, source) for i, item in enumerate(raw, 1)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise InputError(f"{source}: case id {case.id!r} is used twice")
        seen.add(case.id)
    return cases


def parse_case(
    item: Any,
    *,
    default_game: str | None = None,
    source: str = "case",
    max_time_limit: float = engines.MAX_TIME_LIMIT,
) -> Case:
    """Parse one case given as a mapping (as in a case file).

    ``max_time_limit`` is the longest ``time_limit`` the caller will run: a
    service passes its own, lower cap, so a case's limit is checked once,
    against the range that is really accepted, with one message.
    """
    return _case(item, 1, default_game, source, max_time_limit)


def raw_cases(text: str, *, source: str = "cases") -> tuple[list[Any], str | None]:
    """Return a case file's case mappings and its default game, unparsed."""
    return _raw_cases(text, source)


class _NoAliases(yaml.SafeLoader):
    """YAML without anchors' aliases: a few bytes of ``*a`` can stand for
    gigabytes once expanded (each level of aliases multiplies the text), and
    no case needs one."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, "aliases (*name) are not accepted in a case file", mark
            )
        return super().compose_node(parent, index)


def _raw_cases(text: str, source: str) -> tuple[list[Any], str | None]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if lines and all(ln.lstrip().startswith("{") for ln in lines):
        try:
            data: Any = [load_json(ln) for ln in lines]
        except InputError as exc:
            raise InputError(f"{source}: {exc.message} (a JSON line)") from None
    else:
        data = _load_yaml(text, source)
    check_plain(data, source)
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        return data["cases"], data.get("game")
    if isinstance(data, list):
        return data, None
    raise InputError(f"{source}: expected a list of cases or a mapping with 'cases'")


def _load_yaml(text: str, source: str) -> Any:
    try:
        return yaml.load(text, Loader=_NoAliases)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        raise InputError(f"{source}: malformed YAML: {exc}") from None
    except RecursionError:
        raise InputError(f"{source}: malformed YAML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python reads
        raise InputError(f"{source}: malformed YAML: {exc}") from None


def _case(
    item: Any,
    index: int,
    default_game: str | None,
    source: str,
    max_time_limit: float = engines.MAX_TIME_LIMIT,
) -> Case:
    if not isinstance(item, dict):
        raise InputError(f"{source}: case {index} is not a mapping")
    ident = _ident(item.get("id"), index, source)
    where = f"{source}: case {ident!r}"
    claims = [k for k in CLAIMS if k in item]
    unknown = set(item) - set(CLAIMS) - set(OPTIONAL) - {"position", "deal"}
    if unknown:
        raise InputError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
    if len(claims) != 1:
        raise InputError(f"{where}: needs exactly one claim of {', '.join(CLAIMS)}")
    claim = claims[0]
    try:
        start = _start(item, item.get("game", default_game))
        value = _claim_value(start.game, claim, item[claim])
        expect = _expect(start, item) if claim == "after" else None
        engine = get_string(item, "engine", engines.AUTO)
        engines.check_engine(start.game.name, engine)
        default = min(DEFAULT_TIME_LIMIT, max_time_limit)
        time_limit = get_number(
            item, "time_limit", default, MIN_TIME_LIMIT, max_time_limit
        )
        if claim == "best_score":
            check_question(start.game, Question.SCORE)
        rule, reason = get_string(item, "rule", ""), get_string(item, "reason", "")
    except PatienceError as exc:
        raise InputError(f"{where}: {exc.message}", code=exc.code) from None
    return Case(
        id=ident,
        start=start,
        claim=claim,
        value=value,
        rule=rule,
        reason=reason,
        expect=expect,
        engine=engine,
        time_limit=time_limit,
    )


def _ident(value: Any, index: int, source: str) -> str:
    """Return a case's id: text, or a whole number written as one."""
    if value is None:
        return f"case-{index}"
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(f"{source}: case {index}: 'id' must be text, not {value!r}")
    return str(value)


def _start(item: dict[str, Any], game_name: str | None) -> Start:
    game = get_game(game_name)
    if "position" in item and "deal" in item:
        raise InputError("give either 'position' or 'deal', not both")
    if "deal" in item:
        deal = item["deal"]
        if isinstance(deal, list):
            return start_from_json({"deal": deal, "game": game.name})
        if not isinstance(deal, str | int) or isinstance(deal, bool):
            raise InputError("'deal' must be deal text, 'number N' or a card list")
        return read_start(str(deal), game.name)
    position = item.get("position")
    if isinstance(position, dict):
        return start_from_json({"game": game.name, "position": position})
    if isinstance(position, str):
        return Start(game, game.parse_position_text(position), "position")
    raise InputError("needs a 'position' (text or mapping) or a 'deal'")


def _claim_value(game: Game, claim: str, value: Any) -> Any:
    if claim in ("legal", "illegal", "after"):
        if not isinstance(value, str):
            raise InputError(f"'{claim}' takes moves as text, not {value!r}")
        text = value
        moves = game.parse_moves(text)  # a move that does not parse is a bad case
        if claim != "after" and len(moves) != 1:
            raise InputError(f"'{claim}' takes exactly one move, not {text!r}")
        return text
    if claim == "best_score":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InputError(f"best_score must be a whole number >= 0, not {value!r}")
        return value
    if value is not True and value is not None:
        raise InputError(f"'{claim}' takes no value (write '{claim}: true')")
    return True


def _expect(start: Start, item: dict[str, Any]) -> Any:
    if "expect" not in item:
        raise InputError("an 'after' claim needs an 'expect' position")
    expect = item["expect"]
    if isinstance(expect, dict):
        return position_from_json(start.game, expect)
    if not isinstance(expect, str):
        raise InputError(f"'expect' must be a position, not {expect!r}")
    return start.game.parse_position_text(expect)


# -- running --------------------------------------------------------------------
def run_case(case: Case, *, engine: str | None = None) -> CaseResult:
    """Check one case: the reference engine for moves, the provers for verdicts."""
    check = _CHECKS[case.claim]
    passed, evidence = check(case, engine or case.engine)
    return CaseResult(case.id, case.describe(), passed, evidence, case.rule)


def run_cases(
    cases: Iterable[Case], *, engine: str | None = None
) -> Iterator[CaseResult]:
    """Check cases one by one (a generator, so callers can show progress)."""
    for case in cases:
        yield run_case(case, engine=engine)


def _check_legal(case: Case, engine: str) -> tuple[bool, dict[str, Any]]:
    game = case.start.game
    (move,) = game.parse_moves(case.value)
    reason = game.illegal_reason(case.start.state, move)
    if case.claim == "legal":
        if reason is None:
            return True, {
                "reason": "legal: " + game.describe_move(case.start.state, move)
            }
        return False, {"reason": f"illegal: {reason}"}
    if reason is None:
        return False, {"reason": "the move is legal"}
    matches = case.reason.lower() in reason.lower()
    evidence = {"reason": reason}
    if not matches:
        evidence["expected_reason"] = case.reason
    return matches, evidence


def _check_after(case: Case, engine: str) -> tuple[bool, dict[str, Any]]:
    game = case.start.game
    outcome = replay(game, case.start.state, game.parse_moves(case.value))
    if outcome.error:
        return False, {"reason": str(outcome.error)}
    if outcome.final == case.expect:
        plural = "" if outcome.steps == 1 else "s"
        reason = f"{outcome.steps} move{plural} lead to the expected position"
        return True, {"reason": reason}
    return False, {
        "reason": "the position after the moves differs from 'expect'",
        "actual": game.position_to_json(outcome.final),
    }


def _check_proof(case: Case, engine: str) -> tuple[bool, dict[str, Any]]:
    question = Question.SCORE if case.claim == "best_score" else Question.VERDICT
    result = engines.solve(
        case.start, question=question, engine=engine, time_limit=case.time_limit
    )
    evidence = _proof_evidence(result)
    if case.claim == "winnable":
        return result.status is Status.WON, evidence
    if case.claim == "dead":
        return result.status is Status.LOST and result.proven, evidence
    score_known = result.status is Status.WON or result.score_proven
    return score_known and result.best_score == case.value, evidence


def _proof_evidence(result: ProofResult) -> dict[str, Any]:
    return {
        "status": result.status.value,
        "proven": result.proven,
        "best_score": result.best_score,
        "score_proven": result.score_proven or result.status is Status.WON,
        "method": result.method,
        "engine": result.engine,
        "line": list(result.line),
        "elapsed": result.elapsed,
    }


_CHECKS = {
    "legal": _check_legal,
    "illegal": _check_legal,
    "after": _check_after,
    "winnable": _check_proof,
    "dead": _check_proof,
    "best_score": _check_proof,
}
