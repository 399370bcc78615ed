"""Streamed Responses items equal the whole response's, on a real vLLM server (harmony-ext).

Every contract case (tests/contract_cases.py) and every fuzzed output of the Responses suite
(tests/e2e_vllm/test_responses.py's ``fuzzed_outputs``) is scripted (as token ids,
harmony_ext_testing/vllm_scripted.py) and sent to ``/v1/responses`` twice, streamed and not.
For each:

* the stream's items, collected by ``output_index`` from ``response.output_item.added`` and
  ``response.output_item.done``, are numbered 0, 1, 2 ... with no gap, each announced once and
  done once; what was announced (type, role, phase, call name) is what was done, and the
  streamed deltas add up to the done item's text or arguments;
* the done items, ``response.completed``'s output and the whole response's output are the same
  list, and the two responses have the same status;
* no view holds an item with no text or arguments at all: an empty Harmony message (a header
  and ``<|message|>`` with no body) gets an item in neither view (the core drops it,
  ``harmony_plugins.adapter_support.messages.harmony_message``; a call's empty body is
  ``{}``), also checked on hand-written outputs (:data:`EMPTY_MESSAGES`, issue 24's among
  them);
* a contract case's items are its hand-written routing, one item per Harmony message
  (:data:`ITEMS` where a case has more than one message of a kind, or a preamble; else one
  item per kind present), never what the parser under test says.

Items are compared as :func:`view` shows them: type, role, phase, text, call name and
arguments. Ignored between the two requests: the ids (``id``, ``call_id``), fresh in each
request (within one stream they are compared: ``output_item.added``, ``.done`` and
``response.completed`` name an item alike). Ignored everywhere: the items' statuses. vLLM
marks every streamed done item ``completed``, while its whole response and
``response.completed`` give reasoning items no status and mark the last item ``incomplete``
when the parser completed its message only in ``flush``, at the end of an output cut by
``max_output_tokens`` (``last_append_flush_status`` in vLLM's ``HarmonyContext``); the
responses' own statuses are compared instead (``incomplete`` when cut, or when no item is
left: vLLM's rule). The stream ends with ``response.completed`` on vLLM 0.32 whatever the
status, with ``response.incomplete`` for an incomplete one on 0.33.

The same check on a server with vLLM's built-in parser fails for empty messages: its whole
response and ``response.completed`` hold an empty item that its stream never announces (the
next item streamed at ``output_index`` 1), on the hand-written outputs and on fuzzed ones; the
last tests assert that, so the check can fail. (With the core's empty-message rule undone in
``vllm_ext/harmony_parser.py``, 18 fuzzed outputs and the four hand-written ones fail here.)

About a thousand requests, 16 at a time; about two minutes on 2 cores with the two server
starts.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

openai = pytest.importorskip("openai", reason="needs the openai client: use .venv-vllm/bin/pytest")

from harmony_ext_testing.vllm_cases import CALL_W, MESSAGES, MODEL, PARIS, RETURN_ID  # noqa: E402
from tests.contract_cases import CASES, Case, chat_content  # noqa: E402
from tests.e2e_vllm.test_responses import TOOLS as FUZZ_TOOLS  # noqa: E402
from tests.e2e_vllm.test_responses import fuzzed_outputs  # noqa: E402

# Left out: the cases that hold only in text mode (contract 6: dropping a marker never joins
# the text around it into a control-token spelling). vLLM parses token ids, where a spelling
# the model wrote with ordinary tokens is text and nothing is dropped, so their expected
# values say nothing about vLLM.
IDS_CASES = [c for c in CASES if "ids" in c.modes]
FUZZ = fuzzed_outputs(250)
CONCURRENT = 16
STOP_IDS = frozenset({200002, 200012, 199999})  # <|return|>, <|call|>, <|endoftext|>: the
# tiny model's eos ids (its generation_config), where vLLM stops a generation

R, M, F = "reasoning", "message", "function_call"
A, P, FA = "assistant", "commentary", "final_answer"
ITEMS: dict[str, list[tuple[Any, ...]]] = {
    # Written from the case's text, one item per Harmony message: a preamble (commentary,
    # no recipient) is a message with phase commentary, the answer one with phase
    # final_answer; free text between or after messages is a message of its own (contract
    # 2); messages of one kind are not merged.
    "route_preamble_content": [(M, A, P, "Let me check the weather.")],
    "route_preamble_then_call": [(R, "Need weather."), (M, A, P, "Checking now."),
                                 (F, "get_weather", '{"city":"Paris"}')],
    "route_concat_kinds": [(R, "A1 "), (R, "A2"), (M, A, FA, "C1"), (M, A, FA, "C2")],
    "route_concat_preamble_final": [(M, A, P, "Checking."), (M, A, FA, "Done.")],
    "route_concat_unknown_and_analysis": [(R, "a"), (R, "b")],
    "route_free_text_between": [(R, "Plan."), (M, A, FA, "Removing it now."),
                                (M, A, FA, "Done.")],
    "route_free_text_at_end": [(M, A, FA, "A"), (M, A, FA, " Trailing words.")],
    "route_free_text_before_return": [(M, A, FA, "A"), (M, A, FA, "Bye.")],
    "route_free_text_header_words": [(M, A, FA, "A"), (M, A, FA, "B")],
    "v5_role_word_prose_after_end_is_free_text": [(M, A, FA, "A"),
                                                  (M, A, FA, "User asks again."),
                                                  (M, A, FA, "B")],
    "hdr_to_assistant_commentary": [(M, A, P, "Let me look.")],
    "v3_final_without_message_at_start": [(M, A, FA, "The answer."), (R, "Done.")],
    # Contract 2 (v5): items keep each message as written; only chat joins them with "\n".
    "v5_preamble_ending_in_space_final": [(M, A, P, "Checking. "), (M, A, FA, "Done.")],
    "v5_preamble_ending_in_newline_final": [(M, A, P, "Checking.\n"), (M, A, FA, "Done.")],
    "v5_two_preambles": [(M, A, P, "Check"), (M, A, P, "ing.")],
    "v5_final_then_preamble": [(M, A, FA, "Done."), (M, A, P, "More.")],
    "v5_preamble_empty_final_final": [(M, A, P, "Checking."), (M, A, FA, "Done.")],
    "v5_preamble_reasoning_final": [(M, A, P, "Checking."), (R, "Hm."), (M, A, FA, "Done.")],
    "v5_preamble_free_text": [(M, A, P, "Checking."), (M, A, FA, "Done.")],
    "v5_preamble_call_final": [(M, A, P, "Checking."), (F, "get_weather", PARIS),
                               (M, A, FA, "Sunny.")],
}


def expected_items(case: Case) -> list[tuple[Any, ...]]:
    """The case's items: written out above, else one per kind present, in the contract's
    order (the reasoning, the answer, the calls)."""
    if case.id in ITEMS:
        return ITEMS[case.id]
    items: list[tuple[Any, ...]] = []
    if case.reasoning is not None:
        items.append((R, case.reasoning))
    if case.content is not None:
        items.append((M, A, FA, case.content))
    items += [(F, name, arguments) for name, arguments in case.calls]
    return items


def expected_status(case: Case) -> str:
    """vLLM's: ``incomplete`` when cut by the token budget, or when no item is left at all."""
    return "incomplete" if case.finish == "length" or not expected_items(case) else "completed"


