"""SGLang's tool-call and reasoning detectors named ``harmony-ext``, both on ONE turn per choice.

SGLang runs two detectors per response choice, built independently and chained on text: the
reasoning detector sees each decoded delta first, and only its ``normal_text`` reaches the tool
detector, which alone decides what becomes ``content``. Two separate Harmony parses could disagree
about where the reasoning ends (SGLang's own gpt-oss pair does, see
docs/sglang-builtin-observations.md). So there is exactly one parse per choice:

* :class:`HarmonyExtReasoningDetector` owns it: a :class:`harmony_plugins.Turn` fed the raw
  text once. A step's reasoning becomes ``reasoning_text``; its content and calls are queued
  on the choice's :class:`~sglang_ext.link.Link` for the tool detector.
* :class:`HarmonyExtDetector` (the tool detector) takes the queued steps from the link and
  turns them into ``ToolCallItem``s and content; it checks that the text SGLang handed it is
  the text the reasoning detector handed over (:mod:`sglang_ext.link`).

Without a ``harmony-ext`` reasoning detector upstream (another reasoning parser, or
``separate_reasoning`` false), the tool detector runs its own turn on the raw text it gets.

Both translate steps into SGLang's types. The turn needs the request's tools, but SGLang gives
them only to the tool detector: inside a server a hook on ``ReasoningParser.__init__``
(:mod:`sglang_ext.plugin`) hands the reasoning detector the request
(:meth:`HarmonyExtReasoningDetector.bind_request`). Where nothing binds it (SGLang's classes
used directly, outside a server), the turn starts with its tools unknown and the tool detector
gives them on its first call (:meth:`harmony_plugins.Turn.declare`). Where no tool detector
follows (SGLang says so: ``tool_call_parser_active``), no call can be surfaced, so the turn
never has tools: it is the core's tools-unknown state, settled explicitly when the reasoning
detector's parse ends (:meth:`harmony_plugins.Turn.settle`), and its possible calls are counted
by the rule ``tools_unknown`` alone. A stream SGLang aborts is never finished, so never counted.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import (
    StreamingParseResult,
    StructureInfo,
)
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector
from sglang.srt.parser.reasoning_parser import (
    StreamingParseResult as ReasoningResult,
)

from harmony_plugins import (
    Request,
    Step,
    Turn,
    chat_request_tools,
    fold,
    harmony,
    read_tool_choice,
)
from harmony_plugins.adapter_support import metrics, text_calls
from harmony_plugins.adapter_support.once import Once

from . import link as links
from . import request_context, results
from .names import NAME, metrics_enabled, selected_parser, status, undeclared_calls_passed

THINK_START = harmony.REASONING_START
THINK_END = harmony.REASONING_END
"""SGLang's base class wants a reasoning start and end (as its gpt-oss detector has): its
scheduler gates grammars after the end, and the ``tool_choice`` structural tag's excludes are
stripped of both. The core's caveat holds: the end is any message's end."""

logger = logging.getLogger("sglang_ext")
_count = metrics.Counting(logger)
_report = metrics.Counting(logger, count=False)  # without --enable-metrics: the log line only


def new_turn(tools: Iterable[Any] | None, tool_choice: Any = None, *,
             tools_known: bool = True, parallel_tool_calls: Any = True) -> Turn:
    """A choice's turn: the request's full tools (or, ``tools_known=False``, tools to be
    given later), SGLang's switch or ours, and the request's ``parallel_tool_calls`` (SGLang
    enforces it only under a grammar; the turn does, by the rule
    ``parallel_calls_refused``); its log line names the response SGLang's serving code is
    building in this task (:mod:`sglang_ext.request_ids`)."""
    request = Request(tools, tool_choice, undeclared_calls_passed(),
                      tools_known=tools_known,
                      parallel_tool_calls=parallel_tool_calls,
                      recover_text_calls=text_calls.switched_on(os.environ, once))
    observer = _count if metrics_enabled() else _report
    return Turn(request, observer=observer.for_request(request_context.current().response_id))


once = Once(logger)


def announce() -> None:
    """Log once per process, when a parser is first built, what the plugin installed.

    ``register`` runs before SGLang configures logging, so its own line is often not shown.
    """
    once("announce", logging.INFO, "harmony-ext parsers in use: %s",
         "; ".join(f"{k}: {v}" for k, v in status.items()) or "not registered")


def warn_once(key: str, message: str, *args: Any) -> None:
    once(key, logging.WARNING, message, *args)


class HarmonyExtReasoningDetector(BaseReasoningFormatDetector):
    """``--reasoning-parser harmony-ext``: owns the choice's turn (see the module docstring).

    SGLang builds it per request and choice with keyword arguments that vary by version and
    path (the scheduler and ``OpenAIServingChat.__init__`` build throw-away ones that never
    parse), so construction is cheap and unknown keywords are accepted.
    """

    # The end a request with a ``response_format`` selects instead of THINK_END (prompt.py), so
    # that its grammar starts at the answer's body (contract section 10): SGLang's scheduler
    # takes a request's choice only from this list.
    request_selectable_think_end_tokens = (harmony.ANSWER_START,)

    def __init__(
        self,
        stream_reasoning: bool = True,
        force_reasoning: bool = True,
        tool_call_parser_active: bool = False,
        force_nonempty_content: bool = False,
        **kwargs: Any,
    ) -> None:
        announce()
        super().__init__(
            THINK_START,
            THINK_END,
            force_reasoning=True,
            stream_reasoning=stream_reasoning,
            force_nonempty_content=force_nonempty_content,
        )
        # Queue steps for a tool detector when ours consumes this detector's output: SGLang
        # says whether a tool parser follows; which one, only a server's published arguments
        # say (none published: a script that drives SGLang's classes, ours by the name).
        tool_parser = selected_parser("tool_call_parser") if tool_call_parser_active else None
        self.hands_off = tool_call_parser_active and tool_parser in (None, NAME)
        if tool_parser not in (None, NAME):
            warn_once("tool:" + tool_parser, "harmony-ext: --reasoning-parser %s with "
                      "--tool-call-parser %s: tool calls are not surfaced; select %s for both",
                      NAME, tool_parser, NAME)
        self._request: Any = None
        self._link: links.Link | None = None
        self._held: list[str] = []  # reasoning held back when stream_reasoning is false

    def bind_request(self, request: Any) -> None:
        """Give the turn the request's tools (called by the ``ReasoningParser`` hook)."""
        self._request = request

    @property
    def link(self) -> links.Link:
        """The choice's link, holding its turn (started on first use)."""
        link = self._link
        if link is None:
            request = self._request
            choice = getattr(request, "tool_choice", None)
            if not self.hands_off and (request is None or read_tool_choice(choice).calls):
                # No tool parser follows: the turn never has tools. (With tool_choice "none"
                # SGLang runs none either, and then the request declares nothing: that is a
                # turn whose tools are known.)
                turn = new_turn(None, tools_known=False)
            elif request is not None:
                turn = new_turn(chat_request_tools(request), choice,
                                parallel_tool_calls=getattr(request, "parallel_tool_calls", True))
            else:  # the tool detector will give them
                turn = new_turn(None, tools_known=False)
            link = self._link = links.Link(turn)
        return link

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        link = self.link
        return self._result(link, link.turn.feed_text(new_text), final=False)

    def finish(self) -> ReasoningResult:
        link = self.link
        return self._result(link, link.turn.close(), final=True)

    def detect_and_parse(self, text: str) -> ReasoningResult:
        link = self.link
        result = self._result(link, link.turn.feed_text(text, finish="stop"), final=True)
        if not (self.hands_off and link.may_call()):
            result = self._maybe_apply_force_nonempty_content(result)
        return result

    def _result(self, link: links.Link, step: Step, final: bool) -> ReasoningResult:
        if self.hands_off:
            link.hand(step)
        elif final:  # no tool detector will ever give the tools: report the turn as it is
            link.turn.settle()
        reasoning = step.reasoning
        if self.stream_reasoning and not self._held:
            return ReasoningResult(step.content, reasoning)
        result = ReasoningResult(step.content)
        if reasoning:
            self._held.append(reasoning)
        if self.stream_reasoning or step.content or step.calls or final:
            result.reasoning_text = "".join(self._held)
            self._held = []
        return result


