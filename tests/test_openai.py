"""harmony_plugins._openai: chat deltas and the message from steps, arguments joined once."""

from __future__ import annotations

from harmony_plugins import (
    ChatResult,
    ToolCallArguments,
    ToolCallBegin,
)
from harmony_plugins._openai import chat_delta
from harmony_plugins._steps import step_of


class _CountingStr(str):
    """A str whose use as the right operand of ``+`` is counted (``"" + piece``)."""

    adds = 0

    def __radd__(self, other):
        _CountingStr.adds += 1
        return str.__add__(other, self)


def test_chat_delta_joins_argument_pieces_once():
    events = [ToolCallBegin(0, "call_0", "f")]
    events += [ToolCallArguments(0, _CountingStr("x")) for _ in range(1000)]
    _CountingStr.adds = 0
    delta = chat_delta(step_of(events)[0])
    assert delta["tool_calls"][0]["function"]["arguments"] == "x" * 1000
    assert _CountingStr.adds == 0, "arguments grown by repeated concatenation"
    result = ChatResult()
    _CountingStr.adds = 0
    result.add(events)
    assert result.message()["tool_calls"][0]["function"]["arguments"] == "x" * 1000
    assert _CountingStr.adds == 0
