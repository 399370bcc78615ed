"""SGLang's per-step parse results of the tool parser: ``StreamingParseResult`` and
``ToolCallItem``.

A result is validated by pydantic's own validator, called with a dict of the fields given
(:func:`harmony_plugins.adapter_support.models.validator`), its ``calls`` as dicts of each
``ToolCallItem``'s fields, which the same validation makes items (one validation per step,
``calls`` always given: left to its ``[]`` default, pydantic copies it). The tool detector
builds one result per decode step per request. The reasoning parser's result is a plain
class, built by its own constructor. This module is imported only once the plugin has checked
SGLang (see :mod:`sglang_ext.plugin`).
"""

from __future__ import annotations

from sglang.srt.function_call.core_types import StreamingParseResult

from harmony_plugins.adapter_support import models

result = models.validator(StreamingParseResult)
"""``result({"normal_text": ..., "calls": [{"tool_index": ..., "name": ..., "parameters":
...}]})``: a tool-parser step's result, its calls ``ToolCallItem``s."""
