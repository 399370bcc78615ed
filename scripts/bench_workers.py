"""Benchmark workers: one Harmony parser implementation, timed in the venv that has its engine.

``scripts/bench.py`` (the orchestrator, run with ``.venv``) writes the token streams and a plan
to files and runs this module once per implementation with the right interpreter; it prints
ONE JSON object on stdout (logs go to stderr). vLLM and SGLang cannot share a venv, which is
why every implementation is measured in its own process, on the same streams.

    python scripts/bench_workers.py IMPL --streams FILE --plan FILE

Implementations (``IMPLS``): ``core-ids``, ``core-text``, ``openai_harmony``, ``vllm-builtin``,
``vllm-ext``, ``sglang-builtin``, ``sglang-ext``, and ``sglang-floor`` (SGLang's chain with
detectors that parse nothing: the least any parser can cost there). Each is driven the way its
server drives it, one request at a time: a fresh per-request parser, one call per delta, the
end-of-stream call on the last delta. What the call returns is built (that is part of the cost)
and dropped; :func:`Driver.collect` reads it instead, untimed, for the correctness cross-check.
Times are CPU time of this thread (``time.thread_time``), so that other processes on a shared
machine do not count; the interpreter's garbage collector stays on.

An implementation whose engine is not importable answers ``{"status": "skipped", ...}``.
Cells that would exceed the plan's per-cell budget are estimated from the smaller lengths
(per-token cost extrapolated on a log-log line) and reported as skipped with the estimate;
a cell that still overruns is stopped by an alarm and reported as such.

This file imports nothing from the engines at module level, and nothing from ``bench.py``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import os
import platform
import signal
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the checkout's packages, whatever the interpreter
    sys.path.insert(0, str(ROOT))

RETURN = "<|return|>"
CALL = "<|call|>"


def log(*args: Any) -> None:
    print(*args, file=sys.stderr, flush=True)


class Skip(Exception):
    """The implementation cannot run here (engine not installed, adapter missing)."""


class CellTimeout(Exception):
    """A cell ran past its hard limit."""


# -- inputs ------------------------------------------------------------------------------------


def id_deltas(ids: list[int], size: int) -> list[list[int]]:
    """The engine's deltas: ``size`` token ids each, in order."""
    return [ids[i : i + size] for i in range(0, len(ids), size)]


def text_deltas(pieces: list[str], size: int) -> list[str]:
    """SGLang's detokenizer output for the same steps: each delta the text its tokens
    completed (``pieces`` already hold back a character cut between tokens), with special
    tokens spelled literally, and the matched stop ``<|return|>`` trimmed from the end as
    ``DetokenizerManager.trim_matched_stop`` does (``<|call|>`` is kept for Harmony parsers).
    The step that produced the stop is still delivered (empty), carrying the finish."""
    pieces = list(pieces)
    if pieces and pieces[-1] == RETURN:
        pieces[-1] = ""
    return ["".join(pieces[i : i + size]) for i in range(0, len(pieces), size)]


def normalize_args(text: str) -> str:
    """Arguments compared as JSON values where they are JSON (some parsers re-serialise)."""
    try:
        return json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        return text


def message(reasoning: list[str], content: list[str], calls: list[list[str]]) -> dict[str, Any]:
    return {
        "reasoning": "".join(reasoning) or None,
        "content": "".join(content) or None,
        "calls": [[name, normalize_args(args)] for name, args in calls],
    }


# -- drivers -------------------------------------------------------------------------------------


class Driver:
    """One implementation. ``prepare`` builds a stream's deltas (untimed); ``request`` is one
    request, a generator that feeds one delta per ``next``; ``collect`` returns the message."""

    name = ""
    mode = "ids"  # the input it takes: "ids", "text" or "both"

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.versions: dict[str, str] = {}

    def prepare(self, stream: dict[str, Any], size: int) -> list[Any]:
        if self.mode == "ids":
            return id_deltas(stream["ids"], size)
        if self.mode == "text":
            return text_deltas(stream["pieces"], size)
        ids = id_deltas(stream["ids"], size)
        text = ["".join(stream["pieces"][i : i + size])
                for i in range(0, len(stream["pieces"]), size)]
        return list(zip(text, ids, strict=True))

    def request(self, deltas: list[Any]) -> Iterator[None]:
        raise NotImplementedError

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        raise NotImplementedError


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "not installed"


