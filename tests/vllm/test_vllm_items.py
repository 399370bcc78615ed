"""The Responses items hooks (vllm_ext/items.py) on the installed vLLM's own functions.

Message items get their ``phase`` from vLLM's own item builders, whole and streamed; input items
sent back go through vLLM's own ``OnlineRenderer._render_responses_with_harmony`` and its
renderer (``render_for_completion``), and the prompt, written out by hand below, has the turn
as the model wrote it. With no ``harmony-ext`` parser composed in the process, vLLM's own
behaviour, as the tests show it. The real server: tests/e2e_vllm/test_responses_round_trip.py.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(run with .venv-vllm/bin/pytest after scripts/setup_vllm_env.sh)")

from openai.types.responses import ResponseFunctionToolCall  # noqa: E402
from openai_harmony import Message, Role  # noqa: E402
from vllm.entrypoints.openai.parser.harmony_utils import render_for_completion  # noqa: E402
from vllm.entrypoints.openai.responses import serving  # noqa: E402
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest  # noqa: E402
from vllm.entrypoints.openai.responses.streaming_events import StreamingState  # noqa: E402
from vllm.parser.harmony import Segment  # noqa: E402
from vllm.renderers.online_renderer import OnlineRenderer  # noqa: E402

from harmony_ext_testing.client import WEATHER  # noqa: E402
from harmony_plugins.vocab.o200k import tiktoken_encoding  # noqa: E402
from tests.data import responses_tool  # noqa: E402
from vllm_ext import items, plugin  # noqa: E402

PARIS = '{"city":"Paris"}'
USER = "What is the weather in Paris?"
TOOLS = [responses_tool(WEATHER)]
TURN = [
    {"type": "reasoning", "id": "rs_1", "summary": [],
     "content": [{"type": "reasoning_text", "text": "Need weather."}]},
    {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
     "content": [{"type": "output_text", "text": "Checking now.", "annotations": []}]},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "get_weather",
     "arguments": PARIS, "status": "completed"},
]
OUTPUT = {"type": "function_call_output", "call_id": "call_1", "output": "It is sunny."}
R_USER = f"<|start|>user<|message|>{USER}<|end|>"
R_ANALYSIS = "<|start|>assistant<|channel|>analysis<|message|>Need weather.<|end|>"
R_PREAMBLE = "<|start|>assistant<|channel|>commentary<|message|>Checking now.<|end|>"
R_AS_FINAL = "<|start|>assistant<|channel|>final<|message|>Checking now.<|end|>"
R_CALL = ("<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
          + PARIS + "<|call|>")
R_RESULT = ("<|start|>functions.get_weather<|channel|>commentary to=assistant<|message|>"
            "It is sunny.<|end|><|start|>assistant")


@pytest.fixture(autouse=True)
def hooked(monkeypatch: pytest.MonkeyPatch) -> None:
    plugin.register()
    monkeypatch.setattr(items, "_active", True)  # as when a harmony-ext parser is composed


def assistant(text: str, channel: str, recipient: str | None = None) -> Message:
    message = Message.from_role_and_content(Role.ASSISTANT, text).with_channel(channel)
    return message if recipient is None else message.with_recipient(recipient)


def test_this_vllm_has_the_hook_points() -> None:
    assert items.check() is None


@pytest.mark.parametrize("active", [True, False])
def test_message_items_get_their_phase(monkeypatch: pytest.MonkeyPatch, active: bool) -> None:
    monkeypatch.setattr(items, "_active", active)
    names = frozenset({"get_weather"})
    preamble, answer = (serving.harmony_to_response_output(assistant(text, channel), names)
                        for text, channel in (("Checking now.", "commentary"), ("Hi.", "final")))
    assert [item.phase for item in (*preamble, *answer)] == (
        ["commentary", "final_answer"] if active else [None, None])
    called = serving.harmony_to_response_output(
        assistant(PARIS, "commentary", "functions.get_weather"), names)
    assert [item.type for item in called] == ["function_call"]


def test_streamed_message_items_get_their_phase() -> None:
    state = StreamingState()
    added = serving.emit_content_delta_events(
        Segment(channel="commentary", recipient=None, delta="Checking now."), state,
        frozenset())
    done = serving.emit_previous_item_done_events(
        assistant("Checking now.", "commentary"), state, frozenset())
    assert [e.item.phase for e in (*added, *done) if hasattr(e, "item")] == [
        "commentary", "commentary"]


@pytest.fixture
def renderer(monkeypatch: pytest.MonkeyPatch) -> OnlineRenderer:
    """vLLM's renderer with only what a Responses render needs beside the messages: no parser
    to adjust the request, vLLM's ``render_for_completion`` for the ids."""
    monkeypatch.setattr(ResponsesRequest, "build_tok_params", lambda self, config: None)
    renderer = object.__new__(OnlineRenderer)
    renderer.parser = None
    renderer.model_config = None
    renderer.reasoning_effort_map = {}  # vLLM 0.33
    renderer.render_responses_harmony_messages = (
        lambda messages, **kwargs: render_for_completion(messages))
    return renderer


