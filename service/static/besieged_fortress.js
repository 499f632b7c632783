// Besieged Fortress on the page: replay a verified line and draw 8 rows
// around the aces.
//
// The rules live in verifier/besieged_fortress.py; as for Devil's Grip, this
// is only what the page needs to show a line the reference engine has
// replayed: apply a move, say it as `describe_move` does, draw a position.

import { SUITS, card, cardElement, el, emptyElement, pretty, token } from "./cards.js";

const ROWS = 8;
const ROW_LENGTH = 6;
const ACE = 1;
const KING = 13;
const FULL_DECK = 52;

export const name = "besieged-fortress";
export const dealSize = 48;

const rowName = (index) => String(index + 1);
const outer = (row) => row[row.length - 1];

function parseRow(text) {
  if (!/^[1-8]$/.test(text)) throw new Error(`unknown row ${text}`);
  return Number(text) - 1;
}

// -- positions ------------------------------------------------------------
/** Return the state of a position in the API's JSON form. */
export function fromPosition(data) {
  return {
    rows: data.rows.map((row) => row.map(card)),
    foundations: Array.from(SUITS, (s) => data.foundations[s]),
  };
}

/** Return the API's JSON form of a state (as `position_to_json`). */
export function toPosition(state) {
  const foundations = {};
  Array.from(SUITS).forEach((s, i) => {
    foundations[s] = state.foundations[i];
  });
  return { game: name, rows: state.rows.map((row) => row.map(token)), foundations };
}

/** Return the starting position of a deal (48 cards, row 1 inner to outer first). */
export function fromDeal(cards) {
  const rows = [];
  for (let r = 0; r < ROWS; r += 1) rows.push(cards.slice(r * ROW_LENGTH, (r + 1) * ROW_LENGTH));
  return { rows, foundations: [ACE, ACE, ACE, ACE] };
}

/** Return deal text as `format_deal` writes it: one line per row. */
export function formatDeal(tokens) {
  const lines = [];
  for (let r = 0; r < ROWS; r += 1) {
    lines.push(`# row ${rowName(r)} (${r < 4 ? "left" : "right"}), inner to outer`);
    lines.push(tokens.slice(r * ROW_LENGTH, (r + 1) * ROW_LENGTH).join(" "));
  }
  return `${lines.join("\n")}\n`;
}

// -- moves ----------------------------------------------------------------
/** Read one move in canonical notation: 3>5 (row to row) or 3>F (home). */
export function parseMove(text) {
  const m = /^([0-9]+)>([0-9]+|F)$/.exec(text.trim().toUpperCase());
  if (!m) throw new Error(`cannot read move ${text}`);
  if (m[2] === "F") return { kind: "home", src: parseRow(m[1]) };
  return { kind: "row", src: parseRow(m[1]), dst: parseRow(m[2]) };
}

const buildsOn = (c, onto) => c.rank === onto.rank - 1;
const goesHome = (c, foundations) => c.rank === foundations[c.suit] + 1;

/** Return why a move cannot be played in a state, or null. */
export function illegalReason(state, move) {
  if (move.kind === "row" && move.src === move.dst) {
    return `cannot move row ${rowName(move.src)} onto itself`;
  }
  if (!state.rows[move.src].length) return `source row ${rowName(move.src)} is empty`;
  const c = outer(state.rows[move.src]);
  if (move.kind === "row") {
    const target = state.rows[move.dst];
    if (target.length && !buildsOn(c, outer(target))) {
      return `${pretty(c)} does not go on ${pretty(outer(target))} (a card goes on one rank higher, any suit)`;
    }
    return null;
  }
  if (!goesHome(c, state.foundations)) {
    const top = { rank: state.foundations[c.suit], suit: c.suit };
    return `${pretty(c)} does not go home: its foundation shows ${pretty(top)}`;
  }
  return null;
}

