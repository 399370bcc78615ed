#!/usr/bin/env bash
# The SGLang case suite on a CUDA GPU: a real SGLang server with harmony-ext.
#
#   scripts/gpu_e2e_sglang.sh [pytest args...]
#
# Creates .venv-gpu-sglang (SGLang from PyPI with its CUDA dependencies, this package editable,
# pytest and the openai client), builds the tiny gpt-oss model into .cache/tiny-gpt-oss and runs
# tests/gpu/test_gpu_sglang.py: python -m sglang.launch_server on the GPU with
# --tool-call-parser/--reasoning-parser harmony-ext and --enable-custom-logit-processor, once with
# one tokenizer process and once with --tokenizer-worker-num 2; every case of
# harmony_ext_testing/sglang_cases.py is forced through SGLang's per-request custom logit processor
# (harmony_ext_testing.sglang_scripted) and checked streamed and not with the openai client. Needs an NVIDIA GPU
# and access to PyPI; exits 3 without a GPU. Idempotent: .venv-gpu-sglang/.ok records what the
# venv was built for.
#
# Environment:
#   PYTHON                  interpreter for the venv (default: python3.11)
#   VENV_GPU_SGLANG         the venv (default: .venv-gpu-sglang)
#   SGLANG_REQ              the SGLang requirement (default: sglang==0.5.23)
#   GPU_SERVER_ARGS         extra server flags, e.g. "--attention-backend fa3"
#   SGLANG_START_TIMEOUT_S  server start-up limit (default: 600 s)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV_GPU_SGLANG:-$ROOT/.venv-gpu-sglang}"
PYTHON="${PYTHON:-python3.11}"
SGLANG_REQ="${SGLANG_REQ:-sglang==0.5.23}"
EXTRA=(openai pytest)

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "$0: no NVIDIA GPU here (nvidia-smi is missing or fails)" >&2
    exit 3
fi

source "$ROOT/scripts/venv.sh"
STAMP="$(venv_stamp "$PYTHON" "$SGLANG_REQ" "${EXTRA[*]}")"
if ! venv_current "$VENV" "$STAMP"; then
    start=$SECONDS
    venv_open "$VENV" "$PYTHON"
    PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)
    "${PIP[@]}" install "$SGLANG_REQ"
    "${PIP[@]}" install -e "$ROOT"
    "${PIP[@]}" install "${EXTRA[@]}"
    venv_mark "$VENV" "$STAMP"
    echo "gpu_e2e_sglang: $VENV ready in $((SECONDS - start)) s"
fi

"$VENV/bin/python" - <<'EOF'
from importlib.metadata import entry_points

import sglang
import torch

assert torch.cuda.is_available(), "torch in .venv-gpu-sglang sees no CUDA GPU"
names = [ep.name for ep in entry_points(group="sglang.srt.plugins")]
assert "harmony-ext" in names, f"harmony-ext's SGLang plugin is not installed: {names}"
print("gpu_e2e_sglang: sglang", sglang.__version__, "torch", torch.__version__, "on",
      torch.cuda.get_device_name(0))
EOF
"$VENV/bin/python" "$ROOT/scripts/make_tiny_model.py" "$ROOT/.cache/tiny-gpt-oss"

cd "$ROOT"
export VENV_GPU_SGLANG="$VENV"
export SGLANG_START_TIMEOUT_S="${SGLANG_START_TIMEOUT_S:-600}"
exec "$VENV/bin/python" -m pytest tests/gpu/test_gpu_sglang.py -q -p no:cacheprovider "$@"
