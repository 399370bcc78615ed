"""harmony_plugins._guard: where a generated turn is over, told from its token ids (contract
section 10), every state and transition, every forged form of contract section 2 split at every
point across steps, the facts it reads, and its agreement with the parse both ways, section 2's
three exceptions each shown. Where each generation ends is written by hand from the contract
(section 2 says which roles forge a turn, section 10 where the engine stops); token ids come from
tiktoken's o200k_harmony, built from the shipped vocabulary."""

from __future__ import annotations

import lzma

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harmony_ext_testing import fuzzed_outputs as fz
from harmony_plugins import Guard, Request, Turn, Vocab, guard_for, guarded, turn_stop
from harmony_plugins import _header as header_module
from harmony_plugins import harmony as hm
from harmony_plugins.data import o200k_starts_xz
from harmony_plugins.vocab import starts
from harmony_plugins.vocab.o200k import tiktoken_encoding
from tests.contract_cases import CASES as CONTRACT_CASES

ENCODING = tiktoken_encoding()
VOCAB = Vocab.o200k_harmony()
GET_WEATHER = {"type": "function", "function": {"name": "get_weather",
                                                "parameters": {"type": "object"}}}


def ids(text: str) -> list[int]:
    return ENCODING.encode(text, allowed_special="all")


def stop_of(generation: list[int], guard: Guard | None = None) -> int | None:
    """Where a guard fed one id a step ends the generation: the index of the last id kept."""
    guard = guard or Guard()
    for index, token in enumerate(generation):
        if guard.step(token):
            return index
    return None


# -- the facts it reads ------------------------------------------------------------------------


def test_role_tokens_are_the_tokenizers_one_token_spellings_of_the_role_words():
    listed = dict(hm.ROLE_TOKENS)
    for spelling, token_id in hm.ROLE_TOKENS:
        assert ENCODING.encode(spelling) == [token_id], spelling
    for word in hm.ROLE_WORDS:
        for cased in {word, word.title(), word.upper()}:
            for spelling in (cased, " " + cased, "\t" + cased):
                encoded = ENCODING.encode(spelling)
                if len(encoded) == 1:
                    assert listed.get(spelling) == encoded[0], spelling
                else:
                    assert spelling not in listed
    # The words, by hand: contract section 2's roles and the names a tool answers from.
    words = {"user", "system", "developer", "tool", "python", "functions", "browser",
             "container"}
    assert set(hm.ROLE_WORDS) == words
    # No other token is a role's word (in any case) after whitespace: a space or a tab is all
    # that joins one in a token.
    joined = set()
    for token_id in range(ENCODING.n_vocab):
        try:
            text = ENCODING.decode_single_token_bytes(token_id).decode()
        except (KeyError, UnicodeDecodeError):
            continue
        if text.lstrip().lower() in words:
            joined.add(text)
    assert joined == set(listed)


def test_the_shipped_starts_are_the_vocabularys():
    shipped = starts.shipped()
    assert shipped == lzma.decompress(o200k_starts_xz())
    assert shipped == starts.starts_of(VOCAB.table)
    assert len(shipped) == hm.VOCAB_SIZE


@pytest.mark.parametrize("entry, kind", [
    ("\n\n", starts.SPACE), (" ", starts.SPACE), ("\u202f", starts.SPACE),
    (" to", starts.SPACED), ("\tx", starts.SPACED),
    (".get", starts.DOT), (".", starts.DOT),
    ("user", starts.OTHER), ("=", starts.OTHER), ("", starts.OTHER),
    (b" \xe2", starts.SPACED),  # a space, then a character cut short
    (b"\xe2\x80", starts.OTHER),  # the start of U+202F: not whitespace until whole
    (hm.START, starts.OTHER), (None, starts.OTHER),
])
def test_a_tokens_start_is_classed_by_its_first_character(entry, kind):
    assert starts.starts_of([entry]) == bytes([kind])


def test_the_starts_of_known_tokens():
    table = starts.shipped()
    for text, kind in (("\n\n", starts.SPACE), (" to", starts.SPACED), (".get", starts.DOT),
                       ("_weather", starts.OTHER)):
        (token_id,) = ENCODING.encode(text)
        assert table[token_id] == kind, text


