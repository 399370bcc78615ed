"""The events view of a parse: :class:`StreamParser`, :func:`parse_ids` and :func:`parse_text`.

:class:`~harmony_plugins._turn.Turn` is the one facade; these are conveniences over it for a
caller that wants the events themselves (in order, message boundaries included) rather than
one step per feed, or the whole result of a whole output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ._events import Event
from ._openai import ChatResult
from ._turn import FINISHES, Request, Turn, check_finish
from .vocab import Vocab

__all__ = ["FINISHES", "StreamParser", "parse_ids", "parse_text"]


class StreamParser:
    """Incremental parser for one model turn of gpt-oss output, giving events.

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
    :mod:`harmony_plugins.compat`). ``tool_choice`` is the request's; ``recover_text_calls``
    turns a visible message that is wholly a call written as text into that call (see
    :class:`~harmony_plugins.Request`).

    Bad arguments raise at the boundary, before any state changes: TypeError for a
    ``tools`` that is a string or a single dict, a non-string text delta, or a token id that
    is not an int (bools, floats, None); ValueError for a bad ``finish``.
    """

    __slots__ = ("_turn",)

    def __init__(
        self,
        tools: Iterable[Any] | None = None,
        encoding: Vocab | None = None,
        *,
        id_factory: Callable[[], str] | None = None,
        pass_undeclared: bool = False,
        tools_unknown: bool = False,
        any_recipient: bool = False,
        tool_choice: Any = None,
        recover_text_calls: bool = False,
    ) -> None:
        request = Request(tools, tool_choice, pass_undeclared, any_recipient=any_recipient,
                          recover_text_calls=recover_text_calls)
        if tools_unknown:
            request = Request(None, tool_choice, pass_undeclared, tools_known=False,
                              any_recipient=any_recipient,
                              recover_text_calls=recover_text_calls)
        self._turn = Turn(request, encoding, id_factory=id_factory, events=True)
        self._turn.start()  # reads the tools now: a bad shape raises here

    def feed_ids(self, ids: Iterable[int]) -> list[Event]:
        """Parse the token ids of one delta (any number of tokens).

        ``ids`` is a list of ints (the fast path; other iterables of integers are accepted).
        A non-int id raises TypeError before any id of the delta is consumed. Ids outside
        the vocabulary are skipped and counted (``unknown_token``).
        """
        return list(self._turn.feed_ids(ids).events)

    def feed_text(self, text: str) -> list[Event]:
        """Parse the text of one delta (any number of characters); TypeError if not a str."""
        return list(self._turn.feed_text(text).events)

    def close(self, finish: str = "stop") -> list[Event]:
        """End the stream. ``finish`` is ``"length"`` when the engine hit its token limit,
        ``"unknown"`` when the caller cannot tell (see :data:`FINISHES`).

        Flushes held-back input and returns the last events, ending with ``EndOfTurn``.
        """
        check_finish(finish)
        if self._turn.closed:
            raise RuntimeError("StreamParser.close() called twice")
        return list(self._turn.close(finish).events)

    @property
    def fed_ids(self) -> bool:
        """Whether this parser was fed token ids (not text)."""
        return self._turn.fed_ids

    @property
    def calls(self) -> int:
        """How many tool calls have begun so far."""
        return self._turn.calls

    @property
    def recoveries(self) -> dict[str, int]:
        """Recovery rules applied so far, with how often (see ``harmony_plugins.rules``)."""
        return dict(self._turn.recoveries)

    @property
    def call_outcomes(self) -> dict[str, int]:
        """Outcomes of the argument checks of the calls ended so far (``rules.OUTCOMES``)."""
        return dict(self._turn.outcomes)

    @property
    def maybe_calls(self) -> int:
        """With ``tools_unknown``: the messages so far that may be calls to a function."""
        return self._turn.maybe_calls

    @property
    def leaks_suspected(self) -> int:
        """How many ``LeakSuspected`` events have been emitted so far."""
        return len(self._turn.leaks)

    @property
    def reasoning_tokens(self) -> int:
        """How many of the token ids fed so far were reasoning text (for usage figures)."""
        return self._turn.reasoning_tokens


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
    turn = Turn(Request(tools), encoding)
    result = ChatResult()
    result.add(turn.feed_ids(ids, finish))
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
    turn = Turn(Request(tools))
    result = ChatResult()
    result.add(turn.feed_text(text, finish))
    return result.message()
