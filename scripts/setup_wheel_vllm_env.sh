#!/usr/bin/env bash
# Make .cache/venv-vllm-wheel: vLLM with harmony-ext from the BUILT WHEEL, not the checkout.
#
#   scripts/setup_wheel_vllm_env.sh [ENGINE_SITE]
#
# A fresh venv on .venv-vllm's interpreter whose own site-packages holds only the wheel
# (.cache/dist, from scripts/build_dist.sh, installed --no-deps); a .pth file then appends,
# as plain path entries, ENGINE_SITE (e.g. .venv-vllm-0.33/site: vLLM 0.33's Python, with
# VLLM_TARGET_DEVICE=cpu as that tier sets it) and .venv-vllm's site-packages (vLLM and its
# dependencies). Plain entries do not run the .pth files found there, so .venv-vllm's
# editable install of the checkout stays inert: a module the wheel lacks cannot be found in
# the checkout. The one thing of the checkout on the path is harmony_ext_testing (the tests'
# scripted logits processor, never in the wheel), through a folder that holds only it.
# Seconds; rebuilt on every call (the wheel changes with every build).
#
# scripts/vllm_tiny_server.sh with VENV_VLLM=.cache/venv-vllm-wheel HARMONY_EXT_FROM=wheel
# then serves from it (with PYTHONSAFEPATH=1, so the folder it starts in is not on the path
# either); tests/e2e_vllm checks in each server's log where harmony-ext came from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="$ROOT/.venv-vllm"
VENV="$ROOT/.cache/venv-vllm-wheel"
ENGINE_SITE="${1:-}"
source "$ROOT/scripts/venv.sh"
venv_log "$ROOT/.cache/logs/setup_wheel_vllm_env.log"

wheels=("$ROOT"/.cache/dist/harmony_ext-*.whl)
if [[ ! -f "${wheels[0]}" ]]; then
    echo "setup_wheel_vllm_env: no wheel in .cache/dist; run scripts/build_dist.sh first" >&2
    exit 1
fi
base_python="$("$BASE/bin/python" -c 'import sys; print(sys._base_executable)')"
base_site="$("$BASE/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

rm -rf "$VENV"
venv_step "setup_wheel_vllm_env: fresh venv $VENV" "$base_python" -m venv --without-pip "$VENV"
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
# Installed before the .pth exists, so pip sees an empty environment.
venv_step "install $(basename "${wheels[0]}") (no dependencies)" \
    "$BASE/bin/python" -m pip install -q --disable-pip-version-check --no-deps --no-index \
    --target "$site" "${wheels[0]}"
rm -rf "$site/bin"  # --target's copy of the console script (its shebang is another venv's)
mkdir -p "$VENV/testing"
ln -s "$ROOT/harmony_ext_testing" "$VENV/testing/harmony_ext_testing"
{
    echo "$VENV/testing"
    if [[ -n "$ENGINE_SITE" ]]; then
        echo "import os; os.environ.setdefault('VLLM_TARGET_DEVICE', 'cpu')"
        realpath "$ENGINE_SITE"
    fi
    echo "$base_site"
} >"$site/zz_harmony_ext_wheel_tier.pth"

check() {  # from another folder, as the servers run (PYTHONSAFEPATH: no cwd on the path)
    (cd "$VENV" && PYTHONSAFEPATH=1 "$VENV/bin/python" - "$site") <<'PY'
import sys
site = sys.argv[1]
from importlib import metadata
import harmony_ext_testing, harmony_plugins, sglang_ext, vllm_ext
for module in (harmony_plugins, vllm_ext, sglang_ext):
    assert module.__file__.startswith(site + "/"), f"{module.__name__} from {module.__file__}"
assert not harmony_ext_testing.__file__.startswith(site), harmony_ext_testing.__file__
print("vllm", metadata.version("vllm"), "harmony-ext", metadata.version("harmony-ext"), "from", site)
PY
}
venv_step "check: harmony-ext imports from the wheel, vLLM from .venv-vllm" check
tail -n 1 "$_VENV_LOG"
