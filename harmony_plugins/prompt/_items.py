"""The Responses API's items as the model wrote them (contract section 8, v4).

An agent client (the OpenAI Agents SDK, by default) sends every output item of a response
back as an input item of the next request, or names the response by ``previous_response_id``.
Either way the engine renders those items into the next prompt, and the model must read back
the turn it wrote: a preamble on ``commentary``, not on ``final``; its chain of thought while
the tool turn is in progress, not after an answer closed it; each call with its arguments as
written, and each tool result from the function it answers. The Responses API has the field
that says which messages were preambles: an assistant ``message`` item's ``phase``
(``commentary`` for a preamble, ``final_answer`` for the answer), which clients are told to
keep and resend.

This module holds both directions of that rule, for both engines:

- :func:`phase_of`: the ``phase`` of the message item a Harmony message becomes (out);
- :func:`item_messages`: input items as the Harmony messages the model wrote (in), one entry
  per item, in the items' order (a response's items are its Harmony messages, in the order
  the model wrote them, one message per item; the order is kept as sent);
- :func:`round_trip_plan`: which of those an engine takes from the core (the items that
  :func:`round_trips`: the model wrote them or a tool answered), the same on both engines.

The leading instructions (``instructions``, a first system or developer item), the system
message and the tools are the engine's preamble, not items: the caller renders them. Text
comes from the items as dicts or as the engines' pydantic objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .. import harmony as hm
from .._tools import NAMESPACE_SEPARATOR
from .._tools import field as _get
from ._chat import arguments_text
from ._model import Message, NotRenderable
from ._order import FINAL, PREAMBLE, drop_analysis, part_of

PHASE_COMMENTARY = hm.COMMENTARY
"""A preamble's ``phase``: the Responses API names it after the channel it is written on."""
PHASE_FINAL_ANSWER = "final_answer"
"""The answer's ``phase`` (a message on ``final``)."""
PHASES = {PHASE_COMMENTARY: hm.COMMENTARY, PHASE_FINAL_ANSWER: hm.FINAL}
"""The channel each ``phase`` renders on."""

MESSAGE, REASONING = "message", "reasoning"
FUNCTION_CALL, FUNCTION_CALL_OUTPUT = "function_call", "function_call_output"
TEXT_PARTS = frozenset({"output_text", "input_text", "text"})
"""Content part types whose ``text`` is a message's text."""
REASONING_PARTS = frozenset({"reasoning_text", "text"})
"""Reasoning item content part types: the analysis the model wrote (a ``summary`` is not)."""
ROUND_TRIPPED = frozenset({REASONING, FUNCTION_CALL, FUNCTION_CALL_OUTPUT})
"""Input item types the model wrote or a tool answered (assistant ``message`` items too):
the engine renders the core's message for these and its own for the rest."""


def phase_of(channel: str | None, recipient: str | None = None) -> str | None:
    """The ``phase`` of the message item a Harmony message becomes: ``commentary`` for a
    preamble (a message on ``commentary`` to no one), ``final_answer`` for the answer (on
    ``final``); None for anything that is not a message item (analysis, a call)."""
    part = part_of(channel, recipient)
    if part == FINAL:
        return PHASE_FINAL_ANSWER
    return PHASE_COMMENTARY if part == PREAMBLE and channel == hm.COMMENTARY else None


def item_messages(items: Sequence[Any], previous: Iterable[Any] = ()) -> list[Message | None]:
    """Responses input items as the Harmony messages the model wrote, one entry per item.

    ``items``: a request's ``input`` list (dicts or the engines' objects); ``previous``: the
    items of the response named by ``previous_response_id`` (only its ``function_call`` items
    are read, to name the function a ``function_call_output`` answers). An entry is None where
    the item renders nothing: a reasoning item with no text, or one that a later ``final``
    answer closed. The entries that are not None, in order, are the history to render.

    - a ``message`` item of the user is the user's message; of the system or developer, a
      developer message where it stands (as on chat completions);
    - an assistant ``message`` item is on ``commentary`` when its ``phase`` says so or, with
      no ``phase``, when a ``function_call`` of the same turn follows it (before the next item
      that is not the assistant's); else on ``final``;
    - a ``reasoning`` item is the analysis (its ``content`` text, ``summary`` aside), carried
      while a tool turn is in progress and dropped once a ``final`` answer came after it;
    - a ``function_call`` item is a call to ``functions.NAME`` with its arguments verbatim;
    - a ``function_call_output`` item is the result from ``functions.NAME`` to the
      assistant on ``commentary``, NAME found from its ``call_id``.

    Raises :class:`NotRenderable` for an item a Harmony prompt cannot hold (another item
    type, a non-text content part, an unknown ``phase``, a ``call_id`` no call names).
    """
    items = list(items)
    names = _call_names([*previous, *items])
    out = [_message(item, names, calls_follow=_call_follows(items, i))
           for i, item in enumerate(items)]
    kept = {id(m) for m in drop_analysis([m for m in out if m is not None])}
    return [m if m is not None and id(m) in kept else None for m in out]


