"""openai-harmony ``Message`` objects built from the core's messages.

Why here: the engines hand Harmony messages around as openai-harmony's objects, so both
adapters build them (vLLM's Responses output from the messages the core framed; the input
items both engines render back), and the drop-in parser (:mod:`harmony_plugins.compat`) builds
the same ones for its ``messages``: one builder, so that all three agree. ``openai_harmony``
is imported on the first build, never at import (vLLM and SGLang install it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the drop-in parser imports this module while the core is being imported
    from harmony_plugins import MessageBegin


def harmony_message(begin: MessageBegin, text: str) -> Any:
    """The ``openai_harmony.Message`` of one Harmony message the core framed (its
    :class:`MessageBegin` and its whole text), or None for a message with an empty body, which
    carries nothing (a call's empty body is ``{}``, never empty)."""
    if not text:
        return None
    import openai_harmony

    return from_parts(openai_harmony.Role.ASSISTANT, None, text, begin.channel,
                      begin.recipient, begin.content_type)


def prompt_message(message: Any) -> Any:
    """A prompt message of the core (a :class:`~harmony_plugins.prompt._model.Message` with a
    text body, as :func:`~harmony_plugins.item_messages` returns) as the
    ``openai_harmony.Message`` an engine renders: author (a tool result's ``functions.NAME``),
    channel, recipient and content type as the core gave them."""
    import openai_harmony

    author = message.author if message.author and message.author != message.role else None
    return from_parts(openai_harmony.Role(message.role), author, message.body, message.channel,
                      message.recipient, message.content_type)


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
