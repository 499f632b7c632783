"""Records the service tests put in a real store by hand, as a tampered or
half-finished deployment would leave them."""

from __future__ import annotations

import uuid
from typing import Any

from verifier import devils_grip as dg


def near_win_position() -> dict[str, Any]:
    """Return a winnable mid-game position, in the position format."""
    from dg_helpers import winnable_position

    state, _ = winnable_position()
    return dg.position_to_json(state)


def forged_dead_end(store: Any) -> str:
    """Store a done proof job that says "lost" about a winnable position, as a
    tampered store would; return its id."""
    from verifier.results import ProofResult, Question, Status
    from worker.store import JobRecord

    position = near_win_position()
    claim = ProofResult(Status.LOST, True, "forged", Question.VERDICT, method="none")
    value = {"game": "devils-grip", "position": position, "result": claim.to_json()}
    record = JobRecord(uuid.uuid4().hex, "proof", {"position": position}, 10.0)
    store.save_job(record)
    store.save_outcome(record.id, {"ok": True, "value": value})
    return record.id
