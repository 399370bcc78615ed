#!/usr/bin/env bash
# What harmony-ext saves a real vLLM API server under streaming load (scripts/bench_server.py;
# docs/bench-server.md, .json and .png).
#
#   bash scripts/bench_server.sh                          # the README's run (about 100 minutes)
#   bash scripts/bench_server.sh --cells call:1k:1 --repeats 1 --profile-cells '' \
#       --out /tmp/b.md                                   # one cell, a few minutes
#
# Sets up .venv-vllm (scripts/setup_vllm_env.sh) and, for the plot, .venv with the `bench`
# extra (matplotlib), then runs the benchmark with .venv-vllm's Python. Extra arguments go to
# scripts/bench_server.py (`--help` lists them).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

source scripts/venv.sh
scripts/setup_env.sh
scripts/setup_vllm_env.sh
if ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
    venv_log "$ROOT/.cache/logs/bench_server_setup.log"
    venv_step "bench_server: install matplotlib (the plot) into .venv" \
        .venv/bin/python -m pip install --disable-pip-version-check -q -e '.[bench]'
fi
exec .venv-vllm/bin/python scripts/bench_server.py "$@"