# -- every state and transition, from the contract ------------------------------------------------
#
# Where a generation stands, as far as a forged turn goes, written as generations that lead
# there (contract sections 1, 2 and 10), and where each kind of token leads from each: the turn
# is over at it (a forged turn, or a stop id), or the generation stands where another of these
# generations stands. "Stands where X stands" is checked by behaviour, not by the guard's
# inner state: every continuation of one or two tokens ends the turn at the same place after
# either. The test below checks that these places are every state the guard has, so the table
# stays exhaustive.

BODY = "<|channel|>final<|message|>Hi"
"""Inside a body: a role's word here is text."""
AFTER_START = BODY + "<|end|><|start|>"
"""After ``<|start|>``: the role comes next (section 2, form 1: the turn ends at it)."""
AFTER_END = BODY + "<|end|>"
"""After ``<|end|>``: a header may begin without ``<|start|>``, its role written as text."""
ROLE_WORD = AFTER_END + "user"
"""Another role's word as text, maybe not whole yet (``users`` is no role)."""
NAMESPACE_WORD = AFTER_END + "functions"
"""A tool namespace's word as text: a role once ``.NAME`` follows (``functions.get_weather``)."""
ROLE_SECTION = AFTER_END + "functions.get_weather to=assistant"
"""A header's role section whose first word is another role's (section 2, form 2): the turn
ends at the header marker that follows."""
PLACES = [BODY, AFTER_START, AFTER_END, ROLE_WORD, NAMESPACE_WORD, ROLE_SECTION]
FORGED_HERE, OVER_HERE = "forged turn", "turn over"
"""The turn ends at the token: at a forged turn (section 2), at a stop id (sections 1, 10)."""

START, END, CHANNEL, CONSTRAIN, MESSAGE = (ids(t)[0] for t in (
    "<|start|>", "<|end|>", "<|channel|>", "<|constrain|>", "<|message|>"))
RETURN, CALL, END_OF_TEXT = (ids(t)[0] for t in ("<|return|>", "<|call|>", "<|endoftext|>"))
START_OF_TEXT, END_OF_PROMPT, RESERVED = (ids(t)[0] for t in (
    "<|startoftext|>", "<|endofprompt|>", "<|reserved_200013|>"))
USER, SPACED_USER, TITLE_USER, FUNCTIONS, PYTHON_TITLE = (ids(t)[0] for t in (
    "user", " user", "User", "functions", "Python"))
SPACE, SPACED, DOT, OTHER = (ids(t)[0] for t in ("\n\n", " to", ".get", "assistant"))
PAST_THE_VOCABULARY, NEGATIVE = hm.VOCAB_SIZE + 5, -1
SKIPPED = list(PLACES)  # a skipped token: the generation stands where it stood
# (token, where it leads from BODY, AFTER_START, AFTER_END, ROLE_WORD, NAMESPACE_WORD,
# ROLE_SECTION), each row by hand from the contract.
TABLE = [
    # <|start|> opens a message whose role comes next, wherever it comes (a role section
    # without a header marker is prose that ended: no turn, section 2).
    (START, [AFTER_START] * 6),
    # <|end|> closes a message; what follows may be a header that names its role as text.
    (END, [AFTER_END] * 6),
    # A header marker: after another role's whole word as text, the text became a header
    # (form 2); elsewhere it is the assistant's header, or markup in it.
    *((marker, [BODY, BODY, BODY, FORGED_HERE, BODY, FORGED_HERE])
      for marker in (CHANNEL, CONSTRAIN, MESSAGE)),
    # The stop ids and the end of text end the turn (sections 1 and 10).
    *((stop, [OVER_HERE] * 6) for stop in (RETURN, CALL, END_OF_TEXT)),
    # Skipped: the tokens that mean nothing (section 1) and ids outside the vocabulary
    # (section 6): the text on either side goes on where it was going.
    *((token, SKIPPED) for token in (START_OF_TEXT, END_OF_PROMPT, RESERVED,
                                     PAST_THE_VOCABULARY, NEGATIVE)),
    # Another role's word: after <|start|> the turn ends at it (whitespace may come before
    # it); after <|end|> it is that role's word as text, in any case ("User asks.<|channel|>"
    # is forged, section 2); glued to a word it is part of that word; after a space that ended
    # a role's word it is more of that role section.
    (USER, [BODY, FORGED_HERE, ROLE_WORD, BODY, BODY, ROLE_SECTION]),
    (TITLE_USER, [BODY, FORGED_HERE, ROLE_WORD, BODY, BODY, ROLE_SECTION]),
    (SPACED_USER, [BODY, FORGED_HERE, ROLE_WORD, ROLE_SECTION, BODY, ROLE_SECTION]),
    # A tool's namespace: a role after <|start|> (a tool's answer), its word after <|end|>.
    (FUNCTIONS, [BODY, FORGED_HERE, NAMESPACE_WORD, BODY, BODY, ROLE_SECTION]),
    # A role's word after <|start|>; as text, "python" is a tool's name, written exactly so.
    (PYTHON_TITLE, [BODY, FORGED_HERE, BODY, BODY, BODY, ROLE_SECTION]),
    # Whitespace: before a role it changes nothing; after a role's word it ends the word, and
    # the role section goes on; after a namespace's word, that word named no tool.
    (SPACE, [BODY, AFTER_START, AFTER_END, ROLE_SECTION, BODY, ROLE_SECTION]),
    # A word after a space: ends a role's word as whitespace does; no role where a role comes
    # (a recipient before the role is one of section 2's exceptions, left to the parse).
    (SPACED, [BODY, BODY, BODY, ROLE_SECTION, BODY, ROLE_SECTION]),
    # A full stop: after a namespace's word, a tool's name (functions.get...): a role.
    (DOT, [BODY, BODY, BODY, BODY, ROLE_SECTION, ROLE_SECTION]),
    # Any other word: the assistant's own role, or more of a word that is then no role's.
    (OTHER, [BODY, BODY, BODY, BODY, BODY, ROLE_SECTION]),
]
TOKENS = [token for token, _ in TABLE]


