// Devil's Grip on the page: replay a verified line and draw the 3×8 grid.
//
// The rules live in verifier/devils_grip.py; this is the small part the page
// needs to show a line the reference engine has already replayed: apply a
// move, say it in the same words as `describe_move`, and draw a position.
// The checks below only guard the drawing against a line that does not fit
// the position (they give the reference engine's reasons).

import {
  backElement,
  card,
  cardElement,
  el,
  emptyElement,
  pretty,
  prettyList,
  token,
} from "./cards.js";

const ROWS = "ABC";
const COLUMNS = 8;
const CELLS = 24;
const GRID_SIZE = 24;
const PACKET = 3;
const STEP = 3;
const BASE_RANKS = [2, 3, 4];
const TOP_RANKS = [11, 12, 13];

export const name = "devils-grip";
export const dealSize = 96;

export function cellName(index) {
  return `${ROWS[Math.floor(index / COLUMNS)]}${(index % COLUMNS) + 1}`;
}

function parseCell(text) {
  const t = text.toUpperCase();
  const row = ROWS.indexOf(t[0]);
  const col = Number(t.slice(1));
  if (t.length !== 2 || row < 0 || !(col >= 1 && col <= COLUMNS)) {
    throw new Error(`unknown cell ${text}`);
  }
  return row * COLUMNS + col - 1;
}

// -- positions ------------------------------------------------------------
/** Return the state of a position in the API's JSON form. */
export function fromPosition(data) {
  return {
    grid: data.grid.map((stack) => stack.map(card)),
    stock: data.stock.map(card),
    talon: data.talon.map(card),
  };
}

/** Return the API's JSON form of a state (as `position_to_json`). */
export function toPosition(state) {
  return {
    game: name,
    grid: state.grid.map((stack) => stack.map(token)),
    stock: state.stock.map(token),
    talon: state.talon.map(token),
  };
}

/** Return the starting position of a deal (96 cards in deal order). */
export function fromDeal(cards) {
  return {
    grid: cards.slice(0, GRID_SIZE).map((c) => [c]),
    stock: cards.slice(GRID_SIZE),
    talon: [],
  };
}

/** Return deal text as `format_deal` writes it: grid rows, then the stock. */
export function formatDeal(tokens) {
  const lines = [];
  for (let r = 0; r < 3; r += 1) {
    lines.push(`# grid row ${ROWS[r]}`);
    lines.push(tokens.slice(r * COLUMNS, (r + 1) * COLUMNS).join(" "));
  }
  lines.push("# stock, top first");
  for (let i = GRID_SIZE; i < tokens.length; i += 12) {
    lines.push(tokens.slice(i, i + 12).join(" "));
  }
  return `${lines.join("\n")}\n`;
}

// -- moves ----------------------------------------------------------------
/** Read one move in canonical notation: A3>B5, deal, T>B5, A3<>B5. */
export function parseMove(text) {
  const t = text.trim().toUpperCase();
  if (t === "DEAL") return { kind: "deal" };
  const m = /^([A-Z0-9]+)(<>|>)([A-Z0-9]+)$/.exec(t);
  if (!m) throw new Error(`cannot read move ${text}`);
  if (m[2] === "<>") return { kind: "swap", a: parseCell(m[1]), b: parseCell(m[3]) };
  if (m[1] === "T") return { kind: "talon", dst: parseCell(m[3]) };
  return { kind: "merge", src: parseCell(m[1]), dst: parseCell(m[3]) };
}

function fits(c, onto) {
  return c.suit === onto.suit && c.rank === onto.rank + STEP;
}

function fitReason(c, onto) {
  if (TOP_RANKS.includes(onto.rank)) return `nothing goes on ${pretty(onto)}`;
  if (BASE_RANKS.includes(c.rank)) return `${pretty(c)} is a base card and goes on nothing`;
  if (!fits(c, onto)) return `${pretty(c)} does not fit on ${pretty(onto)}`;
  return null;
}

