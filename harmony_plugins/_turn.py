"""One response choice: the request's rules, the parse and its counts.

This is the core's counterpart of h11's ``Connection``. An adapter builds a :class:`Request`
from what the engine gives it (the request's ``tools``, ``tool_choice``, the pass-undeclared
switch) and a :class:`Turn` per response choice; it feeds each decode step to the turn and
gets one :class:`~harmony_plugins._steps.Step` back, which it translates into its engine's
types. The rules about a response are decided here or below: what is declared (functions,
Responses built-in tools and namespaces), what ``tool_choice: "none"`` does, how the
switch is spelled, what the finish is when the engine does not say, what is counted.

When a turn closes it hands a :class:`Summary` to the ``observer`` it was given; the
adapters' observer (:mod:`harmony_plugins.adapter_support.metrics`) counts it on ``/metrics``
and writes the one log line per response that needed a recovery (contract section 9): the core
itself logs nothing. Building a :class:`Request` or a :class:`Turn` parses nothing: engines
build throw-away parser objects per request, and the work is done on the first feed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ._events import Event, ReasoningText
from ._parser import StreamParser
from ._steps import EMPTY, Step, join, step_of
from ._tools import declared_tools
from .vocab import Vocab


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
    """

    __slots__ = ("_tools", "tool_choice", "pass_undeclared", "tools_known", "any_recipient",
                 "_declared")

    def __init__(self, tools: Iterable[Any] | None = None, tool_choice: Any = None,
                 pass_undeclared: bool = False, *, tools_known: bool = True,
                 any_recipient: bool = False) -> None:
        self._tools = tools if tools_known else None
        self.tool_choice = tool_choice
        self.pass_undeclared = bool(pass_undeclared)
        self.tools_known = tools_known
        self.any_recipient = bool(any_recipient)
        self._declared: list[Any] | None = None

    def with_tools(self, tools: Iterable[Any] | None) -> Request:
        """The same request, its tools known."""
        return Request(tools, self.tool_choice, self.pass_undeclared,
                       any_recipient=self.any_recipient)

    @property
    def calls_off(self) -> bool:
        """``tool_choice: "none"``: no call is surfaced, whatever the tools (a call the model
        writes anyway is undeclared)."""
        return self.tool_choice == "none" or getattr(self.tool_choice, "value", 0) == "none"

    @property
    def declared(self) -> list[Any]:
        """The tools a call may name (empty with ``tool_choice: "none"``)."""
        declared = self._declared
        if declared is None:
            declared = self._declared = [] if self.calls_off else declared_tools(self._tools)
        return declared


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


Observer = Callable[[Summary], None]


