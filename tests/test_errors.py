"""The error hierarchy: messages quote the input they refuse, but briefly."""

from __future__ import annotations

import pytest

from verifier import devils_grip as dg
from verifier.errors import MAX_MESSAGE, CardError, shorten


def test_a_megabyte_token_comes_back_as_a_short_message():
    with pytest.raises(CardError) as caught:
        dg.parse_deal("x" * 1_000_000)
    message = caught.value.message
    assert len(message) <= MAX_MESSAGE
    assert message.startswith("unknown card token 'xxx")  # the head names it
    assert message.endswith("(expected e.g. 5S, 10H, TH, Q♦)")  # the tail helps
    assert "characters left out" in message
    assert str(caught.value) == message


def test_short_messages_are_left_alone():
    assert shorten("a" * MAX_MESSAGE) == "a" * MAX_MESSAGE
    assert shorten("step 3: 5♣ does not fit on 8♠") == "step 3: 5♣ does not fit on 8♠"
    assert len(shorten("b" * (MAX_MESSAGE + 1))) <= MAX_MESSAGE
