"""Flagging Harmony markup written as ordinary text in visible text (contract section 6).

A leak is a control-token spelling (``<|end|>`` made of ordinary tokens), or
``to=functions.NAME`` next to a channel or content-type word (the model wrote a whole header
as prose). A lone ``to=functions.x`` is not one: documentation legitimately contains it.
Leaks are flagged, never rewritten.

Cost stays linear: each piece is scanned with at most :data:`CARRY` characters of the text
before it (no match is longer), and only when it could complete a match: the piece holds
``|``, ``>`` or ``=``, or an ``=`` is among those characters before it, or a match might
still be growing at the end of the previous piece. A match is counted
once it is settled (something follows it, or the message ended), and matches are taken
left to right from where the last one ended, as one scan of the whole text would take them,
so the count does not depend on how the text was cut.
"""

from __future__ import annotations

import re

_NAME = r"functions\.[^\s<]{1,64}"
_WORDS = r"(?:analysis|commentary|final|json|code)"
LEAK = re.compile(
    r"<\|(?:start|end|message|channel|constrain|return|call|startoftext|endoftext|"
    r"endofprompt|reserved_\d{1,6})\|>"
    rf"|(?<![\w]){_WORDS}\s{{1,8}}to={_NAME}"
    rf"|(?<![\w])to={_NAME}\s{{1,8}}{_WORDS}(?![\w])"
)
CARRY = 100
"""Longer than any match, plus the character before it (for the word-boundary check)."""


class LeakScanner:
    """Finds leaks in one message's visible text, fed piece by piece."""

    __slots__ = ("tail", "base", "counted_to", "pending")

    def __init__(self) -> None:
        self.tail = ""  # the last CARRY characters seen
        self.base = 0  # absolute position of tail[0]
        self.counted_to = 0  # absolute end of the last counted match
        self.pending = False  # a match touched the end of the text: it may still grow

    def feed(self, text: str) -> list[str] | None:
        """Scan the next piece; return the excerpts of the leaks it settled, if any."""
        if (not self.pending and "=" not in text and "|" not in text and ">" not in text
                and "=" not in self.tail):
            tail = self.tail + text
            if len(tail) > CARRY:
                self.base += len(tail) - CARRY
                tail = tail[-CARRY:]
            self.tail = tail
            return None
        return self._scan(self.tail + text, False)

    def close(self) -> list[str] | None:
        """End of the message: a match at the very end is settled now."""
        return self._scan(self.tail, True) if self.pending else None

    def _scan(self, scan: str, final: bool) -> list[str] | None:
        base = self.base
        found: list[str] | None = None
        self.pending = False
        for m in LEAK.finditer(scan, max(0, self.counted_to - base)):
            if m.end() == len(scan) and not final and scan[-2:] != "|>":
                self.pending = True
                break
            if found is None:
                found = []
            found.append(m.group())
            self.counted_to = base + m.end()
        if len(scan) > CARRY:
            self.base = base + len(scan) - CARRY
            scan = scan[-CARRY:]
        self.tail = scan
        return found
