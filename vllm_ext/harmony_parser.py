"""vLLM's unified gpt-oss parser, driven by ``harmony_plugins`` instead of openai_harmony.

vLLM asks its ``HarmonyParser`` for three things, and this subclass answers each from one
:class:`harmony_plugins.Turn` per request, fed the token ids of each step once, translating
the turn's steps into vLLM's types and deciding nothing about Harmony:

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
from collections.abc import Sequence
from typing import Any

from openai_harmony import Message, Role
from vllm.entrypoints.generate.base.protocol import DeltaMessage, FunctionCall
from vllm.parser.harmony import ChunkResult, HarmonyParser, Segment
from vllm.renderers.chat_utils import make_tool_call_id

from harmony_plugins import Request, Step, Turn, Vocab
from harmony_plugins import markers as mk
from harmony_plugins.adapter_support import metrics
from harmony_plugins.events import (
    ContentText,
    EndOfTurn,
    ReasoningText,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)
from harmony_plugins.turn import BUILTIN_NAMES, pass_undeclared

from .deltas import delta_message

logger = logging.getLogger("vllm.harmony_ext")

# Markers after which the engine stops: the message being streamed is complete.
_STOP_MARKERS = (mk.RETURN, mk.CALL, mk.END_OF_TEXT)


class HarmonyExtParser(HarmonyParser):
    """One request's parser (vLLM builds one per request and choice).

    Construction is cheap (vLLM builds throw-away instances just to adjust requests): the
    token table comes from a per-tokenizer cache and the turn starts on first use.
    """

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools, *args, **kwargs)
        self._vocab = Vocab.from_hf(tokenizer)
        self._tools = tools
        self._turn: Turn | None = None  # this turn's parse; started on first use
        self._fed = 0  # ids fed to it
        self._past_tokens = 0  # ids fed to earlier turns (Responses reuses parsers)
        self._past_reasoning = 0
        self._open: _OpenItem | None = None  # Responses: the message being streamed

    # -- the turn ----------------------------------------------------------------------

    def _start(self, request: Any = None) -> Turn:
        """Start this turn from the request's tools, ``tool_choice`` and the server switch."""
        tools = self._tools if self._tools is not None else getattr(request, "tools", None)
        turn = self._turn = Turn(
            Request(tools, getattr(request, "tool_choice", None),
                    pass_undeclared(os.environ)),
            self._vocab, id_factory=make_tool_call_id, observer=metrics.observe, log=logger)
        return turn

    def _feed(self, token_ids: Sequence[int], request: Any, finished: bool) -> Step:
        turn = self._turn or self._start(request)
        step = turn.feed_ids(token_ids, "stop" if finished else None)
        self._fed += len(token_ids)
        if finished:
            self._ended(turn)
        return step

    def _ended(self, turn: Turn) -> None:
        """The turn closed: keep its token counts (Responses reuses this parser)."""
        self._turn = None
        self._past_tokens += self._fed
        self._past_reasoning += turn.reasoning_tokens
        self._fed = 0

    # -- chat completions --------------------------------------------------------------

    def parse(
        self,
        model_output: str,
        request: Any,
        enable_auto_tools: bool = False,
        model_output_token_ids: Sequence[int] = (),
    ) -> tuple[str | None, str | None, list[FunctionCall] | None]:
        step = self._feed(model_output_token_ids, request, finished=True)
        # One feed: each call is whole in it (begun here, its arguments joined).
        calls = [FunctionCall(id=c.id, name=c.name, arguments=c.arguments) for c in step.calls]
        return step.reasoning or None, step.content or None, calls or None

    def parse_delta(
        self,
        delta_text: str,
        delta_token_ids: list[int],
        request: Any,
        prompt_token_ids: list[int] | None = None,
        *,
        finished: bool,
    ) -> DeltaMessage | None:
        turn = self._turn or self._start(request)
        if finished:
            step = turn.feed_ids(delta_token_ids, "stop")
            self._fed += len(delta_token_ids)
            self._ended(turn)
        else:  # the decode step of every request: as little as possible
            step = turn.feed_ids(delta_token_ids)
            self._fed += len(delta_token_ids)
        return delta_message(step, request.include_reasoning)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        turn = self._turn
        if len(token_ids) == self._past_tokens + self._fed:
            return self._past_reasoning + (turn.reasoning_tokens if turn is not None else 0)
        fresh = Turn(Request(), self._vocab)  # ids we did not see: count afresh, unreported
        fresh.parser.feed_ids(token_ids)
        return fresh.reasoning_tokens

    # -- the Responses API -------------------------------------------------------------

    def process_chunk(self, token_ids: Sequence[int]) -> ChunkResult:
        if not token_ids:
            return ChunkResult(segments=[], reasoning_token_count=0)
        turn = self._turn or self._start()
        before = turn.reasoning_tokens
        step = turn.feed_ids(token_ids)
        self._fed += len(token_ids)
        segments = self._segments(step)
        if self._open is not None and self._stops(token_ids):
            # The engine stops here: complete the open message now, not in flush(); vLLM
            # marks the last message "incomplete" when flush() returns anything.
            self._switch_to(None, segments)
        return ChunkResult(segments=segments,
                           reasoning_token_count=turn.reasoning_tokens - before)

    def _stops(self, token_ids: Sequence[int]) -> bool:
        """Whether the step ends with ``<|return|>``, ``<|call|>`` or ``<|endoftext|>``.

        The engine stops right after such a token, so only the last id need be looked at.
        """
        table = self._vocab.table
        last = token_ids[-1]
        return 0 <= last < len(table) and table[last] in _STOP_MARKERS

    def flush(self) -> list[Segment]:
        turn = self._turn
        if turn is None:
            return []
        step = turn.close()
        self._ended(turn)
        return self._segments(step)

    def _segments(self, step: Step) -> list[Segment]:
        """A step's events to Segments: deltas as they come, a completed Message each."""
        out: list[Segment] = []
        for event in step.events:
            match event:
                case ReasoningText(text=text, channel=channel):
                    self._switch_to(("text", channel or "analysis", None, None), out)
                    self._delta(text, out)
                case ContentText(text=text, channel=channel):
                    self._switch_to(("text", channel or "final", None, None), out)
                    self._delta(text, out)
                case ToolCallBegin(name=name, channel=channel, content_type=content_type):
                    recipient = name if name in BUILTIN_NAMES else "functions." + name
                    if content_type == "json":
                        content_type = "<|constrain|>json"
                    self._switch_to(("call", channel or "commentary", recipient,
                                     content_type), out)
                case ToolCallArguments(text=text):
                    self._delta(text, out)
                case ToolCallEnd() | EndOfTurn():
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