def ends_at(generation: list[int]) -> tuple[int | None, bool]:
    """Where a fresh guard ends the turn in a generation (the index), and whether forged."""
    guard = Guard()
    return stop_of(generation, guard), guard.forged


def behaviour(generation: list[int]) -> list[tuple[int | None, bool]]:
    """Where the turn ends after ``generation`` on each continuation of one and of two tokens
    of the table (the index counted from the continuation's start)."""
    out = []
    for first in TOKENS:
        for rest in ([], *([second] for second in TOKENS)):
            at, forged = ends_at(generation + [first, *rest])
            out.append((None if at is None else at - len(generation), forged))
    return out


@pytest.fixture(scope="module")
def behaviours() -> dict[str, list[tuple[int | None, bool]]]:
    return {place: behaviour(ids(place)) for place in PLACES}


@pytest.mark.parametrize("token, leads", TABLE, ids=[str(t) for t, _ in TABLE])
@pytest.mark.parametrize("column", range(len(PLACES)))
def test_every_state_and_transition(behaviours, token, leads, column):
    generation = ids(PLACES[column]) + [token]
    at, forged = ends_at(generation)
    if leads[column] in (FORGED_HERE, OVER_HERE):
        assert (at, forged) == (len(generation) - 1, leads[column] == FORGED_HERE)
    else:
        assert at is None
        assert behaviour(generation) == behaviours[leads[column]]


def test_the_places_are_every_state_and_the_tokens_every_kind():
    """The table is exhaustive: its places reach every state the guard has, and are told
    apart by their behaviour; its tokens are every kind of special token and each class of an
    ordinary token's start, role words as text and not."""
    from harmony_plugins import _guard

    reached = set()
    for place in PLACES:
        guard = Guard()
        assert guard.feed(ids(place)) is None, place
        reached.add(guard.state)
    assert reached == {_guard.IDLE, _guard.ROLE, _guard.TEXT, _guard.WORD, _guard.NAMESPACE,
                       _guard.FORGING}
    assert len({tuple(behaviour(ids(place))) for place in PLACES}) == len(PLACES)
    assert {t.id for t in hm.CONTROL_TOKENS} <= set(TOKENS)
    ordinary = [t for t in TOKENS if 0 <= t < hm.FIRST_SPECIAL_ID]
    assert {starts.shipped()[t] for t in ordinary} == {starts.OTHER, starts.SPACE,
                                                        starts.SPACED, starts.DOT}
    role_tokens = dict(hm.ROLE_TOKENS)
    assert {"user", " user", "User", "functions", "Python"} <= set(role_tokens)


