"""The prompt's data model: Harmony messages as the prompt side writes them, and their pieces.

A :class:`Message` is one message of the prompt (the system and developer messages have their
own bodies, :class:`System` and :class:`Developer`); :meth:`Message.pieces` spells it as
:class:`Piece` objects that say which text came from the client, so that every text piece is
encoded as ordinary tokens (a control-token spelling a client wrote stays text). The rules that
decide which messages a conversation becomes are in :mod:`._chat`, :mod:`._items` and
:mod:`._order`; what encodes pieces with openai-harmony's vocabulary, in :mod:`._render`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .. import harmony as hm

MODEL_IDENTITY = "You are ChatGPT, a large language model trained by OpenAI."
KNOWLEDGE_CUTOFF = "2024-06"

MARKER, TEXT, UNTRUSTED = "marker", "text", "untrusted"


class Piece(NamedTuple):
    """One piece of a prompt: a control token (``MARKER``), our own header text (``TEXT``), or
    text holding what the client wrote (``UNTRUSTED``). Text pieces, either kind, are encoded as
    ordinary tokens, consecutive ones as one run; an adapter whose tokenizer would read a
    control-token spelling in text as the token must encode ``UNTRUSTED`` text with special
    tokens disallowed."""

    kind: str
    text: str


class NotRenderable(ValueError):
    """The conversation holds something a Harmony prompt cannot represent (the message says
    what); ``kind`` names the reason without client-chosen values, for once-only log lines."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind or message


@dataclass(frozen=True)
class Function:
    """A declared function tool."""

    name: str
    description: str = ""
    parameters: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class System:
    """The system message's content."""

    date: str
    reasoning_effort: str = "medium"
    model_identity: str = MODEL_IDENTITY
    knowledge_cutoff: str = KNOWLEDGE_CUTOFF
    channels: tuple[str, ...] = hm.CHANNELS
    function_routing: bool = False
    """The line saying calls to ``functions`` go to ``commentary`` (functions are declared)."""

    def text(self) -> str:
        top = "\n".join(line for line in (
            self.model_identity,
            f"Knowledge cutoff: {self.knowledge_cutoff}" if self.knowledge_cutoff else "",
            f"Current date: {self.date}" if self.date else "") if line)
        channels = hm.valid_channels_line(self.channels)
        if self.function_routing:
            channels += "\n" + hm.FUNCTION_ROUTING
        sections = [top, f"Reasoning: {self.reasoning_effort}", channels if self.channels else ""]
        return "\n\n".join(s for s in sections if s)


ToolsSection = Callable[[Sequence[Function]], str]
"""The ``# Tools`` section of a developer message for some functions (openai-harmony's)."""


@dataclass(frozen=True)
class Developer:
    """The developer message's content: instructions and declared functions."""

    instructions: str | None = None
    functions: tuple[Function, ...] = ()

    def text(self, tools_section: ToolsSection | None) -> str:
        sections = [] if self.instructions is None else ["# Instructions", self.instructions]
        if self.functions:
            if tools_section is None:
                raise NotRenderable("rendering tool definitions needs a tools_section "
                                    "(openai-harmony's, from harmony_plugins.prompt._render)",
                                    kind="tools_section")
            sections.append(tools_section(self.functions))
        return "\n\n".join(sections)


@dataclass(frozen=True)
class Message:
    """One Harmony message: ``author`` is the header's first word (the role, or the tool's
    name for a tool result); ``body`` the text, or the system or developer content."""

    role: str
    body: str | System | Developer
    author: str = ""
    channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None

    @property
    def is_call(self) -> bool:
        return self.role == hm.ASSISTANT and self.recipient is not None

    def pieces(self, tools_section: ToolsSection | None = None) -> list[Piece]:
        """This message as prompt pieces (see :class:`Piece`)."""
        author = self.author or self.role
        if self.is_call:  # the one call form: recipient in the role section, bare ``json``
            head = [Piece(UNTRUSTED, f"{author} {hm.RECIPIENT}{self.recipient}"),
                    Piece(MARKER, hm.CHANNEL_TOKEN),
                    Piece(TEXT, f"{self.channel} {self.content_type or hm.JSON}")]
        else:
            head = [Piece(UNTRUSTED if self.role == hm.TOOL else TEXT, author)]
            if self.channel is not None:
                head += [Piece(MARKER, hm.CHANNEL_TOKEN), Piece(TEXT, self.channel)]
            if self.recipient is not None:
                head.append(Piece(TEXT, f" {hm.RECIPIENT}{self.recipient}"))
            if self.content_type is not None:
                head.append(Piece(TEXT, f" {self.content_type}"))
        body = self.body
        text = body if isinstance(body, str) else (
            body.text() if isinstance(body, System) else body.text(tools_section))
        out = [Piece(MARKER, hm.START_TOKEN), *head, Piece(MARKER, hm.MESSAGE_TOKEN)]
        if text:
            out.append(Piece(UNTRUSTED, text))
        out.append(Piece(MARKER, hm.CALL_TOKEN if self.is_call else hm.END_TOKEN))
        return out


# -- pieces and ids out ---------------------------------------------------------------------


def prompt_pieces(messages: Iterable[Message], tools_section: ToolsSection | None = None,
                  next_role: str = hm.ASSISTANT) -> list[Piece]:
    """The prompt for the next turn: every message, then ``<|start|>`` and ``next_role``."""
    out = [p for m in messages for p in m.pieces(tools_section)]
    return [*out, Piece(MARKER, hm.START_TOKEN), Piece(TEXT, next_role)]


def encode(pieces: Iterable[Piece], encode_ordinary: Callable[[str], list[int]],
           specials: Mapping[str, int] = hm.SPECIAL_IDS) -> list[int]:
    """Token ids of prompt pieces: markers as their ids in ``specials`` (o200k_harmony's by
    default), each run of text (any kind) as ordinary tokens (``encode_ordinary``: a
    control-token spelling stays text)."""
    ids: list[int] = []
    run: list[str] = []
    for piece in pieces:
        if piece.kind == MARKER:
            if run:
                ids += encode_ordinary("".join(run))
                run = []
            ids.append(specials[piece.text])
        else:
            run.append(piece.text)
    if run:
        ids += encode_ordinary("".join(run))
    return ids


def spelled(pieces: Iterable[Piece]) -> str:
    """The prompt as text, markers spelled literally; a control-token spelling inside text is
    written ``<\\|end\\|>`` so it cannot be mistaken for the token."""
    return "".join(p.text if p.kind == MARKER
                   else p.text.replace(hm.OPEN, _OPEN_AS_TEXT).replace(hm.CLOSE, _CLOSE_AS_TEXT)
                   for p in pieces)


_OPEN_AS_TEXT = hm.OPEN.replace("|", "\\|")
_CLOSE_AS_TEXT = hm.CLOSE.replace("|", "\\|")
