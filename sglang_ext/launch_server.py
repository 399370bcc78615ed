"""``python -m sglang_ext.launch_server ARGS``: SGLang's launcher with harmony-ext registered.

For SGLang 0.5.22 with ``--tokenizer-worker-num > 1``: its tokenizer workers import SGLang's
app without loading plugins, and it has no ``SGLANG_HTTP_SERVER_APP_PATH`` to point them at
ours (0.5.23 has). The same arguments as ``python -m sglang.launch_server``. Registration
happens at import, so it also happens in every process that multiprocessing spawns (they
re-import the main module), tokenizer workers included.
"""

from __future__ import annotations

import runpy

from sglang_ext.plugin import ensure_loaded

ensure_loaded()

if __name__ == "__main__":
    # Not alter_sys: this module stays __main__, which spawned children import again.
    runpy.run_module("sglang.launch_server", run_name="__main__")
