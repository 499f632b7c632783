"""The web page, end to end: Debian's chromium against a real ``patience serve``.

The browser is driven with Playwright (``executable_path`` = the system's
chromium; no browser is downloaded). What the page shows is checked against
the reference engine, never against the page's own code: every step's words
and grid come from `verifier` here. Screenshots land in ``artifacts/web/``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from service_helpers import start_serve

from patience_encodings import certificates
from patience_encodings.engines import engines_for
from service.app import create_app
from verifier import devils_grip as dg
from verifier.devils_grip_construct import construct
from verifier.registry import GAMES
from verifier.shuffle import Rng

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
#: A constructed deal (winnable by construction) and a dead numbered deal.
WINNABLE_SEED = 7
DEAD_NUMBER = 1
WAIT_MS = 60_000


# -- the page without a browser ---------------------------------------------------
@pytest.fixture(scope="module")
def client() -> Any:
    """A test client; these requests need neither Redis nor a worker."""
    return create_app({"REDIS_URL": "redis://127.0.0.1:1/0"}).test_client()


def test_root_serves_the_page_with_a_strict_content_policy(client):
    reply = client.get("/")
    assert reply.status_code == 200 and reply.mimetype == "text/html"
    assert b'<script type="module" src="/assets/app.js">' in reply.data
    policy = reply.headers["Content-Security-Policy"]
    assert "default-src 'self'" in policy and "script-src 'self'" in policy


@pytest.mark.parametrize(
    "name, mimetype",
    [
        ("app.js", "text/javascript"),
        ("cards.js", "text/javascript"),
        ("devils_grip.js", "text/javascript"),
        ("besieged_fortress.js", "text/javascript"),
        ("games.js", "text/javascript"),
        ("player.js", "text/javascript"),
        ("style.css", "text/css"),
    ],
)
def test_assets_are_served_with_their_types(client, name, mimetype):
    reply = client.get(f"/assets/{name}")
    assert reply.status_code == 200 and reply.mimetype == mimetype


def test_a_missing_asset_is_the_api_error_body(client):
    reply = client.get("/assets/nothing.js")
    assert reply.status_code == 404
    assert reply.get_json()["error"]["code"] == "not_found"


# -- a real service and a real browser -------------------------------------------
def _browser_available() -> bool:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return False
    return os.access(CHROMIUM, os.X_OK)


browser_test = pytest.mark.skipif(
    not _browser_available(),
    reason="needs playwright and Debian's chromium (apt-get install chromium)",
)


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real ``patience serve`` (embedded Redis, one worker); yield its URL."""
    proc, port = start_serve(tmp_path_factory.mktemp("serve") / "serve.out")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless chromium with a fresh profile directory (a browser context)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=CHROMIUM,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1000},
        )
        yield context
        context.close()


