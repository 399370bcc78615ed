#!/usr/bin/env bash
# Set up every test environment and run the whole test suite (CI runs exactly this).
#
#   .venv         the core and its tests (seconds)
#   .venv-vllm    a real CPU vLLM: adapter tests on vLLM's classes, and end-to-end tests
#                 against real vLLM servers on a tiny gpt-oss model (a few minutes)
#   .venv-sglang  a real SGLang 0.5.23: adapter tests on SGLang's classes and serving code
#   .venv-sglang-0.5.22  the same tests on SGLang 0.5.22, the oldest release the README claims
#   then the benchmark's smoke test, whose workers use the first three (no timing is asserted)
#
# Every suite runs even when an earlier one fails; the exit status is non-zero if any did.
# Extra arguments go to every pytest run (e.g. -x, -q).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

failed=()
run() {  # run NAME COMMAND...: run a step, remember its failure
    local name="$1"
    shift
    echo "==== $name"
    "$@"
    local status=$?
    ((status == 0)) || failed+=("$name")
    return "$status"
}

run "set up .venv" scripts/setup_env.sh
run "ruff" .venv/bin/ruff check .
run "core tests" .venv/bin/python -m pytest tests -p no:cacheprovider \
    --ignore=tests/vllm --ignore=tests/e2e_vllm --ignore=tests/sglang --ignore=tests/gpu \
    --ignore=tests/test_bench_smoke.py "$@"

if run "set up .venv-vllm" scripts/setup_vllm_env.sh; then
    run "vLLM tests" .venv-vllm/bin/python -m pytest -p no:cacheprovider \
        tests/vllm tests/e2e_vllm tests/gpu "$@"
fi

if run "set up .venv-sglang" scripts/setup_sglang_env.sh; then
    run "SGLang tests" .venv-sglang/bin/python -m pytest -p no:cacheprovider tests/sglang "$@"
fi

if run "set up .venv-sglang-0.5.22" scripts/setup_sglang_env.sh 0.5.22; then
    run "SGLang 0.5.22 tests" .venv-sglang-0.5.22/bin/python -m pytest -p no:cacheprovider \
        tests/sglang "$@"
fi

# The benchmark's workers run in every venv above, so its smoke test comes last.
run "benchmark smoke test" .venv/bin/python -m pytest -p no:cacheprovider \
    tests/test_bench_smoke.py "$@"

if ((${#failed[@]})); then
    echo "==== FAILED: ${failed[*]}"
    exit 1
fi
echo "==== all suites passed"
