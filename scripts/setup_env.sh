#!/usr/bin/env bash
# Create .venv: the core package (editable) with its test tools. No engine, no torch.
#
# Idempotent: the stamp .venv/.ok records the pyproject.toml it was built from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3

source "$ROOT/scripts/venv.sh"
STAMP="$(venv_stamp "$PYTHON")"
if venv_current "$VENV" "$STAMP"; then
    exit 0
fi
start=$SECONDS
venv_log "$ROOT/.cache/logs/setup_env.log"
venv_open "$VENV" "$PYTHON"
venv_step "setup_env: install harmony-ext (editable) and its test tools into $VENV" \
    venv_retry "$VENV/bin/python" -m pip install --disable-pip-version-check -q -e "$ROOT[test]"
venv_mark "$VENV" "$STAMP"
echo "setup_env: $VENV ready in $((SECONDS - start)) s; $(venv_size_line "$VENV")"