@pytest.fixture(scope="module")
def artifacts(request: pytest.FixtureRequest) -> Path:
    """The folder for screenshots (gitignored)."""
    folder = request.config.rootpath / "artifacts" / "web"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser: Any, serve: str) -> Iterator[Any]:
    """The page, loaded and ready; fails the test on any script error."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(serve + "/")
    page.wait_for_selector("body[data-ready=true]", timeout=WAIT_MS)
    yield page
    page.close()
    assert errors == []


def _post(url: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


#: What the player shows now: the step's words, play state, grid and piles.
READ_PLAYER = """() => {
  const role = (r) => document.querySelector(`#player-section [data-role="${r}"]`);
  const board = role("board");
  const cells = Array.from(board.querySelectorAll("td[data-cell]"), (td) =>
    Array.from(td.querySelectorAll(".card:not(.empty)"), (c) => c.textContent));
  const pile = (name) => board.querySelector(`[data-pile="${name}"] .pile-count`);
  return {
    words: role("words").textContent,
    state: role("state").textContent,
    cells,
    stock: pile("stock").textContent,
    talon: pile("talon").textContent,
  };
}"""


def _expected(state: dg.State) -> dict[str, Any]:
    talon = f"{len(state.talon)} card{'' if len(state.talon) == 1 else 's'}"
    if state.talon:
        talon += f", top {state.talon[-1].pretty}"
    stock = f"{len(state.stock)} card{'' if len(state.stock) == 1 else 's'}"
    return {
        "cells": [[c.pretty for c in stack] for stack in state.grid],
        "stock": stock,
        "talon": talon,
    }


def _check_step(shown: dict[str, Any], state: dg.State, token: str, words: str):
    assert shown["words"] == f"{token}: {words}"
    assert {k: shown[k] for k in ("cells", "stock", "talon")} == _expected(state)


@browser_test
def test_a_constructed_deal_is_proven_and_played_step_by_step_to_won(
    page, serve, artifacts
):
    built = construct(WINNABLE_SEED)
    page.fill("#deal-text", dg.format_deal(built.deal))
    first = page.locator("#preview-board td[data-cell=A1] .card")
    assert first.text_content(timeout=WAIT_MS) == built.deal[0].pretty
    page.click("#prove")
    page.wait_for_selector("#verdict.won", timeout=WAIT_MS)
    assert page.text_content("#verdict") == "WON"
    assert "proven" in page.text_content("#result-details")
    link = page.get_attribute("#certificate", "href")
    assert link and link.startswith("/v1/jobs/") and link.endswith("/certificate")
    certificate = page.request.get(serve + link).json()
    assert certificate["claim"]["status"] == "won" and certificate["replay"]["won"]

    line = certificate["line"]
    state = dg.parse_position(certificate["position"])
    assert page.get_attribute("[data-role=slider]", "max") == str(len(line))
    for step, token in enumerate(line, start=1):
        (move,) = dg.parse_moves(token)
        words = dg.describe_move(state, move)
        state = dg.apply(state, move)
        page.click("[data-role=forward]")
        _check_step(page.evaluate(READ_PLAYER), state, token, words)
        if step == len(line) // 2:
            page.screenshot(path=str(artifacts / "proof-half-played.png"))
    assert dg.is_won(state)
    assert page.text_content("[data-role=state]") == "WON"
    assert page.is_disabled("[data-role=forward]")
    page.screenshot(path=str(artifacts / "proof-won.png"), full_page=True)


@browser_test
@pytest.mark.parametrize(
    "text",
    [
        "2S 5S XX",  # an unknown token
        "2S 5S 8S",  # too few cards
        "2S 2S 2S " + " ".join(["5H"] * 93),  # a third copy
    ],
)
def test_a_malformed_deal_shows_the_apis_own_message(page, serve, artifacts, text):
    status, reply = _post(
        serve + "/v1/proofs", {"game": "devils-grip", "deal": text, "time_limit": 10}
    )
    assert status == 400
    page.fill("#deal-text", text)
    page.click("#prove")
    page.wait_for_selector("#error:not([hidden])", timeout=WAIT_MS)
    assert page.text_content("#error .message") == reply["error"]["message"]
    assert page.get_attribute("#error", "role") == "alert"
    assert page.is_hidden("#result-section")
    page.screenshot(path=str(artifacts / "bad-deal.png"))


@browser_test
def test_a_numbered_dead_deal_is_proven_lost_and_drawn(page):
    page.check("input[name=source][value=number]")
    page.fill("#deal-number", str(DEAD_NUMBER))
    page.select_option("#question", "verdict")
    page.fill("#time-limit", "20")
    page.click("#prove")
    page.wait_for_selector("#verdict.lost", timeout=WAIT_MS)
    details = page.text_content("#result-details")
    assert f"deal #{DEAD_NUMBER}" in details and "Proofproven: " in details
    start = dg.initial_state(dg.numbered_deal(DEAD_NUMBER))
    shown = page.evaluate(READ_PLAYER)
    assert {k: shown[k] for k in ("cells", "stock", "talon")} == _expected(start)

    # The DRAT certificate is a worker's job: the page waits for it, then saves it.
    with page.expect_download(timeout=2 * WAIT_MS) as download:
        page.click("#certificate")
    bundle = json.loads(Path(download.value.path()).read_text())
    assert bundle["claim"]["text"] == "no line wins"
    report = certificates.check(bundle)
    assert report.ok, report.reason
    assert page.text_content("#status") == "Certificate saved."


#: A late position: 8♠ then J♠ go from the talon onto 5♠; 2♥ (a base card)
#: stays in the talon for good, so the best score is 1: "brilliant".
LATE_POSITION = "A1: 2S 5S\nA2: 5H 8H JH\ntalon: 2H JS 8S\n"


@browser_test
def test_a_position_gets_its_best_score_with_bicycles_grade(page):
    position = dg.position_to_json(dg.parse_position_text(LATE_POSITION))
    page.fill("#deal-text", json.dumps(position))
    assert page.text_content("#preview-board [data-pile=talon] .pile-count") == (
        "3 cards, top 8♠"
    )
    page.select_option("#question", "score")
    page.click("#prove")
    page.wait_for_selector("#verdict.lost", timeout=WAIT_MS)
    details = page.text_content("#result-details")
    assert (
        "Best score1 card left in the talon, Bicycle's grade: brilliant; "
        "proven optimal" in details
    )
    page.click("[data-role=last]")
    assert page.text_content("[data-role=state]") == (
        "stuck: 1 card left in the talon (brilliant)"
    )


@browser_test
@pytest.mark.skipif(
    "besieged-fortress" not in GAMES or not engines_for("besieged-fortress"),
    reason="no Besieged Fortress prover registered",
)
def test_a_besieged_fortress_position_is_proven_and_played_to_won(page):
    game = GAMES["besieged-fortress"]
    state = game.parse_position_text("1: KS QS\n5: KH\n")
    page.select_option("#game", game.name)
    page.fill("#deal-text", json.dumps(game.position_to_json(state)))
    page.click("#prove")
    page.wait_for_selector("#verdict.won", timeout=WAIT_MS)
    page.click("[data-role=last]")
    assert page.text_content("[data-role=state]") == "WON"
    homes = page.eval_on_selector_all(
        "[data-role=board] .foundation .card", "cs => cs.map((c) => c.textContent)"
    )
    assert homes == ["K♠", "K♥", "K♦", "K♣"]


@browser_test
def test_a_generated_deal_fills_the_box_and_its_line_plays_from_the_keyboard(
    page, serve
):
    games = json.loads(urllib.request.urlopen(serve + "/v1/games").read())
    (devils,) = [g for g in games["games"] if g["name"] == "devils-grip"]
    page.check("input[name=source][value=generated]")
    offered = page.eval_on_selector_all(
        "#difficulty option", "options => options.map((o) => o.value)"
    )
    assert offered == devils["generator"]["difficulties"]
    page.click("#generate")
    page.wait_for_selector("#generated-note:not([hidden])", timeout=WAIT_MS)
    deal = dg.parse_deal(page.input_value("#deal-text"))  # the reference parser
    assert page.text_content("#preview-board td[data-cell=C8] .card") == deal[23].pretty
    page.click("#generated-note button")
    page.focus("[data-role=forward]")
    page.keyboard.press("ArrowRight")
    assert page.text_content("[data-role=position]").startswith("Step 1 of")
    page.keyboard.press("End")
    assert page.text_content("[data-role=state]") == "WON"
    page.keyboard.press("Home")
    assert page.text_content("[data-role=position]").startswith("Start")


READ_FORTRESS = """() => Array.from(
  document.querySelectorAll("#preview-board [data-row]"),
  (row) => {
    const cards = Array.from(row.querySelectorAll(".card:not(.empty)"));
    return {
      row: row.dataset.row,
      side: row.classList.contains("left") ? "left" : "right",
      cards: cards.map((c) => c.textContent),
      x: cards.map((c) => c.getBoundingClientRect().left),
    };
  })"""


@browser_test
@pytest.mark.skipif(
    "besieged-fortress" not in GAMES, reason="Besieged Fortress not registered"
)
def test_besieged_fortress_is_drawn_as_eight_rows_around_the_aces(page):
    game = GAMES["besieged-fortress"]
    state = game.initial_state(game.numbered_deal(3))
    page.select_option("#game", game.name)
    page.fill("#deal-text", game.format_deal(game.numbered_deal(3)))
    page.wait_for_selector("#preview-board .foundation", timeout=WAIT_MS)
    rows = page.evaluate(READ_FORTRESS)
    assert [r["row"] for r in rows] == ["1", "5", "2", "6", "3", "7", "4", "8"]
    for shown in rows:
        row = state.rows[int(shown["row"]) - 1]
        assert shown["cards"] == [c.pretty for c in row]  # inner to outer
        assert shown["side"] == ("left" if int(shown["row"]) <= 4 else "right")
        outward = -1 if shown["side"] == "left" else 1  # the outer card is outside
        steps = [b - a for a, b in zip(shown["x"], shown["x"][1:], strict=False)]
        assert all(step * outward > 0 for step in steps)
    aces = page.eval_on_selector_all(
        "#preview-board .foundation .card", "cards => cards.map((c) => c.textContent)"
    )
    assert aces == ["A♠", "A♥", "A♦", "A♣"]


# -- the page's replay against the reference engines -------------------------------
REPLAY_IN_PAGE = """async ([name, position, line]) => {
  const { gameModule } = await import("/assets/games.js");
  const { replayLine } = await import("/assets/player.js");
  const game = gameModule(name);
  const replay = replayLine(game, game.fromPosition(position), line);
  return {
    positions: replay.states.map((s) => game.toPosition(s)),
    words: replay.words,
    outcome: game.outcome(replay.states[replay.states.length - 1]),
    error: replay.error,
  };
}"""


def _reference(game: Any, state: Any, moves: list[Any]) -> dict[str, Any]:
    positions, words = [game.position_to_json(state)], []
    for move in moves:
        words.append(game.describe_move(state, move))
        state = game.apply(state, move)
        positions.append(game.position_to_json(state))
    return {"positions": positions, "words": words, "final": state}


def _random_line(game: Any, state: Any, length: int, seed: int) -> list[Any]:
    """A line of legal moves (no swaps), drawn with the project's own Rng."""
    rng, moves = Rng(seed), []
    for _ in range(length):
        legal = [m for m in game.legal_moves(state) if not isinstance(m, dg.Swap)]
        if not legal:
            break
        move = rng.choice(legal)
        moves.append(move)
        state = game.apply(state, move)
    return moves


