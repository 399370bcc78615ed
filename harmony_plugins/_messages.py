"""openai-harmony ``Message`` objects built from the core's messages.

Why here: the engines hand Harmony messages around as openai-harmony's objects, so the drop-in
parser (:mod:`harmony_plugins.compat`) builds them for its ``messages`` and the adapters build
the same ones (vLLM's Responses output from the messages the core framed; the input items both
engines render back, through the engine glue): one builder, in the core, so that all agree and
the core needs nothing from the glue. ``openai_harmony`` is imported on the first build, never
at import (vLLM and SGLang install it).
"""

from __future__ import annotations

from typing import Any

from ._events import MessageBegin


def harmony_message(begin: MessageBegin, text: str) -> Any:
    """The ``openai_harmony.Message`` of one Harmony message the core framed (its
    :class:`MessageBegin` and its whole text), or None for a message with an empty body, which
    carries nothing (a call's empty body is ``{}``, never empty)."""
    if not text:
        return None
    import openai_harmony

    return from_parts(openai_harmony.Role.ASSISTANT, None, text, begin.channel,
                      begin.recipient, begin.content_type)


def from_parts(role: Any, name: str | None, text: str, channel: str | None,
               recipient: str | None, content_type: str | None) -> Any:
    """An ``openai_harmony.Message`` from its parts: ``role`` an ``openai_harmony.Role``,
    ``name`` the author's name when it is not the role's (a tool result's ``functions.NAME``);
    None parts are left unset, as openai-harmony leaves a header's missing parts."""
    import openai_harmony as oh

    if name is not None:
        message = oh.Message.from_author_and_content(oh.Author.new(role, name), text)
    else:
        message = oh.Message.from_role_and_content(role, text)
    if channel is not None:
        message = message.with_channel(channel)
    if recipient is not None:
        message = message.with_recipient(recipient)
    if content_type is not None:
        message = message.with_content_type(content_type)
    return message
