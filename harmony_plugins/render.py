"""A conversation's prompt through openai-harmony: the tool definitions' TypeScript, and ids.

:mod:`harmony_plugins.conversation` holds the rules and spells every message but one part: the
``# Tools`` section, whose TypeScript gpt-oss was trained on as openai-harmony writes it. This
module asks openai-harmony for that section and encodes prompts with its vocabulary. openai-harmony
is optional for harmony-ext (vLLM and SGLang install it); without it, :class:`MissingExtra` says
so in one line.

openai-harmony downloads ``o200k_base.tiktoken`` unless ``TIKTOKEN_ENCODINGS_BASE`` names a folder
holding it. Offline, and with that variable unset, the file is rebuilt from the vocabulary
harmony-ext ships (checked against its published sha256) and the variable set.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from typing import Any

from .conversation import Function, Message, encode, prompt_pieces, spelled

logger = logging.getLogger("harmony_ext")

NOT_INSTALLED = "openai-harmony is not installed"
INSTALL = "pip install 'harmony-ext[render]' (vLLM and SGLang install it themselves)"
VOCAB_ENV = "TIKTOKEN_ENCODINGS_BASE"


class MissingExtra(RuntimeError):
    """openai-harmony is not installed, or cannot load its encoding (the message says why)."""


@functools.cache
def loaded_encoding() -> tuple[Any, str | None]:
    """(the gpt-oss Harmony encoding, None) or (None, why not); tried once per process."""
    try:
        import openai_harmony
    except ImportError:
        return None, NOT_INSTALLED

    def load() -> Any:
        return openai_harmony.load_harmony_encoding(
            openai_harmony.HarmonyEncodingName.HARMONY_GPT_OSS)

    try:
        return load(), None
    except Exception as first:
        if os.environ.get(VOCAB_ENV):
            return None, f"{type(first).__name__}: {first}"
        try:
            import tempfile
            from pathlib import Path

            from .o200k import write_tiktoken_file

            folder = Path(tempfile.mkdtemp(prefix="harmony-ext-vocab-"))
            write_tiktoken_file(folder / "o200k_base.tiktoken")
            os.environ[VOCAB_ENV] = str(folder)
            encoding = load()
        except Exception as e:
            return None, f"{type(first).__name__}: {first}; offline vocabulary: {e}"
        logger.info("harmony-ext: openai_harmony could not load its vocabulary (%s); using "
                    "harmony-ext's offline copy (%s=%s)", first, VOCAB_ENV, folder)
        return encoding, None


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
    body = ids[ids.index(_special(enc, "<|message|>")) + 1:-1]  # between <|message|>, <|end|>
    return enc.decode_utf8(body)


def _special(enc: Any, spelling: str) -> int:
    return enc.encode(spelling, allowed_special="all")[0]


def ordinary(text: str) -> list[int]:
    """Text as ordinary o200k_harmony tokens (a control-token spelling stays text)."""
    return encoding().encode(text, allowed_special=set(), disallowed_special=())


def prompt_ids(messages: Sequence[Message], next_role: str = "assistant") -> list[int]:
    """Token ids of the prompt for ``messages`` (from :func:`conversation.conversation`)."""
    return encode(prompt_pieces(messages, tools_section, next_role), ordinary)


def prompt_text(messages: Sequence[Message], next_role: str = "assistant") -> str:
    """The prompt, markers spelled literally (openai-harmony is needed only for tools)."""
    return spelled(prompt_pieces(messages, tools_section, next_role))
