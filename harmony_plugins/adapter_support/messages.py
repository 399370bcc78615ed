"""openai-harmony ``Message`` objects for the adapters.

The builder of a message the core framed (:func:`harmony_message`: vLLM's Responses output) is
the core's own (:mod:`harmony_plugins._messages`), which the drop-in parser
(:mod:`harmony_plugins.compat`) uses for its ``messages``: the adapters take it from here, so
that all build the same objects. A prompt message (the input items both engines render back)
is the adapters' alone. ``openai_harmony`` is imported on the first build, never at import.
"""

from __future__ import annotations

from typing import Any

from harmony_plugins import harmony as hm
from harmony_plugins._messages import from_parts, harmony_message

__all__ = ["harmony_message", "prompt_message"]


def prompt_message(message: Any) -> Any:
    """A prompt message of the core (a :class:`~harmony_plugins.prompt._model.Message` with a
    text body, as :func:`~harmony_plugins.item_messages` returns) as the
    ``openai_harmony.Message`` an engine renders: author (a tool result's ``functions.NAME``),
    channel and recipient as the core gave them, the content type as the model writes it
    (``<|constrain|>json``). openai-harmony 0.0.4 (SGLang's) renders a content type as given,
    so ``json`` would come out bare; vLLM's fork oss-harmony adds the marker to a bare one and
    renders ``<|constrain|>json`` the same."""
    import openai_harmony

    author = message.author if message.author and message.author != message.role else None
    content_type = message.content_type
    if content_type is not None and not content_type.startswith(hm.CONSTRAIN_TOKEN):
        content_type = hm.constrained(content_type)
    return from_parts(openai_harmony.Role(message.role), author, message.body, message.channel,
                      message.recipient, content_type)
