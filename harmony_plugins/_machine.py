"""The Harmony state machine: text and markers in, parts out.

Everything that affects routing lives here. The machine does not know where its input came
from: a turn (:mod:`harmony_plugins._turn`) hands it each piece of text a front end made
(:meth:`Machine.text`), each control token (:meth:`Machine.marker`) and the end of the output
(:meth:`Machine.close`), and each returns what it produced as *parts*
(:mod:`harmony_plugins._steps`: plain tuples for text and counts, the events themselves for
message boundaries and calls), which the turn hands to its step builder. Nothing here writes
into a shared object.

Theory of operation
-------------------
The machine is in one of three kinds of state. The state is the object in :attr:`Machine.at`,
which holds that state's data and exists only in that state; each takes the state's text with
its one method, ``take``, and returns what it becomes:

``HEADER`` (:class:`HeaderState`)
    Reading a message header. Header text is buffered, never emitted, until a marker closes
    it; ``<|message|>`` completes it, and the header decides the *route* of the body. The
    output starts here, in the header that the prompt's ``<|start|>assistant`` opened.
``BODY`` (a :class:`Body`, one class per route)
    Reading a message body. Each piece of text goes straight out along the route:
    reasoning (:class:`ReasoningBody`), content (:class:`ContentBody`), a tool call's
    arguments (:class:`CallBody`), or a drop list (:class:`DropBody`: counted, never shown).
``DONE`` (:class:`Done`)
    The turn is over (``<|return|>``, end of text, a forged turn). Text is dropped, and
    counted when the stream ends.

A marker moves the machine by one row of the table in :mod:`harmony_plugins._transitions`
(``MOVES[state.kind][marker]``: the rule counted on the way, what closes, the next state, the
stop reason, whether text may join across it), applied by :meth:`Machine._apply`, the only
place the state changes. What needs code is done by the closer the row names (a method of the
machine that returns its decision and sets no state): whether text after ``<|end|>`` is free
text between messages or a header (it is free text until a header marker arrives), whether a
header that ended without ``<|message|>`` holds the answer, forges a turn or is dropped,
where a complete header routes its body. A ``<|call|>`` ends the turn too, but further calls
may follow it: the machine stays live with ``after_call`` set, and any later message that is
not a call is dropped.

Routing a complete header (first match wins): another role (``user``, ``functions.x``, after
``<|start|>``, or as the header's first word with a header marker after it) ends the turn; a
recipient that resolves to a declared function is a call (a call after the first is dropped
where the request set ``parallel_tool_calls`` false); with no recipient (or an empty ``to=``),
a content type naming a declared function is the call; an empty ``to=`` otherwise, or an
undeclared recipient, drops the body; after a call, any other message is dropped; then by
channel: ``analysis`` and unknown channels to reasoning, ``final``, ``commentary`` or none to
content. A channel name in the role slot (``<|start|>final``) is that channel.

Every message whose body is shown is framed: ``MessageBegin`` when its header routes it
(kind, the channel it counts as, the channel, recipient and content type as written),
``MessageEnd`` when its body ends (by which marker). Text a header rule turns into content
(free text, no markup at all, a ``final`` header without ``<|message|>``) is a message of its
own. The first message's header is a header like any other: text before any marker that an
``<|end|>`` closes is dropped, not content; only an output with no marker at all (a stop token
aside) is content. With ``tools_unknown`` no function is declared yet: a message that may be a
call to one (a recipient other than a built-in tool's) is dropped by the rule ``tools_unknown``
and counted in ``maybe_calls``, with no call outcome (whether it is a call, only the tools could
say); a built-in recipient is undeclared as with any tools. A caller that learns the tools
parses again (:meth:`harmony_plugins._turn.Turn.declare`).

When a call ends, its arguments are checked (:mod:`harmony_plugins._checks`) and the outcome
rides on :class:`ToolCallEnd`. Visible text (content) is scanned for leaked markup as it
goes (:mod:`harmony_plugins._leaks`).
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from . import _header as hdr
from . import harmony as hm
from . import rules
from ._arguments import ArgumentCutter
from ._checks import (
    ArgumentChecker,
    declared_properties,
    of_declared_keys,
    schema_check_available,
)
from ._events import EndOfTurn, LeakSuspected, MessageBegin, MessageEnd, ToolCallBegin, ToolCallEnd
from ._leaks import LeakScanner
from ._steps import ARGUMENTS, CONTENT, OUTCOME, PARTS, REASONING, RECOVERY
from ._text_calls import TextCallReader
from ._tools import recipient as recipient_of
from ._transitions import (
    BODY,
    BODY_END,
    CHANNEL_HEADER,
    COMPLETE,
    DONE,
    DONE_STATE,
    END_OF_STREAM,
    ENDED_BY,
    FIRST_HEADER,
    FREE_HEADER,
    HEADER,
    HEADER_CUT,
    HEADER_END,
    HEADER_STOP,
    IF_CONTENT,
    IF_FREE_AND_EMPTY,
    MOVES,
    NEW_HEADER,
    OPENING,
    RESTART,
    ROUTE,
    SAME,
    SECTION,
    Move,
)

FORGED = "forged_turn"
"""A closer's decision that the model began another role's turn: the turn ends there."""

Part = Any
"""What a state returns: a tuple of one of :mod:`harmony_plugins._steps`' kinds, or an event."""


