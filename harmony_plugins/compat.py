"""A drop-in for openai-harmony's ``StreamableParser`` that follows the contract and never raises.

Why: most gpt-oss code is written against openai-harmony's incremental parser (the format
guide's example, SGLang's Responses API, vLLM's own parser, scripts and RL harnesses), and that
parser raises on the slips gpt-oss makes (a header without ``<|start|>``, an unknown channel, a
forged turn), failing the request. :class:`StreamableParser` has its interface and is a view
over one :class:`~harmony_plugins.Turn` at a time and its message events: ``messages`` holds one
``openai_harmony.Message`` per Harmony message as the core frames it, on the channel the
message counts as (always one openai-harmony and the engines accept), a function call's
recipient ``functions.NAME`` as declared, routing and drops by the contract. The messages are
built by :mod:`harmony_plugins._messages`, which the adapters build theirs with.

Where it differs from openai-harmony, the difference is the contract's: it never raises; a
forged turn (``<|start|>user`` in model output) ends the turn and its messages are not kept;
a dropped message (an undeclared recipient, header junk) is not in ``messages``; and a message
with an empty body is not either (it would show as an empty item in one view of a response and
not in another). Without ``tools=`` every recipient is kept as written, as openai-harmony does.

Tokens a caller feeds back after the model stopped (a tool's result rendered as a message,
``<|start|>functions.x to=assistant ...<|end|>``, then the next turn's ``<|start|>assistant``,
as SGLang's built-in tool loop does) are read as openai-harmony reads them: the tool's message
is kept as written (its header read by the core's header reader), and the assistant's next
turn is a new turn of the model's, parsed by the contract. Which tokens are the caller's: with
``generations=True`` the caller ends each of the model's generations with
:meth:`StreamableParser.process_eos`, so everything before it is the model's (a
``<|start|>functions.x`` the model writes after its ``<|call|>`` is a forged turn, as the
contract says) and only what comes after it can be the caller's; without, what follows a stop
token and begins with another role's ``<|start|>`` is taken for the caller's (the engines stop
the model at its stop tokens). A caller's message can be long (a page a tool fetched): its
body is decoded once, as it comes, so each token costs the same whatever the length.
``openai_harmony`` is imported when the first parser is built, never at import.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable, Iterable
from typing import Any

from . import harmony as hm
from ._events import ContentText, MessageBegin, MessageEnd, ReasoningText, ToolCallArguments
from ._header import ROLE, Header, parse_header, role_forges
from ._messages import from_parts, harmony_message
from ._steps import Step
from ._turn import Observer, Request, Turn
from .vocab import Vocab

_TEXT = (ReasoningText, ContentText, ToolCallArguments)
_STOPS = frozenset({hm.CALL, hm.RETURN, hm.END_OF_TEXT})
# After one of these a header's tokens are counted afresh (``state_data``).
_BOUNDS = _STOPS | {hm.START, hm.END}
# Where the parser is: in a turn of the model's, after a stop (expecting a caller's message or
# the next turn), deciding whose message a <|start|> begins, or in a caller's message.
_TURN, _BETWEEN, _PENDING, _CALLERS = range(4)


class StreamableParser:
    """openai-harmony's ``StreamableParser(encoding, role)``, parsed by the contract.

    ``encoding`` is openai-harmony's gpt-oss encoding (its ids are o200k_harmony's: the token
    table comes from ``vocab``, by default the shipped o200k_harmony); ``role``
    ``Role.ASSISTANT`` (the stream starts in the assistant's header, after the prompt's
    ``<|start|>assistant``) or None (it starts with a ``<|start|>``). ``strict`` is accepted
    for openai-harmony's signature and changes nothing: openai-harmony's strict parser raises
    at the end of a stream whose last header never reached ``<|message|>``, and its lenient
    one keeps such a header's text as a message only in the stream's first header; this
    parser never raises on model output and reads every such header by the contract, so both
    values give the same messages. ``tools``: the request's tools (chat or Responses shapes,
    dicts or objects); only those are calls, by the contract; without them every recipient is
    kept as written. ``observer`` receives each turn's :class:`~harmony_plugins.Summary` (the
    adapters' counters); ``pass_undeclared`` as for :class:`~harmony_plugins.Request`;
    ``generations``: the caller ends each generation with :meth:`process_eos` (see the module
    docstring).
    """

    def __init__(self, encoding: Any = None, role: Any = None, *, strict: bool = True,
                 tools: Iterable[Any] | None = None, vocab: Vocab | None = None,
                 observer: Observer | None = None, pass_undeclared: bool = False,
                 id_factory: Callable[[], str] | None = None,
                 generations: bool = False) -> None:
        import openai_harmony

        self._oh = openai_harmony
        self._generations = generations
        self._request = Request(tools, pass_undeclared=pass_undeclared,
                                any_recipient=tools is None)
        self._vocab = vocab or Vocab.o200k_harmony()
        self._table = self._vocab.table
        self._observer = observer
        self._id_factory = id_factory
        self._turn: Turn | None = None
        self._messages: list[Any] = []
        self._begin: MessageBegin | None = None  # the model's message being read
        self._parts: list[str] = []  # its text so far (see _joined)
        self._tokens: list[int] = []
        self._from = 0  # where in _tokens the header or body being read began
        self._delta: str | None = None
        self._mode = _TURN if role is not None else _BETWEEN
        self._first_header = role is not None  # openai-harmony names the given role there
        self._after_call = False  # the model's last stop was <|call|>, nothing fed since
        self._pending: list[int] = []  # <|start|> and what follows, until whose it is is known
        self._callers: _Callers | None = None  # a caller's message being read
        self._ended_last = False  # the last token ended a message: openai-harmony expects start

    # -- openai-harmony's interface ---------------------------------------------------------

    def process(self, token: int) -> StreamableParser:
        """Take the next token (model output, or a message the caller renders back)."""
        tokens = self._tokens
        tokens.append(token)
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
            self._callers_token(token, marker)
        if marker in _BOUNDS:
            self._from = len(tokens)
        return self

    def process_eos(self) -> StreamableParser:
        """The end of the stream: what is open is closed (a message being read is kept)."""
        self._delta = None
        if self._mode == _PENDING:
            self._decide(None)
        if self._mode == _CALLERS:
            self._callers_done()
        turn = self._turn
        if turn is not None and not turn.closed:
            self._absorb(turn.close())
        self._mode = _BETWEEN
        self._first_header = False
        self._from = len(self._tokens)
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
        if self._begin is not None or self._callers_body() is not None:
            return states.CONTENT
        mode = self._mode
        if mode == _BETWEEN or (mode == _TURN and self._ended_last):
            return states.EXPECT_START
        return states.HEADER

    @property
    def state_data(self) -> dict[str, Any]:
        """openai-harmony's ``state_data``, a dict of the same shape (openai-harmony's is its
        Rust parser's state as JSON, parsed): ``{"state": "ExpectStart"}``; ``{"state":
        "Header", "header_tokens": [...]}``, the header's tokens so far (after its
        ``<|start|>``); or ``{"state": "Content", "header": {"author": {"role": ..., "name":
        ...}, "recipient": ..., "channel": ..., "content_type": ...}, "content_tokens":
        [...]}``, the message's header as the ``current_*`` properties give it (an author's
        ``name`` only when it has one) and its body's tokens so far. The body's tokens are the
        ones fed; openai-harmony's are its decoded body encoded again: the same text."""
        state = self.state
        states = self._oh.StreamState
        if state is states.EXPECT_START:
            return {"state": state.value}
        since = self._tokens[self._from:]
        if state is states.HEADER:
            return {"state": state.value, "header_tokens": since}
        callers = self._callers_body()
        author = {"role": self.current_role.value}
        if callers is not None and callers.name is not None:
            author["name"] = callers.name
        return {"state": state.value,
                "header": {"author": author, "recipient": self.current_recipient,
                           "channel": self.current_channel,
                           "content_type": self.current_content_type},
                "content_tokens": since}

    @property
    def current_role(self) -> Any:
        roles = self._oh.Role
        if self._begin is not None:
            return roles.ASSISTANT
        callers = self._callers_body()
        if callers is not None:
            return callers.role
        return roles.ASSISTANT if self._first_header and self._mode == _TURN else None

    @property
    def current_channel(self) -> str | None:
        if self._begin is not None:
            return self._begin.channel
        callers = self._callers_body()
        return callers.header.channel if callers is not None else None

    @property
    def current_recipient(self) -> str | None:
        if self._begin is not None:
            return self._begin.recipient
        callers = self._callers_body()
        return callers.header.written_recipient if callers is not None else None

    @property
    def current_content_type(self) -> str | None:
        if self._begin is not None:
            return self._begin.content_type
        callers = self._callers_body()
        return callers.header.written_content_type if callers is not None else None

    @property
    def current_content(self) -> str:
        """The current message's text so far (a character cut at the end waits for its other
        bytes). Nothing is decoded again: a read joins what came since the last one to the
        text, so it costs at most the new string's length (as any ``str`` answer must)."""
        if self._begin is not None:
            return _joined(self._parts)
        callers = self._callers_body()
        return _joined(callers.parts) if callers is not None else ""

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
                self._from = len(self._tokens)
            elif isinstance(event, MessageEnd):
                begin = self._begin
                if begin is not None:
                    message = harmony_message(begin, _joined(self._parts))
                    if message is not None:
                        self._messages.append(message)
                self._begin = None
                self._parts = []

    def _decide(self, marker: int | None) -> None:
        """A ``<|start|>`` was followed by a header up to its first marker: whose is it? The
        model's when its role section names the assistant or nobody (or another ``<|start|>``
        follows), else the caller's."""
        pending = self._pending
        self._pending = []
        upto = len(pending) - 1 if marker is not None else len(pending)
        role_section = _decoded(self._piece(t) for t in pending[1:upto])
        if marker == hm.START or not role_forges(role_section, role_given=True):
            if self._after_call and self._turn is not None and not self._turn.closed:
                self._feed(pending)  # the model went on after its call: the same turn
            else:
                self._new_turn()
                self._feed(pending[1:])
            self._mode = _TURN
            self._after_call = False
        else:
            self._callers = _Callers(role_section)
            self._mode = _CALLERS
            if marker is not None:
                self._callers_token(pending[-1], marker)

    def _piece(self, token: int) -> bytes:
        """The bytes of an ordinary token (a marker or an unknown id carries none)."""
        table = self._table
        entry = table[token] if 0 <= token < len(table) else None
        if entry.__class__ is str:
            return entry.encode()
        return entry if entry.__class__ is bytes else b""

    # -- a caller's message (a tool's result rendered back) ------------------------------------

    def _callers_body(self) -> _Callers | None:
        """The caller's message whose body is being read, if one is."""
        callers = self._callers
        return callers if callers is not None and callers.header is not None else None

    def _callers_token(self, token: int, marker: int | None) -> None:
        callers = self._callers
        assert callers is not None
        if marker is None:
            if callers.header is None:
                callers.section.append(self._piece(token))
            else:
                self._delta = callers.add(self._piece(token)) or None
        elif callers.header is None:
            self._callers_header_marker(callers, token, marker)
        elif marker == hm.START:
            self._callers_done()
            self._pending = [token]
            self._mode = _PENDING
        elif marker == hm.END or marker in _STOPS:
            self._callers_done()
        # any other marker inside a caller's body is ignored

    def _callers_header_marker(self, callers: _Callers, token: int, marker: int) -> None:
        if marker == hm.MESSAGE:
            callers.begin_body(self._oh.Role)
            self._from = len(self._tokens)
        elif marker == hm.CHANNEL or marker == hm.CONSTRAIN:
            callers.next_section(marker)
        elif marker == hm.START:  # a header without a body: drop it, start again
            self._callers = None
            self._pending = [token]
            self._mode = _PENDING
        elif marker == hm.END or marker in _STOPS:
            self._callers = None
            self._mode = _BETWEEN

    def _callers_done(self) -> None:
        callers = self._callers
        self._callers = None
        self._mode = _BETWEEN
        self._after_call = False
        self._ended_last = True
        if callers is not None and callers.header is not None:
            self._messages.append(callers.message())


