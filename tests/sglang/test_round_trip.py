"""Multi-turn on SGLang: what the model wrote is what it reads back (contract section 8).

Through SGLang's real ``OpenAIServingChat`` (only the model is a stand-in): turn 1 is scripted
output parsed by harmony-ext, streamed or not; the parsed assistant message goes back with the
tool results, as an agent loop sends it; the prompt ids SGLang hands the model for turn 2 must end
with that turn in the order and form the model wrote it, then the tool results, token by token.
The round trips and their expected renderings, written out by hand, are
``harmony_ext_testing/sglang_round_trips.py``'s: calls in the canonical gpt-oss header
(``assistant to=functions.NAME<|channel|>commentary json``), tool results as
``functions.NAME<|channel|>commentary to=assistant`` (either recipient place is valid Harmony),
text as ordinary o200k tokens (a control-token spelling stays text).

What SGLang's own ``gpt-oss`` parsers make of the same history (with the suite's stand-in chat
template: gpt-oss's published template is not available offline), the "before", is recorded
beside the "after" by the page generator ``bash pages/run.sh multi-turn-sglang``
(pages/multi_turn_sglang.py, which writes docs/multi-turn-sglang.md from the same round trips).
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.client import WEATHER
from harmony_ext_testing.renderings import (
    OSLO,
    PARIS,
    START,
    analysis,
    call,
    final,
    preamble,
    result,
    token_ids,
    user,
)
from harmony_ext_testing.sglang_cases import NAME, SHELL
from harmony_ext_testing.sglang_round_trips import (
    HOT,
    NEXT,
    ROUND_TRIPS,
    USER,
    RoundTrip,
    answered,
    history,
    prompt_ids,
    show,
    split,
)


@pytest.fixture(autouse=True)
def harmony_rendering(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARMONY_EXT_CHAT_TEMPLATE", raising=False)


@pytest.fixture(scope="module")
def encoding() -> Any:
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    return tiktoken_encoding()


@pytest.mark.parametrize("trip", ROUND_TRIPS, ids=[t.id for t in ROUND_TRIPS])
def test_round_trip(sglang_chat: Any, encoding: Any, trip: RoundTrip) -> None:
    messages = history(sglang_chat, trip)
    want = token_ids(encoding, [*user(USER), *trip.expected, START, "assistant"])
    got = prompt_ids(sglang_chat, messages, list(trip.tools))
    head, tail = split(got, encoding)
    assert show(encoding, tail) == show(encoding, want)
    assert tail == want  # token by token: tool text stays text
    header = encoding.decode(head)
    assert header.startswith("<|start|>system<|message|>")
    assert "<|start|>developer<|message|># Tools" in header
    for tool in trip.tools:
        assert f"type {tool['function']['name']} = " in header


def test_system_and_developer_part(sglang_chat: Any, encoding: Any) -> None:
    """Reasoning effort in the system message; instructions and tools in the developer one."""
    messages = [{"role": "system", "content": "Answer in French."},
                {"role": "user", "content": USER}]
    got = prompt_ids(sglang_chat, messages, [WEATHER], reasoning_effort="low")
    text = encoding.decode(got)
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    assert text.startswith("<|start|>system<|message|>You are ChatGPT, a large language model "
                           "trained by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: ")
    assert "\n\nReasoning: low\n\n" in text
    assert today in text or "Current date: " in text  # the date may turn over mid-test
    developer = text[text.index("<|start|>developer"):text.index("<|start|>user")]
    assert developer.startswith("<|start|>developer<|message|># Instructions\n\n"
                                "Answer in French.\n\n# Tools\n\n## functions\n\n"
                                "namespace functions {\n\n")
    # WEATHER's description, then its one required property (no "?": openai-harmony's form)
    assert ("// Current weather in a city\ntype get_weather = (_: {\ncity: string,\n}) => any;"
            in developer)
    assert text.endswith("<|start|>user<|message|>What is the weather in Paris?<|end|>"
                         "<|start|>assistant")


def test_analysis_is_dropped_after_a_final_answer(sglang_chat: Any, encoding: Any) -> None:
    """Chain of thought is carried through the tool turn and dropped once answered."""
    message, messages = answered(sglang_chat)
    assert message["content"] == "Sunny in Paris." and message["reasoning_content"] == "Got it."
    want = token_ids(encoding, [
        *user(USER), *preamble("Checking now."), *call("get_weather", PARIS),
        *result("get_weather", HOT), *final("Sunny in Paris."), *user("Thanks!"),
        START, "assistant"])
    got = prompt_ids(sglang_chat, messages, [WEATHER])
    _, tail = split(got, encoding)
    assert show(encoding, tail) == show(encoding, want)
    assert tail == want


def test_analysis_of_every_step_is_carried_until_a_final_answer(encoding: Any) -> None:
    """Two tool steps in a row: both analyses stay (no final answer in between)."""
    from sglang_ext.prompt import render_request

    def step(i: int, thought: str, arguments: str) -> list[dict[str, Any]]:
        return [{"role": "assistant", "reasoning_content": thought, "tool_calls": [
                    {"id": f"c{i}", "type": "function",
                     "function": {"name": "get_weather", "arguments": arguments}}]},
                {"role": "tool", "tool_call_id": f"c{i}", "content": f"r{i}"}]

    messages = [{"role": "user", "content": USER}, *step(1, "First Paris.", PARIS),
                *step(2, "Now Oslo.", OSLO)]
    _, tail = split(render_request({"messages": messages, "tools": [WEATHER]}), encoding)
    assert tail == token_ids(encoding, [
        *user(USER), *analysis("First Paris."), *call("get_weather", PARIS),
        *result("get_weather", "r1"), *analysis("Now Oslo."), *call("get_weather", OSLO),
        *result("get_weather", "r2"), START, "assistant"])


def test_tool_choice_keeps_the_rendering(sglang_chat: Any, encoding: Any) -> None:
    """``required`` and a named tool render the same prompt as ``auto``: every declared tool is
    listed whatever tool_choice names (contract v4, section 8), though SGLang hands its template
    only the named one."""
    messages = history(sglang_chat, ROUND_TRIPS[3])
    tools = [WEATHER, SHELL]
    auto = prompt_ids(sglang_chat, messages, tools)
    assert prompt_ids(sglang_chat, messages, tools, tool_choice="required") == auto
    named = prompt_ids(sglang_chat, messages, tools,
                       tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert named == auto
    assert "type shell = " in encoding.decode(auto)


def test_says_once_that_it_renders_the_prompt(sglang_chat: Any,
                                              caplog: pytest.LogCaptureFixture) -> None:
    from sglang_ext import prompt as module

    module.once.forget("active")
    with caplog.at_level("INFO", logger="sglang_ext"):
        for _ in range(2):
            prompt_ids(sglang_chat, [{"role": "user", "content": USER}], [WEATHER])
    said = [r.getMessage() for r in caplog.records if "openai_harmony" in r.getMessage()]
    assert len(said) == 1 and "rendering gpt-oss chat prompts itself" in said[0], said


def test_without_harmony_ext_sglang_renders_the_template(sglang_chat: Any,
                                                         encoding: Any) -> None:
    """Other parsers selected: SGLang's own chat-template path, untouched (the stand-in
    template renders role and text content only)."""
    messages = [{"role": "user", "content": USER}]
    got = prompt_ids(sglang_chat, messages, [WEATHER], parser="gpt-oss")
    assert got == token_ids(encoding, [*user(USER), START, "assistant"])


def test_opt_out_keeps_the_template(sglang_chat: Any, encoding: Any,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARMONY_EXT_CHAT_TEMPLATE", "1")
    got = prompt_ids(sglang_chat, [{"role": "user", "content": USER}], [WEATHER])
    assert got == token_ids(encoding, [*user(USER), START, "assistant"])


def test_continue_final_message_falls_back_to_sglang(sglang_chat: Any, encoding: Any,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """What Harmony rendering cannot represent goes to SGLang's own path, with a log line."""
    messages = [{"role": "user", "content": USER},
                {"role": "assistant", "content": "It is"}]
    from sglang_ext import prompt

    prompt.once.forget("fallback:continue_final_message is set")
    with caplog.at_level("INFO", logger="sglang_ext"):
        got = prompt_ids(sglang_chat, messages, [WEATHER], continue_final_message=True)
        prompt_ids(sglang_chat, messages, [WEATHER], continue_final_message=True)
    # The stand-in template's rendering, then the message continued:
    assert got == token_ids(encoding, [*user(USER), START, "assistant", "It is"])
    said = [r.getMessage() for r in caplog.records if "continue_final_message" in r.getMessage()]
    assert len(said) == 1, said  # once, however often