def _ours() -> str:
    """Which harmony-ext this process imports (bench.py runs a snapshot of HEAD by default)."""
    import harmony_plugins

    where = Path(harmony_plugins.__file__).resolve().parents[1]
    return f"{_version('harmony-ext')} from {os.environ.get('BENCH_SOURCE', where)}"


class CoreDriver(Driver):
    """harmony_plugins.StreamParser: ``feed_ids`` (core-ids) or ``feed_text`` (core-text)."""

    def __init__(self, tools: list[dict[str, Any]], mode: str) -> None:
        super().__init__(tools)
        from harmony_plugins import StreamParser, Vocab

        Vocab.o200k_harmony()  # once per process, as an adapter does at start-up
        self.StreamParser = StreamParser
        self.mode = mode
        self.name = f"core-{mode}"
        self.versions = {"harmony-ext": _ours()}

    def request(self, deltas: list[Any]) -> Iterator[None]:
        parser = self.StreamParser(self.tools)
        feed = parser.feed_ids if self.mode == "ids" else parser.feed_text
        for delta in deltas:
            feed(delta)
            yield
        parser.close()

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        from harmony_plugins import ChatResult

        parser = self.StreamParser(self.tools)
        feed = parser.feed_ids if self.mode == "ids" else parser.feed_text
        result = ChatResult()
        for delta in deltas:
            result.add(feed(delta))
        result.add(parser.close())
        got = result.message()
        return message([got["reasoning"] or ""], [got["content"] or ""],
                       [[c["function"]["name"], c["function"]["arguments"]]
                        for c in got["tool_calls"]])


class OpenAIHarmonyDriver(Driver):
    """openai_harmony.StreamableParser fed token by token; after each token it is asked what
    a server needs: the content delta, the channel and the recipient (it has no batch call)."""

    name = "openai_harmony"

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        super().__init__(tools)
        try:
            import openai_harmony as oh
        except ImportError as e:
            raise Skip(f"not installed ({e})") from e
        self.oh = oh
        self.encoding = oh.load_harmony_encoding(oh.HarmonyEncodingName.HARMONY_GPT_OSS)
        self.versions = {"openai_harmony": _version("openai-harmony")
                         if _version("openai-harmony") != "not installed"
                         else "oss-harmony " + _version("oss-harmony")}

    def request(self, deltas: list[Any]) -> Iterator[None]:
        parser = self.oh.StreamableParser(self.encoding, role=self.oh.Role.ASSISTANT)
        process = parser.process
        for delta in deltas:
            for token in delta:
                process(token)
                text = parser.last_content_delta
                channel = parser.current_channel
                recipient = parser.current_recipient
            yield
        parser.process_eos()
        del text, channel, recipient

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        parser = self.oh.StreamableParser(self.encoding, role=self.oh.Role.ASSISTANT)
        for token in (t for d in deltas for t in d):
            parser.process(token)
        parser.process_eos()
        reasoning, content, calls = [], [], []
        for msg in parser.messages:
            text = "".join(getattr(c, "text", "") for c in msg.content)
            if msg.recipient and msg.recipient.startswith("functions."):
                calls.append([msg.recipient[len("functions."):], text])
            elif msg.channel == "analysis":
                reasoning.append(text)
            elif msg.channel == "final":
                content.append(text)
        return message(reasoning, content, calls)


def _hf_tokenizer() -> Any:
    """gpt-oss's tokenizer as a transformers tokenizer, built offline (harmony_plugins.o200k)."""
    from transformers import AutoTokenizer

    from harmony_plugins.o200k import write_hf_tokenizer

    folder = Path(tempfile.mkdtemp(prefix="bench-tok-"))
    write_hf_tokenizer(folder)
    return AutoTokenizer.from_pretrained(str(folder)), folder


