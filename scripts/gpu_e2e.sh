#!/usr/bin/env bash
# The end-to-end case suite on a CUDA GPU, with the regular vLLM wheel.
#
#   scripts/gpu_e2e.sh [pytest args...]
#
# Creates .venv-gpu (vllm from PyPI, this package editable, pytest and the openai client),
# builds the tiny gpt-oss model into .cache/tiny-gpt-oss and runs tests/gpu: the real
# OpenAI server on the GPU (vllm serve, --tool-call-parser/--reasoning-parser harmony-ext,
# scripted output), once with one API server and once with --api-server-count 2, through
# every case of harmony_ext_testing/vllm_cases.py. Needs an NVIDIA GPU and access to PyPI; exits 3
# without a GPU. Idempotent: .venv-gpu/.ok records what the venv was built for.
#
# Environment:
#   PYTHON           interpreter for the venv (default: python3.11)
#   VENV_GPU         the venv (default: .venv-gpu)
#   VLLM_REQ         the vLLM requirement (default: vllm==0.34.0, the newest on PyPI when
#                    written; the scripted model runs through vLLM's V2 logits-processor
#                    interface there, harmony_ext_testing/vllm_runner.py)
#   GPU_SERVER_ARGS  extra server flags, e.g. "--attention-backend TRITON_ATTN"
#   VLLM_START_TIMEOUT_S  server start-up limit (default here: 600 s)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV_GPU:-$ROOT/.venv-gpu}"
PYTHON="${PYTHON:-python3.11}"
VLLM_REQ="${VLLM_REQ:-vllm==0.34.0}"
EXTRA=(openai pytest)

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "$0: no NVIDIA GPU here (nvidia-smi is missing or fails)" >&2
    exit 3
fi

source "$ROOT/scripts/venv.sh"
STAMP="$(venv_stamp "$PYTHON" "$VLLM_REQ" "${EXTRA[*]}")"
if ! venv_current "$VENV" "$STAMP"; then
    start=$SECONDS
    venv_open "$VENV" "$PYTHON"
    PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
    "${PIP[@]}" install "$VLLM_REQ"
    "${PIP[@]}" install -e "$ROOT"
    "${PIP[@]}" install "${EXTRA[@]}"
    venv_mark "$VENV" "$STAMP"
    echo "gpu_e2e: $VENV ready in $((SECONDS - start)) s"
fi

"$VENV/bin/python" - <<'EOF'
import torch
import vllm

assert torch.cuda.is_available(), "torch in .venv-gpu sees no CUDA GPU"
print("gpu_e2e: vllm", vllm.__version__, "torch", torch.__version__, "on",
      torch.cuda.get_device_name(0))
EOF
"$VENV/bin/python" "$ROOT/scripts/make_tiny_model.py" "$ROOT/.cache/tiny-gpt-oss"

cd "$ROOT"
export VENV_GPU="$VENV"
export VLLM_START_TIMEOUT_S="${VLLM_START_TIMEOUT_S:-600}"
exec "$VENV/bin/python" -m pytest tests/gpu -q -p no:cacheprovider "$@"