#: The games the page draws and replays (service/static/games.js).
PAGE_GAMES = [name for name in ("devils-grip", "besieged-fortress") if name in GAMES]


@browser_test
@pytest.mark.parametrize("game_name", PAGE_GAMES)
def test_the_pages_replay_matches_the_reference_engine(page, game_name):
    game = GAMES[game_name]
    start = game.initial_state(game.numbered_deal(11))
    moves = _random_line(game, start, 120, seed=5)
    line = [game.format_move(m) for m in moves]
    shown = page.evaluate(
        REPLAY_IN_PAGE, [game.name, game.position_to_json(start), line]
    )
    expected = _reference(game, start, moves)
    assert shown["error"] is None
    assert shown["positions"] == expected["positions"]
    assert shown["words"] == expected["words"]
    final = expected["final"]
    assert shown["outcome"]["won"] == game.is_won(final)
    assert shown["outcome"]["stuck"] == game.is_stuck(final)
    assert shown["outcome"]["score"] == game.score(final)


@browser_test
def test_the_page_refuses_to_show_a_line_past_an_illegal_move(page):
    start = dg.initial_state(dg.numbered_deal(11))
    state = dg.apply(start, dg.DEAL)
    misfit = next(
        m for m in (dg.TalonPlay(i) for i in range(24)) if dg.illegal_reason(state, m)
    )
    token = dg.format_move(misfit)
    shown = page.evaluate(
        REPLAY_IN_PAGE, [dg.GAME.name, dg.position_to_json(start), ["deal", token]]
    )
    assert shown["error"] == f"step 2 ({token}): {dg.illegal_reason(state, misfit)}"
    assert len(shown["positions"]) == 2
