"""SGLang's serving, real down to the TokenizerManager's sockets; only the model scripted.

In an SGLang server the API process's ``TokenizerManager`` sends each tokenized request to the
scheduler over ZMQ and receives the detokenizer's ``BatchStrOutput`` back. :class:`ScriptedModel`
is the other end of those two sockets: it receives the real ``TokenizedGenerateReqInput`` (the
prompt ids the model would see, its sampling parameters) and answers with what the test scripts
(:class:`Output`: text, ids, finish reason), one ``BatchStrOutput`` per step, through SGLang's
own ``async_sock_send`` / ``async_sock_recv`` (its wire format). As SGLang's scheduler does, a
request that does not stream gets one output, when it finishes. From the request to the socket
everything is SGLang's: ``OpenAIServingChat`` / ``OpenAIServingResponses``, the
``TemplateManager`` with ``--chat-template``, the ``TokenizerManager`` with its tokenizer,
request state and streaming (cumulative per step, SGLang's default).

:class:`ScriptedServer` builds one real ``TokenizerManager`` per chat template (about 15 s;
:func:`shared_server` keeps one server per model folder for the whole process) and publishes the
server arguments each request's parsers and options ask for (SGLang's serving code reads them
from the published arguments, not from the manager). The manager's event loop runs in a thread
of its own, so it installs no signal handler in the test process, and a request that gets no
answer fails after a timeout instead of hanging.

The model folder SGLang is given (:func:`write_model_dir`: a gpt_oss ``config.json`` and the
offline o200k tokenizer), the chat template the tests use (:data:`HARMONY_TEST_TEMPLATE`) and
:func:`chat_runner`, one chat request through it all, are here too: the SGLang tests
(``tests/sglang/conftest.py``'s fixtures) and the page generators (``pages/``, which import
nothing from the tests) share them.
"""

from __future__ import annotations

import asyncio
import atexit
import hashlib
import json
import os
import shutil
import tempfile
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from harmony_ext_testing.client import fold_chunks

T = TypeVar("T")

#: What the scheduler reports when the model stops at its end of sequence.
DEFAULT_FINISH: dict[str, Any] = {"type": "stop", "matched": None}


@dataclass(frozen=True)
class Output:
    """One step of the model's answer as the detokenizer hands it on: the text and ids it
    adds, the completion tokens so far, and the finish reason (``None`` until the last)."""

    text: str
    ids: Sequence[int]
    completion_tokens: int
    finish: dict[str, Any] | None


Replies = Callable[[Any, int], Sequence[Output]]
"""What the model answers a generation request (SGLang's ``TokenizedGenerateReqInput``), the
``n``-th of one run (from 0): its steps, the last with a finish reason."""


def text_replies(deltas: Sequence[str], finish: dict[str, Any] | None) -> Replies:
    """Every request answered with ``deltas`` (one step each), ``finish`` (or
    :data:`DEFAULT_FINISH`) on the last."""
    steps = list(deltas) or [""]

    def replies(request: Any, n: int) -> list[Output]:
        return [Output(text, (), i + 1, (finish or DEFAULT_FINISH) if i == len(steps) - 1
                       else None) for i, text in enumerate(steps)]

    return replies


def turns_replies(turns: Sequence[tuple[Sequence[str], dict[str, Any] | None]]) -> Replies:
    """The ``n``-th generation request of a run answered with the ``n``-th turn's deltas and
    finish (an agent's conversation: one request per turn); a request past the last fails the
    run."""

    def replies(request: Any, n: int) -> Sequence[Output]:
        assert n < len(turns), f"generation request {n + 1} of a run scripted for {len(turns)}"
        deltas, finish = turns[n]
        return text_replies(deltas, finish)(request, n)

    return replies