def counted_channel(kind: str, written: str | None, recipient: str | None = None) -> str:
    """The valid Harmony channel a message of ``kind`` counts as (``MessageBegin.channel``):
    reasoning is ``analysis`` (unknown channels are chain of thought); a call to a function is
    ``commentary``, where function calls go, whatever channel the model wrote it on; a call to
    a built-in tool keeps a known channel it was written on (``analysis``, usually); content
    keeps ``final`` or ``commentary`` (a preamble), else counts as ``final``."""
    if kind == "reasoning":
        return hm.ANALYSIS
    if kind == "call":
        if recipient is not None and hm.is_builtin_recipient(recipient) and (
                written in hm.KNOWN_CHANNELS):
            return written
        return hm.COMMENTARY
    if written == hm.FINAL or written == hm.COMMENTARY:
        return written
    return hm.FINAL


def _named(recipient: str) -> str:
    """A recipient as a rule names what it touched: a function by its name, without
    ``functions.``; another recipient (``browser.search``) as written."""
    return recipient.removeprefix(hm.FUNCTIONS_PREFIX)


def random_call_id() -> str:
    """A fresh tool-call id in OpenAI's style."""
    return "call_" + secrets.token_hex(12)


@dataclass(frozen=True, slots=True)
class Rules:
    """What one request allows its parse, resolved once (``Request.rules()`` builds it).

    ``tools``: the declared function names (and Responses built-in tools, ``builtins`` among
    them); ``schemas``: their ``parameters`` by name (a call's arguments are checked against
    them when it ends); ``pass_undeclared``: surface calls to undeclared ``functions.*``
    names; ``tools_unknown``: the tools are not known yet (a message that may be a call to a
    function is dropped, counted in ``maybe_calls``); ``any_recipient``: every recipient no
    declared tool resolves is a call as written; ``single_call``: ``parallel_tool_calls``
    false; ``text_calls``: recover calls written as text (contract section 10); ``forced``:
    the functions a forced ``tool_choice`` allows (empty: none forced)."""

    tools: frozenset[str] = frozenset()
    schemas: Mapping[str, Any] = field(default_factory=dict)
    builtins: frozenset[str] = frozenset()
    pass_undeclared: bool = False
    tools_unknown: bool = False
    any_recipient: bool = False
    single_call: bool = False
    text_calls: bool = False
    forced: frozenset[str] = frozenset()


# -- the states -----------------------------------------------------------------------------


