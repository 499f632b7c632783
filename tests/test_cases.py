"""Edge-case files: every shipped case passes; wrong claims fail with evidence."""

from __future__ import annotations

from pathlib import Path

import pytest

from patience_encodings.cases import load_cases, parse_case, run_case
from service.cli import main
from verifier.errors import InputError

CASE_DIR = Path(__file__).resolve().parent.parent / "seeds" / "edge-cases"
CASE_FILES = sorted(p for p in CASE_DIR.iterdir() if p.suffix in (".yaml", ".jsonl"))


def shipped_cases():
    return [
        pytest.param(case, id=f"{path.stem}:{case.id}")
        for path in CASE_FILES
        for case in load_cases(path.read_text(), source=path.name)
    ]


def test_devils_grip_case_file_is_large_enough():
    cases = load_cases((CASE_DIR / "devils-grip.yaml").read_text())
    assert len(cases) >= 40
    assert {c.claim for c in cases} == {
        "legal",
        "illegal",
        "after",
        "winnable",
        "dead",
        "best_score",
    }


@pytest.mark.parametrize("case", shipped_cases())
def test_every_shipped_case_passes(case):
    result = run_case(case)
    assert result.passed, result.evidence


WRONG = """
game: devils-grip
cases:
  - id: wrong-best-score
    position: |
      A1: 2S 5S
      A2: 5H 8H JH
      talon: JS 8S 2H
    best_score: 2
  - id: wrong-legal
    position: |
      A1: 2S
      A2: 5H
      stock: 5S 8S JS 2H 8H JH
    legal: A2>A1
  - id: wrong-reason
    position: |
      A1: 2S 5S
      talon: 8S JS
    illegal: T>A1
    reason: "empty cell"
  - id: wrong-winnable
    position: |
      A1: 5H 8H JH
      talon: 2H
    winnable: true
"""


def test_wrong_claims_fail_with_their_evidence():
    results = {r.id: r for r in map(run_case, load_cases(WRONG))}
    assert not any(r.passed for r in results.values())
    score = results["wrong-best-score"].evidence
    assert score["best_score"] == 3 and score["score_proven"]
    assert score["status"] == "lost"
    legal = results["wrong-legal"].evidence
    assert legal["reason"] == "illegal: 5♥ does not fit on 2♠"
    wrong_reason = results["wrong-reason"].evidence
    assert wrong_reason["reason"] == "J♠ does not fit on 5♠"
    assert wrong_reason["expected_reason"] == "empty cell"
    dead = results["wrong-winnable"].evidence
    assert dead["status"] == "lost" and dead["proven"]


@pytest.mark.parametrize(
    "text,message",
    [
        (
            "- {id: x, position: 'A1: 2S', legal: A1>A2, dead: true}",
            "exactly one claim",
        ),
        ("- {id: x, position: 'A1: 2S 2S 2S', dead: true}", "appears 3 times"),
        ("- {id: x, deal: number 1, legal: 'A1>A9'}", "unknown cell"),
        ("- {id: x, position: 'Z9: 2S', dead: true}", "unknown cell"),
        ("- {id: x, dead: true}", "needs a 'position'"),
        ("- {id: x, deal: number 1, best_score: -1}", "whole number"),
        ("- {id: x, deal: number 1, colour: red, dead: true}", "unknown field"),
        ("[unclosed", "malformed YAML"),
        # What YAML has and JSON has not: each named, before any work.
        ("- &a {id: x, deal: number 1, dead: true}\n- *a", "aliases"),
        ("- {id: 2024-01-01, deal: number 1, dead: true}", "is not a JSON value"),
        ("- {id: x, deal: number 1, dead: true, rule: !!binary aGk=}", "JSON value"),
        ("- {3: x, deal: number 1, dead: true}", "key 3 is not a string"),
        ("- {id: x, deal: number 1, dead: true, time_limit: .nan}", "JSON number"),
        ("[" * 5000, "nested"),
        ('{"id": 1' + "0" * 5000 + ', "dead": true}', "malformed JSON"),
        ('{"id": "x", "deal": "number 1", "dead": true, "a": ' + "[" * 5000, "JSON"),
        # Field types and values.
        ("- {id: x, deal: number 1, dead: true, time_limit: fast}", "'time_limit'"),
        ("- {id: x, deal: number 1, dead: true, time_limit: true}", "not bool"),
        ("- {id: x, deal: number 1, dead: true, time_limit: 0}", "between 0.1"),
        ("- {id: x, deal: number 1, dead: true, engine: magic}", "unknown engine"),
        ("- {id: x, deal: number 1, dead: true, engine: 5}", "'engine' must be a"),
        ("- {id: x, deal: number 1, dead: true, rule: [1]}", "'rule' must be a"),
        ("- {id: [1], deal: number 1, dead: true}", "'id' must be text"),
        ("- {id: x, deal: {a: 1}, dead: true}", "'deal' must be"),
        ("- {id: x, deal: number 1, legal: [deal]}", "takes moves as text"),
        ("- {id: x, game: 5, deal: number 1, dead: true}", "'game' must be a string"),
        ("- {id: x, deal: number 1" + "0" * 5000 + ", dead: true}", "too large"),
        (
            "- {id: x, game: besieged-fortress, deal: number 1, best_score: 3}",
            "no score to prove",
        ),
        (
            "- {id: x, position: {game: besieged-fortress, grid: []}, dead: true}",
            "the position is for 'besieged-fortress'",
        ),
        (
            "- {id: a, deal: number 1, dead: true}\n"
            "- {id: a, deal: number 2, dead: true}",
            "used twice",
        ),
    ],
)
def test_malformed_case_files_are_named(text, message):
    with pytest.raises(InputError, match=message):
        load_cases(text)


