"""The offline o200k_harmony builds agree with openai-harmony and tiktoken.

The references are other implementations' (tests/oracles.py, all offline, in memory):
openai-harmony's embedded vocabulary, the ``o200k_base.tiktoken`` file rebuilt from it, and
tiktoken's own registered ``o200k_harmony`` encoding over that file (its regex and specials,
not the core's copies). The core's tiktoken encoding (:func:`o200k.tiktoken_encoding`) and the
tests' Hugging Face build are compared with them.
"""

from __future__ import annotations

import base64
import hashlib
import lzma
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from harmony_plugins.harmony import ORDINARY_TOKENS, SPECIAL_IDS
from harmony_plugins.vocab import o200k
from tests import oracles
from tests.data import KNOWN_IDS, KNOWN_TEXT

REPO = Path(__file__).resolve().parents[1]


# The specials a HF tokenizer of gpt-oss declares (ids 199998..200018); to it the higher
# reserved spellings are plain text, so tiktoken is told the same.
HF_SPECIALS = {s for s, i in SPECIAL_IDS.items() if i < 200_019}
assert len(HF_SPECIALS) == 21


def tt_encode_like_hf(tt, text: str) -> list[int]:
    return tt.encode(text, allowed_special=HF_SPECIALS, disallowed_special=())


def _corpus() -> list[str]:
    """A few hundred strings: hand-picked edge cases plus seeded random mixtures."""
    fixed = [
        "",
        " ",
        "hello world",
        "Hello, World! HELLO world. hELLO",
        "I'm sure they'll say we've done it; she'd know. DON'T STOP. It'S",
        "don\u2019t curly apostrophe",
        "1 12 123 1234 12345 123456789 3.14159 -42 1e10 0x1F 1,000,000",
        "\u00bd \u2155 \u0661\u0662\u0663 \u2460\u2461",  # other numerals
        "\u4eca\u5929\u5929\u6c14\u5f88\u597d\u3002\u6211\u4eec\u53bb\u516c\u56ed\u5427\uff01",
        "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3001\u30ab\u30bf\u30ab\u30ca\u3082",
        "\ud55c\uad6d\uc5b4 \ubb38\uc7a5\uc785\ub2c8\ub2e4.",
        "\u041f\u0440\u0438\u0432\u0435\u0442, \u043c\u0438\u0440! "
        "\u0420\u0423\u0421\u0421\u041a\u0418\u0419",
        "\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645",
        "\u0928\u092e\u0938\u094d\u0924\u0947 \u0926\u0941\u0928\u093f\u092f\u093e",
        "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35\u0e04\u0e23\u0e31\u0e1a",
        "\u00c9cole fran\u00e7aise, na\u00efve caf\u00e9 \u2014 \u00abguillemets\u00bb",
        "e\u0301 combining acute, \u0041\u030a ring",
        "\U0001f600\U0001f680\U0001f44d\U0001f3fd \U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\U0001f1fa\U0001f1f8 flags \U0001f1ef\U0001f1f5 and \u2764\ufe0f",
        "def f(x):\n    return x ** 2  # square\n\n\nclass A:\n\tpass\n",
        'fn main() { println!("{}", 1 + 2); }\r\n',
        '<div class="a">&nbsp;</div>\n<!-- c -->',
        '{"a": [1, 2, {"b": null}], "c": "d\\n"}',
        "SELECT * FROM t WHERE x >= 10 AND y <> 'z';",
        "https://example.com/a/b?c=d&e=f#g //comment /* block */",
        "a\n\nb\r\n\r\nc\n \n d",
        "   leading and trailing   ",
        "\t\t\ttabs\t \t mixed",
        "x" + " " * 40 + "y",
        "\n" * 12,
        " \n" * 7,
        "line one  \n  line two\u00a0nbsp\u2003em\u3000ideographic",
        "\u200b\u200c\u200d\ufeff zero widths",
        "\x00\x01\x1f\x7f control chars",
        "!!!???...,,,;;;:::---___===+++***&&&^^^%%%$$$###@@@",
        "a/b//c///d\n/\n//\n",
        "CamelCaseWordsAndXMLHttpRequest getHTTPResponseCode",
        "\u01c5 \u01c8 titlecase \u02b0 modifier \u05d0 lo",
        "Mixed\u4e2d\u6587English\u65e5\u672c123\U0001f600end",
        KNOWN_TEXT,
        "text <|start|>user<|message|>hi<|end|> more <|call|><|constrain|>json",
        "<|startoftext|><|endoftext|><|reserved_200000|> <|reserved_200001|>",
        "<|reserved_200017|><|reserved_200019|> <|reserved_201087|>",
        "not special: <|startoftext| <start> |> <||>",
    ]
    pools = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ ",
        "0123456789.,-+ ",
        " \t\n\r\u00a0\u3000\u2028\x0b\x0c",
        "'sStTrReEvVmMlLdD' ",
        "\u4e00\u4e8c\u4e09\u4eba\u5927\u5929\u4e2d\u6587\u5b57\u3002\uff0c",
        "\u3042\u3044\u3046\u30a2\u30a4\u30a6\u30fc\u3001",
        "\u0430\u0431\u0432\u0413\u0414\u0415\u0451\u0401",
        "\U0001f600\U0001f601\u200d\U0001f44d\U0001f3fb\ufe0f\u2764",
        '(){}[]<>=!?;:#"/\\|&*^%$@`~_',
        "\u00e9\u00e8\u00ea\u00c9\u0301\u0308\u00df\u00f1\u00d1",
    ]
    rng = random.Random(20240805)
    generated = []
    for _ in range(260):
        chosen = rng.sample(pools, rng.randint(1, 4))
        alphabet = "".join(chosen)
        generated.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60))))
    return fixed + generated


