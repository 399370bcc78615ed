"""Control-token spellings in client text kept as text through a text template (contract 8).

A chat template renders messages into one string that is then tokenized with the special
tokens recognised, so a user writing ``<|call|>`` (or a tool result holding ``<|end|>``) would
put the real control token into the prompt. :class:`Escaper` replaces every such spelling in
the template's input with a placeholder made of a per-request nonce, lets the template render,
and splits the result into the template's own markers and text, with the spellings put back in
the text (:class:`~harmony_plugins.prompt._model.Piece`, the text ``UNTRUSTED``: encode it with
special tokens disallowed). Placeholders are ASCII with no quote or space, so they survive
``tojson`` and whitespace filters; a template that cuts one gets no pieces, and the caller
renders the request its usual way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..vocab import per_tokenizer
from ._model import MARKER, UNTRUSTED, Piece, encode

PREFIX = "[[hx-"
_escapers: dict[int, tuple[Any, Escaper | None]] = {}


def for_tokenizer(tokenizer: Any) -> Escaper | None:
    """The escaper of a Hugging Face tokenizer's added tokens (cached per tokenizer), or None
    when it has none to guard."""

    def build(tokenizer: Any) -> Escaper | None:
        try:
            added = {s: i for s, i in tokenizer.get_added_vocab().items() if s}
        except Exception:  # not a Hugging Face tokenizer: nothing we know to guard
            added = {}
        return Escaper(added) if added else None

    return per_tokenizer(_escapers, tokenizer, build)


class Escaper:
    """A tokenizer's special-token spellings, escaped in a template's input and split out of
    its output."""

    def __init__(self, spellings: Iterable[str] | dict[str, int]) -> None:
        """``spellings``: the special tokens' spellings, or a mapping of them to their ids
        (needed by :meth:`encode`)."""
        self.ids: dict[str, int] = dict(spellings) if isinstance(spellings, dict) else {}
        ordered = sorted(set(spellings), key=len, reverse=True)  # the longest spelling first
        self.pattern = re.compile("|".join(map(re.escape, ordered)))

    def escape(self, value: Any, found: list[str], nonce: str) -> Any:
        """``value`` (messages, tools: nested dicts, lists, tuples, strings) with every spelling
        in its strings made a placeholder; the spellings are appended to ``found``."""
        if isinstance(value, str):
            if "<" not in value:
                return value

            def placeholder(m: re.Match[str]) -> str:
                found.append(m.group())
                return f"{PREFIX}{nonce}-{len(found) - 1}]]"

            return self.pattern.sub(placeholder, value)
        if isinstance(value, list):
            return [self.escape(v, found, nonce) for v in value]
        if isinstance(value, tuple):
            return tuple(self.escape(v, found, nonce) for v in value)
        if isinstance(value, dict):
            return {k: self.escape(v, found, nonce) for k, v in value.items()}
        return value

    def pieces(self, rendered: str, found: list[str], nonce: str) -> list[Piece] | None:
        """A rendered template as its own markers and text, the escaped spellings back in the
        text; None when the template cut a placeholder."""
        placeholder = re.compile(re.escape(f"{PREFIX}{nonce}-") + r"(\d+)\]\]")
        if PREFIX in placeholder.sub("", rendered):
            return None
        out: list[Piece] = []

        def text(segment: str) -> None:
            if segment:
                out.append(Piece(UNTRUSTED, placeholder.sub(lambda m: found[int(m.group(1))],
                                                             segment)))

        pos = 0
        for m in self.pattern.finditer(rendered):  # only the template's own markers are left
            text(rendered[pos:m.start()])
            out.append(Piece(MARKER, m.group()))
            pos = m.end()
        text(rendered[pos:])
        return out

    def encode(self, rendered: str, found: list[str], nonce: str,
               encode_text: Any) -> list[int] | None:
        """Token ids of a rendered template: its own markers as the tokenizer's ids, the rest
        by ``encode_text`` (which must not read special tokens); None as :meth:`pieces`."""
        pieces = self.pieces(rendered, found, nonce)
        return None if pieces is None else encode(pieces, encode_text, self.ids)
