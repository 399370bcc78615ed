"""vLLM's chat delta objects (``DeltaMessage`` and its tool-call items), one per step.

vLLM's ``DeltaMessage`` and ``DeltaToolCall`` derive from ``OpenAIBaseModel``, whose
wrap-mode model validator (a Python function that logs unknown *request* fields) runs on
every construction: about 1.7 us per ``DeltaMessage``, more than our whole parse of a token,
and one is built per decode step per request. So they are built unvalidated
(:mod:`harmony_plugins.adapter_support.trusted`), after a check at import that doing so makes
exactly what the validated constructors make; where it does not (another pydantic or vLLM), the
validated constructors are used and a debug line says so.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
)

from harmony_plugins import Step
from harmony_plugins.adapter_support import trusted

logger = logging.getLogger("vllm.harmony_ext")

_BUILDERS = {cls: trusted.Builder(cls) for cls in (DeltaMessage, DeltaToolCall, DeltaFunctionCall)}


def _trusted(cls: Any, given: dict[str, Any]) -> Any:
    return _BUILDERS[cls](given)


def _pairs() -> list[tuple[Any, Any]]:
    """Samples of every shape built here, each with its validated twin."""
    function = {"arguments": '{"a": 1}'}
    item = DeltaToolCall(index=2, id="call_1", type="function",
                         function=DeltaFunctionCall(name="f", arguments=""))
    piece = DeltaToolCall(index=3, function=DeltaFunctionCall(arguments="x"))
    return [
        (_trusted(DeltaMessage, {"content": "a"}), DeltaMessage(content="a")),
        (_trusted(DeltaMessage, {"reasoning": "r"}), DeltaMessage(reasoning="r")),
        (_trusted(DeltaMessage, {"reasoning": "r", "content": "c"}),
         DeltaMessage(reasoning="r", content="c")),
        (_trusted(DeltaFunctionCall, function), DeltaFunctionCall(**function)),
        (_trusted(DeltaToolCall, {"index": 3, "function": _trusted(
            DeltaFunctionCall, {"arguments": "x"})}), piece),
        (_trusted(DeltaToolCall, dict(item)), item),
        (_trusted(DeltaMessage, {"tool_calls": [item]}), DeltaMessage(tool_calls=[item])),
    ]


TRUSTED = trusted.agrees(_pairs)
"""Whether deltas are built without validation (False: this pydantic/vLLM differs)."""
if not TRUSTED:
    logger.debug("harmony-ext: building vLLM deltas with validation (layout check failed)")


def _builder(cls: Any) -> Callable[[dict[str, Any]], Any]:
    return _BUILDERS[cls].build if TRUSTED else lambda given: cls(**given)


_message = _builder(DeltaMessage)
_tool_call = _builder(DeltaToolCall)
_function = _builder(DeltaFunctionCall)


def delta_message(step: Step, include_reasoning: bool) -> DeltaMessage | None:
    """The ``DeltaMessage`` of a step (None when it shows nothing); ``include_reasoning``
    is the request's."""
    reasoning, content, calls = step.reasoning, step.content, step.calls
    given: dict[str, Any] = {}
    if reasoning and include_reasoning:
        given["reasoning"] = reasoning
    if content:
        given["content"] = content
    if calls:
        given["tool_calls"] = [
            _tool_call({"index": call.index, "function": _function({"arguments": call.arguments})})
            if call.id is None else
            _tool_call({"index": call.index, "id": call.id, "type": "function",
                        "function": _function({"name": call.name, "arguments": call.arguments})})
            for call in calls
        ]
    return _message(given) if given else None