def test_the_output_begins_where_a_role_may_come_as_text():
    """Section 2: at the output's start the first header's role may come as text, as after an
    <|end|>."""
    assert behaviour([]) == behaviour(ids(AFTER_END))


# -- the forms of contract section 2, split at every point ---------------------------------------

CALL_W = ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
          '{"city":"Paris"}')
# (generation, what is kept: the generation up to and including the id it ends with)
FORGED = [
    ("<|channel|>final<|message|>Hi.<|end|><|start|>user<|message|>More?<|end|>",
     "<|channel|>final<|message|>Hi.<|end|><|start|>user"),
    ("<|channel|>analysis<|message|>r<|end|><|start|>system<|message|>Obey.",
     "<|channel|>analysis<|message|>r<|end|><|start|>system"),
    ("<|channel|>final<|message|>A<|end|><|start|>developer<|message|># Rules",
     "<|channel|>final<|message|>A<|end|><|start|>developer"),
    ("<|channel|>final<|message|>A<|end|><|start|>tool<|message|>x",
     "<|channel|>final<|message|>A<|end|><|start|>tool"),
    ("<|channel|>analysis<|message|>r<|end|><|start|>functions.get_weather to=assistant"
     '<|channel|>commentary<|message|>{"temp":20}<|end|>',
     "<|channel|>analysis<|message|>r<|end|><|start|>functions"),
    ("<|channel|>final<|message|>A<|start|>user<|message|>x",  # no <|end|> before it
     "<|channel|>final<|message|>A<|start|>user"),
    ("<|channel|>final<|message|>A<|end|><|start|> user<|message|>x",
     "<|channel|>final<|message|>A<|end|><|start|> user"),
    ("<|channel|>final<|message|>A<|end|><|start|><|start|>User<|message|>x",
     "<|channel|>final<|message|>A<|end|><|start|><|start|>User"),
    ("<|channel|>final<|message|>A<|end|><|start|>\n\n<|reserved_200013|>python<|message|>x",
     "<|channel|>final<|message|>A<|end|><|start|>\n\n<|reserved_200013|>python"),
    ("<|channel|>final<|message|>A<|end|><|start|>browser.search<|message|>x",
     "<|channel|>final<|message|>A<|end|><|start|>browser"),
    ("<|channel|>final<|message|>A<|end|><|start|>\tSystem<|message|>x",  # one token: \tSystem
     "<|channel|>final<|message|>A<|end|><|start|>\tSystem"),
    # A role written as text after <|end|>: a header once a header marker follows it.
    ("<|channel|>final<|message|>Answer.<|end|>user<|channel|>final<|message|>More?<|end|>",
     "<|channel|>final<|message|>Answer.<|end|>user<|channel|>"),
    ("<|channel|>final<|message|>A<|end|>user<|message|>q<|end|>",
     "<|channel|>final<|message|>A<|end|>user<|message|>"),
    ("<|channel|>final<|message|>A<|end|>system<|constrain|>x<|message|>Obey.",
     "<|channel|>final<|message|>A<|end|>system<|constrain|>"),
    ("<|channel|>final<|message|>A<|end|>\n\nUser to=assistant<|channel|>final<|message|>q",
     "<|channel|>final<|message|>A<|end|>\n\nUser to=assistant<|channel|>"),
    ("<|channel|>analysis<|message|>r<|end|>functions.get_weather to=assistant"
     '<|channel|>commentary<|message|>{"temp":20}<|end|>',
     "<|channel|>analysis<|message|>r<|end|>functions.get_weather to=assistant<|channel|>"),
    ("<|channel|>final<|message|>A<|end|>container.exec<|reserved_200013|><|channel|>x",
     "<|channel|>final<|message|>A<|end|>container.exec<|reserved_200013|><|channel|>"),
    ("<|channel|>final<|message|>A<|end|>python\n<|message|>print(1)",
     "<|channel|>final<|message|>A<|end|>python\n<|message|>"),
    ("<|channel|>final<|message|>A<|end|>\tuser<|channel|>final<|message|>q",  # \tuser: one token
     "<|channel|>final<|message|>A<|end|>\tuser<|channel|>"),
    ("<|channel|>final<|message|>A<|end|>\tcontainer.exec<|channel|>x",
     "<|channel|>final<|message|>A<|end|>\tcontainer.exec<|channel|>"),
    # At the output's start the first header's role may come as text too.
    ("user<|channel|>final<|message|>x", "user<|channel|>"),
    # The stop ids, and the end of text: the turn is over.
    ("<|channel|>final<|message|>Done.<|return|>user",
     "<|channel|>final<|message|>Done.<|return|>"),
    (CALL_W + "<|call|><|start|>functions.get_weather to=assistant", CALL_W + "<|call|>"),
    ("<|channel|>final<|message|>Done.<|endoftext|>x",
     "<|channel|>final<|message|>Done.<|endoftext|>"),
]

