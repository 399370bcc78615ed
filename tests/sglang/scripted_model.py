"""SGLang's chat serving, real down to the TokenizerManager's sockets; only the model scripted.

In an SGLang server the API process's ``TokenizerManager`` sends each tokenized request to the
scheduler over ZMQ and receives the detokenizer's ``BatchStrOutput`` back. :class:`ScriptedModel`
is the other end of those two sockets: it receives the real ``TokenizedGenerateReqInput`` (the
prompt ids the model would see) and answers with scripted text, one ``BatchStrOutput`` per
streaming step, through SGLang's own ``async_sock_send`` / ``async_sock_recv`` (its wire
format). From the request to the socket everything is SGLang's: ``OpenAIServingChat``, the
``TemplateManager`` with ``--chat-template``, the ``TokenizerManager`` with its tokenizer,
request state and streaming (cumulative text per step, SGLang's default).

:class:`ChatServer` builds one real ``TokenizerManager`` per chat template (about 15 s) and
publishes the server arguments of the parser pair each request asks for (SGLang's serving code
reads the parsers from the published arguments). The manager's event loop runs in a thread of
its own, so it installs no signal handler in the test process, and a request that gets no
answer fails after a timeout instead of hanging.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.data import fold_chunks

T = TypeVar("T")

#: What the scheduler reports when the model stops at its end of sequence.
DEFAULT_FINISH: dict[str, Any] = {"type": "stop", "matched": None}


class ScriptedModel:
    """The scheduler's and the detokenizer's ends of a ``TokenizerManager``'s sockets.

    ``requests`` holds every generation request received, in order (``input_ids`` is the
    prompt as SGLang tokenized it); other messages to the scheduler (an abort) are skipped.
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

    async def answer(self, deltas: Sequence[str], finish: dict[str, Any] | None) -> None:
        """Wait for the next generation request, then send ``deltas`` as the detokenizer
        would, one step each, ``finish`` (or :data:`DEFAULT_FINISH`) on the last."""
        from sglang.srt.managers.io_struct import TokenizedGenerateReqInput, async_sock_recv

        while True:
            request = await async_sock_recv(self._from_manager)
            if isinstance(request, TokenizedGenerateReqInput):
                break
        self.requests.append(request)
        steps = list(deltas) or [""]
        for i, text in enumerate(steps):
            last = i == len(steps) - 1
            await self._send(request, text, i + 1, (finish or DEFAULT_FINISH) if last else None)

    async def _send(self, request: Any, text: str, step: int,
                    finish: dict[str, Any] | None) -> None:
        import msgspec
        from sglang.srt.managers.io_struct import BatchStrOutput, async_sock_send

        known = {"rids": [request.rid], "finished_reasons": [finish], "output_strs": [text],
                 "output_ids": [[]], "prompt_tokens": [len(request.input_ids)],
                 "completion_tokens": [step], "reasoning_tokens": [0], "cached_tokens": [0],
                 "retraction_counts": [0]}
        # The rest (logprobs, hidden states, ...) are absent: the requests ask for none.
        absent = {f.name: None for f in msgspec.structs.fields(BatchStrOutput)
                  if f.required and f.name not in known}
        await async_sock_send(self._to_manager, BatchStrOutput(**known, **absent))

    def close(self) -> None:
        self._context.destroy(linger=0)


@dataclass
class ChatResult:
    """What a client would see: the non-streamed message or the parsed SSE chunks; and the
    model's side (``model.requests``)."""

    body: dict[str, Any]
    chunks: list[dict[str, Any]]
    model: ScriptedModel
    first_request: int

    @property
    def requests(self) -> list[Any]:
        """The generation requests this run sent the model."""
        return self.model.requests[self.first_request:]

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


