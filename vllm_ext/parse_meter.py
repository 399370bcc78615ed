"""The API server's CPU time inside ``HarmonyParser.parse_delta`` (benchmarks only).

``scripts/bench_server.py`` asks what share of a vLLM API server's CPU goes to parsing,
for vLLM's own gpt-oss parsers and for ours alike. vLLM's chat stream calls
``parse_delta`` on its ``HarmonyParser`` (built-in) or on our subclass of it once per
decode step per request, on the event-loop thread, so the thread CPU time spent inside
that call is the parser's cost, whoever's parser it is.

Installed by :mod:`vllm_ext.scripted` (loaded only when named on a test or benchmark
server's command line) when ``HARMONY_EXT_PARSE_METER`` names a 16-byte file: every call
then writes the running totals there as two little-endian uint64, CPU nanoseconds and calls,
which the benchmark reads from outside the process before and after each batch. A
setup failure is logged and leaves the server unmetered, never down.
"""

from __future__ import annotations

import logging
import mmap
import struct
import time
from typing import Any

logger = logging.getLogger("vllm.harmony_ext")

ENV = "HARMONY_EXT_PARSE_METER"
LAYOUT = struct.Struct("<QQ")  # CPU ns inside parse_delta, calls


def read(path: str) -> tuple[int, int]:
    """The totals in a meter file: (CPU ns, calls)."""
    with open(path, "rb") as f:
        return LAYOUT.unpack(f.read(LAYOUT.size))


def install(path: str) -> bool:
    """Time every ``parse_delta`` of every ``HarmonyParser`` built from now on."""
    try:
        from vllm.parser.harmony import HarmonyParser

        with open(path, "r+b") as f:
            view = mmap.mmap(f.fileno(), LAYOUT.size)
    except Exception:
        logger.exception("parse meter: not installed (%s=%s)", ENV, path)
        return False
    totals = [0, 0]
    clock = time.thread_time_ns
    # A thread-CPU clock read is a system call (about 0.5 us here); each timed interval holds
    # about one read's worth of it, which is taken off (the fastest of many back-to-back reads).
    cost = min(-clock() + clock() for _ in range(1000))
    pack = LAYOUT.pack_into
    built = HarmonyParser.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        built(self, *args, **kwargs)
        inner = self.parse_delta  # the subclass's own, for our parser

        def parse_delta(*a: Any, **kw: Any) -> Any:
            start = clock()
            try:
                return inner(*a, **kw)
            finally:
                totals[0] += max(0, clock() - start - cost)
                totals[1] += 1
                pack(view, 0, totals[0], totals[1])

        self.parse_delta = parse_delta

    HarmonyParser.__init__ = __init__
    logger.info("parse meter: timing HarmonyParser.parse_delta into %s (clock read %d ns)",
                path, cost)
    return True
