"""Reading a Harmony message header, and resolving its recipient against the request's tools.

A header arrives as *sections*: the role section (text after ``<|start|>``, or before the
first marker of a header that skipped ``<|start|>``), then one section per ``<|channel|>`` or
``<|constrain|>`` marker. Whitespace (Unicode whitespace: gpt-oss writes U+202F and U+00A0)
separates words; word order within and across sections does not matter, except that the
first plain word of a section is that section's value (role, channel name or content type).
``to=NAME`` is a recipient wherever it stands; a declared name with spaces (``Web Search``)
is matched whole before the words are split.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from . import markers, rules

KNOWN_CHANNELS = frozenset({"analysis", "commentary", "final"})
CONTENT_TYPE_SUFFIXES = ("json", "code")
"""Content types a model may glue to a recipient's name (``to=functions.shelljson``)."""

OTHER_ROLES = frozenset({"user", "system", "developer", "tool"})
"""Roles that, written as plain text after ``<|end|>``, begin a forged turn."""

TOOL_NAMESPACES = ("functions.", "browser.", "container.")

ROLE = -1  # the role section's kind; the others use the marker constants


@dataclass(slots=True)
class Header:
    """What a complete header says. ``role`` is None when the header names no role.

    ``empty_recipient`` is set by a ``to=`` (or ``to=functions.``) with no name;
    ``role_channel`` by a channel name written in the role slot (``<|start|>final``);
    ``constrained`` when the content type followed ``<|constrain|>``.
    """

    role: str | None = None
    recipient: str | None = None
    channel: str | None = None
    content_type: str | None = None
    empty_recipient: bool = False
    role_channel: bool = False
    constrained: bool = False
    junk: list[str] = field(default_factory=list)

    @property
    def written_content_type(self) -> str | None:
        """The content type as the model wrote it: ``<|constrain|>json`` or ``json``."""
        ct = self.content_type
        return ("<|constrain|>" + ct if self.constrained else ct) if ct is not None else None

    @property
    def forged(self) -> bool:
        """A message by anyone but the assistant: the model is writing the next turn."""
        return self.role is not None and self.role != "" and self.role.lower() != "assistant"


def is_other_role(word: str) -> bool:
    """Whether a bare word (no ``<|start|>`` before it) names a role other than assistant."""
    return word.lower() in OTHER_ROLES or word.startswith(TOOL_NAMESPACES) or word == "python"


def is_content_type(word: str, tools: frozenset[str]) -> bool:
    """Whether a word is a content type we know (``json``, ``code``, or a function's name);
    any other word where a content type may stand is junk, dropped and counted."""
    return word in CONTENT_TYPE_SUFFIXES or word.startswith("functions.") or word in tools


def spaced_names(tools: Iterable[str]) -> tuple[str, ...]:
    """Declared names holding whitespace, longest first (matched whole in recipients)."""
    return tuple(sorted((n for n in tools if any(c.isspace() for c in n)), key=len,
                        reverse=True))


def _take_spaced_recipient(text: str, spaced: tuple[str, ...]) -> tuple[str, str | None]:
    """Cut a ``to=`` naming a declared spaced name out of ``text``; return (rest, recipient)."""
    pos = text.find("to=")
    while pos >= 0:
        if pos == 0 or text[pos - 1].isspace():
            start = pos + 3
            prefix = "functions." if text.startswith("functions.", start) else ""
            start += len(prefix)
            for name in spaced:
                end = start + len(name)
                if text.startswith(name, start) and (end == len(text) or text[end].isspace()):
                    return text[:pos] + " " + text[end:], prefix + name
        pos = text.find("to=", pos + 3)
    return text, None


def parse_header(sections: list[tuple[int, str]], role_given: bool,
                 tools: frozenset[str] = frozenset(),
                 spaced: tuple[str, ...] = ()) -> Header:
    """Read the sections of one header (see the module docstring).

    ``role_given``: the header began with ``<|start|>``, so its first word is the role. Without
    it, a first word that names another role (``user``, ``functions.x``) is still a role: the
    model wrote the next turn's header as plain text after ``<|end|>``.
    """
    h = Header()
    for kind, text in sections:
        if spaced and "to=" in text:
            text, name = _take_spaced_recipient(text, spaced)
            if name is not None:
                h.recipient = name
        first = True
        for word in text.split():
            if word.startswith("to="):
                name = word[3:]
                if name == "" or name == "functions.":
                    h.empty_recipient = True
                elif name != "assistant":  # `to=assistant` addresses nobody
                    h.recipient = name
                continue
            if kind == markers.CHANNEL:
                if first:
                    h.channel = word
                elif h.content_type is None and is_content_type(word, tools):
                    h.content_type = word  # a bare content type: `commentary json`
                else:
                    h.junk.append(word)
            elif kind == markers.CONSTRAIN:
                if first and h.content_type is None and is_content_type(word, tools):
                    h.content_type = word
                    h.constrained = True
                else:
                    h.junk.append(word)
            elif first and role_given:
                if word in KNOWN_CHANNELS:  # `<|start|>final<|message|>`: gpt-oss writes it
                    h.role = "assistant"
                    h.channel = word
                    h.role_channel = True
                else:
                    h.role = word
            elif first and is_other_role(word):
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
    """The answer held by a ``final`` header that never reached ``<|message|>``, or None.

    The answer is the text after the channel word, less one separator: whitespace
    (``<|channel|>final The answer.``) or a stray ``<|constrain|>`` marker
    (``<|channel|>final<|constrain|>The answer.``). The word must be exactly ``final``.
    """
    if not sections:
        return None
    kind, text = sections[-1]
    if kind == markers.CONSTRAIN and len(sections) > 1:
        before_kind, before = sections[-2]
        if before_kind == markers.CHANNEL and before.strip() == "final":
            body = text.lstrip()
            return body if body and not is_header_like(body) else None
    if kind != markers.CHANNEL:
        return None
    stripped = text.lstrip()
    if not stripped.startswith("final") or len(stripped) == 5 or not stripped[5].isspace():
        return None
    body = stripped[5:].lstrip()
    return body or None


HEADER_WORDS = KNOWN_CHANNELS | OTHER_ROLES | {"assistant", *CONTENT_TYPE_SUFFIXES}


def is_header_like(text: str) -> bool:
    """Whether text holds only header words (role or channel names, ``to=...``, json, code)."""
    for word in text.split():
        if not (word.startswith("to=") or word in HEADER_WORDS
                or word.startswith(TOOL_NAMESPACES)):
            return False
    return True


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


def content_type_function(content_type: str | None, tools: frozenset[str]) -> str | None:
    """The function a content type names (``functions.NAME`` or a bare declared NAME):
    the declared name, ``""`` for an undeclared ``functions.NAME``, or None."""
    if content_type is None:
        return None
    if content_type.startswith("functions."):
        name = content_type[10:]
        return name if name in tools else ""
    return content_type if content_type in tools else None