class VllmDriver(Driver):
    """vLLM's unified Harmony parser, built as vLLM's chat server builds it, driven through
    ``parse_delta`` once per engine step with a real ``ChatCompletionRequest`` with tools.

    ``vllm-builtin``: ``--tool-call-parser openai --reasoning-parser openai_gptoss`` (vLLM's
    ``HarmonyParser`` on openai_harmony). ``vllm-ext``: the names ``harmony-ext`` after
    ``vllm_ext.plugin.register()`` (our ``HarmonyParser`` subclass on the core)."""

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
        if ours:  # our own adapter failing to load is a failure, never a skip
            from vllm_ext import plugin
            from vllm_ext.harmony_parser import HarmonyExtParser

            plugin.register()
        self.tokenizer, _ = _hf_tokenizer()
        self.cls = ParserManager.get_parser(
            tool_parser_name=names[0], reasoning_parser_name=names[1], enable_auto_tools=True,
            model_name="gpt-oss", is_harmony=True, tokenizer=self.tokenizer)
        if ours and not issubclass(self.cls, HarmonyExtParser):
            raise RuntimeError(f"harmony-ext did not register: vLLM built {self.cls.__name__}")
        self.chat_request = ChatCompletionRequest(
            model="gpt-oss", messages=[{"role": "user", "content": "Go."}], tools=tools,
            stream=True)
        self.versions = {"vllm": getattr(vllm, "__version__", "?"), "parser": self.cls.__name__}
        if ours:
            self.versions["harmony-ext"] = _ours()

    def _parser(self) -> Any:
        # OpenAIServingChat._make_parser
        return self.cls(self.tokenizer, self.chat_request.tools, chat_template_kwargs={},
                        model_config=None)

    def request(self, deltas: list[Any]) -> Iterator[None]:
        parser = self._parser()
        parse_delta = parser.parse_delta
        request = self.chat_request
        last = len(deltas) - 1
        for i, (text, ids) in enumerate(deltas):
            parse_delta(text, ids, request, None, finished=i == last)
            yield

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        parser = self._parser()
        reasoning, content, calls = [], [], {}
        last = len(deltas) - 1
        for i, (text, ids) in enumerate(deltas):
            delta = parser.parse_delta(text, ids, self.chat_request, None, finished=i == last)
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


SGLANG_CONFIG = {
    "model_type": "gpt_oss", "architectures": ["GptOssForCausalLM"], "vocab_size": 201088,
    "hidden_size": 64, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 32,
    "num_local_experts": 4, "num_experts_per_tok": 2, "bos_token_id": 199998,
    "eos_token_id": 200002, "pad_token_id": 199999,
}


class SglangDriver(Driver):
    """SGLang's text parsers, chained as ``OpenAIServingChat._generate_stream_content`` does:
    per choice a ``ReasoningParser`` and a ``FunctionCallParser`` built as the server builds
    them; per delta the reasoning parser first, its normal text to the tool parser, and on the
    last delta ``parse_stream_end`` on both. The server's configuration is published first (the
    parsers read it), as in the tokenizer process.

    ``sglang-builtin``: ``gpt-oss`` for both. ``sglang-ext``: ``harmony-ext`` after SGLang's
    plugin loader ran ``sglang_ext.plugin.register``."""

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
        parser = "gpt-oss"
        if ours:  # our own adapter failing to load is a failure, never a skip
            from sglang.srt.plugins import load_plugins

            from sglang_ext import plugin


            load_plugins()  # as every SGLang process does; registers harmony-ext
            plugin.ensure_loaded()
            parser = "harmony-ext"
            if parser not in FunctionCallParser.ToolCallParserEnum:
                raise RuntimeError("harmony-ext did not register in SGLang")
        self.parser = parser
        self.tokenizer, folder = _hf_tokenizer()
        (folder / "config.json").write_text(json.dumps(SGLANG_CONFIG))
        args = ServerArgs(model_path=str(folder), tool_call_parser=parser,
                          reasoning_parser=parser, device="cpu")
        publish(args, role="tokenizer")
        self.ReasoningParser = ReasoningParser
        self.FunctionCallParser = FunctionCallParser
        self.chat_request = ChatCompletionRequest(
            model="gpt-oss", messages=[{"role": "user", "content": "Go."}], tools=tools,
            stream=True)
        self.effective_tools = list(self.chat_request.tools or [])
        self.constrained = grammar_holds_calls(
            self.chat_request._response_parser_tool_grammar,
            self.chat_request._response_parser_grammar_start)
        self.versions = {"sglang": getattr(sglang, "__version__", _version("sglang")),
                         "parsers": parser}
        if ours:
            self.versions["harmony-ext"] = _ours()

    def _parsers(self) -> tuple[Any, Any]:
        request = self.chat_request
        # OpenAIServingChat._process_reasoning_stream / _process_tool_call_stream
        rp = self.ReasoningParser(self.parser, request.stream_reasoning, True, request,
                                  tokenizer=self.tokenizer, tool_call_parser_active=True)
        fp = self.FunctionCallParser(tools=self.effective_tools, tool_call_parser=self.parser,
                                     tokenizer=self.tokenizer,
                                     prefix=request._response_parser_prefix,
                                     constrained=self.constrained)
        return rp, fp

    def request(self, deltas: list[Any]) -> Iterator[None]:
        rp, fp = self._parsers()
        reason, tool = rp.parse_stream_chunk, fp.parse_stream_chunk
        last = len(deltas) - 1
        for i, delta in enumerate(deltas):
            reasoning_text, normal_text = reason(delta)
            if i == last:
                end_reasoning, end_normal = rp.parse_stream_end()
                if end_reasoning:
                    reasoning_text = (reasoning_text or "") + end_reasoning
                if end_normal:
                    normal_text = (normal_text or "") + end_normal
            text, calls = tool(normal_text)
            if i == last:
                end_text, end_calls = fp.parse_stream_end()
                text, calls = (text or "") + end_text, list(calls) + end_calls
            yield

    def collect(self, deltas: list[Any]) -> dict[str, Any]:
        rp, fp = self._parsers()
        reasoning, content, calls = [], [], {}
        last = len(deltas) - 1
        for i, delta in enumerate(deltas):
            reasoning_text, normal_text = rp.parse_stream_chunk(delta)
            if i == last:
                end_reasoning, end_normal = rp.parse_stream_end()
                if end_reasoning:
                    reasoning_text = (reasoning_text or "") + end_reasoning
                if end_normal:
                    normal_text = (normal_text or "") + end_normal
            reasoning.append(reasoning_text or "")
            text, items = fp.parse_stream_chunk(normal_text)
            if i == last:
                end_text, end_items = fp.parse_stream_end()
                text, items = (text or "") + end_text, list(items) + end_items
            content.append(str(text or ""))
            for item in items:
                slot = calls.setdefault(item.tool_index, ["", ""])
                if item.name:
                    slot[0] = item.name
                slot[1] += item.parameters or ""
        return message(reasoning, content, [calls[i] for i in sorted(calls)])


