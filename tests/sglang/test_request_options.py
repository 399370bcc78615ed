"""Request options and server switches of contract section 10, and the preamble's line break of
section 2 (v5), on SGLang's real chat serving (issue 44).

Each output goes through SGLang's ``OpenAIServingChat`` and ``TokenizerManager`` with
harmony-ext selected as both parsers, only the model scripted
(:func:`harmony_ext_testing.sglang_cases.served`: the text as SGLang's detokenizer hands it on,
``<|return|>`` cut, ``<|call|>`` kept), non-streamed and streamed one token per delta:

* ``parallel_tool_calls: false`` surfaces the first of two calls, and ``/metrics`` counts the
  refused one (``parallel_calls_refused``); without the field both come out. With
  tool_choice ``auto`` SGLang 0.5.22 and 0.5.23 put no grammar of their own on the generation
  for it (none in the request's sampling parameters): the parse alone enforces it.
* ``HARMONY_EXT_RECOVER_TEXT_CALLS=1`` (read from the environment when a choice's turn is
  built, per request) turns the hand-written calls written as text of tests/test_text_calls.py
  into calls and leaves its near misses as written, and a JSON answer to a request that forces
  a call to a function whose schema takes any object stays content; with the switch off all
  are as written.
* a preamble then an answer (and the contract's other v5 joins, tests/contract_cases.py) is one
  content with one ``\\n`` between, streamed as not streamed.

Expected values come from those hand-written tables, never from the parser.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing.client import WEATHER
from harmony_ext_testing.sglang_cases import NAME, Case, pieces_for, served
from harmony_ext_testing.sglang_serving import RunChat
from tests.contract_cases import CASES as CONTRACT_CASES
from tests.sglang.sglang_process import run_script
from tests.test_text_calls import NEAR_MISSES, RECOVERED, UNCONSTRAINED

RECOVER_TEXT_CALLS = "HARMONY_EXT_RECOVER_TEXT_CALLS"
RETURN = "<|return|>"  # SGLang's detokenizer cuts it: the parsers never see it
FINAL = "<|channel|>final<|message|>"
PREAMBLE = "<|channel|>commentary<|message|>"
ANALYSIS = "<|channel|>analysis<|message|>"

PARIS = ("get_weather", '{"city":"Paris"}')
TWO_CALLS = (
    '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Paris"}'
    '<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json'
    '<|message|>{"city":"Rome"}<|call|>'
)
"""Two calls in one turn: the first closed by ``<|end|>``, the second ending the turn."""


@pytest.fixture(scope="module")
def pieces(hf_dir: Path) -> Callable[[str], list[str]]:
    """Text cut one token per delta, as SGLang's incremental detokenizer hands it on."""
    return pieces_for(hf_dir)


def both(sglang_chat: RunChat, pieces: Callable[[str], list[str]], case: Case,
         **request: Any) -> dict[str, Any]:
    """``case`` served whole and streamed one token per delta: what a client gets, which must
    be the same both ways (returned once)."""
    whole = served(sglang_chat, case, NAME, None, stream=False, **request)
    streamed = served(sglang_chat, case, NAME, pieces(case.text), stream=True, **request)
    assert streamed == whole
    return whole


def got(reasoning: str | None = None, content: str | None = None,
        calls: list[tuple[str, str]] | None = None, finish: str = "stop") -> dict[str, Any]:
    return {"reasoning": reasoning, "content": content, "calls": calls or [],
            "finish_reason": finish}


# -- parallel_tool_calls (contract 10) -------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls_false_surfaces_the_first_call_only(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]], stream: bool) -> None:
    """The request's field reaches the choice's turn through SGLang's chain: Rome is dropped,
    Paris comes out whole (streamed, its index 0 and one id: ``served`` checks the shape)."""
    case = Case("two_calls_one_turn", TWO_CALLS, "")
    answer = served(sglang_chat, case, NAME, pieces(TWO_CALLS) if stream else None,
                    stream=stream, parallel_tool_calls=False)
    assert answer == got(calls=[PARIS], finish="tool_calls")


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_without_parallel_tool_calls_both_calls_come_out(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]], stream: bool) -> None:
    """The field defaults to true: the same output gives both calls, in order."""
    case = Case("two_calls_one_turn", TWO_CALLS, "")
    answer = served(sglang_chat, case, NAME, pieces(TWO_CALLS) if stream else None,
                    stream=stream)
    assert answer == got(calls=[PARIS, ("get_weather", '{"city":"Rome"}')], finish="tool_calls")