def round_trips(item: Any) -> bool:
    """Whether the model wrote an input item or a tool answered it: user, system and developer
    items say nothing about how the model writes, so they stay the engine's."""
    kind = _get(item, "type")
    if kind in ROUND_TRIPPED:
        return True
    return kind in (None, MESSAGE) and _get(item, "role") == hm.ASSISTANT


def round_trip_plan(items: Any, previous: Iterable[Any] | None = ()
                    ) -> dict[int, Message | None] | None:
    """The core's message for each input item that :func:`round_trips`, by the item's index
    in ``items`` (None: the item renders nothing); the engine converts the other items itself.

    None when ``items`` is not a non-empty list (a string ``input`` is the engine's user
    message). ``previous`` as for :func:`item_messages`. Raises :class:`NotRenderable` where
    the core cannot read the items: the engine then converts them all, since a message's
    channel depends on the items after it.
    """
    if not isinstance(items, list) or not items:
        return None
    messages = item_messages(items, previous or ())
    return {i: message for i, (item, message) in enumerate(zip(items, messages, strict=True))
            if round_trips(item)}


def _kind(item: Any) -> str | None:
    kind = _get(item, "type")
    return MESSAGE if kind is None and _get(item, "role") is not None else kind


def _is_assistants(item: Any) -> bool:
    """Whether the assistant wrote this item (its turn goes on past it)."""
    kind = _kind(item)
    if kind == MESSAGE:
        return _get(item, "role") == hm.ASSISTANT
    return kind in (REASONING, FUNCTION_CALL)


def _call_follows(items: Sequence[Any], i: int) -> bool:
    """Whether a ``function_call`` follows item ``i`` in the same assistant turn."""
    for item in items[i + 1:]:
        if not _is_assistants(item):
            return False
        if _kind(item) == FUNCTION_CALL:
            return True
    return False


def _call_names(items: Iterable[Any]) -> dict[str, str]:
    return {_get(item, "call_id"): _function_name(item) for item in items
            if _kind(item) == FUNCTION_CALL and _get(item, "call_id")}


def _function_name(item: Any) -> str:
    """A call item's function, flat: a Responses ``namespace`` tool's ``space__name``."""
    name = _get(item, "name")
    if not isinstance(name, str) or not name:
        raise NotRenderable("a function_call item without a name")
    space = _get(item, "namespace")
    return f"{space}{NAMESPACE_SEPARATOR}{name}" if space else name


def _message(item: Any, names: Mapping[str, str], *, calls_follow: bool) -> Message | None:
    kind = _kind(item)
    if kind == MESSAGE:
        role = _get(item, "role")
        text = _text(_get(item, "content"), TEXT_PARTS, f"a {role} message")
        if role == hm.USER:
            return Message(hm.USER, text)
        if role in (hm.SYSTEM, hm.DEVELOPER):
            return Message(hm.DEVELOPER, text)
        if role != hm.ASSISTANT:
            raise NotRenderable(f"a message item with role {role!r}", kind="role")
        return Message(hm.ASSISTANT, text, channel=_channel(_get(item, "phase"), calls_follow))
    if kind == REASONING:
        text = _text(_get(item, "content"), REASONING_PARTS, "a reasoning item")
        return Message(hm.ASSISTANT, text, channel=hm.ANALYSIS) if text else None
    if kind == FUNCTION_CALL:
        return Message(hm.ASSISTANT, arguments_text(_get(item, "arguments")),
                       channel=hm.COMMENTARY,
                       recipient=hm.function_recipient(_function_name(item)),
                       content_type=hm.JSON)
    if kind == FUNCTION_CALL_OUTPUT:
        name = names.get(_get(item, "call_id") or "")
        if not name:
            raise NotRenderable("a function_call_output whose call_id names no function_call "
                                "item", kind="call_id")
        return Message(hm.TOOL, _text(_get(item, "output"), TEXT_PARTS, "a function output"),
                       author=hm.function_recipient(name), channel=hm.COMMENTARY,
                       recipient=hm.ASSISTANT)
    raise NotRenderable(f"an input item of type {kind!r}", kind="item type")


def _channel(phase: Any, calls_follow: bool) -> str:
    phase = getattr(phase, "value", phase)
    if phase is None:
        return hm.COMMENTARY if calls_follow else hm.FINAL
    if phase not in PHASES:
        raise NotRenderable(f"a message item with phase {phase!r}", kind="phase")
    return PHASES[phase]


def _text(content: Any, kinds: frozenset[str], what: str) -> str:
    """Content as text: a string, or its text parts joined (as written, nothing between)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        kind = _get(part, "type")
        if kind not in kinds:
            raise NotRenderable(f"{what} has a {kind!r} content part",
                                kind=f"{kind!r} content part")
        texts.append(_get(part, "text") or "")
    return "".join(texts)
