"""The ``harmony-ext`` detectors inside SGLang's own classes: by name, and served.

Every case of ``harmony_ext_testing.sglang_cases.CASES`` runs through SGLang's
``ReasoningParser`` and ``FunctionCallParser`` built by name (streamed in token-aligned and
arbitrary character chunks, and not streamed), and through SGLang's real ``OpenAIServingChat``
with only the model scripted. What SGLang's built-in ``gpt-oss`` parsers make of the same cases
is recorded, not judged, by the page generator ``bash pages/run.sh sglang-comparison``
(pages/sglang_comparison.py, which writes docs/sglang-comparison.md), with the same
``served`` and ``pieces_for``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sglang.srt.entrypoints.openai.protocol import Tool
from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.function_call_parser import FunctionCallParser
from sglang.srt.parser.reasoning_parser import ReasoningParser

from harmony_ext_testing.client import WEATHER
from harmony_ext_testing.sglang_cases import (
    CASES,
    NAME,
    Case,
    chain_nonstream,
    chain_stream,
    char_chunkings,
    long_answer,
    pieces_for,
    request_for,
    served,
    sglang_tools,
    token_chunkings,
)
from sglang_ext import link as links
from sglang_ext import request_context
from sglang_ext.detectors import HarmonyExtDetector
from tests.garbage import cyclic_garbage

PARIS_CALL = ("get_weather", '{"city":"Paris"}')


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    return pieces_for(hf_dir)


@pytest.fixture(autouse=True)
def harmony_ext_selected(harmony_server_args: Any) -> None:
    """The by-name chains read the server's parser choice: publish ours before each test."""
    from sglang.srt.runtime_context import publish

    publish(harmony_server_args, role="tokenizer")


@pytest.fixture(autouse=True)
def fresh_link_context() -> None:
    """Each test is a new request, as each of SGLang's requests runs in its own task
    context: no link published by an earlier test's reasoning detector is visible."""
    request_context.update(link=None)


def case_param(case: Case) -> Any:
    return pytest.param(case, id=case.id)


ALL = [case_param(c) for c in CASES]


# -- the expectations themselves ------------------------------------------------------------


@pytest.mark.parametrize("case", ALL)
def test_hand_written_contract_answers_agree_with_the_core(case: Case) -> None:
    assert case.core() == case.expected()


# -- SGLang's parser classes, built by name -------------------------------------------------


@pytest.mark.parametrize("case", ALL)
def test_by_name_not_streamed(case: Case) -> None:
    want = case.expected()
    del want["finish_reason"]
    assert chain_nonstream(case, NAME) == want


@pytest.mark.parametrize("case", ALL)
def test_by_name_streamed_in_token_chunks(case: Case, pieces) -> None:
    want = {**case.expected(), "topup": ""}
    del want["finish_reason"]
    for deltas in token_chunkings(pieces(case.text)):
        assert chain_stream(case, NAME, deltas) == want, deltas


@pytest.mark.parametrize("case", ALL)
def test_by_name_streamed_in_any_character_chunks(case: Case) -> None:
    want = {**case.expected(), "topup": ""}
    del want["finish_reason"]
    for deltas in char_chunkings(case.text):
        assert chain_stream(case, NAME, deltas) == want, deltas


PARSES_WITHOUT_TOOLS = hasattr(BaseFormatDetector, "parses_without_tools")
"""SGLang 0.5.23 asks a detector that parses without tools (ours) even for a request that
declares none; 0.5.22 hands such a request's text on as it is, chain of thought included,
when no reasoning parser of ours came first (docs/sglang.md, "Limits")."""


@pytest.mark.parametrize("case", ALL)
def test_tool_detector_alone_on_raw_text(case: Case) -> None:
    """No harmony-ext reasoning parser upstream: the tool detector parses the raw text itself,
    ``has_tool_call`` says True exactly where the text holds a call, and chain-of-thought
    never becomes content (SGLang hands on the text as it is when ``has_tool_call`` says
    False; the plugin's hook on ``parse_non_stream`` gives it the parse's content)."""
    want = case.expected()
    tools = [Tool(**t) for t in case.tools or ()]
    parser = FunctionCallParser(tools, NAME)
    if not tools and not PARSES_WITHOUT_TOOLS:  # SGLang 0.5.22: the detector is not asked
        want = {"calls": [], "content": case.text}
    assert parser.has_tool_call(case.text) == bool(want["calls"])
    content, items = parser.parse_non_stream(case.text)
    assert [(i.name, i.parameters) for i in items] == want["calls"]
    assert (content or None) == want["content"]


