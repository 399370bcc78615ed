"""The two switches that surface calls to functions the request did not declare, on SGLang's
real serving (README's switches table; contract section 3).

``HARMONY_EXT_PASS_UNDECLARED`` is harmony-ext's, in harmony-ext's spellings (``1``, ``true``,
``yes``, ``on``, any case); ``SGLANG_FORWARD_UNKNOWN_TOOLS`` is SGLang's own, which harmony-ext
honours as SGLang reads it (``sglang.srt.environ``'s boolean: ``true``, ``1``, ``yes``, ``y``
in any case; ``on`` is no value to SGLang, which warns and keeps its default, off). Both are
read per request, from the environment of the process that parses (here the test's own, set
with ``monkeypatch``).

Each output goes through SGLang's ``OpenAIServingChat`` and ``TokenizerManager`` with only the
model scripted (:func:`harmony_ext_testing.sglang_cases.served`), whole and streamed one token
per delta, and through ``OpenAIServingResponses`` (token ids,
:mod:`tests.sglang.responses_serving`).
The output calls ``functions.lookup`` after some reasoning while the request declares only the
weather function: by default the call is dropped (and counted); with a switch on it is surfaced
as written. Against SGLang's own ``gpt-oss`` parsers, which read ``SGLANG_FORWARD_UNKNOWN_TOOLS``
themselves, each value of SGLang's switch surfaces the call on both or on neither. Expected
results are written by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.sglang_cases import NAME, Case, pieces_for, served
from harmony_ext_testing.sglang_serving import RunChat
from tests.sglang import responses_serving as rs

PASS_UNDECLARED = "HARMONY_EXT_PASS_UNDECLARED"
FORWARD_UNKNOWN_TOOLS = "SGLANG_FORWARD_UNKNOWN_TOOLS"
REASONING = "Need weather."
LOOKUP = '{"q":1}'
UNDECLARED = Case(
    "undeclared_call",
    f"<|channel|>analysis<|message|>{REASONING}<|end|><|start|>assistant<|channel|>commentary "
    f"to=functions.lookup <|constrain|>json<|message|>{LOOKUP}<|call|>",
    "a call to a function the request did not declare")
DROPPED = {"reasoning": REASONING, "content": None, "calls": [], "finish_reason": "stop"}
SURFACED = {"reasoning": REASONING, "content": None, "calls": [("lookup", LOOKUP)],
            "finish_reason": "tool_calls"}

SWITCHED = [  # (variable, value, whether harmony-ext surfaces the call), by hand
    (None, None, False),  # the control: neither set
    (PASS_UNDECLARED, "1", True),
    (PASS_UNDECLARED, "on", True),  # harmony-ext's spellings
    (PASS_UNDECLARED, "y", False),  # not one of them
    (FORWARD_UNKNOWN_TOOLS, "1", True),
    (FORWARD_UNKNOWN_TOOLS, "TRUE", True),
    (FORWARD_UNKNOWN_TOOLS, "y", True),  # SGLang's spellings
    (FORWARD_UNKNOWN_TOOLS, "on", False),  # no value to SGLang: its default, off
    (FORWARD_UNKNOWN_TOOLS, "0", False),
]


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    return pieces_for(hf_dir)


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> Callable[[str | None, str | None], None]:
    """Set one switch (or none) in this process's environment, the other one unset."""

    def set_it(variable: str | None, value: str | None) -> None:
        monkeypatch.delenv(PASS_UNDECLARED, raising=False)
        monkeypatch.delenv(FORWARD_UNKNOWN_TOOLS, raising=False)
        if variable is not None:
            monkeypatch.setenv(variable, value)

    return set_it


def through_chat(sglang_chat: RunChat, pieces: Callable[[str], list[str]],
                 parser: str) -> dict[str, Any]:
    """The output whole and streamed through SGLang's chat serving: one answer for both."""
    whole = served(sglang_chat, UNDECLARED, parser, None, stream=False)
    streamed = served(sglang_chat, UNDECLARED, parser, pieces(UNDECLARED.text), stream=True)
    assert streamed == whole
    return whole


