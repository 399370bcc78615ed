"""A conversation's prompt through openai-harmony: the tool definitions' TypeScript, and ids.

:mod:`harmony_plugins.prompt` holds the rules and spells every message but one part: the
``# Tools`` section, whose TypeScript gpt-oss was trained on as openai-harmony writes it. This
module asks openai-harmony for that section and encodes prompts with its vocabulary. openai-harmony
is optional for harmony-ext (vLLM and SGLang install it); without it, :class:`MissingExtra` says
so in one line.

openai-harmony downloads ``o200k_base.tiktoken`` unless ``TIKTOKEN_ENCODINGS_BASE`` names a folder
holding it (``openai-harmony`` 0.0.8, which SGLang installs; vLLM's ``oss-harmony`` embeds it).
This module writes no file and sets no variable: where openai-harmony cannot load its vocabulary,
:func:`loaded_encoding` says why, and the caller that needs it (the command line, SGLang's
prompt hook) writes harmony-ext's copy for it (:mod:`harmony_plugins.vocabulary_files`) and
clears the cache.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from .. import harmony as hm
from ._chat import from_request
from ._model import Function, Message, encode, prompt_pieces, spelled

NOT_INSTALLED = "openai-harmony is not installed"
INSTALL = "pip install 'harmony-ext[render]' (vLLM and SGLang install it themselves)"
VOCAB_ENV = "TIKTOKEN_ENCODINGS_BASE"
"""Where openai-harmony 0.0.8 reads ``o200k_base.tiktoken`` from instead of downloading it."""


class MissingExtra(RuntimeError):
    """openai-harmony is not installed, or cannot load its encoding (the message says why)."""


@functools.cache
def loaded_encoding() -> tuple[Any, str | None]:
    """(the gpt-oss Harmony encoding, None) or (None, why not); tried once per process (until
    ``loaded_encoding.cache_clear()``: a caller that wrote the vocabulary for it tries again)."""
    try:
        import openai_harmony
    except ImportError:
        return None, NOT_INSTALLED
    try:
        return openai_harmony.load_harmony_encoding(
            openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS), None
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"


def encoding() -> Any:
    """The gpt-oss Harmony encoding, or :class:`MissingExtra` saying why it cannot load."""
    enc, problem = loaded_encoding()
    if problem == NOT_INSTALLED:
        raise MissingExtra(f"rendering tool definitions needs openai-harmony: {INSTALL}")
    if enc is None:
        raise MissingExtra(f"openai_harmony cannot load the gpt-oss encoding ({problem})")
    return enc


def tools_section(functions: Sequence[Function]) -> str:
    """The developer message's ``# Tools`` section for ``functions``, as openai-harmony writes
    it (its rendering of a developer message holding only those tools)."""
    enc = encoding()  # first: MissingExtra where openai-harmony is not installed
    from openai_harmony import DeveloperContent, Role, ToolDescription
    from openai_harmony import Message as HarmonyMessage

    content = DeveloperContent.new().with_function_tools([
        ToolDescription.new(f.name, f.description, parameters=dict(f.parameters)
                            if f.parameters is not None else None) for f in functions])
    ids = enc.render(HarmonyMessage.from_role_and_content(Role.DEVELOPER, content))
    body = ids[ids.index(_special(enc, hm.MESSAGE_TOKEN)) + 1:-1]  # the message's body
    return enc.decode_utf8(body)


def _special(enc: Any, spelling: str) -> int:
    return enc.encode(spelling, allowed_special="all")[0]


def ordinary(text: str) -> list[int]:
    """Text as ordinary o200k_harmony tokens (a control-token spelling stays text)."""
    return encoding().encode(text, allowed_special=set(), disallowed_special=())


def prompt_ids(messages: Sequence[Message], next_role: str = hm.ASSISTANT) -> list[int]:
    """Token ids of the prompt for ``messages`` (from :func:`~._chat.conversation`)."""
    return encode(prompt_pieces(messages, tools_section, next_role), ordinary)


def prompt_text(messages: Sequence[Message], next_role: str = hm.ASSISTANT) -> str:
    """The prompt, markers spelled literally (openai-harmony is needed only for tools)."""
    return spelled(prompt_pieces(messages, tools_section, next_role))


def chat_prompt_ids(request: Any, tools: Any = None, *,
                    reasoning_effort: str | None = None) -> list[int]:
    """Token ids of the prompt for a chat completions request (a dict or an engine's object):
    :func:`~harmony_plugins.prompt._chat.from_request`, then :func:`prompt_ids`. What an engine
    sends the model, and what ``harmony-ext render --ids`` prints. Raises
    :class:`~harmony_plugins.prompt.NotRenderable` or :class:`MissingExtra`."""
    return prompt_ids(from_request(request, tools, reasoning_effort=reasoning_effort))
