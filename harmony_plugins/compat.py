"""A drop-in for openai-harmony's ``StreamableParser`` that follows the contract and never raises.

Why: most gpt-oss code is written against openai-harmony's incremental parser (the format
guide's example, SGLang's Responses API, vLLM's own parser, scripts and RL harnesses), and that
parser raises on the slips gpt-oss makes (a header without ``<|start|>``, an unknown channel, a
forged turn), failing the request. :class:`StreamableParser` has its interface and is a view
over one :class:`~harmony_plugins.Turn` at a time and its message events: ``messages`` holds one
``openai_harmony.Message`` per Harmony message as the core frames it, on the channel the
message counts as (always one openai-harmony and the engines accept), a function call's
recipient ``functions.NAME`` as declared, routing and drops by the contract.

Where it differs from openai-harmony, the difference is the contract's: it never raises; a
forged turn (``<|start|>user`` in model output) ends the turn and its messages are not kept;
a dropped message (an undeclared recipient, header junk) is not in ``messages``; and a message
with an empty body is not either (it would show as an empty item in one view of a response and
not in another). Without ``tools=`` every recipient is kept as written, as openai-harmony does.

Tokens a caller feeds back after the model stopped (a tool's result rendered as a message,
``<|start|>functions.x to=assistant ...<|end|>``, then the next turn's ``<|start|>assistant``,
as SGLang's built-in tool loop does) are read as openai-harmony reads them: the tool's message
is kept as written, and the assistant's next turn is a new turn of the model's, parsed by the
contract. Which tokens are the caller's: with ``generations=True`` the caller ends each of the
model's generations with :meth:`StreamableParser.process_eos`, so everything before it is the
model's (a ``<|start|>functions.x`` the model writes after its ``<|call|>`` is a forged turn,
as the contract says) and only what comes after it can be the caller's; without, what follows a
stop token and begins with another role's ``<|start|>`` is taken for the caller's (the engines
stop the model at its stop tokens). ``openai_harmony`` is imported when the first parser is
built, never at import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from . import harmony as hm
from ._events import ContentText, MessageBegin, MessageEnd, ReasoningText, ToolCallArguments
from ._steps import Step
from ._turn import Observer, Request, Turn
from .vocab import Vocab

_TEXT = (ReasoningText, ContentText, ToolCallArguments)
_STOPS = frozenset({hm.CALL, hm.RETURN, hm.END_OF_TEXT})
# Where the parser is: in a turn of the model's, after a stop (expecting a caller's message or
# the next turn), deciding whose message a <|start|> begins, or in a caller's message.
_TURN, _BETWEEN, _PENDING, _FOREIGN = range(4)


def _harmony() -> Any:
    import openai_harmony

    return openai_harmony


def harmony_message(begin: MessageBegin, text: str) -> Any:
    """The ``openai_harmony.Message`` of one Harmony message the core framed (its
    :class:`MessageBegin` and its whole text), or None for a message with an empty body, which
    carries nothing (a call's empty body is ``{}``, never empty)."""
    if not text:
        return None
    return _message(_harmony().Role.ASSISTANT, None, text, begin.channel, begin.recipient,
                    begin.content_type)


def prompt_message(message: Any) -> Any:
    """A prompt message of the core (a :class:`~harmony_plugins.prompt._model.Message` with a
    text body, as :func:`~harmony_plugins.item_messages` returns) as the
    ``openai_harmony.Message`` an engine renders: author (a tool result's ``functions.NAME``),
    channel, recipient and content type as the core gave them."""
    author = message.author if message.author and message.author != message.role else None
    return _message(_harmony().Role(message.role), author, message.body, message.channel,
                    message.recipient, message.content_type)


def _message(role: Any, author: str | None, text: str, channel: str | None,
             recipient: str | None, content_type: str | None) -> Any:
    """An ``openai_harmony.Message`` from its parts (``author``: a name other than the role's,
    as a tool result's ``functions.NAME``; None parts are left unset)."""
    oh = _harmony()
    if author is not None:
        message = oh.Message.from_author_and_content(oh.Author.new(role, author), text)
    else:
        message = oh.Message.from_role_and_content(role, text)
    if channel is not None:
        message = message.with_channel(channel)
    if recipient is not None:
        message = message.with_recipient(recipient)
    if content_type is not None:
        message = message.with_content_type(content_type)
    return message


class StreamableParser:
    """openai-harmony's ``StreamableParser(encoding, role)``, parsed by the contract.

    ``encoding`` is openai-harmony's gpt-oss encoding (its ids are o200k_harmony's: the token
    table comes from ``vocab``, by default the shipped o200k_harmony); ``role``
    ``Role.ASSISTANT`` (the stream starts in the assistant's header, after the prompt's
    ``<|start|>assistant``) or None (it starts with a ``<|start|>``); ``strict`` is accepted
    and changes nothing (this parser never raises on model output). ``tools``: the request's
    tools (chat or Responses shapes, dicts or objects); only those are calls, by the contract;
    without them every recipient is kept as written. ``observer`` receives each turn's
    :class:`~harmony_plugins.Summary` (the adapters' counters); ``pass_undeclared`` as for
    :class:`~harmony_plugins.Request`; ``generations``: the caller ends each generation with
    :meth:`process_eos` (see the module docstring).
    """

    def __init__(self, encoding: Any = None, role: Any = None, *, strict: bool = True,
                 tools: Iterable[Any] | None = None, vocab: Vocab | None = None,
                 observer: Observer | None = None, pass_undeclared: bool = False,
                 id_factory: Callable[[], str] | None = None,
                 generations: bool = False) -> None:
        self._generations = generations
        self._oh = _harmony()
        self._request = Request(tools, pass_undeclared=pass_undeclared,
                                any_recipient=tools is None)
        self._vocab = vocab or Vocab.o200k_harmony()
        self._table = self._vocab.table
        self._observer = observer
        self._id_factory = id_factory
        self._turn: Turn | None = None
        self._messages: list[Any] = []
        self._begin: MessageBegin | None = None  # the message being read
        self._parts: list[str] = []
        self._tokens: list[int] = []
        self._delta: str | None = None
        self._mode = _TURN if role is not None else _BETWEEN
        self._first_header = role is not None  # openai-harmony names the given role there
        self._after_call = False  # the model's last stop was <|call|>, nothing fed since
        self._pending: list[int] = []  # <|start|> and what follows, until whose it is is known
        self._foreign: _Foreign | None = None
        self._ended_last = False  # the last token ended a message: openai-harmony expects start

    # -- openai-harmony's interface ---------------------------------------------------------

    def process(self, token: int) -> StreamableParser:
        """Take the next token (model output, or a message the caller renders back)."""
        self._tokens.append(token)
        self._delta = None
        marker = self._marker(token)
        mode = self._mode
        if mode == _TURN:
            self._feed([token])
            self._ended_last = marker == hm.END or marker in _STOPS
            if marker in _STOPS and not self._generations:
                self._mode = _BETWEEN
                self._after_call = marker == hm.CALL
        elif mode == _BETWEEN:
            if marker == hm.START:
                self._pending = [token]
                self._mode = _PENDING
                self._ended_last = False
            else:  # the turn's own rules (text after a call, after the end), or the next turn
                self._mode = _TURN if self._turn is None or self._turn.closed else mode
                self._ended_last = False
                self._feed([token])
        elif mode == _PENDING:
            self._pending.append(token)
            if marker is not None:
                self._decide(marker)
        else:
            self._foreign_token(token, marker)
        return self

    def process_eos(self) -> StreamableParser:
        """The end of the stream: what is open is closed (a message being read is kept)."""
        self._delta = None
        if self._mode == _PENDING:
            self._decide(None)
        if self._mode == _FOREIGN and self._foreign is not None:
            self._foreign_done()
        turn = self._turn
        if turn is not None and not turn.closed:
            self._absorb(turn.close())
        self._mode = _BETWEEN
        self._first_header = False
        return self

    @property
    def messages(self) -> list[Any]:
        """The completed messages so far (``openai_harmony.Message``), in order."""
        return list(self._messages)

    @property
    def tokens(self) -> list[int]:
        return list(self._tokens)

    @property
    def state(self) -> Any:
        """``openai_harmony.StreamState``: ``CONTENT`` while a message's body is read,
        ``EXPECT_START`` right after a message or a stop, else ``HEADER``."""
        states = self._oh.StreamState
        if self._begin is not None or (self._foreign is not None and self._foreign.in_body):
            return states.CONTENT
        mode = self._mode
        if mode == _BETWEEN or (mode == _TURN and self._ended_last):
            return states.EXPECT_START
        return states.HEADER

    @property
    def current_role(self) -> Any:
        roles = self._oh.Role
        if self._begin is not None:
            return roles.ASSISTANT
        foreign = self._foreign
        if foreign is not None and foreign.in_body:
            return foreign.role
        return roles.ASSISTANT if self._first_header and self._mode == _TURN else None

    @property
    def current_channel(self) -> str | None:
        if self._begin is not None:
            return self._begin.channel
        foreign = self._foreign
        return foreign.channel if foreign is not None and foreign.in_body else None

    @property
    def current_recipient(self) -> str | None:
        if self._begin is not None:
            return self._begin.recipient
        foreign = self._foreign
        return foreign.recipient if foreign is not None and foreign.in_body else None

    @property
    def current_content_type(self) -> str | None:
        if self._begin is not None:
            return self._begin.content_type
        foreign = self._foreign
        return foreign.content_type if foreign is not None and foreign.in_body else None

    @property
    def current_content(self) -> str:
        if self._begin is not None:
            return "".join(self._parts)
        foreign = self._foreign
        return foreign.text() if foreign is not None and foreign.in_body else ""

    @property
    def last_content_delta(self) -> str | None:
        """The content the last :meth:`process` added to the current message, or None."""
        return self._delta

    # -- the model's turns --------------------------------------------------------------------

    def _marker(self, token: int) -> int | None:
        table = self._table
        entry = table[token] if 0 <= token < len(table) else None
        return entry if entry.__class__ is int else None

    def _new_turn(self) -> Turn:
        turn = self._turn
        if turn is not None and not turn.closed:
            self._absorb(turn.close())
        turn = self._turn = Turn(self._request, self._vocab, id_factory=self._id_factory,
                                 observer=self._observer, events=True)
        return turn

    def _feed(self, ids: list[int]) -> None:
        turn = self._turn
        if turn is None or turn.closed:  # the model's next generation
            turn = self._new_turn()
        self._absorb(turn.feed_ids(ids))

    def _absorb(self, step: Step) -> None:
        for event in step.events:
            if isinstance(event, _TEXT):
                if self._begin is not None:
                    text = event.text
                    self._parts.append(text)
                    self._delta = text if self._delta is None else self._delta + text
            elif isinstance(event, MessageBegin):
                self._begin = event
                self._parts = []
                self._first_header = False
            elif isinstance(event, MessageEnd):
                begin = self._begin
                if begin is not None:
                    message = harmony_message(begin, "".join(self._parts))
                    if message is not None:
                        self._messages.append(message)
                self._begin = None
                self._parts = []

    def _decide(self, marker: int | None) -> None:
        """A ``<|start|>`` was followed by a header up to its first marker: whose is it?"""
        pending = self._pending
        self._pending = []
        upto = len(pending) - 1 if marker is not None else len(pending)
        words = _decoded(self._pieces(pending[1:upto])).split()
        role = words[0] if words else ""
        if role == hm.ASSISTANT or role in hm.KNOWN_CHANNELS or role == "" or (
                marker == hm.START):
            if self._after_call and self._turn is not None and not self._turn.closed:
                self._feed(pending)  # the model went on after its call: the same turn
            else:
                self._new_turn()
                self._feed(pending[1:])
            self._mode = _TURN
            self._after_call = False
        else:
            self._foreign = _Foreign(self._oh, role, words[1:])
            self._mode = _FOREIGN
            if marker is not None:
                self._foreign_token(pending[-1], marker, header_only=True)

    def _pieces(self, ids: list[int]) -> list[bytes]:
        """The bytes of ordinary tokens (markers and unknown ids carry none)."""
        table = self._table
        out: list[bytes] = []
        for token in ids:
            entry = table[token] if 0 <= token < len(table) else None
            if isinstance(entry, str):
                out.append(entry.encode())
            elif isinstance(entry, bytes):
                out.append(entry)
        return out

    # -- a caller's message (a tool's result rendered back) ------------------------------------

    def _foreign_token(self, token: int, marker: int | None, header_only: bool = False) -> None:
        foreign = self._foreign
        assert foreign is not None
        if marker is None:
            pieces = self._pieces([token])
            if foreign.in_body:
                before = foreign.text()
                foreign.body += pieces
                self._delta = foreign.text()[len(before):] or None
            else:
                foreign.section += pieces
        elif not foreign.in_body:
            self._foreign_header_marker(foreign, token, marker)
        elif not header_only:
            self._foreign_body_marker(token, marker)

    def _foreign_header_marker(self, foreign: _Foreign, token: int, marker: int) -> None:
        if marker == hm.MESSAGE:
            foreign.close_section()
            foreign.in_body = True
        elif marker == hm.CHANNEL or marker == hm.CONSTRAIN:
            foreign.close_section()
            foreign.kind = marker
        elif marker == hm.START:  # a header without a body: drop it, start again
            self._foreign = None
            self._pending = [token]
            self._mode = _PENDING
        elif marker in (hm.END, *_STOPS):
            self._foreign = None
            self._mode = _BETWEEN

    def _foreign_body_marker(self, token: int, marker: int) -> None:
        if marker == hm.START:
            self._foreign_done()
            self._pending = [token]
            self._mode = _PENDING
        elif marker == hm.END or marker in _STOPS:
            self._foreign_done()
        # any other marker inside a caller's body is ignored

    def _foreign_done(self) -> None:
        foreign = self._foreign
        self._foreign = None
        self._mode = _BETWEEN
        self._after_call = False
        self._ended_last = True
        if foreign is not None and foreign.in_body:
            self._messages.append(foreign.message())


class _Foreign:
    """A message the caller renders into the stream, read as openai-harmony reads it: the
    author (a role, or a tool's name), ``to=`` recipient, channel and content type, and its
    body up to ``<|end|>``."""

    __slots__ = ("role", "name", "recipient", "channel", "content_type", "kind",
                 "section", "body", "in_body")

    def __init__(self, oh: Any, author: str, rest: list[str]) -> None:
        roles = {r.value: r for r in oh.Role}
        self.role = roles.get(author, oh.Role.TOOL)
        self.name = None if author in roles else author
        self.recipient: str | None = None
        self.channel: str | None = None
        self.content_type: str | None = None
        self.kind = -1  # the section being read: the role section
        self.section: list[bytes] = [" ".join(rest).encode()]
        self.body: list[bytes] = []
        self.in_body = False

    def text(self) -> str:
        """The body so far (a character cut at the end waits for its other bytes)."""
        return b"".join(self.body).decode("utf-8", "ignore")

    def close_section(self) -> None:
        words = _decoded(self.section).split()
        self.section = []
        for i, word in enumerate(words):
            if word.startswith(hm.RECIPIENT):
                self.recipient = word[len(hm.RECIPIENT):] or None
            elif self.kind == hm.CHANNEL and i == 0:
                self.channel = word
            elif self.kind == hm.CONSTRAIN and i == 0:
                self.content_type = hm.constrained(word)
            elif self.content_type is None and word in hm.CONTENT_TYPES:
                self.content_type = word

    def message(self) -> Any:
        return _message(self.role, self.name, _decoded(self.body), self.channel, self.recipient,
                        self.content_type)


def _decoded(pieces: list[bytes]) -> str:
    return b"".join(pieces).decode("utf-8", "replace")