/** Return why a move cannot be played in a state, or null. */
export function illegalReason(state, move) {
  const top = (i) => state.grid[i][state.grid[i].length - 1];
  switch (move.kind) {
    case "merge":
      if (move.src === move.dst) return `cannot merge cell ${cellName(move.src)} onto itself`;
      if (!state.grid[move.src].length) return `source cell ${cellName(move.src)} is empty`;
      if (!state.grid[move.dst].length) return `target cell ${cellName(move.dst)} is empty`;
      return fitReason(state.grid[move.src][0], top(move.dst));
    case "deal":
      if (!state.stock.length) return "the stock is exhausted (one pass only, no redeal)";
      if (state.grid.some((s) => !s.length)) return "cannot deal while a grid cell is empty";
      return null;
    case "talon": {
      if (!state.talon.length) return "the talon is empty";
      const c = state.talon[state.talon.length - 1];
      if (!state.grid[move.dst].length) {
        return `a talon card never goes into an empty cell (${pretty(c)} to ${cellName(move.dst)})`;
      }
      return fitReason(c, top(move.dst));
    }
    case "swap":
      return move.a === move.b ? `cannot swap cell ${cellName(move.a)} with itself` : null;
    default:
      return `not a Devil's Grip move: ${move.kind}`;
  }
}

/** Return the position after a move; throw with the reason if it is illegal. */
export function apply(state, move) {
  const reason = illegalReason(state, move);
  if (reason) throw new Error(reason);
  const grid = state.grid.slice();
  let { stock, talon } = state;
  switch (move.kind) {
    case "merge":
      grid[move.dst] = grid[move.dst].concat(grid[move.src]);
      grid[move.src] = stock.length ? [stock[0]] : [];
      stock = stock.slice(1);
      break;
    case "deal":
      talon = talon.concat(stock.slice(0, PACKET));
      stock = stock.slice(PACKET);
      break;
    case "talon":
      grid[move.dst] = grid[move.dst].concat(talon.slice(-1));
      talon = talon.slice(0, -1);
      break;
    case "swap":
      [grid[move.a], grid[move.b]] = [grid[move.b], grid[move.a]];
      break;
    default:
      break;
  }
  return { grid, stock, talon };
}

/** Say a move in words, exactly as `describe_move` does. */
export function describe(state, move) {
  switch (move.kind) {
    case "merge": {
      const stack = state.grid[move.src];
      const dst = state.grid[move.dst];
      const onto = dst[dst.length - 1];
      const where = `(${cellName(move.src)}) onto ${pretty(onto)} (${cellName(move.dst)})`;
      const refill = state.stock.length ? `refill ${pretty(state.stock[0])}` : "cell stays empty";
      return `merge ${prettyList(stack)} ${where}, ${refill}`;
    }
    case "deal":
      return `deal ${prettyList(state.stock.slice(0, PACKET))} onto the talon`;
    case "talon": {
      const dst = state.grid[move.dst];
      const onto = pretty(dst[dst.length - 1]);
      return `talon ${pretty(state.talon[state.talon.length - 1])} onto ${onto} (${cellName(move.dst)})`;
    }
    case "swap":
      return `swap ${cellName(move.a)} and ${cellName(move.b)}`;
    default:
      return move.kind;
  }
}

/** Return what a move changed: the cells, and whether the talon did. */
export function touched(move) {
  if (!move) return { cells: [], talon: false };
  switch (move.kind) {
    case "merge":
      return { cells: [move.src, move.dst], talon: false };
    case "talon":
      return { cells: [move.dst], talon: true };
    case "swap":
      return { cells: [move.a, move.b], talon: false };
    default:
      return { cells: [], talon: true };
  }
}

// -- the end of play --------------------------------------------------------
function rowOfBase(rank) {
  return (rank - 2) % STEP;
}

