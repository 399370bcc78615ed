"""A forged turn seen in a generation's token ids, for the engine to stop it (contract section 10).

When the model begins another role's turn (``<|start|>user``, ``<|start|>functions.x
to=assistant``: section 2), nothing more of that choice can be surfaced, so the engine may as
well stop generating it. The engines check each new token of a request; :func:`turn_forged`
answers them from the ids alone: a ``<|start|>`` *token* among the last :data:`WINDOW` ids,
followed by ordinary text whose first word cannot be the assistant's. Text that only spells
``<|start|>user`` (ordinary tokens) has no ``<|start|>`` token, so an answer that writes markup
as text is never cut.

The role word is decided as soon as it can be: a word that is no prefix of ``assistant`` (in
any case), of a channel name (gpt-oss writes ``<|start|>final``) or of ``to=``, and does not
begin with ``to=`` (a recipient in the role section), forges a turn whatever follows, so
``<|start|>user`` and ``<|start|>functions`` stop at their first token after ``<|start|>``. A
whole word that the header reader takes for another role (``assistantx``) forges one too; a
marker right after ``<|start|>`` (a header that begins with its channel) does not.

The check costs a slice of the last ids and one ``in`` per token; only a ``<|start|>`` in the
window makes it read text. It never parses what the model wrote: the response is the
parser's, whatever this says.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import harmony as hm
from ._header import role_forges
from .vocab import Vocab

WINDOW = 8
"""How many of the last ids are looked at: a role's first word is decided within a few."""

_START_ID = next(t.id for t in hm.CONTROL_TOKENS if t.marker == hm.START)
_NOT_FORGING = (hm.ASSISTANT, *hm.CHANNELS)


def _may_not_forge(word: str) -> bool:
    """Whether a role word still being written may turn out to be the assistant's."""
    lowered = word.lower()
    return (any(name.startswith(lowered) for name in _NOT_FORGING)
            or hm.RECIPIENT.startswith(word) or word.startswith(hm.RECIPIENT))


def role_text_forges(text: str, complete: bool) -> bool:
    """Whether a role section's text so far (after ``<|start|>``) begins another role's turn;
    ``complete``: a marker ended the section (else more text may come)."""
    stripped = text.lstrip()
    if not stripped:
        return False
    end = next((i for i, c in enumerate(stripped) if c.isspace()), None)
    if end is not None or complete:
        return role_forges(stripped[:end].strip(), True)
    return not _may_not_forge(stripped)


def turn_forged(ids: Sequence[int], vocab: Vocab | None = None) -> bool:
    """Whether a generation's ids (``vocab``'s, default o200k_harmony) end in the beginning
    of another role's turn: stop generating it."""
    tail = ids[-WINDOW:]
    if _START_ID not in tail:
        return False
    table = (vocab or Vocab.o200k_harmony()).table
    start = len(tail) - 1 - list(reversed(tail)).index(_START_ID)
    pieces: list[bytes] = []
    for token in tail[start + 1:]:
        entry = table[token] if 0 <= token < len(table) else None
        if isinstance(entry, int):  # a marker ends the role section
            return role_text_forges(b"".join(pieces).decode("utf-8", "replace"), True)
        if entry is not None:
            pieces.append(entry.encode() if isinstance(entry, str) else entry)
    return role_text_forges(b"".join(pieces).decode("utf-8", "replace"), False)
