"""Contract section 8's order and drop rules for an assistant turn, on any message objects.

gpt-oss writes a turn as analysis, then a preamble on ``commentary``, then its calls (a final
answer last); a history sent back must read the same, and chain of thought is carried only
while a tool turn is in progress. The chat reader (:mod:`._chat`) and the Responses items reader
(:mod:`._items`) apply these to the core's messages; vLLM's adapter applies :func:`written_order`
to vLLM's own where vLLM renders a request.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from .. import harmony as hm
from ._model import Message

_T = TypeVar("_T")

ANALYSIS, PREAMBLE, CALL, FINAL = 0, 1, 2, 3
"""The parts of an assistant turn, in the order the model writes them."""


def part_of(channel: str | None, recipient: str | None) -> int:
    """Which part of an assistant turn a message with this channel and recipient is."""
    if recipient not in (None, "all"):
        return CALL
    if channel == hm.ANALYSIS:
        return ANALYSIS
    return FINAL if channel == hm.FINAL else PREAMBLE


def written_order(messages: Sequence[_T], part: Callable[[_T], int]) -> list[_T]:
    """One assistant turn's messages in the order the model writes them (stable within a
    part): analysis, then the preamble, then the calls (a final answer last)."""
    return sorted(messages, key=part)


def drop_analysis(messages: Sequence[Message]) -> list[Message]:
    """Without the chain of thought of every turn the assistant has answered on ``final``:
    analysis before the last final answer goes, analysis after it (a tool turn in progress)
    stays."""
    last_final = max((i for i, m in enumerate(messages)
                      if m.role == hm.ASSISTANT and m.channel == hm.FINAL), default=-1)
    return [m for i, m in enumerate(messages)
            if not (i < last_final and m.role == hm.ASSISTANT and m.channel == hm.ANALYSIS
                    and m.recipient is None)]
