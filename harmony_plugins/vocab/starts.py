"""How each o200k_harmony token's text begins: what the generation guard needs of a token it
does not know by its id.

The guard (:mod:`harmony_plugins._guard`) reads a role written as text after ``<|end|>``
(``user<|channel|>``, ``functions.get_weather to=assistant<|channel|>``). The role's first
token it knows by id (:data:`harmony_plugins.harmony.ROLE_TOKENS`); whether the word ends
there (whitespace follows) or goes on as a tool's name (a full stop follows) is told by the
next token's first character, and that token can be any. So each id's class is a fact about
the vocabulary, like its special ids: one byte per id, shipped beside the vocabulary
(:func:`harmony_plugins.data.o200k_starts_xz`, 33 kB compressed, 201 kB once read), so that the
engine's scheduler, where the guard runs, reads 201 kB once and never the vocabulary itself.
``tests/test_guard.py`` checks the shipped bytes against :func:`starts_of` on the shipped
vocabulary; ``scripts/make_token_starts.py`` writes them.
"""

from __future__ import annotations

import functools
import lzma
from collections.abc import Sequence

from .. import harmony as hm

OTHER = 0
"""Anything else: other text, a token that cuts a character, a special token, an unused id."""
SPACE = 1
"""Whitespace only (``\\n\\n``, ``" "``)."""
SPACED = 2
"""Whitespace, then something else (``" to"``)."""
DOT = 3
"""A full stop first (``.get``)."""


def starts_of(table: Sequence[str | bytes | int | None]) -> bytes:
    """One class per id of a vocabulary table (:attr:`harmony_plugins.Vocab.table`). A token
    that cuts a character counts by what its bytes begin with: a partial character is OTHER,
    so Unicode whitespace split across tokens is never taken for whitespace."""
    out = bytearray(len(table))
    for token_id, entry in enumerate(table):
        if isinstance(entry, bytes):
            entry = entry.decode("utf-8", "replace")
        if not isinstance(entry, str) or not entry:
            continue
        if entry.isspace():
            out[token_id] = SPACE
        elif entry[0].isspace():
            out[token_id] = SPACED
        elif entry[0] == ".":
            out[token_id] = DOT
    return bytes(out)


@functools.cache
def shipped() -> bytes:
    """The shipped classes of o200k_harmony's ids (:data:`harmony_plugins.harmony.VOCAB_SIZE`
    of them), read once per process."""
    from ..data import o200k_starts_xz

    table = lzma.decompress(o200k_starts_xz())
    if len(table) != hm.VOCAB_SIZE:
        raise RuntimeError(f"the shipped token classes hold {len(table)} ids, not "
                           f"{hm.VOCAB_SIZE}; reinstall harmony-ext")
    return table

