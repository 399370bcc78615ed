#!/usr/bin/env bash
# Create a CPU-only SGLang install that is just large enough to import SGLang's parsers, plugin
# loader, serving classes, detokenizer and argument parser, so the sglang_ext adapter can be tested
# against the real code without a GPU:
#
#   scripts/setup_sglang_env.sh            SGLang 0.5.23 in .venv-sglang
#   scripts/setup_sglang_env.sh 0.5.22     SGLang 0.5.22 in .venv-sglang-0.5.22
#                                          (or SGLANG_VERSION=0.5.22; SGLANG_VENV=DIR overrides)
#   ... --force                            rebuild even when up to date
#
# SGLang's own requirements pull CUDA kernels and several GB we cannot use, so sglang is installed
# with --no-deps and only the modules the tested code paths import are added. Idempotent: the stamp
# VENV/.ok (scripts/venv.sh) records the requirement set; a second run with the same set does
# nothing. One line per step; the steps' output goes to .cache/logs/, named when a step fails.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3.11}"
FORCE=0
VERSION="${SGLANG_VERSION:-0.5.23}"
for arg in "$@"; do
    case "$arg" in
        --force) FORCE=1 ;;
        [0-9]*) VERSION="$arg" ;;
        *) echo "usage: scripts/setup_sglang_env.sh [VERSION] [--force]" >&2; exit 2 ;;
    esac
done

# Pins follow each sglang release's own Requires-Dist where it has one (torch 2.14.1,
# transformers 5.19.0, xgrammar 0.2.7, tokenizers, sentencepiece, compressed-tensors are the same
# in 0.5.22 and 0.5.23; only openai differs).
case "$VERSION" in
    0.5.23) OPENAI="openai==2.8.0"; AGENTS="openai-agents==0.6.2"; DEFAULT_VENV="$ROOT/.venv-sglang" ;;
    0.5.22) OPENAI="openai==2.6.1"; AGENTS="openai-agents==0.4.2"; DEFAULT_VENV="$ROOT/.venv-sglang-0.5.22" ;;
    *) echo "setup_sglang_env: SGLang $VERSION is not one this script knows (0.5.22, 0.5.23)" >&2
       exit 2 ;;
esac
VENV="${SGLANG_VENV:-$DEFAULT_VENV}"
LOG="$ROOT/.cache/logs/setup_sglang_env-$VERSION.log"  # every step's output, named on failure
SGLANG_REQ="sglang==$VERSION"
# One consistent torch set: the serving classes and the detokenizer import torchvision (through
# sglang.srt.configs), and PyPI's torchvision is built against the CUDA torch, so the CPU torch
# 2.13.0 cannot be used; torch 2.14.1 + torchvision 0.29.1 (with their CUDA runtime wheels, unused
# here) come from the machine's local wheel store: each venv installs them from disk, no download.
DEPS=(
  "torch==2.14.1" "torchvision==0.29.1"
  numpy orjson psutil pybase64 requests packaging pillow starlette msgspec pydantic pyzmq tqdm
  IPython aiohttp "$OPENAI" partial_json_parser regex "xgrammar==0.2.7"
  "transformers==5.19.0" "tokenizers==0.23.2" "sentencepiece==0.2.1" "compressed-tensors==0.18.0"
  gguf dill einops uvloop jsonschema setproctitle "prometheus-client>=0.20.0"
  fastapi uvicorn "oss-harmony==0.0.11" python-multipart soundfile
)
# The OpenAI Agents SDK (a real agent against SGLang's app): the newest release that takes the
# openai above (later ones need openai 3).
TEST_DEPS=(pytest hypothesis "tiktoken>=0.8" "$AGENTS" canitoolcall==0.1.1)

source "$ROOT/scripts/venv.sh"
STAMP="$(venv_stamp "$PYTHON" "$SGLANG_REQ" "${DEPS[*]}" "${TEST_DEPS[*]}")"
if ((!FORCE)) && venv_current "$VENV" "$STAMP"; then
    echo "setup_sglang_env: $VENV (SGLang $VERSION) is up to date"
    exit 0
fi

start=$SECONDS
mkdir -p "$VENV"
venv_log "$LOG"
echo "setup_sglang_env: SGLang $VERSION into $VENV"
venv_step "create the venv" venv_open "$VENV" "$PYTHON"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# --no-deps: sglang's own requirements are CUDA kernels this CPU install leaves out.
venv_step "install $SGLANG_REQ (without its CUDA requirements)" venv_retry "${PIP[@]}" --no-deps "$SGLANG_REQ"
venv_step "install torch, transformers and the modules SGLang's parsers import" \
    venv_retry "${PIP[@]}" "${DEPS[@]}" "${TEST_DEPS[@]}"
venv_step "install harmony-ext (editable)" venv_retry "${PIP[@]}" -e "$ROOT"

# Prove the modules the adapter and its tests rely on import before declaring success.
venv_step "import SGLang's parser, plugin, serving and detokenizer modules" "$VENV/bin/python" - <<'EOF'
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
EOF

venv_mark "$VENV" "$STAMP"
echo "setup_sglang_env: SGLang $VERSION ready in $((SECONDS - start)) s"
