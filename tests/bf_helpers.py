"""Small Besieged Fortress positions shared by the prover tests.

Positions are written in the compact text form with ``|`` for line breaks.
"""

from __future__ import annotations

from verifier import besieged_fortress as bf

#: Lost positions found by random generation; every one is dead by brute force.
LOST = [
    # stuck at once: no legal move
    "1: 10H 8C JH | 2: 10C 9C | 3: JC | 4: JS | 5: QS 8H KC | 6: KH QC KS |"
    "7: 10S KD | 8: QH QD 9H | F: 9S 7H JD 7C",
    # a few moves, then nothing more
    "1: 10D JS 7D | 2: KS 9C | 3: QD JH KC | 4: QC 8D JC | 5: QH 10S KH |"
    "6: 10C JD | 7: QS 9D | 8: KD 6D | F: 9S 10H 5D 8C",
    "1: KS | 2: 8C 7C KD | 3: JS | 4: 8S KC | 5: 10H 9C | 6: QD QS QC JC KH |"
    "7: QH JH | 8: 10C 10S 9S 9H | F: 7S 8H JD 6C",
]

#: Won positions: a few moves lead to a sorted position.
WON = [
    "1: KS QH | 2: JH QS | 3: KH | F: JS 10H KD KC",
    "1: QS KH | 2: QH KS | 3: JH JS | F: 10S 10H KD KC",
    "1: 9C QH 10C | 2: KC JC | 3: KH JH | 4: QC | F: KS 10H KD 8C",
]


def pos(text: str) -> bf.State:
    """Return the position of a one-line text (``|`` separates the lines)."""
    return bf.parse_position_text(text.replace("|", "\n"))
