"""SGLang's Responses API: input items read back as the model wrote them (contract 8, v4).

An agent client sends a response's output items back on the next request (the OpenAI Agents
SDK's default), or names the response by ``previous_response_id``, with the tool's
``function_call_output``. For a gpt-oss model SGLang turns each input item into an
openai_harmony ``Message`` (``harmony_utils.parse_response_input``, called item by item by
``OpenAIServingResponses._construct_input_messages_with_harmony``) and renders them with
openai_harmony. SGLang's conversion keeps a message item's ``phase``, but renders a tool's
result with no channel and no recipient (``<|start|>functions.NAME<|message|>``, not the
contract's ``functions.NAME`` to ``assistant`` on ``commentary``), an assistant message without
``phase`` on no channel at all, and a reasoning item's ``summary`` rather than what the model
wrote (an empty analysis message for a reasoning item with no text).

With a ``harmony-ext`` parser selected (the test :func:`sglang_ext.responses.active` makes),
two hooks hand that conversion to the core (:func:`harmony_plugins.round_trip_plan`):

* AROUND ``_construct_input_messages_with_harmony``: the request's input items are read by the
  core once (a message's channel depends on the items after it; a call's name is found from
  the previous response's items too), and entries the core renders as nothing (a reasoning
  item with no text, or one a later final answer closed) are left out of the returned list;
* AROUND ``parse_response_input`` (the name that method calls): for each item the model wrote
  or a tool answered (assistant messages, reasoning, calls, call outputs), in the order SGLang
  converts them, the core's message as openai_harmony's
  (:func:`harmony_plugins.adapter_support.messages.prompt_message`); user, system and
  developer items stay SGLang's, as do the system and developer messages and the rendering.

With ``previous_response_id`` SGLang renders the Harmony messages it stored for that response:
its input messages (converted as above) and the output messages of the parse, which are
harmony-ext's drop-in parser's (:mod:`sglang_ext.responses`) on the channel each counts as, a
preamble on ``commentary``. Where the core cannot read a request's items (an item type it does
not know, such as SGLang's ``custom_tool_call``; a ``call_id`` no call names) SGLang converts
them all itself, said once per reason. What the hooks need is checked at start-up
(:func:`problem`): both or neither.
"""

from __future__ import annotations

import inspect
import logging
import pkgutil
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from harmony_plugins import NotRenderable, round_trip_plan
from harmony_plugins.adapter_support.messages import prompt_message
from harmony_plugins.adapter_support.once import Once

from . import request_context
from .responses import active

logger = logging.getLogger("sglang_ext")

SERVING = "sglang.srt.entrypoints.openai.serving_responses"
CONSTRUCT = f"{SERVING}.OpenAIServingResponses._construct_input_messages_with_harmony"
CONVERT = f"{SERVING}.parse_response_input"

_once = Once(logger)
_SKIP = object()  # an item the core renders as nothing: taken out of SGLang's list


class _Plan:
    """One request's items, the core's message for those it renders, by index (None:
    nothing), and the index of the item SGLang converts next."""

    __slots__ = ("items", "messages", "next")

    def __init__(self, items: Sequence[Any], messages: Mapping[int, Any]) -> None:
        self.items, self.messages, self.next = items, messages, 0


def _read(request: Any, prev_response: Any) -> _Plan | None:
    """The core's reading of a request's input items, or None where SGLang converts them."""
    items = getattr(request, "input", None)
    previous = getattr(prev_response, "output", None) if prev_response else None
    try:
        plan = round_trip_plan(items, previous)
    except NotRenderable as e:
        _once(f"items fallback:{e.kind}", logging.INFO, "harmony-ext: %s; the input items of "
              "such Responses requests are converted by SGLang, not harmony-ext", e)
        return None
    if plan is None:
        return None  # a string input: SGLang's user message
    return _Plan(items, {i: None if m is None else prompt_message(m)
                         for i, m in plan.items()})


# -- the hooks -------------------------------------------------------------------------------


def read_items(original: Callable[..., Any], self: Any, request: Any, prev_response: Any = None,
               *args: Any, **kwargs: Any) -> Any:
    """AROUND ``OpenAIServingResponses._construct_input_messages_with_harmony``."""
    plan = _read(request, prev_response) if active(self) else None
    if plan is None:
        return original(self, request, prev_response, *args, **kwargs)
    with request_context.holding(input_items=plan):
        messages = original(self, request, prev_response, *args, **kwargs)
    if isinstance(messages, list):
        messages[:] = [m for m in messages if m is not _SKIP]
    return messages


def convert_item(original: Callable[..., Any], response_msg: Any, *args: Any,
                 **kwargs: Any) -> Any:
    """AROUND ``parse_response_input``: the core's message for the item being converted."""
    plan = request_context.current().input_items
    if plan is None or plan.next >= len(plan.items) or plan.items[plan.next] is not response_msg:
        return original(response_msg, *args, **kwargs)
    index = plan.next
    plan.next += 1
    if index not in plan.messages:  # a user, system or developer item: SGLang's
        return original(response_msg, *args, **kwargs)
    message = plan.messages[index]
    return _SKIP if message is None else message


def hook_points() -> list[tuple[str, Callable[..., Any], str]]:
    """(target, hook, kind) of both hooks; both or neither are installed."""
    return [(CONSTRUCT, read_items, "AROUND"), (CONVERT, convert_item, "AROUND")]


# -- what the hooks rely on ------------------------------------------------------------------


def problem() -> str | None:
    """Why the hooks cannot work on this SGLang, or None (checked once, at start-up)."""
    try:
        construct = inspect.unwrap(pkgutil.resolve_name(CONSTRUCT))
        convert = inspect.unwrap(pkgutil.resolve_name(CONVERT))
    except Exception as e:
        return (f"SGLang's Responses input conversion is not where expected "
                f"({type(e).__name__}: {e})")
    params = list(inspect.signature(construct).parameters)
    if params[1:3] != ["request", "prev_response"]:
        return ("_construct_input_messages_with_harmony does not take (request, "
                f"prev_response): {params}")
    code = getattr(construct, "__code__", None)
    if code is None or "parse_response_input" not in code.co_names:
        return ("_construct_input_messages_with_harmony no longer converts items with "
                "parse_response_input")
    first = list(inspect.signature(convert).parameters)[:1]
    if first != ["response_msg"]:
        return f"parse_response_input does not take response_msg first: {first}"
    try:
        import openai_harmony  # noqa: F401
    except ImportError as e:
        return f"openai_harmony is not importable ({e})"
    return None
