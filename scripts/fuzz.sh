#!/usr/bin/env bash
# A longer fuzz run than CI's, on a developer's machine: the fuzz tests of every tier whose venv
# is built, each with N outputs (and a quarter of N grammar-admitted ones in the engine tiers)
# from seed S on (harmony_ext_testing/fuzzed_outputs.py; CONTRIBUTING.md says what they check).
#
#   scripts/fuzz.sh [N [S]]     N: outputs per fuzz test (default 3000); S: the first seed
#                               (default CI's, 56000; another S: other outputs than CI's)
#
# Each failing output prints its seed, ids and text as a case for tests/contract_cases.py.
# Extra pytest arguments can follow in PYTEST_ARGS (e.g. PYTEST_ARGS=-x). Exits non-zero if any
# tier failed; every built tier runs.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

n="${1:-3000}"
seed="${2:-56000}"
read -r -a extra <<<"${PYTEST_ARGS:-}"
failed=()

fuzz() {  # fuzz NAME VENV TESTS...: one tier's fuzz tests, if its venv is built
    local name="$1" venv="$2"
    shift 2
    if [[ ! -x $venv/bin/python ]]; then
        echo "==== $name: $venv is not built, skipped"
        return
    fi
    echo "==== $name ($(date -u +%H:%M:%S)): $n outputs from seed $seed"
    HARMONY_EXT_FUZZ="$n" HARMONY_EXT_FUZZ_SEED="$seed" VENV_VLLM="$PWD/$venv" \
        "$venv/bin/python" -m pytest -q -p no:cacheprovider "$@" "${extra[@]}" ||
        failed+=("$name")
}

fuzz core .venv tests/test_fuzzed_outputs.py -k hold_every_invariant
for venv in .venv-vllm .venv-vllm-0.33 .venv-vllm-0.34; do
    fuzz "vLLM ($venv)" "$venv" tests/e2e_vllm/test_fuzzed_outputs_server.py
done
for venv in .venv-sglang .venv-sglang-0.5.22; do
    fuzz "SGLang ($venv)" "$venv" tests/sglang/test_fuzzed_outputs.py
done

if ((${#failed[@]})); then
    echo "==== FAILED: ${failed[*]}"
    exit 1
fi
echo "==== every fuzz run passed"
