"""The two front ends: token ids, or decoded text with the markers spelled literally.

Each is built on the turn's machine and turns one delta into pieces of text, each handed to
the state the machine is in (``machine.at.take``), and control tokens, each handed to
:meth:`Machine.marker`; it reads nothing back from the machine but the answer to
:meth:`Machine.joins`, holding back only what cannot be decided yet:

* ids: the first bytes of a UTF-8 character split across tokens (or deltas). Consecutive
  ordinary tokens are joined into one run, passed on at once; most tokens are whole
  characters, kept as text in the vocabulary table, so only runs with a cut character are
  decoded (in one call).
* text: a possible marker cut by the end of the delta (``<|chan``), at most
  ``harmony.MAX_SPELLING - 1`` characters. Text is searched for ``<|`` with ``str.find``, so each
  character is looked at a constant number of times. Where a marker sits between text that
  may end up side by side in one field (a dropped marker: ``A<|`` + ``<|reserved_200010|>``
  + ``end|>B``; or ``<|end|>`` between content and free text), the end of the text before
  it that may begin a spelling (``<|``) is the *joint*: the text after it is held until it
  shows whether the two would spell a control token, and if so, the part that completes
  the spelling (``end|>``) is dropped and counted (``split_marker``).

Ids are validated at the boundary, before anything is consumed, so a bad delta raises
TypeError and changes no state: a list of plain ints passes one C-level type check per
delta; anything else (tuples, numpy integers, generators) is converted or refused on a
slower path.
"""

from __future__ import annotations

import codecs
import operator
from typing import Any

from . import harmony as hm
from . import rules
from ._machine import Machine

_utf8_decode = codecs.utf_8_decode  # (data, errors, final) -> (text, bytes used)
_INT_ONLY = frozenset({int})
_OPEN, _CLOSE = hm.OPEN, hm.CLOSE  # every spelling begins and ends with these


def checked_ids(ids: Any) -> list[int]:
    """``ids`` as a list of ints, or TypeError naming the first bad one (the slow path)."""
    if isinstance(ids, str | bytes | bytearray | memoryview) or ids is None:
        raise TypeError(f"token ids must be an iterable of ints, not {type(ids).__name__}")
    try:
        items = list(ids)
    except TypeError:
        raise TypeError(
            f"token ids must be an iterable of ints, not {type(ids).__name__}") from None
    out: list[int] = []
    for pos, token in enumerate(items):
        if token.__class__ is int:
            out.append(token)
            continue
        if not isinstance(token, bool):
            try:
                out.append(operator.index(token))  # int subclasses, numpy integers
                continue
            except TypeError:
                pass
        raise TypeError(
            f"token id at position {pos} is {token!r} ({type(token).__name__}); "
            "token ids must be ints")
    return out


class IdsInput:
    """Token ids to text and markers, through a vocabulary's table."""

    __slots__ = ("machine", "table", "pending", "owed")

    def __init__(self, machine: Machine, table: list[Any]) -> None:
        self.machine = machine  # where the text and markers go
        self.table = table  # id -> text, bytes (a token that cuts a character), marker, None
        self.pending = b""  # the start of a UTF-8 character whose other bytes are to come
        self.owed = 0  # tokens whose text waits in ``pending`` (counted with that text)

    def feed(self, ids: Any) -> None:
        """Parse one delta's ids. Raises TypeError (before consuming any) for a non-int."""
        if ids.__class__ is list and len(ids) == 1 and not self.pending:
            token = ids[0]  # one token per delta, most decode steps: whole characters
            if token.__class__ is int and token >= 0:
                try:
                    piece = self.table[token]
                except IndexError:  # past the vocabulary: counted below
                    piece = None
                if piece.__class__ is str:
                    self.machine.at.take(piece, 1)
                    return
        if ids.__class__ is not list or not _INT_ONLY.issuperset(map(type, ids)):
            ids = checked_ids(ids)
        self._feed(ids)

    def _feed(self, ids: list[int]) -> None:
        """Runs of ordinary tokens, each passed on at once, and the markers between them."""
        table, machine = self.table, self.machine
        run: list[Any] = []
        cut = False  # the run holds a token that cuts a UTF-8 character (bytes, not text)
        for token in ids:
            piece = table[token] if 0 <= token < len(table) else None
            kind = piece.__class__
            if kind is str:
                run.append(piece)
                continue
            if kind is bytes:
                run.append(piece)
                cut = True
                continue
            if run:
                self._run(run, cut)
                run = []
                cut = False
            if self.pending:  # a character cut by the marker
                self.flush()
            if piece is None:
                machine.unknown_token()
            else:
                machine.marker(piece)
        if run:
            self._run(run, cut)

    def _run(self, run: list[Any], cut: bool) -> None:
        """Pass on a run of ordinary tokens: their route cannot change inside the run."""
        # Decoded only where a character is cut; else whole characters, joined.
        text = self._decode(run) if cut or self.pending else "".join(run)
        tokens = len(run) + self.owed
        if not text:  # the run only began a character
            self.owed = tokens
            return
        self.owed = 0
        self.machine.at.take(text, tokens)

    def _decode(self, run: list[Any]) -> str:
        """Text of a run with a cut character: keep the bytes of one still incomplete."""
        data = self.pending + b"".join(p if p.__class__ is bytes else p.encode() for p in run)
        text, used = _utf8_decode(data, "replace", False)
        self.pending = data[used:] if used < len(data) else b""
        return text

    def flush(self) -> None:
        """End of stream: pass on a character still cut (replaced)."""
        if self.pending:
            text = self.pending.decode("utf-8", "replace")
            self.pending = b""
            tokens, self.owed = self.owed, 0
            self.machine.at.take(text, tokens)


