"""The two front ends: token ids, or decoded text with the markers spelled literally.

Each turns one delta into *pieces* and returns them: text made of some token ids, a control
token's marker, or an id the vocabulary does not know. It holds no machine and decides
nothing about the parse; it holds back only what the delta cannot decide yet:

* ids: the first bytes of a UTF-8 character split across tokens (or deltas). Consecutive
  ordinary tokens are joined into one run, one piece; most tokens are whole characters, kept
  as text in the vocabulary table, so only runs with a cut character are decoded (in one
  call).
* text: a possible marker cut by the end of the delta (``<|chan``), at most
  ``harmony.MAX_SPELLING - 1`` characters. Text is searched for ``<|`` with ``str.find``, so
  each character is looked at a constant number of times. (Text on the two sides of a marker
  that the parse drops must not spell a control token: :mod:`harmony_plugins._joints`, between
  this front end and the machine, sees to that.)

Most decode steps are one token of text, or a delta of text with no ``<``: ``single`` answers
those with the text itself, so that the turn makes one call into the machine's state.

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


UNKNOWN = -1
"""The piece a token id outside the vocabulary becomes (skipped and counted, ``unknown_token``)."""

Piece = Any
"""What a front end returns: ``(text, tokens)`` for text made of ``tokens`` ids (0 in text
mode), a marker (``harmony``'s marker constants), or :data:`UNKNOWN`."""


class IdsInput:
    """Token ids to pieces, through a vocabulary's table."""

    __slots__ = ("table", "pending", "owed")

    def __init__(self, table: list[Any]) -> None:
        self.table = table  # id -> text, bytes (a token that cuts a character), marker, None
        self.pending = b""  # the start of a UTF-8 character whose other bytes are to come
        self.owed = 0  # tokens whose text waits in ``pending`` (counted with that text)

    def single(self, ids: Any) -> str | None:
        """The text of a delta of one id that is a whole piece of text (most decode steps),
        else None (then :meth:`feed` it)."""
        if ids.__class__ is list and len(ids) == 1 and not self.pending:
            token = ids[0]
            if token.__class__ is int and token >= 0:
                try:
                    piece = self.table[token]
                except IndexError:  # past the vocabulary: counted by feed
                    return None
                if piece.__class__ is str:
                    return piece
        return None

    def feed(self, ids: Any) -> list[Piece]:
        """One delta's ids as pieces. Raises TypeError (before consuming any) for a non-int."""
        if ids.__class__ is not list or not _INT_ONLY.issuperset(map(type, ids)):
            ids = checked_ids(ids)
        table = self.table
        pieces: list[Piece] = []
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
                self._run(run, cut, pieces)
                run = []
                cut = False
            if self.pending:  # a character cut by the marker
                pieces += self.flush()
            pieces.append(UNKNOWN if piece is None else piece)
        if run:
            self._run(run, cut, pieces)
        return pieces

    def _run(self, run: list[Any], cut: bool, pieces: list[Piece]) -> None:
        """A run of ordinary tokens, one piece: their route cannot change inside the run."""
        # Decoded only where a character is cut; else whole characters, joined.
        text = self._decode(run) if cut or self.pending else "".join(run)
        tokens = len(run) + self.owed
        if not text:  # the run only began a character
            self.owed = tokens
            return
        self.owed = 0
        pieces.append((text, tokens))

    def _decode(self, run: list[Any]) -> str:
        """Text of a run with a cut character: keep the bytes of one still incomplete."""
        data = self.pending + b"".join(p if p.__class__ is bytes else p.encode() for p in run)
        text, used = _utf8_decode(data, "replace", False)
        self.pending = data[used:] if used < len(data) else b""
        return text

    def flush(self) -> list[Piece]:
        """End of stream (or a marker): a character still cut, replaced."""
        if not self.pending:
            return []
        text = self.pending.decode("utf-8", "replace")
        self.pending = b""
        tokens, self.owed = self.owed, 0
        return [(text, tokens)]


class TextInput:
    """Text with literal special-token spellings to pieces: text, and markers."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = ""  # the end of the last delta, which may begin a marker

    def single(self, text: str) -> str | None:
        """A delta in which no marker can start or end (most deltas), else None."""
        return text if "<" not in text and not self.held else None

    def feed(self, text: str) -> list[Piece]:
        """One delta's text as pieces (a marker cut by its end is held for the next)."""
        if self.held:
            text = self.held + text
            self.held = ""
        pieces: list[Piece] = []
        find = text.find
        n = len(text)
        emit_from = 0  # text[emit_from:] is plain text not yet passed on
        i = find(_OPEN)
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
                pieces.append((text[emit_from:i], 0))
            pieces.append(marker)
            emit_from = j + 2
            i = find(_OPEN, emit_from)
        else:
            if n and text[-1] == "<" and emit_from < n:
                self.held = "<"
                n -= 1
        if emit_from < n:
            pieces.append((text[emit_from:n], 0))
        return pieces

    def flush(self) -> list[Piece]:
        """End of stream: what was held back (it spelled no marker)."""
        held, self.held = self.held, ""
        return [(held, 0)] if held else []
