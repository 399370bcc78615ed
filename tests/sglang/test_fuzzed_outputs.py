"""The fuzzer through SGLang's serving code (issue 56): outputs nobody chose, with harmony-ext as
both parsers.

Each output of harmony_ext_testing/fuzzed_outputs.py (mutated Harmony turns and random
sequences) is what the model generates, up to where harmony-ext's guard or the token limit ends
it (``fuzzed_outputs.generated``; the scheduler's part, which the scripted model leaves out). It
goes through SGLang's real chat serving (:mod:`harmony_ext_testing.sglang_serving`: text, a
token's piece per step as SGLang's detokenizer sends it, ``<|return|>`` trimmed and ``<|call|>``
kept as SGLang's detokenizer does with harmony-ext) and its Responses serving
(tests/sglang/responses_serving.py: the ids), streamed and not, with the functions declared;
and each output harmony-ext's grammar for tools with a response format admits goes through chat
with the functions and a JSON-schema format, and is walked through the grammar SGLang's
scheduler built for that request (:mod:`harmony_ext_testing.sglang_grammar`), which must take
every token of it. Each request is checked against invariants, not expected values
(``fuzzed_outputs.engine_problems``): no error, no broken stream, streamed equals non-streamed,
no call to an undeclared function, no control-token spelling in a text or arguments; and chat
completions show exactly what the core parses of the text the parsers got.

A failure prints the output (seed, ids, text) as a case for tests/contract_cases.py. The counts
tried and failed go to CI's summary (scripts/fuzz_counts.py). ``HARMONY_EXT_FUZZ=N`` runs N
outputs (CONTRIBUTING.md).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harmony_ext_testing import fuzzed_outputs as fz
from harmony_ext_testing.client import Fold
from harmony_ext_testing.sglang_grammar import GPT_OSS_EOS, grammar_walker
from harmony_ext_testing.sglang_serving import RunChat
from tests.sglang import responses_serving as rs

NAME = "harmony-ext"
OUTPUTS = 200
ADMITTED = 50
RETURN, CALL = fz.special_id("<|return|>"), fz.special_id("<|call|>")
STOPS = {fz.special_id(s) for s in fz.STOPS}
FORMAT = {"type": "json_schema", "json_schema": {"name": "weather", "schema": fz.SCHEMA}}


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