def rendered(renderer: OnlineRenderer, input_items: list[Any], **kwargs: Any) -> Any:
    request = ResponsesRequest(model="tiny", tools=TOOLS, input=input_items)
    kwargs = {"previous_messages": None, "previous_response_outputs": None,
              "tool_server": None, **kwargs}
    result = renderer._render_responses_with_harmony(request, **kwargs)
    engine_input = getattr(result, "engine_input", None)
    return result if engine_input is None else tiktoken_encoding().decode(engine_input)


@pytest.mark.parametrize("active", [True, False])
def test_items_sent_back_render_as_the_model_wrote_them(renderer: OnlineRenderer,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        active: bool) -> None:
    monkeypatch.setattr(items, "_active", active)
    prompt = rendered(renderer, [{"role": "user", "content": USER}, *TURN, OUTPUT])
    # vLLM alone: the preamble as an answer, so the analysis before it dropped.
    turn = R_ANALYSIS + R_PREAMBLE if active else R_AS_FINAL
    assert prompt.endswith(R_USER + turn + R_CALL + R_RESULT)


EMPTY = "<|start|>assistant<|message|><|end|>"
"""vLLM 0.34's own rendering of a reasoning item without text: an empty assistant message with
no channel (``response_input_to_harmony``; 0.32 and 0.33 render nothing)."""


@pytest.mark.parametrize("reasoning", [
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": []},
    {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA",
     "summary": [{"type": "summary_text", "text": "Weather."}]},
], ids=["no_content", "empty_content", "summary_only"])
@pytest.mark.parametrize("active", [True, False])
def test_a_reasoning_item_without_text_renders_nothing(renderer: OnlineRenderer,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       reasoning: dict[str, Any],
                                                       active: bool) -> None:
    """Contract 8: items sent back render as the model wrote them, and a reasoning item that
    holds no text (a client's placeholder, or a summary alone) is no analysis the model wrote:
    nothing, on every vLLM. vLLM alone: nothing on 0.32 and 0.33, an empty message on 0.34."""
    monkeypatch.setattr(items, "_active", active)
    prompt = rendered(renderer, [{"role": "user", "content": USER}, reasoning, *TURN[1:], OUTPUT])
    if active:
        assert prompt.endswith(R_USER + R_PREAMBLE + R_CALL + R_RESULT)
    else:
        empty = EMPTY if tuple(map(int, vllm.__version__.split(".")[:2])) >= (0, 34) else ""
        assert prompt.endswith(R_USER + empty + R_AS_FINAL + R_CALL + R_RESULT)


def test_the_output_alone_is_named_from_the_previous_response(renderer: OnlineRenderer) -> None:
    """``previous_response_id``: vLLM hands the stored messages and the stored output items."""
    stored = [Message.from_role_and_content(Role.USER, USER),
              assistant("Checking now.", "commentary"),
              assistant(PARIS, "commentary", "functions.get_weather").with_content_type("json")]
    call = ResponseFunctionToolCall(**TURN[2])
    prompt = rendered(renderer, [OUTPUT], previous_messages=stored,
                      previous_response_outputs=[call])
    assert prompt == R_USER + R_PREAMBLE + R_CALL + R_RESULT


def test_items_the_core_cannot_read_are_left_to_vllm(renderer: OnlineRenderer,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    items._once.forget("fallback:call_id")
    with caplog.at_level(logging.INFO, logger="vllm.harmony_ext"):
        answer = rendered(renderer, [{"role": "user", "content": USER},
                                     {**OUTPUT, "call_id": "nobody"}])
    assert "No call message found for nobody" in str(answer)  # vLLM's own error
    assert [r.getMessage() for r in caplog.records if r.name == "vllm.harmony_ext"] == [
        "harmony-ext: a function_call_output whose call_id names no function_call item; the "
        "input items of such Responses requests are converted by vLLM, not harmony-ext"]


def test_a_vllm_without_the_hook_points_is_one_log_line(monkeypatch: pytest.MonkeyPatch,
                                                        caplog: pytest.LogCaptureFixture
                                                        ) -> None:
    monkeypatch.delattr(serving, "emit_previous_item_done_events")
    with caplog.at_level(logging.WARNING, logger="vllm.harmony_ext"):
        plugin.install_or_warn(items)
    assert [r.getMessage() for r in caplog.records if r.name == "vllm.harmony_ext"] == [
        "harmony-ext: Responses API items are vLLM's own (message items carry no phase; "
        "assistant messages sent back are rendered as answers; the log line names no "
        "response): "
        "vllm.entrypoints.openai.responses.serving.emit_previous_item_done_events does not "
        "exist."]
