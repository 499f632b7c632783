// The page: choose a deal, submit it, follow the job, show the proof.
//
// Everything goes through the public API (/v1/games, /v1/proofs, /v1/deals,
// /v1/jobs/{id}); its error messages are shown as they come, so the page says
// exactly what the API says about bad input.

import { el, parseCard, parseTokens } from "./cards.js";
import { gameModule } from "./games.js";
import { Player } from "./player.js";

const POLL_MS = 250;
const $ = (id) => document.getElementById(id);

let catalogue = null; // the answer of GET /v1/games
let following = null; // the job being followed; a newer one replaces it
let certificateClick = null; // the certificate request under way; a newer click replaces it
let player = null;

// -- the API -------------------------------------------------------------------
class ApiError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/** Call the API; return its JSON, or throw an ApiError with its message. */
async function api(method, path, body) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body,
    });
  } catch (exc) {
    throw new ApiError("unreachable", `cannot reach the service: ${exc.message}`);
  }
  let data;
  try {
    data = await response.json();
  } catch {
    throw new ApiError("bad_reply", `the service answered ${response.status} without JSON`);
  }
  if (!response.ok) {
    const error = data.error || {};
    throw new ApiError(error.code || String(response.status), error.message || response.statusText);
  }
  return data;
}

/** Return a JSON body; `rawNumber` goes in verbatim (2**64-1 is no JS number). */
function jsonBody(fields, rawNumber) {
  const text = JSON.stringify(fields);
  if (rawNumber === undefined) return text;
  return `${text.slice(0, -1)}${text.length > 2 ? "," : ""}"number":${rawNumber}}`;
}

// -- messages --------------------------------------------------------------------
function showError(error) {
  const box = $("error");
  box.replaceChildren(
    el("strong", "", "The service says: "),
    el("span", "message", error.message),
    el("span", "code", ` (${error.code})`),
  );
  box.hidden = false;
}

function clearError() {
  $("error").hidden = true;
  $("error").replaceChildren();
}

function setStatus(text) {
  $("status").textContent = text;
}

// -- the game and its options ------------------------------------------------------
function currentGame() {
  return catalogue.games.find((g) => g.name === $("game").value);
}

function fillSelect(select, values, labels = {}) {
  const previous = select.value;
  select.replaceChildren(
    ...values.map((v) => {
      const option = el("option", "", labels[v] || v);
      option.value = v;
      return option;
    }),
  );
  if (values.includes(previous)) select.value = previous;
}

function onGameChange() {
  const game = currentGame();
  $("game-summary").textContent = game.summary;
  $("deal-format").textContent = `Format: ${game.formats.deal}.`;
  fillSelect($("question"), game.questions, {
    verdict: "verdict: can it be won?",
    score: "score: also the best score (cards left)",
  });
  fillSelect($("engine"), game.engines.length ? game.engines : ["auto"], {
    auto: "auto (portfolio)",
  });
  $("no-prover").hidden = game.engines.length > 0;
  $("no-prover").textContent =
    `No prover is registered for ${game.title} yet: the service will refuse proofs.`;
  const generator = game.generator;
  $("source-generated-radio").disabled = !generator.available;
  $("generator-missing").hidden = generator.available;
  fillSelect($("difficulty"), generator.difficulties);
  if (!generator.available && sourceKind() === "generated") chooseSource("text");
  updatePreview();
}

function fillLimits(limits) {
  const input = $("time-limit");
  input.min = String(limits.time_limit.min);
  input.max = String(limits.time_limit.max);
  input.value = String(limits.time_limit.default);
  $("time-limit-hint").textContent =
    `seconds, ${limits.time_limit.min} to ${limits.time_limit.max}`;
}

// -- where the deal comes from ---------------------------------------------------
function sourceKind() {
  return document.querySelector('input[name="source"]:checked').value;
}

function chooseSource(kind) {
  document.querySelector(`input[name="source"][value="${kind}"]`).checked = true;
  showSource();
}

function showSource() {
  const kind = sourceKind();
  for (const name of ["text", "number", "generated"]) {
    $(`source-${name}`).hidden = name !== kind;
  }
  updatePreview();
}

