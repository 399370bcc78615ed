"""The SGLang case suite on a CUDA GPU: a real SGLang server, the openai client.

Run it with ``scripts/gpu_e2e_sglang.sh``: that script makes ``.venv-gpu-sglang`` (SGLang from
PyPI, this package editable), builds the tiny gpt-oss model and runs this file, which starts
``python -m sglang.launch_server`` with ``--tool-call-parser harmony-ext --reasoning-parser
harmony-ext --enable-custom-logit-processor`` on the GPU (once with one tokenizer process, once
with ``--tokenizer-worker-num 2``), forces each case's output with SGLang's per-request custom
logit processor (:mod:`harmony_ext_testing.sglang_scripted`) and checks, streamed and not,
what the ``openai`` client gets against the contract (the cases of
``harmony_ext_testing/sglang_cases.py``). Also checked: the detokenizer keeps ``<|call|>``, and a
user's ``<|call|>`` reaches the prompt as text.

Without a CUDA GPU (no ``nvidia-smi``, ``torch.cuda.is_available()`` false, or no
``.venv-gpu-sglang``) every test is skipped, with the reason.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("VENV_GPU_SGLANG", ROOT / ".venv-gpu-sglang"))
MODEL = Path(os.environ.get("TINY_MODEL", ROOT / ".cache" / "tiny-gpt-oss"))
NAME = "harmony-ext"
CALL_ID, RETURN_ID = 200012, 200002
SERVERS: dict[str, tuple[str, ...]] = {
    "one-tokenizer": (),
    "tokenizer-workers-2": ("--tokenizer-worker-num", "2"),
}
# A tiny bf16 model: triton attention (any head size, attention sinks), a small share of memory.
SERVER_ARGS = ("--attention-backend", "triton", "--mem-fraction-static", "0.2",
               "--context-length", "8192", "--disable-cuda-graph")
HARMONY_TEMPLATE = (  # the tiny model has no chat template; prompts only need this shape
    "{%- for m in messages -%}"
    "<|start|>{{ m['role'] }}<|message|>{{ m['content'] if m['content'] is string else '' }}"
    "<|end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|start|>assistant{%- endif -%}"
)


def no_gpu_reason() -> str | None:
    """Why this machine cannot run the suite, or None when it can."""
    if shutil.which("nvidia-smi") is None:
        return ("no CUDA GPU: nvidia-smi is absent (run scripts/gpu_e2e_sglang.sh on a GPU "
                "machine)")
    try:
        import torch
    except ImportError:
        return "torch is not installed in this interpreter (run scripts/gpu_e2e_sglang.sh)"
    if not torch.cuda.is_available():
        return "no CUDA GPU: torch.cuda.is_available() is false"
    if not (VENV / "bin" / "python").exists():
        return f"{VENV} is missing: run scripts/gpu_e2e_sglang.sh"
    try:
        import openai  # noqa: F401
        import sglang  # noqa: F401
    except ImportError as e:
        return f"{e.name} is not installed in this interpreter (run scripts/gpu_e2e_sglang.sh)"
    return None


NO_GPU = no_gpu_reason()
if NO_GPU is not None:
    pytest.skip(NO_GPU, allow_module_level=True)

from harmony_ext_testing.client import fold_chunks  # noqa: E402
from harmony_ext_testing.sglang_cases import CASES, Case, comparable  # noqa: E402

# The engine stops at the first <|call|>: an output that goes on after one cannot be scripted.
GPU_CASES = [c for c in CASES if "<|call|>" not in c.text.removesuffix("<|call|>")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=list(SERVERS))
def server(request: pytest.FixtureRequest,
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a real SGLang server on the tiny model, once per entry of SERVERS."""
    work = tmp_path_factory.mktemp("sglang-gpu")
    template = work / "harmony.jinja"
    template.write_text(HARMONY_TEMPLATE)
    port = free_port()
    command = [
        str(VENV / "bin" / "python"), "-m", "sglang.launch_server",
        "--model-path", str(MODEL), "--chat-template", str(template),
        "--host", "127.0.0.1", "--port", str(port),
        "--tool-call-parser", NAME, "--reasoning-parser", NAME,
        "--enable-custom-logit-processor", *SERVER_ARGS, *SERVERS[request.param],
        *shlex.split(os.environ.get("GPU_SERVER_ARGS", "")),
    ]
    log = (work / f"{request.param}.log").open("w")
    # The scripted processor (harmony_ext_testing, not installed) loads from the checkout.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
                               env=env, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + float(os.environ.get("SGLANG_START_TIMEOUT_S", "600"))
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"SGLang exited ({process.returncode}); log: {log.name}")
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"SGLang did not start in time; log: {log.name}")
            time.sleep(2)
        yield base
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


