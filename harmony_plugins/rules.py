"""Names of the recovery rules, as carried by :class:`~harmony_plugins._events.Recovery`.

Each name is one rule of ``docs/contract.md``, the parsing contract; adapters count and log them.
The section of the contract that each rule implements is given in brackets.
"""

from __future__ import annotations

NO_MARKUP = "no_markup"
"""[2] Output with no Harmony markup at all is content."""

FINAL_WITHOUT_MESSAGE = "final_without_message"
"""[3] ``<|channel|>final Text`` closed without ``<|message|>``: the text is content."""

HEADER_WITHOUT_MESSAGE = "header_without_message"
"""[3] A header closed without ``<|message|>`` is garbage; its text is dropped. The first
message's too: text before any marker that an ``<|end|>`` closes is a header, not content."""

HEADER_RESTARTED = "header_restarted"
"""[3] ``<|start|>`` inside an unfinished, non-empty header; the old header is dropped."""

HEADER_JUNK = "header_junk"
"""[3] Words in a header that are no role, recipient, channel or content type."""

UNFINISHED_HEADER = "unfinished_header"
"""[5] The stream ended inside a header; the header is dropped."""

MISSING_END = "missing_end"
"""[3] A new header (``<|start|>`` or ``<|channel|>``) began inside a body."""

STRAY_MARKER = "stray_marker"
"""[3] ``<|message|>`` or ``<|constrain|>`` inside a body; the marker is ignored."""

IGNORED_TOKEN = "ignored_token"
"""[1] A token that is never meaningful in output (reserved, start-of-text, end-of-prompt)."""

UNKNOWN_TOKEN = "unknown_token"
"""[6] A token id outside the vocabulary; it is skipped."""

FORGED_TURN = "forged_turn"
"""[2] A message with a role other than assistant: the turn ends there."""

AFTER_END_OF_TURN = "after_end_of_turn"
"""[2] Text after the turn ended (``<|return|>``, end of text, forged turn) is dropped."""

AFTER_CALL = "after_call"
"""[2] Prose after a ``<|call|>`` is dropped; further calls are kept."""

UNDECLARED_FUNCTION = "undeclared_function"
"""[3] A call to a ``functions.*`` name the request did not declare: not surfaced (unless the
pass-undeclared switch surfaces it; the rule is counted either way)."""

UNDECLARED_RECIPIENT = "undeclared_recipient"
"""[2] A builtin or unknown recipient the request did not declare: no call, no content."""

BARE_RECIPIENT = "bare_recipient"
"""[3] A recipient without ``functions.`` accepted because the bare name is declared."""

GLUED_CONTENT_TYPE = "glued_content_type"
"""[3] ``shelljson`` read as function ``shell`` with content type ``json``."""

EMPTY_ARGUMENTS = "empty_arguments"
"""[4] A call with an empty body gets the arguments ``{}``."""

AFTER_JSON_VALUE = "after_json_value"
"""[4] Text after the first complete JSON value of the arguments is dropped."""

CHANNEL_IN_ROLE = "channel_in_role"
"""[2] A channel name in the role slot (``<|start|>final<|message|>``) is that channel."""

UNKNOWN_CHANNEL = "unknown_channel"
"""[2] An unknown channel name (``comment``): the body is reasoning; the name is the text."""

FREE_TEXT = "free_text"
"""[2] Text between messages (after ``<|end|>``, no header marker before the next
``<|start|>`` or the end) is content."""

EMPTY_RECIPIENT = "empty_recipient"
"""[3] ``to=`` with no name: a call that cannot be surfaced; its body is dropped."""

CONTENT_TYPE_RECIPIENT = "content_type_recipient"
"""[3] A content type naming a declared function (``<|constrain|>functions.NAME``) in a header
with no recipient is the recipient."""

TOOLS_UNKNOWN = "tools_unknown"
"""[3] A message whose recipient may name a function (not a built-in tool's), in a parse that
was never told the request's tools (see ``Turn.declare`` and ``Turn.settle``): it cannot be
surfaced, its body is dropped, and it is counted by this rule alone, with no call outcome."""

CALL_WRITTEN_AS_TEXT = "call_written_as_text"
"""[10] A visible message that is wholly a call written as text
(``[commentary ]to=functions.NAME [json]{object}`` naming a declared function whose schema
accepts the object, or, where the request forced a call, a bare object exactly one allowed
function's schema accepts) is that call, where the request asked for this recovery; the call's
outcome is ``surfaced``."""

PARALLEL_CALLS_REFUSED = "parallel_calls_refused"
"""[10] A call after the first in a response whose request set ``parallel_tool_calls`` false:
not surfaced, its body dropped, counted by this rule alone, with no call outcome."""

SPLIT_MARKER = "split_marker"
"""[6] Text mode: text that would complete a control-token spelling across a dropped marker
(``A<|`` + ``<|reserved_200010|>`` + ``end|>B``) is dropped; the text is that part
(``end|>``), so the result is ``A<|B``."""

# Outcomes of a call's argument check, as carried by ToolCallEnd.outcome (contract section 4).
SURFACED = "surfaced"
"""The arguments are a JSON object matching the declared schema (or no schema was declared)."""
INVALID_JSON = "invalid_json"
"""The arguments are not JSON (code, a shell command, a cut-off object)."""
NOT_OBJECT = "not_object"
"""The arguments are JSON, but not an object."""
SCHEMA_MISMATCH = "schema_mismatch"
"""The arguments do not match the declared ``parameters`` JSON Schema."""
UNCHECKED = "unchecked"
"""A schema was declared but could not be applied: ``jsonschema`` is not installed, the
schema is invalid, or the value is nested too deep to check."""
UNDECLARED = "undeclared"
"""A call to a ``functions.*`` name the request did not declare: not surfaced
(``undeclared_function``), or surfaced by the pass-undeclared option, unchecked."""

OUTCOMES = (SURFACED, INVALID_JSON, NOT_OBJECT, SCHEMA_MISMATCH, UNCHECKED, UNDECLARED)
"""Every call parsed with the request's tools has exactly one of these (``ToolCallEnd.outcome``,
``Summary.outcomes``)."""

def outcome_label(outcome: str) -> str:
    """The ``outcome`` label of ``harmony_ext_tool_calls_total`` for a call outcome: the
    contract's label set (section 9) is closed, so ``unchecked`` (arguments passed on, not
    checked) is counted as ``surfaced``."""
    return SURFACED if outcome == UNCHECKED else outcome