# -- requests ---------------------------------------------------------------------------------

_ENCODING: Any = None


def ids_of(text: str, parts: Sequence[tuple[str, bool]] | None = None) -> list[int]:
    """o200k_harmony ids (tiktoken, from the vocabulary harmony-ext ships): every control-token
    spelling a control token, or ``parts`` (``(text, special?)``) with the ordinary parts'
    spellings as ordinary text."""
    global _ENCODING
    if _ENCODING is None:
        from harmony_plugins.vocab import o200k

        _ENCODING = o200k.tiktoken_encoding()
    e = _ENCODING
    if parts is None:
        return e.encode(text, allowed_special="all")
    out: list[int] = []
    for part, special in parts:
        out += (e.encode(part, allowed_special="all") if special
                else e.encode(part, allowed_special=set(), disallowed_special=()))
    return out


def responses_tools(tools: Any) -> list[dict[str, Any]]:
    """A case's tools (names, a chat ``tools`` array or a Responses one) as Responses
    function tools."""
    out = []
    for tool in tools or ():
        spec = {"name": tool} if isinstance(tool, str) else tool.get("function", tool)
        out.append({"type": "function", "name": spec["name"],
                    "description": f"The {spec['name']} tool.",
                    "parameters": spec.get("parameters") or {"type": "object"}})
    return out


