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

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from . import harmony as hm
from . import rules

_TO = hm.RECIPIENT
_SPACE = re.compile(r"\s")  # str.isspace's characters, every one of them (checked in tests)
_FUNCTIONS = hm.FUNCTIONS_PREFIX
ROLE = -1  # the role section's kind; the others use the marker constants


@dataclass(slots=True)
class Header:
    """What a complete header says. ``role`` is None when the header names no role.

    ``empty_recipient`` is set by a ``to=`` (or ``to=functions.``) with no name;
    ``to_assistant`` by a ``to=assistant`` (no recipient: it addresses nobody);
    ``role_channel`` by a channel name written in the role slot (``<|start|>final``);
    ``constrained`` when the content type followed ``<|constrain|>``.
    """

    role: str | None = None
    recipient: str | None = None
    channel: str | None = None
    content_type: str | None = None
    empty_recipient: bool = False
    to_assistant: bool = False
    role_channel: bool = False
    constrained: bool = False
    junk: list[str] = field(default_factory=list)

    @property
    def written_content_type(self) -> str | None:
        """The content type as the model wrote it: ``<|constrain|>json`` or ``json``."""
        ct = self.content_type
        return (hm.constrained(ct) if self.constrained else ct) if ct is not None else None

    @property
    def written_recipient(self) -> str | None:
        """The recipient as written, ``to=assistant`` included: a message the caller renders
        back (a tool's result) keeps it, as openai-harmony does."""
        if self.recipient is None and self.to_assistant:
            return hm.ASSISTANT
        return self.recipient

    @property
    def forged(self) -> bool:
        """A message by anyone but the assistant: the model is writing the next turn."""
        return self.role is not None and self.role != "" and self.role.lower() != hm.ASSISTANT


def is_other_role(word: str) -> bool:
    """Whether a bare word (no ``<|start|>`` before it) names a role other than assistant."""
    return (word.lower() in hm.OTHER_ROLES or word.startswith(hm.TOOL_NAMESPACES)
            or word == hm.PYTHON)


def role_forges(text: str, role_given: bool) -> bool:
    """Whether a header's role section (its text) names someone other than the assistant: the
    model is writing the next turn. The usual ones, empty (a header that begins with its
    channel) or exactly ``assistant``, are answered without reading the section as a header."""
    return forging_role(text, role_given) is not None


def forging_role(text: str, role_given: bool) -> str | None:
    """The role a header's role section names when it is not the assistant's (see
    :func:`role_forges`), else None."""
    if not text or text == hm.ASSISTANT:
        return None
    header = parse_header([(ROLE, text)], role_given)
    return header.role if header.forged else None


def is_content_type(word: str, tools: frozenset[str]) -> bool:
    """Whether a word is a content type we know (``json``, ``code``, or a function's name);
    any other word where a content type may stand is junk, dropped and counted."""
    return word in hm.CONTENT_TYPES or word.startswith(_FUNCTIONS) or word in tools


def spaced_names(tools: Iterable[str]) -> tuple[str, ...]:
    """Declared names holding whitespace, longest first (matched whole in recipients)."""
    spaced = [n for n in tools if _SPACE.search(n)]
    return tuple(sorted(spaced, key=len, reverse=True)) if spaced else ()


def _take_spaced_recipient(text: str, spaced: tuple[str, ...]) -> tuple[str, str | None]:
    """Cut a ``to=`` naming a declared spaced name out of ``text``; return (rest, recipient)."""
    pos = text.find(_TO)
    while pos >= 0:
        if pos == 0 or text[pos - 1].isspace():
            start = pos + 3
            prefix = _FUNCTIONS if text.startswith(_FUNCTIONS, start) else ""
            start += len(prefix)
            for name in spaced:
                end = start + len(name)
                if text.startswith(name, start) and (end == len(text) or text[end].isspace()):
                    return text[:pos] + " " + text[end:], prefix + name
        pos = text.find(_TO, pos + 3)
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
        if spaced and _TO in text:
            text, name = _take_spaced_recipient(text, spaced)
            if name is not None:
                h.recipient = name
        read = _SECTION_WORD.get(kind, _role_section_word)
        first = True  # the section's first plain word is its value
        for word in text.split():
            if word.startswith(_TO):
                _recipient_word(h, word[3:])
            else:
                read(h, word, first, role_given, tools)
                first = False
        if role_given and kind == ROLE and h.role is None:
            h.role = ""
    return h


def _recipient_word(h: Header, name: str) -> None:
    """``to=NAME``, wherever it stands."""
    if name == "" or name == _FUNCTIONS:
        h.empty_recipient = True
    elif name == hm.ASSISTANT:  # addresses nobody
        h.to_assistant = True
    else:
        h.recipient = name


def _channel_word(h: Header, word: str, first: bool, role_given: bool,
                  tools: frozenset[str]) -> None:
    """A word of a ``<|channel|>`` section: the channel, then maybe a bare content type. The
    last channel wins; one it replaces is junk (dropped and counted, never lost)."""
    if first:
        if h.channel is not None:
            h.junk.append(h.channel)
        h.channel = word
    elif h.content_type is None and is_content_type(word, tools):
        h.content_type = word  # a bare content type: `commentary json`
    else:
        h.junk.append(word)


