"""The Harmony state machine: text and markers in, events out.

Everything that affects routing lives here. The machine does not know where its input came
from: the front ends (:mod:`harmony_plugins._frontends`) turn token ids or decoded text into
calls of :meth:`Machine.text` and :meth:`Machine.marker`, and those append events to a list
the caller owns.

Theory of operation
-------------------
The machine is in one of three states:

``HEADER``
    Reading a message header. Header text is buffered, never emitted, until ``<|message|>``
    completes it; then the header decides the *route* of the body. The output starts here,
    in the header that the prompt's ``<|start|>assistant`` opened.
``BODY``
    Reading a message body. Each piece of text goes straight out along the route:
    reasoning, content, a tool call's arguments, or a drop list (counted, never shown).
``DONE``
    The turn is over (``<|return|>``, end of text, a forged turn). Text is dropped.

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

Routing a complete header (first match wins): another role (``user``, ``functions.x``, with
or without ``<|start|>``) ends the turn; a recipient that resolves to a declared function is
a call; with no recipient (or an empty ``to=``), a content type naming a declared function
is the call; an empty ``to=`` otherwise, or an undeclared recipient, drops the body; after a
call, any other message is dropped; then by channel: ``analysis`` and unknown channels to
reasoning, ``final``, ``commentary`` or none to content. A channel name in the role slot
(``<|start|>final``) is that channel.

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
from . import harmony as mk
from . import rules
from ._arguments import ArgumentCutter
from ._checks import ArgumentChecker
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
from ._leaks import LeakScanner
from ._tools import recipient as recipient_of

HEADER = 0
BODY = 1
DONE = 2

# Body routes.
REASONING = 0
CONTENT = 1
CALL = 2
DROP = 3

_STOP_REASONS = {mk.RETURN: "return", mk.CALL: "call", mk.END_OF_TEXT: "end_of_text"}
_ENDED_BY = {mk.START: "new_header", mk.CHANNEL: "new_header", mk.END: "end",
             None: "end_of_stream", **_STOP_REASONS}
"""``MessageEnd.by`` for the marker that ended a message (None: the end of the stream)."""


def counted_channel(kind: str, written: str | None, recipient: str | None = None) -> str:
    """The valid Harmony channel a message of ``kind`` counts as (``MessageBegin.channel``):
    reasoning is ``analysis`` (unknown channels are chain of thought); a call to a function is
    ``commentary``, where function calls go, whatever channel the model wrote it on; a call to
    a built-in tool keeps a known channel it was written on (``analysis``, usually); content
    keeps ``final`` or ``commentary`` (a preamble), else counts as ``final``."""
    if kind == "reasoning":
        return mk.ANALYSIS
    if kind == "call":
        if recipient is not None and mk.is_builtin_recipient(recipient) and (
                written in mk.KNOWN_CHANNELS):
            return written
        return mk.COMMENTARY
    if written == mk.FINAL or written == mk.COMMENTARY:
        return written
    return mk.FINAL


def random_call_id() -> str:
    """A fresh tool-call id in OpenAI's style."""
    return "call_" + secrets.token_hex(12)


