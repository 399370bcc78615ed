"""``python -m sglang_ext.launch_server ARGS``: SGLang's launcher with harmony-ext registered.

For an SGLang without plugin support (older than 0.5.22), or to be sure: the same arguments as
``python -m sglang.launch_server``. Registration happens at import, so it also happens in every
process that multiprocessing spawns (they re-import the main module), tokenizer workers included.
"""

from __future__ import annotations

import runpy

from sglang_ext.plugin import ensure_loaded

ensure_loaded()

if __name__ == "__main__":
    # Not alter_sys: this module stays __main__, which spawned children import again.
    runpy.run_module("sglang.launch_server", run_name="__main__")
