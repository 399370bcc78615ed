"""vLLM's built-in gpt-oss parsing (``--tool-call-parser openai --reasoning-parser
openai_gptoss``), pinned case by case as docs/vllm-comparison.md shows it, on every vLLM tier.

The page's built-in column names what vLLM's own parsers do to each output: arguments
re-serialised when not streamed, a stray ``]`` left in the arguments, control tokens and
Harmony markup in content, calls dropped or named wrong, reasoning dropped or joined with a
newline, streamed unlike non-streamed, Responses requests refused (HTTP 400) or their stream cut
on a channel vLLM does not know. Each row here is that column written out whole: what a client
gets from the session's built-in server, non-streamed and streamed, for every chat case and
every Responses case of ``harmony_ext_testing/vllm_cases.py`` (:data:`PINNED_CHAT`,
:data:`PINNED_RESPONSES`, as vLLM 0.32 gives them; :data:`BY_RELEASE`, what a later release
gives otherwise). If a vLLM upgrade changes one, the test fails, and the page
(``bash pages/run.sh vllm-comparison``) and this table need a new look.

The outcomes come from the session's ``comparison`` fixture: the page's own recorder
(``pages/vllm_comparison.py``'s ``record``, with the tests' request helpers of
``harmony_ext_testing/vllm_cases.py``) over the tests' two servers, so that the page's test and
this one share one recording. The values are vLLM's, written out from the runs the page
records on each release (0.33 and 0.34 give the same).
"""

from __future__ import annotations

from typing import Any

import pytest

from harmony_ext_testing.vllm_cases import CASES, RESPONSES_CASES

Outcome = dict[str, Any]

PARIS, PARIS_SPACED = '{"city":"Paris"}', '{"city": "Paris"}'  # as written; re-serialised
OSLO, OSLO_SPACED = '{"city":"Oslo"}', '{"city": "Oslo"}'
M, F = "message:completed", "function_call:completed"  # Responses items' statuses
STREAM_CUT = "stream error (APIConnectionError: Connection error.)"


def said(reasoning: str | None, content: str | None, calls: list[tuple[str, str]] | None = None,
         finish: str | None = None) -> Outcome:
    """A chat outcome as ``run_chat`` gives it."""
    calls = calls or []
    return {"reasoning": reasoning, "content": content, "tool_calls": [list(c) for c in calls],
            "finish_reason": finish or ("tool_calls" if calls else "stop")}


def items(reasoning: str | None, content: str | None, statuses: list[str],
          calls: list[tuple[str, str]] | None = None, other: list[str] | None = None) -> Outcome:
    """A Responses outcome as ``responses_as_chat`` gives it: the reasoning and message items'
    texts joined, the calls, each message's and call's status, other items by type."""
    outcome: Outcome = {"reasoning": reasoning, "content": content,
                        "tool_calls": [list(c) for c in calls or []], "finish_reason": None,
                        "statuses": statuses}
    if other:
        outcome["other_items"] = other
    return outcome


def error(what: str) -> Outcome:
    return {"error": what}


def same(outcome: Outcome) -> tuple[Outcome, Outcome]:
    """The same outcome non-streamed and streamed."""
    return outcome, outcome


