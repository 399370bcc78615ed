#!/usr/bin/env bash
# Create /work/main/.venv-sglang: a CPU-only SGLang install that is just large enough to import
# SGLang's parsers, plugin loader, serving classes, detokenizer and argument parser, so the
# sglang_ext adapter can be tested against the real code without a GPU.
#
# SGLang's own requirements pull CUDA kernels and several GB we cannot use, so sglang is installed
# with --no-deps and only the modules the tested code paths import are added. Idempotent: a marker
# file records the exact requirement set; a second run with the same set does nothing.
#
# Usage: scripts/setup_sglang_env.sh [--force]
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SGLANG_VENV:-$ROOT/.venv-sglang}"
PYTHON="${PYTHON:-python3.11}"
MARKER="$VENV/.harmony-ext-requirements"

SGLANG_REQ="sglang==0.5.23"
# One consistent torch set: the serving classes and the detokenizer import torchvision (through
# sglang.srt.configs), and PyPI's torchvision is built against the CUDA torch, so the CPU torch
# 2.13.0 cannot be used; torch 2.14.1 + torchvision 0.29.1 (with their CUDA runtime wheels, unused
# here) come from the machine's local wheel store. Pins follow sglang 0.5.23's own where it has one.
DEPS=(
  "torch==2.14.1" "torchvision==0.29.1"
  numpy orjson psutil pybase64 requests packaging pillow starlette msgspec pydantic pyzmq tqdm
  IPython aiohttp "openai==2.8.0" partial_json_parser regex "xgrammar==0.2.7"
  "transformers==5.19.0" "tokenizers==0.23.2" "sentencepiece==0.2.1" "compressed-tensors==0.18.0"
  gguf dill einops uvloop jsonschema setproctitle "prometheus-client>=0.20.0"
  fastapi uvicorn "oss-harmony==0.0.11" python-multipart soundfile
)
TEST_DEPS=(pytest hypothesis)

# The marker content is the full requirement set; any change re-runs the install.
WANT="$(printf '%s\n' "$PYTHON" "$SGLANG_REQ" "${DEPS[@]}" "${TEST_DEPS[@]}" "-e $ROOT")"

if [[ "${1:-}" != "--force" && -f "$MARKER" ]] && [[ "$(cat "$MARKER")" == "$WANT" ]]; then
  echo "setup_sglang_env: $VENV is up to date"
  exit 0
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)

rm -f "$MARKER"
echo "setup_sglang_env: installing into $VENV (pip lists sglang's unmet CUDA requirements: expected)"
"${PIP[@]}" --no-deps "$SGLANG_REQ"
"${PIP[@]}" "${DEPS[@]}" "${TEST_DEPS[@]}"
"${PIP[@]}" -e "$ROOT"

# Prove the modules the adapter and its tests rely on import before declaring success.
"$VENV/bin/python" - <<'EOF'
import importlib

for name in [
    "sglang.srt.function_call.function_call_parser",
    "sglang.srt.parser.reasoning_parser",
    "sglang.srt.plugins",
    "sglang.srt.entrypoints.openai.serving_chat",
    "sglang.srt.managers.detokenizer_manager",
    "sglang.srt.server_args",
    "sglang.launch_server",
    "openai_harmony",
    "harmony_plugins",
]:
    importlib.import_module(name)
from sglang.srt.plugins import HookRegistry, load_plugins  # noqa: F401
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat  # noqa: F401
from sglang.srt.managers.detokenizer_manager import DetokenizerManager  # noqa: F401
print("setup_sglang_env: imports ok")
EOF

printf '%s' "$WANT" >"$MARKER"
echo "setup_sglang_env: ready at $VENV"
