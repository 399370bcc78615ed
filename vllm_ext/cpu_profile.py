"""Where a vLLM API server's CPU time goes, sampled by CPU time (benchmarks only).

A wall-clock sampler such as py-spy counts a thread as busy whenever it is runnable; on a
machine whose cores are all busy (the benchmark's case: engine, API servers and client on
two CPUs) that charges the API server for time it spent waiting for a core, mostly inside
its socket writes. This sampler counts CPU time instead: ``setitimer(ITIMER_PROF)`` sends
``SIGPROF`` after every millisecond of CPU the process uses (user and kernel), and the
handler, which Python runs in the main thread (the event loop's), counts the stack it
interrupted. A C call (a socket write, a tokenizer step, pydantic-core's serialiser) is
charged to the Python line that made it.

Installed by :mod:`vllm_ext.scripted` when ``HARMONY_EXT_CPU_PROFILE`` names a file, and only
in the process that serves HTTP (the one that validates requests), never in the engine. It
samples nothing until told: the first ``SIGUSR1`` starts sampling, the next stops it and
writes the counted stacks to the file (one ``frame;frame;... count`` line per stack, root
first, the format of ``py-spy record --format raw``), then renames ``FILE.tmp`` onto it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections import Counter
from types import FrameType

logger = logging.getLogger("vllm.harmony_ext")

ENV = "HARMONY_EXT_CPU_PROFILE"
INTERVAL_S = 0.001  # one sample per millisecond of the process's CPU time
_MAX_DEPTH = 80


def _short(path: str) -> str:
    """A file path from its package on: ``vllm/parser/harmony.py``, ``asyncio/events.py``."""
    for anchor in ("site-packages/", "/lib/python3."):
        at = path.rfind(anchor)
        if at >= 0:
            rest = path[at + len(anchor):]
            return rest.split("/", 1)[1] if anchor.startswith("/lib") else rest
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(path, here) if path.startswith(here) else path


class _Sampler:
    def __init__(self, path: str) -> None:
        self.path = path
        self.counts: Counter[tuple[tuple[str, str, int], ...]] = Counter()
        self.running = False

    def sample(self, signum: int, frame: FrameType | None) -> None:
        stack = []
        while frame is not None and len(stack) < _MAX_DEPTH:
            code = frame.f_code
            stack.append((code.co_qualname, code.co_filename, frame.f_lineno))
            frame = frame.f_back
        self.counts[tuple(stack)] += 1

    def toggle(self, signum: int, frame: FrameType | None) -> None:
        if not self.running:
            self.counts.clear()
            self.running = True
            signal.setitimer(signal.ITIMER_PROF, INTERVAL_S, INTERVAL_S)
            return
        signal.setitimer(signal.ITIMER_PROF, 0, 0)
        self.running = False
        self.write()

    def write(self) -> None:
        names: dict[tuple[str, str, int], str] = {}
        lines = []
        for stack, n in self.counts.items():
            parts = []
            for key in reversed(stack):
                name = names.get(key)
                if name is None:
                    name = names[key] = f"{key[0]} ({_short(key[1])}:{key[2]})"
                parts.append(name)
            lines.append(f"{';'.join(parts)} {n}\n")
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            f.writelines(lines)
        os.replace(tmp, self.path)


_sampler: _Sampler | None = None
_tried = False


def tried() -> bool:
    """Whether :func:`install` ran in this process (armed or not)."""
    return _tried


def install(path: str) -> bool:
    """Arm the sampler in this process, once (the main thread only: signals land there)."""
    global _sampler, _tried
    if _tried:
        return _sampler is not None
    _tried = True
    if threading.current_thread() is not threading.main_thread():
        logger.warning("cpu profile: not installed: not on the main thread")
        return False
    _sampler = _Sampler(path)
    signal.signal(signal.SIGPROF, _sampler.sample)
    signal.signal(signal.SIGUSR1, _sampler.toggle)
    logger.info("cpu profile: armed in pid %d (SIGUSR1 starts, SIGUSR1 stops and writes %s)",
                os.getpid(), path)
    return True
