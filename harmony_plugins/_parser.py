"""The public facade: :class:`StreamParser`, :func:`parse_ids` and :func:`parse_text`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ._events import Event
from ._frontends import IdsInput, TextInput
from ._machine import Machine
from ._openai import ChatResult
from ._tools import builtin_names, tool_names, tool_schemas
from .vocab import Vocab

FINISHES = ("stop", "length", "unknown")
"""Why an engine stopped: on its own (a stop token, or the output's end), at its token limit
(``max_tokens``), or it did not say (vLLM tells its parser neither, and reports its own
``finish_reason``). Only ``EndOfTurn.finish_reason`` depends on it."""


def check_finish(finish: str) -> None:
    """ValueError unless ``finish`` is one of :data:`FINISHES`."""
    if finish not in FINISHES:
        raise ValueError(f"finish must be one of {FINISHES}, not {finish!r}")


class StreamParser:
    """Incremental parser for one model turn of gpt-oss output.

    Feed it each delta as it arrives, either as token ids (:meth:`feed_ids`) or as text with
    the special tokens spelled literally (:meth:`feed_text`), never both; call :meth:`close`
    once at the end. Each call returns the events that the new input completed.

    ``tools`` is the request's OpenAI ``tools`` array (chat or Responses shape, dicts or
    pydantic objects), or a list of function names: only calls to these are surfaced, and a
    call's arguments are checked against its tool's ``parameters`` schema when it ends (see
    ``ToolCallEnd.outcome``). ``encoding`` is the :class:`Vocab` of the token ids (default:
    o200k_harmony, loaded offline once per process). ``pass_undeclared`` surfaces calls to
    ``functions.*`` names the request did not declare. ``tools_unknown``: the caller does
    not know the request's tools yet, so no message with a recipient is a call (each is
    dropped by the ``tools_unknown`` rule); see :meth:`harmony_plugins._turn.Turn.declare`.
    ``any_recipient``: every recipient no declared tool resolves is a call as written (the
    reading of a parser given no tools, openai-harmony's; for the drop-in,
    :mod:`harmony_plugins.compat`).

    Bad arguments raise at the boundary, before any state changes: TypeError for a
    ``tools`` that is a string or a single dict, a non-string text delta, or a token id that
    is not an int (bools, floats, None); ValueError for a bad ``finish``.
    """

    __slots__ = ("_machine", "_ids", "_text", "_encoding", "_closed")

    def __init__(
        self,
        tools: Iterable[Any] | None = None,
        encoding: Vocab | None = None,
        *,
        id_factory: Callable[[], str] | None = None,
        pass_undeclared: bool = False,
        tools_unknown: bool = False,
        any_recipient: bool = False,
    ) -> None:
        if id_factory is not None and not callable(id_factory):
            raise TypeError("id_factory must be a callable returning a call id")
        self._machine = Machine(tool_names(tools), id_factory, bool(pass_undeclared),
                                tool_schemas(tools), bool(tools_unknown), bool(any_recipient),
                                builtin_names(tools))
        self._encoding = encoding
        self._ids: IdsInput | None = None
        self._text: TextInput | None = None
        self._closed = False

    def feed_ids(self, ids: Iterable[int]) -> list[Event]:
        """Parse the token ids of one delta (any number of tokens).

        ``ids`` is a list of ints (the fast path; other iterables of integers are accepted).
        A non-int id raises TypeError before any id of the delta is consumed. Ids outside
        the vocabulary are skipped and counted (``unknown_token``).
        """
        ids_input = self._ids
        if ids_input is None or self._closed:
            ids_input = self._ids = self._start_ids()
        out: list[Event] = []
        ids_input.feed(ids, self._machine, out)
        return out

    def feed_text(self, text: str) -> list[Event]:
        """Parse the text of one delta (any number of characters); TypeError if not a str."""
        if text.__class__ is not str and not isinstance(text, str):
            raise TypeError(f"feed_text() takes a str, not {type(text).__name__}")
        text_input = self._text
        if text_input is None or self._closed:
            text_input = self._text = self._start_text()
        out: list[Event] = []
        if text:
            text_input.feed(text, self._machine, out)
        return out

    def close(self, finish: str = "stop") -> list[Event]:
        """End the stream. ``finish`` is ``"length"`` when the engine hit its token limit,
        ``"unknown"`` when the caller cannot tell (see :data:`FINISHES`).

        Flushes held-back input and returns the last events, ending with ``EndOfTurn``.
        """
        check_finish(finish)
        if self._closed:
            raise RuntimeError("StreamParser.close() called twice")
        self._closed = True
        out: list[Event] = []
        front = self._ids or self._text
        if front is not None:
            front.flush(self._machine, out)
        self._machine.close(finish, out)
        return out

    @property
    def fed_ids(self) -> bool:
        """Whether this parser was fed token ids (not text)."""
        return self._ids is not None

    @property
    def calls(self) -> int:
        """How many tool calls have begun so far."""
        return self._machine.calls

    @property
    def recoveries(self) -> dict[str, int]:
        """Recovery rules applied so far, with how often (see ``harmony_plugins.rules``)."""
        return dict(self._machine.recoveries)

    @property
    def call_outcomes(self) -> dict[str, int]:
        """Outcomes of the argument checks of the calls ended so far (``rules.OUTCOMES``)."""
        return dict(self._machine.outcomes)

    @property
    def maybe_calls(self) -> int:
        """With ``tools_unknown``: the messages so far that may be calls to a function."""
        return self._machine.maybe_calls

    @property
    def leaks_suspected(self) -> int:
        """How many ``LeakSuspected`` events have been emitted so far."""
        return self._machine.leaks

    @property
    def reasoning_tokens(self) -> int:
        """How many of the token ids fed so far were reasoning text (for usage figures)."""
        return self._ids.reasoning_tokens if self._ids is not None else 0

    def _start_ids(self) -> IdsInput:
        self._check_open(self._text, "feed_ids", "feed_text")
        if self._ids is not None:
            return self._ids
        vocab = self._encoding or Vocab.o200k_harmony()
        return IdsInput(vocab.table)

    def _start_text(self) -> TextInput:
        self._check_open(self._ids, "feed_text", "feed_ids")
        if self._text is not None:
            return self._text
        return TextInput()

    def _check_open(self, other: object, this: str, that: str) -> None:
        if self._closed:
            raise RuntimeError(f"StreamParser.{this}() after close()")
        if other is not None:
            raise RuntimeError(f"StreamParser.{this}() on a parser already fed with {that}()")


def parse_ids(
    ids: Iterable[int],
    tools: Iterable[Any] | None = None,
    finish: str = "stop",
    *,
    encoding: Vocab | None = None,
) -> dict[str, Any]:
    """Parse a whole output given as token ids; returns what ``harmony-ext parse`` prints.

    Raises TypeError for ids that are not ints, ValueError for a bad ``finish`` (see
    :class:`StreamParser`); never for malformed model output.
    """
    check_finish(finish)
    parser = StreamParser(tools, encoding)
    result = ChatResult()
    result.add(parser.feed_ids(ids))
    result.add(parser.close(finish))
    return result.message()


def parse_text(
    text: str, tools: Iterable[Any] | None = None, finish: str = "stop"
) -> dict[str, Any]:
    """Parse a whole output given as text with literal markers; see :func:`parse_ids`.

    Raises TypeError when ``text`` is not a str.
    """
    if not isinstance(text, str):
        raise TypeError(f"parse_text() takes a str, not {type(text).__name__}")
    check_finish(finish)
    parser = StreamParser(tools)
    result = ChatResult()
    result.add(parser.feed_text(text))
    result.add(parser.close(finish))
    return result.message()
