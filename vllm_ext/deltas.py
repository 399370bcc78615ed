"""vLLM's chat delta objects (``DeltaMessage`` and its tool-call items), built per step.

vLLM's ``DeltaMessage`` and ``DeltaToolCall`` derive from ``OpenAIBaseModel``, whose
wrap-mode model validator (a Python function that logs unknown *request* fields) runs on
every construction: about 1.7 us per ``DeltaMessage``, more than our whole parse of a token,
and one is built per decode step per request. The values we put in are strings and ints the
parser produced, so validation has nothing to check. :func:`build` makes the object pydantic
would make (field values, the set of fields given, empty extras) without running it.

That relies on pydantic v2's instance layout, so it is checked at import: a few objects built
both ways must compare equal and dump to the same JSON. If they do not (another pydantic or
vLLM), :func:`build` falls back to the validated constructors and says so in a debug line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel
from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
)

logger = logging.getLogger("vllm.harmony_ext")

_Spec = tuple[dict[str, Any], tuple[tuple[str, Callable[[], Any]], ...], bool]


def _spec(cls: type[BaseModel]) -> _Spec:
    """A model's plain defaults, its default factories, and whether it keeps extra fields."""
    defaults: dict[str, Any] = {}
    factories: list[tuple[str, Callable[[], Any]]] = []
    for name, field in cls.model_fields.items():
        if field.default_factory is not None:
            factories.append((name, field.default_factory))  # type: ignore[arg-type]
            defaults[name] = None  # placeholder, keeps the field order
        else:
            defaults[name] = field.default
    return defaults, tuple(factories), cls.model_config.get("extra") == "allow"


_SPECS = {cls: _spec(cls) for cls in (DeltaMessage, DeltaToolCall, DeltaFunctionCall)}
_new = object.__new__
try:
    _slot = BaseModel.__dict__
    _set_dict = _slot["__dict__"].__set__
    _set_fields = _slot["__pydantic_fields_set__"].__set__
    _set_extra = _slot["__pydantic_extra__"].__set__
    _set_private = _slot["__pydantic_private__"].__set__
except (KeyError, AttributeError):  # not the pydantic v2 layout
    _SPECS = {}


def _trusted(cls: type[BaseModel], given: dict[str, Any]) -> Any:
    defaults, factories, keeps_extra = _SPECS[cls]
    values = defaults | given
    for name, factory in factories:
        if name not in given:
            values[name] = factory()
    obj = _new(cls)
    _set_dict(obj, values)
    _set_fields(obj, set(given))
    _set_extra(obj, {} if keeps_extra else None)
    _set_private(obj, None)
    return obj


def _validated(cls: type[BaseModel], given: dict[str, Any]) -> Any:
    return cls(**given)


def _text_trusted(field: str, text: str) -> DeltaMessage:
    # The hot path (one call per decode step): _trusted(DeltaMessage, {field: text}) inlined.
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
    # The hot path of a call's arguments: three _trusted() calls inlined.
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


def _agrees() -> bool:
    """Whether trusted construction makes exactly what validated construction makes."""
    if not _SPECS:
        return False
    function = {"arguments": '{"a": 1}'}
    call = {"index": 2, "id": "call_1", "type": "function", "function": {"name": "f",
                                                                       "arguments": ""}}
    samples: list[tuple[Any, Any]] = [
        (_arguments_trusted(3, "x"), _arguments_validated(3, "x")),
        (_text_trusted("content", "a"), DeltaMessage(content="a")),
        (_text_trusted("reasoning", "r"), DeltaMessage(reasoning="r")),
        (_trusted(DeltaMessage, {"reasoning": "r", "content": "c"}),
         DeltaMessage(reasoning="r", content="c")),
        (_trusted(DeltaFunctionCall, function), DeltaFunctionCall(**function)),
        (_trusted(DeltaToolCall, {"index": 0, "function": DeltaFunctionCall(**function)}),
         DeltaToolCall(index=0, function=DeltaFunctionCall(**function))),
    ]
    item = DeltaToolCall(**{**call, "function": DeltaFunctionCall(**call["function"])})
    samples.append((_trusted(DeltaToolCall, dict(item)), item))
    samples.append((_trusted(DeltaMessage, {"tool_calls": [item]}),
                    DeltaMessage(tool_calls=[item])))
    try:
        for fast, slow in samples:
            if (fast != slow or fast.model_fields_set != slow.model_fields_set
                    or fast.model_dump_json() != slow.model_dump_json()
                    or fast.model_dump_json(exclude_unset=True)
                    != slow.model_dump_json(exclude_unset=True)):
                return False
    except Exception:  # noqa: BLE001 - any surprise means: do not trust the layout
        return False
    return True


TRUSTED = _agrees()
"""Whether deltas are built without validation (False: this pydantic/vLLM differs)."""
if not TRUSTED:
    logger.debug("harmony-ext: building vLLM deltas with validation (layout check failed)")

build: Callable[[type[BaseModel], dict[str, Any]], Any] = _trusted if TRUSTED else _validated
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
