"""The Responses API's items on vLLM: what the model wrote is what it reads back (contract 8, v4).

An agent client sends a response's output items back on the next request (or names it by
``previous_response_id``). vLLM's items carry no ``phase``, and vLLM renders every assistant
``message`` item sent back on ``final`` (``response_input_to_harmony``), so a preamble the
model wrote on ``commentary`` comes back as an answer, and the analysis before it is dropped
as if the turn were answered. With a ``harmony-ext`` parser selected, two hooks fix that:

- **out**: every assistant ``message`` item gets its ``phase`` (``commentary`` for a preamble,
  ``final_answer`` for the answer; :func:`harmony_plugins.phase_of` of the Harmony message our
  parser completed), in the whole response (``harmony_to_response_output``, which also builds
  ``response.completed``) and in the stream's ``output_item.added`` / ``output_item.done``
  (``emit_content_delta_events``, ``emit_previous_item_done_events``). vLLM's own functions
  build the items; the hooks only set the field, on the names vLLM's serving module calls.
- **in**: the input items of a request are read by the core
  (:func:`harmony_plugins.round_trip_plan`): ``OnlineRenderer._render_responses_with_harmony``
  hands the whole list to the core once (a message's channel depends on the items after it),
  and vLLM's per-item conversion (``response_input_to_harmony``, called by that method) returns
  the core's message for each item the model wrote or a tool answered (assistant messages,
  reasoning, calls, call outputs), translated to openai_harmony's ``Message``
  (:func:`harmony_plugins.adapter_support.messages.prompt_message`, which SGLang's adapter
  uses too). The instructions, system and developer messages and user items stay vLLM's, as
  does the rendering.

- **which response**: vLLM hands its Responses parsers no request, so the per-response log line
  (:mod:`harmony_plugins.adapter_support.metrics`) could not name it; the parser vLLM's
  ``OpenAIServingResponses._make_response_parser`` makes for a request is given the request's
  ``request_id``, the response's ``id``.

With ``previous_response_id`` vLLM renders the stored Harmony messages of the previous
response, which our parser completed with the channel each counts as (a preamble on
``commentary``); the core names the outputs sent with it from that response's calls. Where the
core cannot read a request's items (an item type it does not know, a ``call_id`` no call names)
vLLM converts them itself (said once per reason). Installed with the other hooks
(:func:`vllm_ext.plugin.register`), active only in a process where a ``harmony-ext`` parser
was composed.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from harmony_plugins import NotRenderable, harmony, phase_of, round_trip_plan
from harmony_plugins.adapter_support import hooks
from harmony_plugins.adapter_support.messages import prompt_message
from harmony_plugins.adapter_support.once import Once

logger = logging.getLogger("vllm.harmony_ext")

SERVING = "vllm.entrypoints.openai.responses.serving"
RENDERER = "vllm.renderers.online_renderer"
RENDER_METHOD = "_render_responses_with_harmony"
CONVERT = "response_input_to_harmony"
RESPONSES = "OpenAIServingResponses"
MAKE_PARSER = "_make_response_parser"
OUTPUT_HOOKS = {  # the serving module's name -> the parameter holding the Harmony message
    "harmony_to_response_output": "message",
    "emit_content_delta_events": "segment",
    "emit_previous_item_done_events": "previous_item",
}
WRAPS = (*(f"{SERVING}.{name}" for name in OUTPUT_HOOKS),
         f"{RENDERER}.OnlineRenderer.{RENDER_METHOD}", f"{RENDERER}.{CONVERT}",
         f"{SERVING}.{RESPONSES}.{MAKE_PARSER}")
"""The engine functions this module wraps in place."""
OFF = ("Responses API items are vLLM's own (message items carry no phase; assistant messages "
       "sent back are rendered as answers; the log line names no response)")
"""What is lost where :func:`check` finds something missing."""
_once = Once(logger)
_active = False
_plan: contextvars.ContextVar[Mapping[int, Any] | None] = contextvars.ContextVar(
    "harmony_ext_items", default=None)
"""While vLLM converts one request's input items: the core's message per item, by id."""


def activate() -> None:
    """Called when this process composes a ``harmony-ext`` parser (vLLM's API server)."""
    global _active
    _active = True


def check() -> str | None:
    """What is missing from this vLLM for the items hooks, or None."""
    try:
        serving = importlib.import_module(SERVING)
        renderer = importlib.import_module(RENDERER)
        from openai.types.responses import ResponseOutputMessage
    except ImportError as e:
        return f"cannot import vLLM's Responses serving ({e})"
    for name, first in OUTPUT_HOOKS.items():
        problem = _first_parameter(serving, name, first)
        if problem:
            return problem
    if "phase" not in ResponseOutputMessage.model_fields:
        return "openai's ResponseOutputMessage has no phase field (openai too old)"
    owner = getattr(renderer, "OnlineRenderer", None)
    if not callable(getattr(owner, RENDER_METHOD, None)):
        return f"{RENDERER}.OnlineRenderer.{RENDER_METHOD} does not exist"
    if "request" not in inspect.signature(getattr(owner, RENDER_METHOD)).parameters:
        return f"{RENDERER}.OnlineRenderer.{RENDER_METHOD} takes no request"
    make = getattr(getattr(serving, RESPONSES, None), MAKE_PARSER, None)
    if not callable(make) or list(inspect.signature(make).parameters)[1:2] != ["request"]:
        return f"{SERVING}.{RESPONSES}.{MAKE_PARSER} does not take request first"
    return _first_parameter(renderer, CONVERT, "response_msg")


def _first_parameter(module: Any, name: str, first: str) -> str | None:
    func = getattr(module, name, None)
    if not callable(func):
        return f"{module.__name__}.{name} does not exist"
    params = list(inspect.signature(func).parameters)
    if not params or params[0] != first:
        return f"{module.__name__}.{name} does not take {first} first"
    return None


def install() -> None:
    """Wrap vLLM's item building and its input conversion, once each."""
    serving = importlib.import_module(SERVING)
    for name in OUTPUT_HOOKS:
        hooks.wrap_once(serving, name, _phase_wrapper)
    renderer = importlib.import_module(RENDERER)
    hooks.wrap_once(renderer.OnlineRenderer, RENDER_METHOD, _render_wrapper)
    hooks.wrap_once(renderer, CONVERT, _convert_wrapper)
    hooks.wrap_once(getattr(serving, RESPONSES), MAKE_PARSER, _parser_wrapper)


# -- out: the phase of message items -------------------------------------------------------


def _phase_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def with_phase(source: Any, *args: Any, **kwargs: Any) -> Any:
        produced = original(source, *args, **kwargs)
        if _active:
            phase = phase_of(getattr(source, "channel", None), getattr(source, "recipient", None))
            for thing in produced:
                set_phase(getattr(thing, "item", thing), phase)
        return produced

    return with_phase


def set_phase(item: Any, phase: str | None) -> None:
    """Give an assistant ``message`` item (a ``ResponseOutputMessage``) its phase."""
    if phase is not None and getattr(item, "type", None) == "message" and getattr(
            item, "role", None) == harmony.ASSISTANT:
        item.phase = phase


# -- in: input items as the model wrote them -----------------------------------------------


def _render_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def render_responses_with_harmony(self: Any, request: Any, *args: Any,
                                      **kwargs: Any) -> Any:
        plan = _read(request, kwargs.get("previous_response_outputs")) if _active else None
        if plan is None:
            return original(self, request, *args, **kwargs)
        token = _plan.set(plan)
        try:
            return original(self, request, *args, **kwargs)
        finally:
            _plan.reset(token)

    return render_responses_with_harmony


def _read(request: Any, previous: Any) -> dict[int, Any] | None:
    """The core's Harmony message (or None: render nothing) for each input item it renders,
    by the item's id; None where vLLM converts the items itself."""
    items = getattr(request, "input", None)
    try:
        plan = round_trip_plan(items, previous)
    except NotRenderable as e:
        _once(f"fallback:{e.kind}", logging.INFO, "harmony-ext: %s; the input items of such "
              "Responses requests are converted by vLLM, not harmony-ext", e)
        return None
    if plan is None:
        return None
    return {id(items[i]): None if message is None else prompt_message(message)
            for i, message in plan.items()}


def _convert_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def response_input_to_harmony(response_msg: Any, *args: Any, **kwargs: Any) -> Any:
        plan = _plan.get()
        if plan is not None and id(response_msg) in plan:
            return plan[id(response_msg)]
        return original(response_msg, *args, **kwargs)

    return response_input_to_harmony


# -- which response: the id for the log line ----------------------------------------------


def _parser_wrapper(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def make_response_parser(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        parser = original(self, request, *args, **kwargs)
        bind = getattr(parser, "bind_response_id", None)  # ours: a harmony-ext parser
        request_id = getattr(request, "request_id", None)
        if bind is not None and isinstance(request_id, str):
            bind(request_id)
        return parser

    return make_response_parser
