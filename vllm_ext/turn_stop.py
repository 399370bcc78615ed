"""A forged turn ends the generation on vLLM (contract section 10).

When the model begins another role's turn, nothing more of that choice is shown, yet vLLM
would generate to the end. vLLM decides each request's stop in its engine core, one call of
``check_stop(request, max_model_len)`` per new token (``vllm.v1.core.sched.scheduler``, which
imports it from ``vllm.v1.core.sched.utils``); no public interface lets a plugin add a stop
condition on token ids, and a stop string would cut an answer that writes ``<|start|>user`` as
text. So the scheduler's ``check_stop`` is wrapped: where vLLM itself does not stop a request,
and the request was marked by harmony-ext's parser (``adjust_request`` sets
:data:`ARG` in its ``vllm_xargs``, which vLLM hands over as the sampling parameters'
``extra_args``), :func:`harmony_plugins.turn_forged` is asked, and a forged turn finishes the
request as stopped, ``stop_reason`` :data:`REASON`. Requests of other parsers and models are
not marked, and their check costs one dict lookup. A marked request's costs a slice of its
last ids and one ``in`` per token.

``HARMONY_EXT_TURN_STOP=0`` turns it off (harmony-ext's parser then marks no request). Where
vLLM's scheduler has no such function, a start-up log line says the generation is not stopped;
the parse is unchanged either way.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

from harmony_plugins import turn_forged
from harmony_plugins.adapter_support import hooks

logger = logging.getLogger("vllm.harmony_ext")

SCHEDULER = "vllm.v1.core.sched.scheduler"
TARGET = "check_stop"
ARG = "harmony_ext_turn_stop"
"""The ``vllm_xargs`` key that marks a request whose forged turn ends its generation."""
REASON = "harmony-ext: forged turn"
"""The request's ``stop_reason`` when a forged turn ended it."""


def check() -> str | None:
    """What is missing from this vLLM for the hook, or None."""
    try:
        scheduler = importlib.import_module(SCHEDULER)
        from vllm.v1.request import RequestStatus
    except ImportError as e:
        return f"cannot import vLLM's scheduler ({e})"
    function = getattr(scheduler, TARGET, None)
    if not callable(function):
        return f"{SCHEDULER}.{TARGET} does not exist"
    if list(inspect.signature(function).parameters)[:2] != ["request", "max_model_len"]:
        return f"{SCHEDULER}.{TARGET} takes other arguments than (request, max_model_len)"
    if not hasattr(RequestStatus, "FINISHED_STOPPED"):
        return "RequestStatus.FINISHED_STOPPED does not exist"
    return None


def install() -> bool:
    """Wrap the scheduler's ``check_stop`` once (after :func:`check` found nothing missing);
    True when in place."""
    from vllm.v1.request import RequestStatus

    def wrap(original: Callable[..., bool]) -> Callable[..., bool]:
        @functools.wraps(original)
        def check_stop(request: Any, max_model_len: int, *args: Any, **kwargs: Any) -> bool:
            if original(request, max_model_len, *args, **kwargs):
                return True
            params = request.sampling_params
            extra = params.extra_args if params is not None else None
            if extra and extra.get(ARG) and turn_forged(request.output_token_ids):
                request.status = RequestStatus.FINISHED_STOPPED
                request.stop_reason = REASON
                return True
            return False

        return check_stop

    hooks.wrap_once(importlib.import_module(SCHEDULER), TARGET, wrap)
    return True


def mark(request: Any) -> None:
    """Mark a request (chat or Responses) so that a forged turn ends its generation."""
    request.vllm_xargs = {**(getattr(request, "vllm_xargs", None) or {}), ARG: 1}
