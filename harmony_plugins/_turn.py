"""One response choice: the request's rules, the parse and its counts.

This is the core's counterpart of h11's ``Connection``. An adapter builds a :class:`Request`
from what the engine gives it (the request's ``tools``, ``tool_choice``, the pass-undeclared
switch) and a :class:`Turn` per response choice; it feeds each decode step to the turn and
gets one :class:`~harmony_plugins._steps.Step` back, which it translates into its engine's
types. The rules about a response are decided here or below: what is declared (functions,
Responses built-in tools and namespaces), what ``tool_choice: "none"`` does, how the
switch is spelled, what the finish is when the engine does not say, what is counted.

When a turn closes it hands a :class:`Summary` to the ``observer`` it was given; the
adapters' observer (the engine glue's) counts it on ``/metrics`` and writes the one log line
per response that needed a recovery (contract section 9): the core itself logs nothing.
Building a :class:`Request` or a :class:`Turn` parses nothing: engines build throw-away parser
objects per request, and the work is done on the first feed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from . import rules
from ._events import ReasoningText
from ._frontends import UNKNOWN, IdsInput, Piece, TextInput, checked_ids
from ._joints import Joints
from ._machine import Machine, Rules
from ._steps import EMPTY, Step, StepBuilder, fold
from ._tool_choice import read_tool_choice
from ._tools import builtin_names, declared_tools, tool_table
from .vocab import Vocab

FINISHES = ("stop", "length", "unknown")
"""Why an engine stopped: on its own (a stop token, or the output's end), at its token limit
(``max_tokens``), or it did not say (vLLM tells its parser neither, and reports its own
``finish_reason``). Only ``EndOfTurn.finish_reason`` depends on it."""


def check_finish(finish: str) -> None:
    """ValueError unless ``finish`` is one of :data:`FINISHES`."""
    if finish not in FINISHES:
        raise ValueError(f"finish must be one of {FINISHES}, not {finish!r}")


class Request:
    """What one request says about how its response is parsed, read once.

    ``tools``: the request's ``tools`` (see :func:`declared_tools`); ``tool_choice``:
    ``"none"`` declares nothing (a call the model writes anyway is counted as undeclared);
    ``pass_undeclared``: surface calls to undeclared ``functions.*`` names. The tools are
    read on first use, so building a Request costs nothing.

    ``tools_known=False``: the caller cannot tell the request's tools yet (an engine hands
    them to another of its objects), or no tools will ever be given to this parse (SGLang's
    reasoning parser with no tool parser after it). The turn then parses without them,
    surfacing no call, until :meth:`Turn.declare` gives them or :meth:`Turn.settle` says they
    never come; see there.

    ``any_recipient=True``: every recipient that no declared tool resolves is a call, with its
    recipient as written (no rule applied, outcome ``undeclared``): how a parser that was given
    no tools reads a conversation (openai-harmony's reading; the drop-in parser's without
    ``tools=``).

    ``parallel_tool_calls=False`` (the request's own field): the first call is surfaced, each
    later one dropped by the rule ``parallel_calls_refused`` (contract section 10).

    ``recover_text_calls=True`` (a server switch): a visible message that is wholly a call
    written as text becomes that call (the rule ``call_written_as_text``, contract section
    10); a bare JSON object only where ``tool_choice`` forces a call (``"required"`` or a named
    function).
    """

    __slots__ = ("_tools", "tool_choice", "choice", "pass_undeclared", "tools_known",
                 "any_recipient", "recover_text_calls", "_declared")

    def __init__(self, tools: Iterable[Any] | None = None, tool_choice: Any = None,
                 pass_undeclared: bool = False, *, tools_known: bool = True,
                 any_recipient: bool = False, parallel_tool_calls: bool = True,
                 recover_text_calls: bool = False) -> None:
        self._tools = tools if tools_known else None
        self.tool_choice = tool_choice
        self.choice = read_tool_choice(tool_choice, parallel_tool_calls)
        """What ``tool_choice`` and ``parallel_tool_calls`` allow, read once
        (:class:`~harmony_plugins.ToolChoice`)."""
        self.pass_undeclared = bool(pass_undeclared)
        self.tools_known = tools_known
        self.any_recipient = bool(any_recipient)
        self.recover_text_calls = bool(recover_text_calls)
        self._declared: list[Any] | None = None

    def with_tools(self, tools: Iterable[Any] | None) -> Request:
        """The same request, its tools known."""
        return Request(tools, self.tool_choice, self.pass_undeclared,
                       any_recipient=self.any_recipient,
                       parallel_tool_calls=self.parallel_tool_calls,
                       recover_text_calls=self.recover_text_calls)

    @property
    def parallel_tool_calls(self) -> bool:
        """Whether calls after the first are surfaced (``parallel_tool_calls``)."""
        return self.choice.parallel

    @property
    def declared(self) -> list[Any]:
        """The tools a call may name (empty with ``tool_choice: "none"``: a call the model
        writes anyway is undeclared)."""
        declared = self._declared
        if declared is None:
            declared = self._declared = (declared_tools(self._tools) if self.choice.calls
                                         else [])
        return declared

    def rules(self) -> Rules:
        """What the request allows its parse, resolved (reading the tools may raise TypeError
        for a ``tools`` of no tool shape)."""
        declared, choice = self.declared, self.choice
        names, schemas = tool_table(declared)
        # The functions a forced call may be (a bare JSON object's recovery needs them).
        forced = (frozenset(choice.allowed(dict.fromkeys(names)))
                  if self.recover_text_calls and not choice.answer else frozenset())
        return Rules(
            tools=names, schemas=schemas, builtins=builtin_names(declared),
            pass_undeclared=self.pass_undeclared, tools_unknown=not self.tools_known,
            any_recipient=self.any_recipient, single_call=not choice.parallel,
            text_calls=self.recover_text_calls and bool(names), forced=forced)


@dataclass(slots=True)
class Summary:
    """What one response needed, handed to the observer when its turn closes."""

    recoveries: dict[str, int] = field(default_factory=dict)
    """Recovery rules applied, with how often."""
    outcomes: dict[str, int] = field(default_factory=dict)
    """Tool calls by outcome (``rules.OUTCOMES``): exactly one per call the model wrote, except in
    a parse that never had the tools, whose possible calls are counted by the rule
    ``tools_unknown`` alone (whether they were calls, only the tools could say)."""
    leaks: list[str] = field(default_factory=list)
    """Excerpts of suspected markup in visible text."""
    applied: dict[tuple[str, str], int] = field(default_factory=dict)
    """The recovery rules of :attr:`recoveries` again, each with what it touched, with how often:
    ``(rule, at)``. ``at`` is the name of the call a rule dropped, refused or changed
    (``lookup`` for ``functions.lookup``; a built-in recipient as written, ``browser.search``),
    the role of a forged turn (``user``), otherwise the channel of the message it was applied in,
    as written (``final`` for text a rule made content, ``analysis`` for reasoning written
    without one); ``""`` where it touched no message (text between messages, after the turn, a
    header that never completed). An operator's log line names them; the counters do not."""
    calls: list[tuple[str, str]] = field(default_factory=list)
    """Each call the model wrote, in order, as ``(name, outcome)``: the counts of
    :attr:`outcomes`, call by call (the name as the call is surfaced, or, for one dropped as
    undeclared, as written after ``functions.``)."""

    @property
    def needed_rules(self) -> bool:
        """Whether the response needed any rule: a recovery (a dropped or refused call
        included), a suspected leak, or a call whose arguments were anything but ``surfaced``
        (an unchecked schema included)."""
        return bool(self.recoveries or self.leaks
                    or any(outcome != rules.SURFACED for outcome in self.outcomes))


Observer = Callable[[Summary], None]


class Turn:
    """One response choice's parse: feed each step, get one :class:`Step` back.

    Feed token ids (:meth:`feed_ids`) or text with literal markers (:meth:`feed_text`),
    never both; ``finish`` on the last feed (or :meth:`close`) ends the turn, which reports it
    once. ``encoding`` is the :class:`Vocab` of the ids; ``id_factory`` makes call ids;
    ``observer`` receives the :class:`Summary` (it must not raise: an exception from it
    reaches the caller of the feed that closed the turn). ``events=True``: each step also
    carries its events in order (``Step.events``; the Responses API wants the message
    boundaries); without it no event object is built, only the step's joined parts.

    The turn owns its front end (ids or text, chosen by the first feed), its state machine
    and the builder of its steps: the front end turns a delta into pieces, the turn hands each
    to the machine and what the machine returns to the builder, the one writer of its steps.
    None of them holds a reference to another, so a finished turn is freed by its last
    reference. Bad input raises at the boundary, before any state changes (see
    :class:`~harmony_plugins._parser.StreamParser`); feeding a closed turn, or both ids and
    text, raises RuntimeError.
    """

    __slots__ = ("request", "_encoding", "_id_factory", "_observer", "_events", "_machine",
                 "_steps", "_front", "_joints", "_fed", "_finish", "summary")

    def __init__(self, request: Request, encoding: Vocab | None = None, *,
                 id_factory: Callable[[], str] | None = None,
                 observer: Observer | None = None, events: bool = False) -> None:
        if id_factory is not None and not callable(id_factory):
            raise TypeError("id_factory must be a callable returning a call id")
        self.request = request
        self._encoding = encoding
        self._id_factory = id_factory
        self._observer = observer
        self._events = events
        self._machine: Machine | None = None
        self._steps = StepBuilder(events)  # the one writer of this turn's steps
        self._front: IdsInput | TextInput | None = None
        self._joints: Joints | None = None  # text mode only
        # While the tools are unknown: every feed so far, to parse again once they are.
        self._fed: list[Any] | None = None if request.tools_known else []
        self._finish: str | None = None  # set by close()
        self.summary: Summary | None = None
        """Set when the turn has been reported (at close; see :meth:`declare`)."""

    def start(self) -> None:
        """Read the request's tools now (a ``tools`` of no tool shape raises TypeError here);
        otherwise the first feed does."""
        self._machine_started()

    def _machine_started(self) -> Machine:
        machine = self._machine
        if machine is None:
            machine = self._machine = Machine(self.request.rules(), self._id_factory)
        return machine

    @property
    def tools_unknown(self) -> bool:
        """Whether the request's tools are still to be given (:meth:`declare`)."""
        return self._fed is not None

    @property
    def unresolved_calls(self) -> int:
        """While the tools are unknown: the messages so far whose recipient may name a
        function (each may be a call, which :meth:`declare` decides); a built-in recipient
        (``browser.search``) is not one."""
        machine = self._machine
        if self._fed is None or machine is None:
            return 0
        return machine.maybe_calls

    @property
    def calls(self) -> int:
        """How many tool calls have begun so far."""
        machine = self._machine
        return machine.calls if machine is not None else 0

    @property
    def maybe_calls(self) -> int:
        """With the tools unknown: the messages so far that may be calls to a function."""
        machine = self._machine
        return machine.maybe_calls if machine is not None else 0

    @property
    def recoveries(self) -> dict[str, int]:
        """Recovery rules applied so far, with how often."""
        return self._steps.recoveries

    @property
    def outcomes(self) -> dict[str, int]:
        """Calls so far by outcome (``rules.OUTCOMES``)."""
        return self._steps.outcomes

    @property
    def leaks(self) -> list[str]:
        """Excerpts of the suspected leaks flagged so far."""
        return self._steps.leaks

    def declare(self, tools: Iterable[Any] | None) -> Step:
        """Give a turn built with ``tools_known=False`` the request's tools.

        Everything fed so far is parsed again with them, and the rest of the turn is parsed
        with them: the result is the one a turn built with these tools gives, except that
        the reasoning of the earlier steps stays as it was handed out (routing to reasoning
        never depends on the tools, except for a call on ``analysis`` whose content type is
        a bare declared name). Returns that parse's step less its reasoning: the content and
        calls so far, in place of the earlier steps' (which surfaced no call). This is the one
        place where the core parses again what it has seen.

        The turn may already be closed (the reasoning parse of a whole output ends before
        another object of the engine knows the tools): a turn whose tools are unknown is
        reported only once they are given, or once :meth:`settle` says they never will be.
        """
        fed = self._fed
        if fed is None:
            raise RuntimeError("Turn.declare() on a turn whose tools are known or settled")
        self._fed = None
        self.request = self.request.with_tools(tools)
        by_ids = isinstance(self._front, IdsInput)
        finish, self._finish = self._finish, None
        self._machine = self._front = self._joints = None  # the parse without the tools
        self._steps = StepBuilder(self._events)
        steps = [self.feed_ids(piece) if by_ids else self.feed_text(piece) for piece in fed]
        if finish is not None:
            steps.append(self.close(finish))
        step = fold(steps)
        events = tuple(e for e in step.events if not isinstance(e, ReasoningText))
        return step._replace(reasoning="", events=events)

    def settle(self) -> None:
        """The tools of a turn built with ``tools_known=False`` will never be given: close it
        if it is open (finish ``"stop"``) and report it as it is, every message that may be a
        call to a function dropped by the ``tools_unknown`` rule (counted by that rule, with no
        call outcome). Does nothing once the turn was reported."""
        if self.summary is not None:
            return
        self._fed = None
        if self._finish is None:
            self.close()
        else:
            self._summarise()

    @property
    def closed(self) -> bool:
        return self._finish is not None

    @property
    def fed_ids(self) -> bool:
        """Whether this turn was fed token ids (not text)."""
        return isinstance(self._front, IdsInput)

    @property
    def reasoning_tokens(self) -> int:
        """Token ids fed so far that were reasoning text."""
        return self._steps.reasoning_tokens

    def feed_ids(self, ids: Iterable[int], finish: str | None = None) -> Step:
        """One step's token ids; with ``finish`` (``"stop"``, ``"length"`` or ``"unknown"``:
        :data:`FINISHES`) the last one; returns its :class:`Step`.

        ``ids`` is a list of ints (other iterables of integers are accepted). A non-int id
        raises TypeError before any id of the delta is consumed. Ids outside the vocabulary
        are skipped and counted (``unknown_token``).
        """
        front = self._front
        if (front.__class__ is not IdsInput or finish is not None or self._fed is not None
                or self._finish is not None):
            return self._feed(IdsInput, ids, finish)
        # A decode step of an open turn: most are one token of text, one call into the state.
        text = front.single(ids)  # type: ignore[union-attr]
        if text is not None:
            return self._steps.one(self._machine.text(text, 1))  # type: ignore[union-attr]
        self._take(front.feed(ids))  # type: ignore[union-attr]
        return self._steps.step()

    def feed_text(self, text: str, finish: str | None = None) -> Step:
        """One step's text (markers spelled literally); ``finish`` as in :meth:`feed_ids`.
        TypeError if ``text`` is not a str."""
        front = self._front
        if (front.__class__ is not TextInput or finish is not None or self._fed is not None
                or self._finish is not None or text.__class__ is not str):
            return self._feed(TextInput, text, finish)
        if not text:
            return EMPTY
        if front.single(text) is not None and self._joints.idle():  # type: ignore[union-attr]
            return self._steps.one(self._machine.text(text, 0))  # type: ignore[union-attr]
        self._take_text(front.feed(text))  # type: ignore[union-attr]
        return self._steps.step()

    def _feed(self, kind: type[IdsInput] | type[TextInput], data: Any,
              finish: str | None) -> Step:
        """Any feed but an open turn's decode step: the first (which starts the front end),
        the last (``finish``), one kept to parse again (tools unknown), or one refused."""
        name = "feed_ids" if kind is IdsInput else "feed_text"
        if kind is TextInput and not isinstance(data, str):
            raise TypeError(f"feed_text() takes a str, not {type(data).__name__}")
        if finish is not None:
            check_finish(finish)
        front = self._front_for(kind, name)
        if self._fed is not None:
            if kind is IdsInput:
                data = checked_ids(data)
            self._fed.append(data)
        if kind is IdsInput:
            self._take(front.feed(data))
        elif data:
            self._take_text(front.feed(data))
        step = self._steps.step()
        return step if finish is None else fold((step, self.close(finish)))

    def _front_for(self, kind: type[IdsInput] | type[TextInput], name: str) -> Any:
        """The front end of ``kind`` (started on the first feed), or RuntimeError."""
        if self._finish is not None:
            raise RuntimeError(f"Turn.{name}() after close()")
        front = self._front
        if front is None:
            self._machine_started()  # reads the tools: may raise before anything is fed
            if kind is IdsInput:
                vocab = self._encoding or Vocab.o200k_harmony()
                front = self._front = IdsInput(vocab.table)
            else:
                front = self._front = TextInput()
                self._joints = Joints()
        elif front.__class__ is not kind:
            other = "feed_text" if kind is IdsInput else "feed_ids"
            raise RuntimeError(f"Turn.{name}() on a turn already fed with {other}()")
        return front

    def _take(self, pieces: list[Piece]) -> None:
        """Hand each piece to the machine, and what it returns to the step builder."""
        machine, steps = self._machine, self._steps
        assert machine is not None
        for piece in pieces:
            if piece.__class__ is tuple:
                steps.add(machine.text(*piece))
            elif piece == UNKNOWN:
                steps.add(machine.unknown_token())
            else:
                steps.add_all(machine.marker(piece))

    def _take_text(self, pieces: list[Piece]) -> None:
        """:meth:`_take` for text mode, through the joints (:mod:`harmony_plugins._joints`):
        text on the two sides of a marker that joins them never spells a control token."""
        machine, steps, joints = self._machine, self._steps, self._joints
        assert machine is not None and joints is not None
        for piece in pieces:
            if piece.__class__ is tuple:
                for dropped, text in joints.text(piece[0]):
                    steps.add(machine.dropped(rules.SPLIT_MARKER, text) if dropped
                              else machine.text(text, 0))
            else:
                held = joints.release()
                if held:
                    steps.add(machine.text(held, 0))
                joints.at_marker(machine.joins(piece))
                steps.add_all(machine.marker(piece))

    def close(self, finish: str = "stop") -> Step:
        """End the turn; returns the last step (with ``finish`` set). ``finish`` is why the
        engine stopped, ``"unknown"`` when it does not say (the step's ``EndOfTurn`` then has
        no ``finish_reason``: the engine's own is the answer). Only once: a second close returns
        an empty step, so an adapter may close on every path that ends."""
        check_finish(finish)
        if self._finish is not None:
            return EMPTY
        self._finish = finish
        machine = self._machine_started()
        front, joints = self._front, self._joints
        if joints is not None:  # text mode: what the front end held goes through the joints
            self._take_text(front.flush())  # type: ignore[union-attr]
            held = joints.flush()
            if held:
                self._steps.add(machine.text(held, 0))
        elif front is not None:
            self._take(front.flush())
        self._steps.add_all(machine.close(finish))
        step = self._steps.step()
        if self._fed is None:  # else reported once the tools are known (declare / settle)
            self._summarise()
        return step

    def _summarise(self) -> None:
        steps = self._steps
        summary = self.summary = Summary(dict(steps.recoveries), dict(steps.outcomes),
                                         list(steps.leaks), dict(steps.applied),
                                         list(steps.calls))
        if self._observer is not None:
            self._observer(summary)


def count_reasoning_tokens(ids: Iterable[int], request: Request,
                           encoding: Vocab | None = None) -> int:
    """How many of a whole output's token ids are reasoning, parsed by ``request``'s rules (its
    tools decide one routing: a call on ``analysis`` is not reasoning). For an engine that asks
    about ids its parser never saw; nothing is reported."""
    turn = Turn(request, encoding)
    turn.feed_ids(ids)
    return turn.reasoning_tokens
