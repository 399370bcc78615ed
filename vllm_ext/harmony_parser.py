"""vLLM's unified gpt-oss parser, driven by ``harmony_plugins`` instead of openai_harmony.

vLLM asks its ``HarmonyParser`` for three things, and this subclass answers each from one
:class:`harmony_plugins.Turn` per request, fed the token ids of each step once, translating
the turn's steps into vLLM's types:

* chat completions, streamed: ``parse_delta`` → a ``DeltaMessage`` per step;
* chat completions, whole: ``parse`` → ``(reasoning, content, tool_calls)``;
* the Responses API: ``process_chunk`` / ``flush`` → ``Segment``s, each carrying a delta or a
  completed ``openai_harmony.Message`` (never both: vLLM drops the message of a segment that
  also has a delta). One Message per Harmony message, framed by the core's
  ``MessageBegin`` / ``MessageEnd`` events and built by the core
  (:func:`harmony_plugins.compat.harmony_message`, as the drop-in parser builds its
  messages): the channel it counts as (always one vLLM knows), its recipient and content
  type; a message with an empty body has none, so it gets no output item, streamed or not.

vLLM tells its parser that the stream finished, not why, and reports its own
``finish_reason``: turns are closed with the finish ``"unknown"``, which the core documents
(the parse does not depend on it). ``adjust_request`` adds Harmony's stop ids and the guard's
mark, and gives a request with a JSON response format whose ``tool_choice`` forces no call the
core's one grammar for a call or the answer (:func:`harmony_plugins.answer_or_call`); the rest
(the structural tags of a forced ``tool_choice``, of other formats, ``is_reasoning_end``) is
vLLM's own, inherited unchanged.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Sequence
from typing import Any

from vllm.entrypoints.generate.base.protocol import DeltaMessage, FunctionCall
from vllm.parser.harmony import ChunkResult, HarmonyParser, Segment
from vllm.renderers.chat_utils import make_tool_call_id

from harmony_plugins import (
    ContentText,
    Guard,
    MessageBegin,
    MessageEnd,
    ReasoningText,
    Request,
    Step,
    ToolCallArguments,
    Turn,
    Vocab,
    answer_or_call,
    count_reasoning_tokens,
    guarded,
    harmony,
    held_schemas,
    pass_undeclared,
    read_tool_choice,
)
from harmony_plugins.adapter_support import metrics, text_calls
from harmony_plugins.adapter_support.messages import harmony_message
from harmony_plugins.adapter_support.once import Once

from .deltas import delta_message

logger = logging.getLogger("vllm.harmony_ext")
_observe = metrics.Counting(logger)
_once = Once(logger)


def response_id(request: Any) -> str | None:
    """The id vLLM gives the chat completion of ``request``, and names in its own request log:
    ``chatcmpl-`` and the request's ``request_id`` (its serving builds it so; a client's
    ``X-Request-Id`` header takes the ``request_id``'s place there, and a parser is never
    shown the header). None without a request."""
    request_id = getattr(request, "request_id", None)
    return f"chatcmpl-{request_id}" if isinstance(request_id, str) else None


class HarmonyExtParser(HarmonyParser):
    """One request's parser (vLLM builds one per request and choice).

    Construction is cheap (vLLM builds throw-away instances just to adjust requests): the
    token table comes from a per-tokenizer cache and the turn starts on first use.
    """

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools, *args, **kwargs)
        self._vocab = Vocab.from_hf(tokenizer)
        self._tools = tools
        self._request: Request | None = None  # the rules of the last turn started
        self._turn: Turn | None = None  # this turn's parse; started on first use
        self._fed = 0  # ids fed to it
        self._past_tokens = 0  # ids fed to earlier turns (Responses reuses parsers)
        self._past_reasoning = 0
        # Responses: the message being streamed, and its text so far
        self._open: tuple[MessageBegin | None, list[str]] = (None, [])
        self._response_id: str | None = None  # Responses: bound by vllm_ext.items

    # -- the turn ----------------------------------------------------------------------

    def _start(self, request: Any = None, events: bool = False) -> Turn:
        """Start this turn from the request's tools, ``tool_choice`` and the server switch;
        ``events``: the Responses API's turn, whose steps carry their events."""
        tools = self._tools if self._tools is not None else getattr(request, "tools", None)
        rules = self._request = Request(
            tools, getattr(request, "tool_choice", None), pass_undeclared(os.environ),
            parallel_tool_calls=getattr(request, "parallel_tool_calls", None),
            recover_text_calls=text_calls.switched_on(os.environ, _once))
        observer = _observe.for_request(self._response_id or response_id(request))
        turn = self._turn = Turn(rules, self._vocab, id_factory=make_tool_call_id,
                                 observer=observer, events=events)
        return turn

    def bind_response_id(self, response_id: str | None) -> None:
        """The id of the Responses API response this parser is for (vLLM hands its Responses
        parsers no request; the hook on ``_make_response_parser`` in :mod:`vllm_ext.items`
        does), named in the per-response log line."""
        self._response_id = response_id

    def _feed(self, token_ids: Sequence[int], request: Any, finished: bool) -> Step:
        turn = self._turn or self._start(request)
        step = turn.feed_ids(token_ids, "unknown" if finished else None)
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

    def adjust_request(self, request: Any) -> Any:
        """Harmony's grammar and stop ids for one request (contract section 10).

        A request with a JSON response format (``response_format`` on chat, ``text.format`` on
        Responses) whose ``tool_choice`` forces no call is generated under one grammar: free
        analysis messages and preambles, then a call to a declared function or the final
        answer whose body the schema holds (:meth:`_answer_or_call`). vLLM's own tag for it
        allows no call, and only one analysis message and no preamble before the answer. Any
        other request gets vLLM's own adjustments (the structural tags of a forced
        ``tool_choice`` and of other formats).

        Then Harmony's stop ids are merged into the request's, unless it asked for exactly its
        tokens (``ignore_eos``): vLLM takes its stop ids from the checkpoint's generation
        config alone, and one without ``<|call|>`` lets the model write the tool's result
        itself; and where the core guards the request (:func:`harmony_plugins.guarded`: not
        with ``ignore_eos``, not with the turn stop switched off) it is marked for the
        generation guard (:mod:`vllm_ext.guard`), which ends it at a forged turn."""
        if not self._answer_or_call(request):
            request = super().adjust_request(request)
        ignore_eos = getattr(request, "ignore_eos", False)
        if not ignore_eos:
            request.stop_token_ids = harmony.with_stop_ids(request.stop_token_ids)
        if guarded(ignore_eos, os.environ):
            request.vllm_xargs = Guard.marked(getattr(request, "vllm_xargs", None))
        return request

    def _answer_or_call(self, request: Any) -> bool:
        """Give a request with a JSON response format, and a ``tool_choice`` that forces no
        call, the core's grammar for a call or the answer; False (the request untouched) for
        any other, and for a ``tool_choice`` the core does not read (vLLM's own tags then).
        ``tool_choice`` none allows the answer only; a function's arguments are held to its
        schema where it is ``strict``, or where the server's ``--tool-strict-level
        parameter`` holds every function so."""
        choice = read_tool_choice(getattr(request, "tool_choice", None))
        if choice.forced or not choice.known:
            return False
        params = request.extract_structured_outputs()
        if params is None or (params.json is None and not params.json_object):
            return False
        answer = params.json if params.json is not None else {"type": "object"}
        if isinstance(answer, str):
            try:
                answer = json.loads(answer)
            except ValueError:
                return False  # vLLM's own adjustments say what is wrong with it
        hold_all = getattr(self.tool_strict_level, "name", None) == "PARAMETER"
        calls = held_schemas(getattr(request, "tools", None), hold_all)
        request.structured_outputs = dataclasses.replace(
            params, json=None, json_object=None,
            structural_tag=json.dumps(answer_or_call(calls, answer, choice)))
        if hasattr(request, "response_format"):
            request.response_format = None
        else:  # the Responses API
            request.text = None
        return True

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
        step = self._feed(delta_token_ids, request, finished)
        return delta_message(step, request.include_reasoning)

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        turn = self._turn
        if len(token_ids) == self._past_tokens + self._fed:
            return self._past_reasoning + (turn.reasoning_tokens if turn is not None else 0)
        # Ids this parser did not see: counted by the core with this request's rules.
        rules = self._request or Request(self._tools, None, pass_undeclared(os.environ))
        return count_reasoning_tokens(token_ids, rules, self._vocab)

    # -- the Responses API -------------------------------------------------------------

    def process_chunk(self, token_ids: Sequence[int]) -> ChunkResult:
        if not token_ids:
            return ChunkResult(segments=[], reasoning_token_count=0)
        turn = self._turn or self._start(events=True)
        before = turn.reasoning_tokens
        step = turn.feed_ids(token_ids)
        self._fed += len(token_ids)
        return ChunkResult(segments=self._segments(step),
                           reasoning_token_count=turn.reasoning_tokens - before)

    def flush(self) -> list[Segment]:
        turn = self._turn
        if turn is None:
            return []
        step = turn.close("unknown")
        self._ended(turn)
        return self._segments(step)

    def _segments(self, step: Step) -> list[Segment]:
        """A step's events to Segments: each piece of a message's body as a delta, and a
        completed ``openai_harmony.Message`` when the core says the message ended."""
        out: list[Segment] = []
        begin, parts = self._open
        for event in step.events:
            if isinstance(event, ReasoningText | ContentText | ToolCallArguments):
                if begin is not None:
                    parts.append(event.text)
                    out.append(Segment(channel=begin.channel, recipient=begin.recipient,
                                       delta=event.text))
            elif isinstance(event, MessageBegin):
                begin, parts = event, []
            elif isinstance(event, MessageEnd):
                if begin is not None:
                    message = harmony_message(begin, "".join(parts))
                    if message is not None:  # an empty message: no item, streamed or not
                        out.append(Segment(channel=begin.channel, recipient=begin.recipient,
                                           delta="", completed_message=message))
                begin, parts = None, []
        self._open = (begin, parts)
        return out
