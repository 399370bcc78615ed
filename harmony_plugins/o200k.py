"""The o200k_harmony vocabulary of gpt-oss, shipped in the wheel and read offline.

Where the vocabulary comes from, and why. Inside vLLM and SGLang the adapters never read
this module: the vocabulary comes from the tokenizer the engine loaded for the model
(``Vocab.from_hf``). Outside an engine (``harmony-ext parse --input ids``, ``demo``,
``parse_ids`` in the Python API) it comes from ``data/o200k_base.tiktoken.xz`` in this
package: OpenAI's published ``o200k_base.tiktoken`` byte for byte, xz-compressed (1.1 MB),
checked against its published sha256 (:data:`O200K_BASE_SHA256`) each time it is read
(``xz -dc harmony_plugins/data/o200k_base.tiktoken.xz | sha256sum`` shows the same). So the
package has no runtime dependency and needs no network. The alternatives, weighed:
tiktoken and openai-harmony 0.0.8 download this file at run time, which fails on air-gapped
hosts; oss-harmony embeds it but exposes the token bytes only through a private attribute,
and it and openai-harmony install the same import name (``openai_harmony``) while vLLM
depends on the one and SGLang on the other, so requiring either could overwrite the other
engine's copy; quicktok-v1 (used before) is a little-known package whose data file had to be
read through its private layout. A tokenizer file the user already has can be used as well:
``Vocab.from_tiktoken`` / ``Vocab.from_hf``.

Only the standard library is imported here at import time (``lzma`` when the file is first
read); ``tiktoken`` is imported only by :func:`tiktoken_encoding` (the ``tiktoken`` extra).

Naming of id 200018: tiktoken and the published Hugging Face files call it
``<|endofprompt|>`` (as we do); openai-harmony calls it ``<|reserved_200018|>``. tiktoken's
own o200k_harmony accepts both spellings.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from . import markers

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "HF_ADDED_TOKEN_IDS",
    "O200K_BASE_SHA256",
    "O200K_BASE_SIZE",
    "O200K_HARMONY_SPECIALS",
    "O200K_HARMONY_VOCAB_SIZE",
    "O200K_PAT_STR",
    "TIKTOKEN_CACHE_NAME",
    "o200k_base_pieces",
    "tiktoken_encoding",
    "tiktoken_file_bytes",
    "write_tiktoken_file",
]

#: Number of ordinary (mergeable) tokens: ranks 0..199997.
O200K_BASE_SIZE = 199_998
#: Rows of gpt-oss's embedding matrix: ordinary tokens plus specials, ids 0..201087.
O200K_HARMONY_VOCAB_SIZE = markers.VOCAB_SIZE
#: sha256 of the official ``o200k_base.tiktoken`` (the hash tiktoken and openai-harmony check).
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
#: File name tiktoken looks for in ``$TIKTOKEN_CACHE_DIR`` (sha1 of the download URL); put
#: :func:`write_tiktoken_file`'s output there and ``tiktoken.get_encoding("o200k_harmony")``
#: works offline.
TIKTOKEN_CACHE_NAME = "fb374d419588a4632f3f557e76b4b70aebbca790"
#: The specials a Hugging Face tokenizer of gpt-oss declares (as the published files do):
#: 199998..200018, so ``len(tokenizer) == 200019``. Higher reserved ids are never sampled.
HF_ADDED_TOKEN_IDS = range(199_998, 200_019)

_NAMED_SPECIALS = {
    199_998: "<|startoftext|>",
    199_999: "<|endoftext|>",
    200_002: "<|return|>",
    200_003: "<|constrain|>",
    200_005: "<|channel|>",
    200_006: "<|start|>",
    200_007: "<|end|>",
    200_008: "<|message|>",
    200_012: "<|call|>",
    200_018: "<|endofprompt|>",
}

#: Special-token spelling -> id, in id order, one spelling per id 199998..201087.
O200K_HARMONY_SPECIALS: dict[str, int] = {
    _NAMED_SPECIALS.get(i, f"<|reserved_{i}|>"): i
    for i in range(O200K_BASE_SIZE, O200K_HARMONY_VOCAB_SIZE)
}

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

_DATA = Path(__file__).with_name("data") / "o200k_base.tiktoken.xz"
_REINSTALL = "reinstall harmony-ext (pip install --force-reinstall harmony-ext)"


def _read_file(path: Path = _DATA) -> bytes:
    """The shipped file, decompressed and checked against the published sha256."""
    try:
        import lzma
    except ImportError as e:  # a CPython built without liblzma
        raise RuntimeError(f"the o200k vocabulary is xz-compressed and this Python has no lzma "
                           f"module ({e}); use a Python built with it") from None
    try:
        data = lzma.decompress(path.read_bytes())
    except (OSError, lzma.LZMAError) as e:
        raise RuntimeError(f"cannot read the o200k vocabulary {path} ({e}); {_REINSTALL}") from e
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_BASE_SHA256:
        raise RuntimeError(f"the o200k vocabulary {path} has sha256 {digest}, expected "
                           f"{O200K_BASE_SHA256}; {_REINSTALL}")
    return data


def _read_pieces(data: bytes, where: Path = _DATA) -> tuple[bytes, ...]:
    """Parse ``base64(token) rank`` lines; ranks must be exactly 0..n-1 in order.

    Checked line by line (a wrong vocabulary silently corrupts every decoded response); the
    shipped file also passed the sha256 check, so this guards the parser, not the data.
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
            raise RuntimeError(f"malformed o200k vocabulary {where}, line {number}: "
                               f"{line[:60]!r}; {_REINSTALL}")
        pieces.append(piece)
    if len(pieces) != O200K_BASE_SIZE or len(set(pieces)) != O200K_BASE_SIZE:
        raise RuntimeError(f"malformed o200k vocabulary {where}: {len(pieces)} lines, "
                           f"{len(set(pieces))} distinct tokens, expected {O200K_BASE_SIZE}")
    return tuple(pieces)


@functools.cache
def tiktoken_file_bytes() -> bytes:
    """The official ``o200k_base.tiktoken`` contents: ``base64(token) rank`` lines."""
    return _read_file()


@functools.cache
def _cached_pieces() -> tuple[bytes, ...]:
    return _read_pieces(tiktoken_file_bytes())


def o200k_base_pieces() -> list[bytes]:
    """The 199,998 o200k_base token byte strings; index == rank == token id.

    The file is read and checked once per process; each call returns a fresh list so a
    caller's mutation cannot corrupt the cached vocabulary.
    """
    return list(_cached_pieces())


def write_tiktoken_file(path: str | os.PathLike[str]) -> Path:
    """Write ``o200k_base.tiktoken`` to *path* (a file name) and return it.

    The bytes were checked against :data:`O200K_BASE_SHA256` when read, and the file is
    replaced atomically, so tiktoken / openai-harmony never see a bad or partial
    file (they would try to re-download it).
    """
    data = tiktoken_file_bytes()  # checked against O200K_BASE_SHA256 when read
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return target


@functools.cache
def tiktoken_encoding() -> tiktoken.Encoding:
    """A ``tiktoken.Encoding`` named ``o200k_harmony``, built in memory with no download.

    Specials are :data:`O200K_HARMONY_SPECIALS` (one spelling per id, unlike tiktoken's
    registry entry which also accepts ``<|reserved_200018|>``). Needs the ``tiktoken`` extra.
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
        special_tokens=dict(O200K_HARMONY_SPECIALS),
        explicit_n_vocab=O200K_HARMONY_VOCAB_SIZE,
    )

