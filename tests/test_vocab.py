"""Token tables from each source agree, and a non-Harmony tokenizer is refused clearly."""

from __future__ import annotations

import pytest

from harmony_plugins import NotHarmonyTokenizer, Vocab, parse_ids
from harmony_plugins import harmony as mk
from harmony_plugins.vocab.o200k import tiktoken_encoding

KNOWN = [200005, 35644, 200008, 1844, 31064, 25, 392, 4827, 382, 220, 17, 659, 220, 17, 16842,
         12295, 81645, 13, 51441, 6052, 13, 200007, 200006, 173781, 200005, 17196, 200008, 17,
         659, 220, 17, 314, 220, 19, 13, 200002]


def test_default_vocab_markers_and_bytes():
    v = Vocab.o200k_harmony()
    assert v is Vocab.o200k_harmony()  # built once per process
    assert len(v.table) == 201088
    assert v.table[200005] == mk.CHANNEL and v.table[200002] == mk.RETURN
    assert v.table[200012] == mk.CALL and v.table[199999] == mk.END_OF_TEXT
    assert v.table[200017] == mk.IGNORED and v.table[201087] == mk.IGNORED
    assert v.table[35644] == "analysis"  # whole characters: stored as text


def test_tokens_that_cut_a_character_stay_bytes():
    v = Vocab.o200k_harmony()
    ids = tiktoken_encoding().encode_ordinary("\U0001d518")  # 4 UTF-8 bytes in 3 tokens
    assert [v.table[i] for i in ids] == [b"\xf0\x9d", b"\x94", b"\x98"]
    kinds = {type(x) for x in v.table}
    assert kinds == {str, bytes, int}


def test_tiktoken_vocab_equals_default():
    v = Vocab.from_tiktoken(tiktoken_encoding())
    assert v is Vocab.from_tiktoken(tiktoken_encoding())
    assert v.table == Vocab.o200k_harmony().table


def test_hf_vocab_equals_default(hf_tokenizer):
    v = Vocab.from_hf(hf_tokenizer)
    assert v.table == Vocab.o200k_harmony().table
    assert parse_ids(KNOWN, encoding=v)["content"] == "2 + 2 = 4."


def test_transformers_vocab_equals_default(hf_tokenizer):
    import transformers

    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=hf_tokenizer)
    v = Vocab.from_hf(tok)
    assert v is Vocab.from_hf(tok)
    assert v.table == Vocab.o200k_harmony().table


def test_special_ids_come_from_the_tokenizer():
    """A tokenizer whose control tokens sit at other ids is read, not assumed."""
    pieces = [b"a", b"b", b"final"]
    specials = {s: 10 + i for i, s in enumerate(mk.STRUCTURAL)}
    v = Vocab.from_pieces(pieces, specials, "shifted")
    ids = [specials["<|channel|>"], 2, specials["<|message|>"], 0, 1, specials["<|return|>"]]
    assert parse_ids(ids, encoding=v)["content"] == "ab"


def test_not_a_harmony_tokenizer():
    with pytest.raises(NotHarmonyTokenizer, match=r"no special token.*<\|start\|>"):
        Vocab.from_pieces([b"a"], {"<|endoftext|>": 1}, "gpt2-like")
    import tokenizers
    from tokenizers import models

    wordpiece = tokenizers.Tokenizer(models.WordPiece({"[UNK]": 0, "hello": 1, "##é": 2}))
    wordpiece.add_special_tokens([s for s in mk.STRUCTURAL])
    with pytest.raises(NotHarmonyTokenizer, match="byte-level"):
        Vocab.from_hf(wordpiece)
    with pytest.raises(NotHarmonyTokenizer, match="fast tokenizer"):
        Vocab.from_hf(object())