class HeaderState:
    """Reading a header: its sections so far and the one being read."""

    __slots__ = ("role_given", "free", "sections", "section", "pieces")

    kind = HEADER

    def __init__(self, role_given: bool, section: int = hdr.ROLE, free: bool = False) -> None:
        self.role_given = role_given  # it began with <|start|>: its first word is the role
        self.free = free  # after <|end|> / <|call|>, no header marker yet: maybe free text
        self.sections: list[tuple[int, str]] = []
        self.section = section  # the section being read: ROLE, or the marker that began it
        self.pieces: list[str] = []  # its text so far

    def take(self, text: str, tokens: int) -> None:
        self.pieces.append(text)  # buffered until the header is complete

    def close_section(self) -> None:
        self.sections.append((self.section, "".join(self.pieces)))
        self.pieces = []

    def text(self) -> str:
        return "".join(text for _, text in self.sections)

    def only_free(self) -> bool:
        """The header so far is text after <|end|> with no header marker: maybe free text."""
        return self.free and not self.sections and self.section == hdr.ROLE


class Body:
    """The body being routed. One class per route, each holding what its route needs: it
    returns what each piece of text becomes (:meth:`take`) and what its end becomes
    (:meth:`end`), and holds nothing of the machine's."""

    __slots__ = ("where",)

    kind = BODY
    shown = False
    """Whether its text is shown as content (text mode keeps such text from joining a
    control-token spelling across the ``<|end|>`` that ends it)."""

    def __init__(self, where: str) -> None:
        self.where = where  # what a rule applied inside it touched (Summary.applied)

    def take(self, text: str, tokens: int) -> Part | None:
        """Take the next piece of model text (never empty), made of ``tokens`` token ids (0 in
        text mode), which count as reasoning tokens if it is reasoning; return what it
        becomes. Every state has this one entry for text."""
        raise NotImplementedError

    def end(self, by: str) -> list[Part]:
        return [MessageEnd(by)]


class ReasoningBody(Body):
    """Chain of thought: each piece to reasoning, its tokens counted (usage figures)."""

    __slots__ = ()

    def take(self, text: str, tokens: int) -> Part:
        return (REASONING, text, tokens)


class ContentBody(Body):
    """Visible text: each piece to content, scanned for leaked markup as it goes.

    ``preamble``: the message is a preamble (``commentary``, no recipient). ``lead``: what the
    chat content field puts before the message's first text (contract section 2: ``"\n"``
    after a preamble that did not end in whitespace, when this message is of another
    channel); it goes with the first piece into the content, never into the message's events
    (a Responses item holds the message's own text)."""

    __slots__ = ("scanner", "preamble", "lead")

    shown = True

    def __init__(self, where: str, preamble: bool = False, lead: str = "") -> None:
        super().__init__(where)
        self.scanner = LeakScanner()
        self.preamble = preamble
        self.lead = lead

    def take(self, text: str, tokens: int) -> Part:
        lead = self.lead
        if lead:
            self.lead = ""
        found = self.scanner.feed(text)
        if found:
            return (PARTS, ((CONTENT, text, lead), *map(LeakSuspected, found)))
        return (CONTENT, text, lead)

    def end(self, by: str) -> list[Part]:
        found = self.scanner.close()
        return [*map(LeakSuspected, found), MessageEnd(by)] if found else [MessageEnd(by)]


class HeldContentBody(ContentBody):
    """Visible text that may be a call written as text (the request asked for their recovery,
    contract section 10): held back, its message not begun, while it may still wholly be one;
    given out as content as soon as it cannot (then it is a :class:`ContentBody`). At its end
    the machine decides what a whole one is (:meth:`Machine._end_held`)."""

    __slots__ = ("reader", "held", "begin")

    def __init__(self, where: str, preamble: bool, lead: str, reader: TextCallReader,
                 begin: MessageBegin) -> None:
        super().__init__(where, preamble, lead)
        self.reader = reader
        self.held: list[str] | None = []  # None once given out
        self.begin = begin  # the message's begin, once it is given out

    def take(self, text: str, tokens: int) -> Part | None:
        held = self.held
        if held is None:
            return super().take(text, tokens)
        held.append(text)
        if not self.reader.feed(text):
            return self.give_out()
        return None

    def give_out(self) -> Part:
        """What was held, as the content it is (the message begins now)."""
        held, self.held = self.held, None
        if not held:
            return self.begin
        return (PARTS, (self.begin, super().take("".join(held), 0)))


