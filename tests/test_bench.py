"""The benchmark's figures: where a best-score proof's time goes."""

from __future__ import annotations

import pytest

from patience_encodings import bench
from verifier.results import ProofResult, Question, Status


def _proof(elapsed: float, lines: list[list[float]], **stats) -> ProofResult:
    """A proven best score of 10 with the SAT prover's stats."""
    return ProofResult(
        Status.LOST,
        True,
        "sat",
        Question.SCORE,
        best_score=10,
        score_proven=True,
        lower_bound=10,
        elapsed=elapsed,
        stats={"build_s": 0.1, "load_s": 0.05, "beam_s": 0.15, "lines": lines} | stats,
    )


def test_a_proof_splits_at_its_last_line_or_at_the_beams_end():
    found_later = _proof(2.0, [[12, 0.5], [10, 1.25]])
    assert bench.proof_parts(found_later) == pytest.approx(
        {"formula and beam": 0.3, "optimal line at": 1.25, "after it": 0.75}
    )
    beams_line = _proof(0.9, [])  # the beam's line was optimal
    assert bench.proof_parts(beams_line) == pytest.approx(
        {"formula and beam": 0.3, "optimal line at": 0.3, "after it": 0.6}
    )


def test_only_proven_scores_with_a_line_search_are_split():
    unproven = ProofResult(
        Status.LOST, True, "sat", Question.SCORE, best_score=12, lower_bound=9
    )
    searched = ProofResult(
        Status.LOST, True, "search", Question.SCORE, 10, True, 10, stats={"nodes": 5}
    )
    assert bench.proof_parts(unproven) is None
    assert bench.proof_parts(searched) is None
    assert bench.time_split([unproven, searched])["parts"] == {}
    assert bench.format_split("auto", bench.time_split([unproven])) == ""


def test_the_split_gives_medians_p90s_and_the_lines_by_neighbourhood():
    proofs = [
        _proof(1.0 + i, [[11, 0.5 + i / 10]], lns_lines={"kept": 2, "whole": i})
        for i in range(10)
    ]
    split = bench.time_split(proofs)
    assert split["proofs"] == 10
    median, p90 = split["parts"]["optimal line at"]
    assert median == pytest.approx(0.95)
    assert p90 == bench.percentile([0.5 + i / 10 for i in range(10)], 0.9)
    assert split["lines_by"] == {"whole": 45, "kept": 20}
    text = bench.format_split("auto", split)
    assert text.startswith("Where the time goes, auto (10 proofs; median, p90):")
    assert f"optimal line at 0.95 s, {p90:.2f} s" in text
    assert text.endswith("Better lines found by: whole 45, kept 20")