class SglangFloorDriver(SglangDriver):
    """SGLang's own per-step cost, with detectors that parse nothing: the same
    ``ReasoningParser`` / ``FunctionCallParser`` chain as the others, but each detector
    returns one result built in advance. No parser plugged into SGLang can cost less per
    step, so ``sglang-builtin / sglang-floor`` bounds the ratio any parser can reach."""

    def __init__(self, tools: list[dict[str, Any]]) -> None:
        super().__init__(tools, ours=False)
        self.name = "sglang-floor"
        from sglang.srt.function_call.core_types import StreamingParseResult
        from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

        reasoning_result = ReasoningResult(reasoning_text="", normal_text="")
        tool_result = StreamingParseResult(normal_text="", calls=[])

        class NullReasoning:
            def parse_streaming_increment(self, text: str) -> Any:
                return reasoning_result

            def finish(self) -> Any:
                return reasoning_result

        class NullTool:
            @classmethod
            def parses_without_tools(cls) -> bool:
                return True

            def parse_streaming_increment(self, text: str, tools: Any) -> Any:
                return tool_result

            def finish(self, tools: Any) -> Any:
                return tool_result

        self.null = NullReasoning, NullTool
        self.versions["parsers"] = "none (detectors that return a prebuilt result)"

    def _parsers(self) -> tuple[Any, Any]:
        rp, fp = super()._parsers()
        rp.detector, fp.detector = self.null[0](), self.null[1]()
        return rp, fp


IMPLS: dict[str, Callable[[list[dict[str, Any]]], Driver]] = {
    "core-ids": lambda tools: CoreDriver(tools, "ids"),
    "core-text": lambda tools: CoreDriver(tools, "text"),
    "openai_harmony": OpenAIHarmonyDriver,
    "vllm-builtin": lambda tools: VllmDriver(tools, ours=False),
    "vllm-ext": lambda tools: VllmDriver(tools, ours=True),
    "sglang-builtin": lambda tools: SglangDriver(tools, ours=False),
    "sglang-ext": lambda tools: SglangDriver(tools, ours=True),
    "sglang-floor": SglangFloorDriver,
}


# -- measuring ---------------------------------------------------------------------------------