def test_arguments_stream_as_they_arrive(pieces) -> None:
    case = next(c for c in CASES if c.id == "call_after_analysis")
    rp = ReasoningParser(NAME, request=request_for(case),
                         tool_call_parser_active=True)
    fp = FunctionCallParser([Tool(**WEATHER)], NAME)
    seen: list[tuple[str, Any]] = []
    for piece in pieces(case.text):
        _, normal = rp.parse_stream_chunk(piece)
        _, items = fp.parse_stream_chunk(normal)
        seen += [(piece, (item.name, item.parameters)) for item in items]
    # The call is announced when its header completes, before any argument token...
    assert seen[0] == ("<|message|>", ("get_weather", ""))
    # ...and each argument token is passed on in the step that produced it.
    args = [(piece, params) for piece, (name, params) in seen[1:]]
    assert len(args) >= 3 and all(piece == params for piece, params in args)


def test_stream_reasoning_false_holds_reasoning_until_it_ends(pieces) -> None:
    case = next(c for c in CASES if c.id == "final_after_analysis")
    rp = ReasoningParser(NAME, stream_reasoning=False, tool_call_parser_active=True)
    out = [rp.parse_stream_chunk(p)[0] for p in pieces(case.text)]
    nonempty = [r for r in out if r]
    assert nonempty == ["Need weather."]


def test_reasoning_and_tool_detector_share_one_turn_through_the_link() -> None:
    case = next(c for c in CASES if c.id == "call_after_analysis")
    rp = ReasoningParser(NAME, request=request_for(case),
                         tool_call_parser_active=True)
    fp = FunctionCallParser([Tool(**WEATHER)], NAME)
    _, normal = rp.parse_stream_chunk(case.text)
    assert type(normal) is str and normal == ""
    _, items = fp.parse_stream_chunk(normal)
    assert [(i.name, i.parameters) for i in items] == [("get_weather", '{"city":"Paris"}')]
    assert isinstance(fp.detector, HarmonyExtDetector)
    assert fp.detector._link is rp.detector.link and fp.detector._own is None


def test_a_step_with_nothing_for_the_tool_detector_gets_an_empty_result_of_its_own(
        pieces) -> None:
    """Reasoning steps give the tool detector nothing: it answers each with an empty result,
    never one shared with another step (SGLang's caller may change what it is handed)."""
    case = next(c for c in CASES if c.id == "call_after_analysis")
    rp = ReasoningParser(NAME, request=request_for(case), tool_call_parser_active=True)
    fp = FunctionCallParser([Tool(**WEATHER)], NAME)
    results = []
    for piece in pieces("<|channel|>analysis<|message|>Need weather, in Paris."):
        _, normal = rp.parse_stream_chunk(piece)
        result = fp.detector.parse_streaming_increment(normal, fp.tools)
        assert (result.normal_text, result.calls) == ("", [])
        result.calls.append("changed by somebody")
        results.append(result)
    assert len({id(r) for r in results}) == len(results) > 3


def test_a_changed_text_between_the_detectors_is_an_error_once_not_a_lost_call(caplog) -> None:
    """SGLang passing on a changed normal text (a strip, say) must not lose calls silently."""
    import logging

    case = next(c for c in CASES if c.id == "preamble_then_call")
    rp = ReasoningParser(NAME, request=request_for(case), tool_call_parser_active=True)
    fp = FunctionCallParser([Tool(**WEATHER)], NAME)
    before = links.LOST["changed"]
    calls = []
    with caplog.at_level(logging.ERROR, logger="sglang_ext"):
        for piece in ("<|channel|>commentary<|message|>Checking the weather. ",
                      case.text.split("<|end|>", 2)[-1]):
            _, normal = rp.parse_stream_chunk(piece)
            _, items = fp.parse_stream_chunk(normal.strip())
            calls += [i.name for i in items if i.name]
    assert calls == ["get_weather"]
    assert links.LOST["changed"] == before + 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) <= 1 and all("changed the normal text" in r.getMessage()
                                    for r in errors)


