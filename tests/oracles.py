"""The o200k_harmony vocabulary as other implementations have it, offline and in memory.

The vocabulary tests compare the core's tables with these, never with the core's own builders
or the file it ships (docs/tokenizer.md says how each is made without the network):

- :func:`harmony`: openai-harmony's gpt-oss encoding (``oss-harmony`` embeds the vocabulary);
- :func:`tiktoken_file`: ``o200k_base.tiktoken`` rebuilt from openai-harmony's token bytes
  (``_inner.decode_bytes``, the one way it exposes them), checked against the published sha256
  written here by hand;
- :func:`tiktoken_own`: tiktoken's own registered ``o200k_harmony`` (its regex, its specials),
  loading that file: tiktoken's file reader is handed the bytes instead of downloading them,
  and tiktoken parses and hash-checks them itself;
- :func:`hf_converted`: a Hugging Face tokenizer made by transformers' ``TikTokenConverter``
  from the same file, with the added tokens the published gpt-oss tokenizer has (199998..200018).

Nothing here writes a file or changes the environment (the core tests' rule, tests/conftest.py).
"""

from __future__ import annotations

import base64
import functools
import hashlib
from typing import Any
from unittest import mock

O200K_BASE_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
"""Where tiktoken downloads the file from (the name it asks its reader for)."""
O200K_BASE_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
"""The published sha256 of ``o200k_base.tiktoken`` (docs/tokenizer.md), written by hand."""
ORDINARY = 199_998
"""o200k_base's token count (docs/tokenizer.md)."""
HF_ADDED = range(199_998, 200_019)
"""The published gpt-oss tokenizer's added tokens (docs/tokenizer.md): ``len(tokenizer)``
200019."""


@functools.cache
def harmony() -> Any:
    from openai_harmony import HarmonyEncodingName, load_harmony_encoding

    return load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)


@functools.cache
def token_bytes() -> tuple[bytes, ...]:
    """openai-harmony's bytes of each ordinary token, by id."""
    decode = harmony()._inner.decode_bytes
    return tuple(bytes(decode([i])) for i in range(ORDINARY))


@functools.cache
def harmony_specials() -> dict[str, int]:
    """openai-harmony's special tokens: spelling -> id (each encodes to one token)."""
    out = {}
    for spelling in harmony().special_tokens_set:
        ids = harmony().encode(spelling, allowed_special="all")
        assert len(ids) == 1, spelling
        out[spelling] = ids[0]
    return out


@functools.cache
def tiktoken_file() -> bytes:
    """``o200k_base.tiktoken`` as openai-harmony's vocabulary writes it."""
    data = b"".join(base64.b64encode(piece) + b" %d\n" % rank
                    for rank, piece in enumerate(token_bytes()))
    assert hashlib.sha256(data).hexdigest() == O200K_BASE_SHA256
    return data


def _reader(blobpath: str, expected_hash: str | None = None) -> bytes:
    """tiktoken's ``read_file_cached``, for the one file, from memory."""
    import tiktoken.load

    assert blobpath == O200K_BASE_URL, f"tiktoken asked for {blobpath}"
    data = tiktoken_file()
    assert expected_hash is None or tiktoken.load.check_hash(data, expected_hash)
    return data


@functools.cache
def tiktoken_own() -> Any:
    """tiktoken's own ``o200k_harmony`` encoding (``tiktoken_ext.openai_public``)."""
    import tiktoken
    import tiktoken.load
    from tiktoken_ext import openai_public

    with mock.patch.object(tiktoken.load, "read_file_cached", _reader):
        return tiktoken.Encoding(**openai_public.ENCODING_CONSTRUCTORS["o200k_harmony"]())


@functools.cache
def hf_converted() -> Any:
    """transformers' ``TikTokenConverter`` tokenizer (a ``tokenizers.Tokenizer``) of the file,
    tiktoken's regex, and the published added tokens in id order (200018 is
    ``<|endofprompt|>`` there, as in tiktoken's o200k_base)."""
    import tiktoken.load
    from transformers.convert_slow_tokenizer import TikTokenConverter

    enc = tiktoken_own()
    by_id: dict[int, str] = {}
    for spelling, i in sorted(enc._special_tokens.items()):
        if i in HF_ADDED and not (i in by_id and spelling.startswith("<|reserved_")):
            by_id[i] = spelling
    added = [by_id[i] for i in HF_ADDED]
    with mock.patch.object(tiktoken.load, "read_file_cached", _reader):
        tokenizer = TikTokenConverter(vocab_file=O200K_BASE_URL, pattern=enc._pat_str,
                                      extra_special_tokens=added).converted()
    assert tokenizer.get_vocab_size(with_added_tokens=True) == HF_ADDED.stop
    return tokenizer
