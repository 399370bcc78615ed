"""An Anthropic Messages API response, converted whole, with the core's blocks for calls
(contract section 4).

vLLM and SGLang both convert a chat response to a Messages API one in a method of their own,
each giving a call whose arguments are no JSON object a ``tool_use`` block it cannot fill (vLLM
fails the request, SGLang gives the ``input`` ``{}`` or fails). :func:`converted` runs the
engine's conversion on a copy of the response in which each such call's arguments are ``{}``,
then puts the core's ``text`` block (:func:`harmony_plugins.messages_block`) in place of each of
their ``tool_use`` blocks, found by the call's id, and says ``end_turn`` for ``tool_use`` where
no ``tool_use`` block is left (:func:`harmony_plugins.messages_stop_reason`). The stream's
counterpart is :mod:`harmony_plugins.adapter_support.messages_stream`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harmony_plugins import messages_block, messages_stop_reason

__all__ = ["converted", "text_blocks"]


def text_blocks(response: Any) -> dict[str, dict[str, Any]]:
    """The core's text block for each call of the chat response's first choice that cannot be a
    ``tool_use`` block, by the call's id."""
    choices = getattr(response, "choices", None) or []
    calls = getattr(getattr(choices[0], "message", None), "tool_calls", None) if choices else None
    out = {}
    for call in calls or []:
        function = call.function
        block = messages_block(call.id, function.name or "", function.arguments or "")
        if block["type"] != "tool_use":
            out[call.id] = block
    return out


def converted(convert: Callable[[Any], Any], response: Any,
              text_block: Callable[[Any, dict[str, Any]], Any]) -> Any:
    """``convert(response)`` (the engine's conversion of a chat response, a pydantic model, to
    a Messages API response), with the core's text blocks for the calls that need one;
    ``text_block(block, text)`` makes the engine's block of the core's ``text`` in place of its
    ``tool_use`` ``block``. The response itself is not changed."""
    texts = text_blocks(response)
    if not texts:
        return convert(response)
    copy = response.model_copy(deep=True)
    for call in copy.choices[0].message.tool_calls:
        if call.id in texts:
            call.function.arguments = "{}"
    result = convert(copy)
    result.content = [
        text_block(block, texts[block.id])
        if getattr(block, "type", None) == "tool_use" and getattr(block, "id", None) in texts
        else block for block in result.content]
    result.stop_reason = messages_stop_reason(
        result.stop_reason, sum(getattr(b, "type", None) == "tool_use" for b in result.content))
    return result
