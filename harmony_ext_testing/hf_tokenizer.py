"""A Hugging Face fast tokenizer for gpt-oss, written offline (tiny test models, tests).

Built from the o200k ranks the wheel ships (:mod:`harmony_plugins.vocab.o200k`) with the
``tokenizers`` package alone; see docs/tokenizer.md for why these merges reproduce tiktoken.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from harmony_plugins.harmony import SPECIAL_IDS
from harmony_plugins.vocab.o200k import O200K_PAT_STR, o200k_base_pieces

__all__ = ["HF_ADDED_TOKEN_IDS", "KNOWN_IDS", "KNOWN_TEXT", "build_hf_tokenizer",
           "write_hf_tokenizer"]

HF_ADDED_TOKEN_IDS = range(199_998, 200_019)
"""The specials a Hugging Face tokenizer of gpt-oss declares (as the published files do):
199998..200018, so ``len(tokenizer) == 200019``. Higher reserved ids are never sampled."""
_ID_TO_SPECIAL = {i: s for s, i in SPECIAL_IDS.items()}


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
    words = [piece.decode("latin-1").translate(translate) for piece in o200k_base_pieces()]
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


# Real gpt-oss output (docs/tokenizer.md) and its o200k_harmony ids, cross-checked with tiktoken
# and openai-harmony (tests/test_o200k.py): the self-check of a freshly built HF tokenizer, and
# the tests' known sequence (tests/data.py).
KNOWN_TEXT = (
    '<|channel|>analysis<|message|>User asks: "What is 2 + 2?" Simple arithmetic. Provide'
    " answer.<|end|><|start|>assistant<|channel|>final<|message|>2 + 2 = 4.<|return|>"
)
KNOWN_IDS = [
    200005, 35644, 200008, 1844, 31064, 25, 392, 4827, 382, 220, 17, 659, 220, 17, 16842,
    12295, 81645, 13, 51441, 6052, 13, 200007, 200006, 173781, 200005, 17196, 200008, 17, 659,
    220, 17, 314, 220, 19, 13, 200002,
]  # fmt: skip


def build_hf_tokenizer() -> Any:
    """gpt-oss's Hugging Face fast tokenizer (a ``tokenizers.Tokenizer``), built in memory
    with ``tokenizers`` alone. Encoding matches tiktoken's o200k_harmony; the added specials are
    199998..200018 as in the published gpt-oss files. Takes a few seconds, offline."""
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
    specials = [_ID_TO_SPECIAL[i] for i in HF_ADDED_TOKEN_IDS]
    tokenizer.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])

    # Cheap self-check: a broken build would mis-tokenize every prompt.
    got = tokenizer.encode(KNOWN_TEXT, add_special_tokens=False).ids
    if got != KNOWN_IDS or tokenizer.get_vocab_size(with_added_tokens=True) != 200_019:
        raise RuntimeError(f"HF tokenizer self-check failed: {got} != {KNOWN_IDS}")
    return tokenizer


def write_hf_tokenizer(directory: str | os.PathLike[str]) -> Path:
    """Write a Hugging Face fast tokenizer for gpt-oss (:func:`build_hf_tokenizer`) into
    *directory* and return it.

    Writes ``tokenizer.json`` (about 28 MB), ``tokenizer_config.json`` and
    ``special_tokens_map.json``, enough for ``transformers.AutoTokenizer.from_pretrained
    (directory)`` (4.5x and 5.x) and for engines that load a model's tokenizer from disk. The
    config is written by hand because transformers 5's ``save_pretrained`` names a class
    transformers 4 cannot load.
    """
    tokenizer = build_hf_tokenizer()
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
                "content": _ID_TO_SPECIAL[i],
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
