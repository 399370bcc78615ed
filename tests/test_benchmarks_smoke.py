"""Each benchmark runs once at a tiny size in its engine's venv: its figures print side by side
and every implementation parses every stream to the same message. No timing is judged.

Runs after the engine venvs exist (``scripts/test.sh``'s last step); a suite whose venv is
missing is skipped with the reason. No server is started and nothing is written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.common import percentile

ROOT = Path(__file__).resolve().parents[1]
# suite -> (venv, the implementations its page compares, the shapes it runs)
SUITES = {
    "core": (None, ["core-ids", "openai_harmony", "core-text"], ["reasoning", "call"]),
    "vllm": (".venv-vllm", ["vllm-ext", "vllm-builtin", "core-ids"],
             ["reasoning", "final", "call", "calls"]),
    "sglang": (".venv-sglang", ["sglang-ext", "sglang-builtin", "core-text"],
               ["reasoning", "final", "call", "calls"]),
}
FIGURE = r"\d[\d,]*(\.\d+)?"


def test_percentile_is_nearest_rank() -> None:
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == 2.0  # a run that happened, not 2.5
    assert percentile([float(x) for x in range(1, 11)], 90) == 9.0
    assert percentile([5.0], 99) == 5.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple]]:
    """Every suite started at once (each is one mostly single-threaded process, so two cores
    halve the wait); output goes to files, so that no pipe fills while another is read."""
    env = dict(os.environ, PYTHONHASHSEED="0", TOKENIZERS_PARALLELISM="false",
               OMP_NUM_THREADS="1", VLLM_LOGGING_LEVEL="WARNING")
    folder = tmp_path_factory.mktemp("bench-smoke")
    started = {}
    for suite, (venv, _, _) in SUITES.items():
        if venv is not None and not (ROOT / venv / ".ok").exists():  # the set-up's last step
            continue
        python = sys.executable if venv is None else str(ROOT / venv / "bin" / "python")
        out, err = folder / f"{suite}.out", folder / f"{suite}.err"
        with open(out, "w") as o, open(err, "w") as e:
            started[suite] = (subprocess.Popen(
                [python, "-m", "benchmarks.bench", suite, "--smoke"], cwd=ROOT, env=env,
                stdout=o, stderr=e), out, err)
    yield started
    for proc, _, _ in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("suite", sorted(SUITES))
def test_benchmark_smoke(suite: str, runs: dict[str, tuple]) -> None:
    venv, impls, shapes = SUITES[suite]
    if suite not in runs:
        pytest.skip(f"{venv} is not set up (scripts/test.sh builds it)")
    proc, out_file, err_file = runs[suite]
    returncode = proc.wait(timeout=180)
    assert returncode == 0, err_file.read_text()[-3000:]
    out = out_file.read_text()
    for shape in shapes:  # each shape's table has a figure for every implementation
        table = out.split(f"### {shape}:")[1].split("###")[0].split("## Cross-check")[0]
        for impl in impls:
            for size in (1, 8):
                assert re.search(rf"^\| {re.escape(impl)} \| {size} \| {FIGURE} \|", table,
                                 re.M), (shape, impl, size, table)
        assert re.search(rf"^\| \*\*{re.escape(impls[1])} / {re.escape(impls[0])}\*\* \| 1 \| "
                         rf"\*\*{FIGURE}x\*\*", table, re.M), table
    checks = re.findall(r"^\| (\w+), ([18])/delta \| ([\w-]+) / ([\w-]+) \| (.*) \|$", out, re.M)
    want = {(s, z, other, impls[0]) for s in shapes for z in "18" for other in impls[1:]}
    assert {c[:4] for c in checks} == want
    assert [c for c in checks if c[4] != "same message"] == []


def test_cross_check_reports_a_different_message() -> None:
    """The cross-check can fail: a parser that loses the final answer is reported."""
    from benchmarks.bench import cross_check
    from benchmarks.common import TOOLS, streams
    from benchmarks.drivers import CoreDriver

    class LosesContent(CoreDriver):
        def collect(self, deltas: list) -> dict:
            return {**super().collect(deltas), "content": None}

    lossy = LosesContent(TOOLS, "text")
    lossy.name = "lossy"
    rows, bad = cross_check([CoreDriver(TOOLS, "ids"), lossy], streams(["final"], [300]),
                            ["final"], 300)
    assert bad == 2  # both delta sizes
    assert sum("| lossy / core-ids | **DIFFERENT**: content |" in r for r in rows) == 2


def test_the_drop_in_parsers_feedback_benchmark_prints_its_figures(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.compat_feedback`` at a tiny size: a figure per length and the
    ratio (no timing judged), the tool's result kept whole (else the exit status is 1)."""
    from benchmarks import compat_feedback

    assert compat_feedback.main(["--lengths", "300,600", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for n in (300, 600):
        assert re.search(rf"result of {n} tokens fed back: {FIGURE} us/token", out), out
    assert re.search(rf"600 / 300 per token {FIGURE}x$", out, re.M), out


GUARDS = {"vllm": ".venv-vllm", "sglang": ".venv-sglang"}


@pytest.mark.parametrize("engine", sorted(GUARDS))
def test_the_guard_benchmark_prints_its_figures(engine: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m benchmarks.guard ENGINE --smoke`` in the engine's venv: a row of figures per
    batch size, the first check after a ``<|start|>`` in a fresh process, and a marked request
    ended where it should (else the exit status is 1). The table goes to the test's output, so
    that CI's log shows it; no timing is judged."""
    venv = ROOT / GUARDS[engine]
    if not (venv / ".ok").exists():
        pytest.skip(f"{GUARDS[engine]} is not set up (scripts/test.sh builds it)")
    env = dict(os.environ, PYTHONHASHSEED="0", OMP_NUM_THREADS="1",
               VLLM_LOGGING_LEVEL="WARNING")
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "benchmarks.guard", engine,
                           "--smoke"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = re.findall(rf"^\| (\d+) \| ({FIGURE}) us \| (-?{FIGURE}) us \| (-?{FIGURE})x \| "
                      rf"(-?{FIGURE}) us \| (-?{FIGURE})x \| (-?{FIGURE}) us \|$",
                      done.stdout, re.M)
    assert [row[0] for row in rows] == ["1", "4"], done.stdout
    assert re.search(rf"in a fresh process that has only installed the hook: {FIGURE} ms",
                     done.stdout), done.stdout
    with capsys.disabled():
        print(f"\n{engine}, the guard beside the engine's own check (smoke size):\n"
              + "\n".join(line for line in done.stdout.splitlines() if line.startswith("|")))
