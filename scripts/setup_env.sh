#!/usr/bin/env bash
# Create .venv: the core package (editable) with its test tools. No engine, no torch.
#
# Idempotent: the stamp .venv/.ok records the pyproject.toml it was built from.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3

STAMP="$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')|$(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
if [[ -f "$VENV/.ok" && "$(cat "$VENV/.ok")" == "$STAMP" ]]; then
    exit 0
fi
rm -f "$VENV/.ok"
[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --disable-pip-version-check -q -e "$ROOT[test]"
echo "$STAMP" >"$VENV/.ok"
echo "setup_env: $VENV ready"
