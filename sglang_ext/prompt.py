"""Prompt side: a control-token spelling in message text reaches the model as text.

SGLang renders chat prompts with the Hugging Face chat template to one string and tokenizes it,
so a user writing a control token's spelling (in a message or a tool result) puts the real control
token into the prompt: the user can forge turns, and the model sees markup that was never there
(docs/sglang-prompt-side.md). ``openai_harmony``, which vLLM uses, encodes message text as
ordinary tokens; this does the same for SGLang's chat path.

:func:`render_and_encode` wraps ``OpenAIServingChat._render_and_encode_chat_template`` (AROUND
hook, installed by :mod:`sglang_ext.plugin`) and acts only when a ``harmony-ext`` parser is
selected and some message or tool text spells a special token. Then the core's
:class:`~harmony_plugins.escaping.Escaper` replaces every such spelling by a placeholder before
rendering; the template's own markers become their token ids, and the text between them, with the
spellings put back, is tokenized as plain text. Without spellings in the input the original code
runs untouched (and its prompt cache with it).
"""

from __future__ import annotations

import inspect
import logging
import secrets
from collections.abc import Callable
from typing import Any

from harmony_plugins.adapter_support.once import Once
from harmony_plugins.conversation import MARKER
from harmony_plugins.escaping import Escaper

from .names import NAME

logger = logging.getLogger("sglang_ext")

_guards: dict[int, tuple[Any, PromptGuard | None]] = {}
once = Once(logger)


class PromptGuard(Escaper):
    """A tokenizer's special-token spellings (the core's :class:`Escaper`), and its ids."""

    def __init__(self, tokenizer: Any, added: dict[str, int]) -> None:
        super().__init__(added)
        self.tokenizer = tokenizer
        self.ids = added

    def encode(self, rendered: str, found: list[str], nonce: str) -> list[int] | None:
        """Token ids of a rendered prompt: the template's markers as ids, the rest as text.

        None when the template mangled a placeholder (then the caller renders as SGLang does).
        """
        pieces = self.pieces(rendered, found, nonce)
        if pieces is None:
            return None
        ids: list[int] = []
        for piece in pieces:
            if piece.kind == MARKER:
                ids.append(self.ids[piece.text])
            else:
                ids.extend(self.tokenizer.encode(piece.text, add_special_tokens=False,
                                                 split_special_tokens=True))
        return ids


def guard_for(tokenizer: Any) -> PromptGuard | None:
    """The tokenizer's guard (cached), or None when it has no special tokens to guard."""
    key = id(tokenizer)
    cached = _guards.get(key)
    if cached is not None and cached[0] is tokenizer:
        return cached[1]
    try:
        added = {s: i for s, i in tokenizer.get_added_vocab().items() if s}
    except Exception:
        added = {}
    guard = PromptGuard(tokenizer, added) if added else None
    _guards[key] = (tokenizer, guard)
    return guard


def _once(key: str, message: str, *args: Any) -> None:
    once(key, logging.INFO, message, *args)


def render_and_encode(original: Callable[..., Any], self: Any, *args: Any,
                      **kwargs: Any) -> Any:
    """AROUND hook on ``OpenAIServingChat._render_and_encode_chat_template``."""
    if NAME not in (getattr(self, "tool_call_parser", None),
                    getattr(self, "reasoning_parser", None)):
        return original(self, *args, **kwargs)
    try:
        bound = inspect.signature(original).bind(self, *args, **kwargs)
        bound.apply_defaults()
        a = bound.arguments
        messages, tools = a["messages"], a.get("tools")
        template_kwargs = a.get("template_kwargs") or {}
        encode_kwargs = a.get("encode_kwargs") or {}
        add_generation_prompt = a.get("add_generation_prompt", True)
        tokenizer = self.tokenizer_manager.tokenizer
    except Exception:  # a signature we do not know: leave the prompt to SGLang
        _once("signature", "harmony-ext: unknown _render_and_encode_chat_template signature; "
              "control-token spellings in messages are left to SGLang")
        return original(self, *args, **kwargs)
    guard = guard_for(tokenizer)
    if guard is None:
        return original(self, *args, **kwargs)
    nonce = secrets.token_hex(8)
    found: list[str] = []
    escaped_messages = guard.escape(messages, found, nonce)
    escaped_tools = guard.escape(tools, found, nonce)
    if not found:
        return original(self, *args, **kwargs)
    if (getattr(self.template_manager, "python_chat_template", None) is not None
            or getattr(self, "_prompt_text_round_trip_is_lossy", False)
            or (encode_kwargs.get("add_special_tokens")
                and tokenizer.encode("", add_special_tokens=True))):
        _once("path", "harmony-ext: this chat template path is not covered; control-token "
              "spellings in messages are left to SGLang")
        return original(self, *args, **kwargs)
    rendered = tokenizer.apply_chat_template(
        escaped_messages,
        tokenize=False,
        add_generation_prompt=add_generation_prompt,
        tools=escaped_tools,
        return_dict=False,
        **template_kwargs,
    )
    ids = guard.encode(rendered, found, nonce)
    if ids is None:
        _once("mangled", "harmony-ext: the chat template altered message text; control-token "
              "spellings in messages are left to SGLang")
        return original(self, *args, **kwargs)
    logger.debug("harmony-ext: %d control-token spelling(s) in message text encoded as text",
                 len(found))
    return ids, None
