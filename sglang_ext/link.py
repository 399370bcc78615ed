"""The explicit, checked link between one choice's two SGLang detectors.

SGLang runs the reasoning detector and then the tool detector on every step of a choice,
one after the other in the same task, handing the tool detector the reasoning detector's
``normal_text``. Our reasoning detector owns the choice's :class:`~harmony_plugins.Turn`;
the tool detector must take the steps it queued, never parse that text again. So the
reasoning detector publishes its :class:`Link` in a context variable (set on each call,
read by the next tool-detector call of the same task) and records the text it handed over;
the tool detector checks that the text it got is that text. A missing link (harmony-ext
selected as reasoning parser, yet none arrived) or a changed text is logged as an error once
per process and counted in :data:`LOST`, never passed over in silence.
"""

from __future__ import annotations

import contextvars
import logging
import weakref
from typing import Any

from harmony_plugins import Builders, CallDelta, Step, Turn
from harmony_plugins.adapter_support.once import Once

logger = logging.getLogger("sglang_ext")

CURRENT: contextvars.ContextVar[Link | None] = contextvars.ContextVar(
    "harmony_ext_link", default=None)
"""The link the reasoning detector of this task published last."""

_publish = CURRENT.set
_current = CURRENT.get
_new = object.__new__

LOST: dict[str, int] = {"missing": 0, "changed": 0}
"""Tool-detector calls that found no link, or a text other than the one handed over."""
_once = Once(logger)


