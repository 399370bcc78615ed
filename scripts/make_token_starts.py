"""Write harmony_plugins/data/o200k_starts.xz: the class of each o200k_harmony id's first
character (harmony_plugins/vocab/starts.py says why), computed from the shipped vocabulary.

    .venv/bin/python scripts/make_token_starts.py

The vocabulary never changes, so this runs once; tests/test_guard.py checks the file against
the same computation.
"""

from __future__ import annotations

import lzma
import time
from pathlib import Path

from harmony_plugins import Vocab
from harmony_plugins.data import O200K_STARTS_XZ
from harmony_plugins.vocab.starts import starts_of

start = time.monotonic()
target = Path(__file__).resolve().parent.parent / "harmony_plugins" / "data" / O200K_STARTS_XZ
target.write_bytes(lzma.compress(starts_of(Vocab.o200k_harmony().table), preset=9))
print(f"  wrote {target} ({target.stat().st_size} bytes, {time.monotonic() - start:.1f} s)")