@pytest.mark.filterwarnings("ignore:Invalid value for SGLANG_FORWARD_UNKNOWN_TOOLS")
@pytest.mark.parametrize(("variable", "value", "surfaced"), SWITCHED,
                         ids=[f"{v}={x}" if v else "unset" for v, x, _ in SWITCHED])
def test_on_chat_completions(sglang_chat: RunChat, pieces: Callable[[str], list[str]],
                             switch: Callable[..., None], variable: str | None,
                             value: str | None, surfaced: bool) -> None:
    switch(variable, value)
    assert through_chat(sglang_chat, pieces, NAME) == (SURFACED if surfaced else DROPPED)


@pytest.mark.filterwarnings("ignore:Invalid value for SGLANG_FORWARD_UNKNOWN_TOOLS")
@pytest.mark.parametrize("value", ["1", "TRUE", "y", "on", "0"])
def test_sglang_s_switch_means_to_harmony_ext_what_it_means_to_sglang(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]],
        switch: Callable[..., None], value: str) -> None:
    """SGLang's own ``gpt-oss`` parsers read the same variable: each value surfaces the call on
    both or on neither (``y`` on both, ``on`` on neither)."""
    switch(FORWARD_UNKNOWN_TOOLS, value)
    on = value in ("1", "TRUE", "y")
    theirs = through_chat(sglang_chat, pieces, "gpt-oss")  # its arguments re-serialised
    assert [name for name, _ in theirs["calls"]] == (["lookup"] if on else [])
    assert through_chat(sglang_chat, pieces, NAME) == (SURFACED if on else DROPPED)


def test_an_invalid_value_of_sglang_s_switch_is_what_sglang_warns_of(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]],
        switch: Callable[..., None]) -> None:
    """``on`` is read by SGLang's own reader, which says it is no boolean and keeps the
    default (SGLang's message, once per reading, whoever reads it)."""
    switch(FORWARD_UNKNOWN_TOOLS, "on")
    with pytest.warns(UserWarning) as caught:
        assert through_chat(sglang_chat, pieces, NAME) == DROPPED
    assert {str(w.message) for w in caught if FORWARD_UNKNOWN_TOOLS in str(w.message)} == {
        'Invalid value for SGLANG_FORWARD_UNKNOWN_TOOLS: "on" is not a valid boolean value, '
        'using default "False"'}


@pytest.fixture(scope="module")
def responses_server(gpt_oss_model_dir: Path) -> rs.ResponsesServer:
    return rs.ResponsesServer(gpt_oss_model_dir, NAME, NAME)


@pytest.mark.filterwarnings("ignore:Invalid value for SGLANG_FORWARD_UNKNOWN_TOOLS")
@pytest.mark.parametrize(("variable", "value", "surfaced"),
                         [SWITCHED[0], SWITCHED[1], SWITCHED[6], SWITCHED[7]],
                         ids=["unset", "pass_undeclared=1", "forward_unknown_tools=y",
                              "forward_unknown_tools=on"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_on_the_responses_api(responses_server: rs.ResponsesServer,
                              switch: Callable[..., None], variable: str | None,
                              value: str | None, surfaced: bool, stream: bool) -> None:
    """SGLang's Responses API through harmony-ext's drop-in: the same switches, the same
    reading (a function_call item for ``lookup``, or none)."""
    from harmony_ext_testing.client import WEATHER

    switch(variable, value)
    run = responses_server.run(rs.ids_of(UNDECLARED.text), stream=stream, tools=[WEATHER])
    calls = [view for view in run.views() if view[0] == "function_call"]
    assert run.error is None and run.status == "completed"
    assert calls == ([["function_call", "lookup", LOOKUP]] if surfaced else [])
