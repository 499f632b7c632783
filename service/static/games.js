// The games the page can draw and replay, by the API's game name.
//
// A game module exports: name, dealSize, fromPosition, toPosition, fromDeal,
// formatDeal, parseMove, illegalReason, apply, describe, outcome, grade and
// render(state, move, before). A new game is a new module plus one line here.

import * as besiegedFortress from "./besieged_fortress.js";
import * as devilsGrip from "./devils_grip.js";

export const GAMES = {
  [devilsGrip.name]: devilsGrip,
  [besiegedFortress.name]: besiegedFortress,
};

/** Return the page's module for a game name, or null when it has none. */
export function gameModule(name) {
  return Object.hasOwn(GAMES, name) ? GAMES[name] : null;
}
