"""harmony-ext core: an engine-neutral, incremental parser for gpt-oss (Harmony) output.

Sans-I/O: it imports no engine and does no I/O. See ``docs/core-api.md`` and the README.
"""

from __future__ import annotations

from .events import (
    ContentText,
    EndOfTurn,
    Event,
    LeakSuspected,
    MessageBegin,
    MessageEnd,
    ReasoningText,
    Recovery,
    ToolCallArguments,
    ToolCallBegin,
    ToolCallEnd,
)
from .openai import ChatResult
from .parser import StreamParser, parse_ids, parse_text
from .steps import CallDelta, Step
from .turn import Request, Summary, Turn
from .vocab import NotHarmonyTokenizer, Vocab

__version__ = "0.1.0"
"""The release; pyproject.toml reads it from here (CHANGELOG.md names the same)."""

__all__ = [
    "CallDelta",
    "ChatResult",
    "ContentText",
    "EndOfTurn",
    "Event",
    "LeakSuspected",
    "MessageBegin",
    "MessageEnd",
    "NotHarmonyTokenizer",
    "ReasoningText",
    "Recovery",
    "Request",
    "Step",
    "StreamParser",
    "Summary",
    "ToolCallArguments",
    "ToolCallBegin",
    "ToolCallEnd",
    "Turn",
    "Vocab",
    "parse_ids",
    "parse_text",
]
