"""Core-guided best scores (`devils_grip_score`) against an unpruned brute force.

Every lower bound the core-guided search reports must be at most the true best
score, and the model it returns must decode to a line that reaches exactly
the brute force's best score.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from dg_brute_force import positions
from pysat.solvers import Solver

from patience_encodings import devils_grip_sat as sat
from patience_encodings import devils_grip_score as score_mod
from patience_encodings.devils_grip_sat_cnf import build_encoding
from verifier import devils_grip as dg
from verifier.results import Question, Status, check_result


def _core_guided(state: dg.State, dominance: bool | None = None):
    """The links view alone (the one RC2 ran before the grid view came)."""
    enc = build_encoding(state, Question.SCORE, dominance=dominance)
    bounds: list[int] = []
    model = score_mod.least_score(
        enc, deadline=None, on_bound=lambda b, _: bounds.append(b), only="links"
    )
    return enc, model, bounds


def _least_score(state: dg.State, only: str | None, **options):
    """Run `least_score` to the end; ``options``: ``below``, ``elsewhere``."""
    enc = build_encoding(state, Question.SCORE)
    bounds: list[tuple[int, str]] = []
    model = score_mod.least_score(
        enc,
        deadline=None,
        on_bound=lambda b, v: bounds.append((b, v)),
        only=only,
        **options,
    )
    return enc, model, bounds


@pytest.mark.parametrize("only", ["grid", None])
def test_grid_view_optimum_matches_brute_force(only):
    """The grid view alone, and both views side by side, are exact too."""
    for state, best in positions(8, seed=110):
        enc, model, bounds = _least_score(state, only)
        assert model is not None
        _, final = sat.model_line(enc, model)
        assert dg.score(final) == best == max(b for b, _ in bounds)
        assert all(b <= best for b, _ in bounds)
        assert {v for _, v in bounds} <= ({only} if only else {"grid", "links"})


def test_grid_view_counts_what_the_grid_lacks():
    """A model's grid-view cost is never below its line's score (so a proven
    least cost is a proven lower bound on the best score)."""
    for state, best in positions(6, seed=120):
        enc = build_encoding(state, Question.SCORE)
        enc.encode_grid_view()
        weights = dict(enc.grid_terms)
        with Solver(name="g4", bootstrap_with=enc.clauses) as solver:
            checked = 0
            while checked < 5 and solver.solve():
                checked += 1
                model = solver.get_model()
                _, final = sat.model_line(enc, model)
                cost = sum(w for lit, w in weights.items() if model[lit - 1] > 0)
                assert best <= dg.score(final) <= enc.grid_offset + cost
                solver.add_clause([-lit for lit in weights if model[lit - 1] > 0])
            assert checked


def test_grid_view_lower_bound_on_a_whole_deal():
    """Deal 12: the grid view proves the best score, 6, within seconds."""
    state = dg.initial_state(dg.numbered_deal(12))
    enc, model, bounds = _least_score(state, "grid")
    _, final = sat.model_line(enc, model)
    assert dg.score(final) == 6 == bounds[-1][0]


@pytest.mark.parametrize("only", ["links", "grid", None])
def test_a_line_in_hand_restricts_the_search_soundly(only):
    """With ``below`` (a line's score in hand) the search ends once no line
    below it is left: at or under the best score it reports exactly
    ``below`` and returns no model; above it, it returns an optimal model.
    (The grid view is restricted by the unlinked count, the links view only
    stops at ``below``.) No bound ever passes the truth or ``below``."""
    for state, best in positions(6, seed=130):
        for below in (best - 1, best, best + 1, best + 3):
            enc, model, reports = _least_score(state, only, below=below)
            bounds = [b for b, _ in reports]
            assert all(b <= min(best, below) for b in bounds)
            assert bounds[-1] == min(best, below)
            if below <= best:
                assert model is None
            else:
                _, final = sat.model_line(enc, model)
                assert dg.score(final) == best


@pytest.mark.parametrize(("only", "ahead"), [("grid", 3), (None, 3), ("grid", None)])
def test_a_better_line_elsewhere_tightens_the_search(only, ahead):
    """A line reported while the search runs (``elsewhere``) lowers the
    restriction on the same counter: at the best score, the search proves
    it; above it, or with no line ever, it returns an optimal model. With
    no line in hand (``ahead`` None: no ``below``) the counter spans every
    piece, so the first line found elsewhere restricts the search."""
    for state, best in positions(6, seed=135):
        below = None if ahead is None else best + ahead
        for there in (best, best + 1, None):
            enc, model, reports = _least_score(
                state, only, below=below, elsewhere=lambda there=there: there
            )
            bounds = [b for b, _ in reports]
            assert all(b <= best for b in bounds) and bounds[-1] == best
            if there == best:
                assert model is None
            else:
                _, final = sat.model_line(enc, model)
                assert dg.score(final) == best == bounds[-1]


def test_score_below_tightens_by_one_unit():
    """`ScoreBelow.unit` lowers the limit on the counter built for the first
    (None: the clauses in place already imply the limit)."""
    for state, best in positions(6, seed=145):
        enc = build_encoding(state, Question.SCORE)
        below = enc.score_below(best + 3)
        with Solver(name="g4", bootstrap_with=enc.clauses) as solver:
            solver.append_formula(below.clauses)
            assert below.unit(best + 3) is None or solver.solve(below.unit(best + 3))
            assert solver.solve(assumptions=below.unit(best + 1) or [])
            _, final = sat.model_line(enc, solver.get_model())
            assert dg.score(final) <= best
            assert not solver.solve(assumptions=below.unit(best))


def _counted_cards(state: dg.State) -> list:
    """The cards of the score counter's inputs, in order, checked to be the
    unlinked view's literals."""
    enc = build_encoding(state, Question.SCORE)
    layout = enc.layout
    card_of = {
        -enc.var_by(x, layout.hi(x)): layout.pieces[x].card for x in layout.linkable()
    }
    assert sorted(enc._counted) == sorted(enc.unlinked)
    return [card_of[lit] for lit in enc._counted]


def _assert_each_together(items: list) -> None:
    """Equal items stand side by side: each one's places are consecutive."""
    for item in set(items):
        at = [i for i, other in enumerate(items) if other == item]
        assert at == list(range(at[0], at[0] + len(at))), item


def test_the_counter_sums_each_cards_two_copies_first():
    """The score counter (`Encoding._totalizer`) takes the unlinked pieces card
    by card, each card's copies side by side, since pysat's totalizer sums
    neighbours first."""
    deal = _counted_cards(dg.initial_state(dg.numbered_deal(7)))
    assert len(deal) == 2 * len(set(deal)) == 72  # both copies of 36 cards
    for cards in [deal, *(_counted_cards(s) for s, _ in positions(3, seed=150))]:
        _assert_each_together(cards)


def test_the_grid_view_lists_each_cards_terms_together():
    """The short-stacks view's terms (RC2's assumptions) come card by card,
    chain by chain, a card's copies side by side, as the counter's do."""
    sizes = []
    for state in [dg.initial_state(dg.numbered_deal(7))] + [
        s for s, _ in positions(3, seed=150)
    ]:
        enc = build_encoding(state, Question.SCORE)
        enc.encode_grid_view()
        pieces = [enc.pool.obj(lit)[1] for lit, _ in enc.grid_terms]
        cards = [enc.layout.pieces[y].card for y in pieces]
        sizes.append(len(set(cards)))
        _assert_each_together(cards)
        _assert_each_together([dg.chain_of(c) for c in cards])
    assert sizes[0] > 30 and min(sizes) > 0


def test_score_below_keeps_exactly_the_better_lines():
    """Every model under `Encoding.score_below` decodes to a line below the
    limit, and the best line is still among them."""
    for state, best in positions(4, seed=140):
        enc = build_encoding(state, Question.SCORE)
        limit = best + 2
        with Solver(name="g4", bootstrap_with=enc.clauses) as solver:
            solver.append_formula(enc.score_below(limit).clauses)
            assert solver.solve()  # some line leaves best < limit
            for _ in range(5):
                if not solver.solve():
                    break
                model = solver.get_model()
                _, final = sat.model_line(enc, model)
                assert dg.score(final) < limit
                solver.add_clause([-lit for lit in model[: enc.pool.top] if lit > 0])
            with Solver(name="g4", bootstrap_with=enc.clauses) as strict:
                strict.append_formula(enc.score_below(best).clauses)
                assert not strict.solve()
            with Solver(name="g4", bootstrap_with=enc.clauses) as tight:
                tight.append_formula(enc.score_below(best + 1).clauses)
                assert tight.solve()  # the best line is still admitted
                _, final = sat.model_line(enc, tight.get_model())
                assert dg.score(final) == best


def test_a_line_in_hand_proves_a_whole_deal_optimal():
    """Deal 12 with its best line (6 cards) in hand: the grid view alone
    shows that no line leaves 5."""
    state = dg.initial_state(dg.numbered_deal(12))
    enc = build_encoding(state, Question.SCORE)
    bounds: list[int] = []
    model = score_mod.least_score(
        enc,
        deadline=time.monotonic() + 60,
        on_bound=lambda b, _: bounds.append(b),
        only="grid",
        below=6,
    )
    assert model is None and bounds[-1] == 6
    assert all(b <= 6 for b in bounds)


@pytest.mark.parametrize("chunk", range(3))
def test_core_guided_optimum_matches_brute_force(chunk):
    for state, best in positions(8, seed=100 + chunk):
        for dominance in (True, False):
            enc, model, bounds = _core_guided(state, dominance)
            assert model is not None
            moves, final = sat.model_line(enc, model)
            assert dg.score(final) == best == bounds[-1]
            assert bounds == sorted(bounds) and all(b <= best for b in bounds)


@pytest.fixture
def links_rc2():
    """RC2 on deal 1's unlinked-cards view, and the assumptions "every card
    linked" (a win: UNSAT, deal 1 is lost)."""
    enc = build_encoding(dg.initial_state(dg.numbered_deal(1)), Question.SCORE)
    links = score_mod.views(enc)[0]
    rc2 = score_mod.CoreGuided(
        score_mod.score_wcnf(enc, links), deadline=None, on_bound=lambda c: None
    )
    try:
        yield rc2, [-lit for lit, _ in links.terms]
    finally:
        rc2.delete()


def test_core_exhaustion_gives_way_by_conflicts_not_by_the_clock(links_rc2):
    """Past ``pause_after`` conflicts an exhaustion call answers "satisfiable"
    at once (RC2 then keeps the bound it proved); before it, the oracle runs.
    So a run does the same work whatever the machine's load."""
    rc2, everything_linked = links_rc2
    rc2.pause_after = rc2.conflicts() + 1_000_000
    assert rc2._call_oracle(everything_linked) is False  # no win: a real call
    worked = rc2.conflicts()
    assert worked > 0
    rc2.pause_after = worked
    assert rc2._call_oracle(everything_linked) is True  # given way: no call
    assert rc2.conflicts() == worked


def test_core_trimming_given_way_keeps_the_core_in_hand(links_rc2):
    """A trimming call answered "satisfiable" by ``pause_after`` (after an
    undecided chunk) leaves no new core: the proven one is kept (RC2's own
    trimming read the missing core and failed with a TypeError)."""
    rc2, everything_linked = links_rc2
    assert rc2._call_oracle(everything_linked) is False
    rc2.core = core = rc2.oracle.get_core()
    # A line exists: one conflict leaves the call undecided, or (the formula
    # without the merge count) finds it; either way the oracle holds no core.
    rc2.oracle.conf_budget(1)
    assert rc2.oracle.solve_limited(assumptions=[]) is not False
    assert rc2.oracle.get_core() is None
    rc2.pause_after = rc2.conflicts()
    rc2.trim_core()
    assert rc2.core == core


def _core_trace(number: int, below: int) -> list[tuple[int, int]]:
    """Return (cost, oracle conflicts) after each core of the restricted grid
    view of deal ``number`` run to the end (`_Tracing` must be installed)."""
    _Tracing.trace = []
    enc = build_encoding(dg.initial_state(dg.numbered_deal(number)), Question.SCORE)
    model = score_mod.least_score(
        enc, deadline=None, on_bound=lambda b, v: None, only="grid", below=below
    )
    assert model is None  # the line in hand (deal 17: 9 cards) is optimal
    return _Tracing.trace


class _Tracing(score_mod.CoreGuided):
    """RC2 that records its cost and conflicts after each core."""

    trace: list[tuple[int, int]] = []

    def process_core(self) -> None:
        super().process_core()
        self.trace.append((self.cost, self.conflicts()))


def test_the_same_cores_after_the_same_conflicts_under_load(monkeypatch):
    """The run does not depend on the machine's load: the second run has two
    busy processes beside it (with the old 0.1 s clock cut, exhaustion would
    stop at other points and the cores would differ)."""
    monkeypatch.setattr(score_mod, "CoreGuided", _Tracing)
    # Deal 17: five cores (deal 12's restricted view has none since the
    # cells' count: its hard clauses alone refute "below 6").
    idle = _core_trace(17, 9)
    busy = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)
    ]
    try:
        loaded = _core_trace(17, 9)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert idle and loaded == idle


