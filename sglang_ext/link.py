"""The explicit, checked link between one choice's two SGLang detectors.

SGLang runs the reasoning detector and then the tool detector on every step of a choice,
one after the other in the same task, handing the tool detector the reasoning detector's
``normal_text``. Our reasoning detector owns the choice's :class:`~harmony_plugins.Turn`;
the tool detector must take the steps it queued, never parse that text again. So the
reasoning detector publishes its :class:`Link` in the task's request context
(:attr:`sglang_ext.request_context.RequestContext.link`, set on each call, read by the next
tool-detector call of the same task) and records the text it handed over;
the tool detector checks that the text it got is that text. A missing link (harmony-ext
selected as reasoning parser, yet none arrived) or a changed text is logged as an error once
per process and counted in :data:`LOST`, never passed over in silence.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any

from harmony_plugins import Step, Turn
from harmony_plugins.adapter_support.once import Once

from . import request_context

logger = logging.getLogger("sglang_ext")

LOST: dict[str, int] = {"missing": 0, "changed": 0}
"""Tool-detector calls that found no link, or a text other than the one handed over, in this
process (with ``--enable-metrics`` also on ``/metrics``: ``harmony_ext_link_errors_total``)."""
_once = Once(logger)


class Link:
    """One choice's turn, fed by the reasoning detector and drained by the tool detector.

    ``steps``: what the tool detector has not taken yet (content and calls; reasoning is
    the reasoning detector's). ``handed``: the normal text handed over since then. A turn
    whose tools are unknown (nothing gave the reasoning detector the request) learns them
    from the tool detector's first call (:meth:`declare`). A link decides nothing when it
    goes: a turn nobody finished (a stream SGLang aborted) is not reported.
    """

    __slots__ = ("turn", "steps", "handed", "owner")

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self.steps: list[Step] = []
        self.handed = ""
        # the tool detector that took from it first, weakly
        self.owner: weakref.ref[object] | None = None

    def claim(self, detector: object) -> bool:
        """Whether ``detector`` may take from this link (the first to take owns it; held by
        a weak reference, as the detector holds the link)."""
        owner = self.owner
        if owner is None:
            self.owner = weakref.ref(detector)
            return True
        return owner() is detector

    def hand(self, step: Step) -> None:
        """Queue a step's content and calls for the tool detector, and publish the link: the
        task's next tool-detector call finds it."""
        content = step.content
        if content or step.calls or step.ended:
            self.steps.append(step)
            if content:
                self.handed += content
        if request_context.current().link is not self:
            request_context.update(link=self)

    def take(self, text: str, tools: list[Any] | None) -> list[Step]:
        """The queued steps, emptying the queue; ``text`` is what SGLang passed on, ``tools``
        the tool detector's (given to a turn that did not know them)."""
        if text != self.handed:
            lost("changed", "SGLang changed the normal text between the reasoning and the "
                 "tool detector (%r, handed %r); the tool detector keeps the parse's view",
                 text[:40], self.handed[:40])
        self.handed = ""
        if self.turn.tools_unknown:
            self.declare(tools)
        steps = self.steps
        self.steps = []
        return steps

    def declare(self, tools: list[Any] | None) -> None:
        """Give the turn its tools: the queued steps (which surfaced no call) give way to the
        turn's parse of everything so far with them."""
        self.steps = [self.turn.declare(tools or [])]

    def may_call(self) -> bool:
        """Whether the queued steps hold a call (or, tools unknown, a message that may be)."""
        if self.turn.tools_unknown:
            return self.turn.unresolved_calls > 0
        return any(step.calls for step in self.steps)


def lost(kind: str, message: str, *args: Any) -> None:
    """Count a broken link (in :data:`LOST`, and on ``/metrics`` where SGLang serves it) and
    say so once per process and kind."""
    from harmony_plugins.adapter_support import metrics

    from .names import metrics_enabled

    LOST[kind] += 1
    _once(kind, logging.ERROR, "harmony-ext: " + message, *args)
    if metrics_enabled():
        metrics.count_link_error(kind, logger)
