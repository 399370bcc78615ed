"""``/v1/responses`` on SGLang for gpt-oss, through SGLang's real ``OpenAIServingResponses``.

Only the model is scripted (:mod:`tests.sglang.responses_serving`: its token ids replayed, as
SGLang's Harmony contexts parse ids). Every contract case (tests/contract_cases.py, the ids-mode
ones, ``ids_parts`` included; replayed whole, as with ``ignore_eos``) and every fuzzed output of
the vLLM Responses suite (tests/e2e_vllm/test_responses.py, its own generator; the engine stops at
its stop tokens, as on vLLM, and also replayed whole) goes through streamed and not, with
harmony-ext selected:

* the response answers without an error and ends ``completed`` (``incomplete`` when the case is
  cut by ``max_output_tokens``), streamed (one id per step, and random steps of 1 to 5) and not;
* the streamed items, in ``output_index`` order from 0 with no gap, equal the stream's own
  ``response.completed`` items and the whole response's (:func:`responses_serving.problems`);
* a contract case's items are its hand-written routing (reasoning, content, calls, as chat
  completions route them), one item per Harmony message (written out below where a case has
  more than one message of a kind, or a preamble); a fuzzed output's items read as chat
  completions route the same output through SGLang's chat serving with harmony-ext (the two
  paths agree; what either is worth, the contract suites say), and hold no control token.

The same checks with SGLang's own parser (``gpt-oss`` selected: SGLang's openai_harmony path) fail,
and the reasons are asserted below: the suite can fail.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.contract_cases import CASES, Case, chat_content
from tests.e2e_vllm.test_responses import TOOLS as FUZZ_TOOLS
from tests.e2e_vllm.test_responses import fuzzed_outputs
from tests.sglang import responses_serving as rs

NAME = "harmony-ext"
IDS_CASES = [c for c in CASES if "ids" in c.modes]
FUZZ = fuzzed_outputs(250)
CHAT_FUZZ_TOOLS = [{"type": "function", "function": {"name": t["name"],
                                                     "parameters": t["parameters"]}}
                   for t in FUZZ_TOOLS]

P, F, R, C = "commentary", "final_answer", "reasoning", "message"
ITEMS: dict[str, list[list[Any]]] = {
    # One item per Harmony message, written from the case's text: a preamble (commentary, no
    # recipient) is a message with phase commentary; free text between or after messages is a
    # message of its own (contract 2); messages of one kind are not merged.
    "route_preamble_content": [[C, P, "Let me check the weather."]],
    "route_preamble_then_call": [[R, "Need weather."], [C, P, "Checking now."],
                                 ["function_call", "get_weather", '{"city":"Paris"}']],
    "route_concat_kinds": [[R, "A1 "], [R, "A2"], [C, F, "C1"], [C, F, "C2"]],
    "route_concat_preamble_final": [[C, P, "Checking."], [C, F, "Done."]],
    "route_concat_unknown_and_analysis": [[R, "a"], [R, "b"]],
    "route_free_text_between": [[R, "Plan."], [C, F, "Removing it now."], [C, F, "Done."]],
    "route_free_text_at_end": [[C, F, "A"], [C, F, " Trailing words."]],
    "route_free_text_before_return": [[C, F, "A"], [C, F, "Bye."]],
    "route_free_text_header_words": [[C, F, "A"], [C, F, "B"]],
    "v5_role_word_prose_after_end_is_free_text": [[C, F, "A"], [C, F, "User asks again."],
                                                  [C, F, "B"]],
    "hdr_to_assistant_commentary": [[C, P, "Let me look."]],
    "v3_final_without_message_at_start": [[C, F, "The answer."], [R, "Done."]],
    # Contract 2 (v5): items keep each message as written; only chat joins them with "\n".
    "v5_preamble_ending_in_space_final": [[C, P, "Checking. "], [C, F, "Done."]],
    "v5_preamble_ending_in_newline_final": [[C, P, "Checking.\n"], [C, F, "Done."]],
    "v5_two_preambles": [[C, P, "Check"], [C, P, "ing."]],
    "v5_final_then_preamble": [[C, F, "Done."], [C, P, "More."]],
    "v5_preamble_empty_final_final": [[C, P, "Checking."], [C, F, "Done."]],
    "v5_preamble_reasoning_final": [[C, P, "Checking."], [R, "Hm."], [C, F, "Done."]],
    "v5_preamble_free_text": [[C, P, "Checking."], [C, F, "Done."]],
    "v5_preamble_call_final": [[C, P, "Checking."],
                               ["function_call", "get_weather", '{"city":"Paris"}'],
                               [C, F, "Sunny."]],
}

CORE_BUGS: dict[str, str] = {
    # case id -> why it fails (xfail strict: a fix shows up as XPASS; then remove the entry).
}


def expected_items(case: Case) -> list[list[Any]]:
    """The case's items: written out above, else one per kind present, in the contract's
    order (reasoning, the answer, the calls)."""
    if case.id in ITEMS:
        return ITEMS[case.id]
    items: list[list[Any]] = []
    if case.reasoning is not None:
        items.append([R, case.reasoning])
    if case.content is not None:
        items.append([C, F, case.content])
    items += [["function_call", name, arguments] for name, arguments in case.calls]
    return items


@pytest.fixture(scope="module")
def servers(gpt_oss_model_dir: Path) -> dict[str, rs.ResponsesServer]:
    """SGLang's Responses serving with harmony-ext selected, and with SGLang's own parsers."""
    return {NAME: rs.ResponsesServer(gpt_oss_model_dir, NAME, NAME),
            "gpt-oss": rs.ResponsesServer(gpt_oss_model_dir, "gpt-oss", "gpt-oss")}


def case_runs(server: rs.ResponsesServer, case: Case) -> dict[str, rs.ResponsesRun]:
    """The case whole, streamed one id per step, and streamed in random steps."""
    ids = rs.ids_of(case.text, case.ids_parts)
    request: dict[str, Any] = {"tools": case.tools, "ignore_eos": True}
    if case.finish == "length":  # the engine's budget ends at the case's last id
        request["max_output_tokens"] = len(ids) + 2  # SGLang keeps 2 of it as headroom
    return {"whole": server.run(ids, stream=False, **request),
            "streamed": server.run(ids, stream=True, **request),
            "chunked": server.run(ids, stream=True, chunks=rs.random_chunks(len(ids)),
                                  **request)}


def case_failures(case: Case, runs: dict[str, rs.ResponsesRun]) -> list[str]:
    """Every way the case's runs break the promises above; empty: none."""
    cut = case.finish == "length"
    out = rs.problems(runs["whole"], runs["streamed"], cut=cut)
    out += [f"in random steps: {p}" for p in rs.problems(runs["whole"], runs["chunked"],
                                                         cut=cut)]
    whole = runs["whole"]
    if whole.error is None:
        got = rs.as_chat(whole)
        want = {"reasoning": case.reasoning, "content": case.content,
                "tool_calls": list(case.calls), "other": []}
        if got != want:
            out.append(f"routed {got}, the contract: {want}")
        if whole.views() != expected_items(case):
            out.append(f"items {whole.views()} != {expected_items(case)}")
    return out


