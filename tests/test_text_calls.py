"""Calls written as text, recovered when asked (contract section 10): the shapes gpt-oss writes
(hermes-agent#84158, cloudflare/ai#574, lmstudio#873, worker-vllm#262) turn into calls, and every
near miss stays what it is without the switch. Expected values written by hand from the
contract; token ids from tiktoken's o200k_harmony."""

from __future__ import annotations

import json

import pytest

from harmony_plugins import ChatResult, Request, Turn, _checks
from harmony_plugins.vocab import o200k

ENCODING = o200k.tiktoken_encoding()
WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
    "additionalProperties": False}}}
TIME = {"type": "function", "function": {"name": "get_time", "parameters": {
    "type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"],
    "additionalProperties": False}}}
ANYTHING = {"type": "function", "function": {"name": "note", "parameters": {"type": "object"}}}
PARIS = '{"city":"Paris"}'
FINAL = "<|channel|>final<|message|>"

# (id, output, tools, tool_choice, the call recovered (name, arguments), reasoning)
RECOVERED = [
    ("no_markup", f"to=functions.get_weather {PARIS}", [WEATHER], "auto",
     ("get_weather", PARIS), None),
    ("final", f"{FINAL}to=functions.get_weather {PARIS}<|return|>", [WEATHER], "auto",
     ("get_weather", PARIS), None),
    ("channel_word_and_type", f"{FINAL}commentary to=functions.get_weather json{PARIS}"
     "<|return|>", [WEATHER, TIME], "auto", ("get_weather", PARIS), None),
    ("preamble_spaced", "<|channel|>commentary<|message|>  to=functions.get_weather json "
     '{"city": "Paris"}\n<|end|>', [WEATHER], "auto", ("get_weather", '{"city": "Paris"}'),
     None),
    ("after_reasoning", "<|channel|>analysis<|message|>Weather.<|end|><|start|>assistant"
     f"{FINAL}to=functions.get_weather {PARIS}<|return|>", [WEATHER], "auto",
     ("get_weather", PARIS), "Weather."),
    ("bare_required", f"{FINAL}{PARIS}<|return|>", [WEATHER, TIME], "required",
     ("get_weather", PARIS), None),
    ("bare_named", f'{FINAL}{{"tz": "UTC"}}<|return|>', [WEATHER, TIME],
     {"type": "function", "function": {"name": "get_time"}}, ("get_time", '{"tz": "UTC"}'),
     None),
]

# (id, output, tools, tool_choice, finish): each stays as it is without the switch
NEAR_MISSES = [
    ("prose_before", f"{FINAL}Sure: to=functions.get_weather {PARIS}<|return|>", [WEATHER],
     "auto", "stop"),
    ("prose_after", f"{FINAL}to=functions.get_weather {PARIS} is what I would call.<|return|>",
     [WEATHER], "auto", "stop"),
    ("undeclared_name", f"{FINAL}to=functions.get_time {PARIS}<|return|>", [WEATHER], "auto",
     "stop"),
    ("schema_refuses", f'{FINAL}to=functions.get_weather {{"town":"Paris"}}<|return|>',
     [WEATHER], "auto", "stop"),
    ("cut_object", f'{FINAL}to=functions.get_weather {{"city":"Par', [WEATHER], "auto",
     "length"),
    ("json_answer_not_forced", f"{FINAL}{PARIS}<|return|>", [WEATHER], "auto", "stop"),
    ("quoted_example", f"{FINAL}```\nto=functions.get_weather {PARIS}\n```<|return|>",
     [WEATHER], "auto", "stop"),
    ("in_reasoning", f"<|channel|>analysis<|message|>to=functions.get_weather {PARIS}<|end|>",
     [WEATHER], "auto", "stop"),
    ("bare_fits_two", f'{FINAL}{{"x": 1}}<|return|>', [ANYTHING, {**ANYTHING, "function": {
        **ANYTHING["function"], "name": "memo"}}], "required", "stop"),
    ("not_an_object", f'{FINAL}to=functions.get_weather ["Paris"]<|return|>', [WEATHER],
     "auto", "stop"),
    ("named_other_function", f"{FINAL}{PARIS}<|return|>", [WEATHER, TIME],
     {"type": "function", "function": {"name": "get_time"}}, "stop"),
    ("none_forced", f"{FINAL}to=functions.get_weather {PARIS}<|return|>", [WEATHER], "none",
     "stop"),
]


