"""The o200k_harmony vocabulary of gpt-oss, shipped in the wheel and read offline.

Where the vocabulary comes from, and why. On vLLM the parse's token table comes from the
tokenizer vLLM loaded for the model (``Vocab.from_hf``); SGLang's chat parsers take text and
need no table. Two paths inside SGLang read this module: its Responses API, whose drop-in
parser (:mod:`harmony_plugins.compat`) is built with no table of its own and takes this one,
and its prompt, where openai-harmony (``openai-harmony`` 0.0.8, which SGLang installs) cannot
download its vocabulary and gets this copy written for it
(:mod:`harmony_plugins.vocabulary_files`). Outside an engine (``harmony-ext parse
--input ids``, ``demo``, ``parse_ids`` in the Python API) the vocabulary is
``data/o200k_base.tiktoken.xz`` in this package: OpenAI's published ``o200k_base.tiktoken``
byte for byte, xz-compressed (1.1 MB), checked against its published sha256
(:data:`O200K_BASE_SHA256`) each time it is read (``xz -dc
harmony_plugins/data/o200k_base.tiktoken.xz | sha256sum`` shows the same). So the package has no
runtime dependency and needs no network. This module opens no file: :mod:`harmony_plugins.data`
reads the shipped bytes, and this module checks and parses them. The alternatives, weighed:
tiktoken and openai-harmony 0.0.8 download this file at run time, which fails on air-gapped
hosts; oss-harmony embeds it but exposes the token bytes only through a private attribute,
and it and openai-harmony install the same import name (``openai_harmony``) while vLLM
depends on the one and SGLang on the other, so requiring either could overwrite the other
engine's copy; quicktok-v1 (used before) is a little-known package whose data file had to be
read through its private layout. A tokenizer file the user already has can be used as well:
``Vocab.from_tiktoken`` / ``Vocab.from_hf``.

Only the standard library is imported here at import time (``lzma`` when the file is first
read); ``tiktoken`` is imported only by :func:`tiktoken_encoding` (the ``tiktoken`` extra). The
special tokens' spellings and ids are :mod:`harmony_plugins.harmony`'s.
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import TYPE_CHECKING

from .. import harmony as hm

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "FILE_NAME",
    "O200K_BASE_SHA256",
    "O200K_PAT_STR",
    "checked_file",
    "o200k_base_pieces",
    "parse_pieces",
    "tiktoken_encoding",
    "tiktoken_file_bytes",
]

FILE_NAME = "o200k_base.tiktoken"
"""The file's name, as openai-harmony and tiktoken look for it."""
#: sha256 of the official ``o200k_base.tiktoken`` (the hash tiktoken and openai-harmony check).
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# The o200k pre-tokenizer regex. tiktoken defines it only as a local variable inside
# tiktoken_ext.openai_public.o200k_base(), which cannot run offline (it loads the vocabulary
# first), so there is no constant to read at run time; the tests check this copy against
# tiktoken's own encoding. Each alternative, in match order:
_UPPER = r"[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]"  # letters that can start a word in caps
_LOWER = r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]"  # letters that continue a word in lower case
_LEAD = r"[^\r\n\p{L}\p{N}]?"  # one optional leading space or symbol
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
O200K_PAT_STR: str = "|".join(
    [
        _LEAD + _UPPER + "*" + _LOWER + "+" + _CONTRACTION,  # "Hello", " world", "don't"
        _LEAD + _UPPER + "+" + _LOWER + "*" + _CONTRACTION,  # "HTTP", " NASA's"
        r"\p{N}{1,3}",  # digits in groups of at most three
        r" ?[^\s\p{L}\p{N}]+[\r\n/]*",  # punctuation runs, with trailing newlines or slashes
        r"\s*[\r\n]+",  # whitespace ending in newlines
        r"\s+(?!\S)",  # whitespace not followed by a word (leaves one space for it)
        r"\s+",  # any other whitespace
    ]
)

_REINSTALL = "reinstall harmony-ext (pip install --force-reinstall harmony-ext)"


def checked_file(xz: bytes, where: str = "the shipped o200k vocabulary") -> bytes:
    """``o200k_base.tiktoken``'s bytes from their xz-compressed form, checked against the
    published sha256 (a wrong vocabulary silently corrupts every decoded response)."""
    try:
        import lzma
    except ImportError as e:  # a CPython built without liblzma
        raise RuntimeError(f"the o200k vocabulary is xz-compressed and this Python has no lzma "
                           f"module ({e}); use a Python built with it") from None
    try:
        data = lzma.decompress(xz)
    except lzma.LZMAError as e:
        raise RuntimeError(f"cannot read {where} ({e}); {_REINSTALL}") from e
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_BASE_SHA256:
        raise RuntimeError(f"{where} has sha256 {digest}, expected {O200K_BASE_SHA256}; "
                           f"{_REINSTALL}")
    return data


def parse_pieces(data: bytes, where: str = "the shipped o200k vocabulary") -> tuple[bytes, ...]:
    """Parse ``base64(token) rank`` lines; ranks must be exactly 0..n-1 in order.

    Checked line by line; the shipped file also passed the sha256 check, so this guards the
    parser, not the data.
    """
    pieces: list[bytes] = []
    for number, line in enumerate(data.splitlines(), 1):
        token, _, rank = line.partition(b" ")
        try:
            piece = base64.b64decode(token, validate=True)
            ok = int(rank) == len(pieces) and piece != b""
        except ValueError:
            ok = False
        if not ok:
            raise RuntimeError(f"malformed o200k vocabulary ({where}), line {number}: "
                               f"{line[:60]!r}; {_REINSTALL}")
        pieces.append(piece)
    size = hm.ORDINARY_TOKENS
    if len(pieces) != size or len(set(pieces)) != size:
        raise RuntimeError(f"malformed o200k vocabulary ({where}): {len(pieces)} lines, "
                           f"{len(set(pieces))} distinct tokens, expected {size}")
    return tuple(pieces)


@functools.cache
def tiktoken_file_bytes() -> bytes:
    """The official ``o200k_base.tiktoken`` contents: ``base64(token) rank`` lines."""
    from ..data import o200k_base_xz

    return checked_file(o200k_base_xz())


@functools.cache
def _cached_pieces() -> tuple[bytes, ...]:
    return parse_pieces(tiktoken_file_bytes())


def o200k_base_pieces() -> list[bytes]:
    """The 199,998 o200k_base token byte strings; index == rank == token id.

    The file is read and checked once per process; each call returns a fresh list so a
    caller's mutation cannot corrupt the cached vocabulary.
    """
    return list(_cached_pieces())


@functools.cache
def tiktoken_encoding() -> tiktoken.Encoding:
    """A ``tiktoken.Encoding`` named ``o200k_harmony``, built in memory with no download.

    Specials are :data:`harmony_plugins.harmony.SPECIAL_IDS` (one spelling per id, unlike
    tiktoken's registry entry which also accepts ``<|reserved_200018|>``). Needs the
    ``tiktoken`` extra.
    """
    try:
        import tiktoken
    except ImportError:
        raise ModuleNotFoundError(
            "harmony-ext: tiktoken_encoding() needs tiktoken: "
            "pip install 'harmony-ext[tiktoken]'") from None

    return tiktoken.Encoding(
        name="o200k_harmony",
        pat_str=O200K_PAT_STR,
        mergeable_ranks={piece: rank for rank, piece in enumerate(_cached_pieces())},
        special_tokens=dict(hm.SPECIAL_IDS),
        explicit_n_vocab=hm.VOCAB_SIZE,
    )
