"""Flagging Harmony markup written as ordinary text in visible text (contract section 6).

A leak is a control-token spelling (``<|end|>`` made of ordinary tokens), or
``to=functions.NAME`` next to a channel or content-type word (the model wrote a whole header
as prose). A lone ``to=functions.x`` is not one: documentation legitimately contains it.
Leaks are flagged, never rewritten.

Cost stays linear and small. A piece is scanned only when it could complete a match: it
holds ``>`` (every spelling ends in one) or ``=``, or a ``to=`` lies within :data:`CARRY`
characters of the end of the text before it, or a match might still be growing there.
Prose without those characters costs a list append per piece. A scan looks at the new text
plus a bounded carry of the text before it (no match is longer than :data:`CARRY`), and runs
the regular expression only if the text holds ``<|`` or ``to=functions.`` at all. A match is
counted once settled (something follows it, or the message ended), and matches are taken
left to right from where the last one ended, as one scan of the whole text would take them,
so the count does not depend on how the text was cut.
"""

from __future__ import annotations

import re

from . import harmony as hm

_NAME = re.escape(hm.FUNCTIONS_PREFIX) + r"[^\s<]{1,64}"
_WORDS = "(?:" + "|".join(map(re.escape, (*hm.CHANNELS, *hm.CONTENT_TYPES))) + ")"
_TO = re.escape(hm.RECIPIENT)
LEAK = re.compile(
    hm.SPELLING_PATTERN
    + rf"|(?<![\w]){_WORDS}\s{{1,8}}{_TO}{_NAME}"
    + rf"|(?<![\w]){_TO}{_NAME}\s{{1,8}}{_WORDS}(?![\w])"
)
CARRY = 100
"""Longer than any match, plus the character before it (for the word-boundary check)."""
WINDOW = 4 * CARRY
"""The most characters the window holds, beyond the piece just added, before it is cut back
to its last :data:`CARRY` characters."""


_OPEN = hm.OPEN
_RECIPIENT = hm.RECIPIENT
_TO_FUNCTION = hm.RECIPIENT + hm.FUNCTIONS_PREFIX


class LeakScanner:
    """Finds leaks in one message's visible text, fed piece by piece.

    ``recent`` is the window: the latest pieces, from absolute position ``start`` to ``end``.
    While ``watching`` is false, a piece with no ``>`` and no ``=`` cannot complete a match:
    it only joins the window (:meth:`feed` does that, and so may a caller on a hot path: append
    it, add its length to ``end``, and :meth:`trim` once ``end - start`` exceeds
    :data:`WINDOW`).
    """

    __slots__ = ("recent", "start", "end", "counted_to", "watching")

    def __init__(self) -> None:
        self.recent: list[str] = []
        self.start = 0
        self.end = 0
        self.counted_to = 0  # absolute end of the last counted match
        # Scan every piece: a ``to=`` lies within CARRY characters of the end (a match may end
        # in the next piece), or a match touches the end and may still grow.
        self.watching = False

    def feed(self, text: str) -> list[str] | None:
        """Take the next piece; return the excerpts of the leaks it settled, if any."""
        self.recent.append(text)
        end = self.end = self.end + len(text)
        if self.watching or ">" in text or "=" in text:
            return self._scan(False)
        if end - self.start > WINDOW:
            self.trim()
        return None

    def trim(self) -> None:
        """Cut the window back to its last :data:`CARRY` characters."""
        tail = "".join(self.recent)[-CARRY:]
        self.recent = [tail]
        self.start = self.end - len(tail)

    def last_space(self) -> bool:
        """Whether the text fed so far ends in whitespace (False when none was fed)."""
        return bool(self.recent) and self.recent[-1][-1:].isspace()

    def close(self) -> list[str] | None:
        """End of the message: a match at the very end is settled now."""
        return self._scan(True) if self.watching else None

    def _scan(self, final: bool) -> list[str] | None:
        scan = "".join(self.recent)
        base = self.start
        found: list[str] | None = None
        pending = False
        if _OPEN in scan or _TO_FUNCTION in scan:
            for m in LEAK.finditer(scan, max(0, self.counted_to - base)):
                if m.end() == len(scan) and not final and scan[-2:] != "|>":
                    pending = True
                    break
                if found is None:
                    found = []
                found.append(m.group())
                self.counted_to = base + m.end()
        armed = scan.rfind(_RECIPIENT)
        self.watching = pending or (armed >= 0 and len(scan) - armed < CARRY)
        tail = scan[-CARRY:]
        self.recent = [tail]
        self.start = self.end - len(tail)
        return found
