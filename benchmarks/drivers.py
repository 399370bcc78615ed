"""One driver per parser implementation, each driven the way its server drives it.

A fresh per-request parser, one call per delta, the end-of-stream call on the last one. What
a call returns is built (that is part of the cost) and dropped by ``run``; ``collect`` reads it
instead, untimed, for the cross-check. The engine drivers use the engines' real classes, built
as their chat servers build them; an engine that is not installed raises ``Skip``, and our
adapter failing to register is an error, never a skip.
"""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common import message, version


class Skip(Exception):
    """The implementation cannot run here (its engine is not installed)."""


def id_deltas(ids: list[int], size: int) -> list[list[int]]:
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def text_deltas(pieces: list[str], size: int) -> list[str]:
    """What SGLang's detokenizer hands over for the same steps: the text each step completed,
    with the matched stop ``<|return|>`` trimmed as ``DetokenizerManager`` trims it (the step
    that produced it is still delivered, empty, carrying the finish)."""
    pieces = pieces[:-1] + [""] if pieces and pieces[-1] == "<|return|>" else pieces
    return ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]


class Driver:
    name = ""
    mode = "ids"  # what it is fed: "ids", "text", or "both" (vLLM hands over both)

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.versions: dict[str, str] = {}

    def prepare(self, stream: dict[str, Any], size: int) -> list[Any]:
        ids = id_deltas(stream["ids"], size)
        if self.mode == "ids":
            return ids
        if self.mode == "text":
            return text_deltas(stream["pieces"], size)
        pieces = stream["pieces"]
        return list(zip(["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)],
                        ids, strict=True))

    def run(self, deltas: list[Any]) -> None:
        raise NotImplementedError

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        raise NotImplementedError


class CoreDriver(Driver):
    """harmony_plugins.Turn, the facade every adapter uses: ``feed_ids`` or ``feed_text``,
    the step's parts (no events: the chat stream's turn); the last delta closes it."""

    def __init__(self, tools: list[dict[str, Any]], mode: str) -> None:
        super().__init__(tools)
        from harmony_plugins import Request, Turn, Vocab

        Vocab.o200k_harmony()  # once per process, as an adapter does at start-up
        self.Turn, self.Request = Turn, Request
        self.mode, self.name = mode, f"core-{mode}"
        self.versions = {"harmony-ext": version("harmony-ext")}

    def _feeds(self) -> Any:
        turn = self.Turn(self.Request(self.tools))
        return turn.feed_ids if self.mode == "ids" else turn.feed_text

    def run(self, deltas: list[Any]) -> None:
        # As an adapter feeds a stream: the turn's feed looked up per step (it is the front
        # end's own once the first feed opened the fast path), the last step closing it.
        turn = self.Turn(self.Request(self.tools))
        if self.mode == "ids":
            for delta in deltas[:-1]:
                turn.feed_ids(delta)
            turn.feed_ids(deltas[-1], "stop")
        else:
            for delta in deltas[:-1]:
                turn.feed_text(delta)
            turn.feed_text(deltas[-1], "stop")

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        from harmony_plugins import ChatResult

        feed, last, result = self._feeds(), len(deltas) - 1, ChatResult()
        for i, delta in enumerate(deltas):
            result.add(feed(delta, "stop" if i == last else None))
        got = result.message()
        return message([got["reasoning"] or ""], [got["content"] or ""],
                       [[c["function"]["name"], c["function"]["arguments"]]
                        for c in got["tool_calls"]])


class OpenAIHarmonyDriver(Driver):
    """openai_harmony.StreamableParser, token by token; after each token it is asked what a
    server needs (content delta, channel, recipient): it has no batch call."""

    name = "openai_harmony"

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        super().__init__(tools)
        try:
            import openai_harmony as oh
        except ImportError as e:
            raise Skip(f"not installed ({e})") from e
        self.oh = oh
        self.encoding = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
        got = version("openai-harmony")
        self.versions = {"openai_harmony": got if got != "not installed"
                         else "oss-harmony " + version("oss-harmony")}

    def run(self, deltas: list[Any]) -> None:
        parser = self.oh.StreamableParser(self.encoding, role=self.oh.Role.ASSISTANT)
        process = parser.process
        for delta in deltas:
            for token in delta:
                process(token)
                parser.last_content_delta  # noqa: B018 - what a server reads per token
                parser.current_channel  # noqa: B018
                parser.current_recipient  # noqa: B018
        parser.process_eos()

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        parser = self.oh.StreamableParser(self.encoding, role=self.oh.Role.ASSISTANT)
        for token in (t for d in deltas for t in d):
            parser.process(token)
        parser.process_eos()
        reasoning, content, calls = [], [], []
        for msg in parser.messages:
            text = "".join(getattr(c, "text", "") for c in msg.content)
            if msg.recipient and msg.recipient.startswith("functions."):
                calls.append([msg.recipient.removeprefix("functions."), text])
            elif msg.channel == "analysis":
                reasoning.append(text)
            elif msg.channel == "final":
                content.append(text)
        return message(reasoning, content, calls)


def hf_tokenizer() -> tuple[Any, Path]:
    """gpt-oss's tokenizer as a transformers tokenizer, built offline, and its folder."""
    from transformers import AutoTokenizer

    from harmony_ext_testing.hf_tokenizer import write_hf_tokenizer

    folder = Path(tempfile.mkdtemp(prefix="bench-tok-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    write_hf_tokenizer(folder)
    return AutoTokenizer.from_pretrained(str(folder)), folder


class VllmDriver(Driver):
    """vLLM's Harmony parser as its chat server builds it (``ParserManager.get_parser``),
    ``parse_delta`` once per engine step with a real ``ChatCompletionRequest`` with tools.
    Built-in: ``--tool-call-parser openai --reasoning-parser openai_gptoss``; ours: the names
    ``harmony-ext`` after ``vllm_ext.plugin.register()``."""

    mode = "both"

    def __init__(self, tools: list[dict[str, Any]], ours: bool) -> None:
        super().__init__(tools)
        self.name = "vllm-ext" if ours else "vllm-builtin"
        try:
            import vllm
            from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
            from vllm.parser.parser_manager import ParserManager
        except ImportError as e:
            raise Skip(f"not installed ({e})") from e
        names = ("harmony-ext", "harmony-ext") if ours else ("openai", "openai_gptoss")
        if ours:
            from vllm_ext import plugin
            from vllm_ext.harmony_parser import HarmonyExtParser

            plugin.register()
        self.tokenizer, _ = hf_tokenizer()
        self.cls = ParserManager.get_parser(
            tool_parser_name=names[0], reasoning_parser_name=names[1], enable_auto_tools=True,
            model_name="gpt-oss", is_harmony=True, tokenizer=self.tokenizer)
        if ours and not issubclass(self.cls, HarmonyExtParser):
            raise RuntimeError(f"harmony-ext did not register: vLLM built {self.cls.__name__}")
        self.request = ChatCompletionRequest(
            model="gpt-oss", messages=[{"role": "user", "content": "Go."}], tools=tools,
            stream=True)
        self.versions = {"vllm": vllm.__version__}

    def _parser(self) -> Any:  # as OpenAIServingChat._make_parser builds it
        return self.cls(self.tokenizer, self.request.tools, chat_template_kwargs={},
                        model_config=None)

    def run(self, deltas: list[Any]) -> None:
        parse_delta, request, last = self._parser().parse_delta, self.request, len(deltas) - 1
        for i, (text, ids) in enumerate(deltas):
            parse_delta(text, ids, request, None, finished=i == last)

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        parser, last = self._parser(), len(deltas) - 1
        reasoning, content, calls = [], [], {}
        for i, (text, ids) in enumerate(deltas):
            delta = parser.parse_delta(text, ids, self.request, None, finished=i == last)
            if delta is None:
                continue
            reasoning.append(delta.reasoning or "")
            content.append(delta.content or "")
            for call in delta.tool_calls or []:
                slot = calls.setdefault(call.index, ["", ""])
                if call.function and call.function.name:
                    slot[0] = call.function.name
                slot[1] += (call.function.arguments or "") if call.function else ""
        return message(reasoning, content, [calls[i] for i in sorted(calls)])


SGLANG_CONFIG = {  # a gpt-oss config.json next to the tokenizer: SGLang reads the model type
    "model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "vocab_size": 201088,
    "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "num_local_experts": 4, "num_experts_per_tok": 2, "bos_token_id": 199998,
    "eos_token_id": 200002, "pad_token_id": 199999,
}


class SglangDriver(Driver):
    """SGLang's text parsers chained as ``OpenAIServingChat`` chains them: per choice a
    ``ReasoningParser`` and a ``FunctionCallParser``; per delta the reasoning parser first,
    its normal text to the tool parser, ``parse_stream_end`` on both at the last delta. The
    server's configuration is published first, as in the tokenizer process. Built-in:
    ``gpt-oss`` for both; ours: ``harmony-ext`` after SGLang's plugin loader ran."""

    mode = "text"

    def __init__(self, tools: list[dict[str, Any]], ours: bool) -> None:
        super().__init__(tools)
        self.name = "sglang-ext" if ours else "sglang-builtin"
        try:
            import sglang
            from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
            from sglang.srt.function_call.function_call_parser import FunctionCallParser
            from sglang.srt.parser.reasoning_parser import ReasoningParser
            from sglang.srt.parser.response_template import grammar_holds_calls
            from sglang.srt.runtime_context import publish
            from sglang.srt.server_args import ServerArgs
        except ImportError as e:
            raise Skip(f"not installed ({e})") from e
        self.parser = "harmony-ext" if ours else "gpt-oss"
        if ours:
            from sglang.srt.plugins import load_plugins

            from sglang_ext import plugin

            load_plugins()  # as every SGLang process does
            plugin.ensure_loaded()
            if self.parser not in FunctionCallParser.ToolCallParserEnum:
                raise RuntimeError("harmony-ext did not register in SGLang")
        self.tokenizer, folder = hf_tokenizer()
        (folder / "config.json").write_text(json.dumps(SGLANG_CONFIG))
        self.args = ServerArgs(model_path=str(folder), tool_call_parser=self.parser,
                               reasoning_parser=self.parser, device="cpu")
        self.publish = publish
        self.ReasoningParser, self.FunctionCallParser = ReasoningParser, FunctionCallParser
        self.request = ChatCompletionRequest(
            model="gpt-oss", messages=[{"role": "user", "content": "Go."}], tools=tools,
            stream=True)
        self.constrained = grammar_holds_calls(self.request._response_parser_tool_grammar,
                                               self.request._response_parser_grammar_start)
        self.versions = {"sglang": sglang.__version__}

    def prepare(self, stream: dict[str, Any], size: int) -> list[Any]:
        """Also publish this driver's server configuration (untimed): the parsers read it, and
        the other SGLang driver in this process publishes its own."""
        self.publish(self.args, role="tokenizer")
        return super().prepare(stream, size)

    def _parsers(self) -> tuple[Any, Any]:
        request = self.request  # as _process_reasoning_stream / _process_tool_call_stream
        rp = self.ReasoningParser(self.parser, request.stream_reasoning, True, request,
                                  tokenizer=self.tokenizer, tool_call_parser_active=True)
        fp = self.FunctionCallParser(tools=list(request.tools or []),
                                     tool_call_parser=self.parser, tokenizer=self.tokenizer,
                                     prefix=request._response_parser_prefix,
                                     constrained=self.constrained)
        return rp, fp

    def _steps(self, deltas: list[str]) -> Any:
        """Per delta: (reasoning text, normal text, tool-call items)."""
        rp, fp = self._parsers()
        last = len(deltas) - 1
        for i, delta in enumerate(deltas):
            reasoning, normal = rp.parse_stream_chunk(delta)
            if i == last:
                end_reasoning, end_normal = rp.parse_stream_end()
                reasoning = (reasoning or "") + (end_reasoning or "")
                normal = (normal or "") + (end_normal or "")
            text, items = fp.parse_stream_chunk(normal)
            if i == last:
                end_text, end_items = fp.parse_stream_end()
                text, items = (text or "") + end_text, list(items) + end_items
            yield reasoning, text, items

    def run(self, deltas: list[Any]) -> None:
        for _ in self._steps(deltas):
            pass

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        reasoning, content, calls = [], [], {}
        for reasoning_text, text, items in self._steps(deltas):
            reasoning.append(reasoning_text or "")
            content.append(str(text or ""))
            for item in items:
                slot = calls.setdefault(item.tool_index, ["", ""])
                slot[0] = item.name or slot[0]
                slot[1] += item.parameters or ""
        return message(reasoning, content, [calls[i] for i in sorted(calls)])
