"""vLLM's unified gpt-oss parser, driven by ``harmony_plugins`` instead of openai_harmony.

vLLM asks its ``HarmonyParser`` for three things, and this subclass answers each from one
:class:`harmony_plugins.StreamParser` per request, fed the token ids of each step once:

* chat completions, streamed: ``parse_delta`` → a ``DeltaMessage`` per step;
* chat completions, whole: ``parse`` → ``(reasoning, content, tool_calls)``;
* the Responses API: ``process_chunk`` / ``flush`` → ``Segment``s, each carrying a delta or a
  completed ``openai_harmony.Message`` (never both: vLLM drops the message of a segment that
  also has a delta).

Everything else (``adjust_request`` and its structural tags for ``tool_choice`` and
``response_format``, ``is_reasoning_end``) is vLLM's own, inherited unchanged.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from openai_harmony import Message, Role
from vllm.entrypoints.generate.base.protocol import DeltaMessage, FunctionCall
from vllm.parser.harmony import ChunkResult, HarmonyParser, Segment
from vllm.renderers.chat_utils import make_tool_call_id

from harmony_plugins import StreamParser, Vocab
from harmony_plugins import markers as mk
from harmony_plugins.events import (
    ContentText,
    EndOfTurn,
    Event,
    ReasoningText,
    Recovery,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)
from harmony_plugins.header import tool_names
from harmony_plugins.openai import ChatResult
from harmony_plugins.openai import chat_delta as openai_delta

from .deltas import arguments_delta, from_chat_delta, text_delta

logger = logging.getLogger("vllm.harmony_ext")

PASS_UNDECLARED = os.environ.get("HARMONY_EXT_PASS_UNDECLARED", "").lower() in ("1", "true")
"""Server option: surface calls to ``functions.*`` names the request did not declare."""

RECOVERIES: Counter[str] = Counter()
"""Recovery rules applied in this process since start, by rule name."""

# Responses API built-in tools, by tool type, and the recipients gpt-oss uses for them.
BUILTIN_RECIPIENTS = {
    "code_interpreter": ("python",),
    "web_search_preview": ("browser.search", "browser.open", "browser.find"),
    "container": ("container.exec",),
}
_BUILTIN_NAMES = frozenset(n for names in BUILTIN_RECIPIENTS.values() for n in names)
# Markers after which the engine stops: the message being streamed is complete.
_STOP_MARKERS = (mk.RETURN, mk.CALL, mk.END_OF_TEXT)


def request_tool_names(tools: Iterable[Any] | None) -> frozenset[str]:
    """The recipients a request declares: its functions, and its Responses built-in tools."""
    if not tools:
        return frozenset()
    names = set(tool_names(tools))
    for tool in tools:
        kind = getattr(tool, "type", None) or (tool.get("type") if isinstance(tool, dict) else None)
        names.update(BUILTIN_RECIPIENTS.get(kind, ()))
        if kind == "namespace":  # Responses namespaces: flattened as vLLM does
            from vllm.entrypoints.openai.responses.utils import extract_function_tool_names

            names.update(extract_function_tool_names([tool]))
    return frozenset(names)


class HarmonyExtParser(HarmonyParser):
    """One request's parser (vLLM builds one per request and choice).

    Construction is cheap (vLLM builds throw-away instances just to adjust requests): the
    token table comes from a per-tokenizer cache and the core parser starts on first use.
    """

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools, *args, **kwargs)
        self._vocab = Vocab.from_hf(tokenizer)
        self._tools = request_tool_names(tools)
        self._core: StreamParser | None = None  # this turn's parse; started on first use
        self._fed = 0  # ids fed to it
        self._past_tokens = 0  # ids fed to earlier turns' parses (Responses reuses parsers)
        self._past_reasoning = 0
        self._open: _OpenItem | None = None  # Responses: the message being streamed

    # -- the core parser ---------------------------------------------------------------

    def _start(self, request: Any = None) -> StreamParser:
        """Start this turn's parse; with ``tool_choice: "none"`` no call is surfaced."""
        tools = self._tools
        if getattr(request, "tool_choice", None) == "none":
            tools = frozenset()  # a call the model writes anyway is counted as undeclared
        core = self._core = StreamParser(tools, self._vocab, id_factory=make_tool_call_id,
                                         pass_undeclared=PASS_UNDECLARED)
        return core

    def _close(self) -> list[Event]:
        """End the turn: flush the parse, keep its counts, log its recoveries."""
        core = self._core
        if core is None:
            return []
        self._core = None
        events = core.close()
        self._past_tokens += self._fed
        self._past_reasoning += core.reasoning_tokens
        self._fed = 0
        recovered = core.recoveries
        if recovered:
            RECOVERIES.update(recovered)
            logger.info("harmony-ext recovered malformed model output: %s", recovered)
            for event in events:
                if event.__class__ is Recovery:
                    logger.debug("harmony-ext %s dropped %r", event.rule,  # type: ignore[union-attr]
                                 event.text[:200])  # type: ignore[union-attr]
        return events

    # -- chat completions --------------------------------------------------------------

    def parse(
        self,
        model_output: str,
        request: Any,
        enable_auto_tools: bool = False,
        model_output_token_ids: Sequence[int] = (),
    ) -> tuple[str | None, str | None, list[FunctionCall] | None]:
        core = self._core or self._start(request)
        events = core.feed_ids(model_output_token_ids)
        self._fed += len(model_output_token_ids)
        events += self._close()
        result = ChatResult()
        result.add(events)
        message = result.message()
        calls = [FunctionCall(id=call["id"], name=call["function"]["name"],
                              arguments=call["function"]["arguments"])
                 for call in message["tool_calls"]]
        return message["reasoning"] or None, message["content"] or None, calls or None

    def parse_delta(
        self,
        delta_text: str,
        delta_token_ids: list[int],
        request: Any,
        prompt_token_ids: list[int] | None = None,
        *,
        finished: bool,
    ) -> DeltaMessage | None:
        core = self._core or self._start(request)
        events = core.feed_ids(delta_token_ids)
        self._fed += len(delta_token_ids)
        if finished:
            events += self._close()
        if len(events) == 1:  # the common step: one piece of text or of arguments
            event = events[0]
            cls = event.__class__
            if cls is ContentText:
                return text_delta("content", event.text)  # type: ignore[union-attr]
            if cls is ReasoningText:
                if not request.include_reasoning:
                    return None
                return text_delta("reasoning", event.text)  # type: ignore[union-attr]
            if cls is ToolCallArguments:
                return arguments_delta(event.index, event.text)  # type: ignore[union-attr]
        elif not events:
            return None
        return chat_delta(events, request.include_reasoning)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        core = self._core
        if len(token_ids) == self._past_tokens + self._fed:
            return self._past_reasoning + (core.reasoning_tokens if core is not None else 0)
        fresh = StreamParser(self._tools, self._vocab)  # ids we did not see: count afresh
        fresh.feed_ids(token_ids)
        return fresh.reasoning_tokens

    # -- the Responses API -------------------------------------------------------------

    def process_chunk(self, token_ids: Sequence[int]) -> ChunkResult:
        if not token_ids:
            return ChunkResult(segments=[], reasoning_token_count=0)
        core = self._core or self._start()
        before = core.reasoning_tokens
        events = core.feed_ids(token_ids)
        self._fed += len(token_ids)
        reasoning = core.reasoning_tokens - before
        segments = self._segments(events)
        if self._open is not None and self._stops(token_ids):
            # The engine stops here: complete the open message now, not in flush(); vLLM
            # marks the last message "incomplete" when flush() returns anything.
            self._switch_to(None, segments)
        return ChunkResult(segments=segments, reasoning_token_count=reasoning)

    def _stops(self, token_ids: Sequence[int]) -> bool:
        """Whether the step ends with ``<|return|>``, ``<|call|>`` or ``<|endoftext|>``.

        The engine stops right after such a token, so only the last id need be looked at.
        """
        table = self._vocab.table
        last = token_ids[-1]
        return 0 <= last < len(table) and table[last] in _STOP_MARKERS

    def flush(self) -> list[Segment]:
        return self._segments(self._close())

    def _segments(self, events: list[Event]) -> list[Segment]:
        """Events to Segments: deltas as they come, a completed Message per message."""
        out: list[Segment] = []
        for event in events:
            cls = event.__class__
            if cls is ReasoningText or cls is ContentText:
                default = "analysis" if cls is ReasoningText else "final"
                channel = event.channel or default  # type: ignore[union-attr]
                self._switch_to(("text", channel, None, None), out)
                self._delta(event.text, out)  # type: ignore[union-attr]
            elif cls is ToolCallBegin:
                name = event.name  # type: ignore[union-attr]
                recipient = name if name in _BUILTIN_NAMES else "functions." + name
                content_type = event.content_type  # type: ignore[union-attr]
                if content_type == "json":
                    content_type = "<|constrain|>json"
                self._switch_to(("call", event.channel or "commentary",  # type: ignore[union-attr]
                                 recipient, content_type), out)
            elif cls is ToolCallArguments:
                self._delta(event.text, out)  # type: ignore[union-attr]
            elif cls is ToolCallEnd or cls is EndOfTurn:
                self._switch_to(None, out)
        return out

    def _switch_to(self, key: tuple | None, out: list[Segment]) -> None:
        """Complete the open message unless ``key`` continues it; open ``key``."""
        item = self._open
        if item is not None:
            if key is not None and key[0] == "text" and item.key == key:
                return  # more text of the same kind: one message
            out.append(item.completed())
        self._open = _OpenItem(key) if key is not None else None

    def _delta(self, text: str, out: list[Segment]) -> None:
        item = self._open
        assert item is not None
        item.parts.append(text)
        out.append(Segment(channel=item.key[1], recipient=item.key[2], delta=text))


def chat_delta(events: list[Event], include_reasoning: bool) -> DeltaMessage | None:
    """Several events of one step as one chat ``DeltaMessage`` (None when they show nothing)."""
    delta = openai_delta(events)
    if delta is None:
        return None
    if not include_reasoning:
        delta.pop("reasoning", None)
    return from_chat_delta(delta) if delta else None


class _OpenItem:
    """A message being streamed to the Responses API, kept until it completes."""

    __slots__ = ("key", "parts")

    def __init__(self, key: tuple) -> None:
        self.key = key  # (kind, channel, recipient, content_type)
        self.parts: list[str] = []

    def completed(self) -> Segment:
        _, channel, recipient, content_type = self.key
        message = Message.from_role_and_content(Role.ASSISTANT, "".join(self.parts))
        message = message.with_channel(channel)
        if recipient is not None:
            message = message.with_recipient(recipient)
        if content_type is not None:
            message = message.with_content_type(content_type)
        return Segment(channel=channel, recipient=recipient, delta="",
                       completed_message=message)

