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
