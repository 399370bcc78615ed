"""What runs the model in a test server of the installed vLLM, here (tests only).

``python -m harmony_ext_testing.vllm_runner`` prints one line that ``scripts/vllm_tiny_server.sh``
reads: the scripted logits processor the server loads (a name in
``harmony_ext_testing.vllm_scripted``) and ``model`` or ``scripted``:

- ``ScriptedOutputProcessorV1 model``: a vLLM that still has its V1 model runner (0.32, 0.33).
  The server is pinned to it (``VLLM_USE_V2_MODEL_RUNNER=0``): on this CPU their V2 runner
  requires Triton, and the V1 runner loads only V1 processors.
- ``ScriptedOutputProcessor model``: a vLLM with only the V2 runner (0.34) that can run a model
  here (a GPU, or a CPU build with Triton).
- ``ScriptedOutputProcessor scripted``: the same vLLM on an x86 CPU without Triton, which it
  refuses to run a model on: the server runs ``harmony_ext_testing.vllm_scripted_worker``.

A vLLM with neither interface gets no line: the command fails with :func:`missing`'s reason,
which the e2e tiers give at collection for every server test they skip
(tests/e2e_vllm/conftest.py).

It imports vLLM's platform module and nothing of harmony-ext, so that it loads nothing a
server's log would then report.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["choose", "missing"]

V1 = "vllm.v1.sample.logits_processor"
V2 = "vllm.v1.worker.gpu.sample.logits_processor"


def _has(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:  # a parent package is missing
        return False


def missing() -> str | None:
    """Why the installed vLLM cannot run the scripted model, or None."""
    if _has(V1) or _has(V2):
        return None
    return (f"this vLLM has neither logits-processor interface the scripted model uses "
            f"({V2}, {V1})")


def choose() -> tuple[str, str]:
    """(the processor's class name, ``model`` or ``scripted``) for the installed vLLM."""
    if _has(V1):
        return "ScriptedOutputProcessorV1", "model"
    from vllm.platforms import CpuArchEnum, current_platform
    from vllm.triton_utils import HAS_TRITON

    cannot = (current_platform.is_cpu() and not HAS_TRITON
              and current_platform.get_cpu_architecture() == CpuArchEnum.X86)
    return "ScriptedOutputProcessor", "scripted" if cannot else "model"


if __name__ == "__main__":
    if missing():
        sys.exit(f"harmony_ext_testing.vllm_runner: {missing()}")
    print(*choose())