def test_a_tool_detector_without_its_link_says_so_once(caplog) -> None:
    """harmony-ext is the reasoning parser, yet the text comes without the link."""
    import logging

    case = next(c for c in CASES if c.id == "call_first")
    before = links.LOST["missing"]
    with caplog.at_level(logging.ERROR, logger="sglang_ext"):
        for _ in range(2):
            fp = FunctionCallParser([Tool(**WEATHER)], NAME)
            request_context.update(link=None)
            _, items = fp.parse_stream_chunk(case.text)
            assert [(i.name, i.parameters) for i in items] == [PARIS_CALL]
    assert links.LOST["missing"] == before + 2
    assert sum("without its link" in r.getMessage() for r in caplog.records) <= 1


def test_without_the_request_hook_calls_are_filtered_by_the_tool_detector(pieces) -> None:
    """A reasoning parser built without the request (tools unknown) still gives declared calls."""
    case = next(c for c in CASES if c.id == "two_calls")
    undeclared = case.text.replace("get_weather", "delete_files", 1)
    rp = ReasoningParser(NAME, tool_call_parser_active=True)  # no request: unbound
    fp = FunctionCallParser([Tool(**WEATHER)], NAME)
    calls = []
    for piece in [*pieces(undeclared), None]:
        if piece is None:
            _, normal = rp.parse_stream_end()
            _, items = fp.parse_stream_end()
        else:
            _, normal = rp.parse_stream_chunk(piece)
            _, items = fp.parse_stream_chunk(normal)
        calls += [(i.tool_index, i.name) for i in items if i.name]
    assert calls == [(0, "get_weather")]


# -- tool_choice required / named: SGLang's Harmony structural tag --------------------------


@pytest.mark.parametrize("tool_choice", ["required", {"type": "function",
                                                      "function": {"name": "get_weather"}}])
def test_tool_choice_uses_sglangs_harmony_structural_tag(tool_choice: Any) -> None:
    from sglang.srt.entrypoints.openai.protocol import ToolChoice

    choice = tool_choice if isinstance(tool_choice, str) else ToolChoice(**tool_choice)
    tools = [Tool(**WEATHER)]
    ours = FunctionCallParser(tools, NAME, tool_choice=choice)
    builtin = FunctionCallParser(tools, "gpt-oss", tool_choice=choice)
    assert ours.detector.get_structural_tag_name() == "harmony"
    assert ours.owns_tool_format()
    got = ours.get_structure_constraint(choice)
    assert got is not None and got[0] == "structural_tag"
    assert got[1].model_dump() == builtin.get_structure_constraint(choice)[1].model_dump()


def test_outputs_the_harmony_grammar_allows_are_parsed_as_calls() -> None:
    import xgrammar
    from xgrammar.testing import _is_grammar_accept_string

    tools = [Tool(**WEATHER)]
    tag = FunctionCallParser(tools, NAME).get_structure_constraint("required")[1]
    grammar = xgrammar.Grammar.from_structural_tag(json.dumps(tag.model_dump(by_alias=True)))
    for case in CASES:
        if case.request.get("tool_choice") != "required":
            continue
        suffix = case.text.removeprefix(case.text[: case.text.index("<|end|>") + 7])
        assert _is_grammar_accept_string(grammar, suffix), suffix
        assert chain_nonstream(case, NAME)["calls"] == [("get_weather", '{"city":"Paris"}')]


# -- SGLang's real OpenAIServingChat, only the model scripted -------------------------------


@pytest.mark.parametrize("case", ALL)
def test_served_by_sglang_with_harmony_ext(sglang_chat, case: Case, pieces) -> None:
    want = case.expected()
    token_pieces = pieces(case.text)
    nonstream = served(sglang_chat, case, NAME, None, stream=False)
    streams = [served(sglang_chat, case, NAME, deltas, stream=True)
               for deltas in list(token_chunkings(token_pieces, seeds=2))[1:]]
    assert nonstream == want
    for got in streams:
        assert got == want


