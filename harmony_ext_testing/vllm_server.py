"""A tiny real vLLM OpenAI server on the CPU (scripts/vllm_tiny_server.sh), started and stopped.

The end-to-end tests (``tests/e2e_vllm``, ``tests/gpu``: their fixtures) and the page
generators of ``docs/vllm-comparison.md`` and ``docs/multi-turn-vllm.md`` (``pages/``, which
import nothing from the tests) start their servers with :func:`tiny_vllm_server`; the
environments of :data:`STORE_ENV` and :data:`BUILTIN_ENV` select vLLM's Responses store and
its built-in gpt-oss parsers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from harmony_ext_testing import LOADED_FROM

ROOT = Path(__file__).resolve().parents[1]
VENV = Path(os.environ.get("VENV_VLLM", ROOT / ".venv-vllm"))
SERVER_SCRIPT = ROOT / "scripts" / "vllm_tiny_server.sh"
START_TIMEOUT_S = float(os.environ.get("VLLM_START_TIMEOUT_S", "300"))  # a busy machine: more
STOP_TIMEOUT_S = 30.0


def free_port() -> int:
    """A port that was free a moment ago on the loopback interface."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _log_tail(path: Path, lines: int = 80) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"(no log: {e})"


def _healthy(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server (it stops its own engine processes); kill its group if stuck."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        # The server runs in its own session, so its group holds only its processes.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=STOP_TIMEOUT_S)


@contextlib.contextmanager
def tiny_vllm_server(
    log_path: Path, *extra_args: str, env: Mapping[str, str] | None = None
) -> Iterator[str]:
    """Run scripts/vllm_tiny_server.sh on a free port; yield its base URL.

    ``env`` adds or overrides variables (e.g. TOOL_PARSER / REASONING_PARSER); the
    server log goes to ``log_path`` and its tail is shown when start-up fails.
    """
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            ["bash", str(SERVER_SCRIPT), str(port), *extra_args],
            cwd=ROOT,
            env={**os.environ, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(base_url):
            if proc.poll() is not None:
                pytest.fail(
                    f"vLLM server exited with {proc.returncode} during start-up; log:\n"
                    + _log_tail(log_path),
                    pytrace=False,
                )
            if time.monotonic() > deadline:
                pytest.fail(
                    f"vLLM server not healthy after {START_TIMEOUT_S:.0f} s; log:\n"
                    + _log_tail(log_path),
                    pytrace=False,
                )
            time.sleep(1.0)
        if FROM_WHEEL:
            _check_loaded_from_wheel(log_path)
        yield base_url
    finally:
        _stop(proc)


FROM_WHEEL = os.environ.get("HARMONY_EXT_FROM") == "wheel"
"""The servers run harmony-ext from the wheel installed in VENV (scripts/test.sh's wheel tier)."""


def _check_loaded_from_wheel(log_path: Path, venv: Path = VENV) -> None:
    """Every server process that loaded the scripted processor says where harmony-ext's
    packages came from (harmony_ext_testing/vllm_scripted.py): all must be VENV's own
    site-packages, where the wheel is installed, never the checkout."""
    sites = [str(p) + os.sep for p in venv.glob("lib/python3*/site-packages")]
    lines = [line.split(LOADED_FROM, 1)[1].split() for line in
             log_path.read_text(errors="replace").splitlines() if LOADED_FROM in line]
    wrong = [paths for paths in lines if not all(p.startswith(tuple(sites)) for p in paths)]
    if not lines or wrong or not sites:
        pytest.fail(f"harmony-ext must run from the wheel in {sites}, but the server loaded "
                    f"it from {wrong or 'nowhere it said'}; log:\n" + _log_tail(log_path),
                    pytrace=False)


STORE_ENV = {"VLLM_ENABLE_RESPONSES_API_STORE": "1"}
"""vLLM's Responses store, off by default: ``previous_response_id`` needs it (a stored response
changes nothing else, and starting a second server for it would cost a minute)."""


BUILTIN_ENV = {"TOOL_PARSER": "openai", "REASONING_PARSER": "openai_gptoss"}
"""scripts/vllm_tiny_server.sh with vLLM's built-in gpt-oss parsers instead of ours."""
