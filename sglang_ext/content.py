"""The content of a non-streamed reply without a call, where harmony-ext's tool detector runs
alone (no reasoning parser before it, or a request with ``separate_reasoning`` false).

SGLang hands a tool detector's content on only where ``has_tool_call`` said the text holds a
call, and keeps the raw text otherwise: raw Harmony, chain of thought included. Our
``has_tool_call`` says True only for a call (a True without one makes SGLang log "no complete
call parsed" for every such reply), so where the parse's content differs from the text, the
detector leaves it in the task's request context
(:attr:`~sglang_ext.request_context.RequestContext.content`, while a hook here runs) and the two
AROUND hooks here put it in place of the raw text. No SGLang import at module level: the plugin
lists these hooks before SGLang is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import request_context
from .names import NAME

PROCESS_TOOL_CALLS = ("sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat"
                      "._process_tool_calls")
PARSE_NON_STREAM = ("sglang.srt.function_call.function_call_parser.FunctionCallParser"
                    ".parse_non_stream")

def _content_of(original: Callable[..., Any], args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> tuple[Any, list[tuple[str, str]]]:
    """``original``'s result, and what our tool detector's ``has_tool_call`` handed over
    while it ran."""
    slot: list[tuple[str, str]] = []
    with request_context.holding(content=slot):
        return original(*args, **kwargs), slot


def _shown(text: str, slot: list[tuple[str, str]]) -> str | None:
    """The content our detector found for ``text``, if it handed one over."""
    for raw, content in reversed(slot):
        if raw == text:
            return content
    return None


def show_content(original: Callable[..., Any], self: Any, *args: Any, **kwargs: Any) -> Any:
    """AROUND ``OpenAIServingChat._process_tool_calls``: a non-streamed reply without a call
    parsed by our tool detector alone gets the parse's content instead of the raw text.

    SGLang hands a detector's content on only where ``has_tool_call`` said True, and then
    logs "no complete call parsed" if none was; ours says True only for a call, so the
    content of a reply without one (chain of thought and markup dropped) comes this way."""
    if getattr(self, "tool_call_parser", None) != NAME:
        return original(self, *args, **kwargs)
    result, slot = _content_of(original, (self, *args), kwargs)
    if slot and not getattr(result, "tool_calls", True) and hasattr(result, "_replace"):
        content = _shown(result.remaining_text, slot)
        if content is not None:
            return result._replace(remaining_text=content)
    return result


def show_content_parsed(original: Callable[..., Any], self: Any, *args: Any,
                        **kwargs: Any) -> Any:
    """AROUND ``FunctionCallParser.parse_non_stream`` (SGLang's ``/parse_function_call``, a
    script): the same for a parser of ours, which SGLang also answers with the text as it is
    when ``has_tool_call`` says False and no call was parsed (only our detector hands content
    over: another parser's result is left as it is)."""
    result, slot = _content_of(original, (self, *args), kwargs)
    if slot and isinstance(result, tuple) and len(result) == 2 and not result[1]:
        content = _shown(result[0], slot)
        if content is not None:
            return content, result[1]
    return result