def case_param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=CORE_BUGS[case.id])] if (
        case.id in CORE_BUGS) else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [case_param(c) for c in IDS_CASES])
def test_contract_case_through_responses(servers: dict[str, rs.ResponsesServer],
                                         case: Case) -> None:
    assert case_failures(case, case_runs(servers[NAME], case)) == []


def test_the_hand_written_items_are_cases() -> None:
    ids = {c.id for c in IDS_CASES}
    assert set(ITEMS) <= ids and set(CORE_BUGS) <= ids
    for case_id, items in ITEMS.items():  # each list is the case's routing, item by item
        case = next(c for c in IDS_CASES if c.id == case_id)
        assert "".join(i[1] for i in items if i[0] == R) == (case.reasoning or "")
        assert chat_content([(i[1] == P, i[2]) for i in items if i[0] == C]) == (
            case.content or "")


# -- the fuzzed outputs ----------------------------------------------------------------------


def fuzz_runs(server: rs.ResponsesServer, index: int) -> dict[str, rs.ResponsesRun]:
    ids = rs.ids_of(FUZZ[index])
    return {"whole": server.run(ids, stream=False, tools=FUZZ_TOOLS),
            "streamed": server.run(ids, stream=True, tools=FUZZ_TOOLS),
            "chunked": server.run(ids, stream=True, tools=FUZZ_TOOLS,
                                  chunks=rs.random_chunks(index)),
            "whole past stops": server.run(ids, stream=False, tools=FUZZ_TOOLS,
                                           ignore_eos=True),
            "streamed past stops": server.run(ids, stream=True, tools=FUZZ_TOOLS,
                                              ignore_eos=True)}


def fuzz_failures(runs: dict[str, rs.ResponsesRun]) -> list[str]:
    out = rs.problems(runs["whole"], runs["streamed"])
    out += [f"in random steps: {p}" for p in rs.problems(runs["whole"], runs["chunked"])]
    out += [f"past stop tokens: {p}" for p in rs.problems(runs["whole past stops"],
                                                          runs["streamed past stops"])]
    for name, run in runs.items():
        if run.error is None and rs.leaks(run):
            out.append(f"{name}: control tokens in items: {rs.leaks(run)}")
    return out