class Machine:
    """One model turn's parse state. Use one machine per request.

    ``tools``: the declared function names; ``schemas``: their ``parameters`` by name (the
    arguments of a call are checked against them when it ends).
    """

    __slots__ = (
        "tools", "spaced", "checker", "new_id", "pass_undeclared", "tools_unknown",
        "any_recipient", "builtins",
        "state", "after_call", "stop_reason", "calls", "seen_marker", "recoveries",
        "outcomes", "leaks", "maybe_calls",
        "role_given", "free", "sections", "section_kind", "pieces",
        "route", "drop_rule", "dropped", "cutter", "call_index", "call_name",
        "scanner",
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
    ) -> None:
        self.tools = tools
        self.any_recipient = any_recipient
        self.builtins = builtins  # the declared tools that are built-in tools (written bare)
        self.spaced = hdr.spaced_names(tools)
        self.checker = ArgumentChecker(schemas or {})
        self.new_id = id_factory or random_call_id
        self.pass_undeclared = pass_undeclared
        self.tools_unknown = tools_unknown
        self.state = HEADER
        self.after_call = False
        self.stop_reason: str | None = None
        self.calls = 0
        self.seen_marker = False
        self.recoveries: dict[str, int] = {}  # rule -> times applied, for adapters' counters
        self.outcomes: dict[str, int] = {}  # call outcome -> calls (rules.OUTCOMES)
        self.leaks = 0  # LeakSuspected events emitted
        self.maybe_calls = 0  # tools unknown: messages whose recipient may name a function
        # Header being read.
        self.role_given = False
        self.free = False  # after <|end|> / <|call|>, no header marker yet: maybe free text
        self.sections: list[tuple[int, str]] = []
        self.section_kind = hdr.ROLE
        self.pieces: list[str] = []
        # Body being read.
        self.route = DROP
        self.drop_rule = rules.AFTER_END_OF_TURN
        self.dropped: list[str] = []
        self.cutter: ArgumentCutter | None = None
        self.call_index = -1
        self.call_name = ""
        self.scanner: LeakScanner | None = None

    def count_outcome(self, outcome: str) -> None:
        """Count one call's outcome (``rules.OUTCOMES``)."""
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    # -- input ---------------------------------------------------------------------------

    def text(self, text: str, out: list[Event]) -> None:
        """Take the next piece of model text (never empty)."""
        if self.state == BODY:
            route = self.route
            if route == REASONING:
                out.append(ReasoningText(text))
            elif route == CONTENT:
                out.append(ContentText(text))
                found = self.scanner.feed(text)  # type: ignore[union-attr]
                if found:
                    self._leaked(found, out)
            elif route == CALL:
                piece = self.cutter.feed(text)  # type: ignore[union-attr]
                if piece:
                    out.append(ToolCallArguments(self.call_index, piece))
            else:
                self.dropped.append(text)
        elif self.state == HEADER:
            self.pieces.append(text)
        else:
            self.dropped.append(text)

    def marker(self, marker: int, out: list[Event]) -> None:
        """Take the next control token."""
        if marker == mk.IGNORED:
            self._recover(out, rules.IGNORED_TOKEN)
            return
        state = self.state
        if state == BODY:
            self._body_marker(marker, out)
        elif state == HEADER:
            self._header_marker(marker, out)
        self.seen_marker = True

    def joins(self, marker: int) -> bool:
        """Whether the text on both sides of ``marker`` may end up side by side in one field:
        the marker is dropped (a reserved token; a stray ``<|message|>`` in a body), or it
        is an ``<|end|>`` after content or header text, which free text may follow. The text
        front end then keeps the two sides from spelling a control token."""
        if marker == mk.IGNORED:
            return self.state != DONE
        state = self.state
        if state == BODY:
            return (marker == mk.MESSAGE or marker == mk.CONSTRAIN
                    or (marker == mk.END and self.route == CONTENT))
        return state == HEADER and marker == mk.END

    def drop_text(self, rule: str, text: str, out: list[Event]) -> None:
        """Drop model text by ``rule`` on behalf of a front end (counted, carried)."""
        self._recover(out, rule, text)

    def unknown_token(self, out: list[Event]) -> None:
        """A token id the vocabulary does not know."""
        self._recover(out, rules.UNKNOWN_TOKEN)

    def close(self, finish: str, out: list[Event]) -> None:
        """End of stream: settle what is open and emit :class:`EndOfTurn`. ``finish`` is why
        the engine stopped: ``"stop"``, ``"length"`` or ``"unknown"`` (nothing else in the parse
        depends on it)."""
        if self.state == HEADER:
            free = self._only_free()
            self._close_section()
            if free:
                self._free_text(None, out)
            else:
                self._header_closed(None, out)
        elif self.state == BODY:
            self._end_body(None, out)
        if self.state == DONE and self.dropped:
            self._recover(out, rules.AFTER_END_OF_TURN, "".join(self.dropped))
            self.dropped.clear()
        finish_reason: str | None
        if finish == "length":
            finish_reason = "length"
        elif finish == "unknown":  # the engine reports its own
            finish_reason = None
        elif self.calls:
            finish_reason = "tool_calls"
        else:
            finish_reason = "stop"
        out.append(EndOfTurn(self.stop_reason or "end_of_stream", finish_reason))
        self.state = DONE

    def _recover(self, out: list[Event], rule: str, text: str = "") -> None:
        """Apply a recovery rule: emit its event and count it."""
        out.append(Recovery(rule, text))
        self.recoveries[rule] = self.recoveries.get(rule, 0) + 1

    def _leaked(self, found: list[str], out: list[Event]) -> None:
        for excerpt in found:
            out.append(LeakSuspected(excerpt))
        self.leaks += len(found)

    def _visible(self, text: str, channel: str | None, marker: int | None,
                 out: list[Event]) -> None:
        """Content that a header rule recovered: a message of its own, in one piece."""
        out.append(MessageBegin("content", counted_channel("content", channel), channel))
        out.append(ContentText(text))
        scanner = LeakScanner()
        found = (scanner.feed(text) or []) + (scanner.close() or [])
        if found:
            self._leaked(found, out)
        out.append(MessageEnd(_ENDED_BY[marker]))

    # -- headers -------------------------------------------------------------------------

    def _new_header(self, role_given: bool, first_kind: int = hdr.ROLE,
                    free: bool = False) -> None:
        self.state = HEADER
        self.role_given = role_given
        self.free = free
        self.sections = []
        self.section_kind = first_kind
        self.pieces = []

    def _close_section(self) -> None:
        self.sections.append((self.section_kind, "".join(self.pieces)))
        self.pieces = []

    def _header_text(self) -> str:
        return "".join(text for _, text in self.sections)

    def _only_free(self) -> bool:
        """The header so far is text after <|end|> with no header marker: maybe free text."""
        return self.free and not self.sections and self.section_kind == hdr.ROLE

    def _header_marker(self, marker: int, out: list[Event]) -> None:
        free = self._only_free()
        self._close_section()
        if marker == mk.CHANNEL or marker == mk.CONSTRAIN:
            self.section_kind = marker
            self.free = False
            if len(self.sections) == 1 and self._forged(out):
                return
        elif marker == mk.MESSAGE:
            self.free = False
            self._header_complete(out)
        elif marker == mk.START:
            if free:
                self._free_text(marker, out)
            elif not self._final_answer(marker, out) and self._header_text().strip():
                self._recover(out, rules.HEADER_RESTARTED, self._header_text())
            self._new_header(True)
        else:  # end, call, return, end of text
            if free:
                self._free_text(marker, out)
            else:
                self._header_closed(marker, out)
            self._stop(marker, out)

    def _free_text(self, marker: int | None, out: list[Event]) -> None:
        """Text between messages (section 2): content, or header junk, or after a call."""
        text = self._header_text()
        if not text.strip():
            return  # whitespace between messages
        if self.after_call:
            self._recover(out, rules.AFTER_CALL, text)
        elif hdr.is_header_like(text):
            self._recover(out, rules.HEADER_JUNK, text)
        else:
            self._recover(out, rules.FREE_TEXT)
            self._visible(text, None, marker, out)

    def _forged(self, out: list[Event]) -> bool:
        """End the turn if the role section names someone other than the assistant."""
        if self.sections[0][0] != hdr.ROLE:
            return False
        h = hdr.parse_header(self.sections[:1], self.role_given)
        if not h.forged:
            return False
        self._end_turn_forged(out)
        return True

    def _end_turn_forged(self, out: list[Event]) -> None:
        self.state = DONE
        self.stop_reason = "forged_turn"
        self._recover(out, rules.FORGED_TURN, self._header_text())
        self.dropped = []

    def _header_closed(self, marker: int | None, out: list[Event]) -> None:
        """A header ended without ``<|message|>`` (by ``marker``, or by end of stream)."""
        text = self._header_text()
        if not self.seen_marker and marker != mk.END and not hdr.is_header_like(text):
            # No markup at all (a stop token may or may not be there). Text closed by
            # <|end|> is the first message's header, however long (contract section 3).
            self._recover(out, rules.NO_MARKUP)
            self._visible(text, None, marker, out)
            return
        if self._forged(out) or self._final_answer(marker, out):
            return
        if text.strip():
            rule = rules.UNFINISHED_HEADER if marker is None else rules.HEADER_WITHOUT_MESSAGE
            self._recover(out, rule, text)

    def _final_answer(self, marker: int | None, out: list[Event]) -> bool:
        """A ``final`` header that ended without ``<|message|>`` holds the answer (section 3):
        show it and return True, or return False when the header is not of that shape."""
        sections = self.sections
        body = hdr.final_without_message(sections)
        if body is None or self.after_call:
            return False
        self._recover(out, rules.FINAL_WITHOUT_MESSAGE)
        k = max(i for i, (kind, _) in enumerate(sections) if kind == mk.CHANNEL)
        rest = hdr.parse_header([*sections[:k], (mk.CHANNEL, mk.FINAL)], self.role_given,
                                self.tools, self.spaced)
        if rest.junk:  # words before the channel that no rule uses
            self._recover(out, rules.HEADER_JUNK, " ".join(rest.junk))
        self._visible(body, mk.FINAL, marker, out)
        return True

    def _header_complete(self, out: list[Event]) -> None:
        h = hdr.parse_header(self.sections, self.role_given, self.tools, self.spaced)
        if h.forged:
            self._end_turn_forged(out)
            return
        if h.role_channel:
            self._recover(out, rules.CHANNEL_IN_ROLE)
        if h.junk:
            self._recover(out, rules.HEADER_JUNK, " ".join(h.junk))
        self.state = BODY
        recipient = h.recipient
        if self.tools_unknown and hdr.may_name_function(h):
            self.maybe_calls += 1  # a call, if the tools declare it: they would have said
            self._drop(rules.TOOLS_UNKNOWN)
            return
        if recipient is None:
            named = hdr.content_type_function(h.content_type, self.tools)
            if named:  # `<|constrain|>functions.NAME`, NAME declared: the recipient
                self._recover(out, rules.CONTENT_TYPE_RECIPIENT)
                self._begin_call(named, h, out)
                return
            if named == "":  # `functions.NAME` undeclared: a call that is not surfaced
                recipient = h.content_type
            elif h.empty_recipient:
                self._drop(rules.EMPTY_RECIPIENT)
                return
        if recipient is not None:
            name, rule = hdr.resolve_recipient(recipient, self.tools, self.builtins)
            undeclared = name is None and rule == rules.UNDECLARED_FUNCTION
            if undeclared and self.pass_undeclared:
                name = recipient[len(mk.FUNCTIONS_PREFIX):]
            if name is None and self.any_recipient:  # no tools given: as written
                name = recipient.removeprefix(mk.FUNCTIONS_PREFIX)
                self._begin_call(name, h, out, True, recipient)
                return
            if name is not None:
                if rule is not None:
                    self._recover(out, rule)
                self._begin_call(name, h, out, undeclared)
                return
            self._drop(rule or rules.UNDECLARED_RECIPIENT)
        elif self.after_call:
            self._drop(rules.AFTER_CALL)
        elif h.channel == mk.ANALYSIS:
            self._begin_text(REASONING, h, out)
        elif h.channel is None or h.channel == mk.FINAL or h.channel == mk.COMMENTARY:
            self._begin_text(CONTENT, h, out)
            self.scanner = LeakScanner()
        else:  # an unknown channel is treated as chain of thought; its name is counted
            self._recover(out, rules.UNKNOWN_CHANNEL, h.channel)
            self._begin_text(REASONING, h, out)

    def _begin_text(self, route: int, h: hdr.Header, out: list[Event]) -> None:
        self.route = route
        kind = "reasoning" if route == REASONING else "content"
        out.append(MessageBegin(kind, counted_channel(kind, h.channel), h.channel, None,
                                h.written_content_type))

    def _begin_call(self, name: str, h: hdr.Header, out: list[Event],
                    undeclared: bool = False, written: str | None = None) -> None:
        self.route = CALL
        self.call_index = self.calls
        # A call passed through undeclared has that outcome, not its arguments' check.
        self.call_name = "" if undeclared else name
        self.calls += 1
        self.cutter = ArgumentCutter()
        recipient = written or recipient_of(name, self.builtins)
        out.append(MessageBegin("call", counted_channel("call", h.channel, recipient), h.channel,
                                recipient, h.written_content_type))
        out.append(ToolCallBegin(self.call_index, self.new_id(), name))

    def _drop(self, rule: str) -> None:
        self.route = DROP
        self.drop_rule = rule
        self.dropped = []
        if rule == rules.UNDECLARED_FUNCTION:  # a call not surfaced
            self.count_outcome(rules.UNDECLARED)

    # -- bodies --------------------------------------------------------------------------

    def _body_marker(self, marker: int, out: list[Event]) -> None:
        if marker == mk.MESSAGE or marker == mk.CONSTRAIN:
            self._recover(out, rules.STRAY_MARKER)
            return
        if marker == mk.START or marker == mk.CHANNEL:
            self._recover(out, rules.MISSING_END)
        self._end_body(marker, out)
        if marker == mk.START:
            self._new_header(True)
        elif marker == mk.CHANNEL:
            self._new_header(False, mk.CHANNEL)
        else:
            self._stop(marker, out)

    def _end_body(self, marker: int | None, out: list[Event]) -> None:
        """Close the body; ``marker`` ended it (None: the end of the stream)."""
        route = self.route
        if route == CALL:
            cutter = self.cutter
            assert cutter is not None
            arguments = cutter.arguments()
            if not arguments:
                self._recover(out, rules.EMPTY_ARGUMENTS, cutter.pending_lead())
                arguments = "{}"
                out.append(ToolCallArguments(self.call_index, arguments))
            junk = cutter.junk_text()
            if junk.strip():
                self._recover(out, rules.AFTER_JSON_VALUE, junk)
            name = self.call_name
            outcome = self.checker.check(name, arguments) if name else rules.UNDECLARED
            self.count_outcome(outcome)
            out.append(ToolCallEnd(self.call_index, arguments, outcome))
            out.append(MessageEnd(_ENDED_BY[marker]))
            self.cutter = None
        elif route == DROP:
            self._recover(out, self.drop_rule, "".join(self.dropped))
            self.dropped = []
        else:
            if route == CONTENT:
                found = self.scanner.close()  # type: ignore[union-attr]
                if found:
                    self._leaked(found, out)
                self.scanner = None
            out.append(MessageEnd(_ENDED_BY[marker]))
        self.state = HEADER

    def _stop(self, marker: int, out: list[Event]) -> None:
        """After a message ended by ``marker`` (end, call, return or end of text)."""
        if self.state == DONE:  # a forged header already ended the turn
            return
        if marker == mk.END:
            self._new_header(False, free=True)
            return
        self.stop_reason = _STOP_REASONS[marker]
        if marker == mk.CALL:
            self.after_call = True
            self._new_header(False, free=True)
        else:
            self.state = DONE
            self.dropped = []
