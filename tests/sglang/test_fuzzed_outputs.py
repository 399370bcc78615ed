"""The fuzzer through SGLang's serving code (issue 56): outputs nobody chose, with harmony-ext as
both parsers.

Each output of harmony_ext_testing/fuzzed_outputs.py (mutated Harmony turns and random
sequences) is what the model generates, up to where harmony-ext's guard or the token limit ends
it (``fuzzed_outputs.generated``; the scheduler's part, which the scripted model leaves out). It
goes through SGLang's real chat serving (:mod:`harmony_ext_testing.sglang_serving`: text, a
token's piece per step as SGLang's detokenizer sends it, ``<|return|>`` trimmed and ``<|call|>``
kept as SGLang's detokenizer does with harmony-ext), its Responses serving
(tests/sglang/responses_serving.py: the ids) and ``/v1/messages`` (the Anthropic Messages
API: SGLang's HTTP app, its ``AnthropicServing`` over the chat serving, with harmony-ext's hooks;
``ScriptedServer.over_http``), streamed and not, with the functions declared; and each output
harmony-ext's grammar for tools with a response format admits goes through chat
with the functions and a JSON-schema format, and is walked through the grammar SGLang's
scheduler built for that request (:mod:`harmony_ext_testing.sglang_grammar`), which must take
every token of it. Each request is checked against invariants, not expected values
(``fuzzed_outputs.engine_problems``): no error, no broken stream, streamed equals non-streamed,
no call to an undeclared function, no control-token spelling in a text or arguments (on
``/v1/messages`` texts joined by kind and calls compared apart, a call shown as a text block
counted as a call: ``harmony_ext_testing.messages_api.whole_view``); and chat completions show
exactly what the core parses of the text the parsers got. A control switches the Messages API
hooks off and finds SGLang's own failures among CI's first outputs.

A failure prints the output (seed, ids, text) as a case for tests/contract_cases.py. The counts
tried and failed go to CI's summary (scripts/fuzz_counts.py). ``HARMONY_EXT_FUZZ=N`` runs N
outputs (CONTRIBUTING.md).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing import fuzzed_outputs as fz
from harmony_ext_testing.client import Fold
from harmony_ext_testing.messages_api import anthropic_tools, streamed_view, whole_view
from harmony_ext_testing.sglang_grammar import GPT_OSS_EOS, grammar_walker
from harmony_ext_testing.sglang_serving import Output, RunChat, shared_server, text_replies
from tests.sglang import responses_serving as rs

NAME = "harmony-ext"
OUTPUTS = 200
ADMITTED = 50
RETURN, CALL = fz.special_id("<|return|>"), fz.special_id("<|call|>")
STOPS = {fz.special_id(s) for s in fz.STOPS}
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": fz.SCHEMA}}
MESSAGES_TOOLS = anthropic_tools(fz.TOOLS)


def max_tokens(out: fz.Output) -> int:
    return len(out.ids) if out.finish == "length" else len(out.ids) + 4


def engine_text(ids: list[int], finish: str) -> tuple[list[str], dict[str, Any], str]:
    """What SGLang's detokenizer hands the parsers of generated ``ids``: the pieces (a matched
    stop token trimmed, ``<|call|>`` kept for harmony-ext), the scheduler's finish, and the
    core's finish for the same."""
    if finish == "length":
        return fz.pieces(ids), {"type": "length", "length": len(ids)}, "length"
    last = ids[-1] if ids and ids[-1] in STOPS else None  # else a forged turn: matched None
    shown = ids[:-1] if last is not None and last != CALL else ids
    return fz.pieces(shown), {"type": "stop", "matched": last}, "stop"


def chat_view(result: Any, stream: bool) -> dict[str, Any]:
    """What a client got from SGLang's chat serving, as fuzzed_outputs.engine_problems reads it."""
    if not stream:
        if "choices" not in result.body:
            return {"error": str(result.body)[:300]}
        choice = result.body["choices"][0]
        message = choice["message"]
        return {"texts": fz.texts(("reasoning", message.get("reasoning_content")),
                                  ("content", message.get("content"))),
                "calls": [(c["function"]["name"], c["function"]["arguments"])
                          for c in message.get("tool_calls") or []],
                "finish": choice["finish_reason"]}
    fold, finish = Fold(), None
    for chunk in result.chunks:
        if "error" in chunk:
            return {"error": str(chunk)[:300]}
        for choice in chunk.get("choices") or ():
            fold.add(choice.get("delta"))
            finish = choice.get("finish_reason") or finish
    message = fold.message()
    return {"texts": fz.texts(("reasoning", message["reasoning"]), ("content", message["content"])),
            "calls": [(c["function"]["name"], c["function"]["arguments"])
                      for c in message["tool_calls"]],
            "finish": finish, "problems": [*fold.problems, *([] if finish else ["no finish"])]}