def run(text: str, tools: list, choice, recover: bool, mode: str, per_unit: bool,
        finish: str = "stop"):
    """(the chat message, the turn's Summary, the steps' content pieces) of one output."""
    seen = []
    turn = Turn(Request(tools, choice, recover_text_calls=recover), observer=seen.append,
                id_factory=lambda: "call_1")
    data = ENCODING.encode(text, allowed_special="all") if mode == "ids" else text
    units = ([[i] for i in data] if mode == "ids" else list(data)) if per_unit else [data]
    result, pieces = ChatResult(), []
    for unit in units:
        step = turn.feed_ids(unit) if mode == "ids" else turn.feed_text(unit)
        result.add(step)
        pieces.append(step.content)
    result.add(turn.close(finish))
    return result.message(), seen[0], pieces


def calls_of(message: dict) -> list[tuple[str, str]]:
    return [(c["function"]["name"], c["function"]["arguments"]) for c in message["tool_calls"]]


@pytest.mark.parametrize("mode", ["text", "ids"])
@pytest.mark.parametrize("per_unit", [False, True])
@pytest.mark.parametrize("case", RECOVERED, ids=[c[0] for c in RECOVERED])
def test_a_call_written_as_text_is_that_call_when_asked(case, mode, per_unit):
    _, text, tools, choice, call, reasoning = case
    message, summary, pieces = run(text, tools, choice, True, mode, per_unit)
    assert calls_of(message) == [call]
    assert (message["content"], message["reasoning"]) == (None, reasoning)
    assert message["finish_reason"] == "tool_calls"
    assert summary.recoveries.get("call_written_as_text") == 1
    assert summary.outcomes == {"surfaced": 1}
    assert "".join(pieces) == ""  # held back while it may be a call: never shown
    # without the switch: content, as before, and no such rule
    message, summary, _ = run(text, tools, choice, False, mode, per_unit)
    assert calls_of(message) == [] and message["content"]
    assert "call_written_as_text" not in summary.recoveries


@pytest.mark.parametrize("mode", ["text", "ids"])
@pytest.mark.parametrize("case", NEAR_MISSES, ids=[c[0] for c in NEAR_MISSES])
def test_a_near_miss_stays_as_it_is(case, mode):
    _, text, tools, choice, finish = case
    for per_unit in (False, True):
        on = run(text, tools, choice, True, mode, per_unit, finish)
        off = run(text, tools, choice, False, mode, per_unit, finish)
        assert on[0] == off[0]  # the same message, switch on or off
        assert on[1] == off[1]  # the same counts
        assert "call_written_as_text" not in on[1].recoveries
        assert calls_of(on[0]) == []


def test_a_message_that_cannot_be_a_call_is_shown_as_it_comes():
    """Held only as long as it may be a call: plain prose shows at its first piece."""
    text = f"{FINAL}Hello there, all is well.<|return|>"
    _, _, pieces = run(text, [WEATHER], "auto", True, "ids", True)
    shown = [p for p in pieces if p]
    assert shown[0] == "Hello" and "".join(shown) == "Hello there, all is well."
    _, _, pieces = run(f"{FINAL}to=functions.get_weather {PARIS} or not.<|return|>",
                       [WEATHER], "auto", True, "ids", True)
    shown = [p for p in pieces if p]
    assert len(shown) > 1 and "".join(shown) == f"to=functions.get_weather {PARIS} or not."
    # A first word that began like "commentary" and ended as another word: shown from there
    # on, not held to the end.
    _, _, pieces = run(f"{FINAL}comment on it, all is well.<|return|>", [WEATHER], "auto",
                       True, "ids", True)
    shown = [p for p in pieces if p]
    assert len(shown) > 2 and "".join(shown) == "comment on it, all is well."