@dataclass(frozen=True)
class Script:
    """One scripted output and the request that carries it."""

    ids: tuple[int, ...]
    tools: tuple[Any, ...] = ()
    cut: bool = False  # the token budget ends at the last id (finish ``length``)

    def kwargs(self, stream: bool) -> dict[str, Any]:
        extra: dict[str, Any] = {"vllm_xargs": {"script_ids": json.dumps(list(self.ids))}}
        kwargs: dict[str, Any] = {"model": MODEL, "input": MESSAGES[0]["content"],
                                  "stream": stream, "extra_body": extra}
        if self.tools:
            kwargs["tools"] = list(self.tools)
        if self.cut:  # every id, then the budget ends it (past any stop id in it)
            kwargs["max_output_tokens"] = len(self.ids)
            extra["ignore_eos"] = True
        elif any(i in STOP_IDS for i in self.ids[:-1]):
            # A stop id before the end (text after a <|call|>): vLLM would stop there. Past it,
            # as the case is written, up to the <|return|> the script processor forces after
            # the script (no contract case holds a <|return|> before its end).
            extra["ignore_eos"] = True
            extra["stop_token_ids"] = [RETURN_ID]
        return kwargs


def case_script(case: Case) -> Script:
    ids = ids_of(case.text, case.ids_parts)
    return Script(tuple(ids), tuple(responses_tools(case.tools)), cut=case.finish == "length")


def fuzz_script(text: str) -> Script:
    """A fuzzed output as the Responses suite sends it: the engine stops at its stop ids."""
    return Script(tuple(ids_of(text)), tuple(FUZZ_TOOLS))


# -- what a client sees -----------------------------------------------------------------------

DELTAS = ("response.output_text.delta", "response.reasoning_text.delta",
          "response.function_call_arguments.delta")
FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


@dataclass
class Run:
    """One request, as plain data: the (final) response's items and status; streamed, the
    item events by ``output_index``."""

    error: str | None = None
    status: str | None = None
    output: list[dict[str, Any]] = field(default_factory=list)
    final_event: str | None = None
    added: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    done: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    deltas: dict[int, str] = field(default_factory=dict)  # every delta's text, by index


def _text(item: dict[str, Any]) -> str:
    return "".join(part.get("text") or "" for part in item.get("content") or [])


def view(item: dict[str, Any]) -> tuple[Any, ...]:
    """An item as compared: ``(type, role, phase, text)`` for a message, ``(type, text)`` for
    reasoning, ``(type, name, arguments)`` for a call, else its fields less ids and status."""
    kind = item["type"]
    if kind == M:
        return kind, item.get("role"), item.get("phase"), _text(item)
    if kind == R:
        return kind, _text(item)
    if kind == F:
        return kind, item["name"], item["arguments"]
    return kind, json.dumps({k: v for k, v in item.items()
                             if k not in ("id", "call_id", "status")}, sort_keys=True)


