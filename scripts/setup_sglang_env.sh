#!/usr/bin/env bash
# Create a real SGLang on the CPU, to test the sglang_ext adapter against SGLang's own parser
# classes, serving code, plugin loader and detokenizer without a GPU:
#
#   scripts/setup_sglang_env.sh            SGLang 0.5.23 in .venv-sglang
#   scripts/setup_sglang_env.sh 0.5.22     SGLang 0.5.22 in .venv-sglang-0.5.22
#                                          (or SGLANG_VERSION=0.5.22; SGLANG_VENV=DIR overrides)
#   ... --force                            rebuild even when up to date
#
# It installs what `pip install sglang==VERSION` brings, from PyPI: SGLang's own requirements as
# its metadata states them, its CUDA build of torch and its GPU kernel packages included: they
# install without a GPU, and SGLang's serving modules import several of them (sgl_kernel,
# flashinfer, deep_ep, flash_attn, cutlass), which load on the CPU. So every library SGLang's
# code imports is the one a user of that release has (openai-harmony 0.0.4, not vLLM's
# oss-harmony fork). PINS below is the only difference, each with why; the test tools come on
# top. tests/sglang/test_installed_set.py holds the venv to that, reading SGLang's metadata.
# A local wheel store or mirror in pip's configuration is used where it has the same files.
#
# Idempotent: the stamp VENV/.ok (scripts/venv.sh) records the requirement set; a second run with
# the same set does nothing. One line per step with its time; the steps' output goes to
# .cache/logs/, named when a step fails. The last line gives the time and the venv's size.
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

# The OpenAI Agents SDK (a real agent against SGLang's app): the newest release that takes the
# openai each SGLang release pins (later ones need openai 3).
# REPLACE: SGLang's requirements this release's venv takes otherwise (NAME=REQUIREMENT), each
# for a reason below.
#   cuda-tile  SGLang 0.5.22 pins cuda-tile==1.6.0rc5, whose PyPI release is a stub that fetches
#              the wheel from NVIDIA's own index while it installs: from PyPI alone it fails (no
#              such index here), and so does `pip install sglang==0.5.22`. flashinfer-python,
#              which SGLang also requires, asks for cuda-tile>=1.4.0: the venv takes that (PyPI's
#              wheel). A GPU kernel library; nothing SGLang imports on the CPU loads it. 0.5.23
#              no longer pins it.
case "$VERSION" in
    0.5.23) AGENTS="openai-agents==0.6.2"; DEFAULT_VENV="$ROOT/.venv-sglang"; REPLACE=() ;;
    0.5.22) AGENTS="openai-agents==0.4.2"; DEFAULT_VENV="$ROOT/.venv-sglang-0.5.22"; REPLACE=("cuda-tile=cuda-tile>=1.4.0") ;;
    *) echo "setup_sglang_env: SGLang $VERSION is not one this script knows (0.5.22, 0.5.23)" >&2
       exit 2 ;;
esac
VENV="${SGLANG_VENV:-$DEFAULT_VENV}"
LOG="$ROOT/.cache/logs/setup_sglang_env-$VERSION.log"  # every step's output, named on failure
SGLANG_REQ="sglang==$VERSION"
# Where this venv differs from `pip install sglang==VERSION`, and why:
#   torchvision==0.29.1  SGLang names torchvision without a version; this is the release made
#                        with the torch it pins (2.14.1). PyPI has a later 0.29.2, which pip would
#                        take from PyPI alone while a wheel store that carries torch 2.14.1's set
#                        offers 0.29.1: pinned, both sources install the same files.
PINS=("torchvision==0.29.1")
TEST_DEPS=(pytest hypothesis "tiktoken>=0.8" "$AGENTS" canitoolcall==0.1.1)

source "$ROOT/scripts/venv.sh"
venv_platform "$PYTHON" setup_sglang_env
STAMP="$(venv_stamp "$PYTHON" "$SGLANG_REQ" "${PINS[*]}" "${TEST_DEPS[*]}" "${REPLACE[*]}")"
if ((!FORCE)) && venv_current "$VENV" "$STAMP"; then
    echo "setup_sglang_env: $VENV (SGLang $VERSION) is up to date"
    exit 0
fi

start=$SECONDS
echo "setup_sglang_env: SGLang $VERSION into $VENV"
venv_room "$VENV" || exit 1
mkdir -p "$VENV"
venv_log "$LOG"
venv_step "create the venv" venv_open "$VENV" "$PYTHON"
PIP=("$VENV/bin/python" -m pip install --quiet --disable-pip-version-check)
# SGLang alone first, then its requirements as its own metadata states them
# (scripts/engine_requirements.py), REPLACE applied, with the pins and the test tools.
REQUIREMENTS="$VENV/sglang-requirements.txt"
venv_step "install $SGLANG_REQ alone" venv_retry "${PIP[@]}" --no-deps "$SGLANG_REQ"
venv_step "read its requirements from its metadata${REPLACE[*]:+ (${REPLACE[*]#*=} for its own pin)}" \
    bash -c '"$1" "$2" sglang "${@:4}" >"$3"' _ "$VENV/bin/python" \
    "$ROOT/scripts/engine_requirements.py" "$REQUIREMENTS" "${REPLACE[@]/#/--replace=}"
venv_step "install them, ${PINS[*]} and the test tools" \
    venv_retry "${PIP[@]}" -r "$REQUIREMENTS" "${PINS[@]}" "${TEST_DEPS[@]}"
# --no-deps: harmony-ext has no dependency, and nothing SGLang chose may move.
venv_step "install harmony-ext (editable)" venv_retry "${PIP[@]}" --no-deps -e "$ROOT"

pip_check() {  # pip check, but for SGLang's own pins on the names REPLACE gives otherwise
    local out line item status=0
    out="$("$VENV/bin/python" -m pip check --disable-pip-version-check 2>&1)" && return 0
    while IFS= read -r line; do
        for item in "${REPLACE[@]}"; do
            [[ $line == "sglang $VERSION has requirement ${item%%=*}"* ]] && continue 2
        done
        echo "$line"
        status=1
    done <<<"$out"
    return "$status"
}
venv_step "pip check: every installed requirement is met${REPLACE[*]:+ (except the sglang pin on ${REPLACE[*]%%=*})}" \
    pip_check

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
echo "setup_sglang_env: SGLang $VERSION ready in $((SECONDS - start)) s; $(venv_size_line "$VENV")"
