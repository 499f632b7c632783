"""The SAT encoding of Devil's Grip: exact, complete, sound, deterministic.

- Completeness (UNSAT means no line): every real line -- constructed wins,
  random lines with swaps and late merges -- is a model of the formula without
  the dominance restrictions (`line_assignment`), and fits the slots 0..n.
- Soundness: every answer's line replays with the reference engine.
- Exactness of the optimum: on late-game positions the proven best score and
  verdict agree with an unpruned exhaustive search, with and without the
  dominance restrictions.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterator
from dataclasses import replace

import pytest
from dg_helpers import position, winnable_position
from pysat.solvers import Solver

from patience_encodings import devils_grip_sat as sat
from patience_encodings import engines
from patience_encodings.devils_grip_sat_cnf import (
    TALON,
    Encoding,
    build_cnf,
    build_encoding,
    layout_of,
)
from patience_encodings.devils_grip_sat_lines import (
    decode,
    line_assignment,
    trace_line,
)
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.formats import start_from_deal
from verifier.replay import replay
from verifier.results import (
    Question,
    Status,
    answer_deadline,
    check_result,
    set_answer_deadline,
    set_line_source,
    set_partial_sink,
)


# -- references ----------------------------------------------------------------------
def brute_best_score(state: dg.State) -> int:
    """Least talon count over every line without swaps (no pruning at all)."""
    memo: dict = {}

    def best(s: dg.State) -> int:
        key = (tuple(sorted(s.grid)), len(s.stock), s.talon)
        if key not in memo:
            if dg.is_stuck(s):
                memo[key] = len(s.talon)
            else:
                moves = dg.legal_moves(s, swaps=False)
                memo[key] = min(best(dg.apply(s, m)) for m in moves)
        return memo[key]

    return best(state)


def random_line(state: dg.State, rng: random.Random) -> list[dg.Move]:
    """Play random legal moves (swaps and late merges included) until stuck."""
    line: list[dg.Move] = []
    while not dg.is_stuck(state):
        moves = dg.legal_moves(state)
        links = [m for m in moves if isinstance(m, dg.Merge | dg.TalonPlay)]
        roll = rng.random()
        if roll < 0.05:
            move = rng.choice([m for m in moves if isinstance(m, dg.Swap)])
        elif links and (roll < 0.75 or not state.stock):
            move = rng.choice(links)
        else:
            move = dg.DEAL
        line.append(move)
        state = dg.apply(state, move)
    return line


def late_positions(count: int, seed: int, max_stock: int = 9) -> Iterator[dg.State]:
    """Positions late in constructed wins, then a few random moves off course."""
    rng = random.Random(seed)
    for _ in range(count):
        built = construct(rng.randrange(1 << 30))
        state = dg.initial_state(built.deal)
        cut = rng.randrange(len(built.line))
        for i, move in enumerate(built.line):
            if isinstance(move, dg.Swap):
                break
            if len(state.stock) <= max_stock and i >= cut:
                break
            state = dg.apply(state, move)
        for _ in range(rng.randrange(8)):
            moves = dg.legal_moves(state, swaps=False)
            if not moves:
                break
            state = dg.apply(state, rng.choice(moves))
        yield state


def jammed_positions(count: int, seed: int) -> Iterator[dg.State]:
    """Numbered deals played at random down to 6..15 stock cards: big talons."""
    rng = random.Random(seed)
    for _ in range(count):
        state = dg.initial_state(dg.numbered_deal(rng.randrange(1, 10**6)))
        max_stock = rng.randrange(6, 16)
        while len(state.stock) > max_stock:
            moves = dg.legal_moves(state, swaps=False)
            links = [m for m in moves if isinstance(m, dg.Merge | dg.TalonPlay)]
            if links and rng.random() < 0.8:
                state = dg.apply(state, rng.choice(links))
            else:
                state = dg.apply(state, dg.DEAL)
        yield state


def assignment_is_model(cnf_clauses: list[list[int]], values: dict[int, bool]) -> bool:
    """Return whether the clauses are satisfiable with ``values`` fixed."""
    with Solver(name=sat.SOLVER, bootstrap_with=cnf_clauses) as solver:
        return solver.solve(assumptions=[v if b else -v for v, b in values.items()])


# -- completeness: every line is a model -------------------------------------------
@pytest.mark.parametrize("seed", range(6))
def test_constructed_winning_lines_are_models_and_fit_the_slots(seed):
    built = construct(seed)
    state = dg.initial_state(built.deal)
    placements = sum(isinstance(m, dg.Merge | dg.TalonPlay) for m in built.line)
    deals = sum(m == dg.DEAL for m in built.line)
    assert placements == 72 and deals <= 24  # the horizon argument, checked
    enc = build_encoding(state, Question.VERDICT, dominance=False)
    trace = trace_line(enc.layout, built.line)
    assert all(0 <= t < enc.layout.n for t in trace.events)
    assert all(0 <= t <= enc.layout.n for t in trace.slot_of.values())
    assert assignment_is_model(enc.clauses, line_assignment(enc, built.line))


@pytest.mark.parametrize("number", range(1, 9))
def test_random_lines_are_models_of_the_score_formula(number):
    state = dg.initial_state(dg.numbered_deal(number))
    line = random_line(state, random.Random(number))
    outcome = replay(dg.GAME, state, line)
    assert outcome.ok and outcome.stuck
    enc_plain = build_encoding(state, Question.SCORE, dominance=False)
    enc_plain.add_score_bound(outcome.score, outcome.score)
    assert assignment_is_model(enc_plain.clauses, line_assignment(enc_plain, line))
    if outcome.score > 0:  # a bound one below the line's score excludes it
        enc_tight = build_encoding(state, Question.SCORE, dominance=False)
        enc_tight.add_score_bound(outcome.score - 1, outcome.score - 1)
        values = line_assignment(enc_tight, line)
        assert not assignment_is_model(enc_tight.clauses, values)


def test_mid_game_positions_with_talon_are_encoded_completely():
    rng = random.Random(7)
    for state in [*late_positions(6, seed=11), *jammed_positions(3, seed=5)]:
        line = random_line(state, rng)
        enc = build_encoding(state, Question.SCORE, dominance=False)
        assert assignment_is_model(enc.clauses, line_assignment(enc, line))


# -- soundness and answers ------------------------------------------------------------
@pytest.mark.parametrize("number", range(1, 21))
def test_numbered_deals_are_proven_lost(number):
    state = dg.initial_state(dg.numbered_deal(number))
    result = sat.prove(state, question=Question.VERDICT, time_limit=30)
    assert result.status is Status.LOST and result.proven
    assert "UNSAT" in result.method and result.lower_bound == 1


@pytest.mark.parametrize("seed", range(12))
def test_constructed_deals_are_won_with_a_line_that_replays(seed):
    state = dg.initial_state(construct(seed).deal)
    result = sat.prove(state, question=Question.VERDICT, time_limit=30)
    assert result.status is Status.WON and result.best_score == 0
    outcome = replay(dg.GAME, state, dg.parse_moves("\n".join(result.line)))
    assert outcome.won


def test_hand_made_positions():
    state, _ = winnable_position()
    for question in Question:
        result = sat.prove(state, question=question, time_limit=30)
        assert result.status is Status.WON
        check_result(dg.GAME, state, result)
    dead = position({"A1": "2S 5S 8S", "A2": "5H 8H JH"}, talon="2H JS")
    result = sat.prove(dead, question=Question.SCORE, time_limit=30)
    assert (result.status, result.best_score, result.score_proven) == (
        Status.LOST,
        1,
        True,
    )
    assert sat.prove(dead, question=Question.VERDICT, time_limit=30).proven


def test_won_position_needs_only_the_sorting_swaps():
    state = dg.initial_state(construct(3).deal)
    for move in construct(3).line:
        if isinstance(move, dg.Swap):
            break
        state = dg.apply(state, move)
    result = sat.prove(state, question=Question.VERDICT, time_limit=30)
    assert result.status is Status.WON
    assert all("<>" in move for move in result.line)


@pytest.mark.parametrize("chunk", range(4))
def test_best_score_and_verdict_agree_with_exhaustive_search(chunk):
    states = [*late_positions(8, seed=100 + chunk), *jammed_positions(3, seed=chunk)]
    for state in states:
        expected = brute_best_score(state)
        for dominance in (True, False):
            result = _score(state, dominance)
            assert result.score_proven and result.best_score == expected
        verdict = sat.prove(state, question=Question.VERDICT, time_limit=30)
        assert (verdict.status is Status.WON) == (expected == 0)


@pytest.mark.parametrize("plan", [sat.LINES, sat.AT_ONCE, sat.Plan(view="grid")])
def test_each_single_view_plan_proves_the_exhaustive_best_score(plan):
    """A plan may run one view of the score alone, or none (``auto`` finds
    lines all along in one member and counts short stacks at once in the
    other): each must be exact."""
    for state in [*late_positions(4, seed=700), *jammed_positions(3, seed=7)]:
        result = sat.prove(state, question=Question.SCORE, time_limit=60, plan=plan)
        assert result.score_proven and result.best_score == brute_best_score(state)
        views = {view for _, _, view in result.stats.get("core_bounds", [])}
        assert views <= {plan.view}
        if plan is sat.LINES:  # the line search ran to its proof
            assert "core_bounds" not in result.stats


@pytest.mark.parametrize(
    ("plan", "time_limit"),
    [
        (
            sat.Plan(
                view="links",
                beam_share=0.05,
                beam_cap=0.5,
                lines_share=1.0,
                lines_cap=None,
            ),
            60,
        ),
        # The one-core member: one sweep of windows, then the whole formula.
        (sat.ALONE, 20),
    ],
    ids=["windows-grow", "alone"],
)
def test_lines_all_along_prove_a_whole_deal_by_the_descent(plan, time_limit):
    """Deal 12 (best score 6): with the line search given the whole limit,
    its last stage (the whole formula under "one card fewer") is the proof."""
    state = dg.initial_state(dg.numbered_deal(12))
    result = sat.prove(state, question=Question.SCORE, time_limit=time_limit, plan=plan)
    assert result.score_proven and result.best_score == 6
    check_result(dg.GAME, state, result)
    assert "totalizer UNSAT at 5" in result.method
    assert "core_bounds" not in result.stats and result.stats["lns_calls"] > 0


def test_a_beam_share_used_up_before_the_beam_starts_still_gives_its_line():
    """On a slow machine the build can use up the beam's share (it counts
    from the prover's start); the beam's first run then still ends, so the
    line search starts from the beam's line, not from the solver's first
    model. A share of 0 stands in for the slow machine."""
    plan = replace(sat.ALONE, beam_share=0.0)
    state = dg.initial_state(dg.numbered_deal(12))
    result = sat.prove(state, question=Question.SCORE, time_limit=20, plan=plan)
    assert result.score_proven and result.best_score == 6
    beam_score = result.stats.get("beam_score")
    assert beam_score is not None and beam_score >= 6
    assert all(score < beam_score for score, _ in result.stats["lines"])


def test_a_single_view_proves_a_whole_deals_best_score():
    """Deal 12 (best score 6): the short-stacks view alone, after a short beam."""
    plan = sat.Plan(view="grid", beam_share=0.05, beam_cap=0.5)
    state = dg.initial_state(dg.numbered_deal(12))
    result = sat.prove(state, question=Question.SCORE, time_limit=60, plan=plan)
    assert result.score_proven and result.best_score == 6
    check_result(dg.GAME, state, result)
    if "totalizer UNSAT" not in result.method:  # else the descent proved it
        assert "counting short stacks" in result.method
        assert {view for *_, view in result.stats["core_bounds"]} == {"grid"}


def test_the_search_at_once_proves_an_easy_deal_with_no_line_in_hand():
    """Deal 12 (best score 6): RC2 at once, its optimal model the line."""
    state = dg.initial_state(dg.numbered_deal(12))
    result = sat.prove(state, question=Question.SCORE, time_limit=60, plan=sat.AT_ONCE)
    assert result.score_proven and result.best_score == 6
    check_result(dg.GAME, state, result)
    assert "counting short stacks, with no line in hand" in result.method
    assert "beam_s" not in result.stats and "lns_s" not in result.stats
    bounds = [bound for bound, *_ in result.stats["core_bounds"]]
    assert bounds == sorted(bounds) and bounds[-1] == 6


def test_partial_answers_say_not_yet_and_the_final_one_says_in_time():
    """A partial answer may be quoted in a joint proof: it must not say the
    time ran out while the prover is still running."""
    state = dg.initial_state(dg.numbered_deal(12))
    partials = []
    set_partial_sink(partials.append)
    try:
        result = sat.prove(state, question=Question.SCORE, time_limit=60)
    finally:
        set_partial_sink(None)
    assert result.score_proven
    unproven = [p for p in partials if not p.score_proven]
    assert unproven and all("not proven yet" in p.method for p in unproven)
    hard = dg.initial_state(dg.numbered_deal(1))  # its proof takes 30 s alone
    stopped = sat.prove(hard, question=Question.SCORE, time_limit=1.5)
    assert not stopped.score_proven and "not proven in time" in stopped.method


@pytest.mark.parametrize("elsewhere", [6, 7])
def test_a_line_found_elsewhere_restricts_the_search_at_once(elsewhere):
    """Deal 12 (best score 6): given a fellow member's line of 6, the search
    at once proves that no line leaves fewer (the bound joins that line in
    the portfolio); given one of 7, it finds the optimal line itself."""
    state = dg.initial_state(dg.numbered_deal(12))
    set_line_source(lambda: elsewhere)
    try:
        result = sat.prove(
            state, question=Question.SCORE, time_limit=60, plan=sat.AT_ONCE
        )
    finally:
        set_line_source(None)
    assert "searching below the lines found elsewhere" in result.method
    assert result.stats["first_line_elsewhere"][0] == elsewhere
    assert result.lower_bound == 6
    if elsewhere == 6:
        assert not result.score_proven and result.best_score is None
        assert "not proven alone: its bound meets a line found" in result.method
    else:
        assert result.score_proven and result.best_score == 6
        check_result(dg.GAME, state, result)


def test_a_bound_without_its_line_is_reported_unproven():
    """Stopped early, the search at once keeps its proven bound, no line."""
    state = dg.initial_state(dg.numbered_deal(1))  # best score 10
    result = sat.prove(state, question=Question.SCORE, time_limit=1.5, plan=sat.AT_ONCE)
    assert result.status is Status.LOST and result.proven
    assert not result.score_proven and result.best_score is None
    assert not result.line and 1 <= result.lower_bound <= 10


def _score(state: dg.State, dominance: bool):
    return sat.solve_position(
        state, question=Question.SCORE, time_limit=60, dominance=dominance
    )


def test_score_of_an_early_position_is_proven_with_a_line():
    built = construct(5)
    state = dg.initial_state(built.deal)
    for move in built.line[:30]:
        state = dg.apply(state, move)
    state = dg.apply(state, dg.DEAL) if state.stock else state
    result = sat.prove(state, question=Question.SCORE, time_limit=60)
    assert result.score_proven or result.status is Status.WON
    check_result(dg.GAME, state, result)


def test_time_limit_returns_the_best_line_so_far():
    # Deal 136's best score (16) took `auto` 9 s on a fast day, deal 1's 2 s.
    state = dg.initial_state(dg.numbered_deal(136))
    result = sat.prove(state, question=Question.SCORE, time_limit=3.0)
    assert result.status is Status.LOST and result.proven  # no win: proven
    assert not result.score_proven and result.lower_bound >= 1  # cores may raise it
    assert result.best_score is not None and result.line  # the beam's at least
    assert result.lower_bound <= result.best_score
    assert result.elapsed < 10  # conflict budgets let it stop near the limit
    check_result(dg.GAME, state, result)


# -- the formula itself ------------------------------------------------------------
def test_build_cnf_is_deterministic():
    state = dg.initial_state(dg.numbered_deal(42))
    digests = set()
    for _ in range(2):
        cnf, _ = build_cnf(state, Question.SCORE, bound=12)
        text = "\n".join(" ".join(map(str, c)) for c in cnf.clauses)
        digests.add(hashlib.sha256(f"{cnf.nv}\n{text}".encode()).hexdigest())
    assert len(digests) == 1


@pytest.mark.parametrize(
    ("lits", "kept"),
    [
        ((5, -7), [5, -7]),
        ((5, 5), [5]),
        ((5, -5), None),  # a tautology
        (("T", 5), None),  # satisfied by the true constant
        (("F", 5), [5]),  # the false constant dropped
        (("F", "F"), ["F"]),  # nothing left: the empty clause, kept as false
        ((5, -7, 9), [5, -7, 9]),
        ((5, -7, 5), [5, -7]),
        ((5, -7, 7), None),
        ((5, "T", 9), None),
        ((5, "F", 9), [5, 9]),
    ],
)
def test_add_simplifies_clauses_against_the_constants(lits, kept):
    """Binary clauses take a quick test; every length keeps the same rules."""
    enc = Encoding(layout_of(winnable_position()[0]))  # no clauses yet
    named = {"T": enc.true, "F": -enc.true}
    before = len(enc.clauses)
    enc.add(*(named.get(lit, lit) for lit in lits))
    added = enc.clauses[before:]
    assert added == ([] if kept is None else [[named.get(x, x) for x in kept]])


def test_score_bound_formula_is_unsat_below_the_optimum():
    state = next(jammed_positions(1, seed=42))
    best = sat.prove(state, question=Question.SCORE, time_limit=60)
    assert best.score_proven and best.best_score > 0
    for bound, expected in ((best.best_score, True), (best.best_score - 1, False)):
        cnf, _ = build_cnf(state, Question.SCORE, bound=bound)
        with Solver(name=sat.SOLVER, bootstrap_with=cnf.clauses) as solver:
            assert solver.solve() is expected


def test_decoded_models_replay_step_by_step():
    state = dg.initial_state(dg.numbered_deal(5))
    cnf, enc = build_cnf(state, Question.SCORE)
    with Solver(name=sat.SOLVER, bootstrap_with=cnf.clauses) as solver:
        assert solver.solve()
        model = solver.get_model()
        moves = decode(enc, model)
    end = replay(dg.GAME, state, moves)
    assert end.ok and end.stuck
    assert end.final == sat.model_line(enc, model)[1]
    # The score the model claims: the offset plus the pieces it leaves unlinked.
    claimed = enc.score_offset + sum(model[abs(lit) - 1] == lit for lit in enc.unlinked)
    assert dg.score(end.final) == claimed


# -- the registry and the runner ---------------------------------------------------
def test_registered_and_run_in_a_child_process():
    assert engines.PROVERS["sat"]["devils-grip"] is sat.prove
    start = start_from_deal(dg.GAME, construct(1).deal)
    result = engines.solve(start, engine="sat", time_limit=30)
    assert result.status is Status.WON and result.engine == "sat"


# -- the merge count (implied) -------------------------------------------------------
@pytest.mark.parametrize("size", range(1, 7))
def test_the_exact_totalizer_counts_both_ways(size):
    """Every input assignment forces every output, up and down, at every cut."""
    for ubound in range(size + 1):
        enc = Encoding(layout_of(winnable_position()[0]))  # no clauses yet
        inputs = [enc.pool.id(("input", i)) for i in range(size)]
        outputs = enc._exact_totalizer(inputs, ubound, ("test",))
        assert len(outputs) == min(size, ubound + 1)
        with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as solver:
            for bits in range(2**size):
                fixed = [v if bits >> i & 1 else -v for i, v in enumerate(inputs)]
                count = bin(bits).count("1")
                for r, out in enumerate(outputs, start=1):
                    right = out if count >= r else -out
                    assert solver.solve(assumptions=[*fixed, right])
                    assert not solver.solve(assumptions=[*fixed, -right])


@pytest.mark.parametrize("number", [3, 11])
def test_the_merge_count_counts_a_lines_merges(number):
    """On a real line, "at least j merges before slot t" holds exactly when
    the line has made j merges by then, and the piece tallies agree."""
    state = dg.initial_state(dg.numbered_deal(number))
    line = random_line(state, random.Random(number))
    enc = build_encoding(state, Question.SCORE, dominance=False, merge_count=True)
    events = trace_line(enc.layout, line).events
    values = line_assignment(enc, line)
    with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as solver:
        assert solver.solve(assumptions=[v if b else -v for v, b in values.items()])
        model = {abs(lit): lit > 0 for lit in solver.get_model()}
    checked = 0
    for key, var in enc.pool.obj2id.items():
        if key[0] == "merges":
            _, t, j = key
            made = sum(1 for s, kind in events.items() if s < t and kind == "merge")
            assert model[var] == (made >= j), (t, j, made)
            checked += 1
    assert checked > 1000
    assert any(key[0] == "tally" for key in enc.pool.obj2id)


def _line_without_late_merges(state: dg.State, rng: random.Random) -> list[dg.Move]:
    """Random links and deals, no swaps, no merge once the stock is out."""
    line: list[dg.Move] = []
    while True:
        moves = [
            m
            for m in dg.legal_moves(state, swaps=False)
            if state.stock or not isinstance(m, dg.Merge)
        ]
        links = [m for m in moves if m != dg.DEAL]
        if not moves:
            return line
        if links and (rng.random() < 0.75 or dg.DEAL not in moves):
            move = rng.choice(links)
        else:
            move = dg.DEAL
        line.append(move)
        state = dg.apply(state, move)


@pytest.mark.parametrize("number", [3, 11, 12])
def test_the_cells_count_finds_the_bottoms_of_a_lines_last_grid(number):
    """On a real line, the pieces the cells' count takes for bottoms (drawn and
    never linked, or a drawn base card) are the bottoms of the line's last
    grid: one per cell, card for card."""
    state = dg.initial_state(dg.numbered_deal(number))
    line = _line_without_late_merges(state, random.Random(number))
    outcome = replay(dg.GAME, state, line)
    assert outcome.ok and outcome.stuck
    enc = build_encoding(state, Question.SCORE, dominance=False)
    values = line_assignment(enc, line)
    with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as solver:
        assert solver.solve(assumptions=[v if b else -v for v, b in values.items()])
        model = {abs(lit): lit > 0 for lit in solver.get_model()}

    def holds(lit: int) -> bool:
        return model[abs(lit)] == (lit > 0)

    layout, bottoms = enc.layout, []
    for x, piece in enumerate(layout.pieces):
        if piece.origin == TALON or x in layout.resting:
            continue
        drawn = holds(enc.var_drawn(x))
        base = piece.card.rank in dg.BASE_RANKS
        if drawn and (base or not holds(enc.var_by(x, layout.hi(x)))):
            bottoms.append(piece.card)
    last = [stack[0] for stack in outcome.final.grid if stack]
    assert len(last) == 24
    assert sorted(bottoms) == sorted(last)
    assert any(key[0] == "cells" for key in enc.pool.obj2id)


@pytest.mark.parametrize("answer_by", [None, 5.0, 12.0])
def test_proofs_under_way_run_on_to_the_runners_answer_deadline(answer_by):
    """Under a runner that stops the prover later than its limit, the
    whole-formula refutation of the line search that runs to the limit
    (`_proof_until`) and the core-guided search (`_bounds_until`) may go on
    to the runner's answer deadline; never stop sooner than the limit; and
    a line search that hands over before the limit gets no run-on."""
    began = 100.0
    run = sat._Run(began, began + 10.0, plan=sat.ALONE)
    set_answer_deadline(None if answer_by is None else began + answer_by)
    try:
        later = answer_by is not None and answer_by > 10.0
        assert sat._bounds_until(run) == began + (answer_by if later else 10.0)
        assert sat._proof_until(run, run.deadline) == answer_deadline()
        assert sat._proof_until(run, began + 4.0) is None
        unlimited = sat._Run(began, None)
        assert sat._bounds_until(unlimited) is None
    finally:
        set_answer_deadline(None)
