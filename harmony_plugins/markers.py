"""The Harmony control tokens, as the state machine sees them.

Both front ends reduce their input to two things: text, and *markers*. A marker is one of
the small integers below. Token ids map to markers through a :class:`~harmony_plugins.Vocab`;
text spellings map to markers through :data:`SPELLINGS`.
"""

from __future__ import annotations

START = 0  # <|start|>      a message begins; its header follows
END = 1  # <|end|>          a message ends
MESSAGE = 2  # <|message|>  the header ends, the body begins
CHANNEL = 3  # <|channel|>  a channel name follows in the header
CONSTRAIN = 4  # <|constrain|> a content type follows in the header
RETURN = 5  # <|return|>    stop: the final answer is done
CALL = 6  # <|call|>        stop: a tool call is complete
END_OF_TEXT = 7  # <|endoftext|>  stop
IGNORED = 8  # reserved tokens, <|startoftext|>, <|endofprompt|>: never meaningful

STRUCTURAL = {
    "<|start|>": START,
    "<|end|>": END,
    "<|message|>": MESSAGE,
    "<|channel|>": CHANNEL,
    "<|constrain|>": CONSTRAIN,
    "<|return|>": RETURN,
    "<|call|>": CALL,
    "<|endoftext|>": END_OF_TEXT,
}
"""The spellings every Harmony vocabulary must have, with their markers."""

_SPELLING_OF = {marker: spelling for spelling, marker in STRUCTURAL.items()}


def spelling(marker: int) -> str:
    """How a structural marker is spelled in text (``spelling(CALL) == "<|call|>"``)."""
    return _SPELLING_OF[marker]


ANALYSIS_START = "<|channel|>analysis<|message|>"
"""The text that opens a chain-of-thought message (an engine's "reasoning start" string)."""


def may_hold_markers(text: str) -> bool:
    """Whether decoded text can hold a marker at all; without ``<|`` it is plain text (in
    text mode every marker is spelled with it), so no call can be in it."""
    return "<|" in text


REQUIRED = ("<|start|>", "<|end|>", "<|message|>", "<|channel|>", "<|return|>", "<|call|>")
"""Spellings without which a tokenizer cannot be a Harmony one."""

VOCAB_SIZE = 201_088
"""Token ids of o200k_harmony, gpt-oss's vocabulary (its embedding rows): 0..201087."""

RESERVED_IDS = range(200000, VOCAB_SIZE)


def _spellings() -> dict[str, int]:
    table = {f"<|reserved_{i}|>": IGNORED for i in RESERVED_IDS}
    table["<|startoftext|>"] = IGNORED
    table["<|endofprompt|>"] = IGNORED
    table.update(STRUCTURAL)
    return table


SPELLINGS: dict[str, int] = _spellings()
"""Every special-token spelling of o200k_harmony, as recognised in text mode."""

MAX_SPELLING = max(map(len, SPELLINGS))
"""Text mode holds back at most this many characters minus one at the end of a delta."""

PREFIXES: frozenset[str] = frozenset(s[:i] for s in SPELLINGS for i in range(1, len(s)))
"""Every proper prefix of a spelling: a delta ending in one of these is held back."""


def marker_for_spelling(spelling: str) -> int:
    """The marker of a special-token spelling; unknown special tokens are IGNORED."""
    return SPELLINGS.get(spelling, IGNORED)