@pytest.mark.parametrize("options", [{"separate_reasoning": False}, {"no_reasoning_parser": True}])
@pytest.mark.parametrize("stream", [False, True])
def test_served_without_our_reasoning_parser_in_the_chain(sglang_chat, pieces, options,
                                                          stream: bool) -> None:
    """The tool detector alone (raw text): calls and content right, no reasoning as content."""
    case = next(c for c in CASES if c.id == "preamble_then_call")
    options = dict(options)
    reasoning_parser = None if options.pop("no_reasoning_parser", False) else NAME
    result = sglang_chat(pieces(case.text), stream=stream, tools=case.tool_list,
                         finish={"type": "stop", "matched": 200012}, tool_parser=NAME,
                         reasoning_parser=reasoning_parser, **options)
    if stream:
        got = result.joined()
        calls = [(c["name"], c["arguments"]) for c in got["tool_calls"]]
        content, finish = got["content"], got["finish_reason"]
    else:
        message = result.body["choices"][0]["message"]
        calls = [(c["function"]["name"], c["function"]["arguments"])
                 for c in message["tool_calls"]]
        content, finish = message["content"], result.body["choices"][0]["finish_reason"]
    assert calls == [("get_weather", '{"city":"Paris"}')]
    assert content == "Checking the weather."
    assert finish == "tool_calls"


SERVING_CHAT_LOGGER = "sglang.srt.entrypoints.openai.serving_chat"
NO_CALL_WARNING = "no complete call parsed"
"""SGLang's warning for a reply its tool detector said held a call that it then did not parse
(``OpenAIServingChat._process_tool_calls``, 0.5.22 and 0.5.23)."""
NO_CALL_TEXT = ("<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final"
                "<|message|>Hi.")
"""A reply without a call: chain of thought, then the answer ``Hi.``."""


@pytest.fixture
def serving_warnings() -> Iterator[list[str]]:
    """The messages SGLang's chat serving logs at WARNING or above while the test runs (its
    own logger, whatever SGLang's logging setup did to propagation)."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    sglang_logger = logging.getLogger(SERVING_CHAT_LOGGER)
    handler, level = Keep(logging.WARNING), sglang_logger.level
    sglang_logger.addHandler(handler)
    sglang_logger.setLevel(logging.WARNING)
    try:
        yield messages
    finally:
        sglang_logger.removeHandler(handler)
        sglang_logger.setLevel(level)


def content_calls_finish(result: Any, stream: bool) -> tuple[Any, list[Any], Any]:
    """(content, calls, finish_reason) of a served chat result, streamed or not."""
    if stream:
        got = result.joined()
        return got["content"], got["tool_calls"], got["finish_reason"]
    choice = result.body["choices"][0]
    return choice["message"]["content"], choice["message"].get("tool_calls") or [], (
        choice["finish_reason"])


CHAINS = {"tool_detector_alone": {"reasoning_parser": None},
          "separate_reasoning_false": {"separate_reasoning": False},
          "both_detectors": {}}


@pytest.mark.parametrize("chain", sorted(CHAINS))
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("tools", [[WEATHER], None], ids=["tools", "no_tools"])
def test_a_reply_without_a_call_is_its_answer_and_no_warning(
        sglang_chat, pieces, serving_warnings: list[str], chain: str, stream: bool,
        tools: Any) -> None:
    """A reply without a call, served with harmony-ext's tool detector alone (no reasoning
    parser, or ``separate_reasoning: false``) or with both detectors: its content is the final
    answer, never the chain of thought or the markup, and SGLang logs no "no complete call
    parsed" (``has_tool_call`` says False: there is no call)."""
    result = sglang_chat(pieces(NO_CALL_TEXT), stream=stream, tools=tools, tool_parser=NAME,
                         **{"reasoning_parser": NAME, **CHAINS[chain]})
    alone = chain != "both_detectors"
    # SGLang 0.5.22 never asks a tool detector about a request without tools.
    shown = NO_CALL_TEXT if alone and tools is None and not PARSES_WITHOUT_TOOLS else "Hi."
    assert content_calls_finish(result, stream) == (shown, [], "stop")
    assert [m for m in serving_warnings if NO_CALL_WARNING in m] == []