class Link:
    """One choice's turn, fed by the reasoning detector and drained by the tool detector.

    ``steps``: what the tool detector has not taken yet (content and calls; reasoning is
    the reasoning detector's). ``handed``: the normal text handed over since then. ``piece``:
    a decode step that was one piece of one call's arguments, queued as ``(index, text)``
    with no step made (the usual step of a call). A turn whose tools are unknown (nothing
    gave the reasoning detector the request) learns them from the tool detector's first call
    (:meth:`declare`). A link decides nothing when it goes: a turn nobody finished (a stream
    SGLang aborted) is not reported.

    The reasoning detector's usual decode step goes through :meth:`builders` (the turn's
    ``decode_text``): a piece of reasoning or content becomes the reasoning detector's result
    straight away, and the tool detector's usual call (:meth:`quick`) finds only the text it
    was handed, or one argument piece, and builds the tool detector's result from it here,
    with the builders the link was made with: one call from the tool detector, not a queue
    handed back to unpack.
    """

    __slots__ = ("turn", "steps", "handed", "piece", "owner", "waiting", "tool_results",
                 "nothing", "reasoning_result", "new")
    turn: Turn  # given by start(), right after the link is made (its turn is built on it)

    def __init__(self, tool_results: Any, reasoning_result: Any, plain: bool = False) -> None:
        """``tool_results``: the tool detector's result builders (``sglang_ext.results.BUILD``);
        ``reasoning_result``: the reasoning detector's result class,
        ``reasoning_result(normal_text, reasoning_text)``; ``plain``: it only stores its two
        arguments (``sglang_ext.results.REASONING_PLAIN``), so the usual steps build it as an
        object and two attribute stores, without a Python ``__init__`` call per step (written
        out in each piece builder: a shared helper would be the call it saves)."""
        self.tool_results = tool_results
        self.reasoning_result = reasoning_result
        self.new = _new if plain else None
        self.nothing: Any = None  # see empty()
        self.steps: list[Step] = []
        self.handed = ""
        self.piece: tuple[int, str] | None = None
        # the tool detector that took from it first, weakly
        self.owner: weakref.ref[object] | None = None
        self.waiting = False  # the turn's tools are still to come

    def start(self, turn: Turn) -> Link:
        """Give the link its turn (built with :meth:`builders`)."""
        self.turn = turn
        self.waiting = turn.tools_unknown
        return self

    def claim(self, detector: object) -> bool:
        """Whether ``detector`` may take from this link (the first to take owns it; held by
        a weak reference, as the detector holds the link)."""
        owner = self.owner
        if owner is None:
            self.owner = weakref.ref(detector)
            return True
        return owner() is detector

    def publish(self) -> None:
        """Make this the link the task's next tool-detector call finds."""
        if _current() is not self:
            _publish(self)

    def hand(self, step: Step) -> None:
        """Queue a step's content and calls for the tool detector, and publish the link."""
        content = step.content
        if content or step.calls or step.ended:
            self._unpiece()
            self.steps.append(step)
            if content:
                self.handed = content if not self.handed else self.handed + content
        if _current() is not self:
            _publish(self)

    def _unpiece(self) -> None:
        """A queued argument piece as a step, ahead of what is queued next."""
        piece = self.piece
        if piece is not None:
            self.piece = None
            self.steps.append(Step(calls=(CallDelta(piece[0], None, None, piece[1]),)))

    def builders(self) -> Builders:
        """The turn's builders (``Turn.decode_text``): each makes the reasoning detector's
        result, queues what the tool detector needs, and publishes the link."""
        return Builders(self._reasoning_piece, self._content_piece, self._arguments_piece,
                        self._whole)

    def _reasoning_piece(self, text: str) -> Any:
        if _current() is not self:
            _publish(self)
        new = self.new
        if new is None:
            return self.reasoning_result("", text)
        made = new(self.reasoning_result)
        made.normal_text = ""
        made.reasoning_text = text
        return made

    def _content_piece(self, text: str) -> Any:
        if self.steps or self.piece is not None:  # keep the order: queue it as a step
            self.hand(Step(content=text))
        else:
            self.handed = text if not self.handed else self.handed + text
            if _current() is not self:
                _publish(self)
        new = self.new
        if new is None:
            return self.reasoning_result(text, "")
        made = new(self.reasoning_result)
        made.normal_text = text
        made.reasoning_text = ""
        return made

    def _arguments_piece(self, index: int, text: str) -> Any:
        if self.steps or self.piece is not None:
            self.hand(Step(calls=(CallDelta(index, None, None, text),)))
        else:
            self.piece = (index, text)
            if _current() is not self:
                _publish(self)
        new = self.new
        if new is None:
            return self.reasoning_result("", "")
        made = new(self.reasoning_result)
        made.normal_text = made.reasoning_text = ""
        return made

    def _whole(self, step: Step) -> Any:
        self.hand(step)
        return self.reasoning_result(step.content, step.reasoning)

    def quick(self, text: str) -> Any:
        """The tool detector's usual call, when nothing but the text handed over and at most
        one argument piece is queued: its result, built here from that text (the parse's view,
        ``text`` being what SGLang passed on) and piece, emptying the queue. None when the
        call is not the usual one (steps queued, or the tools still to come): then
        :meth:`take`."""
        if self.steps or self.waiting:
            return None
        handed = self.handed
        if text != handed:
            self._changed(text)
        piece = self.piece
        if piece is not None:
            self.piece = None
            self.handed = ""
            return self.tool_results.argument_piece(handed, piece[0], piece[1])
        if handed:
            self.handed = ""
            return self.tool_results.result(handed, [])
        return self.empty()

    def empty(self) -> Any:
        """The tool detector's result for a step with nothing for it (a step of reasoning):
        one instance reused while it is still empty (SGLang's caller only reads it; one it
        changed is replaced), not a model built and dropped per step."""
        nothing = self.nothing
        if nothing is None or nothing.normal_text or nothing.calls:
            nothing = self.nothing = self.tool_results.result("", [])
        return nothing

    def _changed(self, text: str) -> None:
        lost("changed", "SGLang changed the normal text between the reasoning and the "
             "tool detector (%r, handed %r); the tool detector keeps the parse's view",
             text[:40], self.handed[:40])

    def take(self, text: str, tools: list[Any] | None) -> list[Step]:
        """The queued steps, emptying the queue; ``text`` is what SGLang passed on, ``tools``
        the tool detector's (given to a turn that did not know them)."""
        if text != self.handed:
            self._changed(text)
        self.handed = ""
        self._unpiece()
        if self.turn.tools_unknown:
            self.declare(tools)
        steps = self.steps
        if steps:
            self.steps = []
        return steps

    def declare(self, tools: list[Any] | None) -> None:
        """Give the turn its tools: the queued steps (which surfaced no call) give way to the
        turn's parse of everything so far with them."""
        step = self.turn.declare(tools or [])
        self.piece = None
        self.steps = [step]
        self.waiting = False

    def may_call(self) -> bool:
        """Whether the queued steps hold a call (or, tools unknown, a message that may be)."""
        if self.turn.tools_unknown:
            return self.turn.unresolved_calls > 0
        return self.piece is not None or any(step.calls for step in self.steps)


def lost(kind: str, message: str, *args: Any) -> None:
    """Count a broken link and say so once per process and kind."""
    LOST[kind] += 1
    _once(kind, logging.ERROR, "harmony-ext: " + message, *args)
