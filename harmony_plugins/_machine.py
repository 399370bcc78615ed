"""The Harmony state machine: text and markers in, a step's parts (and events) out.

Everything that affects routing lives here. The machine does not know where its input came
from: the front ends (:mod:`harmony_plugins._frontends`) turn token ids or decoded text into
pieces of text, each handed to the state the machine is in (``machine.at.take(text,
tokens)``), and control tokens, each handed to :meth:`Machine.marker`. What they produce goes
to the machine's :class:`~harmony_plugins._steps.Collector` (text pieces, calls, recoveries;
the events themselves only when the turn asked for them), which also keeps the turn's counts.

Theory of operation
-------------------
The machine is in one of three states. The state is the object in :attr:`Machine.at`, which
holds that state's data and exists only in that state; each takes the state's text with its
one method, ``take``:

``HEADER`` (:class:`HeaderState`)
    Reading a message header. Header text is buffered, never emitted, until ``<|message|>``
    completes it; then the header decides the *route* of the body. The output starts here,
    in the header that the prompt's ``<|start|>assistant`` opened.
``BODY`` (a :class:`Body`, one class per route)
    Reading a message body. Each piece of text goes straight out along the route:
    reasoning (:class:`ReasoningBody`), content (:class:`ContentBody`), a tool call's
    arguments (:class:`CallBody`), or a drop list (:class:`DropBody`: counted, never shown).
``DONE`` (:class:`Done`)
    The turn is over (``<|return|>``, end of text, a forged turn). Text is dropped, and
    counted when the stream ends.

A ``<|call|>`` ends the turn too, but further calls may follow it: the machine stays
live with ``after_call`` set, and any later message that is not a call is dropped.

A header that follows ``<|end|>`` or ``<|call|>`` starts out *free*: until a header marker
(``<|channel|>``, ``<|constrain|>``, ``<|message|>``) arrives, its text may be free text
between messages rather than a header. If ``<|start|>``, a stop marker or the end of the
stream comes first, the text is content (or header junk, if it holds only header words).
Its first word may also be another role written as plain text (``<|end|>user<|channel|>``):
the model is forging a turn, and the turn ends there, as with ``<|start|>user``.

Transitions, by marker (rows) and state (columns); "new header" means back to HEADER:

=============  =======================================  =====================================
marker         in HEADER                                in BODY
=============  =======================================  =====================================
start          free text: content or junk; else old     missing end: close body, new header
               header dropped if any; new header
channel        new channel section; after a forging     missing end: close body, new header
               role section: the turn ends
constrain      new content-type section (as channel)    stray marker, ignored
message        header complete: route the body          stray marker, ignored
end            free text: content or junk; else         close body, new free header
               header without message: dropped;
               then a new free header
call           as end, then ``after_call``              close body, new free header,
                                                        ``after_call``
return, eot    as end, then DONE                        close body, DONE
ignored        counted                                  counted
=============  =======================================  =====================================

In DONE every marker is ignored.

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
from ._events import ContentText, ReasoningText, ToolCallEnd
from ._leaks import LeakScanner
from ._steps import Collector
from ._text_calls import TextCallReader
from ._tools import recipient as recipient_of

_STOP_REASONS = {hm.RETURN: "return", hm.CALL: "call", hm.END_OF_TEXT: "end_of_text"}
_ENDED_BY = {hm.START: "new_header", hm.CHANNEL: "new_header", hm.END: "end",
             None: "end_of_stream", **_STOP_REASONS}
"""``MessageEnd.by`` for the marker that ended a message (None: the end of the stream)."""


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


class HeaderState:
    """Reading a header: its sections so far and the one being read."""

    __slots__ = ("role_given", "free", "sections", "kind", "pieces")

    def __init__(self, role_given: bool, kind: int = hdr.ROLE, free: bool = False) -> None:
        self.role_given = role_given  # it began with <|start|>: its first word is the role
        self.free = free  # after <|end|> / <|call|>, no header marker yet: maybe free text
        self.sections: list[tuple[int, str]] = []
        self.kind = kind  # the section being read: ROLE, or the marker that began it
        self.pieces: list[str] = []  # its text so far

    def take(self, text: str, tokens: int) -> None:
        self.pieces.append(text)  # buffered until the header is complete

    def close_section(self) -> None:
        self.sections.append((self.kind, "".join(self.pieces)))
        self.pieces = []

    def text(self) -> str:
        return "".join(text for _, text in self.sections)

    def only_free(self) -> bool:
        """The header so far is text after <|end|> with no header marker: maybe free text."""
        return self.free and not self.sections and self.kind == hdr.ROLE


class Body:
    """The body being routed. One class per route, each holding what its route needs: the
    machine hands each piece of text to the body, which sends it on to the collector
    (:meth:`take`), and closes it when a marker or the end of the stream ends it
    (:meth:`end`). A body holds the collector, not the machine."""

    __slots__ = ("out", "where")

    def __init__(self, out: Collector, where: str) -> None:
        self.out = out
        self.where = where  # what a rule applied inside it touched (Summary.applied)

    def take(self, text: str, tokens: int) -> None:
        """Take the next piece of model text (never empty), made of ``tokens`` token ids (0 in
        text mode), which count as reasoning tokens if it is reasoning. Every state has this
        one entry for text."""
        raise NotImplementedError

    def end(self, by: str) -> None:
        self.out.message_end(by)


class ReasoningBody(Body):
    """Chain of thought: each piece to reasoning, its tokens counted (usage figures)."""

    __slots__ = ()

    def take(self, text: str, tokens: int) -> None:
        out = self.out
        out.reasoning_parts.append(text)
        out.reasoning_tokens += tokens
        if out.events is not None:
            out.events.append(ReasoningText(text))
            out.other = True


class ContentBody(Body):
    """Visible text: each piece to content, scanned for leaked markup as it goes.

    ``preamble``: the message is a preamble (``commentary``, no recipient). ``lead``: what the
    chat content field puts before the message's first text (contract section 2: ``"\n"``
    after a preamble that did not end in whitespace, when this message is of another
    channel); it goes with the first piece into the content, never into the message's events
    (a Responses item holds the message's own text)."""

    __slots__ = ("scanner", "preamble", "lead")

    def __init__(self, out: Collector, where: str, preamble: bool = False,
                 lead: str = "") -> None:
        super().__init__(out, where)
        self.scanner = LeakScanner()
        self.preamble = preamble
        self.lead = lead

    def take(self, text: str, tokens: int) -> None:
        out = self.out
        if self.lead:
            out.content_parts.append(self.lead + text)
            self.lead = ""
        else:
            out.content_parts.append(text)
        if out.events is not None:
            out.events.append(ContentText(text))
            out.other = True
        found = self.scanner.feed(text)
        if found:
            for excerpt in found:
                out.leak(excerpt)

    def end(self, by: str) -> None:
        found = self.scanner.close()
        if found:
            for excerpt in found:
                self.out.leak(excerpt)
        self.out.message_end(by)


class HeldContentBody(ContentBody):
    """Visible text that may be a call written as text (the request asked for their recovery,
    contract section 10): held back, its message not begun, while it may still wholly be one;
    given out as content as soon as it cannot (then it is a :class:`ContentBody`). At its end
    the machine decides what a whole one is (:meth:`Machine._end_held`)."""

    __slots__ = ("reader", "held", "begin")

    def __init__(self, out: Collector, where: str, preamble: bool, lead: str,
                 reader: TextCallReader, begin: tuple[str, str | None, str | None]) -> None:
        super().__init__(out, where, preamble, lead)
        self.reader = reader
        self.held: list[str] | None = []  # None once given out
        self.begin = begin  # (counted channel, written channel, content type)

    def take(self, text: str, tokens: int) -> None:
        held = self.held
        if held is None:
            super().take(text, tokens)
            return
        held.append(text)
        if not self.reader.feed(text):
            self.give_out()

    def give_out(self) -> None:
        """What was held, as the content it is (the message begins now)."""
        held, self.held = self.held, None
        counted, written, content_type = self.begin
        self.out.message_begin("content", counted, written, None, content_type, self.lead)
        if held:
            super().take("".join(held), 0)


class CallBody(Body):
    """A call's arguments: each piece cut at the end of the first JSON value, then checked
    against the declared schema when the call ends."""

    __slots__ = ("index", "name", "checker", "cutter")

    def __init__(self, out: Collector, index: int, name: str, checker: ArgumentChecker,
                 shown: str) -> None:
        super().__init__(out, shown)
        self.index = index
        self.name = name  # the declared name its arguments are checked against ("": none)
        self.checker = checker
        self.cutter = ArgumentCutter()

    def take(self, text: str, tokens: int) -> None:
        piece = self.cutter.feed(text)
        if piece:
            self.out.arguments(self.index, piece)

    def end(self, by: str) -> None:
        cutter, out = self.cutter, self.out
        arguments = cutter.arguments()
        if not arguments:
            out.recovery(rules.EMPTY_ARGUMENTS, cutter.pending_lead(), self.where)
            arguments = "{}"
            out.arguments(self.index, arguments)
        junk = cutter.junk_text()
        if junk.strip():
            out.recovery(rules.AFTER_JSON_VALUE, junk, self.where)
        name = self.name
        outcome = self.checker.check(name, arguments) if name else rules.UNDECLARED
        out.call_end(ToolCallEnd(self.index, arguments, outcome))
        out.message_end(by)


class DropBody(Body):
    """A body a rule drops: its text kept only to be counted, with the rule, when it ends."""

    __slots__ = ("rule", "dropped")

    def __init__(self, out: Collector, rule: str, where: str) -> None:
        super().__init__(out, where)
        self.rule = rule
        self.dropped: list[str] = []

    def take(self, text: str, tokens: int) -> None:
        self.dropped.append(text)

    def end(self, by: str) -> None:
        self.out.recovery(self.rule, "".join(self.dropped), self.where)


class Done:
    """The turn is over: the text that still comes, dropped and counted at the end."""

    __slots__ = ("dropped",)

    def __init__(self) -> None:
        self.dropped: list[str] = []

    def take(self, text: str, tokens: int) -> None:
        self.dropped.append(text)


State = HeaderState | Body | Done


class Machine:
    """One model turn's parse state. Use one machine per request.

    ``tools``: the declared function names; ``schemas``: their ``parameters`` by name (the
    arguments of a call are checked against them when it ends); ``out``: where what it
    produces goes (a :class:`~harmony_plugins._steps.Collector`, which also keeps the turn's
    counts).
    """

    __slots__ = (
        "tools", "spaced", "checker", "new_id", "pass_undeclared", "tools_unknown",
        "any_recipient", "builtins", "out", "at", "after_call", "stop_reason", "calls",
        "seen_marker", "maybe_calls", "separator", "single_call", "text_calls", "forced",
        "bare",
    )

    def __init__(
        self,
        tools: frozenset[str] = frozenset(),
        id_factory: Callable[[], str] | None = None,
        pass_undeclared: bool = False,
        schemas: Mapping[str, Any] | None = None,
        tools_unknown: bool = False,
        any_recipient: bool = False,
        builtins: frozenset[str] = frozenset(),
        out: Collector | None = None,
        *,
        single_call: bool = False,
        text_calls: bool = False,
        forced: frozenset[str] = frozenset(),
    ) -> None:
        self.tools = tools
        self.any_recipient = any_recipient
        self.builtins = builtins  # the declared tools that are built-in tools (written bare)
        self.spaced = hdr.spaced_names(tools)
        self.checker = ArgumentChecker(schemas or {})
        self.new_id = id_factory or random_call_id
        self.pass_undeclared = pass_undeclared
        self.tools_unknown = tools_unknown
        self.out = out if out is not None else Collector()
        self.at: State = HeaderState(False)
        """The state, as the object holding its data."""
        self.after_call = False  # a <|call|> was seen: only calls may follow
        self.stop_reason: str | None = None
        self.calls = 0
        self.seen_marker = False
        self.maybe_calls = 0  # tools unknown: messages whose recipient may name a function
        # What the next content message of another channel than a preamble's puts before its
        # first text: "\n" after a preamble whose text did not end in whitespace (section 2).
        self.separator = ""
        self.single_call = single_call  # parallel_tool_calls false: calls after the first dropped
        self.text_calls = text_calls  # recover calls written as text (section 10)
        self.forced = forced  # the functions a forced call may be: or none
        # The functions a bare JSON object may be a call to, with the properties each
        # declares: the forced ones that declare any (section 10), or none.
        self.bare = {n: p for n in forced
                     if (p := declared_properties(self.checker.schemas.get(n)))}

    @property
    def recoveries(self) -> dict[str, int]:
        """Recovery rules applied so far, with how often."""
        return self.out.recoveries

    @property
    def outcomes(self) -> dict[str, int]:
        """Calls so far by outcome (``rules.OUTCOMES``)."""
        return self.out.outcomes

    @property
    def leaks(self) -> list[str]:
        """Excerpts of the suspected leaks flagged so far."""
        return self.out.leaks

    @property
    def reasoning_tokens(self) -> int:
        """Tokens of reasoning text so far (usage figures)."""
        return self.out.reasoning_tokens

    # -- input ---------------------------------------------------------------------------

    def marker(self, marker: int) -> None:
        """Take the next control token."""
        if marker == hm.IGNORED:
            self.recover(rules.IGNORED_TOKEN)
            return
        at = self.at
        if isinstance(at, Body):
            self._body_marker(at, marker)
        elif isinstance(at, HeaderState):
            self._header_marker(at, marker)
        self.seen_marker = True

    def joins(self, marker: int) -> bool:
        """Whether the text on both sides of ``marker`` may end up side by side in one field:
        the marker is dropped (a reserved token; a stray ``<|message|>`` in a body), or it
        is an ``<|end|>`` after content or header text, which free text may follow, or a
        ``<|message|>`` right after such an ``<|end|>`` (an empty header: the content it opens
        follows the content before). The text front end then keeps the two sides from spelling
        a control token."""
        at = self.at
        if marker == hm.IGNORED:
            return not isinstance(at, Done)
        if isinstance(at, Body):
            return (marker == hm.MESSAGE or marker == hm.CONSTRAIN
                    or (marker == hm.END and isinstance(at, ContentBody)))
        return isinstance(at, HeaderState) and (
            marker == hm.END or (marker == hm.MESSAGE and at.only_free() and not at.pieces))

    def drop_text(self, rule: str, text: str) -> None:
        """Drop model text by ``rule`` on behalf of a front end (counted, carried)."""
        self.recover(rule, text)

    def unknown_token(self) -> None:
        """A token id the vocabulary does not know."""
        self.recover(rules.UNKNOWN_TOKEN)

    def close(self, finish: str) -> None:
        """End of stream: settle what is open and hand over the turn's end. ``finish`` is why
        the engine stopped: ``"stop"``, ``"length"`` or ``"unknown"`` (nothing else in the parse
        depends on it)."""
        at = self.at
        if isinstance(at, HeaderState):
            free = at.only_free()
            at.close_section()
            if free:
                self._free_text(at, None)
            else:
                self._header_closed(at, None)
        elif isinstance(at, Body):
            self._end_body(at, None)
        done = self.at
        if isinstance(done, Done) and done.dropped:
            self.recover(rules.AFTER_END_OF_TURN, "".join(done.dropped))
        finish_reason: str | None
        if finish == "length":
            finish_reason = "length"
        elif finish == "unknown":  # the engine reports its own
            finish_reason = None
        else:
            finish_reason = "tool_calls" if self.calls else "stop"
        self.out.end(self.stop_reason or "end_of_stream", finish_reason)
        self._to_done()

    # -- what it hands over ---------------------------------------------------------------

    def recover(self, rule: str, text: str = "", at: str | None = None) -> None:
        """Apply a recovery rule: hand it over (the collector counts it). ``at``: what it
        touched (:attr:`Summary.applied <harmony_plugins.Summary.applied>`); by default the
        body it was applied in (its channel, or its call's name), or nothing outside one."""
        if at is None:
            place = self.at
            at = place.where if isinstance(place, Body) else ""
        self.out.recovery(rule, text, at)

    def _visible(self, text: str, channel: str | None, marker: int | None) -> None:
        """Content that a header rule recovered: a message of its own, in one piece."""
        body = self._content_body(channel, None)
        body.take(text, 0)
        self._end_body(body, marker)

    def _content_body(self, channel: str | None, content_type: str | None) -> ContentBody:
        """Begin a content message written on ``channel`` (held back while it may be a call
        written as text, where the request asked for their recovery)."""
        counted = counted_channel("content", channel)
        preamble = counted == hm.COMMENTARY
        lead = "" if preamble else self.separator
        where = channel or counted
        if self.text_calls and not self.after_call:
            reader = TextCallReader(named=True, bare=bool(self.bare))
            return HeldContentBody(self.out, where, preamble, lead, reader,
                                   (counted, channel, content_type))
        self.out.message_begin("content", counted, channel, None, content_type, lead)
        return ContentBody(self.out, where, preamble, lead)

    def _end_body(self, body: Body, marker: int | None) -> None:
        """Close a body (``marker`` ended it; None: the end of the stream). After content, the
        separator the next content message may need: set by a preamble that showed text, used
        up by another channel's message that did."""
        if isinstance(body, HeldContentBody) and body.held is not None:
            if self._end_held(body, marker):
                return
            body.give_out()
        body.end(_ENDED_BY[marker])
        if isinstance(body, ContentBody) and body.scanner.end:  # it showed text
            self.separator = "\n" if body.preamble and not body.scanner.last_space() else ""

    # -- states ----------------------------------------------------------------------------

    def _to_done(self) -> None:
        if not isinstance(self.at, Done):  # a turn closed after it ended keeps its text
            self.at = Done()

    # -- headers -------------------------------------------------------------------------

    def _header_marker(self, header: HeaderState, marker: int) -> None:
        free = header.only_free()
        header.close_section()
        if marker == hm.CHANNEL or marker == hm.CONSTRAIN:
            header.kind = marker
            header.free = False
            if len(header.sections) == 1 and self._forged(header):
                return
        elif marker == hm.MESSAGE:
            self._header_complete(header)
        elif marker == hm.START:
            if free:
                self._free_text(header, marker)
            elif not self._final_answer(header, marker) and header.text().strip():
                self.recover(rules.HEADER_RESTARTED, header.text())
            self.at = HeaderState(True)
        else:  # end, call, return, end of text
            if free:
                self._free_text(header, marker)
            else:
                self._header_closed(header, marker)
            self._stop(marker)

    def _free_text(self, header: HeaderState, marker: int | None) -> None:
        """Text between messages (section 2): content, or header junk, or after a call."""
        text = header.text()
        if not text.strip():
            return  # whitespace between messages
        if self.after_call:
            self.recover(rules.AFTER_CALL, text)
        elif hdr.is_header_like(text):
            self.recover(rules.HEADER_JUNK, text)
        else:
            self.recover(rules.FREE_TEXT, at=hm.FINAL)  # the content it becomes
            self._visible(text, None, marker)

    def _forged(self, header: HeaderState) -> bool:
        """End the turn if the role section names someone other than the assistant."""
        kind, text = header.sections[0]
        role = hdr.forging_role(text, header.role_given) if kind == hdr.ROLE else None
        if role is None:
            return False
        self._end_turn_forged(header, role)
        return True

    def _end_turn_forged(self, header: HeaderState, role: str) -> None:
        """End the turn: the model began a turn for ``role`` (what the rule touched)."""
        self.stop_reason = "forged_turn"
        self.recover(rules.FORGED_TURN, header.text(), role)
        self._to_done()

    def _header_closed(self, header: HeaderState, marker: int | None) -> None:
        """A header ended without ``<|message|>`` (by ``marker``, or by end of stream)."""
        text = header.text()
        if not self.seen_marker and marker != hm.END and not hdr.is_header_like(text):
            # No markup at all (a stop token may or may not be there). Text closed by
            # <|end|> is the first message's header, however long (contract section 3).
            self.recover(rules.NO_MARKUP, at=hm.FINAL)
            self._visible(text, None, marker)
            return
        # Without <|start|>, a role is a forged turn only where a header marker follows it
        # (section 2); prose that ends here is a header without a message (section 3).
        if (header.role_given and self._forged(header)) or self._final_answer(header, marker):
            return
        if text.strip():
            rule = rules.UNFINISHED_HEADER if marker is None else rules.HEADER_WITHOUT_MESSAGE
            self.recover(rule, text)

    def _final_answer(self, header: HeaderState, marker: int | None) -> bool:
        """A ``final`` header that ended without ``<|message|>`` holds the answer (section 3):
        show it and return True, or return False when the header is not of that shape."""
        sections = header.sections
        body = hdr.final_without_message(sections)
        if body is None or self.after_call:
            return False
        self.recover(rules.FINAL_WITHOUT_MESSAGE, at=hm.FINAL)
        k = max(i for i, (kind, _) in enumerate(sections) if kind == hm.CHANNEL)
        rest = hdr.parse_header([*sections[:k], (hm.CHANNEL, hm.FINAL)], header.role_given,
                                self.tools, self.spaced)
        if rest.junk:  # words before the channel that no rule uses
            self.recover(rules.HEADER_JUNK, " ".join(rest.junk), hm.FINAL)
        self._visible(body, hm.FINAL, marker)
        return True

    def _header_complete(self, header: HeaderState) -> None:
        h = hdr.parse_header(header.sections, header.role_given, self.tools, self.spaced)
        if h.forged:
            self._end_turn_forged(header, h.role or "")
            return
        channel = h.channel or ""
        if h.role_channel:
            self.recover(rules.CHANNEL_IN_ROLE, at=channel)
        if h.junk:
            self.recover(rules.HEADER_JUNK, " ".join(h.junk), channel)
        if self.tools_unknown and hdr.may_name_function(h):
            self.maybe_calls += 1  # a call, if the tools declare it: they would have said
            self._drop(rules.TOOLS_UNKNOWN, _named(h.recipient or h.content_type or ""))
        elif not self._route_call(h):
            self._route_text(h)

    def _route_call(self, h: hdr.Header) -> bool:
        """Route a header with a recipient (or one its content type names); False: it has
        none, and is routed by its channel."""
        recipient = h.recipient
        if recipient is None:
            named = hdr.content_type_function(h.content_type, self.tools)
            if named:  # `<|constrain|>functions.NAME`, NAME declared: the recipient
                self.recover(rules.CONTENT_TYPE_RECIPIENT, at=named)
                self._begin_call(named, h)
                return True
            if named == "":  # `functions.NAME` undeclared: a call that is not surfaced
                recipient = h.content_type
            elif h.empty_recipient:
                self._drop(rules.EMPTY_RECIPIENT, h.channel or "")
                return True
            else:
                return False
        assert recipient is not None
        name, rule = hdr.resolve_recipient(recipient, self.tools, self.builtins)
        undeclared = name is None and rule == rules.UNDECLARED_FUNCTION
        if undeclared and self.pass_undeclared:
            name = recipient[len(hm.FUNCTIONS_PREFIX):]
        if name is None and self.any_recipient:  # no tools given: as written
            self._begin_call(recipient.removeprefix(hm.FUNCTIONS_PREFIX), h, True, recipient)
        elif name is not None:
            if rule is not None:
                self.recover(rule, at=name)
            self._begin_call(name, h, undeclared)
        else:
            self._drop(rule or rules.UNDECLARED_RECIPIENT, _named(recipient))
        return True

    def _route_text(self, h: hdr.Header) -> None:
        """Route a header without a recipient, by its channel."""
        channel = h.channel
        if self.after_call:
            self._drop(rules.AFTER_CALL, channel or "")
        elif channel == hm.ANALYSIS:
            self._begin_text("reasoning", h)
        elif channel is None or channel == hm.FINAL or channel == hm.COMMENTARY:
            self._begin_text("content", h)
        else:  # an unknown channel is treated as chain of thought; its name is counted
            self.recover(rules.UNKNOWN_CHANNEL, channel, channel)
            self._begin_text("reasoning", h)

    def _end_held(self, body: HeldContentBody, marker: int | None) -> bool:
        """A held message ended: if it is wholly a call written as text that names a declared
        function (a bare object: exactly one forced function declares each of its keys)
        whose schema accepts its object, it is that call (counted ``call_written_as_text``):
        True. Else False: it is content. Without a schema check nothing is recovered."""
        found = body.reader.call()
        if found is None or not schema_check_available() or (self.single_call and self.calls):
            return False
        name, arguments = found
        allowed = self.forced or self.tools
        if name is None:  # a bare object: of one forced function's keys, which it accepts
            fits = [n for n, keys in sorted(self.bare.items())
                    if of_declared_keys(arguments, keys)
                    and self.checker.check(n, arguments) == rules.SURFACED]
            if len(fits) != 1:
                return False
            name = fits[0]
        elif name not in allowed or self.checker.check(name, arguments) != rules.SURFACED:
            return False
        self.recover(rules.CALL_WRITTEN_AS_TEXT, at=name)
        out, index = self.out, self.calls
        self.calls += 1
        _, written, _ = body.begin
        recipient = recipient_of(name, self.builtins)
        out.message_begin("call", hm.COMMENTARY, written, recipient, None)
        out.call_begin(index, self.new_id(), name)
        out.arguments(index, arguments)
        out.call_end(ToolCallEnd(index, arguments, rules.SURFACED))
        out.message_end(_ENDED_BY[marker])
        return True

    def _begin_text(self, kind: str, h: hdr.Header) -> None:
        if kind == "content":
            self.at = self._content_body(h.channel, h.written_content_type)
            return
        out = self.out
        out.message_begin(kind, counted_channel(kind, h.channel), h.channel, None,
                          h.written_content_type)
        self.at = ReasoningBody(out, h.channel or hm.ANALYSIS)

    def _begin_call(self, name: str, h: hdr.Header, undeclared: bool = False,
                    written: str | None = None) -> None:
        if self.single_call and self.calls:  # parallel_tool_calls false: one call only
            self._drop(rules.PARALLEL_CALLS_REFUSED, name)
            return
        # A call passed through undeclared has that outcome, not its arguments' check.
        out = self.out
        index = self.calls
        self.calls += 1
        self.at = CallBody(out, index, "" if undeclared else name, self.checker, name)
        recipient = written or recipient_of(name, self.builtins)
        out.message_begin("call", counted_channel("call", h.channel, recipient), h.channel,
                          recipient, h.written_content_type)
        out.call_begin(index, self.new_id(), name)

    def _drop(self, rule: str, at: str) -> None:
        """Drop the body by ``rule`` (counted when it ends); ``at``: what it touched, the
        call's name for a dropped call, the channel otherwise."""
        self.at = DropBody(self.out, rule, at)
        if rule == rules.UNDECLARED_FUNCTION:  # a call not surfaced
            self.out.count_outcome(rules.UNDECLARED, at)

    # -- bodies --------------------------------------------------------------------------

    def _body_marker(self, body: Body, marker: int) -> None:
        if marker == hm.MESSAGE or marker == hm.CONSTRAIN:
            self.recover(rules.STRAY_MARKER)
            return
        if marker == hm.START or marker == hm.CHANNEL:
            self.recover(rules.MISSING_END)
        self._end_body(body, marker)
        if marker == hm.START:
            self.at = HeaderState(True)
        elif marker == hm.CHANNEL:
            self.at = HeaderState(False, hm.CHANNEL)
        else:
            self._stop(marker)

    def _stop(self, marker: int) -> None:
        """After a message ended by ``marker`` (end, call, return or end of text)."""
        if isinstance(self.at, Done):  # a forged header already ended the turn
            return
        if marker == hm.END:
            self.at = HeaderState(False, free=True)
            return
        self.stop_reason = _STOP_REASONS[marker]
        if marker == hm.CALL:
            self.after_call = True
            self.at = HeaderState(False, free=True)
        else:
            self._to_done()
