"""The two front ends: token ids, or decoded text with the markers spelled literally.

Each is built on the turn's machine and turns the pieces of one delta into calls of
``Machine.text`` / ``Machine.marker`` (``Machine.alone`` for a delta that is one piece of text);
it reads nothing back from the machine but the answer to :meth:`Machine.joins`, holding back
only what cannot be decided yet:

* ids: the first bytes of a UTF-8 character split across tokens (or deltas). Consecutive
  ordinary tokens are joined; most tokens are whole characters, kept as text in the
  vocabulary table, so only runs with a cut character are decoded (in one call).
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

The machine's ``alone`` and ``made`` are callables held in its slots (set with its state), so
on the usual paths each is loaded into a local and then called: CPython 3.11 does not
specialise a method call on a slot attribute, and the two steps cost about a hundred
instructions less per call.
"""

from __future__ import annotations

import codecs
import operator
from collections.abc import Callable
from typing import Any

from . import harmony as hm
from . import rules
from ._machine import Machine
from ._steps import EMPTY, Step

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
    """Token ids to text and markers, through a vocabulary's table.

    :meth:`feed` parses a delta; :meth:`fed` and :meth:`made` are what ``Turn.feed_ids`` and
    ``Turn.decode_ids`` are once the turn's fast path is open: one call into the core per
    decode step, the usual one (one ordinary token) handled here, any other handed back to
    the turn (``general``, ``stepped``).
    """

    __slots__ = ("machine", "table", "pending", "owed", "stepped", "general")

    def __init__(self, machine: Machine, table: list[Any],
                 stepped: Callable[..., Any] | None = None,
                 general: Callable[[Any, str | None], Step] | None = None) -> None:
        self.machine = machine  # where the text and markers go
        self.table = table  # id -> text, bytes (a token that cuts a character), marker, None
        self.pending = b""  # the start of a UTF-8 character whose other bytes are to come
        self.owed = 0  # tokens whose text waits in ``pending`` (counted with that text)
        # For made: a step built (None: the one the machine's collector gathered; Turn gives it)
        self.stepped = stepped
        # For fed: the turn's own feed, for every delta but the usual one (Turn gives it)
        self.general = general

    def feed(self, ids: Any) -> Step | None:
        """Parse one delta's ids. Raises TypeError (before consuming any) for a non-int.
        Returns the step when the machine built it directly (one ordinary token, or a delta
        with no marker), else None: the step is in the machine's collector."""
        if ids.__class__ is not list:
            ids = checked_ids(ids)
        elif len(ids) == 1:  # one token per delta, the usual decode step: no run machinery
            token = ids[0]
            if token.__class__ is not int:
                ids = checked_ids(ids)
            elif not self.pending and token >= 0:
                try:
                    piece = self.table[token]
                except IndexError:  # outside the vocabulary: the general path counts it
                    piece = None
                if piece.__class__ is str:
                    alone = self.machine.alone
                    return alone(piece, 1)
        elif not _INT_ONLY.issuperset(map(type, ids)):
            ids = checked_ids(ids)
        return self._feed(ids)

    def fed(self, ids: Any, finish: str | None = None) -> Step:
        """``Turn.feed_ids`` once the turn's fast path is open: a delta of one ordinary token,
        or of several with no marker (not the last), is its step, straight from the body
        being read (``Machine.alone``); another list of ints is parsed here too, its step the
        machine's collector's (a step is never falsy, so ``or`` picks the collector's only
        where none was built); any other delta (not a list of ints, the last) goes to
        :attr:`general`, the turn's feed."""
        if finish is None and ids.__class__ is list:
            if len(ids) == 1:
                token = ids[0]
                if token.__class__ is int:
                    if not self.pending and token >= 0:
                        try:
                            piece = self.table[token]
                        except IndexError:
                            piece = None
                        if piece.__class__ is str:
                            alone = self.machine.alone
                            return alone(piece, 1)
                    # a marker, a cut character, an unknown id
                    return self._feed(ids) or self.machine.out.step()
            elif _INT_ONLY.issuperset(map(type, ids)):  # several tokens (or none)
                return self._feed(ids) or self.machine.out.step()
        return self.general(ids, finish)

    def made(self, ids: Any) -> Any:
        """As :meth:`feed`, for ``Turn.decode_ids`` (which is this method once the turn's fast
        path is open): a delta of one ordinary token gives what the machine's builder made of
        it (``Machine.made``); any other delta, or one the builder left to the collector,
        gives :attr:`stepped` (its step, built)."""
        if ids.__class__ is list and len(ids) == 1:
            token = ids[0]
            if token.__class__ is int:
                if not self.pending and token >= 0:
                    try:
                        piece = self.table[token]
                    except IndexError:
                        piece = None
                    if piece.__class__ is str:
                        make = self.machine.made
                        made = make(piece, 1)
                        return self.stepped() if made is None else made
                # checked already: a marker, a cut character, an unknown id
                return self.stepped(self._feed(ids))
        # Not one int: feed() checks the ids; a step it built directly is built here.
        return self.stepped(self.feed(ids))

    def _feed(self, ids: list[int]) -> Step | None:
        """Runs of ordinary tokens, each passed on at once, and the markers between them.

        A delta that is one run (no marker: most deltas) is the feed's one piece of text,
        handed to ``Machine.alone``, which builds its step with no collector: that step is
        returned. Otherwise None: the step is in the machine's collector."""
        table, machine = self.table, self.machine
        run: list[Any] = []
        cut = False  # the run holds a token that cuts a UTF-8 character (bytes, not text)
        whole = True  # no marker (or unknown id) so far: the delta may be one run
        for token in ids:
            try:  # one comparison, not two: an id past the table raises
                piece = table[token] if token >= 0 else None
            except IndexError:
                piece = None
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
            whole = False
            if self.pending:  # a character cut by the marker
                self.flush()
            if piece is None:
                machine.unknown_token()
            else:
                machine.marker(piece)
        if not run:
            return None
        if whole and not cut and not self.pending:  # the usual: whole characters only
            alone = machine.alone
            return alone("".join(run), len(run))
        return self._run(run, cut, whole)

    def _run(self, run: list[Any], cut: bool, alone: bool = False) -> Step | None:
        """Pass on a run of ordinary tokens: their route cannot change inside the run.
        ``alone``: the run is the whole feed, whose step is returned (as :meth:`_feed`)."""
        # Decoded only where a character is cut; else whole characters, joined.
        text = self._decode(run) if cut or self.pending else "".join(run)
        tokens = len(run) + self.owed
        if not text:  # the run only began a character
            self.owed = tokens
            return EMPTY if alone else None
        self.owed = 0
        if alone:  # a delta of ordinary tokens, one cutting a character: not the usual path
            return self.machine.alone(text, tokens)
        self.machine.text(text, tokens)
        return None

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
            self.machine.text(text, tokens)


