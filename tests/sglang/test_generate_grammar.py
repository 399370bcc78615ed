"""SGLang's native ``/generate`` with a ``json_schema`` (what RL frameworks and scripts call),
through SGLang's own HTTP app, then walked through the grammar its scheduler builds
(contract section 10, issue 50).

The request is posted to SGLang's FastAPI app (``sglang.srt.entrypoints.http_server.app``,
its ``/generate`` route and request model) over httpx's ASGI transport, served by SGLang's real
``TokenizerManager`` with the model scripted (:meth:`ScriptedServer.over_http`); the sampling
parameters and ``require_reasoning`` the scheduler receives are then walked token by token
through SGLang's ``GrammarManager`` and xgrammar (:mod:`harmony_ext_testing.sglang_grammar`).
SGLang's offline ``Engine.generate`` (its own method, over a real ``TokenizerManager`` with the
model scripted: :func:`harmony_ext_testing.sglang_serving.engine_generate`) gets the same.
With ``--reasoning-parser harmony-ext`` the schema holds the final answer's body only (analysis,
a preamble and the final header, in any spelling, stay free), whatever the request's
``require_reasoning``; a prompt that already opened the answer keeps SGLang's grammar. With
SGLang's own ``gpt-oss`` parser the schema holds from the first token (``require_reasoning``
false, the default) or from the first ``<|end|>``.

Prompts, outputs and the expected accepted prefixes and refused tokens are written by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.sglang_grammar import Walk, grammar_walker
from harmony_ext_testing.sglang_serving import engine_generate, shared_server, text_replies

HX = "harmony-ext"
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"},
                                           "temp": {"type": "integer"}},
          "required": ["city", "temp"], "additionalProperties": False}
PROMPT = "<|start|>user<|message|>The weather in Paris, as JSON.<|end|><|start|>assistant"
NEXT = "<|start|>assistant"
THINK = "<|channel|>analysis<|message|>The user wants JSON.<|end|>" + NEXT
PREAMBLE = "<|channel|>commentary<|message|>Writing it.<|end|>" + NEXT
BODY = '{"city":"Paris","temp":20}<|return|>'
HEADERS = ("<|channel|>final<|message|>", "<|channel|>final json<|message|>",
           "<|channel|>final <|constrain|>json<|message|>")

Sent = Callable[[str], tuple[str, str | None]]


@pytest.fixture(scope="module")
def walks(gpt_oss_model_dir: Path) -> dict[str, Walk]:
    return {parser: grammar_walker(gpt_oss_model_dir, parser) for parser in (HX, "gpt-oss")}


@pytest.fixture(scope="module")
def generate(gpt_oss_model_dir: Path, walks: dict[str, Walk]) -> Callable[..., Sent]:
    """``generate(parser, require_reasoning, prompt=PROMPT)``: POST /generate with the schema;
    returns a walk of any output through the grammar the scheduler got."""
    server = shared_server(gpt_oss_model_dir)

    def run(parser: str, require_reasoning: bool, prompt: str = PROMPT) -> Sent:
        body = {"text": prompt, "require_reasoning": require_reasoning,
                "sampling_params": {"json_schema": json.dumps(SCHEMA), "max_new_tokens": 64}}

        async def client(http: Any) -> Any:
            response = await http.post("/generate", json=body)
            assert response.status_code == 200, response.text
            return response.json()

        answer, requests = server.over_http(text_replies([BODY], None), client,
                                            tool_parser=parser, reasoning_parser=parser)
        assert answer["text"]  # what the scripted model wrote, as /generate returns it
        (sent,) = requests
        return lambda output: walks[parser](sent.sampling_params, sent.require_reasoning, output)

    return run


@pytest.mark.parametrize("require_reasoning", [False, True])
def test_harmony_ext_holds_the_body_and_nothing_before_it(generate, require_reasoning) -> None:
    holds_the_body_and_nothing_before_it(generate(HX, require_reasoning))


def holds_the_body_and_nothing_before_it(walk: Sent) -> None:
    """The grammar of an answer alone: analysis, a preamble and the final header free (any
    spelling), the body the schema's; a call, and bare JSON, refused."""
    for header in HEADERS:
        output = THINK + PREAMBLE + header + BODY
        assert walk(output) == (output, None)
        assert walk(THINK + header + '{"town":"Paris"}<|return|>') == (
            THINK + header + '{"', "town")
        assert walk(header + BODY) == (header + BODY, None)  # the answer first
    # no tools on /generate: a call is no message the grammar admits
    call = "<|channel|>commentary to=functions.get_weather json<|message|>{}<|call|>"
    assert walk(THINK + call) == (THINK + "<|channel|>commentary", " to")
    accepted, refused = walk(BODY)  # bare JSON is no Harmony message: its first token refused
    assert accepted == "" and refused and BODY.startswith(refused)


@pytest.fixture(scope="module")
def engine(gpt_oss_model_dir: Path, walks: dict[str, Walk]) -> Callable[..., Sent]:
    """``engine(parser, require_reasoning)``: SGLang's offline ``Engine.generate`` with the
    schema (:func:`engine_generate`: its own method over a real ``TokenizerManager``, the
    model scripted); returns a walk of any output through the grammar the scheduler got."""

    def run(parser: str, require_reasoning: bool) -> Sent:
        answer, requests = engine_generate(
            gpt_oss_model_dir, text_replies([BODY], None), tool_parser=parser,
            reasoning_parser=parser, prompt=PROMPT, require_reasoning=require_reasoning,
            sampling_params={"json_schema": json.dumps(SCHEMA), "max_new_tokens": 64})
        assert answer["text"]  # what the scripted model wrote, as Engine.generate returns it
        (sent,) = requests
        return lambda output: walks[parser](sent.sampling_params, sent.require_reasoning, output)

    return run


@pytest.mark.parametrize("require_reasoning", [False, True])
def test_engine_generate_gets_the_same_grammar(engine, require_reasoning) -> None:
    """The offline engine's requests pass the same tokenizer-manager hook as ``/generate``'s
    (README: ``Engine.generate``'s too); SGLang's own parser, the control, holds the schema
    from the first token or the first ``<|end|>``, as on ``/generate``."""
    holds_the_body_and_nothing_before_it(engine(HX, require_reasoning))
    theirs = engine("gpt-oss", require_reasoning)
    if require_reasoning:
        assert theirs(THINK + HEADERS[0] + BODY) == (THINK.removesuffix(NEXT), "<|start|>")
    else:
        assert theirs(THINK + HEADERS[0] + BODY) == ("", "<|channel|>")


def test_a_prompt_that_opened_the_answer_keeps_sglangs_grammar(generate) -> None:
    walk = generate(HX, False, prompt=PROMPT + HEADERS[0])
    assert walk(BODY) == (BODY, None)
    assert walk('{"town":"Paris"}') == ('{"', "town")


def test_sglangs_own_parser_holds_the_schema_from_the_start_or_the_first_end(generate) -> None:
    """The native path with SGLang's ``gpt-oss`` parser: of analysis, a preamble, the final
    header, a good body and a refused one, only the refused body is as it should be."""
    first = generate("gpt-oss", False)
    assert first(THINK + HEADERS[0] + BODY) == ("", "<|channel|>")
    after_end = generate("gpt-oss", True)
    assert after_end(THINK + PREAMBLE + HEADERS[0] + BODY) == (THINK.removesuffix(NEXT),
                                                               "<|start|>")
    assert after_end(HEADERS[0] + '{"town":"Paris"}<|return|>') == (
        HEADERS[0] + '{"town":"Paris"}<|return|>', None)  # the answer first: nothing holds it