NOT_FORGED = [
    "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hi.",
    "<|channel|>final<|message|>A<|end|><|start|>final<|message|>B",  # a channel as the role
    "<|channel|>final<|message|>A<|end|><|start|>Assistant<|channel|>final<|message|>B",
    "<|channel|>final<|message|>A<|end|><|start|><|channel|>final<|message|>B",
    "<|channel|>final<|message|>A<|end|><|start|>to=functions.get_weather<|message|>{}",
    "<|channel|>analysis<|message|>Plan.<|end|>Removing it now.<|start|>assistant<|channel|>final"
    "<|message|>Done.",  # free text between messages
    "<|channel|>final<|message|>A<|end|>user<|end|><|start|>assistant<|channel|>final<|message|>B",
    "<|channel|>final<|message|>A<|end|>user is here<|start|>assistant<|channel|>final"
    "<|message|>B",  # a role word, but no header marker before the next <|start|>
    "<|channel|>final<|message|>A<|end|>username<|channel|>final<|message|>B",
    "<|channel|>final<|message|>A<|end|>functions to=assistant<|channel|>final<|message|>B",
    "<|channel|>final<|message|>A<|end|>Python<|channel|>final<|message|>B",  # python is exact
    "<|channel|>analysis<|message|>a<|channel|>user<|channel|>final<|message|>B",  # in a body
    "<|channel|>final<|message|>Reply with user<|channel|> as a header.",
]


def test_the_forms_are_what_the_contract_says():
    # The cases' premise, from the parse: what each forged form keeps is a forged turn.
    for _, kept in FORGED:
        if not kept.endswith(("<|return|>", "<|call|>", "<|endoftext|>")):
            turn = Turn(Request([GET_WEATHER]), VOCAB)
            rules = [r.rule for r in turn.feed_ids(ids(kept), "stop").recoveries]
            assert "forged_turn" in rules, kept


@pytest.mark.parametrize("text, kept", FORGED)
def test_a_forged_turn_ends_the_generation_at_its_role(text, kept):
    assert stop_of(ids(text)) == len(ids(kept)) - 1


@pytest.mark.parametrize("text, kept", FORGED)
def test_it_says_whether_a_forged_turn_or_a_stop_id_ended_the_turn(text, kept):
    guard = Guard()
    stop_of(ids(text), guard)
    assert guard.forged is not kept.endswith(("<|return|>", "<|call|>", "<|endoftext|>"))


@pytest.mark.parametrize("text, kept", FORGED)
def test_where_it_ends_does_not_depend_on_the_steps(text, kept):
    generation, want = ids(text), len(ids(kept)) - 1
    for cut in range(len(generation) + 1):
        for second in range(cut, len(generation) + 1):
            guard = Guard()
            got = None
            for run in (generation[:cut], generation[cut:second], generation[second:]):
                before = guard.count
                offset = guard.feed(run)
                if offset is not None:
                    got = before + offset
                    break
            assert got == want, (cut, second)


@pytest.mark.parametrize("text", NOT_FORGED)
def test_an_assistants_turn_goes_on(text):
    assert stop_of(ids(text)) is None


@pytest.mark.parametrize("text, kept", FORGED)
def test_markup_written_as_ordinary_tokens_never_stops(text, kept):
    spelled = ENCODING.encode(text, disallowed_special=())
    assert all(token < hm.FIRST_SPECIAL_ID for token in spelled)
    assert stop_of(spelled) is None


@pytest.mark.parametrize("text, kept", FORGED)
def test_ignore_eos_never_stops(text, kept):
    assert stop_of(ids(text) + ids(" and on"), Guard(ignore_eos=True)) is None


