"""A step: what one feed of a response produced, grouped the way every API wants it.

An engine wants, per decode step, the reasoning text, the content text and the calls touched,
each joined once; the Responses API also wants the events in order (message boundaries). The
machine's states return *parts* (the kinds below); the turn hands each to its
:class:`StepBuilder`, the one writer of its steps, which gives back one :class:`Step` per feed,
with no event built unless the caller asked for events (``events=True``: the Responses API,
``StreamParser``). The builder also keeps the turn's counts (recoveries, each with what it
touched; call outcomes, each with the call's name; leaks; reasoning tokens), which the turn
reports when it closes.

A feed that produced nothing returns the shared :data:`EMPTY`, and :func:`fold` is the one way
steps are put together (the last feed and the close in one engine step; several steps an
adapter hands over at once), through the same :meth:`StepBuilder.add`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, NamedTuple

from ._events import (
    ContentText,
    EndOfTurn,
    Event,
    LeakSuspected,
    MessageBegin,
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
a feed's step and its calls are built, :class:`StepBuilder`, makes the tuples directly."""


# -- the parts a step is built from -----------------------------------------------------------
#
# What the machine's states return: a plain tuple for text and counts (built on the per-token
# path, where an event object each would cost more than the rest of the parse), the frozen
# event itself for everything else (message boundaries, calls begun and ended, suspected leaks,
# the end of the turn).

REASONING = 0
"""``(REASONING, text, tokens)``: chain of thought, made of ``tokens`` token ids."""
CONTENT = 1
"""``(CONTENT, text, lead)``: visible text; ``lead`` (usually ``""``) goes before it in the
chat content, never in its event (contract section 2's line break after a preamble)."""
ARGUMENTS = 2
"""``(ARGUMENTS, index, text)``: a piece of call ``index``'s arguments."""
RECOVERY = 3
"""``(RECOVERY, rule, text, at)``: a recovery rule applied to ``text``; ``at`` is what it
touched (``Summary.applied``)."""
OUTCOME = 4
"""``(OUTCOME, outcome, name)``: the outcome of a call dropped before its body (undeclared)."""
PARTS = 5
"""``(PARTS, parts)``: several parts from one piece of text (a held message given out)."""


