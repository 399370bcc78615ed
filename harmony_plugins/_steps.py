"""A step: what one feed of a response produced, grouped the way every API wants it.

Events say what happened in order; an engine wants, per decode step, the reasoning text,
the content text and the calls touched, each joined once. :func:`step_of` does that grouping
in one place, so no adapter walks events itself (except the Responses API, which needs the
order: :attr:`Step.events`).

Steps are built once per feed on the hot path, so they are named tuples built without
their Python ``__new__`` (one tuple allocation), and a feed that produced nothing returns
the shared :data:`EMPTY`.
"""

from __future__ import annotations

from typing import NamedTuple

from ._events import (
    ContentText,
    EndOfTurn,
    Event,
    LeakSuspected,
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
    ``events``: the events themselves, in order, message boundaries included (the
    Responses API needs them).
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
"""The step of a feed that produced no event."""


def step_of(events: list[Event]) -> Step:
    """Group the events of one feed into a :class:`Step`."""
    if not events:
        return EMPTY
    if len(events) == 1:  # the usual decode step: one piece of text or of arguments
        event = events[0]
        cls = event.__class__
        if cls is ReasoningText:
            return _tuple_new(Step, (event.text, "", (), (), (), (), None, events))
        if cls is ContentText:
            return _tuple_new(Step, ("", event.text, (), (), (), (), None, events))
        if cls is ToolCallArguments:
            call = _tuple_new(CallDelta, (event.index, None, None, event.text))
            return _tuple_new(Step, ("", "", (call,), (), (), (), None, events))
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, list] = {}  # index -> [id, name, pieces]
    ended: list[ToolCallEnd] = []
    recoveries: list[Recovery] = []
    leaks: list[str] = []
    finish: EndOfTurn | None = None
    for event in events:
        match event:
            case ReasoningText(text=text):
                reasoning.append(text)
            case ContentText(text=text):
                content.append(text)
            case ToolCallArguments(index=index, text=text):
                if index in calls:
                    calls[index][2].append(text)
                else:
                    calls[index] = [None, None, [text]]
            case ToolCallBegin(index=index, id=call_id, name=name):
                calls[index] = [call_id, name, []]
            case ToolCallEnd():
                ended.append(event)
            case Recovery():
                recoveries.append(event)
            case LeakSuspected(excerpt=excerpt):
                leaks.append(excerpt)
            case EndOfTurn():
                finish = event
    return _tuple_new(Step, (
        "".join(reasoning),
        "".join(content),
        tuple(_tuple_new(CallDelta, (index, call_id, name, "".join(pieces)))
              for index, (call_id, name, pieces) in calls.items()),
        tuple(ended),
        tuple(recoveries),
        tuple(leaks),
        finish,
        events,
    ))


def join(first: Step, second: Step) -> Step:
    """Two consecutive steps as one (a last feed and the close, fed in one engine step)."""
    if second is EMPTY:
        return first
    if first is EMPTY:
        return second
    return step_of(list(first.events) + list(second.events))
