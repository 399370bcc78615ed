"""The public facade: :class:`StreamParser`, :func:`parse_ids` and :func:`parse_text`."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .events import Event
from .frontends import IdsInput, TextInput
from .header import tool_names
from .machine import Machine
from .openai import ChatResult
from .vocab import Vocab

FINISHES = ("stop", "length")


class StreamParser:
    """Incremental parser for one model turn of gpt-oss output.

    Feed it each delta as it arrives, either as token ids (:meth:`feed_ids`) or as text with
    the special tokens spelled literally (:meth:`feed_text`), never both; call :meth:`close`
    once at the end. Each call returns the events that the new input completed.

    ``tools`` is the request's OpenAI ``tools`` array, or a list of function names: only
    calls to these are surfaced. ``encoding`` is the :class:`Vocab` of the token ids
    (default: o200k_harmony, loaded offline once per process). ``pass_undeclared`` surfaces
    calls to ``functions.*`` names the request did not declare.
    """

    __slots__ = ("_machine", "_ids", "_text", "_encoding", "_closed")

    def __init__(
        self,
        tools: Iterable[Any] | None = None,
        encoding: Vocab | None = None,
        *,
        id_factory: Callable[[], str] | None = None,
        pass_undeclared: bool = False,
    ) -> None:
        self._machine = Machine(tool_names(tools), id_factory, pass_undeclared)
        self._encoding = encoding
        self._ids: IdsInput | None = None
        self._text: TextInput | None = None
        self._closed = False

    def feed_ids(self, ids: Iterable[int]) -> list[Event]:
        """Parse the token ids of one delta (any number of tokens)."""
        ids_input = self._ids
        if ids_input is None:
            ids_input = self._ids = self._start_ids()
        out: list[Event] = []
        ids_input.feed(ids, self._machine, out)
        return out

    def feed_text(self, text: str) -> list[Event]:
        """Parse the text of one delta (any number of characters)."""
        text_input = self._text
        if text_input is None:
            text_input = self._text = self._start_text()
        out: list[Event] = []
        if text:
            text_input.feed(text, self._machine, out)
        return out

    def close(self, finish: str = "stop") -> list[Event]:
        """End the stream. ``finish`` is ``"length"`` when the engine hit its token limit.

        Flushes held-back input and returns the last events, ending with ``EndOfTurn``.
        """
        if finish not in FINISHES:
            raise ValueError(f"finish must be one of {FINISHES}, not {finish!r}")
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
    def calls(self) -> int:
        """How many tool calls have begun so far."""
        return self._machine.calls

    @property
    def recoveries(self) -> dict[str, int]:
        """Recovery rules applied so far, with how often (see ``harmony_plugins.rules``)."""
        return dict(self._machine.recoveries)

    @property
    def reasoning_tokens(self) -> int:
        """How many of the token ids fed so far were reasoning text (for usage figures)."""
        return self._ids.reasoning_tokens if self._ids is not None else 0

    def _start_ids(self) -> IdsInput:
        self._check_open(self._text, "feed_ids", "feed_text")
        vocab = self._encoding or Vocab.o200k_harmony()
        return IdsInput(vocab.table)

    def _start_text(self) -> TextInput:
        self._check_open(self._ids, "feed_text", "feed_ids")
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
    """Parse a whole output given as token ids; returns what ``harmony-ext parse`` prints."""
    parser = StreamParser(tools, encoding)
    result = ChatResult()
    result.add(parser.feed_ids(ids))
    result.add(parser.close(finish))
    return result.message()


def parse_text(
    text: str, tools: Iterable[Any] | None = None, finish: str = "stop"
) -> dict[str, Any]:
    """Parse a whole output given as text with literal markers; see :func:`parse_ids`."""
    parser = StreamParser(tools)
    result = ChatResult()
    result.add(parser.feed_text(text))
    result.add(parser.close(finish))
    return result.message()
