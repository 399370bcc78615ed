"""The Anthropic Messages API (``/v1/messages``) spoken in plain HTTP, and read as a client
reads it, on vLLM and SGLang.

On a vLLM server a request carries its scripted output in ``vllm_xargs`` as the chat cases do
(:mod:`harmony_ext_testing.vllm_cases`). :func:`run_messages` sends one, streamed or not, and
returns an id-free :class:`MessagesRun`: the HTTP status, the error message of a failed
request, and else the response's content blocks (``["thinking", text]``, ``["text", text]``,
``["tool_use", name, input]``) and ``stop_reason``. A stream is folded the way a client folds
it (:func:`fold_events`, SGLang's tests use it too): a block's deltas concatenated in their
block, a ``tool_use`` block's ``partial_json`` read as JSON at its end (left a string where it
is none, as no client could use it).

The fuzz tests of both engines compare a whole answer with its stream through
:func:`whole_view` and :func:`streamed_view`, in the shape
``harmony_ext_testing.fuzzed_outputs.engine_problems`` reads.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from harmony_ext_testing.vllm_cases import MODEL, TOOL_PARAMETERS

QUESTION = "What is the weather in Paris?"


def messages_tools(names: Iterable[str]) -> list[dict[str, Any]]:
    """An Anthropic ``tools`` array for these function names."""
    return [{"name": n, "description": f"The {n} tool.",
             "input_schema": TOOL_PARAMETERS.get(n, {"type": "object", "properties": {}})}
            for n in names]


def anthropic_tools(tools: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A chat completions ``tools`` array as the Messages API declares the same functions."""
    return [{"name": t["function"]["name"], "description": t["function"]["description"],
             "input_schema": t["function"]["parameters"]} for t in tools]


def messages_body(script: str, tools: Iterable[str] = (), *, stream: bool,
                  max_tokens: int = 200) -> dict[str, Any]:
    """A ``/v1/messages`` request whose model output is ``script``."""
    body: dict[str, Any] = {"model": MODEL, "max_tokens": max_tokens, "stream": stream,
                            "messages": [{"role": "user", "content": QUESTION}],
                            "vllm_xargs": {"script_text": script}}
    tools = list(tools)
    if tools:
        body["tools"] = messages_tools(tools)
    return body


@dataclass
class MessagesRun:
    """One request's outcome: ``status``, and ``error`` or ``blocks`` and ``stop_reason``."""

    status: int
    blocks: list[list[Any]] = field(default_factory=list)
    stop_reason: str | None = None
    error: str | None = None
    id: str | None = None
    events: list[str] = field(default_factory=list)  # streamed: the event names, in order

    def outcome(self) -> dict[str, Any]:
        """What a client got, without ids: comparable across servers and stream modes."""
        if self.error is not None:
            return {"status": self.status, "error": self.error}
        return {"status": self.status, "blocks": self.blocks, "stop_reason": self.stop_reason}


def block_view(block: Mapping[str, Any]) -> list[Any]:
    """A content block without ids or signatures."""
    kind = block["type"]
    if kind == "tool_use":
        return [kind, block["name"], block["input"]]
    if kind == "thinking":
        return [kind, block["thinking"]]
    if kind == "text":
        return [kind, block["text"]]
    return [kind, json.dumps({k: v for k, v in block.items() if k != "id"}, sort_keys=True)]


def _error(status: int, text: str) -> MessagesRun:
    try:
        message = json.loads(text)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = text
    return MessagesRun(status, error=message)


def run_messages(base_url: str, body: Mapping[str, Any], timeout: float = 300) -> MessagesRun:
    """POST ``body`` to ``/v1/messages`` (streamed where ``body["stream"]``)."""
    import httpx

    url = f"{base_url}/v1/messages"
    with httpx.Client(timeout=timeout) as http:
        if not body.get("stream"):
            response = http.post(url, json=body)
            if response.status_code != 200:
                return _error(response.status_code, response.text)
            data = response.json()
            return MessagesRun(200, [block_view(b) for b in data["content"]],
                               data.get("stop_reason"), id=data.get("id"))
        with http.stream("POST", url, json=body) as response:
            if response.status_code != 200:
                return _error(response.status_code, response.read().decode())
            return fold_events(response.iter_lines())


def fold_events(lines: Iterable[str]) -> MessagesRun:
    """A Messages API event stream (its lines) folded into the response a client builds."""
    run = MessagesRun(200)
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for line in lines:
        if not line.startswith("data:"):
            continue
        event = json.loads(line[len("data:"):])
        kind = event["type"]
        run.events.append(kind)
        if kind == "message_start":
            run.id = event["message"].get("id")
        elif kind == "content_block_start":
            blocks[event["index"]] = dict(event["content_block"])
            partial[event["index"]] = []
        elif kind == "content_block_delta":
            _add_delta(blocks[event["index"]], partial[event["index"]], event["delta"])
        elif kind == "message_delta":
            run.stop_reason = event["delta"].get("stop_reason")
        elif kind == "error":
            run.error = event["error"].get("message", "error event")
    run.blocks = [block_view(_with_input(blocks[i], partial[i])) for i in sorted(blocks)]
    return run


