"""SGLang's real ``OpenAIServingResponses`` with only the model scripted, as token ids.

For a gpt-oss model SGLang serves ``/v1/responses`` through its Harmony contexts
(``sglang/srt/entrypoints/context.py``), which parse the output token ids, not the text. So the
scripted model here (:class:`harmony_ext_testing.sglang_serving.ScriptedModel`, behind SGLang's
real ``TokenizerManager``) answers each generation request with its ids, a step at a time,
stopping as SGLang's scheduler does (:func:`generated`), the finish reason on the last step; the
manager accumulates them as SGLang's default ``incremental_streaming_output=False`` does.
Everything between the request and the model is SGLang's own: request validation, the prompt,
the tokenizer manager, ``HarmonyContext`` / ``StreamingHarmonyContext``, the built-in tool loop
(``_generate_with_builtin_tools``), the item builders and the SSE events.

:class:`ResponsesServer` builds the serving object once per parser pair (a test fixture or a
fresh interpreter, :mod:`tests.sglang.sglang_process`, both use it; the tokenizer manager is
the process's); :meth:`ResponsesServer.run`
sends one request and returns what a client would see (:class:`ResponsesRun`), and
:func:`problems` lists how a run breaks the Responses API's promises: an error, a stream cut, a
status other than ``completed`` / ``incomplete``, or streamed items that differ from the whole
response's or skip an ``output_index``. Model text becomes ids with the real o200k_harmony
tokenizer (the vocabulary harmony-ext ships, through tiktoken).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harmony_ext_testing.sglang_serving import HARMONY_TEST_TEMPLATE, Output, shared_server
from tests.contract_cases import chat_content

NAME = "harmony-ext"
USER = "What is the weather?"

EOS = 200002  # <|return|>: the model's end of sequence (config.json's eos_token_id)
CONTROL_SPELLING = re.compile(r"<\|(?:start|end|message|channel|constrain|return|call|"
                              r"startoftext|endoftext|endofprompt|reserved_\d+)\|>")

_OBJECT = {"type": "object"}
_ENCODING: Any = None


def encoding() -> Any:
    """o200k_harmony (tiktoken, built from the vocabulary harmony-ext ships: offline)."""
    global _ENCODING
    if _ENCODING is None:
        from harmony_plugins.vocab import o200k

        _ENCODING = o200k.tiktoken_encoding()
    return _ENCODING


def ids_of(text: str, parts: Sequence[tuple[str, bool]] | None = None) -> list[int]:
    """The ids of model text, every control-token spelling a control token; or of ``parts``
    (``(text, special?)``: ordinary parts with every spelling as ordinary text)."""
    e = encoding()
    if parts is None:
        return e.encode(text, allowed_special="all")
    out: list[int] = []
    for part, special in parts:
        out += (e.encode(part, allowed_special="all") if special
                else e.encode(part, allowed_special=set(), disallowed_special=()))
    return out


def responses_tools(tools: Any) -> list[dict[str, Any]]:
    """A case's tools (names, a chat ``tools`` array or a Responses one) as Responses function
    tools. Each has a description: SGLang's Harmony prompt builds openai-harmony's
    ``ToolDescription``, which refuses a missing one (HTTP 400 before any output)."""
    out = []
    for tool in tools or ():
        if isinstance(tool, str):
            name, parameters = tool, _OBJECT
        elif tool.get("type") not in (None, "function"):  # a built-in tool: web_search, ...
            out.append(dict(tool))
            continue
        else:
            spec = tool.get("function", tool)
            name, parameters = spec["name"], spec.get("parameters") or _OBJECT
        out.append({"type": "function", "name": name, "description": f"The {name} tool.",
                    "parameters": parameters})
    return out


# -- the model ------------------------------------------------------------------------------


def generated(script: Sequence[int], params: Any, ignore_eos: bool = False
              ) -> tuple[list[int], dict[str, Any]]:
    """The ids the engine emits for ``script`` under the request's ``SamplingParams``, and its
    finish reason, as SGLang's scheduler stops: after the first id among the request's
    ``stop_token_ids`` and the model's end of sequence (``<|return|>``; Responses adds
    ``<|call|>``), finish ``stop`` with that id matched, unless ``ignore_eos`` (the test's or
    the request's: then every id is emitted); at ``max_new_tokens`` ids, finish ``length``. A
    script that runs out first finishes ``stop`` with nothing matched (its stop token absent)."""
    stops = set() if ignore_eos or params.ignore_eos else {EOS, *(params.stop_token_ids or ())}
    limit = params.max_new_tokens
    out: list[int] = []
    for token in script:
        if limit is not None and len(out) >= limit:
            return out, {"type": "length", "length": len(out)}
        out.append(token)
        if token in stops:
            return out, {"type": "stop", "matched": token}
    if limit is not None and len(out) >= limit:
        return out, {"type": "length", "length": len(out)}
    return out, {"type": "stop", "matched": None}


def _steps(n: int, chunks: Callable[[int], Iterable[int]] | None) -> Iterable[int]:
    """Cumulative ends of each streamed step: one id per step, or ``chunks(n)``'s sizes."""
    end = 0
    for size in (chunks(n) if chunks is not None else [1] * n):
        end = min(n, end + size)
        yield end
        if end == n:
            return
    if end < n:
        yield n


def random_chunks(seed: int) -> Callable[[int], list[int]]:
    """Steps of 1 to 5 ids (speculative decoding, ``--stream-interval``), seeded."""
    def sizes(n: int) -> list[int]:
        rnd = random.Random(seed * 7919 + n)
        return [rnd.randint(1, 5) for _ in range(n)]
    return sizes


# -- one request -----------------------------------------------------------------------------


@dataclass
class ResponsesRun:
    """What a client got from one request."""

    stream: bool
    error: str | None = None  # an HTTP error's message, or what cut the stream
    status: str | None = None
    response_id: str | None = None  # the (final) response's id (for previous_response_id)
    output: list[dict[str, Any]] = field(default_factory=list)  # the (final) response's items
    final_event: str | None = None  # response.completed / incomplete / failed (streamed)
    added: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # output_item.added
    folded: dict[int, dict[str, Any]] = field(default_factory=dict)  # added + deltas, by index
    done: list[tuple[int, dict[str, Any]]] = field(default_factory=list)  # output_item.done
    events: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[list[int]] = field(default_factory=list)  # each generation's prompt ids
    outputs: list[list[int]] = field(default_factory=list)  # the ids each generation emitted
    sampling: list[Any] = field(default_factory=list)  # each generation's SamplingParams

    def views(self) -> list[list[Any]]:
        return [view(i) for i in self.output]


DELTAS = {"response.output_text.delta": "content", "response.reasoning_text.delta": "content",
          "response.function_call_arguments.delta": "arguments",
          "response.code_interpreter_call_code.delta": "code"}


def view(item: dict[str, Any]) -> list[Any]:
    """An output item without its ids and status: ``[type, phase, text]`` for a message,
    ``[type, text]`` for reasoning, ``[type, name, arguments]`` for a call, else ``[type,
    the other fields]``."""
    kind = item["type"]
    if kind == "message":
        return [kind, item.get("phase"), "".join(p.get("text") or "" for p in item["content"])]
    if kind == "reasoning":
        return [kind, "".join(p.get("text") or "" for p in item.get("content") or [])]
    if kind == "function_call":
        return [kind, item["name"], item["arguments"]]
    return [kind, {k: v for k, v in item.items() if k not in ("id", "call_id", "status")}]


def _fold(folded: dict[int, dict[str, Any]], event: dict[str, Any]) -> None:
    """Add one streamed delta to the item being built at its ``output_index``."""
    item = folded.get(event.get("output_index"))
    if item is None:
        return
    where = DELTAS[event["type"]]
    if where == "content":
        parts = item.setdefault("content", [])
        index = event.get("content_index", 0)
        while len(parts) <= index:
            parts.append({"text": ""})
        parts[index] = {**parts[index], "text": (parts[index].get("text") or "") + event["delta"]}
    else:
        item[where] = (item.get(where) or "") + event["delta"]


class ResponsesServer:
    """SGLang's ``OpenAIServingResponses`` for one parser pair, on the CPU, over the process's
    real ``TokenizerManager`` (:func:`harmony_ext_testing.sglang_serving.shared_server`).
    ``tool_server``: SGLang's tool server (a stand-in) for built-in tools; ``server_args``: more
    of SGLang's server arguments (``enable_response_store=True`` for ``previous_response_id``);
    ``enable_metrics``: the manager's too."""

    def __init__(self, model_dir: str | Path, tool_parser: str | None = NAME,
                 reasoning_parser: str | None = NAME, *, enable_metrics: bool = False,
                 tool_server: Any = None, **server_args: Any) -> None:
        from harmony_plugins.adapter_support.vocabulary import load_openai_harmony

        load_openai_harmony()  # SGLang's openai_harmony downloads its vocabulary otherwise
        self.server = shared_server(Path(model_dir),
                                    **({"enable_metrics": True} if enable_metrics else {}))
        self.served = self.server.served(HARMONY_TEST_TEMPLATE)
        self.args = self.server.args_for(self.served.template_file, tool_parser,
                                          reasoning_parser, **server_args)
        self.tool_server = tool_server
        self._serving: Any = None

    def publish(self) -> None:
        """The serving code reads process-wide config: publish this server's."""
        self.server.publish(self.args)

    @property
    def serving(self) -> Any:
        from sglang.srt.entrypoints.openai.serving_responses import OpenAIServingResponses

        if self._serving is None:
            self._serving = OpenAIServingResponses(self.served.manager, self.served.templates,
                                                   tool_server=self.tool_server)
        return self._serving

    def run(self, scripts: Sequence[int] | Sequence[Sequence[int]], *, stream: bool,
            tools: Any = None, ignore_eos: bool = False,
            chunks: Callable[[int], Iterable[int]] | None = None,
            **request: Any) -> ResponsesRun:
        """One ``/v1/responses`` request. ``scripts``: the model's ids (one generation), or a
        list of them (one per generation of SGLang's built-in tool loop); ``ignore_eos``: the
        engine emits every scripted id (it stops only at ``max_new_tokens``); ``chunks``: how
        many ids each streamed step adds (default one); ``request``: more of the request's
        fields (``max_output_tokens``, ...). The model's steps carry ids and no text (SGLang's
        Harmony contexts read the ids)."""
        from sglang.srt.entrypoints.openai.protocol import ResponsesRequest

        self.publish()
        serving = self.serving
        if scripts and isinstance(scripts[0], int):
            scripts = [scripts]  # type: ignore[list-item]
        plans = [list(s) for s in scripts]  # type: ignore[arg-type]
        outputs: list[list[int]] = []

        def replies(generation: Any, n: int) -> list[Output]:
            ids, finish = generated(plans[n] if n < len(plans) else [],
                                    generation.sampling_params, ignore_eos)
            outputs.append(ids)
            ends = list(_steps(len(ids), chunks)) or [0]
            return [Output("", ids[start:end], end, finish if end == ends[-1] else None)
                    for start, end in zip([0, *ends], ends, strict=False)]

        body: dict[str, Any] = {"model": "gpt-oss", "input": USER, "stream": stream,
                                "tools": responses_tools(tools), **request}
        got = ResponsesRun(stream)

        async def client() -> None:
            result = await serving.create_responses(ResponsesRequest(**body), None)
            if not stream:
                data = result.model_dump() if hasattr(result, "model_dump") else json.loads(
                    result.body)
                if "error" in data and data.get("output") is None:
                    got.error = data["error"]["message"]
                    return
                got.status, got.output = data["status"], data["output"]
                got.response_id = data.get("id")
                return
            if not hasattr(result, "__aiter__"):  # refused before streaming
                got.error = json.loads(result.body)["error"]["message"]
                return
            try:
                async for chunk in result:
                    for line in chunk.split("\n"):
                        if line.startswith("data: "):
                            self._event(got, json.loads(line[len("data: "):]))
            except Exception as e:  # what SGLang's HTTP server does: the stream is cut
                got.error = f"stream cut: {type(e).__name__}: {e}"

        _, requests = self.server.serve(self.served, replies, client)
        got.prompts = [list(r.input_ids) for r in requests]
        got.outputs = outputs
        got.sampling = [r.sampling_params for r in requests]
        return got

    @staticmethod
    def _event(got: ResponsesRun, event: dict[str, Any]) -> None:
        got.events.append(event)
        kind = event["type"]
        if kind == "response.output_item.added":
            got.added.append((event["output_index"], event["item"]))
            got.folded[event["output_index"]] = json.loads(json.dumps(event["item"]))
        elif kind in DELTAS:
            _fold(got.folded, event)
        elif kind == "response.output_item.done":
            got.done.append((event["output_index"], event["item"]))
        elif kind in ("response.completed", "response.incomplete", "response.failed"):
            got.final_event = kind
            got.status = event["response"]["status"]
            got.response_id = event["response"].get("id")
            got.output = event["response"]["output"]


# -- what a run must be ----------------------------------------------------------------------


def stream_problems(run: ResponsesRun) -> list[str]:
    """How a streamed run's events disagree with its own final response."""
    out = []
    if run.final_event is None:
        return ["stream ended without response.completed / incomplete / failed"]
    indexes = [i for i, _ in run.added]
    if indexes != list(range(len(indexes))):
        out.append(f"output_item.added output_index {indexes}, not 0, 1, 2... in order")
    if [i for i, _ in run.done] != indexes:
        out.append(f"output_item.done output_index {[i for i, _ in run.done]} != added "
                   f"{indexes}")
    final = run.views()
    done = [view(item) for _, item in run.done]
    if done != final:
        out.append(f"output_item.done items {done} != {run.final_event} output {final}")
    folded = [view(run.folded[i]) for i in sorted(run.folded)]
    if folded != final:
        out.append(f"streamed deltas add up to {folded} != {run.final_event} output {final}")
    return out


def problems(whole: ResponsesRun, streamed: ResponsesRun, *, cut: bool = False) -> list[str]:
    """How the two runs of one output break the Responses API: an error or a cut stream, a
    status other than ``completed`` (``incomplete`` when ``cut`` by ``max_output_tokens``), a
    stream whose events disagree with its final response, or a streamed response whose items
    differ from the whole one's. Empty: none."""
    want = "incomplete" if cut else "completed"
    out = []
    for run in (whole, streamed):
        mode = "streamed" if run.stream else "whole"
        if run.error is not None:
            out.append(f"{mode}: {run.error}")
        elif run.status != want:
            out.append(f"{mode}: status {run.status}, not {want}")
    if streamed.error is None:
        out += [f"streamed: {p}" for p in stream_problems(streamed)]
        if streamed.final_event is not None and streamed.final_event != f"response.{want}":
            out.append(f"streamed: ends with {streamed.final_event}")
    if whole.error is None and streamed.error is None and whole.views() != streamed.views():
        out.append(f"streamed items {streamed.views()} != whole items {whole.views()}")
    return out


def leaks(run: ResponsesRun) -> list[str]:
    """Control-token spellings in any item's text (the model wrote none as ordinary text)."""
    return CONTROL_SPELLING.findall(json.dumps(run.views(), ensure_ascii=False))


def as_chat(run: ResponsesRun) -> dict[str, Any]:
    """The items read as chat completions route them: reasoning and content joined in order
    (None when empty; in the content one "\n" after a preamble that does not end in
    whitespace when a message of another phase follows it, contract section 2), calls as
    ``(name, arguments)``, other item types by type."""
    views = run.views()
    reasoning = "".join(v[1] for v in views if v[0] == "reasoning")
    content = chat_content([(v[1] == "commentary", v[2]) for v in views if v[0] == "message"])
    return {"reasoning": reasoning or None, "content": content or None,
            "tool_calls": [tuple(v[1:]) for v in views if v[0] == "function_call"],
            "other": [v[0] for v in views if v[0] not in ("reasoning", "message",
                                                          "function_call")]}


# -- SGLang's built-in tool loop -------------------------------------------------------------


def browser_tool_server(result: str) -> Any:
    """A stand-in for SGLang's tool server with a browser whose every call returns ``result``
    as its message (``Author(TOOL, "browser.search")`` to the assistant, as SGLang's
    ``HarmonyBrowserTool`` builds it); the calls it got are in ``.calls``."""
    from contextlib import asynccontextmanager

    from openai_harmony import Author, Message, Role, TextContent, ToolNamespaceConfig
    from sglang.srt.entrypoints.openai.tool_server import ToolServer
    from sglang.srt.entrypoints.tool import Tool

    class Browser(Tool):
        def __init__(self) -> None:
            self.calls: list[tuple[str | None, str]] = []

        async def get_result(self, context: Any) -> Any:
            last = context.messages[-1]
            self.calls.append((last.recipient, last.content[0].text))
            author = Author(role=Role.TOOL, name=last.recipient)
            return [Message(author=author, content=[TextContent(text=result)],
                            recipient=Role.ASSISTANT)]

    class Server(ToolServer):
        def __init__(self) -> None:
            self.browser = Browser()
            self.calls = self.browser.calls

        def has_tool(self, tool_name: str) -> bool:
            return tool_name == "browser"

        def get_tool_description(self, tool_name: str) -> Any:
            return ToolNamespaceConfig.browser() if tool_name == "browser" else None

        @asynccontextmanager
        async def get_tool_session(self, tool_name: str) -> AsyncIterator[Any]:
            yield self.browser

    return Server()
