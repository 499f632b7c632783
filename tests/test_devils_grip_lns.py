"""The neighbourhood search for lines (`devils_grip_lns`).

Its lines must be real (decoded and replayed), better than the line it was
given, and its one proof -- the whole formula refuting "one card fewer" --
must agree with an unpruned brute force.
"""

from __future__ import annotations

import time
from itertools import pairwise

import pytest
from dg_brute_force import positions
from pysat.solvers import Solver

from patience_encodings import devils_grip_lns as lns
from patience_encodings import devils_grip_sat as sat
from patience_encodings import known_scores
from patience_encodings.devils_grip_sat_cnf import build_encoding
from patience_encodings.devils_grip_sat_lines import trace_line
from verifier import devils_grip as dg
from verifier import devils_grip_beam
from verifier import devils_grip_search_model as sm
from verifier.results import Question


def _replayed(state: dg.State, moves: list[dg.Move]) -> int:
    for move in moves:
        state = dg.apply(state, move)  # raises on an illegal move
    return dg.score(state)


def _search(state: dg.State, line: tuple[int, list[dg.Move]], growth=lns.GROWTH):
    """Return the encoding, its solver and a `Neighbourhoods` from ``line``."""
    enc = build_encoding(state, Question.SCORE)
    tot = enc.add_score_bound(None, line[0] - 1 - enc.score_offset)
    solver = Solver(name=sat.SOLVER, bootstrap_with=enc.clauses)

    def improve(model: list[int]) -> tuple[int, list[dg.Move]]:
        moves, final = sat.model_line(enc, model)
        assert _replayed(state, moves) == dg.score(final)
        return dg.score(final), moves

    search = lns.Neighbourhoods(enc, solver, tot, line, improve, growth=growth)
    return enc, solver, search


def _beam_line(state: dg.State, width: int) -> tuple[int, list[dg.Move]]:
    found = devils_grip_beam.best_lines(state, deadline=None, widths=(width,))
    assert found is not None
    return found.score, sm.to_reference(state, list(found.moves))


def test_a_line_satisfies_its_own_event_pattern():
    """With every slot's event fixed as a line has it, "at most its score"
    has a model: the pattern admits the line's normal form (the dominance
    argument of the module docstring)."""
    state = dg.initial_state(dg.numbered_deal(3))
    score, moves = _beam_line(state, 32)
    enc = build_encoding(state, Question.SCORE)
    tot = enc.add_score_bound(None, score - enc.score_offset)
    fixed = [lit for lits in lns.event_literals(enc, moves) for lit in lits]
    assert len(fixed) == 3 * enc.layout.n
    with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as solver:
        assert solver.solve(assumptions=[-tot.rhs[score - enc.score_offset], *fixed])
        assert not solver.solve(
            assumptions=[-tot.rhs[score - 1 - enc.score_offset], *fixed]
        )


@pytest.mark.parametrize("number", [3, 12])
def test_a_line_satisfies_its_own_kept_links(number):
    """With every card the line links in full held linked, "at most its
    score" has a model and "one card fewer" is the open question: the kept
    links admit the line's normal form (the module docstring's argument),
    and they hold exactly the copies of the cards whose every linkable copy
    the line links."""
    state = dg.initial_state(dg.numbered_deal(number))
    score, moves = _beam_line(state, 32)
    enc = build_encoding(state, Question.SCORE)
    tot = enc.add_score_bound(None, score - enc.score_offset)
    held = lns.kept_links(enc, moves)
    kept = [lit for lits in held.values() for lit in lits]
    layout = enc.layout
    linked = trace_line(layout, moves).onto
    copies: dict[object, list[int]] = {}
    for x in layout.linkable():
        copies.setdefault(layout.pieces[x].card, []).append(x)
    full = [x for xs in copies.values() if all(x in linked for x in xs) for x in xs]
    assert sorted(kept) == sorted(enc.var_by(x, layout.hi(x)) for x in full)
    assert len(full) < len(linked)  # some card has a copy linked, one not
    card = {enc.var_by(x, layout.hi(x)): layout.pieces[x].card for x in full}
    for chain, lits in held.items():  # each card under its own chain
        assert {dg.chain_of(card[lit]) for lit in lits} == {chain}
    with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as solver:
        assert solver.solve(assumptions=[-tot.rhs[score - enc.score_offset], *kept])
        found, _ = sat.model_line(enc, solver.get_model())
    assert _replayed(state, found) <= score


def test_deal_7_reaches_its_optimum_from_the_beams_line():
    """Deal 7: the beam at width 64 leaves 13; a window of the stock re-solved
    gives 11, the optimum (proven in the 60 s runs of docs/best-scores.md)."""
    state = dg.initial_state(dg.numbered_deal(7))
    line = _beam_line(state, 64)
    assert line[0] == 13
    _, solver, search = _search(state, line)
    with solver:
        steps = search.steps()
        stop = time.monotonic() + 30
        try:
            while search.score > 11 and time.monotonic() < stop:
                next(steps)
        except StopIteration as end:
            # Windows and the whole formula may all answer within one step
            # (no chunk left unfinished): then it ends proving the line optimal.
            assert end.value is True
    assert search.score == 11 == _replayed(state, search.moves)
    assert search.calls >= 1


def test_the_whole_formula_proves_the_brute_force_optimum():
    """Run to the end on small positions, the search returns True (no line
    leaves fewer cards) exactly at the brute force's best score."""
    improved = 0
    for state, best in positions(8, seed=130):
        enc = build_encoding(state, Question.SCORE)
        with Solver(name=sat.SOLVER, bootstrap_with=enc.clauses) as first:
            assert first.solve()
            moves, _ = sat.model_line(enc, first.get_model())
        first_score = _replayed(state, moves)
        _, solver, search = _search(state, (first_score, moves))
        with solver:
            steps = search.steps()
            try:
                while True:
                    next(steps)
            except StopIteration as end:
                assert end.value is True
        assert search.score == best == _replayed(state, search.moves)
        improved += first_score > best
    assert improved  # some first lines were not optimal


