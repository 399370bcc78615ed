"""The o200k_harmony vocabulary of gpt-oss, built offline.

tiktoken and openai-harmony download ``o200k_base.tiktoken`` at run time, which fails on
air-gapped clusters. quicktok-v1 ships the same 199,998 byte-level BPE tokens in a small
binary file, so this module rebuilds everything from that file with no network: the
official ``.tiktoken`` file (checked against its published sha256), a ``tiktoken.Encoding``
and a Hugging Face fast tokenizer directory.

Only the standard library is imported here at import time; ``tiktoken`` and ``tokenizers``
are imported inside the functions that need them, and quicktok is never imported (only its
data file is read), so the parser core stays light.

Naming of id 200018: tiktoken and the published Hugging Face files call it
``<|endofprompt|>`` (as we do); openai-harmony calls it ``<|reserved_200018|>``. tiktoken's
own o200k_harmony accepts both spellings.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import json
import os
import struct
from pathlib import Path
from typing import TYPE_CHECKING

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
    "write_hf_tokenizer",
    "write_tiktoken_file",
]

#: Number of ordinary (mergeable) tokens: ranks 0..199997.
O200K_BASE_SIZE = 199_998
#: Rows of gpt-oss's embedding matrix: ordinary tokens plus specials, ids 0..201087.
O200K_HARMONY_VOCAB_SIZE = 201_088
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

_INSTALL_HINT = "install the quicktok-v1 package (pip install 'quicktok-v1==0.4.0')"


def _vocab_path() -> Path:
    """Locate quicktok's ``o200k.vocab`` without importing quicktok (no native code loaded)."""
    spec = importlib.util.find_spec("quicktok")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        raise RuntimeError(f"o200k vocabulary not found: {_INSTALL_HINT}")
    return Path(locations[0]) / "data" / "o200k.vocab"


def _read_pieces(path: Path) -> tuple[bytes, ...]:
    """Parse quicktok's vocab file: u32 count, then per token u16 length, bytes, u32 rank.

    Everything is checked (count, ranks exactly 0..n-1, distinct tokens, no trailing
    bytes) because a wrong vocabulary silently corrupts every decoded response.
    """

    def bad(why: str) -> RuntimeError:
        return RuntimeError(f"malformed o200k vocabulary {path} ({why}); {_INSTALL_HINT}")

    try:
        data = path.read_bytes()
    except OSError as e:
        raise RuntimeError(f"cannot read o200k vocabulary {path} ({e}); {_INSTALL_HINT}") from e
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        if count != O200K_BASE_SIZE:
            raise bad(f"{count} tokens, expected {O200K_BASE_SIZE}")
        pieces: list[bytes | None] = [None] * count
        offset = 4
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, offset)
            offset += 2
            piece = data[offset : offset + length]
            offset += length
            (rank,) = struct.unpack_from("<I", data, offset)
            offset += 4
            if len(piece) != length or length == 0:
                raise bad("truncated or empty token")
            if rank >= count or pieces[rank] is not None:
                raise bad(f"rank {rank} out of range or repeated")
            pieces[rank] = piece
    except struct.error as e:
        raise bad("truncated") from e
    if offset != len(data):
        raise bad(f"{len(data) - offset} trailing bytes")
    if len(set(pieces)) != count:
        raise bad("repeated token bytes")
    return tuple(pieces)  # type: ignore[arg-type]  # every slot was filled above


@functools.cache
def _cached_pieces() -> tuple[bytes, ...]:
    return _read_pieces(_vocab_path())


def o200k_base_pieces() -> list[bytes]:
    """The 199,998 o200k_base token byte strings; index == rank == token id.

    The file is read and checked once per process; each call returns a fresh list so a
    caller's mutation cannot corrupt the cached vocabulary.
    """
    return list(_cached_pieces())


@functools.cache
def tiktoken_file_bytes() -> bytes:
    """The official ``o200k_base.tiktoken`` contents: ``base64(token) rank`` lines."""
    return b"".join(
        base64.b64encode(piece) + b" " + str(rank).encode() + b"\n"
        for rank, piece in enumerate(_cached_pieces())
    )


