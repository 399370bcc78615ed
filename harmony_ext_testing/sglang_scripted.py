"""Force a real SGLang server to emit scripted token ids (GPU end-to-end tests only).

A tiny random-weight model emits noise; tests/gpu/test_gpu_sglang.py drives it with this
per-request custom logit processor. SGLang accepts one only when the server runs with
``--enable-custom-logit-processor``; a request opts in with, in its body::

    "custom_logit_processor": ScriptedLogitProcessor.to_str(),
    "custom_params": {"script_ids": [200005, 35644, 200008, ...]}

At step ``i`` every logit but that of ``script_ids[i]`` is ``-inf``; after the script,
``<|return|>`` (a stop token of gpt-oss) ends the request. Requests without a script are not
touched. It lives in an importable module, not in the test, because SGLang serialises the
class with ``dill`` by reference: the server must be able to import it (the checkout's
``harmony_ext_testing`` on its path; it is not part of the wheel).
"""

from __future__ import annotations

from typing import Any

from sglang.srt.sampling.custom_logit_processor import CustomLogitProcessor

from harmony_plugins.harmony import SPECIAL_IDS

RETURN_ID = SPECIAL_IDS["<|return|>"]


class ScriptedLogitProcessor(CustomLogitProcessor):
    """Allow only the next scripted token, per request of the batch."""

    def __call__(self, logits: Any, custom_param_list: list[dict[str, Any]] | None = None) -> Any:
        for row, params in enumerate(custom_param_list or ()):
            script = (params or {}).get("script_ids")
            request = (params or {}).get("__req__")
            if script is None or request is None:
                continue
            step = len(request.output_ids)
            token = script[step] if step < len(script) else RETURN_ID
            logits[row].fill_(float("-inf"))
            logits[row, token] = 0.0
        return logits
