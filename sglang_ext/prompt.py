"""Prompt side on SGLang: a gpt-oss conversation is rendered as Harmony, not by the chat template.

SGLang renders chat prompts with the model's Hugging Face chat template, which for gpt-oss loses
the analysis sent back, renders a preamble as analysis and re-serialises call arguments, so the
model reads a turn it never wrote (contract section 8). :func:`apply_template` wraps
``OpenAIServingChat._apply_jinja_template`` (the last point where the client's messages are as
sent) and, with a ``harmony-ext`` parser on a gpt-oss model, hands the prompt ids of the core's
rendering (:func:`harmony_plugins.chat_prompt_ids`, what ``harmony-ext render --ids`` prints)
to SGLang instead. The tools listed are the request's own: SGLang passes its template only the
function a named ``tool_choice`` names, where the contract (section 8) lists every declared
function, as vLLM does. What that rendering cannot represent goes to SGLang's own path, with
one log line per reason; ``HARMONY_EXT_CHAT_TEMPLATE=1`` keeps SGLang's rendering for every
request. Whoever renders, the request gets Harmony's stop ids and the generation guard's mark
(:func:`stop_at_harmony_stops`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from typing import Any

from harmony_plugins import (
    Guard,
    MissingExtra,
    NotRenderable,
    chat_prompt_ids,
    guarded,
    harmony,
    switch,
)
from harmony_plugins.adapter_support.once import Once
from harmony_plugins.adapter_support.vocabulary import load_openai_harmony

from .hook_arguments import argument, bound
from .names import NAME

logger = logging.getLogger("sglang_ext")

TARGET = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat._apply_jinja_template"
HANDLE = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat.handle_request"
OPT_OUT = "HARMONY_EXT_CHAT_TEMPLATE"

Unsupported = NotRenderable
once = Once(logger)


def selected(serving: Any) -> bool:
    """A harmony-ext parser is selected and the model is gpt-oss."""
    return (NAME in (getattr(serving, "tool_call_parser", None),
                     getattr(serving, "reasoning_parser", None))
            and getattr(serving, "is_gpt_oss", False) is True)


def active(serving: Any) -> bool:
    """:func:`selected`, and the user did not opt out of harmony-ext's rendering."""
    return selected(serving) and not switch(os.environ.get(OPT_OUT))


def stop_at_harmony_stops(request: Any) -> None:
    """Merge Harmony's stop ids into a chat request's own (contract section 10), unless it
    asked for exactly its tokens (``ignore_eos``): SGLang takes a model's stop ids from its
    generation config alone, and one without ``<|call|>`` lets the model write the tool's
    result itself. (Its Responses API adds them itself.) Where the core guards the request
    (:func:`harmony_plugins.guarded`), it is also marked for the generation guard
    (:mod:`sglang_ext.guard`), which ends it at a forged turn."""
    ignore_eos = getattr(request, "ignore_eos", False)
    if not ignore_eos:
        request.stop_token_ids = harmony.with_stop_ids(request.stop_token_ids)
    if guarded(ignore_eos, os.environ):
        request.custom_params = Guard.marked(getattr(request, "custom_params", None))


def apply_template(original: Callable[..., Any], self: Any, *args: Any, **kwargs: Any) -> Any:
    """AROUND hook on ``OpenAIServingChat._apply_jinja_template``."""
    try:
        call = bound(TARGET, (self, *args), kwargs)
        request = call.arguments["request"]
        is_multimodal = call.arguments.get("is_multimodal", False)
    except (TypeError, KeyError):
        if active(self):
            once("signature", logging.INFO,
                 "harmony-ext: unknown _apply_jinja_template signature; gpt-oss "
                 "prompts are rendered by SGLang's chat template")
        return original(self, *args, **kwargs)
    if selected(self):  # whoever renders the prompt
        stop_at_harmony_stops(request)
    result = render(original, self, request, is_multimodal, *args, **kwargs)
    start_grammar_at_answer(self, request, result)
    return result


