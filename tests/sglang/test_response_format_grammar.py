"""A ``response_format`` grammar on SGLang holds the answer's body and nothing before it
(contract section 10), walked through SGLang's own grammar path token by token.

SGLang starts a request's grammar where its reasoning parser says the reasoning ends. Its
``gpt-oss`` parser says ``<|end|>``: the grammar then masks the final header after an analysis
message or a preamble, and never starts when the answer comes first (sgl-project/sglang#31019).
With harmony-ext's reasoning parser a request with a ``response_format`` selects the final
header's end instead (``sglang_ext/prompt.py``, ``start_grammar_at_answer``).

What is real here: the chat request goes through SGLang's ``OpenAIServingChat`` and
``TokenizerManager`` (the model scripted, :mod:`harmony_ext_testing.sglang_serving`), and the
sampling parameters it sends the scheduler are the ones used; the scheduler side is SGLang's
``Scheduler.init_tokenizer`` (which reads the reasoning end from the parser named), its
``GrammarManager`` with the xgrammar backend, its ``Req``, and per token what its batch does
(``allocate_vocab_mask``, ``fill_vocab_mask_batched``, the sampler's choice only among the
mask's tokens, ``accept_token``). The scheduler object those two methods run on holds only the
attributes they read. Token ids from the o200k_harmony vocabulary harmony-ext ships, expected
prefixes written by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from harmony_plugins.vocab.o200k import tiktoken_encoding

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
          "additionalProperties": False}
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": SCHEMA}}
ANALYSIS = "<|channel|>analysis<|message|>Need JSON.<|end|>"
PREAMBLE = "<|channel|>commentary<|message|>Checking.<|end|>"
FINAL = "<|start|>assistant<|channel|>final<|message|>"
GOOD = '{"city":"Paris"}<|return|>'

Walk = Callable[[str], tuple[str, str | None]]


def scheduler_side(model_dir: Path, parser: str, sampling_params: Any,
                   require_reasoning: bool) -> Walk:
    """``walk(output)``: the request's grammar built by SGLang's scheduler side, fed
    ``output``'s ids one by one; (the text accepted, the token refused or None)."""
    from sglang.srt.constrained.base_grammar_backend import GrammarRow
    from sglang.srt.constrained.grammar_manager import GrammarManager
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.runtime_context import SpawnRanks, publish
    from sglang.srt.server_args import ServerArgs

    args = ServerArgs(model_path=str(model_dir), tool_call_parser=parser,
                      reasoning_parser=parser, device="cpu", grammar_backend="xgrammar")
    publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0))
    model_config = SimpleNamespace(is_generation=True, is_multimodal=False, think_end_ids=None,
                                   vocab_size=201088, hf_eos_token_id={200002})
    scheduler = SimpleNamespace(
        server_args=args, model_config=model_config, skip_tokenizer_init=False,
        dp_tp_cpu_group=None, pp_group=None,
        dp_tp_group=SimpleNamespace(world_size=1, first_rank=0, is_first_rank=True))
    Scheduler.init_tokenizer(scheduler)  # the reasoning end ids, as the scheduler reads them
    manager = GrammarManager(scheduler)
    enc = tiktoken_encoding()

    def walk(output: str) -> tuple[str, str | None]:
        req = Req("r1", "", [1, 2], sampling_params, require_reasoning=require_reasoning)
        if manager.process_req_with_grammar(req):  # compiled in the background
            deadline = time.monotonic() + 120
            while not manager.get_ready_grammar_requests():
                assert time.monotonic() < deadline, "the grammar did not compile"
        grammar = req.grammar
        ids = enc.encode(output, allowed_special="all")
        for n, token in enumerate(ids):
            mask = grammar.allocate_vocab_mask(vocab_size=201088, batch_size=1, device="cpu")
            if not grammar.finished and not grammar.is_terminated():
                grammar.fill_vocab_mask_batched([GrammarRow(row=0, grammar=grammar)], mask)
            if not (int(mask[0, token // 32]) >> (token % 32)) & 1:
                return enc.decode(ids[:n]), enc.decode([token])
            grammar.accept_token(token)
        return output, None

    return walk


@pytest.fixture(scope="module", params=["harmony-ext", "gpt-oss"])
def walk(request: pytest.FixtureRequest, sglang_chat: Any, gpt_oss_model_dir: Path
         ) -> Iterator[tuple[str, Walk, dict[str, Any]]]:
    """(the parser, its walk, the custom params the chat request sent the scheduler)."""
    from sglang.srt.runtime_context import restore_context, snapshot_context

    parser = request.param
    sent = sglang_chat([FINAL.removeprefix("<|start|>assistant") + GOOD], stream=False,
                       tool_parser=parser, reasoning_parser=parser,
                       response_format=FORMAT).requests[0]
    saved = snapshot_context()  # the scheduler's arguments, published here, are put back after
    try:
        yield parser, scheduler_side(gpt_oss_model_dir, parser, sent.sampling_params,
                                     sent.require_reasoning), sent.sampling_params.custom_params
    finally:
        restore_context(saved)


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


def test_a_final_header_with_a_content_type_is_not_gated(walk) -> None:
    """A documented limit (docs/sglang.md): the end harmony-ext selects is the header without a
    content type, so ``<|constrain|>json`` before ``<|message|>`` leaves that body free, as
    SGLang's own leaves every answer written first."""
    _, run, _ = walk
    output = "<|channel|>final <|constrain|>json<|message|>Paris.<|return|>"
    assert run(output) == (output, None)