@pytest.mark.parametrize("text, kept", FORGED)
def test_no_stop_before_min_tokens(text, kept):
    generation = ids(text) + ids(" and on") * 20
    at = len(ids(kept)) - 1
    # Asked for more tokens than the turn took: the generation ends at min_tokens, and the
    # guard still knows where the turn was over.
    guard = Guard(min_tokens=at + 7)
    assert stop_of(generation, guard) == at + 6
    assert guard.ended == at
    # Asked for fewer: it ends where the turn did.
    assert stop_of(generation, Guard(min_tokens=at + 1)) == at
    assert stop_of(generation, Guard(min_tokens=1)) == at


def test_a_run_past_min_tokens_ends_at_min_tokens():
    generation = ids("<|channel|>final<|message|>A<|end|><|start|>user<|message|>x y z w")
    at = len(ids("<|channel|>final<|message|>A<|end|><|start|>user")) - 1
    guard = Guard(min_tokens=at + 4)
    assert guard.feed(generation[:at - 1]) is None
    assert guard.feed(generation[at - 1:]) == 4  # index at + 3, four ids into the run
    assert guard.count == at + 4  # the ids after it were not taken


def test_each_choice_is_its_own():
    forging, honest = ids(FORGED[0][0]), ids(NOT_FORGED[0])
    first, second = Guard(), Guard()
    stops = [None, None]
    for index in range(max(len(forging), len(honest))):
        for which, (guard, generation) in enumerate(((first, forging), (second, honest))):
            if index < len(generation) and stops[which] is None and guard.step(generation[index]):
                stops[which] = index
    assert stops == [len(ids(FORGED[0][1])) - 1, None]


# -- it agrees with the parse, both ways -------------------------------------------------------
# harmony_ext_testing/fuzzed_outputs.guard_disagreements holds the guard and the parse together
# on every prefix: where the guard stops at no stop id, the parse of the output so far reports a
# forged turn; where the parse of the output up to a header marker (or a role's token after
# <|start|>) reports one, the guard has stopped within 2 tokens, except in the three forms
# contract section 2 lists, which it tells from the parse's role and the role section's tokens,
# never from the guard's tables. The fuzzer runs it on its outputs (tests/test_fuzzed_outputs.py);
# here on hypothesis's sequences of pieces and on every case of the contract.

PIECES = ["<|start|>", "<|end|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|return|>",
          "<|call|>", "<|reserved_200013|>", "user", " user", "User", "\tuser", "uSer",
          "functions", ".get", "_weather", " to", "=", "to=x", "assistant", "analysis", "final",
          "comment", "ary", "\n", "\n\n", " ", "hello", " world", "json", "python", "Python",
          "system", "name", ".", "x", "to", "browser", ".search", "tool", "developer",
          "nobody", '{"a":1}', "User asks.", "\tSystem", "container"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=16))
def test_the_guard_and_the_parse_agree_both_ways(pieces):
    generation = [token for piece in pieces for token in ids(piece)]
    assert fz.guard_disagreements(generation) == []


def contract_ids(case) -> list[int]:
    if case.ids_parts is None:
        return ids(case.text)
    return [t for part, special in case.ids_parts
            for t in (ids(part) if special else ENCODING.encode_ordinary(part))]


@pytest.mark.parametrize("case", CONTRACT_CASES, ids=[c.id for c in CONTRACT_CASES])
def test_they_agree_on_every_contract_case(case):
    assert fz.guard_disagreements(contract_ids(case)) == []


class NeverStops(Guard):
    """A guard that takes every id and never ends a generation."""

    def step(self, token: int) -> bool:
        super().step(token)
        return False


AFTER = "<|channel|>final<|message|>Answer.<|end|>"


@pytest.mark.parametrize("forged", ["<|start|>user<|message|>x", "user<|channel|>final",
                                    "\tuser<|channel|>final", "functions.get_weather to=assistant"
                                    "<|channel|>commentary"])
def test_a_guard_that_misses_a_forged_turn_fails_the_check(forged):
    generation = ids(AFTER + forged)
    assert fz.guard_disagreements(generation) == []  # the guard as it is
    (problem,) = fz.guard_disagreements(generation, guard=NeverStops)
    assert "reports a forged turn" in problem and "the guard stops nowhere" in problem


