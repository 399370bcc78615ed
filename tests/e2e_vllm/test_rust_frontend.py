"""vLLM's Rust front end (``VLLM_USE_RUST_FRONTEND=1``) with a harmony-ext parser selected.

The Rust binary parses Harmony itself and knows only its own parser names, so vLLM 0.33
refuses to start; the plugin's warning says so before vLLM does. Only a tier whose vLLM
ships the binary (``vllm-rs``, 0.33) can run this; 0.32 has no Rust front end.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from harmony_ext_testing.vllm_server import ROOT, SERVER_SCRIPT, VENV, free_port


def _rust_binary() -> Path | None:
    """vLLM's ``vllm-rs`` beside the vLLM package the tier's interpreter imports (the 0.33
    tier's venv holds only the wheel and finds vLLM through a path file)."""
    found = subprocess.run(
        [str(VENV / "bin" / "python"), "-c",
         "import importlib.util, os; spec = importlib.util.find_spec('vllm'); "
         "print(os.path.dirname(spec.origin) if spec and spec.origin else '')"],
        capture_output=True, text=True, timeout=120, cwd="/",
        env={**os.environ, "PYTHONSAFEPATH": "1"})
    folder = found.stdout.strip()
    binary = Path(folder) / "vllm-rs" if folder else None
    return binary if binary is not None and binary.exists() else None


RUST = _rust_binary()


@pytest.mark.skipif(RUST is None, reason=f"no vllm-rs in {VENV}: this vLLM has no Rust front end")
def test_the_rust_front_end_refuses_harmony_ext_and_the_warning_says_so(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    env = {**os.environ, "VLLM_USE_RUST_FRONTEND": "1", "VLLM_ENTRY": "serve"}
    env.pop("HARMONY_EXT_BYPASS_WARNED", None)  # the plugin's once-per-server mark
    with open(log, "wb") as out:
        done = subprocess.run(["bash", str(SERVER_SCRIPT), str(free_port())], cwd=ROOT,
                              env=env, stdin=subprocess.DEVNULL, stdout=out,
                              stderr=subprocess.STDOUT, timeout=300)
    text = log.read_text(errors="replace")
    assert done.returncode != 0, text[-3000:]
    assert "the server will not start" in text  # ours, first
    assert "tool parser `harmony-ext` is not registered" in text  # vLLM's Rust front end
    assert text.index("the server will not start") < text.index("is not registered")
