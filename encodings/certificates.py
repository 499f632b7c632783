"""Certificates of dead ends that anyone can check: CNF + DRAT proof + hashes.

A dead-end verdict from our own code asks to be trusted; a certificate removes
the need. It states a claim about a start (a deal or position):

- ``verdict``: *no line wins*. The CNF is the SAT encoding of "some line
  wins" (`devils_grip_sat_cnf.build_cnf`), and it is unsatisfiable.
- ``score`` with bound k: *no line leaves fewer than k cards in the talon*.
  The CNF encodes "some line leaves at most k − 1 cards", and it is
  unsatisfiable. A bundle made from a proof result also carries the line
  that reaches k (``line``), which `check` replays with the reference
  engine: together the two halves make the best score k checkable.

The bundle is one JSON document (``.json``, or gzipped ``.json.gz``)::

    {"format": "patience-certificate/1",
     "game": "devils-grip",
     "start": {...},                  # the deal or position, as given
     "start_sha256": "...",           # of the canonical JSON of "start"
     "claim": {"question": "verdict" | "score", "bound": k | null,
               "text": "no line wins" | "no line leaves fewer than k cards"},
     "encoding": {"name": "devils-grip-sat", "version": "..."},
     "cnf": {"variables": V, "clauses": C, "sha256": "...", "dimacs": "p cnf ..."},
     "proof": {"format": "drat", "steps": N, "sha256": "...", "text": "..."},
     "line": ["A1>B2", "deal", ...],  # score bundles: a line leaving exactly k
     "software": {"name": "patience-prover", "version": "..."},
     "created": "ISO date"}

Checking (`check`) trusts none of it: it re-derives the CNF from the start with
our encoder and compares hashes (so the formula really is about this deal),
then checks the DRAT proof against the CNF with an independent checker
(``dratify``, or ``drup``, pip packages that share no code with this project;
``drat-trim cnf proof`` reads the same two texts). Proofs are kept small: the
solver's proof is cut at the first empty clause, and when unit propagation
alone refutes the formula (the usual case for verdicts, thanks to the implied
constraints of the encoding) the proof is the empty clause alone.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import hashlib
import json
import os
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pysat.solvers import Solver

from verifier.cards import card_count
from verifier.errors import InputError, UnsupportedError, from_code
from verifier.formats import Start, start_from_json
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status
from verifier.textforms import load_json
from verifier.version import version

from .processes import start_child, stop
from .registry import CERTIFICATE_ENCODINGS, CertificateEncoding

FORMAT = "patience-certificate/1"
CHECKERS = ("dratify", "drup")


def sha256(text: str) -> str:
    """Return the hex SHA-256 of ``text`` (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def canonical_json(data: Any) -> str:
    """Return the canonical JSON text that ``start_sha256`` hashes."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def start_json(start: Start) -> dict[str, Any]:
    """Return the JSON form of a start: number, deal or position."""
    game = start.game
    if start.number is not None:
        return {"game": game.name, "number": start.number}
    if start.deal is not None:
        return {"game": game.name, "deal": [str(c) for c in start.deal]}
    return game.position_to_json(start.state) | {"game": game.name}


def claim_text(question: Question, bound: int | None) -> str:
    """Return the claim in words."""
    if question is Question.VERDICT:
        return "no line wins"
    return f"no line leaves fewer than {card_count(bound)} in the talon"


def encodes(game_name: str) -> bool:
    """Return whether ``game_name`` has a certificate encoding."""
    return game_name in CERTIFICATE_ENCODINGS


def check_certifiable(game_name: str) -> None:
    """Refuse a game with no certificate encoding (before anything is proven)."""
    _encoder(game_name)


def _encoder(game_name: str) -> CertificateEncoding:
    """Return the game's certificate encoding (`registry.CERTIFICATE_ENCODINGS`)."""
    if game_name not in CERTIFICATE_ENCODINGS:
        raise UnsupportedError(f"no certificate encoding for {game_name}")
    return CERTIFICATE_ENCODINGS[game_name]


def _encoding_version(game_name: str) -> str:
    """Return the version of the game's encoding (its clauses, not the software)."""
    return _encoder(game_name).version


def formula(start: Start, question: Question, bound: int | None) -> str:
    """Return the DIMACS text of the claim's CNF (deterministic)."""
    build_cnf = _encoder(start.game.name).build_cnf
    if question is Question.VERDICT:
        cnf, _ = build_cnf(start.state, Question.VERDICT)
    else:
        if bound is None or bound < 1:
            raise InputError("a score certificate needs a bound of at least 1")
        # Without the normal-form ("without loss of generality") restrictions:
        # the certificate's UNSAT then speaks of every line, not of a normal
        # form whose completeness would be one more argument to trust.
        cnf, _ = build_cnf(
            start.state, Question.SCORE, bound=bound - 1, dominance=False
        )
    return cnf.to_dimacs() + "\n"


def cnf_sizes(dimacs: str) -> dict[str, int]:
    """Return the DIMACS text's variables (its header's) and clauses (counted)."""
    clauses = sum(1 for line in dimacs.splitlines() if line and line[0] not in "pc")
    return {"variables": int(dimacs.split(maxsplit=3)[2]), "clauses": clauses}


# -- making ----------------------------------------------------------------------
def certify(start: Start, question: Question, bound: int | None = None) -> dict:
    """Return a certificate bundle for the claim; raise if the claim is false.

    ``bound`` is the proven best score for a score certificate.
    """
    dimacs = formula(start, question, bound)
    proof = refutation(dimacs)
    name = _encoder(start.game.name).name
    data = start_json(start)
    return {
        "format": FORMAT,
        "game": start.game.name,
        "start": data,
        "start_sha256": sha256(canonical_json(data)),
        "claim": {
            "question": question.value,
            "bound": bound if question is Question.SCORE else None,
            "text": claim_text(question, bound),
        },
        "encoding": {"name": name, "version": _encoding_version(start.game.name)},
        "cnf": {
            **cnf_sizes(dimacs),
            "sha256": sha256(dimacs),
            "dimacs": dimacs,
        },
        "proof": {
            "format": "drat",
            "steps": proof.count("\n"),
            "sha256": sha256(proof),
            "text": proof,
        },
        "software": {"name": "patience-prover", "version": version()},
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def certify_result(start: Start, result: ProofResult) -> dict:
    """Return the certificate that backs a proven ``lost`` result."""
    if result.status is not Status.LOST or not result.proven:
        raise UnsupportedError("certificates are for proven dead ends")
    if result.question is Question.SCORE and result.score_proven:
        bundle = certify(start, Question.SCORE, result.best_score)
        return bundle | {"line": list(result.line)}
    return certify(start, Question.VERDICT)


def certify_within(start: Start, result: ProofResult, time_limit: float) -> dict:
    """`certify_result` in a child process that is killed at ``time_limit``.

    CaDiCaL cannot be interrupted through pysat, so a server must not run it
    in its own process; a certificate that takes too long is refused.
    """
    import billiard

    ctx = billiard.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    parent_pid = os.getpid()

    def run() -> None:
        start_child(parent_pid)
        try:
            child.send(("ok", certify_result(start, result)))
        except InputError as exc:
            child.send(("error", {"code": exc.code, "message": exc.message}))
        finally:
            child.close()

    proc = ctx.Process(target=run, daemon=True)
    proc.start()
    child.close()
    try:
        if not parent.poll(time_limit):
            raise UnsupportedError(f"the certificate took longer than {time_limit:g} s")
        try:
            kind, payload = parent.recv()
        except EOFError:
            died = "the certificate process died without an answer"
            raise RuntimeError(died) from None
    finally:
        stop([proc], grace=1.0)
    if kind != "ok":
        raise from_code(payload["code"], payload["message"])
    return payload


def refutation(dimacs: str) -> str:
    """Return a small DRAT refutation of ``dimacs``; raise if it is satisfiable.

    Unit propagation alone refutes most of our formulas; then the proof is the
    empty clause. Otherwise CaDiCaL's proof, cut at its first empty clause.
    """
    from dratify import check_proof, parse_dimacs

    cnf = parse_dimacs(dimacs)
    if check_proof(cnf, "0\n").ok:
        return "0\n"
    clauses = [
        [int(v) for v in line.split()[:-1]]
        for line in dimacs.splitlines()
        if line and line[0] not in "pc"
    ]
    with Solver(name="cadical195", bootstrap_with=clauses, with_proof=True) as solver:
        if solver.solve():
            raise InputError("the claim is false: the formula is satisfiable")
        steps = list(solver.get_proof())
    cut = steps.index("0") + 1 if "0" in steps else len(steps)
    return "\n".join(steps[:cut]) + "\n"


# -- files ---------------------------------------------------------------------------
def write(bundle: dict, path: Path) -> None:
    """Write a bundle as JSON (gzipped when the name ends in ``.gz``)."""
    text = json.dumps(bundle, indent=1)
    try:
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(text.encode("utf-8")))
        else:
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def check_writable(path: Path) -> None:
    """Refuse an output path that cannot be written, before the work is done.

    Proving can take the whole time limit; finding out afterwards that the
    directory does not exist would throw the proof away.
    """
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise InputError(f"cannot write {path}: it is a directory")
    if not folder.is_dir():
        raise InputError(f"cannot write {path}: no such directory {folder}")
    if not os.access(folder, os.W_OK) or (
        path.exists() and not os.access(path, os.W_OK)
    ):
        raise InputError(f"cannot write {path}: permission denied")


def read(path: Path) -> dict:
    """Read a bundle file; a file that is not one is bad input."""
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except (OSError, EOFError, zlib.error) as exc:  # unreadable, or a broken gzip
        raise InputError(f"{path}: not a certificate bundle ({exc})") from None
    try:
        data = load_json(raw)
    except InputError as exc:
        raise InputError(f"{path}: not a certificate bundle ({exc.message})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise InputError(f"{path}: not a certificate bundle (format is not {FORMAT})")
    return data


# -- checking -------------------------------------------------------------------------
@dataclass(frozen=True)
class CheckReport:
    """The outcome of checking a bundle, with every step taken."""

    ok: bool
    reason: str
    steps: tuple[str, ...]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """Return a JSON-ready dict."""
        return {
            "ok": self.ok,
            "reason": self.reason,
            "steps": list(self.steps),
            "seconds": self.seconds,
        }


class _Reject(Exception):
    pass


def check(bundle: dict, *, checker: str = "dratify") -> CheckReport:
    """Check a bundle: hashes, re-derived CNF, then the independent proof check."""
    began = time.monotonic()
    steps: list[str] = []
    try:
        _check_steps(bundle, checker, steps)
    except _Reject as exc:
        return CheckReport(False, str(exc), tuple(steps), _since(began))
    return CheckReport(True, "certificate checks", tuple(steps), _since(began))


def _since(began: float) -> float:
    return round(time.monotonic() - began, 3)


def _field(data: dict, *keys: str) -> Any:
    value: Any = data
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise _Reject(f"bundle lacks {'.'.join(keys)}")
        value = value[key]
    return value


def _text(data: dict, *keys: str) -> str:
    value = _field(data, *keys)
    if not isinstance(value, str):
        raise _Reject(f"{'.'.join(keys)} is not text")
    return value


def _claim(bundle: dict) -> tuple[Question, int | None]:
    """Return the bundle's question and bound, refusing any other shape."""
    try:
        question = Question(_field(bundle, "claim", "question"))
    except (ValueError, TypeError):
        known = ", ".join(q.value for q in Question)
        raise _Reject(f"claim.question is not one of {known}") from None
    bound = _field(bundle, "claim", "bound")
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
        raise _Reject(f"claim.bound is not a whole number: {bound!r}")
    return question, bound


def _check_steps(bundle: dict, checker: str, steps: list[str]) -> None:
    if checker not in CHECKERS:
        raise _Reject(f"unknown checker {checker!r} (known: {', '.join(CHECKERS)})")
    start_data = _field(bundle, "start")
    if sha256(canonical_json(start_data)) != _text(bundle, "start_sha256"):
        raise _Reject(
            "the start does not match start_sha256 (deal or position changed)"
        )
    steps.append("start matches its hash")
    try:
        start = start_from_json(start_data)
    except InputError as exc:
        raise _Reject(
            f"the start is not a valid deal or position: {exc.message}"
        ) from None
    question, bound = _claim(bundle)
    dimacs = _text(bundle, "cnf", "dimacs")
    if sha256(dimacs) != _text(bundle, "cnf", "sha256"):
        raise _Reject("the CNF text does not match cnf.sha256 (clauses changed)")
    steps.append("CNF text matches its hash")
    try:
        rederived = formula(start, question, bound)
    except InputError as exc:
        raise _Reject(f"the claim cannot be re-derived: {exc.message}") from None
    if sha256(rederived) != sha256(dimacs):
        made = str((bundle.get("encoding") or {}).get("version", "?"))
        ours = _encoding_version(start.game.name)
        older = f"; made by encoding version {made}, this is {ours}" * (made != ours)
        raise _Reject(
            "the CNF is not our encoding of this start and claim "
            f"(re-derived sha256 {sha256(rederived)[:16]}…, "
            f"bundle {sha256(dimacs)[:16]}…{older})"
        )
    steps.append(f"CNF re-derived from the start: {claim_text(question, bound)}")
    _check_labels(bundle, start, dimacs)
    proof = _text(bundle, "proof", "text")
    if sha256(proof) != _text(bundle, "proof", "sha256"):
        raise _Reject("the proof text does not match proof.sha256 (proof changed)")
    steps.append("proof text matches its hash")
    try:
        verdict, detail = _independent_check(dimacs, proof, checker)
    except ValueError as exc:  # a proof (or CNF) line the checker cannot read
        raise _Reject(f"{checker} rejects the proof: {exc}") from None
    if not verdict:
        raise _Reject(f"{checker} rejects the proof: {detail}")
    steps.append(f"{checker}: {detail}")
    if "line" in bundle:
        steps.append(_check_line(start, bound, bundle["line"]))
    elif question is Question.SCORE:
        steps.append(
            "no line in the bundle: the bound is checked, not that it is reached"
        )


def _check_labels(bundle: dict, start: Start, dimacs: str) -> None:
    """Refuse a bundle whose labels contradict what it holds.

    The hashes, the re-derived CNF and the proof check decide validity; the
    labels (game, encoding name, CNF sizes, proof format) are what a reader
    sees first, so a bundle that says "klondike" over a Devil's Grip start,
    or "lrat" over a DRAT proof, is refused rather than passed as valid.
    """
    game = start.game.name
    if bundle.get("game") != game:
        raise _Reject(f"game is {bundle.get('game')!r}, but the start is {game}'s")
    name = _encoder(game).name
    if _field(bundle, "encoding", "name") != name:
        raise _Reject(f"encoding.name is not {name!r}")
    # The CNF is our own re-derivation by now, so its header is well formed.
    for key, value in cnf_sizes(dimacs).items():
        if str(_field(bundle, "cnf", key)) != str(value):
            raise _Reject(f"cnf.{key} does not match the CNF text ({value})")
    if _field(bundle, "proof", "format") != "drat":
        raise _Reject("proof.format is not 'drat', the only format checked here")


def _check_line(start: Start, bound: int | None, line: Any) -> str:
    """Replay a score bundle's line: it must end stuck leaving exactly ``bound``."""
    if bound is None or not isinstance(line, list):
        raise _Reject("a line belongs to a score claim, as a list of moves")
    if not all(isinstance(move, str) for move in line):
        raise _Reject("the line's moves are not all text")
    try:
        moves = start.game.parse_moves("\n".join(line))
    except InputError as exc:
        raise _Reject(f"the line does not parse: {exc.message}") from None
    outcome = replay(start.game, start.state, moves)
    if outcome.error or not outcome.stuck or outcome.score != bound:
        raise _Reject(f"the line does not reach the bound: {outcome.verdict()}")
    return f"line replayed: it leaves {card_count(bound)}, so the best score is {bound}"


def _independent_check(dimacs: str, proof: str, checker: str) -> tuple[bool, str]:
    """Run a third-party DRAT/DRUP checker; return (valid, its words)."""
    if checker == "dratify":
        from dratify import check_proof, parse_dimacs

        result = check_proof(parse_dimacs(dimacs), proof)
        return bool(result.ok), str(result.reason)
    import drup

    # drup reads DRUP (no deletion lines); deletions only speed checking up.
    lemmas = "\n".join(
        line for line in proof.splitlines() if line and not line.startswith("d")
    )
    result = drup.check_proof_from_strings(dimacs, lemmas + "\n")
    return result.outcome == drup.Outcome.VALID, str(result.outcome)