class Calm:
    """Is this thread running slower than it can right now? On a shared machine CPU time is
    not enough: another tenant on the same physical core slows every instruction (seen here:
    1.7x for seconds at a time). A fixed pure-Python probe of about half a millisecond,
    compared with the fastest this process has seen, tells."""

    LIMIT = 1.4  # a sample is set aside when the probe was this much slower around it

    def __init__(self) -> None:
        self.best = min(self.measure() for _ in range(10))

    SMALL = list(range(200))  # small ints: the probe allocates nothing

    def probe(self) -> float:
        small = self.SMALL
        start = time.thread_time()
        x = 0
        for _ in range(100):
            for v in small:
                x ^= v
        return time.thread_time() - start

    def measure(self) -> float:
        return statistics.median(self.probe() for _ in range(5))

    def slowdown(self) -> float:
        now = self.measure()
        self.best = min(self.best, now)
        return now / self.best

    def wait(self, limit_s: float = 2.0) -> float:
        """Wait up to ``limit_s`` for the machine to be at full speed; the last slowdown."""
        deadline = time.monotonic() + limit_s
        while True:
            slow = self.slowdown()
            if slow <= self.LIMIT or time.monotonic() > deadline:
                return slow
            time.sleep(0.1)


CALM: Calm = None  # type: ignore[assignment]  # set in main()


def run_once(driver: Driver, deltas: list[Any], limit_s: float | None = None) -> float:
    """CPU seconds of one request over all its deltas (building the parser included)."""
    if limit_s:
        signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        start = time.thread_time()
        deque(driver.request(deltas), maxlen=0)
        return time.thread_time() - start
    finally:
        if limit_s:
            signal.setitimer(signal.ITIMER_REAL, 0)


def _alarm(signum: int, frame: Any) -> None:
    raise CellTimeout


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (with few repeats, p95 is the slowest one)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def extrapolate(points: list[tuple[int, float]], n: int) -> float | None:
    """Per-token cost at ``n`` from the measured ``(tokens, us/token)``: a line through the
    last two points on log-log axes (slope clipped to [0, 2]), else constant."""
    if not points:
        return None
    if len(points) == 1:
        return points[-1][1]
    (n1, c1), (n2, c2) = points[-2], points[-1]
    slope = math.log(c2 / c1) / math.log(n2 / n1) if c1 > 0 and c2 > 0 and n2 != n1 else 0.0
    slope = min(max(slope, 0.0), 2.0)
    return c2 * (n / n2) ** slope