def test_hooks_installed_once() -> None:
    """The prompt hooks are on after SGLang's plugin loader (handle_request carries the reasoning
    field's too), and a second registration adds none."""
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.plugins import load_plugins
    from sglang.srt.plugins.hook_registry import HookRegistry

    from sglang_ext import plugin, prompt, reasoning_field

    assert plugin.status["gpt-oss prompts rendered as Harmony"] == "on", plugin.status
    assert plugin.status["'reasoning' kept in messages"] == "on", plugin.status
    plugin._registered = False  # as if a second copy of the entry point ran
    plugin.register()
    load_plugins()
    HookRegistry.apply_hooks()
    hooks = {target: [h for _, h, _ in HookRegistry._hooks[target]]
             for target in (prompt.TARGET, prompt.HANDLE)}
    assert hooks == {prompt.TARGET: [prompt.apply_template],
                     prompt.HANDLE: [prompt.carry_reasoning, reasoning_field.reply_with_reasoning]}
    for method, expected in ((OpenAIServingChat._apply_jinja_template, 1),
                             (OpenAIServingChat.handle_request, 2)):
        depth = 0
        while hasattr(method, "__wrapped__"):
            method, depth = method.__wrapped__, depth + 1
        assert depth == expected, method


def test_sglang_drops_a_reasoning_key_itself() -> None:
    """Why the raw request is read: SGLang's message model has no ``reasoning`` field."""
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest

    request = ChatCompletionRequest(model="m", messages=[
        {"role": "user", "content": USER},
        {"role": "assistant", "content": "x", "reasoning": "Need weather."},
        {"role": "user", "content": "y"}])
    assert "Need weather." not in request.model_dump_json()


