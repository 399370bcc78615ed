"""``scripts/measure_chunk_cost.py`` on vLLM's real classes, at a small size.

The script backs the README's claim that our adapter makes vLLM's own serving code do no
more work than vLLM's built-in parser: for the same streams, the same number of chunks and
the same JSON, byte for byte. The bytes are checked here; the timings it prints are not.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytest.importorskip("vllm", reason="needs vLLM: use .venv-vllm/bin/pytest")


def test_both_parsers_give_vllm_the_same_chunks() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "measure_chunk_cost.py"),
         "--tokens", "1024", "--repeat", "1"],
        capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = [line.split() for line in proc.stdout.splitlines()
            if line.startswith(("reasoning ", "call "))]
    # shape, parser, parse us, vLLM's chunk work us, chunks, bytes/chunk, same JSON
    assert [(r[0], r[1], r[6]) for r in rows] == [
        ("reasoning", "builtin", "-"), ("reasoning", "harmony-ext", "yes"),
        ("call", "builtin", "-"), ("call", "harmony-ext", "yes")]
    for shape in ("reasoning", "call"):
        builtin, ours = (r for r in rows if r[0] == shape)
        assert builtin[4] == ours[4] and int(ours[4]) > 0  # as many chunks
        assert builtin[5] == ours[5]  # as many bytes per chunk