class StepBuilder:
    """The one writer of a turn's steps: it takes the parts the machine returns
    (:meth:`add`), hands them over as one :class:`Step` per feed (:meth:`step`), and keeps the
    turn's counts (recoveries, each with what it touched; call outcomes, each with the call's
    name; leaks; reasoning tokens), which the turn reports when it closes.

    Events are built only when the turn keeps them (``events=True``); ``other`` says the feed
    produced more than text (calls, recoveries, events...).
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
        self.other = False
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

    def add_all(self, parts: Iterable[Any]) -> None:
        for part in parts:
            self.add(part)

    def add(self, part: Any) -> None:
        """Take one part (see the kinds above); None is nothing."""
        if part.__class__ is tuple:
            _ADD_PART[part[0]](self, part)
        elif part is not None:
            _ADD_EVENT.get(part.__class__, StepBuilder._boundary)(self, part)

    # -- the parts, by kind (dispatched by the tables after the class) --------------------------

    def _reasoning(self, part: tuple[int, str, int]) -> None:
        self.reasoning_parts.append(part[1])
        self.reasoning_tokens += part[2]
        if self.events is not None:
            self.events.append(ReasoningText(part[1]))
            self.other = True

    def _content(self, part: tuple[int, str, str]) -> None:
        _, text, lead = part
        self.content_parts.append(lead + text if lead else text)
        if self.events is not None:
            self.events.append(ContentText(text))
            self.other = True

    def _arguments(self, part: tuple[int, int, str]) -> None:
        _, index, text = part
        self.pieces.append((index, text))
        self.other = True
        if self.events is not None:
            self.events.append(ToolCallArguments(index, text))

    def _recovery(self, part: tuple[int, str, str, str]) -> None:
        """A recovery rule applied (counted), with what it touched (``Summary.applied``)."""
        _, rule, text, at = part
        event = Recovery(rule, text)
        self.step_recoveries.append(event)
        self.recoveries[rule] = self.recoveries.get(rule, 0) + 1
        key = (rule, at)
        self.applied[key] = self.applied.get(key, 0) + 1
        self.other = True
        if self.events is not None:
            self.events.append(event)

    def _outcome(self, part: tuple[int, str, str]) -> None:
        self._count_outcome(part[1], part[2])

    def _parts(self, part: tuple[int, tuple[Any, ...]]) -> None:
        for each in part[1]:
            self.add(each)

    def _call_begin(self, begin: ToolCallBegin) -> None:
        self.begun[begin.index] = (begin.id, begin.name)
        self.names[begin.index] = begin.name
        self.pieces.append((begin.index, ""))  # its place among the feed's calls
        self._event(begin)

    def _call_end(self, end: ToolCallEnd) -> None:
        self.ended.append(end)
        self._count_outcome(end.outcome, self.names.pop(end.index, ""))
        self._event(end)

    def _leak(self, leak: LeakSuspected) -> None:
        self.step_leaks.append(leak.excerpt)
        self.leaks.append(leak.excerpt)
        self._event(leak)

    def _end(self, end: EndOfTurn) -> None:
        self.finish = end
        self._event(end)

    def _event(self, event: Event) -> None:
        """An event that is more than text: the step holds it (and its events list)."""
        self.other = True
        if self.events is not None:
            self.events.append(event)

    def _boundary(self, event: Event) -> None:
        """A message boundary (``MessageBegin``, ``MessageEnd``): only an event."""
        if self.events is not None:
            self.events.append(event)
            self.other = True

    def _count_outcome(self, outcome: str, name: str) -> None:
        """Count one call's outcome (``rules.OUTCOMES``), with the call's ``name``."""
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self.calls.append((name, outcome))

    # -- what the caller takes --------------------------------------------------------------

    def one(self, part: Any) -> Step:
        """The step of a feed that produced at most one part, nothing before it pending: the
        per-token path, where a text part becomes its step directly."""
        if part is None:
            return EMPTY
        if self.events is None and part.__class__ is tuple and not self.other:
            tag = part[0]
            if tag == REASONING:
                self.reasoning_tokens += part[2]
                return _new_step(Step, (part[1], "", (), (), (), (), None, ()))
            if tag == CONTENT:
                text = part[2] + part[1] if part[2] else part[1]
                return _new_step(Step, ("", text, (), (), (), (), None, ()))
            if tag == ARGUMENTS:
                call = _new_call(CallDelta, (part[1], None, None, part[2]))
                return _new_step(Step, ("", "", (call,), (), (), (), None, ()))
        self.add(part)
        return self.step()

    def step(self) -> Step:
        """What was added since the last call, as one step (and start afresh)."""
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


_ADD_PART: dict[int, Callable[[StepBuilder, Any], None]] = {
    REASONING: StepBuilder._reasoning, CONTENT: StepBuilder._content,
    ARGUMENTS: StepBuilder._arguments, RECOVERY: StepBuilder._recovery,
    OUTCOME: StepBuilder._outcome, PARTS: StepBuilder._parts,
}
"""How each kind of tuple part is added."""
_ADD_EVENT: dict[type, Callable[[StepBuilder, Any], None]] = {
    ToolCallBegin: StepBuilder._call_begin, ToolCallEnd: StepBuilder._call_end,
    LeakSuspected: StepBuilder._leak, EndOfTurn: StepBuilder._end,
}
"""How each event part is added (message boundaries: :meth:`StepBuilder._boundary`)."""


def step_of(events: Iterable[Event], separator: str = "") -> tuple[Step, str]:
    """Group events (``StreamParser``'s, a caller's) into a :class:`Step`, each content
    message's separator (``MessageBegin.separator``) put before its first text, as a turn's
    steps have it. ``separator``: one an earlier batch's ``MessageBegin`` left pending (its
    message had no text yet). Returns the step and the separator still pending."""
    events = tuple(events)
    builder = StepBuilder()
    for event in events:
        kind = event.__class__
        if kind is ContentText:
            builder.add((CONTENT, event.text, separator))
            separator = ""
        elif kind is MessageBegin:
            separator = event.separator
        else:
            builder.add(_part_of(event))
    builder.other = True
    return builder.step()._replace(events=events), separator


def _part_of(event: Event) -> Any:
    """The part an event other than content text and message boundaries stands for."""
    kind = event.__class__
    if kind is ReasoningText:
        return (REASONING, event.text, 0)
    if kind is ToolCallArguments:
        return (ARGUMENTS, event.index, event.text)
    if kind is Recovery:
        return (RECOVERY, event.rule, event.text, "")
    return event  # ToolCallBegin, ToolCallEnd, LeakSuspected, EndOfTurn (MessageEnd: nothing)


def fold(steps: Sequence[Step]) -> Step:
    """Several consecutive steps as one: texts joined, each call's pieces joined under its
    first appearance, the rest in order (the one fold of steps: the turn's last feed and its
    close, an adapter's queued steps)."""
    steps = [s for s in steps if s is not EMPTY]
    if not steps:
        return EMPTY
    if len(steps) == 1:
        return steps[0]
    builder = StepBuilder()
    events: list[Event] = []
    for step in steps:
        builder.add_all(_parts_of(step))
        events += step.events
    builder.other = True
    return builder.step()._replace(events=tuple(events))


def _parts_of(step: Step) -> Iterator[Any]:
    """A step's content as the parts it was built from (its events are kept by :func:`fold`)."""
    if step.reasoning:
        yield (REASONING, step.reasoning, 0)
    if step.content:
        yield (CONTENT, step.content, "")
    for call in step.calls:
        if call.id is not None:
            yield ToolCallBegin(call.index, call.id, call.name or "")
        if call.arguments:
            yield (ARGUMENTS, call.index, call.arguments)
    yield from step.ended
    for recovery in step.recoveries:
        yield (RECOVERY, recovery.rule, recovery.text, "")
    for excerpt in step.leaks:
        yield LeakSuspected(excerpt)
    if step.finish is not None:
        yield step.finish
