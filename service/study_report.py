"""The study's report: verdict counts with Wilson intervals, best scores, plot.

Reads only the results and runs files (`service.study_plan`); replays every
line in the results with the reference engine instead of trusting the workers'
checks, and says how many it replayed.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from patience_encodings.bench import percentile
from verifier.errors import PatienceError
from verifier.formats import start_from_number
from verifier.registry import get_game
from verifier.replay import replay
from verifier.results import ProofResult, Question, Status

from .study_plan import (
    LOAD_SAMPLE,
    Plan,
    StudyFiles,
    format_duration,
    load_rows,
    load_runs,
)

#: Bar colour of proven scores beyond every grade.
OTHER_COLOUR = "#888888"


# -- the report ----------------------------------------------------------------
def wilson(successes: int, trials: int, z: float = 1.959964) -> tuple[float, float]:
    """Return the Wilson score interval of a binomial proportion.

    Chosen over the normal approximation because it stays inside [0, 1] and
    is honest for proportions near 0, which is where wins live.
    """
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = (z / (1 + z2 / trials)) * math.sqrt(
        p * (1 - p) / trials + z2 / (4 * trials * trials)
    )
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass(frozen=True)
class Recheck:
    """The report's own replay of every line in the results."""

    won: int = 0  # won lines replayed to a win
    scored: int = 0  # lost lines replayed to stuck with their best score
    failures: tuple[str, ...] = ()


def recheck(
    game_name: str,
    rows: list[dict[str, Any]],
    start_of: Callable[[int], Any] | None = None,
) -> Recheck:
    """Replay every line with the reference engine; name each one that fails.

    ``start_of`` maps a row's number to its starting state; by default the
    numbered deal, rebuilt here from the number alone (not taken from the
    workers), so a line is checked against the deal the study is about.
    """
    game = get_game(game_name)
    start_of = start_of or (lambda number: start_from_number(game, number).state)
    won = scored = 0
    failures = []
    for row in rows:
        result = row.get("result")
        if not result or not result.get("line"):
            continue
        try:
            moves = game.parse_moves("\n".join(result["line"]))
        except PatienceError as exc:
            failures.append(f"deal {row['number']}: unreadable line: {exc.message}")
            continue
        outcome = replay(game, start_of(row["number"]), moves)
        claim = result["status"]
        if claim == Status.WON and outcome.ok and outcome.won:
            won += 1
        elif (
            claim != Status.WON
            and result.get("best_score") is not None
            and outcome.ok
            and outcome.stuck
            and outcome.score == result["best_score"]
        ):
            scored += 1
        else:
            failures.append(
                f"deal {row['number']}: claimed {claim} "
                f"(best score {result.get('best_score')}), replay: {outcome.verdict()}"
            )
    return Recheck(won, scored, tuple(failures))


@dataclass(frozen=True)
class Summary:
    """The figures of a study, computed from its results file."""

    plan: Plan
    deals: int
    won: int
    lost: int  # proven lost
    unknown: int  # not settled in time (or a verdict not proven)
    failed: int  # the job failed (error rows)
    missing: int  # no row yet
    scores: dict[int, int]  # proven best score -> deals (wins score 0)
    #: (proven lower bound, best score found) of each deal without a proven
    #: best score, missing deals included; None where nothing is known.
    open_scores: tuple[tuple[int | None, int | None], ...]
    times: tuple[float, ...]
    methods: dict[str, int]
    check: Recheck

    @property
    def open(self) -> int:
        """Return the deals whose verdict is not known (unknown, failed, missing)."""
        return self.unknown + self.failed + self.missing

    def win_interval(self) -> tuple[float, float]:
        """Return the Wilson 95 % interval, open deals as losses / as wins."""
        low, _ = wilson(self.won, self.deals)
        _, high = wilson(self.won + self.open, self.deals)
        return low, high

    def at_most(self, bound: int) -> int:
        """Return the deals whose proven best score is at most ``bound``."""
        return sum(count for score, count in self.scores.items() if score <= bound)

    def found(self) -> dict[int, int]:
        """Return best score found (not proven optimal) -> deals."""
        found = Counter(best for _, best in self.open_scores if best is not None)
        return dict(sorted(found.items()))

    def grade_bounds(self, bound: int) -> tuple[int, int]:
        """Return how many deals surely / possibly have a best score <= ``bound``.

        Surely: a proven score, or a line found that already reaches it (the
        best can only be lower). Possibly: also every open deal whose proven
        lower bound does not exclude it.
        """
        sure = self.at_most(bound)
        maybe = sure
        for lower, best in self.open_scores:
            if best is not None and best <= bound:
                sure += 1
                maybe += 1
            elif lower is None or lower <= bound:
                maybe += 1
        return sure, maybe