class CallBody(Body):
    """A call's arguments: each piece cut at the end of the first JSON value, then checked
    against the declared schema when the call ends."""

    __slots__ = ("index", "name", "checker", "cutter")

    def __init__(self, index: int, name: str, checker: ArgumentChecker, shown: str) -> None:
        super().__init__(shown)
        self.index = index
        self.name = name  # the declared name its arguments are checked against ("": none)
        self.checker = checker
        self.cutter = ArgumentCutter()

    def take(self, text: str, tokens: int) -> Part | None:
        piece = self.cutter.feed(text)
        return (ARGUMENTS, self.index, piece) if piece else None

    def end(self, by: str) -> list[Part]:
        cutter, index = self.cutter, self.index
        parts: list[Part] = []
        arguments = cutter.arguments()
        if not arguments:
            parts.append((RECOVERY, rules.EMPTY_ARGUMENTS, cutter.pending_lead(), self.where))
            arguments = "{}"
            parts.append((ARGUMENTS, index, arguments))
        junk = cutter.junk_text()
        if junk.strip():
            parts.append((RECOVERY, rules.AFTER_JSON_VALUE, junk, self.where))
        name = self.name
        outcome = self.checker.check(name, arguments) if name else rules.UNDECLARED
        parts += (ToolCallEnd(index, arguments, outcome), MessageEnd(by))
        return parts


class DropBody(Body):
    """A body a rule drops: its text kept only to be counted, with the rule, when it ends."""

    __slots__ = ("rule", "dropped")

    def __init__(self, rule: str, where: str) -> None:
        super().__init__(where)
        self.rule = rule
        self.dropped: list[str] = []

    def take(self, text: str, tokens: int) -> None:
        self.dropped.append(text)

    def end(self, by: str) -> list[Part]:
        return [(RECOVERY, self.rule, "".join(self.dropped), self.where)]


class Done:
    """The turn is over: the text that still comes, dropped and counted at the end."""

    __slots__ = ("dropped",)

    kind = DONE

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def take(self, text: str, tokens: int) -> None:
        self.dropped.append(text)


State = HeaderState | Body | Done

_NEW_STATE: dict[str, Callable[[], State]] = {
    FIRST_HEADER: lambda: HeaderState(False),
    NEW_HEADER: lambda: HeaderState(True),
    CHANNEL_HEADER: lambda: HeaderState(False, hm.CHANNEL),
    FREE_HEADER: lambda: HeaderState(False, free=True),
    DONE_STATE: Done,
}
"""The states a move's ``then`` names, built fresh."""


# -- the machine ----------------------------------------------------------------------------


