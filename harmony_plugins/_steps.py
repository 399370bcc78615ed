"""A step: what one feed of a response produced, grouped the way every API wants it.

An engine wants, per decode step, the reasoning text, the content text and the calls touched,
each joined once; the Responses API also wants the events in order (message boundaries).
:class:`Collector` is where the state machine puts what it produces, and it hands back one
:class:`Step` per feed: the step's parts directly, with no event built for them unless the
caller asked for events (``events=True``: the Responses API, ``StreamParser``). So the hot
path of a chat stream (one piece of text per decode step) costs one list append and one
tuple, not an event object per piece.

Steps are named tuples built without their Python ``__new__`` (one tuple allocation), a feed
that produced nothing returns the shared :data:`EMPTY`, and :func:`fold` is the one way steps
are put together (the last feed and the close in one engine step; several steps an adapter
hands over at once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple

from ._events import (
    ContentText,
    EndOfTurn,
    Event,
    LeakSuspected,
    MessageBegin,
    MessageEnd,
    ReasoningText,
    Recovery,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)

_tuple_new = tuple.__new__


class CallDelta(NamedTuple):
    """One call's part of a step. ``id`` and ``name`` are set only when the call begins in
    this step (OpenAI's first streamed item of a call); ``arguments`` is this step's piece
    of its raw argument text (``""`` when none)."""

    index: int
    id: str | None
    name: str | None
    arguments: str


class Step(NamedTuple):
    """What one feed (or the close) of a :class:`~harmony_plugins._turn.Turn` produced.

    ``reasoning`` / ``content``: this step's text of each kind, joined (``""`` when none).
    ``calls``: the calls begun or continued, in order of first appearance. ``ended``: the
    calls that ended, with their whole arguments and check outcome. ``recoveries``: the
    contract rules applied. ``leaks``: excerpts of suspected markup in visible text.
    ``finish``: the ``EndOfTurn`` when the stream was closed in this step.
    ``events``: the events themselves, in order, message boundaries included, for a turn
    built with ``events=True`` (the Responses API needs them); ``()`` otherwise.
    """

    reasoning: str = ""
    content: str = ""
    calls: tuple[CallDelta, ...] = ()
    ended: tuple[ToolCallEnd, ...] = ()
    recoveries: tuple[Recovery, ...] = ()
    leaks: tuple[str, ...] = ()
    finish: EndOfTurn | None = None
    events: tuple[Event, ...] | list[Event] = ()


EMPTY = Step()
"""The step of a feed that produced nothing."""


class Builders(NamedTuple):
    """What a caller builds from a turn's output, for :attr:`~harmony_plugins.Turn.decode_ids`.

    The usual decode step is one piece of one kind; its object is built straight from the
    piece, with no :class:`Step` made: ``reasoning(text)``, ``content(text)``,
    ``arguments(index, text)`` (a piece of the arguments of call ``index``, begun in an earlier
    step). Any other step is handed whole to ``step(step)``. A builder returns what the caller
    hands its engine, None for nothing to show (a piece builder that returns None is then
    given the step too, which is :data:`EMPTY`). An engine builds one object per decode step;
    these let it build that object and nothing else.
    """

    reasoning: Callable[[str], Any]
    content: Callable[[str], Any]
    arguments: Callable[[int, str], Any]
    step: Callable[[Step], Any]


def _reasoning_step(text: str) -> Step:
    return _tuple_new(Step, (text, "", (), (), (), (), None, ()))


def _content_step(text: str) -> Step:
    return _tuple_new(Step, ("", text, (), (), (), (), None, ()))


def _arguments_step(index: int, text: str) -> Step:
    call = _tuple_new(CallDelta, (index, None, None, text))
    return _tuple_new(Step, ("", "", (call,), (), (), (), None, ()))


def _same(step: Step) -> Step:
    return step


STEPS = Builders(_reasoning_step, _content_step, _arguments_step, _same)
"""The builders of :class:`Step` s: :attr:`~harmony_plugins.Turn.decode_ids` then gives what
:meth:`~harmony_plugins.Turn.feed_ids` gives."""

# What a feed touched, as bits: the common steps (one kind of text) are built directly.
_R, _C, _A, _OTHER = 1, 2, 4, 8


class Collector:
    """Where the state machine puts what a feed produces; :meth:`step` hands it over.

    ``events``: also keep the events, in order (None: keep none, build none).
    """

    __slots__ = ("events", "touched", "reasoning_parts", "content_parts", "calls", "last",
                 "ended", "recoveries", "leaks", "finish", "reasoning_tokens")

    def __init__(self, events: bool = False) -> None:
        self.events: list[Event] | None = [] if events else None
        self.touched = 0
        self.reasoning_parts: list[str] = []
        self.content_parts: list[str] = []
        self.calls: list[list] = []  # [index, id, name, pieces] in order of first appearance
        self.last: list | None = None  # the call touched last
        self.ended: list[ToolCallEnd] = []
        self.recoveries: list[Recovery] = []
        self.leaks: list[str] = []
        self.finish: EndOfTurn | None = None
        self.reasoning_tokens = 0  # token ids of reasoning text, over the whole turn

    # -- what the machine hands over --------------------------------------------------------

    def reasoning(self, text: str, tokens: int = 0) -> None:
        """A piece of reasoning, made of ``tokens`` token ids (0: text)."""
        self.reasoning_parts.append(text)
        self.reasoning_tokens += tokens
        self.touched |= _R
        if self.events is not None:
            self.events.append(ReasoningText(text))

    def content(self, text: str) -> None:
        self.content_parts.append(text)
        self.touched |= _C
        if self.events is not None:
            self.events.append(ContentText(text))

    def arguments(self, index: int, text: str) -> None:
        last = self.last
        if last is None or last[0] != index:
            last = self._call(index, None, None)
        last[3].append(text)
        self.touched |= _A
        if self.events is not None:
            self.events.append(ToolCallArguments(index, text))

    def call_begin(self, index: int, call_id: str, name: str) -> None:
        self._call(index, call_id, name)
        self.touched |= _OTHER
        if self.events is not None:
            self.events.append(ToolCallBegin(index, call_id, name))

    def call_end(self, end: ToolCallEnd) -> None:
        self.ended.append(end)
        self.touched |= _OTHER
        if self.events is not None:
            self.events.append(end)

    def message_begin(self, kind: str, channel: str, written: str | None,
                      recipient: str | None, content_type: str | None) -> None:
        if self.events is not None:
            self.events.append(MessageBegin(kind, channel, written, recipient, content_type))
            self.touched |= _OTHER

    def message_end(self, by: str) -> None:
        if self.events is not None:
            self.events.append(MessageEnd(by))
            self.touched |= _OTHER

    def recovery(self, rule: str, text: str = "") -> None:
        event = Recovery(rule, text)
        self.recoveries.append(event)
        self.touched |= _OTHER
        if self.events is not None:
            self.events.append(event)

    def leak(self, excerpt: str) -> None:
        self.leaks.append(excerpt)
        self.touched |= _OTHER
        if self.events is not None:
            self.events.append(LeakSuspected(excerpt))

    def end(self, reason: str, finish_reason: str | None) -> None:
        self.finish = event = EndOfTurn(reason, finish_reason)
        self.touched |= _OTHER
        if self.events is not None:
            self.events.append(event)

    def _call(self, index: int, call_id: str | None, name: str | None) -> list:
        slot = [index, call_id, name, []]
        for old in self.calls:
            if old[0] == index:  # the call began earlier in this feed
                if call_id is not None:
                    old[1], old[2] = call_id, name
                slot = old
                break
        else:
            self.calls.append(slot)
        self.last = slot
        return slot

    # -- what the caller takes --------------------------------------------------------------

    def step(self) -> Step:
        """What was handed over since the last call, as one step (and start afresh)."""
        touched = self.touched
        if not touched:
            return EMPTY
        self.touched = 0
        events = self.events
        if events is None:
            events = ()
        else:
            self.events = []
        if touched in (_R, _C):  # one kind of text: built directly
            parts = self.reasoning_parts if touched == _R else self.content_parts
            text = "".join(parts)  # (one part: the part itself)
            parts.clear()
            if touched == _R:
                return _tuple_new(Step, (text, "", (), (), (), (), None, events))
            return _tuple_new(Step, ("", text, (), (), (), (), None, events))
        calls = self.calls
        if touched == _A and len(calls) == 1 and calls[0][1] is None:
            index, _, _, pieces = calls[0]
            self.calls = []
            self.last = None
            call = _tuple_new(CallDelta, (index, None, None, "".join(pieces)))
            return _tuple_new(Step, ("", "", (call,), (), (), (), None, events))
        return self._whole_step(events)

    def _whole_step(self, events: list[Event] | tuple[()]) -> Step:
        calls: tuple[CallDelta, ...] = ()
        if self.calls:
            calls = tuple([_tuple_new(CallDelta, (index, call_id, name, "".join(pieces)))
                           for index, call_id, name, pieces in self.calls])
            self.calls = []
            self.last = None
        reasoning, content = self.reasoning_parts, self.content_parts
        step = _tuple_new(Step, (
            "".join(reasoning), "".join(content), calls, tuple(self.ended),
            tuple(self.recoveries), tuple(self.leaks), self.finish, events))
        reasoning.clear()
        content.clear()
        if self.ended:
            self.ended = []
        if self.recoveries:
            self.recoveries = []
        if self.leaks:
            self.leaks = []
        self.finish = None
        return step


def step_of(events: Iterable[Event]) -> Step:
    """Group events (``StreamParser``'s, a caller's) into a :class:`Step`."""
    collector = Collector(events=True)
    for event in events:
        _REPLAY[event.__class__](collector, event)
    return collector.step()


_REPLAY: dict[type, Callable[[Collector, Any], None]] = {
    ReasoningText: lambda c, e: c.reasoning(e.text),
    ContentText: lambda c, e: c.content(e.text),
    ToolCallArguments: lambda c, e: c.arguments(e.index, e.text),
    ToolCallBegin: lambda c, e: c.call_begin(e.index, e.id, e.name),
    ToolCallEnd: Collector.call_end,
    MessageBegin: lambda c, e: c.message_begin(e.kind, e.channel, e.written_channel,
                                               e.recipient, e.content_type),
    MessageEnd: lambda c, e: c.message_end(e.by),
    Recovery: lambda c, e: c.recovery(e.rule, e.text),
    LeakSuspected: lambda c, e: c.leak(e.excerpt),
    EndOfTurn: lambda c, e: c.end(e.reason, e.finish_reason),
}
"""Each event's call on a collector (the call the machine made when it produced it)."""


def fold(steps: Sequence[Step]) -> Step:
    """Several consecutive steps as one: texts joined, each call's pieces joined under its
    first appearance, the rest in order (the one fold of steps: the turn's last feed and its
    close, an adapter's queued steps)."""
    steps = [s for s in steps if s is not EMPTY]
    if not steps:
        return EMPTY
    if len(steps) == 1:
        return steps[0]
    collector = Collector()
    events: list[Event] = []
    for step in steps:
        _add(collector, step)
        events += step.events
    collector.touched |= _OTHER
    return collector.step()._replace(events=events if events else ())


def _add(collector: Collector, step: Step) -> None:
    """Hand a step's parts to a collector again (its events are kept by :func:`fold`)."""
    if step.reasoning:
        collector.reasoning(step.reasoning)
    if step.content:
        collector.content(step.content)
    for call in step.calls:
        if call.id is not None:
            collector.call_begin(call.index, call.id, call.name or "")
        if call.arguments:
            collector.arguments(call.index, call.arguments)
    collector.ended += step.ended
    collector.recoveries += step.recoveries
    collector.leaks += step.leaks
    if step.finish is not None:
        collector.finish = step.finish