def summarise(plan: Plan, rows: dict[int, dict[str, Any]]) -> Summary:
    """Return the figures of the plan's deals from the stored rows."""
    chosen = [rows[n] for n in plan.numbers if n in rows]
    counts: Counter[str] = Counter()
    scores: Counter[int] = Counter()
    methods: Counter[str] = Counter()
    open_scores: list[tuple[int | None, int | None]] = []
    for row in chosen:
        if "result" not in row:
            counts["failed"] += 1
            open_scores.append((None, None))
            continue
        result = ProofResult.from_json(row["result"])
        kind = result.status.value if result.proven else "unknown"
        counts[kind] += 1
        if result.status is Status.WON:
            scores[0] += 1
        elif result.score_proven and result.best_score is not None:
            scores[result.best_score] += 1
        else:
            open_scores.append((result.lower_bound, result.best_score))
        if result.proven:
            methods[f"{result.status.value}: {result.engine}: {_method(result)}"] += 1
    times = tuple(sorted(r["result"]["elapsed"] for r in chosen if "result" in r))
    open_scores += [(None, None)] * (len(plan.numbers) - len(chosen))
    return Summary(
        plan=plan,
        deals=len(plan.numbers),
        won=counts["won"],
        lost=counts["lost"],
        unknown=counts["unknown"],
        failed=counts["failed"],
        missing=len(plan.numbers) - len(chosen),
        scores=dict(sorted(scores.items())),
        open_scores=tuple(open_scores),
        times=times,
        methods=dict(methods.most_common()),
        check=recheck(plan.game, chosen),
    )


def _method(result: ProofResult) -> str:
    """Return the kind of proof, without the per-deal figures in brackets."""
    return result.method.split("(")[0].strip().rstrip(":;,") or "-"


def percent(part: float, whole: float, digits: int = 2) -> str:
    return f"{100 * part / whole:.{digits}f} %" if whole else "-"


def render_report(summary: Summary, runs: dict[str, Any], plot_name: str | None) -> str:
    """Return the study's report in Markdown."""
    plan = summary.plan
    title = get_game(plan.game).title
    lines = [f"# {title}: deals {plan.spec}, {plan.question.value} question", ""]
    lines += _headline(summary) + [""]
    lines += _verdict_section(summary) + [""]
    lines += _score_section(summary, plot_name) + [""]
    lines += _check_section(summary) + [""]
    lines += _time_section(summary, runs) + [""]
    lines += _reproduce_section(runs, plan)
    return "\n".join(lines).rstrip() + "\n"


def _headline(s: Summary) -> list[str]:
    low, high = s.win_interval()
    text = (
        f"**{s.won} of {s.deals} deals can be won "
        f"({percent(s.won, s.deals)}; Wilson 95 % interval "
        f"{100 * low:.2f} %–{100 * high:.2f} %).**"
    )
    if s.plan.question is Question.SCORE and not s.open_scores:
        text += f" Median best score: {_median_score(s)}."
        grades = get_game(s.plan.game).score_grades
        text += "".join(
            f" {percent(s.at_most(bound), s.deals, 1)} {name} (≤ {bound})."
            for name, bound in grades
        )
    elif s.plan.question is Question.SCORE:
        text += (
            f" Best scores proven for {s.deals - len(s.open_scores)} of "
            f"{s.deals} deals."
        )
    if s.open:
        text += (
            f" Not settled: {s.unknown} unknown, {s.failed} failed, "
            f"{s.missing} not yet proven."
        )
    return [text]


def _median_score(s: Summary) -> str:
    values = [score for score, count in s.scores.items() for _ in range(count)]
    return f"{percentile([float(v) for v in values], 0.5):g}" if values else "-"


def _verdict_section(s: Summary) -> list[str]:
    low, high = s.win_interval()
    rows = [
        ("won (line attached and replayed)", s.won),
        ("lost (proven: no winning line exists)", s.lost),
        ("unknown (not settled within the time limit)", s.unknown),
        ("failed (the job failed)", s.failed),
        ("missing (not proven yet)", s.missing),
    ]
    out = ["## Verdicts", "", "| verdict | deals | share |", "|---|---:|---:|"]
    out += [f"| {name} | {n} | {percent(n, s.deals)} |" for name, n in rows if n]
    out += [f"| **all** | **{s.deals}** | |", ""]
    out.append(
        f"Winnability: {s.won}/{s.deals} = {percent(s.won, s.deals, 3)}. Wilson 95 % "
        f"interval: {100 * low:.3f} % – {100 * high:.3f} % (unknown, failed and "
        "missing deals counted as losses for the lower bound and as wins for the "
        "upper bound)."
    )
    return out


