"""The ASGI app for SGLang's tokenizer workers: SGLang's own app, with plugins loaded first.

With ``--tokenizer-worker-num > 1`` SGLang serves HTTP from worker processes that import the app
named by ``SGLANG_HTTP_SERVER_APP_PATH`` and never call ``load_plugins()``; without it the
``harmony-ext`` names are unknown there (``Unsupported tool_call_parser``). The plugin points that
variable here (only when unset). Nothing else differs: ``app`` is SGLang's object.
"""

from __future__ import annotations

from sglang_ext.plugin import ensure_loaded

ensure_loaded()

from sglang.srt.entrypoints.http_server import app  # noqa: E402

__all__ = ["app"]
