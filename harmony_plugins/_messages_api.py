"""A call as the Anthropic Messages API (``/v1/messages``) shows it (contract section 4).

That API carries a call as a ``tool_use`` block whose ``input`` is a JSON object, parsed; the
chat API carries the arguments as a string, as written. Contract section 4 passes every call
on with its arguments as written, an object or not (``invalid_json``, ``not_object``), so an
engine that converts its chat response to a Messages response has nothing to put in ``input``
for such a call, and answers with an error. Here is what such a call becomes instead: a
``text`` block in its place, holding the function's name and the arguments as written, so that
the client sees what the model wrote and the request does not fail. The call's outcome is
counted where the parse counts it, as on every API.
"""

from __future__ import annotations

import json
from typing import Any

TOOL_USE = "tool_use"
TEXT = "text"
END_TURN = "end_turn"


def tool_use_input(arguments: str) -> dict[str, Any] | None:
    """The ``input`` of the ``tool_use`` block for a call's arguments: the JSON object they
    are, or None where they are none, or one a JSON response cannot carry (a number beyond a
    double's range or NaN, a lone surrogate, nesting deeper than Python's JSON reader goes)."""
    try:
        value = json.loads(arguments)
        if not isinstance(value, dict):
            return None
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode()
    except (ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return None
    return value


def call_as_text(name: str, arguments: str) -> str:
    """The text shown in place of a call whose arguments are no object: the function's name,
    a space, and the arguments as written."""
    return f"{name} {arguments}"


def messages_block(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """One call as a Messages API content block: ``{"type": "tool_use", "id", "name",
    "input"}`` where its arguments are an object (:func:`tool_use_input`), else ``{"type":
    "text", "text"}`` holding :func:`call_as_text`."""
    value = tool_use_input(arguments)
    if value is None:
        return {"type": TEXT, "text": call_as_text(name, arguments)}
    return {"type": TOOL_USE, "id": call_id, "name": name, "input": value}


def messages_stop_reason(stop_reason: str | None, tool_uses: int) -> str | None:
    """A Messages response's ``stop_reason`` once its calls are blocks: ``tool_use`` tells a
    client to look for a ``tool_use`` block, so a response left with none (its calls shown as
    text) says ``end_turn``; every other reason (``max_tokens`` for one) stays."""
    if stop_reason == TOOL_USE and tool_uses == 0:
        return END_TURN
    return stop_reason
