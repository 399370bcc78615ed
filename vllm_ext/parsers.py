"""The tool-call and reasoning parser classes registered under the name ``harmony-ext``.

They exist so that ``--tool-call-parser harmony-ext`` and ``--reasoning-parser harmony-ext``
resolve, and so that vLLM's type checks (which demand the gpt-oss classes) pass. They parse
nothing themselves: selecting either makes vLLM build :class:`~vllm_ext.harmony_parser.
HarmonyExtParser`, which parses token ids with ``harmony_plugins`` (see :mod:`vllm_ext.plugin`).
"""

from __future__ import annotations

from vllm.reasoning.gptoss_reasoning_parser import GptOssReasoningParser
from vllm.tool_parsers.gptoss_tool_parser import GptOssToolParser


class HarmonyExtToolParser(GptOssToolParser):
    """``--tool-call-parser harmony-ext``."""


class HarmonyExtReasoningParser(GptOssReasoningParser):
    """``--reasoning-parser harmony-ext``.

    Also built in the engine process for structured outputs, as ``cls(tokenizer=...,
    **kwargs)``; vLLM's gpt-oss class (whose ``is_reasoning_end`` is always true, since the
    Harmony structural tag covers the reasoning part itself) already accepts that.
    """
