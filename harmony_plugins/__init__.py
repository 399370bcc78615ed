"""harmony-ext core: an engine-neutral, incremental parser for gpt-oss (Harmony) output.

Sans-I/O: it imports no engine, opens no file (:mod:`harmony_plugins.data` reads the shipped
data), sets no environment variable and logs nothing; the command line
(:mod:`harmony_plugins.cli`) and the engine glue do that for it. The names below are the public
interface: the adapters import these and the engine glue, nothing else
(``tests/test_one_source.py`` checks). See ``docs/core-api.md``.
"""

from __future__ import annotations

from . import compat, harmony, rules
from ._checks import schema_check_available
from ._events import (
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
from ._grammar import answer_or_call
from ._guard import Guard, guard_for, guarded
from ._messages_api import messages_block, messages_stop_reason
from ._openai import ChatResult
from ._parser import StreamParser, parse_ids, parse_text
from ._steps import CallDelta, Step, fold
from ._switches import pass_undeclared, recover_text_calls, switch, turn_stop
from ._tool_choice import ToolChoice, read_tool_choice
from ._tools import chat_request_tools, held_schemas
from ._turn import Request, Summary, Turn, count_reasoning_tokens
from .prompt import (
    Escaper,
    MissingExtra,
    NotRenderable,
    chat_prompt_ids,
    escaper_for,
    item_messages,
    part_of,
    phase_of,
    round_trip_plan,
    written_order,
)
from .vocab import NotHarmonyTokenizer, Vocab

__version__ = "0.1.0"
"""The release; pyproject.toml reads it from here (CHANGELOG.md names the same)."""

__all__ = [
    "CallDelta",
    "ChatResult",
    "ContentText",
    "EndOfTurn",
    "Escaper",
    "Event",
    "Guard",
    "LeakSuspected",
    "MessageBegin",
    "MessageEnd",
    "MissingExtra",
    "NotHarmonyTokenizer",
    "NotRenderable",
    "ReasoningText",
    "Recovery",
    "Request",
    "Step",
    "StreamParser",
    "Summary",
    "ToolCallArguments",
    "ToolCallBegin",
    "ToolCallEnd",
    "ToolChoice",
    "Turn",
    "Vocab",
    "answer_or_call",
    "chat_prompt_ids",
    "chat_request_tools",
    "compat",
    "count_reasoning_tokens",
    "escaper_for",
    "fold",
    "guard_for",
    "guarded",
    "harmony",
    "held_schemas",
    "item_messages",
    "messages_block",
    "messages_stop_reason",
    "parse_ids",
    "parse_text",
    "part_of",
    "pass_undeclared",
    "phase_of",
    "read_tool_choice",
    "round_trip_plan",
    "recover_text_calls",
    "rules",
    "schema_check_available",
    "switch",
    "turn_stop",
    "written_order",
]