/** Return the position after a move; throw with the reason if it is illegal. */
export function apply(state, move) {
  const reason = illegalReason(state, move);
  if (reason) throw new Error(reason);
  const rows = state.rows.slice();
  const c = outer(rows[move.src]);
  rows[move.src] = rows[move.src].slice(0, -1);
  const foundations = state.foundations.slice();
  if (move.kind === "row") rows[move.dst] = rows[move.dst].concat([c]);
  else foundations[c.suit] = c.rank;
  return { rows, foundations };
}

/** Say a move in words, exactly as `describe_move` does. */
export function describe(state, move) {
  const row = state.rows[move.src];
  const c = outer(row);
  const where = `${pretty(c)} (row ${rowName(move.src)})`;
  const frees =
    row.length > 1
      ? `, freeing ${pretty(row[row.length - 2])}`
      : `, emptying row ${rowName(move.src)}`;
  if (move.kind === "home") return `${where} to its foundation${frees}`;
  const target = state.rows[move.dst];
  const onto = target.length
    ? `onto ${pretty(outer(target))} (row ${rowName(move.dst)})`
    : `into empty row ${rowName(move.dst)}`;
  return `${where} ${onto}${frees}`;
}

/** Return what a move (played from `before`) changed: rows, and the suit sent home. */
export function touched(move, before) {
  if (!move) return { rows: [], home: -1 };
  if (move.kind === "row") return { rows: [move.src, move.dst], home: -1 };
  return { rows: [move.src], home: outer(before.rows[move.src]).suit };
}

// -- the end of play --------------------------------------------------------
function hasMove(state) {
  return state.rows.some(
    (row, src) =>
      row.length &&
      (goesHome(outer(row), state.foundations) ||
        state.rows.some(
          (target, dst) => dst !== src && (!target.length || buildsOn(outer(row), outer(target))),
        )),
  );
}

/** Return {won, stuck, score, text}: where play stands in a state. */
export function outcome(state) {
  const won = state.foundations.every((top) => top === KING);
  const stuck = !won && !hasMove(state);
  const home = state.foundations.reduce((a, b) => a + b, 0);
  const score = FULL_DECK - home;
  let text = "in play";
  if (won) text = "WON";
  else if (stuck) text = `stuck: ${home} of 52 cards home, ${score} left in the rows`;
  return { won, stuck, score, text };
}

// -- drawing ----------------------------------------------------------------
function rowElement(state, index, side, rows) {
  const node = el("div", `fortress-row ${side}${rows.includes(index) ? " touched" : ""}`);
  node.dataset.row = rowName(index);
  const label = el("span", "row-name", rowName(index));
  label.setAttribute("aria-label", `row ${rowName(index)}, inner to outer`);
  const cards = el("div", "row-cards");
  const row = state.rows[index];
  if (!row.length) cards.append(emptyElement(`row ${rowName(index)} empty`));
  for (const c of row) cards.append(cardElement(c));
  node.append(label, cards);
  return node;
}

function foundationElement(state, suit, home) {
  const node = el("div", home === suit ? "foundation touched" : "foundation");
  node.append(cardElement({ rank: state.foundations[suit], suit }));
  return node;
}

/** Draw a position: rows 1-4 left of the aces, rows 5-8 right, outer cards outside. */
export function render(state, move, before) {
  const { rows, home } = touched(move, before);
  const board = el("div", "board bf");
  board.setAttribute("role", "group");
  board.setAttribute("aria-label", "Rows 1 to 4 left of the foundations, rows 5 to 8 right");
  for (let i = 0; i < 4; i += 1) {
    const line = el("div", "fortress-line");
    line.append(
      rowElement(state, i, "left", rows),
      foundationElement(state, i, home),
      rowElement(state, i + 4, "right", rows),
    );
    board.append(line);
  }
  const { score } = outcome(state);
  board.append(
    el("p", "piles-summary", `On the foundations ${FULL_DECK - score} of 52; in the rows ${score}`),
  );
  return board;
}

/** Say a score in words: the cards not yet home. */
export function scoreWords(score) {
  return `${score} card${score === 1 ? "" : "s"} not home`;
}

/** Besieged Fortress has no Bicycle grade. */
export function grade() {
  return "";
}