COUNTING = r"""
import json, sys
from harmony_ext_testing.client import WEATHER
from tests.sglang import sglang_process as mp

mp.load_plugins()
model, text = sys.argv[1], @TEXT@
pieces = mp.token_pieces(model, text)
out = {}
for name, options in (("parallel_false", {"parallel_tool_calls": False}), ("default", {})):
    for stream in (False, True):
        deltas = pieces if stream else [text]
        answer, added = mp.counted(lambda: mp.serve(
            model, deltas, stream=stream, tools=[WEATHER],
            finish={"type": "stop", "matched": 200012}, **options))
        out[f"{name}/{'streamed' if stream else 'whole'}"] = {"got": answer, "counted": added}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def counted_runs(gpt_oss_model_dir: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> dict[str, Any]:
    """The two-call output served with and without ``parallel_tool_calls: false``, whole and
    streamed, in a process set up as SGLang with ``--enable-metrics``: what each response
    showed and what it added to ``/metrics``."""
    return run_script(COUNTING.replace("@TEXT@", repr(TWO_CALLS)), gpt_oss_model_dir,
                      tmp_path_factory.mktemp("metrics"))


@pytest.mark.parametrize("run", ["whole", "streamed"])
def test_a_refused_call_is_counted_on_metrics(counted_runs: dict[str, Any], run: str) -> None:
    """``harmony_ext_recoveries_total{rule="parallel_calls_refused"}`` moves by one for the
    dropped call, which is no call outcome; the default request counts two surfaced calls and
    no refusal."""
    refused, default = counted_runs[f"parallel_false/{run}"], counted_runs[f"default/{run}"]
    assert refused["got"]["calls"] == [list(PARIS)]
    assert refused["counted"] == {"responses": 1, "leaks": 0,
                                  "recoveries": {"parallel_calls_refused": 1},
                                  "outcomes": {"surfaced": 1}}
    assert [c[1] for c in default["got"]["calls"]] == ['{"city":"Paris"}', '{"city":"Rome"}']
    assert default["counted"] == {"responses": 1, "leaks": 0, "recoveries": {},
                                  "outcomes": {"surfaced": 2}}


# -- calls written as text (contract 10, an opt-in) ------------------------------------------


def as_written(text: str) -> tuple[str | None, str | None]:
    """(reasoning, content) of a table output read by hand, with nothing recovered: an
    analysis message's body is reasoning; the one visible message's body (after the final or
    preamble header, or the whole text without markup), up to ``<|return|>`` or ``<|end|>``,
    is content, unchanged."""
    reasoning = None
    if text.startswith(ANALYSIS):
        reasoning, _, text = text.removeprefix(ANALYSIS).partition("<|end|>")
        text = text.removeprefix("<|start|>assistant")
    text = text.removeprefix(FINAL).removeprefix(PREAMBLE)
    return reasoning, text.removesuffix(RETURN).removesuffix("<|end|>") or None


def text_case(case_id: str, text: str, tools: list[dict[str, Any]], choice: Any,
              finish: str = "stop") -> Case:
    return Case(case_id, text.removesuffix(RETURN), "", tools=tuple(tools), finish=finish,
                request={"tool_choice": choice})


RECOVERED_CASES = [pytest.param(text_case(i, t, tools, choice), call, reasoning, id=i)
                   for i, t, tools, choice, call, reasoning in RECOVERED]
NEAR_MISS_CASES = [pytest.param(text_case(i, t, tools, choice, finish), as_written(t), id=i)
                   for i, t, tools, choice, finish in NEAR_MISSES]
EVERY_CASE = [pytest.param(text_case(i, t, tools, choice), as_written(t), id=i)
              for i, t, tools, choice, *_ in RECOVERED] + NEAR_MISS_CASES


def test_the_tables_are_the_hand_written_ones() -> None:
    """All 7 recovered shapes and 12 near misses of tests/test_text_calls.py, and the reading
    above gives each recovered output the reasoning its table row names."""
    assert (len(RECOVERED), len(NEAR_MISSES)) == (7, 12)
    for _, text, _, _, _, reasoning in RECOVERED:
        assert as_written(text)[0] == reasoning


@pytest.mark.parametrize(("case", "call", "reasoning"), RECOVERED_CASES)
def test_a_call_written_as_text_is_that_call_with_the_switch_on(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]],
        monkeypatch: pytest.MonkeyPatch, case: Case, call: tuple[str, str],
        reasoning: str | None) -> None:
    """SGLang's chain honours the server switch: the call, with its arguments as written, and
    ``finish_reason: "tool_calls"``; not a character of it shown as content."""
    monkeypatch.setenv(RECOVER_TEXT_CALLS, "1")
    assert both(sglang_chat, pieces, case) == got(reasoning, calls=[call], finish="tool_calls")


@pytest.mark.parametrize(("case", "written"), NEAR_MISS_CASES)
def test_a_near_miss_stays_as_written_with_the_switch_on(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]],
        monkeypatch: pytest.MonkeyPatch, case: Case, written: tuple[str | None, str | None]
        ) -> None:
    """Text around a call, a name not declared, arguments the schema refuses, an object cut
    short, JSON where no call was forced, a quoted example, text in the reasoning: no call,
    the text unchanged."""
    monkeypatch.setenv(RECOVER_TEXT_CALLS, "1")
    assert both(sglang_chat, pieces, case) == got(*written, finish=case.finish)


UNCONSTRAINED_CASES = [pytest.param(text_case(i, t, tools, choice), content, id=i)
                       for i, t, tools, choice, content in UNCONSTRAINED]


@pytest.mark.parametrize(("case", "content"), UNCONSTRAINED_CASES)
def test_a_json_answer_is_no_call_to_a_function_that_takes_any_object(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]],
        monkeypatch: pytest.MonkeyPatch, case: Case, content: str) -> None:
    """Contract 10, the switch on, a call forced (``required`` or named): a bare object is a
    call only where every key is a property the forced function declares (at least one) and
    its schema takes it. Functions without ``parameters``, with a bare ``{"type": "object"}``,
    an empty ``properties`` or ``required`` alone, ``{}``, and a JSON answer not made of the
    keys of a function whose parameters are all optional: content, whole and streamed (and
    where a function that declares the keys is also forced, it refuses it)."""
    assert len(UNCONSTRAINED_CASES) == 13
    monkeypatch.setenv(RECOVER_TEXT_CALLS, "1")
    assert both(sglang_chat, pieces, case) == got(content=content)


@pytest.mark.parametrize(("case", "written"), EVERY_CASE)
def test_with_the_switch_off_every_case_is_as_written(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]],
        monkeypatch: pytest.MonkeyPatch, case: Case, written: tuple[str | None, str | None]
        ) -> None:
    """Off by default: a call written as text is the text the model wrote."""
    monkeypatch.delenv(RECOVER_TEXT_CALLS, raising=False)
    assert both(sglang_chat, pieces, case) == got(*written, finish=case.finish)


# -- a preamble, then another message that goes to content (contract 2, v5) ------------------

V5_JOINS = [c for c in CONTRACT_CASES if c.rule.startswith("2 (v5)")]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_preamble_then_the_answer_is_one_content_with_a_line_break(
        sglang_chat: RunChat, pieces: Callable[[str], list[str]], stream: bool) -> None:
    """``Checking.`` then ``Sunny.`` is ``Checking.\\nSunny.``, not ``Checking.Sunny.``; the
    ``\\n`` goes out with the answer's first text, so the stream adds up to the same."""
    text = ("<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant"
            "<|channel|>final<|message|>Sunny.")
    case = Case("preamble_then_final", text, "", tools=None)
    answer = served(sglang_chat, case, NAME, pieces(text) if stream else None, stream=stream)
    assert answer == got(content="Checking.\nSunny.")


@pytest.mark.parametrize("contract_case", V5_JOINS, ids=[c.id for c in V5_JOINS])
def test_the_contracts_v5_joins_through_chat(sglang_chat: RunChat,
                                             pieces: Callable[[str], list[str]],
                                             contract_case: Any) -> None:
    """Every v5 case of tests/contract_cases.py (a preamble ending in whitespace, two
    preambles, reasoning or a call between, free text after a preamble...): its hand-written
    content, reasoning and calls, whole and streamed."""
    assert len(V5_JOINS) == 9
    case = Case(contract_case.id, contract_case.text.removesuffix(RETURN), "",
                tools=(WEATHER,) if contract_case.tools else None)
    assert both(sglang_chat, pieces, case) == got(
        contract_case.reasoning, contract_case.content, list(contract_case.calls),
        contract_case.finish_reason)
