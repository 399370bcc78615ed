"""A ``response_format`` grammar on SGLang holds the answer's body and nothing before it
(contract section 10), walked through SGLang's own grammar path token by token.

SGLang starts a request's grammar where its reasoning parser says the reasoning ends. Its
``gpt-oss`` parser says ``<|end|>``: the grammar then masks the final header after an analysis
message or a preamble, and never starts when the answer comes first (sgl-project/sglang#31019).
With harmony-ext's reasoning parser a request with a JSON ``response_format`` gets the core's
grammar of a turn from its first token (``sglang_ext/grammar.py``): messages before the answer
free, the final header in any of its spellings, then the body the schema holds; the request
still selects the final header's end as its reasoning end (``sglang_ext/prompt.py``,
``start_grammar_at_answer``), which SGLang counts reasoning tokens up to.

What is real here: the chat request goes through SGLang's ``OpenAIServingChat`` and
``TokenizerManager`` (the model scripted, :mod:`harmony_ext_testing.sglang_serving`), and the
sampling parameters it sends the scheduler are the ones used; the scheduler side is SGLang's
own grammar path (:mod:`harmony_ext_testing.sglang_grammar`: its ``GrammarManager`` with
xgrammar, its ``Req``, walked per token as its batch does, on a scheduler namespace holding only
the attributes read). Token ids from the o200k_harmony vocabulary harmony-ext ships, expected
prefixes written by hand.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.sglang_grammar import grammar_walker

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA}}
ANALYSIS = "<|channel|>analysis<|message|>Need JSON.<|end|>"
PREAMBLE = "<|channel|>commentary<|message|>Checking.<|end|>"
FINAL = "<|start|>assistant<|channel|>final<|message|>"
GOOD = '{"city":"Paris"}<|return|>'

Walk = Callable[[str], tuple[str, str | None]]


@pytest.fixture(scope="module", params=["harmony-ext", "gpt-oss"])
def walk(request: pytest.FixtureRequest, sglang_chat: Any, gpt_oss_model_dir: Path
         ) -> Iterator[tuple[str, Walk, dict[str, Any]]]:
    """(the parser, its walk, the custom params the chat request sent the scheduler)."""
    parser = request.param
    sent = sglang_chat([FINAL.removeprefix("<|start|>assistant") + GOOD], stream=False,
                       tool_parser=parser, reasoning_parser=parser,
                       response_format=FORMAT).requests[0]
    walk = grammar_walker(gpt_oss_model_dir, parser)
    yield (parser, functools.partial(walk, sent.sampling_params, sent.require_reasoning),
           sent.sampling_params.custom_params)


def test_harmony_ext_selects_the_final_header_as_the_reasoning_end(walk) -> None:
    parser, _, custom_params = walk
    selected = (custom_params or {}).get("__sglang_reasoning_end_token_ids")
    # <|channel|>, "final", <|message|>: o200k_harmony's ids (tiktoken's, not ours)
    assert selected == ([200005, 17196, 200008] if parser == "harmony-ext" else None)


def test_reasoning_and_the_final_header_stay_free_and_a_valid_body_passes(walk) -> None:
    parser, run, _ = walk
    for before in (ANALYSIS, PREAMBLE, ANALYSIS + "<|start|>assistant" + PREAMBLE):
        output = before + FINAL + GOOD
        if parser == "harmony-ext":
            assert run(output) == (output, None)
        else:  # SGLang's own: the grammar starts after <|end|> and masks the final header
            assert run(output) == (before.split("<|end|>")[0] + "<|end|>", "<|start|>")
    first = FINAL.removeprefix("<|start|>assistant") + GOOD  # the answer with nothing before it
    assert run(first) == (first, None)


def test_a_body_the_schema_refuses_is_refused_with_or_without_reasoning(walk) -> None:
    parser, run, _ = walk
    alone = "<|channel|>final<|message|>Paris.<|return|>"
    after_reasoning = ANALYSIS + FINAL + '{"town":"Paris"}<|return|>'
    if parser == "harmony-ext":
        assert run(alone) == ("<|channel|>final<|message|>", "Paris")
        assert run(after_reasoning) == (ANALYSIS + FINAL + '{"', "town")
    else:  # never constrained when the answer comes first; refused at the header after one
        assert run(alone) == (alone, None)
        assert run(after_reasoning) == (ANALYSIS, "<|start|>")


def test_a_final_header_with_a_content_type_starts_the_grammar(walk) -> None:
    """harmony-ext's grammar admits the final header in its three spellings, the body held
    after each; SGLang's own leaves every answer written first free."""
    parser, run, _ = walk
    for header in ("<|channel|>final <|constrain|>json<|message|>",
                   "<|channel|>final json<|message|>"):
        output = ANALYSIS + "<|start|>assistant" + header + "Paris.<|return|>"
        if parser == "harmony-ext":
            assert run(output) == (ANALYSIS + "<|start|>assistant" + header, "Paris")
        else:
            assert run(output) == (ANALYSIS, "<|start|>")
        assert run(header + "Paris.<|return|>") == (
            (header, "Paris") if parser == "harmony-ext" else (header + "Paris.<|return|>", None))


