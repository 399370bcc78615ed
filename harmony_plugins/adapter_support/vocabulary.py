"""The o200k vocabulary written for openai-harmony offline, as the adapters reach it.

SGLang's prompt hook needs openai-harmony's encoding on a host that cannot download its
vocabulary; the writer is the edge :mod:`harmony_plugins.vocabulary_files`, which the command
line uses too. Adapters import only the public names and the engine glue, so they take it
from here.
"""

from __future__ import annotations

from harmony_plugins.vocabulary_files import cache_folder, load_openai_harmony, write_tiktoken_file

__all__ = ["cache_folder", "load_openai_harmony", "write_tiktoken_file"]
