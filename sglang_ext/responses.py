"""SGLang's Responses API for gpt-oss, parsed by harmony-ext.

For a gpt-oss model SGLang serves ``/v1/responses`` with ``openai_harmony`` itself, never with
the configured parsers: ``create_responses`` builds a ``HarmonyContext`` (non-streamed) or a
``StreamingHarmonyContext``, each of which takes a parser from
``get_streamable_parser_for_assistant()`` and feeds it every output token; the items come from
``parser.messages`` and ``parser.current_*`` (``harmony_utils.parse_output_message`` /
``parse_remaining_state``). openai-harmony's parser raises on the slips gpt-oss makes (a header
without ``<|start|>``, an unknown channel, a forged turn), and the item builders raise on a
channel or recipient they do not know: the request fails, or the stream is cut.

With a ``harmony-ext`` parser selected (tool-call or reasoning parser, either one: this path
builds neither, and always has the request's tools), the contexts get the core's drop-in for
openai-harmony's parser instead (:class:`harmony_plugins.compat.StreamableParser`), built with
the request's tools and the adapter's observer (the counters, the recovery log line). The
contexts are built without the request, so hooks place it while SGLang handles one
(docs/sglang.md, internals section 10):

* AROUND ``OpenAIServingResponses.create_responses``: the request in the task's request
  context (:attr:`~sglang_ext.request_context.RequestContext.responses_request`) while SGLang
  builds its Harmony context (it does so inside this call, before any output);
* AROUND ``context.get_streamable_parser_for_assistant`` (the name the contexts call): the
  drop-in while a request is held there, else openai-harmony's parser as before;
* AROUND ``HarmonyContext.append_output`` and ``StreamingHarmonyContext.append_output``: the
  engine's last output of a generation (its finish reason set) ends the parse
  (``process_eos``), which SGLang never calls. That is where the contract's end-of-stream
  rules apply and the response is counted, before SGLang builds its items; and it is how the
  drop-in tells the model's output from what SGLang feeds back afterwards in its built-in tool
  loop (the tool's result message, the next turn's ``<|start|>assistant``), which it reads as
  openai-harmony does. An aborted generation is not ended (nothing is counted), as on chat;
* AROUND ``ResponsesRequest.to_sampling_params`` (called inside ``create_responses`` for each
  generation): the sampling parameters of the request in the variable are marked for the
  generation guard (:mod:`sglang_ext.guard`), as a chat request is, and a ``text.format``'s
  schema as SGLang's own grammar, which :mod:`sglang_ext.grammar` leaves as it is.

Any other parser choice, and any model SGLang does not serve through Harmony, leaves SGLang as
it is. What the hooks need from SGLang is checked once, at start-up (:func:`problem`).
"""

from __future__ import annotations

import inspect
import logging
import os
import pkgutil
from collections.abc import Callable
from typing import Any

from harmony_plugins import Guard, compat, guarded
from harmony_plugins.adapter_support import metrics

from . import grammar, request_context
from .hook_arguments import argument, positions
from .names import NAME, metrics_enabled, undeclared_calls_passed

logger = logging.getLogger("sglang_ext")

CREATE = "sglang.srt.entrypoints.openai.serving_responses.OpenAIServingResponses.create_responses"
PARSER = "sglang.srt.entrypoints.context.get_streamable_parser_for_assistant"
APPEND = "sglang.srt.entrypoints.context.HarmonyContext.append_output"
STREAM_APPEND = "sglang.srt.entrypoints.context.StreamingHarmonyContext.append_output"
SAMPLING = "sglang.srt.entrypoints.openai.protocol.ResponsesRequest.to_sampling_params"
ABORTED = "abort"

_count = metrics.Counting(logger)
_report = metrics.Counting(logger, count=False)  # without --enable-metrics: the log line only


def active(serving: Any) -> bool:
    """A harmony-ext parser is selected and the server answers Responses through Harmony."""
    return (NAME in (getattr(serving, "tool_call_parser", None),
                     getattr(serving, "reasoning_parser", None))
            and getattr(serving, "use_harmony", False) is True)


def new_parser(request: Any) -> compat.StreamableParser:
    """The drop-in for one response: the request's tools, SGLang's pass-undeclared switch or
    ours, and the adapter's observer, naming the response (the request's ``request_id`` is its
    ``id``)."""
    from openai_harmony import Role
    from sglang.srt.entrypoints.harmony_utils import get_encoding

    return compat.StreamableParser(
        get_encoding(), Role.ASSISTANT, tools=list(getattr(request, "tools", None) or []),
        observer=(_count if metrics_enabled() else _report).for_request(
            getattr(request, "request_id", None)),
        pass_undeclared=undeclared_calls_passed(), generations=True)


# -- the hooks -------------------------------------------------------------------------------


async def bind_request(original: Callable[..., Any], self: Any, *args: Any,
                       **kwargs: Any) -> Any:
    """AROUND ``OpenAIServingResponses.create_responses``."""
    if not active(self):
        return await original(self, *args, **kwargs)
    with request_context.holding(
            responses_request=argument(CREATE, "request", (self, *args), kwargs)):
        return await original(self, *args, **kwargs)


