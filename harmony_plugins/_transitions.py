"""The state machine's moves, as data: for each kind of state and each marker, what happens.

h11 keeps its transitions as one dict (``EVENT_TRIGGERED_TRANSITIONS``) and does one lookup;
so does our generation guard (``_guard._AFTER``), and so does the parse here. The machine
(:mod:`harmony_plugins._machine`) looks up ``MOVES[state.kind][marker]`` and applies the
:class:`Move` it finds in one method, the only place that changes its state; a pair with no
row changes nothing. What needs code (is this free text between messages? a final answer
whose header never reached ``<|message|>``? a forged turn? where does a complete header route
its body?) is done by the closer the move names, a method of the machine that returns its
decision and sets no state.

The three kinds of state:

``HEADER``
    Reading a message header (the output starts here, in the header the prompt's
    ``<|start|>assistant`` opened). Its text is buffered until a marker closes it.
``BODY``
    Reading a message body, along the route its header chose: reasoning, content, a call's
    arguments, or a drop list.
``DONE``
    The turn is over (``<|return|>``, end of text, a forged turn): text is dropped, and
    counted when the stream ends.

``END_OF_STREAM`` is not a token: it is the end of the output, which settles what is open as
a marker would.
"""

from __future__ import annotations

from typing import NamedTuple

from . import harmony as hm
from . import rules

HEADER, BODY, DONE = "header", "body", "done"
"""The kinds of state: what a state object's ``kind`` says."""

END_OF_STREAM = -1
"""The end of the output, handled as one more marker (no token has it)."""

# What closes when a move is applied (the closer runs before the state changes).
RESTART = "restart"  # <|start|> in a header: free text, a final answer, or a header dropped
SECTION = "section"  # <|channel|>/<|constrain|> in a header: a new section (or a forged turn)
COMPLETE = "complete"  # <|message|>: the header is complete; it routes the body
HEADER_END = "header_end"  # <|end|>: a header without a message (or free text)
HEADER_STOP = "header_stop"  # a stop: the same, or, before any marker, an output of no markup
HEADER_CUT = "header_cut"  # the end of the output: an unfinished header (or no markup, free text)
BODY_END = "body_end"  # the body ends

# Where the machine goes next.
FIRST_HEADER = "first_header"  # the output's first header: the prompt wrote its role
NEW_HEADER = "new_header"  # a header that began with <|start|>: its first word is the role
CHANNEL_HEADER = "channel_header"  # a header that began with a bare <|channel|>
FREE_HEADER = "free_header"  # after <|end|> or <|call|>: maybe free text until a marker
ROUTE = "route"  # the body the complete header routes to (the closer decides)
DONE_STATE = "done_state"  # the turn is over
SAME = "same"  # no change

# Whether text on the two sides of the marker may end up side by side in one field, so that
# text mode must keep the two from spelling a control token (contract section 6).
IF_CONTENT = "if_content"  # only where the body ending is content
IF_FREE_AND_EMPTY = "if_free_and_empty"  # only in an empty header right after <|end|>


class Move(NamedTuple):
    """One row of the table: what a marker does in a kind of state."""

    rule: str | None
    """A recovery rule counted on the way (in the state the marker found)."""
    close: str | None
    """What closes before the state changes (one of the closers above), or nothing."""
    then: str
    """The next state (one of the states above)."""
    stop: str | None
    """Why the turn stopped here (``Machine.stop_reason``); ``"call"`` also means only calls
    may follow."""
    joins: bool | str
    """Whether the text on the two sides may join: True, False, or a condition above."""


_HEADER_ENDS = {marker: Move(None, close, then, stop, False) for marker, close, then, stop in (
    (hm.CALL, HEADER_STOP, FREE_HEADER, "call"),
    (hm.RETURN, HEADER_STOP, DONE_STATE, "return"),
    (hm.END_OF_TEXT, HEADER_STOP, DONE_STATE, "end_of_text"),
    (END_OF_STREAM, HEADER_CUT, DONE_STATE, None),
)}
_BODY_ENDS = {marker: Move(None, BODY_END, then, stop, False) for marker, then, stop in (
    (hm.CALL, FREE_HEADER, "call"),
    (hm.RETURN, DONE_STATE, "return"),
    (hm.END_OF_TEXT, DONE_STATE, "end_of_text"),
    (END_OF_STREAM, DONE_STATE, None),
)}

MOVES: dict[str, dict[int, Move]] = {
    HEADER: {
        hm.START: Move(None, RESTART, NEW_HEADER, None, False),
        hm.CHANNEL: Move(None, SECTION, SAME, None, False),
        hm.CONSTRAIN: Move(None, SECTION, SAME, None, False),
        hm.MESSAGE: Move(None, COMPLETE, ROUTE, None, IF_FREE_AND_EMPTY),
        hm.END: Move(None, HEADER_END, FREE_HEADER, None, True),
        **_HEADER_ENDS,
        hm.IGNORED: Move(rules.IGNORED_TOKEN, None, SAME, None, True),
    },
    BODY: {
        hm.START: Move(rules.MISSING_END, BODY_END, NEW_HEADER, None, False),
        hm.CHANNEL: Move(rules.MISSING_END, BODY_END, CHANNEL_HEADER, None, False),
        hm.CONSTRAIN: Move(rules.STRAY_MARKER, None, SAME, None, True),
        hm.MESSAGE: Move(rules.STRAY_MARKER, None, SAME, None, True),
        hm.END: Move(None, BODY_END, FREE_HEADER, None, IF_CONTENT),
        **_BODY_ENDS,
        hm.IGNORED: Move(rules.IGNORED_TOKEN, None, SAME, None, True),
    },
    DONE: {
        hm.IGNORED: Move(rules.IGNORED_TOKEN, None, SAME, None, False),
        # Every other marker, and the end of the output: no row, nothing changes.
    },
}
"""The machine's moves: ``MOVES[kind][marker]``. A forged turn found by a closer ends the turn
whatever the row's next state says (contract section 2)."""

ENDED_BY = {hm.START: "new_header", hm.CHANNEL: "new_header", hm.END: "end",
            hm.RETURN: "return", hm.CALL: "call", hm.END_OF_TEXT: "end_of_text",
            END_OF_STREAM: "end_of_stream"}
"""``MessageEnd.by``: what a message ended by, for the marker that ended its body."""

OPENING = Move(None, None, FIRST_HEADER, None, False)
"""Where the machine starts: in the header the prompt's ``<|start|>assistant`` began."""

MARKER_NAMES = {hm.START: "start", hm.END: "end", hm.MESSAGE: "message",
                hm.CHANNEL: "channel", hm.CONSTRAIN: "constrain", hm.RETURN: "return",
                hm.CALL: "call", hm.END_OF_TEXT: "end of text", hm.IGNORED: "ignored",
                END_OF_STREAM: "end of output"}
"""How the table's markers are named where it is shown (``docs/architecture.md``)."""
