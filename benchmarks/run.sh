#!/usr/bin/env bash
# Regenerate one benchmark's result page, in the venv that has its engine:
#
#   bash benchmarks/run.sh core     # .venv: the core against openai_harmony -> docs/bench-core.md
#   bash benchmarks/run.sh vllm     # .venv-vllm: vLLM's built-in against ours -> docs/bench-vllm.md
#   bash benchmarks/run.sh sglang   # .venv-sglang: SGLang's built-in against ours -> docs/bench-sglang.md
#   bash benchmarks/run.sh guard-vllm    # .venv-vllm: the generation guard beside vLLM's check_stop
#   bash benchmarks/run.sh guard-sglang  # .venv-sglang: beside SGLang's Req.update_finish_state
#                                        # -> docs/bench-guard-vllm.md, docs/bench-guard-sglang.md
#
# The venvs are the test suite's (scripts/test.sh builds them). Extra arguments go to
# `python -m benchmarks.bench` (--lengths 1k,4k,16k, --shapes call, --repeats 5), or to
# `python -m benchmarks.guard` (--rounds 7), and are named on the page. Each run takes minutes at most; the figures also print on stdout.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

suite="${1:?usage: bash benchmarks/run.sh core|vllm|sglang|guard-vllm|guard-sglang [ARGS...]}"
shift
module=benchmarks.bench engine="$suite"
case "$suite" in
    core) venv=.venv ;;
    vllm) venv=.venv-vllm ;;
    sglang) venv=.venv-sglang ;;
    guard-vllm) venv=.venv-vllm module=benchmarks.guard engine=vllm ;;
    guard-sglang) venv=.venv-sglang module=benchmarks.guard engine=sglang ;;
    *) echo "unknown benchmark '$suite': core, vllm, sglang, guard-vllm or guard-sglang" >&2
       exit 2 ;;
esac
if [[ ! -x "$venv/bin/python" ]]; then
    echo "$venv is missing: bash scripts/test.sh builds it" >&2
    exit 2
fi
export PYTHONHASHSEED=0 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1 VLLM_LOGGING_LEVEL=WARNING
exec "$venv/bin/python" -m "$module" "$engine" --out "docs/bench-$suite.md" \
    --command "bash benchmarks/run.sh $suite${*:+ $*}" "$@"
