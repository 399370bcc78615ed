"""SGLang's scheduler-side grammar path, walked token by token as its batch decodes.

A request's grammar is built as SGLang's scheduler builds it: ``Scheduler.init_tokenizer``
(which reads the reasoning end, and the ends a request may select, from the reasoning parser
named), its ``GrammarManager`` with the xgrammar backend (behind ``ReasonerGrammarBackend``
when a reasoning parser is named), its ``Req`` with the sampling parameters and
``require_reasoning`` the scheduler received; then per token what its batch does
(``allocate_vocab_mask``, ``fill_vocab_mask_batched``, the sampler's choice only among the
mask's tokens, ``accept_token``). The scheduler object those two methods run on is a namespace
holding only the attributes they read (the one stand-in): among them the model's end-of-sequence
ids, which xgrammar takes as the tokens a finished grammar may end with. Token ids are the
o200k_harmony vocabulary harmony-ext ships.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

GPT_OSS_EOS = frozenset({200002, 199999, 200012})
"""The end-of-sequence ids a gpt-oss checkpoint's ``generation_config.json`` lists
(``<|return|>``, ``<|endoftext|>``, ``<|call|>``), which SGLang's model config reads."""

Walk = Callable[[Any, bool, str], tuple[str, str | None]]
"""``walk(sampling_params, require_reasoning, output)``: (the text the grammar accepted, the
token it refused or None)."""


def grammar_walker(model_dir: Path, parser: str | None,
                   eos: Collection[int] = GPT_OSS_EOS) -> Walk:
    """A walker over the grammars SGLang's scheduler builds for a server started with
    ``--reasoning-parser parser`` (and the same tool-call parser), ``eos`` the model's
    end-of-sequence ids; its arguments are published only while it builds and walks."""
    from sglang.srt.constrained.base_grammar_backend import GrammarRow
    from sglang.srt.constrained.grammar_manager import GrammarManager
    from sglang.srt.managers.schedule_batch import Req
    from sglang.srt.managers.scheduler import Scheduler
    from sglang.srt.runtime_context import (
        SpawnRanks,
        publish,
        restore_context,
        snapshot_context,
    )
    from sglang.srt.server_args import ServerArgs

    from harmony_plugins.vocab.o200k import tiktoken_encoding

    args = ServerArgs(model_path=str(model_dir), tool_call_parser=parser,
                      reasoning_parser=parser, device="cpu", grammar_backend="xgrammar")

    @contextmanager
    def published() -> Iterator[None]:  # the scheduler's arguments, then the caller's again
        saved = snapshot_context()
        try:
            publish(args, role="scheduler", ranks=SpawnRanks(world_rank=0))
            yield
        finally:
            restore_context(saved)

    with published():
        model_config = SimpleNamespace(is_generation=True, is_multimodal=False,
                                       think_end_ids=None, vocab_size=201088,
                                       hf_eos_token_id=set(eos))
        scheduler = SimpleNamespace(
            server_args=args, model_config=model_config, skip_tokenizer_init=False,
            dp_tp_cpu_group=None, pp_group=None,
            dp_tp_group=SimpleNamespace(world_size=1, first_rank=0, is_first_rank=True))
        Scheduler.init_tokenizer(scheduler)  # the reasoning end ids, as the scheduler reads them
        manager = GrammarManager(scheduler)
    enc = tiktoken_encoding()

    def walk(sampling_params: Any, require_reasoning: bool,
             output: str) -> tuple[str, str | None]:
        req = Req("r1", "", [1, 2], sampling_params, require_reasoning=require_reasoning)
        with published():
            if manager.process_req_with_grammar(req):  # compiled in the background
                deadline = time.monotonic() + 120
                while not manager.get_ready_grammar_requests():
                    assert time.monotonic() < deadline, "the grammar did not compile"
        grammar = req.grammar
        ids = enc.encode(output, allowed_special="all")
        for n, token in enumerate(ids):
            if grammar is not None:
                mask = grammar.allocate_vocab_mask(vocab_size=201088, batch_size=1,
                                                   device="cpu")
                if not grammar.finished and not grammar.is_terminated():
                    grammar.fill_vocab_mask_batched([GrammarRow(row=0, grammar=grammar)], mask)
                if not (int(mask[0, token // 32]) >> (token % 32)) & 1:
                    return enc.decode(ids[:n]), enc.decode([token])
                grammar.accept_token(token)
        return output, None

    return walk