def _with_input(block: dict[str, Any], partial: list[str]) -> dict[str, Any]:
    """A streamed ``tool_use`` block's ``input``: its ``partial_json`` read as JSON (left a
    string where it is none)."""
    if block["type"] == "tool_use" and partial:
        text = "".join(partial)
        try:
            block["input"] = json.loads(text)
        except ValueError:
            block["input"] = text
    return block


def _add_delta(block: dict[str, Any], partial: list[str], delta: Mapping[str, Any]) -> None:
    kind = delta["type"]
    if kind == "text_delta":
        block["text"] = block.get("text", "") + delta["text"]
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + delta["thinking"]
    elif kind == "input_json_delta":
        partial.append(delta["partial_json"])


# -- an answer as the fuzz tests compare it ------------------------------------------------------


def call_shown_as_text(block: Mapping[str, Any], names: Collection[str]
                       ) -> tuple[str, str] | None:
    """A text block that shows a call whose arguments are no JSON object, as contract section 4
    says ``/v1/messages`` shows one (the function's name, a space, the arguments as written; the
    function one of ``names``): (name, arguments); else None."""
    name, space, arguments = (block.get("text") or "").partition(" ")
    if block["type"] != "text" or not space or name not in names:
        return None
    try:
        is_object = isinstance(json.loads(arguments), dict)
    except ValueError:
        is_object = False
    return None if is_object else (name, arguments)


def blocks_view(blocks: Iterable[Mapping[str, Any]], names: Collection[str]
                ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """An answer's texts, each kind's blocks joined (thinking, then text; empty ones left out:
    a whole answer holds one block of each kind, a stream a new block wherever the kind
    changes), and its calls in order (name, input as sorted JSON; a call shown as text, name
    and arguments as written). The engines order one answer's blocks differently streamed and
    not (whole: the text first, then the calls; streamed: as they came), so the calls are
    compared apart from the text."""
    joined: dict[str, str] = {"thinking": "", "text": ""}
    calls = []
    for block in blocks:
        if block["type"] == "tool_use":
            calls.append((block["name"], json.dumps(block["input"], sort_keys=True)))
        elif (shown := call_shown_as_text(block, names)) is not None:
            calls.append(shown)
        else:
            joined[block["type"]] = joined.get(block["type"], "") + (
                block.get("text") or block.get("thinking") or "")
    return [(kind, text) for kind, text in joined.items() if text], calls


def whole_view(data: Mapping[str, Any], names: Collection[str]) -> dict[str, Any]:
    """A non-streamed answer: ``texts``, ``calls`` (:func:`blocks_view`), ``finish`` (its
    ``stop_reason``)."""
    texts, calls = blocks_view(data["content"], names)
    return {"texts": texts, "calls": calls, "finish": data["stop_reason"]}


def streamed_view(events: Iterable[Mapping[str, Any]], names: Collection[str]
                  ) -> dict[str, Any]:
    """A stream's JSON events folded as :func:`whole_view` reads an answer, and ``problems``:
    where the stream broke the API's shape (an ``error`` event, no ``message_stop``, block
    indexes with a gap, a ``tool_use`` block whose ``partial_json`` is no JSON object)."""
    blocks: dict[int, dict[str, Any]] = {}
    stop, problems, ended = None, [], False
    for e in events:
        kind = e.get("type")
        if kind == "content_block_start":
            blocks[e["index"]] = {**e["content_block"], "partial": ""}
        elif kind == "content_block_delta":
            _add_stream_delta(blocks[e["index"]], e["delta"])
        elif kind == "message_delta":
            stop = e["delta"].get("stop_reason")
        elif kind == "message_stop":
            ended = True
        elif kind == "error":
            problems.append(f"an error event: {e}")
    if not ended:
        problems.append("no message_stop")
    problems += _block_problems(blocks)
    texts, calls = blocks_view([blocks[i] for i in sorted(blocks)], names)
    return {"texts": texts, "calls": calls, "finish": stop, "problems": problems}


def _block_problems(blocks: dict[int, dict[str, Any]]) -> list[str]:
    """Streamed blocks' indexes with a gap, and ``tool_use`` blocks whose ``partial_json`` is
    no JSON object (each block's ``input`` read from it on the way)."""
    problems = [f"tool_use input {block['partial']!r} is no JSON object"
                for block in blocks.values()
                if block["type"] == "tool_use" and not _read_input(block)]
    if sorted(blocks) != list(range(len(blocks))):
        problems.append(f"block indexes {sorted(blocks)}")
    return problems


def _add_stream_delta(block: dict[str, Any], delta: Mapping[str, Any]) -> None:
    """A ``content_block_delta``'s text, thinking or ``partial_json`` added to its block."""
    for key in ("text", "thinking"):
        if key in delta:
            block[key] = block.get(key, "") + delta[key]
    block["partial"] += delta.get("partial_json", "")


def _read_input(block: dict[str, Any]) -> bool:
    """A streamed ``tool_use`` block's ``input`` read from its ``partial_json`` (``{}`` where it
    has none; the text itself where it is no JSON); whether that is a JSON object."""
    try:
        block["input"] = json.loads(block["partial"] or "{}")
    except ValueError:
        block["input"] = block["partial"]
    return isinstance(block["input"], dict)
