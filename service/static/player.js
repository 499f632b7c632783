// The player: step through a line, forward and back, or let it play.
//
// A line arrives already replayed by the reference engine on the server; the
// player replays it once more here, move by move, to have every position to
// draw. Controls are plain buttons and a slider, so they work from the
// keyboard; the arrow keys, Home and End also step while focus is in the
// player.

import { el } from "./cards.js";

/** Replay a line: every position, move and description, or where it broke. */
export function replayLine(game, start, line) {
  const states = [start];
  const moves = [];
  const words = [];
  let error = null;
  for (const [k, text] of line.entries()) {
    try {
      const move = game.parseMove(text);
      words.push(game.describe(states[k], move));
      states.push(game.apply(states[k], move));
      moves.push(move);
    } catch (exc) {
      error = `step ${k + 1} (${text}): ${exc.message}`;
      words.length = moves.length;
      break;
    }
  }
  return { states, moves, words, line: line.slice(0, moves.length), error };
}

const SPEEDS = { slow: 1200, normal: 500, fast: 150 };

export class Player {
  constructor(root) {
    this.root = root;
    this.find = (role) => root.querySelector(`[data-role="${role}"]`);
    this.board = this.find("board");
    this.slider = this.find("slider");
    this.playButton = this.find("play");
    this.timer = null;
    this.replay = { states: [], moves: [], words: [], line: [], error: null };
    this.index = 0;
    this.wire();
  }

  wire() {
    const actions = {
      first: () => this.show(0),
      back: () => this.step(-1),
      forward: () => this.step(1),
      last: () => this.show(this.replay.moves.length),
      play: () => this.toggle(),
    };
    for (const [role, action] of Object.entries(actions)) {
      this.find(role).addEventListener("click", action);
    }
    this.slider.addEventListener("input", () => this.show(Number(this.slider.value)));
    this.find("moves").addEventListener("click", (event) => {
      const item = event.target.closest("[data-step]");
      if (item) this.show(Number(item.dataset.step));
    });
    this.root.addEventListener("keydown", (event) => this.onKey(event));
    this.find("speed").addEventListener("change", () => {
      if (this.timer) this.startTimer();
    });
  }

  onKey(event) {
    const tag = event.target.tagName;
    if (tag === "INPUT" || tag === "SELECT" || event.altKey || event.ctrlKey || event.metaKey) {
      return;
    }
    const keys = {
      ArrowRight: () => this.step(1),
      ArrowLeft: () => this.step(-1),
      Home: () => this.show(0),
      End: () => this.show(this.replay.moves.length),
    };
    if (keys[event.key]) {
      event.preventDefault();
      keys[event.key]();
    }
  }

  /** Show a new line from a start position; `source` says whose line it is. */
  load(game, start, line, source) {
    this.pause();
    this.game = game;
    this.replay = replayLine(game, start, line);
    this.find("source").textContent = source;
    const broken = this.find("error");
    broken.hidden = !this.replay.error;
    broken.textContent = this.replay.error
      ? `The line cannot be shown past ${this.replay.error}`
      : "";
    this.slider.max = String(this.replay.moves.length);
    this.fillMoveList();
    this.root.hidden = false;
    this.show(0);
  }

  fillMoveList() {
    const list = this.find("moves");
    list.replaceChildren();
    this.replay.line.forEach((text, k) => {
      const item = el("li", "", "");
      item.dataset.step = String(k + 1);
      item.append(el("code", "", text), el("span", "words", ` ${this.replay.words[k]}`));
      list.append(item);
    });
    this.find("count").textContent = `${this.replay.moves.length} moves`;
  }

  hide() {
    this.pause();
    this.root.hidden = true;
  }

  step(delta) {
    this.show(this.index + delta);
  }

  show(index) {
    const last = this.replay.moves.length;
    this.index = Math.max(0, Math.min(last, index));
    const k = this.index;
    const state = this.replay.states[k];
    this.board.replaceChildren(
      this.game.render(state, this.replay.moves[k - 1], this.replay.states[k - 1]),
    );
    this.slider.value = String(k);
    this.slider.setAttribute("aria-valuetext", `step ${k} of ${last}`);
    this.find("position").textContent = k ? `Step ${k} of ${last}` : `Start (0 of ${last})`;
    this.find("words").textContent = k
      ? `${this.replay.line[k - 1]}: ${this.replay.words[k - 1]}`
      : last
        ? `next: ${this.replay.line[0]}: ${this.replay.words[0]}`
        : "no moves to play";
    const { text, won } = this.game.outcome(state);
    const status = this.find("state");
    status.textContent = text;
    status.classList.toggle("won", won);
    this.enable({ first: k > 0, back: k > 0, forward: k < last, last: k < last, play: last > 0 });
    this.markMove(k);
    if (k === last) this.pause();
  }

  /** Enable or disable buttons; focus on a button being disabled stays in the player. */
  enable(states) {
    for (const [role, on] of Object.entries(states)) {
      const button = this.find(role);
      if (!on && document.activeElement === button) this.root.focus();
      button.disabled = !on;
    }
  }

  markMove(k) {
    const list = this.find("moves");
    for (const item of list.querySelectorAll("[aria-current]"))
      item.removeAttribute("aria-current");
    const item = list.querySelector(`[data-step="${k}"]`);
    if (!item) return;
    item.setAttribute("aria-current", "step");
    const box = list.parentElement;
    if (item.offsetTop < box.scrollTop || item.offsetTop > box.scrollTop + box.clientHeight - 24) {
      box.scrollTop = item.offsetTop - box.clientHeight / 2;
    }
  }

  toggle() {
    if (this.timer) this.pause();
    else this.play();
  }

  play() {
    if (this.index === this.replay.moves.length) this.show(0);
    this.startTimer();
    this.playButton.setAttribute("aria-pressed", "true");
    this.playButton.querySelector(".label").textContent = "Pause";
    this.playButton.querySelector(".icon").textContent = "❚❚";
  }

  startTimer() {
    clearInterval(this.timer);
    const delay = SPEEDS[this.find("speed").value] || SPEEDS.normal;
    this.timer = setInterval(() => this.step(1), delay);
  }

  pause() {
    clearInterval(this.timer);
    this.timer = null;
    this.playButton.setAttribute("aria-pressed", "false");
    this.playButton.querySelector(".label").textContent = "Play";
    this.playButton.querySelector(".icon").textContent = "▶";
  }
}