CORPUS = _corpus()

# Text drawn by hypothesis: arbitrary unicode (no surrogates), plus skewed alphabets that
# stress the split regex (whitespace runs, contractions, digits, mixed scripts).
TEXT = st.one_of(
    st.text(max_size=80),
    st.text(
        alphabet=st.sampled_from(list(" \t\n\r\u00a0'sStdDlLvV19aZ\u4e2d\u00e9\U0001f600.,/")),
        max_size=80,
    ),
    st.text(alphabet=st.characters(codec="utf-8", categories=["Z", "Cc", "P", "N"])),
)
HYPOTHESIS = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)


@pytest.fixture(scope="session")
def harmony():
    return oracles.harmony()


@pytest.fixture(scope="session")
def tt():
    """tiktoken's own o200k_harmony (the reference)."""
    return oracles.tiktoken_own()


@pytest.fixture(scope="session")
def ours():
    """The core's tiktoken encoding (under test)."""
    return o200k.tiktoken_encoding()


@pytest.fixture(scope="session")
def hf(hf_tokenizer):
    return hf_tokenizer


# --- vocabulary file ---------------------------------------------------------------------


def test_pieces_are_openai_harmony_s():
    assert tuple(o200k.o200k_base_pieces()) == oracles.token_bytes()


def test_pieces_count_and_shape():
    pieces = o200k.o200k_base_pieces()
    assert len(pieces) == 199_998 == ORDINARY_TOKENS
    assert len(set(pieces)) == len(pieces)
    assert {bytes([b]) for b in range(256)} <= set(pieces)  # byte-level: every byte is a token
    assert pieces[0] == b"!" and pieces[220] == b" " and pieces[13] == b"."


def test_pieces_are_a_fresh_copy():
    pieces = o200k.o200k_base_pieces()
    pieces[0] = b"changed"
    assert o200k.o200k_base_pieces()[0] == b"!"


