"""Test data that several test files share, each written once.

* ``KNOWN_TEXT`` and ``KNOWN_IDS``: real gpt-oss output (docs/tokenizer.md) and its
  o200k_harmony token ids, written once in ``harmony_ext_testing/hf_tokenizer.py`` (its
  self-check needs them too; the instruments do not import the tests) and taken from there.
* :data:`WEATHER`: the tool the tests declare, in the chat-completions form. :func:`variant`
  derives the forms some tests need from it (another description, a stricter or looser
  schema, one more property), and :func:`responses_tool` the Responses API's flat form.
* :func:`per_char_events`: a text fed to a ``StreamParser`` one character at a time.
* :class:`Fold` (and :func:`fold_deltas`, :func:`fold_chunks` over it): streamed chat deltas
  put together as an OpenAI client puts them together.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

# The known sequence, re-exported: the tests take it from here.
from harmony_ext_testing.hf_tokenizer import KNOWN_IDS as KNOWN_IDS
from harmony_ext_testing.hf_tokenizer import KNOWN_TEXT as KNOWN_TEXT

WEATHER: dict[str, Any] = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}
"""The weather tool, as a chat-completions request declares it."""


def variant(description: str | None = "", parameters: dict[str, Any] | None = None,
            **properties: dict[str, Any]) -> dict[str, Any]:
    """A fresh copy of :data:`WEATHER` with another ``description`` (None: none; ``""``:
    unchanged), another schema ``parameters``, and ``properties`` added to the schema."""
    tool = copy.deepcopy(WEATHER)
    function = tool["function"]
    if description is None:
        del function["description"]
    elif description:
        function["description"] = description
    if parameters is not None:
        function["parameters"] = copy.deepcopy(parameters)
    if properties:
        function["parameters"]["properties"].update(properties)
    return tool


STRICT: dict[str, Any] = {**copy.deepcopy(WEATHER["function"]["parameters"]),
                          "additionalProperties": False}
""":data:`WEATHER`'s schema, closed to other properties."""
ANY_OBJECT: dict[str, Any] = {"type": "object"}
"""A schema any JSON object passes."""


def responses_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions tool in the Responses API's flat form (``name`` and the rest at the
    top, beside ``type``)."""
    return {"type": tool["type"], **copy.deepcopy(tool["function"])}


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


def per_char_events(text: str, tools: Any = None) -> list[Any]:
    """The events of ``text`` fed to a fresh ``StreamParser`` one character per delta, then
    closed: the finest cut of a text stream."""
    from harmony_plugins import StreamParser

    parser = StreamParser(tools)
    events: list[Any] = []
    for ch in text:
        events += parser.feed_text(ch)
    return events + parser.close()


CUTS = ("whole", "per_char")
"""The two extreme cuts of a text stream, for :func:`cut_events`."""


def cut_events(text: str, cut: str, tools: Any = None) -> list[Any]:
    """The events of ``text`` fed to a fresh ``StreamParser`` in one delta (``"whole"``) or
    one character per delta (``"per_char"``), then closed."""
    from harmony_plugins import StreamParser

    if cut == "per_char":
        return per_char_events(text, tools)
    parser = StreamParser(tools)
    return parser.feed_text(text) + parser.close()
