"""Edge-case files over HTTP: ``POST /v1/batches`` with ``cases`` runs each claim."""

from __future__ import annotations

CASES = """
game: devils-grip
cases:
  - id: eight-on-lone-five
    position: |
      A1: 5S
      B1: 8S
      stock: 2S JS 3C 6C 9C QC
    legal: B1>A1
  - id: wrong-reason
    position: |
      A1: 2S 5S
      talon: 8S JS
    illegal: T>A1
    reason: "empty cell"
  - id: stuck-score
    position: |
      A1: 2S 5S
      A2: 5H 8H JH
      talon: JS 8S 2H
    best_score: 3
"""


def test_case_file_batch_reports_each_claim_with_evidence(api, wait_job):
    reply = api.post("/v1/batches", json={"cases": CASES, "time_limit": 30})
    assert reply.status_code == 202, reply.get_json()
    view = wait_job(api, reply.headers["Location"], timeout=90)
    assert view["status"] == "done", view["error"]
    result = view["result"]
    assert result["counts"] == {"passed": 2, "failed_claims": 1}
    by_id = {item["case"]["id"]: item["case"] for item in result["items"]}
    assert by_id["eight-on-lone-five"]["passed"]
    wrong = by_id["wrong-reason"]
    assert not wrong["passed"]
    assert wrong["evidence"]["reason"] == "J♠ does not fit on 5♠"
    score = by_id["stuck-score"]["evidence"]
    assert by_id["stuck-score"]["passed"] and score["score_proven"]


def test_malformed_case_is_refused_naming_it(api):
    body = {"cases": "- {id: x, dead: true}"}
    reply = api.post("/v1/batches", json=body)
    assert reply.status_code == 400
    message = reply.get_json()["error"]["message"]
    assert message.startswith("items[0]: ") and "needs a 'position'" in message
