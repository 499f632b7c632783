"""Constructed winnable deals: reproducible, and their lines replay to WON."""

from __future__ import annotations

from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.replay import replay


def test_constructed_deals_replay_to_won():
    for seed in range(30):
        built = construct(seed)
        assert len(built.deal) == 96
        dg.validate_deal(built.deal)
        outcome = replay(dg.GAME, dg.initial_state(built.deal), built.line)
        assert outcome.ok and outcome.won, (seed, outcome.verdict())


def test_construction_is_reproducible_and_varied():
    assert construct(7) == construct(7)
    assert len({construct(seed).deal for seed in range(10)}) == 10


def test_constructed_lines_use_every_kind_of_move():
    kinds = {type(m) for seed in range(10) for m in construct(seed).line}
    assert {dg.Merge, dg.DealMove, dg.TalonPlay} <= kinds
