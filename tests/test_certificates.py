"""Certificates: CNF + DRAT proof + hashes, checked by an independent checker."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path

import pytest
from dg_helpers import position

from patience_encodings import certificates as cert
from patience_encodings import engines
from service.cli import main
from verifier.formats import Start, read_start, start_from_number
from verifier.registry import get_game
from verifier.results import Question, Status

VECTORS = Path(__file__).resolve().parent.parent / "seeds" / "vectors"
GAME = get_game("devils-grip")


@pytest.fixture(scope="module")
def late_dead():
    """A dead position with 13 stock cards, its proven best score and bundle."""
    start = read_start((VECTORS / "devils-grip-dead-13-stock.json").read_text())
    result = engines.solve(start, question=Question.SCORE, time_limit=120)
    assert result.status is Status.LOST and result.score_proven
    return start, result, cert.certify_result(start, result)


def test_dead_deal_verdict_certificate_checks():
    bundle = cert.certify(start_from_number(GAME, 1), Question.VERDICT)
    report = cert.check(bundle)
    assert report.ok, report.reason
    assert bundle["claim"]["text"] == "no line wins"
    assert bundle["cnf"]["clauses"] > 10_000
    assert any("CNF re-derived" in step for step in report.steps)


def test_score_certificate_needs_a_real_proof_and_checks(late_dead):
    _, result, bundle = late_dead
    assert bundle["claim"]["bound"] == result.best_score
    assert bundle["proof"]["steps"] > 100  # not refuted by unit propagation alone
    report = cert.check(bundle)
    assert report.ok, report.reason
    assert report.seconds < 30


def test_a_score_bundle_carries_the_line_that_reaches_its_bound(late_dead):
    _, result, bundle = late_dead
    assert bundle["line"] == list(result.line)
    steps = cert.check(bundle).steps
    assert steps[-1].startswith("line replayed") and str(result.best_score) in steps[-1]
    bare = copy.deepcopy(bundle)
    del bare["line"]
    assert "not that it is reached" in cert.check(bare).steps[-1]
    short = copy.deepcopy(bundle)
    short["line"] = short["line"][:-1]
    report = cert.check(short)
    assert not report.ok and "does not reach the bound" in report.reason


def test_a_verdict_asked_gets_the_verdict_certificate(late_dead):
    """A verdict result may know its best score too; the claim certified is
    still the one asked, which is also the far easier formula."""
    start, result, _ = late_dead
    asked = replace(result, question=Question.VERDICT)
    bundle = cert.certify_result(start, asked)
    assert bundle["claim"]["question"] == "verdict" and "line" not in bundle


def test_false_claims_get_no_certificate(late_dead):
    start, result, _ = late_dead
    with pytest.raises(cert.InputError, match="claim is false"):
        cert.certify(start, Question.SCORE, result.best_score + 1)


def test_dropped_clause_is_rejected(late_dead):
    bundle = copy.deepcopy(late_dead[2])
    lines = bundle["cnf"]["dimacs"].split("\n")
    del lines[7]
    bundle["cnf"]["dimacs"] = "\n".join(lines)
    assert cert.check(bundle).reason.startswith("the CNF text does not match")
    bundle["cnf"]["sha256"] = cert.sha256(bundle["cnf"]["dimacs"])
    reason = cert.check(bundle).reason
    assert reason.startswith("the CNF is not our encoding") and "version" not in reason
    bundle["encoding"]["version"] = "0"  # as if made by an older encoder
    assert "made by encoding version 0, this is " in cert.check(bundle).reason


def test_changed_proof_line_is_rejected(late_dead):
    bundle = copy.deepcopy(late_dead[2])
    lines = bundle["proof"]["text"].split("\n")
    index = next(i for i, line in enumerate(lines) if line and line[0] != "d")
    lines[index] = "0"  # the empty clause, too early: unit propagation cannot refute
    bundle["proof"]["text"] = "\n".join(lines)
    assert "proof.sha256" in cert.check(bundle).reason
    bundle["proof"]["sha256"] = cert.sha256(bundle["proof"]["text"])
    report = cert.check(bundle)
    assert not report.ok and report.reason.startswith("dratify rejects the proof")


def test_another_deals_start_is_rejected():
    bundle = cert.certify(start_from_number(GAME, 1), Question.VERDICT)
    bundle["start"] = {"game": "devils-grip", "number": 2}
    assert "start_sha256" in cert.check(bundle).reason
    bundle["start_sha256"] = cert.sha256(cert.canonical_json(bundle["start"]))
    assert cert.check(bundle).reason.startswith("the CNF is not our encoding")


def test_drup_checks_a_small_certificate():
    state = position({"A1": "2S 5S 8S", "A2": "5H 8H JH"}, talon="2H JS")
    bundle = cert.certify(Start(GAME, state, "position"), Question.SCORE, 1)
    report = cert.check(bundle, checker="drup")
    assert report.ok and "VALID" in report.steps[-2]
    assert "not that it is reached" in report.steps[-1]  # certify alone: no line


def test_cli_certify_and_check(tmp_path, capsys):
    out = tmp_path / "deal-1.cert.json.gz"
    assert main(["certify", "--number", "1", "-o", str(out)]) == 0
    assert "no line wins" in capsys.readouterr().out
    assert main(["check-cert", str(out)]) == 0
    assert "VALID: certificate checks" in capsys.readouterr().out
    bundle = cert.read(out)
    bundle["start_sha256"] = "0" * 64
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(bundle))
    assert main(["check-cert", str(broken)]) == 1
    assert "REJECTED" in capsys.readouterr().out
    junk = tmp_path / "junk.json"
    junk.write_text("{}")
    assert main(["check-cert", str(junk)]) == 2


@pytest.fixture(scope="module")
def small_bundle():
    state = position({"A1": "2S 5S 8S", "A2": "5H 8H JH"}, talon="2H JS")
    return cert.certify(Start(GAME, state, "position"), Question.SCORE, 1)


def _rehash(bundle: dict) -> dict:
    """Make every hash match again, as a careful forger would."""
    if isinstance(bundle["start"], dict):
        bundle["start_sha256"] = cert.sha256(cert.canonical_json(bundle["start"]))
    for part, key in (("cnf", "dimacs"), ("proof", "text")):
        if isinstance(bundle[part][key], str):
            bundle[part]["sha256"] = cert.sha256(bundle[part][key])
    return bundle


@pytest.mark.parametrize(
    "path, value, fragment",
    [
        (("claim", "question"), "Verdict", "claim.question is not one of"),
        (("claim", "question"), ["verdict"], "claim.question is not one of"),
        (("claim", "bound"), "1", "claim.bound is not a whole number"),
        (("claim", "bound"), 0, "a bound of at least 1"),
        (("cnf", "dimacs"), 5, "cnf.dimacs is not text"),
        (("proof", "text"), 7, "proof.text is not text"),
        (("proof", "text"), "x 0\n", "dratify rejects the proof"),
        (("start", "game"), 5, "'game' must be a string"),
        (("game",), "klondike", "game is 'klondike', but the start is"),
        (("game",), 3, "game is 3, but the start is"),
        (("encoding", "name"), "nonsense", "encoding.name is not"),
        (("cnf", "variables"), "abc", "cnf.variables does not match"),
        (("cnf", "clauses"), 1, "cnf.clauses does not match"),
        (("proof", "format"), "lrat", "proof.format is not 'drat'"),
    ],
)
def test_tampered_bundles_are_rejected_not_crashed(small_bundle, path, value, fragment):
    bundle = copy.deepcopy(small_bundle)
    *parents, key = path
    place = bundle
    for part in parents:
        place = place[part]
    place[key] = value
    report = cert.check(_rehash(bundle))
    assert not report.ok and fragment in report.reason, report.reason


@pytest.mark.parametrize(
    "raw", [b"\x1f\x8b\x08\x00trunc", b"\x1f\x8b" + b"\x00" * 40, b"[" * 5000]
)
def test_broken_bundle_files_are_bad_input(tmp_path, raw):
    path = tmp_path / "x.cert.json.gz"
    path.write_bytes(raw)
    with pytest.raises(cert.InputError, match="not a certificate bundle"):
        cert.read(path)


def test_certify_refuses_an_unwritable_output_before_proving(
    tmp_path, capsys, monkeypatch
):
    from patience_encodings import engines

    def proving(*args, **kwargs):
        pytest.fail("certify proved before it checked where to write")

    monkeypatch.setattr(engines, "solve", proving)
    out = tmp_path / "missing" / "x.cert.json"
    assert main(["certify", "--number", "3", "-o", str(out)]) == 2
    assert "no such directory" in capsys.readouterr().err
    bf = ["certify", "--game", "besieged-fortress", "--number", "1"]
    assert main([*bf, "-o", str(tmp_path / "bf.cert.json")]) == 2
    assert "no certificate encoding" in capsys.readouterr().err
