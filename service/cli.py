"""The ``patience`` command line.

The CLI is a front door like the HTTP API, so it lives in ``service/`` and may
use every layer below. Heavy imports (Flask, Celery, solvers) happen inside the
subcommands that need them, so ``patience deal`` starts fast.

Exit codes: 0 success; 1 a negative answer the user asked about (an illegal
step in ``play``); 2 bad input or usage, with one message and no traceback;
3 a prover's line that the reference engine refused (a bug in a prover,
named in one message: no unchecked answer is ever printed).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import secrets
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from service import cli_serve
from verifier.errors import InputError, PatienceError
from verifier.formats import Start, parse_numbers, read_start, start_from_number
from verifier.registry import DEFAULT_GAME, GAMES, get_game
from verifier.replay import replay
from verifier.results import ResultCheckError

EXIT_OK, EXIT_NO, EXIT_BAD_INPUT, EXIT_CHECK_FAILED = 0, 1, 2, 3
#: Most deals one ``generate`` prints: the API's bound (``worker.jobs.MAX_DEALS``,
#: not imported, since it loads the whole worker), so both doors agree; each
#: deal takes about half a second to build and prove.
MAX_GENERATE = 1000


def read_text(path: str) -> str:
    """Read a file (``-`` is standard input) as UTF-8 text.

    Missing or unreadable files and bytes that are not UTF-8 are input
    errors. Standard input is read as bytes and decoded here, strictly: its
    text stream would turn bad bytes into surrogates that surface later as
    baffling card tokens. A leading byte order mark (editors on Windows
    write one) is dropped, so the first token reads as it looks.
    """
    if path == "-":
        return decode_text(read_stdin_bytes(), "standard input")
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise InputError(f"no such file: {path}") from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    return decode_text(data, path)


def read_stdin_bytes() -> bytes | str:
    """Return standard input's bytes (its text when it has no byte stream,
    e.g. replaced by a test)."""
    buffer = getattr(sys.stdin, "buffer", None)
    return buffer.read() if buffer is not None else sys.stdin.read()


def decode_text(data: bytes | str, where: str) -> str:
    """Return ``data`` as text: strict UTF-8, universal newlines, no leading BOM."""
    if isinstance(data, str):
        return data.removeprefix("\ufeff")
    try:
        return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig").read()
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where} is not UTF-8 text (byte {data[exc.start]:#04x} at offset "
            f"{exc.start})"
        ) from None


def load_start(args: argparse.Namespace) -> Start:
    """Return the start named by ``--number N`` or by the FILE argument.

    Both at once is refused: one of them would be silently ignored.
    """
    number, path = getattr(args, "number", None), getattr(args, "file", None)
    if number is not None and path:
        raise InputError(
            f"give one start (a FILE or --number N), not both: {path!r} "
            f"and --number {number}"
        )
    if number is not None:
        return start_from_number(get_game(args.game), number)
    if not path:
        raise InputError("give a deal or position FILE, or --number N")
    return read_start(read_text(path), args.game)


# -- subcommands ----------------------------------------------------------------
def cmd_deal(args: argparse.Namespace) -> int:
    """Print a numbered deal, or a fresh random one."""
    game = get_game(args.game)
    number = args.number if args.number is not None else secrets.randbits(63)
    deal = game.numbered_deal(number)
    if args.json:
        print(
            json.dumps(
                {"game": game.name, "number": number, "deal": [str(c) for c in deal]}
            )
        )
    else:
        print(f"# {game.title} deal number {number}")
        print(game.format_deal(deal), end="")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    """Draw a deal or position."""
    start = load_start(args)
    print(f"{start.game.title}: {start.describe()}")
    print(start.game.render(start.state))
    return EXIT_OK


def cmd_play(args: argparse.Namespace) -> int:
    """Replay a line; exit 1 at the first illegal step."""
    start = read_start(read_text(args.file), args.game)
    game = start.game
    moves = game.parse_moves(read_text(args.moves))
    result = replay(game, start.state, moves)
    print(game.render(result.final))
    if args.json:
        print(
            json.dumps(
                {
                    "ok": result.ok,
                    "steps": result.steps,
                    "won": result.won,
                    "stuck": result.stuck,
                    "score": result.score,
                    "error": str(result.error) if result.error else None,
                    "final": game.position_to_json(result.final),
                }
            )
        )
    print(result.verdict())
    return EXIT_OK if result.ok else EXIT_NO


def cmd_solve(args: argparse.Namespace) -> int:
    """Prove a deal or position: verdict, or best score with ``--score``."""
    from patience_encodings import engines
    from verifier.results import Question

    start = load_start(args)
    question = Question.SCORE if args.score else Question.VERDICT
    result = engines.solve(
        start, question=question, engine=args.engine, time_limit=args.time_limit
    )
    if args.json:
        print(json.dumps(result.to_json()))
    else:
        print(format_result(start, result))
    return EXIT_OK


def format_result(start: Start, result) -> str:
    """Return a proof result as a few human-readable lines."""
    status = result.status.value.upper()
    proof = "proven" if result.proven else "not proven"
    lines = [f"{start.describe()}: {status} ({proof}; engine {result.engine})"]
    if result.method:
        lines.append(f"how: {result.method}")
    if result.best_score is not None and result.status.value != "won":
        bound = "proven optimal" if result.score_proven else "best found, not proven"
        lines.append(f"best score: {result.best_score} ({bound})")
    lines.append(f"time: {result.elapsed:.3f} s")
    if result.line:
        lines.append("line: " + " ".join(result.line))
    return "\n".join(lines)


def cmd_verify_cases(args: argparse.Namespace) -> int:
    """Check edge-case files; exit 1 when any case fails."""
    from patience_encodings.cases import load_cases, run_cases

    cases = [
        case for path in args.files for case in load_cases(read_text(path), source=path)
    ]
    if args.engine is not None:
        check_case_engine(args.engine, {case.start.game.name for case in cases})
    failed = 0
    bar = Progress(len(cases), enabled=not args.json and sys.stderr.isatty())
    for result in run_cases(cases, engine=args.engine):
        failed += not result.passed
        bar.advance()
        if args.json:
            print(json.dumps(result.to_json()), flush=True)
        else:
            bar.clear()
            print(format_case(result), flush=True)
    bar.clear()
    if not args.json:
        print(f"{len(cases) - failed} passed, {failed} failed")
    return EXIT_NO if failed else EXIT_OK


def check_case_engine(engine: str, games: set[str]) -> None:
    """Refuse ``--engine`` before any case runs, as a case's own engine is
    refused when its file loads: a bad name must not wait behind the cases
    that need no prover (or hide when there are no cases)."""
    from patience_encodings import engines

    for game in sorted(games or {get_game(None).name}):
        engines.check_engine(game, engine)


def format_case(result) -> str:
    """Return one case result as a line plus its evidence."""
    mark = "PASS" if result.passed else "FAIL"
    text = f"{mark} {result.id}: {result.claim}"
    evidence = result.evidence
    detail = evidence.get("reason") or evidence.get("method") or ""
    if "status" in evidence:
        score = evidence.get("best_score")
        detail = f"{evidence['status']}, best score {score}; {detail}"
    if not result.passed and evidence.get("line"):
        detail += "; line: " + " ".join(evidence["line"])
    return f"{text} -- {detail}" if detail else text


class Progress:
    """A one-line progress bar on standard error (only on a terminal)."""

    def __init__(self, total: int, *, enabled: bool) -> None:
        self.total, self.done, self.enabled = total, 0, enabled

    def advance(self) -> None:
        """Count one more item and redraw."""
        self.done += 1
        if self.enabled:
            filled = 30 * self.done // max(1, self.total)
            bar = "#" * filled + "." * (30 - filled)
            print(f"\r[{bar}] {self.done}/{self.total}", end="", file=sys.stderr)

    def clear(self) -> None:
        """Erase the bar so that a normal line can be printed."""
        if self.enabled:
            print("\r" + " " * 50 + "\r", end="", file=sys.stderr)


def cmd_bench(args: argparse.Namespace) -> int:
    """Benchmark provers on numbered deals; print the figures."""
    from patience_encodings import bench

    if args.count < 1 or args.start < 0:
        raise InputError("--count must be at least 1 and --start at least 0")
    args.numbers = numbers_option(args.numbers)
    return bench.main(args, sys.stdout)


def numbers_option(text: str | None) -> tuple[int, ...] | None:
    """Return the deals of ``--numbers`` (None when it is not given).

    An empty value is refused (as ``study`` refuses it), not read as "not
    given": ``--numbers "$LIST"`` with an empty list must not run 100 deals.
    """
    if text is None:
        return None
    try:
        return parse_numbers(text)
    except InputError as exc:
        raise InputError(f"--numbers: {exc.message}") from None


def cmd_certify(args: argparse.Namespace) -> int:
    """Prove a dead end and write a checkable certificate bundle."""
    from patience_encodings import certificates, engines
    from verifier.results import Question, Status

    start = load_start(args)
    question = Question.SCORE if args.score else Question.VERDICT
    certificates.check_certifiable(start.game.name)
    out = Path(args.output or _default_certificate_name(args))
    certificates.check_writable(out)
    result = engines.solve(start, question=question, time_limit=args.time_limit)
    if result.status is Status.WON:
        print("the deal is won: its winning line is the proof", file=sys.stderr)
        print("line: " + " ".join(result.line))
        return EXIT_NO
    if not engines.settles(result, question):
        print(
            f"not proven within {args.time_limit:g} s: no certificate", file=sys.stderr
        )
        return EXIT_NO
    began = time.monotonic()
    bundle = certificates.certify_result(start, result)
    certificates.write(bundle, out)
    cnf, proof = bundle["cnf"], bundle["proof"]
    print(f"{start.describe()}: {bundle['claim']['text']}")
    print(
        f"wrote {out}: CNF {cnf['variables']} variables, {cnf['clauses']} clauses; "
        f"DRAT proof {proof['steps']} steps; {time.monotonic() - began:.2f} s"
    )
    return EXIT_OK


def _default_certificate_name(args: argparse.Namespace) -> str:
    stem = f"deal-{args.number}" if args.number is not None else Path(args.file).stem
    return f"{stem}{'-score' if args.score else ''}.cert.json"


def cmd_check_cert(args: argparse.Namespace) -> int:
    """Check a certificate bundle with an independent DRAT checker."""
    from patience_encodings import certificates

    report = certificates.check(
        certificates.read(Path(args.bundle)), checker=args.checker
    )
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        for step in report.steps:
            print(f"ok: {step}")
        verdict = "VALID" if report.ok else "REJECTED"
        print(f"{verdict}: {report.reason} ({report.seconds:.2f} s)")
    return EXIT_OK if report.ok else EXIT_NO


def cmd_generate(args: argparse.Namespace) -> int:
    """Print graded, proven, guaranteed-winnable deals (same seed, same deals)."""
    from patience_encodings import generate

    if not 1 <= args.count <= MAX_GENERATE:
        raise InputError(
            f"--count must be between 1 and {MAX_GENERATE}, not {args.count}"
        )
    seed = args.seed if args.seed is not None else secrets.randbits(63)
    made = generate.generate(args.count, seed, args.difficulty, engine=args.engine)
    for deal in made:
        text = json.dumps(deal.to_json()) if args.json else generate.describe(deal)
        print(text, flush=True)
    return EXIT_OK


def cmd_study(args: argparse.Namespace) -> int:
    """Prove numbered deals on the workers (resumable) and write the report."""
    from service import study

    return study.main(args)


# -- parser ----------------------------------------------------------------
def _add_game(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--game",
        default=None,
        choices=sorted(GAMES),
        help=f"game (default {DEFAULT_GAME}; a position file may name its own)",
    )


def _add_start(p: argparse.ArgumentParser) -> None:
    _add_game(p)
    p.add_argument("file", nargs="?", help="deal or position file ('-' for stdin)")
    p.add_argument("--number", type=int, help="use numbered deal N instead of a file")


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="patience", description="Prove patience deals won or dead, exactly."
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("deal", help="print a numbered or random deal")
    _add_game(p)
    p.add_argument("--number", type=int, help="deal number N (default: random)")
    p.add_argument("--json", action="store_true", help="print the JSON form")
    p.set_defaults(func=cmd_deal)

    p = sub.add_parser("show", help="draw a deal or position")
    _add_start(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("play", help="replay a line of moves and judge it")
    _add_game(p)
    p.add_argument("file", help="deal or position file")
    p.add_argument("moves", help="moves file")
    p.add_argument("--json", action="store_true", help="also print a JSON summary")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser("solve", help="prove a deal or position won or lost")
    _add_start(p)
    p.add_argument("--score", action="store_true", help="also prove the best score")
    p.add_argument(
        "--engine", default="auto", help="auto (portfolio), search, sat, ..."
    )
    p.add_argument(
        "--time-limit", type=float, default=10.0, help="seconds (default 10)"
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser("certify", help="write a checkable certificate of a dead end")
    _add_start(p)
    p.add_argument("--score", action="store_true", help="certify the best score")
    p.add_argument("-o", "--output", help="bundle file (.json or .json.gz)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds to prove")
    p.set_defaults(func=cmd_certify)

    p = sub.add_parser("check-cert", help="check a certificate bundle")
    p.add_argument("bundle", help="certificate bundle file")
    p.add_argument("--checker", default="dratify", choices=["dratify", "drup"])
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_check_cert)

    p = sub.add_parser("generate", help="generate graded, winnable, proven deals")
    p.add_argument(
        "--count",
        type=int,
        default=1,
        help=f"number of deals (1 to {MAX_GENERATE}, as the API)",
    )
    p.add_argument("--seed", type=int, help="same seed, same deals (default random)")
    p.add_argument(
        "--difficulty", default="any", help="any, easy, medium, hard or expert"
    )
    p.add_argument("--engine", default=None, help="prover (default: sat)")
    p.add_argument("--json", action="store_true", help="one JSON line per deal")
    p.set_defaults(func=cmd_generate)

    p = sub.add_parser("bench", help="benchmark provers on numbered deals")
    _add_game(p)
    p.add_argument("--engine", default="auto", help="engines, comma-separated")
    p.add_argument("--start", type=int, default=1, help="first deal number")
    p.add_argument("--count", type=int, default=100, help="number of deals")
    p.add_argument("--numbers", help="deals 1,4,10-20 instead of --start/--count")
    p.add_argument("--time-limit", type=float, default=10.0, help="seconds per deal")
    p.add_argument("--score", action="store_true", help="prove best scores too")
    p.add_argument("--out", help="write every result as JSON lines to this file")
    p.add_argument(
        "--known",
        help="a known-scores file (seeds/vectors/devils-grip-best-scores.jsonl): "
        "how far lines and bounds are from it",
    )
    p.add_argument(
        "--no-calibration",
        dest="calibrate",
        action="store_false",
        help="skip the machine's reference solver call (a few seconds)",
    )
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("verify-cases", help="check rule edge-case files")
    p.add_argument("files", nargs="+", help="case files (YAML or JSON Lines)")
    p.add_argument("--engine", default=None, help="prover for verdict claims")
    p.add_argument("--json", action="store_true", help="one JSON line per case")
    p.set_defaults(func=cmd_verify_cases)

    p = sub.add_parser("study", help="prove many numbered deals on the workers")
    _add_game(p)
    p.add_argument("--numbers", required=True, help="e.g. 1-10000 or 1-20,50")
    p.add_argument("--question", choices=["verdict", "score"], default="verdict")
    p.add_argument("--engine", default="auto", help="prover (default auto)")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per deal")
    p.add_argument("--chunk", type=int, default=10, help="deals per batch job")
    p.add_argument(
        "--workers",
        type=int,
        default=os.cpu_count() or 1,
        help="local worker processes (without REDIS_URL; default: cores)",
    )
    p.add_argument("--out", default="docs/study", help="results and report folder")
    p.add_argument("--report-only", action="store_true", help="only write the report")
    p.set_defaults(func=cmd_study)

    cli_serve.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; bad input prints one line and exits 2."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except PatienceError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ResultCheckError as exc:
        print(
            f"internal error: the reference engine refused a line: {exc}",
            file=sys.stderr,
        )
        return EXIT_CHECK_FAILED
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `patience solve ... | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