def grid(driver: Driver, streams: dict[str, Any], plan: dict[str, Any]) -> list[dict]:
    """Per-token cost for every shape x tokens-per-delta x length (ascending)."""
    budget = plan["budget_s"]
    cells = []
    for shape in plan["shapes"]:
        for size in plan["sizes"]:
            points: list[tuple[int, float]] = []
            for n in plan["lengths"]:
                stream = streams[shape][str(n)]
                tokens = len(stream["ids"])
                cell: dict[str, Any] = {"shape": shape, "n": n, "tokens": tokens, "size": size}
                cells.append(cell)
                repeats = plan["repeats"][str(n)]
                guess = extrapolate(points, tokens)
                one_s = guess * tokens / 1e6 if guess is not None else 0.0
                if one_s > budget:
                    cell.update(status="skipped", estimate_s=round(one_s * repeats, 1),
                                estimate_us=guess, reason=f"would take ~{one_s * repeats:.0f} s")
                    log(f"{driver.name} {shape} n={n} size={size}: {cell['reason']}")
                    continue
                if one_s > 0:
                    repeats = max(1, min(repeats, int(budget / one_s)))
                deltas = driver.prepare(stream, size)
                clean: list[float] = []
                noisy: list[float] = []
                started = time.monotonic()
                try:
                    run_once(driver, deltas[: max(1, len(deltas) // 64)])  # warm-up
                    # Samples taken while the machine was slowed down are set aside and
                    # replaced (up to twice the repeats, within the budget).
                    while len(clean) < repeats and len(clean) + len(noisy) < 2 * repeats:
                        before = CALM.wait()
                        sample = run_once(driver, deltas, limit_s=3 * budget + 5)
                        slow = max(before, CALM.slowdown())
                        (noisy if slow > CALM.LIMIT else clean).append(sample)
                        if time.monotonic() - started > budget:
                            break
                except CellTimeout:
                    cell.update(status="skipped", reason=f"stopped after {3 * budget + 5:.0f} s "
                                f"(estimate was ~{one_s:.0f} s)")
                    log(f"{driver.name} {shape} n={n} size={size}: {cell['reason']}")
                    continue
                us = [x / tokens * 1e6 for x in (clean or noisy)]
                cell.update(status="ok", repeats=len(us), median_us=statistics.median(us),
                            p95_us=percentile(us, 95), min_us=min(us), set_aside=len(noisy)
                            if clean else 0, contended=not clean)
                points.append((tokens, cell["median_us"]))
                log(f"{driver.name} {shape:9} n={n:>6} size={size}: median "
                    f"{cell['median_us']:8.3f} us/token p95 {cell['p95_us']:8.3f} "
                    f"({len(us)} runs, {len(noisy)} slowed, {time.monotonic() - started:.1f} s)")
    return cells


def cross_check(driver: Driver, streams: dict[str, Any], plan: dict[str, Any]) -> list[dict]:
    """The message each (shape, length, size) of the check list parses to (untimed)."""
    out = []
    for item in plan.get("check", []):
        stream = streams[item["shape"]][str(item["n"])]
        try:
            msg = driver.collect(driver.prepare(stream, item["size"]))
        except Exception as e:  # a parser that crashes is a result too
            msg = {"error": f"{type(e).__name__}: {e}"}
        out.append({**item, "message": msg})
    return out


def concurrent(driver: Driver, streams: dict[str, Any], plan: dict[str, Any],
               cells: list[dict]) -> dict[str, Any]:
    """``streams`` requests alive at once, one delta each per engine step, round-robin, shapes
    in turn; total CPU seconds of all parser calls per million generated tokens."""
    conf = plan["concurrent"]
    n, size, count = conf["length"], conf["size"], conf["streams"]
    shapes = plan["shapes"]
    out: dict[str, Any] = {"streams": count, "n": n, "size": size}
    estimate = 0.0
    for shape in shapes:
        per = [c for c in cells if c["shape"] == shape and c["size"] == size]
        points = [(c["tokens"], c["median_us"]) for c in per if c.get("status") == "ok"]
        exact = [c for c in per if c["n"] == n and c.get("status") == "ok"]
        us = exact[0]["median_us"] if exact else extrapolate(points, n)
        if us is None:
            out.update(status="skipped", reason="no single-stream figure to size it")
            return out
        estimate += us * len(streams[shape][str(n)]["ids"]) * (count / len(shapes)) / 1e6
    out["estimate_s"] = round(estimate, 1)
    if estimate > conf["budget_s"]:
        out.update(status="skipped", reason=f"would take ~{estimate:.0f} s")
        return out
    prepared = {s: driver.prepare(streams[s][str(n)], size) for s in shapes}
    tokens = sum(len(streams[shapes[i % len(shapes)]][str(n)]["ids"]) for i in range(count))
    gc.collect()
    before = CALM.wait(5.0)
    start, wall = time.thread_time(), time.monotonic()
    live = deque(driver.request(prepared[shapes[i % len(shapes)]]) for i in range(count))
    pop, append = live.popleft, live.append
    while live:
        request = pop()
        try:
            next(request)
        except StopIteration:
            continue
        append(request)
    cpu = time.thread_time() - start
    slow = max(before, CALM.slowdown())
    out.update(status="ok", tokens=tokens, cpu_s=cpu, wall_s=time.monotonic() - wall,
               cpu_s_per_1m=cpu / tokens * 1e6, slowdown=round(slow, 2),
               contended=slow > CALM.LIMIT)
    log(f"{driver.name} concurrent {count} x {n}: {cpu:.2f} s CPU, "
        f"{out['cpu_s_per_1m']:.2f} s per 1M tokens")
    return out


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def malloc_in_use() -> int | None:
    """Bytes the C allocator has handed out and not got back (glibc ``mallinfo2``, all arenas
    and mmapped blocks): native memory such as openai_harmony's Rust heap, and Python objects
    over 512 bytes; not pymalloc's small objects. None where glibc has no ``mallinfo2``."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _Mallinfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def _fresh(value: Any) -> Any:
    """A new copy of a delta, so that what a parser keeps of its input is allocated inside the
    measurement (as in a server, where every delta is a new object)."""
    if isinstance(value, str):
        return value.encode("utf-8").decode("utf-8")
    if isinstance(value, tuple):
        return tuple(_fresh(v) for v in value)
    if isinstance(value, list):
        return list(value)
    return value


class FreshDeltas:
    """The deltas of a request, each copied just before it is fed."""

    def __init__(self, deltas: list[Any]) -> None:
        self.deltas = deltas

    def __len__(self) -> int:
        return len(self.deltas)

    def __iter__(self) -> Iterator[Any]:
        return (_fresh(d) for d in self.deltas)


def held_after(driver: Driver, deltas: list[Any], measure: Callable[[], int | None]
               ) -> tuple[int | None, Any]:
    """Feed every delta but the last; return how much ``measure`` grew and the open request."""
    fresh = FreshDeltas(deltas)
    gc.collect()
    before = measure()
    request = driver.request(fresh)  # type: ignore[arg-type]
    deque(zip(range(len(deltas) - 1), request, strict=False), maxlen=0)
    gc.collect()
    after = measure()
    return (None if before is None or after is None else after - before), request


def memory(driver: Driver, streams: dict[str, Any], plan: dict[str, Any]) -> list[dict]:
    """Memory one request holds after ``n`` tokens: every delta but the one with the stop token
    fed (each a fresh object, as a server's are), the request still open. Measured twice: the
    Python allocations still alive (tracemalloc) and the C allocator's bytes in use (which also
    sees native memory, such as openai_harmony's Rust heap, invisible to tracemalloc). Each
    shape is sized first by timing its small streams (extrapolated like the grid); a shape that
    would exceed the budget is skipped."""
    conf = plan["memory"]
    out = []
    for shape in plan["shapes"]:
        stream = streams[shape][str(conf["length"])]
        item: dict[str, Any] = {"shape": shape, "n": conf["length"], "size": conf["size"]}
        out.append(item)
        points = []
        for n in conf["probe"]:
            probe = streams[shape][str(n)]
            tokens = len(probe["ids"])
            points.append((tokens, run_once(driver, driver.prepare(probe, conf["size"]))
                           / tokens * 1e6))
        estimate = (extrapolate(points, len(stream["ids"])) or 0) * len(stream["ids"]) / 1e6
        item["estimate_s"] = round(estimate, 2)
        if estimate * 3 > conf["budget_s"]:  # two runs, one of them under tracemalloc
            item.update(status="skipped", reason=f"would take ~{estimate * 3:.0f} s")
            log(f"{driver.name} memory {shape}: {item['reason']}")
            continue
        deltas = driver.prepare(stream, conf["size"])
        request = None
        try:
            signal.setitimer(signal.ITIMER_REAL, 3 * conf["budget_s"] + 5)
            item["malloc_bytes"], request = held_after(driver, deltas, malloc_in_use)
            request = None
            tracemalloc.start()
            item["traced_bytes"], request = held_after(
                driver, deltas, lambda: tracemalloc.get_traced_memory()[0])
            item["status"] = "ok"
        except CellTimeout:
            item.update(status="skipped", reason="stopped: over budget")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            tracemalloc.stop()
            del request
        log(f"{driver.name} memory {shape}: {item}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("impl", choices=sorted(IMPLS))
    ap.add_argument("--streams", required=True, help="streams JSON written by bench.py")
    ap.add_argument("--plan", required=True, help="plan JSON written by bench.py")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    global CALM
    CALM = Calm()
    t0 = time.monotonic()
    plan = json.loads(Path(args.plan).read_text())
    data = json.loads(Path(args.streams).read_text())
    streams, tools = data["streams"], data["tools"]
    result: dict[str, Any] = {"impl": args.impl,
                              "python": platform.python_version(), "executable": sys.executable}
    try:
        driver = IMPLS[args.impl](tools)
    except Skip as e:
        result.update(status="skipped", reason=str(e))
        print(json.dumps(result))
        return 0
    result["versions"] = driver.versions
    result["setup_s"] = round(time.monotonic() - t0, 2)
    if plan.get("memory"):  # first: the process is fresh
        result["memory"] = memory(driver, streams, plan)
    result["messages"] = cross_check(driver, streams, plan)
    result["cells"] = grid(driver, streams, plan)
    if plan.get("concurrent"):
        result["concurrent"] = concurrent(driver, streams, plan, result["cells"])
    result["status"] = "ok"
    result["wall_s"] = round(time.monotonic() - t0, 2)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