class HarmonyExtDetector(BaseFormatDetector):
    """``--tool-call-parser harmony-ext``: the tool-call view of the choice's turn.

    Streaming, each call is announced (id and name) as soon as its header is complete and its
    arguments follow as the model writes them, raw (never re-serialised), so the streamed
    pieces add up to the non-streamed arguments. ``prev_tool_call_arr`` / ``streamed_args_for_tool``
    get a call's whole argument string when the call ends (SGLang reads them only at the end
    of the stream), the same in both, so SGLang's end-of-stream top-up sends nothing. SGLang
    reads only the last entry, so an entry's text is let go when the next call begins: a
    request holds the arguments of its current call only.
    """

    def __init__(self) -> None:
        announce()
        super().__init__()
        reasoning_parser = selected_parser("reasoning_parser")
        self._expects_link = reasoning_parser == NAME
        if reasoning_parser not in (None, NAME):
            warn_once("reasoning:" + reasoning_parser, "harmony-ext: --tool-call-parser %s "
                      "with --reasoning-parser %s: the two parse separately and may disagree; "
                      "select %s for both", NAME, reasoning_parser, NAME)
        self.incomplete_tool_call_indices: set[int] = set()
        self._link: links.Link | None = None  # from our reasoning detector
        self._own: Turn | None = None  # raw text: no harmony-ext reasoning upstream
        # has_tool_call's parse of raw text, reused by detect_and_parse: (text, step)
        self._whole: tuple[str, Step] | None = None
        self._bound_tools: list[Any] | None = None  # from the FunctionCallParser hook

    def bind_tools(self, tools: list[Any] | None) -> None:
        """The request's tools, for ``has_tool_call`` on raw text (``FunctionCallParser`` hook)."""
        self._bound_tools = list(tools) if tools is not None else None

    @classmethod
    def parses_without_tools(cls) -> bool:
        # Always on the path, so call markup never reaches content even with no tools declared.
        return True

    # -- the link ----------------------------------------------------------------------

    def _linked(self) -> links.Link | None:
        """This call's link from our reasoning detector, checked; None: parse it ourselves."""
        link = request_context.current().link
        if link is not None and (link is self._link or link.claim(self)):
            self._link = link
            return link
        if self._link is not None:  # linked before: this call came without it
            links.lost("missing", "a tool-detector call came without its link (another "
                       "choice's, or none); the tool detector keeps its own turn's view")
            return self._link
        if self._expects_link:
            links.lost("missing", "--reasoning-parser %s is selected but the tool detector "
                       "got text without its link (separate_reasoning false, or SGLang "
                       "changed how it chains detectors); it parses that text itself", NAME)
            self._expects_link = False
        return None

    # -- streaming ---------------------------------------------------------------------

    def parse_streaming_increment(self, new_text: str, tools: list[Any]) -> StreamingParseResult:
        link = self._linked()
        if link is not None:
            steps = link.take(new_text, tools)
        else:
            steps = [self._own_turn(tools).feed_text(new_text)]
        return self._stream(steps)

    def finish(self, tools: list[Any]) -> StreamingParseResult:
        link = self._link
        if link is not None:
            steps = link.take(link.handed, tools)
            if not link.turn.closed:  # the reasoning detector was not finished
                steps.append(link.turn.close())
        elif self._own is not None:
            steps = [self._own.close()]
        else:
            steps = []
        return self._stream(steps)

    def _own_turn(self, tools: list[Any] | None) -> Turn:
        own = self._own
        if own is None:
            own = self._own = new_turn(tools or [])
        return own

    def _stream(self, steps: list[Step]) -> StreamingParseResult:
        if not steps:  # nothing for the tool detector in this step (reasoning: most steps)
            return results.result({"normal_text": "", "calls": []})
        step = fold(steps)
        items: list[dict[str, Any]] = []  # each a ToolCallItem's fields
        for call in step.calls:
            index = call.index  # the turn's: 0, 1, 2... per response, as SGLang's
            if call.id is not None:
                if index:  # SGLang reads only the last entry: let the earlier one go
                    self.prev_tool_call_arr[-1]["arguments"] = ""
                    self.streamed_args_for_tool[-1] = ""
                self.prev_tool_call_arr.append({"name": call.name, "arguments": ""})
                self.streamed_args_for_tool.append("")
                self.current_tool_id = index
                self.current_tool_name_sent = True
                items.append({"tool_index": index, "name": call.name,
                              "parameters": call.arguments})
            elif call.arguments:
                items.append({"tool_index": index, "parameters": call.arguments})
        for end in step.ended:
            if end.index == self.current_tool_id:  # an earlier call's entry was let go
                # Once per call: appending to these strings per piece would be quadratic.
                self.streamed_args_for_tool[end.index] = end.arguments
                self.prev_tool_call_arr[end.index]["arguments"] = end.arguments
        return results.result({"normal_text": step.content, "calls": items})

    # -- whole output ------------------------------------------------------------------

    def has_tool_call(self, text: str) -> bool:
        link = self._linked()
        if link is not None:
            if link.turn.tools_unknown and self._bound_tools is not None:
                link.declare(self._bound_tools)
            return link.may_call()
        if not harmony.may_hold_markers(text):  # no call can be in it, nothing to drop
            return False
        # Alone (no reasoning detector of ours before it: no reasoning parser, or a request
        # with separate_reasoning false), the text is raw Harmony. SGLang keeps the text of a
        # reply without a call as it is; where the parse drops chain of thought or markup,
        # the content is handed to the hooks below (show_content), which put it in the reply.
        step = self._parse_whole(text, self._bound_tools)
        if step.calls:
            return True
        if step.content != text:
            slot = request_context.current().content
            if slot is not None:
                slot.append((text, step.content))
        return False

    def detect_and_parse(self, text: str, tools: list[Any]) -> StreamingParseResult:
        link = self._linked()
        if link is not None:
            steps = link.take(text, tools)
            if not link.turn.closed:
                steps.append(link.turn.close())
        else:
            steps = [self._parse_whole(text, tools)]
        step = fold(steps)
        whole = {end.index: end.arguments for end in step.ended}  # checked, "{}" if none
        return results.result({"normal_text": step.content, "calls": [
            {"tool_index": call.index, "name": call.name,
             "parameters": whole.get(call.index, call.arguments)}
            for call in step.calls if call.id is not None]})

    def _parse_whole(self, text: str, tools: list[Any] | None) -> Step:
        """Parse raw output once; ``has_tool_call`` and ``detect_and_parse`` share the result.

        ``has_tool_call`` gets no tools from SGLang; the hook on ``FunctionCallParser`` binds
        them, so both calls parse with the same tools.
        """
        if self._whole is not None and self._whole[0] == text:
            return self._whole[1]
        step = new_turn(tools if tools is not None else self._bound_tools or []).feed_text(
            text, finish="stop")
        self._whole = (text, step)
        return step

    # -- tool_choice -------------------------------------------------------------------

    def structure_info(self) -> Any:
        """Legacy structural tag (used only when xgrammar has no ``harmony`` builder): the
        core's tag for the form the prompt renders calls in
        (:func:`harmony_plugins.harmony.call_structural_tag`), so the model is held to the form
        it reads back."""

        def info(name: str) -> StructureInfo:
            tag = harmony.call_structural_tag(name)
            return StructureInfo(begin=tag.begin, end=tag.end, trigger=tag.trigger)

        return info

    def get_structural_tag_name(self) -> str:
        """xgrammar's Harmony structural tag, as SGLang's gpt-oss parser uses."""
        return "harmony"