/** Read the textarea as the page can: deal cards, a position, or nothing. */
function readText(module, text) {
  const trimmed = text.trim();
  if (trimmed.startsWith("[") || trimmed.startsWith("{")) {
    let data;
    try {
      data = JSON.parse(trimmed);
    } catch {
      return {};
    }
    if (Array.isArray(data)) return { cards: data.map((t) => parseCard(String(t))) };
    if (data && Array.isArray(data.deal))
      return { cards: data.deal.map((t) => parseCard(String(t))) };
    if (data && typeof data === "object") return { position: data };
    return {};
  }
  return { cards: parseTokens(text) };
}

function updatePreview() {
  const box = $("preview-board");
  const game = currentGame();
  const module = game && gameModule(game.name);
  if (!module) {
    box.replaceChildren(el("p", "hint", "The page has no drawing for this game yet."));
    return;
  }
  if (sourceKind() !== "text") {
    box.replaceChildren(el("p", "hint", "The deal is drawn once the service answers."));
    return;
  }
  const { cards, position } = readText(module, $("deal-text").value);
  try {
    if (position) {
      box.replaceChildren(module.render(module.fromPosition(position)));
      return;
    }
    if (cards && cards.every(Boolean) && cards.length === module.dealSize) {
      box.replaceChildren(module.render(module.fromDeal(cards)));
      return;
    }
  } catch {
    // not drawable here; the service checks it on submission
  }
  const count = cards && cards.every(Boolean) ? cards.length : 0;
  box.replaceChildren(
    el(
      "p",
      "hint",
      `The deal is drawn here when the text holds ${module.dealSize} cards` +
        (count ? ` (now ${count}).` : ".") +
        " The service checks it when you submit.",
    ),
  );
}

// -- jobs ----------------------------------------------------------------------------
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function describeProgress(view, started, limit) {
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const bar = $("progress");
  bar.hidden = view.status === "done" || view.status === "failed";
  if (view.progress && view.progress.total) {
    bar.max = view.progress.total;
    bar.value = view.progress.done;
    return `${view.status}: ${view.progress.done} of ${view.progress.total} done, ${seconds} s`;
  }
  if (limit) {
    bar.max = limit;
    bar.value = Math.min(limit, Number(seconds));
    return `${view.status}: ${seconds} s (time limit ${limit} s)`;
  }
  bar.removeAttribute("value");
  return `${view.status}: ${seconds} s`;
}

/** Errors a poll rides out: a dropped connection, a proxy's page, Redis restarting. */
const TRANSIENT = new Set(["unreachable", "bad_reply", "unavailable"]);
/** How long a poll waits out an outage (a Redis restart takes seconds). */
const OUTAGE_MS = 60000;

/**
 * GET `path`; a brief outage is waited out, not taken for the job's end.
 * Returns null once `wanted()` says the answer is no longer wanted.
 */
async function poll(path, wanted) {
  const giveUp = performance.now() + OUTAGE_MS;
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await api("GET", path);
    } catch (exc) {
      if (!TRANSIENT.has(exc.code) || performance.now() > giveUp) throw exc;
      await sleep(Math.min(POLL_MS * attempt, 4000));
      if (!wanted()) return null;
    }
  }
}

