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

# Steps print one line each with their elapsed time; their output goes to a log file that is
# named only when a step fails (a user's first minute shows the product, not pip's noise).
#
#   venv_log FILE           send the steps' output to FILE (truncated)
#   venv_step NAME CMD...   run CMD, print "NAME (Ns)", or on failure the log's tail and path
#   venv_retry CMD...       run CMD up to three times: for the steps that download from the
#                           package index, where a dropped connection is no reason to stop

_VENV_LOG=/dev/null

venv_log() {
    _VENV_LOG=$1
    mkdir -p "$(dirname "$_VENV_LOG")"
    : >"$_VENV_LOG"
}

venv_step() {
    local name=$1 start=$SECONDS
    shift
    echo "== $name" >>"$_VENV_LOG"
    if "$@" >>"$_VENV_LOG" 2>&1; then
        echo "  $name ($((SECONDS - start)) s)"
    else
        echo "  $name FAILED after $((SECONDS - start)) s; last lines of $_VENV_LOG:" >&2
        tail -n 20 "$_VENV_LOG" >&2
        echo "  full log: $_VENV_LOG" >&2
        return 1
    fi
}

venv_retry() {
    local attempt
    for attempt in 1 2; do
        "$@" && return 0
        echo "== that failed (attempt $attempt of 3); once more in 10 s"
        sleep 10
    done
    "$@"
}