function isWon(state) {
  return (
    !state.stock.length &&
    !state.talon.length &&
    state.grid.every((s, i) => s.length === 4 && rowOfBase(s[0].rank) === Math.floor(i / COLUMNS))
  );
}

function canBringCardIntoPlay(state) {
  if (state.stock.length) return true;
  if (!state.talon.length) return false;
  const c = state.talon[state.talon.length - 1];
  return state.grid.some((s) => s.length && fits(c, s[s.length - 1]));
}

/** Bicycle's grade of a score (cards left in the talon), or "" for none. */
export function grade(score) {
  if (score === 0) return "won";
  if (score <= 2) return "brilliant";
  if (score <= 5) return "excellent";
  if (score <= 10) return "good";
  return "";
}

/** Say a score in words: the cards left in the talon. */
export function scoreWords(score) {
  return `${score} card${score === 1 ? "" : "s"} left in the talon`;
}

/** Return {won, stuck, score, text}: where play stands in a state. */
export function outcome(state) {
  const won = isWon(state);
  const stuck = !won && !canBringCardIntoPlay(state);
  const score = state.talon.length;
  let text = "in play";
  if (won) text = "WON";
  else if (stuck) {
    const g = grade(score);
    text = `stuck: ${scoreWords(score)}${g ? ` (${g})` : ""}`;
  }
  return { won, stuck, score, text };
}

// -- drawing ----------------------------------------------------------------
function stackElement(stack, index) {
  const node = el("div", "stack");
  if (!stack.length) node.append(emptyElement(`cell ${cellName(index)} empty`));
  for (const c of stack) node.append(cardElement(c));
  return node;
}

function gridElement(state, cells) {
  const table = el("table", "dg-grid");
  table.append(el("caption", "sr-only", "Grid: rows A to C, columns 1 to 8; stacks bottom to top"));
  const head = el("tr");
  head.append(el("td"));
  for (let c = 1; c <= COLUMNS; c += 1) {
    const th = el("th", "", String(c));
    th.scope = "col";
    head.append(th);
  }
  const thead = el("thead");
  thead.append(head);
  table.append(thead);
  const body = el("tbody");
  for (let r = 0; r < 3; r += 1) {
    const tr = el("tr");
    const th = el("th", "", ROWS[r]);
    th.scope = "row";
    tr.append(th);
    for (let c = 0; c < COLUMNS; c += 1) {
      const i = r * COLUMNS + c;
      const td = el("td", cells.includes(i) ? "cell touched" : "cell");
      td.dataset.cell = cellName(i);
      td.append(stackElement(state.grid[i], i));
      tr.append(td);
    }
    body.append(tr);
  }
  table.append(body);
  return table;
}

function pileElement(title, count, face, touchedPile) {
  const node = el("div", touchedPile ? "pile touched" : "pile");
  node.append(el("span", "pile-name", title), face, el("span", "pile-count", count));
  return node;
}

function pilesElement(state, talonTouched) {
  const piles = el("div", "piles");
  const n = state.stock.length;
  const stockFace = n
    ? backElement(`stock: ${n} cards face down`)
    : emptyElement("stock exhausted");
  const stock = pileElement("Stock", `${n} card${n === 1 ? "" : "s"}`, stockFace, false);
  stock.dataset.pile = "stock";
  const t = state.talon.length;
  const top = state.talon[t - 1];
  const talonFace = top ? cardElement(top) : emptyElement("talon empty");
  const talon = pileElement(
    "Talon",
    `${t} card${t === 1 ? "" : "s"}${top ? `, top ${pretty(top)}` : ""}`,
    talonFace,
    talonTouched,
  );
  talon.dataset.pile = "talon";
  piles.append(stock, talon);
  return piles;
}

/** Draw a position: the 3×8 grid, then the stock and the talon top. */
export function render(state, move) {
  const { cells, talon } = touched(move);
  const board = el("div", "board dg");
  board.append(gridElement(state, cells), pilesElement(state, talon));
  return board;
}
