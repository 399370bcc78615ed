"""Text mode's joints: text on the two sides of a marker must never spell a control token.

In text mode (SGLang hands its parsers decoded text) a marker the parse drops, or an ``<|end|>``
between content and the free text after it, can bring the text on its two sides together in one
field. The model's ``A<|`` + ``<|reserved_200010|>`` + ``end|>B`` must not become ``A<|end|>B``
(contract section 6, ``split_marker``). Whether a marker joins its two sides is the machine's
table's ``joins`` column (:mod:`harmony_plugins._transitions`); this filter, between the text
front end and the machine, does the rest: where a joining marker follows text that ends in the
beginning of a spelling (``<|``, the *joint*), the text after it is held until it shows whether
the two would spell a control token, and the part that would complete the spelling (``end|>``)
is dropped and counted. It looks at each character a constant number of times: the joint and
what it holds are shorter than the longest spelling.
"""

from __future__ import annotations

from . import harmony as hm

_CLOSE = hm.CLOSE


class Joints:
    """One text-mode turn's joints. The turn hands it each piece of text (:meth:`text`) and,
    at each marker, first takes what it still holds (:meth:`release`), then tells it whether
    the marker joins (:meth:`at_marker`)."""

    __slots__ = ("tail", "joint", "held")

    def __init__(self) -> None:
        self.tail = ""  # text passed on since the last marker, from its last "<" (short)
        self.joint = ""  # ``tail`` at a joining marker, when it begins a spelling
        self.held = ""  # text after the joint, too short yet to tell

    def idle(self) -> bool:
        """Whether a piece of text without ``<`` would pass unchanged (most deltas)."""
        return not (self.tail or self.joint)

    def text(self, text: str) -> list[tuple[bool, str]]:
        """A piece of text, as ``(dropped, text)`` pairs to hand on in order: text to parse,
        or text that completes a spelling across the joint, dropped. May hold the end."""
        out: list[tuple[bool, str]] = []
        if self.joint:
            if self.held:
                text, self.held = self.held + text, ""
            pos = self._settle(text, out)
            if pos < 0:
                return out
            text = text[pos:]
        if text:
            out.append((False, text))
            self._remember(text)
        return out

    def _settle(self, text: str, out: list[tuple[bool, str]]) -> int:
        """After a joining marker: drop what would complete a spelling with the joint. Returns
        where plain text resumes, or -1 when the rest is held. Another dropped marker right
        after is passed on as any marker is: it keeps the same joint."""
        joint, pos = self.joint, 0
        while True:
            rest = text[pos : pos + hm.MAX_SPELLING]
            joined = joint + rest
            k = joined.find(_CLOSE, max(len(joint) - 1, 1))
            if k >= 0 and joined[: k + 2] in hm.SPELLINGS:
                end = pos + k + 2 - len(joint)  # the right part of the spelling: dropped
                out.append((True, text[pos:end]))
                pos = end
                continue
            if pos + len(rest) == len(text) and (not rest or joined in hm.PREFIXES
                                                 or rest in hm.PREFIXES):
                self.held = rest  # too short to tell yet
                return -1
            self.joint = ""
            return pos

    def _remember(self, text: str) -> None:
        """Keep the end of the text passed on from its last ``<``: a spelling may start."""
        k = text.rfind("<")
        if k >= 0:
            self.tail = text[k:] if len(text) - k < hm.MAX_SPELLING else ""
        elif self.tail:
            tail = self.tail + text
            self.tail = tail if len(tail) < hm.MAX_SPELLING else ""

    def release(self) -> str:
        """What is held (a marker follows it, so it spells nothing across the joint)."""
        held, self.held = self.held, ""
        if held:
            self.joint = ""
            self._remember(held)
        return held

    def at_marker(self, joins: bool) -> None:
        """A marker, whose two sides join or not (the machine's answer, before the marker)."""
        if joins:
            tail = self.tail
            self.joint = tail if tail and tail in hm.PREFIXES else ""
        else:
            self.tail = self.joint = ""

    def flush(self) -> str:
        """End of stream: what is held, as text."""
        self.joint = ""
        held, self.held = self.held, ""
        return held
