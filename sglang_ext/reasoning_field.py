"""SGLang's chat responses carry ``reasoning`` beside ``reasoning_content``, equal to it.

vLLM's chat messages and deltas carry the chain of thought as ``reasoning``, the field OpenAI's
gpt-oss compatibility check reads; SGLang's carry it as ``reasoning_content`` only, so a client
written for one engine finds nothing on the other. With harmony-ext's reasoning parser
selected, two hooks add the other name, with the same value, where SGLang writes its own:

* AFTER ``sse_utils.build_sse_content`` (HookRegistry puts the wrapper wherever SGLang imported
  the function, its chat serving included): a chunk built with reasoning text gets
  ``delta.reasoning`` equal to its ``delta.reasoning_content``;
* AFTER ``OpenAIServingChat.handle_request``, the chat completions route's (and
  ``/invocations``'): a whole ``ChatCompletionResponse`` is sent as the same JSON (SGLang's
  route serialises it the same way) with ``message.reasoning`` equal to each choice's
  ``message.reasoning_content``. SGLang's other callers of its chat serving (``/v1/messages``)
  never see it.

The hooks read whether harmony-ext is the reasoning parser when they run; with any other, or
without the plugin, SGLang's responses are its own. No SGLang import at module level: the
plugin lists these hooks before SGLang is checked.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable
from typing import Any

from .hook_arguments import argument
from .names import NAME, selected_parser

CHUNK = "sglang.srt.entrypoints.openai.sse_utils.build_sse_content"
REPLY = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat.handle_request"
FIELD = "reasoning"
SGLANG_FIELD = "reasoning_content"
DATA = "data: "


def chunk_with_reasoning(result: Any, *args: Any, **kwargs: Any) -> str | None:
    """AFTER ``build_sse_content``: the chunk with ``delta.reasoning``, where it was built with
    reasoning text and harmony-ext is the reasoning parser (None: SGLang's chunk as it is)."""
    reasoning = argument(CHUNK, SGLANG_FIELD, args, kwargs)
    if (not isinstance(reasoning, str) or not isinstance(result, str)
            or not result.startswith(DATA) or selected_parser("reasoning_parser") != NAME):
        return None
    chunk = json.loads(result[len(DATA):])
    for choice in chunk.get("choices") or ():
        delta = choice.get("delta")
        if isinstance(delta, dict) and SGLANG_FIELD in delta:
            delta[FIELD] = delta[SGLANG_FIELD]
    return f"{DATA}{json.dumps(chunk, ensure_ascii=False, separators=(',', ':'))}\n\n"


def reply_with_reasoning(result: Any, *args: Any, **kwargs: Any) -> Awaitable[Any] | None:
    """AFTER ``OpenAIServingChat.handle_request`` (a coroutine function: ``result`` is the
    coroutine): where harmony-ext is the serving's reasoning parser, a coroutine that awaits it
    and gives a whole response ``message.reasoning``; None for any other serving."""
    serving = args[0] if args else None
    if getattr(serving, "reasoning_parser", None) != NAME or not inspect.isawaitable(result):
        return None
    return _whole(result)


async def _whole(pending: Awaitable[Any]) -> Any:
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionResponse
    from starlette.responses import Response

    response = await pending
    if not isinstance(response, ChatCompletionResponse):  # a stream, or an error
        return response
    data = json.loads(response.model_dump_json(by_alias=True))
    for choice in data.get("choices") or ():
        message = choice.get("message")
        if isinstance(message, dict):
            message[FIELD] = message.get(SGLANG_FIELD)
    return Response(content=json.dumps(data, ensure_ascii=False), media_type="application/json")


def hook_points() -> list[tuple[str, Any, str]]:
    """(target, hook, kind) of each hook this module installs."""
    return [(CHUNK, chunk_with_reasoning, "AFTER"), (REPLY, reply_with_reasoning, "AFTER")]


def problem() -> str | None:
    """Why the hooks cannot add the field on this SGLang, or None."""
    import pkgutil

    try:
        build = pkgutil.resolve_name(CHUNK)
        handle = pkgutil.resolve_name(REPLY)
    except Exception as e:
        return f"{CHUNK} or {REPLY} not found ({type(e).__name__}: {e})"
    if SGLANG_FIELD not in inspect.signature(inspect.unwrap(build)).parameters:
        return f"{CHUNK} takes no {SGLANG_FIELD}"
    if not inspect.iscoroutinefunction(inspect.unwrap(handle)):
        return f"{REPLY} is not a coroutine function"
    return None