def write_tiktoken_file(path: str | os.PathLike[str]) -> Path:
    """Write ``o200k_base.tiktoken`` to *path* (a file name) and return it.

    The bytes are checked against :data:`O200K_BASE_SHA256` before anything is written, and
    the file is replaced atomically, so tiktoken / openai-harmony never see a bad or partial
    file (they would try to re-download it).
    """
    data = tiktoken_file_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_BASE_SHA256:
        raise RuntimeError(
            f"rebuilt o200k_base.tiktoken has sha256 {digest}, expected {O200K_BASE_SHA256}; "
            f"{_INSTALL_HINT}"
        )
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
    registry entry which also accepts ``<|reserved_200018|>``).
    """
    import tiktoken

    return tiktoken.Encoding(
        name="o200k_harmony",
        pat_str=O200K_PAT_STR,
        mergeable_ranks={piece: rank for rank, piece in enumerate(_cached_pieces())},
        special_tokens=dict(O200K_HARMONY_SPECIALS),
        explicit_n_vocab=O200K_HARMONY_VOCAB_SIZE,
    )


def _byte_to_char() -> list[str]:
    """GPT-2's byte-level alphabet: each byte as one printable character.

    Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls, space,
    DEL, NBSP, soft hyphen) take code points 256, 257, ... in byte order. Byte-level BPE
    in ``tokenizers`` works on these characters, so every token has a text spelling.
    """
    printable = {*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)}
    table: list[str] = []
    shifted = 0
    for byte in range(256):
        if byte in printable:
            table.append(chr(byte))
        else:
            table.append(chr(256 + shifted))
            shifted += 1
    return table


def _hf_vocab_and_merges() -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Byte-level vocab and the BPE merges that make ``tokenizers`` reproduce tiktoken.

    tiktoken repeatedly joins the adjacent pair whose concatenation has the lowest rank.
    Listing, for every token, each split into two existing tokens, ordered by the merged
    token's rank, gives ``tokenizers`` the same choice at every step (ties within one
    merged token are ordered by the parts' ranks).
    """
    translate = {byte: char for byte, char in enumerate(_byte_to_char())}
    words = [piece.decode("latin-1").translate(translate) for piece in _cached_pieces()]
    vocab = {word: rank for rank, word in enumerate(words)}
    merges: list[tuple[str, str]] = []
    for word in words:  # rank order, so merges come out sorted by merged rank
        splits = []
        for i in range(1, len(word)):
            left, right = vocab.get(word[:i]), vocab.get(word[i:])
            if left is not None and right is not None:
                splits.append((left, right))
        splits.sort()
        merges.extend((words[left], words[right]) for left, right in splits)
    return vocab, merges


# Real gpt-oss output (text and ids, cross-checked with tiktoken and openai-harmony), used to
# self-check a freshly built HF tokenizer.
_SELF_CHECK_TEXT = (
    '<|channel|>analysis<|message|>User asks: "What is 2 + 2?" Simple arithmetic. Provide'
    " answer.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"
)
_SELF_CHECK_IDS = [
    200005, 35644, 200008, 1844, 31064, 25, 392, 4827, 382, 220, 17, 659, 220, 17, 16842,
    12295, 81645, 13, 51441, 6052, 13, 200007, 200006, 173781, 200005, 17196, 200008, 17, 659,
    220, 17, 314, 220, 19, 13, 200002,
]  # fmt: skip


def write_hf_tokenizer(directory: str | os.PathLike[str]) -> Path:
    """Write a Hugging Face fast tokenizer for gpt-oss into *directory* and return it.

    Writes ``tokenizer.json`` (built with ``tokenizers`` alone, about 28 MB),
    ``tokenizer_config.json`` and ``special_tokens_map.json``, enough for
    ``transformers.AutoTokenizer.from_pretrained(directory)`` (4.5x and 5.x) and for
    engines that load a model's tokenizer from disk. The config is written by hand because
    transformers 5's ``save_pretrained`` names a class transformers 4 cannot load.
    Encoding matches tiktoken's o200k_harmony; the added specials are 199998..200018 as in
    the published gpt-oss files. Takes a few seconds, offline.
    """
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        pre_tokenizers,
        processors,
    )

    vocab, merges = _hf_vocab_and_merges()
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(O200K_PAT_STR), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    # Keeps offsets mapped to the original text; adds no BOS/EOS.
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
    id_to_special = {i: s for s, i in O200K_HARMONY_SPECIALS.items()}
    specials = [id_to_special[i] for i in HF_ADDED_TOKEN_IDS]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])

    # Cheap self-check: a broken build would mis-tokenize every prompt.
    got = tokenizer.encode(_SELF_CHECK_TEXT, add_special_tokens=False).ids
    if got != _SELF_CHECK_IDS or tokenizer.get_vocab_size(with_added_tokens=True) != 200_019:
        raise RuntimeError(f"HF tokenizer self-check failed: {got} != {_SELF_CHECK_IDS}")

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(out / "tokenizer.json"))
    special_map = {
        "bos_token": "<|startoftext|>",
        "eos_token": "<|return|>",
        "pad_token": "<|endoftext|>",
    }
    config = {
        "added_tokens_decoder": {
            str(i): {
                "content": id_to_special[i],
                "lstrip": False,
                "normalized": False,
                "rstrip": False,
                "single_word": False,
                "special": True,
            }
            for i in HF_ADDED_TOKEN_IDS
        },
        **special_map,
        "clean_up_tokenization_spaces": False,
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 1_000_000_000_000_000_019_884_624_838_656,  # "no limit"
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, indent=2) + "\n")
    (out / "special_tokens_map.json").write_text(json.dumps(special_map, indent=2) + "\n")
    return out