def test_cli_verify_cases_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(
        "- id: ok\n  position: |\n    A1: 2S 5S\n    talon: JS 8S\n  legal: T>A1\n"
    )
    assert main(["verify-cases", str(good)]) == 0
    assert "1 passed, 0 failed" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text(WRONG)
    assert main(["verify-cases", "--json", str(bad)]) == 1
    assert capsys.readouterr().out.count('"passed": false') == 4
    broken = tmp_path / "broken.yaml"
    broken.write_text("- {id: x, dead: true}")
    assert main(["verify-cases", str(broken)]) == 2


def test_an_alias_bomb_is_refused_at_once():
    """Nine levels of aliases would expand to gigabytes; the reader never
    expands one."""
    lines = [
        "- id: x",
        "  deal: number 1",
        "  dead: true",
        "  rule:",
        '    a0: &a0 "x"',
    ]
    for level in range(1, 10):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"    a{level}: &a{level} [{refs}]")
    with pytest.raises(InputError, match="aliases"):
        load_cases("\n".join(lines))


def test_a_case_keeps_its_own_game_over_the_files():
    text = (
        "game: devils-grip\ncases:\n"
        "- {id: bf, game: besieged-fortress, deal: number 1, legal: 1>F}\n"
        "- {id: dg, deal: number 1, legal: deal}\n"
    )
    games = {case.id: case.start.game.name for case in load_cases(text)}
    assert games == {"bf": "besieged-fortress", "dg": "devils-grip"}


def test_cli_verify_cases_exits_2_on_bad_field_values(tmp_path, capsys):
    broken = tmp_path / "tl.yaml"
    broken.write_text("- {deal: number 1, legal: deal, time_limit: fast}")
    assert main(["verify-cases", str(broken)]) == 2
    err = capsys.readouterr().err
    assert "'time_limit' must be a number" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "time_limit, cap, message",
    [
        (3600, None, None),  # the provers' own cap, for the command line
        (3601, None, "'time_limit' must be between 0.1 and 3600, not 3601"),
        (30, 30, None),
        (3600, 30, "'time_limit' must be between 0.1 and 30, not 3600"),
        (0.05, 30, "'time_limit' must be between 0.1 and 30, not 0.05"),
    ],
)
def test_a_case_time_limit_is_checked_against_the_callers_cap(time_limit, cap, message):
    """A service passes its own cap: one check, with the range it accepts."""
    item = {"id": "a", "deal": "number 5", "dead": True, "time_limit": time_limit}
    limits = {} if cap is None else {"max_time_limit": cap}
    if message is None:
        assert parse_case(item, **limits).time_limit == time_limit
    else:
        with pytest.raises(InputError) as caught:
            parse_case(item, **limits)
        assert caught.value.message == f"case: case 'a': {message}"


def test_a_case_without_a_time_limit_takes_the_default_within_the_cap():
    item = {"deal": "number 5", "dead": True}
    assert parse_case(item).time_limit == 10
    assert parse_case(item, max_time_limit=4).time_limit == 4
