"""The prompt side on vLLM: an assistant turn sent back is rendered in the order it was written.

gpt-oss writes a tool-calling turn as analysis, then a preamble on ``commentary``, then the
calls. vLLM 0.32 and 0.33 turn such an assistant message (``reasoning``, ``content``,
``tool_calls``) back into Harmony as preamble, then analysis, then the calls
(``harmony_utils.parse_chat_input_to_harmony_message``), so the next prompt shows the model a
turn in an order it never produced (contract section 8). This hook lets vLLM build the
messages and only moves the analysis back in front of the preamble.

It is installed with the parser hook (:func:`vllm_ext.plugin.register`) and acts only in a
process where a ``harmony-ext`` parser was selected; with other parsers vLLM's rendering is
untouched.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from harmony_plugins.adapter_support import hooks
from harmony_plugins.adapter_support.once import Once
from harmony_plugins.conversation import part_of, written_order

logger = logging.getLogger("vllm.harmony_ext")

TARGET = "vllm.entrypoints.openai.parser.harmony_utils"
FUNCTION = "parse_chat_input_to_harmony_message"
_once = Once(logger)
_active = False


def activate() -> None:
    """Called when this process composes a ``harmony-ext`` parser (vLLM's API server)."""
    global _active
    _active = True


def check() -> str | None:
    """What is missing from this vLLM for the prompt hook, or None."""
    import importlib

    try:
        module = importlib.import_module(TARGET)
    except ImportError as e:
        return f"cannot import {TARGET} ({e})"
    if not callable(getattr(module, FUNCTION, None)):
        return f"{TARGET}.{FUNCTION} does not exist"
    return None


def install() -> bool:
    """Wrap vLLM's per-message conversion once; True when the hook is in place."""
    import importlib

    def wrap(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
        @functools.wraps(original)
        def convert(chat_msg: Any, *args: Any, **kwargs: Any) -> list[Any]:
            messages = original(chat_msg, *args, **kwargs)
            if not _active:
                return messages
            return analysis_first(messages)

        return convert

    hooks.wrap_once(importlib.import_module(TARGET), FUNCTION, wrap)
    return True


def analysis_first(messages: list[Any]) -> list[Any]:
    """The same Harmony messages in the order the model writes a turn (the core's rule,
    :func:`harmony_plugins.conversation.written_order`): analysis, preamble, calls.

    vLLM returns one list per chat message, so the list is one assistant turn (or another
    role's message, which is returned as it is).
    """
    ordered = written_order(messages, lambda m: part_of(getattr(m, "channel", None),
                                                        getattr(m, "recipient", None)))
    if all(a is b for a, b in zip(ordered, messages, strict=True)):
        return messages
    _once("order", logging.INFO, "harmony-ext: rendering assistant turns sent back as "
          "analysis, then preamble, then calls (vLLM puts the preamble first); the model "
          "reads its turns in the order it wrote them.")
    return ordered
