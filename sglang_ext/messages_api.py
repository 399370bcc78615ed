"""SGLang's Anthropic Messages API (``/v1/messages``): a call whose arguments are no JSON
object is shown as text, neither an HTTP error nor an empty ``input`` (contract section 4).

SGLang serves ``/v1/messages`` through its chat serving (our detectors included), then converts
the chat response. ``AnthropicServing._convert_response`` gives a call whose arguments do not
parse the ``input`` ``{}`` (what the model wrote is lost, and the client is told to run the
tool) and fails the request on arguments that parse to anything but an object (a bare string:
HTTP 500); ``_generate_anthropic_stream`` streams them as a ``tool_use`` block's
``partial_json``, which no client can read as the object it must be. With harmony-ext's tool
parser selected, two AROUND hooks put the core's decision (:func:`harmony_plugins.messages_block`)
in SGLang's conversion:

* ``_convert_response``: the response is converted with each such call's arguments replaced by
  ``{}`` (on a copy), then each of their ``tool_use`` blocks (found by the call's id) is
  replaced by the core's ``text`` block, in its place, and ``end_turn`` is said for
  ``tool_use`` where no ``tool_use`` block is left (:func:`harmony_plugins.messages_stop_reason`);
* ``_generate_anthropic_stream``: its events pass through
  :func:`harmony_plugins.adapter_support.messages_stream.shown`, which holds each ``tool_use``
  block until it ends and sends it as it was or as that ``text`` block.

The call's outcome was counted by the parse, as on the chat API. No SGLang import at module
level: the plugin lists these hooks before SGLang is checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harmony_plugins.adapter_support.messages_stream import shown
from harmony_plugins.adapter_support.messages_whole import converted

from .names import NAME

SERVING = "sglang.srt.entrypoints.anthropic.serving.AnthropicServing"
WHOLE = f"{SERVING}._convert_response"
STREAMED = f"{SERVING}._generate_anthropic_stream"
TEXT_BLOCK = "sglang.srt.entrypoints.anthropic.protocol.TextBlock"


def _ours(serving: Any) -> bool:
    """Whether the calls of this Messages serving come from harmony-ext's tool detector."""
    chat = getattr(serving, "openai_serving_chat", None)
    return getattr(chat, "tool_call_parser", None) == NAME


def convert_response(original: Callable[..., Any], self: Any, response: Any, *args: Any,
                     **kwargs: Any) -> Any:
    """AROUND ``AnthropicServing._convert_response``: each call whose arguments are no object
    as the core's ``text`` block, in its place."""
    if not _ours(self):
        return original(self, response, *args, **kwargs)
    import pkgutil

    text_block = pkgutil.resolve_name(TEXT_BLOCK)
    return converted(lambda chat: original(self, chat, *args, **kwargs), response,
                     lambda block, text: text_block(text=text["text"]))


def stream(original: Callable[..., Any], self: Any, *args: Any, **kwargs: Any) -> Any:
    """AROUND ``AnthropicServing._generate_anthropic_stream``: its events with each call whose
    arguments are no object as the core's ``text`` block."""
    events = original(self, *args, **kwargs)
    return shown(events) if _ours(self) else events


def hook_points() -> list[tuple[str, Callable[..., Any], str]]:
    """(target, hook, kind) of each hook this module installs."""
    return [(WHOLE, convert_response, "AROUND"), (STREAMED, stream, "AROUND")]


def problem() -> str | None:
    """Why the hooks cannot convert calls on this SGLang, or None."""
    import inspect
    import pkgutil

    try:
        whole, streamed = (inspect.unwrap(pkgutil.resolve_name(t)) for t in (WHOLE, STREAMED))
        pkgutil.resolve_name(TEXT_BLOCK)
    except Exception as e:
        return f"SGLang's Messages API serving not found ({type(e).__name__}: {e})"
    if list(inspect.signature(whole).parameters)[:2] != ["self", "response"]:
        return f"{WHOLE} does not take the chat response first"
    if not inspect.isasyncgenfunction(streamed):
        return f"{STREAMED} is not an async generator"
    return None