def head(item: dict[str, Any]) -> tuple[Any, ...]:
    """What ``output_item.added`` already says of an item: its type, role, phase, name."""
    return (item["type"], item.get("role"), item.get("phase"), item.get("name"))


def ids(item: dict[str, Any]) -> tuple[Any, ...]:
    """An item's ids: one stream names an item by the same ones throughout (vLLM gives
    ``response.completed``'s items the streamed ids)."""
    return item.get("id"), item.get("call_id")


async def request(client: Any, script: Script, stream: bool) -> Run:
    got = Run()
    try:
        response = await client.responses.create(**script.kwargs(stream))
        if not stream:
            got.status = response.status
            got.output = [i.model_dump() for i in response.output]
            return got
        async for event in response:
            kind = event.type
            if kind == "response.output_item.added":
                got.added.append((event.output_index, event.item.model_dump()))
            elif kind == "response.output_item.done":
                got.done.append((event.output_index, event.item.model_dump()))
            elif kind in DELTAS:
                got.deltas[event.output_index] = got.deltas.get(event.output_index, "") + (
                    event.delta)
            elif kind in FINAL_EVENTS:
                got.final_event = kind
                got.status = event.response.status
                got.output = [i.model_dump() for i in event.response.output]
    except openai.APIError as e:
        got.error = f"{type(e).__name__}: {e}"
    return got


def run_all(base_url: str, scripts: Sequence[Script]) -> list[tuple[Run, Run]]:
    """(whole, streamed) for each script, ``CONCURRENT`` requests at a time."""

    async def main() -> list[tuple[Run, Run]]:
        client = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="unused",
                                    max_retries=0, timeout=300)
        gate = asyncio.Semaphore(CONCURRENT)

        async def one(script: Script, stream: bool) -> Run:
            async with gate:
                return await request(client, script, stream)

        async with client:
            runs = await asyncio.gather(*(one(s, stream) for s in scripts
                                          for stream in (False, True)))
        return list(zip(runs[::2], runs[1::2], strict=True))

    return asyncio.run(main())


# -- what a pair of runs must be --------------------------------------------------------------


def streamed_items(run: Run) -> list[tuple[Any, ...]]:
    """The stream's done items in ``output_index`` order."""
    return [view(item) for _, item in sorted(run.done, key=lambda pair: pair[0])]


def stream_problems(run: Run) -> list[str]:
    """How a stream's own events disagree: indexes, announced against done, the deltas."""
    out = []
    # vLLM 0.32 ends every stream with response.completed, whatever the status; 0.33 an
    # incomplete one with response.incomplete.
    if run.final_event not in ("response.completed", f"response.{run.status}"):
        out.append(f"stream ended with {run.final_event}, status {run.status}")
    added = [i for i, _ in run.added]
    done = [i for i, _ in run.done]
    if added != list(range(len(added))):
        out.append(f"output_item.added output_index {added}, not 0..{len(added) - 1}")
    if done != added:
        out.append(f"output_item.done output_index {done} != added {added}")
    announced = dict(run.added)
    for index, item in run.done:
        if index in announced and head(announced[index]) != head(item):
            out.append(f"item {index} added as {head(announced[index])}, done as {head(item)}")
        if index in announced and ids(announced[index]) != ids(item):
            out.append(f"item {index} added with ids {ids(announced[index])}, done with "
                       f"{ids(item)}")
        said = item.get("arguments") if item["type"] == F else _text(item)
        if run.deltas.get(index, "") != said:
            out.append(f"item {index}: deltas {run.deltas.get(index, '')!r} != done {said!r}")
    return out