def test_without_a_schema_check_nothing_is_recovered(monkeypatch):
    monkeypatch.setattr(_checks, "_jsonschema", False)
    message, summary, _ = run(RECOVERED[1][1], [WEATHER], "auto", True, "text", False)
    assert calls_of(message) == [] and message["content"] == f"to=functions.get_weather {PARIS}"
    assert "call_written_as_text" not in summary.recoveries


def test_a_recovered_call_is_framed_as_a_call_in_the_events():
    turn = Turn(Request([WEATHER], recover_text_calls=True), events=True,
                id_factory=lambda: "call_1")
    step = turn.feed_text(RECOVERED[1][1], finish="stop")
    kinds = [(type(e).__name__, getattr(e, "kind", None)) for e in step.events]
    assert ("MessageBegin", "call") in kinds and ("MessageBegin", "content") not in kinds
    assert json.loads(step.ended[0].arguments) == {"city": "Paris"}


# -- a bare object is a call only where it is plainly one: of a forced function's keys -------

NOTE = {"type": "function", "function": {"name": "note", "description": "Keep a note."}}
"""A function without ``parameters``: its schema takes every object."""
EMPTY_PROPERTIES = {"type": "function", "function": {"name": "note", "parameters": {
    "type": "object", "properties": {}}}}