def _calls_to_prove_optimal(
    number: int, growth: float
) -> tuple[list[tuple[str, bool | None]], int]:
    """Run the search from deal ``number``'s known optimal line (the shipped
    known-scores file) to its end; return its oracle calls and the chains
    its kept links hold."""
    entry = known_scores.load()[number]
    assert entry.settled
    state = dg.initial_state(dg.numbered_deal(number))
    moves = dg.parse_moves(" ".join(entry.line))
    assert _replayed(state, moves) == entry.upper
    enc, solver, search = _search(state, (entry.upper, moves), growth)
    with solver:
        assert search.run(time.monotonic() + 60) is True
    assert search.score == entry.upper
    return search.log, len(lns.kept_links(enc, moves))


def test_windows_grow_to_the_whole_formula_at_the_given_pace():
    """From an optimal line no neighbourhood finds anything, so the kept
    links are asked once in full and once with each chain free, and every
    width is swept once before the whole formula proves the line: on a
    deal's 72 slots, widths 18, 27, 40 and 60 (8 + 6 + 4 + 3 windows) by
    default, one sweep of 18 with `ONE_SWEEP` -- and both end proving the
    same optimum."""
    for growth, windows in ((lns.GROWTH, 8 + 6 + 4 + 3), (lns.ONE_SWEEP, 8)):
        log, chains = _calls_to_prove_optimal(12, growth)
        assert 1 <= chains <= 12
        assert log == [("kept", False)] * (1 + chains) + [
            ("window", False)
        ] * windows + [("whole", False)]


@pytest.mark.parametrize("growth", [1.0, 0.5])
def test_windows_that_would_not_grow_are_refused(growth):
    """Refused at once, before any formula or solver is touched (None stands
    in for them), since such a search would sweep one width for ever."""
    with pytest.raises(ValueError, match="grow"):
        lns.Neighbourhoods(
            None, None, None, (1, []), lambda model: (0, []), growth=growth
        )


def test_a_whole_formula_line_gets_one_sweep_then_the_whole_formula_again():
    """Deal 13 from the beam's narrowest line (19; best score 12), default
    growth: the first sweeps grow to the whole formula, but once it has had
    a turn, every line it finds is asked its kept links (in full, then each
    chain free) and then gets one sweep of first-width windows (8 on 72
    slots), and a fruitless sweep hands straight back to it instead of
    growing through 27, 40 and 60. The kept links find lines too."""
    state = dg.initial_state(dg.numbered_deal(13))
    line = _beam_line(state, 8)
    assert line[0] == 19
    _, solver, search = _search(state, line)
    with solver:
        assert search.run(time.monotonic() + 60) is True
    assert search.score == 12 == _replayed(state, search.moves)
    log = search.log
    assert log[0][0] == "kept"
    first_whole = next(i for i, (kind, _) in enumerate(log) if kind == "whole")
    after = log[first_whole:]
    assert after[-1] == ("whole", False)  # the proof
    fruitless = refuted = 0
    for (kind, found), (next_kind, _) in pairwise(after):
        if kind == "whole":
            assert found and next_kind == "kept"  # a line, then its own turns
        if kind == "kept" and found:
            assert next_kind == "kept"  # the new line's kept links
        refuted = refuted + 1 if (kind, found) == ("kept", False) else 0
        assert refuted <= 1 + 12  # in full, then each of the 12 chains free
        if refuted and next_kind != "kept":
            assert next_kind == "window"
        fruitless = fruitless + 1 if (kind, found) == ("window", False) else 0
        assert fruitless <= 8
        if fruitless == 8:
            assert next_kind == "whole"
    assert sum(kind == "whole" for kind, _ in after) >= 3
    assert search.lines_by()["kept"] >= 1


@pytest.mark.parametrize("proof_until", [None, 60.0])
def test_a_whole_formula_question_under_way_runs_on_to_the_proof_deadline(
    monkeypatch, proof_until
):
    """Deal 12 from its optimal line, in chunks of 200 conflicts so that
    the whole formula's refutation takes several: the clock passes ``until``
    while it is under way. With a later ``proof_until`` it goes on and
    proves the line optimal; without one it stops there, unanswered. No
    question begins after ``until``."""
    monkeypatch.setattr(lns, "CHUNK", 200)
    entry = known_scores.load()[12]
    state = dg.initial_state(dg.numbered_deal(12))
    moves = dg.parse_moves(" ".join(entry.line))
    _, solver, search = _search(state, (entry.upper, moves), lns.ONE_SWEEP)
    until = time.monotonic() + 3
    seen = []

    def stall() -> bool:
        """Hold the first whole-formula chunk's turn until ``until`` passes."""
        if search.asking == "whole" and not seen:
            seen.append(time.monotonic())
            time.sleep(max(0.0, until - time.monotonic()))
        return False

    later = None if proof_until is None else time.monotonic() + proof_until
    with solver:
        proven = search.run(until, stop=stall, proof_until=later)
        assert search.run(time.monotonic() - 1, proof_until=later) is False
    assert seen and seen[0] < until  # the refutation was under way at ``until``
    kinds = [kind for kind, _ in search.log]
    assert "whole" not in kinds[:-1]
    if proof_until is None:
        assert proven is False and kinds[-1] == "window"
    else:
        assert proven is True and search.log[-1] == ("whole", False)
    assert search.asking is None