def empty_items(items: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Items with no text or arguments at all."""
    return [i for i in items if i[0] in (M, R, F) and i[-1] == ""]


def problems(whole: Run, streamed: Run, status: str | None = None) -> list[str]:
    """Every way the two runs of one output break the promises of the module docstring
    (``status``: the status both must have, when known). Empty: none."""
    out = [f"{mode}: {run.error}" for mode, run in (("whole", whole), ("streamed", streamed))
           if run.error is not None]
    if out:
        return out
    out += [f"streamed: {p}" for p in stream_problems(streamed)]
    done = [item for _, item in sorted(streamed.done, key=lambda pair: pair[0])]
    if [ids(i) for i in done] != [ids(i) for i in streamed.output]:
        out.append(f"streamed: done ids {[ids(i) for i in done]} != response.completed's "
                   f"{[ids(i) for i in streamed.output]}")
    views = {"whole": [view(i) for i in whole.output],
             "response.completed": [view(i) for i in streamed.output],
             "streamed": streamed_items(streamed)}
    if not views["whole"] == views["response.completed"] == views["streamed"]:
        out.append(f"items differ: {views}")
    if whole.status != streamed.status or status not in (None, whole.status):
        out.append(f"status: whole {whole.status}, streamed {streamed.status}, want {status}")
    empty = sorted(name for name, items in views.items() if empty_items(items))
    if empty:
        out.append(f"an empty item in {empty}")
    return out


# -- harmony-ext ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ext_runs(vllm_server: str) -> dict[str, tuple[Run, Run]]:
    """Every contract case (by id) and fuzzed output (``fuzz:N``) on the harmony-ext server."""
    keys = [c.id for c in IDS_CASES] + [f"fuzz:{i}" for i in range(len(FUZZ))]
    scripts = [case_script(c) for c in IDS_CASES] + [fuzz_script(t) for t in FUZZ]
    return dict(zip(keys, run_all(vllm_server, scripts), strict=True))


@pytest.mark.parametrize("case", IDS_CASES, ids=[c.id for c in IDS_CASES])
def test_contract_case_streamed_equals_whole(ext_runs: dict[str, tuple[Run, Run]],
                                             case: Case) -> None:
    whole, streamed = ext_runs[case.id]
    assert problems(whole, streamed, expected_status(case)) == []
    assert [view(i) for i in whole.output] == expected_items(case)


@pytest.mark.parametrize("index", range(len(FUZZ)))
def test_fuzzed_output_streamed_equals_whole(ext_runs: dict[str, tuple[Run, Run]],
                                             index: int) -> None:
    whole, streamed = ext_runs[f"fuzz:{index}"]
    assert problems(whole, streamed) == []


def test_the_hand_written_items_are_cases() -> None:
    """Each list of :data:`ITEMS` is its case's routing, item by item."""
    by_id = {c.id: c for c in IDS_CASES}
    assert set(ITEMS) <= set(by_id)
    for case_id, items in ITEMS.items():
        case = by_id[case_id]
        assert "".join(i[1] for i in items if i[0] == R) == (case.reasoning or "")
        assert chat_content([(i[2] == P, i[3]) for i in items if i[0] == M]) == (
            case.content or "")
        assert [i[1:] for i in items if i[0] == F] == list(case.calls)


# -- empty messages, and the same check on vLLM's built-in parser ----------------------------

ISSUE_EXAMPLE = "<|channel|>final<|message|><|end|>Hello there.<|return|>"
EMPTY_MESSAGES: dict[str, list[tuple[Any, ...]]] = {
    # An output with an empty Harmony message (issue 24's, then well-formed ones), and its
    # items through harmony-ext, by hand: the empty message has none; free text after
    # <|end|> is content (contract 2).
    ISSUE_EXAMPLE: [(M, A, FA, "Hello there.")],
    "<|channel|>final<|message|><|end|><|start|>assistant<|channel|>final<|message|>Hello "
    "there.<|return|>": [(M, A, FA, "Hello there.")],
    "<|channel|>analysis<|message|><|end|><|start|>assistant<|channel|>final<|message|>Hi."
    "<|return|>": [(M, A, FA, "Hi.")],
    "<|channel|>commentary<|message|><|end|><|start|>assistant" + CALL_W + PARIS + "<|call|>":
        [(F, "get_weather", PARIS)],
}
EMPTY_BODY = re.compile(r"<\|message\|>(?:<\|(?:end|start|channel|constrain)\|>|$)")
"""A Harmony message whose body, as written, is empty (up to the engine's first stop)."""
FIRST_STOP = re.compile(r"<\|(?:return|call|endoftext)\|>")
EMPTY_FUZZ = [i for i, text in enumerate(FUZZ)
              if EMPTY_BODY.search(FIRST_STOP.split(text, 1)[0])]


def unannounced(whole: Run, streamed: Run) -> list[tuple[Any, ...]]:
    """The empty items of the whole response and of ``response.completed``, when the stream
    announced every other item and none of these; empty when that is not what happened."""
    items = [view(i) for i in whole.output]
    empty = empty_items(items)
    if not empty or [view(i) for i in streamed.output] != items:
        return []
    return empty if streamed_items(streamed) == [i for i in items if i not in empty] else []


@pytest.fixture(scope="module")
def ext_empty_runs(vllm_server: str) -> list[tuple[Run, Run]]:
    return run_all(vllm_server, [fuzz_script(t) for t in EMPTY_MESSAGES])


@pytest.mark.parametrize("index", range(len(EMPTY_MESSAGES)))
def test_an_empty_message_has_an_item_in_neither_view(
        ext_empty_runs: list[tuple[Run, Run]], index: int) -> None:
    whole, streamed = ext_empty_runs[index]
    assert problems(whole, streamed, "completed") == []
    assert [view(i) for i in whole.output] == list(EMPTY_MESSAGES.values())[index]


@pytest.fixture(scope="module")
def builtin_runs(builtin_server: str) -> list[tuple[Run, Run]]:
    """The outputs with an empty message on vLLM's built-in parser: the hand-written ones,
    then the fuzzed ones."""
    return run_all(builtin_server, [fuzz_script(t) for t in EMPTY_MESSAGES]
                   + [fuzz_script(FUZZ[i]) for i in EMPTY_FUZZ])


@pytest.mark.parametrize("index", range(len(EMPTY_MESSAGES)))
def test_the_builtin_parser_streams_no_item_for_an_empty_message(
        builtin_runs: list[tuple[Run, Run]], index: int) -> None:
    """vLLM's own parser gives the empty message an item in the whole response and in
    ``response.completed`` that the stream never announces (after it, the stream's
    ``output_index`` starts at 1): the checks above fail on it."""
    whole, streamed = builtin_runs[index]
    assert whole.error is None and streamed.error is None
    missing = unannounced(whole, streamed)
    assert missing, (whole, streamed)
    if streamed.added:
        assert streamed.added[0][0] == 1
    found = problems(whole, streamed)
    assert any(p.startswith("items differ") for p in found), found
    assert any(p.startswith("an empty item") for p in found), found


def test_the_builtin_parser_fails_the_check_on_fuzzed_empty_messages(
        builtin_runs: list[tuple[Run, Run]], ext_runs: dict[str, tuple[Run, Run]]) -> None:
    """The fuzzed outputs with an empty message: vLLM's own parser fails the check on most
    (an item the stream never announces; or it refuses the output, HTTP 400, and cuts the
    stream); through harmony-ext every one passes."""
    runs = builtin_runs[len(EMPTY_MESSAGES):]
    failing = {i: problems(*pair) for i, pair in zip(EMPTY_FUZZ, runs, strict=True)
               if problems(*pair)}
    shown = [i for i, pair in zip(EMPTY_FUZZ, runs, strict=True) if unannounced(*pair)]
    assert shown, failing
    assert len(failing) > len(EMPTY_FUZZ) // 2, failing
    assert [i for i in EMPTY_FUZZ if problems(*ext_runs[f"fuzz:{i}"])] == []