def render(original: Callable[..., Any], self: Any, request: Any, is_multimodal: bool, /,
           *args: Any, **kwargs: Any) -> Any:
    """The prompt: the core's rendering where :func:`active`, else SGLang's own
    (``original`` called as it was)."""
    if not active(self):
        return original(self, *args, **kwargs)
    try:
        if getattr(self, "chat_encoding_spec", None) is not None or getattr(
                self, "_encoding_adapter", None) is not None:
            raise Unsupported("SGLang uses its own chat encoder for this model")
        if is_multimodal:
            raise Unsupported("the model is served as multimodal")
        ids = render_request(request)
    except Unsupported as e:
        once(f"fallback:{e.kind}", logging.INFO,
             "harmony-ext: %s; such requests are rendered by SGLang's chat "
             "template instead of openai_harmony", e)
        return original(self, *args, **kwargs)
    once("active", logging.INFO,
         "harmony-ext: rendering gpt-oss chat prompts itself with openai_harmony "
         "(chain of thought, preamble, calls in the order the model wrote them; arguments "
         "verbatim), not with the chat template; set %s=1 to keep the template", OPT_OUT)
    from sglang.srt.entrypoints.openai.protocol import MessageProcessingResult

    return MessageProcessingResult(prompt="", prompt_ids=ids, image_data=None, audio_data=None,
                                   video_data=None, modalities=[], stop=request.stop)


GRAMMAR_FORMATS = ("json_schema", "json_object", "structural_tag")
"""``response_format`` types SGLang turns into a grammar."""


def start_grammar_at_answer(serving: Any, request: Any, result: Any) -> None:
    """A ``response_format`` grammar starts at the answer's body (contract section 10).

    SGLang starts a request's grammar at the reasoning parser's end, ``<|end|>`` for gpt-oss
    (ours as SGLang's): after an analysis message or a preamble the grammar masks the final
    header, and an answer written first is never constrained (sgl-project/sglang#31019). With
    our reasoning parser, a request with a ``response_format`` grammar selects the end of the
    final header (:data:`harmony.ANSWER_START`, which the detector lists as selectable) through
    SGLang's own per-request reasoning end, encoded by the tokenizer the scheduler encodes the
    list with. That end gates a ``structural_tag`` format (a final header written with a
    content type does not end it); a JSON format's grammar is the core's, applied from the
    first token (:mod:`sglang_ext.grammar`), and the end only bounds the reasoning tokens
    SGLang 0.5.23 counts."""
    if (getattr(serving, "reasoning_parser", None) != NAME
            or getattr(getattr(request, "response_format", None), "type", None)
            not in GRAMMAR_FORMATS
            or not hasattr(result, "reasoning_end_token_ids")
            or result.reasoning_end_token_ids is not None):
        return
    tokenizer = serving.tokenizer_manager.tokenizer
    ids = tokenizer.encode(harmony.ANSWER_START, add_special_tokens=False)
    result.reasoning_end_token_ids = list(ids)


async def carry_reasoning(original: Callable[..., Any], self: Any, request: Any, *args: Any,
                          **kwargs: Any) -> Any:
    """AROUND hook on ``OpenAIServingChat.handle_request``: keep a message's ``reasoning``.

    SGLang's message model knows ``reasoning_content`` only and drops a ``reasoning`` key while
    validating the request, before any plugin code runs; the raw body still has it.
    """
    raw_request = argument(HANDLE, "raw_request", (self, request, *args), kwargs)
    if raw_request is not None and active(self):
        try:
            await copy_reasoning(request, raw_request)
        except Exception as e:  # an unreadable body: the request goes on as SGLang read it
            once("raw body", logging.INFO,
                 "harmony-ext: cannot read the raw chat request (%s: %s); a "
                 "message's 'reasoning' key is dropped by SGLang", type(e).__name__, e)
    return await original(self, request, *args, **kwargs)


async def copy_reasoning(request: Any, raw_request: Any) -> None:
    """Set ``reasoning_content`` from the raw body's ``reasoning`` where SGLang dropped it."""
    messages = getattr(request, "messages", None) or []
    if not any(getattr(m, "role", None) == "assistant"
               and not getattr(m, "reasoning_content", None) for m in messages):
        return
    body = await raw_request.body()
    if b'"reasoning"' not in body:
        return
    raw_messages = json.loads(body).get("messages")
    if not isinstance(raw_messages, list) or len(raw_messages) != len(messages):
        return
    for message, raw in zip(messages, raw_messages, strict=True):
        reasoning = raw.get("reasoning") if isinstance(raw, dict) else None
        if (getattr(message, "role", None) == "assistant" and isinstance(reasoning, str)
                and reasoning and not getattr(message, "reasoning_content", None)):
            message.reasoning_content = reasoning


def render_request(request: Any) -> list[int]:
    """Prompt token ids for a ``ChatCompletionRequest`` (or a dict of one): the core's."""
    _encoding_ready()
    try:
        return chat_prompt_ids(request)
    except MissingExtra as e:
        raise Unsupported(str(e), kind="encoding") from None


_ready = False


def _encoding_ready() -> None:
    """openai-harmony 0.0.8 (SGLang's) downloads its vocabulary: offline, write it once."""
    global _ready
    if not _ready:
        _ready = True
        load_openai_harmony(logger)