class ScriptedModel:
    """The scheduler's and the detokenizer's ends of a ``TokenizerManager``'s sockets.

    ``requests`` holds every generation request received, in order (``input_ids``: the prompt
    as SGLang tokenized it); other messages to the scheduler (an abort) are skipped.
    """

    def __init__(self, port_args: Any) -> None:
        import zmq
        import zmq.asyncio

        self._context = zmq.asyncio.Context()
        self._from_manager = self._context.socket(zmq.PULL)
        self._from_manager.connect(port_args.scheduler_input_ipc_name)
        self._to_manager = self._context.socket(zmq.PUSH)
        self._to_manager.connect(port_args.tokenizer_ipc_name)
        self.requests: list[Any] = []

    async def serve(self, replies: Replies) -> None:
        """Answer each generation request with ``replies`` until cancelled."""
        from sglang.srt.managers.io_struct import TokenizedGenerateReqInput, async_sock_recv

        n = 0
        while True:
            request = await async_sock_recv(self._from_manager)
            if not isinstance(request, TokenizedGenerateReqInput):
                continue
            self.requests.append(request)
            steps = list(replies(request, n))
            n += 1
            if not request.stream:  # the scheduler sends a whole answer once, at its end
                steps = [Output("".join(o.text for o in steps),
                                [i for o in steps for i in o.ids],
                                steps[-1].completion_tokens, steps[-1].finish)]
            for output in steps:
                await self._send(request, output)

    async def _send(self, request: Any, output: Output) -> None:
        import msgspec
        from sglang.srt.managers.io_struct import BatchStrOutput, async_sock_send

        known = {"rids": [request.rid], "finished_reasons": [output.finish],
                 "output_strs": [output.text], "output_ids": [list(output.ids)],
                 "prompt_tokens": [len(request.input_ids)],
                 "completion_tokens": [output.completion_tokens], "reasoning_tokens": [0],
                 "cached_tokens": [0], "retraction_counts": [0]}
        # The rest (logprobs, hidden states, ...) are absent: the requests ask for none.
        absent = {f.name: None for f in msgspec.structs.fields(BatchStrOutput)
                  if f.required and f.name not in known}
        await async_sock_send(self._to_manager, BatchStrOutput(**known, **absent))

    def close(self) -> None:
        self._context.destroy(linger=0)


@dataclass
class ChatResult:
    """What a client would see: the non-streamed message or the parsed SSE chunks; and what
    the model was asked (``requests``, ``prompts``)."""

    body: dict[str, Any]
    chunks: list[dict[str, Any]]
    requests: list[Any]

    @property
    def prompts(self) -> list[list[int]]:
        """The prompt ids of each generation request of this run (a list each; they cross the
        socket as arrays)."""
        return [list(r.input_ids) for r in self.requests]

    def joined(self) -> dict[str, Any]:
        """Stream deltas folded the way a client does (tool-call arguments concatenated),
        each call as ``{name, arguments}``."""
        got = fold_chunks(self.chunks)
        return {
            "reasoning": got["reasoning"] or "",
            "content": got["content"] or "",
            "tool_calls": [dict(c["function"]) for c in got["tool_calls"]],
            "finish_reason": got["finish_reason"],
        }


def raw_request(body: dict[str, Any]) -> Any:
    """A Starlette request holding ``body`` as JSON, as the HTTP server passes it along."""
    from starlette.requests import Request

    data = json.dumps(body).encode()

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": data, "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": [],
             "query_string": b""}
    return Request(scope, receive)


class Served:
    """One chat template's real ``TokenizerManager`` (``manager``), ``TemplateManager``
    (``templates``) and :class:`ScriptedModel` (``model``)."""

    def __init__(self, server: ScriptedServer, template: str) -> None:
        from sglang.srt.parser.template_manager import TemplateManager
        from sglang.srt.server_args import PortArgs

        name = hashlib.sha256(template.encode()).hexdigest()[:16]
        self.template_file = server.folder / f"chat-{name}.jinja"
        self.template_file.write_text(template)
        args = server.args_for(self.template_file)
        server.publish(args)
        self.ports = PortArgs.init_new(args)
        self.manager = server.call(self._build(args))
        self.templates = TemplateManager()
        self.templates.initialize_templates(tokenizer_manager=self.manager,
                                            model_path=args.model_path,
                                            chat_template=str(self.template_file))
        self.model = ScriptedModel(self.ports)

    async def _build(self, args: Any) -> Any:
        from sglang.srt.managers.tokenizer_manager import TokenizerManager

        return TokenizerManager(args, self.ports)  # in the loop: its asyncio parts belong there

    def close(self) -> None:
        close_sockets(self.model, self.manager, self.ports)


