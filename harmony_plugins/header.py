"""Reading a Harmony message header, and resolving its recipient against the request's tools.

A header arrives as *sections*: the role section (text after ``<|start|>``, or before the
first marker of a header that skipped ``<|start|>``), then one section per ``<|channel|>`` or
``<|constrain|>`` marker. Whitespace separates words; word order within and across sections
does not matter, except that the first plain word of a section is that section's value
(role, channel name or content type). ``to=NAME`` is a recipient wherever it stands.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import markers, rules

KNOWN_CHANNELS = frozenset({"analysis", "commentary", "final"})
CONTENT_TYPE_SUFFIXES = ("json", "code")
"""Content types a model may glue to a recipient's name (``to=functions.shelljson``)."""

ROLE = -1  # the role section's kind; the others use the marker constants


@dataclass(slots=True)
class Header:
    """What a complete header says. ``role`` is None when the header had no ``<|start|>``."""

    role: str | None = None
    recipient: str | None = None
    channel: str | None = None
    content_type: str | None = None
    junk: list[str] = field(default_factory=list)

    @property
    def forged(self) -> bool:
        """A message by anyone but the assistant: the model is writing the next turn."""
        return self.role is not None and self.role != "" and self.role.lower() != "assistant"


def parse_header(sections: list[tuple[int, str]], role_given: bool) -> Header:
    """Read the sections of one header (see the module docstring)."""
    h = Header()
    for kind, text in sections:
        first = True
        for word in text.split():
            if word.startswith("to="):
                name = word[3:]
                if name and name != "assistant":  # `to=assistant` addresses nobody
                    h.recipient = name
                continue
            if kind == markers.CHANNEL:
                if first:
                    h.channel = word
                elif h.content_type is None:
                    h.content_type = word  # a bare content type: `commentary json`
                else:
                    h.junk.append(word)
            elif kind == markers.CONSTRAIN:
                if first:
                    h.content_type = word
                else:
                    h.junk.append(word)
            elif role_given and first:
                h.role = word
            elif word in KNOWN_CHANNELS and h.channel is None:
                h.channel = word  # a channel name without its marker
            elif word in CONTENT_TYPE_SUFFIXES and h.content_type is None:
                h.content_type = word
            elif word != "assistant":
                h.junk.append(word)
            first = False
        if role_given and kind == ROLE and h.role is None:
            h.role = ""
    return h


def final_without_message(sections: list[tuple[int, str]]) -> str | None:
    """The body of ``<|channel|>final Body`` (no ``<|message|>``), or None if not that shape."""
    if not sections:
        return None
    kind, text = sections[-1]
    if kind != markers.CHANNEL:
        return None
    stripped = text.lstrip()
    if not stripped.startswith("final") or len(stripped) == 5 or not stripped[5].isspace():
        return None
    body = stripped[5:].lstrip()
    return body or None


def is_header_like(text: str) -> bool:
    """Whether text before any marker could be a header rather than prose."""
    for word in text.split():
        if not (word.startswith("to=") or word == "assistant" or word in KNOWN_CHANNELS
                or word in CONTENT_TYPE_SUFFIXES):
            return False
    return True


def tool_names(tools: Iterable[object] | None) -> frozenset[str]:
    """Function names from an OpenAI ``tools`` array (chat or Responses shape) or names."""
    if not tools:
        return frozenset()
    names = set()
    for tool in tools:
        if isinstance(tool, str):
            names.add(tool)
        elif isinstance(tool, dict):
            fn = tool.get("function")
            name = fn.get("name") if isinstance(fn, dict) else tool.get("name")
            if isinstance(name, str) and name:
                names.add(name)
        else:  # pydantic models of the engines: .function.name or .name
            fn = getattr(tool, "function", None)
            name = getattr(fn, "name", None) if fn is not None else getattr(tool, "name", None)
            if isinstance(name, str) and name:
                names.add(name)
    return frozenset(names)


def resolve_recipient(recipient: str, tools: frozenset[str]) -> tuple[str | None, str | None]:
    """Map a recipient to a declared function name.

    Returns ``(name, rule)``: ``name`` is None when no declared function matches; ``rule``
    names the recovery that made it match, or the reason it did not.
    """
    prefixed = recipient.startswith("functions.")
    bare = recipient[10:] if prefixed else recipient
    if bare in tools:
        return bare, None if prefixed else rules.BARE_RECIPIENT
    for suffix in CONTENT_TYPE_SUFFIXES:
        if bare.endswith(suffix) and bare[: -len(suffix)] in tools:
            return bare[: -len(suffix)], rules.GLUED_CONTENT_TYPE
    return None, rules.UNDECLARED_FUNCTION if prefixed else rules.UNDECLARED_RECIPIENT
