"""The per-game capabilities beside the provers: certificate encodings, deal
generators.

`patience_encodings.engines` is the one registry of provers (``PROVERS``
and the ``auto`` portfolios); everything else a game may have at the prover
level is listed here, one line per game that has it. A new game is then its
module plus its line in `verifier.registry`, and one line in a table of
`engines` or of this module for each capability it has. A game missing from
a table lacks that capability, and the doors (CLI, jobs, ``GET /v1/games``)
say so instead of failing later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from verifier import devils_grip
from verifier.results import Question

from . import devils_grip_sat_cnf, generate


class Formula(Protocol):
    """The clauses of a claim: what `certificates.formula` writes as DIMACS."""

    def to_dimacs(self) -> str: ...


class BuildCnf(Protocol):
    """Build the CNF of ``question`` about ``state`` (and the encoding it used).

    For the score question, satisfiable iff some line leaves at most
    ``bound``; ``dominance=False`` drops the normal-form restrictions, so the
    formula speaks of every line.
    """

    def __call__(
        self,
        state: Any,
        question: Question = ...,
        bound: int | None = ...,
        *,
        dominance: bool | None = ...,
    ) -> tuple[Formula, Any]: ...


@dataclass(frozen=True)
class CertificateEncoding:
    """A game's SAT encoding as certificate bundles name and re-derive it."""

    #: The ``encoding.name`` a bundle carries.
    name: str
    #: The version of the clauses (not of the software): bundles made by
    #: another version are refused with both versions named.
    version: str
    build_cnf: BuildCnf


class Generated(Protocol):
    """A generated deal: its JSON has ``deal`` (tokens) and ``line``."""

    def to_json(self) -> dict[str, Any]: ...


#: (seed, difficulty) -> a winnable deal, proven, with its winning line.
DealGenerator = Callable[[int, str], Generated]

#: game name -> the encoding its dead-end certificates use.
CERTIFICATE_ENCODINGS: dict[str, CertificateEncoding] = {
    devils_grip.GAME.name: CertificateEncoding(
        "devils-grip-sat",
        devils_grip_sat_cnf.ENCODING_VERSION,
        devils_grip_sat_cnf.build_cnf,
    ),
}

#: game name -> its generator of guaranteed-winnable deals.
DEAL_GENERATORS: dict[str, DealGenerator] = {
    devils_grip.GAME.name: generate.generate_one,
}