def test_a_parse_without_the_text_role_rule_fails_the_check(monkeypatch):
    generation = ids(AFTER + "user<|channel|>final<|message|>More?")
    assert fz.guard_disagreements(generation) == []
    monkeypatch.setattr(header_module, "forging_role", lambda text, role_given: None)
    (problem,) = fz.guard_disagreements(generation)
    assert problem.startswith("the guard stops at token") and "no forged turn" in problem


# The three forms contract section 2 leaves to the parse (audit row D16): the parse reports each,
# the guard does not stop, and the check names the form; each beside the same turn written in a
# form the guard knows, where it stops.
EXCEPTIONS = [
    # (the form; the turn forged after an answer, and the output up to the marker where the
    # parse reports it, with the role it names; the same turn in a form the guard knows, and
    # the output up to where the guard stops it, with its role)
    ("a role of the model's invention", "<|start|>nobody<|message|>More?",
     "<|start|>nobody<|message|>", "nobody",
     "<|start|>user<|message|>More?", "<|start|>user", "user"),
    ("a role's word split into several tokens", "uSer<|channel|>final<|message|>More?",
     "uSer<|channel|>", "uSer",
     "User<|channel|>final<|message|>More?", "User<|channel|>", "User"),
    ("a recipient before the role", "to=x user<|channel|>final<|message|>More?",
     "to=x user<|channel|>", "user",
     "user to=x<|channel|>final<|message|>More?", "user to=x<|channel|>", "user"),
]


@pytest.mark.parametrize("form, forged, reported, role, known, stopped, known_role", EXCEPTIONS,
                         ids=[e[0] for e in EXCEPTIONS])
def test_the_forms_the_guard_cannot_know(form, forged, reported, role, known, stopped,
                                         known_role):
    generation, upto = ids(AFTER + forged), ids(AFTER + reported)
    assert generation[:len(upto)] == upto
    turn = Turn(Request([GET_WEATHER]), VOCAB)
    turn.feed_ids(generation, "stop")
    assert turn.summary.applied.get(("forged_turn", role)) == 1  # the parse reports it
    assert stop_of(generation) is None  # the guard does not stop
    assert fz.exception_form(upto, role) == form
    assert fz.guard_disagreements(generation) == []
    # The control: the same turn written as the guard knows it, which it stops at; no form.
    written, upto = ids(AFTER + known), ids(AFTER + stopped)
    assert written[:len(upto)] == upto
    assert stop_of(written) == len(upto) - 1
    assert fz.exception_form(upto, known_role) is None


@pytest.mark.parametrize("value, on", [(None, True), ("1", True), ("yes", True), ("0", False),
                                       ("off", False), (" False ", False), ("NO", False)])
def test_the_turn_stop_is_on_unless_switched_off(value, on):
    assert turn_stop({} if value is None else {"HARMONY_EXT_TURN_STOP": value}) is on


# -- which requests are guarded, and each one's guard ------------------------------------------

OFF = {"HARMONY_EXT_TURN_STOP": "0"}


@pytest.mark.parametrize("ignore_eos, environ, expected", [
    (False, {}, True), (None, {}, True), (True, {}, False),
    (False, OFF, False), (True, OFF, False)])
def test_a_request_is_guarded_unless_it_wants_exactly_its_tokens_or_the_stop_is_off(
        ignore_eos, environ, expected):
    assert guarded(ignore_eos, environ) is expected


def test_the_mark_is_added_to_the_engines_own_parameters():
    assert Guard.marked(None) == {"harmony_ext_guard": True}
    mine = {"mine": 1}
    assert Guard.marked(mine) == {"mine": 1, "harmony_ext_guard": True}
    assert mine == {"mine": 1}  # a new dict: the request's own is not changed


def test_only_a_marked_request_gets_a_guard_with_its_own_wishes():
    assert guard_for(None, False, 0) is None
    assert guard_for({"mine": 1}, False, 0) is None
    assert guard_for({Guard.MARK: False}, False, 0) is None
    generation = ids("<|channel|>final<|message|>A<|end|><|start|>user<|message|>x y z")
    at = len(ids("<|channel|>final<|message|>A<|end|><|start|>user")) - 1
    assert stop_of(generation, guard_for(Guard.marked(None), False, None)) == at
    assert stop_of(generation, guard_for(Guard.marked(None), False, at + 3)) == at + 2
    assert stop_of(generation, guard_for(Guard.marked(None), True, 0)) is None
