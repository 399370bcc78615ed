"""The generation guard on vLLM: the scheduler's stop check asks harmony-ext's guard of each
request harmony-ext marked (contract section 10).

vLLM decides each request's stop in its engine core, one ``check_stop(request,
max_model_len)`` per new token (``vllm.v1.core.sched.scheduler``, which imports it from
``vllm.v1.core.sched.utils``; a speculative step's tokens are appended and checked one by one,
and the rest dropped at a stop). No public interface lets a plugin add a stop condition on token
ids, and a stop string would cut an answer that writes ``<|start|>user`` as text. So the
scheduler's ``check_stop`` is wrapped: where vLLM itself does not stop the request, a request
that harmony-ext's ``adjust_request`` marked (:attr:`harmony_plugins.Guard.MARK` in its
``vllm_xargs``, which vLLM hands the engine core as the sampling parameters' ``extra_args``)
has its own :class:`harmony_plugins.Guard` (:func:`harmony_plugins.guard_for`, built on its
first token with its ``ignore_eos`` and ``min_tokens``, kept on the request), which takes the
new token; where it says the turn is over, the request finishes as stopped, ``stop_reason``
:data:`REASON` for a forged turn (or the stop id itself). Each choice of ``n > 1`` is its own
engine request, with its own guard.

An unmarked request costs the wrapper's call and one attribute read per token; a marked one
the guard's step too (``docs/performance.md`` has the figures beside vLLM's own check). The
wrapper is installed only in a vLLM whose command line may select ``harmony-ext``
(:func:`harmony_plugins.adapter_support.command_line.may_select`).
"""

from __future__ import annotations

import functools
import importlib
import inspect
from collections.abc import Callable
from typing import Any

from harmony_plugins import Guard, guard_for
from harmony_plugins.adapter_support import hooks

SCHEDULER = "vllm.v1.core.sched.scheduler"
TARGET = "check_stop"
WRAPS = (f"{SCHEDULER}.{TARGET}",)
"""The engine function this module wraps in place."""
OFF = "a forged turn does not end the generation on this vLLM (the response is parsed as before)"
"""What is lost where :func:`check` finds something missing."""
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
    if list(inspect.signature(function).parameters) != ["request", "max_model_len"]:
        return f"{SCHEDULER}.{TARGET} takes other arguments than (request, max_model_len)"
    if not hasattr(RequestStatus, "FINISHED_STOPPED"):
        return "RequestStatus.FINISHED_STOPPED does not exist"
    try:
        Guard()  # the first guard reads the shipped token classes: here, not at a request
    except RuntimeError as e:
        return f"the guard's token classes cannot be read ({e})"
    return None


def install() -> None:
    """Wrap the scheduler's ``check_stop`` once (after :func:`check` found nothing missing)."""
    from vllm.v1.request import RequestStatus

    stopped = RequestStatus.FINISHED_STOPPED

    def wrap(original: Callable[[Any, int], bool]) -> Callable[[Any, int], bool]:
        @functools.wraps(original)
        def check_stop(request: Any, max_model_len: int) -> bool:
            if original(request, max_model_len):
                return True
            try:
                guard = request.harmony_ext_guard
            except AttributeError:
                params = request.sampling_params
                guard = request.harmony_ext_guard = guard_for(
                    getattr(params, "extra_args", None), params.ignore_eos, params.min_tokens)
            if guard is None or not guard.step(request.output_token_ids[-1]):
                return False
            request.status = stopped
            request.stop_reason = REASON if guard.forged else request.output_token_ids[-1]
            return True

        return check_stop

    hooks.wrap_once(importlib.import_module(SCHEDULER), TARGET, wrap)

