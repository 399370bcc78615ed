"""vLLM's chat delta objects (``DeltaMessage`` and its tool-call items), built per step.

vLLM's ``DeltaMessage`` and ``DeltaToolCall`` derive from ``OpenAIBaseModel``, whose
wrap-mode model validator (a Python function that logs unknown *request* fields) runs on
every construction: about 1.7 us per ``DeltaMessage``, more than our whole parse of a token,
and one is built per decode step per request. So they are built unvalidated
(:mod:`harmony_plugins.trusted`), after a check at import that doing so makes exactly what
the validated constructors make; where it does not (another pydantic or vLLM), the validated
constructors are used and a debug line says so.
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

from harmony_plugins import trusted

logger = logging.getLogger("vllm.harmony_ext")

_new = object.__new__
_set_dict, _set_fields, _set_extra, _set_private = trusted.SLOTS or (None,) * 4
_BUILDERS = {cls: trusted.Builder(cls) for cls in (DeltaMessage, DeltaToolCall, DeltaFunctionCall)}


def _trusted(cls: Any, given: dict[str, Any]) -> Any:
    return _BUILDERS[cls](given)


def _validated(cls: Any, given: dict[str, Any]) -> Any:
    return cls(**given)


# The two per-step shapes, with the builder inlined: one call per decode step per request.

def _text_trusted(field: str, text: str) -> DeltaMessage:
    obj = _new(DeltaMessage)
    _set_dict(obj, {"role": None, "content": None, "reasoning": None, "tool_calls": [],
                    field: text})
    _set_fields(obj, {field})
    _set_extra(obj, {})
    _set_private(obj, None)
    return obj


def _text_validated(field: str, text: str) -> DeltaMessage:
    return DeltaMessage(**{field: text})


def _arguments_trusted(index: int, text: str) -> DeltaMessage:
    function = _new(DeltaFunctionCall)
    _set_dict(function, {"name": None, "arguments": text})
    _set_fields(function, {"arguments"})
    _set_extra(function, None)
    _set_private(function, None)
    item = _new(DeltaToolCall)
    _set_dict(item, {"id": None, "type": None, "index": index, "function": function})
    _set_fields(item, {"index", "function"})
    _set_extra(item, {})
    _set_private(item, None)
    obj = _new(DeltaMessage)
    _set_dict(obj, {"role": None, "content": None, "reasoning": None, "tool_calls": [item]})
    _set_fields(obj, {"tool_calls"})
    _set_extra(obj, {})
    _set_private(obj, None)
    return obj


def _arguments_validated(index: int, text: str) -> DeltaMessage:
    return DeltaMessage(tool_calls=[
        DeltaToolCall(index=index, function=DeltaFunctionCall(arguments=text))])


def _pairs() -> list[tuple[Any, Any]]:
    """Samples of every shape built here, each with its validated twin."""
    function = {"arguments": '{"a": 1}'}
    item = DeltaToolCall(index=2, id="call_1", type="function",
                         function=DeltaFunctionCall(name="f", arguments=""))
    return [
        (_arguments_trusted(3, "x"), _arguments_validated(3, "x")),
        (_text_trusted("content", "a"), _text_validated("content", "a")),
        (_text_trusted("reasoning", "r"), _text_validated("reasoning", "r")),
        (_trusted(DeltaMessage, {"reasoning": "r", "content": "c"}),
         DeltaMessage(reasoning="r", content="c")),
        (_trusted(DeltaFunctionCall, function), DeltaFunctionCall(**function)),
        (_trusted(DeltaToolCall, dict(item)), item),
        (_trusted(DeltaMessage, {"tool_calls": [item]}), DeltaMessage(tool_calls=[item])),
    ]


TRUSTED = trusted.agrees(_pairs)
"""Whether deltas are built without validation (False: this pydantic/vLLM differs)."""
if not TRUSTED:
    logger.debug("harmony-ext: building vLLM deltas with validation (layout check failed)")

build: Callable[[Any, dict[str, Any]], Any] = _trusted if TRUSTED else _validated
"""``build(cls, fields)``: an instance of a delta model with exactly these fields set."""

text_delta: Callable[[str, str], DeltaMessage] = _text_trusted if TRUSTED else _text_validated
"""``text_delta(field, text)``: a step that only continues ``reasoning`` or ``content``."""

arguments_delta: Callable[[int, str], DeltaMessage] = (
    _arguments_trusted if TRUSTED else _arguments_validated)
"""``arguments_delta(index, text)``: a step that only continues call ``index``'s arguments."""


def from_chat_delta(delta: dict[str, Any]) -> DeltaMessage:
    """The ``DeltaMessage`` of a chat delta from :func:`harmony_plugins.openai.chat_delta`."""
    items = delta.get("tool_calls")
    if items:
        delta = dict(delta)
        delta["tool_calls"] = [
            build(DeltaToolCall, {**item, "function": build(DeltaFunctionCall, item["function"])})
            for item in items
        ]
    return build(DeltaMessage, delta)
