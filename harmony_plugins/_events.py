"""The events a parse emits (:class:`~harmony_plugins.Turn`, ``StreamParser``).

Events are plain data, as h11's and wsproto's are: frozen, slotted dataclasses that compare
with ``==``, hash, and can be matched with ``match``. They carry no behaviour. A turn builds
them only when it was asked for events (``Turn(events=True)``: the Responses API,
``StreamParser``); a chat stream's steps carry their parts without them. Adapters translate
them into an engine's types; :mod:`harmony_plugins._openai` translates them into OpenAI chat
deltas.

Every Harmony message whose body is shown (reasoning, content or a call) is framed by a
:class:`MessageBegin` and a :class:`MessageEnd`; between them come its text events, which may
arrive in many pieces (one per delta): concatenating them gives the message's text. Text
that a recovery rule turns into content (free text between messages, an output with no
markup) is framed as a message of its own. Messages whose body is dropped by a rule are not
framed (their :class:`Recovery` says why). Do not subclass these classes.

Each fact is carried by one event, and each field means one thing: what a message is (its
kind, the channel it counts as, the channel, recipient and content type as written) is said
once, by its :class:`MessageBegin`; the text and call events that follow carry only their own
data.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class MessageBegin:
    """A Harmony message's body begins (its header is complete).

    ``kind`` is where its body goes: ``"reasoning"``, ``"content"`` or ``"call"``.
    ``channel`` is the Harmony channel the message counts as, always a valid one
    (``"analysis"``, ``"commentary"`` or ``"final"``): reasoning counts as ``analysis`` (an
    unknown channel too), content as ``final`` unless written on ``commentary`` (a preamble),
    a call to a function as ``commentary`` whatever it was written on, a call to a built-in
    tool as the known channel it was written on (else ``commentary``). ``written_channel`` is
    the channel name as the model wrote it (None when there was none). ``recipient`` is the
    call's recipient as the request declared it (``functions.NAME``, or a built-in name such
    as ``browser.search``), None for other messages; ``content_type`` is the content type as
    written (``<|constrain|>json``, ``json``), or None. ``separator``: for a content message,
    what a chat completion's content puts between the content before it and this message's
    text: ``"\n"`` when it follows a preamble (of another channel) whose text did not end in
    whitespace, else ``""`` (contract section 2); the step's ``content`` includes it, the
    :class:`ContentText` events never do (a Responses item holds the message's own text).
    """

    kind: str
    channel: str
    written_channel: str | None = None
    recipient: str | None = None
    content_type: str | None = None
    separator: str = ""


@dataclass(frozen=True, slots=True)
class MessageEnd:
    """The message begun by the last :class:`MessageBegin` is complete.

    ``by`` says what ended it: ``"end"``, ``"call"``, ``"return"``, ``"end_of_text"``
    (its marker), ``"new_header"`` (a header began without ``<|end|>``) or
    ``"end_of_stream"`` (the stream ended inside the body: it may be cut off).
    """

    by: str


@dataclass(frozen=True, slots=True)
class ReasoningText:
    """A piece of chain-of-thought text (a message of kind ``"reasoning"``)."""

    text: str


@dataclass(frozen=True, slots=True)
class ContentText:
    """A piece of user-visible text (a message of kind ``"content"``: the answer, a preamble,
    or text a rule turned into content); which one, its :class:`MessageBegin` says."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallBegin:
    """A call to a declared function; emitted as soon as its header is complete, right after
    its :class:`MessageBegin` (which has the channel, recipient and content type).

    ``index`` counts the calls of one response from 0; ``id`` is unique; ``name`` is the
    function's name as declared.
    """

    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArguments:
    """The next piece of the raw argument text of call ``index``, as the model wrote it."""

    index: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """Call ``index`` is complete (or cut off); ``arguments`` is its whole argument text.

    ``arguments`` always equals the concatenation of the call's ``ToolCallArguments``.
    ``outcome`` is the check of the arguments against the declared tool (never a change to
    them): ``"surfaced"`` (a JSON object that matches the declared ``parameters``, or no
    schema was declared), ``"invalid_json"``, ``"not_object"``, ``"schema_mismatch"``,
    ``"unchecked"`` (a schema was declared but ``jsonschema`` is missing, the schema is
    invalid, or the value is too deep to check), or ``"undeclared"`` (a call to a name the
    request did not declare, surfaced anyway: the pass-undeclared switch, or a parse given no
    tools that keeps every recipient). See ``harmony_plugins.rules.OUTCOMES``.
    """

    index: int
    arguments: str
    outcome: str = "surfaced"


@dataclass(frozen=True, slots=True)
class EndOfTurn:
    """The last event of every stream, emitted by ``close()``.

    ``reason`` says what ended the model's turn: ``"return"``, ``"call"``,
    ``"end_of_text"``, ``"forged_turn"`` or ``"end_of_stream"`` (no stop marker seen).
    ``finish_reason`` is the OpenAI one: ``"length"``, ``"tool_calls"`` or ``"stop"``; None when
    the turn was closed with the finish ``"unknown"`` (an engine that did not say why it
    stopped reports its own).
    """

    reason: str
    finish_reason: str | None


@dataclass(frozen=True, slots=True)
class Recovery:
    """A contract rule recovered from malformed output.

    ``rule`` names the rule (see :mod:`harmony_plugins.rules`); ``text`` is the model
    text that the rule dropped (for ``unknown_channel``, the channel name, which no other
    event carries), or ``""`` when nothing was dropped (``free_text``: the text follows as
    content).
    """

    rule: str
    text: str = ""


@dataclass(frozen=True, slots=True)
class LeakSuspected:
    """Visible text (content or a preamble) holds Harmony markup written as ordinary text:
    a control-token spelling, or ``to=functions.NAME`` next to a channel or content-type
    word. The text was passed on unchanged; this flags it. ``excerpt`` is the markup found.
    """

    excerpt: str


Event = (
    MessageBegin | MessageEnd | ReasoningText | ContentText | ToolCallBegin | ToolCallArguments
    | ToolCallEnd | EndOfTurn | Recovery | LeakSuspected
)
