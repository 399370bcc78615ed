"""vLLM's Anthropic Messages API (``/v1/messages``): a call whose arguments are no JSON object
is shown as text, not an HTTP error (contract section 4).

vLLM serves ``/v1/messages`` through its chat serving (our parser included), then converts the
chat response: ``AnthropicServingMessages.messages_full_converter`` turns each call into a
``tool_use`` block with ``input=json.loads(arguments)``, which fails the request (HTTP 400,
``Unterminated string ...``, ``Input should be a valid dictionary``) for every call whose
arguments the parse passed on as written but that is no object: cut short by ``max_tokens``,
a bare string, text before the object. ``message_stream_converter`` does not fail, but streams
those arguments as the ``partial_json`` of a ``tool_use`` block, which no client can read as
the object it must be. With a ``harmony-ext`` parser selected, two wraps put the core's
decision (:func:`harmony_plugins.messages_block`) in vLLM's conversion:

- **whole**: the response is converted with each such call's arguments replaced by ``{}`` (on a
  copy), then each of their ``tool_use`` blocks (found by the call's id) is replaced by the
  core's ``text`` block, in its place;
- **streamed**: the Anthropic events vLLM built are passed on as they are, except that a
  ``tool_use`` block's events are held from its ``content_block_start`` to its
  ``content_block_stop`` and then sent as they were, or, where its arguments are no object, as
  a ``text`` block of the same index (:mod:`harmony_plugins.adapter_support.messages_stream`,
  which SGLang's adapter uses too);

and in both, a response left with no ``tool_use`` block says ``end_turn`` where vLLM said
``tool_use`` (:func:`harmony_plugins.messages_stop_reason`). The call's outcome was counted by
the parse, as on the chat API. Installed with the other hooks (:func:`vllm_ext.plugin.register`),
active only in a process where a ``harmony-ext`` parser was composed.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

from harmony_plugins.adapter_support.messages_stream import shown
from harmony_plugins.adapter_support.messages_whole import converted

SERVING = "vllm.entrypoints.anthropic.serving"
OWNER = "AnthropicServingMessages"
WHOLE = "messages_full_converter"
STREAMED = "message_stream_converter"
WRAPS = (f"{SERVING}.{OWNER}.{WHOLE}", f"{SERVING}.{OWNER}.{STREAMED}")
"""The engine functions this module wraps in place."""
OFF = ("/v1/messages converts calls as vLLM does (a call whose arguments are no JSON object "
       "fails the request)")
"""What is lost where :func:`check` finds something missing."""
_active = False


def activate() -> None:
    """Called when this process composes a ``harmony-ext`` parser (vLLM's API server)."""
    global _active
    _active = True


def check() -> str | None:
    """What is missing from this vLLM for the hook, or None."""
    try:
        serving = importlib.import_module(SERVING)
    except ImportError as e:
        return f"cannot import vLLM's Messages API serving ({e})"
    owner = getattr(serving, OWNER, None)
    for name in (WHOLE, STREAMED):
        method = getattr(owner, name, None)
        if not callable(method):
            return f"{SERVING}.{OWNER}.{name} does not exist"
        if list(inspect.signature(method).parameters)[:2] != ["self", "generator"]:
            return f"{SERVING}.{OWNER}.{name} does not take the chat response first"
    if not inspect.isasyncgenfunction(inspect.unwrap(getattr(owner, STREAMED))):  # ours wraps
        return f"{SERVING}.{OWNER}.{STREAMED} is not an async generator"
    return None


def install() -> None:
    """Wrap both conversions, once each."""
    from harmony_plugins.adapter_support import hooks

    owner = getattr(importlib.import_module(SERVING), OWNER)
    hooks.wrap_once(owner, WHOLE, _whole_wrapper)
    hooks.wrap_once(owner, STREAMED, _stream_wrapper)


# -- the whole response ----------------------------------------------------------------------


def _whole_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def messages_full_converter(self: Any, generator: Any, *args: Any, **kwargs: Any) -> Any:
        if not _active:
            return original(self, generator, *args, **kwargs)
        return converted(lambda response: original(self, response, *args, **kwargs), generator,
                         lambda block, text: type(block).model_validate(text))

    return messages_full_converter


# -- the stream ------------------------------------------------------------------------------


def _stream_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def message_stream_converter(self: Any, generator: Any, *args: Any,
                                 **kwargs: Any) -> AsyncIterator[str]:
        events = original(self, generator, *args, **kwargs)
        return shown(events) if _active else events

    return message_stream_converter


