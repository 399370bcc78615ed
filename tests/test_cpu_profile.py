"""The benchmark's CPU-time sampler (``vllm_ext/cpu_profile.py``), engine-free.

It installs signal handlers for the whole process, so the sampling cases run in a fresh
interpreter.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from vllm_ext import cpu_profile

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = r"""
import os, signal, sys, time
from vllm_ext import cpu_profile

def spin(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass

def sleep_a_while():
    time.sleep(0.3)

assert cpu_profile.install(sys.argv[1])
os.kill(os.getpid(), signal.SIGUSR1)  # start
spin(0.5)
sleep_a_while()  # no CPU: no samples
os.kill(os.getpid(), signal.SIGUSR1)  # stop and write
spin(0.2)  # after the stop: not sampled
print("done")
"""


def test_samples_follow_cpu_time_between_the_two_signals(tmp_path):
    out = tmp_path / "profile.txt"
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(out)], capture_output=True, text=True, timeout=60,
        check=False, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert proc.returncode == 0, proc.stderr
    counts: dict[str, int] = {}
    for line in out.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        leaf = stack.split(";")[-1]
        counts[leaf.split(" (")[0]] = counts.get(leaf.split(" (")[0], 0) + int(n)
    total = sum(counts.values())
    # 0.5 s of CPU at one sample per ms of CPU; the kernel's tick may coarsen that (HZ 250).
    assert total >= 50
    assert counts.get("spin", 0) >= 0.9 * total
    assert "sleep_a_while" not in counts
    # Root first, as py-spy writes it: the script's module code, then spin.
    top = max(out.read_text().splitlines(), key=lambda line: int(line.rpartition(" ")[2]))
    assert top.startswith("<module> (<string>:") and ";spin (<string>:" in top


def test_off_the_main_thread_it_does_not_arm():
    got = []
    saved = cpu_profile._sampler, cpu_profile._tried
    try:
        cpu_profile._sampler, cpu_profile._tried = None, False
        t = threading.Thread(target=lambda: got.append(cpu_profile.install("/nonexistent")))
        t.start()
        t.join()
        assert got == [False]
        assert cpu_profile.tried() and cpu_profile.install("/nonexistent") is False  # once
    finally:
        cpu_profile._sampler, cpu_profile._tried = saved


@pytest.mark.parametrize("path, short", [
    ("/x/.venv-vllm/lib/python3.11/site-packages/vllm/parser/harmony.py",
     "vllm/parser/harmony.py"),
    ("/usr/local/lib/python3.11/asyncio/events.py", "asyncio/events.py"),
    ("<string>", "<string>"),
])
def test_file_names_start_at_their_package(path, short):
    assert cpu_profile._short(path) == short


def test_our_own_files_are_named_from_the_checkout():
    assert cpu_profile._short(str(ROOT / "vllm_ext" / "deltas.py")) == "vllm_ext/deltas.py"
