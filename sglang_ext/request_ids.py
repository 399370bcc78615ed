"""Which request a chat parse is for on SGLang: the id its response carries, for the log line.

The per-response log line (:mod:`harmony_plugins.adapter_support.metrics`) names the request,
so that a complaint about one response can be traced to what the parse did to it. SGLang hands
its detectors no id: the reasoning detector gets the chat request (whose ``rid`` is None unless
the client set one), the tool detector not even that. The id SGLang gives the response
(``meta_info["id"]``: the ``rid`` its tokenizer manager assigned, which the response's ``id``,
each stream chunk's and SGLang's own request log carry) is known only to the serving methods
that call the detectors. BEFORE hooks on those methods publish it in the task's request context
(:attr:`~sglang_ext.request_context.RequestContext.response_id`): ``_process_reasoning_stream``
and ``_process_tool_call_stream`` (each streamed step: the choice's ``content``), and
``_build_chat_response`` (the whole reply: the first choice's ``meta_info``, the response's
id). A detector reads it when its turn starts, within the same task. The value is set, never
put back: a BEFORE hook cannot (an AROUND hook could not either, around an async generator),
and a request's task serves that request alone.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import request_context
from .hook_arguments import argument, positions

SERVING_CHAT = "sglang.srt.entrypoints.openai.serving_chat.OpenAIServingChat"
STREAM_TARGETS = (f"{SERVING_CHAT}._process_reasoning_stream",
                  f"{SERVING_CHAT}._process_tool_call_stream")
"""Called per streamed step and choice with the step's ``content`` (its ``meta_info``)."""
WHOLE_TARGET = f"{SERVING_CHAT}._build_chat_response"
"""Called once per non-streamed reply with every choice's result (``ret``)."""

def _note(result: Any) -> None:
    """Publish the id in a result's ``meta_info`` (where it has one, and it is news)."""
    meta = result.get("meta_info") if isinstance(result, dict) else None
    rid = meta.get("id") if isinstance(meta, dict) else None
    if isinstance(rid, str) and request_context.current().response_id != rid:
        request_context.update(response_id=rid)


def note_step(*args: Any, **kwargs: Any) -> None:
    """BEFORE ``_process_reasoning_stream`` / ``_process_tool_call_stream``: the step's id."""
    _note(argument(STREAM_TARGETS[0], "content", args, kwargs))


def note_reply(*args: Any, **kwargs: Any) -> None:
    """BEFORE ``_build_chat_response``: the reply's id (its first choice's)."""
    ret = argument(WHOLE_TARGET, "ret", args, kwargs)
    if isinstance(ret, list) and ret:
        _note(ret[0])


def hook_points() -> list[tuple[str, Callable[..., Any], str]]:
    """(target, hook, kind) of each hook this module installs."""
    return [*((target, note_step, "BEFORE") for target in STREAM_TARGETS),
            (WHOLE_TARGET, note_reply, "BEFORE")]


def problem() -> str | None:
    """Why the hooks cannot name requests on this SGLang, or None."""
    wanted = {STREAM_TARGETS[0]: "content", STREAM_TARGETS[1]: "content", WHOLE_TARGET: "ret"}
    for target, name in wanted.items():
        try:
            names = positions(target)
        except Exception as e:
            return f"{target} not found ({type(e).__name__}: {e})"
        if name not in names:
            return f"{target} takes no {name}"
    return None
