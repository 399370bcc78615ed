"""Calls written as text: reading a visible message as one, piece by piece (contract section 10).

gpt-oss sometimes writes its call as the answer's text instead of as a call:
``to=functions.get_weather {"city":"Paris"}``, ``commentary to=functions.X json{...}``, or, when
the request forced a call, a bare JSON object. Where the request asked for their recovery, a
visible message is held back while its text may still be wholly one of these shapes
(whitespace aside) and given out as content as soon as it cannot; at its end the machine turns
a whole one into a call, if it names a declared function whose schema accepts the object
(:mod:`harmony_plugins._machine`). This module only reads the text: it decides nothing about
tools or schemas, and what it holds is bounded by the header of the shape (a few words) plus
the object, which the argument cutter scans once.
"""

from __future__ import annotations

from . import harmony as hm
from ._arguments import AFTER_VALUE, RAW, ArgumentCutter

_CHANNEL_WORD = hm.COMMENTARY
_TO = hm.RECIPIENT + hm.FUNCTIONS_PREFIX  # "to=functions."
_TYPE_WORD = hm.JSON
_OPEN_OBJECT = "{"


def _is_recipient(word: str) -> bool:
    return word.startswith(_TO) and len(word) > len(_TO)


def head_may_continue(head: str, named: bool, bare: bool) -> bool:
    """Whether ``head`` (the text before the object's ``{``) may still begin a call written
    as text: ``[commentary ]to=functions.NAME [json]`` when ``named``, nothing but
    whitespace when ``bare`` (a bare object, where the request forced a call)."""
    text = head.lstrip()
    if not text:
        return named or bare
    if not named:
        return False
    first, space, after = _split_word(text)
    channel_given = first == _CHANNEL_WORD and bool(space)
    if channel_given:
        if not after:
            return True
        first, space, after = _split_word(after)
    if not space and not _is_recipient(first):  # the first word, still being written
        return _TO.startswith(first) or (not channel_given and _CHANNEL_WORD.startswith(first))
    if not _is_recipient(first):
        return False
    return _TYPE_WORD.startswith(after.strip())  # at most the content type after it


def _split_word(text: str) -> tuple[str, str, str]:
    """``text`` (no leading whitespace) as its first word, the whitespace after it (empty
    while the word may go on) and the rest, whitespace stripped from its start."""
    for i, c in enumerate(text):
        if c.isspace():
            return text[:i], c, text[i:].lstrip()
    return text, "", ""


def head_words(head: str) -> list[str] | None:
    """The recipient word of a whole head (``[commentary ]to=functions.NAME [json]``) as a
    list of one, ``[]`` for a bare object's (whitespace only), None for anything else."""
    words = head.split()
    if words and words[0] == _CHANNEL_WORD:
        words = words[1:]
        if not words:
            return None
    if words and words[-1] == _TYPE_WORD:
        words = words[:-1]
        if not words:
            return None
    if len(words) > 1 or (words and not _is_recipient(words[0])):
        return None
    return words


class TextCallReader:
    """One visible message's text, read as a possible call written as text.

    ``named``: the ``to=functions.NAME`` shape may be one (the request declared functions);
    ``bare``: a bare JSON object may be one (the request forced a call to a function whose
    schema constrains it, which the machine decides). :meth:`feed` returns
    False once the text cannot be one (and for every piece after); :meth:`call` says, at the
    message's end, what it is: ``(name, arguments)``, the name None for a bare object.
    """

    __slots__ = ("named", "bare", "head", "cutter", "possible")

    def __init__(self, named: bool, bare: bool) -> None:
        self.named = named
        self.bare = bare
        self.head = ""  # the text before the object's "{" (a few words at most)
        self.cutter: ArgumentCutter | None = None  # the object, once it began
        self.possible = named or bare

    def feed(self, text: str) -> bool:
        """Take the next piece of the message; whether it may still be a call as text."""
        if not self.possible:
            return False
        if self.cutter is None:
            start = text.find(_OPEN_OBJECT)
            head = self.head + (text if start < 0 else text[:start])
            ok = head_may_continue(head, self.named, self.bare) and (
                start < 0 or self._head_complete(head))
            if not ok:
                self.possible = False
                return False
            self.head = head
            if start < 0:
                return True
            self.cutter = ArgumentCutter()
            text = text[start:]
        self.cutter.feed(text)
        if self.cutter.mode == RAW or (self.cutter.mode == AFTER_VALUE
                                      and self.cutter.junk_text().strip()):
            self.possible = False  # not a JSON object, or text after it
        return self.possible

    def _head_complete(self, head: str) -> bool:
        """Whether the head before a ``{`` is a whole head of a shape the request allows."""
        words = head_words(head)
        return words is not None and (self.named if words else self.bare)

    def call(self) -> tuple[str | None, str] | None:
        """At the message's end: ``(name, arguments)`` when the whole text is one call written
        as text (``name`` None: a bare object), else None."""
        cutter = self.cutter
        if not self.possible or cutter is None or cutter.mode != AFTER_VALUE:
            return None
        words = head_words(self.head)
        if words is None:
            return None
        return (words[0][len(_TO):] if words else None), cutter.arguments()
