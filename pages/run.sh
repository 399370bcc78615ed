#!/usr/bin/env bash
# Regenerate one comparison page, in the venv that has its engine:
#
#   bash pages/run.sh vllm-comparison     # .venv-vllm: two CPU servers -> docs/vllm-comparison.md
#   bash pages/run.sh multi-turn-vllm     # .venv-vllm: two CPU servers -> docs/multi-turn-vllm.md
#   bash pages/run.sh sglang-comparison   # .venv-sglang: SGLang's serving -> docs/sglang-comparison.md
#   bash pages/run.sh multi-turn-sglang   # .venv-sglang: SGLang's serving -> docs/multi-turn-sglang.md
#   bash pages/run.sh conformance         # .venv, which runs each engine venv -> docs/conformance.md
#
# These are recorders, not tests: each puts the same cases through harmony-ext and through the
# engine's built-in gpt-oss parsing (starting the servers it needs, stopping them after) and
# writes what each returned; nothing is judged but by canitoolcall's own checks on the
# conformance page (the test suite holds harmony-ext to the contract, and to canitoolcall). The venvs are the test suite's (scripts/test.sh builds them); nothing but the page
# is written into the checkout. Extra arguments go to the generator (e.g. --out FILE).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

page="${1:?usage: bash pages/run.sh vllm-comparison|multi-turn-vllm|sglang-comparison|multi-turn-sglang|conformance [ARGS...]}"
shift
case "$page" in
    vllm-comparison | multi-turn-vllm) venv=.venv-vllm ;;
    sglang-comparison | multi-turn-sglang) venv=.venv-sglang ;;
    conformance) venv=.venv ;;
    *) echo "unknown page '$page': vllm-comparison, multi-turn-vllm, sglang-comparison, multi-turn-sglang or conformance" >&2; exit 2 ;;
esac
if [[ ! -x "$venv/bin/python" ]]; then
    echo "$venv is missing: bash scripts/test.sh builds it" >&2
    exit 2
fi
export PYTHONHASHSEED=0 TOKENIZERS_PARALLELISM=false
exec "$venv/bin/python" -m "pages.${page//-/_}" "$@"
