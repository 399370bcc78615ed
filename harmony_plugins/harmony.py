"""The Harmony format's facts, written once: its control tokens, channels, roles and recipients.

Why one table: the parse side (markers, the leak scanner), the prompt side (the pieces of a
message), the vocabulary (o200k_harmony's special ids) and the adapters (the strings an engine
is handed: reasoning delimiters, a call's structural tag) all spell the same format, and a
spelling written twice is a spelling that can drift. openai-harmony keeps one table for both
directions (``FormattingToken``); this is ours. Every string constant that spells a control
token, a channel name, ``functions.`` or ``to=`` in the product is here (and in the demo's sample
outputs, :mod:`harmony_plugins._demo`); ``tests/test_one_source.py`` checks that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

# -- control tokens ---------------------------------------------------------------------------

# Markers: what a control token means to the state machine. Small ints, compared on the hot
# path; the vocabulary tables map token ids (and text mode maps spellings) to them.
START = 0  # a message begins; its header follows
END = 1  # a message ends
MESSAGE = 2  # the header ends, the body begins
CHANNEL = 3  # a channel name follows in the header
CONSTRAIN = 4  # a content type follows in the header
RETURN = 5  # stop: the final answer is done
CALL = 6  # stop: a tool call is complete
END_OF_TEXT = 7  # stop
IGNORED = 8  # reserved tokens, start of text, end of prompt: never meaningful in output

OPEN, CLOSE = "<|", "|>"
"""What every special-token spelling begins and ends with."""


class ControlToken(NamedTuple):
    """One special token of o200k_harmony that has a name."""

    spelling: str
    id: int
    marker: int


START_TOKEN = "<|start|>"
END_TOKEN = "<|end|>"
MESSAGE_TOKEN = "<|message|>"
CHANNEL_TOKEN = "<|channel|>"
CONSTRAIN_TOKEN = "<|constrain|>"
RETURN_TOKEN = "<|return|>"
CALL_TOKEN = "<|call|>"
END_OF_TEXT_TOKEN = "<|endoftext|>"

CONTROL_TOKENS = (
    ControlToken("<|startoftext|>", 199_998, IGNORED),
    ControlToken(END_OF_TEXT_TOKEN, 199_999, END_OF_TEXT),
    ControlToken(RETURN_TOKEN, 200_002, RETURN),
    ControlToken(CONSTRAIN_TOKEN, 200_003, CONSTRAIN),
    ControlToken(CHANNEL_TOKEN, 200_005, CHANNEL),
    ControlToken(START_TOKEN, 200_006, START),
    ControlToken(END_TOKEN, 200_007, END),
    ControlToken(MESSAGE_TOKEN, 200_008, MESSAGE),
    ControlToken(CALL_TOKEN, 200_012, CALL),
    # tiktoken and Hugging Face name it so; openai-harmony calls it <|reserved_200018|>.
    ControlToken("<|endofprompt|>", 200_018, IGNORED),
)
"""The named special tokens, in id order. Every other id from :data:`FIRST_SPECIAL_ID` up is
``<|reserved_N|>`` (N the id), never meaningful."""

STOP_IDS = tuple(t.id for t in CONTROL_TOKENS if t.marker in (RETURN, CALL))
"""The ids an assistant's turn stops at, ``<|return|>`` and ``<|call|>`` (openai-harmony's stop
tokens for assistant actions): every request stops there with harmony-ext selected (contract
section 10), whatever the checkpoint's generation config lists."""


def with_stop_ids(ids: Iterable[int] | None) -> list[int]:
    """A request's own stop ids and :data:`STOP_IDS` after them, each once, in order."""
    return list(dict.fromkeys([*(ids or ()), *STOP_IDS]))


ORDINARY_TOKENS = 199_998
"""o200k_base's byte-level BPE tokens: ids 0..199997."""
FIRST_SPECIAL_ID = ORDINARY_TOKENS
VOCAB_SIZE = 201_088
"""Token ids of o200k_harmony, gpt-oss's vocabulary (its embedding rows): 0..201087."""
RESERVED_IDS = range(200_000, VOCAB_SIZE)
"""Ids a tokenizer may not list (the published one stops at 200018) that the model still has."""


def reserved_spelling(token_id: int) -> str:
    return f"{OPEN}reserved_{token_id}{CLOSE}"


_NAMED = {t.id: t.spelling for t in CONTROL_TOKENS}
SPECIAL_IDS: dict[str, int] = {
    _NAMED.get(i) or reserved_spelling(i): i for i in range(FIRST_SPECIAL_ID, VOCAB_SIZE)}
"""Special-token spelling -> o200k_harmony id, one spelling per id 199998..201087, in id order."""

STRUCTURAL = {t.spelling: t.marker for t in CONTROL_TOKENS if t.marker != IGNORED}
"""The spellings every Harmony vocabulary must have, with their markers."""
_SPELLING_OF = {marker: spelling for spelling, marker in STRUCTURAL.items()}

