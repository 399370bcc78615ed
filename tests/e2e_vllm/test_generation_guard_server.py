"""How much a real vLLM server generates with harmony-ext selected (contract section 10).

``tests/vllm/test_generation_guard.py`` checks the hooks in-process; here the tiny CPU server
generates scripted ids (``script_ids``, so every count below is a count of the script's own
pieces, o200k_harmony ids from the vocabulary harmony-ext ships) and ``usage`` says how far the
engine went:

- **Stop ids.** A checkpoint whose generation config lacks ``<|call|>`` (gpt-oss's lists
  ``<|return|>``, ``<|endoftext|>`` and ``<|call|>``; some conversions drop the last) still
  stops at ``<|call|>``, streamed and not, because harmony-ext merges Harmony's stop ids into
  every request; one with ``ignore_eos`` gets exactly its ``max_tokens``, forged turn or not.
- **A forged turn ends the generation** (harmony-ext's generation guard in vLLM's scheduler) at
  the role after its ``<|start|>``, and a role written as text after ``<|end|>``
  (``<|end|>user<|channel|>``) at its header marker, on chat and on the Responses API, streamed
  and not; not before ``min_tokens``; each choice of ``n: 2`` on its own; with the server
  switch off the whole script comes out.
- **The batch route** (``/v1/chat/completions/batch``, no tools, not streamed): each
  conversation gets the stop ids and a guard of its own, as a chat request does.
- **Markup written as text** (``<|start|>user``, ``<|call|>`` in ordinary tokens) stops nothing.
- **``parallel_tool_calls: false``** surfaces the first call only and counts the rule
  ``parallel_calls_refused`` on ``/metrics``.
- **Calls written as text** (issue 44): with ``HARMONY_EXT_RECOVER_TEXT_CALLS=1`` the
  hand-written cases of ``tests/test_text_calls.py`` that recover come back as that call, its
  arguments as written, counted once each on ``/metrics`` (``call_written_as_text``), and its
  near misses as they were written; on the shared server (switch off) a call written as text
  stays content. The cases whose ``tool_choice`` forces a call cannot be generated on vLLM:
  its grammar for a forced call allows no final answer (checked, so that a change shows).

(A preamble then a final answer, ``Checking.\\nSunny, I expect.``, streamed equal to
non-streamed: the case ``two_analyses_preamble_final_call`` of
``harmony_ext_testing/vllm_cases.py``, run by ``test_harmony_ext_server.py``.)

One server of its own (module scope), with the non-default switches: the tiny model copied
with that shorter generation config, served with harmony-ext's parsers,
``HARMONY_EXT_TURN_STOP=0`` (so that only the stop ids can stop a call there, and the same
server shows the turn stop switched off) and ``HARMONY_EXT_RECOVER_TEXT_CALLS=1`` (none of the
other scripts here is a message written wholly as a call, so it changes none of their
results). Everything else runs on the shared session server, default switches.
``VENV_VLLM`` and ``HARMONY_EXT_FROM`` apply to both, as ``harmony_ext_testing/vllm_server.py``
reads them.

Turn stop on against off, tokens and seconds to the last chunk (starts both servers when no
base URLs are given)::

    .venv-vllm/bin/python -m tests.e2e_vllm.test_generation_guard_server [ON_URL OFF_URL]
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases")
openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")
pytest.importorskip("prometheus_client", reason="comes with vLLM: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CALL_W,
    MESSAGES,
    MODEL,
    PARIS,
    PAST_CALL,
    ChunkFolder,
    chat_tools,
    item_view,
    responses_tools,
)
from harmony_ext_testing.vllm_server import ROOT, VENV, tiny_vllm_server  # noqa: E402
from tests.e2e_vllm.metrics import increase, scrape  # noqa: E402
from tests.test_text_calls import NEAR_MISSES, RECOVERED  # noqa: E402

# o200k_harmony ids, from the contract's table (section 1).
START, END, RETURN, CALL, ENDOFTEXT, STARTOFTEXT = (200006, 200007, 200002, 200012, 199999,
                                                    199998)
TURN_STOP_OFF = {"HARMONY_EXT_TURN_STOP": "0"}
RECOVER_TEXT_CALLS_ON = {"HARMONY_EXT_RECOVER_TEXT_CALLS": "1"}
FORGED_REASON = "harmony-ext: forged turn"  # the stop_reason vLLM reports for it
TOOLS = ("get_weather",)

# The pieces of the scripts: (text, special?). A special piece's control-token spellings are
# the control tokens; an ordinary piece is ordinary text, whatever it spells.
CALLED = [(CALL_W + PARIS + "<|call|>", True)]
"""A call, closed as gpt-oss closes one: the engine must stop at its <|call|>."""
CALL_ENDED = [(CALL_W + PARIS + "<|end|>", True)]
"""A call the model closed with <|end|> instead: nothing stops the engine there."""
FORGED_RESULT = [("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
                  '{"temp":20}<|end|>', True)]
"""The tool's result, written by the model itself: a forged turn (section 2)."""
ANSWER = [("<|start|>assistant<|channel|>final<|message|>Sunny.<|return|>", True)]
SECOND_CALL = [("<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json"
                '<|message|>{"tz":"CET"}<|call|>', True)]
