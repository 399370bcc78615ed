"""What every module of the SGLang adapter refers to, with no SGLang import: the parser
name, what :func:`sglang_ext.plugin.register` did in this process, and the server's
selections and switches. Kept apart so that the plugin can check SGLang before importing
anything that needs it, and so that no two modules import each other."""

from __future__ import annotations

import os
from typing import Any

from harmony_plugins import pass_undeclared

NAME = "harmony-ext"

status: dict[str, str] = {}
"""What ``register`` did in this process, by item (for logs and tests)."""


def selected_parser(kind: str) -> str | None:
    """The server's ``tool_call_parser`` / ``reasoning_parser`` in this process, if known."""
    return _serving(kind, None)


def undeclared_calls_passed() -> bool:
    """Whether calls to ``functions.*`` names the request did not declare are surfaced:
    harmony-ext's ``HARMONY_EXT_PASS_UNDECLARED`` in harmony-ext's spellings, or SGLang's own
    ``SGLANG_FORWARD_UNKNOWN_TOOLS`` read by SGLang's own reader (``envs``), so that a value
    means what it means to SGLang's detectors: ``y`` turns it on, ``on`` does not (SGLang warns
    that the value is invalid and keeps its default, off). Read per request, as SGLang does."""
    from sglang.srt.environ import envs

    return pass_undeclared(os.environ) or envs.SGLANG_FORWARD_UNKNOWN_TOOLS.get() is True


def metrics_enabled() -> bool:
    """Whether the server runs with ``--enable-metrics`` (so ``/metrics`` exists)."""
    try:
        from sglang.srt.runtime_context import get_observability

        return bool(getattr(get_observability(), "enable_metrics", False))
    except Exception:  # not published (a bare detector), or an SGLang without it
        return False


def _serving(kind: str, default: Any) -> Any:
    try:
        from sglang.srt.runtime_context import get_serving

        return getattr(get_serving(), kind, default)
    except Exception:  # not published (a bare detector), or an SGLang without it
        return default
