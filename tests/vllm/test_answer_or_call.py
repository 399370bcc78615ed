"""Tools and a response schema on vLLM (contract section 10), on vLLM's own classes: which
requests harmony-ext's ``adjust_request`` gives the core's grammar for a call or the answer, and
what that grammar admits, walked token by token through xgrammar as vLLM's structured-output
backend compiles it (``GrammarCompiler.compile_structural_tag`` over the tokenizer's
``TokenizerInfo.from_huggingface``, one ``GrammarMatcher`` per request, the request's stop ids
its stop tokens). The server tests
(tests/e2e_vllm/test_tools_with_response_format_server.py) show the same through a real engine;
here every case runs in milliseconds. Scripts and expected verdicts written by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed in this interpreter "
                           "(the vLLM tiers run these)")

import xgrammar as xgr  # noqa: E402
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest  # noqa: E402
from vllm.entrypoints.openai.responses.protocol import ResponsesRequest  # noqa: E402
from vllm.parser.parser_manager import ParserManager  # noqa: E402

from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer  # noqa: E402
from harmony_plugins.vocab.o200k import tiktoken_encoding  # noqa: E402
from vllm_ext import plugin  # noqa: E402

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
           "additionalProperties": False}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"},
                                           "temp": {"type": "integer"}},
          "required": ["city", "temp"], "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA}}


def tool(name: str, strict: bool = False) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": WEATHER,
                                             **({"strict": True} if strict else {})}}


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(write_hf_tokenizer(tmp_path_factory.mktemp("t"))))


def parser(tokenizer):
    plugin.register()
    cls = ParserManager.get_parser(
        tool_parser_name="harmony-ext", reasoning_parser_name="harmony-ext",
        enable_auto_tools=True, model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    return cls(tokenizer, None, model_config=None)


def chat(**kwargs: Any) -> ChatCompletionRequest:
    return ChatCompletionRequest(model="tiny", messages=[{"role": "user", "content": "hi"}],
                                 **kwargs)


def tag_of(request: Any) -> dict[str, Any] | None:
    params = request.structured_outputs
    return json.loads(params.structural_tag) if params and params.structural_tag else None


def ours(tag: dict[str, Any] | None) -> bool:
    """Whether a structural tag is the core's: free messages (a ``star``) first."""
    return tag is not None and tag["format"]["elements"][0]["type"] == "star"


# -- which requests get it ----------------------------------------------------------------------


def test_tools_and_a_schema_with_tool_choice_auto(tokenizer):
    adjusted = parser(tokenizer).adjust_request(chat(tools=[tool("get_weather")],
                                                     response_format=FORMAT))
    tag = tag_of(adjusted)
    assert ours(tag) and adjusted.response_format is None
    begins = {e["begin"] for e in tag["format"]["elements"][1]["elements"]}
    assert "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>" in begins
    assert "<|channel|>final<|message|>" in begins


def test_a_schema_alone_and_tool_choice_none_allow_the_answer_only(tokenizer):
    for request in (chat(response_format=FORMAT),
                    chat(tools=[tool("get_weather")], tool_choice="none",
                         response_format=FORMAT)):
        tag = tag_of(parser(tokenizer).adjust_request(request))
        assert ours(tag)
        assert [e["begin"] for e in tag["format"]["elements"][1]["elements"]] == [
            "<|channel|>final<|message|>", "<|channel|>final json<|message|>",
            "<|channel|>final <|constrain|>json<|message|>"]


OBJECT = {"type": "json_object"}