REQUIRED = (START_TOKEN, END_TOKEN, MESSAGE_TOKEN, CHANNEL_TOKEN, RETURN_TOKEN, CALL_TOKEN)
"""Spellings without which a tokenizer cannot be a Harmony one."""


def spelling(marker: int) -> str:
    """How a structural marker is spelled in text (``spelling(CALL) == "<|call|>"``)."""
    return _SPELLING_OF[marker]


SPELLINGS: dict[str, int] = {reserved_spelling(i): IGNORED for i in RESERVED_IDS} | {
    t.spelling: t.marker for t in CONTROL_TOKENS}
"""Every special-token spelling with its marker, as recognised in text mode: the named ones and
``<|reserved_N|>`` for every id from 200000 (also where the id has a name: openai-harmony spells
200018 so)."""
MAX_SPELLING = max(map(len, SPELLINGS))
"""Text mode holds back at most this many characters minus one at the end of a delta."""
PREFIXES: frozenset[str] = frozenset(s[:i] for s in SPELLINGS for i in range(1, len(s)))
"""Every proper prefix of a spelling: a delta ending in one of these is held back."""


def marker_for_spelling(text: str) -> int:
    """The marker of a special-token spelling; unknown special tokens are IGNORED."""
    return SPELLINGS.get(text, IGNORED)


def may_hold_markers(text: str) -> bool:
    """Whether decoded text can hold a marker at all: in text mode every marker is spelled with
    ``<|``, so text without it is plain text and no call can be in it."""
    return OPEN in text


SPELLING_PATTERN = (re.escape(OPEN) + "(?:" + "|".join(
    re.escape(t.spelling[len(OPEN):-len(CLOSE)]) for t in CONTROL_TOKENS)
    + r"|reserved_\d{1,6})" + re.escape(CLOSE))
"""A regular expression matching any special-token spelling (the leak scanner's first part)."""

# -- headers: roles, channels, recipients, content types --------------------------------------

ASSISTANT = "assistant"
USER = "user"
SYSTEM = "system"
DEVELOPER = "developer"
TOOL = "tool"
OTHER_ROLES = frozenset({USER, SYSTEM, DEVELOPER, TOOL})
"""Roles that, written where the assistant's next header should be, begin a forged turn."""

ANALYSIS = "analysis"  # chain of thought
COMMENTARY = "commentary"  # function calls and user-visible preambles
FINAL = "final"  # the answer
CHANNELS = (ANALYSIS, COMMENTARY, FINAL)
KNOWN_CHANNELS = frozenset(CHANNELS)

RECIPIENT = "to="
"""Introduces a message's recipient, in the role section or after the channel."""
FUNCTIONS = "functions"
"""The namespace of function tools: a call to ``NAME`` is addressed ``functions.NAME``."""
FUNCTIONS_PREFIX = FUNCTIONS + "."
BROWSER_SEARCH, BROWSER_OPEN, BROWSER_FIND = "browser.search", "browser.open", "browser.find"
CONTAINER_EXEC = "container.exec"
PYTHON = "python"
"""Built-in tools' recipients (usually on ``analysis``)."""
TOOL_NAMESPACES = (FUNCTIONS_PREFIX, "browser.", "container.")
BUILTIN_NAMESPACES = TOOL_NAMESPACES[1:]

ROLE_WORDS = (USER, SYSTEM, DEVELOPER, TOOL, PYTHON, *(ns[:-1] for ns in TOOL_NAMESPACES))
"""The words another role's turn begins with where the assistant's role belongs: the roles,
and where a tool's answer comes from (``python``, ``functions.NAME``, ``browser.*``,
``container.*``)."""
ROLE_TOKENS = (
    ("user", 1428), (" user", 1825), ("\tuser", 31370), ("User", 1844), (" User", 4293),
    ("\tUser", 49254), ("USER", 12440), (" USER", 27086),
    ("system", 17360), (" system", 2420), ("\tsystem", 94995), ("System", 3320),
    (" System", 1219), ("\tSystem", 7815), ("SYSTEM", 132196), (" SYSTEM", 66849),
    ("developer", 77944), (" developer", 24261), ("Developer", 73175), (" Developer", 41052),
    ("tool", 17952), (" tool", 4584), ("Tool", 7199), (" Tool", 19778), (" TOOL", 189394),
    ("python", 29010), (" python", 22752), ("Python", 60502), (" Python", 26534),
    ("functions", 44580), (" functions", 9964), ("Functions", 33550), (" Functions", 50427),
    (" FUNCTIONS", 126738),
    ("browser", 46071), (" browser", 10327), ("Browser", 24837), (" Browser", 28835),
    ("container", 6896), (" container", 9282), ("\tcontainer", 111157), ("Container", 5626),
    (" Container", 16614),
)
"""(spelling, o200k_harmony id) of every :data:`ROLE_WORDS` spelling that is one token: each
word in lower, title and upper case, alone or after a space or a tab (no other whitespace
joins a role's word in one token). The generation guard tells a forged role by these ids
(``tests/test_guard.py`` checks the list against the tokenizer, both ways)."""

JSON = "json"
CODE = "code"
CONTENT_TYPES = (JSON, CODE)
"""Content types a model writes bare or after ``<|constrain|>``, and may glue to a recipient's
name (``to=functions.shelljson``)."""

