"""harmony_plugins._forged: a forged turn seen in token ids, so that the engine stops it
(contract section 10). Expected answers written by hand from the contract's section 2 (which
roles forge a turn); token ids from tiktoken's o200k_harmony."""

from __future__ import annotations

import pytest

from harmony_plugins import turn_forged, turn_stop
from harmony_plugins._forged import WINDOW
from harmony_plugins.vocab.o200k import tiktoken_encoding

ENCODING = tiktoken_encoding()


def ids(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


@pytest.mark.parametrize("text, forged", [
    ("<|start|>user", True),
    ("<|start|>system<|message|>", True),
    ("<|start|>developer", True),
    ("<|start|>functions", True),  # decided before the tool's name is whole
    ("<|start|>functions.get_weather to=assistant", True),
    ("Hi.<|end|><|start|>tool", True),
    ("<|start|>browser.search", True),
    ("<|start|>assistantx<|message|>", True),  # a whole word that is no assistant
    ("<|start|> user", True),
    ("<|start|>assistant", False),
    ("<|start|>Assistant<|channel|>", False),
    ("<|start|>ass", False),  # may still be assistant
    ("<|start|>final", False),  # a channel in the role slot (gpt-oss writes it)
    ("<|start|>analysis<|message|>", False),
    ("<|start|>to=functions.f", False),  # a recipient in the role section
    ("<|start|><|channel|>final", False),  # a header that begins with its channel
    ("<|start|>", False),
    ("<|start|><|start|>assistant", False),  # a repeated start counts once
    ("The answer.", False),
    ("<|channel|>final<|message|>Write <|end|> to end.", False),
])
def test_a_turn_is_forged_where_the_role_cannot_be_the_assistant(text, forged):
    assert turn_forged(ids(text)) is forged


def test_markup_written_as_ordinary_tokens_never_forges():
    text = "<|start|>user<|message|>hi<|end|>"
    assert turn_forged(ids(text))
    assert not turn_forged(ENCODING.encode(text, disallowed_special=()))


def test_only_the_last_ids_are_looked_at():
    forged = ids("<|start|>user")
    assert turn_forged(forged + ids(" x" * (WINDOW - len(forged))))
    assert not turn_forged(forged + ids(" x" * WINDOW))  # long past: it ended the turn then


@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("yes", True), ("0", False),
                                       ("off", False), (" False ", False), ("NO", False)])
def test_the_turn_stop_is_on_unless_switched_off(value, on):
    assert turn_stop({} if value is None else {"HARMONY_EXT_TURN_STOP": value}) is on
