"""SGLang's per-step parse results: the tool parser's (``StreamingParseResult``,
``ToolCallItem``) and the reasoning parser's.

The tool parser's are pydantic models, and validating one costs more than our parse of the
step (about 0.9 us each; a ``StreamingParseResult`` left at its ``[]`` default, 1.6 us,
because pydantic copies the default). The tool detector builds one per decode step per
request, from strings and ints the parser produced, so they are built unvalidated, one
template per shape (:mod:`harmony_plugins.adapter_support.trusted`), once a check at import
shows that each makes exactly what validation makes; otherwise (another pydantic or SGLang)
validated, and a debug line says so. The reasoning parser's is a plain class whose
``__init__`` only stores its two arguments; :func:`plain` checks that at import, and the
reasoning detector's usual steps then build it without the call. This module is imported
only once the plugin has checked SGLang (see :mod:`sglang_ext.plugin`).
"""

from __future__ import annotations

import logging

from sglang.srt.function_call.core_types import StreamingParseResult, ToolCallItem
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult

from harmony_plugins.adapter_support import trusted

logger = logging.getLogger("sglang_ext")

SHAPES: dict[str, trusted.Shape] = {
    # name: (model, the fields given, a sample of their values)
    "result": (StreamingParseResult, ("normal_text", "calls"),
               ("x", [ToolCallItem(tool_index=0, parameters="{}")])),
    "piece": (ToolCallItem, ("tool_index", "parameters"), (0, "{}")),
    "named": (ToolCallItem, ("tool_index", "name", "parameters"), (1, "f", "")),
    "argument_piece": (StreamingParseResult, ("normal_text", ("calls", [(ToolCallItem, (
        "tool_index", "parameters"))])), ("", 0, "{}")),
}
"""Every shape built here: a step's result (``normal_text``, ``calls``); a piece of a call's
arguments; a call's first item, with its name; the usual step of a call, a result holding one
piece of its arguments (both models built in one call)."""

BUILD = trusted.builders(SHAPES)
"""One builder per shape (``BUILD.result(normal_text, calls)``, ...)."""
TRUSTED = BUILD.trusted
"""Whether results are built without validation (False: this pydantic/SGLang differs)."""
if not TRUSTED:
    logger.debug("harmony-ext: building SGLang parse results with validation")


def plain(cls: type) -> bool:
    """Whether ``cls(normal_text, reasoning_text)`` given two strings makes an instance of
    ``cls`` holding those two attributes and nothing else, in that order, with object's own
    ``__new__`` and ``__setattr__``: then ``object.__new__`` and two attribute stores make
    the same instance."""
    try:
        made = cls("n", "r")
        return (cls.__new__ is object.__new__ and cls.__setattr__ is object.__setattr__
                and type(made) is cls and list(vars(made).items())
                == [("normal_text", "n"), ("reasoning_text", "r")])
    except Exception:  # any surprise: build it through its constructor
        return False


REASONING_PLAIN = plain(ReasoningResult)
"""Whether SGLang's reasoning result (a plain class) is built without its ``__init__``."""
