"""Steps to the OpenAI chat-completions view: streamed deltas and the final message.

:class:`ChatResult` folds steps (:mod:`harmony_plugins._steps`). ``add`` returns the delta
of the step just added; ``message`` returns the non-streamed message built from every step
added so far. Both are built from the same steps by plain concatenation, so the deltas
always add up to the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ._events import Event
from ._steps import Step, step_of


class ChatResult:
    """A fold over one response's steps: OpenAI chat deltas and the final message."""

    __slots__ = ("reasoning", "content", "calls", "finish_reason", "reason", "recoveries",
                 "outcomes", "leaks", "separator")

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: list[dict[str, Any]] = []  # {"id", "name", "arguments": list[str]}
        self.finish_reason: str | None = None
        self.reason: str | None = None
        self.recoveries: dict[str, int] = {}
        self.outcomes: dict[str, int] = {}  # ToolCallEnd.outcome -> calls
        self.leaks: list[str] = []  # LeakSuspected excerpts
        self.separator = ""  # events added: a content message's separator still to show

    def add(self, step: Step | Iterable[Event]) -> dict[str, Any] | None:
        """Add a step (or the events of one); return the chat delta it makes, or None.

        The delta has ``reasoning`` and/or ``content`` strings and ``tool_calls`` items in
        OpenAI's streaming shape (the first item of a call carries id, type and name).
        """
        if not isinstance(step, Step):
            step, self.separator = step_of(list(step), self.separator)
        if step.reasoning:
            self.reasoning.append(step.reasoning)
        if step.content:
            self.content.append(step.content)
        for call in step.calls:
            if call.id is not None:
                self.calls.append({"id": call.id, "name": call.name, "arguments": []})
            self.calls[call.index]["arguments"].append(call.arguments)
        for end in step.ended:
            self.outcomes[end.outcome] = self.outcomes.get(end.outcome, 0) + 1
        for recovery in step.recoveries:
            self.recoveries[recovery.rule] = self.recoveries.get(recovery.rule, 0) + 1
        self.leaks.extend(step.leaks)
        if step.finish is not None:
            self.finish_reason = step.finish.finish_reason
            self.reason = step.finish.reason
        return chat_delta(step)

    def message(self) -> dict[str, Any]:
        """The non-streamed result: reasoning, content, tool_calls, finish_reason."""
        return {
            "reasoning": "".join(self.reasoning) if self.reasoning else None,
            "content": "".join(self.content) if self.content else None,
            "tool_calls": [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {"name": call["name"], "arguments": "".join(call["arguments"])},
                }
                for call in self.calls
            ],
            "finish_reason": self.finish_reason,
        }


def chat_delta(step: Step) -> dict[str, Any] | None:
    """The OpenAI chat delta of a step; None when it shows nothing.

    ``reasoning`` and ``content`` are the step's texts; ``tool_calls`` has one item per call
    touched, in OpenAI's streaming shape: a call's first item carries ``id``, ``type`` and
    ``function.name``, later ones only ``function.arguments``.
    """
    delta: dict[str, Any] = {}
    if step.reasoning:
        delta["reasoning"] = step.reasoning
    if step.content:
        delta["content"] = step.content
    if step.calls:
        delta["tool_calls"] = [
            {"index": call.index, "id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": call.arguments}}
            if call.id is not None else
            {"index": call.index, "function": {"arguments": call.arguments}}
            for call in step.calls
        ]
    return delta or None