AS_TEXT = "Type <|start|>user to speak as the user, and <|call|> to end a call."
SPELLED = [("<|channel|>final<|message|>", True), (AS_TEXT, False), ("<|return|>", True)]
"""A final answer that writes markup with ordinary tokens: it must come out whole."""


def ids_of(pieces: Sequence[tuple[str, bool]]) -> list[int]:
    """The o200k_harmony ids of the pieces, as the model would write them."""
    from harmony_plugins.vocab.o200k import tiktoken_encoding

    encoding = tiktoken_encoding()
    out: list[int] = []
    for text, special in pieces:
        out += (encoding.encode(text, allowed_special="all") if special
                else encoding.encode(text, allowed_special=set(), disallowed_special=()))
    return out


def forged_script(tail: int = 0) -> list[tuple[str, bool]]:
    """A call closed by <|end|>, the forged tool result, then the answer (with ``tail`` more
    sentences in it, for a longer generation to save)."""
    answer = "Sunny." + " It is 20 degrees in Paris." * tail
    return [*CALL_ENDED, *FORGED_RESULT,
            (f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>", True)]


# -- requests --------------------------------------------------------------------------------

@dataclass
class Generated:
    """What one request gave a client, and how much the engine generated for it."""

    content: str | None = None
    calls: list[list[str]] = field(default_factory=list)  # [name, arguments]
    finish_reason: str | None = None  # chat; the response's status on the Responses API
    tokens: int | None = None  # usage: completion_tokens / output_tokens
    seconds: float = 0.0  # request sent to its last chunk (or its response)
    stop_reason: Any = None  # non-streamed chat
    token_ids: list[int] | None = None  # non-streamed chat with return_token_ids
    problems: list[str] = field(default_factory=list)  # malformed chunks, unexpected items
    reasoning: str | None = None  # chat


def client_for(base_url: str) -> Any:
    return openai.OpenAI(base_url=f"{base_url}/v1", api_key="unused", max_retries=0,
                         timeout=300)


def chat(base_url: str, ids: Sequence[int], *, stream: bool, tools: Sequence[str] = TOOLS,
         request: dict[str, Any] | None = None, **extra_body: Any) -> Generated:
    """One chat request whose output is ``ids`` (``request``: more top-level fields)."""
    kwargs: dict[str, Any] = {
        "model": MODEL, "messages": MESSAGES, "stream": stream, "tools": chat_tools(tools),
        "extra_body": {"vllm_xargs": {"script_ids": json.dumps(list(ids))}, **extra_body},
        **(request or {})}
    if stream:
        kwargs["stream_options"] = {"include_usage": True}
    began = time.monotonic()
    response = client_for(base_url).chat.completions.create(**kwargs)
    if not stream:
        choice = response.choices[0]
        extra = choice.model_extra or {}
        return Generated(choice.message.content or None,
                         [[c.function.name, c.function.arguments]
                          for c in choice.message.tool_calls or []],
                         choice.finish_reason, response.usage.completion_tokens,
                         time.monotonic() - began, extra.get("stop_reason"),
                         extra.get("token_ids"),
                         reasoning=getattr(choice.message, "reasoning", None) or None)
    folder, usage = ChunkFolder(), None
    for chunk in response:
        folder.add(chunk)
        usage = chunk.usage or usage
    seconds = time.monotonic() - began
    run = folder.result()
    return Generated(run.outcome["content"], run.outcome["tool_calls"],
                     run.outcome["finish_reason"], usage.completion_tokens if usage else None,
                     seconds, problems=run.problems, reasoning=run.outcome["reasoning"])


def responses(base_url: str, ids: Sequence[int], *, stream: bool,
              tools: Sequence[str] = TOOLS) -> Generated:
    """One Responses request whose output is ``ids``: its items as chat fields, its status."""
    began = time.monotonic()
    response = client_for(base_url).responses.create(
        model=MODEL, input=MESSAGES[0]["content"], tools=responses_tools(tools), stream=stream,
        extra_body={"vllm_xargs": {"script_ids": json.dumps(list(ids))}})
    final = response
    if stream:
        final = None
        for event in response:
            if event.type in ("response.completed", "response.incomplete", "response.failed"):
                final = event.response
        assert final is not None, "the stream ended without a final response"
    seconds = time.monotonic() - began
    items = [item_view(item) for item in final.output]
    texts = [text for kind, text, *_ in items if kind == "message"]
    return Generated("".join(texts) or None,
                     [item[1:] for item in items if item[0] == "function_call"],
                     final.status, final.usage.output_tokens if final.usage else None, seconds,
                     problems=[f"item {item[0]}" for item in items
                               if item[0] not in ("message", "function_call")])


# -- the second server -----------------------------------------------------------------------

def model_without_call(directory: Path) -> Path:
    """The tiny model in ``directory``, its generation config listing <|return|> and
    <|endoftext|> but not <|call|> (copied from the shared server's folder when that is built;
    scripts/make_tiny_model.py builds what is missing)."""
    shared = Path(os.environ.get("TINY_MODEL_DIR", ROOT / ".cache" / "tiny-gpt-oss"))
    if (shared / ".tiny-model.json").is_file():
        shutil.copytree(shared, directory)
    subprocess.run([str(VENV / "bin" / "python"), str(ROOT / "scripts" / "make_tiny_model.py"),
                    str(directory)], check=True, capture_output=True, cwd=ROOT)
    generation = {"bos_token_id": STARTOFTEXT, "eos_token_id": [RETURN, ENDOFTEXT],
                  "pad_token_id": ENDOFTEXT}
    (directory / "generation_config.json").write_text(json.dumps(generation, indent=2) + "\n")
    return directory


@contextlib.contextmanager
def no_call_server(folder: Path) -> Iterator[str]:
    """A harmony-ext server of that model, the turn stop switched off and calls written as
    text recovered; its base URL."""
    model = model_without_call(folder / "tiny-gpt-oss")
    env = {"TINY_MODEL_DIR": str(model), **TURN_STOP_OFF, **RECOVER_TEXT_CALLS_ON}
    with tiny_vllm_server(folder / "server.log", env=env) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def off_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the server whose checkpoint lacks <|call|>, whose turn stop is off and
    which recovers calls written as text."""
    if not (VENV / "bin" / "python").exists():
        pytest.skip(f"{VENV} is missing: run scripts/setup_vllm_env.sh")
    with no_call_server(tmp_path_factory.mktemp("vllm-no-call")) as base_url:
        yield base_url


# -- stop ids --------------------------------------------------------------------------------

@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_checkpoint_without_call_still_stops_at_call(off_server: str, api: str,
                                                       stream: bool) -> None:
    """Contract 10: the engine stops at <|call|> although the generation config does not list
    it; the model's own tool result and answer after it are never generated."""
    called = ids_of(CALLED)
    script = called + ids_of(FORGED_RESULT) + ids_of(ANSWER)
    assert called[-1] == CALL and CALL not in script[len(called):]
    if api == "chat":
        got = chat(off_server, script, stream=stream, return_token_ids=True)
    else:
        got = responses(off_server, script, stream=stream)
    # 12 ids of header, 5 of arguments ({" city ":" Paris "}), <|call|>
    assert got.tokens == len(called) == 18
    assert (got.content, got.calls, got.problems) == (None, [["get_weather", PARIS]], [])
    assert got.finish_reason == ("tool_calls" if api == "chat" else "completed")
    if api == "chat" and not stream:
        assert got.token_ids == called


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_ignore_eos_is_left_alone(off_server: str, stream: bool) -> None:
    """A request with ``ignore_eos`` wants exactly ``max_tokens``: no stop id is added, so the
    whole script comes out, then the <|return|> the scripted model repeats after it. (The turn
    stop is off on this server; with it on, the same: the next test.)"""
    script = ids_of(CALLED) + ids_of(FORGED_RESULT) + ids_of(ANSWER)
    budget = len(script) + 3
    got = chat(off_server, script, stream=stream, request={"max_tokens": budget},
               ignore_eos=True, return_token_ids=True)
    assert got.tokens == budget
    assert got.calls == [["get_weather", PARIS]]
    if not stream:
        assert got.token_ids == script + [RETURN] * 3


# -- a forged turn ---------------------------------------------------------------------------

AT_THE_ROLE = 2
"""The tokens vLLM generates from a forged turn's <|start|> on: the <|start|> and the role,
where the guard says the turn is over. The scheduler hands each token it appends to
``check_stop``, which the guard wraps, and finishes the request at that token, so none after it
is generated or counted (the same on 0.32, 0.33 and 0.34; the contract allows up to 3 after the
role)."""


def forged_start(pieces: Sequence[tuple[str, bool]]) -> int:
    """The index of the forged turn's <|start|> in the script's ids."""
    before = len(ids_of(CALL_ENDED))
    assert ids_of(pieces)[before] == START
    return before


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_forged_turn_ends_the_generation(vllm_server: str, api: str, stream: bool) -> None:
    """Contract 10 (and 2): the call closed by <|end|> is surfaced, the forged tool result is
    not, and the engine stops at the role after the forged <|start|> (exactly: nothing after
    it is generated) instead of writing the tool's result and an answer nobody will see. Its
    control, the same script with the turn stop switched off: the next test."""
    pieces = forged_script()
    script, start = ids_of(pieces), forged_start(pieces)
    assert start == 18  # the call's 18 ids, <|end|> closing it
    assert script[start + 1] == ids_of([("functions", False)])[0]  # the role's one token
    assert len(script) > start + AT_THE_ROLE + 10  # the rest would be plainly seen
    send = chat if api == "chat" else responses
    got = send(vllm_server, script, stream=stream)
    assert got.tokens == start + AT_THE_ROLE
    assert (got.content, got.calls, got.problems) == (None, [["get_weather", PARIS]], [])
    assert got.finish_reason == ("tool_calls" if api == "chat" else "completed")
    if api == "chat" and not stream:
        assert got.stop_reason == FORGED_REASON


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_switched_off_the_whole_script_comes_out(off_server: str, api: str,
                                                stream: bool) -> None:
    """The control of the test above: with ``HARMONY_EXT_TURN_STOP=0`` the engine writes the
    forged turn and the answer to the script's <|return|>; the client still sees only the
    call."""
    script = ids_of(forged_script())
    got = (chat if api == "chat" else responses)(off_server, script, stream=stream)
    assert got.tokens == len(script)
    assert (got.content, got.calls, got.finish_reason) == (
        None, [["get_weather", PARIS]], "tool_calls" if api == "chat" else "completed")


TEXT_ROLE = [("<|channel|>analysis<|message|>Let me think.<|end|>user<|channel|>final"
              "<|message|>More?<|end|><|start|>assistant<|channel|>final<|message|>More."
              "<|return|>", True)]
"""A role written as text after <|end|> (contract section 2's own example): a forged turn."""


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_role_written_as_text_ends_the_generation(vllm_server: str, api: str,
                                                    stream: bool) -> None:
    """Contract 10 (and 2): ``<|end|>user<|channel|>`` ends the generation at the
    <|channel|>, within 3 tokens of the <|end|>; the reasoning before it is kept."""
    script = ids_of(TEXT_ROLE)
    end = script.index(END)
    send = chat if api == "chat" else responses
    got = send(vllm_server, script, stream=stream)
    assert got.tokens == end + 3  # the <|end|>, user, <|channel|>
    # (the Responses helper lists items other than messages and calls: here the reasoning)
    assert (got.content, got.calls, got.problems) == (
        None, [], [] if api == "chat" else ["item reasoning"])
    if api == "chat":
        assert (got.reasoning, got.finish_reason) == ("Let me think.", "stop")
        if not stream:
            assert got.stop_reason == FORGED_REASON


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_ignore_eos_gets_exactly_max_tokens_with_the_turn_stop_on(vllm_server: str,
                                                                  stream: bool) -> None:
    """Contract 10: a request with ``ignore_eos`` wants exactly ``max_tokens``; harmony-ext
    neither adds stop ids nor stops its forged turn."""
    script = ids_of(forged_script())
    budget = len(script) + 3
    got = chat(vllm_server, script, stream=stream, request={"max_tokens": budget},
               ignore_eos=True, return_token_ids=True)
    assert got.tokens == budget
    assert got.calls == [["get_weather", PARIS]]
    if not stream:
        assert got.token_ids == script + [RETURN] * 3


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_min_tokens_past_the_forged_turn_runs_to_min_tokens(vllm_server: str,
                                                           stream: bool) -> None:
    """Contract 10: the turn is over at the forged role, but the request asked for at least
    ``min_tokens``: the generation ends there, not sooner; the client sees the call only."""
    pieces = forged_script(tail=10)
    script, start = ids_of(pieces), forged_start(pieces)
    want = start + 15
    assert RETURN not in script[:want] and CALL not in script and len(script) > want + 10
    got = chat(vllm_server, script, stream=stream, min_tokens=want)
    assert got.tokens == want
    assert (got.content, got.calls, got.problems) == (None, [["get_weather", PARIS]], [])
    if not stream:
        assert got.stop_reason == FORGED_REASON


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_each_of_two_choices_ends_where_it_should(vllm_server: str, stream: bool) -> None:
    """``n: 2``: vLLM generates each choice as a request of its own (seeds 7 and 8 here, each
    scripted by its seed); the one that forges a turn ends at its role, the other at its
    <|return|>."""
    forging, honest = ids_of(TEXT_ROLE), ids_of(ANSWER)[2:]  # a final answer from its header
    assert honest[0] == 200005 and honest[-1] == RETURN
    response = client_for(vllm_server).chat.completions.create(
        model=MODEL, messages=MESSAGES, n=2, seed=7, stream=stream,
        extra_body={"vllm_xargs": {"script_ids_by_seed": json.dumps({"7": forging,
                                                                      "8": honest})},
                    "return_token_ids": True})
    got: dict[int, dict[str, Any]] = {0: {"content": "", "ids": []}, 1: {"content": "", "ids": []}}
    for chunk in (response if stream else [response]):
        for choice in chunk.choices:
            part = choice.delta if stream else choice.message
            got[choice.index]["content"] += part.content or ""
            got[choice.index]["ids"] += (choice.model_extra or {}).get("token_ids") or []
            got[choice.index]["finish"] = choice.finish_reason or got[choice.index].get("finish")
    assert got[0] == {"content": "", "ids": forging[:forging.index(END) + 3], "finish": "stop"}
    assert got[1] == {"content": "Sunny.", "ids": honest, "finish": "stop"}


# -- the batch route ---------------------------------------------------------------------------

def batch(base_url: str, ids: Sequence[int], conversations: int = 2,
          **fields: Any) -> list[Generated]:
    """One ``/v1/chat/completions/batch`` request of ``conversations`` copies of the question,
    each generating ``ids``: what each choice gave, with its token ids and ``stop_reason``. The
    route takes no ``tools`` (a call there is to an undeclared function) and does not stream;
    vLLM renders each conversation as a chat request of its own through the parser's
    ``adjust_request`` (``adjust_harmony_request``)."""
    import httpx

    body = {"model": MODEL, "messages": [MESSAGES] * conversations, "return_token_ids": True,
            "vllm_xargs": {"script_ids": json.dumps(list(ids))}, **fields}
    response = httpx.post(f"{base_url}/v1/chat/completions/batch", json=body, timeout=300)
    assert response.status_code == 200, response.text
    got = []
    for choice in sorted(response.json()["choices"], key=lambda c: c["index"]):
        message = choice["message"]
        got.append(Generated(message.get("content") or None, [], choice["finish_reason"],
                             len(choice["token_ids"]), stop_reason=choice.get("stop_reason"),
                             token_ids=choice["token_ids"],
                             reasoning=message.get("reasoning") or None))
    return got


def test_each_conversation_of_a_batch_stops_at_call(off_server: str) -> None:
    """Contract 10 on the batch route: each conversation gets Harmony's stop ids, so with a
    checkpoint whose generation config lacks <|call|> each stops at it (``stop_reason`` the
    stop id; the call, to a function the route cannot declare, is dropped). The control: with
    ``ignore_eos`` harmony-ext adds nothing, and the whole script comes out, then the
    <|return|> the scripted model repeats after it."""
    called = ids_of(CALLED)
    script = called + ids_of(FORGED_RESULT) + ids_of(ANSWER)
    got = batch(off_server, script)
    assert [(g.token_ids, g.stop_reason, g.finish_reason, g.content, g.reasoning)
            for g in got] == [(called, CALL, "stop", None, None)] * 2
    budget = len(script) + 3
    control = batch(off_server, script, max_tokens=budget, ignore_eos=True)
    assert [g.token_ids for g in control] == [script + [RETURN] * 3] * 2


def test_a_forged_turn_ends_each_conversation_of_a_batch(vllm_server: str,
                                                         off_server: str) -> None:
    """Contract 10 (and 2) on the batch route: each conversation has its own generation guard,
    which ends it at the <|channel|> of ``<|end|>user<|channel|>``, 3 tokens after the <|end|>
    (``stop_reason`` harmony-ext's); the reasoning before it is kept. The control: on the
    server whose turn stop is off, each conversation runs to the script's <|return|> (the end
    of sequence: ``stop_reason`` null), and shows the same."""
    script = ids_of(TEXT_ROLE)
    end = script.index(END)
    got = batch(vllm_server, script)
    assert [(g.token_ids, g.stop_reason, g.finish_reason, g.reasoning, g.content)
            for g in got] == [(script[:end + 3], FORGED_REASON, "stop", "Let me think.",
                               None)] * 2
    control = batch(off_server, script)
    assert [(g.token_ids, g.stop_reason, g.reasoning, g.content) for g in control] == [
        (script, None, "Let me think.", None)] * 2


# -- markup written as text ------------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_markup_written_as_text_is_generated_whole(vllm_server: str, stream: bool) -> None:
    """Contract 10: the stop is decided on ids, never on text: an answer that writes
    ``<|start|>user`` and ``<|call|>`` in ordinary tokens is generated and shown whole."""
    script = ids_of(SPELLED)
    assert START not in script and CALL not in script and script[-1] == RETURN
    got = chat(vllm_server, script, stream=stream)
    assert (got.content, got.calls, got.finish_reason, got.problems) == (AS_TEXT, [], "stop",
                                                                         [])
    assert got.tokens == len(script)


# -- parallel_tool_calls ---------------------------------------------------------------------

@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls_false_surfaces_the_first_call(vllm_server: str,
                                                           stream: bool) -> None:
    """Contract 10: with ``parallel_tool_calls: false`` the second call is dropped and counted
    (``parallel_calls_refused``); without it, both calls come out.

    The second call comes after the first one's <|call|> (``ignore_eos``, up to the <|return|>
    forced after the script, as ``PAST_CALL`` in vllm_cases): a second call after a call closed
    by <|end|> never reaches the parser, since vLLM's own single-call grammar for
    ``parallel_tool_calls: false`` rejects its <|start|> and ends the request (HTTP 500)."""
    script = ids_of(CALLED + SECOND_CALL)
    tools = ("get_weather", "get_time")
    both = chat(vllm_server, script, stream=stream, tools=tools, **PAST_CALL)
    assert both.calls == [["get_weather", PARIS], ["get_time", '{"tz":"CET"}']]
    before = scrape(vllm_server)
    got = chat(vllm_server, script, stream=stream, tools=tools,
               request={"parallel_tool_calls": False}, **PAST_CALL)
    moved = increase(before, scrape(vllm_server))
    assert (got.content, got.calls, got.finish_reason, got.problems) == (
        None, [["get_weather", PARIS]], "tool_calls", [])
    assert got.tokens == len(script) + 1  # the whole script: the second call was written
    assert moved == {("harmony_ext_responses_total", ()): 1,
                     ("harmony_ext_tool_calls_total", (("outcome", "surfaced"),)): 1,
                     ("harmony_ext_recoveries_total", (("rule", "parallel_calls_refused"),)): 1}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_parallel_tool_calls_false_a_second_call_after_end_ends_the_request(
        vllm_server: str, stream: bool) -> None:
    """README: on vLLM the engine adds a grammar of its own for ``parallel_tool_calls: false``
    (harmony-ext keeps it), which refuses a second call after one closed by <|end|> while it is
    generated: vLLM then ends the request with an error (HTTP 500; an error in the stream).
    Without the field (the control) both calls come out."""
    script = ids_of(CALL_ENDED + SECOND_CALL)
    tools = ("get_weather", "get_time")
    both = chat(vllm_server, script, stream=stream, tools=tools)
    assert (both.calls, both.finish_reason) == (
        [["get_weather", PARIS], ["get_time", '{"tz":"CET"}']], "tool_calls")
    with pytest.raises(openai.APIError) as ended:
        chat(vllm_server, script, stream=stream, tools=tools,
             request={"parallel_tool_calls": False})
    assert SECOND_CALL_ERROR[stream] == (type(ended.value).__name__, str(ended.value))


SECOND_CALL_ERROR = {False: ("InternalServerError", "Error code: 500 - Internal server error"),
                     True: ("APIError", "Internal server error")}
"""What the client raises when vLLM ends such a request: whole, and streamed."""


# -- calls written as text -------------------------------------------------------------------

# The hand-written cases of tests/test_text_calls.py: (id, output, tools, tool_choice, ...).
# What a client is shown of each near miss, (reasoning, content), written by hand from the
# case's output: its text, where it wrote it.
NEAR_MISS_SHOWN: dict[str, tuple[str | None, str | None]] = {
    "prose_before": (None, f"Sure: to=functions.get_weather {PARIS}"),
    "prose_after": (None, f"to=functions.get_weather {PARIS} is what I would call."),
    "undeclared_name": (None, f"to=functions.get_time {PARIS}"),
    "schema_refuses": (None, 'to=functions.get_weather {"town":"Paris"}'),
    "cut_object": (None, 'to=functions.get_weather {"city":"Par'),
    "json_answer_not_forced": (None, PARIS),
    "quoted_example": (None, f"```\nto=functions.get_weather {PARIS}\n```"),
    "in_reasoning": (f"to=functions.get_weather {PARIS}", None),
    "bare_fits_two": (None, '{"x": 1}'),
    "not_an_object": (None, 'to=functions.get_weather ["Paris"]'),
    "named_other_function": (None, PARIS),
    "none_forced": (None, f"to=functions.get_weather {PARIS}"),
}
# Recovered cases sent to the shared server (switch off): what it shows, (reasoning, content).
SWITCHED_OFF_SHOWN: dict[str, tuple[str | None, str | None]] = {
    "final": (None, f"to=functions.get_weather {PARIS}"),
    "channel_word_and_type": (None, f"commentary to=functions.get_weather json{PARIS}"),
    "after_reasoning": ("Weather.", f"to=functions.get_weather {PARIS}"),
}
RECOVERED_BY_ID = {c[0]: c for c in RECOVERED}
GRAMMAR_REFUSED = {False: ["HTTP 500"], True: ["stream error (APIError: Internal server error)"]}
"""What a request (whole, streamed) gets whose script vLLM's grammar forbids: the engine ends
it, with HTTP 500 or an error event in the stream. Only a scripted model writes what the grammar
forbids; a real one has those tokens masked."""


def forced(case: tuple[Any, ...]) -> bool:
    """Whether the case's ``tool_choice`` forces a call (``required``, or one function)."""
    return case[3] == "required" or isinstance(case[3], dict)


# Reachable on vLLM: where a call is forced, vLLM's structural tag (kept, contract 10) allows
# a call and no final answer, so those cases' bare objects are never generated there.
ON_RECOVERED = [c for c in RECOVERED if not forced(c)]
ON_NEAR_MISSES = [c for c in NEAR_MISSES if not forced(c)]
FORCED = [c for c in RECOVERED + NEAR_MISSES if forced(c)]
Expected = tuple[str | None, str | None, list[list[str]], str, list[str]]
"""(reasoning, content, calls as [name, arguments], finish_reason, problems)."""


def text_call_request(case: tuple[Any, ...], finish: str) -> tuple[list[int], dict[str, Any]]:
    """The script ids of a case's output and the request fields that carry its tools and
    ``tool_choice``; an output cut short (finish ``length``) gets exactly its length as
    ``max_tokens``, so nothing is added after it."""
    _, output, tools, choice = case[:4]
    ids = ids_of([(output, True)])
    request: dict[str, Any] = {"tools": tools, "tool_choice": choice}
    if finish == "length":
        request["max_tokens"] = len(ids)
    return ids, request


def send_text_call(base_url: str, case: tuple[Any, ...], finish: str, stream: bool) -> Generated:
    """One case through chat completions; an HTTP error is returned as a problem."""
    ids, request = text_call_request(case, finish)
    try:
        return chat(base_url, ids, stream=stream, tools=(), request=request)
    except openai.APIError as e:
        status = getattr(e, "status_code", None)
        return Generated(problems=[f"HTTP {status}" if status else
                                   f"stream error ({type(e).__name__}: {e})"])


def seen(got: Generated) -> Expected:
    """What the client got, in the shape of :data:`Expected`."""
    return got.reasoning, got.content, got.calls, got.finish_reason or "", got.problems


@dataclass
class TextCallBatch:
    """Every case, streamed and not, sent at once to the switched-on server."""

    runs: dict[tuple[str, bool], Generated]  # (case id, streamed) -> what the client got
    moved: dict[Any, float]  # the harmony-ext counters the batch moved on /metrics


@pytest.fixture(scope="module")
def text_call_batch(off_server: str) -> TextCallBatch:
    """The 38 requests in one concurrent batch (one batch's time, not 38 requests'), between
    two scrapes of ``/metrics``."""
    jobs = [(c, "tool_calls") for c in RECOVERED] + [(c, c[4]) for c in NEAR_MISSES]
    before = scrape(off_server)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2 * len(jobs)) as pool:
        futures = {(case[0], stream): pool.submit(send_text_call, off_server, case, finish,
                                                  stream)
                   for case, finish in jobs for stream in (False, True)}
        runs = {key: future.result() for key, future in futures.items()}
    return TextCallBatch(runs, increase(before, scrape(off_server)))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", ON_RECOVERED, ids=[c[0] for c in ON_RECOVERED])
def test_switched_on_a_call_written_as_text_is_that_call(text_call_batch: TextCallBatch,
                                                         case: tuple[Any, ...],
                                                         stream: bool) -> None:
    """Contract 10, ``HARMONY_EXT_RECOVER_TEXT_CALLS=1`` on a real server: the message is that
    call, its arguments as the model wrote them, and nothing of it is shown as content."""
    name, _, _, _, call, reasoning = case
    got = text_call_batch.runs[name, stream]
    assert seen(got) == (reasoning, None, [list(call)], "tool_calls", [])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", ON_NEAR_MISSES, ids=[c[0] for c in ON_NEAR_MISSES])
def test_switched_on_a_near_miss_stays_as_written(text_call_batch: TextCallBatch,
                                                  case: tuple[Any, ...], stream: bool) -> None:
    """Contract 10: text around the call, an undeclared name, refused or cut arguments, a JSON
    answer where no call was forced, a quoted example, reasoning: shown as written, no call."""
    name, finish = case[0], case[4]
    reasoning, content = NEAR_MISS_SHOWN[name]
    got = text_call_batch.runs[name, stream]
    assert seen(got) == (reasoning, content, [], finish, [])


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", FORCED, ids=[c[0] for c in FORCED])
def test_switched_on_a_forced_call_allows_no_final_answer(text_call_batch: TextCallBatch,
                                                          case: tuple[Any, ...],
                                                          stream: bool) -> None:
    """Why the bare-object cases (``tool_choice`` forcing a call) are not run above: vLLM's
    grammar for a forced call refuses their final answer and the engine ends the request
    (as ``test_tool_choice_required_grammar_still_applies`` finds), so on vLLM no bare object
    reaches the parser; should that change, this fails and they belong above."""
    got = text_call_batch.runs[case[0], stream]
    assert (got.content, got.calls, got.problems) == (None, [], GRAMMAR_REFUSED[stream])


def test_the_case_tables_are_all_here() -> None:
    """Every case of the core tables is run here, and each near miss has its hand-written
    view: none is silently left out."""
    assert sorted(NEAR_MISS_SHOWN) == sorted(c[0] for c in NEAR_MISSES)
    assert (len(RECOVERED), len(NEAR_MISSES)) == (7, 12)
    assert (len(ON_RECOVERED), len(ON_NEAR_MISSES), len(FORCED)) == (5, 10, 4)


def test_each_recovered_response_is_counted_once(text_call_batch: TextCallBatch) -> None:
    """Contract 10 and 9: a call recovered this way counts its rule, ``call_written_as_text``,
    once per response (streamed and not alike), and its outcome ``surfaced``; a near miss
    counts neither. (A request the grammar ended is no response.)"""
    recovered = 2 * len(ON_RECOVERED)
    moved = text_call_batch.moved
    assert moved.get(("harmony_ext_recoveries_total",
                      (("rule", "call_written_as_text"),))) == recovered
    assert moved.get(("harmony_ext_tool_calls_total", (("outcome", "surfaced"),))) == recovered
    assert moved.get(("harmony_ext_responses_total", ())) == 2 * (len(ON_RECOVERED)
                                                                  + len(ON_NEAR_MISSES))


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("name", sorted(SWITCHED_OFF_SHOWN))
def test_switched_off_a_call_written_as_text_stays_content(vllm_server: str, name: str,
                                                           stream: bool) -> None:
    """Contract 10: without the switch (the shared server's default) the same output is the
    answer's text, as before, and no call."""
    reasoning, content = SWITCHED_OFF_SHOWN[name]
    got = send_text_call(vllm_server, RECOVERED_BY_ID[name], "stop", stream)
    assert seen(got) == (reasoning, content, [], "stop", [])


# -- turn stop on against off, measured --------------------------------------------------------

def measure(on_url: str, off_url: str, tail: int = 40, rounds: int = 3) -> list[str]:
    """Lines of figures: the forged-turn script (``tail`` more answer sentences), streamed chat,
    on a turn-stop server and on one with the switch off: tokens generated, and the best of
    ``rounds`` seconds to the last chunk."""
    pieces = forged_script(tail)
    script, start = ids_of(pieces), forged_start(pieces)
    lines = [f"script: {len(script)} ids, the forged <|start|> at index {start}"]
    for name, url in (("turn stop on", on_url), ("turn stop off", off_url)):
        runs = [chat(url, script, stream=True) for _ in range(rounds)]
        lines.append(f"{name}: {runs[0].tokens} completion tokens, "
                     f"{min(r.seconds for r in runs):.3f} s to the last chunk (best of {rounds})")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    """Print :func:`measure`'s figures for two running servers, or for two started here."""
    urls = list(sys.argv[1:] if argv is None else argv)
    with contextlib.ExitStack() as stack:
        if not urls:
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            urls = [stack.enter_context(tiny_vllm_server(folder / "on.log")),
                    stack.enter_context(no_call_server(folder))]
        if len(urls) != 2:
            print("usage: python -m tests.e2e_vllm.test_generation_guard_server "
                  "[ON_URL OFF_URL]", file=sys.stderr)
            return 2
        print("\n".join(measure(*urls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