@pytest.mark.parametrize("tools", [None, [tool("get_weather")]], ids=["no_tools", "a_tool"])
def test_a_json_object_format_gets_it_too(tokenizer, tools):
    """README: JSON schema or JSON object. vLLM's own parsers (the control) keep vLLM's
    adjustments for it: its own format, no tag of ours."""
    adjusted = parser(tokenizer).adjust_request(chat(tools=tools, response_format=OBJECT))
    tag = tag_of(adjusted)
    assert ours(tag) and adjusted.response_format is None
    answers = tag["format"]["elements"][1]["elements"][-3:]
    assert [a["begin"] for a in answers] == [
        "<|channel|>final<|message|>", "<|channel|>final json<|message|>",
        "<|channel|>final <|constrain|>json<|message|>"]
    assert {json.dumps(a["content"]["json_schema"]) for a in answers} == {'{"type": "object"}'}
    own = ParserManager.get_parser(
        tool_parser_name="openai", reasoning_parser_name="openai_gptoss",
        enable_auto_tools=True, model_name="tiny", is_harmony=True, tokenizer=tokenizer)
    kept = own(tokenizer, None, model_config=None).adjust_request(
        chat(tools=tools, response_format=OBJECT))
    assert not ours(tag_of(kept))


def test_the_responses_api_s_json_object_text_format(tokenizer):
    request = ResponsesRequest(model="tiny", input="hi", text={"format": OBJECT})
    adjusted = parser(tokenizer).adjust_request(request)
    assert ours(tag_of(adjusted)) and adjusted.text is None


def test_the_responses_api_s_text_format(tokenizer):
    request = ResponsesRequest(model="tiny", input="hi", tools=[
        {"type": "function", "name": "get_weather", "parameters": WEATHER}],
        text={"format": {"type": "json_schema", "name": "weather", "schema": SCHEMA}})
    adjusted = parser(tokenizer).adjust_request(request)
    assert ours(tag_of(adjusted)) and adjusted.text is None


