"""The hook that puts harmony-ext's parser into SGLang's Responses API (sglang_ext/responses.py).

Through SGLang's real ``OpenAIServingResponses`` (:mod:`tests.sglang.responses_serving`, only the
model scripted): the Harmony contexts get the core's drop-in with the request's tools only when a
harmony-ext parser is selected; what the hook needs from SGLang is checked at start-up and a
missing piece is one log line; an empty Harmony message is an item in neither the streamed nor
the whole response; SGLang's built-in tool loop (a browser call, its result fed back, the next
generation) works streamed; each response is counted on ``/metrics`` with the case's hand-written
outcomes and recoveries (tests/cut_cases.py) and logs the recovery line once. Expected values are
written by hand from the contract.
"""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harmony_plugins import compat
from sglang_ext import plugin, request_context, responses
from tests.cut_cases import CUTS, TOOLS
from tests.sglang import responses_serving as rs
from tests.sglang.sglang_process import run_script

NAME = "harmony-ext"
CALL_W = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
PARIS = '{"city":"Paris"}'


@pytest.fixture(scope="module")
def servers(gpt_oss_model_dir: Path) -> dict[str, rs.ResponsesServer]:
    return {NAME: rs.ResponsesServer(gpt_oss_model_dir, NAME, NAME),
            "gpt-oss": rs.ResponsesServer(gpt_oss_model_dir, "gpt-oss", "gpt-oss"),
            "reasoning only": rs.ResponsesServer(gpt_oss_model_dir, None, NAME),
            "tool only": rs.ResponsesServer(gpt_oss_model_dir, NAME, None)}