class Machine:
    """One model turn's parse state. Use one machine per response choice.

    ``rules``: what the request allows (:class:`Rules`); ``new_id``: makes call ids. Text goes
    to the state (:meth:`text`), markers to :meth:`marker`, the end of the output to
    :meth:`close`; each returns what it produced, as parts (:mod:`harmony_plugins._steps`).
    """

    __slots__ = ("rules", "spaced", "checker", "new_id", "at", "after_call", "stop_reason",
                 "calls", "seen_marker", "maybe_calls", "separator", "bare")

    def __init__(self, rules: Rules, new_id: Callable[[], str] | None = None) -> None:
        self.rules = rules
        self.spaced = hdr.spaced_names(rules.tools)
        self.checker = ArgumentChecker(rules.schemas)
        self.new_id = new_id or random_call_id
        self.after_call = False  # a <|call|> was seen: only calls may follow
        self.stop_reason: str | None = None
        self.calls = 0
        self.seen_marker = False
        self.maybe_calls = 0  # tools unknown: messages whose recipient may name a function
        # What the next content message of another channel than a preamble's puts before its
        # first text: "\n" after a preamble whose text did not end in whitespace (section 2).
        self.separator = ""
        # The functions a bare JSON object may be a call to, with the properties each
        # declares: the forced ones that declare any (section 10).
        self.bare = {n: p for n in rules.forced
                     if (p := declared_properties(rules.schemas.get(n)))}
        self._apply(OPENING, END_OF_STREAM)  # the header the prompt's <|start|>assistant began

    # -- input ---------------------------------------------------------------------------

    def text(self, text: str, tokens: int) -> Part | None:
        """Take a piece of model text (never empty), made of ``tokens`` ids (0 in text mode)."""
        return self.at.take(text, tokens)

    def marker(self, marker: int) -> list[Part]:
        """Take the next control token: apply its move (none in the table: nothing)."""
        move = MOVES[self.at.kind].get(marker)
        if move is None:
            return []
        return self._apply(move, marker)

    def close(self, finish: str) -> list[Part]:
        """End of stream: settle what is open and hand over the turn's end. ``finish`` is why
        the engine stopped: ``"stop"``, ``"length"`` or ``"unknown"`` (nothing else in the parse
        depends on it)."""
        move = MOVES[self.at.kind].get(END_OF_STREAM)
        parts = self._apply(move, END_OF_STREAM) if move is not None else []
        done = self.at
        if isinstance(done, Done) and done.dropped:
            parts.append(self._recovery(rules.AFTER_END_OF_TURN, "".join(done.dropped)))
        finish_reason: str | None
        if finish == "length":
            finish_reason = "length"
        elif finish == "unknown":  # the engine reports its own
            finish_reason = None
        else:
            finish_reason = "tool_calls" if self.calls else "stop"
        parts.append(EndOfTurn(self.stop_reason or "end_of_stream", finish_reason))
        return parts

    def joins(self, marker: int) -> bool:
        """Whether the text on both sides of ``marker`` may end up side by side in one field
        (the table's ``joins`` column, in the state the machine is in): text mode then keeps
        the two sides from spelling a control token."""
        at = self.at
        move = MOVES[at.kind].get(marker)
        if move is None:
            return False
        joins = move.joins
        if joins == IF_CONTENT:
            return at.shown  # type: ignore[union-attr]
        if joins == IF_FREE_AND_EMPTY:
            return at.only_free() and not at.pieces  # type: ignore[union-attr]
        return bool(joins)

    def unknown_token(self) -> Part:
        """A token id the vocabulary does not know."""
        return self._recovery(rules.UNKNOWN_TOKEN)

    def dropped(self, rule: str, text: str) -> Part:
        """Model text a front end drops by ``rule`` (counted where the machine is)."""
        return self._recovery(rule, text)

    # -- the one place the state changes ---------------------------------------------------

    def _apply(self, move: Move, marker: int) -> list[Part]:
        """Apply ``move`` for ``marker``: its rule, then its closer, then the next state."""
        parts: list[Part] = []
        if move.rule is not None:
            parts.append(self._recovery(move.rule))
        decision: State | str | None = None
        if move.close is not None:
            decision = _CLOSERS[move.close](self, self.at, marker, parts)
            self.seen_marker = True  # markup: a marker that closes something (not one skipped)
        then = move.then
        if decision == FORGED:
            self.stop_reason = FORGED
            then = DONE_STATE
        elif move.stop is not None:
            self.stop_reason = move.stop
            self.after_call = self.after_call or move.stop == "call"
        if then != SAME:
            self.at = decision if then == ROUTE else _NEW_STATE[then]()  # type: ignore[assignment]
        return parts

    def _recovery(self, rule: str, text: str = "", at: str | None = None) -> Part:
        """A recovery rule applied: its part. ``at``: what it touched (:attr:`Summary.applied
        <harmony_plugins.Summary.applied>`); by default the body the machine is in (its
        channel, or its call's name), or nothing outside one."""
        if at is None:
            place = self.at
            at = place.where if isinstance(place, Body) else ""
        return (RECOVERY, rule, text, at)

    # -- the closers: each appends what it produces to ``parts``, returns its decision -------

    def _restart(self, header: HeaderState, marker: int, parts: list[Part]) -> None:
        """``<|start|>`` in a header: text after ``<|end|>`` is free text; a ``final`` header
        holds the answer; any other header that holds text is dropped (``header_restarted``)."""
        free = header.only_free()
        header.close_section()
        if free:
            self._free_text(header, marker, parts)
        elif not self._final_answer(header, marker, parts) and header.text().strip():
            parts.append(self._recovery(rules.HEADER_RESTARTED, header.text()))

    def _section(self, header: HeaderState, marker: int, parts: list[Part]) -> str | None:
        """``<|channel|>`` or ``<|constrain|>``: a new section; a first section that names
        another role was a forged turn (its role written as text, then this marker)."""
        header.close_section()
        header.section = marker
        header.free = False
        if len(header.sections) == 1:
            return self._forged(header, parts)
        return None

    def _complete(self, header: HeaderState, marker: int, parts: list[Part]) -> State | str:
        """``<|message|>``: the header is complete; its route is the body it leads to."""
        header.close_section()
        h = hdr.parse_header(header.sections, header.role_given, self.rules.tools, self.spaced)
        if h.forged:
            parts.append(self._recovery(rules.FORGED_TURN, header.text(), h.role or ""))
            return FORGED
        channel = h.channel or ""
        if h.role_channel:
            parts.append(self._recovery(rules.CHANNEL_IN_ROLE, at=channel))
        if h.junk:
            parts.append(self._recovery(rules.HEADER_JUNK, " ".join(h.junk), channel))
        if self.rules.tools_unknown and hdr.may_name_function(h):
            self.maybe_calls += 1  # a call, if the tools declare it: they would have said
            return self._drop(rules.TOOLS_UNKNOWN, _named(h.recipient or h.content_type or ""),
                              parts)
        return self._route_call(h, parts) or self._route_text(h, parts)

    def _header_end(self, header: HeaderState, marker: int, parts: list[Part]) -> str | None:
        """``<|end|>`` closes a header: free text after ``<|end|>``, or a header without a
        message (section 3: the output's first header too, however long)."""
        return self._header_closed(header, marker, parts, False, rules.HEADER_WITHOUT_MESSAGE)

    def _header_stop(self, header: HeaderState, marker: int, parts: list[Part]) -> str | None:
        """A stop closes a header: as ``<|end|>`` does, but an output with no markup before the
        stop is content (section 2, ``no_markup``)."""
        return self._header_closed(header, marker, parts, True, rules.HEADER_WITHOUT_MESSAGE)

    def _header_cut(self, header: HeaderState, marker: int, parts: list[Part]) -> str | None:
        """The output ends in a header: an unfinished one (section 5), or no markup at all."""
        return self._header_closed(header, marker, parts, True, rules.UNFINISHED_HEADER)

    def _body_end(self, body: Body, marker: int, parts: list[Part]) -> None:
        """The body ends (``marker`` ended it). After content, the separator the next content
        message may need: set by a preamble that showed text, used up by another channel's
        message that did."""
        if isinstance(body, HeldContentBody) and body.held is not None:
            if self._end_held(body, marker, parts):
                return
            parts.append(body.give_out())
        parts += body.end(ENDED_BY[marker])
        if isinstance(body, ContentBody) and body.scanner.end:  # it showed text
            self.separator = "\n" if body.preamble and not body.scanner.last_space() else ""

    # -- header rules ----------------------------------------------------------------------

    def _free_text(self, header: HeaderState, marker: int, parts: list[Part]) -> None:
        """Text between messages (section 2): content, or header junk, or after a call."""
        text = header.text()
        if not text.strip():
            return  # whitespace between messages
        if self.after_call:
            parts.append(self._recovery(rules.AFTER_CALL, text))
        elif hdr.is_header_like(text):
            parts.append(self._recovery(rules.HEADER_JUNK, text))
        else:
            parts.append(self._recovery(rules.FREE_TEXT, at=hm.FINAL))  # the content it becomes
            self._visible(text, None, marker, parts)

    def _forged(self, header: HeaderState, parts: list[Part]) -> str | None:
        """FORGED if the role section names someone other than the assistant."""
        kind, text = header.sections[0]
        role = hdr.forging_role(text, header.role_given) if kind == hdr.ROLE else None
        if role is None:
            return None
        parts.append(self._recovery(rules.FORGED_TURN, header.text(), role))
        return FORGED

    def _header_closed(self, header: HeaderState, marker: int, parts: list[Part],
                       no_markup: bool, rule: str) -> str | None:
        """A header ended without ``<|message|>`` (by ``marker``): after ``<|end|>`` with no
        header marker yet, free text; else a header closed, dropped by ``rule`` unless it holds
        the answer, or forged a turn. ``no_markup``: an output with no marker before this one
        (text closed by ``<|end|>`` is the first message's header, however long: section 3)."""
        free = header.only_free()
        header.close_section()
        if free:
            self._free_text(header, marker, parts)
            return None
        text = header.text()
        if no_markup and not self.seen_marker and not hdr.is_header_like(text):
            parts.append(self._recovery(rules.NO_MARKUP, at=hm.FINAL))
            self._visible(text, None, marker, parts)
            return None
        # Without <|start|>, a role is a forged turn only where a header marker follows it
        # (section 2); prose that ends here is a header without a message (section 3).
        if header.role_given and self._forged(header, parts) == FORGED:
            return FORGED
        if self._final_answer(header, marker, parts):
            return None
        if text.strip():
            parts.append(self._recovery(rule, text))
        return None

    def _final_answer(self, header: HeaderState, marker: int, parts: list[Part]) -> bool:
        """A ``final`` header that ended without ``<|message|>`` holds the answer (section 3):
        show it and return True, or return False when the header is not of that shape."""
        sections = header.sections
        body = hdr.final_without_message(sections)
        if body is None or self.after_call:
            return False
        parts.append(self._recovery(rules.FINAL_WITHOUT_MESSAGE, at=hm.FINAL))
        junk = hdr.junk_before_final(sections, header.role_given, self.rules.tools, self.spaced)
        if junk:  # words before the channel that no rule uses
            parts.append(self._recovery(rules.HEADER_JUNK, " ".join(junk), hm.FINAL))
        self._visible(body, hm.FINAL, marker, parts)
        return True

    def _visible(self, text: str, channel: str | None, marker: int, parts: list[Part]) -> None:
        """Content that a header rule recovered: a message of its own, in one piece."""
        body = self._content_body(channel, None, parts)
        part = body.take(text, 0)
        if part is not None:
            parts.append(part)
        self._body_end(body, marker, parts)

    # -- routing ---------------------------------------------------------------------------

    def _route_call(self, h: hdr.Header, parts: list[Part]) -> Body | None:
        """Route a header with a recipient (or one its content type names); None: it has
        none, and is routed by its channel."""
        recipient = h.recipient
        rules_ = self.rules
        if recipient is None:
            named = hdr.content_type_function(h.content_type, rules_.tools)
            if named:  # `<|constrain|>functions.NAME`, NAME declared: the recipient
                parts.append(self._recovery(rules.CONTENT_TYPE_RECIPIENT, at=named))
                return self._begin_call(named, h, parts)
            if named == "":  # `functions.NAME` undeclared: a call that is not surfaced
                recipient = h.content_type
            elif h.empty_recipient:
                return self._drop(rules.EMPTY_RECIPIENT, h.channel or "", parts)
            else:
                return None
        assert recipient is not None
        name, rule = hdr.resolve_recipient(recipient, rules_.tools, rules_.builtins)
        undeclared = name is None and rule == rules.UNDECLARED_FUNCTION
        if undeclared and rules_.pass_undeclared:
            name = recipient[len(hm.FUNCTIONS_PREFIX):]
        if name is None and rules_.any_recipient:  # no tools given: as written
            return self._begin_call(recipient.removeprefix(hm.FUNCTIONS_PREFIX), h, parts,
                                    True, recipient)
        if name is not None:
            if rule is not None:
                parts.append(self._recovery(rule, at=name))
            return self._begin_call(name, h, parts, undeclared)
        return self._drop(rule or rules.UNDECLARED_RECIPIENT, _named(recipient), parts)

    def _route_text(self, h: hdr.Header, parts: list[Part]) -> Body:
        """Route a header without a recipient, by its channel."""
        channel = h.channel
        if self.after_call:
            return self._drop(rules.AFTER_CALL, channel or "", parts)
        if channel == hm.ANALYSIS:
            return self._begin_reasoning(h, parts)
        if channel is None or channel == hm.FINAL or channel == hm.COMMENTARY:
            return self._content_body(h.channel, h.written_content_type, parts)
        # an unknown channel is treated as chain of thought; its name is counted
        parts.append(self._recovery(rules.UNKNOWN_CHANNEL, channel, channel))
        return self._begin_reasoning(h, parts)

    def _begin_reasoning(self, h: hdr.Header, parts: list[Part]) -> Body:
        parts.append(MessageBegin("reasoning", counted_channel("reasoning", h.channel),
                                  h.channel, None, h.written_content_type))
        return ReasoningBody(h.channel or hm.ANALYSIS)

    def _content_body(self, channel: str | None, content_type: str | None,
                      parts: list[Part]) -> ContentBody:
        """Begin a content message written on ``channel`` (held back while it may be a call
        written as text, where the request asked for their recovery)."""
        counted = counted_channel("content", channel)
        preamble = counted == hm.COMMENTARY
        lead = "" if preamble else self.separator
        where = channel or counted
        begin = MessageBegin("content", counted, channel, None, content_type, lead)
        if self.rules.text_calls and not self.after_call:
            reader = TextCallReader(named=True, bare=bool(self.bare))
            return HeldContentBody(where, preamble, lead, reader, begin)
        parts.append(begin)
        return ContentBody(where, preamble, lead)

    def _begin_call(self, name: str, h: hdr.Header, parts: list[Part],
                    undeclared: bool = False, written: str | None = None) -> Body:
        if self.rules.single_call and self.calls:  # parallel_tool_calls false: one call only
            return self._drop(rules.PARALLEL_CALLS_REFUSED, name, parts)
        # A call passed through undeclared has that outcome, not its arguments' check.
        index = self.calls
        self.calls += 1
        recipient = written or recipient_of(name, self.rules.builtins)
        parts += (MessageBegin("call", counted_channel("call", h.channel, recipient), h.channel,
                               recipient, h.written_content_type),
                  ToolCallBegin(index, self.new_id(), name))
        return CallBody(index, "" if undeclared else name, self.checker, name)

    def _drop(self, rule: str, at: str, parts: list[Part]) -> Body:
        """Drop the body by ``rule`` (counted when it ends); ``at``: what it touched, the
        call's name for a dropped call, the channel otherwise."""
        if rule == rules.UNDECLARED_FUNCTION:  # a call not surfaced
            parts.append((OUTCOME, rules.UNDECLARED, at))
        return DropBody(rule, at)

    def _end_held(self, body: HeldContentBody, marker: int, parts: list[Part]) -> bool:
        """A held message ended: if it is wholly a call written as text that names a declared
        function (a bare object: exactly one forced function declares each of its keys)
        whose schema accepts its object, it is that call (counted ``call_written_as_text``):
        True. Else False: it is content. Without a schema check nothing is recovered."""
        found = body.reader.call()
        rules_ = self.rules
        if found is None or not schema_check_available() or (rules_.single_call and self.calls):
            return False
        name, arguments = found
        allowed = rules_.forced or rules_.tools
        if name is None:  # a bare object: of one forced function's keys, which it accepts
            fits = [n for n, keys in sorted(self.bare.items())
                    if of_declared_keys(arguments, keys)
                    and self.checker.check(n, arguments) == rules.SURFACED]
            if len(fits) != 1:
                return False
            name = fits[0]
        elif name not in allowed or self.checker.check(name, arguments) != rules.SURFACED:
            return False
        parts.append(self._recovery(rules.CALL_WRITTEN_AS_TEXT, at=name))
        index = self.calls
        self.calls += 1
        recipient = recipient_of(name, rules_.builtins)
        parts += (MessageBegin("call", hm.COMMENTARY, body.begin.written_channel, recipient,
                               None),
                  ToolCallBegin(index, self.new_id(), name),
                  (ARGUMENTS, index, arguments),
                  ToolCallEnd(index, arguments, rules.SURFACED),
                  MessageEnd(ENDED_BY[marker]))
        return True


_CLOSERS: dict[str, Callable[[Machine, Any, int, list[Part]], Any]] = {
    RESTART: Machine._restart,
    SECTION: Machine._section,
    COMPLETE: Machine._complete,
    HEADER_END: Machine._header_end,
    HEADER_STOP: Machine._header_stop,
    HEADER_CUT: Machine._header_cut,
    BODY_END: Machine._body_end,
}
"""What a move's ``close`` names: the machine's method that runs it."""