def chat_failures(sglang_chat: RunChat, out: fz.Output, **request: Any) -> list[fz.Failure]:
    ids, finish = fz.generated(out, max_tokens(out))
    deltas, scheduler_finish, core_finish = engine_text(ids, finish)
    views = {}
    for stream in (False, True):
        try:
            result = sglang_chat(deltas if stream else ["".join(deltas)], stream=stream,
                                 tools=fz.TOOLS, finish=scheduler_finish, tool_parser=NAME,
                                 reasoning_parser=NAME, **request)
            views[stream] = chat_view(result, stream)
        except Exception as e:  # what the client saw is the finding
            views[stream] = {"error": f"{type(e).__name__}: {e}"}
    failures = [fz.Failure(out, "the endpoint holds contract section 6", p)
                for p in fz.engine_problems("chat", views[False], views[True])]
    if "error" not in views[False]:
        message = fz.parse("text", ["".join(deltas)], core_finish)[0]
        core = {"texts": fz.texts(("reasoning", message["reasoning"]),
                                  ("content", message["content"])),
                "calls": [(c["function"]["name"], c["function"]["arguments"])
                          for c in message["tool_calls"]]}
        shown = {"texts": views[False]["texts"], "calls": views[False]["calls"]}
        if shown != core:
            failures.append(fz.Failure(out, "chat completions show the core's parse",
                                       f"SGLang shows {shown}, the core parses {core}"))
    return failures


def responses_failures(server: rs.ResponsesServer, out: fz.Output) -> list[fz.Failure]:
    ids, finish = fz.generated(out, max_tokens(out))
    request: dict[str, Any] = {"tools": fz.TOOLS}
    if finish == "length":  # the engine's budget ends at the last id
        request["max_output_tokens"] = len(ids) + 2  # SGLang keeps 2 of it as headroom
    runs = {stream: server.run(ids, stream=stream, **request) for stream in (False, True)}
    problems = rs.problems(runs[False], runs[True], cut=finish == "length")
    for run in runs.values():
        if run.error is None:
            names = [v[1] for v in run.views() if v[0] == "function_call"]
            if set(names) - set(fz.DECLARED):
                problems.append(f"a call to an undeclared function: {names}")
            problems += [f"control-token spellings in the items: {s}" for s in rs.leaks(run)]
    return [fz.Failure(out, "the endpoint holds contract section 6", f"responses: {p}")
            for p in problems]


AT_ONCE = 50
"""Outputs whose ``/v1/messages`` requests are in flight at once: SGLang's HTTP app ends each
streamed response 2 s after its last event (the task that aborts a request whose client left
runs first), so the requests wait out those seconds together."""
ASKED = re.compile(r"fuzzed output (\d+)")


def messages_failures(model_dir: Path, outputs: Sequence[fz.Output]) -> list[fz.Failure]:
    """The outputs through SGLang's ``/v1/messages`` (its HTTP app over its chat serving),
    streamed and not, all at once: each request asks for its output by seed in its prompt, and
    the scripted model answers what the engine generates of that output."""
    scripted = {}
    for out in outputs:
        ids, finish = fz.generated(out, max_tokens(out))
        deltas, scheduler_finish, _ = engine_text(ids, finish)
        scripted[out.seed] = text_replies(deltas, scheduler_finish)

    def replies(request: Any, n: int) -> Sequence[Output]:
        match = ASKED.search(fz.text_of(request.input_ids))
        assert match is not None, "a generation request that asks for no fuzzed output"
        return scripted[int(match.group(1))](request, n)

    async def one(http: Any, out: fz.Output, stream: bool) -> dict[str, Any]:
        body = {"model": "gpt-oss", "tools": MESSAGES_TOOLS, "max_tokens": max_tokens(out),
                "messages": [{"role": "user", "content": f"fuzzed output {out.seed}"}],
                "stream": stream}
        try:
            response = await http.post("/v1/messages", json=body)
            if response.status_code != 200:
                return {"error": f"HTTP {response.status_code}: {response.text[:300]}"}
            if not stream:
                return whole_view(response.json(), fz.DECLARED)
            return streamed_view([json.loads(line[len("data:"):])
                                  for line in response.text.splitlines()
                                  if line.startswith("data:")], fz.DECLARED)
        except Exception as e:  # what the client saw is the finding
            return {"error": f"{type(e).__name__}: {e}"}

    async def client(http: Any) -> list[list[dict[str, Any]]]:
        return list(await asyncio.gather(*(asyncio.gather(one(http, out, False),
                                                          one(http, out, True))
                                           for out in outputs)))

    try:
        views, _ = shared_server(model_dir).over_http(replies, client, tool_parser=NAME,
                                                      reasoning_parser=NAME)
    except Exception as e:  # the serving itself broke off: every request's finding
        views = [[{"error": f"{type(e).__name__}: {e}"}] * 2] * len(outputs)
    return [fz.Failure(out, "the endpoint holds contract section 6", problem)
            for out, (whole, streamed) in zip(outputs, views, strict=True)
            for problem in fz.engine_problems("messages", whole, streamed)]


