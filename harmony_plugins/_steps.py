"""A step: what one feed of a response produced, grouped the way every API wants it.

An engine wants, per decode step, the reasoning text, the content text and the calls touched,
each joined once; the Responses API also wants the events in order (message boundaries).
:class:`Collector` is where the state machine puts what it produces, and it hands back one
:class:`Step` per feed: the step's parts directly, with no event built for them unless the
caller asked for events (``events=True``: the Responses API, ``StreamParser``). The collector
also keeps the turn's counts (recoveries, each with what it touched; call outcomes, each with
the call's name; leaks; reasoning tokens), which the turn reports when it closes.

A feed that produced nothing returns the shared :data:`EMPTY`, and :func:`fold` is the one way
steps are put together (the last feed and the close in one engine step; several steps an
adapter hands over at once).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

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
    events: tuple[Event, ...] = ()


EMPTY = Step()
"""The step of a feed that produced nothing."""

_new_step = _new_call = tuple.__new__
"""A named tuple's own ``__new__`` is Python (a function of keyword parameters): the one place
a feed's step and its calls are built, :meth:`Collector.step`, makes the tuples directly."""


class Collector:
    """Where the state machine puts what it produces: a feed's parts, until :meth:`step` hands
    them over as one :class:`Step`, and the turn's counts.

    The machine's states write a piece of text into the part it belongs to, ``reasoning_parts``
    or ``content_parts`` (a list each; a reasoning piece also adds its tokens to
    ``reasoning_tokens``), and, when the turn keeps events, append its event to ``events`` and
    set ``other`` (``events`` is None when it keeps none, and then no event is built).
    Everything else goes through the methods below, which keep the counts and set ``other``:
    the step holds more than text.
    """

    __slots__ = ("events", "reasoning_parts", "content_parts", "pieces", "begun", "other",
                 "ended", "step_recoveries", "step_leaks", "finish", "reasoning_tokens",
                 "recoveries", "outcomes", "leaks", "applied", "calls", "names")

    def __init__(self, events: bool = False) -> None:
        self.events: list[Event] | None = [] if events else None
        self.reasoning_parts: list[str] = []
        self.content_parts: list[str] = []
        self.pieces: list[tuple[int, str]] = []  # (call index, argument text), in order
        self.begun: dict[int, tuple[str, str]] = {}  # call index -> (id, name), begun this feed
        self.other = False  # the feed handed over more than text: calls, recoveries, events...
        self.ended: list[ToolCallEnd] = []
        self.step_recoveries: list[Recovery] = []
        self.step_leaks: list[str] = []
        self.finish: EndOfTurn | None = None
        # The turn's counts, over every step.
        self.reasoning_tokens = 0
        """Token ids of reasoning text (usage figures)."""
        self.recoveries: dict[str, int] = {}
        """Recovery rules applied, with how often."""
        self.outcomes: dict[str, int] = {}
        """Calls by outcome (``rules.OUTCOMES``)."""
        self.leaks: list[str] = []
        """Excerpts of the suspected leaks flagged."""
        self.applied: dict[tuple[str, str], int] = {}
        """Recovery rules applied with what each touched (``Summary.applied``), how often."""
        self.calls: list[tuple[str, str]] = []
        """Each call's name and outcome, as it ended or was dropped (``Summary.calls``)."""
        self.names: dict[int, str] = {}  # call index -> name, while the call is open

    # -- what the machine hands over, besides text ------------------------------------------

    def arguments(self, index: int, text: str) -> None:
        """A piece of the arguments of call ``index``."""
        self.pieces.append((index, text))
        self.other = True
        if self.events is not None:
            self.events.append(ToolCallArguments(index, text))

    def call_begin(self, index: int, call_id: str, name: str) -> None:
        self.begun[index] = (call_id, name)
        self.names[index] = name
        self.pieces.append((index, ""))  # its place among the feed's calls
        self.other = True
        if self.events is not None:
            self.events.append(ToolCallBegin(index, call_id, name))

    def call_end(self, end: ToolCallEnd) -> None:
        self.ended.append(end)
        self.count_outcome(end.outcome, self.names.pop(end.index, ""))
        self.other = True
        if self.events is not None:
            self.events.append(end)

    def count_outcome(self, outcome: str, name: str) -> None:
        """Count one call's outcome (``rules.OUTCOMES``), with the call's ``name``:
        :meth:`call_end` does, and so does the machine for a call it drops (``undeclared``)."""
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self.calls.append((name, outcome))

    def message_begin(self, kind: str, channel: str, written: str | None,
                      recipient: str | None, content_type: str | None,
                      separator: str = "") -> None:
        if self.events is not None:
            self.events.append(MessageBegin(kind, channel, written, recipient, content_type,
                                            separator))
            self.other = True

    def message_end(self, by: str) -> None:
        if self.events is not None:
            self.events.append(MessageEnd(by))
            self.other = True

    def recovery(self, rule: str, text: str = "", at: str = "") -> None:
        """A recovery rule applied (counted), ``at`` what it touched (``Summary.applied``)."""
        event = Recovery(rule, text)
        self.step_recoveries.append(event)
        self.recoveries[rule] = self.recoveries.get(rule, 0) + 1
        key = (rule, at)
        self.applied[key] = self.applied.get(key, 0) + 1
        self.other = True
        if self.events is not None:
            self.events.append(event)

    def leak(self, excerpt: str) -> None:
        """Suspected markup in visible text (counted)."""
        self.step_leaks.append(excerpt)
        self.leaks.append(excerpt)
        self.other = True
        if self.events is not None:
            self.events.append(LeakSuspected(excerpt))

    def end(self, reason: str, finish_reason: str | None) -> None:
        self.finish = event = EndOfTurn(reason, finish_reason)
        self.other = True
        if self.events is not None:
            self.events.append(event)

    # -- what the caller takes --------------------------------------------------------------

    def step(self) -> Step:
        """What was handed over since the last call, as one step (and start afresh)."""
        reasoning, content, other = self.reasoning_parts, self.content_parts, self.other
        if not (reasoning or content or other):
            return EMPTY
        calls = ended = recoveries = leaks = events = ()
        finish = None
        if other:
            self.other = False
            if self.pieces:
                calls = self._calls()
            if self.ended:
                ended, self.ended = tuple(self.ended), []
            if self.step_recoveries:
                recoveries, self.step_recoveries = tuple(self.step_recoveries), []
            if self.step_leaks:
                leaks, self.step_leaks = tuple(self.step_leaks), []
            finish, self.finish = self.finish, None
            if self.events:
                events, self.events = tuple(self.events), []
        if reasoning:
            self.reasoning_parts = []
        if content:
            self.content_parts = []
        return _new_step(Step, ("".join(reasoning) if reasoning else "",
                                "".join(content) if content else "",
                                calls, ended, recoveries, leaks, finish, events))

    def _calls(self) -> tuple[CallDelta, ...]:
        """The feed's calls, each once, in order of first appearance: its id and name if it
        began in the feed, and its argument pieces joined (and start afresh)."""
        pieces, begun = self.pieces, self.begun
        self.pieces = []
        if len(pieces) == 1 and not begun:  # one piece of a call begun before: most steps
            index, text = pieces[0]
            return (_new_call(CallDelta, (index, None, None, text)),)
        self.begun = {}
        texts: dict[int, list[str]] = {}
        for index, text in pieces:
            texts.setdefault(index, []).append(text)
        return tuple([_new_call(CallDelta, (index, *begun.get(index, (None, None)),
                                            "".join(parts)))
                      for index, parts in texts.items()])