class Turn:
    """One response choice's parse: feed each step, get one :class:`Step` back.

    Feed token ids (:meth:`feed_ids`) or text with literal markers (:meth:`feed_text`),
    never both; ``finish`` on the last feed (or :meth:`close`) ends the turn, which reports it
    once. ``encoding`` is the :class:`Vocab` of the ids; ``id_factory`` makes call ids;
    ``observer`` receives the :class:`Summary` (it must not raise: an exception from it
    reaches the caller of the feed that closed the turn).
    """

    __slots__ = ("request", "_encoding", "_id_factory", "_parser", "_observer",
                 "_leaks", "_fed", "_finish", "summary")

    def __init__(self, request: Request, encoding: Vocab | None = None, *,
                 id_factory: Callable[[], str] | None = None,
                 observer: Observer | None = None) -> None:
        self.request = request
        self._encoding = encoding
        self._id_factory = id_factory
        self._observer = observer
        self._parser: StreamParser | None = None
        self._leaks: list[str] = []
        # While the tools are unknown: every feed so far, to parse again once they are.
        self._fed: list[Any] | None = None if request.tools_known else []
        self._finish: str | None = None  # set by close()
        self.summary: Summary | None = None
        """Set when the turn has been reported (at close; see :meth:`declare`)."""

    @property
    def parser(self) -> StreamParser:
        """The turn's parser (started on first use)."""
        parser = self._parser
        if parser is None:
            request = self.request
            parser = self._parser = StreamParser(
                request.declared, self._encoding, id_factory=self._id_factory,
                pass_undeclared=request.pass_undeclared, tools_unknown=not request.tools_known,
                any_recipient=request.any_recipient)
        return parser

    @property
    def tools_unknown(self) -> bool:
        """Whether the request's tools are still to be given (:meth:`declare`)."""
        return self._fed is not None

    @property
    def unresolved_calls(self) -> int:
        """While the tools are unknown: the messages so far whose recipient may name a
        function (each may be a call, which :meth:`declare` decides); a built-in recipient
        (``browser.search``) is not one."""
        parser = self._parser
        if self._fed is None or parser is None:
            return 0
        return parser.maybe_calls

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
        ids = self._parser is not None and self._parser.fed_ids
        self._parser = None
        parser = self.parser
        events: list[Event] = []
        for piece in fed:
            events += parser.feed_ids(piece) if ids else parser.feed_text(piece)
        if self._finish is not None:
            events += parser.close(self._finish)
        step = step_of([e for e in events if e.__class__ is not ReasoningText])
        self._leaks = list(step.leaks)
        if self._finish is not None:
            self._summarise()
        return step

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
    def reasoning_tokens(self) -> int:
        """Token ids fed so far that were reasoning text."""
        return self._parser.reasoning_tokens if self._parser is not None else 0

    def feed_ids(self, ids: Iterable[int], finish: str | None = None) -> Step:
        """One step's token ids; with ``finish`` (``"stop"``, ``"length"`` or ``"unknown"``:
        :data:`~harmony_plugins._parser.FINISHES`) the last one."""
        if self._fed is not None:
            ids = list(ids)
            self._fed.append(ids)
        return self._step((self._parser or self.parser).feed_ids(ids), finish)

    def feed_text(self, text: str, finish: str | None = None) -> Step:
        """One step's text (markers spelled literally); ``finish`` as in :meth:`feed_ids`."""
        if self._fed is not None:
            self._fed.append(text)
        return self._step((self._parser or self.parser).feed_text(text), finish)

    def _step(self, events: list[Event], finish: str | None) -> Step:
        step = step_of(events)
        if step.leaks:
            self._leaks.extend(step.leaks)
        if finish is not None:
            return join(step, self.close(finish))
        return step

    def close(self, finish: str = "stop") -> Step:
        """End the turn; returns the last step (with ``finish`` set). ``finish`` is why the
        engine stopped, ``"unknown"`` when it does not say (the step's ``EndOfTurn`` then has
        no ``finish_reason``: the engine's own is the answer). Only once: a second close returns
        an empty step, so an adapter may close on every path that ends."""
        if self._finish is not None:
            return EMPTY
        self._finish = finish
        step = step_of(self.parser.close(finish))
        self._leaks.extend(step.leaks)
        if self._fed is None:  # else reported once the tools are known (declare / settle)
            self._summarise()
        return step

    def _summarise(self) -> None:
        parser = self.parser
        summary = self.summary = Summary(parser.recoveries, parser.call_outcomes, self._leaks)
        if self._observer is not None:
            self._observer(summary)


def count_reasoning_tokens(ids: Iterable[int], request: Request,
                           encoding: Vocab | None = None) -> int:
    """How many of a whole output's token ids are reasoning, parsed by ``request``'s rules (its
    tools decide one routing: a call on ``analysis`` is not reasoning). For an engine that asks
    about ids its parser never saw; nothing is reported."""
    parser = StreamParser(request.declared, encoding, pass_undeclared=request.pass_undeclared,
                          tools_unknown=not request.tools_known,
                          any_recipient=request.any_recipient)
    parser.feed_ids(ids)
    return parser.reasoning_tokens