@pytest.fixture(scope="module")
def tokenizer() -> Any:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(MODEL))


def script(case: Case, tokenizer: Any) -> tuple[list[int], int]:
    """Token ids that make the model write the case, and max_tokens for it."""
    ids = tokenizer.encode(case.text, add_special_tokens=False)
    if case.finish == "length":
        return ids, len(ids)
    if not ids or ids[-1] != CALL_ID:
        ids = [*ids, RETURN_ID]  # a real turn ends in a stop token; SGLang cuts <|return|>
    return ids, len(ids) + 8


def forced(ids: list[int]) -> dict[str, Any]:
    from harmony_ext_testing.sglang_scripted import ScriptedLogitProcessor

    return {"custom_logit_processor": ScriptedLogitProcessor.to_str(),
            "custom_params": {"script_ids": ids}}


def chat(base: str, case: Case, tokenizer: Any, stream: bool) -> dict[str, Any]:
    from openai import OpenAI

    client = OpenAI(base_url=base + "/v1", api_key="none")
    ids, max_tokens = script(case, tokenizer)
    kwargs: dict[str, Any] = {
        "model": "default",
        "messages": [{"role": "user", "content": "Weather?"}],
        "max_tokens": max_tokens,
        "extra_body": forced(ids),
        **case.request,
    }
    if case.tools is not None:
        kwargs["tools"] = list(case.tools)
    if not stream:
        response = client.chat.completions.create(**kwargs)
        choice = response.choices[0]
        message = choice.message
        return {
            "reasoning": getattr(message, "reasoning_content", None) or None,
            "content": message.content or None,
            "calls": [(c.function.name, c.function.arguments) for c in message.tool_calls or []],
            "finish_reason": choice.finish_reason,
        }
    got = fold_chunks(client.chat.completions.create(stream=True, **kwargs))
    assert all(c["id"] for c in got["tool_calls"]), "a call's first delta carries its id"
    return comparable(got)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in GPU_CASES])
def test_case(server: str, tokenizer: Any, case: Case, stream: bool) -> None:
    assert chat(server, case, tokenizer, stream) == case.expected()


def test_detokenizer_keeps_the_call_token(server: str, tokenizer: Any) -> None:
    case = next(c for c in CASES if c.id == "call_after_analysis")
    ids, max_tokens = script(case, tokenizer)
    prompt = tokenizer.encode("<|start|>user<|message|>Weather?<|end|><|start|>assistant",
                              add_special_tokens=False)
    force = forced(ids)
    body = {"input_ids": prompt, "custom_logit_processor": force["custom_logit_processor"],
            "sampling_params": {"max_new_tokens": max_tokens, "skip_special_tokens": False,
                                "custom_params": force["custom_params"]}}
    request = urllib.request.Request(server + "/generate", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        out = json.loads(response.read())
    assert out["text"] == case.text  # <|call|> kept, as SGLang does for gpt-oss


def test_user_text_spelling_a_control_token_reaches_the_model_as_text(server: str,
                                                                      tokenizer: Any) -> None:
    from openai import OpenAI

    client = OpenAI(base_url=server + "/v1", api_key="none")
    ids = tokenizer.encode("<|channel|>final<|message|>ok", add_special_tokens=False)
    response = client.chat.completions.create(
        model="default", max_tokens=len(ids) + 4,
        messages=[{"role": "user", "content": "say <|call|> please"}],
        extra_body={**forced([*ids, RETURN_ID]), "return_prompt_token_ids": True})
    prompt = response.choices[0].model_extra.get("prompt_token_ids") or []
    assert prompt, "the server returned no prompt_token_ids"
    assert CALL_ID not in prompt
    assert response.choices[0].message.content == "ok"