@pytest.mark.parametrize("request_kwargs", [
    {"tools": [tool("get_weather")], "tool_choice": "required", "response_format": FORMAT},
    {"tools": [tool("get_weather")], "response_format": FORMAT,
     "tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
    {"response_format": {"type": "text"}},
    {"structured_outputs": {"regex": "[a-z]+"}},
    {"tools": [tool("get_weather")]},
])
def test_other_requests_keep_vllm_s_own(tokenizer, request_kwargs):
    """A forced call, no JSON format: vLLM's own adjustments (a structural tag of its own
    where it builds one, never the core's)."""
    assert not ours(tag_of(parser(tokenizer).adjust_request(chat(**request_kwargs))))


def test_the_server_s_parameter_strict_level_holds_every_function(tokenizer):
    from vllm.tool_parsers.tool_strict_level import ToolStrictLevel

    adjusting = parser(tokenizer)
    request = chat(tools=[tool("get_weather")], response_format=FORMAT)
    loose = tag_of(adjusting.adjust_request(request.model_copy(deep=True)))
    assert loose["format"]["elements"][1]["elements"][0]["content"]["json_schema"] == {
        "type": "object"}
    adjusting.tool_strict_level = ToolStrictLevel.PARAMETER
    held = tag_of(adjusting.adjust_request(request.model_copy(deep=True)))
    assert held["format"]["elements"][1]["elements"][0]["content"]["json_schema"] == WEATHER


# -- what it admits, as vLLM's xgrammar backend compiles it -----------------------------------

ANALYSIS = "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant"
PREAMBLE = "<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant"
CALL = "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
BODY = '{"city":"Paris","temp":20}'


@pytest.fixture(scope="module")
def walk(tokenizer):
    """``walk(request, text)``: the index of the first id of ``text`` the request's grammar
    refuses, None when it takes them all and may end there."""
    info = xgr.TokenizerInfo.from_huggingface(tokenizer, vocab_size=201088)
    compiler = xgr.GrammarCompiler(info)
    encoding = tiktoken_encoding()
    adjusting = parser(tokenizer)

    def run(request: Any, text: str) -> int | None:
        adjusted = adjusting.adjust_request(request)
        grammar = compiler.compile_structural_tag(adjusted.structured_outputs.structural_tag)
        # vLLM gives the matcher the request's stop ids (<|return|> and <|call|> here)
        matcher = xgr.GrammarMatcher(grammar, override_stop_tokens=adjusted.stop_token_ids)
        ids = encoding.encode(text, allowed_special="all")
        for index, token in enumerate(ids):
            if not matcher.accept_token(token):
                return index
        assert matcher.is_terminated() or matcher.accept_token(200002)  # it may end there
        return None

    return run


def auto(strict: bool = False, **kwargs: Any) -> ChatCompletionRequest:
    return chat(tools=[tool("get_weather", strict), tool("note")], response_format=FORMAT,
                **kwargs)


ADMITTED = [
    ("reasoning, a preamble, a call", auto(), f'{ANALYSIS}{PREAMBLE}{CALL}{{"city":"Paris"}}'
                                              "<|call|>"),
    ("reasoning, the answer", auto(), f"{ANALYSIS}<|channel|>final<|message|>{BODY}<|return|>"),
    ("analyses and preambles in any order, the answer naming JSON", auto(),
     f"{PREAMBLE}{ANALYSIS}{ANALYSIS}<|channel|>final json<|message|>{BODY}<|return|>"),
    ("the call written as calls are rendered", auto(),
     ' to=functions.note<|channel|>commentary json<|message|>{"any": [1]}<|call|>'),
    ("a strict function, arguments its schema takes", auto(strict=True),
     f'{CALL}{{"city":"Oslo"}}<|call|>'),
    ("a function not strict takes any object", auto(), f'{CALL}{{"town":"Oslo"}}<|call|>'),
    ("the answer closed by <|end|>", auto(), f"<|channel|>final<|message|>{BODY}<|end|>"),
    ("tool_choice none: the answer", auto(tool_choice="none"),
     f"{ANALYSIS}<|channel|>final<|message|>{BODY}<|return|>"),
    ("json_object: any object, after a preamble", chat(response_format=OBJECT),
     f'{ANALYSIS}{PREAMBLE}<|channel|>final <|constrain|>json<|message|>{{"any": [1]}}<|end|>'),
    ("json_object and a tool: a call", chat(tools=[tool("get_weather")], response_format=OBJECT),
     f'{ANALYSIS}{CALL}{{"city":"Paris"}}<|call|>'),
]
REFUSED = [  # (what, request, text, the text up to the first id refused)
    ("a call to an undeclared function", auto(),
     f'{ANALYSIS}<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{{}}',
     f"{ANALYSIS}<|channel|>commentary to=functions.get_time"),
    ("an answer the schema refuses", auto(), '<|channel|>final<|message|>{"town"',
     '<|channel|>final<|message|>{"town'),  # no key of the schema begins so
    ("a strict function, arguments its schema refuses", auto(strict=True),
     f'{CALL}{{"town"', f'{CALL}{{"town'),
    ("tool_choice none: a call", auto(tool_choice="none"), f"{ANALYSIS}{CALL}",
     f"{ANALYSIS}<|channel|>commentary to"),
    ("a second message after the call", auto(),
     f'{CALL}{{"city":"Paris"}}<|end|><|start|>', f'{CALL}{{"city":"Paris"}}<|end|><|start|>'),
    ("text outside any message", auto(), "Sure! The answer.", "Sure"),
    ("json_object: an answer that is no object", chat(response_format=OBJECT),
     f"{ANALYSIS}<|channel|>final<|message|>Paris.<|return|>",
     f"{ANALYSIS}<|channel|>final<|message|>Paris"),
]


@pytest.mark.parametrize(("what", "request_", "text"), ADMITTED, ids=[a[0] for a in ADMITTED])
def test_the_grammar_admits(walk, what, request_, text):
    assert walk(request_.model_copy(deep=True), text) is None


@pytest.mark.parametrize(("what", "request_", "text", "refused_at"), REFUSED,
                         ids=[r[0] for r in REFUSED])
def test_the_grammar_refuses(walk, what, request_, text, refused_at):
    encoding = tiktoken_encoding()
    at = walk(request_.model_copy(deep=True), text)
    assert at is not None
    assert encoding.decode(encoding.encode(text, allowed_special="all")[:at + 1]) == refused_at
