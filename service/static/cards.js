// Cards: reading tokens, the display form, and drawing one card.
//
// Mirrors verifier/cards.py: a card is {rank: 1..13, suit: 0..3} with suits
// S H D C; tokens are case-insensitive ("5s", "10H", "th", "Q♦"); the display
// form uses the suit symbols ("10♥").

export const SUITS = "SHDC";
export const SUIT_SYMBOLS = "♠♥♦♣";
export const SUIT_NAMES = ["spades", "hearts", "diamonds", "clubs"];
const RANK_NAMES = { 1: "A", 11: "J", 12: "Q", 13: "K" };
const RANK_WORDS = { 1: "ace", 11: "jack", 12: "queen", 13: "king" };
const RANK_BY_TOKEN = { A: 1, T: 10, J: 11, Q: 12, K: 13 };
for (let r = 2; r <= 10; r += 1) RANK_BY_TOKEN[String(r)] = r;
const SUIT_BY_TOKEN = { "♤": 0, "♡": 1, "♢": 2, "♧": 3 };
for (let s = 0; s < 4; s += 1) {
  SUIT_BY_TOKEN[SUITS[s]] = s;
  SUIT_BY_TOKEN[SUIT_SYMBOLS[s]] = s;
}

/** Return the card of a token, or null when it is not one. */
export function parseCard(token) {
  const text = String(token).trim().toUpperCase();
  if (text.length < 2) return null;
  const rank = RANK_BY_TOKEN[text.slice(0, -1)];
  const suit = SUIT_BY_TOKEN[text.slice(-1)];
  return rank === undefined || suit === undefined ? null : { rank, suit };
}

/** Return the card of a canonical token from the API; throw if it is not one. */
export function card(token) {
  const parsed = parseCard(token);
  if (!parsed) throw new Error(`not a card: ${token}`);
  return parsed;
}

/** Return the cards of whitespace-separated tokens (# comments), or null. */
export function parseTokens(text) {
  const body = text
    .split("\n")
    .map((line) => line.split("#", 1)[0])
    .join("\n");
  const tokens = body.split(/\s+/).filter(Boolean);
  const cards = tokens.map(parseCard);
  return cards.every(Boolean) ? cards : null;
}

export function rankName(rank) {
  return RANK_NAMES[rank] || String(rank);
}

/** The canonical ASCII token, e.g. "10H" (as the API writes cards). */
export function token(c) {
  return rankName(c.rank) + SUITS[c.suit];
}

/** The display form, e.g. "10♥". */
export function pretty(c) {
  return rankName(c.rank) + SUIT_SYMBOLS[c.suit];
}

/** The spoken form, e.g. "10 of hearts", for screen readers. */
export function spoken(c) {
  return `${RANK_WORDS[c.rank] || c.rank} of ${SUIT_NAMES[c.suit]}`;
}

/** Cards in display form separated by blanks, "(empty)" for none. */
export function prettyList(cards) {
  return cards.map(pretty).join(" ") || "(empty)";
}

export function sameCard(a, b) {
  return a.rank === b.rank && a.suit === b.suit;
}

/** Return a small element of the given tag and class, with optional text. */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** Draw one face-up card: rank and suit symbol, its name for screen readers. */
export function cardElement(c) {
  const node = el("span", `card suit-${SUITS[c.suit].toLowerCase()}`);
  node.setAttribute("role", "img");
  node.setAttribute("aria-label", spoken(c));
  node.title = spoken(c);
  node.append(el("span", "rank", rankName(c.rank)), el("span", "pip", SUIT_SYMBOLS[c.suit]));
  return node;
}

/** Draw a face-down card (the stock). */
export function backElement(label) {
  const node = el("span", "card back");
  node.setAttribute("role", "img");
  node.setAttribute("aria-label", label);
  return node;
}

/** Draw an empty place (an empty cell or row). */
export function emptyElement(label) {
  const node = el("span", "card empty");
  node.setAttribute("role", "img");
  node.setAttribute("aria-label", label);
  return node;
}