def test_past_deadline_stops_without_a_bound():
    state = dg.initial_state(dg.numbered_deal(1))
    enc = build_encoding(state, Question.SCORE)
    bounds: list[int] = []
    with pytest.raises(score_mod.OutOfTime):
        score_mod.least_score(
            enc, deadline=time.monotonic() - 1, on_bound=lambda b, _: bounds.append(b)
        )
    assert bounds == []


def test_lower_bound_reached_stops_the_search():
    state = dg.initial_state(dg.numbered_deal(5))
    enc = build_encoding(state, Question.SCORE)
    seen: list[int] = []

    def on_bound(lower: int, view: str) -> None:
        seen.append(lower)
        if lower >= 3:
            raise score_mod.LowerBoundReached

    with pytest.raises(score_mod.LowerBoundReached):
        score_mod.least_score(enc, deadline=None, on_bound=on_bound)
    assert seen[-1] >= 3 and all(b < 3 for b in seen[:-1])


def test_whole_deal_score_reports_a_proven_lower_bound():
    state = dg.initial_state(dg.numbered_deal(5))
    result = sat.prove(state, question=Question.SCORE, time_limit=10.0)
    assert result.status is Status.LOST and result.proven
    assert result.best_score is not None
    assert 1 < result.lower_bound <= result.best_score
    check_result(dg.GAME, state, result)