def parser_for_request(original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """AROUND ``get_streamable_parser_for_assistant`` as the contexts call it."""
    request = request_context.current().responses_request
    if request is None:
        return original(*args, **kwargs)
    return new_parser(request)


def guard_generations(original: Callable[..., Any], self: Any, *args: Any,
                      **kwargs: Any) -> Any:
    """AROUND ``ResponsesRequest.to_sampling_params``: each generation of a response
    harmony-ext parses is marked for the generation guard (:mod:`sglang_ext.guard`) where the
    core guards it (:func:`harmony_plugins.guarded`), as a chat request is; its JSON schema,
    if any, stays SGLang's grammar (:func:`sglang_ext.grammar.leave_to_sglang`)."""
    params = original(self, *args, **kwargs)
    if request_context.current().responses_request is self and isinstance(params, dict):
        params = grammar.leave_to_sglang(params)  # a text.format keeps SGLang's grammar
        if guarded(params.get("ignore_eos"), os.environ):
            params["custom_params"] = Guard.marked(params.get("custom_params"))
    return params


def _ends_generation(output: Any) -> bool:
    """Whether ``output`` is the engine's last for a generation (a finish reason is set) and
    the generation was not aborted."""
    if not isinstance(output, dict) or "output_ids" not in output:
        return False  # a tool's result SGLang hands the context, not model output
    meta = output.get("meta_info")
    finish = meta.get("finish_reason") if isinstance(meta, dict) else None
    if finish is None:
        return False
    kind = finish.get("type") if isinstance(finish, dict) else finish
    return kind != ABORTED


def end_whole_generation(original: Callable[..., Any], self: Any, output: Any, *args: Any,
                         **kwargs: Any) -> Any:
    """AROUND ``HarmonyContext.append_output`` (non-streamed): the context copies the
    parser's messages into its own list, so the ones the end of the parse completes are
    copied too."""
    parser = getattr(self, "parser", None)
    if not isinstance(parser, compat.StreamableParser) or not isinstance(output, dict):
        return original(self, output, *args, **kwargs)
    # SGLang copies all the parser's messages on every output of the model: after a built-in
    # tool's turn, the earlier generations' messages again. Only the new ones are kept.
    copied, start = len(parser.messages), len(self._messages)
    result = original(self, output, *args, **kwargs)
    del self._messages[start:start + copied]
    if _ends_generation(output):
        before = len(parser.messages)
        parser.process_eos()
        self._messages.extend(parser.messages[before:])
    return result


def end_streamed_generation(original: Callable[..., Any], self: Any, output: Any, *args: Any,
                            **kwargs: Any) -> Any:
    """AROUND ``StreamingHarmonyContext.append_output`` (its messages are the parser's)."""
    result = original(self, output, *args, **kwargs)
    parser = getattr(self, "parser", None)
    if isinstance(parser, compat.StreamableParser) and _ends_generation(output):
        parser.process_eos()
        # The next generation's ids (SGLang's built-in tool loop) are counted from 0 again:
        # SGLang keeps this count across generations and would skip as many of its ids.
        if isinstance(getattr(self, "num_processed_tokens", None), int):
            self.num_processed_tokens = 0
    return result


def hook_points() -> list[tuple[str, Callable[..., Any], str]]:
    """(target, hook, kind) of every hook this module needs; all or none are installed."""
    return [(CREATE, bind_request, "AROUND"), (PARSER, parser_for_request, "AROUND"),
            (APPEND, end_whole_generation, "AROUND"),
            (STREAM_APPEND, end_streamed_generation, "AROUND"),
            (SAMPLING, guard_generations, "AROUND")]


# -- what the hooks rely on ------------------------------------------------------------------


def _names(func: Any) -> set[str]:
    code = getattr(inspect.unwrap(func), "__code__", None)
    return set(code.co_names) if code is not None else set()


def problem() -> str | None:
    """Why the hooks cannot work on this SGLang, or None (checked once, at start-up)."""
    try:
        create = pkgutil.resolve_name(CREATE)
        context = pkgutil.resolve_name(PARSER.rsplit(".", 1)[0])
        pkgutil.resolve_name(SAMPLING)
    except Exception as e:
        return f"SGLang's Responses serving is not where expected ({type(e).__name__}: {e})"
    for cls in ("HarmonyContext", "StreamingHarmonyContext"):
        klass = getattr(context, cls, None)
        if klass is None or not callable(getattr(klass, "append_output", None)):
            return f"sglang.srt.entrypoints.context.{cls}.append_output does not exist"
        if "get_streamable_parser_for_assistant" not in _names(klass.__init__):
            return (f"{cls}.__init__ no longer takes its parser from "
                    "get_streamable_parser_for_assistant()")
    if not callable(getattr(context, "get_streamable_parser_for_assistant", None)):
        return "sglang.srt.entrypoints.context.get_streamable_parser_for_assistant is gone"
    if not {"HarmonyContext", "StreamingHarmonyContext"} <= _names(create):
        return "create_responses no longer builds SGLang's Harmony contexts itself"
    if "request" not in positions(CREATE):
        return "create_responses takes no request"
    if "_messages" not in _names(context.HarmonyContext.append_output):
        return "HarmonyContext.append_output no longer keeps its messages in _messages"
    try:
        import openai_harmony  # noqa: F401
    except ImportError as e:
        return f"openai_harmony is not importable ({e})"
    return None
