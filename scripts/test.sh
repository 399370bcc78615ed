#!/usr/bin/env bash
# Set up every test environment and run the whole test suite (what CI runs).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup_env.sh
.venv/bin/ruff check .
.venv/bin/python -m pytest tests -p no:cacheprovider \
    --ignore=tests/e2e_vllm --ignore=tests/sglang --ignore=tests/gpu "$@"
