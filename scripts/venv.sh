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

# Where the engine venvs can be built, and the room they take.
#
#   venv_platform PYTHON NAME    stop, in one line naming what is missing, unless this is x86-64
#                                Linux and PYTHON is Python 3.11 (what the engine venvs are built
#                                from PyPI for and tested on)
#   venv_gib VENV                print the GiB VENV takes once built (VENV_GIB below)
#   venv_size_line VENV          print "NAME takes N.N GiB", measured
#   venv_room VENV...            print the free space and what those of the venvs (paths) not
#                                yet built need; fail, saying how much to free, when they would
#                                not fit
#
# VENV_GIB: each venv's size once built, in GiB, rounded up. Not an estimate: the engine tiers
# measure the venv they run in (tests/vllm/test_installed_set.py, tests/sglang/...) and fail
# unless it is within the GiB below its figure. VENV_SPARE_GIB: pip's room beside them while it
# installs (it unpacks each wheel before it copies it in).
VENV_GIB=(.venv-vllm:7 .venv-vllm-0.33:1 .venv-vllm-0.34:1 .venv-sglang:11 .venv-sglang-0.5.22:11)
VENV_SPARE_GIB=2

venv_platform() {
    local python=$1 name=$2 version
    if [[ "$(uname -sm)" != "Linux x86_64" ]]; then
        echo "$name: needs x86-64 Linux, the platform its packages are taken from PyPI for" \
            "and tested on; this is $(uname -sm)" >&2
        exit 2
    fi
    version="$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" ||
        version="not found"
    if [[ $version != 3.11 ]]; then
        echo "$name: needs Python 3.11 ('$python': $version); name one with" \
            "PYTHON=/path/to/python3.11" >&2
        exit 2
    fi
}

venv_gib() {
    local entry
    for entry in "${VENV_GIB[@]}"; do
        if [[ ${entry%%:*} == "$(basename "$1")" ]]; then
            echo "${entry##*:}"
            return 0
        fi
    done
    return 1
}

venv_size_line() {
    du -sk "$1/" | awk -v name="$(basename "$1")" '{ printf "%s takes %.1f GiB", name, $1 / 1048576 }'
}

venv_room() {
    local need=0 free venv gib
    for venv in "$@"; do
        # a venv under another name (SGLANG_VENV=DIR) is counted as the largest
        gib="$(venv_gib "$venv" || printf '%s\n' "${VENV_GIB[@]##*:}" | sort -n | tail -1)"
        [[ -x $venv/bin/python ]] || need=$((need + gib))
    done
    free="$(df -Pk "$(dirname "$1")" | awk 'NR == 2 { print int($4 / 1048576) }')"
    echo "  ${free} GiB free on this disk; the venvs still to build need ${need} GiB" \
        "(and pip ${VENV_SPARE_GIB} GiB more while it installs)"
    if ((need > 0 && free < need + VENV_SPARE_GIB)); then
        echo "  not enough room: free at least $((need + VENV_SPARE_GIB - free)) GiB more" \
            "(old clones, ~/.cache/pip) and run again"
        return 1
    fi
}
