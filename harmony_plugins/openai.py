"""Events to the OpenAI chat-completions view: streamed deltas and the final message.

:class:`ChatResult` consumes events. ``add`` returns the delta for the events just added;
``message`` returns the non-streamed message built from every event added so far. Both are
built from the same events by plain concatenation, so the deltas always add up to the
message.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .events import (
    ContentText,
    EndOfTurn,
    Event,
    LeakSuspected,
    ReasoningText,
    Recovery,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)


class ChatResult:
    """Accumulates one response's events into OpenAI chat deltas and a final message."""

    __slots__ = ("reasoning", "content", "calls", "finish_reason", "reason", "recoveries",
                 "outcomes", "leaks")

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: list[dict[str, Any]] = []  # {"id", "name", "arguments": list[str]}
        self.finish_reason: str | None = None
        self.reason: str | None = None
        self.recoveries: dict[str, int] = {}
        self.outcomes: dict[str, int] = {}  # ToolCallEnd.outcome -> calls
        self.leaks: list[str] = []  # LeakSuspected excerpts

    def add(self, events: Iterable[Event]) -> dict[str, Any] | None:
        """Add events; return the chat delta they make (None when they make none).

        The delta has ``reasoning`` and/or ``content`` strings and ``tool_calls`` items in
        OpenAI's streaming shape (the first item of a call carries id, type and name).
        """
        events = list(events)
        delta = chat_delta(events)
        if delta is not None:
            if "reasoning" in delta:
                self.reasoning.append(delta["reasoning"])
            if "content" in delta:
                self.content.append(delta["content"])
            for item in delta.get("tool_calls", ()):
                if "id" in item:
                    self.calls.append({"id": item["id"], "name": item["function"]["name"],
                                       "arguments": []})
                self.calls[item["index"]]["arguments"].append(item["function"]["arguments"])
        for event in events:
            cls = event.__class__
            if cls is EndOfTurn:
                self.finish_reason = event.finish_reason  # type: ignore[union-attr]
                self.reason = event.reason  # type: ignore[union-attr]
            elif cls is Recovery:
                rule = event.rule  # type: ignore[union-attr]
                self.recoveries[rule] = self.recoveries.get(rule, 0) + 1
            elif cls is ToolCallEnd:
                outcome = event.outcome  # type: ignore[union-attr]
                self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
            elif cls is LeakSuspected:
                self.leaks.append(event.excerpt)  # type: ignore[union-attr]
        return delta

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


def chat_delta(events: Iterable[Event]) -> dict[str, Any] | None:
    """The OpenAI chat delta that some events make (None when they make none).

    ``reasoning`` and ``content`` are the events' texts joined; ``tool_calls`` has one item
    per call touched, in OpenAI's streaming shape: a call's first item carries ``id``,
    ``type`` and ``function.name``, later ones only ``function.arguments``. Engine adapters
    build their own delta types from this.
    """
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    pieces: dict[int, list[str]] = {}  # argument pieces per call, joined once at the end
    for event in events:
        cls = event.__class__
        if cls is ReasoningText:
            reasoning.append(event.text)  # type: ignore[union-attr]
        elif cls is ContentText:
            content.append(event.text)  # type: ignore[union-attr]
        elif cls is ToolCallArguments:
            index = event.index  # type: ignore[union-attr]
            if index not in calls:
                calls[index] = {"index": index, "function": {"arguments": ""}}
                pieces[index] = []
            pieces[index].append(event.text)  # type: ignore[union-attr]
        elif cls is ToolCallBegin:
            calls[event.index] = {  # type: ignore[union-attr]
                "index": event.index,  # type: ignore[union-attr]
                "id": event.id,  # type: ignore[union-attr]
                "type": "function",
                "function": {"name": event.name, "arguments": ""},  # type: ignore[union-attr]
            }
            pieces[event.index] = []  # type: ignore[union-attr]
    delta: dict[str, Any] = {}
    if reasoning:
        delta["reasoning"] = "".join(reasoning)
    if content:
        delta["content"] = "".join(content)
    if calls:
        for index, parts in pieces.items():
            if parts:
                calls[index]["function"]["arguments"] = "".join(parts)
        delta["tool_calls"] = list(calls.values())
    return delta or None


def merge_deltas(deltas: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Concatenate streamed deltas the way an OpenAI client does (for tests and tools)."""
    reasoning: list[str] = []
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for delta in deltas:
        if not delta:
            continue
        if "reasoning" in delta:
            reasoning.append(delta["reasoning"])
        if delta.get("content"):
            content.append(delta["content"])
        for item in delta.get("tool_calls") or ():
            call = calls.setdefault(item["index"], {"id": None, "name": None, "arguments": []})
            if item.get("id"):
                call["id"] = item["id"]
            function = item.get("function") or {}
            if function.get("name"):
                call["name"] = function["name"]
            call["arguments"].append(function.get("arguments") or "")
    return {
        "reasoning": "".join(reasoning) if reasoning else None,
        "content": "".join(content) if content else None,
        "tool_calls": [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": "".join(c["arguments"])}}
            for _, c in sorted(calls.items())
        ],
    }
