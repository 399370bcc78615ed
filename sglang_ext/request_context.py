"""What the SGLang adapter's hooks know of the request this task serves, in one context.

SGLang hands its detectors and the functions harmony-ext hooks no object of the request's own
to keep harmony-ext's state on, and calls them from different places of its serving code. The
hooks keep that state in one context variable of the asyncio task serving the request (SGLang
serves each HTTP request in a task of its own, and a task it starts inherits a copy), holding
an immutable :class:`RequestContext`: a hook changes a field by setting a new record, for the
rest of the task (:func:`update`) or for the length of a call (:func:`holding`), so that no
value set in one task reaches another. No SGLang import: every hook module imports this.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, NamedTuple


class RequestContext(NamedTuple):
    """One request's state, each field named for what it holds and set by one module."""

    response_id: str | None = None
    """The id SGLang gives the chat response its serving code is building, for the log line
    (:mod:`sglang_ext.request_ids`)."""
    link: Any = None
    """The :class:`~sglang_ext.link.Link` the reasoning detector published last, which the
    next tool-detector call takes from (:mod:`sglang_ext.link`)."""
    content: list[tuple[str, str]] | None = None
    """While SGLang picks a non-streamed reply's content: the (raw text, content) pairs of the
    replies without a call our tool detector parsed (:mod:`sglang_ext.content`)."""
    responses_request: Any = None
    """The Responses request whose Harmony context SGLang is building
    (:mod:`sglang_ext.responses`)."""
    input_items: Any = None
    """While SGLang converts a Responses request's input items: the core's reading of them
    (:mod:`sglang_ext.items`)."""


NOTHING = RequestContext()
"""A task's request context before any hook set a field (immutable, so shared)."""
_CONTEXT: contextvars.ContextVar[RequestContext] = contextvars.ContextVar(
    "harmony_ext_request", default=NOTHING)


def current() -> RequestContext:
    """This task's request context (all fields None where nothing set them)."""
    return _CONTEXT.get()


def update(**fields: Any) -> None:
    """Set ``fields`` for the rest of this task (and the tasks it starts from now on)."""
    _CONTEXT.set(_CONTEXT.get()._replace(**fields))


@contextlib.contextmanager
def holding(**fields: Any) -> Iterator[None]:
    """Set ``fields`` while the ``with`` block runs, then put back what they held."""
    before = _CONTEXT.get()
    _CONTEXT.set(before._replace(**fields))
    try:
        yield
    finally:
        _CONTEXT.set(_CONTEXT.get()._replace(**{name: getattr(before, name) for name in fields}))