def step_of(events: Iterable[Event], separator: str = "") -> tuple[Step, str]:
    """Group events (``StreamParser``'s, a caller's) into a :class:`Step`, each content
    message's separator (``MessageBegin.separator``) put before its first text, as a turn's
    steps have it. ``separator``: one an earlier batch's ``MessageBegin`` left pending (its
    message had no text yet). Returns the step and the separator still pending."""
    events = tuple(events)
    collector = Collector()
    for event in events:
        kind = event.__class__
        if kind is ContentText:
            collector.content_parts.append(separator + event.text if separator else event.text)
            separator = ""
        elif kind is MessageBegin:
            separator = event.separator
        elif kind is ReasoningText:
            collector.reasoning_parts.append(event.text)
        else:
            _replay(collector, event)
    collector.other = True
    return collector.step()._replace(events=events), separator


def _replay(collector: Collector, event: Event) -> None:
    """Hand an event that is not text back to a collector, as the machine handed it over."""
    kind = event.__class__
    if kind is ToolCallArguments:
        collector.arguments(event.index, event.text)
    elif kind is ToolCallBegin:
        collector.call_begin(event.index, event.id, event.name)
    elif kind is ToolCallEnd:
        collector.call_end(event)
    elif kind is Recovery:
        collector.recovery(event.rule, event.text)
    elif kind is LeakSuspected:
        collector.leak(event.excerpt)
    elif kind is EndOfTurn:
        collector.end(event.reason, event.finish_reason)


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
    collector.other = True
    return collector.step()._replace(events=tuple(events))


def _add(collector: Collector, step: Step) -> None:
    """Hand a step's parts to a collector again (its events are kept by :func:`fold`)."""
    if step.reasoning:
        collector.reasoning_parts.append(step.reasoning)
    if step.content:
        collector.content_parts.append(step.content)
    for call in step.calls:
        if call.id is not None:
            collector.call_begin(call.index, call.id, call.name or "")
        if call.arguments:
            collector.arguments(call.index, call.arguments)
    collector.ended += step.ended
    collector.step_recoveries += step.recoveries
    collector.step_leaks += step.leaks
    if step.finish is not None:
        collector.finish = step.finish
