#!/usr/bin/env bash
# Build the release files (sdist and wheel) into .cache/dist and check them with twine.
#
#   scripts/build_dist.sh     (needs .venv: scripts/setup_env.sh installs build and twine)
#
# tests/wheel then installs that wheel into a fresh environment (HARMONY_EXT_DIST), and
# scripts/setup_wheel_vllm_env.sh puts it under the vLLM e2e tier.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"  # any Python with build and twine
DIST="$ROOT/.cache/dist"
source "$ROOT/scripts/venv.sh"
venv_log "$ROOT/.cache/logs/build_dist.log"

rm -rf "$DIST"
venv_step "build_dist: build the sdist and wheel into $DIST" \
    "$PY" -m build --outdir "$DIST" "$ROOT"
venv_step "build_dist: twine check --strict" "$PY" -m twine check --strict "$DIST"/*