@pytest.fixture
def built(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The parsers the hook builds (each with the request it was built for)."""
    made: list[Any] = []
    original = responses.new_parser

    def record(request: Any) -> Any:
        parser = original(request)
        made.append((request, parser))
        return parser

    monkeypatch.setattr(responses, "new_parser", record)
    return made


# -- installed, and only where it should act -------------------------------------------------


def test_the_hook_is_installed_on_this_sglang() -> None:
    assert responses.problem() is None
    assert plugin.status[plugin.RESPONSES] == "on", plugin.status


@pytest.mark.parametrize("selected", [NAME, "reasoning only", "tool only"])
def test_the_contexts_get_the_drop_in_with_the_requests_tools(
        servers: dict[str, rs.ResponsesServer], built: list[Any], selected: str) -> None:
    """Either harmony-ext parser selects it (this path builds neither): a declared call is a
    call, an undeclared one is dropped (contract 2), streamed and not."""
    text = CALL_W + PARIS + "<|call|><|start|>assistant" + CALL_W.replace(
        "get_weather", "send_email") + '{"to":"bob"}<|call|>'
    for stream in (False, True):
        built.clear()
        run = servers[selected].run(rs.ids_of(text), stream=stream, tools=["get_weather"],
                                    ignore_eos=True)
        assert run.error is None and run.views() == [["function_call", "get_weather", PARIS]]
        assert built and all(isinstance(p, compat.StreamableParser) for _, p in built)
        assert [t.name for t in built[-1][0].tools] == ["get_weather"]


def test_any_other_parser_leaves_sglang_as_it_is(servers: dict[str, rs.ResponsesServer],
                                                 built: list[Any]) -> None:
    """With ``gpt-oss`` selected SGLang parses with openai_harmony, as without the plugin (and
    fails where openai-harmony raises)."""
    run = servers["gpt-oss"].run(rs.ids_of("<|channel|>comment<|message|>Hmm.<|end|>"),
                                 stream=False)
    assert built == []
    assert run.error == "Unknown channel: comment"
    ok = servers["gpt-oss"].run(rs.ids_of("<|channel|>final<|message|>Hi.<|return|>"),
                                stream=False)
    assert ok.views() == [["message", "final_answer", "Hi."]] and built == []


def test_the_factory_is_sglangs_own_outside_a_harmony_ext_request() -> None:
    import openai_harmony
    from sglang.srt.entrypoints import context

    assert type(context.get_streamable_parser_for_assistant()) is openai_harmony.StreamableParser
    with request_context.holding(responses_request=SimpleNamespace(tools=[])):
        assert isinstance(context.get_streamable_parser_for_assistant(), compat.StreamableParser)


def test_sglangs_internals_not_as_expected_is_one_line_and_no_hook(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    from sglang.srt.entrypoints import context

    def init(self: Any, messages: Any, tool_sessions: Any) -> None:  # no parser factory
        self._messages = messages

    monkeypatch.setattr(context.HarmonyContext, "__init__", init)
    why = responses.problem()
    assert why == ("HarmonyContext.__init__ no longer takes its parser from "
                   "get_streamable_parser_for_assistant()")
    with caplog.at_level(logging.WARNING, logger="sglang_ext"):
        done = plugin.install_hooks()
    lines = [r.getMessage() for r in caplog.records if plugin.RESPONSES in r.getMessage()]
    assert lines == [f"harmony-ext: hook {plugin.RESPONSES!r} not installed: {why}"]
    assert done[plugin.RESPONSES] == f"off ({why})"


# -- empty Harmony messages ------------------------------------------------------------------

EMPTY = [
    # (output, the items): a message with an empty body is no item, streamed or not
    ("<|channel|>final<|message|><|end|>Hello there.<|return|>",
     [["message", "final_answer", "Hello there."]]),
    ("<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>Hi"
     "<|return|>", [["message", "final_answer", "Hi"]]),
    ("<|channel|>final<|message|><|end|><|start|>assistant<|channel|>final<|message|>Hi"
     "<|return|>", [["message", "final_answer", "Hi"]]),
    ("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>",
     [["reasoning", "Think."]]),
    # a call's empty body is {} (contract 4): never empty
    ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|><|call|>",
     [["function_call", "get_weather", "{}"]]),
]


@pytest.mark.parametrize("text, items", EMPTY, ids=[f"empty_{i}" for i in range(len(EMPTY))])
def test_an_empty_message_is_an_item_neither_streamed_nor_whole(
        servers: dict[str, rs.ResponsesServer], text: str, items: list[Any]) -> None:
    ids = rs.ids_of(text)
    whole = servers[NAME].run(ids, stream=False, tools=["get_weather"])
    streamed = servers[NAME].run(ids, stream=True, tools=["get_weather"])
    assert rs.problems(whole, streamed) == []
    assert whole.views() == streamed.views() == items
    assert [i for i, _ in streamed.added] == list(range(len(items)))


def test_sglangs_own_parser_gives_an_empty_message_an_item_in_both(
        servers: dict[str, rs.ResponsesServer]) -> None:
    """What SGLang does itself (openai-harmony keeps the empty message; SGLang's item
    builders make it an item in the stream and in the whole response alike)."""
    ids = rs.ids_of(EMPTY[2][0])
    whole = servers["gpt-oss"].run(ids, stream=False)
    streamed = servers["gpt-oss"].run(ids, stream=True)
    assert rs.problems(whole, streamed) == []
    assert whole.views() == [["message", "final_answer", ""], ["message", "final_answer", "Hi"]]


# -- SGLang's built-in tool loop -------------------------------------------------------------

SEARCH = ('<|channel|>analysis<|message|>Search it.<|end|><|start|>assistant<|channel|>analysis'
          ' to=browser.search<|message|>{"query":"weather"}<|call|>')
ANSWER = "<|channel|>final<|message|>It is sunny.<|return|>"


def tool_loop(model_dir: Path, parser: str, stream: bool) -> tuple[rs.ResponsesRun, Any]:
    """A web_search request: the model searches, SGLang runs its browser (a stand-in), feeds the
    result back through the context's parser, renders the next prompt, and the model answers."""
    tool_server = rs.browser_tool_server("Sunny, 24 C.")
    server = rs.ResponsesServer(model_dir, parser, parser, tool_server=tool_server)
    run = server.run([rs.ids_of(SEARCH), rs.ids_of(ANSWER)], stream=stream,
                     tools=[{"type": "web_search"}])
    return run, tool_server


SEARCHED = [["reasoning", "Search it."],
            ["web_search_call", {"action": {"query": "cursor:weather", "type": "search",
                                            "sources": None}, "type": "web_search_call"}],
            ["message", "final_answer", "It is sunny."]]


def test_the_built_in_tool_loop_streamed(gpt_oss_model_dir: Path) -> None:
    """The tool's result and the next turn's ``<|start|>assistant`` that SGLang feeds the
    parser are read as openai-harmony reads them (no forged turn), and the second generation
    is parsed from its first id (SGLang's count of ids is reset for it by the hook)."""
    run, tool_server = tool_loop(gpt_oss_model_dir, NAME, stream=True)
    assert run.error is None and rs.stream_problems(run) == []
    assert tool_server.calls == [("browser.search", '{"query":"weather"}')]
    assert run.views() == SEARCHED
    assert len(run.prompts) == 2 and rs.encoding().decode(run.prompts[1]).endswith(
        "<|start|>browser.search to=assistant<|message|>Sunny, 24 C.<|end|><|start|>assistant")


def test_the_built_in_tool_loop_not_streamed(gpt_oss_model_dir: Path) -> None:
    run, tool_server = tool_loop(gpt_oss_model_dir, NAME, stream=False)
    assert tool_server.calls == [("browser.search", '{"query":"weather"}')]
    assert (run.error, run.views()) == (None, SEARCHED)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_sglangs_own_parser_fails_its_built_in_tool_loop(gpt_oss_model_dir: Path,
                                                         stream: bool) -> None:
    """SGLang's own: non-streamed, the parser is never given the tool's result and reads the
    next generation after <|call|> (openai-harmony raises); streamed, the next generation's
    first ids are skipped (its count of ids is not reset between generations)."""
    run, _ = tool_loop(gpt_oss_model_dir, "gpt-oss", stream=stream)
    assert run.error == ("stream cut: HarmonyError: Unknown role: assistantfinal" if stream
                         else "Unexpected token 200005 while expecting start token 200006")


# -- counted and logged as on chat -----------------------------------------------------------

COUNT_SCRIPT = r"""
import json, sys
from tests.cut_cases import CUTS, TOOLS
from tests.sglang import responses_serving as rs, sglang_process as sp

sp.load_plugins()
server = rs.ResponsesServer(sys.argv[1], "harmony-ext", "harmony-ext", enable_metrics=True)
out = {}
for cut in CUTS:
    ids = rs.ids_of(cut.text)
    for mode, stream in (("whole", False), ("streamed", True)):
        run, added = sp.counted(lambda: server.run(
            ids, stream=stream, tools=TOOLS, ignore_eos=True, max_output_tokens=len(ids) + 2))
        out[f"{cut.id}/{mode}"] = {"status": run.status, "error": run.error,
                                   "items": run.views(), "counted": added}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def counted(gpt_oss_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
            ) -> dict[str, Any]:
    """Each cut (tests/cut_cases.py) through Responses, in a process set up as SGLang's with
    ``--enable-metrics``: what the client got and what ``/metrics`` added."""
    return run_script(COUNT_SCRIPT, gpt_oss_model_dir, tmp_path_factory.mktemp("metrics"))


def cut_items(cut: Any) -> list[list[Any]]:
    items: list[list[Any]] = []
    if cut.reasoning is not None:
        items.append(["reasoning", cut.reasoning])
    if cut.content is not None:
        items.append(["message", "commentary", cut.content])  # written as a preamble
    return items + [["function_call", name, args] for name, args in cut.calls]


@pytest.mark.parametrize("mode", ["whole", "streamed"])
@pytest.mark.parametrize("cut", CUTS, ids=[c.id for c in CUTS])
def test_a_response_is_counted_once_as_on_chat(counted: dict[str, Any], cut: Any,
                                               mode: str) -> None:
    """Contract 9: one response on ``/metrics`` with the cut's outcomes and recoveries; the
    response is ``incomplete`` (cut by max_output_tokens) with the partial call as written."""
    got = counted[f"{cut.id}/{mode}"]
    assert (got["error"], got["status"]) == (None, "incomplete")
    assert got["items"] == cut_items(cut)
    assert got["counted"] == {"responses": 1, "leaks": 0, "recoveries": cut.recoveries,
                              "outcomes": cut.outcomes}


def test_tools_are_the_cut_suites() -> None:
    assert rs.responses_tools(TOOLS)[0]["name"] == "get_weather"


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_recovery_line_is_logged_once_per_response(
        servers: dict[str, rs.ResponsesServer], caplog: pytest.LogCaptureFixture,
        stream: bool) -> None:
    with caplog.at_level(logging.INFO, logger="sglang_ext"):
        run = servers[NAME].run(rs.ids_of(CALL_W + PARIS + "]<|call|>"), stream=stream,
                                tools=["get_weather"])
    assert run.views() == [["function_call", "get_weather", PARIS]]
    lines = [r.getMessage() for r in caplog.records if "harmony-ext: request=" in r.getMessage()]
    assert run.response_id and run.response_id.startswith("resp_")
    assert lines == [f"harmony-ext: request={run.response_id} rules=after_json_value(get_weather) "
                     "calls=get_weather:surfaced"]
