"""The end-to-end case suite on a CUDA GPU, with the regular vLLM wheel.

Run it with ``scripts/gpu_e2e.sh``: that script makes ``.venv-gpu`` (vLLM 0.34 from PyPI,
this package editable), builds the tiny gpt-oss model and runs this file, which starts
the real OpenAI server (``vllm serve``, parsers ``harmony-ext``, scripted output) on the
GPU twice, with one API server and with ``--api-server-count 2``, and puts every case of
``harmony_ext_testing/vllm_cases.py`` through each: chat streamed and not, several tokens per
delta, the Responses API, and 32 concurrent streams.

Without a CUDA GPU (no ``nvidia-smi``, or ``torch.cuda.is_available()`` false) every test
is skipped, with the reason.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("harmony_ext_testing.vllm_cases")

from harmony_ext_testing.vllm_cases import (  # noqa: E402
    CASES,
    RESPONSES_CASES,
    Case,
    check_chat,
    check_concurrent,
    check_responses,
    check_stream_interval,
    run_chat,
    run_concurrent,
    run_responses,
    server_version,
)

ROOT = Path(__file__).resolve().parents[2]
VENV_GPU = Path(os.environ.get("VENV_GPU", ROOT / ".venv-gpu"))
SERVERS: dict[str, tuple[str, ...]] = {
    "one-api-server": (),
    "api-server-count-2": ("--api-server-count", "2"),
}
# A tiny model: a small share of the GPU and a short context start faster.
SERVER_ARGS = ("--gpu-memory-utilization", "0.2", "--max-model-len", "8192")


def no_gpu_reason() -> str | None:
    """Why this machine cannot run the suite, or None when it can."""
    if shutil.which("nvidia-smi") is None:
        return "no CUDA GPU: nvidia-smi is absent (run scripts/gpu_e2e.sh on a GPU machine)"
    try:
        import torch
    except ImportError:
        return "torch is not installed in this interpreter (run scripts/gpu_e2e.sh)"
    if not torch.cuda.is_available():
        return "no CUDA GPU: torch.cuda.is_available() is false"
    if not (VENV_GPU / "bin" / "python").exists():
        return f"{VENV_GPU} is missing: run scripts/gpu_e2e.sh"
    return None


NO_GPU = no_gpu_reason()
pytestmark = pytest.mark.skipif(NO_GPU is not None, reason=NO_GPU or "")


@pytest.fixture(scope="module", params=list(SERVERS))
def gpu_server(request: pytest.FixtureRequest,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of the tiny server on the GPU, once per entry of SERVERS."""
    from harmony_ext_testing.vllm_server import tiny_vllm_server

    log_path = tmp_path_factory.mktemp("vllm-gpu") / f"{request.param}.log"
    env = {"VENV_VLLM": str(VENV_GPU), "VLLM_ENTRY": "serve"}
    extra = shlex.split(os.environ.get("GPU_SERVER_ARGS", ""))
    with tiny_vllm_server(log_path, *SERVER_ARGS, *SERVERS[request.param], *extra,
                          env=env) as base_url:
        yield base_url


@pytest.fixture(scope="module")
def client(gpu_server: str) -> Any:
    import openai

    return openai.OpenAI(base_url=f"{gpu_server}/v1", api_key="unused", max_retries=0)


def case_ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_chat(client: Any, gpu_server: str, case: Case) -> None:
    check_chat(case, run_chat(client, case, stream=False), run_chat(client, case, stream=True),
               server_version(gpu_server))


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_stream_interval_4(client: Any, case: Case) -> None:
    run = run_chat(client, case, stream=True, stream_interval=4, return_token_ids=True)
    check_stream_interval(case, run)


@pytest.mark.parametrize("case", RESPONSES_CASES, ids=case_ids(RESPONSES_CASES))
def test_responses(client: Any, case: Case) -> None:
    check_responses(case, run_responses(client, case, stream=False),
                    run_responses(client, case, stream=True))


def test_concurrent_streams(gpu_server: str) -> None:
    cases = [CASES[i % len(CASES)] for i in range(32)]
    check_concurrent(cases, run_concurrent(gpu_server, cases))