PINNED_CHAT: dict[str, tuple[Outcome, Outcome]] = {
    "reasoning_final": same(said('Think.', 'Hi!')),
    "call_role_commentary": (
        said(None, None, [('get_weather', PARIS_SPACED)]),
        said(None, None, [('get_weather', PARIS)])),
    "call_channel_commentary": (
        said('Need the weather.', None, [('get_weather', PARIS_SPACED)]),
        said('Need the weather.', None, [('get_weather', PARIS)])),
    "call_role_analysis": (
        said(None, None, [('get_weather', OSLO_SPACED)]),
        said(None, None, [('get_weather', OSLO)])),
    "call_channel_analysis": (
        said(None, None, [('get_weather', OSLO_SPACED)]),
        said(None, None, [('get_weather', OSLO)])),
    "preamble_call": (
        said('Need weather.', 'Checking now.', [('get_weather', PARIS_SPACED)]),
        said('Need weather.', 'Checking now.', [('get_weather', PARIS)])),
    "trailing_junk": same(said(None, None, [('get_weather', '{"city":"Paris"}]')])),
    "builtin_undeclared": (
        said('Search it.\n{"query":"weather"}', None),
        said('Search it.{"query":"weather"}', None)),
    "header_end_no_message": same(said('Hi', None)),
    "final_no_message": same(said(None, '<|channel|>final The answer is 4.<|end|><|return|>')),
    "forged_user": (said(None, 'Answer.\nMore.'), said(None, 'Answer.More.')),
    "no_markup": same(said(None, 'Hello there, no markup here.<|return|>')),
    "missing_start": same(said('Think.', None)),
    "shelljson": (
        said(None, None, [('shelljson', '{"cmd": "ls"}')]),
        said(None, None, [('shelljson', '{"cmd":"ls"}')])),
    "unknown_channel": same(said(None, 'Ok.')),
    "after_call": (
        said(None, None, [('get_weather', PARIS_SPACED), ('get_time', '{"tz": "CET"}')]),
        said(None, None, [('get_weather', PARIS), ('get_time', '{"tz":"CET"}')])),
    "two_analyses_preamble_final_call": (
        said('First.\n Second.', 'Checking.\nSunny, I expect.', [('get_weather', PARIS_SPACED)]),
        said('First. Second.', 'Checking.Sunny, I expect.', [('get_weather', PARIS)])),
    "two_finals": (said(None, 'One.\n Two.'), said(None, 'One. Two.')),
    "unknown_channel_first": same(said(None, 'Hi')),
    "unknown_channel_middle": same(said('a', 'c')),
    "unknown_channel_last": same(said(None, 'Hi')),
    "first_header_garbage": same(said(None, "Sorry, I can't help.")),
    "final_constrain_without_message": same(
        said(None, '<|channel|>final<|constrain|>The answer.<|return|>')),
    "repeated_start": (said('Think.', None), said('Think.', None, [('get_weather', PARIS)])),
    "stray_markers_in_body": same(said(None, 'The <|message|>answer<|constrain|> is 4.')),
    "no_channel": same(said('Hm.', None)),
    "role_slot_channel": same(said('Think.', None)),
    "forged_turn_no_start": same(said(None, 'Answer.')),
    "forged_tool_turn": same(said(None, 'Answer.')),
    "free_text": (said(None, 'Part one.\n Done.'), said(None, 'Part one. Done.')),
    "header_words_between": (said(None, 'A.\nB.'), said(None, 'A.B.')),
    "empty_recipient": same(said(None, None)),
    "content_type_recipient": same(said(None, PARIS)),
    "spaced_name": same(said(None, None)),
    "unicode_whitespace": (
        said(None, None, [('get_weather\xa0', PARIS_SPACED)]),
        said(None, None, [('get_weather\xa0', PARIS)])),
    "schema_mismatch": (
        said(None, None, [('get_weather', '{"town": "Paris"}')]),
        said(None, None, [('get_weather', '{"town":"Paris"}')])),
    "truncated_args": (
        said(None, None, [('get_weather', '{"city":"')]),
        said(None, None, [('get_weather', '{"city":"')], finish='length')),
    "tool_choice_none": (
        said('Need the weather.', None),
        said('Need the weather.', None, [('get_weather', PARIS)])),
    "tool_choice_required": (
        said('Need the weather.', None, [('get_weather', PARIS_SPACED)]),
        said('Need the weather.', None, [('get_weather', PARIS)])),
    "tool_choice_named": (
        said(None, None, [('get_weather', PARIS_SPACED)], finish='stop'),
        said(None, None, [('get_weather', PARIS)], finish='stop')),
}
PINNED_RESPONSES: dict[str, tuple[Outcome, Outcome]] = {
    "reasoning_final": same(items('Think.', 'Hi!', [M])),
    "call_role_commentary": same(items(None, None, [F], [('get_weather', PARIS)])),
    "call_channel_commentary": same(
        items('Need the weather.', None, [F], [('get_weather', PARIS)])),
    "call_channel_analysis": same(items(None, None, [F], [('get_weather', OSLO)])),
    "preamble_call": same(
        items('Need weather.', 'Checking now.', [M, F], [('get_weather', PARIS)])),
    "trailing_junk": same(items(None, None, [F], [('get_weather', '{"city":"Paris"}]')])),
    "builtin_undeclared": same(items('Search it.', None, [], other=['web_search_call'])),
    "two_analyses_preamble_final_call": same(
        items('First. Second.', 'Checking.Sunny, I expect.', [M, M, F], [('get_weather', PARIS)])),
    "two_finals": same(items(None, 'One. Two.', [M, M])),
    "unknown_channel_first": (error('HTTP 400'), error(STREAM_CUT)),
    "unknown_channel_middle": (error('HTTP 400'), error(STREAM_CUT)),
    "unknown_channel_last": (error('HTTP 400'), error(STREAM_CUT)),
    "first_header_garbage": same(items(None, "Sorry, I can't help.", [M])),
    "final_constrain_without_message": same(
        items(None, '<|channel|>final<|constrain|>The answer.<|return|>', ['message:incomplete'])),
    "repeated_start": same(items('Think.', None, [])),
    "stray_markers_in_body": same(items(None, 'The <|message|>answer<|constrain|> is 4.', [M])),
    "no_channel": (error('HTTP 400'), error(STREAM_CUT)),
    "role_slot_channel": same(items('Think.', None, [])),
    "free_text": same(items(None, 'Part one. Done.', [M, M])),
    "content_type_recipient": same(items(None, PARIS, [M])),
}


