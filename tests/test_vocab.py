"""Token tables from each source equal the vocabulary as openai-harmony has it, and a
non-Harmony tokenizer is refused clearly.

The expected table is built here from openai-harmony's token bytes and special tokens
(tests/oracles.py), with the markers' meanings written by hand from contract section 1; the
tokenizers read are tiktoken's own ``o200k_harmony`` and transformers' ``TikTokenConverter``
output (besides the project's own builds), all made offline from openai-harmony's vocabulary.
"""

from __future__ import annotations

import functools
import threading

import pytest

from harmony_plugins import (
    NotHarmonyTokenizer,
    Vocab,
    parse_ids,
    vocab,
)
from harmony_plugins import harmony as mk
from harmony_plugins.vocab.o200k import tiktoken_encoding
from tests import oracles
from tests.data import KNOWN_IDS

MEANING = {"<|start|>": mk.START, "<|end|>": mk.END, "<|message|>": mk.MESSAGE,
           "<|channel|>": mk.CHANNEL, "<|constrain|>": mk.CONSTRAIN, "<|return|>": mk.RETURN,
           "<|call|>": mk.CALL, "<|endoftext|>": mk.END_OF_TEXT}
"""Contract section 1: what each meaningful special token is; every other one (start of text,
end of prompt, reserved) means nothing in output."""


@functools.cache
def expected_table() -> tuple[str | bytes | int | None, ...]:
    """Each id of the model's vocabulary (tiktoken's n_vocab rows): an ordinary token's text, or
    its bytes where they cut a character; a special token's meaning."""
    table: list[str | bytes | int | None] = [None] * oracles.tiktoken_own().n_vocab
    for i, piece in enumerate(oracles.token_bytes()):
        try:
            table[i] = piece.decode("utf-8")
        except UnicodeDecodeError:
            table[i] = piece
    for spelling, i in oracles.harmony_specials().items():
        if i < len(table):  # openai-harmony also names 201088, past the model's rows
            table[i] = MEANING.get(spelling, mk.IGNORED)
    return tuple(table)


def test_expected_table_is_what_it_says():
    table = expected_table()
    assert len(table) == 201_088 and table.count(None) == 0
    assert table[200005] == mk.CHANNEL and table[200002] == mk.RETURN
    assert table[200012] == mk.CALL and table[199999] == mk.END_OF_TEXT
    assert table[200017] == mk.IGNORED and table[201087] == mk.IGNORED
    assert table[35644] == "analysis" and table[220] == " "
    assert sorted(i for i, x in enumerate(table) if x in MEANING.values()) == [
        199999, 200002, 200003, 200005, 200006, 200007, 200008, 200012]


def test_default_vocab_is_openai_harmony_s():
    v = Vocab.o200k_harmony()
    assert v is Vocab.o200k_harmony()  # built once per process
    assert tuple(v.table) == expected_table()


def test_tokens_that_cut_a_character_stay_bytes():
    v = Vocab.o200k_harmony()
    ids = oracles.harmony().encode("\U0001d518")  # 4 UTF-8 bytes in 3 tokens
    assert [v.table[i] for i in ids] == [b"\xf0\x9d", b"\x94", b"\x98"]
    kinds = {type(x) for x in v.table}
    assert kinds == {str, bytes, int}


def test_vocab_of_tiktoken_s_own_encoding():
    own = oracles.tiktoken_own()
    v = Vocab.from_tiktoken(own)
    assert v is Vocab.from_tiktoken(own)
    assert tuple(v.table) == expected_table()
    assert tuple(Vocab.from_tiktoken(tiktoken_encoding()).table) == expected_table()


def test_vocab_of_transformers_converter():
    v = Vocab.from_hf(oracles.hf_converted())
    assert tuple(v.table) == expected_table()
    assert parse_ids(KNOWN_IDS, encoding=v)["content"] == "2 + 2 = 4."


def test_vocab_of_the_project_s_hf_build(hf_tokenizer):
    v = Vocab.from_hf(hf_tokenizer)
    assert tuple(v.table) == expected_table()
    assert parse_ids(KNOWN_IDS, encoding=v)["content"] == "2 + 2 = 4."


def test_vocab_of_a_transformers_tokenizer():
    import transformers

    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=oracles.hf_converted())
    v = Vocab.from_hf(tok)
    assert v is Vocab.from_hf(tok)
    assert tuple(v.table) == expected_table()


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
    with pytest.raises(NotHarmonyTokenizer, match="tokenizer 'Tokenizer' is not byte-level"):
        Vocab.from_hf(wordpiece)  # no name of its own: its type's
    from transformers import PreTrainedTokenizerFast

    named = PreTrainedTokenizerFast(tokenizer_object=wordpiece, name_or_path="acme/wordpiece")
    with pytest.raises(NotHarmonyTokenizer, match="tokenizer 'acme/wordpiece' is not byte-level"):
        Vocab.from_hf(named)  # the model it came from, as Hugging Face names it
    with pytest.raises(NotHarmonyTokenizer, match="fast tokenizer"):
        Vocab.from_hf(object())


def test_o200k_built_once_by_racing_threads(monkeypatch):
    builds = []
    real = Vocab.from_pieces.__func__  # type: ignore[attr-defined]
    gate = threading.Barrier(64)

    def counting(cls, pieces, specials, name="custom"):
        builds.append(name)
        return real(cls, pieces, specials, name)

    monkeypatch.setattr(vocab, "_o200k", None)
    monkeypatch.setattr(Vocab, "from_pieces", classmethod(counting))
    got: list = []

    def worker():
        gate.wait()
        got.append(Vocab.o200k_harmony())

    threads = [threading.Thread(target=worker) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == ["o200k_harmony"]
    assert len(got) == 64 and all(v is got[0] for v in got)


def test_the_byte_level_table_is_the_one_transformers_converts_with():
    """The inverse of byte-level BPE's byte -> character table, exactly (256 entries), as
    transformers' converter and the tokenizers library write it."""
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    from harmony_plugins.vocab import _byte_decoder

    theirs = {char: byte for byte, char in bytes_to_unicode().items()}
    assert _byte_decoder() == theirs
    assert set(_byte_decoder()) == set(ByteLevel.alphabet())


def test_the_stop_ids_are_return_and_call_and_merge_after_a_request_s_own():
    """Contract section 10: every request stops at <|return|> and <|call|>; their ids are the
    ones tiktoken's o200k_harmony gives, not the table's own."""
    from harmony_plugins import harmony
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    enc = tiktoken_encoding()
    expected = [enc.encode(t, allowed_special="all")[0] for t in ("<|return|>", "<|call|>")]
    assert list(harmony.STOP_IDS) == expected
    assert harmony.with_stop_ids(None) == expected
    assert harmony.with_stop_ids([5, expected[1], 5]) == [5, expected[1], expected[0]]
