"""The prompt side on vLLM: chat prompts rendered by the core, as on SGLang and in ``render``.

For gpt-oss, vLLM builds a chat request's prompt with its own Harmony renderer
(``OnlineRenderer._make_request_with_harmony``: ``harmony_utils`` messages, rendered by
openai_harmony). That renderer decides contract section 8 its own way: it puts a preamble sent
back before the chain of thought, takes only the first leading system message as instructions,
and so on. With a ``harmony-ext`` parser selected, this hook hands vLLM the token ids of the
core's rendering instead (:func:`harmony_plugins.chat_prompt_ids`), so the prompt is the one
``harmony-ext render --ids`` prints for the same request and the one SGLang sends.

What stays vLLM's: its checks before rendering (``adjust_request``, tool-choice validation),
which tools it passes (``--exclude-tools-when-tool-choice-none`` leaves them out), its
``reasoning_effort`` mapping (vLLM 0.33's ``map_reasoning_effort``), decode-side prompt reuse
(``kv_transfer_params``), and any request the core cannot render (it says why, once per reason,
and vLLM renders that request itself, with the core's order rule on its messages), and vLLM's
own system-instructions switch (``VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS``), under which vLLM
renders.

Installed with the parser hook (:func:`vllm_ext.plugin.register`), active only in a process
where a ``harmony-ext`` parser was selected; with other parsers vLLM's rendering is untouched.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from typing import Any

from harmony_plugins import MissingExtra, NotRenderable, chat_prompt_ids, part_of, written_order
from harmony_plugins.adapter_support import hooks
from harmony_plugins.adapter_support.once import Once

logger = logging.getLogger("vllm.harmony_ext")

RENDERER = "vllm.renderers.online_renderer"
RENDER_METHOD = "_make_request_with_harmony"
TARGET = "vllm.entrypoints.openai.parser.harmony_utils"
FUNCTION = "parse_chat_input_to_harmony_message"
SYSTEM_INSTRUCTIONS_ENV = "VLLM_GPT_OSS_HARMONY_SYSTEM_INSTRUCTIONS"
WRAPS = (f"{RENDERER}.OnlineRenderer.{RENDER_METHOD}", f"{TARGET}.{FUNCTION}")
"""The engine functions this module wraps in place."""
OFF = "chat prompts are rendered by vLLM's own Harmony renderer, not harmony-ext's"
"""What is lost where :func:`check` finds something missing."""
_once = Once(logger)
_active = False


def activate() -> None:
    """Called when this process composes a ``harmony-ext`` parser (vLLM's API server)."""
    global _active
    _active = True


def check() -> str | None:
    """What is missing from this vLLM for the prompt hooks, or None."""
    try:
        renderer = importlib.import_module(RENDERER)
        utils = importlib.import_module(TARGET)
    except ImportError as e:
        return f"cannot import vLLM's Harmony renderer ({e})"
    owner = getattr(renderer, "OnlineRenderer", None)
    if not callable(getattr(owner, RENDER_METHOD, None)):
        return f"{RENDERER}.OnlineRenderer.{RENDER_METHOD} does not exist"
    if not callable(getattr(renderer, "tokens_input", None)):
        return f"{RENDERER}.tokens_input does not exist"
    if not callable(getattr(utils, FUNCTION, None)):
        return f"{TARGET}.{FUNCTION} does not exist"
    return None


def install() -> None:
    """Wrap vLLM's chat prompt rendering and its per-message conversion, once each."""
    renderer = importlib.import_module(RENDERER)
    hooks.wrap_once(renderer.OnlineRenderer, RENDER_METHOD, _render_wrapper(renderer))
    hooks.wrap_once(importlib.import_module(TARGET), FUNCTION, _order_wrapper)


def _render_wrapper(renderer: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def wrap(original: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(original)
        def make_request_with_harmony(self: Any, request: Any, *args: Any,
                                      **kwargs: Any) -> Any:
            if not _active:
                return original(self, request, *args, **kwargs)
            include = kwargs.get("should_include_tools", args[0] if args else True)
            ids = core_prompt(self, request, include)
            if ids is None:
                return original(self, request, *args, **kwargs)
            # vLLM's own shape; its Harmony message list is only read for `echo`, which
            # its token-reuse path also leaves empty.
            return [], [renderer.tokens_input(ids, cache_salt=getattr(request, "cache_salt",
                                                                      None))]

        return make_request_with_harmony

    return wrap


def core_prompt(serving: Any, request: Any, include_tools: bool) -> list[int] | None:
    """The core's prompt ids for a chat request, or None where vLLM renders it (said once)."""
    if isinstance(getattr(request, "kv_transfer_params", None), dict):
        return None  # disaggregated serving: vLLM may reuse the prefill's ids
    if _system_instructions():
        _fallback("env", f"{SYSTEM_INSTRUCTIONS_ENV} is set")
        return None
    for message in getattr(request, "messages", None) or ():
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        if calls is not None and not isinstance(calls, list):
            message["tool_calls"] = list(calls)  # pydantic's one-pass iterator, read once
    try:
        return chat_prompt_ids(request, (request.tools or []) if include_tools else [],
                               reasoning_effort=_effort(serving, request))
    except NotRenderable as e:
        _fallback(e.kind, str(e))
    except MissingExtra as e:
        _fallback("encoding", str(e))
    return None


def _system_instructions() -> bool:
    """vLLM's switch that moves instructions into the system message, read as vLLM reads it."""
    try:
        import vllm.envs as envs

        return bool(getattr(envs, SYSTEM_INSTRUCTIONS_ENV, False))
    except Exception:  # a vLLM without it
        return False


def _effort(serving: Any, request: Any) -> str | None:
    """The reasoning effort as vLLM resolves it (0.33 maps it by a server option)."""
    effort = getattr(request, "reasoning_effort", None)
    mapping = getattr(serving, "reasoning_effort_map", None)
    if mapping:
        renderer = importlib.import_module(RENDERER)
        resolve = getattr(renderer, "map_reasoning_effort", None)
        if callable(resolve):
            return resolve(effort, mapping)
    return effort


def _fallback(kind: str, why: str) -> None:
    _once(f"fallback:{kind}", logging.INFO, "harmony-ext: %s; such chat requests are rendered "
          "by vLLM's own Harmony renderer, not harmony-ext's", why)


def _order_wrapper(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    @functools.wraps(original)
    def convert(chat_msg: Any, *args: Any, **kwargs: Any) -> list[Any]:
        messages = original(chat_msg, *args, **kwargs)
        if not _active:
            return messages
        return written_first(messages)

    return convert


def written_first(messages: list[Any]) -> list[Any]:
    """Where vLLM renders (a request the core cannot): one chat message's Harmony messages in
    the order the model writes a turn, by the core's rule
    (:func:`harmony_plugins.written_order`)."""
    ordered = written_order(messages, lambda m: part_of(getattr(m, "channel", None),
                                                        getattr(m, "recipient", None)))
    if all(a is b for a, b in zip(ordered, messages, strict=True)):
        return messages
    _once("order", logging.INFO, "harmony-ext: a turn sent back that vLLM renders is put in "
          "the order the model wrote it (chain of thought, preamble, calls)")
    return ordered