"""``properties`` names nothing: it takes every object too."""
ONLY_REQUIRED = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "required": ["q"]}}}
"""No ``properties``, only a required key: it declares no property, so no bare object."""
LOOKUP = {"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}
OPTIONAL = {"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}
"""Every parameter optional: its schema takes any object, ``{}`` included."""
ANSWER = '{"answer": "Paris"}'
"""A JSON answer, as a model writes one to a request that wants JSON."""


def named(name: str) -> dict:
    return {"type": "function", "function": {"name": name}}


# (id, output, tools, tool_choice, content): the forced functions' schemas do not constrain a
# bare object (or the one that does refuses it), so the JSON answer is content, switch on or off.
UNCONSTRAINED = [
    ("no_parameters_required", f"{FINAL}{ANSWER}<|return|>", [NOTE], "required", ANSWER),
    ("no_parameters_named", f"{FINAL}{ANSWER}<|return|>", [NOTE, WEATHER], named("note"),
     ANSWER),
    ("object_only_required", f"{FINAL}{ANSWER}<|return|>", [ANYTHING], "required", ANSWER),
    ("object_only_named", f"{FINAL}{ANSWER}<|return|>", [ANYTHING, WEATHER], named("note"),
     ANSWER),
    ("empty_properties_required", f"{FINAL}{ANSWER}<|return|>", [EMPTY_PROPERTIES],
     "required", ANSWER),
    ("empty_object_no_parameters", f"{FINAL}{{}}<|return|>", [NOTE], "required", "{}"),
    ("only_required_no_properties", f'{FINAL}{{"q": "x"}}<|return|>', [ONLY_REQUIRED],
     "required", '{"q": "x"}'),
    # Every parameter optional: the schema takes any object, so only an object made of the
    # declared keys is plainly a call (contract 10).
    ("optional_empty_object", f"{FINAL}{{}}<|return|>", [OPTIONAL], "required", "{}"),
    ("optional_not_its_keys", f'{FINAL}{{"answer": "Paris", "confidence": 0.9}}<|return|>',
     [OPTIONAL], named("get_weather"), '{"answer": "Paris", "confidence": 0.9}'),
    ("optional_one_undeclared_key", f'{FINAL}{{"city": "Paris", "units": "C"}}<|return|>',
     [OPTIONAL], "required", '{"city": "Paris", "units": "C"}'),
    ("declared_empty_object", f"{FINAL}{{}}<|return|>", [WEATHER], "required", "{}"),
    ("constrained_one_refuses", f"{FINAL}{ANSWER}<|return|>", [NOTE, WEATHER], "required",
     ANSWER),
    ("preamble_no_parameters", f"<|channel|>commentary<|message|>{ANSWER}<|end|>", [NOTE],
     "required", ANSWER),
]


@pytest.mark.parametrize("mode", ["text", "ids"])
@pytest.mark.parametrize("per_unit", [False, True])
@pytest.mark.parametrize("case", UNCONSTRAINED, ids=[c[0] for c in UNCONSTRAINED])
def test_a_bare_object_is_never_a_call_to_an_unconstrained_function(case, mode, per_unit):
    """Contract 10: a bare object is a call only where it is plainly one: at least one key,
    every key a property the forced function declares, and its schema takes it. A function
    without ``parameters``, or whose ``parameters`` declares no property, never receives one;
    ``{}`` and an object with a key the function does not declare are answers. The answer is
    content, as with the switch off."""
    _, text, tools, choice, content = case
    message, summary, _ = run(text, tools, choice, True, mode, per_unit)
    assert (message["content"], message["tool_calls"], message["finish_reason"]) == (
        content, [], "stop")
    assert summary.recoveries == {} and summary.outcomes == {}
    assert run(text, tools, choice, False, mode, per_unit)[0] == message


@pytest.mark.parametrize("mode", ["text", "ids"])
def test_a_bare_object_goes_to_the_one_constraining_schema_that_takes_it(mode):
    """A forced ``required`` with one unconstrained and one constraining function: the object
    the constraining one takes is its call; the unconstrained one is not a second fit."""
    for tools, text, call in (
            ([NOTE, WEATHER], f"{FINAL}{PARIS}<|return|>", ("get_weather", PARIS)),
            ([ANYTHING, LOOKUP], f'{FINAL}{{"q": "x"}}<|return|>',
             ("lookup", '{"q": "x"}')),
            ([OPTIONAL], f"{FINAL}{PARIS}<|return|>", ("get_weather", PARIS))):
        message, summary, pieces = run(text, tools, "required", True, mode, True)
        assert calls_of(message) == [call] and message["content"] is None
        assert summary.recoveries == {"call_written_as_text": 1}
        assert "".join(pieces) == ""


@pytest.mark.parametrize("tools", [[NOTE], [ANYTHING]], ids=["no_parameters", "object_only"])
@pytest.mark.parametrize("choice", ["auto", "required", named("note")],
                         ids=["auto", "required", "named"])
def test_the_named_form_to_an_unconstrained_function_is_still_its_call(tools, choice):
    """The named form names its function: ``to=functions.note {...}`` is that call whatever
    the function's schema, as before."""
    text = f'{FINAL}to=functions.note {{"x": 1}}<|return|>'
    message, summary, _ = run(text, tools, choice, True, "ids", True)
    assert calls_of(message) == [("note", '{"x": 1}')] and message["content"] is None
    assert summary.recoveries == {"call_written_as_text": 1}


def test_a_forced_json_answer_is_held_to_its_end_only_where_it_may_be_a_call():
    """With the switch on and a constraining function forced, a JSON answer may be that call
    until it ends: nothing of it is shown before then, and all of it after (the schema refused
    it). Where no forced function constrains, it cannot be one: shown as it comes."""
    text = f"{FINAL}{ANSWER}<|return|>"
    _, _, pieces = run(text, [WEATHER], "required", True, "ids", True)
    assert [p for p in pieces if p] == [ANSWER]  # one piece: at the end
    assert pieces[-1] == ANSWER  # the feed of <|return|>
    _, _, pieces = run(text, [NOTE], "required", True, "ids", True)
    shown = [p for p in pieces if p]
    assert len(shown) > 3 and shown[0] == '{"' and "".join(shown) == ANSWER


# -- the head of a call written as text, read as it comes ------------------------------------
# Contract section 10's shape: ``[commentary ]to=functions.NAME [json]{object}`` (the named
# form, where the request declares functions) or, where a call is forced, a bare object with
# only whitespace before it. (head, what it may still become: the named form, a bare object)

HEADS = [
    # nothing yet, or whitespace: either form may follow
    ("", True, True), ("  \n", True, True),
    # the named form, each word as it is being written
    ("t", True, False), ("to", True, False), ("to=functions", True, False),
    ("to=functions.", True, False), ("to=functions.get_weather", True, False),
    ("to=functions.get_weather ", True, False), ("to=functions.get_weather js", True, False),
    ("to=functions.get_weather json", True, False), (" to=functions.x json ", True, False),
    ("c", True, False), ("comment", True, False), ("commentary", True, False),
    ("commentary ", True, False), ("commentary to=", True, False),
    ("commentary to=functions.get_weather json", True, False),
    # anything else: prose, another channel word, a recipient with no name, a second
    # recipient, another content type, a word glued to the channel word
    ("Sure", False, False), ("final to=functions.x", False, False),
    ("commentary commentary", False, False), ("commentaryto=functions.x", False, False),
    ("to=functions. json", False, False), ("to=functions.x to=functions.y", False, False),
    ("to=functions.x code", False, False), ("to=functions.x jsonx", False, False),
    ("to=functions.x json json", False, False), ("to=browser.search", False, False),
    ("commentary json", False, False),
]


@pytest.mark.parametrize("head, named, bare", HEADS)
def test_the_head_of_a_call_written_as_text_may_go_on_only_as_the_shape_says(head, named,
                                                                              bare):
    from harmony_plugins._text_calls import head_may_continue

    assert head_may_continue(head, named=True, bare=False) is named
    assert head_may_continue(head, named=False, bare=True) is bare
    assert head_may_continue(head, named=False, bare=False) is False
    assert head_may_continue(head, named=True, bare=True) is (named or bare)


@pytest.mark.parametrize("head, words", [
    ("to=functions.get_weather", ["to=functions.get_weather"]),
    ("  commentary to=functions.get_weather json ", ["to=functions.get_weather"]),
    ("to=functions.get_weather json", ["to=functions.get_weather"]),
    ("commentary to=functions.get_weather", ["to=functions.get_weather"]),
    ("", []), (" \n", []),  # a bare object's head
    ("commentary", None), ("json", None), ("commentary json", None), ("to=functions.", None),
    ("to=functions.a to=functions.b", None), ("Sure: to=functions.a", None),
    ("to=functions.a json json", None), ("to=browser.search", None),
])
def test_a_whole_head_names_its_recipient(head, words):
    """At the object's ``{`` the head is whole: its recipient word, none for a bare object,
    or not a head of the shape at all."""
    from harmony_plugins._text_calls import head_words

    assert head_words(head) == words


@pytest.mark.parametrize("text, named, bare, call", [
    ("to=functions.get_weather {\"city\":\"Paris\"}", True, False,
     ("get_weather", '{"city":"Paris"}')),
    ("commentary to=functions.get_weather json{}", True, False, ("get_weather", "{}")),
    ('  {"city":"Paris"} ', False, True, (None, '{"city":"Paris"}')),
    ('  {"city":"Paris"} ', True, False, None),  # a bare object where none is asked for
    ('to=functions.get_weather {"city":"Paris"}', False, True, None),  # the other way round
    ('to=functions.get_weather {"city":"Paris"} or not', True, False, None),
    ('to=functions.get_weather {"city":"Par', True, False, None),  # cut short
    ('to=functions.get_weather ["Paris"]', True, False, None),  # no object
    ("to=functions.get_weather", True, False, None),  # no object at all
])
def test_the_reader_gives_the_call_only_for_a_whole_one(text, named, bare, call):
    """Fed whole and in pieces of one character (the answer never depends on the cut); once
    the text cannot be a call, every piece after it is answered so too."""
    from harmony_plugins._text_calls import TextCallReader

    for cut in (1, len(text)):
        reader = TextCallReader(named, bare)
        possible = [reader.feed(text[i:i + cut]) for i in range(0, len(text), cut)]
        assert reader.call() == call
        # False once the text cannot be one, and for every piece after
        assert possible == sorted(possible, reverse=True)
        if call is not None:
            assert all(possible)