/** Poll a job until it is done or failed; return its last view (null if replaced). */
async function follow(view, what) {
  const token = {};
  following = token;
  const started = performance.now();
  const limit = view.request && view.request.time_limit;
  const label = `${what} job ${view.id.slice(0, 8)}`;
  setStatus(`${label} ${describeProgress(view, started, limit)}`);
  while (view.status === "queued" || view.status === "running") {
    await sleep(POLL_MS);
    if (following !== token) return null;
    view = await poll(view.links.self, () => following === token);
    if (view === null || following !== token) return null;
    setStatus(`${label} ${describeProgress(view, started, limit)}`);
  }
  if (view.status === "failed") {
    setStatus(`${label} failed.`);
    showError(view.error);
    return null;
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  setStatus(
    `${label} done in ${seconds} s${view.deduplicated ? " (an identical earlier submission)" : ""}.`,
  );
  return view;
}

function proofBody() {
  const game = currentGame();
  const fields = { game: game.name, question: $("question").value, engine: $("engine").value };
  const limit = $("time-limit").value.trim();
  if (limit) fields.time_limit = Number.isNaN(Number(limit)) ? limit : Number(limit);
  if (sourceKind() === "number") {
    const number = $("deal-number").value.trim();
    if (/^-?\d+$/.test(number)) return jsonBody(fields, number);
    return jsonBody({ ...fields, number });
  }
  const text = $("deal-text").value;
  const { position } = readText(gameModule(game.name), text);
  return jsonBody(position ? { ...fields, position } : { ...fields, deal: text });
}

async function onProve(event) {
  event.preventDefault();
  clearError();
  $("prove").disabled = true;
  try {
    const accepted = await api("POST", "/v1/proofs", proofBody());
    forgetProof();
    const view = await follow(accepted, "proof");
    if (view) showProof(view);
  } catch (exc) {
    setStatus(
      exc.code === "unreachable"
        ? "The service cannot be reached."
        : "The service refused the request.",
    );
    showError(exc);
  } finally {
    $("prove").disabled = false;
  }
}

async function onGenerate() {
  clearError();
  const game = currentGame();
  $("generate").disabled = true;
  try {
    const body = JSON.stringify({ game: game.name, count: 1, difficulty: $("difficulty").value });
    const view = await follow(await api("POST", "/v1/deals", body), "deal");
    if (view) showGenerated(game, view.result.deals[0]);
  } catch (exc) {
    setStatus(
      exc.code === "unreachable"
        ? "The service cannot be reached."
        : "The service refused the request.",
    );
    showError(exc);
  } finally {
    $("generate").disabled = false;
  }
}

function showGenerated(game, deal) {
  const module = gameModule(game.name);
  $("deal-text").value = module ? module.formatDeal(deal.deal) : `${deal.deal.join(" ")}\n`;
  chooseSource("text");
  const note = $("generated-note");
  const play = el("button", "link", "play its built solution");
  play.type = "button";
  play.addEventListener("click", () => {
    const cards = deal.deal.map(parseCard);
    player.load(
      module,
      module.fromDeal(cards),
      deal.line,
      `The generator's winning line (seed ${deal.seed})`,
    );
    $("player-section").scrollIntoView({ behavior: "smooth" });
  });
  note.replaceChildren(
    `Generated from seed ${deal.seed} (difficulty ${deal.difficulty}), with a ${deal.line.length}-move winning line. Prove it, or `,
    module ? play : "",
  );
  note.hidden = false;
}

// -- the result ------------------------------------------------------------------
/** Hide the previous proof once a new one is on its way. */
function forgetProof() {
  $("result-section").hidden = true;
  player.hide();
}

function addDetail(list, term, value) {
  list.append(el("dt", "", term), el("dd", "", value));
}

function scoreText(module, r) {
  if (r.best_score === null || r.best_score === undefined) return null;
  if (r.status === "won") return "0: won";
  const grade = module ? module.grade(r.best_score) : "";
  const proven = r.score_proven
    ? "proven optimal"
    : r.lower_bound !== null && r.lower_bound !== undefined
      ? `not proven optimal; no line does better than ${r.lower_bound}`
      : "not proven optimal";
  const graded = grade ? `, Bicycle's grade: ${grade}` : ", no grade (Bicycle's scale stops at 10)";
  const words = module ? module.scoreWords(r.best_score) : String(r.best_score);
  return `${words}${graded}; ${proven}`;
}

/** Return the API's start label with the game's title, e.g. "Devil's Grip deal #5". */
function startLabel(game, start) {
  return game.title ? start.replace(game.name, game.title) : start;
}

function showProof(view) {
  const value = view.result;
  const r = value.result;
  const game = catalogue.games.find((g) => g.name === value.game) || { has_score: false };
  const module = gameModule(value.game);
  $("result-section").hidden = false;
  const verdict = $("verdict");
  verdict.textContent = r.status.toUpperCase();
  verdict.className = `verdict ${r.status}`;
  const details = $("result-details");
  details.replaceChildren();
  addDetail(details, "Deal", startLabel(game, value.start));
  addDetail(
    details,
    "Proof",
    `${r.proven ? "proven" : "not proven"}${r.method ? `: ${r.method}` : ""}`,
  );
  if (game.has_score && (r.question === "score" || r.status === "won")) {
    addDetail(details, "Best score", scoreText(module, r) || "no line found within the time limit");
  }
  addDetail(
    details,
    "Engine",
    `${r.engine}, ${Number(r.elapsed).toFixed(2)} s${value.cached ? " (stored answer, replayed again)" : ""}`,
  );
  addDetail(details, "Line", r.line.length ? `${r.line.length} moves` : "none");
  const link = $("certificate");
  link.hidden = !view.links.certificate;
  if (view.links.certificate) {
    link.href = view.links.certificate;
    link.download = `certificate-${view.id}.json`;
  }
  if (module) {
    const source = r.line.length
      ? `The ${r.status === "won" ? "winning" : "best"} line of the proof (${startLabel(game, value.start)})`
      : `The start of ${startLabel(game, value.start)}: the proof has no line to play`;
    player.load(module, module.fromPosition(value.position), r.line, source);
  }
}

// -- the certificate -----------------------------------------------------------------
/** Whether a reply is the view of a certificate job still at work (HTTP 202). */
function certificatePending(reply) {
  return reply.kind === "certificate" && (reply.status === "queued" || reply.status === "running");
}

/** Offer `data` as a JSON file named `name`, as the link's own download would. */
function saveJson(data, name) {
  const blob = new Blob([JSON.stringify(data, null, 2)], { type: "application/json" });
  const url = URL.createObjectURL(blob);
  const anchor = document.createElement("a");
  anchor.href = url;
  anchor.download = name;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/**
 * Fetch the proof's certificate and save it. A dead end's DRAT certificate is
 * a worker's job: the API answers 202 with that job's view until it is done
 * (and fails a job no worker starts), so the page asks again until the bundle
 * comes. It stops quietly once another proof is shown or the result hidden.
 */
async function onCertificate(event) {
  event.preventDefault();
  const link = event.currentTarget;
  const href = link.getAttribute("href");
  const name = link.download;
  const token = {}; // a later click takes over: one loop, one download
  certificateClick = token;
  const wanted = () =>
    certificateClick === token &&
    link.getAttribute("href") === href &&
    !$("result-section").hidden;
  clearError();
  try {
    let reply = await poll(href, wanted);
    while (reply !== null && wanted() && certificatePending(reply)) {
      setStatus(`Making the certificate (job ${reply.id.slice(0, 8)}, ${reply.status})…`);
      await sleep(POLL_MS * 4);
      reply = wanted() ? await poll(href, wanted) : null;
    }
    if (reply === null || !wanted()) return;
    saveJson(reply, name);
    setStatus("Certificate saved.");
  } catch (exc) {
    if (!wanted()) return;
    setStatus("No certificate.");
    showError(exc);
  }
}

// -- start ---------------------------------------------------------------------------
async function boot() {
  player = new Player($("player-section"));
  try {
    catalogue = await api("GET", "/v1/games");
  } catch (exc) {
    showError(exc);
    return;
  }
  fillSelect(
    $("game"),
    catalogue.games.map((g) => g.name),
    Object.fromEntries(catalogue.games.map((g) => [g.name, g.title])),
  );
  $("game").value = catalogue.default;
  fillLimits(catalogue.limits);
  $("game").addEventListener("change", onGameChange);
  for (const radio of document.querySelectorAll('input[name="source"]')) {
    radio.addEventListener("change", showSource);
  }
  let timer = null;
  $("deal-text").addEventListener("input", () => {
    $("generated-note").hidden = true;
    clearTimeout(timer);
    timer = setTimeout(updatePreview, 150);
  });
  $("proof-form").addEventListener("submit", onProve);
  $("generate").addEventListener("click", onGenerate);
  $("certificate").addEventListener("click", onCertificate);
  onGameChange();
  showSource();
  document.body.dataset.ready = "true";
}

boot();
