"""vLLM's chat delta objects (``DeltaMessage`` and its tool-call items), one per step.

A step of the core (:class:`harmony_plugins.Step`) becomes the ``DeltaMessage`` vLLM streams:
its reasoning, its content, and one ``DeltaToolCall`` per call it touched (the first piece of
a call carries its id, type and name). Each model is validated by pydantic
(:func:`harmony_plugins.adapter_support.models.validator`), less one wrap validator read and
named harmless here: ``OpenAIBaseModel.__log_extra_fields__`` passes the data to pydantic,
then logs request keys that no field declares; the deltas are built from declared fields
only, and that Python call costs about as much as the rest of a delta's validation. Any
other validator vLLM adds runs.
"""

from __future__ import annotations

from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
)

from harmony_plugins import CallDelta, Step
from harmony_plugins.adapter_support import models

HARMLESS = ("OpenAIBaseModel.__log_extra_fields__",)
"""vLLM's validators that change and refuse nothing (see the module docstring)."""

message = models.validator(DeltaMessage, HARMLESS, "vllm")
tool_call = models.validator(DeltaToolCall, HARMLESS, "vllm")
function = models.validator(DeltaFunctionCall, HARMLESS, "vllm")


def delta_message(step: Step, include_reasoning: bool) -> DeltaMessage | None:
    """The ``DeltaMessage`` of a step (None when it shows nothing); ``include_reasoning``
    is the request's."""
    fields: dict[str, Any] = {}
    if step.reasoning and include_reasoning:
        fields["reasoning"] = step.reasoning
    if step.content:
        fields["content"] = step.content
    if step.calls:
        fields["tool_calls"] = [_tool_call(call) for call in step.calls]
    return message(fields) if fields else None


def _tool_call(call: CallDelta) -> DeltaToolCall:
    if call.id is None:  # a piece of the arguments of a call already begun
        return tool_call({"index": call.index, "function": function({"arguments": call.arguments})})
    return tool_call({"index": call.index, "id": call.id, "type": "function",
                      "function": function({"name": call.name, "arguments": call.arguments})})
