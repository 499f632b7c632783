"""One exception hierarchy for bad input and misuse.

Solver outcomes are never exceptions: they are statuses on result objects
(`verifier.results`). Exceptions here mean "the input is wrong" and carry a
short machine-readable `code` that the API maps to ``{"error": {"code",
"message"}}`` with a 4xx status, and the CLI to exit code 2.
"""

from __future__ import annotations

#: Longest message an error carries. Messages quote the input they refuse
#: (``unknown card token '...'``), and a megabyte of input must not come back
#: as a megabyte of error.
MAX_MESSAGE = 600


def shorten(message: str, limit: int = MAX_MESSAGE) -> str:
    """Return ``message``, its middle cut out if it is longer than ``limit``.

    The head names the problem and the tail usually says what was expected
    (``... (expected e.g. 5S, 10H, TH, Q♦)``), so both are kept.
    """
    if len(message) <= limit:
        return message
    cut = len(message) - (limit - 60)
    head = (limit - 60) * 2 // 3
    marker = f" [... {cut} characters left out ...] "
    return message[:head] + marker + message[head + cut :]


class PatienceError(Exception):
    """Base of every error this project raises on purpose."""

    code = "error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        message = shorten(message)
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class InputError(PatienceError):
    """The user's input is malformed: a deal, position, move or request."""

    code = "bad_input"


class CardError(InputError):
    """A token is not a card of the game's deck."""

    code = "bad_card"


class DealError(InputError):
    """A deal has the wrong cards or the wrong number of them."""

    code = "bad_deal"


class PositionError(InputError):
    """A position is inconsistent (card counts, chains, empty cells)."""

    code = "bad_position"


class MoveSyntaxError(InputError):
    """A move's text does not parse."""

    code = "bad_move"


class IllegalMoveError(InputError):
    """A well-formed move is not legal in the position it is applied to."""

    code = "illegal_move"


class UnknownGameError(InputError):
    """The game name is not in the registry."""

    code = "unknown_game"


class UnsupportedError(InputError):
    """The request is well formed, but this engine or game cannot answer it."""

    code = "unsupported"


def from_code(code: str, message: str) -> InputError:
    """Rebuild an error sent from a prover process (as its code and message).

    Child processes send JSON-ready data, not exceptions; the parent raises
    the same class again, so the API maps it to the same status.
    """
    for kind in InputError.__subclasses__():
        if kind.code == code:
            return kind(message)
    return InputError(message, code=code)