@pytest.mark.parametrize("index", range(len(FUZZ)))
def test_fuzzed_output_through_responses(servers: dict[str, rs.ResponsesServer], sglang_chat,
                                         index: int) -> None:
    runs = fuzz_runs(servers[NAME], index)
    assert fuzz_failures(runs) == []
    # What the engine emitted, through chat completions with harmony-ext: the same routing.
    text = rs.encoding().decode(runs["whole"].outputs[0])
    chat = sglang_chat([text], stream=False, tools=CHAT_FUZZ_TOOLS, tool_parser=NAME,
                       reasoning_parser=NAME).body["choices"][0]["message"]
    assert rs.as_chat(runs["whole"]) == {
        "reasoning": chat.get("reasoning_content") or None,
        "content": chat.get("content") or None,
        "tool_calls": [(c["function"]["name"], c["function"]["arguments"])
                       for c in chat.get("tool_calls") or []],
        "other": []}


# -- the same suite on SGLang's own parser ---------------------------------------------------

SGLANG_OWN: dict[str, str] = {
    # case id -> what SGLang 0.5.22/0.5.23 do with it on their openai_harmony path (both
    # tiers: the same oss-harmony), found by the checks above.
    "route_unknown_channel_comment": "whole: Unknown channel: comment",
    "route_call_no_channel": "streamed: stream cut: ValueError: Unknown channel: None",
    "route_channel_in_role_after_analysis": "whole: Unknown role: final",
    "hdr_bare_channel_after_end": "whole: Unexpected token 200005 while expecting start "
                                  "token 200006",
    "route_free_text_between": "streamed: stream cut: HarmonyError: Unexpected token",
    "hdr_to_assistant_commentary": "whole: Unknown recipient: assistant",
    "hdr_whitespace_channel": "channel marker present but no channel value found in header",
    "v3_first_header_garbage_refusal": "whole: unexpected tokens remaining in message header",
    "route_builtin_browser_search": "whole: 'browser'",  # KeyError: no tool session
    "route_call_on_final": "streamed: stream cut: ValueError: Harmony changed item type "
                           "before closing the previous item",
    # No error, but the forged turn's answer is shown (openai-harmony keeps its messages).
    "route_forged_user": "routed {'reasoning': None, 'content': 'Answer.More.'",
}


@pytest.fixture(scope="module")
def sglang_own_failures(servers: dict[str, rs.ResponsesServer]) -> dict[str, list[str]]:
    """Every contract case through SGLang's own path: its failures (cases without any left
    out)."""
    out = {}
    for case in IDS_CASES:
        found = case_failures(case, case_runs(servers["gpt-oss"], case))
        if found:
            out[case.id] = found
    return out


@pytest.mark.parametrize("case_id", sorted(SGLANG_OWN))
def test_the_checks_fail_on_sglangs_own_parser(sglang_own_failures: dict[str, list[str]],
                                               case_id: str) -> None:
    assert SGLANG_OWN[case_id] in " | ".join(sglang_own_failures.get(case_id, ["passed"]))


def test_sglangs_own_parser_fails_many_contract_cases(
        sglang_own_failures: dict[str, list[str]]) -> None:
    errors = {k for k, v in sglang_own_failures.items()
              if any(re.match(r"(whole|streamed): (stream cut|Unknown|Unexpected|unexpected|"
                              r"channel marker|')", p) for p in v)}
    # 58 of the 177 ids-mode cases fail the request or cut the stream on SGLang 0.5.23.
    assert len(errors) >= 50, sorted(errors)
    assert set(SGLANG_OWN) <= set(sglang_own_failures)


def test_sglangs_own_parser_fails_fuzzed_outputs(servers: dict[str, rs.ResponsesServer]
                                                 ) -> None:
    reasons: dict[str, int] = {}
    failed = 0
    for index in range(len(FUZZ)):
        found = fuzz_failures(fuzz_runs(servers["gpt-oss"], index))
        failed += bool(found)
        for problem in found:
            kind = re.sub(r"\d+", "N", problem.split(":", 3)[-1].strip())[:60]
            reasons[kind] = reasons.get(kind, 0) + 1
    assert failed > len(FUZZ) // 5, json.dumps(reasons, indent=1)
    text = " | ".join(reasons)
    for reason in ("Unexpected token N while expecting start token N",
                   "unexpected tokens remaining in message header", "Unknown channel: None"):
        assert reason in text, json.dumps(reasons, indent=1)