@pytest.fixture(scope="module", params=["harmony-ext", "gpt-oss"])
def object_walk(request: pytest.FixtureRequest, sglang_chat: Any, gpt_oss_model_dir: Path
                ) -> Iterator[tuple[str, Walk, dict[str, Any]]]:
    """The same with ``response_format`` ``json_object``: (the parser, its walk, what the chat
    serving answered)."""
    parser = request.param
    answer = FINAL.removeprefix("<|start|>assistant") + '{"any": [1]}'
    result = sglang_chat([answer], stream=False, tool_parser=parser, reasoning_parser=parser,
                         response_format={"type": "json_object"})
    sent = result.requests[0]
    walk = grammar_walker(gpt_oss_model_dir, parser)
    yield (parser, functools.partial(walk, sent.sampling_params, sent.require_reasoning),
           result.body["choices"][0]["message"])


def test_a_json_object_format_holds_any_object_as_the_body_and_nothing_before_it(
        object_walk) -> None:
    """README: ``json_object`` as ``json_schema``: harmony-ext's grammar leaves reasoning, a
    preamble and the final header free and holds the body to a JSON object; SGLang's own (the
    control) masks the final header after any ``<|end|>`` and leaves an answer written first
    free."""
    parser, run, message = object_walk
    assert message["content"] == '{"any": [1]}'
    body = '{"anything": [1, {"nested": true}]}<|return|>'
    for before in (ANALYSIS, PREAMBLE, ANALYSIS + "<|start|>assistant" + PREAMBLE):
        output = before + FINAL + body
        if parser == "harmony-ext":
            assert run(output) == (output, None)
        else:
            assert run(output) == (before.split("<|end|>")[0] + "<|end|>", "<|start|>")
    not_an_object = ANALYSIS + FINAL + "Paris.<|return|>"
    alone = "<|channel|>final<|message|>Paris.<|return|>"
    if parser == "harmony-ext":
        assert run(not_an_object) == (ANALYSIS + FINAL, "Paris")
        assert run(alone) == ("<|channel|>final<|message|>", "Paris")
        for header in ("<|channel|>final json<|message|>",
                       "<|channel|>final <|constrain|>json<|message|>"):
            assert run(header + body) == (header + body, None)
    else:
        assert run(not_an_object) == (ANALYSIS, "<|start|>")
        assert run(alone) == (alone, None)



REFUSED_FORMAT = "structured output (text.format) is not supported with gpt-oss models"
"""SGLang's own answer (HTTP 400) to a Responses request with a JSON ``text.format`` on a
gpt-oss model, SGLang 0.5.22 and 0.5.23 alike."""


@pytest.mark.parametrize("text_format", [
    {"type": "json_schema", "name": "weather", "schema": SCHEMA}, {"type": "json_object"}],
    ids=["json_schema", "json_object"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_the_responses_api_refuses_a_json_text_format_whoever_parses(
        gpt_oss_model_dir: Path, text_format: dict[str, Any], stream: bool) -> None:
    """README's limit: SGLang's Responses API refuses a JSON ``text.format`` on gpt-oss before
    anything is generated, with harmony-ext's parsers as with its own (no grammar of either
    is ever built); the same request without the format (the control) is answered."""
    from tests.sglang import responses_serving as rs

    output = rs.ids_of(ANALYSIS + FINAL + GOOD)
    for parser in ("harmony-ext", "gpt-oss"):
        server = rs.ResponsesServer(gpt_oss_model_dir, parser, parser)
        refused = server.run(output, stream=stream, text={"format": text_format})
        assert (refused.error, refused.sampling) == (REFUSED_FORMAT, [])
        answered = server.run(output, stream=stream)
        assert (answered.error, answered.status) == (None, "completed")
