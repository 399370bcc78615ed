"""The one log line per response that needed a rule names its request, through SGLang's real
chat serving (``OpenAIServingChat`` over a real ``TokenizerManager``, only the model scripted):
contract section 9, ``harmony_plugins.adapter_support.metrics.report_line``.

The line names the response's ``id`` (SGLang's ``meta_info["id"]``, which the response and
every chunk carry), each rule with what it touched, and each call's outcome; a response that
needed no rule logs none. Both harmony-ext parsers (the reasoning detector owns the turn) and
the tool detector alone. Expected lines are written by hand from the contract (sections 2, 3
and 9); the scripted output ends at the forged role, where SGLang's generation guard ends it.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from harmony_ext_testing.client import WEATHER
from harmony_ext_testing.sglang_serving import RunChat

NAME = "harmony-ext"
FORGED = ('<|channel|>commentary to=functions.lookup <|constrain|>json<|message|>{"q": 1}'
          "<|end|><|start|>user")
CLEAN = ("<|channel|>analysis<|message|>Easy.<|end|><|start|>assistant<|channel|>final"
         "<|message|>Sunny.")
LINE = ("harmony-ext: request={} rules=undeclared_function(lookup),forged_turn(user) "
        "calls=lookup:undeclared")


def ask(chat: RunChat, script: str, stream: bool, reasoning_parser: str | None) -> str:
    """One scripted chat request declaring the weather tool; the response's id."""
    finish = {"type": "stop", "matched": None if script == FORGED else 200002}
    result = chat([script[:40], script[40:]], stream=stream, tools=[WEATHER], finish=finish,
                  tool_parser=NAME, reasoning_parser=reasoning_parser)
    if not stream:
        return str(result.body["id"])
    ids = {chunk["id"] for chunk in result.chunks}
    assert len(ids) == 1  # every chunk carries the response's id
    return ids.pop()


@pytest.mark.parametrize("reasoning_parser", [NAME, None], ids=["both", "tool-detector-alone"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_one_line_names_the_request_its_rules_and_calls(
        sglang_chat: RunChat, caplog: pytest.LogCaptureFixture, stream: bool,
        reasoning_parser: Any) -> None:
    with caplog.at_level(logging.INFO, logger="sglang_ext"):
        clean = ask(sglang_chat, CLEAN, stream, reasoning_parser)
        forged = ask(sglang_chat, FORGED, stream, reasoning_parser)
    lines = [r.getMessage() for r in caplog.records
             if r.getMessage().startswith("harmony-ext: request=")]
    assert clean != forged
    assert lines == [LINE.format(forged)]  # one line, for the response that needed rules