class _Served:
    """One chat template's real ``TokenizerManager``, ``TemplateManager`` and model."""

    def __init__(self, server: ChatServer, template: str) -> None:
        from sglang.srt.parser.template_manager import TemplateManager
        from sglang.srt.server_args import PortArgs

        name = hashlib.sha256(template.encode()).hexdigest()[:16]
        self.template_file = server.folder / f"chat-{name}.jinja"
        self.template_file.write_text(template)
        args = server.args_for(None, None, self.template_file)
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
        self.model.close()
        for socket in (self.manager.recv_from_detokenizer, self.manager.send_to_scheduler):
            socket.close(linger=0)
        for name, address in vars(self.ports).items():  # the files PortArgs named
            if name.endswith("ipc_name") and str(address).startswith("ipc://"):
                Path(address.removeprefix("ipc://")).unlink(missing_ok=True)


class ChatServer:
    """SGLang's chat serving for ``model_dir`` (a gpt_oss folder with the o200k tokenizer),
    real but for the model; ``folder`` holds the chat template files. :meth:`run` sends one
    request; :meth:`close` stops the loop and removes the sockets' files."""

    timeout_s = 120.0

    def __init__(self, model_dir: Path, folder: Path, **server_args: Any) -> None:
        self.model_dir = model_dir
        self.folder = folder
        self.server_args = server_args
        self._args: dict[tuple[Any, ...], Any] = {}
        self._served: dict[str, _Served] = {}
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="sglang-tokenizer",
                                        daemon=True)
        self._thread.start()

    def call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` in the manager's loop and return its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(self.timeout_s)

    def args_for(self, tool_parser: str | None, reasoning_parser: str | None,
                 template_file: Path) -> Any:
        from sglang.srt.server_args import ServerArgs

        key = (tool_parser, reasoning_parser, template_file)
        if key not in self._args:
            self._args[key] = ServerArgs(model_path=str(self.model_dir),
                                         tool_call_parser=tool_parser,
                                         reasoning_parser=reasoning_parser, device="cpu",
                                         chat_template=str(template_file), **self.server_args)
        return self._args[key]

    @staticmethod
    def publish(args: Any) -> None:
        """SGLang's serving code reads process-wide config: publish the arguments in use."""
        from sglang.srt.runtime_context import publish

        publish(args, role="tokenizer")

    def run(self, deltas: Sequence[str], *, stream: bool, template: str,
            tool_parser: str | None, reasoning_parser: str | None,
            finish: dict[str, Any] | None = None, send_raw: bool = False,
            body: dict[str, Any]) -> ChatResult:
        """Send ``body`` (with ``stream``) to ``OpenAIServingChat``; the model answers
        ``deltas``. ``send_raw``: the raw HTTP request too, as the server has it."""
        from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
        from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat

        if template not in self._served:
            self._served[template] = _Served(self, template)
        served = self._served[template]
        self.publish(self.args_for(tool_parser, reasoning_parser, served.template_file))
        chat = OpenAIServingChat(served.manager, served.templates)
        body = {**body, "stream": stream}
        first = len(served.model.requests)

        async def go() -> ChatResult:
            model = asyncio.ensure_future(served.model.answer(deltas, finish))
            try:
                raw = raw_request(body) if send_raw else None  # what FastAPI hands the server
                response = await chat.handle_request(ChatCompletionRequest(**body), raw)
                chunks: list[dict[str, Any]] = []
                if not stream:
                    data = (response.model_dump() if hasattr(response, "model_dump")
                            else json.loads(response.body))
                    return ChatResult(data, chunks, served.model, first)
                async for line in response.body_iterator:
                    for part in line.split("\n"):
                        if part.startswith("data: ") and part != "data: [DONE]":
                            chunks.append(json.loads(part[len("data: "):]))
                return ChatResult({}, chunks, served.model, first)
            finally:
                if not model.done():  # SGLang answered without asking the model
                    model.cancel()
                elif model.exception() is not None:
                    raise model.exception()  # type: ignore[misc]

        return self.call(go())

    def close(self) -> None:
        for served in self._served.values():
            served.close()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
