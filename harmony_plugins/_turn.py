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

from ._events import ReasoningText
from ._frontends import IdsInput, TextInput, checked_ids
from ._machine import Machine
from ._steps import EMPTY, STEPS, Builders, Collector, Step, fold
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

    Feed token ids (:attr:`feed_ids`) or text with literal markers (:attr:`feed_text`),
    never both; ``finish`` on the last feed (or :meth:`close`) ends the turn, which reports it
    once. ``encoding`` is the :class:`Vocab` of the ids; ``id_factory`` makes call ids;
    ``observer`` receives the :class:`Summary` (it must not raise: an exception from it
    reaches the caller of the feed that closed the turn). ``events=True``: each step also
    carries its events in order (``Step.events``; the Responses API wants the message
    boundaries); without it no event object is built, only the step's joined parts.
    ``build``: what :attr:`decode_ids` and :attr:`decode_text` build (:class:`Builders`;
    default: steps).

    The turn owns its front end (ids or text), its state machine and the collector the
    machine hands its output to. The feeds are attributes, not methods: once the turn's fast
    path is open (the first feed, with the tools known), each is its front end's own method,
    so a decode step is one call into the core; any other step goes through the turn. Bad
    input raises at the boundary, before any state changes (see
    :class:`~harmony_plugins._parser.StreamParser`); feeding a closed turn, or both ids and
    text, raises RuntimeError.
    """

    __slots__ = ("request", "_encoding", "_id_factory", "_observer", "_events", "_build",
                 "_machine", "_out", "_front", "_ids", "_text", "_fed", "_finish", "summary",
                 "feed_ids", "feed_text", "decode_ids", "decode_text")

    def __init__(self, request: Request, encoding: Vocab | None = None, *,
                 id_factory: Callable[[], str] | None = None,
                 observer: Observer | None = None, events: bool = False,
                 build: Builders = STEPS) -> None:
        if id_factory is not None and not callable(id_factory):
            raise TypeError("id_factory must be a callable returning a call id")
        self.request = request
        self._encoding = encoding
        self._id_factory = id_factory
        self._observer = observer
        self._events = events
        self._build = build
        self._machine: Machine | None = None
        self._out = Collector(events)  # where the machine puts what each feed produces
        self._front: IdsInput | TextInput | None = None
        # The front end of an open turn whose tools are known, by kind: the feeds' fast path.
        self._ids: IdsInput | None = None
        self._text: TextInput | None = None
        # While the tools are unknown: every feed so far, to parse again once they are.
        self._fed: list[Any] | None = None if request.tools_known else []
        self._finish: str | None = None  # set by close()
        self.summary: Summary | None = None
        """Set when the turn has been reported (at close; see :meth:`declare`)."""
        self.feed_ids: Callable[..., Step] = self._feed_ids
        """``feed_ids(ids, finish=None)``: one step's token ids; with ``finish`` (``"stop"``,
        ``"length"`` or ``"unknown"``: :data:`FINISHES`) the last one; returns its
        :class:`Step`.

        ``ids`` is a list of ints (the fast path; other iterables of integers are accepted).
        A non-int id raises TypeError before any id of the delta is consumed. Ids outside
        the vocabulary are skipped and counted (``unknown_token``). Once the fast path is
        open this is the ids front end's ``fed`` (look it up per call, as an attribute: a
        reference taken before the first feed stays on the turn's general path)."""
        self.feed_text: Callable[..., Step] = self._feed_text
        """``feed_text(text, finish=None)``: one step's text (markers spelled literally);
        ``finish`` as in :attr:`feed_ids`. TypeError if ``text`` is not a str."""
        self.decode_ids: Callable[[list[int]], Any] = self._decode
        """One decode step's ids (not the last: :attr:`feed_ids` with ``finish`` ends the
        turn), its step built by the turn's ``build``: a step that is one piece of one kind
        comes straight from that piece's builder, with no :class:`Step` made (the usual decode
        step); any other through ``build.step``. Otherwise as :attr:`feed_ids`. Once the fast
        path is open it is the front end's ``made`` itself (one call per decode step)."""
        self.decode_text: Callable[[str], Any] = self._decode_text
        """As :attr:`decode_ids`, for one decode step's text (:attr:`feed_text`)."""

    @property
    def machine(self) -> Machine:
        """The turn's state machine (started on first use: reading the tools may raise
        TypeError for a ``tools`` of no tool shape)."""
        return self._machine or self._start()

    def _start(self) -> Machine:
        request = self.request
        declared = request.declared
        names, schemas = tool_table(declared)
        machine = self._machine = Machine(
            names, self._id_factory, request.pass_undeclared, schemas,
            not request.tools_known, request.any_recipient, builtin_names(declared),
            self._out, self._build)
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
        kind = self._front.__class__ if self._front is not None else None
        finish, self._finish = self._finish, None
        _let_go(self._front, self._machine)  # the parse without the tools, replaced
        self._machine = self._front = self._ids = self._text = None
        self._general()
        self._out = Collector(self._events)
        steps = [self.feed_ids(piece) if kind is IdsInput else self.feed_text(piece)
                 for piece in fed]
        if finish is not None:
            steps.append(self.close(finish))
        step = fold(steps)
        events = [e for e in step.events if e.__class__ is not ReasoningText]
        return step._replace(reasoning="", events=events if step.events else ())

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
        return self._front.__class__ is IdsInput

    @property
    def reasoning_tokens(self) -> int:
        """Token ids fed so far that were reasoning text."""
        return self._out.reasoning_tokens

    def _general(self) -> None:
        """The feeds through the turn (the fast path closed, or not open yet)."""
        self.feed_ids = self._feed_ids
        self.feed_text = self._feed_text
        self.decode_ids = self._decode
        self.decode_text = self._decode_text

    def _feed_ids(self, ids: Iterable[int], finish: str | None = None) -> Step:
        """:attr:`feed_ids` through the turn."""
        front = self._ids
        if front is not None and finish is None:  # every decode step but the last
            return front.feed(ids) or self._out.step()
        if finish is not None:
            check_finish(finish)
        front = self._front_for(IdsInput, "feed_ids")
        if self._fed is not None:
            ids = checked_ids(ids)
            self._fed.append(ids)
        step = front.feed(ids)
        return self._last(finish, step)

    def _decode(self, ids: list[int]) -> Any:
        """:attr:`decode_ids` while the fast path is not open (the first feed, a turn whose
        tools are unknown, a closed turn): :attr:`feed_ids`, its step built."""
        return self._build.step(self._feed_ids(ids))

    def _decode_text(self, text: str) -> Any:
        """:attr:`decode_text` while the fast path is not open."""
        return self._build.step(self._feed_text(text))

    def _stepped(self, step: Step | None = None) -> Any:
        """A step built (None: the one the collector gathered), for the front end's
        ``made``."""
        return self._build.step(self._out.step() if step is None else step)

    def _feed_text(self, text: str, finish: str | None = None) -> Step:
        """:attr:`feed_text` through the turn."""
        front = self._text
        if front is not None and finish is None and text.__class__ is str:
            return (text and front.feed(text)) or self._out.step()
        if not isinstance(text, str):
            raise TypeError(f"feed_text() takes a str, not {type(text).__name__}")
        if finish is not None:
            check_finish(finish)
        front = self._front_for(TextInput, "feed_text")
        if self._fed is not None:
            self._fed.append(text)
        step = front.feed(text) if text else None
        return self._last(finish, step)

    def _front_for(self, kind: type[IdsInput] | type[TextInput], name: str) -> Any:
        """The front end of ``kind`` (started on the first feed), or RuntimeError."""
        if self._finish is not None:
            raise RuntimeError(f"Turn.{name}() after close()")
        front = self._front
        if front is None:
            machine = self.machine  # reads the tools: may raise before anything is fed
            if kind is IdsInput:
                vocab = self._encoding or Vocab.o200k_harmony()
                front = self._front = IdsInput(machine, vocab.table, self._stepped,
                                               self._feed_ids)
                if self._fed is None:  # the fast path (a turn that may parse again: not)
                    self._ids = front
                    self.feed_ids = front.fed
                    self.decode_ids = front.made
            else:
                front = self._front = TextInput(machine, self._stepped, self._feed_text)
                if self._fed is None:
                    self._text = front
                    self.feed_text = front.fed
                    self.decode_text = front.made
        elif front.__class__ is not kind:
            other = "feed_text" if kind is IdsInput else "feed_ids"
            raise RuntimeError(f"Turn.{name}() on a turn already fed with {other}()")
        return front

    def _last(self, finish: str | None, step: Step | None) -> Step:
        if step is None:
            step = self._out.step()
        if finish is not None:
            return fold((step, self.close(finish)))
        return step

    def close(self, finish: str = "stop") -> Step:
        """End the turn; returns the last step (with ``finish`` set). ``finish`` is why the
        engine stopped, ``"unknown"`` when it does not say (the step's ``EndOfTurn`` then has
        no ``finish_reason``: the engine's own is the answer). Only once: a second close returns
        an empty step, so an adapter may close on every path that ends."""
        check_finish(finish)
        if self._finish is not None:
            return EMPTY
        self._finish = finish
        machine = self.machine
        front = self._front
        if front is not None:
            front.flush()
        self._ids = self._text = None
        self._general()
        machine.close(finish)
        step = self._out.step()
        if self._fed is None:  # else reported once the tools are known (declare / settle)
            self._summarise()
        return step

    def _summarise(self) -> None:
        machine = self.machine
        summary = self.summary = Summary(dict(machine.recoveries), dict(machine.outcomes),
                                         list(machine.leaks))
        self._release(machine)
        if self._observer is not None:
            self._observer(summary)

    def _release(self, machine: Machine) -> None:
        """Let go of every reference back into the turn once it is reported: its feeds
        become functions that hold no turn (they refuse, as a closed turn's feeds do), its
        front end and machine drop the turn's and their own methods, and its builders (an
        adapter's, which may hold the adapter's objects) go. A finished turn is then freed
        when its last reference goes, not left to the cyclic garbage collector."""
        self.feed_ids = self.decode_ids = _refuse_ids
        self.feed_text = self.decode_text = _refuse_text
        self._build = STEPS
        _let_go(self._front, machine)


def _let_go(front: IdsInput | TextInput | None, machine: Machine | None) -> None:
    """Drop a front end's and a machine's references back to their turn and themselves:
    a reported turn's, and a parse that :meth:`Turn.declare` replaces."""
    if front is not None:
        front.stepped = front.general = None
    if machine is not None:
        machine.release()


def _refuse_ids(ids: Any, finish: str | None = None) -> Any:
    """A reported turn's :attr:`Turn.feed_ids` and :attr:`Turn.decode_ids`."""
    raise RuntimeError("Turn.feed_ids() after close()")


def _refuse_text(text: Any, finish: str | None = None) -> Any:
    """A reported turn's :attr:`Turn.feed_text` and :attr:`Turn.decode_text`."""
    raise RuntimeError("Turn.feed_text() after close()")


def count_reasoning_tokens(ids: Iterable[int], request: Request,
                           encoding: Vocab | None = None) -> int:
    """How many of a whole output's token ids are reasoning, parsed by ``request``'s rules (its
    tools decide one routing: a call on ``analysis`` is not reasoning). For an engine that asks
    about ids its parser never saw; nothing is reported."""
    turn = Turn(request, encoding)
    turn.feed_ids(ids)
    return turn.reasoning_tokens
