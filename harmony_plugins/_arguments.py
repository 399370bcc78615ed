"""Streaming a tool call's arguments, cut at the end of the first complete JSON value.

The contract passes arguments through as the model wrote them, but stops them at the end of
the first complete top-level JSON value, so that trailing junk (a stray ``]``) never reaches
the client and streaming and non-streaming agree. A body that is not JSON (code, a shell
command, single quotes) is passed whole.

The scanner tracks bracket depth and strings, looking only at the structural characters of
each new piece (found by one regular expression), so its cost is proportional to the new
text. Where the brackets first balance, the text so far is checked once with ``json.loads``:
a valid value ends the arguments there; anything else (``{"a": True}.keys()``) is not JSON,
and the whole body is passed through.
"""

from __future__ import annotations

import json
import re

_STRUCTURAL = re.compile(r'[{}\[\]"\\]')
_search = _STRUCTURAL.search

_DEPTH = {"{": 1, "[": 1, "}": -1, "]": -1, "\\": 0}  # outside strings
_CLOSERS = "}]"

# What the body is so far (ArgumentCutter.mode).
BLANK = 0  # only whitespace so far: the body might still be empty
RAW = 1  # not JSON: everything is argument text
IN_VALUE = 2  # inside the first JSON value
AFTER_VALUE = 3  # the first JSON value is complete; the rest is junk


class ArgumentCutter:
    """Decides, piece by piece, which part of a call's body is argument text."""

    __slots__ = ("mode", "plain", "depth", "in_string", "escaped", "lead", "kept", "junk")

    def __init__(self) -> None:
        self.mode = BLANK
        # Whether a piece with no structural character is argument text as it is (inside the
        # JSON value with no escape pending, or not JSON): most pieces, kept without a scan.
        self.plain = False
        self.depth = 0
        self.in_string = False
        self.escaped = False  # the previous piece ended in a backslash inside a string
        self.lead: list[str] = []  # whitespace before the first character
        self.kept: list[str] = []  # the argument text returned so far
        self.junk: list[str] = []  # text after the first JSON value

    def feed(self, text: str) -> str:
        """Take the next piece of the body; return the part that is argument text."""
        if self.plain and _search(text) is None:  # most pieces: no bracket, quote, backslash
            self.kept.append(text)
            return text
        mode = self.mode
        if mode == IN_VALUE:
            end = self._scan(text, 0)
            piece = text if end < 0 else self._end(text, end)
        elif mode == RAW:
            piece = text
        elif mode == AFTER_VALUE:
            self.junk.append(text)
            return ""
        else:
            piece = self._start(text)
        if piece:
            self.kept.append(piece)
        return piece

    def arguments(self) -> str:
        """All argument text returned so far."""
        return "".join(self.kept)

    def _start(self, text: str) -> str:
        """BLANK: wait for the first non-blank character, which decides JSON or not."""
        start = len(text) - len(text.lstrip())
        if start == len(text):
            self.lead.append(text)
            return ""
        if self.lead:
            lead = "".join(self.lead)
            self.lead.clear()
            start += len(lead)
            text = lead + text
        if text[start] not in '{["':
            self.mode = RAW
            self.plain = True
            return text
        self.mode = IN_VALUE
        end = self._scan(text, start)
        return text if end < 0 else self._end(text, end)

    def _end(self, text: str, end: int) -> str:
        """The brackets balance at ``text[end]``: cut there if the value is JSON."""
        try:
            json.loads("".join(self.kept) + text[:end])
        except (ValueError, RecursionError):
            # Balanced, but not JSON (code or the like), or nested too deep for json to tell:
            # not provably one JSON value, so nothing is cut; the body is passed whole.
            self.mode = RAW
            self.plain = True
            return text
        self.mode = AFTER_VALUE
        self.plain = False
        if end < len(text):
            self.junk.append(text[end:])
        return text[:end]

    def _scan(self, text: str, pos: int) -> int:
        """Advance over text[pos:]; return the end of the JSON value there, or -1."""
        # A character escaped by the previous piece's trailing backslash is skipped.
        skip = pos if self.escaped else -1
        depth = self.depth
        in_string = self.in_string
        for m in _STRUCTURAL.finditer(text, pos):
            i = m.start()
            if i == skip:
                continue
            c = text[i]
            if in_string:
                if c == '"':
                    in_string = False
                    if depth == 0:  # a top-level string: the value
                        return i + 1
                elif c == "\\":
                    skip = i + 1
            elif c == '"':
                in_string = True
            else:
                depth += _DEPTH[c]
                if depth <= 0 and c in _CLOSERS:
                    return i + 1
        self.escaped = skip == len(text)  # the piece ends in a backslash inside a string
        self.plain = not self.escaped
        self.depth = depth
        self.in_string = in_string
        return -1

    def pending_lead(self) -> str:
        """Whitespace held back while the body might still turn out empty."""
        return "".join(self.lead)

    def junk_text(self) -> str:
        """Everything after the first JSON value."""
        return "".join(self.junk)
