#!/usr/bin/env bash
# The performance benchmark: harmony-ext against openai_harmony and vLLM's and SGLang's own
# Harmony parsers, in one run (scripts/bench.py; docs/bench.md and docs/bench.png).
#
#   scripts/bench.sh            # full run (under 20 minutes on a 2-core machine)
#   scripts/bench.sh --quick    # a few minutes: docs/bench-quick.md and docs/bench-quick.png
#
# Runs with .venv (created by scripts/setup_env.sh if missing) plus the `bench` extra
# (matplotlib, for the plot). vLLM and SGLang are measured in .venv-vllm and .venv-sglang
# when they exist (scripts/setup_vllm_env.sh, scripts/setup_sglang_env.sh); without them
# their columns say "skipped (not installed)". Extra arguments go to scripts/bench.py.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

[[ -x .venv/bin/python ]] || scripts/setup_env.sh
if ! .venv/bin/python -c 'import matplotlib' 2>/dev/null; then
    .venv/bin/pip install --disable-pip-version-check -q -e '.[bench]'
fi
exec .venv/bin/python scripts/bench.py "$@"
