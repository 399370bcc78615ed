# shellcheck shell=bash
# Sourced by the setup scripts: a venv is rebuilt only when what it was built from changes.
# That is recorded as a stamp in VENV/.ok: the script's own parts (requirements), the
# interpreter's version and a hash of pyproject.toml, joined with "|".
#
#   venv_stamp PYTHON [PART...]   print the stamp
#   venv_current VENV STAMP       succeed when VENV is marked with STAMP
#   venv_open VENV PYTHON         unmark VENV, and create it if it does not exist
#   venv_mark VENV STAMP          mark VENV as built from STAMP

_VENV_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

venv_stamp() {
    local python=$1 version hash
    shift
    version="$("$python" -c 'import sys; print(sys.version.split()[0])')"
    hash="$(sha256sum "$_VENV_ROOT/pyproject.toml" | cut -c1-16)"
    local IFS='|'
    echo "$*${*:+|}$version|$hash"
}

venv_current() {
    [[ -f "$1/.ok" && "$(cat "$1/.ok")" == "$2" ]]
}

venv_open() {
    rm -f "$1/.ok"
    [[ -x "$1/bin/python" ]] || "$2" -m venv "$1"
}

venv_mark() {
    echo "$2" >"$1/.ok"
}
