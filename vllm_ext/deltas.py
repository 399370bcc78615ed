"""vLLM's chat delta objects (``DeltaMessage`` and its tool-call items), one per step.

vLLM's ``DeltaMessage`` and ``DeltaToolCall`` derive from ``OpenAIBaseModel``, whose
wrap-mode model validator (a Python function that logs unknown *request* fields) runs on
every construction: about 1.7 us per ``DeltaMessage``, more than our whole parse of a token,
and one is built per decode step per request. So they are built unvalidated, one template per
shape (:mod:`harmony_plugins.adapter_support.trusted`), after a check at import that each
makes exactly what the validated constructor makes; where one does not (another pydantic or
vLLM), the validated constructors are used and a debug line says so. A decode step is one
shape (reasoning, content, or one piece of one call's arguments), built with no dict of
arguments and no merge, straight from the piece (:func:`builders`, for ``Turn.decode_ids``):
no core ``Step`` is made for it.
"""

from __future__ import annotations

import logging
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
)

from harmony_plugins import Builders, CallDelta, Step
from harmony_plugins.adapter_support import trusted

logger = logging.getLogger("vllm.harmony_ext")

_FUNCTION = DeltaFunctionCall(name="f", arguments="{}")
_ITEMS = [DeltaToolCall(index=0, id="call_1", type="function", function=_FUNCTION)]
SHAPES: dict[str, trusted.Shape] = {
    # name: (model, the fields given, a sample of their values)
    "reasoning": (DeltaMessage, ("reasoning",), ("r",)),
    "content": (DeltaMessage, ("content",), ("c",)),
    "reasoning_content": (DeltaMessage, ("reasoning", "content"), ("r", "c")),
    "calls": (DeltaMessage, ("tool_calls",), (_ITEMS,)),
    "content_calls": (DeltaMessage, ("content", "tool_calls"), ("c", _ITEMS)),
    "reasoning_calls": (DeltaMessage, ("reasoning", "tool_calls"), ("r", _ITEMS)),
    "all": (DeltaMessage, ("reasoning", "content", "tool_calls"), ("r", "c", _ITEMS)),
    "piece": (DeltaToolCall, ("index", "function"), (3, _FUNCTION)),
    "arguments": (DeltaFunctionCall, ("arguments",), ("x",)),
    "begin": (DeltaToolCall, ("index", "id", "type", "function"), (2, "call_1", "function",
                                                                   _FUNCTION)),
    "named": (DeltaFunctionCall, ("name", "arguments"), ("f", "")),
    # the usual step of a call: a piece of its arguments, the three models built in one call
    "argument_piece": (DeltaMessage, (("tool_calls", [(DeltaToolCall, (
        "index", ("function", (DeltaFunctionCall, ("arguments",)))))]),), (3, "x")),
}
"""Every shape of delta built here."""

BUILD = trusted.builders(SHAPES)
"""One builder per shape (``BUILD.reasoning(text)``, ...)."""
TRUSTED = BUILD.trusted
"""Whether deltas are built without validation (False: this pydantic/vLLM differs)."""
if not TRUSTED:
    logger.debug("harmony-ext: building vLLM deltas with validation (layout check failed)")


def delta_message(step: Step, include_reasoning: bool) -> DeltaMessage | None:
    """The ``DeltaMessage`` of a step (None when it shows nothing); ``include_reasoning``
    is the request's."""
    reasoning, content, calls = step[0], step[1], step[2]
    if not include_reasoning:
        reasoning = ""
    build = BUILD
    if not calls:  # every decode step but a call's
        if reasoning:
            return build.reasoning_content(reasoning, content) if content else (
                build.reasoning(reasoning))
        return build.content(content) if content else None
    if len(calls) == 1 and calls[0].id is None and not reasoning and not content:
        return build.argument_piece(calls[0].index, calls[0].arguments)  # a call's usual step
    items = [_tool_call(call) for call in calls]
    if reasoning:
        return build.all(reasoning, content, items) if content else (
            build.reasoning_calls(reasoning, items))
    return build.content_calls(content, items) if content else build.calls(items)


def _tool_call(call: CallDelta) -> Any:
    build = BUILD
    if call.id is None:  # a piece of the arguments of a call already begun
        return build.piece(call.index, build.arguments(call.arguments))
    return build.begin(call.index, call.id, "function", build.named(call.name, call.arguments))


def _hidden(text: str) -> None:
    return None


def _shown_step(step: Step) -> DeltaMessage | None:
    return delta_message(step, True)


def _hidden_step(step: Step) -> DeltaMessage | None:
    return delta_message(step, False)


_SHOWN = Builders(BUILD.reasoning, BUILD.content, BUILD.argument_piece, _shown_step)
_HIDDEN = Builders(_hidden, BUILD.content, BUILD.argument_piece, _hidden_step)


def builders(include_reasoning: bool) -> Builders:
    """A turn's builders of ``DeltaMessage``s (``Turn.decode_ids``), the same as
    :func:`delta_message` of each step; ``include_reasoning`` is the request's."""
    return _SHOWN if include_reasoning else _HIDDEN
