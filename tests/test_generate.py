"""Graded, proven, guaranteed-winnable deals: features, grades, generator, corpus."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from patience_encodings import generate, grading
from patience_encodings.engines import engines_for
from service.cli import main
from verifier import devils_grip as dg
from verifier.cards import parse_cards
from verifier.devils_grip_construct import construct
from verifier.errors import InputError
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status
from verifier.shuffle import Rng

CORPUS = Path(__file__).resolve().parent.parent / "seeds/curated/devils-grip.jsonl"
needs_prover = pytest.mark.skipif(
    not engines_for("devils-grip"), reason="no Devil's Grip prover registered"
)


def _deal(seed: int) -> tuple:
    return construct(seed).deal


# -- the fast table agrees with the reference engine ------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_player_lines_replay_to_the_same_score(seed):
    deal = _deal(seed)
    rng = Rng(seed)
    for policy in (grading.greedy, grading.casual(rng), grading.casual(rng)):
        table = grading.play(deal, policy)
        outcome = replay(dg.GAME, dg.initial_state(deal), table.moves)
        assert outcome.ok, outcome.verdict()
        assert outcome.stuck and outcome.score == len(table.talon)
        assert dg.is_complete(outcome.final) == (not table.talon)


def test_greedy_player_wins_a_constructed_easy_deal():
    easy = next(c for c in generate.candidates(3) if c.grade == "easy")
    start = dg.initial_state(easy.built.deal)
    table = grading.play(easy.built.deal, grading.greedy)
    final = replay(dg.GAME, start, table.moves).final
    line = table.moves + dg.finishing_moves(final)  # the swaps that sort the rows
    assert replay(dg.GAME, start, line).won


def test_tables_never_merge_after_the_stock_is_exhausted():
    table = grading.play(_deal(11), grading.greedy)
    stock_left = dg.STOCK_SIZE
    for move in table.moves:
        if isinstance(move, dg.Merge):
            assert stock_left > 0
            stock_left -= 1
        elif move == dg.DEAL:
            stock_left -= min(dg.PACKET, stock_left)


# -- features and grades ------------------------------------------------------------
def test_forced_merges_follow_the_stock_pointer_arithmetic():
    deal = list(_deal(0))
    stock = deal[dg.GRID_SIZE :]
    # Put base cards at stock positions 2, 3 and 7 (others non-bases) by
    # exchanging cards within the stock, so the deal stays a valid deck.
    bases = [i for i, c in enumerate(stock) if c.rank in dg.BASE_RANKS]
    others = [i for i, c in enumerate(stock) if c.rank not in dg.BASE_RANKS]
    order = [others.pop() if i not in (2, 3, 7) else bases.pop() for i in range(8)]
    rest = [i for i in range(len(stock)) if i not in order]
    stock = [stock[i] for i in order] + [stock[i] for i in rest]
    deal[dg.GRID_SIZE :] = stock
    dg.validate_deal(deal)
    assert grading.stock_bases(deal)[:3] == [2, 3, 7]
    # 2 from 0: two merges then the base; 3 right after; 7 from 4: 0 + 1.
    assert grading.forced_merges(deal[: dg.GRID_SIZE + 8]) == 3 + 1 + 1


@pytest.mark.parametrize("seed", range(8))
def test_winning_lines_make_at_least_the_forced_merges(seed):
    built = construct(seed)
    merges = sum(isinstance(m, dg.Merge) for m in built.line)
    assert merges >= grading.forced_merges(built.deal)


def test_features_are_deterministic_and_graded_by_the_frozen_thresholds():
    deal = _deal(5)
    features = grading.measure(deal)
    assert grading.measure(deal) == features
    assert features.difficulty == min(features.greedy_score, features.casual_p10)
    assert features.casual_best <= features.casual_p10
    assert features.casual_wins == 0 or features.casual_best == 0
    grades = [grading.grade_of(d) for d in (0, 1, 5, 6, 10, 11, 40)]
    assert grades == ["easy", "medium", "medium", "hard", "hard", "expert", "expert"]


def test_deal_id_is_a_stable_hash_of_the_deal_text():
    deal = _deal(2)
    assert grading.deal_id(deal) == grading.deal_id(dg.parse_deal(dg.format_deal(deal)))
    assert len(grading.deal_id(deal)) == 12
    assert grading.deal_id(deal) != grading.deal_id(_deal(3))


# -- the generator ------------------------------------------------------------------
@needs_prover
def test_same_seed_same_deals_and_any_is_the_constructed_deal():
    first = [d.to_json() for d in generate.generate(2, 21)]
    assert [d.to_json() for d in generate.generate(2, 21)] == first
    assert [dg.deal_from_list(d["deal"]) for d in first] == [_deal(21), _deal(22)]


@needs_prover
@pytest.mark.parametrize("grade", grading.GRADES)
def test_difficulty_returns_a_proven_deal_of_that_grade(grade):
    made = generate.generate_one(8, grade)
    assert made.grade == grade
    assert grading.grade_of(grading.measure(made.deal).difficulty) == grade
    assert made.proof.status is Status.WON and made.proof.method
    assert grading.stock_bases(made.deal)
    moves = dg.parse_moves("\n".join(made.line))
    assert replay(dg.GAME, dg.initial_state(made.deal), moves).won


def test_an_unreachable_grade_is_a_clear_error():
    seed = next(s for s in range(50) if _first_grade(s) not in (None, "easy"))
    with pytest.raises(InputError, match="no easy deal among the first 1 "):
        generate.generate_one(seed, "easy", limit=1)


def _first_grade(seed: int) -> str | None:
    first = next(generate.candidates(seed, limit=1), None)
    return first.grade if first else None


def test_bad_requests_are_input_errors():
    with pytest.raises(InputError, match="difficulty must be one of"):
        generate.generate_one(1, "nightmare")
    with pytest.raises(InputError, match="count must be at least 1"):
        next(generate.generate(0, 1))
    with pytest.raises(InputError, match="seed must be between"):
        next(generate.generate(1, -1))


def test_a_deal_is_not_shipped_without_a_proof():
    candidate = next(generate.candidates(4))
    unknown = ProofResult(Status.UNKNOWN, False, "sat", Question.VERDICT)
    with pytest.raises(generate.ProofTimeoutError, match="seed 4, candidate 0"):
        generate.ship(4, candidate, unknown)
    lost = ProofResult(Status.LOST, True, "sat", Question.VERDICT)
    with pytest.raises(AssertionError, match="proved a constructed deal lost"):
        generate.ship(4, candidate, lost)


def test_candidate_streams_differ_by_seed_and_start_with_the_seed():
    first = list(zip(range(4), generate.candidate_seeds(9), strict=False))
    assert first[0] == (0, 9)
    other = [s for _, s in zip(range(4), generate.candidate_seeds(10), strict=False)]
    assert not {s for _, s in first} & set(other)


# -- the CLI ----------------------------------------------------------------
@needs_prover
def test_cli_generate_json_is_reproducible_and_replays(capsys):
    argv = ["generate", "--count", "2", "--seed", "31", "--difficulty", "medium"]
    assert main([*argv, "--json"]) == 0
    first = capsys.readouterr().out
    assert main([*argv, "--json"]) == 0
    assert capsys.readouterr().out == first
    for line in first.splitlines():
        item = json.loads(line)
        assert item["grade"] == "medium" and item["proof"]["status"] == "won"
        deal = dg.deal_from_list(item["deal"])
        assert dg.parse_deal(item["text"]) == deal
        assert item["id"] == grading.deal_id(deal)
        moves = dg.parse_moves("\n".join(item["line"]))
        assert replay(dg.GAME, dg.initial_state(deal), moves).won


@needs_prover
def test_cli_generate_text_names_grade_and_solution(capsys):
    assert main(["generate", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    made = generate.generate_one(3)
    assert out.startswith(f"# deal {made.id}: {made.grade} ")
    assert f"# solution, {len(made.line)} moves" in out


def test_cli_generate_bad_input_exits_2(capsys):
    assert main(["generate", "--difficulty", "nightmare", "--seed", "1"]) == 2
    assert "difficulty must be one of" in capsys.readouterr().err
    assert main(["generate", "--count", "0", "--seed", "1"]) == 2


# -- the curated corpus ---------------------------------------------------------------
def _corpus() -> list[dict]:
    return [json.loads(line) for line in CORPUS.read_text().splitlines() if line]


def test_every_curated_solution_replays_to_a_win():
    for item in _corpus():
        deal = dg.deal_from_list(item["deal"])
        assert dg.parse_deal(item["text"]) == deal
        moves = dg.parse_moves("\n".join(item["line"]))
        outcome = replay(dg.GAME, dg.initial_state(deal), moves)
        assert outcome.won, (item["id"], outcome.verdict())
        assert item["proof"]["status"] == "won" and item["proof"]["engine"]


def test_curated_corpus_follows_the_diversity_rules():
    corpus = _corpus()
    grades = Counter(item["grade"] for item in corpus)
    assert len(corpus) >= 100 and len(grades) >= 3
    assert max(grades.values()) - min(grades.values()) <= 1  # evenly covered
    grids = Counter(
        tuple(sorted(parse_cards(" ".join(item["deal"][: dg.GRID_SIZE]))))
        for item in corpus
    )
    assert max(grids.values()) == 1  # no two share the same 24 grid cards
    for item in corpus:
        stock = parse_cards(" ".join(item["deal"][dg.GRID_SIZE :]))
        assert any(c.rank in dg.BASE_RANKS for c in stock)  # not every base in grid


def test_curated_grades_and_ids_are_recomputed_exactly():
    for item in _corpus():
        deal = dg.deal_from_list(item["deal"])
        features = grading.measure(deal)
        assert features.to_json() == item["features"], item["id"]
        assert grading.grade_of(features.difficulty) == item["grade"]
        assert grading.deal_id(deal) == item["id"]
        assert construct(item["seed"]).deal == deal  # `generate --seed` again