def test_tiktoken_file_matches_official_hash():
    data = o200k.tiktoken_file_bytes()
    assert len(data) == 3_613_922
    assert hashlib.sha256(data).hexdigest() == OFFICIAL_SHA256
    assert data.startswith(b"IQ== 0\n") and data.count(b"\n") == 199_998
    assert data == oracles.tiktoken_file()  # as openai-harmony's vocabulary writes it


# The published hash of o200k_base.tiktoken (docs/tokenizer.md), written by hand.
OFFICIAL_SHA256 = oracles.O200K_BASE_SHA256


def test_the_shipped_file_is_the_official_one():
    from harmony_plugins.data import o200k_base_xz

    assert o200k.O200K_BASE_SHA256 == OFFICIAL_SHA256
    data = lzma.decompress(o200k_base_xz())
    assert hashlib.sha256(data).hexdigest() == OFFICIAL_SHA256


def test_a_file_with_another_hash_is_refused():
    with pytest.raises(RuntimeError, match="sha256 .* expected 446a9538.*reinstall harmony-ext"):
        o200k.checked_file(lzma.compress(b"IQ== 0\n"))


@pytest.mark.parametrize("content", [b"", b"not xz at all"], ids=["empty", "not-xz"])
def test_an_unreadable_file_is_refused(content):
    with pytest.raises(RuntimeError, match="cannot read the shipped o200k vocabulary.*reinstall"):
        o200k.checked_file(content)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"IQ== 0\nIg== 2\n", "line 2"),  # a rank skipped
        (b"IQ== 0\n!!!! 1\n", "line 2"),  # not base64
        (b"IQ== 0\nI!g== 1\n", "line 2"),  # base64 with a character outside its alphabet
        (b"IQ== 0\nIg==\n", "line 2"),  # no rank
        (b" 0\n", "line 1"),  # an empty token
        (b"IQ== 0\nIg== 1\n", "2 lines, 2 distinct tokens, expected 199998"),
    ],
    ids=["rank-skipped", "not-base64", "not-only-base64", "no-rank", "empty-token", "too-few"],
)
def test_malformed_lines_are_refused(content, why):
    with pytest.raises(RuntimeError, match=why):
        o200k.parse_pieces(content)


def test_a_malformed_line_is_quoted_to_its_first_60_bytes():
    """The message shows where the file went wrong without pasting a runaway line whole."""
    line = b"!" * 59 + b"XYZ 0"
    with pytest.raises(RuntimeError) as raised:
        o200k.parse_pieces(line)
    assert f"line 1: {(b'!' * 59 + b'X')!r};" in str(raised.value)


def test_repeated_tokens_are_refused():
    lines = [b"%s %d" % (base64.b64encode(b"t%d" % i), i) for i in range(ORDINARY_TOKENS)]
    lines[-1] = b"%s %d" % (base64.b64encode(b"t0"), ORDINARY_TOKENS - 1)  # t0 twice
    with pytest.raises(RuntimeError, match=f"{ORDINARY_TOKENS - 1} distinct tokens"):
        o200k.parse_pieces(b"\n".join(lines))
    lines[-1] = b"%s %d" % (base64.b64encode(b"last"), ORDINARY_TOKENS - 1)
    assert o200k.parse_pieces(b"\n".join(lines))[-1] == b"last"