FROM_0_33 = {
    # vLLM's chat serving keeps a cut call's finish_reason "length" when not streamed
    "chat:truncated_args": same(said(None, None, [("get_weather", '{"city":"')],
                                     finish="length")),
    # the streamed call under tool_choice "none" is no longer shown
    "chat:tool_choice_none": same(said("Need the weather.", None)),
}
BY_RELEASE: dict[tuple[int, int], dict[str, tuple[Outcome, Outcome]]] = {
    (0, 33): FROM_0_33, (0, 34): FROM_0_33}
"""What a later vLLM gives otherwise, by release and row key (``chat:ID``, ``responses:ID``);
the rows not named are :data:`PINNED_CHAT`'s and :data:`PINNED_RESPONSES`'s."""


def release(version: str) -> tuple[int, int]:
    major, minor = (int(x) for x in version.split(".")[:2])
    return major, minor


def pinned(key: str, version: str) -> tuple[Outcome, Outcome]:
    """The (non-streamed, streamed) outcomes pinned for a row on this vLLM."""
    api, case_id = key.split(":", 1)
    table = PINNED_CHAT if api == "chat" else PINNED_RESPONSES
    return BY_RELEASE.get(release(version), {}).get(key, table[case_id])


def test_every_row_of_the_page_is_pinned() -> None:
    assert list(PINNED_CHAT) == [case.id for case in CASES]
    assert list(PINNED_RESPONSES) == [case.id for case in RESPONSES_CASES]


KEYS = [f"chat:{case.id}" for case in CASES] + [f"responses:{case.id}" for case in RESPONSES_CASES]


@pytest.mark.parametrize("key", KEYS)
def test_vllm_s_own_parsers_give_what_the_page_shows(comparison: dict[str, Any],
                                                     vllm_version: str, key: str) -> None:
    whole, streamed = pinned(key, vllm_version)
    got = comparison[key]["builtin"]
    assert (got["nonstream"], got["stream"]) == (whole, streamed)
