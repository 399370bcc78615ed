"""What an OpenAI client declares and does, as the tests and the page generators need it.

* :data:`WEATHER`: the tool the tests declare, in the chat-completions form (``tests/data.py``
  derives the other forms some tests need from it).
* :class:`Fold` (and :func:`fold_deltas`, :func:`fold_chunks` over it): streamed chat deltas
  put together as an OpenAI client puts them together, failing where the stream breaks the
  shape clients rely on.
* :func:`same_json`: two call arguments that a client reading them as JSON cannot tell apart.

Here and not in ``tests/`` because the page generators (``pages/``) share them with the tests,
and ``pages/`` imports nothing from the tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

WEATHER: dict[str, Any] = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
"""The weather tool, as a chat-completions request declares it."""


class Fold:
    """Streamed chat deltas put together as an OpenAI client puts them together, noting what
    breaks OpenAI's streaming shape (which clients rely on) in :attr:`problems`.

    The texts are concatenated (``reasoning`` or ``reasoning_content``), each call's arguments
    by its ``index``. A call's first item carries its ``id``, ``type`` and ``function.name``,
    later items neither; the indexes count from 0.
    """

    def __init__(self) -> None:
        self.reasoning: list[str] = []
        self.content: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.problems: list[str] = []

    def add(self, delta: dict[str, Any] | None) -> None:
        if not delta:
            return
        if text := delta.get("reasoning") or delta.get("reasoning_content"):
            self.reasoning.append(text)
        if text := delta.get("content"):
            self.content.append(text)
        for item in delta.get("tool_calls") or ():
            index, function = item["index"], item.get("function") or {}
            call = self.calls.get(index)
            if call is None:
                if not (item.get("id") and item.get("type") == "function"
                        and function.get("name")):
                    self.problems.append(f"call {index} starts without id/name: {item!r}")
                call = self.calls[index] = {"id": item.get("id"), "name": function.get("name"),
                                            "arguments": []}
            elif item.get("id") or function.get("name"):
                self.problems.append(f"call {index} repeats its id/name: {item!r}")
            call["arguments"].append(function.get("arguments") or "")

    def message(self) -> dict[str, Any]:
        """The message the deltas make: reasoning and content (None when empty) and the
        calls in index order."""
        order = sorted(self.calls)
        if order != list(range(len(order))):
            self.problems.append(f"call indexes {order}")
        return {
            "reasoning": "".join(self.reasoning) if self.reasoning else None,
            "content": "".join(self.content) if self.content else None,
            "tool_calls": [
                {"id": self.calls[i]["id"], "type": "function",
                 "function": {"name": self.calls[i]["name"],
                              "arguments": "".join(self.calls[i]["arguments"])}}
                for i in order
            ],
        }

    def checked(self) -> dict[str, Any]:
        """:meth:`message`, failing the test where the stream was malformed."""
        message = self.message()
        if self.problems:
            raise AssertionError("malformed stream: " + "; ".join(self.problems))
        return message


def fold_deltas(deltas: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """Chat deltas (dicts; None skipped) folded by :class:`Fold`; a malformed stream fails."""
    fold = Fold()
    for delta in deltas:
        fold.add(delta)
    return fold.checked()


def fold_chunks(chunks: Iterable[Any]) -> dict[str, Any]:
    """``chat.completion.chunk``s (parsed SSE dicts, or the openai SDK's objects) folded by
    :class:`Fold`, with the last ``finish_reason`` a choice gave; a malformed stream fails."""
    fold, finish = Fold(), None
    for chunk in chunks:
        if not isinstance(chunk, dict):
            chunk = chunk.model_dump()
        for choice in chunk.get("choices") or ():
            fold.add(choice.get("delta"))
            finish = choice.get("finish_reason") or finish
    return {**fold.checked(), "finish_reason": finish}


def same_json(a: str, b: str) -> bool:
    """Whether two argument strings are the same JSON value (one re-serialised); False where
    either is not JSON."""
    try:
        return bool(json.loads(a) == json.loads(b))
    except ValueError:
        return False
