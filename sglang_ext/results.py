"""SGLang's per-step tool-parser results (``StreamingParseResult``, ``ToolCallItem``).

Both are pydantic models, and validating one costs more than our parse of the step (about
0.9 us each; a ``StreamingParseResult`` left at its ``[]`` default, 1.6 us, because pydantic
copies the default). The tool detector builds one per decode step per request, from strings
and ints the parser produced, so they are built unvalidated
(:mod:`harmony_plugins.adapter_support.trusted`) once a check at import shows that this makes
exactly what validation makes; otherwise (another pydantic or SGLang) validated, and a debug
line says so. This module is imported only once the plugin has checked SGLang (see
:mod:`sglang_ext.plugin`).
"""

from __future__ import annotations

import logging
from typing import Any

from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem

from harmony_plugins.adapter_support import trusted

logger = logging.getLogger("sglang_ext")

_item = trusted.Builder(ToolCallItem).build
_result = trusted.Builder(StreamingParseResult).build


def _trusted_result(normal_text: str, calls: list[ToolCallItem]) -> StreamingParseResult:
    return _result({"normal_text": normal_text, "calls": calls})


def _trusted_item(index: int, parameters: str, name: str | None = None) -> ToolCallItem:
    if name is None:
        return _item({"tool_index": index, "parameters": parameters})
    return _item({"tool_index": index, "name": name, "parameters": parameters})


def _validated_result(normal_text: str, calls: list[ToolCallItem]) -> StreamingParseResult:
    return StreamingParseResult(normal_text=normal_text, calls=calls)


def _validated_item(index: int, parameters: str, name: str | None = None) -> ToolCallItem:
    if name is None:
        return ToolCallItem(tool_index=index, parameters=parameters)
    return ToolCallItem(tool_index=index, name=name, parameters=parameters)


def _pairs() -> list[tuple[Any, Any]]:
    """Samples of every shape built here, each with its validated twin."""
    item = _validated_item(0, "{}")
    return [
        (_trusted_item(0, "{}"), item),
        (_trusted_item(1, "", "f"), _validated_item(1, "", "f")),
        (_trusted_result("", []), _validated_result("", [])),
        (_trusted_result("x", [item]), _validated_result("x", [item])),
    ]


TRUSTED = trusted.agrees(_pairs)
"""Whether results are built without validation (False: this pydantic/SGLang differs)."""
if not TRUSTED:
    logger.debug("harmony-ext: building SGLang parse results with validation")

streaming_result = _trusted_result if TRUSTED else _validated_result
"""``streaming_result(normal_text, calls)``: the tool detector's result for one step."""

tool_call_item = _trusted_item if TRUSTED else _validated_item
"""``tool_call_item(index, parameters, name=None)``: one call's piece of one step."""
