"""Token-id tables: what each id of a Harmony tokenizer means to the parser.

A :class:`Vocab` holds one list indexed by token id whose entries are, for ordinary tokens,
the token's text (``str``) where its bytes are whole UTF-8 characters, else its bytes (a
token that cuts a character); a marker constant from :mod:`harmony_plugins.harmony` (special
tokens); or None (ids the tokenizer does not define). Storing text saves the hot path a
decode per token. Building one walks the whole vocabulary, so it is done once per tokenizer
per process and cached; the parser's hot path is then a single list index per token.

The special ids are read from the tokenizer itself, never assumed: a tokenizer that lacks
the Harmony control tokens is refused with :class:`NotHarmonyTokenizer`.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .. import harmony as hm


class NotHarmonyTokenizer(ValueError):
    """The tokenizer cannot be a gpt-oss (Harmony) one."""


class Vocab:
    """Token id -> text, bytes or marker. Build with the class methods; share freely
    (read-only)."""

    __slots__ = ("table", "name")

    def __init__(self, table: list[str | bytes | int | None], name: str):
        self.table = table
        self.name = name

    def __repr__(self) -> str:
        return f"<Vocab {self.name} ({len(self.table)} ids)>"

    @classmethod
    def from_pieces(
        cls, pieces: Sequence[bytes | None], specials: Mapping[str, int], name: str = "custom"
    ) -> Vocab:
        """Build from ordinary-token bytes (indexed by id) and special spellings -> ids."""
        missing = [s for s in hm.REQUIRED if s not in specials]
        if missing:
            raise NotHarmonyTokenizer(
                f"tokenizer {name!r} is not a Harmony (gpt-oss) tokenizer: it has no "
                f"special token(s) {', '.join(missing)}"
            )
        size = max(len(pieces), max(specials.values()) + 1, hm.VOCAB_SIZE)
        table: list[str | bytes | int | None] = [_text_or_bytes(p) for p in pieces]
        table.extend([None] * (size - len(table)))
        for token_id in hm.RESERVED_IDS:  # ids the model has but the tokenizer may not list
            if table[token_id] is None:
                table[token_id] = hm.IGNORED
        for spelling, token_id in specials.items():
            table[token_id] = hm.marker_for_spelling(spelling)
        return cls(table, name)

    @classmethod
    def o200k_harmony(cls) -> Vocab:
        """gpt-oss's vocabulary, built offline from the embedded o200k ranks (cached)."""
        return _o200k_harmony()

    @classmethod
    def from_tiktoken(cls, encoding: Any) -> Vocab:
        """From a ``tiktoken.Encoding`` (cached per encoding object)."""
        return per_tokenizer(_cache, encoding, _build_from_tiktoken)

    @classmethod
    def from_hf(cls, tokenizer: Any) -> Vocab:
        """From a Hugging Face tokenizer (transformers or ``tokenizers``; cached per object)."""
        return per_tokenizer(_cache, tokenizer, _build_from_hf)


def _text_or_bytes(piece: bytes | None) -> str | bytes | None:
    """A token's text if its bytes are whole UTF-8 characters, else the bytes themselves."""
    if piece is None:
        return None
    try:
        return piece.decode("utf-8")
    except UnicodeDecodeError:
        return piece


_o200k: Vocab | None = None
_o200k_lock = threading.Lock()


def _o200k_harmony() -> Vocab:
    """Built once per process: threads racing for the first use wait for one build."""
    global _o200k
    vocab = _o200k
    if vocab is not None:
        return vocab
    with _o200k_lock:
        if _o200k is None:
            from .o200k import o200k_base_pieces

            _o200k = Vocab.from_pieces(o200k_base_pieces(), hm.SPECIAL_IDS, "o200k_harmony")
        return _o200k


_cache: dict[int, tuple[Any, Vocab]] = {}
_cache_lock = threading.Lock()


def per_tokenizer(cache: dict[int, tuple[Any, Any]], tokenizer: Any, build: Any) -> Any:
    """``build(tokenizer)``, once per tokenizer object and ``cache``: engines build parser
    objects per request, a tokenizer once (tokenizers are not always hashable)."""
    key = id(tokenizer)
    hit = cache.get(key)
    if hit is not None and hit[0] is tokenizer:
        return hit[1]
    with _cache_lock:
        hit = cache.get(key)
        if hit is not None and hit[0] is tokenizer:
            return hit[1]
        value = build(tokenizer)
        cache[key] = (tokenizer, value)  # holding the tokenizer keeps its id unique
        return value


def _build_from_tiktoken(encoding: Any) -> Vocab:
    specials = {s: encoding.encode_single_token(s) for s in encoding.special_tokens_set}
    special_ids = set(specials.values())
    pieces: list[bytes | None] = []
    for token_id in range(encoding.n_vocab):
        if token_id in special_ids:
            pieces.append(None)
            continue
        try:
            pieces.append(encoding.decode_single_token_bytes(token_id))
        except KeyError:
            pieces.append(None)
    return Vocab.from_pieces(pieces, specials, getattr(encoding, "name", "tiktoken"))


@functools.cache
def _byte_decoder() -> dict[str, int]:
    """The inverse of byte-level BPE's byte -> printable character table."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {chr(b): b for b in printable}
    extra = 0
    for b in range(256):
        if b not in printable:
            table[chr(256 + extra)] = b
            extra += 1
    return table


def _build_from_hf(tokenizer: Any) -> Vocab:
    backend = getattr(tokenizer, "backend_tokenizer", tokenizer)
    if not hasattr(backend, "get_added_tokens_decoder"):
        raise NotHarmonyTokenizer(
            f"{type(tokenizer).__name__} is not a Hugging Face fast tokenizer; gpt-oss ships one"
        )
    name = getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__
    added = {int(i): tok.content for i, tok in backend.get_added_tokens_decoder().items()}
    specials = {content: i for i, content in added.items() if content in hm.SPELLINGS}
    if type(backend.decoder).__name__ != "ByteLevel":
        raise NotHarmonyTokenizer(
            f"tokenizer {name!r} is not byte-level BPE, so it is not gpt-oss's o200k_harmony"
        )
    vocab = backend.get_vocab(with_added_tokens=False)
    decoder = _byte_decoder()
    pieces: list[bytes | None] = [None] * (max(vocab.values(), default=-1) + 1)
    try:
        for token, token_id in vocab.items():
            pieces[token_id] = bytes([decoder[c] for c in token])
    except KeyError:
        raise NotHarmonyTokenizer(
            f"tokenizer {name!r} has tokens outside the byte-level alphabet, so it is not "
            "gpt-oss's o200k_harmony"
        ) from None
    return Vocab.from_pieces(pieces, specials, name)
