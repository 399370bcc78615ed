"""SGLang's tool-call and reasoning detectors named ``harmony-ext``, both on ONE parse per choice.

SGLang runs two detectors per response choice, built independently and chained on text: the
reasoning detector sees each decoded delta first, and only its ``normal_text`` reaches the tool
detector, which alone decides what becomes ``content``. Two separate Harmony parses could disagree
about where the reasoning ends (SGLang's own gpt-oss pair does, see
docs/sglang-builtin-observations.md). So there is exactly one parse per choice:

* :class:`HarmonyExtReasoningDetector` owns it: a :class:`SharedParse` (one
  ``harmony_plugins.StreamParser``) fed the raw text once. Reasoning events become
  ``reasoning_text``; every other event (content, tool calls) is queued on the parse.
* Its ``normal_text`` is a :class:`Handoff`: a ``str`` whose value is the content of the delta
  and which carries the :class:`SharedParse` as an attribute. SGLang passes that very object to
  the tool detector of the same choice (that is its data path), so the two are linked by
  construction: no registry, no key, nothing shared between requests or choices.
* :class:`HarmonyExtDetector` (the tool detector) takes the queued events from the parse it was
  handed and turns them into ``ToolCallItem``s and content. It never parses that text again, so
  it cannot disagree with the reasoning detector.

If the handoff is lost (no ``harmony-ext`` reasoning parser upstream, ``separate_reasoning``
false, or a future SGLang that rebuilds the string), the tool detector parses the raw text it
gets with its own parse, and a lost handoff degrades to its string value: exactly the content.

The parse needs the request's tools (to resolve recipients) before the tool detector ever sees
the text, but SGLang does not give them to reasoning detectors: a hook on
``ReasoningParser.__init__`` (:mod:`sglang_ext.plugin`) calls :meth:`HarmonyExtReasoningDetector.
bind_request`. Unbound (the hook missing), the parse surfaces every ``functions.*`` call and the
tool detector keeps those its tools declare; bare-name recipients are then lost.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from collections.abc import Iterable
from typing import Any

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import (
    StreamingParseResult,
    StructureInfo,
    ToolCallItem,
)
from sglang.srt.parser.reasoning_parser import BaseReasoningFormatDetector
from sglang.srt.parser.reasoning_parser import (
    StreamingParseResult as ReasoningResult,
)

from harmony_plugins import StreamParser
from harmony_plugins.events import (
    ContentText,
    Event,
    ReasoningText,
    Recovery,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)

from .results import streaming_result, tool_call_item

NAME = "harmony-ext"
THINK_START = "<|channel|>analysis<|message|>"
THINK_END = "<|end|>"
"""As SGLang's gpt-oss detector: the scheduler gates grammars after ``<|end|>``, and the
``tool_choice`` structural tag excludes are stripped of these two."""

logger = logging.getLogger("sglang_ext")

RECOVERIES: Counter[str] = Counter()
"""Contract recovery rules applied in this process, by rule name."""


def pass_undeclared() -> bool:
    """Surface calls to undeclared functions (SGLang's own switch, or ours as in vllm_ext)."""
    for name in ("HARMONY_EXT_PASS_UNDECLARED", "SGLANG_FORWARD_UNKNOWN_TOOLS"):
        if os.environ.get(name, "").lower() in ("1", "true", "yes"):
            return True
    return False


def selected_parser(kind: str) -> str | None:
    """The server's ``tool_call_parser`` / ``reasoning_parser`` in this process, if known."""
    try:
        from sglang.srt.runtime_context import get_serving

        return getattr(get_serving(), kind, None)
    except Exception:  # not published (a bare detector), or an SGLang without it
        return None


def tool_names(tools: Iterable[Any] | None) -> list[str]:
    """Function names of SGLang ``Tool`` objects (or OpenAI dicts)."""
    names = []
    for tool in tools or ():
        function = getattr(tool, "function", None)
        if function is None and isinstance(tool, dict):
            function = tool.get("function")
        name = getattr(function, "name", None)
        if name is None and isinstance(function, dict):
            name = function.get("name")
        if name:
            names.append(name)
    return names


def request_tool_names(request: Any) -> list[str]:
    """The tools a chat request declares, as ``OpenAIServingChat._effective_tools`` sees them."""
    tools = list(getattr(request, "tools", None) or ())
    for message in getattr(request, "messages", None) or ():
        if getattr(message, "role", None) in ("root", "system", "developer"):
            tools.extend(getattr(message, "tools", None) or ())
    return tool_names(tools)


_warned: set[str] = set()


def announce() -> None:
    """Log once per process, when a parser is first built, what the plugin installed.

    ``register`` runs before SGLang configures logging, so its own line is often not shown.
    """
    if "announce" in _warned:
        return
    _warned.add("announce")
    from . import plugin

    logger.info("harmony-ext parsers in use: %s",
                "; ".join(f"{k}: {v}" for k, v in plugin.status.items()) or "not registered")


def warn_once(key: str, message: str, *args: Any) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(message, *args)


def count(event: Recovery, parse: SharedParse | None = None) -> None:
    """Count a contract recovery (malformed model output), per process and per response."""
    RECOVERIES[event.rule] += 1
    if parse is not None:
        parse.recovered[event.rule] += 1
    logger.debug("harmony-ext recovery %s, dropped %r", event.rule, event.text[:80])


class SharedParse:
    """One choice's only parse. The reasoning detector feeds it; the tool detector drains it.

    ``declared`` is None when the request's tools are unknown (the bind hook did not run); the
    parse then surfaces every ``functions.*`` call and the tool detector filters them.
    """

    __slots__ = ("declared", "pending", "closed", "recovered", "_parser", "no_content")

    def __init__(self, declared: list[str] | None) -> None:
        self.declared = declared
        self.pending: list[Event] = []  # events for the tool detector, in order
        self.closed = False
        self.recovered: Counter[str] = Counter()
        self._parser = StreamParser(
            declared, pass_undeclared=declared is None or pass_undeclared()
        )
        self.no_content = Handoff("", self)  # the handoff of most steps, made once

    def feed(self, text: str) -> list[Event]:
        if not text:
            return []
        events = self._parser.feed_text(text)
        if len(events) != 1 or events[0].__class__ is Recovery:  # one text event: nothing to count
            for event in events:
                if event.__class__ is Recovery:
                    count(event, self)  # type: ignore[arg-type]
        return events

    def close(self) -> list[Event]:
        if self.closed:
            return []
        self.closed = True
        events = self._parser.close()
        for event in events:
            if event.__class__ is Recovery:
                count(event, self)  # type: ignore[arg-type]
        if self.recovered:
            logger.info("harmony-ext recovered malformed model output: %s",
                        dict(self.recovered))
        return events

    def take(self) -> list[Event]:
        """The queued events, emptying the queue."""
        events = self.pending
        if events:  # most steps queue nothing: keep the empty list
            self.pending = []
        return events

    def has_call(self) -> bool:
        return any(e.__class__ is ToolCallBegin for e in self.pending)


class Handoff(str):
    """Normal text from the reasoning detector, carrying the choice's :class:`SharedParse`.

    Its value is the content; SGLang concatenates it with ``+`` at the end of a stream, and the
    overloads keep the parse attached through that.
    """

    parse: SharedParse

    def __new__(cls, text: str, parse: SharedParse) -> Handoff:
        obj = super().__new__(cls, text)
        obj.parse = parse
        return obj

    def __add__(self, other: str) -> Handoff:  # type: ignore[override]
        return Handoff(str.__add__(self, other), self.parse)

    def __radd__(self, other: str) -> Handoff:
        return Handoff(str.__add__(other, self), self.parse)


def parse_of(text: Any) -> SharedParse | None:
    return text.parse if isinstance(text, Handoff) else None


class HarmonyExtReasoningDetector(BaseReasoningFormatDetector):
    """``--reasoning-parser harmony-ext``: owns the choice's parse (see the module docstring).

    SGLang builds it per request and choice with keyword arguments that vary by version and
    path (the scheduler and ``OpenAIServingChat.__init__`` build throw-away ones that never
    parse), so construction is cheap and unknown keywords are accepted.
    """

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
        # Queue events for a tool detector only when ours consumes this detector's output.
        tool_parser = selected_parser("tool_call_parser") if tool_call_parser_active else None
        self.hands_off = tool_parser == NAME
        if tool_parser not in (None, NAME):
            warn_once("tool:" + tool_parser, "harmony-ext: --reasoning-parser %s with "
                      "--tool-call-parser %s: tool calls are not surfaced; select %s for both",
                      NAME, tool_parser, NAME)
        self._declared: list[str] | None = None
        self._parse: SharedParse | None = None
        self._held: list[str] = []  # reasoning held back when stream_reasoning is false

    def bind_request(self, request: Any) -> None:
        """Give the parse the request's tools (called by the ``ReasoningParser`` hook)."""
        self._declared = request_tool_names(request)

    @property
    def parse(self) -> SharedParse:
        parse = self._parse
        if parse is None:
            parse = self._parse = SharedParse(self._declared)
        return parse

    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        parse = self._parse or self.parse
        events = parse.feed(new_text)
        if len(events) == 1 and self.stream_reasoning and not self._held:
            # The usual step, one piece of reasoning or of the answer: what _result does.
            event = events[0]
            cls = event.__class__
            if cls is ReasoningText:
                result = ReasoningResult(reasoning_text=event.text)  # type: ignore[union-attr]
                result.normal_text = parse.no_content if self.hands_off else ""
                return result
            if cls is ContentText or cls is ToolCallArguments:
                result = ReasoningResult()
                if self.hands_off:
                    parse.pending.append(event)
                    result.normal_text = (Handoff(event.text, parse)  # type: ignore[union-attr]
                                          if cls is ContentText else parse.no_content)
                elif cls is ContentText:
                    result.normal_text = event.text  # type: ignore[union-attr]
                return result
        return self._result(events, final=False)

    def finish(self) -> ReasoningResult:
        return self._result(self.parse.close(), final=True)

    def detect_and_parse(self, text: str) -> ReasoningResult:
        parse = self.parse
        result = self._result(parse.feed(text) + parse.close(), final=True)
        if not (self.hands_off and parse.has_call()):
            result = self._maybe_apply_force_nonempty_content(result)
        return result

    def _result(self, events: list[Event], final: bool) -> ReasoningResult:
        parse = self.parse
        reasoning = self._held
        content: list[str] = []
        answered = False  # something other than reasoning came: held reasoning may go
        for event in events:
            cls = event.__class__
            if cls is ReasoningText:
                reasoning.append(event.text)  # type: ignore[union-attr]
                continue
            if cls is Recovery:
                continue
            if cls is ContentText:
                content.append(event.text)  # type: ignore[union-attr]
                answered = True
            elif cls is ToolCallBegin:
                answered = True
            if self.hands_off:
                parse.pending.append(event)
        if self.stream_reasoning or answered or final:
            reasoning_text = "".join(reasoning)
            self._held = []
        else:
            reasoning_text = ""
        result = ReasoningResult(reasoning_text=reasoning_text)
        text = "".join(content)
        # Assigned after construction: the constructor would replace an empty Handoff by "".
        if self.hands_off:
            result.normal_text = Handoff(text, parse) if text else parse.no_content
        else:
            result.normal_text = text
        return result


class HarmonyExtDetector(BaseFormatDetector):
    """``--tool-call-parser harmony-ext``: the tool-call view of the choice's parse.

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
        if reasoning_parser not in (None, NAME):
            warn_once("reasoning:" + reasoning_parser, "harmony-ext: --tool-call-parser %s "
                      "with --reasoning-parser %s: the two parse separately and may disagree; "
                      "select %s for both", NAME, reasoning_parser, NAME)
        self.bot_token = THINK_START
        self.eot_token = "<|call|>"
        self.incomplete_tool_call_indices: set[int] = set()
        self._shared: SharedParse | None = None  # handed over by our reasoning detector
        self._own: SharedParse | None = None  # raw text: no harmony-ext reasoning upstream
        self._index: dict[int, int] = {}  # parse's call index -> response's call index
        self._names: set[str] | None = None  # filter for an unbound shared parse
        # has_tool_call's parse of raw text, reused by detect_and_parse: ((text, tools), events)
        self._whole: tuple[tuple[str, list[str] | None], list[Event]] | None = None
        self._bound_tools: list[str] | None = None  # from the FunctionCallParser hook

    def bind_tools(self, tools: list[Any] | None) -> None:
        """The request's tools, for ``has_tool_call`` on raw text (``FunctionCallParser`` hook)."""
        self._bound_tools = tool_names(tools)

    @classmethod
    def parses_without_tools(cls) -> bool:
        # Always on the path, so call markup never reaches content even with no tools declared.
        return True

    # -- streaming ---------------------------------------------------------------------

    def parse_streaming_increment(self, new_text: str, tools: list[Any]) -> StreamingParseResult:
        return self._stream(self._events(new_text, tools, final=False), tools)

    def finish(self, tools: list[Any]) -> StreamingParseResult:
        return self._stream(self._events("", tools, final=True), tools)

    def _events(self, text: str, tools: list[Any], final: bool) -> list[Event]:
        shared = parse_of(text) or self._shared
        if shared is not None:
            self._shared = shared
            events = shared.take()
            if final and not shared.closed:  # the reasoning detector was not finished
                events = events + [e for e in shared.close() if e.__class__ is not ReasoningText]
            return events
        own = self._own
        if own is None:
            own = self._own = SharedParse(tool_names(tools))
        events = own.feed(text)
        if final:
            events += own.close()
        return events

    def _stream(self, events: list[Event], tools: list[Any]) -> StreamingParseResult:
        if not events:
            return streaming_result("", [])
        if len(events) == 1:  # the usual step, one piece of content or arguments, directly
            event = events[0]
            cls = event.__class__
            if cls is ContentText:
                return streaming_result(event.text, [])  # type: ignore[union-attr]
            if cls is ToolCallArguments:
                index = self._index.get(event.index)  # type: ignore[union-attr]
                calls = [] if index is None else [tool_call_item(index, event.text)]  # type: ignore[union-attr]
                return streaming_result("", calls)
        content: list[str] = []
        items: list[ToolCallItem] = []
        for event in events:
            cls = event.__class__
            if cls is ContentText:
                content.append(event.text)  # type: ignore[union-attr]
            elif cls is ToolCallArguments:
                index = self._index.get(event.index)  # type: ignore[union-attr]
                if index is None:
                    continue  # a call filtered out below
                text = event.text  # type: ignore[union-attr]
                if items and items[-1].tool_index == index:
                    items[-1].parameters += text
                else:
                    items.append(tool_call_item(index, text))
            elif cls is ToolCallBegin:
                name = event.name  # type: ignore[union-attr]
                if not self._declared(name, tools):
                    continue
                index = self._index[event.index] = len(self.prev_tool_call_arr)  # type: ignore[union-attr]
                if index:  # SGLang reads only the last entry: let the earlier call's text go
                    self.prev_tool_call_arr[-1]["arguments"] = ""
                    self.streamed_args_for_tool[-1] = ""
                self.prev_tool_call_arr.append({"name": name, "arguments": ""})
                self.streamed_args_for_tool.append("")
                self.current_tool_id = index
                self.current_tool_name_sent = True
                items.append(tool_call_item(index, "", name))
            elif cls is ToolCallEnd:
                index = self._index.get(event.index)  # type: ignore[union-attr]
                if index is not None:
                    # Once per call: appending to these strings per piece would be quadratic.
                    arguments = event.arguments  # type: ignore[union-attr]
                    self.streamed_args_for_tool[index] = arguments
                    self.prev_tool_call_arr[index]["arguments"] = arguments
        return streaming_result("".join(content), items)

    def _declared(self, name: str, tools: list[Any]) -> bool:
        """Whether a call from the parse is surfaced (only an unbound parse needs filtering)."""
        shared = self._shared
        if shared is None or shared.declared is not None or pass_undeclared():
            return True
        if self._names is None:
            self._names = set(tool_names(tools))
        return name in self._names

    # -- whole output ------------------------------------------------------------------

    def has_tool_call(self, text: str) -> bool:
        shared = parse_of(text)
        if shared is not None:
            return shared.has_call()
        if "<|" not in text:  # no marker spelled: no call can be in it
            return False
        return any(e.__class__ is ToolCallBegin for e in self._parse_whole(text, None))

    def detect_and_parse(self, text: str, tools: list[Any]) -> StreamingParseResult:
        shared = parse_of(text)
        if shared is not None:
            self._shared = shared
            events = shared.take()
            if not shared.closed:
                events = events + shared.close()
        else:
            events = self._parse_whole(text, tools)
        content: list[str] = []
        calls: dict[int, ToolCallItem] = {}
        for event in events:
            cls = event.__class__
            if cls is ContentText:
                content.append(event.text)  # type: ignore[union-attr]
            elif cls is ToolCallBegin and self._declared(event.name, tools):  # type: ignore[union-attr]
                calls[event.index] = tool_call_item(  # type: ignore[union-attr]
                    len(calls), "", event.name)  # type: ignore[union-attr]
            elif cls is ToolCallEnd and event.index in calls:  # type: ignore[union-attr]
                calls[event.index].parameters = event.arguments  # type: ignore[union-attr]
        return streaming_result("".join(content), list(calls.values()))

    def _parse_whole(self, text: str, tools: list[Any] | None) -> list[Event]:
        """Parse raw output once; ``has_tool_call`` and ``detect_and_parse`` share the result.

        ``has_tool_call`` gets no tools from SGLang; the hook on ``FunctionCallParser`` binds
        them. Without it, every ``functions.*`` call counts and ``detect_and_parse`` filters.
        """
        declared = tool_names(tools) if tools is not None else self._bound_tools
        if self._whole is not None and self._whole[0] == (text, declared):
            return self._whole[1]
        parse = SharedParse(declared)
        events = parse.feed(text) + parse.close()
        self._whole = ((text, declared), events)
        return events

    # -- tool_choice -------------------------------------------------------------------

    def structure_info(self) -> Any:
        """Legacy structural tag (used only when xgrammar has no ``harmony`` builder)."""

        def info(name: str) -> StructureInfo:
            return StructureInfo(
                begin=f"<|start|>assistant<|channel|>commentary to=functions.{name}"
                "<|constrain|>json<|message|>",
                end="<|call|>",
                trigger="<|start|>assistant<|channel|>commentary to=",
            )

        return info

    def get_structural_tag_name(self) -> str:
        """xgrammar's Harmony structural tag, as SGLang's gpt-oss parser uses."""
        return "harmony"