@pytest.fixture(scope="module")
def responses_server(gpt_oss_model_dir: Path) -> rs.ResponsesServer:
    return rs.ResponsesServer(gpt_oss_model_dir, NAME, NAME)


def test_fuzzed_outputs_on_chat_and_responses(sglang_chat: RunChat,
                                              responses_server: rs.ResponsesServer,
                                              record_testsuite_property: Any) -> None:
    import sglang

    outputs = fz.outputs(fz.how_many(OUTPUTS))
    failures = []
    for out in outputs:
        failures += chat_failures(sglang_chat, out)
        failures += responses_failures(responses_server, out)
    fz.record(record_testsuite_property, len(outputs), failures)
    assert not failures, fz.reports(failures, f"SGLang {sglang.__version__}")


def test_fuzzed_outputs_on_messages(gpt_oss_model_dir: Path,
                                    record_testsuite_property: Any) -> None:
    import sglang

    outputs = fz.outputs(fz.how_many(OUTPUTS))
    failures = []
    for first in range(0, len(outputs), AT_ONCE):
        failures += messages_failures(gpt_oss_model_dir, outputs[first:first + AT_ONCE])
    fz.record(record_testsuite_property, 0, failures)  # the same outputs: counted once
    assert not failures, fz.reports(failures, f"SGLang {sglang.__version__} /v1/messages")


SGLANG_S_OWN = {
    "non-streamed": re.compile(r"messages non-streamed: ValidationError: 1 validation error for "
                               r"ToolUseBlock\ninput\n  Input should be a valid dictionary"),
    "streamed": re.compile(r"messages streamed: broken stream: tool_use input .* is no JSON "
                           r"object", re.S),
}
"""SGLang's own conversion of a call whose arguments are no JSON object, as the fuzzer reports
it (tests/sglang/test_messages_api.py): a bare string fails the request; streamed, the
``tool_use`` block carries what no client can read as its ``input``."""


def test_without_the_hook_the_fuzzer_finds_sglang_s_own_failures(
        gpt_oss_model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The control: with sglang_ext.messages_api's hooks switched off, CI's first outputs
    (among them 56017, a bare string as arguments, and 56046, a call closed inside its
    arguments) break the invariants by exactly SGLang's two symptoms."""
    from sglang_ext import messages_api

    monkeypatch.setattr(messages_api, "_ours", lambda serving: False)
    failures = messages_failures(gpt_oss_model_dir, fz.outputs(AT_ONCE, fz.SEED))
    found = {how for f in failures for how, symptom in SGLANG_S_OWN.items()
             if symptom.match(f.detail)}
    assert found == set(SGLANG_S_OWN)
    assert all(any(s.match(f.detail) for s in SGLANG_S_OWN.values()) for f in failures), (
        fz.reports(failures, "SGLang without the hook"))


def test_admitted_outputs_with_a_response_format(sglang_chat: RunChat, gpt_oss_model_dir: Path,
                                                  record_testsuite_property: Any) -> None:
    import sglang

    walk = grammar_walker(gpt_oss_model_dir, NAME, GPT_OSS_EOS)
    outputs = fz.admitted_outputs(fz.how_many(ADMITTED, 4))
    failures = []
    for out in outputs:
        failures += chat_failures(sglang_chat, out, response_format=FORMAT)
        sent = sglang_chat([out.text], stream=False, tools=fz.TOOLS, response_format=FORMAT,
                           tool_parser=NAME, reasoning_parser=NAME).requests[0]
        accepted, refused = walk(sent.sampling_params, sent.require_reasoning, out.text)
        if refused is not None:
            failures.append(fz.Failure(out, "the grammar admits the output",
                                       f"SGLang's grammar refuses {refused!r} after "
                                       f"{accepted!r}"))
    fz.record(record_testsuite_property, len(outputs), failures)
    assert not failures, fz.reports(failures, f"SGLang {sglang.__version__}, a response format")
