"""Prompt side: a control-token spelling in message text reaches the model as text.

SGLang renders chat prompts with the Hugging Face chat template to one string and tokenizes it,
so a user writing a control token's spelling (in a message or a tool result) puts the real control
token into the prompt: the user can forge turns, and the model sees markup that was never there
(docs/sglang-prompt-side.md). ``openai_harmony``, which vLLM uses, encodes message text as
ordinary tokens; this does the same for SGLang's chat path.

:func:`render_and_encode` wraps ``OpenAIServingChat._render_and_encode_chat_template`` (AROUND
hook, installed by :mod:`sglang_ext.plugin`) and acts only when a ``harmony-ext`` parser is
selected and some message or tool text spells a special token. Then the core's escaper
(:func:`harmony_plugins.escaper_for`) replaces every such spelling by a placeholder before
rendering; the template's own markers become their token ids, and the text between them, with the
spellings put back, is tokenized as plain text. Without spellings in the input the original code
runs untouched (and its prompt cache with it).
"""

from __future__ import annotations

import functools
import logging
import secrets
from collections.abc import Callable
from typing import Any

from harmony_plugins import escaper_for
from harmony_plugins.adapter_support.once import Once

from .hook_arguments import bound
from .names import NAME

TARGET = (
    "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat._render_and_encode_chat_template"
)

logger = logging.getLogger("sglang_ext")

once = Once(logger)


def render_and_encode(original: Callable[..., Any], self: Any, *args: Any,
                      **kwargs: Any) -> Any:
    """AROUND hook on ``OpenAIServingChat._render_and_encode_chat_template``."""
    if NAME not in (getattr(self, "tool_call_parser", None),
                    getattr(self, "reasoning_parser", None)):
        return original(self, *args, **kwargs)
    try:
        a = bound(TARGET, (self, *args), kwargs).arguments
        messages, tools = a["messages"], a.get("tools")
        template_kwargs = a.get("template_kwargs") or {}
        encode_kwargs = a.get("encode_kwargs") or {}
        add_generation_prompt = a.get("add_generation_prompt", True)
        tokenizer = self.tokenizer_manager.tokenizer
    except Exception:  # a signature we do not know: leave the prompt to SGLang
        once("signature", logging.INFO,
             "harmony-ext: unknown _render_and_encode_chat_template signature; "
             "control-token spellings in messages are left to SGLang")
        return original(self, *args, **kwargs)
    guard = escaper_for(tokenizer)
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
        once("path", logging.INFO,
             "harmony-ext: this chat template path is not covered; control-token "
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
    ids = guard.encode(rendered, found, nonce, functools.partial(
        tokenizer.encode, add_special_tokens=False, split_special_tokens=True))
    if ids is None:
        once("mangled", logging.INFO,
             "harmony-ext: the chat template altered message text; control-token "
             "spellings in messages are left to SGLang")
        return original(self, *args, **kwargs)
    logger.debug("harmony-ext: %d control-token spelling(s) in message text encoded as text",
                 len(found))
    return ids, None