def _score_section(s: Summary, plot_name: str | None) -> list[str]:
    unit = get_game(s.plan.game).score_unit
    out = ["## Best scores", ""]
    if s.plan.question is not Question.SCORE:
        out.append(
            "This study asked for verdicts only, so no best score of a lost deal is "
            "proven; run it with `--question score` for the distribution."
        )
        return out
    out.append(
        f"The best score is the fewest {unit} that perfect play reaches "
        "(a win scores 0); every score below is proven optimal: a line reaching it "
        "is attached and no line does better."
    )
    if plot_name:
        out += ["", f"![Distribution of best scores]({plot_name})"]
    out += ["", *_score_table(s)]
    grades = get_game(s.plan.game).score_grades
    if grades:
        best_grade = grades[0][0]
        out += [
            "",
            f"Bicycle's grades (of all deals; a win counts as {best_grade}):",
            "",
        ]
        if s.open_scores:
            out += ["| grade | best score | deals | share | possibly |"]
            out += ["|---|---:|---:|---:|---:|"]
        else:
            out += ["| grade | best score | deals | share |", "|---|---:|---:|---:|"]
        for name, bound in grades:
            sure, maybe = s.grade_bounds(bound)
            row = f"| {name} | ≤ {bound} | {sure} | {percent(sure, s.deals)} |"
            out.append(row + (f" {percent(maybe, s.deals)} |" if s.open_scores else ""))
        if s.open_scores:
            out += [
                "",
                "*deals*: proven to reach the grade (a proven best score, or a line "
                "found that reaches it); *possibly*: also the open deals whose proven "
                "lower bound does not rule it out.",
            ]
    return out


def _score_table(s: Summary) -> list[str]:
    """Return the table of proven best scores, with best-found ones apart."""
    found = s.found()
    head = "| best score | deals (proven) | share | cumulative |"
    rule = "|---:|---:|---:|---:|"
    if found:
        head += " best found, not proven |"
        rule += "---:|"
    out = [head, rule]
    total = 0
    for score in sorted(set(s.scores) | set(found)):
        count = s.scores.get(score, 0)
        total += count
        share, cumulative = percent(count, s.deals), percent(total, s.deals)
        line = f"| {score} | {count} | {share} | {cumulative} |"
        out.append(line + (f" {found.get(score, 0)} |" if found else ""))
    if s.open_scores:
        nothing = len(s.open_scores) - sum(found.values())
        out += [
            "",
            f"{len(s.open_scores)} deals have no proven best score: "
            f"{sum(found.values())} with a line found (its score is an upper bound, "
            f"column *best found*), {nothing} without any (unknown, failed or "
            "missing).",
        ]
    return out


def _check_section(s: Summary) -> list[str]:
    c = s.check
    out = ["## Checking", ""]
    out.append(
        f"The report replayed every line in the results file with the reference "
        f"rules engine (`verifier.replay.replay`): {c.won} winning lines ended won "
        f"(of {s.won} won deals), {c.scored} best-score lines ended stuck with "
        f"exactly their score; {len(c.failures)} failed."
    )
    out += [f"- FAILED {failure}" for failure in c.failures]
    if s.methods:
        out += ["", "How the verdicts were proven:", ""]
        out += ["| verdict: engine: method | deals |", "|---|---:|"]
        out += [f"| {m} | {n} |" for m, n in s.methods.items()]
    return out


def _time_section(s: Summary, runs: dict[str, Any]) -> list[str]:
    out = ["## Time", ""]
    if s.times:
        t = list(s.times)
        out.append(
            f"Time per deal (prover time in the worker, portfolio start and replay "
            f"included): median {percentile(t, 0.5):.3f} s, p90 "
            f"{percentile(t, 0.9):.3f} s, max {t[-1]:.3f} s; "
            f"time limit {s.plan.time_limit:g} s per deal."
        )
    done = [r for r in runs.get("runs", []) if r.get("wall")]
    stored = sum(r.get("stored", 0) for r in done)
    wall = sum(r["wall"] for r in done)
    if wall:
        out.append(
            f"Throughput: {stored} deals stored in {format_duration(wall)} of wall "
            f"time "
            f"over {len(done)} run(s): **{stored / wall:.2f} deals per second**."
        )
    out += [
        "",
        "| run | started (UTC) | mode | worker processes | deals stored | wall "
        "| deals/s | load (1 min): start, mean, end |",
        "|---:|---|---|---:|---:|---:|---:|---|",
    ]
    for r in done:
        rate = r["stored"] / r["wall"] if r["wall"] else 0.0
        out.append(
            f"| {r['run']} | {r['started']} | {r['mode']} | {r['processes']} "
            f"| {r['stored']} | {format_duration(r['wall'])} | {rate:.2f} "
            f"| {r['load_start'][0]}, {r.get('load_mean', '?')}, "
            f"{r.get('load_end', ['?'])[0]} |"
        )
    cores = sorted({str(r.get("cores", "?")) for r in done})
    out.append("")
    out.append(
        f"Load is the 1-minute load average of the machine running the study "
        f"({'/'.join(cores)} cores), sampled every {LOAD_SAMPLE:g} s; where it "
        "exceeds the cores, other work shared them and the timings are on the "
        "slow side."
    )
    return out


