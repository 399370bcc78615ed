"""Flagging Harmony markup written as ordinary text in visible text (contract section 6).

A leak is a control-token spelling (``<|end|>`` made of ordinary tokens), or
``to=functions.NAME`` next to a channel or content-type word (the model wrote a whole header
as prose). A lone ``to=functions.x`` is not one: documentation legitimately contains it.
Leaks are flagged, never rewritten.

Cost stays linear and small. A piece is scanned only when it could complete a match: it
holds ``>`` (every spelling ends in one) or ``=``, or a ``to=`` was seen in the last
:data:`CARRY` characters, or a match might still be growing at the end of the previous piece.
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


_OPEN = hm.OPEN
_RECIPIENT = hm.RECIPIENT
_TO_FUNCTION = hm.RECIPIENT + hm.FUNCTIONS_PREFIX
_ALWAYS = 1 << 62  # watch_until while a match may still be growing


class LeakScanner:
    """Finds leaks in one message's visible text, fed piece by piece."""

    __slots__ = ("recent", "start", "end", "counted_to", "watch_until")

    def __init__(self) -> None:
        self.recent: list[str] = []  # the latest pieces: at least CARRY characters, if seen
        self.start = 0  # absolute position of the start of ``recent``
        self.end = 0  # absolute position of the end of the text seen
        self.counted_to = 0  # absolute end of the last counted match
        # Scan every piece up to here: a ``to=`` was seen (a match may end within CARRY
        # characters of it), or, while _ALWAYS, a match touched the end and may still grow.
        self.watch_until = 0

    def feed(self, text: str) -> list[str] | None:
        """Take the next piece; return the excerpts of the leaks it settled, if any."""
        end = self.end = self.end + len(text)
        self.recent.append(text)
        if end <= self.watch_until or ">" in text or "=" in text:
            return self._scan(False)
        if end - self.start > 4 * CARRY:
            tail = "".join(self.recent)[-CARRY:]
            self.recent = [tail]
            self.start = end - len(tail)
        return None

    def close(self) -> list[str] | None:
        """End of the message: a match at the very end is settled now."""
        return self._scan(True) if self.watch_until == _ALWAYS else None

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
        self.watch_until = _ALWAYS if pending else base + armed + CARRY if armed >= 0 else 0
        tail = scan[-CARRY:]
        self.recent = [tail]
        self.start = self.end - len(tail)
        return found