def test_vocab_is_read_without_importing_tiktoken_or_tokenizers():
    code = (
        "import sys; from harmony_plugins.vocab import o200k; o200k.o200k_base_pieces(); "
        "o200k.tiktoken_file_bytes(); "
        "print(sorted(m for m in ('tiktoken', 'tokenizers') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# --- specials and the known sequence ---------------------------------------------------------


def test_specials_table(tt):
    """The core's table is tiktoken's own, less its second spelling of 200018."""
    theirs = dict(tt._special_tokens)
    assert theirs.pop("<|reserved_200018|>") == theirs["<|endofprompt|>"] == 200_018
    assert theirs == SPECIAL_IDS
    specials = SPECIAL_IDS
    assert list(specials.values()) == list(range(199_998, 201_088))
    assert specials["<|return|>"] == 200_002 and specials["<|call|>"] == 200_012
    assert specials["<|endofprompt|>"] == 200_018
    assert "<|reserved_200018|>" not in specials
    assert specials["<|reserved_200004|>"] == 200_004
    assert specials["<|reserved_201087|>"] == 201_087
    assert len(specials) == 1090


def test_text_holds_a_marker_only_where_it_spells_the_opening(tt):
    """Text mode: every special token tiktoken knows is spelled from ``<|``; text without it
    holds no marker (SGLang's detector skips such text)."""
    from harmony_plugins.harmony import may_hold_markers

    assert all(may_hold_markers(f"a {spelling} b") for spelling in tt._special_tokens)
    assert not any(may_hold_markers(text) for text in ("", "plain text", "a < b | c", "|>"))


def test_known_sequence_decodes_to_the_documented_text(tt, harmony):
    pieces = o200k.o200k_base_pieces()
    names = {i: s.encode() for s, i in SPECIAL_IDS.items()}
    text = b"".join(names[i] if i in names else pieces[i] for i in KNOWN_IDS).decode()
    assert text == KNOWN_TEXT
    assert tt.decode(KNOWN_IDS) == KNOWN_TEXT
    assert tt.encode(KNOWN_TEXT, allowed_special="all") == KNOWN_IDS
    assert harmony.encode(KNOWN_TEXT, allowed_special="all") == KNOWN_IDS


def _harmony_specials(harmony) -> dict[str, int]:
    out = {}
    for name in harmony.special_tokens_set:
        ids = harmony.encode(name, allowed_special="all")
        assert len(ids) == 1, name
        out[name] = ids[0]
    return out


def test_specials_agree_with_openai_harmony(harmony):
    """openai-harmony names 200018 `<|reserved_200018|>` and also declares id 201088."""
    theirs = _harmony_specials(harmony)
    ours = dict(SPECIAL_IDS)
    del ours["<|endofprompt|>"]
    ours["<|reserved_200018|>"] = 200_018
    extra = {"<|reserved_201088|>": 201_088}  # past the model's 201,088 rows
    assert theirs == ours | extra
    assert harmony.decode_utf8([200_018]) == "<|reserved_200018|>"
    assert set(harmony.stop_tokens()) == {200_002, 200_007, 200_012}


def test_our_tiktoken_encoding_is_tiktoken_s(ours, tt):
    """The core's in-memory encoding against tiktoken's own: name, size, regex, every
    ordinary token's bytes, every special (tiktoken's also accepts `<|reserved_200018|>` as a
    second spelling of 200018; the core's does not)."""
    assert (ours.name, ours.n_vocab, ours._pat_str) == (tt.name, tt.n_vocab, tt._pat_str)
    assert tt.n_vocab == 201_088
    assert all(ours.decode_single_token_bytes(i) == tt.decode_single_token_bytes(i)
               for i in range(ORDINARY_TOKENS))
    assert tt.special_tokens_set - ours.special_tokens_set == {"<|reserved_200018|>"}
    assert ours.special_tokens_set <= tt.special_tokens_set
    for name in ours.special_tokens_set:
        assert ours.encode_single_token(name) == tt.encode_single_token(name)
        assert ours.decode_single_token_bytes(tt.encode_single_token(name)) == name.encode()
    sample = [*range(0, 201_088, 997), *KNOWN_IDS]
    assert ours.decode(sample) == tt.decode(sample)
    assert ours.encode_batch(CORPUS, allowed_special="all") == tt.encode_batch(
        CORPUS, allowed_special="all")


def test_openai_harmony_decodes_as_tiktoken(tt, harmony):
    """The two references agree with each other (so either can stand for the vocabulary)."""
    sample = [*range(0, ORDINARY_TOKENS, 499), *KNOWN_IDS]
    assert bytes(harmony._inner.decode_bytes(sample)) == tt.decode_bytes(sample)
    assert harmony.decode_utf8(KNOWN_IDS) == tt.decode(KNOWN_IDS) == KNOWN_TEXT
    assert all(bytes(harmony._inner.decode_bytes([i])) == tt.decode_single_token_bytes(i)
               for i in range(ORDINARY_TOKENS, 200_018))


# --- encoding agreement ------------------------------------------------------------------------


def test_corpus_is_varied():
    assert len(CORPUS) >= 300
    assert any("\n\n" in s for s in CORPUS) and any("<|start|>" in s for s in CORPUS)


def test_tiktoken_matches_openai_harmony_on_corpus(ours, harmony):
    mismatches = [
        s
        for s in CORPUS
        if ours.encode(s, allowed_special="all") != harmony.encode(s, allowed_special="all")
    ]
    assert mismatches == []


@HYPOTHESIS
@given(text=TEXT)
def test_tiktoken_matches_openai_harmony_on_generated_text(ours, harmony, text):
    assume("<|endofprompt|>" not in text)  # a special to tiktoken, text to openai_harmony
    assert ours.encode(text, allowed_special="all") == harmony.encode(text,
                                                                      allowed_special="all")


def test_hf_matches_tiktoken_on_corpus(tt, hf):
    for text in CORPUS:
        expected = tt_encode_like_hf(tt, text)
        ids = hf.encode(text, add_special_tokens=False).ids
        assert ids == expected, text
        assert hf.decode(ids, skip_special_tokens=False) == text


@HYPOTHESIS
@given(text=TEXT)
def test_hf_matches_tiktoken_on_generated_text(tt, hf, text):
    ids = hf.encode(text, add_special_tokens=False).ids
    assert ids == tt_encode_like_hf(tt, text)
    assert hf.decode(ids, skip_special_tokens=False) == text


def test_hf_decodes_the_known_sequence(hf):
    assert hf.decode(KNOWN_IDS, skip_special_tokens=False) == KNOWN_TEXT
    assert hf.encode(KNOWN_TEXT, add_special_tokens=False).ids == KNOWN_IDS


def test_hf_specials(hf):
    assert hf.get_vocab_size(with_added_tokens=True) == 200_019
    for name, i in SPECIAL_IDS.items():
        if i < 200_019:
            assert hf.token_to_id(name) == i and hf.id_to_token(i) == name
        else:
            assert hf.token_to_id(name) is None
    # Specials are never merged into text, and are dropped on request.
    ids = hf.encode("a<|start|>b<|endofprompt|>", add_special_tokens=False).ids
    assert ids == [64, 200_006, 65, 200_018]
    assert hf.decode(ids, skip_special_tokens=True) == "ab"
    # No BOS/EOS is added by the post-processor.
    assert hf.encode("a", add_special_tokens=True).ids == [64]


def test_hf_build_is_transformers_converter_s(hf):
    """The tests' Hugging Face build against transformers' own TikTokenConverter output: the
    same vocabulary and added tokens, and the same ids on the corpus."""
    theirs = oracles.hf_converted()
    assert hf.get_vocab(with_added_tokens=True) == theirs.get_vocab(with_added_tokens=True)
    assert {i: t.content for i, t in hf.get_added_tokens_decoder().items()} == {
        i: t.content for i, t in theirs.get_added_tokens_decoder().items()}
    for text in CORPUS:
        assert hf.encode(text, add_special_tokens=False).ids == theirs.encode(
            text, add_special_tokens=False).ids, text


def test_the_demo_s_ids_are_its_text_as_openai_harmony_encodes_it(harmony):
    from harmony_plugins._demo import DEMO_OUTPUTS

    for _title, text, ids in DEMO_OUTPUTS:
        assert harmony.encode(text, allowed_special="all") == ids, text