def close_sockets(model: ScriptedModel | None, manager: Any, ports: Any) -> None:
    """Close a manager's and its scripted model's sockets and remove the files PortArgs
    named for them."""
    if model is not None:
        model.close()
    if manager is not None:
        for socket in (manager.recv_from_detokenizer, manager.send_to_scheduler):
            socket.close(linger=0)
    for name, address in vars(ports).items():
        if name.endswith("ipc_name") and str(address).startswith("ipc://"):
            Path(address.removeprefix("ipc://")).unlink(missing_ok=True)


class ScriptedServer:
    """SGLang's serving for ``model_dir`` (a gpt_oss folder with the o200k tokenizer), real
    but for the model. ``manager_args``: server arguments the managers are built with
    (``enable_metrics``). :meth:`serve` runs one client exchange; :meth:`chat` sends one chat
    request; :meth:`close` stops the loop and removes the template and socket files."""

    timeout_s = 120.0

    def __init__(self, model_dir: Path, **manager_args: Any) -> None:
        self.model_dir = Path(model_dir)
        self.manager_args = manager_args
        self.folder = Path(tempfile.mkdtemp(prefix="sglang-templates-"))
        self._args: dict[tuple[Any, ...], Any] = {}
        self._served: dict[str, Served] = {}
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="sglang-tokenizer",
                                        daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` in the managers' loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(self.timeout_s)

    def args_for(self, template_file: Path, tool_parser: str | None = None,
                 reasoning_parser: str | None = None, **server_args: Any) -> Any:
        """The ``ServerArgs`` of a server started with these options (made once each)."""
        from sglang.srt.server_args import ServerArgs

        options = {**self.manager_args, **server_args}
        key = (template_file, tool_parser, reasoning_parser, tuple(sorted(options.items())))
        if key not in self._args:
            self._args[key] = ServerArgs(model_path=str(self.model_dir),
                                         tool_call_parser=tool_parser,
                                         reasoning_parser=reasoning_parser, device="cpu",
                                         served_model_name="gpt-oss",  # what requests name
                                         chat_template=str(template_file), **options)
        return self._args[key]

    @staticmethod
    def publish(args: Any) -> None:
        """SGLang's serving code reads process-wide config: publish the arguments in use."""
        from sglang.srt.runtime_context import publish

        publish(args, role="tokenizer")

    def served(self, template: str) -> Served:
        if template not in self._served:
            self._served[template] = Served(self, template)
        return self._served[template]

    def serve(self, served: Served, replies: Replies,
              client: Callable[[], Awaitable[T]]) -> tuple[T, list[Any]]:
        """Run ``client()`` (the API side of one request) while the model answers with
        ``replies``; returns its result and the generation requests the model got."""
        first = len(served.model.requests)

        async def go() -> T:
            model = asyncio.ensure_future(served.model.serve(replies))
            try:
                return await client()
            finally:
                if model.done() and model.exception() is not None:
                    raise model.exception()  # type: ignore[misc]
                model.cancel()

        result = self.call(go())
        return result, served.model.requests[first:]

    def chat(self, deltas: Sequence[str], *, stream: bool, template: str,
             tool_parser: str | None, reasoning_parser: str | None,
             finish: dict[str, Any] | None = None, send_raw: bool = False,
             body: dict[str, Any]) -> ChatResult:
        """Send ``body`` (with ``stream``) to ``OpenAIServingChat``; the model answers
        ``deltas``. ``send_raw``: the raw HTTP request too, as the server has it."""
        from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
        from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat

        served = self.served(template)
        self.publish(self.args_for(served.template_file, tool_parser, reasoning_parser))
        chat = OpenAIServingChat(served.manager, served.templates)
        body = {**body, "stream": stream}

        async def client() -> tuple[dict[str, Any], list[dict[str, Any]]]:
            raw = raw_request(body) if send_raw else None  # what FastAPI hands the server
            response = await chat.handle_request(ChatCompletionRequest(**body), raw)
            if not stream:
                return (response.model_dump() if hasattr(response, "model_dump")
                        else json.loads(response.body)), []
            chunks = []
            async for line in response.body_iterator:
                for part in line.split("\n"):
                    if part.startswith("data: ") and part != "data: [DONE]":
                        chunks.append(json.loads(part[len("data: "):]))
            return {}, chunks

        (data, chunks), requests = self.serve(served, text_replies(deltas, finish), client)
        return ChatResult(data, chunks, requests)

    def over_http(self, replies: Replies, client: Callable[[Any], Awaitable[T]], *,
                  tool_parser: str | None, reasoning_parser: str | None,
                  template: str | None = None) -> tuple[T, list[Any]]:
        """Run ``client(http)`` against SGLang's own HTTP app
        (``sglang.srt.entrypoints.http_server.app``: its routes, request models and middleware)
        serving this manager, ``http`` an ``httpx.AsyncClient`` on an ASGI transport (no
        socket); returns its result and the generation requests the model got. The app's
        lifespan (warm-up, the other serving classes) is not run: the chat serving it would
        build (and the Messages API's over it) and the global state ``/generate`` reads are set
        for the run, then put back."""
        import httpx
        from sglang.srt.entrypoints import http_server
        from sglang.srt.entrypoints.anthropic.serving import AnthropicServing
        from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat

        served = self.served(template or HARMONY_TEST_TEMPLATE)
        self.publish(self.args_for(served.template_file, tool_parser, reasoning_parser))
        app = http_server.app

        async def go() -> T:
            state = http_server.get_global_state()
            kept = {k: getattr(app.state, k, None)
                    for k in ("openai_serving_chat", "anthropic_serving")}
            http_server.set_global_state(
                http_server._GlobalState(served.manager, served.templates, {}))
            chat = app.state.openai_serving_chat = OpenAIServingChat(served.manager,
                                                                     served.templates)
            app.state.anthropic_serving = AnthropicServing(chat)  # /v1/messages
            try:
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                             base_url="http://sglang") as http:
                    return await client(http)
            finally:
                http_server.set_global_state(state)
                for key, value in kept.items():
                    setattr(app.state, key, value)

        return self.serve(served, replies, go)

    def close(self) -> None:
        if self._thread.is_alive():
            self.call(self._stop_tasks())
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(10)
        shutil.rmtree(self.folder, ignore_errors=True)

    async def _stop_tasks(self) -> None:
        """In the loop: cancel the managers' tasks (their pending receives), then close."""
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for served in self._served.values():
            served.close()
        self._served.clear()


def engine_generate(model_dir: Path, replies: Replies, *, tool_parser: str | None,
                    reasoning_parser: str | None, **generate: Any) -> tuple[Any, list[Any]]:
    """SGLang's offline ``Engine.generate`` (its own method, as an RL framework calls it) with
    ``generate`` as its arguments, the model answering ``replies``; returns what it returned
    and the generation requests the model got.

    The ``Engine`` is made without its ``__init__``, which would start the scheduler and
    detokenizer processes (a model): its server arguments, a real ``TokenizerManager`` and the
    event loop ``generate`` runs are set as ``__init__`` sets them, the manager's sockets
    answered by :class:`ScriptedModel`. It all runs in a thread of its own, whose event loop
    ``generate`` drives (the manager installs signal handlers only in the main thread), and
    is torn down after (tasks cancelled, sockets closed, their files removed)."""
    box: dict[str, Any] = {}

    def run() -> None:
        from sglang.srt.entrypoints.engine import Engine
        from sglang.srt.managers.tokenizer_manager import TokenizerManager
        from sglang.srt.server_args import PortArgs, ServerArgs

        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        args = ServerArgs(model_path=str(model_dir), tool_call_parser=tool_parser,
                          reasoning_parser=reasoning_parser, device="cpu")
        ScriptedServer.publish(args)
        ports = PortArgs.init_new(args)
        manager = model = None
        try:
            async def build() -> Any:
                return TokenizerManager(args, ports)

            manager = loop.run_until_complete(build())
            model = ScriptedModel(ports)
            engine = Engine.__new__(Engine)
            engine.server_args, engine.tokenizer_manager, engine.loop = args, manager, loop
            loop.create_task(model.serve(replies))
            box["answer"] = engine.generate(**generate)
            box["requests"] = list(model.requests)
        except BaseException as e:  # raised again in the caller's thread
            box["error"] = e
        finally:
            tasks = asyncio.all_tasks(loop)
            for task in tasks:
                task.cancel()
            loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
            close_sockets(model, manager, ports)
            loop.close()

    thread = threading.Thread(target=run, name="sglang-engine", daemon=True)
    thread.start()
    thread.join(ScriptedServer.timeout_s)
    assert not thread.is_alive(), "Engine.generate got no answer"
    if "error" in box:
        raise box["error"]
    return box["answer"], box["requests"]


_SHARED: dict[tuple[Path, tuple[Any, ...]], ScriptedServer] = {}


def shared_server(model_dir: Path, **manager_args: Any) -> ScriptedServer:
    """This process's :class:`ScriptedServer` for ``model_dir`` and ``manager_args``, made on
    first use and closed at exit (its managers take seconds to build)."""
    key = (Path(model_dir), tuple(sorted(manager_args.items())))
    if key not in _SHARED:
        server = ScriptedServer(Path(model_dir), **manager_args)
        atexit.register(server.close)
        _SHARED[key] = server
    return _SHARED[key]


# A Harmony-shaped prompt ending in "<|start|>assistant", like gpt-oss's template, written here
# and given to SGLang as ``--chat-template`` (the real template ships with the model's weights,
# not on PyPI; only the prompt's last tokens matter to parsing).
HARMONY_TEST_TEMPLATE = (
    "{%- for m in messages -%}"
    "<|start|>{{ m['role'] }}<|message|>{{ m['content'] if m['content'] is string else '' }}"
    "<|end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)

# Just enough config for SGLang's ModelConfig to say "gpt_oss"; no weights are ever loaded.
TINY_GPT_OSS_CONFIG: dict[str, Any] = {
    "model_type": "gpt_oss",
    "architectures": ["GptOssForCausalLM"],
    "vocab_size": 201088,
    "hidden_size": 64,
    "intermediate_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "bos_token_id": 199998,
    "eos_token_id": 200002,
    "pad_token_id": 199999,
}


def write_model_dir(model: Path, hf_dir: Path) -> Path:
    """Make ``model`` a folder SGLang accepts: gpt_oss config.json plus the offline o200k
    tokenizer of ``hf_dir`` (the SGLang tests' fixture and the page generators)."""
    for item in hf_dir.iterdir():
        os.symlink(item, model / item.name)
    (model / "config.json").write_text(json.dumps(TINY_GPT_OSS_CONFIG, indent=2) + "\n")
    return model


RunChat = Callable[..., ChatResult]


def chat_runner(gpt_oss_model_dir: Path) -> RunChat:
    """Returns ``run(deltas, *, stream, tools=None, messages=None, tool_parser, reasoning_parser,
    chat_template, send_raw)`` (``send_raw``: the raw HTTP request too, as the server has it).

    SGLang's real ``OpenAIServingChat`` and ``TokenizerManager`` (one per chat template, about
    15 s, shared by the process: :func:`shared_server`); only the model is scripted.
    """
    server = shared_server(gpt_oss_model_dir)

    def run(
        deltas: Sequence[str],
        *,
        stream: bool,
        tools: list[dict[str, Any]] | None = None,
        messages: list[dict[str, Any]] | None = None,
        finish: dict[str, Any] | None = None,
        tool_parser: str | None = "gpt-oss",
        reasoning_parser: str | None = "gpt-oss",
        chat_template: str = HARMONY_TEST_TEMPLATE,
        send_raw: bool = False,
        **request: Any,
    ) -> ChatResult:
        body: dict[str, Any] = {
            "model": "gpt-oss",
            "messages": messages or [{"role": "user", "content": "What is the weather?"}],
            **request,
        }
        if tools is not None:
            body["tools"] = tools
        return server.chat(deltas, stream=stream, template=chat_template,
                           tool_parser=tool_parser, reasoning_parser=reasoning_parser,
                           finish=finish, send_raw=send_raw, body=body)

    return run