def _reproduce_section(runs: dict[str, Any], plan: Plan) -> list[str]:
    all_runs = runs.get("runs", [])
    out = ["## Reproduce", ""]
    out.append(
        f"Raw results: `{plan.stem}.jsonl`, one JSON object per deal (its "
        "`number`, the proof `result` exactly as the worker returned it — status, "
        "proven, engine, best score, line, method, elapsed — and the `job` and "
        f"`run` that stored it); `{plan.stem}.runs.json` records every run "
        "(command, workers, wall time, load, versions)."
    )
    out.append("")
    if not all_runs:
        return out
    last = all_runs[-1]
    out += ["```", last["command"], "```", ""]
    out.append(
        "The same command resumes an interrupted study; with `REDIS_URL` set it "
        "uses the workers running against that Redis (`patience worker`), without "
        "it an embedded Redis and a local worker with `--workers` processes."
    )
    out += ["", f"Date: {last.get('ended') or last['started']}.", ""]
    out += ["Software:", ""]
    out += [f"- {name}: {value}" for name, value in last["version"].items()]
    if len(all_runs) > 1:
        out += ["", "Commands of every run:", ""]
        out += [f"- run {r['run']}: `{r['command']}`" for r in all_runs]
    return out


def write_plot(summary: Summary, path: Path) -> bool:
    """Draw the distribution of best scores as a PNG; False if there is none.

    Proven scores are coloured by Bicycle's grade; best scores found but not
    proven optimal are stacked on top, hatched grey, so the two are never
    mistaken for each other.
    """
    found = summary.found()
    if not summary.scores and not found:
        return False
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    game = get_game(summary.plan.game)
    grades = game.score_grades
    colours = ("#1b7837", "#5aae61", "#a6dba0")
    xs = list(range(0, max([*summary.scores, *found]) + 1))
    proven = [summary.scores.get(x, 0) for x in xs]
    fig, ax = plt.subplots(figsize=(9, 4.2), dpi=110)
    ax.bar(xs, proven, color=[_colour(x, grades, colours) for x in xs])
    handles = [Patch(color=c) for c in colours[: len(grades)]]
    names = [f"proven, {g} (≤ {b})" for g, b in grades]
    handles.append(Patch(color=OTHER_COLOUR))
    names.append("proven" if not grades else "proven, other")
    if found:
        tops = [x for x in xs if found.get(x)]
        style = {"facecolor": "#dddddd", "hatch": "//", "edgecolor": "#999999"}
        upper = [found[x] for x in tops]
        ax.bar(tops, upper, bottom=[summary.scores.get(x, 0) for x in tops], **style)
        handles.append(Patch(**style))
        names.append("best found, not proven optimal")
    title = game.title
    ax.set_title(
        f"{title}: best scores of deals {summary.plan.spec} "
        f"({sum(proven)} proven of {summary.deals})"
    )
    unit = game.score_unit
    ax.set_xlabel(f"best score ({unit}; 0 = won)")
    ax.set_ylabel("deals")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(handles, names, frameon=False)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def _colour(
    score: int, grades: tuple[tuple[str, int], ...], colours: tuple[str, ...]
) -> str:
    for (_, bound), colour in zip(grades, colours, strict=False):
        if score <= bound:
            return colour
    return OTHER_COLOUR


def write_report(plan: Plan, files: StudyFiles) -> Summary:
    """Summarise the results file and write the Markdown report and plot."""
    summary = summarise(plan, load_rows(files.results))
    runs = load_runs(files, plan)
    plotted = plan.question is Question.SCORE and write_plot(summary, files.plot)
    text = render_report(summary, runs, files.plot.name if plotted else None)
    files.report.parent.mkdir(parents=True, exist_ok=True)
    files.report.write_text(text, encoding="utf-8")
    return summary