class TextInput:
    """Text with literal special-token spellings to text and markers.

    As :class:`IdsInput`: :meth:`fed` and :meth:`made` are ``Turn.feed_text`` and
    ``Turn.decode_text`` once the turn's fast path is open; the usual delta (text with no
    ``<`` and nothing held from before) is handled here, any other handed back to the turn.
    """

    __slots__ = ("machine", "held", "tail", "joint", "stepped", "general")

    def __init__(self, machine: Machine, stepped: Callable[..., Any] | None = None,
                 general: Callable[[Any, str | None], Step] | None = None) -> None:
        self.machine = machine  # where the text and markers go
        self.held = ""  # the end of the last delta, which may begin a marker
        self.tail = ""  # text passed on since the last marker, from its last "<" (short)
        # ``tail`` at a dropped marker, when it begins a spelling (the tail stays as it is
        # while there is a joint: the fast paths' ``not self.tail`` also says "no joint")
        self.joint = ""
        self.stepped = stepped  # as IdsInput's
        self.general = general

    def fed(self, text: Any, finish: str | None = None) -> Step:
        """``Turn.feed_text`` once the turn's fast path is open: a delta with no ``<`` (not
        the last), while nothing is held or kept from before, is its step, straight from
        the body being read (``Machine.alone``); another text is parsed here too; the last
        delta, or one that is not a str, goes to :attr:`general`, the turn's feed."""
        if finish is None and text.__class__ is str:
            if text and "<" not in text and not self.held and not self.tail:
                alone = self.machine.alone
                return alone(text, 0)
            return (text and self.feed(text)) or self.machine.out.step()
        return self.general(text, finish)

    def made(self, text: Any) -> Any:
        """As :meth:`fed`, for ``Turn.decode_text``: the usual delta gives what the machine's
        builder made of it (``Machine.made``); any other gives :attr:`stepped`."""
        if text.__class__ is not str:
            return self.general(text, None)  # the turn's feed refuses it (TypeError)
        if text and "<" not in text and not self.held and not self.tail:
            make = self.machine.made
            made = make(text, 0)
            return self.stepped() if made is None else made
        return self.stepped(self.feed(text) if text else None)

    def _pass(self, text: str) -> None:
        """Pass text on, remembering its end from its last ``<`` (a spelling may start)."""
        self.machine.text(text)
        if self.tail or "<" in text:
            self._remember(text)

    def _remember(self, text: str) -> None:
        k = text.rfind("<")
        if k >= 0:
            self.tail = text[k:] if len(text) - k < hm.MAX_SPELLING else ""
        elif self.tail:
            tail = self.tail + text
            self.tail = tail if len(tail) < hm.MAX_SPELLING else ""

    def feed(self, text: str) -> Step | None:
        """Parse one delta's text. Returns the step when the machine built it directly (a
        piece with no marker), else None: the step is in the machine's collector."""
        if self.held:
            text = self.held + text
            self.held = ""
        emit_from = 0  # text[emit_from:] is plain text not yet passed on
        if self.joint:
            emit_from = self._settle(text, 0)
            if emit_from < 0:
                return None
        i = text.find(_OPEN, emit_from)
        if i < 0:  # the common case: a piece with no marker
            n = len(text)
            if n and text[-1] == "<" and emit_from < n:
                self.held = "<"
                n -= 1
            if emit_from == 0 and n == len(text):  # the whole piece: one step
                alone = self.machine.alone
                step = alone(text, 0)
                if self.tail or "<" in text:
                    self._remember(text)
                return step
            if emit_from < n:
                self._pass(text[emit_from:n])
            return None
        self._markers(text, emit_from, i)
        return None

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
            self.machine.text(self.held)
            self.held = ""
