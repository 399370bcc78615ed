"""The two front ends: token ids, or decoded text with the markers spelled literally.

Each turns the pieces of one delta into calls of ``Machine.text`` / ``Machine.marker``,
holding back only what cannot be decided yet:

* ids: the first bytes of a UTF-8 character split across tokens (or deltas). Consecutive
  ordinary tokens are joined; most tokens are whole characters, kept as text in the
  vocabulary table, so only runs with a cut character are decoded (in one call).
* text: a possible marker cut by the end of the delta (``<|chan``), at most
  ``MAX_SPELLING - 1`` characters. Text is searched for ``<|`` with ``str.find``, so each
  character is looked at a constant number of times.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterable

from . import markers as mk
from .events import Event
from .machine import BODY, REASONING, Machine

_utf8_decode = codecs.utf_8_decode  # (data, errors, final) -> (text, bytes used)


class IdsInput:
    """Token ids to text and markers, through a vocabulary's table."""

    __slots__ = ("table", "size", "pending", "reasoning_tokens")

    def __init__(self, table: list[str | bytes | int | None]) -> None:
        self.table = table
        self.size = len(table)
        self.pending = b""  # the start of a UTF-8 character whose other bytes are to come
        self.reasoning_tokens = 0  # ordinary tokens that went to reasoning (usage figures)

    def feed(self, ids: Iterable[int], machine: Machine, out: list[Event]) -> None:
        table = self.table
        size = self.size
        if ids.__class__ is list and len(ids) == 1 and not self.pending:  # type: ignore[arg-type]
            # One token per delta, the usual decode step: skip the run machinery.
            token = ids[0]  # type: ignore[index]
            piece = table[token] if 0 <= token < size else None
            if piece.__class__ is str:
                machine.text(piece, out)  # type: ignore[arg-type]
                if machine.state == BODY and machine.route == REASONING:
                    self.reasoning_tokens += 1
                return
        run: list[str | bytes] = []
        cut = False  # the run holds a token that cuts a UTF-8 character (bytes, not text)
        for token in ids:
            piece = table[token] if 0 <= token < size else None
            kind = piece.__class__
            if kind is str:
                run.append(piece)  # type: ignore[arg-type]
                continue
            if kind is bytes:
                run.append(piece)  # type: ignore[arg-type]
                cut = True
                continue
            if run:
                self._run(run, cut, machine, out)
                run = []
                cut = False
            if self.pending:  # a character cut by the marker
                self.flush(machine, out)
            if piece is None:
                machine.unknown_token(out)
            else:
                machine.marker(piece, out)  # type: ignore[arg-type]
        if run:
            self._run(run, cut, machine, out)

    def _run(self, run: list[str | bytes], cut: bool, machine: Machine,
             out: list[Event]) -> None:
        """Pass on a run of ordinary tokens: their route cannot change inside the run."""
        if cut or self.pending:
            text = self._decode(run)
        else:  # the common case: whole characters only, no decoding at all
            text = run[0] if len(run) == 1 else "".join(run)  # type: ignore[assignment]
        if text:
            machine.text(text, out)  # type: ignore[arg-type]
        if machine.state == BODY and machine.route == REASONING:
            self.reasoning_tokens += len(run)

    def _decode(self, run: list[str | bytes]) -> str:
        """Text of a run with a cut character: keep the bytes of one still incomplete."""
        data = self.pending + b"".join(
            p if p.__class__ is bytes else p.encode() for p in run)  # type: ignore[union-attr]
        text, used = _utf8_decode(data, "replace", False)
        self.pending = data[used:] if used < len(data) else b""
        return text

    def flush(self, machine: Machine, out: list[Event]) -> None:
        if self.pending:
            text = self.pending.decode("utf-8", "replace")
            self.pending = b""
            machine.text(text, out)


class TextInput:
    """Text with literal special-token spellings to text and markers."""

    __slots__ = ("held",)

    def __init__(self) -> None:
        self.held = ""

    def feed(self, text: str, machine: Machine, out: list[Event]) -> None:
        if self.held:
            text = self.held + text
            self.held = ""
        find = text.find
        spellings = mk.SPELLINGS
        longest = mk.MAX_SPELLING
        n = len(text)
        emit_from = 0  # text[emit_from:i] is plain text not yet passed on
        i = find("<|")
        while i >= 0:
            j = find("|>", i + 2, i + longest)
            if j < 0:
                if n - i < longest and text[i:] in mk.PREFIXES:
                    self.held = text[i:]  # a marker may be cut by the end of the delta
                    n = i
                    break
                i = find("<|", i + 1)
                continue
            marker = spellings.get(text[i : j + 2])
            if marker is None:
                i = find("<|", i + 1)
                continue
            if emit_from < i:
                machine.text(text[emit_from:i], out)
            machine.marker(marker, out)
            emit_from = j + 2
            i = find("<|", emit_from)
        else:
            if n and text[-1] == "<" and emit_from < n:
                self.held = "<"
                n -= 1
        if emit_from < n:
            machine.text(text[emit_from:n], out)

    def flush(self, machine: Machine, out: list[Event]) -> None:
        if self.held:
            machine.text(self.held, out)
            self.held = ""
