"""An Anthropic Messages API event stream with the core's blocks for calls (contract section 4).

vLLM and SGLang both stream ``/v1/messages`` as server-sent events, ``event: NAME`` then
``data: JSON``, and both carry a call as a ``tool_use`` block whose arguments come as the
``partial_json`` of its deltas, as written, so that a call whose arguments are no JSON object
reaches the client as a block it cannot read. :func:`shown` passes such a stream on unchanged
but for two things: a ``tool_use`` block's events are held from its ``content_block_start`` to
its ``content_block_stop``, then sent as they were or, where the core says so
(:func:`harmony_plugins.messages_block`), as a ``text`` block of the same index holding the
call as written; and the ``message_delta`` says ``end_turn`` for ``tool_use`` when no
``tool_use`` block was sent (:func:`harmony_plugins.messages_stop_reason`). Each call is then
the block the non-streamed response has for it (the engine orders the blocks of a stream as
they come, and of a whole response its text first). Each event is read once, and a held
block's arguments are joined once, at its end.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from harmony_plugins import messages_block, messages_stop_reason

__all__ = ["shown", "sse"]


def sse(name: str, data: dict[str, Any]) -> str:
    """One server-sent event of the Messages API stream."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


def _read(event: str) -> tuple[str, str]:
    """An event's name and its data (``event: NAME\\ndata: JSON\\n\\n``)."""
    head, _, rest = event.partition("\n")
    data = rest.removeprefix("data:").strip() if rest.startswith("data:") else ""
    return head.removeprefix("event:").strip(), data


class _Held:
    """A ``tool_use`` block's events, held until it ends."""

    def __init__(self, start: dict[str, Any], event: str) -> None:
        block = start.get("content_block") or {}
        self.index = start.get("index")
        self.id = str(block.get("id") or "")
        self.name = str(block.get("name") or "")
        self.events = [event]
        self.arguments: list[str] = []

    def add(self, event: str, data: dict[str, Any]) -> None:
        self.events.append(event)
        delta = data.get("delta") or {}
        if delta.get("type") == "input_json_delta":
            self.arguments.append(str(delta.get("partial_json") or ""))

    def ended(self) -> tuple[list[str], bool]:
        """The events to send in the block's place, and whether they are a ``tool_use``."""
        block = messages_block(self.id, self.name, "".join(self.arguments))
        if block["type"] == "tool_use":
            return self.events, True
        index = self.index
        return [sse("content_block_start", {"type": "content_block_start", "index": index,
                                            "content_block": {"type": "text", "text": ""}}),
                sse("content_block_delta", {"type": "content_block_delta", "index": index,
                                            "delta": {"type": "text_delta",
                                                      "text": block["text"]}}),
                sse("content_block_stop", {"type": "content_block_stop", "index": index})], False


class _Stream:
    """One response's events, passed on as they come but for ``tool_use`` blocks (held) and
    the ``message_delta`` (its stop reason)."""

    def __init__(self) -> None:
        self.held: _Held | None = None
        self.tool_uses = 0  # tool_use blocks sent

    def take(self, event: str) -> list[str]:
        """The events to send for one of the engine's."""
        name, data = _read(event)
        out: list[str] = []
        if self.held is not None:
            if name in ("content_block_delta", "content_block_stop"):
                return self._block_event(self.held, name, event, data)
            out, self.held = self.held.events, None  # anything else in a block: as it came
        if name == "content_block_start":
            start = json.loads(data)
            if (start.get("content_block") or {}).get("type") == "tool_use":
                self.held = _Held(start, event)
                return out
        elif name == "message_delta":
            event = self._stop_reason(event, data)
        return [*out, event]

    def _block_event(self, held: _Held, name: str, event: str, data: str) -> list[str]:
        held.add(event, json.loads(data))
        if name != "content_block_stop":
            return []
        sent, is_tool_use = held.ended()
        self.tool_uses += is_tool_use
        self.held = None
        return sent

    def _stop_reason(self, event: str, data: str) -> str:
        message = json.loads(data)
        delta = message.get("delta") or {}
        reason = messages_stop_reason(delta.get("stop_reason"), self.tool_uses)
        if reason == delta.get("stop_reason"):
            return event
        delta["stop_reason"] = reason
        return sse("message_delta", message)

    def end(self) -> list[str]:
        """The stream ended inside a block: its events as they came."""
        out, self.held = (self.held.events if self.held is not None else []), None
        return out


async def shown(events: AsyncIterator[str]) -> AsyncIterator[str]:
    """The engine's Messages events with each ``tool_use`` block whose arguments are no object
    sent as a ``text`` block, and ``end_turn`` for ``tool_use`` when no ``tool_use`` block was
    sent."""
    stream = _Stream()
    async for event in events:
        for out in stream.take(event):
            yield out
    for out in stream.end():
        yield out