def _constrain_word(h: Header, word: str, first: bool, role_given: bool,
                    tools: frozenset[str]) -> None:
    """A word of a ``<|constrain|>`` section: the content type."""
    if first and h.content_type is None and is_content_type(word, tools):
        h.content_type = word
        h.constrained = True
    else:
        h.junk.append(word)


def _role_section_word(h: Header, word: str, first: bool, role_given: bool,
                       tools: frozenset[str]) -> None:
    """A word of the role section: the role first (with ``<|start|>``, or a word naming
    another role), then channel and content-type words written without their markers."""
    if first and role_given:
        if word in hm.KNOWN_CHANNELS:  # `<|start|>final<|message|>`: gpt-oss writes it
            h.role = hm.ASSISTANT
            h.channel = word
            h.role_channel = True
        else:
            h.role = word
    elif first and is_other_role(word):
        h.role = word
    elif word in hm.KNOWN_CHANNELS and h.channel is None:
        h.channel = word  # a channel name without its marker
    elif word in hm.CONTENT_TYPES and h.content_type is None:
        h.content_type = word
    elif word != hm.ASSISTANT:
        h.junk.append(word)


_SECTION_WORD = {hm.CHANNEL: _channel_word, hm.CONSTRAIN: _constrain_word}
"""How a section reads its plain words, by the marker that began it (the role section:
:func:`_role_section_word`)."""


def final_without_message(sections: list[tuple[int, str]]) -> str | None:
    """The answer held by a ``final`` header that never reached ``<|message|>``, or None.

    The answer is the text after the channel word, less one separator: whitespace
    (``<|channel|>final The answer.``) or a stray ``<|constrain|>`` marker
    (``<|channel|>final<|constrain|>The answer.``). The word must be exactly ``final``.
    """
    if not sections:
        return None
    kind, text = sections[-1]
    if kind == hm.CONSTRAIN and len(sections) > 1:
        before_kind, before = sections[-2]
        if before_kind == hm.CHANNEL and before.strip() == hm.FINAL:
            body = text.lstrip()
            return body if body and not is_header_like(body) else None
    if kind != hm.CHANNEL:
        return None
    stripped = text.lstrip()
    n = len(hm.FINAL)
    if not stripped.startswith(hm.FINAL) or len(stripped) == n or not stripped[n].isspace():
        return None
    body = stripped[n:].lstrip()
    return body or None


def junk_before_final(sections: list[tuple[int, str]], role_given: bool,
                      tools: frozenset[str] = frozenset(),
                      spaced: tuple[str, ...] = ()) -> list[str]:
    """The words no rule uses in a ``final`` header that never reached ``<|message|>``
    (:func:`final_without_message` took the answer from its last channel section): those
    before that channel word."""
    k = max(i for i, (kind, _) in enumerate(sections) if kind == hm.CHANNEL)
    return parse_header([*sections[:k], (hm.CHANNEL, hm.FINAL)], role_given, tools,
                        spaced).junk


def is_header_like(text: str) -> bool:
    """Whether text holds only header words (role or channel names, ``to=...``, json, code)."""
    for word in text.split():
        if not (word.startswith(_TO) or word in hm.HEADER_WORDS
                or word.startswith(hm.TOOL_NAMESPACES)):
            return False
    return True


def resolve_recipient(recipient: str, tools: frozenset[str],
                      builtins: frozenset[str] = frozenset()) -> tuple[str | None, str | None]:
    """Map a recipient to a declared tool's name (``builtins``: those of ``tools`` that are
    built-in tools, written bare).

    Returns ``(name, rule)``: ``name`` is None when no declared tool matches; ``rule``
    names the recovery that made it match, or the reason it did not.
    """
    prefixed = recipient.startswith(_FUNCTIONS)
    bare = recipient[len(_FUNCTIONS):] if prefixed else recipient
    if bare in tools:  # a built-in tool's recipient is written bare: no slip
        return bare, None if prefixed or bare in builtins else rules.BARE_RECIPIENT
    for suffix in hm.CONTENT_TYPES:
        if bare.endswith(suffix) and bare[: -len(suffix)] in tools:
            return bare[: -len(suffix)], rules.GLUED_CONTENT_TYPE
    return None, rules.UNDECLARED_FUNCTION if prefixed else rules.UNDECLARED_RECIPIENT


def may_name_function(h: Header) -> bool:
    """Whether a header's message may be a call to a function tool, before the tools are
    known: a recipient other than a built-in tool's (``functions.NAME``, or a bare name that a
    declared function may have), an empty ``to=``, or a content type ``functions.NAME``. A
    built-in recipient (``browser.search``) is never a function: it is the same undeclared
    recipient whether the tools are known or not."""
    recipient = h.recipient
    if recipient is not None:
        return not hm.is_builtin_recipient(recipient)
    content_type = h.content_type
    return h.empty_recipient or (content_type is not None and content_type.startswith(_FUNCTIONS))


def content_type_function(content_type: str | None, tools: frozenset[str]) -> str | None:
    """The function a content type names (``functions.NAME`` or a bare declared NAME):
    the declared name, ``""`` for an undeclared ``functions.NAME``, or None."""
    if content_type is None:
        return None
    if content_type.startswith(_FUNCTIONS):
        name = content_type[len(_FUNCTIONS):]
        return name if name in tools else ""
    return content_type if content_type in tools else None
