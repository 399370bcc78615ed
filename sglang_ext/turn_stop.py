"""A forged turn ends the generation on SGLang (contract section 10).

When the model begins another role's turn, nothing more of that choice is shown, yet SGLang
would generate to the end. SGLang decides each request's finish in its scheduler, in
``Req.update_finish_state`` after every accepted token; no public interface lets a plugin add a
stop condition on token ids, and ``stop_regex`` matches decoded text, so it would cut an answer
that writes ``<|start|>user`` as text. So an AFTER hook on that method asks
:func:`harmony_plugins.turn_forged` where SGLang did not finish the request and harmony-ext's
chat hook marked it (:data:`PARAM` in its ``custom_params``, which SGLang hands to the
scheduler with the sampling parameters, as it does its own reasoning end ids), and a forged
turn finishes it as a matched token (the last one). Other requests cost one dict lookup.

``HARMONY_EXT_TURN_STOP=0`` turns it off (no request is marked). Its Responses API is not
marked: SGLang passes a Responses request's ``custom_params`` to no scheduler.
"""

from __future__ import annotations

from typing import Any

from harmony_plugins import turn_forged

TARGET = "sglang.srt.managers.schedule_batch.Req.update_finish_state"
PARAM = "__harmony_ext_turn_stop"
"""The ``custom_params`` key that marks a request whose forged turn ends its generation."""


def mark(request: Any) -> None:
    """Mark a chat request so that a forged turn ends its generation."""
    request.custom_params = {**(getattr(request, "custom_params", None) or {}), PARAM: True}


def stop_forged_turn(result: Any, req: Any, *args: Any, **kwargs: Any) -> None:
    """AFTER hook on ``Req.update_finish_state``: finish a marked request that forged a turn."""
    if req.finished():
        return
    custom = req.sampling_params.custom_params
    if custom and custom.get(PARAM) and turn_forged(req.output_ids):
        from sglang.srt.managers.schedule_batch import FINISH_MATCHED_TOKEN

        req.finished_reason = FINISH_MATCHED_TOKEN(matched=req.output_ids[-1])
        req.finished_len = len(req.output_ids)