HEADER_WORDS = KNOWN_CHANNELS | OTHER_ROLES | {ASSISTANT, *CONTENT_TYPES}
"""Words that only a header holds: text of nothing else is header junk, not free text."""


def function_recipient(name: str) -> str:
    """The recipient of a call to the function tool ``name``: ``functions.NAME``."""
    return FUNCTIONS_PREFIX + name


def is_builtin_recipient(recipient: str) -> bool:
    """Whether a recipient addresses a built-in tool (``browser.*``, ``container.*``,
    ``python``), which only a Responses request's built-in tools declare."""
    return recipient == PYTHON or recipient.startswith(BUILTIN_NAMESPACES)


def constrained(content_type: str) -> str:
    """A content type as written after its marker: ``<|constrain|>json``."""
    return CONSTRAIN_TOKEN + content_type


# -- what the prompt side writes, and what engines are handed ---------------------------------

FUNCTION_ROUTING = f"Calls to these tools must go to the {COMMENTARY} channel: '{FUNCTIONS}'."
"""The system message's line that routes function calls (when functions are declared)."""


def valid_channels_line(channels: tuple[str, ...] = CHANNELS) -> str:
    """The system message's line naming the valid channels."""
    return f"# Valid channels: {', '.join(channels)}. Channel must be included for every message."


CALL_TRIGGER = f"{START_TOKEN}{ASSISTANT} {RECIPIENT}"
"""Where a call's header, in the form calls are rendered in, becomes a call."""


def call_header(name: str) -> str:
    """A call's header in the one form calls are rendered in (gpt-oss's chat template and vLLM
    write it so): ``<|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>``."""
    return (f"{CALL_TRIGGER}{function_recipient(name)}{CHANNEL_TOKEN}{COMMENTARY} {JSON}"
            f"{MESSAGE_TOKEN}")


class StructuralTag(NamedTuple):
    """What a grammar engine needs to hold a call to one form: it begins at ``trigger``, its
    header is ``begin``, its arguments follow, and ``end`` closes it."""

    begin: str
    end: str
    trigger: str


def call_structural_tag(name: str) -> StructuralTag:
    """The structural tag of a call to function ``name`` (the form the prompt renders calls in)."""
    return StructuralTag(call_header(name), CALL_TOKEN, CALL_TRIGGER)


_TYPE_SPELLINGS = ("", " " + JSON, " " + constrained(JSON))
"""How a header may name its JSON content type: not at all, ``json``, ``<|constrain|>json``."""


def call_headers(name: str) -> tuple[str, ...]:
    """Every spelling of a call's header to function ``name`` that a grammar admits, as the
    model continues after ``<|start|>assistant``: the recipient after the channel
    (``<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>``, as gpt-oss writes
    it) or in the role section (`` to=functions.NAME<|channel|>commentary json<|message|>``, as
    calls are rendered), on ``commentary`` or ``analysis``, its content type in each of the
    three spellings."""
    recipient = RECIPIENT + function_recipient(name)
    return tuple(header
                 for channel in (COMMENTARY, ANALYSIS)
                 for spelled in _TYPE_SPELLINGS
                 for header in (f"{CHANNEL_TOKEN}{channel} {recipient}{spelled}{MESSAGE_TOKEN}",
                                f" {recipient}{CHANNEL_TOKEN}{channel}{spelled}{MESSAGE_TOKEN}"))


ANSWER_HEADERS = tuple(f"{CHANNEL_TOKEN}{FINAL}{spelled}{MESSAGE_TOKEN}"
                       for spelled in _TYPE_SPELLINGS)
"""The final answer's header in the spellings a grammar admits: ``<|channel|>final<|message|>``
(what harmony-ext's prompt leads to), ``<|channel|>final json<|message|>`` and
``<|channel|>final <|constrain|>json<|message|>`` (what vLLM's own grammar requires)."""
FREE_HEADERS = (CHANNEL_TOKEN + ANALYSIS + MESSAGE_TOKEN,
                CHANNEL_TOKEN + COMMENTARY + MESSAGE_TOKEN)
"""The headers of the messages a grammar leaves free before a call or the answer: chain of
thought and preambles."""
NEXT_MESSAGE = START_TOKEN + ASSISTANT
"""What opens the assistant's next message of the same turn."""

REASONING_START = CHANNEL_TOKEN + ANALYSIS + MESSAGE_TOKEN
"""The text that opens a chain-of-thought message (an engine's "reasoning start" string)."""
REASONING_END = END_TOKEN
"""What ends it. An engine that gates on this string sees the first ``<|end|>`` of any message,
a preamble's included: it is a message end, not a reasoning end."""
ANSWER_START = CHANNEL_TOKEN + FINAL + MESSAGE_TOKEN
"""Where the answer's body begins (the final header's end, written without a content type):
where a grammar on the answer starts (contract section 10), as an engine's "reasoning end"
for a request with a ``response_format``. Everything before it (reasoning, preambles, calls,
headers) is free."""