def test_the_warning_is_seen_where_sglang_logs_it(sglang_chat,
                                                  serving_warnings: list[str]) -> None:
    """The capture above sees SGLang's warning where SGLang logs it: its own ``gpt-oss`` tool
    parser says a reply holds a call when it finds ``<|start|>assistant<|channel|>commentary``,
    and then parses no call from arguments cut short."""
    text = ('<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json'
            '<|message|>{"city":')
    result = sglang_chat([text], stream=False, tools=[WEATHER], tool_parser="gpt-oss",
                         reasoning_parser=None)
    assert result.body["choices"][0]["message"].get("tool_calls") in (None, [])
    assert [m for m in serving_warnings if NO_CALL_WARNING in m] == [
        "Tool call marker present but no complete call parsed from gpt-oss output; "
        "dropping the incomplete call"]


# -- a long answer (its cost is recorded on the comparison page, not judged here) -----------


def test_a_long_final_answer_streams_whole() -> None:
    case, deltas, answer = long_answer(40_000)
    got = chain_stream(case, NAME, deltas)
    assert got["content"] == answer and got["reasoning"] == "Short." and got["calls"] == []


def test_results_equal_the_ones_sglang_s_constructors_make(pieces, monkeypatch) -> None:
    from sglang.srt.function_call.core_types import StreamingParseResult

    from sglang_ext import results

    def items(case: Case) -> list[Any]:
        request = request_for(case)
        rp = ReasoningParser(NAME, stream_reasoning=True, request=request,
                             tool_call_parser_active=True)
        fp = FunctionCallParser(sglang_tools(case) or [], NAME)
        detector = fp.detector
        seen = []
        for delta in pieces(case.text):
            _, normal = rp.parse_stream_chunk(delta)
            result = detector.parse_streaming_increment(normal, fp.tools)
            seen.append((type(result), result.model_fields_set, result.model_dump(),
                         [(i.model_fields_set, i.model_dump_json()) for i in result.calls]))
        return seen

    cases = [c for c in CASES if c.tools]
    built = [items(c) for c in cases]
    assert any(any(step[3] for step in run) for run in built)  # calls were streamed
    # SGLang's own constructor (the calls' items by ToolCallItem's, from their fields): the same
    monkeypatch.setattr(results, "result", lambda fields: StreamingParseResult(**fields))
    assert [items(c) for c in cases] == built


@pytest.mark.parametrize("case_id", ["call_after_analysis", "two_calls"])
def test_a_finished_choice_leaves_nothing_for_the_cyclic_collector(case_id, pieces) -> None:
    """The detectors, their link and its turn hold no cycle once the stream ended (the tool
    detector is the link's owner by a weak reference): a server's finished requests are
    freed at once."""
    case = next(c for c in CASES if c.id == case_id)

    def run() -> None:
        chain_stream(case, NAME, pieces(case.text))
        request_context.update(link=None)  # the task ends: its context lets the last link go

    assert cyclic_garbage(run) == 0


def test_a_request_holds_only_its_current_calls_arguments(pieces) -> None:
    """SGLang's top-up reads only the last entry of prev_tool_call_arr/streamed_args_for_tool:
    earlier calls' arguments are let go, the last call's stay (so the top-up sends nothing)."""
    case = next(c for c in CASES if c.id == "two_calls")
    request = request_for(case)
    rp = ReasoningParser(NAME, stream_reasoning=True, request=request,
                         tool_call_parser_active=True)
    fp = FunctionCallParser(sglang_tools(case) or [], NAME)
    streamed: dict[int, str] = {}
    for delta in pieces(case.text):
        _, normal = rp.parse_stream_chunk(delta)
        _, items = fp.parse_stream_chunk(normal)
        for item in items:
            streamed[item.tool_index] = streamed.get(item.tool_index, "") + item.parameters
    rp.parse_stream_end()
    fp.parse_stream_end()
    detector = fp.detector
    assert streamed == {0: '{"city":"Paris"}', 1: '{"city":"Rome"}'}
    assert [e["name"] for e in detector.prev_tool_call_arr] == ["get_weather", "get_weather"]
    assert [e["arguments"] for e in detector.prev_tool_call_arr] == ["", '{"city":"Rome"}']
    assert detector.streamed_args_for_tool == ["", '{"city":"Rome"}']