class TextInput:
    """Text with literal special-token spellings to text and markers."""

    __slots__ = ("machine", "held", "tail", "joint")

    def __init__(self, machine: Machine) -> None:
        self.machine = machine  # where the text and markers go
        self.held = ""  # the end of the last delta, which may begin a marker
        self.tail = ""  # text passed on since the last marker, from its last "<" (short)
        self.joint = ""  # ``tail`` at a dropped marker, when it begins a spelling

    def _pass(self, text: str) -> None:
        """Pass text on, remembering its end from its last ``<`` (a spelling may start)."""
        self.machine.at.take(text, 0)
        if self.tail or "<" in text:
            self._remember(text)

    def _remember(self, text: str) -> None:
        k = text.rfind("<")
        if k >= 0:
            self.tail = text[k:] if len(text) - k < hm.MAX_SPELLING else ""
        elif self.tail:
            tail = self.tail + text
            self.tail = tail if len(tail) < hm.MAX_SPELLING else ""

    def feed(self, text: str) -> None:
        """Parse one delta's text."""
        if "<" not in text and not (self.held or self.tail or self.joint):
            self.machine.at.take(text, 0)  # most deltas: no marker can start or end in it
            return
        if self.held:
            text = self.held + text
            self.held = ""
        emit_from = 0  # text[emit_from:] is plain text not yet passed on
        if self.joint:
            emit_from = self._settle(text, 0)
            if emit_from < 0:
                return
        i = text.find(_OPEN, emit_from)
        if i >= 0:
            self._markers(text, emit_from, i)
            return
        n = len(text)  # the common case: a piece with no marker
        if n and text[-1] == "<" and emit_from < n:
            self.held = "<"
            n -= 1
        if emit_from < n:
            self._pass(text[emit_from:n])

    def _markers(self, text: str, emit_from: int, i: int) -> None:
        """The rest of a delta from its first ``<|`` at ``i``: markers and the text between."""
        find = text.find
        n = len(text)
        while i >= 0:
            j = find(_CLOSE, i + 2, i + hm.MAX_SPELLING)
            marker = hm.SPELLINGS.get(text[i : j + 2]) if j >= 0 else None
            if marker is None:
                if j < 0 and n - i < hm.MAX_SPELLING and text[i:] in hm.PREFIXES:
                    self.held = text[i:]  # a marker may be cut by the end of the delta
                    n = i
                    break
                i = find(_OPEN, i + 1)
                continue
            if emit_from < i:
                self._pass(text[emit_from:i])
            emit_from = self._marker(text, j + 2, marker)
            if emit_from < 0:
                return
            i = find(_OPEN, emit_from)
        else:
            if n and text[-1] == "<" and emit_from < n:
                self.held = "<"
                n -= 1
        if emit_from < n:
            self._pass(text[emit_from:n])

    def _marker(self, text: str, after: int, marker: int) -> int:
        """Pass on a marker; returns where plain text resumes (-1: the rest is held)."""
        machine = self.machine
        if not machine.joins(marker):
            self.tail = ""
            machine.marker(marker)
            return after
        # The text on both sides joins up: it must not spell a control token.
        tail = self.tail
        self.joint = tail if tail and tail in hm.PREFIXES else ""
        machine.marker(marker)
        return self._settle(text, after) if self.joint else after

    def _settle(self, text: str, pos: int) -> int:
        """After a dropped marker: drop what would complete a spelling with the joint.

        Returns where plain text resumes, or -1 when the rest of ``text`` is held until the
        next delta can decide. Another dropped marker right after is passed on as any marker
        is: it keeps the same joint, taken again from the tail it was taken from.
        """
        joint, machine = self.joint, self.machine
        while True:
            rest = text[pos : pos + hm.MAX_SPELLING]
            joined = joint + rest
            k = joined.find(_CLOSE, max(len(joint) - 1, 1))
            if k >= 0 and joined[: k + 2] in hm.SPELLINGS:
                end = pos + k + 2 - len(joint)  # the right part of the spelling: dropped
                machine.drop_text(rules.SPLIT_MARKER, text[pos:end])
                pos = end
                continue
            if pos + len(rest) == len(text) and (not rest or joined in hm.PREFIXES
                                                 or rest in hm.PREFIXES):
                self.held = rest  # too short to tell yet
                return -1
            self.joint = ""
            return pos

    def flush(self) -> None:
        """End of stream: pass on what was held back (it spelled no marker)."""
        self.joint = ""
        if self.held:
            self.machine.at.take(self.held, 0)
            self.held = ""
