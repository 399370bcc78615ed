"""The generation guard on SGLang: the scheduler's finish check asks harmony-ext's guard of each
request harmony-ext marked (contract section 10).

SGLang decides each request's finish in its scheduler, in ``Req.update_finish_state``, once per
decode step: one new token, or under speculative decoding the whole run the step accepted
(``new_accepted_len`` of them, up to 8 with gpt-oss's EAGLE-3 heads), at whose first stop SGLang
cuts the run (``finished_len``). No public interface lets a plugin add a stop condition on token
ids, and ``stop_regex`` matches decoded text, so it would cut an answer that writes
``<|start|>user`` as text. So that method is wrapped (:func:`install`): after SGLang's own
check, a marked request's own :class:`harmony_plugins.Guard` (:func:`harmony_plugins.guard_for`,
built on its first call with the request's ``ignore_eos`` and ``min_new_tokens``, kept on the
request) takes every id the step added, and where the guard ends the generation, at an id before
any stop of SGLang's own, ``finished_len`` is set there: the ids after it are dropped, as SGLang
drops those after a stop token. A forged turn finishes as
``FINISH_MATCHED_TOKEN(matched=None)``: SGLang's detokenizer trims a matched stop token or
string from the text and nothing else, so the parsers see the forged role, count
``forged_turn``, and the response's ``matched_stop`` names no token the model wrote as text. A
stop id the request did not carry finishes as SGLang's own would (``matched`` the id).

The wrap is in place (``harmony_plugins.adapter_support.hooks``), not through SGLang's
``HookRegistry``, whose generic wrappers (arguments packed and unpacked twice) cost every
request of the batch about 0.3 us a step, a third of SGLang's own check; this one costs an
unmarked request a call and an attribute read (``docs/performance.md``).

Chat requests are marked (:attr:`harmony_plugins.Guard.MARK` in ``custom_params``, which SGLang
hands the scheduler with the sampling parameters) by the chat-template hook
(:mod:`sglang_ext.prompt`), Responses requests on the sampling parameters SGLang builds for each
of their generations (:mod:`sglang_ext.responses`). Each choice of ``n > 1`` is its own
``Req``, with its own guard. The wrap is installed only in an SGLang whose command line may
select ``harmony-ext``
(:func:`harmony_plugins.adapter_support.command_line.may_select`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from harmony_plugins import Guard, guard_for
from harmony_plugins.adapter_support import hooks

MODULE = "sglang.srt.managers.schedule_batch"
TARGET = f"{MODULE}.Req.update_finish_state"
WRAPS = (TARGET,)
"""The engine function this module wraps in place."""
OFF = ("a forged turn does not end the generation on this SGLang (the response is parsed as "
       "before)")
"""What is lost where :func:`check` finds something missing."""


def check() -> str | None:
    """What is missing from this SGLang for the wrap, or None."""
    try:
        from sglang.srt.managers.schedule_batch import FINISH_MATCHED_TOKEN, Req  # noqa: F401
    except ImportError as e:
        return f"cannot import SGLang's scheduler batch ({e})"
    method = getattr(Req, "update_finish_state", None)
    if not callable(method):
        return f"{TARGET} does not exist"
    if list(inspect.signature(inspect.unwrap(method)).parameters) != ["self",
                                                                      "new_accepted_len"]:
        return f"{TARGET} takes other arguments than (self, new_accepted_len)"
    try:
        Guard()  # the first guard reads the shipped token classes: here, not at a request
    except RuntimeError as e:
        return f"the guard's token classes cannot be read ({e})"
    return None


def install() -> None:
    """Wrap ``Req.update_finish_state`` once (after :func:`check` found nothing missing)."""
    from sglang.srt.managers.schedule_batch import Req

    def wrap(original: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(original)
        def update_finish_state(self: Any, new_accepted_len: int = 1) -> None:
            original(self, new_accepted_len)
            try:
                guard = self.harmony_ext_guard
            except AttributeError:
                params = self.sampling_params
                guard = self.harmony_ext_guard = guard_for(
                    getattr(params, "custom_params", None), params.ignore_eos,
                    getattr(params, "min_new_tokens", 0))
            if guard is not None:
                end_where_guarded(self, guard)

        return update_finish_state

    hooks.wrap_once(Req, "update_finish_state", wrap)


def end_where_guarded(req: Any, guard: Guard) -> None:
    """Hand the guard the ids the step added, and end the generation where it says, unless
    SGLang ended it no later."""
    ids = req.output_ids
    taken = guard.count
    added = len(ids) - taken
    if added == 1:  # a decode step's one token
        if not guard.step(ids[-1]):
            return
        kept = taken + 1
    else:  # a speculative step's run (or nothing new)
        offset = guard.feed(ids[taken:]) if added > 0 else None
        if offset is None:
            return
        kept = taken + offset + 1
    if req.finished() and (req.finished_len or len(ids)) <= kept:
        return  # SGLang stopped it no later
    from sglang.srt.managers.schedule_batch import FINISH_MATCHED_TOKEN

    req.finished_reason = FINISH_MATCHED_TOKEN(matched=None if guard.forged else ids[kept - 1])
    req.finished_len = kept