class _Callers:
    """A message the caller renders into the stream, read as openai-harmony reads it: its
    header's sections (the role section, then one per ``<|channel|>`` or ``<|constrain|>``)
    read by the core's header reader at ``<|message|>`` (the author: a role, or a tool's name;
    the recipient as written, ``to=assistant`` included; channel; content type), then its body
    up to ``<|end|>``, each byte decoded once, as it comes."""

    __slots__ = ("sections", "kind", "section", "header", "role", "name", "parts", "decoder")

    def __init__(self, role_section: str) -> None:
        self.sections: list[tuple[int, str]] = []  # the sections read
        self.kind = ROLE  # the section being read: its marker, or ROLE
        self.section = [role_section.encode()]  # its bytes so far
        self.header: Header | None = None  # set when the body begins
        self.role: Any = None
        self.name: str | None = None
        self.parts: list[str] = []  # the body's text so far (see _joined)
        self.decoder: Any = None

    def next_section(self, marker: int) -> None:
        self._close_section()
        self.kind = marker

    def begin_body(self, roles: Any) -> None:
        """``<|message|>``: read the header (``roles``: openai-harmony's ``Role``)."""
        self._close_section()
        header = self.header = parse_header(self.sections, role_given=True)
        author = header.role or ""
        known = {role.value: role for role in roles}
        self.role = known.get(author, roles.TOOL)
        self.name = None if author in known else author
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def add(self, piece: bytes) -> str:
        """A body token's bytes; returns the text they complete."""
        text = self.decoder.decode(piece)
        if text:
            self.parts.append(text)
        return text

    def message(self) -> Any:
        """The ``openai_harmony.Message`` (a character cut at the end is replaced)."""
        header = self.header
        assert header is not None
        tail = self.decoder.decode(b"", True)
        if tail:
            self.parts.append(tail)
        return from_parts(self.role, self.name, _joined(self.parts), header.channel,
                          header.written_recipient, header.written_content_type)

    def _close_section(self) -> None:
        self.sections.append((self.kind, _decoded(self.section)))
        self.section = []


def _joined(parts: list[str]) -> str:
    """The pieces of a body as one string, left joined in ``parts``: a later read joins the
    string with what came since, never every piece again."""
    if len(parts) == 1:
        return parts[0]
    text = "".join(parts)
    parts[:] = [text]
    return text


def _decoded(pieces: Iterable[bytes]) -> str:
    return b"".join(pieces).decode("utf-8", "replace")