def test_reasoning_key_without_the_raw_request_is_lost(sglang_chat: Any,
                                                       encoding: Any) -> None:
    """Without the HTTP request (a caller of the serving class) only SGLang's model is left."""
    messages = history(sglang_chat, ROUND_TRIPS[2])
    answer = sglang_chat(NEXT, stream=False, tools=[WEATHER], messages=messages,
                         tool_parser=NAME, reasoning_parser=NAME)
    text = encoding.decode(answer.prompts[0])
    assert "Need weather." not in text and "Checking now." in text


@pytest.mark.parametrize("messages, reason", [
    ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}],
     "'image_url' content part"),
    ([{"role": "user", "content": USER}, {"role": "assistant", "content": "It is"}],
     "last message is from the assistant"),
    ([{"role": "user", "content": USER}, {"role": "tool", "tool_call_id": "x", "content": "1"}],
     "names no call"),
    ([{"role": "function", "name": "f", "content": "1"}], "role 'function'"),
])
def test_what_harmony_cannot_represent_is_left_to_sglang(messages: list[dict[str, Any]],
                                                          reason: str) -> None:
    from sglang_ext.prompt import Unsupported, render_request

    with pytest.raises(Unsupported, match=reason):
        render_request({"messages": messages})
    with pytest.raises(Unsupported, match="reasoning_effort"):
        render_request({"messages": [{"role": "user", "content": USER}],
                        "reasoning_effort": "max"})


def test_offline_the_vocabulary_comes_from_harmony_ext(monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    """openai_harmony downloads its vocabulary; offline the shipped copy is written for it
    (by the engine glue, not the core, into the user's cache) before the first prompt is
    rendered."""
    import openai_harmony

    from harmony_plugins.prompt import _render as render
    from sglang_ext import prompt

    real = openai_harmony.load_harmony_encoding
    folders: list[str] = []

    def load(name: Any) -> Any:
        folders.append(os.environ.get("TIKTOKEN_ENCODINGS_BASE", ""))
        if not folders[-1]:
            raise RuntimeError("no network")
        return real(name)

    monkeypatch.setenv("TIKTOKEN_ENCODINGS_BASE", "")
    monkeypatch.setattr(openai_harmony, "load_harmony_encoding", load)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(prompt, "_ready", False)
    render.loaded_encoding.cache_clear()
    try:
        ids = prompt.render_request({"messages": [{"role": "user", "content": USER}]})
    finally:
        render.loaded_encoding.cache_clear()
    folder = tmp_path / "harmony-ext" / "o200k-446a9538cb6c348e"  # the official sha256's start
    assert ids and folders == ["", str(folder)]
    assert (folder / "o200k_base.tiktoken").stat().st_size > 1_000_000
